"""``--assume NAME=SIZE[,SIZE...]``: the sizes of a program's dynamic dimensions (``cost.sizes``).

``explore`` / ``opt`` / ``bench`` / ``iree-baseline`` cost a dynamic program at the assumed sizes (the
weighted mean over them) and may only rely on them (the legality facts hold for those sizes); ``check``
tests at exactly those sizes; ``run`` refuses an input of another size. The name is a dynamic dim as the
report lists it (``arg0.d1``; ``arg0.1`` and ``arg0[1]`` also work) or the symbol a PyTorch export gave
it; weights follow a colon (``arg0.d1=128:3,2048:1``). The syntax is checked where the flag is parsed;
the name and the values against the program once it is read (exit 2 either way).
"""

from __future__ import annotations

import argparse

from egg_dispatch.cli.args import refuses
from egg_dispatch.cost import AssumeError, parse_assume

__all__ = ["add_assume_argument", "assume_spec"]

HELP = (
    "sizes of a dynamic dimension, as the report names it: NAME=SIZE or NAME=SIZE1,SIZE2 (optionally "
    "SIZE:WEIGHT); costed as the weighted mean, and the only sizes the plan must be legal for (repeatable)"
)


@refuses("", "abc", "arg0.d1", "arg0.d1=", "=4", "arg0.d1=-1", "arg0.d1=abc", "arg0.d1=4:0", "arg0.d1=4:nan",
         "arg0.d1=4,4", "arg0.d1=1.5")  # fmt: skip
def assume_spec(text: str) -> str:
    """An ``--assume`` value, checked for syntax (the name is checked against the program later)."""
    try:
        parse_assume(text)
    except AssumeError as e:
        raise argparse.ArgumentTypeError(str(e)) from None
    return text


def add_assume_argument(p: argparse.ArgumentParser) -> None:
    p.add_argument("--assume", action="append", type=assume_spec, default=[], metavar="NAME=SIZES", help=HELP)
