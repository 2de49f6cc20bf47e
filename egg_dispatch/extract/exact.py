"""The exact extractor's entry point, apart from the ILP so that importing ``extract`` stays cheap."""

from __future__ import annotations

from collections.abc import Mapping

from egg_dispatch.cost.table import NodeCost
from egg_dispatch.egraph.data import EGraphData
from egg_dispatch.extract.common import ExtractionResult

__all__ = ["exact_ilp"]


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
    """The exact optimum on HiGHS, never worse than greedy (see ``ilp.solve_ilp``).

    ``warm_start`` defaults to :func:`greedy_dag`'s plan. Imported lazily: highspy and networkx
    cost ~0.2 s of import time that a greedy-only run should not pay.
    """
    from egg_dispatch.extract.ilp import solve_ilp

    return solve_ilp(g, costs, lam, time_limit, warm_start, seed=seed, rel_gap=rel_gap)
