"""A dynamic program's plan priced at the sizes of its ``SizePlan``: per configuration, and their mean.

``plan_at_sizes`` builds the plan graph once per size configuration (``cost.sizes.specialize``) and
returns the plan of the first one with ``metrics`` the weighted mean of all (what the extractors
minimized), and every configuration's own metrics in ``Plan.at_sizes`` (the report lists them).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable

from egg_dispatch.cost import SizePlan, specialize
from egg_dispatch.egraph.data import EGraphData
from egg_dispatch.egraph.imported import ImportedProgram
from egg_dispatch.plan.graph import Plan, PlanMetrics

__all__ = ["plan_at_sizes", "sizes_of"]


def plan_at_sizes(
    g: EGraphData, imported: ImportedProgram, sizes: SizePlan | None, build: Callable[[EGraphData], Plan]
) -> Plan:
    """``build(g)`` for a static program; else as the module docstring says."""
    if sizes is None or not imported.dynamic:
        return build(g)
    plans = [(env, w, build(specialize(g, imported, env))) for env, w in sizes.configs]
    first = plans[0][2]
    m = first.metrics

    def mean(field: str) -> float:
        return sum(w * getattr(p.metrics, field) for _, w, p in plans)

    metrics = dataclasses.replace(
        m,
        run_seconds=mean("run_seconds"),
        load_seconds=mean("load_seconds"),
        persistent_bytes=round(mean("persistent_bytes")),
        transient_bytes=round(mean("transient_bytes")),
        peak_live_bytes=round(mean("peak_live_bytes")),
    )
    out = dataclasses.replace(first, metrics=metrics)
    out.at_sizes = [(dict(env), w, p.metrics) for env, w, p in plans]
    return out


def sizes_of(plan: Plan) -> list[tuple[dict[str, int], float, PlanMetrics]]:
    """The per-configuration metrics of a plan priced by ``plan_at_sizes`` (empty for a static one)."""
    return list(plan.at_sizes)
