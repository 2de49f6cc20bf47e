"""``tensor.reshape`` between dispatches as the ``flow.tensor.reshape`` IREE makes of it.

torch-mlir lowers a ``view`` on a dynamic dim to ``tensor.reshape %x(%shape)`` with the shape built by
``tensor.from_elements`` of ``i64`` sizes. IREE's DispatchCreation leaves it at the top level of the
function (no dispatch takes it in) and, after SetEncoding, converts it
(``ConvertTensorDialectReshapeOpPattern``, ``Dialect/Flow/Conversion/TensorToFlow/Patterns.cpp``): every
``tensor.reshape`` not inside a ``flow.dispatch.workgroups`` becomes ``flow.tensor.reshape`` with the
source's dynamic sizes (``tensor.dim``) and, for each dynamic result dim ``i``, element ``i`` of the shape
(``tensor.extract``, ``arith.index_cast`` to ``index`` when it is an integer; its canonicalization
reads the element of a ``tensor.from_elements`` directly, as done here).

``flow_reshapes`` does the same at the top level of each function of a module, so the rest of the tool sees
the reshape it already models (a view between dispatches, sized by the analysis: the element of the shape
is a size expression of the arguments), and the plan emitted in IREE's form is IREE's own spelling. A
``tensor.from_elements`` left unused is dropped.
"""

from __future__ import annotations

from egg_dispatch.mlir.ir import IntAttr, Module, Operation, ScalarType, TensorType, Type, Value
from egg_dispatch.mlir.ops import set_dims

__all__ = ["flow_reshapes"]

INDEX = ScalarType("index")


def _op(name: str, operands: list[Value], typ: Type, attrs: dict | None, at: Operation) -> Operation:
    """``name`` is ``op.name#suffix``: a one-result op with ``at``'s location, its result named after
    ``at``'s, suffixed."""
    op_name, _, suffix = name.partition("#")
    op = Operation(op_name, operands, [], dict(attrs or {}))
    op.results = [Value(f"{at.result.name}_{suffix}", typ, op, 0)]
    op.loc = at.loc
    return op


def _converted(op: Operation) -> list[Operation] | None:
    """The ops that replace ``op`` (its result Value moved to the new ``flow.tensor.reshape``), or None."""
    src, shape = op.operands
    src_t, res_t, shape_t = src.type, op.result.type, shape.type
    if not (isinstance(src_t, TensorType) and isinstance(res_t, TensorType) and isinstance(shape_t, TensorType)):
        return None
    out: list[Operation] = []
    consts: dict[int, Value] = {}

    def const(i: int) -> Value:
        if i not in consts:
            out.append(_op(f"arith.constant#c{i}", [], INDEX, {"value": IntAttr(i, INDEX)}, op))
            consts[i] = out[-1].result
        return consts[i]

    src_dims = []
    for i, s in enumerate(src_t.shape):
        if s is None:
            out.append(_op(f"tensor.dim#src{i}", [src, const(i)], INDEX, None, op))
            src_dims.append(out[-1].result)
    maker = shape.owner
    elements = maker.operands if isinstance(maker, Operation) and maker.name == "tensor.from_elements" else None
    res_dims = []
    for i, s in enumerate(res_t.shape):
        if s is not None:
            continue
        if elements is not None and len(elements) == res_t.rank:
            e = elements[i]
        else:
            out.append(_op(f"tensor.extract#e{i}", [shape, const(i)], shape_t.element, None, op))
            e = out[-1].result
        if e.type != INDEX:
            out.append(_op(f"arith.index_cast#d{i}", [e], INDEX, None, op))
            e = out[-1].result
        res_dims.append(e)
    attrs: dict = {}
    new = Operation("flow.tensor.reshape", [src, *set_dims(attrs, [src_dims, res_dims])], [], attrs)
    new.results = op.results
    op.result.owner = new
    new.loc = op.loc
    return [*out, new]


def flow_reshapes(module: Module) -> int:
    """Convert the top-level ``tensor.reshape`` ops of every function in place; returns how many."""
    done = 0
    for func in module.functions():
        if not func.regions:
            continue
        block = func.regions[0].entry
        ops: list[Operation] = []
        here = 0
        for op in block.ops:
            new = _converted(op) if op.name == "tensor.reshape" and op.opaque_text is None else None
            ops.extend([op] if new is None else new)
            here += new is not None
        done += here
        if not here:
            continue
        block.ops = ops
        used = {v for o in func.walk() if o is not func for v in o.operands}
        block.ops = [o for o in ops if o.name != "tensor.from_elements" or o.result in used]
    return done
