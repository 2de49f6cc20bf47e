"""Extraction: the cheapest plan an e-graph holds, under the DAG objective of ``cost_table.py``.

Three extractors share one reference, :func:`plan_objective`, which every result is checked against:

* :func:`greedy_dag` -- quick (well under a second at 5k e-nodes). Each node is priced by the *set*
  of (node, context) pairs under it, so a subterm shared by two consumers is paid once
  (extraction-gym's greedy-dag); tree-cost greedy and "sunk-cost" rounds add candidates
  (``extract_greedy.py``).
* :func:`exact_ilp` -- the exact optimum on HiGHS, warm-started from greedy and never worse than it
  (``extract_ilp.py``; design.md §2.5, egglog-notes.md §4.4 and §7).
* :func:`exhaustive` -- every plan :func:`~egg_dispatch.enumerate.enumerate_plans` yields, for tests.

The reference objective and the helpers all three share are in ``extract_common.py``.

A plan (a *choice*) maps each ``Tensor`` / ``TList`` / ``Root`` class reachable from the root to
one extractable node of it; other classes (integers, strings, vectors, encodings, layouts) are
leaf values, never decisions, and cost nothing. Costs must be non-negative: "a term is never
cheaper than its subterms" is what makes greedy's one-pass order and the ILP's context
linearization exact.
"""

from __future__ import annotations

import time
from collections.abc import Mapping

from .cost_table import NodeCost
from .egraph_data import EGraphData
from .enumerate import enumerate_plans

# The reference objective and shared helpers live in extract_common.py, greedy in extract_greedy.py;
# everything that moved is re-exported (``name as name``) so existing imports of this module keep working.
from .extract_common import _ZERO as _ZERO
from .extract_common import LOAD as LOAD
from .extract_common import RUN as RUN
from .extract_common import ExtractionResult, plan_contexts, plan_objective
from .extract_common import _reachable as _reachable
from .extract_common import _result as _result
from .extract_common import _term_kids as _term_kids
from .extract_common import _totals as _totals
from .extract_common import _uses as _uses
from .extract_common import check_costs as check_costs
from .extract_common import derivable_classes as derivable_classes
from .extract_common import no_plan_error as no_plan_error
from .extract_greedy import _Greedy as _Greedy
from .extract_greedy import greedy_dag

__all__ = [
    "ExtractionResult",
    "exact_ilp",
    "exhaustive",
    "greedy_dag",
    "plan_contexts",
    "plan_objective",
]

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
