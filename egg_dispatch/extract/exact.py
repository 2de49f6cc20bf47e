"""The exact extractor's entry point, apart from the ILP so that importing ``extract`` stays cheap."""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence

from egg_dispatch.cost import CostTable, NodeCost
from egg_dispatch.egraph.data import EGraphData
from egg_dispatch.egraph.enumerate import count_plans
from egg_dispatch.extract.common import ExtractionResult, extraction_result
from egg_dispatch.util.deadline import Deadline

__all__ = ["exact_ilp", "exact_ilp_many", "k_best"]


SMALL_PLAN_SPACE = 32
"""Plans up to which ``exact_ilp`` enumerates instead of calling HiGHS (docs/design.md §2.5)."""

PROBE_STEPS = 50_000
"""Work the plan-space probe may do (``count_plans`` steps) before it hands the e-graph to HiGHS,
whose cycle constraints handle what the probe did not walk: the probe is a shortcut, never a stage."""


def exact_ilp(
    g: EGraphData,
    costs: Mapping[str, NodeCost],
    lam: float,
    time_limit: float = 10.0,
    warm_start: ExtractionResult | None = None,
    *,
    seed: int = 0,
    rel_gap: float = 1e-7,
    solving: Callable[[ExtractionResult], None] | None = None,
) -> ExtractionResult:
    """The exact optimum, never worse than greedy: by enumeration when the e-graph holds at most
    ``SMALL_PLAN_SPACE`` plans (``exhaustive``: priced exactly as the ILP prices them, and far
    cheaper than HiGHS's fixed cost of presolve and root node on a small model), else on HiGHS (see
    ``ilp.solve_ilp``). An e-graph with conflicts (combinations IREE's codegen rejects, which the
    ILP relaxes when no plan avoids them) always goes to HiGHS.

    ``warm_start`` defaults to :func:`greedy_dag`'s plan; ``solving`` is called when HiGHS starts, if it
    does, with the plan it starts from (``ilp.solve_ilp``). Imported lazily: highspy and networkx
    cost ~0.2 s of import time that a greedy-only run should not pay.
    """
    from egg_dispatch.extract.ilp import solve_ilp

    started = time.perf_counter()
    if (only := _forced(g, costs)) is not None:
        return extraction_result(g, only, costs, lam, "exhaustive", started, optimal=True, gap=0.0, stats={"plans": 1})
    if _small(g, costs):
        try:
            return _enumerated(g, costs, [lam])[0]
        except ValueError:  # no plan at all: HiGHS says so too
            pass
    return solve_ilp(g, costs, lam, time_limit, warm_start, seed=seed, rel_gap=rel_gap, solving=solving)


def exact_ilp_many(
    g: EGraphData,
    costs: Mapping[str, NodeCost],
    lams: Sequence[float],
    time_limit: float = 10.0,
    *,
    deadline: Deadline | None = None,
) -> list[ExtractionResult]:
    """:func:`exact_ilp` at each λ of ``lams`` (a frontier sweep), one result each: a small plan space
    is enumerated and its plans' contexts found once for every λ, not once per λ. Under ``deadline``
    each solve gets at most the time left (none left: the warm start, greedy's plan)."""
    from egg_dispatch.extract.ilp import solve_ilp

    if _small(g, costs):
        try:
            return _enumerated(g, costs, lams)
        except ValueError:
            pass
    return [solve_ilp(g, costs, lam, _left(time_limit, deadline)) for lam in lams]


def _left(time_limit: float, deadline: Deadline | None) -> float:
    return time_limit if deadline is None else min(time_limit, deadline.remaining())


def _forced(g: EGraphData, costs: Mapping[str, NodeCost]) -> dict[str, str] | None:
    """The e-graph's only plan, when every class the root reaches holds one node, none subsumed, and they
    form no cycle (IREE's own plan imported with no rule: nothing is left to choose); None otherwise,
    or with conflicts (which only the ILP relaxes). What ``exhaustive`` would find, without the walk of
    ``enumerate_plans`` (a model's plan is thousands of classes) or HiGHS."""
    if CostTable.of(costs).conflicts:
        return None
    choice: dict[str, str] = {}
    done: set[str] = set()
    stack: list[tuple[str, bool]] = [(g.root, False)]
    while stack:  # depth first: a class met again before it is done closes a cycle
        c, children_done = stack.pop()
        if children_done:
            done.add(c)
            continue
        if c in choice:
            if c not in done:
                return None
            continue
        nodes = g.classes.get(c, [])
        if len(nodes) != 1 or g.nodes[nodes[0]].subsumed:
            return None
        choice[c] = nodes[0]
        stack.append((c, True))
        stack.extend((d, False) for d in g.term_kids(nodes[0]))
    return choice


def _small(g: EGraphData, costs: Mapping[str, NodeCost]) -> bool:
    """At most ``SMALL_PLAN_SPACE`` plans and no conflicts (which only the ILP relaxes). Counted before
    any is priced, within ``PROBE_STEPS`` steps of the walk: a large e-graph costs the walk of a few
    plans, not their pricing, and an e-graph of many cyclic choices a bounded probe, not their count."""
    if CostTable.of(costs).conflicts:
        return False
    n = count_plans(g, SMALL_PLAN_SPACE + 1, PROBE_STEPS)
    return n is not None and n <= SMALL_PLAN_SPACE


def _enumerated(g: EGraphData, costs: Mapping[str, NodeCost], lams: Sequence[float]) -> list[ExtractionResult]:
    from egg_dispatch.extract.exhaustive import exhaustive_many

    return exhaustive_many(g, [(costs, lam) for lam in lams], limit=SMALL_PLAN_SPACE)


def k_best(
    g: EGraphData,
    costs: Mapping[str, NodeCost],
    lam: float,
    k: int,
    *,
    time_limit: float = 10.0,
    key: Callable[[dict[str, str]], object] | None = None,
    max_solves: int | None = None,
    deadline: Deadline | None = None,
) -> list[ExtractionResult]:
    """The ``k`` best plans by the model, best first, each distinct under ``key`` (default: the choice
    itself): the exact ILP solved again with a no-good cut for every plan already found (so the i-th is
    optimal among the plans not yet returned, up to the solver's gap). Stops early when the e-graph
    runs out of plans, after ``max_solves`` solves (default ``4 k``), or at ``deadline``."""
    from egg_dispatch.extract.ilp import NoMorePlans, solve_ilp

    found: list[ExtractionResult] = []
    seen: set[object] = set()
    exclude: list[dict[str, str]] = []
    for _ in range(max_solves if max_solves is not None else 4 * k):
        if len(found) >= k or (deadline is not None and found and deadline.expired()):
            break
        try:
            r = solve_ilp(g, costs, lam, _left(time_limit, deadline), exclude=exclude)
        except NoMorePlans:
            break
        exclude.append(r.choice)
        tag = key(r.choice) if key is not None else frozenset(r.choice.items())
        if tag not in seen:
            seen.add(tag)
            found.append(r)
    return found
