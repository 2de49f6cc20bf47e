"""``egg-dispatch check [FILE|-]``: plain semantics versus physically materialized encodings, on random inputs.

No FILE checks the built-in example; the parser's warnings go to stderr. What is compared and the
tolerance are ``evaluate.check``'s (its docstring). Exit codes: 0 every result within tolerance, 1 a
result over tolerance, 2 bad input.
"""

from __future__ import annotations

import argparse
import sys

from egg_dispatch.cli.args import (
    TARGET_HELP,
    InputError,
    add_input_arguments,
    as_written,
    function_name,
    load_target_arg,
    non_negative_int,
    parameters_from_args,
    program,
    target_spec,
)
from egg_dispatch.cli.assume import add_assume_argument
from egg_dispatch.cli.run import evaluation_input_error
from egg_dispatch.cost import AssumeError
from egg_dispatch.evaluate import EvaluationError, select_function
from egg_dispatch.evaluate.check import check_module
from egg_dispatch.evaluate.sizes import assumed_domains
from egg_dispatch.target.host import HOST

__all__ = ["register", "run"]

DEFAULT_TARGET = HOST


def register(sub: argparse._SubParsersAction) -> None:
    """Add the ``check`` subcommand to the CLI."""
    p = sub.add_parser(
        "check",
        help="compare plain semantics with physically materialized encodings on random inputs",
        description="Evaluate FILE's function on seeded random inputs with encodings ignored and with every "
        "set_encoding packed for the target; report the max abs/rel error per result (exit 1 if over tolerance).",
    )
    p.add_argument(
        "file", nargs="?", metavar="FILE|-", help="MLIR input; '-' reads stdin; default: the built-in example"
    )
    p.add_argument(
        "--target",
        type=target_spec,
        default=DEFAULT_TARGET,
        metavar="T",
        help=TARGET_HELP,
    )
    p.add_argument(
        "--function", type=function_name, metavar="NAME", help="function to check (default: the first public one)"
    )
    p.add_argument(
        "--seed", type=non_negative_int, default=0, metavar="N", help="seed of the random inputs (default 0)"
    )
    add_input_arguments(p, start=False)
    add_assume_argument(p)
    p.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    """Handler of ``egg-dispatch check``: 0 within tolerance, 1 over it."""
    module = program(args.file)
    for w in module.warnings:
        print(w, file=sys.stderr)
    parameters = parameters_from_args(args, as_written(args.file, module))
    target = load_target_arg(args.target)
    try:
        assume = assumed_domains(select_function(module, args.function), args.assume)
        report = check_module(module, target, args.seed, args.function, parameters, assume)
    except AssumeError as e:
        raise InputError(f"error: {e}") from None
    except EvaluationError as e:
        raise evaluation_input_error(e, module.file) from None
    for w in parameters.warnings:
        print(w, file=sys.stderr)
    print(report.render())
    return 0 if report.passed else 1
