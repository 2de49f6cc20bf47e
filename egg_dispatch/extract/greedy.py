"""Greedy DAG extraction (``greedy_dag``), the quick extractor and the ILP's warm start."""

from __future__ import annotations

import heapq
import math
import time
from collections.abc import Mapping

import numpy as np

from egg_dispatch.cost import LOAD_BOUNDARY_OPS, CostTable, NodeCost, violated_conflicts
from egg_dispatch.egraph.data import EGraphData
from egg_dispatch.extract.common import (
    LOAD,
    RUN,
    ZERO_COST,
    ExtractionResult,
    check_costs,
    extraction_result,
    no_plan_error,
)

__all__ = ["greedy_dag"]


class _Greedy:
    """Greedy extraction state built once per call (cone, bit positions, weights), run for several rounds.

    Each round settles every class once, children first, so its plan is acyclic by construction.
    A class is settled as soon as every one of its nodes is ready (all child classes settled), with
    its cheapest node: on acyclic graphs that is a topological order and the result is the greedy
    fixpoint extraction-gym iterates to, in one pass. Where cycles leave no class fully ready, the
    cheapest ready node anywhere is settled (Knuth's generalization of Dijkstra, exact for tree
    cost); a node waiting on its own ancestor never becomes ready, so cycles need no special case.
    Ties break on class and node order: deterministic.

    DAG prices are Σ weights over the union of the children's bit sets plus the node itself (shared
    nodes once). Bits 2i / 2i+1 of a Python int stand for node i's memory / run-time pairs, numbered
    children first so sets near the leaves stay short integers. Each class is priced in its run
    context when the root can reach it at run time (else at load).
    """

    def __init__(self, g: EGraphData, costs: Mapping[str, NodeCost], lam: float):
        self.g = g
        self.nodes: dict[str, list[str]] = {}
        self.kids: dict[str, tuple[str, ...]] = {}
        self.classes: list[str] = []  # DFS post-order: children before parents where acyclic
        stack: list[tuple[str, list[str]]] = []
        self._enter(g.root, stack)
        while stack:
            c, todo = stack[-1]
            while todo and todo[-1] in self.nodes:
                todo.pop()
            if todo:
                self._enter(todo.pop(), stack)
            else:
                stack.pop()
                self.classes.append(c)
        self.boundary = {n for ns in self.nodes.values() for n in ns if g.nodes[n].op in LOAD_BOUNDARY_OPS}
        self.states = self._states({c: self.nodes[c] for c in self.classes})
        self.key_ctx = {c: RUN if (c, RUN) in self.states else LOAD for c in self.classes}
        self.cidx = {c: i for i, c in enumerate(self.classes)}
        self.pos = {n: i for i, n in enumerate(n for c in self.classes for n in self.nodes[c])}
        self.parents: dict[str, list[str]] = {}
        for n, ks in self.kids.items():
            for d in ks:
                self.parents.setdefault(d, []).append(n)
        self.weights = np.zeros(2 * len(self.pos) + 8)  # padded: unpackbits yields whole bytes
        self.wlist: list[float] = []
        self.price_with(costs, lam)

    def price_with(self, costs: Mapping[str, NodeCost], lam: float) -> None:
        """Weights from ``costs`` (all the state that depends on them: a repair re-prices, keeps the rest)."""
        for n, i in self.pos.items():
            cost = costs.get(n, ZERO_COST)
            self.weights[2 * i], self.weights[2 * i + 1] = lam * cost.memory_bytes, cost.run_seconds
        self.wlist = self.weights.tolist()

    def _enter(self, c: str, stack: list[tuple[str, list[str]]]) -> None:
        self.nodes[c] = [n.id for n in self.g.choices(c)]
        order: dict[str, None] = {}
        for n in self.nodes[c]:
            self.kids[n] = self.g.term_kids(n)
            order.update(dict.fromkeys(self.kids[n]))
        stack.append((c, list(reversed(order))))

    def _states(self, options: Mapping[str, list[str]]) -> set[tuple[str, int]]:
        """(class, context) pairs reachable from (root, RUN) through the given node options."""
        states, work = {(self.g.root, RUN)}, [(self.g.root, RUN)]
        while work:
            c, ctx = work.pop()
            for n in options[c]:
                kid_ctx = LOAD if n in self.boundary else ctx
                for d in self.kids[n]:
                    if (d, kid_ctx) not in states:
                        states.add((d, kid_ctx))
                        work.append((d, kid_ctx))
        return states

    def objective(self, choice: Mapping[str, str]) -> tuple[float, set[tuple[str, int]]]:
        """``plan_objective`` of an acyclic choice built here (no validation), and its states."""
        states = self._states({c: [n] for c, n in choice.items()})
        bits = {2 * self.pos[choice[c]] + (ctx == RUN) for c, ctx in states}
        bits.update(2 * self.pos[choice[c]] for c, _ in states)
        return math.fsum(self.wlist[b] for b in bits), states

    def _wsum(self, bits: int) -> float:
        if bits.bit_count() <= 24:
            total = 0.0
            while bits:
                low = bits & -bits
                total += self.wlist[low.bit_length() - 1]
                bits ^= low
            return total
        raw = np.frombuffer(bits.to_bytes((bits.bit_length() + 7) // 8, "little"), np.uint8)
        mask = np.unpackbits(raw, bitorder="little").view(bool)
        return float(self.weights[: mask.size][mask].sum())

    def run(self, dag: bool, sunk: frozenset[tuple[str, int]] = frozenset()) -> dict[str, str] | None:
        """One round; ``sunk`` (class, context) pairs cost nothing as children (a previous plan pays)."""
        value: dict[tuple[str, int], tuple[float, int]] = {}
        wl = self.wlist

        def price(n: str, ctx: int) -> tuple[float, int]:
            i = self.pos[n]
            own_cost = wl[2 * i] + (wl[2 * i + 1] if ctx == RUN else 0.0)
            own = (1 << 2 * i) | ((1 << (2 * i + 1)) if ctx == RUN else 0)
            kid_ctx = LOAD if n in self.boundary else ctx
            vals = [value[(d, kid_ctx)] for d in self.kids[n] if (d, kid_ctx) not in sunk]
            if not dag:  # tree cost counts a shared subterm once per path: deep DAGs overflow it
                try:
                    return own_cost + math.fsum(v[0] for v in vals), 0
                except OverflowError:  # fsum raises where sum would give inf
                    return math.inf, 0
            if not vals:
                return own_cost, own
            base = max(range(len(vals)), key=lambda k: vals[k][0])
            total, union = vals[base]
            for k, (_, bits) in enumerate(vals):
                if k != base and (diff := bits & ~union):
                    total += self._wsum(diff)
                    union |= diff
            return total + own_cost, union | own

        pending = {n: len(ks) for n, ks in self.kids.items()}
        waiting = {c: len(self.nodes[c]) for c in self.classes}
        priced: dict[str, float] = {}
        made: dict[str, tuple[float, int]] = {}  # price in the class's key context: its kids are settled for good
        ready: list[int] = []
        stuck: list[tuple[float, int, int, str]] = []

        def make_ready(n: str) -> None:
            c = self.g.nodes[n].eclass
            made[n] = price(n, self.key_ctx[c])
            priced[n] = made[n][0]
            heapq.heappush(stuck, (priced[n], self.cidx[c], self.pos[n], n))
            waiting[c] -= 1
            if waiting[c] == 0:
                heapq.heappush(ready, self.cidx[c])

        for n, k in pending.items():
            if not k:
                make_ready(n)
        settled: dict[str, str] = {}
        while self.g.root not in settled:
            if ready:
                c = self.classes[heapq.heappop(ready)]
                if c in settled:
                    continue
                n = min(self.nodes[c], key=lambda m: (priced[m], self.pos[m]))
            elif stuck:
                n = heapq.heappop(stuck)[3]
                c = self.g.nodes[n].eclass
                if c in settled:
                    continue
            else:
                return None
            settled[c] = n
            for ctx in (RUN, LOAD):
                if (c, ctx) in self.states:
                    value[(c, ctx)] = made[n] if ctx == self.key_ctx[c] else price(n, ctx)
            for parent in self.parents.get(c, ()):
                pending[parent] -= 1
                if pending[parent] == 0 and self.g.nodes[parent].eclass not in settled:
                    make_ready(parent)
        return settled


def greedy_dag(g: EGraphData, costs: Mapping[str, NodeCost], lam: float, rounds: int = 8) -> ExtractionResult:
    """:func:`_greedy_dag`, repaired where its plan chooses all nodes of one of the table's
    ``conflicts`` (combinations IREE's codegen rejects, ``cost.conflicts``): the first node of each
    violated conflict not banned yet is priced out (``_BANNED`` seconds) and greedy runs again, until
    the plan violates none; the result is priced with the real costs. When banning finds no plan
    without them (the e-graph holds no alternative), the plan keeps them and ``stats["conflicts_kept"]``
    counts them."""
    start = time.perf_counter()
    check_costs(costs, lam)
    greedy = _Greedy(g, costs, lam)  # built once: a repair only re-prices it
    result = _greedy_dag(g, costs, lam, rounds, greedy)
    banned: set[str] = set()
    while bad := violated_conflicts(costs, result.choice):
        new = {next((n for n in c if n not in banned), c[0]) for c in bad} - banned
        if not new:  # no alternative found: the plan keeps them, and says so (stats; explore warns)
            result.stats["conflicts_kept"] = len(bad)
            break
        banned |= new
        priced = CostTable(
            {n: (NodeCost(_BANNED, 0.0, 0.0) if n in banned else c) for n, c in costs.items()},
            CostTable.of(costs).exclusive,
        )
        priced.update({n: NodeCost(_BANNED, 0.0, 0.0) for n in banned if n not in priced})
        greedy.price_with(priced, lam)
        repaired = _greedy_dag(g, priced, lam, rounds, greedy)
        stats = {**repaired.stats, "banned": len(banned)}
        result = extraction_result(g, repaired.choice, costs, lam, "greedy-dag", start, stats=stats)
    return result


_BANNED = 1e6
"""Seconds a banned node is priced at in a repair (finite: ``check_costs`` refuses inf)."""


def _greedy_dag(
    g: EGraphData, costs: Mapping[str, NodeCost], lam: float, rounds: int, greedy: _Greedy
) -> ExtractionResult:
    """Quick extraction: DAG-cost greedy, tree-cost greedy, then rounds of "sunk-cost" greedy.

    Greedy DAG is myopic: it prices ``op(a, b)`` with b's whole subtree even when the plan needs b
    anyway, so it prefers ``Dispatch(a)`` and can be several times off (the benchmark's stacks).
    Each further round re-runs DAG greedy with the best plan so far treated as paid for (its
    (class, context) pairs cost nothing as children), so nodes that reuse what the plan already
    computes win; it stops when a round no longer improves. Every candidate is priced exactly and
    the best is returned (docs/egglog.md §4.4, lesson 4). Raises ``ValueError`` when the e-graph
    holds no acyclic plan.
    """
    start = time.perf_counter()  # (``greedy_dag`` checked the costs)
    stats: dict[str, object] = {"classes": len(greedy.classes), "nodes": len(greedy.pos)}
    best: tuple[float, str, dict[str, str], set[tuple[str, int]]] | None = None
    for name, dag in (("dag", True), ("tree", False)):
        choice = greedy.run(dag)
        if choice is not None:
            obj, states = greedy.objective(choice)
            stats[f"{name}_objective"] = obj
            if best is None or obj < best[0]:
                best = (obj, name, choice, states)
    if best is None:
        raise no_plan_error(g)
    for k in range(rounds):
        stats["rounds"] = k + 1
        choice = greedy.run(True, frozenset(best[3]))
        if choice is None:
            break
        obj, states = greedy.objective(choice)
        if not obj < best[0]:
            break
        best = (obj, f"sunk-{k + 1}", choice, states)
    stats["picked"] = best[1]
    return extraction_result(g, best[2], costs, lam, "greedy-dag", start, stats=stats)
