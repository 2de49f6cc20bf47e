"""Bring an input to where IREE's DispatchCreation starts, with IREE's own compiler.

``iree-compile --compile-to=input`` lowers torch-dialect MLIR (the pip ``iree-base-compiler`` carries
the torch frontend; no torch install is needed); ``--compile-to=global-optimization`` also runs IREE's
global optimization: transposes folded into contraction maps, const-expr subgraphs evaluated into
constants or hoisted into initializers, generics raised to named ops, unit dimensions folded. IREE's
own data-tiling plan starts from that IR, so a plan explored from it is compared like with like.

The flags are the ones IREE's own plan is made with for the target (``dispatch_creation``):
the target's CPU, and ``--iree-dispatch-creation-data-tiling`` so that global optimization leaves data
tiling to DispatchCreation (where our e-graph takes over).
"""

from __future__ import annotations

import os
from dataclasses import dataclass

from egg_dispatch.iree.dispatch_creation import iree_compile_flags
from egg_dispatch.iree.tools import compile_text, find_tool
from egg_dispatch.target.profile import Target

__all__ = ["LOWERING_PHASES", "Lowered", "lower", "lowering_command"]

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


def iree_compiler_available() -> bool:
    return find_tool("iree-compile") is not None
