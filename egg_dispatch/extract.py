"""Extraction: the cheapest plan an e-graph holds, under the DAG objective of ``cost_table.py``.

Three extractors share one reference, :func:`plan_objective`, which every result is checked against:

* :func:`greedy_dag` -- quick (well under a second at 5k e-nodes). Each node is priced by the *set*
  of (node, context) pairs under it, so a subterm shared by two consumers is paid once
  (extraction-gym's greedy-dag); tree-cost greedy and "sunk-cost" rounds add candidates.
* :func:`exact_ilp` -- the exact optimum on HiGHS, warm-started from greedy and never worse than it
  (``extract_ilp.py``; design.md §2.5, egglog-notes.md §4.4 and §7).
* :func:`exhaustive` -- every plan :func:`~egg_dispatch.enumerate.enumerate_plans` yields, for tests.

A plan (a *choice*) maps each ``Tensor`` / ``TList`` / ``Root`` class reachable from the root to
one extractable node of it; other classes (integers, strings, vectors, encodings, layouts) are
leaf values, never decisions, and cost nothing. Costs must be non-negative: "a term is never
cheaper than its subterms" is what makes greedy's one-pass order and the ILP's context
linearization exact.
"""

from __future__ import annotations

import heapq
import math
import time
from collections.abc import Mapping
from dataclasses import dataclass, field

import numpy as np

from .cost_table import LOAD_BOUNDARY_OPS, NodeCost
from .egraph_data import EGraphData
from .enumerate import enumerate_plans

__all__ = [
    "ExtractionResult",
    "exact_ilp",
    "exhaustive",
    "greedy_dag",
    "plan_contexts",
    "plan_objective",
]

RUN, LOAD = 0, 1
"""Evaluation contexts: needed by every call, or only by a load-time initializer (under ``ConstEval``)."""
_ZERO = NodeCost()


@dataclass
class ExtractionResult:
    """A chosen plan with its exact objective (recomputed by :func:`plan_objective`, never the solver's)."""

    choice: dict[str, str]
    """Term class -> chosen node id, for exactly the classes the plan reaches from the root."""
    objective: float
    run_seconds: float
    """Σ run_seconds of the nodes needed at run time."""
    memory_bytes: float
    """Σ memory_bytes of every chosen node (run or load time)."""
    method: str
    seconds: float
    """Wall time of the extraction, model building included."""
    optimal: bool
    """Proven optimal (the ILP closed its gap, or exhaustive enumeration); False for greedy."""
    gap: float | None
    """Relative gap (objective − lower bound) / objective; None when no bound is known."""
    load_seconds: float = 0.0
    """Σ load_seconds of the nodes evaluated by initializers (reported, not optimized)."""
    stats: dict[str, object] = field(default_factory=dict)


# --- the reference objective -------------------------------------------------------------------


def _term_kids(g: EGraphData, nid: str) -> tuple[str, ...]:
    """Distinct term child classes of a node, in argument order (leaf classes are not decisions)."""
    seen: dict[str, None] = {}
    for d in g.nodes[nid].children:
        if g.is_term_class(d):
            seen.setdefault(d)
    return tuple(seen)


def plan_contexts(g: EGraphData, choice: Mapping[str, str]) -> tuple[set[str], set[str]]:
    """(nodes needed at run time, nodes evaluated at module load) of a plan; a node may be in both.

    Raises ``ValueError`` if the choice is not a plan: a reachable term class without a choice, a
    node that is not an extractable member of its class, or a cycle (a cyclic "plan" has no
    finite term, so it must never be priced as if it had one).
    """
    if g.root not in choice:
        raise ValueError(f"the root class {g.root} has no choice")
    # Iterative DFS (20k-deep chains exist in benchmarks): colours 1 = on stack, 2 = done.
    colour: dict[str, int] = {}
    stack: list[tuple[str, int]] = [(g.root, 0)]
    while stack:
        c, i = stack.pop()
        if i == 0:
            if colour.get(c) == 2:
                continue
            nid = choice.get(c)
            if nid is None:
                raise ValueError(f"class {c} is reachable but has no choice")
            node = g.nodes.get(nid)
            if node is None or node.eclass != c or node.subsumed or c in node.children:
                raise ValueError(f"node {nid} is not an extractable node of class {c}")
            colour[c] = 1
        kids = _term_kids(g, choice[c])
        if i < len(kids):
            stack.append((c, i + 1))
            d = kids[i]
            state = colour.get(d)
            if state == 1:
                raise ValueError(f"the choice is cyclic: class {d} reaches itself")
            if state is None:
                stack.append((d, 0))
        else:
            colour[c] = 2
    run: set[str] = set()
    load: set[str] = set()
    seen = {(g.root, RUN)}
    todo = [(g.root, RUN)]
    while todo:
        c, ctx = todo.pop()
        nid = choice[c]
        (run if ctx == RUN else load).add(nid)
        kid_ctx = LOAD if g.nodes[nid].op in LOAD_BOUNDARY_OPS else ctx
        for d in _term_kids(g, nid):
            if (d, kid_ctx) not in seen:
                seen.add((d, kid_ctx))
                todo.append((d, kid_ctx))
    return run, load


def _totals(
    g: EGraphData, choice: Mapping[str, str], costs: Mapping[str, NodeCost], lam: float
) -> tuple[float, float, float, float]:
    """(objective, run seconds, memory bytes, load seconds); fsum so the value is order-independent."""
    run, load = plan_contexts(g, choice)
    exclusive = getattr(costs, "exclusive", frozenset())
    uses = _uses(g, choice, run) if exclusive else {}
    run_s = math.fsum(
        costs.get(n, _ZERO).run_seconds * uses.get(g.nodes[n].eclass, 1)
        if n in exclusive
        else costs.get(n, _ZERO).run_seconds
        for n in run
    )
    mem = math.fsum(costs.get(n, _ZERO).memory_bytes for n in run | load)
    load_s = math.fsum(costs.get(n, _ZERO).load_seconds for n in load)
    return run_s + lam * mem, run_s, mem, load_s


def _uses(g: EGraphData, choice: Mapping[str, str], run: set[str]) -> dict[str, int]:
    """Class -> how many chosen run-time nodes use it (a node using it twice counts once)."""
    out: dict[str, int] = {}
    for n in run:
        if g.nodes[n].op in LOAD_BOUNDARY_OPS:
            continue
        for d in set(_term_kids(g, n)):
            out[d] = out.get(d, 0) + 1
    return out


def plan_objective(g: EGraphData, choice: Mapping[str, str], costs: Mapping[str, NodeCost], lam: float) -> float:
    """The exact objective of a plan (the reference every extractor is checked against).

    Σ run_seconds over the chosen nodes needed at run time + λ·Σ memory_bytes over every chosen
    node, each node once however many parents share it -- except ``costs.exclusive`` nodes, whose
    run_seconds count once per chosen node using them. Nodes missing from ``costs`` cost nothing.
    """
    return _totals(g, choice, costs, lam)[0]


def _reachable(g: EGraphData, choice: Mapping[str, str]) -> dict[str, str]:
    """The part of a choice the root reaches (solvers may pick classes nothing needs)."""
    out: dict[str, str] = {}
    todo = [g.root]
    while todo:
        c = todo.pop()
        if c in out:
            continue
        if c not in choice:
            raise ValueError(f"class {c} is reachable but has no choice")
        out[c] = choice[c]
        todo.extend(d for d in _term_kids(g, choice[c]) if d not in out)
    return dict(sorted(out.items()))


def _result(
    g: EGraphData,
    choice: Mapping[str, str],
    costs: Mapping[str, NodeCost],
    lam: float,
    method: str,
    start: float,
    optimal: bool = False,
    gap: float | None = None,
    stats: dict[str, object] | None = None,
) -> ExtractionResult:
    choice = _reachable(g, choice)
    obj, run_s, mem, load_s = _totals(g, choice, costs, lam)
    return ExtractionResult(
        choice, obj, run_s, mem, method, time.perf_counter() - start, optimal, gap, load_s, stats or {}
    )


def derivable_classes(g: EGraphData, kids: Mapping[str, tuple[str, ...]]) -> set[str]:
    """Classes with an acyclic derivation: one node (of ``kids``: node -> term child classes) whose
    children are all derivable, bottom-up from the leaves. Nodes outside it are in no plan."""
    waiting = {n: len(k) for n, k in kids.items()}
    parents: dict[str, list[str]] = {}
    for n, ks in kids.items():
        for d in ks:
            parents.setdefault(d, []).append(n)
    ready = [n for n, k in waiting.items() if k == 0]
    derivable: set[str] = set()
    while ready:
        c = g.nodes[ready.pop()].eclass
        if c not in derivable:
            derivable.add(c)
            for p in parents.get(c, ()):
                waiting[p] -= 1
                if waiting[p] == 0:
                    ready.append(p)
    return derivable


def no_plan_error(g: EGraphData) -> ValueError:
    """Why an e-graph holds no plan: the nearest underivable class with no extractable node at all
    (legality subsumed every one), or else the root can only be built through a cycle."""
    kids: dict[str, tuple[str, ...]] = {}
    seen, todo = {g.root}, [g.root]
    while todo:
        for node in g.choices(todo.pop()):
            kids[node.id] = _term_kids(g, node.id)
            todo.extend(d for d in kids[node.id] if d not in seen)
            seen.update(kids[node.id])
    derivable = derivable_classes(g, kids)
    layer = [g.root]
    visited = {g.root}
    while layer:
        for c in layer:
            if not g.choices(c):
                ops = ", ".join(sorted({g.nodes[n].op for n in g.classes[c]})) or "no nodes"
                return ValueError(f"the e-graph holds no acyclic plan: class {c} ({ops}) has no extractable node")
        nxt = [d for c in layer for n in g.choices(c) for d in kids[n.id] if d not in derivable and d not in visited]
        visited.update(nxt)
        layer = list(dict.fromkeys(nxt))
    return ValueError("the e-graph holds no acyclic plan: the root class can only be built through a cycle")


def check_costs(costs: Mapping[str, NodeCost], lam: float) -> None:
    """Reject negative or NaN costs: both extractors rely on a term never being cheaper than its parts."""
    if not lam >= 0 or math.isinf(lam):
        raise ValueError(f"lambda must be finite and non-negative, got {lam}")
    for nid, c in costs.items():
        if not (c.run_seconds >= 0 and c.memory_bytes >= 0):
            raise ValueError(f"node {nid} has a negative or NaN cost {c}")


# --- greedy ------------------------------------------------------------------------------------


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
        for n, i in self.pos.items():
            cost = costs.get(n, _ZERO)
            self.weights[2 * i], self.weights[2 * i + 1] = lam * cost.memory_bytes, cost.run_seconds
        self.wlist: list[float] = self.weights.tolist()

    def _enter(self, c: str, stack: list[tuple[str, list[str]]]) -> None:
        self.nodes[c] = [n.id for n in self.g.choices(c)]
        order: dict[str, None] = {}
        for n in self.nodes[c]:
            self.kids[n] = _term_kids(self.g, n)
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
            if not dag:
                return own_cost + math.fsum(v[0] for v in vals), 0
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
        ready: list[int] = []
        stuck: list[tuple[float, int, int, str]] = []

        def make_ready(n: str) -> None:
            c = self.g.nodes[n].eclass
            priced[n] = price(n, self.key_ctx[c])[0]
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
                    value[(c, ctx)] = price(n, ctx)
            for parent in self.parents.get(c, ()):
                pending[parent] -= 1
                if pending[parent] == 0 and self.g.nodes[parent].eclass not in settled:
                    make_ready(parent)
        return settled


def greedy_dag(g: EGraphData, costs: Mapping[str, NodeCost], lam: float, rounds: int = 8) -> ExtractionResult:
    """Quick extraction: DAG-cost greedy, tree-cost greedy, then rounds of "sunk-cost" greedy.

    Greedy DAG is myopic: it prices ``op(a, b)`` with b's whole subtree even when the plan needs b
    anyway, so it prefers ``Dispatch(a)`` and can be several times off (the benchmark's stacks).
    Each further round re-runs DAG greedy with the best plan so far treated as paid for (its
    (class, context) pairs cost nothing as children), so nodes that reuse what the plan already
    computes win; it stops when a round no longer improves. Every candidate is priced exactly and
    the best is returned (egglog-notes.md §4.4, lesson 4). Raises ``ValueError`` when the e-graph
    holds no acyclic plan.
    """
    start = time.perf_counter()
    check_costs(costs, lam)
    greedy = _Greedy(g, costs, lam)
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
    return _result(g, best[2], costs, lam, "greedy-dag", start, stats=stats)


# --- exact -------------------------------------------------------------------------------------


def exhaustive(g: EGraphData, costs: Mapping[str, NodeCost], lam: float, limit: int = 1000) -> ExtractionResult:
    """The optimum over every plan :func:`enumerate_plans` yields (tests and small programs).

    Raises ``ValueError`` when the e-graph holds more than ``limit`` plans (or none). Note that
    ``enumerate_plans`` skips a materialized spelling (Pack / Unpack / Mmt4d) when its
    encoding-level twin is in the class: it is the optimum over placements, and equals the exact
    optimum whenever the cost table prices twins alike (as ``cost.py`` does).
    """
    start = time.perf_counter()
    check_costs(costs, lam)
    best: tuple[float, dict[str, str]] | None = None
    count = 0
    for plan in enumerate_plans(g, limit + 1):
        count += 1
        if count > limit:
            raise ValueError(f"the e-graph holds more than {limit} plans")
        obj = plan_objective(g, plan, costs, lam)
        if best is None or obj < best[0]:
            best = (obj, plan)
    if best is None:
        raise no_plan_error(g)
    return _result(g, best[1], costs, lam, "exhaustive", start, optimal=True, gap=0.0, stats={"plans": count})


def exact_ilp(
    g: EGraphData,
    costs: Mapping[str, NodeCost],
    lam: float,
    time_limit: float = 10.0,
    warm_start: ExtractionResult | None = None,
    *,
    seed: int = 0,
    rel_gap: float = 1e-7,
) -> ExtractionResult:
    """The exact optimum on HiGHS, never worse than greedy (see ``extract_ilp.solve_ilp``).

    ``warm_start`` defaults to :func:`greedy_dag`'s plan. Imported lazily: highspy and networkx
    cost ~0.2 s of import time that a greedy-only run should not pay.
    """
    from .extract_ilp import solve_ilp

    return solve_ilp(g, costs, lam, time_limit, warm_start, seed=seed, rel_gap=rel_gap)
