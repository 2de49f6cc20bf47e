"""A plan in one line (``init{...} dispatch{...} encode``): for FileCheck, reports and tests."""

from __future__ import annotations

from egg_dispatch.mlir.ir import Module

__all__ = ["plan_signature"]

_QUIET = {"arith.constant", "tensor.empty", "flow.return", "util.return", "util.global.store"}
_SIZES = {"tensor.dim", "util.assume.int", "arith.muli", "arith.addi", "arith.subi", "arith.divui", "arith.ceildivui",
          "arith.remui", "hal.buffer_view.dim", "iree_tensor_ext.dispatch.workload.ordinal"}  # fmt: skip
"""Ops that compute dynamic sizes (an ``index`` result) between dispatches: left out too."""


def plan_signature(plan: Module) -> str:
    """One line per plan for FileCheck: what each dispatch, encode and initializer computes.

    ``init{...}`` are load-time initializers, ``dispatch{...}`` run-time dispatches (ops in order,
    constants and empties left out), ``encode`` a ``flow.tensor.encode``.
    """
    parts: list[str] = []
    for top in plan.ops:
        if top.name == "util.initializer":
            inner = [o.name for o in top.regions[0].entry.ops if o.name not in _QUIET]
            parts.append("init{" + ", ".join(inner) + "}")
    func = next(op for op in plan.ops if op.name == "func.func")
    for op in func.regions[0].entry.ops:
        if op.name == "flow.dispatch.region":
            inner = [o.name for o in op.regions[0].entry.ops if o.name not in _QUIET]
            parts.append("dispatch{" + ", ".join(inner) + "}")
        elif op.name == "flow.tensor.encode":
            parts.append("encode")
        elif op.name in _SIZES and all(getattr(r.type, "name", "") == "index" for r in op.results):
            continue
        elif op.name not in _QUIET | {"func.return", "util.global.load"}:
            parts.append(op.name)
    return " ".join(parts)
