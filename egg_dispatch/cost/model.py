"""The cost model's entry: the cost table of an e-graph for a target, and the weight λ of memory in it.

objective = run time + λ · (persistent + transient bytes). ``cost_table`` gives every extractable node
its ``NodeCost``: a constant its bytes as persistent memory (IREE's DispatchCreation path keeps the
original constant next to any encoded copy, #22371); a global (``ConstEval``) no run time, its stored
bytes as persistent memory, and what it computes as load-time work (reported, not optimized); a
dispatch its launch and result buffer (``cost.charges``), that buffer as transient memory; a call its
overheads; any other node its time (``cost.node_time``). The charges that depend on several chosen
nodes (``cost.charges``) and the plans IREE's codegen rejects (``cost.conflicts``) go into the table
beside them. A plan's run time is then Σ dispatches (launch + Σ of their ops' times): the additive
roofline, an upper bound of the per-dispatch max(flops/peak, bytes/bw) form, which decomposes over
e-nodes so the exact extractor optimizes what the report shows; the max() form is reported next to it
(``plan/graph.py``).
"""

from __future__ import annotations

from egg_dispatch.cost.charges import (
    call_overhead_seconds,
    consumer_pairs,
    copy_dispatch_seconds,
    dispatch_overhead_seconds,
    exclusive_nodes,
    slice_copy_seconds,
    throttle_charges,
    transient_dispatches,
    transient_seconds,
)
from egg_dispatch.cost.classes import contraction_node_mnk, copied_slice, is_view_dispatch, list_classes
from egg_dispatch.cost.conflicts import codegen_conflicts
from egg_dispatch.cost.facts import Facts, TensorInfo
from egg_dispatch.cost.measured import MeasuredTimes
from egg_dispatch.cost.node_time import node_seconds
from egg_dispatch.cost.table import CostTable, NodeCost
from egg_dispatch.egraph.data import EGraphData
from egg_dispatch.egraph.imported import ImportedProgram
from egg_dispatch.target.profile import Target

__all__ = ["LAMBDA_PACK_FRACTION", "conflicts_of", "cost_table", "default_lambda"]


LAMBDA_PACK_FRACTION = 0.01
"""The default λ: a byte of footprint weighs this fraction of the time the target takes to pack it once.

λ converts bytes of memory into seconds per call. Any λ at or above a pack's time per byte makes the
extractor re-pack a constant weight inside its matmul dispatch on every call to save the global
holding it packed: the old default (1e-10 s/B, 1 KiB = 0.1 µs) did exactly that on an MLP, and the
plan measured 2x slower than IREE's. At 1% of the pack's cost a plan must save a hundred calls' worth
of packing per byte before memory decides: memory breaks ties and vetoes plans that hold many packed
copies for nothing, it never buys kilobytes with per-call work. ``default_lambda`` reads the pack
rate from the calibrated profile (the fitted pack of a 1 MiB f32 tensor), else the profile's
bandwidth (read + write)."""


def default_lambda(target: Target) -> float:
    """λ for ``target`` when the user gives none (seconds per byte; see ``LAMBDA_PACK_FRACTION``)."""
    k = target.kernels
    n = 1 << 18  # 1 MiB of f32: big enough that the pack's fixed cost does not count
    if k is not None and (k.pack.rate_g > 0 or k.pack.gbps > 0 or k.pack.points):
        per_byte = k.pack.seconds(n, 8 * n) / (4 * n)
    else:
        per_byte = 2.0 / (target.memory_bandwidth_gbps * 1e9)
    return LAMBDA_PACK_FRACTION * per_byte


def cost_table(
    g: EGraphData, imported: ImportedProgram, target: Target, measured: MeasuredTimes | None = None
) -> CostTable:
    """``NodeCost`` of every extractable node in the root's cone (see ``table.py``); a node whose
    signature ``measured`` holds is priced by that measurement instead of the formulas."""
    facts = Facts(g)
    step = transient_seconds(target)
    once = ((step, transient_dispatches(g, imported)),) if step > 0 else ()
    table = CostTable(
        exclusive=exclusive_nodes(g),
        conflicts=_conflicts(g, target, facts, imported),
        once=once,
        pairs=consumer_pairs(g, imported, target, facts),
    )
    for c in g.classes:
        if not g.is_term_class(c):
            continue
        out = facts.info(c)
        for node in g.choices(c):
            table[node.id] = _node_cost(c, node.op, node.children, out, facts, imported, target, g, measured)
    run = {n: cost.run_seconds for n, cost in table.items()}
    table.gated, table.gate = throttle_charges(g, imported, target, facts, run)
    return table


def conflicts_of(g: EGraphData, target: Target, imported: ImportedProgram) -> tuple[tuple[str, ...], ...]:
    """``cost.conflicts`` of the e-graph for the target (a '?' dim as unbounded)."""
    return _conflicts(g, target, Facts(g), imported)


def _conflicts(g: EGraphData, target: Target, facts: Facts, imported: ImportedProgram) -> tuple[tuple[str, ...], ...]:
    if not target.encoding_resolver:
        return ()  # nothing is ever packed
    return codegen_conflicts(
        g,
        target.max_stack_allocation_size,
        facts.info,
        target.plain_result_pack_bytes,
        lambda node: contraction_node_mnk(g, node, facts, imported),
    )


def _node_cost(
    c: str,
    op: str,
    kids: tuple[str, ...],
    out: TensorInfo,
    facts: Facts,
    imported: ImportedProgram,
    target: Target,
    g: EGraphData,
    measured: MeasuredTimes | None = None,
) -> NodeCost:
    if op == "Const":
        return NodeCost(memory_bytes=out.logical_bytes)
    if op == "Dispatch" and is_view_dispatch(g, imported, kids[0]):
        # a reshape between dispatches is metadata (flow.tensor.reshape), not a dispatch; a slice under
        # it is a copy dispatch of its own (copied_slice)
        sliced = copied_slice(g, imported, kids[0])
        if sliced is None:
            return NodeCost()
        seconds = copy_dispatch_seconds(g, sliced, facts, target)
        return NodeCost(run_seconds=seconds, memory_bytes=facts.info(sliced).stored_bytes)
    if op == "Dispatch":
        seconds = dispatch_overhead_seconds(target, out.stored_bytes) + slice_copy_seconds(g, kids[0], facts, target)
        return NodeCost(run_seconds=seconds, memory_bytes=out.stored_bytes)
    if op == "Results":
        results = list_classes(g, kids[0])
        seconds = call_overhead_seconds(target, len(results))
        slices = [s for s in dict.fromkeys(copied_slice(g, imported, r) for r in results) if s is not None]
        seconds += sum(copy_dispatch_seconds(g, s, facts, target) for s in slices)
        return NodeCost(run_seconds=seconds, memory_bytes=sum(facts.info(s).stored_bytes for s in slices))
    if op == "ConstEval":
        return NodeCost(memory_bytes=out.stored_bytes)
    seconds = node_seconds(g, c, op, kids, facts, imported, target, measured)
    return NodeCost(run_seconds=seconds, load_seconds=seconds)
