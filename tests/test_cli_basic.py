"""The command line's surface: help for every command and flag, exit codes, the built-in example, stdin."""

from __future__ import annotations

import argparse
import io
import re
import subprocess
import sys
from pathlib import Path

import pytest

from egg_dispatch.cli import build_parser, main
from egg_dispatch.cli.args import BUILTIN_EXAMPLE, builtin_example_text

FIXTURES = Path(__file__).parent / "fixtures"
BUILTIN_LABEL = f"<builtin:{BUILTIN_EXAMPLE}>"


def same_report(a: str, b: str) -> bool:
    """Reports equal up to numbers (the report may carry wall times, which differ run to run) and where
    their lines wrap (a line over 160 characters wraps, so at another word for a longer input name)."""
    number = re.compile(r"\d+(?:\.\d+)?(?:[eE][-+]?\d+)?")
    return " ".join(number.sub("N", a).split()) == " ".join(number.sub("N", b).split())


def subcommands() -> dict[str, argparse.ArgumentParser]:
    parser = build_parser()
    (sub,) = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
    return dict(sub.choices)


COMMANDS = sorted(subcommands())


def run_main(argv: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    """``main(argv)`` in-process; argparse's own exits (help, bad flags) count as return codes."""
    try:
        code = main(argv)
    except SystemExit as e:
        code = e.code if isinstance(e.code, int) else 1
    out, err = capsys.readouterr()
    return code, out, err


def test_explore_is_a_command() -> None:
    assert "explore" in COMMANDS


def test_program_help(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run_main(["--help"], capsys)
    assert code == 0 and err == ""
    assert out.startswith("usage: egg-dispatch")
    for name, action in _choice_actions():
        assert name in out
        assert action.help, f"subcommand {name} has no help line"


def _choice_actions() -> list[tuple[str, argparse.Action]]:
    parser = build_parser()
    (sub,) = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
    return [(a.dest, a) for a in sub._choices_actions]


@pytest.mark.parametrize("command", COMMANDS)
def test_subcommand_help_documents_every_flag(command: str, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run_main([command, "--help"], capsys)
    assert code == 0 and err == ""
    assert out.startswith(f"usage: egg-dispatch {command}")
    parser = subcommands()[command]
    assert parser.description, f"{command} has no description"
    documented = 0
    for action in parser._actions:
        if isinstance(action, argparse._HelpAction):
            continue
        assert action.help and action.help != argparse.SUPPRESS, f"{command}: {action.dest} has no help"
        assert action.help.split()[0] in out
        if action.option_strings:
            for flag in action.option_strings:
                assert flag in out, f"{command}: {flag} missing from --help"
        else:
            assert str(action.metavar or action.dest) in out
        documented += 1
    assert documented >= 1


@pytest.mark.slow
def test_python_m_help_subprocess() -> None:
    proc = subprocess.run([sys.executable, "-m", "egg_dispatch", "--help"], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0 and "explore" in proc.stdout


@pytest.mark.parametrize(
    "argv",
    [
        ["--no-such-flag"],
        [],
        ["no-such-command"],
        ["explore", "--no-such-flag"],
        ["explore", "--emit", "xml"],
        ["explore", "a.mlir", "b.mlir"],
        *[[c, "--no-such-flag"] for c in COMMANDS if c != "explore"],
    ],
    ids=lambda a: " ".join(a) or "no-arguments",
)
def test_bad_flags_exit_2(argv: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run_main(argv, capsys)
    assert code == 2
    assert out == ""
    assert "usage: egg-dispatch" in err and "error:" in err and "Traceback" not in err


@pytest.mark.slow
def test_explore_without_file_uses_builtin_example(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    code, out, err = run_main(["explore"], capsys)
    assert code == 0
    assert "hoist_failure_repro" in out  # the reproducer's function
    assert BUILTIN_LABEL in out + err
    # The same report as for the example's text fed on stdin, up to the input's name.
    monkeypatch.setattr(sys, "stdin", io.StringIO(builtin_example_text()))
    code2, out2, err2 = run_main(["explore", "-"], capsys)
    assert code2 == 0
    assert same_report(out.replace(BUILTIN_LABEL, "<stdin>"), out2)
    assert same_report(err.replace(BUILTIN_LABEL, "<stdin>"), err2)
    # The elided blob of the example is reported, not silently invented.
    assert "resource '__auto.constant_16_8_torch.float32'" in err


@pytest.mark.slow
def test_explore_stdin(capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    text = (FIXTURES / "seed_iree313.mlir").read_text()
    monkeypatch.setattr(sys, "stdin", io.StringIO(text))
    code, out, _ = run_main(["explore", "-"], capsys)
    assert code == 0 and "split_weight_matmuls" in out and "hoist_failure_repro" not in out
    # The same report as for the file itself, up to the input's name.
    path = str(FIXTURES / "seed_iree313.mlir")
    code2, out2, _ = run_main(["explore", path], capsys)
    assert code2 == 0
    # Up to where in the file each contraction is (``(seed_iree313.mlir:33:12)``): stdin is read into a
    # module that IREE is given printed again, so its lines are not the user's and are not shown.
    located = re.compile(r" \(seed_iree313\.mlir:\d+:\d+\)")
    assert located.search(out2) and "(<stdin>:" not in out
    assert same_report(located.sub("", out2.replace(path, "<stdin>")), out)


def test_explore_stdin_json(capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    import json

    monkeypatch.setattr(sys, "stdin", io.StringIO((FIXTURES / "seed_iree313.mlir").read_text()))
    code, out, _ = run_main(["explore", "-", "--emit", "json"], capsys)
    assert code == 0
    assert "split_weight_matmuls" in json.dumps(json.loads(out))


@pytest.mark.slow
def test_explore_stdin_subprocess() -> None:
    text = (FIXTURES / "seed_iree313.mlir").read_text()
    proc = subprocess.run(
        [sys.executable, "-m", "egg_dispatch", "explore", "-"],
        input=text,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode == 0, proc.stderr
    assert "split_weight_matmuls" in proc.stdout and "Traceback" not in proc.stderr


@pytest.mark.slow
def test_the_command_writes_all_its_output_before_it_exits_and_a_reader_may_leave() -> None:
    """``python -m egg_dispatch`` ends the process without the interpreter's teardown (``console_main``):
    the whole report reaches a pipe first, and a reader that leaves early (``| head``) is no error."""
    import json

    argv = [sys.executable, "-m", "egg_dispatch", "explore", "--emit", "json", "--baseline", "modelled"]
    proc = subprocess.run([*argv, "--no-compile-check"], capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout)["best"]["mlir"]  # the whole JSON document, parsed
    early = subprocess.Popen([*argv, "--no-compile-check"], stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    assert early.stdout is not None and early.stderr is not None
    assert early.stdout.read(1) == b"{"
    early.stdout.close()
    assert early.wait(timeout=300) == 0
    assert b"Traceback" not in early.stderr.read()


def test_a_bad_value_does_not_change_the_next_commands_usage_error(capsys: pytest.CaptureFixture[str]) -> None:
    """The parsers live for the process: after a bad flag value (one line), an invalid choice in the
    next call still prints the usage first."""
    code, _, err = run_main(["explore", "--lambda", "-5"], capsys)
    assert code == 2 and "usage:" not in err and "must be non-negative" in err
    code, _, err = run_main(["explore", "--emit", "xml"], capsys)
    assert code == 2 and "usage: egg-dispatch" in err and "invalid choice" in err
