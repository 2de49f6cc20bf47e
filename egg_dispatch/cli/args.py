"""What every command shares: input loading (FILE, ``-``, the built-in example), rule families and budgets.

``InputError`` is the one exception the command line turns into a one-line message and exit code 2.
"""

from __future__ import annotations

import argparse
import errno
import math
import os
import stat
import sys
from collections.abc import Callable
from importlib import resources
from pathlib import Path
from typing import NoReturn

from egg_dispatch.egraph.rules import FAMILIES, Budget
from egg_dispatch.evaluate.parameters import ParameterError, ParameterFile, Parameters
from egg_dispatch.mlir.ir import Module
from egg_dispatch.mlir.lexer import MLIRSyntaxError
from egg_dispatch.mlir.parser import parse_file, parse_mlir
from egg_dispatch.target.host import HOST
from egg_dispatch.target.profile import Target

__all__ = [
    "BUILTIN_EXAMPLE",
    "MALFORMED",
    "TARGET_HELP",
    "InputError",
    "Parser",
    "add_budget_arguments",
    "add_extractor_arguments",
    "add_input_arguments",
    "as_written",
    "budget_from_args",
    "budget_spec",
    "builtin_example_text",
    "existing_file",
    "explore_options",
    "function_name",
    "input_path",
    "input_source",
    "load_input",
    "load_target_arg",
    "measure_budget_spec",
    "non_negative_float",
    "non_negative_int",
    "output_file",
    "parameter_spec",
    "parameters_from_args",
    "parse_families",
    "path_kind",
    "positive_float",
    "positive_int",
    "program",
    "rule_families",
    "take_pending_warnings",
    "target_file",
    "target_spec",
    "writable_path",
]

BUILTIN_EXAMPLE = "seed_reproducer.mlir"
"""The bug's reproducer (IREE issue #21100), shipped as package data; ``explore`` with no FILE uses it."""


class InputError(Exception):
    """Bad input or flags that the CLI reports as one line and exit code 2."""


class Parser(argparse.ArgumentParser):
    """argparse, with a bad flag *value* reported on one line, as bad input is:
    ``egg-dispatch explore: error: argument --lambda: must be non-negative, got -5``, exit 2.

    An unknown flag, a missing argument or an invalid choice still prints the usage first (argparse's
    way). The subcommands' parsers are of this class too (``add_subparsers`` copies it), so every flag of
    every command, including ones added later, reports a bad value the same way, before any work starts.
    """

    _bad_value = False

    def parse_known_args(self, args=None, namespace=None):  # argparse's own signature
        # The parsers are built once per process (cli.main): a bad value seen in one parse says
        # nothing of the next one's error.
        self._bad_value = False
        return super().parse_known_args(args, namespace)

    def _get_values(self, action: argparse.Action, arg_strings: list[str]) -> object:
        # '--flag=--': Python 3.12's argparse drops the '--' and stores [] without calling type= (so a
        # float flag held a list); the value is the string '--', checked like any other.
        if action.option_strings and action.nargs is None and arg_strings == ["--"]:
            value = self._get_value(action, "--")
            self._check_value(action, value)
            return value
        return super()._get_values(action, arg_strings)

    def _get_value(self, action: argparse.Action, arg_string: str) -> object:
        try:
            return super()._get_value(action, arg_string)
        except argparse.ArgumentError:  # the action's type= function refused the value
            self._bad_value = True
            raise

    def error(self, message: str) -> NoReturn:
        if not self._bad_value:
            super().error(message)
        self.exit(2, f"{self.prog}: error: {message} (see '{self.prog} --help')\n")


# --- argparse ``type=`` functions ------------------------------------------------------------------
# Each checks one flag value where it is parsed, so that a bad one is a usage error (exit 2) naming the
# flag. ``MALFORMED[f]`` lists values ``f`` must refuse (the flag walker in tests/test_cli_flags.py feeds
# them to every flag that uses ``f``); a flag with a value and neither ``choices`` nor one of these types
# fails that test.

MALFORMED: dict[Callable[[str], object], tuple[str, ...]] = {}
"""type function -> values it must refuse ("{missing}" and "{dir}" stand for a missing file and a directory)."""

_NUMBERS_BAD = ("", "abc", "nan", "-nan", "inf", "-inf", "1e999", "0x", "1,5", "--")


def refuses[F: Callable[[str], object]](*values: str) -> Callable[[F], F]:
    def register(f: F) -> F:
        MALFORMED[f] = values
        return f

    return register


def _int(text: str, least: int) -> int:
    try:
        value = int(text.strip(), 10)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected an integer, got '{text}'") from None
    if value < least:
        raise argparse.ArgumentTypeError(f"must be at least {least}, got {value}")
    return value


def _float(text: str, positive: bool) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number, got '{text}'") from None
    if not math.isfinite(value):
        raise argparse.ArgumentTypeError(f"must be a finite number, got '{text}'")
    if value < 0 or (positive and value == 0):
        raise argparse.ArgumentTypeError(f"must be {'positive' if positive else 'non-negative'}, got {text}")
    return value


@refuses(*_NUMBERS_BAD, "0", "-1", "1.5", "-0")
def positive_int(text: str) -> int:
    """An integer >= 1 (counts, limits)."""
    return _int(text, 1)


def add_jobs_argument(p: argparse.ArgumentParser, what: str) -> None:
    """``--jobs N``: compile N of ``what`` at a time (default: the CPU count); timing stays sequential."""
    p.add_argument(
        "--jobs",
        type=positive_int,
        default=max(1, os.cpu_count() or 1),
        metavar="N",
        help=f"compile N {what} at a time (default: the CPU count); timing is always one at a time",
    )


@refuses(*_NUMBERS_BAD, "-1", "1.5")
def non_negative_int(text: str) -> int:
    """An integer >= 0 (seeds, element counts)."""
    return _int(text, 0)


@refuses(*_NUMBERS_BAD, "0", "-1", "-0.001", "0.0")
def positive_float(text: str) -> float:
    """A finite number > 0 (seconds)."""
    return _float(text, True)


@refuses(*_NUMBERS_BAD, "-1", "-1e-9", "-5")
def non_negative_float(text: str) -> float:
    """A finite number >= 0 (λ; a time limit where 0 means "what you have")."""
    return _float(text, False)


def path_kind(path: str | os.PathLike[str]) -> str:
    """``file`` (a regular file), ``dir``, ``missing``, or why a path is neither (``not a regular file``,
    ``File name too long``, ``Permission denied``, ...); never raises, unlike ``Path.is_file`` on a
    name too long."""
    try:
        mode = os.stat(path).st_mode
    except OSError as e:
        return "missing" if e.errno in (errno.ENOENT, errno.ENOTDIR) else (e.strerror or str(e))
    except ValueError:  # an embedded NUL
        return "not a valid file name"
    return "dir" if stat.S_ISDIR(mode) else "file" if stat.S_ISREG(mode) else "not a regular file"


def _file(text: str, what: str = "file") -> Path:
    if not text:
        raise argparse.ArgumentTypeError(f"expected a {what} name, got ''")
    kind = path_kind(text)
    if kind == "dir":
        raise argparse.ArgumentTypeError(f"{text}: is a directory, not a {what}")
    if kind != "file":
        raise argparse.ArgumentTypeError(f"{text}: {'no such ' + what if kind == 'missing' else kind}")
    return Path(text)


@refuses("", "{missing}", "{dir}")
def existing_file(text: str) -> str:
    """The name of a file that exists (not a directory)."""
    _file(text)
    return text


@refuses("", "{dir}", "{garbage}/x.json")
def output_file(text: str) -> str:
    """A file to write: not a directory, and its directory exists or can be made (no file in the way).
    Write it with ``util.files.atomic_write`` (after making the directory, when it does not exist)."""
    if not text:
        raise argparse.ArgumentTypeError("expected a file name, got ''")
    kind = path_kind(text)
    if kind == "dir":
        raise argparse.ArgumentTypeError(f"{text}: is a directory, not a file")
    if kind not in ("file", "missing"):
        raise argparse.ArgumentTypeError(f"{text}: {kind}")
    parent = Path(text).parent
    while (above := path_kind(parent)) == "missing" and parent != parent.parent:
        parent = parent.parent
    if above != "dir":
        raise argparse.ArgumentTypeError(f"{text}: {parent} is not a directory")
    return text


def writable_path(text: str) -> str:
    """``text`` if a file can be written there (not a directory; its directory exists), else an
    ArgumentTypeError saying why."""
    kind = path_kind(text)
    if kind == "dir":
        raise argparse.ArgumentTypeError(f"{text}: is a directory, not a file")
    if kind not in ("file", "missing"):
        raise argparse.ArgumentTypeError(f"{text}: {kind}")
    parent = Path(text).parent
    if path_kind(parent) != "dir":
        raise argparse.ArgumentTypeError(f"{text}: no such directory {parent}")
    return text


def _target(text: str) -> str:
    from egg_dispatch.target.profile import TargetError, load_target

    try:
        load_target(text)
    except TargetError as e:
        raise argparse.ArgumentTypeError(str(e)) from None
    except (OSError, UnicodeDecodeError) as e:
        raise argparse.ArgumentTypeError(f"{text}: cannot read the target profile: {e}") from None
    return text


TARGET_HELP = (
    "a built-in target name, 'host' (default: this CPU's profile written by 'egg-dispatch calibrate', else the "
    "built-in profile of its ISA, with a warning) or a target profile JSON file"
)

_pending_warnings: list[str] = []


def load_target_arg(spec: str) -> Target:
    """The target a ``--target`` / ``--target-file`` value names. The profile's warning (an uncalibrated
    ``host``) is printed on stderr when the command has done its work (``cli.main``), so that bad input
    stays one error line. A bad target is an InputError (exit 2)."""
    from egg_dispatch.target.profile import TargetError, load_target

    try:
        target = load_target(spec)
    except TargetError as e:
        raise InputError(f"--target: error: {e}") from None
    if (warning := target.provenance.get("warning")) and warning not in _pending_warnings:
        _pending_warnings.append(warning)
    return target


def take_pending_warnings() -> list[str]:
    """The target warnings the command collected (and forget them: ``main`` may run again in-process)."""
    out = list(_pending_warnings)
    _pending_warnings.clear()
    return out


@refuses("", "-1", "nan", "nope", "{missing}", "{dir}", "{garbage}")
def target_spec(text: str) -> str:
    """A built-in target name or a target profile JSON file, loaded once to check it."""
    if not text:
        raise argparse.ArgumentTypeError("expected a target name or a target JSON file, got ''")
    kind = path_kind(text)
    if kind == "dir":
        raise argparse.ArgumentTypeError(f"{text}: is a directory, not a target JSON file")
    if kind not in ("file", "missing"):
        raise argparse.ArgumentTypeError(f"{text}: {kind}")
    return _target(text)


@refuses("", "{missing}", "{dir}", "{garbage}")
def target_file(text: str) -> str:
    """A target profile JSON file (must exist), loaded once to check it."""
    _file(text, "target JSON file")
    return _target(text)


@refuses("", " ", "@", "-1 2", "a b")
def function_name(text: str) -> str:
    """A function's symbol name, with or without its '@'; whether FILE has it is checked on reading FILE."""
    name = text.strip().removeprefix("@").strip('"')
    if not name or any(ch.isspace() for ch in name):
        raise argparse.ArgumentTypeError(f"expected a function name such as 'main' or '@main', got '{text}'")
    return name


@refuses("", "nope", "all,nope", ",", "-1", "nan")
def rule_families(text: str) -> str:
    """``all`` or comma-separated rule families (checked; the handler reads them with ``parse_families``)."""
    try:
        parse_families(text)
    except InputError as e:
        raise argparse.ArgumentTypeError(str(e).removeprefix("error: ")) from None
    return text


@refuses("", "=", "scope=", "{missing}", "s={missing}", "{dir}", "s={dir}")
def parameter_spec(text: str) -> str:
    """``[SCOPE=]FILE`` of a parameter file that exists."""
    try:
        spec = ParameterFile.parse(text)
    except ParameterError as e:
        raise argparse.ArgumentTypeError(str(e).removeprefix("--parameters: ")) from None
    _file(str(spec.path), "parameter file")
    return text


def builtin_example_text() -> str:
    return resources.files("egg_dispatch.examples").joinpath(BUILTIN_EXAMPLE).read_text()


def load_input(path: str | None) -> Module:
    """Parse FILE, ``-`` (stdin) or, with no path, the built-in example."""
    if path is None:
        return parse_mlir(builtin_example_text(), f"<builtin:{BUILTIN_EXAMPLE}>")
    if path == "-":
        return parse_mlir(sys.stdin.read(), "<stdin>")
    p = input_path(path)
    try:
        return parse_file(p)
    except OSError as e:
        raise InputError(f"{path}: error: cannot read it: {e.strerror or e}") from None


def input_path(path: str) -> Path:
    """FILE as a path, or an InputError saying why it is not one (missing, a directory)."""
    kind = path_kind(path)
    if kind == "dir":
        raise InputError(f"{path}: error: is a directory, not a file")
    if kind != "file":
        raise InputError(f"{path}: error: {'no such file' if kind == 'missing' else kind}")
    return Path(path)


def input_source(path: str | None) -> Path | Module:
    """FILE as a path (so that IREE can read it when it needs lowering), or ``-`` (stdin) and the built-in
    example as parsed modules."""
    if path is None or path == "-":
        return load_input(path)
    return input_path(path)


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
        type=parameter_spec,
        action="append",
        default=[],
        metavar="[SCOPE=]FILE",
        help="values of named parameters (#flow.parameter.named) for evaluation, as iree-run-module takes them "
        "(.irpa, .safetensors, .gguf); repeatable. Without it parameters get deterministic stand-in values",
    )


def as_written(file: str | None, module: Module) -> Module | Path:
    """FILE as the user wrote it when it is a file (so that ``parameters_from_args`` points into it, not into
    IREE's lowering of it), else ``module`` (stdin, the built-in example)."""
    return module if file is None or file == "-" else Path(file)


def parameters_from_args(args: argparse.Namespace, program: Module | Path | None = None) -> Parameters:
    """``--parameters``, checked against the parameters ``program`` declares (``Parameters.validate``) before
    any work starts: a file that lacks a key or holds it with another size, shape or element type is one
    input error naming file, key and the type expected. A ``program`` our parser cannot read is checked
    where it is lowered (the evaluator raises the same errors)."""
    try:
        parameters = Parameters([ParameterFile.parse(s) for s in args.parameters])
        if parameters.files and program is not None:
            if isinstance(program, Path):
                try:
                    program = parse_file(program)
                except (MLIRSyntaxError, OSError):
                    return parameters
            parameters.validate(program)
    except ParameterError as e:
        text = str(e)
        raise InputError(text if ": error: " in text or text.startswith("error: ") else f"error: {text}") from None
    return parameters


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


@refuses("", ",", "iterations", "iterations=", "iterations=0", "enodes=-1", "seconds=0", "seconds=nan",
            "seconds=inf", "iterations=1.5", "nope=1", "iterations=1,,enodes=2")  # fmt: skip
def budget_spec(text: str) -> dict[str, float]:
    """``iterations=10,enodes=50000,seconds=5`` (any subset, each limit positive) for --budget."""
    out: dict[str, float] = {}
    for part in text.split(","):
        key, _, value = part.partition("=")
        key = key.strip()
        if key not in ("iterations", "enodes", "seconds"):
            raise argparse.ArgumentTypeError(f"unknown budget limit '{key}' (iterations, enodes, seconds)")
        try:
            out[key] = positive_float(value) if key == "seconds" else positive_int(value)
        except argparse.ArgumentTypeError as e:
            raise argparse.ArgumentTypeError(f"budget limit {key}: {e}") from None
    return out


_budget = budget_spec  # the name other modules may still import


@refuses("", ",", "rounds", "rounds=", "rounds=0", "rounds=1.5", "seconds=0", "seconds=-1", "seconds=nan",
            "seconds=inf", "nope=1", "rounds=2,,seconds=1")  # fmt: skip
def measure_budget_spec(text: str) -> dict[str, float]:
    """``rounds=6,seconds=20`` (either or both, each positive; rounds an integer) for explore's
    --measure-budget."""
    out: dict[str, float] = {}
    for part in text.split(","):
        key, _, value = part.partition("=")
        key = key.strip()
        if key not in ("rounds", "seconds"):
            raise argparse.ArgumentTypeError(f"unknown measurement budget '{key}' (rounds, seconds)")
        try:
            out[key] = positive_float(value) if key == "seconds" else positive_int(value)
        except argparse.ArgumentTypeError as e:
            raise argparse.ArgumentTypeError(f"measurement budget {key}: {e}") from None
    return out


def budget_from_args(args: argparse.Namespace) -> Budget:
    """The saturation budget the flags ask for; a bad one is an InputError (exit 2)."""
    spec = {"iterations": args.max_iterations, "enodes": args.max_enodes, "seconds": args.max_seconds}
    spec.update(args.budget or {})
    try:
        return Budget(int(spec["iterations"]), int(spec["enodes"]), float(spec["seconds"]))
    except ValueError as e:
        raise InputError(f"error: {e}") from None


def explore_options(args: argparse.Namespace) -> dict[str, object]:
    """``pipeline.explore``'s keyword arguments from the flags of a command that explores before it
    measures (bench, tune): rule families, budget, extractor and its time limit, start, function."""
    return {
        "families": parse_families(args.rules),
        "budget": budget_from_args(args),
        "extractor": args.extractor,
        "time_limit": args.time_limit,
        "start": args.start,
        "function": args.function,
    }


def add_extractor_arguments(p: argparse.ArgumentParser) -> None:
    """``--extractor`` and ``--time-limit``, shared by the commands that extract (explore, bench, tune)."""
    p.add_argument(
        "--extractor",
        choices=("exact", "greedy"),
        default="exact",
        help="exact ILP on HiGHS (warm-started from greedy; default) or greedy DAG only",
    )
    p.add_argument(
        "--time-limit",
        type=non_negative_float,
        default=10.0,
        metavar="S",
        help="ILP time limit per solve (default 10; 0: greedy's plan, as the ILP's warm start)",
    )


def add_cost_arguments(p: argparse.ArgumentParser) -> None:
    """``--target-file`` and ``--lambda``, shared by the commands that explore (explore, tune)."""
    p.add_argument(
        "--target-file",
        type=target_file,
        metavar="JSON",
        help="load a target profile from a JSON file (overrides --target)",
    )
    p.add_argument(
        "--lambda",
        dest="lam",
        type=non_negative_float,
        default=None,
        metavar="L",
        help="weight of memory in the objective, seconds per byte (default: from the target, 1%% of the time it "
        "takes to pack a byte once, so memory breaks ties but never buys kilobytes with per-call work)",
    )


def require_iree(command: str, tools: tuple[str, ...]) -> None:
    """Exit 2 naming the first of IREE's tools a command needs that is not installed, and the extra."""
    from egg_dispatch.iree.tools import find_tool

    for tool in tools:
        if find_tool(tool) is None:
            raise InputError(
                f"error: {command} needs IREE's {tool}, which was not found "
                "(pip install 'egg-dispatch[iree]' or put IREE on PATH)"
            )


def add_budget_arguments(p: argparse.ArgumentParser) -> None:
    d = Budget()
    p.add_argument(
        "--rules",
        type=rule_families,
        default="all",
        metavar="LIST",
        help=f"comma-separated rule families to run ({', '.join(FAMILIES)}) or 'all' (default)",
    )
    p.add_argument(
        "--target",
        type=target_spec,
        default=HOST,
        metavar="T",
        help=TARGET_HELP,
    )
    p.add_argument(
        "--max-iterations",
        type=positive_int,
        default=d.iterations,
        metavar="N",
        help=f"saturation budget: iterations (default {d.iterations})",
    )
    p.add_argument(
        "--max-enodes",
        type=positive_int,
        default=d.enodes,
        metavar="N",
        help=f"saturation budget: e-nodes (default {d.enodes})",
    )
    p.add_argument(
        "--max-seconds",
        type=positive_float,
        default=d.seconds,
        metavar="S",
        help=f"saturation budget: seconds (default {d.seconds:g})",
    )
    p.add_argument(
        "--budget",
        type=budget_spec,
        metavar="SPEC",
        help="all three limits at once, e.g. 'iterations=10,enodes=50000,seconds=5' (overrides --max-*)",
    )
    p.add_argument(
        "--function", type=function_name, metavar="NAME", help="only this function (default: every function)"
    )
