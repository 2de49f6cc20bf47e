"""Extraction: the cheapest plan an e-graph holds, under the DAG objective of ``cost/table.py``.

Three extractors share one reference, :func:`plan_objective`, which every result is checked against:

* :func:`greedy_dag` -- quick (well under a second at 5k e-nodes). Each node is priced by the *set*
  of (node, context) pairs under it, so a subterm shared by two consumers is paid once
  (extraction-gym's greedy-dag); tree-cost greedy and "sunk-cost" rounds add candidates
  (``greedy.py``).
* :func:`exact_ilp` -- the exact optimum on HiGHS, warm-started from greedy and never worse than it
  (``ilp.py``, pruned by ``prune.py``; docs/design.md §2.5, docs/egglog.md §4.4 and §7);
  :func:`exact_ilp_many` at several λ (a frontier sweep).
* :func:`exhaustive` -- every plan :func:`~egg_dispatch.egraph.enumerate.enumerate_plans` yields, for tests
  (:func:`exhaustive_many`: several objectives over one enumeration).

The reference objective and the helpers all three share are in ``common.py``.

A plan (a *choice*) maps each ``Tensor`` / ``TList`` / ``Root`` class reachable from the root to
one extractable node of it; other classes (integers, strings, vectors, encodings, layouts) are
leaf values, never decisions, and cost nothing. Costs must be non-negative: "a term is never
cheaper than its subterms" is what makes greedy's one-pass order and the ILP's context
linearization exact.
"""

from __future__ import annotations

from egg_dispatch.extract.common import ExtractionResult, plan_contexts, plan_objective
from egg_dispatch.extract.exact import exact_ilp, exact_ilp_many, k_best
from egg_dispatch.extract.exhaustive import exhaustive, exhaustive_many
from egg_dispatch.extract.greedy import greedy_dag

__all__ = [
    "ExtractionResult",
    "exact_ilp",
    "exact_ilp_many",
    "exhaustive",
    "exhaustive_many",
    "greedy_dag",
    "k_best",
    "plan_contexts",
    "plan_objective",
]
