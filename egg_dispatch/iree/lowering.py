"""Bring an input to where IREE's DispatchCreation starts, with IREE's own compiler.

``iree-compile --compile-to=input`` lowers torch-dialect MLIR (the pip ``iree-base-compiler`` carries
the torch frontend; no torch install is needed); ``--compile-to=global-optimization`` also runs IREE's
global optimization: transposes folded into contraction maps, const-expr subgraphs evaluated into
constants or hoisted into initializers, generics raised to named ops, unit dimensions folded. IREE's
own data-tiling plan starts from that IR, so a plan explored from it is compared like with like.

The flags are the ones IREE's own plan is made with for the target (``dispatch_creation``):
the target's CPU, and ``--iree-dispatch-creation-data-tiling`` so that global optimization leaves data
tiling to DispatchCreation (where our e-graph takes over).

``start_state`` goes one step further: it runs DispatchCreation itself and takes the module as it is
right after IREE's ``SetEncoding`` pass (``--mlir-print-ir-before=iree-dispatch-creation-hoist-encoding-ops``):
IREE's own dispatch regions (after its elementwise fusion, reshape sinking, dimension collapsing,
dispatch formation and producer cloning) with every contraction's encodings set. That is exactly the
state IREE's data-tiling decisions (hoisting, propagation, fusion of encodings) start from, which our
e-graph explores instead; the same run's output is IREE's own plan. The module is printed *before*
the module pass that follows SetEncoding (``HoistEncodingOps``, ``HOIST_ENCODING_PASS``): the same module
as after SetEncoding ran on the last function-like op, printed once. (``--mlir-print-ir-after`` of
SetEncoding prints the whole module once per function-like op the pass runs on: a model's hoisted
weight initializers made that quadratic, 156 dumps and 45 s of a 5 s compile for a 22-layer Llama.)
This is for inputs whose module is small (external parameters, or small inline weights). A target
without data tiling (``none``) has no SetEncoding pass: its start state is taken at the same point,
after the last dispatch-formation pass (``NO_DATA_TILING_PASS``).
"""

from __future__ import annotations

import functools
import os
import re
import time
from collections.abc import Callable
from concurrent.futures import Future, wait
from dataclasses import dataclass, field
from pathlib import Path

from egg_dispatch.iree.dispatch_creation import iree_compile_flags
from egg_dispatch.iree.tools import IreeError, compile_text, compile_text_and_stderr, find_tool
from egg_dispatch.mlir.debuginfo import strip_locations
from egg_dispatch.mlir.forms import PAST_GLOBAL_OPTIMIZATION, file_form
from egg_dispatch.mlir.ir import Loc, Module
from egg_dispatch.mlir.parser import parse_mlir
from egg_dispatch.mlir.retired import may_need_respelling
from egg_dispatch.target.profile import Target
from egg_dispatch.util.background import in_background

__all__ = [
    "HOIST_ENCODING_PASS",
    "LOWERING_PHASES",
    "NO_DATA_TILING_PASS",
    "SET_ENCODING_PASS",
    "START_STATE_MAX_BYTES",
    "Lowered",
    "StartState",
    "asked_early",
    "asks_start_state",
    "finished_dump",
    "forget_asked_early",
    "lower",
    "lowering_command",
    "start_state",
    "start_state_file",
    "start_state_soon",
]

SET_ENCODING_PASS = "iree-dispatch-creation-set-encoding"
"""The DispatchCreation pass after which IREE's data-tiling start state is taken (IREE 3.13 name)."""
NO_DATA_TILING_PASS = "iree-dispatch-creation-hoist-uniform-scalar-compute"
"""The pass right before where SetEncoding would run (``DispatchCreation/Passes.cpp``): the start state
of a target without data tiling, where IREE's pipeline has no SetEncoding."""
HOIST_ENCODING_PASS = "iree-dispatch-creation-hoist-encoding-ops"
"""The module pass right after SetEncoding (``DispatchCreation/Passes.cpp``, data tiling only): the start
state is printed before it, once."""
START_STATE_MAX_BYTES = 64 << 20
"""Largest input whose IREE start state is dumped (``pipeline``'s ``auto`` start, ``dispatch_creation_text``):
the dump holds the module, and external parameters keep models far below."""
_DUMP = "// -----// IR Dump "
_LOC_REF = re.compile(r"#loc\d*\b")
_LOC_DEFINED = re.compile(r"^(#loc\d*) = ", re.MULTILINE)
_POLL_SECONDS = 0.02
"""How often ``start_state`` looks at IREE's stderr while IREE runs (a stat; the file is read only
once it has stopped growing)."""

LOWERING_PHASES = ("input", "global-optimization")


@dataclass(frozen=True)
class Lowered:
    """IREE's output for one phase and the command line that produced it (for the report)."""

    text: str
    phase: str
    command: str


def lowering_command(source: str, phase: str, target: Target | None = None) -> list[str]:
    """The ``iree-compile`` command line (as a user would type it) for ``phase``."""
    if phase == "input":
        return ["iree-compile", source, "--compile-to=input"]
    assert target is not None
    data_tiling, cpu, others = iree_compile_flags(target)
    flags = ["--iree-hal-target-backends=llvm-cpu", f"--iree-llvmcpu-target-cpu={cpu}", *others]
    if data_tiling:
        flags.append("--iree-dispatch-creation-data-tiling")
    return ["iree-compile", source, *flags, f"--compile-to={phase}"]


def lower(
    source: str | os.PathLike[str], phase: str, target: Target | None = None, *, name: str | None = None
) -> Lowered:
    """``source`` (MLIR text or a path; ``name`` shows it in the command line) at the end of ``phase``
    (``input`` or ``global-optimization``); raises ``IreeError`` with IREE's diagnostics when IREE
    rejects it."""
    if phase not in LOWERING_PHASES:
        raise ValueError(f"unknown phase {phase!r} (one of {', '.join(LOWERING_PHASES)})")
    if name is None:
        name = str(source) if isinstance(source, os.PathLike) or "\n" not in str(source) else "FILE"
    command = " ".join(lowering_command(name, phase, target))
    if phase == "input":
        out = compile_text(source, data_tiling=False, target_cpu="generic", extra_flags=["--compile-to=input"])
        return Lowered(out, phase, command)
    assert target is not None
    data_tiling, cpu, others = iree_compile_flags(target)
    out = compile_text(
        source, data_tiling=data_tiling, target_cpu=cpu, extra_flags=[*others, "--compile-to=global-optimization"]
    )
    return Lowered(out, phase, command)


@dataclass(frozen=True)
class StartState:
    """IREE's module right after SetEncoding, IREE's own final dispatch-creation output, the command."""

    text: str
    plan: str
    command: str
    locations: dict[int, Loc] = field(default_factory=dict)
    """Where each op of ``text`` (by the line it starts on) came from in the file IREE read, as IREE names
    it (its ``--mlir-print-debuginfo`` locations, ``mlir.debuginfo``; a text is read from a file of IREE's)."""
    parsed: Module | None = None
    """``text`` read already (``parse_mlir(text, start_state_file(name))``), while IREE ran on after
    printing it; None when it was not (a cached run, a dump told complete only at IREE's exit)."""


def start_state_file(name: str) -> str:
    """The file name a start state's module is read under (its errors and warnings say so)."""
    return f"{name} after IREE's SetEncoding"


def finished_dump(stderr: str) -> str | None:
    """The last IR dump in ``stderr`` (the text after its header line) once IREE has printed all of it,
    else None: a dump ends with a blank line after the module's closing brace (the one line that starts
    with ``}``), and every location alias its text names (``#locN``) is defined by then, after the
    module. A dump told complete too early is caught by ``start_state``, which compares it with the dump
    IREE left at its exit."""
    body = _last_dump(stderr) if stderr.endswith("\n\n") else None
    if body is None or "\n}" not in body:
        return None
    defined = set(_LOC_DEFINED.findall(body))
    if any(ref not in defined for ref in set(_LOC_REF.findall(body))):
        return None
    return body


def _last_dump(stderr: str) -> str | None:
    """The text after the last IR dump's header line in ``stderr`` (None: no dump)."""
    last = stderr.rfind(_DUMP)
    return None if last < 0 else stderr[stderr.index("\n", last) + 1 :]


_ASKED_EARLY: dict[tuple[str, ...], Future[StartState]] = {}
"""``start_state`` runs of files started ahead of time (``start_state_soon``), by ``_early_key``."""


def asks_start_state(path: Path, start: str = "auto") -> bool:
    """Whether exploring the file ``path`` from ``start`` (``pipeline.START_CHOICES``) asks IREE for the start
    state of the file itself (``pipeline.prepare_input``, IREE installed): not when the file is past
    global optimization, nor too large to dump (``auto``), nor a text IREE gets respelled (``mlir.retired``)."""
    form = file_form(path)
    if form in PAST_GLOBAL_OPTIMIZATION or start not in ("auto", "set-encoding"):
        return False
    if start == "auto" and path.stat().st_size > START_STATE_MAX_BYTES:
        return False
    return form == "torch" or not may_need_respelling(path.read_text(errors="replace"))


def start_state_soon(path: Path, target: Target, *, name: str) -> None:
    """Start ``start_state(path, target, name=name)`` on a thread now: the call itself, made later in this
    process with the same file (unchanged since), target and name, takes its result. The command line
    asks this before the modules that explore loads are imported (``cli.early``): IREE works meanwhile."""
    key = _early_key(path, target, name)
    if key is not None and key not in _ASKED_EARLY:
        _ASKED_EARLY[key] = in_background(lambda: _start_state(path, target, name), "iree start state")


def asked_early() -> list[tuple[str, ...]]:
    """The runs ``start_state_soon`` started that no ``start_state`` call took yet (by what makes them one
    run: the file's resolved path, size and time stamp, data tiling, the CPU, other flags, the name)."""
    return list(_ASKED_EARLY)


def forget_asked_early() -> None:
    """Wait for the runs asked early that were not taken, and drop them."""
    while _ASKED_EARLY:
        _, run = _ASKED_EARLY.popitem()
        wait([run])


def _early_key(source: str | os.PathLike[str], target: Target, name: str) -> tuple[str, ...] | None:
    """What makes two ``start_state`` calls the same run: the file (its path, size and time stamp), the
    flags, the name (None: a text, never asked early)."""
    if not isinstance(source, os.PathLike):
        return None
    try:
        stat = Path(source).stat()
    except OSError:
        return None
    data_tiling, cpu, others = iree_compile_flags(target)
    facts = (str(Path(source).resolve()), str(stat.st_size), str(stat.st_mtime_ns), str(data_tiling), cpu)
    return (*facts, *others, name)


def start_state(source: str | os.PathLike[str], target: Target, *, name: str | None = None) -> StartState:
    """IREE's data-tiling start state for ``source`` (raises ``IreeError``; see the module docstring)."""
    if name is None:
        name = str(source) if isinstance(source, os.PathLike) or "\n" not in str(source) else "FILE"
    if _ASKED_EARLY and (key := _early_key(source, target, name)) in _ASKED_EARLY:
        return _ASKED_EARLY.pop(key).result()
    return _start_state(source, target, name)


def _start_state(source: str | os.PathLike[str], target: Target, name: str) -> StartState:
    data_tiling, cpu, others = iree_compile_flags(target)
    # Data tiling: before the module pass after SetEncoding (printed once), not after SetEncoding (once
    # per function-like op).
    dump_at = (
        f"--mlir-print-ir-before={HOIST_ENCODING_PASS}"
        if data_tiling
        else f"--mlir-print-ir-after={NO_DATA_TILING_PASS}"
    )
    # Before a module pass the dump is the module already, so IREE keeps its threads; after a function
    # pass (no data tiling) printing the module needs module scope, which needs one thread.
    scope = [] if data_tiling else ["--mlir-print-ir-module-scope", "--mlir-disable-threading"]
    dump = [dump_at, *scope, "--mlir-print-debuginfo"]
    command = " ".join(
        [*lowering_command(name, "dispatch-creation", target), *dump, "-o", "PLAN.mlir", "2> START.mlir"]
    )
    early: list[tuple[str, str, dict[int, Loc], Module | None]] = []
    plan, err = compile_text_and_stderr(
        source,
        data_tiling=data_tiling,
        target_cpu=cpu,
        extra_flags=[*others, "--compile-to=dispatch-creation", *dump],
        watch=functools.partial(_read_early, start_state_file(name), early),
    )
    body = _last_dump(err)
    if body is None:
        raise IreeError(f"iree-compile printed no module at {dump_at}", stderr=err[-2000:])
    plan, _ = strip_locations(plan)
    if early and early[0][0] == body:  # read while IREE ran on, and what IREE left at its exit
        _, text, locations, parsed = early[0]
        return StartState(text, plan, command, locations, parsed)
    text, locations = strip_locations(body)
    return StartState(text, plan, command, locations)


def _read_early(
    file: str, early: list[tuple[str, str, dict[int, Loc], Module | None]], stderr: Path, running: Callable[[], bool]
) -> None:
    """While IREE runs: once its stderr stops growing and holds a finished dump (``finished_dump``), that
    dump stripped of its locations and parsed, into ``early``: IREE prints the start state before the
    rest of DispatchCreation (0.3-0.6 s at a model's size), which the reading overlaps."""
    size = -1
    while running():
        time.sleep(_POLL_SECONDS)
        now = stderr.stat().st_size
        if now == 0 or now != size:
            size = now
            continue
        body = finished_dump(stderr.read_text(encoding="utf-8", errors="replace"))
        if body is None:
            continue
        text, locations = strip_locations(body)
        try:
            parsed: Module | None = parse_mlir(text, file)
        except Exception:  # not ours to report here: the reading after IREE's exit raises it again
            parsed = None
        early.append((body, text, locations, parsed))
        return


def iree_compiler_available() -> bool:
    return find_tool("iree-compile") is not None
