"""Greedy DAG extraction (``greedy_dag``), the quick extractor and the ILP's warm start."""

from __future__ import annotations

import heapq
import math
import time
from collections.abc import Callable, Mapping, Sequence

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
    reachable_choice,
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

    Classes and nodes are numbered (class ``i`` is ``classes[i]``, node ``i`` is ``ids[i]``) and the
    rounds work on lists indexed by those numbers: a model's e-graph is settled six times or more.
    A set of (class, context) pairs is a pair of lists of flags, one per context (``RUN``, ``LOAD``).
    """

    def __init__(self, g: EGraphData, costs: Mapping[str, NodeCost], lam: float):
        self.g = g
        nodes: dict[str, list[str]] = {}
        kids: dict[str, tuple[str, ...]] = {}
        self.classes: list[str] = []  # DFS post-order: children before parents where acyclic
        stack: list[tuple[str, list[str]]] = []
        self._enter(g.root, stack, nodes, kids)
        while stack:
            c, todo = stack[-1]
            while todo and todo[-1] in nodes:
                todo.pop()
            if todo:
                self._enter(todo.pop(), stack, nodes, kids)
            else:
                stack.pop()
                self.classes.append(c)
        self.cidx = {c: i for i, c in enumerate(self.classes)}
        self.ids = [n for c in self.classes for n in nodes[c]]
        self.pos = {n: i for i, n in enumerate(self.ids)}
        cidx, pos = self.cidx, self.pos
        self.class_nodes = [[pos[n] for n in nodes[c]] for c in self.classes]  # ascending
        self.node_class = [cidx[c] for c in self.classes for _ in nodes[c]]
        self.node_kids = [tuple([cidx[d] for d in kids[n]]) for n in self.ids]
        self.boundary = [g.nodes[n].op in LOAD_BOUNDARY_OPS for n in self.ids]
        self.parents: list[list[int]] = [[] for _ in self.classes]
        for n, ks in kids.items():
            for d in ks:
                self.parents[cidx[d]].append(pos[n])
        self.states = self._states(self.class_nodes)
        self.key_ctx = [RUN if r else LOAD for r in self.states[RUN]]
        self.weights = np.zeros(2 * len(self.pos) + 8)  # padded: unpackbits yields whole bytes
        self.wlist: list[float] = []
        self.price_with(costs, lam)

    def price_with(self, costs: Mapping[str, NodeCost], lam: float) -> None:
        """Weights from ``costs`` (all the state that depends on them: a repair re-prices, keeps the rest)."""
        for n, i in self.pos.items():
            cost = costs.get(n, ZERO_COST)
            self.weights[2 * i], self.weights[2 * i + 1] = lam * cost.memory_bytes, cost.run_seconds
        self.wlist = self.weights.tolist()

    def _enter(
        self, c: str, stack: list[tuple[str, list[str]]], nodes: dict[str, list[str]], kids: dict[str, tuple[str, ...]]
    ) -> None:
        nodes[c] = [n.id for n in self.g.choices(c)]
        order: dict[str, None] = {}
        for n in nodes[c]:
            kids[n] = self.g.term_kids(n)
            order.update(dict.fromkeys(kids[n]))
        stack.append((c, list(reversed(order))))

    def _states(self, options: Sequence[Sequence[int]]) -> tuple[list[bool], list[bool]]:
        """(class, context) pairs reachable from (root, RUN) through ``options`` (class -> its node
        options), as flags per context."""
        root = self.cidx[self.g.root]
        states = ([False] * len(self.classes), [False] * len(self.classes))
        states[RUN][root] = True
        work = [(root, RUN)]
        boundary, node_kids = self.boundary, self.node_kids
        while work:
            c, ctx = work.pop()
            for n in options[c]:
                kid_ctx = LOAD if boundary[n] else ctx
                seen = states[kid_ctx]
                for d in node_kids[n]:
                    if not seen[d]:
                        seen[d] = True
                        work.append((d, kid_ctx))
        return states

    def objective(self, choice: Mapping[str, str]) -> tuple[float, tuple[list[bool], list[bool]]]:
        """``plan_objective`` of an acyclic choice built here (no validation), and its states."""
        pick: list[tuple[int, ...]] = [()] * len(self.classes)
        for cls, nid in choice.items():
            pick[self.cidx[cls]] = (self.pos[nid],)
        states = self._states(pick)
        bits: set[int] = set()
        for i, (run, load) in enumerate(zip(*states, strict=True)):
            if run:
                bits.add(2 * pick[i][0] + 1)
            if run or load:
                bits.add(2 * pick[i][0])
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

    def _pricer(
        self, dag: bool, value: tuple[list[tuple[float, int]], ...], skip: tuple[list[bool], ...]
    ) -> Callable[[int, int], tuple[float, int]]:
        """A round's price of node ``i`` in context ``ctx``: (cost, bit set) from its settled kids'
        ``value``, those ``skip`` flags leaving out (DAG cost; tree cost, with no bit set, unless ``dag``)."""
        wl, boundary, node_kids, wsum = self.wlist, self.boundary, self.node_kids, self._wsum

        def price(i: int, ctx: int) -> tuple[float, int]:
            own_cost = wl[2 * i] + (wl[2 * i + 1] if ctx == RUN else 0.0)
            own = (1 << 2 * i) | ((1 << (2 * i + 1)) if ctx == RUN else 0)
            kid_ctx = LOAD if boundary[i] else ctx
            kid_value, kid_sunk = value[kid_ctx], skip[kid_ctx]
            vals = [kid_value[d] for d in node_kids[i] if not kid_sunk[d]]
            if not dag:  # tree cost counts a shared subterm once per path: deep DAGs overflow it
                try:
                    return own_cost + math.fsum([v[0] for v in vals]), 0
                except OverflowError:  # fsum raises where sum would give inf
                    return math.inf, 0
            if not vals:
                return own_cost, own
            if len(vals) == 1:  # (a chain: the common case)
                return vals[0][0] + own_cost, vals[0][1] | own
            base = max(range(len(vals)), key=lambda k: vals[k][0])
            total, union = vals[base]
            for k, (_, bits) in enumerate(vals):
                if k != base and (diff := bits & ~union):
                    total += wsum(diff)
                    union |= diff
            return total + own_cost, union | own

        return price

    def run(self, dag: bool, sunk: tuple[list[bool], list[bool]] | None = None) -> dict[str, str] | None:
        """One round; ``sunk`` (class, context) pairs cost nothing as children (a previous plan pays)."""
        n_classes = len(self.classes)
        unset = (0.0, 0)  # every read follows a write: a class is settled before its parents are priced
        value: tuple[list[tuple[float, int]], list[tuple[float, int]]] = ([unset] * n_classes, [unset] * n_classes)
        node_kids, node_class = self.node_kids, self.node_class
        key_ctx, states, class_nodes, parents = self.key_ctx, self.states, self.class_nodes, self.parents
        price = self._pricer(dag, value, sunk if sunk is not None else ([False] * n_classes,) * 2)

        pending = [len(ks) for ks in node_kids]
        waiting = [len(ns) for ns in class_nodes]
        priced = [0.0] * len(node_kids)
        made: list[tuple[float, int]] = [(0.0, 0)] * len(node_kids)  # price in the class's key context
        ready: list[int] = []
        stuck: list[tuple[float, int, int]] = []

        def make_ready(i: int) -> None:
            c = node_class[i]
            m = made[i] = price(i, key_ctx[c])
            priced[i] = m[0]
            heapq.heappush(stuck, (m[0], c, i))
            waiting[c] -= 1
            if waiting[c] == 0:
                heapq.heappush(ready, c)

        for i, k in enumerate(pending):
            if not k:
                make_ready(i)
        settled = [-1] * n_classes
        order: list[int] = []
        root = self.cidx[self.g.root]
        while settled[root] < 0:
            if ready:
                c = heapq.heappop(ready)
                if settled[c] >= 0:
                    continue
                i = min(class_nodes[c], key=priced.__getitem__)  # ties: the first node (class_nodes ascend)
            elif stuck:
                _, c, i = heapq.heappop(stuck)
                if settled[c] >= 0:
                    continue
            else:
                return None
            settled[c] = i
            order.append(c)
            for ctx in (RUN, LOAD):
                if states[ctx][c]:
                    value[ctx][c] = made[i] if ctx == key_ctx[c] else price(i, ctx)
            for parent in parents[c]:
                pending[parent] -= 1
                if pending[parent] == 0 and settled[node_class[parent]] < 0:
                    make_ready(parent)
        return {self.classes[c]: self.ids[settled[c]] for c in order}


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
    choice, stats = _greedy_dag(g, rounds, greedy)
    banned: set[str] = set()
    while bad := violated_conflicts(costs, choice):
        new = {next((n for n in c if n not in banned), c[0]) for c in bad} - banned
        if not new:  # no alternative found: the plan keeps them, and says so (stats; explore warns)
            stats["conflicts_kept"] = len(bad)
            break
        banned |= new
        priced = CostTable(
            {n: (NodeCost(_BANNED, 0.0, 0.0) if n in banned else c) for n, c in costs.items()},
            CostTable.of(costs).exclusive,
        )
        priced.update({n: NodeCost(_BANNED, 0.0, 0.0) for n in banned if n not in priced})
        greedy.price_with(priced, lam)
        choice, repaired_stats = _greedy_dag(g, rounds, greedy)
        stats = {**repaired_stats, "banned": len(banned)}
    return extraction_result(g, choice, costs, lam, "greedy-dag", start, stats=stats)


_BANNED = 1e6
"""Seconds a banned node is priced at in a repair (finite: ``check_costs`` refuses inf)."""


def _greedy_dag(g: EGraphData, rounds: int, greedy: _Greedy) -> tuple[dict[str, str], dict[str, object]]:
    """Quick extraction: DAG-cost greedy, tree-cost greedy, then rounds of "sunk-cost" greedy.

    Greedy DAG is myopic: it prices ``op(a, b)`` with b's whole subtree even when the plan needs b
    anyway, so it prefers ``Dispatch(a)`` and can be several times off (the benchmark's stacks).
    Each further round re-runs DAG greedy with the best plan so far treated as paid for (its
    (class, context) pairs cost nothing as children), so nodes that reuse what the plan already
    computes win; it stops when a round no longer improves. Every candidate is priced exactly and
    the best is returned (docs/egglog.md §4.4, lesson 4), as its reachable part and the stats;
    ``greedy_dag`` prices it once, with the real costs. Raises ``ValueError`` when the e-graph holds
    no acyclic plan.
    """
    stats: dict[str, object] = {"classes": len(greedy.classes), "nodes": len(greedy.pos)}
    best: tuple[float, str, dict[str, str], tuple[list[bool], list[bool]]] | None = None
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
        choice = greedy.run(True, best[3])
        if choice is None:
            break
        obj, states = greedy.objective(choice)
        if not obj < best[0]:
            break
        best = (obj, f"sunk-{k + 1}", choice, states)
    stats["picked"] = best[1]
    return reachable_choice(g, best[2]), stats
