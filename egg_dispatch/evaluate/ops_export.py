"""Handlers for the ops PyTorch exports add to the core set: ``tensor.concat``, ``tensor.pad``,
``linalg.softmax`` and ``cf.assert`` (their syntax is in ``mlir.syntax_tensor``).

None of them has a packed form: a packed (encoded) operand is an error, as for the other ops that
IREE never encodes.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from egg_dispatch.evaluate.loop_space import LoopSpace
from egg_dispatch.evaluate.registry import Frame, handles
from egg_dispatch.evaluate.values import EvaluationError, element_type, to_type
from egg_dispatch.mlir.ir import IntAttr, Operation, StrAttr
from egg_dispatch.mlir.ops import DYNAMIC, attr, int_list, tensor_type

if TYPE_CHECKING:
    from egg_dispatch.evaluate.core import Interpreter

__all__: list[str] = []


@handles("tensor.concat")
def _concat(it: Interpreter, op: Operation, frame: Frame) -> list[object]:
    parts = [it.array(v, frame) for v in op.operands]
    dim = attr(op, "dim", IntAttr).value
    return [to_type(np.concatenate(parts, axis=dim), op.result.type)]


@handles("tensor.pad")
def _pad(it: Interpreter, op: Operation, frame: Frame) -> list[object]:
    """The region gives the padding value at each index of the result (usually a constant); the
    source is then written at offset ``low``."""
    src = it.array(op.operands[0], frame)
    dyn = iter(op.operands[1:])
    low = [int(it.array(next(dyn), frame)) if s == DYNAMIC else s for s in int_list(op.attributes["static_low"])]
    for s in int_list(op.attributes["static_high"]):
        if s == DYNAMIC:
            next(dyn)  # the result type already fixes the padded shape
    t = tensor_type(op.result)
    space = LoopSpace.full(t.static_shape)
    block = op.regions[0].entry
    value = it.run_block(block, [space.index(d) for d in range(len(t.shape))], frame, space)[0]
    out = np.array(np.broadcast_to(to_type(np.asarray(value), t), t.static_shape), copy=True)
    if any(lo < 0 or lo + s > n for lo, s, n in zip(low, src.shape, t.shape, strict=True)):
        raise EvaluationError(f"tensor.pad: source of shape {src.shape} at offset {low} does not fit in {t.shape}")
    out[tuple(slice(lo, lo + s) for lo, s in zip(low, src.shape, strict=True))] = to_type(src, t)
    return [out]


@handles("linalg.softmax")
def _softmax(it: Interpreter, op: Operation, frame: Frame) -> list[object]:
    """MLIR's decomposition of ``linalg.softmax``: ``exp(x - max(x)) / sum(exp(x - max(x)))`` along
    ``dimension``, each step rounded to the element type (as IREE runs it)."""
    x = it.array(op.operands[0], frame)
    it.array(op.operands[1], frame)  # the init only gives the shape; a packed one is an error
    axis = attr(op, "dimension", IntAttr).value
    t = element_type(op.result.type)
    with np.errstate(invalid="ignore", over="ignore"):
        m = to_type(np.max(x, axis=axis, keepdims=True), t)
        e = to_type(np.exp(to_type(x - m, t)), t)
        s = to_type(np.sum(e, axis=axis, keepdims=True), t)
        return [to_type(e / s, t)]


@handles("cf.assert")
def _assert(it: Interpreter, op: Operation, frame: Frame) -> list[object]:
    """Undefined behaviour (an abort) in IREE when false: here an error naming the assertion."""
    cond = it.array(op.operands[0], frame)
    if not np.all(cond):
        msg = op.attributes.get("msg")
        raise EvaluationError(f"assertion failed: {msg.value if isinstance(msg, StrAttr) else ''}")
    return []
