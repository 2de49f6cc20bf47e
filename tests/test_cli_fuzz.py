"""A command-line fuzzer: random invocations composed from the real parsers never end in an internal error.

Issue 13, point 4. Each example draws a subcommand of ``build_parser()`` (so commands added later are
fuzzed too), a FILE (a fixture, the built-in example, stdin, or a malformed, missing, empty or binary
file, or a directory), and up to five of that subcommand's flags, each with a valid value (from the
flag's choices, its validating type's samples below, or its default) or a malformed one (its type's
``MALFORMED`` values and generic junk), in ``--flag=value`` or ``--flag value`` form. The exit code must
be 0, 1 or 2 (never 3, an internal error) and stderr must hold no traceback.

``explore``, ``opt``, ``run`` and ``check`` run in-process (``egg_dispatch.cli.main`` with ``capsys``);
mostly ``explore --from input --baseline modelled`` so that IREE is not run for every example, but
sometimes not, so that IREE's paths are fuzzed too. Commands that compile and time for real
(``bench``, ``iree-baseline``, and any command added later) are fuzzed at the parse level only:
``main`` up to argument parsing, then the handler is not called.

Deterministic under the ``ci`` and ``dev`` profiles (tests/hypothesis_profiles.py; ``ci`` runs 500
examples); ``EGG_DISPATCH_FUZZ_EXAMPLES=5000 pytest tests/test_cli_fuzz.py`` runs more. An example that fails is
printed as the command line to rerun by hand.
"""

from __future__ import annotations

import argparse
import atexit
import io
import os
import shutil
import sys
import tempfile
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, event, given, note, settings
from hypothesis import strategies as st

from egg_dispatch.cli import build_parser, main
from egg_dispatch.cli.args import MALFORMED, builtin_example_text
from egg_dispatch.egraph.rules import FAMILIES
from egg_dispatch.target.profile import builtin_target_names
from tests.hypothesis_profiles import examples

FIXTURES = Path(__file__).parent / "fixtures"
EXAMPLES = int(os.environ.get("EGG_DISPATCH_FUZZ_EXAMPLES", "0"))
"""Examples to run when set; otherwise the hypothesis profile's count (``ci``: 500)."""
RUN_IN_PROCESS = {"explore", "opt", "run", "check"}
"""Commands whose handler runs; the others (compiling and timing for real) are fuzzed up to parsing."""

WORK = Path(tempfile.mkdtemp(prefix="egg_dispatch_fuzz_"))
atexit.register(shutil.rmtree, WORK, True)
FILES = sorted(str(p) for p in FIXTURES.glob("*.mlir"))
LOG = os.environ.get("EGG_DISPATCH_FUZZ_LOG")
"""A file to append each invocation, its exit code and its last stderr line to (for looking through by hand)."""
FUNCTIONS = ("main", "@main", "forward", "hoist_failure_repro", "split_weight_matmuls", "f", "nope", '"quoted"')


def _setup() -> dict[str, str]:
    """Malformed inputs and valid side files, written once into WORK."""
    seed_text = (FIXTURES / "seed_iree313.mlir").read_text()
    paths = {
        "empty": "",
        "garbage": "\x00\x01\x02 \xff\xfe not mlir {{{ ]]]",
        "truncated": seed_text[: len(seed_text) // 2],
        "unknown_op": 'func.func @f(%x: tensor<2xf32>) -> tensor<2xf32> {\n  %y = "foo.bar"(%x) : (tensor<2xf32>) -> '
        "tensor<2xf32>\n  return %y : tensor<2xf32>\n}\n",
        "no_func": "module {\n}\n",
        "undefined": "func.func @f(%a: tensor<4xf32>) -> tensor<4xf32> {\n  return %b : tensor<4xf32>\n}\n",
        "scalar": "func.func @f(%a: f32) -> f32 {\n  %b = arith.addf %a, %a : f32\n  return %b : f32\n}\n",
        "dynamic": "func.func @f(%a: tensor<?x4xf32>) -> tensor<?x4xf32> {\n  return %a : tensor<?x4xf32>\n}\n",
        "json": '{"name": "x86_64-avx2"}',
        "deep": "func.func @f() {\n" + "  " * 5 + "(" * 5000 + "\n}\n",
    }
    out: dict[str, str] = {}
    for name, text in paths.items():
        p = WORK / f"{name}.mlir"
        p.write_bytes(text.encode("utf-8", "surrogateescape") if name != "garbage" else text.encode("latin-1"))
        out[name] = str(p)
    (WORK / "latin1.mlir").write_bytes(seed_text.encode() + b"\n// \xe9\xff\n")
    out["latin1"] = str(WORK / "latin1.mlir")
    np.save(WORK / "x8.npy", np.ones((8, 8), np.float32))
    np.save(WORK / "x4.npy", np.arange(4, dtype=np.int32))
    np.savez(WORK / "archive.npz", a=np.ones(2))
    (WORK / "fake.irpa").write_bytes(b"IRPA\x00garbage")
    target = WORK / "target.json"
    shutil.copyfile(
        Path(__import__("egg_dispatch.target").target.__file__).parent / "profiles" / "x86_64-avx2.json", target
    )
    (WORK / "bad_target.json").write_text('{"name": "x", "tiles": 5}')
    (WORK / "subdir").mkdir(exist_ok=True)
    return out


MALFORMED_FILES = _setup()


def _signature_inputs(path: str) -> list[str]:
    """``--input`` flags that fit the first public function of ``path`` (ones everywhere), or []."""
    from egg_dispatch.evaluate import function_input_types, select_function
    from egg_dispatch.mlir.ir import TensorType
    from egg_dispatch.mlir.parser import parse_file

    try:
        types = function_input_types(select_function(parse_file(path), None))
    except Exception:
        return []
    flags = []
    for t in types:
        t = t.without_encoding() if isinstance(t, TensorType) else t
        if isinstance(t, TensorType):
            flags.append(f"--input={'x'.join(map(str, t.shape))}x{t.element}=1")
        else:
            flags.append(f"--input={t}=1")
    return flags


INPUTS = {p: _signature_inputs(p) for p in FILES}
(WORK / "builtin.mlir").write_text(builtin_example_text())
BUILTIN_INPUTS = _signature_inputs(str(WORK / "builtin.mlir"))

VALID: dict[str, tuple[str, ...]] = {
    "positive_int": ("1", "2", "3", "8", "64", "200000"),
    "non_negative_int": ("0", "1", "7", "1024"),
    "positive_float": ("0.0001", "0.001", "0.05", "1", "30"),
    "non_negative_float": ("0", "1e-12", "1e-9", "1e-6", "0.01", "1"),
    "existing_file": (*FILES[:3], str(WORK / "target.json")),
    "target_spec": (*builtin_target_names(), str(WORK / "target.json")),
    "target_file": (str(WORK / "target.json"),),
    "function_name": FUNCTIONS,
    "rule_families": ("all", *FAMILIES, "hoist,fuse", "clone,const_eval,propagate", "fuse,materialize"),
    "parameter_spec": (str(WORK / "fake.irpa"), f"model={WORK / 'fake.irpa'}"),
    "budget_spec": ("iterations=1", "enodes=1", "seconds=0.0001", "iterations=2,enodes=500",
                    "iterations=1,enodes=50,seconds=1"),
    "input_value": ("8x8xf32=1", "8x8xf32=0.5", "f32=1.5", "4xf32=1 2 3 4", "2x2xf16=[1 2][3 4]", "8x8xi8=1",
                    f"@{WORK / 'x8.npy'}", f"@{WORK / 'x4.npy'}", f"@{WORK / 'archive.npz'}", "i1=true"),
    "output_dest": ("-", f"@{WORK / 'out.npy'}", f"+{WORK / 'out.npy'}", f"@{WORK / 'out2.npy'}"),
    "output_file": (str(WORK / "out.json"),),
}  # fmt: skip
"""Values each validating type accepts (by function name); a type missing here is fuzzed with its default."""
JUNK = ("-1", "0", "nan", "inf", "-inf", "", "abc", "1e999", "💥", "a" * 300, str(WORK / "missing"),
        str(WORK / "subdir"), MALFORMED_FILES["garbage"], "--", "-", "=", ",")  # fmt: skip


def _fill(value: str) -> str:
    return value.format(missing=WORK / "missing" / "x", dir=WORK / "subdir", garbage=MALFORMED_FILES["garbage"])


def subcommands() -> dict[str, argparse.ArgumentParser]:
    parser = build_parser()
    (sub,) = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
    return dict(sub.choices)


PARSERS = subcommands()
COMMANDS = sorted(PARSERS)


def _values(action: argparse.Action) -> st.SearchStrategy[str]:
    """A valid value for the flag (mostly) or a malformed one."""
    if action.choices is not None:
        good = st.sampled_from([str(c) for c in action.choices])
        bad: tuple[str, ...] = ("", "no-such-choice", "-1")
    else:
        name = getattr(action.type, "__name__", "")
        samples = VALID.get(name, ())
        if not samples and action.default not in (None, [], ()) and not callable(action.default):
            samples = (str(action.default),)
        good = st.sampled_from(samples) if samples else st.just("x")
        bad = tuple(_fill(v) for v in MALFORMED.get(action.type, ()))  # type: ignore[arg-type]
    return st.one_of(good, good, good, good, good, st.sampled_from(bad + JUNK))


@st.composite
def invocation(draw: st.DrawFn) -> tuple[list[str], str | None]:
    """(argv, stdin text or None)."""
    command = draw(st.sampled_from(COMMANDS))
    parser = PARSERS[command]
    argv = [command]
    stdin = None
    positional = [a for a in parser._actions if not a.option_strings and a.dest not in ("help",)]
    for action in positional:
        optional = action.nargs == "?"
        kinds = ["fixture"] * 10 + ["malformed"] * 2 + ["missing", "dir", "stdin"] + (["none"] * 2 if optional else [])
        kind = draw(st.sampled_from(kinds))
        if kind == "fixture":
            argv.append(draw(st.sampled_from(FILES)))
        elif kind == "malformed":
            argv.append(draw(st.sampled_from(sorted(MALFORMED_FILES.values()))))
        elif kind == "missing":
            argv.append(str(WORK / "missing.mlir"))
        elif kind == "dir":
            argv.append(str(WORK / "subdir"))
        elif kind == "stdin":
            argv.append("-")
            stdin = draw(
                st.sampled_from([builtin_example_text(), "", "garbage {", (FIXTURES / "mlp2.mlir").read_text()])
            )
    if command == "run" and draw(st.integers(0, 9)) < 7:  # the function's own signature, so that it runs
        argv += INPUTS.get(argv[1], []) if len(argv) > 1 else BUILTIN_INPUTS
    if command in ("explore", "bench", "iree-baseline") and draw(st.integers(0, 9)) < 8:
        fast = {"--from": "input", "--baseline": "modelled"}
        for flag, value in fast.items():
            if any(flag in a.option_strings for a in parser._actions):
                argv += [flag, value]
    options = [
        a
        for a in parser._actions
        if a.option_strings and not isinstance(a, argparse._HelpAction) and "--measure" not in a.option_strings
    ]  # explore --measure times plans for real (measure.recommend), like the commands fuzzed up to parsing
    for _ in range(draw(st.integers(0, 5))):
        action = draw(st.sampled_from(options))
        flag = draw(st.sampled_from(action.option_strings))
        if action.nargs == 0:
            argv.append(flag)
            continue
        value = draw(_values(action))
        if draw(st.booleans()):
            argv.append(f"{flag}={value}")
        else:
            argv += [flag, value]
    return argv, stdin


def _run(argv: list[str]) -> int:
    """Exit code of the invocation, in-process."""
    if argv[0] in RUN_IN_PROCESS:
        return main(argv)
    try:  # parse level only: these compile and time for real
        build_parser().parse_args(argv)
    except SystemExit as e:
        return e.code if isinstance(e.code, int) else 2
    return 0


def _check(argv: list[str], stdin: str | None, capsys: pytest.CaptureFixture[str]) -> None:
    note(f"egg-dispatch {' '.join(repr(a) if (' ' in a or not a) else a for a in argv)}")
    saved_stdin, saved_cwd = sys.stdin, os.getcwd()
    sys.stdin = io.StringIO(stdin or "")
    os.chdir(WORK)
    capsys.readouterr()
    try:
        code = _run(argv)
    finally:
        sys.stdin = saved_stdin
        os.chdir(saved_cwd)
    err = capsys.readouterr().err
    note(f"exit {code}; stderr: {err[-2000:]}")
    event(f"{argv[0]}{'' if argv[0] in RUN_IN_PROCESS else ' (parsed)'}: exit {code}")
    if LOG:
        last = err.strip().splitlines()[-1] if err.strip() else ""
        with open(LOG, "a", encoding="utf-8") as f:
            f.write(f"{code}\t{' '.join(argv)}\t{last[:300]}\n")
    assert code in (0, 1, 2), f"exit {code}: {err[-2000:]}"
    assert "Traceback" not in err and "internal error" not in err, err[-2000:]


@pytest.mark.slow
@settings(
    max_examples=EXAMPLES or examples(250),
    database=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow, HealthCheck.data_too_large],
)
@given(case=invocation())
def test_fuzz(
    case: tuple[list[str], str | None], capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("EGG_DISPATCH_DEBUG", raising=False)
    _check(*case, capsys)


def test_the_fuzzer_covers_every_command_and_flag() -> None:
    """Every subcommand, and every flag of it, can be drawn (the strategies are built from the parsers)."""
    assert set(COMMANDS) >= {"explore", "run", "check", "opt", "bench", "iree-baseline"}
    for command, parser in PARSERS.items():
        flags = [a for a in parser._actions if a.option_strings and not isinstance(a, argparse._HelpAction)]
        assert flags, command
