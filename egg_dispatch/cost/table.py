"""The per-node cost table every extractor reads (computed once; docs/design.md §2.5).

A plan is a choice of one node per e-class reachable from the root. Its objective is

    objective = Σ_{n chosen, needed at run time} run_seconds(n)  +  λ · Σ_{n chosen} memory_bytes(n)

where each chosen node counts once however many parents share it (DAG cost), and "needed at run
time" propagates from the root down every edge except those leaving a ``ConstEval`` node: what a
``ConstEval`` computes runs at module load (its ``load_seconds`` are reported, not optimized).
Memory is context-free: a constant or a global occupies its bytes whether read at run time or
only by an initializer.

A table may name ``exclusive`` nodes: computations that are not shared for free. Fused into two
dispatches they run twice (IREE clones the producer into each consumer), so their run_seconds are
charged once per chosen node that uses their class, not once per plan. Exclusive nodes are never
below a ``ConstEval`` (so they are always at run time).

A table may also carry ``once`` charges: (seconds, nodes) pairs, where a plan that needs any of the
nodes at run time pays the seconds once, however many of them it chooses (the transient buffers of
a call are allocated together: ``cost.charges.transient_dispatches``). They are part of the objective:

    objective += Σ_{(s, N) in once, N ∩ run-time nodes ≠ ∅} s

and ``pairs``: (seconds, p, n) triples, paid when a plan needs both p and n at run time (a generic
p reading the unset n inside its dispatch: ``cost.charges.consumer_pairs``), once per user of p's
class when p is exclusive (it runs in each dispatch it is cloned into, with its unset).

and ``gated``: (seconds, n) pairs paid when a plan needs n at run time and any node of the table's
``gate`` too (plain contractions run slower in a plan that runs a long mmt4d kernel:
``cost.charges.throttle_charges``), once per user of n's class when n is exclusive.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

__all__ = [
    "LOAD_BOUNDARY_OPS",
    "CostTable",
    "NodeCost",
    "gated_charges",
    "gated_paid",
    "once_charges",
    "once_seconds",
    "pair_charges",
    "violated",
    "violated_conflicts",
]

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


class CostTable(dict[str, NodeCost]):
    """node id -> NodeCost, plus the charges beyond one price per node (module docstring), as typed
    fields. Extractors take any ``Mapping[str, NodeCost]`` (a plain one has no such charges) and read
    it through ``CostTable.of``."""

    exclusive: frozenset[str]
    """Nodes charged per use: computations fused into several dispatches run in each."""
    conflicts: tuple[tuple[str, ...], ...]
    """Sets of node ids no plan may choose all of (``cost.conflicts``: combinations IREE's codegen
    rejects), each in the order a repair would ban its nodes."""
    once: tuple[tuple[float, frozenset[str]], ...]
    """(seconds, nodes): paid once by a plan that needs any of the nodes at run time."""
    pairs: tuple[tuple[float, str, str], ...]
    """(seconds, p, n): paid by a plan that needs both p and n at run time."""
    gated: tuple[tuple[float, str], ...]
    """(seconds, n): paid by a plan that needs n and any node of ``gate`` at run time."""
    gate: frozenset[str]
    """The nodes that switch the ``gated`` charges on."""

    def __init__(
        self,
        costs: dict[str, NodeCost] | None = None,
        exclusive: frozenset[str] = frozenset(),
        conflicts: tuple[tuple[str, ...], ...] = (),
        once: tuple[tuple[float, frozenset[str]], ...] = (),
        pairs: tuple[tuple[float, str, str], ...] = (),
        gated: tuple[tuple[float, str], ...] = (),
        gate: frozenset[str] = frozenset(),
    ):
        super().__init__(costs or {})
        self.exclusive = exclusive
        self.conflicts = conflicts
        self.once = once
        self.pairs = pairs
        self.gated = gated
        self.gate = gate

    @classmethod
    def of(cls, costs: Mapping[str, NodeCost]) -> CostTable:
        """``costs`` itself when it is a table, else a table of its prices with no other charge."""
        return costs if isinstance(costs, CostTable) else cls(dict(costs))


def pair_charges(costs: Mapping[str, NodeCost]) -> tuple[tuple[float, str, str], ...]:
    """The ``pairs`` charges of ``costs`` with a positive price (none for a plain mapping)."""
    return tuple(t for t in CostTable.of(costs).pairs if t[0] > 0)


def gated_charges(costs: Mapping[str, NodeCost]) -> tuple[tuple[tuple[float, str], ...], frozenset[str]]:
    """The ``gated`` charges of ``costs`` with a positive price and their ``gate`` (none without a gate)."""
    table = CostTable.of(costs)
    return (tuple(t for t in table.gated if t[0] > 0) if table.gate else ()), table.gate


def gated_paid(costs: Mapping[str, NodeCost], run_nodes: set[str] | frozenset[str]) -> list[tuple[float, str]]:
    """The ``gated`` charges a plan needing ``run_nodes`` at run time pays (an exclusive node's once per
    run-time user of its class: the caller multiplies)."""
    charges, gate = gated_charges(costs)
    if not charges or gate.isdisjoint(run_nodes):
        return []
    return [(s, n) for s, n in charges if n in run_nodes]


def once_charges(costs: Mapping[str, NodeCost]) -> tuple[tuple[float, frozenset[str]], ...]:
    """The ``once`` charges of ``costs`` with a positive price (none for a plain mapping)."""
    return tuple((s, nodes) for s, nodes in CostTable.of(costs).once if s > 0 and nodes)


def once_seconds(costs: Mapping[str, NodeCost], run_nodes: set[str] | frozenset[str]) -> float:
    """What the ``once`` charges of ``costs`` add to a plan needing ``run_nodes`` at run time."""
    return sum(s for s, nodes in once_charges(costs) if not nodes.isdisjoint(run_nodes))


def violated(conflicts: Sequence[tuple[str, ...]], choice: Mapping[str, str]) -> list[tuple[str, ...]]:
    """The conflicts a plan (class -> node) chooses every node of."""
    if not conflicts:
        return []
    chosen = set(choice.values())
    return [c for c in conflicts if all(n in chosen for n in c)]


def violated_conflicts(costs: Mapping[str, NodeCost], choice: Mapping[str, str]) -> list[tuple[str, ...]]:
    """The conflicts of ``costs`` (a ``CostTable``; none for a plain mapping) a plan chooses all of."""
    return violated(CostTable.of(costs).conflicts, choice)
