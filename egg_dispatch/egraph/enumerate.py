"""Every plan a (small) e-graph represents, for tests and for checking the exact extractor.

A plan is a choice of one extractable node per e-class reachable from the root, acyclic.
Materialized forms (Pack / Unpack / Mmt4d) sit in the same classes as the encoding-level ops and
compute the same bytes; they are skipped here when an encoding-level node exists, so plans differ
in placement decisions, not in spelling (the emitter picks the spelling).

The walk is depth-first and bounded by work, not only by the plans it yields: a choice that closes a
cycle among the classes already chosen prunes its whole branch (every completion of it is cyclic), and
``max_steps`` ends the walk with ``EnumerationBudget``. Without both, an e-graph whose classes can
choose each other (a decode step's e-graph: 3,884 e-nodes) meets hundreds of thousands of complete
choices, every one cyclic, before it yields a plan.
"""

from __future__ import annotations

from collections.abc import Iterator

from egg_dispatch.egraph.data import EGraphData
from egg_dispatch.util.deadline import Deadline

__all__ = ["MATERIALIZED_OPS", "EnumerationBudget", "chosen_cycle", "count_plans", "enumerate_plans", "is_acyclic"]

MATERIALIZED_OPS = frozenset({"Pack", "Unpack", "Mmt4d"})


class EnumerationBudget(RuntimeError):
    """The walk did ``max_steps`` steps (choices tried plus classes visited by the cycle test) first."""


def _options(g: EGraphData, c: str) -> list[str]:
    nodes = g.choices(c)
    plain = [n for n in nodes if n.op not in MATERIALIZED_OPS]
    return [n.id for n in (plain or nodes)]


def chosen_cycle(g: EGraphData, choice: dict[str, str]) -> list[str] | None:
    """The term classes of a cycle among the chosen nodes reachable from the root (in the order the cycle
    runs), or None when they form a DAG (iterative DFS)."""
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
            on_stack = [s for s, _ in stack]
            return on_stack[on_stack.index(k) :]
        state[k] = 1
        stack.append((k, 0))
    return None


def is_acyclic(g: EGraphData, choice: dict[str, str]) -> bool:
    """True when the chosen nodes reachable from the root form a DAG."""
    return chosen_cycle(g, choice) is None


def enumerate_plans(
    g: EGraphData, limit: int = 1000, *, max_steps: int | None = None, deadline: Deadline | None = None
) -> Iterator[dict[str, str]]:
    """Yield acyclic choices (class -> node id), depth-first in a deterministic order, at most
    ``limit`` of them. Raises ``EnumerationBudget`` after ``max_steps`` steps or at ``deadline``
    (looked at every 4,096 steps; None: unbounded)."""
    count = 0
    steps = 0

    def closes_cycle(c: str, nid: str, choice: dict[str, str]) -> bool:
        """Whether choosing ``nid`` for ``c`` makes ``c`` reachable from itself through chosen nodes."""
        nonlocal steps
        stack = list(g.term_kids(nid))
        seen: set[str] = set()
        while stack:
            k = stack.pop()
            if k == c:
                return True
            if k in seen or k not in choice:
                continue
            seen.add(k)
            steps += 1
            stack.extend(g.term_kids(choice[k]))
        return False

    def rec(todo: tuple[str, ...], choice: dict[str, str]) -> Iterator[dict[str, str]]:
        nonlocal steps
        while todo and (todo[-1] in choice or not g.is_term_class(todo[-1])):
            todo = todo[:-1]
        if not todo:
            yield choice
            return
        c = todo[-1]
        for nid in _options(g, c):
            steps += 1
            if max_steps is not None and steps > max_steps:
                raise EnumerationBudget(f"plan enumeration stopped after {max_steps} steps")
            if deadline is not None and steps % 4096 == 0 and deadline.expired():
                raise EnumerationBudget(f"plan enumeration reached its budget ({deadline.seconds:g} s)")
            if closes_cycle(c, nid, choice):
                continue
            new = dict(choice)
            new[c] = nid
            yield from rec(todo[:-1] + tuple(reversed(g.nodes[nid].children)), new)

    for plan in rec((g.root,), {}):
        yield plan
        count += 1
        if count >= limit:
            return


def count_plans(g: EGraphData, limit: int, max_steps: int) -> int | None:
    """How many plans the e-graph holds, counted up to ``limit``; None when ``max_steps`` steps of the
    walk were not enough to tell (callers treat the plan space as large)."""
    try:
        return sum(1 for _ in enumerate_plans(g, limit, max_steps=max_steps))
    except EnumerationBudget:
        return None
