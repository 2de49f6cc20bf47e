"""Exhaustive extraction: the optimum over every plan the e-graph holds (tests and small programs)."""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence

from egg_dispatch.cost import NodeCost, violated_conflicts
from egg_dispatch.egraph.data import EGraphData
from egg_dispatch.egraph.enumerate import enumerate_plans
from egg_dispatch.extract.common import (
    ExtractionResult,
    check_costs,
    extraction_result,
    no_plan_error,
    plan_contexts,
    plan_objective,
)

__all__ = ["exhaustive", "exhaustive_many"]


def exhaustive(g: EGraphData, costs: Mapping[str, NodeCost], lam: float, limit: int = 1000) -> ExtractionResult:
    """The optimum over every plan :func:`enumerate_plans` yields (tests and small programs).

    Raises ``ValueError`` when the e-graph holds more than ``limit`` plans (or none). Note that
    ``enumerate_plans`` skips a materialized spelling (Pack / Unpack / Mmt4d) when its
    encoding-level twin is in the class: it is the optimum over placements, and equals the exact
    optimum whenever the cost table prices twins alike (as ``cost/model.py`` does). Plans that
    violate one of the table's ``conflicts`` are skipped.
    """
    return exhaustive_many(g, [(costs, lam)], limit)[0]


def exhaustive_many(
    g: EGraphData, objectives: Sequence[tuple[Mapping[str, NodeCost], float]], limit: int = 1000
) -> list[ExtractionResult]:
    """:func:`exhaustive` for several (cost table, λ) objectives at once, one result each.

    The plans are enumerated, and each plan's run/load contexts found, once for all objectives:
    those walks, not the pricing, are what enumeration costs.
    """
    start = time.perf_counter()
    for costs, lam in objectives:
        check_costs(costs, lam)
    best: list[tuple[float, dict[str, str]] | None] = [None] * len(objectives)
    count = 0
    for plan in enumerate_plans(g, limit + 1):
        count += 1
        if count > limit:
            raise ValueError(f"the e-graph holds more than {limit} plans")
        contexts = plan_contexts(g, plan)
        for i, (costs, lam) in enumerate(objectives):
            if violated_conflicts(costs, plan):  # IREE's codegen rejects it (cost.conflicts)
                continue
            obj = plan_objective(g, plan, costs, lam, contexts)
            current = best[i]
            if current is None or obj < current[0]:
                best[i] = (obj, plan)
    results = []
    for found, (costs, lam) in zip(best, objectives, strict=True):
        if found is None:
            raise no_plan_error(g)
        results.append(extraction_result(g, found[1], costs, lam, "exhaustive", start, optimal=True, gap=0.0,
                               stats={"plans": count}))  # fmt: skip
    return results
