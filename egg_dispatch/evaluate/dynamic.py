"""Dynamic shapes at run time: every ``?`` of an op's result type gets the size this call has.

The IR keeps ``tensor<?x64xf32>``; an op that makes such a value says its sizes (``tensor.empty(%d)``,
a ``{%d}`` list, an ``extract_slice``'s sizes) or inherits them from its operands (a linalg op from
its init, an elementwise op from its input, a collapse from the groups it merges). ``specialize``
gives the handler an op whose result types are those concrete types, so every handler computes on
static shapes as before; a static dim of the type that the sizes contradict is an error.

It also holds the handlers of the ops that only carry sizes: ``hal.buffer_view.dim`` (an argument's
size), ``dispatch.workload.ordinal``, ``flow.tensor.tie_shape`` (its sizes must be the tensor's) and
``util.assume.int``, whose assumptions the input must satisfy: a size that contradicts one is a
``SizeError`` naming the dimension (``arg0.d1``, from ``mlir.shapes``) and the value.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, cast, overload

import numpy as np

from egg_dispatch.evaluate.registry import Frame, handles
from egg_dispatch.evaluate.values import EvaluationError, PackedTensor
from egg_dispatch.mlir.ir import (
    ArrayAttr,
    Attr,
    DictAttr,
    DispatchTensorType,
    IntAttr,
    Operation,
    TensorType,
    Type,
    Value,
)
from egg_dispatch.mlir.ops import (
    DYNAMIC,
    attr,
    base_operands,
    dim_group,
    dim_groups,
    int_list,
    outs,
    static_slice,
    tensor_type,
)
from egg_dispatch.mlir.shapes import function_shapes

if TYPE_CHECKING:
    from numpy.typing import ArrayLike

    from egg_dispatch.evaluate.core import Interpreter

__all__ = ["SizeError", "concrete_type", "dim_name", "is_dynamic", "runtime_shape", "shape_fits", "specialize"]


class SizeError(EvaluationError):
    """A run-time size the program's assumptions (``util.assume.int``, ``--assume``) do not allow."""


def is_dynamic(t: Type) -> bool:
    if isinstance(t, DispatchTensorType):
        t = t.tensor
    return isinstance(t, TensorType) and not t.is_static


def shape_fits(shape: tuple[int, ...], t: TensorType) -> bool:
    """Whether an array of ``shape`` is a value of ``t`` (any size where ``t`` has ``?``)."""
    return len(shape) == t.rank and all(s is None or s == n for s, n in zip(t.shape, shape, strict=True))


def runtime_shape(x: object) -> tuple[int, ...]:
    """The logical shape of a run-time tensor value."""
    if isinstance(x, PackedTensor):
        return tuple(x.shape)
    return tuple(np.shape(cast("ArrayLike", x)))  # an array or a scalar


def _ints(it: Interpreter, frame: Frame, values: list[Value]) -> list[int]:
    return [int(it.array(v, frame)) for v in values]


def _with_shape(t: TensorType, shape: list[int] | tuple[int, ...], what: str) -> TensorType:
    if len(shape) != t.rank:
        raise EvaluationError(f"{what}: {len(shape)} sizes for a rank-{t.rank} result")
    for d, (s, n) in enumerate(zip(t.shape, shape, strict=True)):
        if s is not None and s != n:
            raise EvaluationError(f"{what}: dim {d} is {n} at run time, the type says {s}")
        if n < 0:
            raise EvaluationError(f"{what}: dim {d} has a negative size {n}")
    return TensorType(tuple(int(n) for n in shape), t.element, t.encoding)


def _tensor(t: Type) -> TensorType:
    assert isinstance(t, TensorType), f"not a tensor type: {t}"
    return t


def _fill(t: Type, dims: list[int]) -> list[int]:
    """The (tensor) type's static sizes, ``dims`` in order for its ``?``s."""
    t = _tensor(t)
    it = iter(dims)
    try:
        return [next(it) if s is None else s for s in t.shape]
    except StopIteration:
        raise EvaluationError(f"{t.num_dynamic} dynamic sizes needed, {len(dims)} given") from None


def _slice_sizes(it: Interpreter, op: Operation, frame: Frame, first: int, rank: int) -> list[int]:
    dyn = iter(base_operands(op)[first:])
    offs, sizes, _strides = static_slice(op)
    for _ in (o for o in offs if o == DYNAMIC):
        next(dyn)
    out = [int(it.array(next(dyn), frame)) if s == DYNAMIC else s for s in sizes]
    i = 0
    while len(out) > rank and i < len(out):  # rank-reducing: unit dims dropped
        if out[i] == 1:
            out.pop(i)
        else:
            i += 1
    return out


def _shape_of(frame: Frame, v: Value) -> tuple[int, ...]:
    return runtime_shape(frame.get(v))


def _result_shapes(it: Interpreter, op: Operation, frame: Frame) -> list[list[int] | None]:
    """The run-time sizes of each result (None for a result that is not a dynamic tensor)."""
    n = op.name
    res = op.results
    types = [r.type.tensor if isinstance(r.type, DispatchTensorType) else r.type for r in res]
    if n == "tensor.empty":
        return [_fill(types[0], _ints(it, frame, op.operands))]
    if n in ("hal.tensor.import", "flow.tensor.tie_shape"):
        return [_fill(types[0], _ints(it, frame, dim_group(op, 0)))]
    if n in ("flow.tensor.encode", "flow.tensor.reshape") or (n == "iree_encoding.unset_encoding" and dim_group(op, 1)):
        return [_fill(types[0], _ints(it, frame, dim_group(op, 1)))]
    if n in ("flow.dispatch.region",):
        groups = dim_groups(op) or [[] for _ in res]
        return [_fill(t, _ints(it, frame, g)) for t, g in zip(types, groups, strict=True)]
    if n == "flow.dispatch.workgroups":
        groups = dim_groups(op)
        mine = groups[len(groups) - len(res) :] if groups else [[] for _ in res]
        return [_fill(t, _ints(it, frame, g)) for t, g in zip(types, mine, strict=True)]
    if n == "tensor.expand_shape":
        dyn = iter(op.operands[1:])
        static = int_list(op.attributes.get("static_output_shape"))
        return [[int(it.array(next(dyn), frame)) if s == DYNAMIC else s for s in static]]
    if n == "tensor.reshape":  # its sizes are the elements of its shape operand
        return [[int(x) for x in it.array(op.operands[1], frame).reshape(-1)]]
    if n == "tensor.collapse_shape":
        src = _shape_of(frame, op.operands[0])
        merged = [int_list(g) for g in attr(op, "reassociation", ArrayAttr).items]
        return [[int(np.prod([src[i] for i in g], dtype=np.int64)) for g in merged]]
    if n == "tensor.extract_slice":
        return [_slice_sizes(it, op, frame, 1, _tensor(types[0]).rank)]
    if n == "iree_tensor_ext.dispatch.tensor.load":
        return [_slice_sizes(it, op, frame, 1, _tensor(types[0]).rank)]
    if n == "tensor.insert_slice":
        return [list(_shape_of(frame, op.operands[1]))]
    if n == "tensor.pad":
        src = _shape_of(frame, op.operands[0])
        dyn = iter(op.operands[1:])
        low = [int(it.array(next(dyn), frame)) if s == DYNAMIC else s for s in int_list(op.attributes["static_low"])]
        high = [int(it.array(next(dyn), frame)) if s == DYNAMIC else s for s in int_list(op.attributes["static_high"])]
        return [[s + lo + hi for s, lo, hi in zip(src, low, high, strict=True)]]
    if n == "tensor.concat":
        dim = attr(op, "dim", IntAttr).value
        shapes = [_shape_of(frame, v) for v in op.operands]
        first = list(shapes[0])
        first[dim] = sum(s[dim] for s in shapes)
        return [first]
    if n.startswith(("linalg.", "iree_linalg_ext.")) and outs(op) and len(outs(op)) == len(res):
        return [list(_shape_of(frame, v)) for v in outs(op)]
    if n == "linalg.softmax":
        return [list(_shape_of(frame, op.operands[1]))]
    tensors = [v for v in op.operands if isinstance(v.type, TensorType)]
    if tensors:  # the identity-like and elementwise ops: a result of the first tensor operand's shape
        like = list(_shape_of(frame, tensors[0]))
        return [like if isinstance(t, TensorType) and len(like) == t.rank else None for t in types]
    raise EvaluationError("cannot tell the run-time sizes of its dynamic result")


def specialize(it: Interpreter, op: Operation, frame: Frame) -> Operation:
    """``op`` itself, or (a result type has ``?``) a copy whose result types have this call's sizes."""
    if not any(is_dynamic(r.type) for r in op.results):
        return op
    shapes = _result_shapes(it, op, frame)
    proxy = Operation(op.name, op.operands, [], op.attributes, op.regions, op.loc, op.opaque_text)
    results = []
    for r, shape in zip(op.results, shapes, strict=True):
        t = r.type
        if is_dynamic(t) and shape is not None:
            inner = t.tensor if isinstance(t, DispatchTensorType) else t
            concrete = _with_shape(_tensor(inner), shape, f"result #{r.index}")
            t = DispatchTensorType(t.access, concrete) if isinstance(t, DispatchTensorType) else concrete
        results.append(Value(r.name, t, proxy, r.index))
    proxy.results = results
    return proxy


@overload
def concrete_type(t: TensorType, x: object) -> TensorType: ...
@overload
def concrete_type(t: Type, x: object) -> Type: ...
def concrete_type(t: Type, x: object) -> Type:
    """``t`` with the sizes of the run-time value ``x`` (for operand types, e.g. dispatch bindings)."""
    if not is_dynamic(t):
        return t
    inner = t.tensor if isinstance(t, DispatchTensorType) else t
    c = _with_shape(_tensor(inner), runtime_shape(x), "operand")
    return DispatchTensorType(t.access, c) if isinstance(t, DispatchTensorType) else c


# ------------------------------------------------------------------------------- size-only ops
@handles("hal.buffer_view.dim")
def _buffer_view_dim(it: Interpreter, op: Operation, frame: Frame) -> list[object]:
    view = frame.get(op.operands[0])
    shape = runtime_shape(view)
    d = attr(op, "index", IntAttr).value
    if not 0 <= d < len(shape):
        raise EvaluationError(f"dim {d} of a rank-{len(shape)} buffer view")
    return [np.asarray(shape[d], np.int64)]


@handles("iree_tensor_ext.dispatch.workload.ordinal")
def _ordinal(it: Interpreter, op: Operation, frame: Frame) -> list[object]:
    return [frame.get(op.operands[0])]


@handles("flow.tensor.tie_shape")
def _tie_shape(it: Interpreter, op: Operation, frame: Frame) -> list[object]:
    x = frame.get(op.operands[0])
    shape = runtime_shape(x)
    want = _fill(op.operands[0].type, _ints(it, frame, dim_group(op, 0)))
    if list(shape) != want:
        raise EvaluationError(f"the tensor has shape {list(shape)}, its tied sizes say {want}")
    return [x]


def dim_name(it: Interpreter, v: Value) -> str:
    """What the size ``v`` is, as reports name it (``arg0.d1``, ``4*arg0.d1``), or ``%v``."""
    cache = it.__dict__.setdefault("_function_shapes", {})
    for f in it.module.functions():
        if f not in cache:
            cache[f] = function_shapes(f)
        shapes = cache[f]
        if v in shapes.scalars:
            d = shapes.scalars[v]
            return str(d) if shapes.is_symbolic(d) else f"%{v.name}"
    return f"%{v.name}"


@handles("flow.tensor.reshape")
def _flow_reshape(it: Interpreter, op: Operation, frame: Frame) -> list[object]:
    """A row-major reshape between dispatches (its result sizes from its ``{%d}`` list)."""
    x = frame.get(op.operands[0])
    if isinstance(x, PackedTensor):
        raise EvaluationError("its source is a packed (encoded) tensor, which IREE cannot reshape")
    shape = tensor_type(op.results[0]).static_shape  # specialized: this call's sizes
    arr = np.asarray(x)
    if int(np.prod(shape, dtype=np.int64)) != arr.size:
        raise EvaluationError(f"cannot reshape {arr.size} elements into {list(shape)}")
    return [arr.reshape(shape)]


@handles("util.assume.int")
def _assume_int(it: Interpreter, op: Operation, frame: Frame) -> list[object]:
    out: list[object] = []
    for v, per_operand in zip(op.operands, attr(op, "assumptions", ArrayAttr).items, strict=True):
        x = it.array(v, frame)
        value = int(x)
        rows = _rows(per_operand)
        broken = [why for row in rows if (why := _violated(row, value))]
        if len(broken) == len(rows):
            raise SizeError(
                f"{dim_name(it, v)} = {value} contradicts util.assume.int ({'; '.join(broken)})", op.loc, op.name
            )
        out.append(x)
    return out


def _rows(a: Attr) -> list[DictAttr]:
    """One operand's assumptions: a DictAttr, or an ArrayAttr of them (one per call site)."""
    if isinstance(a, DictAttr):
        return [a]
    assert isinstance(a, ArrayAttr), a
    return cast("list[DictAttr]", list(a.items))  # rows of umin/umax/udiv (mlir.ops' table)


def _violated(row: DictAttr, value: int) -> str | None:
    get = {k: getattr(a, "value", None) for k, a in row.items}
    umin, umax, udiv = get.get("umin"), get.get("umax"), get.get("udiv")
    if umin is not None and value < umin:
        return f"umin = {umin}"
    if umax is not None and value > umax:
        return f"umax = {umax}"
    if udiv and value % udiv:
        return f"udiv = {udiv}: not a multiple"
    return None
