"""Time of the computation an e-node stands for (``node_seconds``), as the cost table and the plan graph price it.

A measured time of the node's signature (``cost.signature``), when the measurement cache has one,
replaces the model's; else the node is priced by the op formulas (``cost.op_time``) on its classes'
tensor facts, and by what it runs next to in its dispatch: a pack of a source computed in the same
dispatch pays the measured ``producer_pack`` extra, an operand packed inside a contraction's dispatch
its in-dispatch extra (on the contraction node), an unset of a value computed in its dispatch the
measured ``unpack_in_dispatch``. One function for both readers, so the extractors optimize the prices
the report shows.
"""

from __future__ import annotations

from egg_dispatch.cost.classes import (
    TIMELESS,
    contract_twin,
    fused_pack,
    is_boundary,
    is_reshape,
    list_classes,
    producer_in_dispatch,
)
from egg_dispatch.cost.contraction import contraction_mnk, generic_contraction_kind, has_reduction
from egg_dispatch.cost.facts import Facts, TensorInfo
from egg_dispatch.cost.measured import MeasuredTimes
from egg_dispatch.cost.op_time import attention_kind, body_op_count, in_dispatch_pack_extra, op_seconds
from egg_dispatch.cost.signature import node_signature
from egg_dispatch.egraph.data import EGraphData
from egg_dispatch.egraph.imported import ImportedProgram
from egg_dispatch.target.profile import Target

__all__ = ["node_seconds"]


def node_seconds(
    g: EGraphData,
    c: str,
    op: str,
    kids: tuple[str, ...],
    facts: Facts,
    imported: ImportedProgram,
    target: Target,
    measured: MeasuredTimes | None = None,
) -> float:
    """Time of the computation a node stands for (0 for views, boundaries and placements); shared by
    the cost table and the plan graph so both price a node the same way. A measured time of its
    signature, when ``measured`` has one, replaces the model's."""
    if measured is not None and len(measured):
        seconds = measured.seconds(node_signature(g, c, op, kids, facts, imported))
        if seconds is not None:
            return seconds
    return _model_seconds(g, c, op, kids, facts, imported, target)


def _model_seconds(
    g: EGraphData, c: str, op: str, kids: tuple[str, ...], facts: Facts, imported: ImportedProgram, target: Target
) -> float:
    out = facts.info(c)
    if op in ("SetEncoding", "Pack"):
        return _pack_seconds(g, c, kids, facts, imported, target, out)
    if op in ("UnsetEncoding", "Unpack"):
        return _unpack_seconds(g, kids, facts, target, out)
    if op in ("Contract", "Mmt4d"):
        return _contraction_seconds(g, c, op, kids, facts, target, out)
    if op in ("Generic", "Op"):
        return _generic_seconds(g, c, op, kids, facts, imported, target, out)
    if op == "Fill":
        return op_seconds("fill", [], out, target)
    if op == "InsertSlice":
        return op_seconds("copy", [facts.info(kids[0])], out, target)
    if op in TIMELESS:
        return 0.0
    return op_seconds("copy", [facts.info(k) for k in kids if g.is_term_class(k)], out, target)


def _pack_seconds(
    g: EGraphData,
    c: str,
    kids: tuple[str, ...],
    facts: Facts,
    imported: ImportedProgram,
    target: Target,
    out: TensorInfo,
) -> float:
    if any(n.op == "Empty" for n in g.choices(kids[0])):
        return 0.0  # an encoded tensor.empty: an allocation, no data to pack
    src = facts.info(kids[0], packed=False)
    seconds = op_seconds("pack", [src], out, target, operand=facts.operand_index(c))
    k = target.kernels
    if k is not None and (form := producer_in_dispatch(g, kids[0], imported)) is not None:
        # fused: more than the two apart (an elementwise producer), less (a contraction's result)
        seconds += k.producer_pack_seconds(src.element, form == "reshape", src.numel, form == "contraction")
    return max(seconds, 0.0)


def _unpack_seconds(g: EGraphData, kids: tuple[str, ...], facts: Facts, target: Target, out: TensorInfo) -> float:
    src = facts.info(kids[0])
    plain = TensorInfo(out.shape, out.element)
    if target.kernels is not None and not is_boundary(g, kids[0]):
        return target.kernels.unpack_in_dispatch.seconds(plain.numel, src.stored_bytes + plain.logical_bytes)
    return op_seconds("unpack", [src], plain, target, operand=facts.operand_index(kids[0]))


def _contraction_seconds(
    g: EGraphData, c: str, op: str, kids: tuple[str, ...], facts: Facts, target: Target, out: TensorInfo
) -> float:
    kind_class, operands_classes = (kids[0], kids[1:]) if op == "Contract" else contract_twin(g, c, kids)
    kind = "contract:" + str(g.leaf_value(kind_class))
    operands = [facts.info(k) for k in operands_classes]
    seconds = op_seconds(kind, operands, out, target)
    if target.kernels is not None:  # operands packed in this dispatch cost more than standalone packs
        for operand_class in operands_classes[:2]:
            fused = fused_pack(g, operand_class, facts)
            if fused is not None:
                seconds += in_dispatch_pack_extra(target, *fused, contraction_mnk(kind, operands))
    return max(seconds, 0.0)


def _generic_seconds(
    g: EGraphData,
    c: str,
    op: str,
    kids: tuple[str, ...],
    facts: Facts,
    imported: ImportedProgram,
    target: Target,
    out: TensorInfo,
) -> float:
    if op == "Op" and is_reshape(g, imported, c):
        return 0.0
    proto = imported.ops.get(str(g.leaf_value(kids[0])))
    inputs = [facts.info(k) for k in list_classes(g, kids[1])]
    if op == "Generic":
        inputs += [facts.info(k) for k in list_classes(g, kids[2])]
    name = getattr(proto, "name", "")
    kind = attention_kind(proto) if name == "iree_linalg_ext.attention" else "generic"
    if name == "linalg.softmax" and target.kernels is not None and target.kernels.softmax.measured:
        kind = "softmax"  # else priced as the generic it decomposes to, as before softmax was measured
    contraction = generic_contraction_kind(proto) if op == "Generic" else None
    if contraction is not None and len(inputs) == 3:  # lhs, rhs, init
        return op_seconds("contract:" + contraction, inputs, out, target)
    weights = target.kernels.op_weights if target.kernels else None
    return op_seconds(kind, inputs, out, target, body_op_count(proto, weights), has_reduction(proto))
