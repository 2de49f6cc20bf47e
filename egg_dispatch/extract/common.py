"""The reference objective and the plan helpers every extractor shares (kept apart so they import no extractor)."""

from __future__ import annotations

import math
import time
from collections.abc import Mapping
from dataclasses import dataclass, field

from egg_dispatch.cost import LOAD_BOUNDARY_OPS, CostTable, NodeCost, gated_paid, once_seconds, pair_charges
from egg_dispatch.egraph.data import EGraphData

__all__ = [
    "LOAD",
    "RUN",
    "ZERO_COST",
    "ExtractionResult",
    "check_costs",
    "derivable_classes",
    "extraction_result",
    "no_plan_error",
    "plan_contexts",
    "plan_objective",
    "reachable_choice",
]

RUN, LOAD = 0, 1
"""Evaluation contexts: needed by every call, or only by a load-time initializer (under ``ConstEval``)."""
ZERO_COST = NodeCost()


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
        kids = g.term_kids(choice[c])
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
        for d in g.term_kids(nid):
            if (d, kid_ctx) not in seen:
                seen.add((d, kid_ctx))
                todo.append((d, kid_ctx))
    return run, load


def _totals(
    g: EGraphData,
    choice: Mapping[str, str],
    costs: Mapping[str, NodeCost],
    lam: float,
    contexts: tuple[set[str], set[str]] | None = None,
) -> tuple[float, float, float, float]:
    """(objective, run seconds, memory bytes, load seconds); fsum so the value is order-independent.
    ``contexts``: the plan's ``plan_contexts``, when the caller prices one plan several ways."""
    run, load = contexts if contexts is not None else plan_contexts(g, choice)
    exclusive = CostTable.of(costs).exclusive
    uses = _uses(g, choice, run) if exclusive else {}
    pairs = [
        s * (uses.get(g.nodes[p].eclass, 1) if p in exclusive else 1)
        for s, p, n in pair_charges(costs)
        if p in run and n in run
    ]
    pairs += [s * (uses.get(g.nodes[n].eclass, 1) if n in exclusive else 1) for s, n in gated_paid(costs, run)]
    run_s = math.fsum(
        [
            *(
                costs.get(n, ZERO_COST).run_seconds * uses.get(g.nodes[n].eclass, 1)
                if n in exclusive
                else costs.get(n, ZERO_COST).run_seconds
                for n in run
            ),
            *pairs,
        ]
    ) + once_seconds(costs, run)
    mem = math.fsum(costs.get(n, ZERO_COST).memory_bytes for n in run | load)
    load_s = math.fsum(costs.get(n, ZERO_COST).load_seconds for n in load)
    return run_s + lam * mem, run_s, mem, load_s


def _uses(g: EGraphData, choice: Mapping[str, str], run: set[str]) -> dict[str, int]:
    """Class -> how many chosen run-time nodes use it (a node using it twice counts once)."""
    out: dict[str, int] = {}
    for n in run:
        if g.nodes[n].op in LOAD_BOUNDARY_OPS:
            continue
        for d in set(g.term_kids(n)):
            out[d] = out.get(d, 0) + 1
    return out


def plan_objective(
    g: EGraphData,
    choice: Mapping[str, str],
    costs: Mapping[str, NodeCost],
    lam: float,
    contexts: tuple[set[str], set[str]] | None = None,
) -> float:
    """The exact objective of a plan (the reference every extractor is checked against).

    Σ run_seconds over the chosen nodes needed at run time + λ·Σ memory_bytes over every chosen
    node, each node once however many parents share it -- except ``costs.exclusive`` nodes, whose
    run_seconds count once per chosen node using them -- plus each ``costs.once`` charge some
    run-time node of the plan is in, each ``costs.pairs`` charge both of whose nodes it runs, and each
    ``costs.gated`` charge whose node it runs when it runs a node of ``costs.gate``.
    Nodes missing from ``costs`` cost nothing. ``contexts``: the plan's ``plan_contexts``, if known.
    """
    return _totals(g, choice, costs, lam, contexts)[0]


def reachable_choice(g: EGraphData, choice: Mapping[str, str]) -> dict[str, str]:
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
        todo.extend(d for d in g.term_kids(choice[c]) if d not in out)
    return dict(sorted(out.items()))


def extraction_result(
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
    """The result of a choice: its reachable classes only, with objective, run time, memory and load time totalled."""
    choice = reachable_choice(g, choice)
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
            kids[node.id] = g.term_kids(node.id)
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
