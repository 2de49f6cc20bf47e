"""Command line: ``egg-dispatch explore|run|check|opt ...`` (also ``python -m egg_dispatch``).

Exit codes: 0 ok, 1 a failed check, 2 bad input or bad flags, 3 an internal error (a bug; set
``EGG_DISPATCH_DEBUG=1`` for its traceback). Errors in the input print as ``file:line:col: error: ...``
with no traceback.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Callable, Sequence
from importlib import resources
from pathlib import Path

from .mlir.ir import Module
from .mlir.lexer import MLIRSyntaxError
from .mlir.parser import parse_file, parse_mlir

__all__ = ["BUILTIN_EXAMPLE", "InputError", "load_input", "main"]

BUILTIN_EXAMPLE = "seed_reproducer.mlir"
"""The bug's reproducer (IREE issue #21100), shipped as package data; ``explore`` with no FILE uses it."""


class InputError(Exception):
    """Bad input or flags that the CLI reports as one line and exit code 2."""


def builtin_example_text() -> str:
    return resources.files("egg_dispatch.examples").joinpath(BUILTIN_EXAMPLE).read_text()


def load_input(path: str | None) -> Module:
    """Parse FILE, ``-`` (stdin) or, with no path, the built-in example."""
    if path is None:
        return parse_mlir(builtin_example_text(), f"<builtin:{BUILTIN_EXAMPLE}>")
    if path == "-":
        return parse_mlir(sys.stdin.read(), "<stdin>")
    p = Path(path)
    if not p.is_file():
        raise InputError(f"{path}: error: no such file")
    return parse_file(p)


def _add_explore(sub: argparse._SubParsersAction) -> None:
    from . import explore_cmd

    p = sub.add_parser(
        "explore",
        help="import a program into the e-graph and report it",
        description="Import FILE (or the built-in bug reproducer) into an egglog e-graph and report it.",
    )
    p.add_argument("file", nargs="?", metavar="FILE|-", help="MLIR input; '-' reads stdin; default: built-in example")
    explore_cmd.add_arguments(p)
    p.set_defaults(handler=explore_cmd.run)


def _add_optional(sub: argparse._SubParsersAction, module: str) -> None:
    """Subcommands whose module may not exist yet in a partial checkout stay out of --help."""
    import importlib

    try:
        mod = importlib.import_module(f".{module}", __package__)
    except ModuleNotFoundError as e:
        if e.name and e.name.endswith(module):
            return
        raise
    mod.register(sub)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="egg-dispatch",
        description="Explore IREE data-tiling dispatch plans (set_encoding placement, hoisting, const-eval, "
        "propagation, fusion) with an egglog e-graph.",
    )
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    sub.required = True
    _add_explore(sub)
    for module in ("run_cmd", "check_cmd", "opt_cmd", "iree_baseline_cmd", "bench_cmd"):
        _add_optional(sub, module)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)  # exits 2 on bad flags, as argparse does
    handler: Callable[[argparse.Namespace], int] = args.handler
    try:
        return handler(args)
    except MLIRSyntaxError as e:
        print(str(e), file=sys.stderr)
        return 2
    except InputError as e:
        print(str(e), file=sys.stderr)
        return 2
    except BrokenPipeError:
        return 0
    except Exception as e:  # a bug, not bad input: say so in one line unless asked for the traceback
        if os.environ.get("EGG_DISPATCH_DEBUG"):
            raise
        print(
            f"egg-dispatch: internal error: {type(e).__name__}: {e} (rerun with EGG_DISPATCH_DEBUG=1 "
            "for the traceback, and please report it)",
            file=sys.stderr,
        )
        return 3


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
