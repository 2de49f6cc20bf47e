"""Exhaustive extraction: the optimum over every plan the e-graph holds (tests and small programs)."""

from __future__ import annotations

import time
from collections.abc import Mapping

from egg_dispatch.cost.table import NodeCost, violated_conflicts
from egg_dispatch.egraph.data import EGraphData
from egg_dispatch.egraph.enumerate import enumerate_plans
from egg_dispatch.extract.common import ExtractionResult, _result, check_costs, no_plan_error, plan_objective

__all__ = ["exhaustive"]


def exhaustive(g: EGraphData, costs: Mapping[str, NodeCost], lam: float, limit: int = 1000) -> ExtractionResult:
    """The optimum over every plan :func:`enumerate_plans` yields (tests and small programs).

    Raises ``ValueError`` when the e-graph holds more than ``limit`` plans (or none). Note that
    ``enumerate_plans`` skips a materialized spelling (Pack / Unpack / Mmt4d) when its
    encoding-level twin is in the class: it is the optimum over placements, and equals the exact
    optimum whenever the cost table prices twins alike (as ``cost/model.py`` does). Plans that
    violate one of the table's ``conflicts`` are skipped.
    """
    start = time.perf_counter()
    check_costs(costs, lam)
    best: tuple[float, dict[str, str]] | None = None
    count = 0
    for plan in enumerate_plans(g, limit + 1):
        count += 1
        if count > limit:
            raise ValueError(f"the e-graph holds more than {limit} plans")
        if violated_conflicts(costs, plan):  # IREE's codegen rejects it (cost.conflicts)
            continue
        obj = plan_objective(g, plan, costs, lam)
        if best is None or obj < best[0]:
            best = (obj, plan)
    if best is None:
        raise no_plan_error(g)
    return _result(g, best[1], costs, lam, "exhaustive", start, optimal=True, gap=0.0, stats={"plans": count})
