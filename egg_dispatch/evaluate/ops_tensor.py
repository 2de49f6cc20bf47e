"""Handlers for arith/math, tensor, encodings, flow, hal, util and the dispatch-binding ops."""

from __future__ import annotations

import operator
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from egg_dispatch.evaluate.dynamic import concrete_type, runtime_shape
from egg_dispatch.evaluate.encoding import encode, logical, slice_packed, zeros
from egg_dispatch.evaluate.registry import Frame, handles
from egg_dispatch.evaluate.scalar import ELEMENTWISE, apply_elementwise
from egg_dispatch.evaluate.values import EvaluationError, PackedTensor, dtype_of, element_type, to_type
from egg_dispatch.mlir.affine import affine_value
from egg_dispatch.mlir.ir import (
    AffineMapAttr,
    BoolAttr,
    DenseAttr,
    FloatAttr,
    IntAttr,
    Operation,
    ParameterAttr,
    StrAttr,
    SymbolRefAttr,
    TensorType,
    Value,
)
from egg_dispatch.mlir.ops import (
    DYNAMIC,
    attr,
    base_operands,
    dim_group,
    result_bindings,
    static_slice,
    tensor_type,
    tied_operands,
    workgroups_arguments,
)

if TYPE_CHECKING:
    from egg_dispatch.evaluate.core import Interpreter

__all__: list[str] = []


@handles(*ELEMENTWISE)
def _elementwise(it: Interpreter, op: Operation, frame: Frame) -> list[object]:
    args = [it.array(v, frame) for v in op.operands]
    attrs = {k: a.value for k, a in op.attributes.items() if isinstance(a, StrAttr)}
    in_t = [element_type(v.type) for v in op.operands]
    return [apply_elementwise(op.name, args, in_t, element_type(op.result.type), attrs)]


@handles("arith.constant")
def _constant(it: Interpreter, op: Operation, frame: Frame) -> list[object]:
    value = op.attributes["value"]
    t = op.result.type
    if isinstance(value, DenseAttr):
        return [to_type(value.array, t)]
    if isinstance(value, IntAttr | FloatAttr | BoolAttr):
        return [to_type(value.value, t)]
    raise EvaluationError(f"unsupported constant value {value!r}")


# ------------------------------------------------------------------------------------- tensor


def _resolved_slice(op: Operation, frame: Frame, it: Interpreter, first_dynamic: int) -> tuple[list[int], ...]:
    """(offsets, sizes, strides) with SSA entries read from the operands after ``first_dynamic``."""
    dyn = iter(base_operands(op)[first_dynamic:])
    out: list[list[int]] = []
    for static in static_slice(op):
        vals = []
        for s in static:
            vals.append(int(it.array(next(dyn), frame)) if s == DYNAMIC else s)
        out.append(vals)
    return out[0], out[1], out[2]


def _in_bounds(offsets: list[int], sizes: list[int], strides: list[int], shape: tuple[int, ...]) -> None:
    """A slice's entries against the run's sizes (the reader checks static ones; a '?' dim, or a dynamic
    entry, only has its value now): IREE's slice is undefined out of bounds, NumPy's would clip."""
    for d, (o, s, st, dim) in enumerate(zip(offsets, sizes, strides, shape, strict=True)):
        if o < 0 or s < 0 or st < 1 or (s > 0 and o + (s - 1) * st >= dim):
            raise EvaluationError(
                f"slice out of bounds in dim {d}: offset {o}, size {s}, stride {st} on a dimension of {dim}"
            )


def _index(offsets: list[int], sizes: list[int], strides: list[int]) -> tuple[slice, ...]:
    return tuple(
        slice(o, o + (s - 1) * st + 1 if s else o, st) for o, s, st in zip(offsets, sizes, strides, strict=True)
    )


@handles("tensor.empty")
def _empty(it: Interpreter, op: Operation, frame: Frame) -> list[object]:
    return [zeros(tensor_type(op.result), it.target)]


@handles("tensor.extract_slice")
def _extract_slice(it: Interpreter, op: Operation, frame: Frame) -> list[object]:
    src = frame.get(op.operands[0])
    offs, sizes, strides = _resolved_slice(op, frame, it, 1)
    t = tensor_type(op.result)
    _in_bounds(offs, sizes, strides, runtime_shape(src))
    if isinstance(src, PackedTensor):
        return [slice_packed(src, offs, sizes, strides, t, it.target)]
    return [it.array(op.operands[0], frame)[_index(offs, sizes, strides)].reshape(t.static_shape)]


@handles("tensor.insert_slice")
def _insert_slice(it: Interpreter, op: Operation, frame: Frame) -> list[object]:
    src = it.array(op.operands[0], frame)
    dest = it.array(op.operands[1], frame).copy()
    offs, sizes, strides = _resolved_slice(op, frame, it, 2)
    _in_bounds(offs, sizes, strides, dest.shape)
    dest[_index(offs, sizes, strides)] = src.reshape(sizes)
    return [dest]


@handles("tensor.collapse_shape", "tensor.expand_shape")
def _reshape(it: Interpreter, op: Operation, frame: Frame) -> list[object]:
    return [it.array(op.operands[0], frame).reshape(tensor_type(op.result).static_shape)]


@handles("tensor.reshape")
def _shape_reshape(it: Interpreter, op: Operation, frame: Frame) -> list[object]:
    """``tensor.reshape %x(%shape)``: row-major, to the sizes ``%shape`` holds (checked against the type)."""
    arr = it.array(op.operands[0], frame)
    shape = [int(n) for n in it.array(op.operands[1], frame).reshape(-1)]
    declared = tensor_type(op.result).shape
    if len(shape) != len(declared) or any(d is not None and d != n for d, n in zip(declared, shape, strict=False)):
        raise EvaluationError(f"the shape {shape} is not a {tensor_type(op.result)}")
    if any(n < 0 for n in shape) or int(np.prod(shape, dtype=np.int64)) != arr.size:
        raise EvaluationError(f"cannot reshape {arr.size} elements into {shape}")
    return [arr.reshape(shape)]


@handles("tensor.from_elements")
def _from_elements(it: Interpreter, op: Operation, frame: Frame) -> list[object]:
    t = tensor_type(op.result)
    values = [it.array(v, frame) for v in op.operands]
    return [np.array([v.item() for v in values], dtype=dtype_of(t.element)).reshape(t.static_shape)]


@handles("tensor.extract", "flow.tensor.load")
def _extract(it: Interpreter, op: Operation, frame: Frame) -> list[object]:
    """``tensor.extract %x[%i..]``; ``flow.tensor.load %x[%i..] : T{%d..}`` (IREE's host read) is the same."""
    src = it.array(op.operands[0], frame)
    sizes = len(dim_group(op, 0)) if op.name == "flow.tensor.load" else 0  # its {%d..} after the indices
    indices = op.operands[1 : len(op.operands) - sizes]
    idx = [it.array(v, frame).astype(np.int64) for v in indices]
    for d, i in enumerate(idx):
        if np.any(i < 0) or np.any(i >= src.shape[d]):
            raise EvaluationError(f"index out of bounds in dim {d} (size {src.shape[d]})")
    return [np.asarray(src[tuple(idx)])]


@handles("tensor.dim")
def _dim(it: Interpreter, op: Operation, frame: Frame) -> list[object]:
    src = frame.get(op.operands[0])
    d = int(it.array(op.operands[1], frame))
    shape = src.shape if isinstance(src, PackedTensor | np.ndarray) else ()
    if not 0 <= d < len(shape):
        raise EvaluationError(f"dim {d} of a rank-{len(shape)} tensor")
    return [np.asarray(shape[d], np.int64)]


_AFFINE_INT: dict[str, Callable[[int, int], int]] = {
    "+": operator.add,
    "-": operator.sub,
    "*": operator.mul,
    "floordiv": operator.floordiv,
    "ceildiv": lambda a, b: -(-a // b),
    "mod": operator.mod,  # Python's: non-negative for a positive divisor, as MLIR's
}


@handles("affine.apply", "affine.min", "affine.max")
def _affine(it: Interpreter, op: Operation, frame: Frame) -> list[object]:
    m = attr(op, "map", AffineMapAttr)
    args = [int(it.array(v, frame)) for v in op.operands]
    dims, syms = args[: m.num_dims], args[m.num_dims :]
    values = [affine_value(e, dims, syms, int, _AFFINE_INT) for e in m.results]
    pick = {"affine.min": min, "affine.max": max}.get(op.name, lambda vs: vs[0])
    return [np.asarray(pick(values), np.int64)]


# ----------------------------------------------------------------------------------- encodings


@handles("iree_encoding.set_encoding", "flow.tensor.encode")
def _encode(it: Interpreter, op: Operation, frame: Frame) -> list[object]:
    x = logical(frame.get(op.operands[0]))
    return [encode(x, tensor_type(op.result), it.target)]


@handles("iree_encoding.unset_encoding")
def _unset(it: Interpreter, op: Operation, frame: Frame) -> list[object]:
    x = logical(frame.get(op.operands[0]))
    shape = tensor_type(op.result).shape
    if x.shape != shape:
        x = np.ascontiguousarray(x[tuple(slice(0, s) for s in shape)])
    return [x]


@handles("hal.tensor.import")
def _import(it: Interpreter, op: Operation, frame: Frame) -> list[object]:
    x = frame.get(op.operands[0])
    t = tensor_type(op.result)
    shape = runtime_shape(x)
    if shape != t.shape:
        raise EvaluationError(f"the buffer view has shape {list(shape)}, the import says {list(t.shape)}")
    return [x]


@handles(
    "hal.tensor.export",
    "iree_tensor_ext.compute_barrier.start",
    "iree_tensor_ext.compute_barrier.end",
)
def _identity(it: Interpreter, op: Operation, frame: Frame) -> list[object]:
    return [frame.get(op.operands[0])]


@handles("tensor.cast")
def _cast(it: Interpreter, op: Operation, frame: Frame) -> list[object]:
    """The same values (the interpreter checks them against the result type's static sizes)."""
    return [frame.get(op.operands[0])]


@handles("tensor.bitcast")
def _bitcast(it: Interpreter, op: Operation, frame: Frame) -> list[object]:
    """The same bytes read as the result's element type, of the same width (bf16, held in float32
    here, has no bytes of its own to reinterpret)."""
    x = np.ascontiguousarray(logical(frame.get(op.operands[0])))
    to = dtype_of(tensor_type(op.result))
    if "bf16" in (element_type(op.operands[0].type).name, element_type(op.result.type).name):
        raise EvaluationError("tensor.bitcast to or from bf16 is not evaluated (bf16 is held in float32)")
    if x.dtype.itemsize != to.itemsize:
        raise EvaluationError(f"tensor.bitcast between {x.dtype} and {to}: the widths differ")
    return [x.view(to)]


@handles("hal.tensor.barrier")
def _barrier(it: Interpreter, op: Operation, frame: Frame) -> list[object]:
    return [frame.get(v) for v in op.operands[:-1]]  # the last operand is the fence it signals


@handles("flow.tensor.constant")
def _tensor_constant(it: Interpreter, op: Operation, frame: Frame) -> list[object]:
    t = tensor_type(op.result)
    value = op.attributes["value"]
    if isinstance(value, ParameterAttr):
        return [encode(it.parameter(value, t.without_encoding()), t, it.target)]
    if isinstance(value, DenseAttr):
        return [encode(value.array, t, it.target)]
    raise EvaluationError(f"cannot evaluate a constant of {type(value).__name__}")


# -------------------------------------------------------------------------------------- flow


@handles("flow.dispatch.region")
def _dispatch_region(it: Interpreter, op: Operation, frame: Frame) -> list[object]:
    return it.run_block(op.regions[0].entry, [], frame)


@dataclass
class _Binding:
    """A ``!iree_tensor_ext.dispatch.tensor`` binding inside a ``flow.dispatch.workgroups`` body."""

    type: TensorType
    value: object = None


@handles("flow.dispatch.workgroups")
def _workgroups(it: Interpreter, op: Operation, frame: Frame) -> list[object]:
    block = op.regions[0].entry
    captured = workgroups_arguments(op)
    args: list[object] = []
    for v in captured:
        x = frame.get(v)
        args.append(_Binding(concrete_type(tensor_type(v), x), x) if isinstance(v.type, TensorType) else x)
    tied = tied_operands(op)
    outs = [_Binding(tensor_type(r)) for r, t in zip(op.results, tied, strict=True) if t is None]
    it.run_block(block, [*args, *outs], None)  # a store through a tied operand's binding copies, never updates x
    bindings = [*args, *outs]
    results = []
    for i, b in enumerate(result_bindings(op)):
        binding = bindings[b]
        if not isinstance(binding, _Binding) or binding.value is None:
            raise EvaluationError(f"the dispatch never stores result #{i}")
        results.append(binding.value)
    return results


def _binding(frame: Frame, op: Operation, v: Value) -> _Binding:
    b = frame.get(v)
    if not isinstance(b, _Binding):
        raise EvaluationError("operand is not a dispatch binding")
    return b


def _is_whole(t: TensorType, offs: list[int], sizes: list[int], strides: list[int]) -> bool:
    return all(o == 0 for o in offs) and tuple(sizes) == t.shape and all(s == 1 for s in strides)


@handles("iree_tensor_ext.dispatch.tensor.load")
def _load(it: Interpreter, op: Operation, frame: Frame) -> list[object]:
    b = _binding(frame, op, op.operands[0])
    offs, sizes, strides = _resolved_slice(op, frame, it, 1)
    if b.value is None:
        raise EvaluationError("load from a binding that holds no value")
    t = tensor_type(op.result)
    if _is_whole(b.type, offs, sizes, strides):
        return [b.value if t.shape == b.type.shape else logical(b.value).reshape(t.static_shape)]
    if isinstance(b.value, PackedTensor):
        return [slice_packed(b.value, offs, sizes, strides, t, it.target)]
    return [np.asarray(b.value)[_index(offs, sizes, strides)].reshape(t.static_shape)]


@handles("iree_tensor_ext.dispatch.tensor.store")
def _store(it: Interpreter, op: Operation, frame: Frame) -> list[object]:
    value = frame.get(op.operands[0])
    b = _binding(frame, op, op.operands[1])
    offs, sizes, strides = _resolved_slice(op, frame, it, 2)
    if _is_whole(b.type, offs, sizes, strides) and not (isinstance(value, np.ndarray) and value.shape != b.type.shape):
        b.value = value
        return []
    if isinstance(value, PackedTensor) or isinstance(b.value, PackedTensor):
        raise EvaluationError("partial stores of packed (encoded) tensors are not supported")
    dest = np.asarray(zeros(b.type.without_encoding(), None) if b.value is None else b.value).copy()
    dest[_index(offs, sizes, strides)] = np.asarray(value).reshape(sizes)
    b.value = dest
    return []


# -------------------------------------------------------------------------------------- util


def _global_name(op: Operation) -> str:
    ref = op.attributes["global"]
    assert isinstance(ref, SymbolRefAttr)
    return ref.name


@handles("util.global.load")
def _global_load(it: Interpreter, op: Operation, frame: Frame) -> list[object]:
    name = _global_name(op)
    if name not in it.globals:
        raise EvaluationError(f"global @{name} has no value (no initial value and no initializer stored one)")
    return [it.globals[name]]


@handles("util.global.store")
def _global_store(it: Interpreter, op: Operation, frame: Frame) -> list[object]:
    it.globals[_global_name(op)] = frame.get(op.operands[0])
    return []
