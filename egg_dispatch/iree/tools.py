"""Thin harness around a locally installed IREE (the ``iree`` extra): compile, run, parse-check.

Everything here is optional: egg_dispatch itself never needs IREE. Tests and ``--check`` against real
IREE use it to compile a program (with or without the DispatchCreation data-tiling path) for the
``llvm-cpu`` backend and to run it on the local CPU.

- ``find_tool`` looks for an IREE executable next to the running interpreter first (a virtualenv's
  ``bin/``), then on ``PATH``.
- ``compile_module`` shells out to ``iree-compile`` (with a timeout) and returns the vmfb bytes; a
  failure raises :class:`IreeError` carrying IREE's stderr.
- ``run_module`` loads a vmfb through ``iree.runtime`` (CPU driver ``local-sync`` or ``local-task``)
  and calls one function on NumPy inputs.
- ``benchmark_module`` times one function with ``iree-benchmark-module`` (seconds per call).
- ``iree_opt_parses`` asks ``iree-opt`` whether a text parses and verifies.

No network access; temporary files live in a private temporary directory.
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import IO, Any

import numpy as np

from egg_dispatch.util.files import atomic_write

__all__ = [
    "CACHE_ENV",
    "DEFAULT_COMPILE_TIMEOUT",
    "DEFAULT_MIN_TIME",
    "IreeError",
    "benchmark_module",
    "compile_flags",
    "compile_module",
    "compile_text",
    "compile_text_and_stderr",
    "find_tool",
    "iree_available",
    "iree_opt_parses",
    "iree_opt_parses_each",
    "iree_opt_passes",
    "is_source_path",
    "parameter_flags",
    "run_module",
]

DEFAULT_COMPILE_TIMEOUT = 300.0
"""Seconds before an ``iree-compile`` or ``iree-opt`` subprocess is killed."""

DEFAULT_MIN_TIME = 0.05
"""Seconds ``iree-benchmark-module`` spends per measurement (it picks the iteration count)."""

DATA_TILING_FLAG = "--iree-dispatch-creation-data-tiling"
"""The flag selecting data tiling on the DispatchCreation path (IREE >= 3.7 spelling)."""


class IreeError(RuntimeError):
    """An IREE tool failed; ``stderr`` holds its diagnostics and ``cmd`` the command line."""

    def __init__(self, message: str, *, stderr: str = "", cmd: Sequence[str] = ()) -> None:
        super().__init__(f"{message}\n{stderr}".rstrip())
        self.stderr = stderr
        self.cmd = list(cmd)


def find_tool(name: str) -> Path | None:
    """Path of the executable ``name``: next to ``sys.executable`` first, then on ``PATH``.

    pip installs IREE's tools as console scripts: Python wrappers that start an interpreter, import
    IREE's package and only then exec the binary it ships: an interpreter start per call, several times
    what ``iree-opt`` takes on a small module (docs/testing.md). A wrapper of this environment is
    resolved to that binary, as the wrapper itself would resolve it; anything else is returned as found.
    """
    here = Path(sys.executable).parent
    found: Path | None = None
    for candidate in (here / name, here / f"{name}.exe"):
        if candidate.is_file() and os.access(candidate, os.X_OK):
            found = candidate
            break
    if found is None:
        on_path = shutil.which(name)
        found = Path(on_path) if on_path else None
    if found is not None and _is_console_script(found):
        return _packaged_binary(name) or found
    return found


def _is_console_script(path: Path) -> bool:
    """Whether ``path`` is the Python wrapper pip wrote for one of IREE's packaged tools, in this
    interpreter's environment."""
    try:
        with open(path, "rb") as f:
            head = f.read(1024)
    except OSError:
        return False
    wraps_iree = b"iree.compiler.tools.scripts" in head or b"iree._runtime.scripts" in head
    if not head.startswith(b"#!") or not wraps_iree:
        return False
    # Only a wrapper of this environment: the binary resolved is then the one the wrapper would exec.
    interpreter = head[2:].split(b"\n", 1)[0].strip().split(b" ", 1)[0].decode(errors="replace")
    return Path(interpreter).parent == Path(sys.executable).parent


@functools.cache
def _packaged_binary(name: str) -> Path | None:
    """The binary IREE's Python packages ship for ``name``, found the way their own wrappers find it."""
    try:
        from iree.compiler.tools import binaries

        candidate = Path(binaries.find_tool(name))
    except (ImportError, ValueError):
        try:
            from iree._runtime import libs

            candidate = Path(libs.library_path) / name
        except ImportError:
            return None
    return candidate.resolve() if candidate.is_file() and os.access(candidate, os.X_OK) else None


def _require_tool(name: str) -> Path:
    tool = find_tool(name)
    if tool is None:
        raise IreeError(f"{name} not found next to {sys.executable} or on PATH (install egg-dispatch[iree])")
    return tool


@functools.cache
def iree_available() -> bool:
    """True when ``iree-compile`` and ``iree-opt`` are found and ``iree.runtime`` imports."""
    if find_tool("iree-compile") is None or find_tool("iree-opt") is None:
        return False
    try:
        import iree.runtime  # noqa: F401
    except ImportError:
        return False
    return True


def is_source_path(source: str | os.PathLike[str]) -> bool:
    """A ``PathLike`` is a path; a one-line ``str`` naming an existing ``.mlir``/``.mlirbc`` file is too."""
    if isinstance(source, os.PathLike):
        return True
    return "\n" not in source and source.endswith((".mlir", ".mlirbc")) and Path(source).is_file()


def _run(cmd: list[str], *, stdin: bytes | None, timeout: float) -> subprocess.CompletedProcess[bytes]:
    try:
        return subprocess.run(cmd, input=stdin, capture_output=True, timeout=timeout, check=False)
    except subprocess.TimeoutExpired as exc:
        err = (exc.stderr or b"").decode(errors="replace")
        raise IreeError(f"{Path(cmd[0]).name} timed out after {timeout:g} s", stderr=err, cmd=cmd) from exc


def compile_flags(
    *,
    data_tiling: bool,
    target_cpu: str = "host",
    extra_flags: Sequence[str] = (),
    compile_from: str | None = None,
) -> list[str]:
    """The ``iree-compile`` flags :func:`compile_module` uses (without input and output)."""
    flags = ["--iree-hal-target-backends=llvm-cpu", f"--iree-llvmcpu-target-cpu={target_cpu}"]
    if data_tiling:
        flags.append(DATA_TILING_FLAG)
    if compile_from is not None:
        flags.append(f"--compile-from={compile_from}")
    flags.extend(extra_flags)
    return flags


def compile_module(
    source: str | os.PathLike[str],
    *,
    data_tiling: bool,
    target_cpu: str = "host",
    extra_flags: Sequence[str] = (),
    compile_from: str | None = None,
    timeout: float = DEFAULT_COMPILE_TIMEOUT,
) -> bytes:
    """Compile MLIR for ``llvm-cpu`` with ``iree-compile`` and return the vmfb bytes.

    ``source`` is MLIR text, or a path (``os.PathLike``, or a one-line ``str`` naming an existing
    ``.mlir`` file). ``data_tiling`` adds ``--iree-dispatch-creation-data-tiling``; ``target_cpu`` is
    passed as ``--iree-llvmcpu-target-cpu`` (``"host"`` runs here; a named CPU such as ``"haswell"``
    gives machine-independent output); ``compile_from`` resumes from a phase (e.g.
    ``"dispatch-creation"`` for IR that already is in that phase's output form). Other flags, such
    as ``--compile-to=...`` with an ``.mlir`` output, go in ``extra_flags``: the bytes returned are
    whatever ``iree-compile`` wrote. Raises :class:`IreeError` with IREE's stderr on failure.
    """
    flags = compile_flags(
        data_tiling=data_tiling, target_cpu=target_cpu, extra_flags=extra_flags, compile_from=compile_from
    )
    with _compiled(source, flags, timeout) as out:
        return out.read_bytes()


def compile_text(
    source: str | os.PathLike[str],
    *,
    data_tiling: bool,
    target_cpu: str = "host",
    extra_flags: Sequence[str] = (),
    timeout: float = DEFAULT_COMPILE_TIMEOUT,
) -> str:
    """``compile_module`` for an MLIR output (``--compile-to=PHASE`` in ``extra_flags``), decoded as it is
    read: a model-sized output is then in memory once."""
    flags = compile_flags(data_tiling=data_tiling, target_cpu=target_cpu, extra_flags=extra_flags)
    with _compiled(source, flags, timeout) as out, open(out, encoding="utf-8") as f:
        return f.read()


def compile_text_and_stderr(
    source: str | os.PathLike[str],
    *,
    data_tiling: bool,
    target_cpu: str = "host",
    extra_flags: Sequence[str] = (),
    timeout: float = DEFAULT_COMPILE_TIMEOUT,
    watch: Watch | None = None,
) -> tuple[str, str]:
    """``compile_text``, and what ``iree-compile`` printed on stderr (IR dumps asked for by flags), which
    goes to a file rather than a pipe: a dump of a model can be large. ``watch(stderr, running)`` is
    called on this thread while ``iree-compile`` runs (not when its output comes from the cache), with
    the path of the stderr file as it grows and a test of whether the run goes on: work on a dump that
    is complete before IREE exits goes there."""
    flags = compile_flags(data_tiling=data_tiling, target_cpu=target_cpu, extra_flags=extra_flags)
    with _compiled(source, flags, timeout, stderr_file=True, watch=watch) as out:
        with open(out, encoding="utf-8") as f:
            text = f.read()
        with open(out.with_suffix(".stderr"), encoding="utf-8", errors="replace") as f:
            return text, f.read()


type Watch = Callable[[Path, Callable[[], bool]], None]
"""What ``compile_text_and_stderr`` calls while ``iree-compile`` runs: (its stderr file, still running?)."""

CACHE_ENV = "EGG_DISPATCH_IREE_CACHE"
"""When set, a directory where ``iree-compile``'s outputs are kept (see ``_compiled``)."""


@contextlib.contextmanager
def _compiled(
    source: str | os.PathLike[str],
    flags: list[str],
    timeout: float,
    *,
    stderr_file: bool = False,
    watch: Watch | None = None,
) -> Iterator[Path]:
    """Run ``iree-compile`` on ``source`` with ``flags``; yields its output file (removed afterwards)
    and, with ``stderr_file``, leaves its stderr next to it (``.stderr``).

    With ``EGG_DISPATCH_IREE_CACHE`` naming a directory, a successful output (and its stderr) is kept
    there, keyed by the input's text, the flags, and the tool's path, size and time stamp (another
    IREE is another key), and the same call later yields the kept file instead of compiling again.
    ``iree-compile`` is a function of those; the test suite sets it so that the many tests that
    compile one fixture the same way compile it once per run. A lock per key makes a second process
    wait for a compile in progress instead of repeating it. Failures are never kept."""
    tool = _require_tool("iree-compile")
    cache = os.environ.get(CACHE_ENV)
    if not cache:
        with _compiled_in_temp(tool, source, flags, timeout, stderr_file, watch=watch) as out:
            yield out
        return
    folder = Path(cache)
    folder.mkdir(parents=True, exist_ok=True)
    text = Path(source).read_bytes() if is_source_path(source) else str(source).encode()
    stat = tool.stat()
    identity = f"{tool}:{stat.st_size}:{stat.st_mtime_ns}".encode()
    key = hashlib.sha256(b"\0".join([text, *(f.encode() for f in flags), identity])).hexdigest()[:32]
    kept = folder / f"{key}.out"
    with _locked(folder / f"{key}.lock"):
        if not kept.is_file() or (stderr_file and not kept.with_suffix(".stderr").is_file()):
            with _compiled_in_temp(tool, source, flags, timeout, stderr_file, folder, watch) as out:
                if stderr_file:
                    out.with_suffix(".stderr").replace(kept.with_suffix(".stderr"))
                out.replace(kept)  # a reader never sees half a file: rename within one folder
    yield kept


@contextlib.contextmanager
def _locked(path: Path) -> Iterator[None]:
    """An exclusive lock on ``path`` across processes (none where ``fcntl`` is missing: then two
    processes may compile one key twice, and the second rename wins with the same bytes)."""
    try:
        import fcntl
    except ImportError:  # pragma: no cover - not POSIX
        yield
        return
    if not path.exists():  # an empty lock file (two processes racing here may each lock their own
        with atomic_write(path):  # and compile the key twice; the bytes are the same)
            pass
    with open(path) as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # released when the file closes
        yield


@contextlib.contextmanager
def _compiled_in_temp(
    tool: Path,
    source: str | os.PathLike[str],
    flags: list[str],
    timeout: float,
    stderr_file: bool,
    folder: Path | None = None,
    watch: Watch | None = None,
) -> Iterator[Path]:
    """``iree-compile`` into a temporary directory (in ``folder``, default the system's), which is
    removed afterwards; yields its output file (with, for ``stderr_file``, its stderr in
    ``<output>.stderr``); raises ``IreeError`` on failure."""
    with tempfile.TemporaryDirectory(prefix="egg_dispatch_iree_", dir=folder) as tmp:
        out = Path(tmp) / "module.out"
        if is_source_path(source):
            src, stdin = str(Path(source)), None
        else:
            src, stdin = "-", str(source).encode()
        cmd = [str(tool), src, *flags, "-o", str(out)]
        if stderr_file:
            with open(out.with_suffix(".stderr"), "wb") as err_f:
                returncode = _run_watched(cmd, stdin, err_f, timeout, out.with_suffix(".stderr"), watch)
            if returncode != 0 or not out.is_file():
                err = out.with_suffix(".stderr").read_text(errors="replace")[-20000:]
                raise IreeError(f"iree-compile failed (exit {returncode})", stderr=err, cmd=cmd)
        else:
            proc = _run(cmd, stdin=stdin, timeout=timeout)
            if proc.returncode != 0 or not out.is_file():
                err = proc.stderr.decode(errors="replace")
                raise IreeError(f"iree-compile failed (exit {proc.returncode})", stderr=err, cmd=cmd)
        yield out


def _run_watched(
    cmd: list[str], stdin: bytes | None, err_f: IO[bytes], timeout: float, err_path: Path, watch: Watch | None
) -> int:
    """``cmd``'s exit code, its stderr into ``err_f``; ``watch`` called while it runs (``Watch``)."""
    if watch is None:
        try:
            return subprocess.run(cmd, input=stdin, stdout=subprocess.DEVNULL, stderr=err_f, timeout=timeout).returncode
        except subprocess.TimeoutExpired as exc:
            raise IreeError(f"iree-compile timed out after {timeout:g} s", cmd=cmd) from exc
    deadline = time.monotonic() + timeout
    with subprocess.Popen(
        cmd, stdin=subprocess.PIPE if stdin is not None else None, stdout=subprocess.DEVNULL, stderr=err_f
    ) as proc:
        try:
            if stdin is not None and proc.stdin is not None:
                with contextlib.suppress(BrokenPipeError):  # IREE gave up reading: its exit code says why
                    proc.stdin.write(stdin)
                proc.stdin.close()
            watch(err_path, lambda: proc.poll() is None and time.monotonic() < deadline)
            return proc.wait(timeout=max(0.0, deadline - time.monotonic()))
        except subprocess.TimeoutExpired as exc:
            raise IreeError(f"iree-compile timed out after {timeout:g} s", cmd=cmd) from exc
        finally:
            if proc.poll() is None:  # timed out, or interrupted: not left running
                proc.kill()
                proc.wait()


def iree_opt_parses(text: str, *, timeout: float = DEFAULT_COMPILE_TIMEOUT) -> tuple[bool, str]:
    """Whether ``iree-opt`` parses and verifies ``text``; the second item is its stderr."""
    tool = _require_tool("iree-opt")
    cmd = [str(tool), "-", "-o", os.devnull]
    proc = _run(cmd, stdin=text.encode(), timeout=timeout)
    return proc.returncode == 0, proc.stderr.decode(errors="replace")


def iree_opt_passes(text: str, pipeline: str, *, timeout: float = DEFAULT_COMPILE_TIMEOUT) -> str:
    """``text`` after ``iree-opt --pass-pipeline=PIPELINE`` (IREE's own passes, as its lit tests run
    them); raises :class:`IreeError` with IREE's diagnostics when IREE rejects the input."""
    tool = _require_tool("iree-opt")
    cmd = [str(tool), f"--pass-pipeline={pipeline}", "-"]
    proc = _run(cmd, stdin=text.encode(), timeout=timeout)
    if proc.returncode != 0:
        err = proc.stderr.decode(errors="replace")
        raise IreeError(f"iree-opt failed (exit {proc.returncode})", stderr=err, cmd=cmd)
    return proc.stdout.decode()


def iree_opt_parses_each(texts: Sequence[str], *, timeout: float = DEFAULT_COMPILE_TIMEOUT) -> list[tuple[bool, str]]:
    """:func:`iree_opt_parses` of each text, in one ``iree-opt --split-input-file`` run when all parse.

    Starting ``iree-opt`` costs more than reading a small module, so a batch is read in one process
    (chunks separated by ``// -----``); only when that run fails is each text read alone, so that
    every result names its own text's diagnostics.
    """
    tool = _require_tool("iree-opt")
    if any("// -----" in t for t in texts):
        return [iree_opt_parses(t, timeout=timeout) for t in texts]
    joined = "\n// -----\n".join(texts)
    proc = _run([str(tool), "--split-input-file", "-", "-o", os.devnull], stdin=joined.encode(), timeout=timeout)
    if proc.returncode == 0:
        return [(True, "")] * len(texts)
    return [iree_opt_parses(t, timeout=timeout) for t in texts]


@functools.cache
def _config(driver: str) -> Any:
    """One ``iree.runtime.Config`` (instance + device) per driver, reused across calls."""
    import iree.runtime as rt

    return rt.Config(driver)


def _to_numpy(value: Any) -> np.ndarray:
    """An owning host copy: ``to_host()`` may alias device memory freed with the module."""
    host = value.to_host() if hasattr(value, "to_host") else value
    return np.array(host, copy=True)


def run_module(
    vmfb: bytes,
    function: str,
    inputs: Sequence[np.ndarray],
    *,
    driver: str = "local-sync",
    parameters: Sequence[tuple[str | None, str | os.PathLike[str]]] = (),
) -> list[np.ndarray]:
    """Load ``vmfb`` with ``iree.runtime`` on a CPU driver and call ``function`` on ``inputs``.

    Module initializers (hoisted constants, const-eval globals) run at load. Returns the results as
    a list of NumPy arrays (one per function result). ``driver`` is ``"local-sync"`` (default,
    single-threaded, deterministic) or ``"local-task"``. ``parameters`` are ``(scope, file)`` pairs
    (``iree-run-module --parameters=scope=file``) for a module that reads named parameters.
    """
    if driver not in ("local-sync", "local-task"):
        raise ValueError(f"unsupported driver {driver!r}: use 'local-sync' or 'local-task'")
    import iree.runtime as rt

    config = _config(driver)
    try:
        vm_module = rt.VmModule.copy_buffer(config.vm_instance, vmfb)
        if parameters:
            modules = []
            for scope, path in parameters:
                index = rt.ParameterIndex()
                index.load(str(path))
                provider = index.create_provider(scope=scope or "")
                modules.append(rt.create_io_parameters_module(config.vm_instance, provider))
            context = rt.SystemContext(vm_modules=[*modules, vm_module], config=config)
            fn = context.modules[vm_module.name][function]
        else:
            module = rt.load_vm_module(vm_module, config)
            fn = getattr(module, function)
    except (RuntimeError, ValueError, AttributeError, KeyError) as exc:
        raise IreeError(f"cannot load function {function!r}: {exc}") from exc
    args = [np.ascontiguousarray(a) for a in inputs]
    try:
        result = fn(*args)
    except (RuntimeError, ValueError) as exc:
        raise IreeError(f"running {function!r} failed: {exc}") from exc
    if result is None:
        return []
    if isinstance(result, tuple | list):
        return [_to_numpy(r) for r in result]
    return [_to_numpy(result)]


def benchmark_module(
    vmfb: Path,
    function: str,
    inputs: Sequence[Path],
    *,
    min_time: float = DEFAULT_MIN_TIME,
    device: str = "local-sync",
    timeout: float = 300.0,
    parameters: Sequence[tuple[str | None, str | os.PathLike[str]]] = (),
) -> float:
    """Seconds per call of ``function``, as ``iree-benchmark-module`` measures it (real time);
    ``parameters``: (scope, file) pairs, as ``run_module`` takes them."""
    tool = find_tool("iree-benchmark-module")
    if tool is None:
        raise IreeError("iree-benchmark-module not found next to the interpreter or on PATH")
    cmd = [
        str(tool),
        f"--module={vmfb}",
        f"--function={function}",
        f"--device={device}",
        *[f"--input=@{p}" for p in inputs],
        *parameter_flags(parameters),
        f"--benchmark_min_time={min_time:g}s",
        "--benchmark_format=json",
    ]
    proc = subprocess.run(cmd, capture_output=True, timeout=timeout, check=False)
    if proc.returncode != 0:
        raise IreeError("iree-benchmark-module failed", stderr=proc.stderr.decode(errors="replace"), cmd=cmd)
    data = json.loads(proc.stdout.decode())
    runs = [b for b in data["benchmarks"] if b.get("run_type", "iteration") == "iteration"]
    scale = {"ns": 1e-9, "us": 1e-6, "ms": 1e-3, "s": 1.0}
    return float(runs[0]["real_time"]) * scale[runs[0].get("time_unit", "ns")]


def parameter_flags(parameters: Sequence[tuple[str | None, str | os.PathLike[str]]]) -> list[str]:
    """``--parameters=[scope=]FILE`` flags of the IREE runtime tools."""
    return [f"--parameters={scope + '=' if scope else ''}{path}" for scope, path in parameters]
