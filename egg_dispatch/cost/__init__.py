"""The cost model: what every e-node costs on a target, in the table the extractors read.

The stages after this one import from the package, never from its modules. The modules, each on
the ones above it:

* ``facts``: an e-class as a tensor (shape, element type, tiled layout) and its stored bytes;
* ``contraction``: contraction geometry (loops, padded flops, M, N, K, the RHS's bytes and layout);
* ``op_time``: the time of one op on tensors, by formula or by a calibrated profile's fits;
* ``classes``: what the model asks of an e-class or e-node (operand lists, boundaries, reshapes,
  fused packs, copied slices, function results, contraction nodes);
* ``signature``: the node signature, the key of the measurement cache;
* ``measured``: that cache of measured kernel times;
* ``node_time``: the time of one e-node, measured where the cache has it, else by ``op_time``;
* ``charges``: what a plan pays beyond its nodes' op times (launches, allocations, copies, the call,
  and the charges that depend on what else it chooses);
* ``conflicts``: node sets IREE's codegen rejects together;
* ``table``: the cost table type and how a plan's objective reads it;
* ``model``: the cost table of an e-graph for a target, and the default λ;
* ``sizes``: the sizes a dynamic program is costed at, and the table as their weighted mean.
"""

from egg_dispatch.cost.charges import (
    call_overhead_seconds,
    consumer_pairs,
    dispatch_overhead_seconds,
    exclusive_nodes,
    slice_copy_seconds,
    throttles,
    transient_seconds,
)
from egg_dispatch.cost.classes import contraction_tiled, copied_slice, is_reshape, is_view_dispatch, output_classes
from egg_dispatch.cost.facts import Facts, TensorInfo
from egg_dispatch.cost.measured import CacheError, MeasuredTimes, default_cache_path, measurement_context
from egg_dispatch.cost.model import conflicts_of, cost_table, default_lambda
from egg_dispatch.cost.node_time import node_seconds
from egg_dispatch.cost.signature import node_signature
from egg_dispatch.cost.sizes import (
    DEFAULT_DYNAMIC_SIZE,
    AssumeError,
    Assumption,
    SizePlan,
    cost_at_sizes,
    parse_assume,
    size_plan,
    specialize,
)
from egg_dispatch.cost.table import (
    LOAD_BOUNDARY_OPS,
    CostTable,
    NodeCost,
    gated_charges,
    gated_paid,
    once_charges,
    once_seconds,
    pair_charges,
    violated,
    violated_conflicts,
)

__all__ = [
    "DEFAULT_DYNAMIC_SIZE",
    "LOAD_BOUNDARY_OPS",
    "AssumeError",
    "Assumption",
    "CacheError",
    "CostTable",
    "Facts",
    "MeasuredTimes",
    "NodeCost",
    "SizePlan",
    "TensorInfo",
    "call_overhead_seconds",
    "conflicts_of",
    "consumer_pairs",
    "contraction_tiled",
    "copied_slice",
    "cost_at_sizes",
    "cost_table",
    "default_cache_path",
    "default_lambda",
    "dispatch_overhead_seconds",
    "exclusive_nodes",
    "gated_charges",
    "gated_paid",
    "is_reshape",
    "is_view_dispatch",
    "measurement_context",
    "node_seconds",
    "node_signature",
    "once_charges",
    "once_seconds",
    "output_classes",
    "pair_charges",
    "parse_assume",
    "size_plan",
    "slice_copy_seconds",
    "specialize",
    "throttles",
    "transient_seconds",
    "violated",
    "violated_conflicts",
]
