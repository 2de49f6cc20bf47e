"""Every flag of every command refuses malformed values where it is parsed: exit 2, one line, no traceback.

Issue 13, point 2. The walker builds the real parser (``egg_dispatch.cli.build_parser()``) and goes
through every subcommand's actions, so commands and flags added later are covered without touching
this file:

* every flag that takes a value has ``choices`` or one of the validating ``type=`` functions of
  ``cli/args.py`` (``MALFORMED`` lists what each must refuse); a bare ``str``, ``int`` or ``float``
  accepts a negative count, NaN or a directory and fails here, naming the flag;
* each flag is fed its type's malformed values (negative, NaN, inf, empty, wrong type, a missing file, a
  directory, a garbage file, as fit) and a choice flag values outside its choices: parsing alone must
  exit 2 (so the error is found before any work) with exactly one ``error:`` line naming the flag;
* every flag is also fed the generic malformed values (``-1``, ``nan``, ``inf``, ``""``, a missing file,
  a directory): whatever the flag is, parsing either accepts the value or exits 2 with one line, and
  never raises;
* a positional FILE that is missing or a directory is exit 2 and one line naming it;
* the issue's own ``egg-dispatch explore --lambda -5`` as a process.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import time
from pathlib import Path

import pytest

from egg_dispatch.cli import build_parser, main
from egg_dispatch.cli.args import MALFORMED

FIXTURES = Path(__file__).parent / "fixtures"
SMALL = FIXTURES / "seed_iree313.mlir"
GENERIC_BAD = ("-1", "nan", "inf", "-inf", "", "abc", "{missing}", "{dir}", "{garbage}")
CHOICE_BAD = ("", "no-such-choice", "-1", "nan")


def subcommands() -> dict[str, argparse.ArgumentParser]:
    parser = build_parser()
    (sub,) = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
    return dict(sub.choices)


def value_flags(parser: argparse.ArgumentParser) -> list[argparse.Action]:
    """Options that take a value (not --help, not store_true/store_const/count flags)."""
    return [a for a in parser._actions if a.option_strings and a.nargs != 0 and not isinstance(a, argparse._HelpAction)]


def required_positionals(parser: argparse.ArgumentParser) -> list[str]:
    """A small fixture for each positional that must be given (FILE of bench, iree-baseline, ...)."""
    return [str(SMALL) for a in parser._actions if not a.option_strings and a.required and a.nargs is None]


FLAGS = [(c, a) for c, p in sorted(subcommands().items()) for a in value_flags(p)]
FLAG_IDS = [f"{c} {a.option_strings[-1]}" for c, a in FLAGS]


def fill(value: str, tmp: Path) -> str:
    garbage = tmp / "garbage.json"
    if not garbage.exists():
        garbage.write_bytes(b"\x00\xff not json, not mlir, not npy {")
    return value.format(missing=tmp / "missing" / "nothing.here", dir=tmp, garbage=garbage)


def parse_only(argv: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    """Parse (nothing runs: a handler is never called) and return (exit code, stdout, stderr)."""
    capsys.readouterr()
    try:
        build_parser().parse_args(argv)
    except SystemExit as e:
        code = e.code if isinstance(e.code, int) else 2
    else:
        code = 0
    out, err = capsys.readouterr()
    return code, out, err


def assert_one_error_line(err: str, names: list[str], context: str) -> None:
    lines = [x for x in err.splitlines() if "error:" in x]
    assert len(lines) == 1, f"{context}: want one error line, got:\n{err}"
    assert any(n in lines[0] for n in names), f"{context}: the error does not name {names}: {lines[0]}"
    assert "Traceback" not in err, f"{context}: {err}"


def test_every_subcommand_has_value_flags() -> None:
    assert {c for c, _ in FLAGS} >= {"explore", "run", "check", "opt", "bench"}


@pytest.mark.parametrize(("command", "action"), FLAGS, ids=FLAG_IDS)
def test_every_value_flag_is_validated_where_parsed(command: str, action: argparse.Action) -> None:
    flag = "/".join(action.option_strings)
    assert action.choices is not None or action.type in MALFORMED, (
        f"{command} {flag}: give it choices= or a validating type= from egg_dispatch/cli/args.py "
        f"(positive_int, non_negative_float, existing_file, ...; register a new one with @refuses), so that "
        f"a malformed value is exit 2 where it is parsed (type={getattr(action.type, '__name__', action.type)})"
    )


@pytest.mark.slow
@pytest.mark.parametrize(("command", "action"), FLAGS, ids=FLAG_IDS)
def test_malformed_values_are_usage_errors(
    command: str, action: argparse.Action, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    parser = subcommands()[command]
    bad = CHOICE_BAD if action.choices is not None else MALFORMED.get(action.type, ())  # type: ignore[arg-type]
    if action.choices is not None:
        bad = tuple(v for v in bad if v not in action.choices)
    assert bad, f"{command} {action.option_strings}: nothing to feed it"
    flag = action.option_strings[-1]
    for raw in bad:
        value = fill(raw, tmp_path)
        argv = [command, *required_positionals(parser), f"{flag}={value}"]
        code, out, err = parse_only(argv, capsys)
        context = f"egg-dispatch {' '.join(argv)}"
        assert code == 2, f"{context}: parsed (exit {code}); {flag} must refuse {value!r}"
        assert out == ""
        assert_one_error_line(err, action.option_strings, context)


@pytest.mark.slow
@pytest.mark.parametrize(("command", "action"), FLAGS, ids=FLAG_IDS)
def test_generic_malformed_values_never_crash_the_parser(
    command: str, action: argparse.Action, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    parser = subcommands()[command]
    flag = action.option_strings[-1]
    for raw in GENERIC_BAD:
        value = fill(raw, tmp_path)
        for argv in ([command, *required_positionals(parser), f"{flag}={value}"],
                     [command, *required_positionals(parser), flag, value]):  # fmt: skip
            code, _, err = parse_only(argv, capsys)  # an exception here fails the test with its traceback
            assert code in (0, 2), f"{argv}: exit {code}"
            if code == 2:
                assert_one_error_line(err, action.option_strings, f"egg-dispatch {' '.join(argv)}")


POSITIONAL = sorted(
    c for c, p in subcommands().items() if any(not a.option_strings and a.dest == "file" for a in p._actions)
)


@pytest.mark.parametrize("command", POSITIONAL)
@pytest.mark.parametrize("kind", ["missing", "directory"])
def test_a_file_that_is_not_one(command: str, kind: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """FILE missing or a directory: exit 2, one line naming it (the handler checks it before any work)."""
    path = str(tmp_path / "missing.mlir") if kind == "missing" else str(tmp_path)
    capsys.readouterr()
    code = main([command, path])
    err = capsys.readouterr().err
    assert code == 2, err
    assert_one_error_line(err, [path], f"{command} {path}")
    assert ("directory" if kind == "directory" else "no such file") in err


@pytest.mark.slow
def test_lambda_minus_5_is_a_usage_error_before_any_work() -> None:
    """The issue's second invocation, as a user runs it: exit 2 and one line, not 'internal error'."""
    start = time.perf_counter()
    proc = subprocess.run(
        [sys.executable, "-m", "egg_dispatch", "explore", "--lambda", "-5"], capture_output=True, text=True
    )
    assert proc.returncode == 2, proc.stderr
    assert proc.stdout == ""
    assert proc.stderr.count("\n") == 1 and "error: argument --lambda" in proc.stderr, proc.stderr
    assert "internal error" not in proc.stderr and "Traceback" not in proc.stderr
    assert time.perf_counter() - start < 20  # nothing was explored (the import alone takes a second or two)
