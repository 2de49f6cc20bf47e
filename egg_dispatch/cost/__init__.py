"""The cost model: per-node costs for a target (``model``), in the table the extractors read (``table``)."""

from egg_dispatch.cost.model import DEFAULT_LAMBDA, cost_table
from egg_dispatch.cost.table import CostTable, NodeCost

__all__ = ["DEFAULT_LAMBDA", "CostTable", "NodeCost", "cost_table"]
