"""The per-node cost table every extractor reads (computed once; design.md §2.5).

A plan is a choice of one node per e-class reachable from the root. Its objective is

    objective = Σ_{n chosen, needed at run time} run_seconds(n)  +  λ · Σ_{n chosen} memory_bytes(n)

where each chosen node counts once however many parents share it (DAG cost), and "needed at run
time" propagates from the root down every edge except those leaving a ``ConstEval`` node: what a
``ConstEval`` computes runs at module load (its ``load_seconds`` are reported, not optimized).
Memory is context-free: a constant or a global occupies its bytes whether read at run time or
only by an initializer.
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["LOAD_BOUNDARY_OPS", "NodeCost", "objective_weights"]

LOAD_BOUNDARY_OPS = frozenset({"ConstEval"})
"""Ops whose children are evaluated at module load, not at run time."""


@dataclass(frozen=True)
class NodeCost:
    run_seconds: float = 0.0
    """Time this node adds to every call when the plan needs it at run time."""
    load_seconds: float = 0.0
    """Time it adds at module load when it is evaluated by an initializer (reported only)."""
    memory_bytes: float = 0.0
    """Bytes it keeps: persistent (constants, globals) or transient (a dispatch's result buffer)."""

    def weighted(self, lam: float, at_run_time: bool = True) -> float:
        return (self.run_seconds if at_run_time else 0.0) + lam * self.memory_bytes


def objective_weights(lam: float) -> tuple[float, float]:
    """(weight of seconds, weight of bytes) in the objective."""
    return 1.0, lam
