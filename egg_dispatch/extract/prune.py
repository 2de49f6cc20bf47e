"""Exact pruning before the MILP, kept apart from the HiGHS model: what no optimal plan uses, what every plan needs."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

from egg_dispatch.cost import LOAD_BOUNDARY_OPS, CostTable, NodeCost, gated_charges, once_charges, pair_charges
from egg_dispatch.egraph.data import EGraphData
from egg_dispatch.extract.common import ZERO_COST, derivable_classes, no_plan_error

__all__ = ["PrunedGraph", "necessary_classes", "prune"]

_DOMINANCE_MAX_CLASS = 256
"""Dominance is pairwise inside a class; beyond this size it is skipped (quadratic, rarely pays)."""


@dataclass
class PrunedGraph:
    """The decision part of an e-graph after exact pruning (class and node order as in ``EGraphData``)."""

    classes: list[str]
    nodes: dict[str, list[str]]
    """Class -> kept node ids."""
    kids: dict[str, tuple[str, ...]]
    """Kept node -> distinct term child classes."""
    replaced: dict[str, str] = field(default_factory=dict)
    """Dominated node -> the sibling that dominates it (follow the chain to a kept node)."""
    stats: dict[str, int] = field(default_factory=dict)

    def kept(self, nid: str) -> str:
        while nid in self.replaced:
            nid = self.replaced[nid]
        return nid


def _dominates(
    m: str, n: str, cm: NodeCost, cn: NodeCost, km: frozenset[str], kn: frozenset[str], bm: bool, bn: bool
) -> bool:
    """m can replace n in every plan without raising the objective or creating a cycle."""
    if not (cm.run_seconds <= cn.run_seconds and cm.memory_bytes <= cn.memory_bytes and km <= kn):
        return False
    if bn and not bm:  # n's children run at load time, m's would run at run time
        return False
    if cm.run_seconds == cn.run_seconds and cm.memory_bytes == cn.memory_bytes and km == kn and bm == bn:
        return m < n  # exact twins: keep the first, so the relation stays a strict order
    return True


def prune(g: EGraphData, costs: Mapping[str, NodeCost]) -> PrunedGraph:
    """Exact pruning to the classes and nodes some optimal plan may use (module docstring). A node of
    one of the table's ``conflicts`` never dominates a sibling: it may not be choosable with the rest
    of a plan that its sibling is. A node with a ``once`` charge its sibling does not have never
    dominates it either: that charge is not in its own run_seconds."""
    protected = {n for c in CostTable.of(costs).conflicts for n in c}
    protected |= {n for _, gen, unset in pair_charges(costs) for n in (gen, unset)}  # charges not on the node
    gated, gate = gated_charges(costs)
    if gated:
        protected |= gate | {n for _, n in gated}
    charges = once_charges(costs)
    once_of = {n: frozenset(i for i, (_, ns) in enumerate(charges) if n in ns) for _, ns in charges for n in ns}
    term = [c for c in g.classes if g.is_term_class(c)]
    options = {c: [n.id for n in g.choices(c)] for c in term}
    kids = {nid: g.term_kids(nid) for c in term for nid in options[c]}
    stats = {"nodes_in": sum(len(g.classes[c]) for c in term), "classes_in": len(term)}
    derivable = derivable_classes(g, kids)
    if g.root not in derivable:
        raise no_plan_error(g)
    grounded = {c: [n for n in options[c] if all(d in derivable for d in kids[n])] for c in derivable}
    stats["ungrounded"] = sum(len(options[c]) for c in term) - sum(len(v) for v in grounded.values())
    # Dominance inside each class.
    replaced: dict[str, str] = {}
    for c, ns in grounded.items():
        if len(ns) < 2 or len(ns) > _DOMINANCE_MAX_CLASS:
            continue
        info = [(n, costs.get(n, ZERO_COST), frozenset(kids[n]), g.nodes[n].op in LOAD_BOUNDARY_OPS) for n in ns]
        for n, cn, kn, bn in info:
            for m, cm, km, bm in info:
                if (
                    m != n
                    and m not in protected
                    and once_of.get(m, frozenset()) <= once_of.get(n, frozenset())
                    and _dominates(m, n, cm, cn, km, kn, bm, bn)
                ):
                    replaced[n] = m
                    break
        grounded[c] = [n for n in ns if n not in replaced]
    stats["dominated"] = len(replaced)
    # Reachability from the root over what is left.
    reach: set[str] = set()
    todo = [g.root]
    while todo:
        c = todo.pop()
        if c not in reach:
            reach.add(c)
            todo.extend(d for n in grounded[c] for d in kids[n])
    classes = [c for c in term if c in reach]
    nodes = {c: grounded[c] for c in classes}
    stats.update(classes=len(classes), nodes=sum(len(v) for v in nodes.values()))
    return PrunedGraph(classes, nodes, {n: kids[n] for c in classes for n in nodes[c]}, replaced, stats)


def necessary_classes(g: EGraphData, p: PrunedGraph, order: list[str]) -> tuple[set[str], set[str]]:
    """Classes every plan needs, and classes every plan needs at run time: exact, cycles included.

    N(c), the classes every acyclic derivation of c uses, is the greatest solution of
    N(c) = {c} ∪ ⋂_{n∈c usable} ⋃_{d∈kids(n)} N(d), where n is usable when c ∉ N(d) for every kid d
    (n can start a derivation of c only if its kids can be derived without c). Every solution lies
    inside the true N (by induction on a derivation's height: its top node is usable, so N(c) lies
    inside the derivation), and the true N is a solution (the kids' derivations that avoid c merge
    into one acyclic plan), so iterating down from "every class" reaches exactly it: a monotone map,
    one pass over ``order`` (children first) on a DAG, a few more around cycles. At run time, a
    usable ``ConstEval`` node contributes ∅ (usable as for N); the same induction shows that set
    holds only classes every plan needs at run time. Sets are Python-int bitsets over ``order``,
    which must hold every class of ``p``.

    Fixing a_c = 1 (and r_c = 1) for these is exact, and it is what makes the LP relaxation useful:
    otherwise the LP halves a shared subtree's cost by splitting its parent between two nodes that
    need different children, and the root bound of a deep graph decays towards zero. (The least
    fixpoint from ∅ would lose everything below a cycle of alternatives such as a
    SetEncoding/UnsetEncoding pair: docs/measurements.md §12.) The iteration re-evaluates a class only
    when the N of one of its kids changed: a monotone map iterated down from the top in any fair order
    reaches the same greatest fixpoint.
    """
    bit = {c: 1 << i for i, c in enumerate(order)}
    full = (1 << len(order)) - 1
    users: dict[str, list[str]] = {c: [] for c in order}  # class -> the classes whose N reads its N
    for c in order:
        for n in p.nodes[c]:
            for d in p.kids[n]:
                users[d].append(c)

    def closure(through: Callable[[str], bool], paths: dict[str, int] | None) -> dict[str, int]:
        nec = dict.fromkeys(order, full)
        below = nec if paths is None else paths  # what decides usability: N itself, or the final N
        # Sweeps over ``order`` that evaluate only the classes some kid's N changed under since they
        # were last evaluated (all at first): on a DAG, one sweep; around a cycle, a few classes more.
        dirty = set(order)
        while dirty:
            for c in order:
                if c not in dirty:
                    continue
                dirty.discard(c)
                own, acc = bit[c], full  # all ones: the identity of &
                for n in p.nodes[c]:
                    kids = p.kids[n]
                    if any(below[d] & own for d in kids):
                        continue  # not usable: a kid cannot be derived without c
                    reach = 0
                    if through(n):
                        for d in kids:
                            reach |= nec[d]
                    acc &= reach
                acc |= own
                if acc != nec[c]:
                    nec[c] = acc
                    dirty.update(users[c])
        return nec

    every = closure(lambda n: True, None)
    at_run = closure(lambda n: g.nodes[n].op not in LOAD_BOUNDARY_OPS, every)
    return {c for c in order if every[g.root] & bit[c]}, {c for c in order if at_run[g.root] & bit[c]}
