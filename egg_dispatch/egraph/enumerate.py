"""Every plan a (small) e-graph represents, for tests and for checking the exact extractor.

A plan is a choice of one extractable node per e-class reachable from the root, acyclic.
Materialized forms (Pack / Unpack / Mmt4d) sit in the same classes as the encoding-level ops and
compute the same bytes; they are skipped here when an encoding-level node exists, so plans differ
in placement decisions, not in spelling (the emitter picks the spelling).
"""

from __future__ import annotations

from collections.abc import Iterator

from egg_dispatch.egraph.data import EGraphData

__all__ = ["MATERIALIZED_OPS", "enumerate_plans", "is_acyclic"]

MATERIALIZED_OPS = frozenset({"Pack", "Unpack", "Mmt4d"})


def _options(g: EGraphData, c: str) -> list[str]:
    nodes = g.choices(c)
    plain = [n for n in nodes if n.op not in MATERIALIZED_OPS]
    return [n.id for n in (plain or nodes)]


def is_acyclic(g: EGraphData, choice: dict[str, str]) -> bool:
    """True when the chosen nodes reachable from the root form a DAG (iterative DFS)."""
    state: dict[str, int] = {g.root: 1}
    stack: list[tuple[str, int]] = [(g.root, 0)]
    while stack:
        c, i = stack[-1]
        kids = g.nodes[choice[c]].children
        if i == len(kids):
            state[c] = 2
            stack.pop()
            continue
        stack[-1] = (c, i + 1)
        k = kids[i]
        if not g.is_term_class(k) or state.get(k) == 2:
            continue
        if state.get(k) == 1:
            return False
        state[k] = 1
        stack.append((k, 0))
    return True


def enumerate_plans(g: EGraphData, limit: int = 1000) -> Iterator[dict[str, str]]:
    """Yield acyclic choices (class -> node id), depth-first in a deterministic order, at most
    ``limit`` of them."""
    count = 0

    def rec(todo: tuple[str, ...], choice: dict[str, str]) -> Iterator[dict[str, str]]:
        while todo and (todo[-1] in choice or not g.is_term_class(todo[-1])):
            todo = todo[:-1]
        if not todo:
            yield choice
            return
        c = todo[-1]
        for nid in _options(g, c):
            new = dict(choice)
            new[c] = nid
            yield from rec(todo[:-1] + tuple(reversed(g.nodes[nid].children)), new)

    for plan in rec((g.root,), {}):
        if is_acyclic(g, plan):
            yield plan
            count += 1
            if count >= limit:
                return
