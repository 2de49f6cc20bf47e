"""Ctrl-C exits 130 with one line, and no file the tool writes is ever left half-written.

Issue 13, point 3:

* SIGINT sent to a running ``explore`` process (a 16-layer generated transformer, ``--check --pareto``,
  so that it saturates, extracts, compiles IREE's own plan when IREE is installed, and evaluates) at
  several points after its progress line: exit 130, ``egg-dispatch: interrupted`` as the one line
  after the progress lines, no traceback (``EGG_DISPATCH_DEBUG`` unset);
* ``run --output`` interrupted in the middle of writing an ``.npy``: exit 130, and the destination is
  as it was (absent, or the old file), with no temporary file left next to it;
* ``util.files.atomic_write`` itself: a failure or an interrupt inside it leaves the old file;
* every write in the package (``open(..., "w"/"a"/"x")``, ``os.fdopen`` for writing, ``write_text``,
  ``write_bytes``, ``np.save*``, ``json.dump`` to a file) is inside ``atomic_write`` or a temporary
  directory (which is removed as a whole): nothing else writes a file that outlives the command.
"""

from __future__ import annotations

import ast
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import numpy as np
import pytest

import egg_dispatch
from egg_dispatch.cli import main
from egg_dispatch.util.files import TEMP_PREFIX, atomic_write, write_text

pytestmark = pytest.mark.slow  # IREE builds, explorations at model size or long properties (docs/testing.md)

ROOT = Path(__file__).resolve().parents[1]
FIXTURES = ROOT / "tests" / "fixtures"
PACKAGE = Path(egg_dispatch.__file__).parent
SEED = str(FIXTURES / "seed_iree313.mlir")


@pytest.fixture(scope="module")
def big_program(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A program explore needs about ten seconds for (saturation, extraction, the frontier, the check)."""
    sys.path.insert(0, str(ROOT / "benchmarks"))
    try:
        from generate import transformer  # type: ignore[import-not-found]
    finally:
        sys.path.remove(str(ROOT / "benchmarks"))
    text, _ = transformer(16)
    path = tmp_path_factory.mktemp("interrupts") / "transformer16.mlir"
    path.write_text(text)
    return path


def _as_in_a_terminal() -> None:
    """SIGINT handled as in a foreground terminal: a suite started in the background (``cmd &``, nohup)
    inherits SIGINT ignored, and a child that inherits that never sees the interrupt (POSIX)."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def _interrupt(path: Path, delay: float) -> tuple[int, list[str], list[str]]:
    """Run explore, wait for its first progress line, then ``delay`` s, then SIGINT.
    Returns (exit code, stderr lines up to the interrupt, stderr lines after it)."""
    env = {k: v for k, v in os.environ.items() if k != "EGG_DISPATCH_DEBUG"}
    argv = [sys.executable, "-m", "egg_dispatch", "explore", str(path), "--from", "input", "--check", "--pareto"]
    proc = subprocess.Popen(
        argv, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, env=env, preexec_fn=_as_in_a_terminal
    )
    assert proc.stderr is not None
    before: list[str] = []
    while not (before and before[-1].startswith("egg-dispatch: ")):  # the progress line (runs over 2 s)
        before.append(proc.stderr.readline())
        assert before[-1], f"explore ended before its progress line: {before}"
    lines: list[str] = []
    reader = threading.Thread(target=lambda: lines.extend(proc.stderr), daemon=True)  # type: ignore[arg-type]
    reader.start()
    time.sleep(delay)
    sent = len(lines)
    proc.send_signal(signal.SIGINT)
    try:
        code = proc.wait(timeout=120)
    except subprocess.TimeoutExpired:
        proc.kill()
        raise
    reader.join(timeout=10)
    return code, before + lines[:sent], lines[sent:]


@pytest.mark.parametrize("delay", [0.0, 1.0, 3.0, 6.0])
def test_sigint_during_explore_is_one_line_and_130(big_program: Path, delay: float) -> None:
    code, before, after = _interrupt(big_program, delay)
    err = "".join(before + after)
    assert code == 130, err
    assert "Traceback" not in err and "internal error" not in err, err
    assert err.count("egg-dispatch: interrupted") == 1, err
    tail = [x for x in after if not x.startswith("egg-dispatch: ") or "interrupted" in x]
    tail = [x for x in tail if "warning:" not in x and not x.startswith("check ")]  # what it finished first
    assert tail == ["egg-dispatch: interrupted\n"], err


def _interrupting_save(real_save):
    """np.save that writes half the array, then behaves as Ctrl-C would."""

    def save(f, a, allow_pickle=False):
        real_save(f, a, allow_pickle=allow_pickle)
        f.truncate(f.tell() // 2)
        raise KeyboardInterrupt

    return save


@pytest.mark.parametrize("mode", ["@", "+"])
@pytest.mark.parametrize("existing", [False, True])
def test_interrupted_output_leaves_no_partial_file(
    mode: str, existing: bool, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    import egg_dispatch.cli.run as run_cmd

    monkeypatch.delenv("EGG_DISPATCH_DEBUG", raising=False)
    out0 = tmp_path / "o0.npy"
    old = np.arange(4, dtype=np.float32)
    if existing:
        np.save(out0, old)
    before = out0.read_bytes() if existing else None
    monkeypatch.setattr(run_cmd.np, "save", _interrupting_save(np.save))
    argv = [
        "run",
        SEED,
        "--input=8x8xf32=1",
        "--input=8x8xf32=2",
        f"--output={mode}{out0}",
        f"--output=@{tmp_path / 'o1.npy'}",
    ]
    capsys.readouterr()
    assert main(argv) == 130
    err = capsys.readouterr().err
    assert err.splitlines()[-1] == "egg-dispatch: interrupted" and "Traceback" not in err
    assert (out0.read_bytes() if out0.exists() else None) == before
    assert not (tmp_path / "o1.npy").exists()
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(TEMP_PREFIX)] == []


def test_atomic_write_keeps_the_old_file(tmp_path: Path) -> None:
    target = tmp_path / "profile.json"
    write_text(target, "old\n")
    os.chmod(target, 0o640)
    for exc in (KeyboardInterrupt, OSError, ValueError):
        with pytest.raises(exc), atomic_write(target) as f:
            f.write("new, but half")
            raise exc
        assert target.read_text() == "old\n"
    with atomic_write(target, "a") as f:
        f.write("appended\n")
    assert target.read_text() == "old\nappended\n"
    assert target.stat().st_mode & 0o777 == 0o640  # permissions as they were
    write_text(tmp_path / "fresh.txt", "x")
    mask = os.umask(0)
    os.umask(mask)
    assert (tmp_path / "fresh.txt").stat().st_mode & 0o777 == 0o666 & ~mask  # as open() would make it
    assert sorted(p.name for p in tmp_path.iterdir()) == ["fresh.txt", "profile.json"]


# --- every write goes through atomic_write (or into a temporary directory) -------------------------

_WRITE_CALLS = {"write_text", "write_bytes", "save", "savez", "savez_compressed", "savetxt", "tofile", "dump"}


def _write_mode(call: ast.Call) -> bool:
    """``open(path, mode)`` / ``os.fdopen(fd, mode)`` / ``Path.open(mode)`` with a writing mode."""
    args = list(call.args)
    func = call.func
    name = func.id if isinstance(func, ast.Name) else func.attr if isinstance(func, ast.Attribute) else ""
    if name not in ("open", "fdopen"):
        return False
    if args and ast.unparse(args[0]) == "os.devnull":
        return False
    is_method = isinstance(func, ast.Attribute) and not (
        isinstance(func.value, ast.Name) and func.value.id in ("os", "io")
    )
    mode_arg = args[0] if is_method and args else args[1] if len(args) > 1 else None
    for kw in call.keywords:
        if kw.arg == "mode":
            mode_arg = kw.value
    if mode_arg is None:
        return False
    if isinstance(mode_arg, ast.Constant) and isinstance(mode_arg.value, str):
        return any(ch in mode_arg.value for ch in "wax+")
    return not is_method  # open(p, mode) with a computed mode: assume it writes (x.open(a, b) is anyone's)


def _allowed_context(node: ast.With | ast.AsyncWith) -> bool:
    for item in node.items:
        expr = item.context_expr
        if isinstance(expr, ast.Call):
            f = expr.func
            name = f.id if isinstance(f, ast.Name) else f.attr if isinstance(f, ast.Attribute) else ""
            if name in ("atomic_write", "TemporaryDirectory"):
                return True
    return False


def _unguarded_writes(path: Path, root: Path = PACKAGE.parent) -> list[str]:
    tree = ast.parse(path.read_text(), str(path))
    found: list[str] = []

    def visit(node: ast.AST, guarded: bool) -> None:
        if isinstance(node, (ast.With, ast.AsyncWith)) and _allowed_context(node):
            guarded = True
        if isinstance(node, ast.Call) and not guarded:
            func = node.func
            name = func.attr if isinstance(func, ast.Attribute) else func.id if isinstance(func, ast.Name) else ""
            writes = _write_mode(node) or (
                name in _WRITE_CALLS and len(node.args) >= (1 if name.startswith("write") else 2)
            )
            if name == "dump" and isinstance(func, ast.Attribute) and getattr(func.value, "id", "") != "json":
                writes = False
            if writes:
                found.append(f"{path.relative_to(root)}:{node.lineno}: {ast.unparse(node)[:80]}")
        for child in ast.iter_child_nodes(node):
            visit(child, guarded)

    visit(tree, False)
    return found


def test_every_file_write_is_atomic() -> None:
    unguarded = [
        w
        for p in sorted(PACKAGE.rglob("*.py"))
        if p.name != "files.py" or p.parent.name != "util"
        for w in _unguarded_writes(p)
    ]
    assert unguarded == [], (
        "write these through egg_dispatch.util.files.atomic_write (or into a tempfile.TemporaryDirectory), "
        "so that Ctrl-C or a full disk never leaves a partial file:\n" + "\n".join(unguarded)
    )


def test_the_scan_sees_writes(tmp_path: Path) -> None:
    """The scan itself: plain writes are found, the guarded forms are not."""
    probe = tmp_path / "probe.py"
    probe.write_text(
        "import json, os, tempfile\nimport numpy as np\n"
        "def bad(p, a, d):\n"
        "    open(p, 'w').write('x')\n    p.write_text('x')\n    np.save(p, a)\n"
        "    json.dump(d, open(p, 'w'))\n    os.fdopen(3, 'wb')\n    p.open('a')\n"
        "def good(p, a, d):\n"
        "    open(p).read()\n    open(p, 'rb').read()\n    json.dumps(d)\n"
        "    with atomic_write(p) as f:\n        json.dump(d, f)\n        np.save(f, a)\n"
        "    with tempfile.TemporaryDirectory() as t:\n        np.save(t + '/x.npy', a)\n"
    )
    found = _unguarded_writes(probe, tmp_path)
    assert [int(w.split(":")[1]) for w in found] == [4, 5, 6, 7, 7, 8, 9], found
