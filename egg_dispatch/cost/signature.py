"""The node signature: what a node computes, in terms that do not depend on the program it is in.

It is the key of the measurement cache (``cost.measured``): two nodes with one signature are the same
kernel, so a time measured in one program prices the other. It holds the op, its contraction kind or
its body printed without SSA names, its operands' and result's shapes, element types and layouts, and
what changes its cost inside a dispatch (operands packed there, a decode of a value computed there).
Nodes that take no time have none.
"""

from __future__ import annotations

import re

from egg_dispatch.cost.classes import TIMELESS, contract_twin, fused_pack, is_boundary, is_reshape, list_classes
from egg_dispatch.cost.facts import Facts, TensorInfo
from egg_dispatch.egraph.data import EGraphData
from egg_dispatch.egraph.imported import ImportedProgram
from egg_dispatch.mlir.ir import Operation

__all__ = ["node_signature"]


_SSA = re.compile(r"%[A-Za-z0-9_$.#-]+|\^[A-Za-z0-9_$.-]+")


def _tensor_key(t: TensorInfo) -> str:
    dims = "x".join(map(str, t.shape)) or "scalar"
    if t.layout is None:
        return f"{dims}x{t.element}"
    lay = t.layout
    return f"{dims}x{t.element}@{list(lay.inner_dims_pos)}:{list(lay.inner_tiles)}:{list(lay.outer_dims_perm)}"


def _op_key(proto: Operation | None) -> str:
    """An imported op, printed without its SSA names (the same computation in any program)."""
    if proto is None:
        return "?"
    from egg_dispatch.mlir.printer import Printer

    try:
        text = Printer(use_aliases=False).op(proto, "")
    except Exception:
        return f"{getattr(proto, 'name', '?')}#unprintable"
    return " ".join(_SSA.sub("%", text).split())


def node_signature(
    g: EGraphData, c: str, op: str, kids: tuple[str, ...], facts: Facts, imported: ImportedProgram
) -> str | None:
    """What a node computes, in terms that do not depend on the program it is in: the op, its kind or
    printed body, its operands' and result's shapes, element types and layouts, and what shapes its
    cost inside a dispatch (operands packed in the dispatch, a decode of a dispatch's own result).
    The key of the measurement cache (``cost.measured``); None for nodes that take no time."""
    if op in TIMELESS:
        return None
    info = facts.info
    if op in ("SetEncoding", "Pack") and any(n.op == "Empty" for n in g.choices(kids[0])):
        return None
    parts = [op]
    if op in ("Contract", "Mmt4d"):
        kind_class, operand_classes = (kids[0], kids[1:]) if op == "Contract" else contract_twin(g, c, kids)
        parts.append(str(g.leaf_value(kind_class)))
        for k in operand_classes:
            packed_here = k in operand_classes[:2] and fused_pack(g, k, facts) is not None
            parts.append(_tensor_key(info(k)) + ("+pack-in-dispatch" if packed_here else ""))
    elif op in ("SetEncoding", "Pack"):
        parts.append(_tensor_key(info(kids[0], packed=False)))
    elif op in ("UnsetEncoding", "Unpack"):
        parts.append(_tensor_key(info(kids[0])) + ("" if is_boundary(g, kids[0]) else "+in-dispatch"))
    elif op in ("Generic", "Op"):
        if op == "Op" and is_reshape(g, imported, c):
            return None
        parts.append(_op_key(imported.ops.get(str(g.leaf_value(kids[0])))))
        inputs = list_classes(g, kids[1]) + (list_classes(g, kids[2]) if op == "Generic" else [])
        parts += [_tensor_key(info(k)) for k in inputs]
    else:
        parts += [_tensor_key(info(k)) for k in kids if g.is_term_class(k)]
    parts.append("-> " + _tensor_key(info(c)))
    return " | ".join(parts)
