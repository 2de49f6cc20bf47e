"""Command line: ``egg-dispatch explore|run|check|opt|iree-baseline|bench ...`` (also ``python -m egg_dispatch``).

One module per command (``explore.py``, ``run.py``, ...) and ``args.py`` for what they share. Nothing
outside this package imports it: the library does not know it has a command line.

Exit codes: 0 ok, 1 a failed check, 2 bad input or bad flags, 3 an internal error (a bug; set
``EGG_DISPATCH_DEBUG=1`` for its traceback), 130 interrupted (Ctrl-C, SIGINT). Errors in the input print
as ``file:line:col: error: ...`` with no traceback; a bad flag value as one ``error: argument --flag: ...``
line, found where it is parsed (``args.py``'s ``type=`` functions), before any work starts. Files the
commands write are written whole or not at all (``util.files.atomic_write``), so an interrupt leaves no
partial file.
"""

from __future__ import annotations

import argparse
import contextlib
import functools
import gc
import os
import sys
from collections.abc import Callable, Iterator, Sequence
from typing import Any, NoReturn

from egg_dispatch.cli.early import ask_iree_early
from egg_dispatch.util.background import allow_child_processes

__all__ = ["BUILTIN_EXAMPLE", "build_parser", "builtin_example_text", "console_main", "main"]


def __getattr__(name: str) -> Any:
    """``BUILTIN_EXAMPLE`` and ``builtin_example_text``, from ``args`` when first used: importing this package
    loads no command (``console_main`` starts IREE first; ``build_parser`` loads them)."""
    if name in ("BUILTIN_EXAMPLE", "builtin_example_text"):
        from egg_dispatch.cli import args

        return getattr(args, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def _add_explore(sub: argparse._SubParsersAction) -> None:
    from egg_dispatch.cli import explore

    p = sub.add_parser(
        "explore",
        help="import a program into the e-graph and report it",
        description="Import FILE (or the built-in bug reproducer) into an egglog e-graph and report it.",
    )
    p.add_argument("file", nargs="?", metavar="FILE|-", help="MLIR input; '-' reads stdin; default: built-in example")
    explore.add_arguments(p)
    p.set_defaults(handler=explore.run)


def build_parser() -> argparse.ArgumentParser:
    from egg_dispatch.cli import bench, calibrate, check, iree_baseline, opt, run, tune
    from egg_dispatch.cli.args import Parser

    parser = Parser(
        prog="egg-dispatch",
        description="Explore IREE data-tiling dispatch plans (set_encoding placement, hoisting, const-eval, "
        "propagation, fusion) with an egglog e-graph.",
    )
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    sub.required = True
    _add_explore(sub)
    for command in (run, check, opt, iree_baseline, bench, calibrate, tune):
        command.register(sub)
    return parser


@functools.cache
def _parser() -> argparse.ArgumentParser:
    """One parser per process: building it costs more than a small exploration's import (callers in
    one process, such as notebooks and tests, run ``main`` many times); parsing never changes it."""
    return build_parser()


def main(argv: Sequence[str] | None = None) -> int:
    """Run one command line; returns the exit code (module docstring), also for --help and bad flags."""
    try:
        args = _parser().parse_args(argv)  # a bad flag value: one error line, exit 2
    except SystemExit as e:  # argparse's own exits: --help (0), usage errors (2)
        return e.code if isinstance(e.code, int) else (0 if e.code is None else 2)
    except KeyboardInterrupt:
        return _interrupted()
    from egg_dispatch.cli.args import take_pending_warnings

    handler: Callable[[argparse.Namespace], int] = args.handler
    take_pending_warnings()
    with _fewer_collections():
        code = _run(handler, args)
    warnings = take_pending_warnings()  # e.g. '--target host: ... is not calibrated'
    if code in (0, 1):  # an error stays one line: the target's warning would only bury it
        for warning in warnings:
            print(warning, file=sys.stderr)
    return code


GC_THRESHOLDS = (20_000, 20, 10)
"""The cyclic garbage collector's thresholds while a command runs (Python's defaults: 700, 10, 10). A
command builds a few large structures that live to its end (parsed modules, e-graph data, cost tables)
and frees almost everything else by reference counting; at the defaults each full collection walks all
of them again, so a model's collections cost more than linear in its layers, for a few MB saved
(docs/measurements.md §12). Restored when the command returns (``main`` may run many commands in one
process)."""


@contextlib.contextmanager
def _fewer_collections() -> Iterator[None]:
    saved = gc.get_threshold()
    gc.set_threshold(*GC_THRESHOLDS)
    try:
        yield
    finally:
        gc.set_threshold(*saved)


def _run(handler: Callable[[argparse.Namespace], int], args: argparse.Namespace) -> int:
    from egg_dispatch.cli.args import InputError
    from egg_dispatch.mlir.lexer import MLIRSyntaxError

    try:
        return handler(args)
    except KeyboardInterrupt:
        return _interrupted()
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


def _interrupted() -> int:
    """Ctrl-C: one line and exit code 130 (128 + SIGINT, as shells report it); the traceback only when asked."""
    if os.environ.get("EGG_DISPATCH_DEBUG"):
        raise  # called inside main's except block: re-raises its KeyboardInterrupt
    print("egg-dispatch: interrupted", file=sys.stderr, flush=True)
    return 130


def console_main() -> NoReturn:
    """The ``egg-dispatch`` command (and ``python -m egg_dispatch``): ``main``, its output flushed, then the
    process ends without tearing the interpreter down. A model's command holds hundreds of MB of Python
    objects at its end (modules, e-graph data, plans), and freeing them one by one at exit cost as much
    as a stage of the command (docs/measurements.md §12); nothing is left to clean up by then (files are
    written and closed, caches committed). ``main`` itself returns, for callers in one process."""
    ask_iree_early(sys.argv[1:])  # IREE starts on the input while the command's modules load
    allow_child_processes()  # this process runs one command: IREE's own plan is priced in a child
    code = main()
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (BrokenPipeError, ValueError):  # the reader left (``| head``), or the stream was closed
            pass
    os._exit(code)


if __name__ == "__main__":  # pragma: no cover
    console_main()
