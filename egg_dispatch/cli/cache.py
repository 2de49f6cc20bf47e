"""``--cache FILE`` / ``--no-cache``: the measurement cache of the commands that price plans.

``explore`` reads it (nodes measured by an earlier ``tune`` are priced by measurement, and the report
says how many); ``tune`` reads and writes it. The default is the user's cache directory
(``cost.measured.default_cache_path``); a missing file is an empty cache, a corrupt one an error
naming the file (exit 2).
"""

from __future__ import annotations

import argparse
from pathlib import Path

from egg_dispatch.cli.args import InputError, output_file
from egg_dispatch.cost import CacheError, MeasuredTimes, default_cache_path, measurement_context
from egg_dispatch.target.profile import Target

__all__ = ["add_cache_arguments", "measurement_cache"]


def add_cache_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--cache",
        type=output_file,
        metavar="FILE",
        help=f"measurement cache of kernel times 'tune' recorded (default {default_cache_path()})",
    )
    p.add_argument(
        "--no-cache", action="store_true", help="price every node by the model: neither read nor write measured times"
    )


def measurement_cache(args: argparse.Namespace, target: Target) -> MeasuredTimes | None:
    """The cache the flags ask for, for ``target`` (None with ``--no-cache``); a bad file is exit 2."""
    if args.no_cache:
        return None
    path = Path(args.cache) if args.cache else default_cache_path()
    try:
        return MeasuredTimes.open(path, measurement_context(target))
    except CacheError as e:
        raise InputError(str(e)) from None
