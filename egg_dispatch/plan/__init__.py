"""The chosen plan as a graph (``graph``: dispatches, globals, buffers, metrics) and IREE's modelled plan.

``baseline`` picks IREE 3.13's own greedy decisions from the same e-graph, so that both plans are
costed by one model.
"""

from egg_dispatch.plan.baseline import BaselineError, iree_baseline_choice
from egg_dispatch.plan.graph import Plan, PlanMetrics, build_plan

__all__ = ["BaselineError", "Plan", "PlanMetrics", "build_plan", "iree_baseline_choice"]
