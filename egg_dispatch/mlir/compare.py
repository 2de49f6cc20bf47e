"""Structural equality of IR, independent of SSA names and of how the text spelled things."""

from __future__ import annotations

from egg_dispatch.mlir.ir import Attr, DenseAttr, Module, Operation, Region, Value

__all__ = ["ir_key", "modules_equal"]


def _attr_key(a: Attr) -> object:
    if isinstance(a, DenseAttr):
        return ("dense", a.type, a.array.shape, a.array.tobytes())
    return a


def _region_key(r: Region, numbering: dict[Value, int]) -> tuple:
    blocks = []
    for b in r.blocks:
        for v in b.args:
            numbering[v] = len(numbering)
        args = tuple((numbering[v], v.type) for v in b.args)
        blocks.append((args, tuple(_op_key(op, numbering) for op in b.ops)))
    return tuple(blocks)


def _op_key(op: Operation, numbering: dict[Value, int]) -> tuple:
    operands = tuple(numbering.get(v, ("free", v.name)) for v in op.operands)
    regions = tuple(_region_key(r, numbering) for r in op.regions)
    for v in op.results:
        numbering[v] = len(numbering)
    attrs = tuple(sorted((k, _attr_key(a)) for k, a in op.attributes.items()))
    results = tuple(v.type for v in op.results)
    opaque = " ".join(op.opaque_text.split()) if op.opaque_text is not None else None
    return (op.name, operands, results, attrs, regions, opaque)


def ir_key(module: Module) -> tuple:
    """A hashable value that is equal for two modules exactly when their IR is the same."""
    numbering: dict[Value, int] = {}
    ops = tuple(_op_key(op, numbering) for op in module.ops)
    return (module.name, tuple(sorted(module.attributes.items())), ops)


def modules_equal(a: Module, b: Module) -> bool:
    return ir_key(a) == ir_key(b)
