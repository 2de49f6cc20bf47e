"""``egg-dispatch bench FILE [--target T] [--pareto] [--repeats N]``: our plans against IREE's, timed here.

The measurement itself is ``measure.bench`` (its docstring says how). Exit codes: 0 ok (also when the
target cannot run here, or IREE fails to compile its own plan: both are reported as results), 1 a plan
computes different numbers, 2 bad input.
"""

from __future__ import annotations

import argparse
import json
import sys

from egg_dispatch.cli.args import (
    InputError,
    add_budget_arguments,
    add_extractor_arguments,
    add_input_arguments,
    explore_options,
    input_path,
    load_target_arg,
    parameters_from_args,
    positive_float,
    positive_int,
    require_iree,
)
from egg_dispatch.cli.run import evaluation_input_error
from egg_dispatch.evaluate import EvaluationError
from egg_dispatch.iree.dispatch_creation import first_error_line
from egg_dispatch.iree.tools import DEFAULT_MIN_TIME, IreeError
from egg_dispatch.measure.bench import DEFAULT_REPEATS, bench, render, report_json

__all__ = ["register", "run"]


def register(sub: argparse._SubParsersAction) -> None:
    """Add the ``bench`` subcommand to the CLI."""
    p = sub.add_parser(
        "bench",
        help="time our plans against IREE's own on this CPU (iree-benchmark-module)",
        description="Compile IREE's own plan for FILE and ours (--emit iree; with --pareto every frontier plan), "
        "check they compute the same numbers, time them interleaved and compare with our model's predictions.",
    )
    p.add_argument("file", metavar="FILE", help="linalg-level MLIR input")
    add_budget_arguments(p)
    add_input_arguments(p)
    add_extractor_arguments(p)
    p.add_argument("--pareto", action="store_true", help="also time every plan of the time/memory frontier")
    p.add_argument(
        "--repeats", type=positive_int, default=DEFAULT_REPEATS, metavar="N", help="interleaved repeats (default 5)"
    )
    p.add_argument(
        "--min-time",
        type=positive_float,
        default=DEFAULT_MIN_TIME,
        metavar="S",
        help=f"seconds per measurement (default {DEFAULT_MIN_TIME:g})",
    )
    p.add_argument(
        "--emit",
        choices=("text", "json"),
        default="text",
        help="text table (default) or JSON: one object per plan (label, predicted_us, measured_us, is_iree, chosen)",
    )
    p.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    """Handler of ``egg-dispatch bench``."""

    if args.repeats < 1:
        raise InputError(f"--repeats: error: must be at least 1, got {args.repeats}")
    if args.min_time <= 0:
        raise InputError(f"--min-time: error: must be positive, got {args.min_time:g}")
    target = load_target_arg(args.target)
    path = input_path(args.file)  # missing, or a directory: one line, exit 2
    require_iree("bench", ("iree-compile", "iree-benchmark-module"))
    parameters = parameters_from_args(args, path)
    try:
        report = bench(
            path,
            target,
            pareto=args.pareto,
            parameters=parameters,
            explore_options=explore_options(args),
            repeats=args.repeats,
            min_time=args.min_time,
            progress=lambda m: print(f"egg-dispatch: {m}", file=sys.stderr, flush=True),
        )
    except IreeError as e:
        detail = f": {first_error_line(e.stderr)}" if e.stderr else ""
        raise InputError(f"{args.file}: {str(e).splitlines()[0]}{detail}") from None
    except EvaluationError as e:  # a parameter the files given cannot provide (wrong scope, key or size)
        raise evaluation_input_error(e, args.file) from None
    for w in parameters.warnings:
        print(w, file=sys.stderr)
    print(json.dumps(report_json(report), indent=2) if args.emit == "json" else render(report))
    if not report.numbers_ok:
        bad = [p.label for p in report.plans if p.max_rel_error is not None and p.max_rel_error > report.tolerance]
        print(f"error: {', '.join(bad)} compute different numbers than the input program", file=sys.stderr)
        return 1
    return 0
