"""What every command shares: input loading (FILE, ``-``, the built-in example), rule families and budgets.

``InputError`` is the one exception the command line turns into a one-line message and exit code 2.
"""

from __future__ import annotations

import argparse
import sys
from importlib import resources
from pathlib import Path

from egg_dispatch.egraph.rules import FAMILIES, Budget
from egg_dispatch.evaluate.parameters import ParameterError, ParameterFile, Parameters
from egg_dispatch.mlir.ir import Module
from egg_dispatch.mlir.parser import parse_file, parse_mlir

__all__ = [
    "BUILTIN_EXAMPLE",
    "InputError",
    "add_budget_arguments",
    "add_input_arguments",
    "budget_from_args",
    "builtin_example_text",
    "input_source",
    "load_input",
    "parameters_from_args",
    "parse_families",
    "program",
]

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


def input_source(path: str | None) -> Path | Module:
    """FILE as a path (so that IREE can read it when it needs lowering), or ``-`` (stdin) and the built-in
    example as parsed modules."""
    if path is None or path == "-":
        return load_input(path)
    p = Path(path)
    if not p.is_file():
        raise InputError(f"{path}: error: no such file")
    return p


def program(path: str | None) -> Module:
    """FILE (or ``-``, or the built-in example) as a program to evaluate: torch-dialect MLIR is lowered to
    IREE's input phase first (the only form of it the evaluator can run); anything else as given."""
    from egg_dispatch.pipeline import UnsupportedInput, prepare_input

    try:
        module, _ = prepare_input(input_source(path), None, "input")
    except UnsupportedInput as e:
        raise InputError(str(e)) from None
    return module


def add_input_arguments(p: argparse.ArgumentParser, *, start: bool = True) -> None:
    """``--from`` (where to start) and ``--parameters`` (named parameters' values), shared by commands."""
    if start:
        p.add_argument(
            "--from",
            dest="start",
            choices=("auto", "set-encoding", "global-optimization", "input"),
            default="auto",
            help="where to start: set-encoding = IREE's own data-tiling start state (its DispatchCreation up to "
            "SetEncoding); global-optimization = IREE's global optimization output, with our model of dispatch "
            "formation; input = as given (torch dialect is still lowered); auto (default) = set-encoding when "
            "IREE is installed and the input is small enough to dump, else global-optimization, else input",
        )
    p.add_argument(
        "--parameters",
        action="append",
        default=[],
        metavar="[SCOPE=]FILE",
        help="values of named parameters (#flow.parameter.named) for evaluation, as iree-run-module takes them "
        "(.irpa, .safetensors, .gguf); repeatable. Without it parameters get deterministic stand-in values",
    )


def parameters_from_args(args: argparse.Namespace) -> Parameters:
    try:
        return Parameters([ParameterFile.parse(s) for s in args.parameters])
    except ParameterError as e:
        raise InputError(f"error: {e}") from None


def parse_families(text: str) -> tuple[str, ...]:
    if text == "all":
        return FAMILIES
    names = tuple(n.strip() for n in text.split(",") if n.strip())
    unknown = [n for n in names if n not in FAMILIES]
    if unknown or not names:
        raise InputError(
            f"error: unknown rule family '{','.join(unknown) or text}' (known: {', '.join(FAMILIES)}, all)"
        )
    return names


def _budget(text: str) -> dict[str, float]:
    """``iterations=10,enodes=50000,seconds=5`` (any subset) for --budget."""
    out: dict[str, float] = {}
    for part in text.split(","):
        key, _, value = part.partition("=")
        key = key.strip()
        if key not in ("iterations", "enodes", "seconds"):
            raise argparse.ArgumentTypeError(f"unknown budget limit '{key}' (iterations, enodes, seconds)")
        try:
            out[key] = float(value) if key == "seconds" else int(value)
        except ValueError:
            raise argparse.ArgumentTypeError(f"budget limit {key} needs a number, got '{value}'") from None
    return out


def budget_from_args(args: argparse.Namespace) -> Budget:
    """The saturation budget the flags ask for; a bad one is an InputError (exit 2)."""
    spec = {"iterations": args.max_iterations, "enodes": args.max_enodes, "seconds": args.max_seconds}
    spec.update(args.budget or {})
    try:
        return Budget(int(spec["iterations"]), int(spec["enodes"]), float(spec["seconds"]))
    except ValueError as e:
        raise InputError(f"error: {e}") from None


def add_budget_arguments(p: argparse.ArgumentParser) -> None:
    d = Budget()
    p.add_argument(
        "--rules",
        default="all",
        metavar="LIST",
        help=f"comma-separated rule families to run ({', '.join(FAMILIES)}) or 'all' (default)",
    )
    p.add_argument(
        "--target",
        default="x86_64-avx512",
        metavar="T",
        help="built-in target name or a target JSON file (default: x86_64-avx512)",
    )
    p.add_argument(
        "--max-iterations",
        type=int,
        default=d.iterations,
        metavar="N",
        help=f"saturation budget: iterations (default {d.iterations})",
    )
    p.add_argument(
        "--max-enodes", type=int, default=d.enodes, metavar="N", help=f"saturation budget: e-nodes (default {d.enodes})"
    )
    p.add_argument(
        "--max-seconds",
        type=float,
        default=d.seconds,
        metavar="S",
        help=f"saturation budget: seconds (default {d.seconds:g})",
    )
    p.add_argument(
        "--budget",
        type=_budget,
        metavar="SPEC",
        help="all three limits at once, e.g. 'iterations=10,enodes=50000,seconds=5' (overrides --max-*)",
    )
    p.add_argument("--function", metavar="NAME", help="only this function (default: every function)")
