"""The cost model: per-node costs for a target (``model``), in the table the extractors read (``table``)."""

from egg_dispatch.cost.model import cost_table, default_lambda
from egg_dispatch.cost.table import CostTable, NodeCost

__all__ = ["CostTable", "NodeCost", "cost_table", "default_lambda"]
