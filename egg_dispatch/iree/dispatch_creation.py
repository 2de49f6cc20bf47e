"""IREE's own dispatch plan as text: ``iree-compile --compile-to=dispatch-creation`` for a target.

The flags are the ones ``--emit iree`` targets (``emit.iree``'s device for the profile); data tiling is
on for every target with an encoding resolver. Costing that plan with our model is the pipeline's
(``pipeline.iree_plan``).
"""

from __future__ import annotations

import os
import re

from egg_dispatch.emit.iree.device import iree_cpu
from egg_dispatch.iree.tools import compile_module, is_source_path
from egg_dispatch.mlir.ir import Module
from egg_dispatch.mlir.parser import parse_mlir
from egg_dispatch.target.profile import Target, load_target

__all__ = [
    "IREE_PLAN",
    "count_printed",
    "dispatch_creation_text",
    "first_error_line",
    "iree_compile_flags",
    "iree_output_warnings",
]

IREE_PLAN = "IREE's own plan (iree-compile --compile-to=dispatch-creation)"
"""How messages about IREE's dispatch-creation output name it (it is no file of the user's)."""


def iree_compile_flags(target: str | Target) -> tuple[bool, str, list[str]]:
    """(data tiling?, ``--iree-llvmcpu-target-cpu`` value, other flags) for IREE compiling for ``target``.

    Data tiling is on except for ``none`` (a target without an encoding resolver: IREE without data tiling
    is what that target gets)."""
    tgt = load_target(target) if isinstance(target, str) else target
    cpu = iree_cpu(tgt)
    flags = list(cpu.compile_flags)
    name = next((f.split("=", 1)[1] for f in flags if f.startswith("--iree-llvmcpu-target-cpu=")), "generic")
    others = [f for f in flags if not f.startswith("--iree-llvmcpu-target-cpu=")]
    return tgt.encoding_resolver, name, others


def dispatch_creation_text(source: str | os.PathLike[str], target: str | Target) -> str:
    """IREE's program at the end of dispatch creation for ``target`` (raises ``IreeError`` on failure).

    For an input small enough to dump, this is the plan of the run ``lowering.start_state`` makes (the
    same text, its locations stripped): IREE's plan and its start state of one input are then one
    ``iree-compile`` run where compiles are cached (``EGG_DISPATCH_IREE_CACHE``), not two."""
    from egg_dispatch.iree.lowering import START_STATE_MAX_BYTES, start_state  # lowering imports this module

    tgt = load_target(target) if isinstance(target, str) else target
    size = os.path.getsize(source) if is_source_path(source) else len(str(source))  # as compile_module reads it
    if size <= START_STATE_MAX_BYTES:
        return start_state(source, tgt).plan
    data_tiling, cpu, others = iree_compile_flags(tgt)
    out = compile_module(
        source, data_tiling=data_tiling, target_cpu=cpu, extra_flags=[*others, "--compile-to=dispatch-creation"]
    )
    return out.decode()


def count_printed(text: str | Module) -> tuple[int, int, int, int]:
    """(workgroups, run-time encodes, run-time slices, globals other than the device) IREE printed (its
    text, or that text parsed: a model's plan is parsed once)."""
    module = parse_mlir(text, "<iree dispatch-creation>") if isinstance(text, str) else text
    func = module.function()
    top = [op.name for op in func.regions[0].entry.ops]
    n_globals = sum(1 for op in module.ops if op.name == "util.global") - ("__device_0" in module.globals())
    return (
        top.count("flow.dispatch.workgroups"),
        top.count("flow.tensor.encode"),
        top.count("flow.tensor.slice"),
        n_globals,
    )


def iree_output_warnings(module: Module, what: str) -> list[str]:
    """The reader's warnings on ``module``, a text IREE printed, named after what it is: ``FILE:L:C:
    warning: msg`` becomes ``warning: in WHAT, line L: msg`` (the user has no such file, and a warning
    about IREE's output must not read as one about their input). Warnings about ops of a workgroup count
    region are dropped: that region only says how many workgroups to launch, which IREE derives itself
    later, and no stage reads it."""
    counted = {
        (o.loc.line, o.loc.col)
        for op in module.walk()
        if op.name in ("flow.dispatch.workgroups", "flow.dispatch.region") and len(op.regions) > 1
        for block in op.regions[1].blocks
        for inner in block.ops
        for o in inner.walk()
        if o.loc is not None
    }
    out = []
    for w in module.warnings:
        m = re.match(rf"^{re.escape(module.file)}:(\d+):(\d+): warning: (.*)$", w, re.S)
        if m is None:
            out.append(w)
        elif (int(m[1]), int(m[2])) not in counted:
            out.append(f"warning: in {what}, line {m[1]}: {m[3]}")
    return out


def first_error_line(stderr: str) -> str:
    """IREE's first ``error:`` line (its diagnostics are long; the CLI reports one line)."""
    for line in stderr.splitlines():
        if "error:" in line:
            return line.strip()
    return (stderr.strip().splitlines() or ["(no message)"])[0]
