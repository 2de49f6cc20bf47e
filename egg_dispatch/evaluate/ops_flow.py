"""``flow.tensor.slice``, which IREE's dispatch creation leaves between dispatches: a copy of a box of
its source (a hoisted ``tensor.extract_slice`` of an argument), with start indices and lengths read from
its ``index`` operands; a box outside the source is an error, as IREE's verifier makes it.
(``flow.tensor.reshape``, the other such op, is evaluated in ``evaluate.dynamic`` with its sizes.)

Defined on plain tensors only: IREE 3.13 cannot lower it on an encoded value ("failed to convert
unserialized encoding to serialized encoding"), so a packed source is an error rather than a guess at
its layout.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from egg_dispatch.evaluate.registry import Frame, handles
from egg_dispatch.evaluate.values import EvaluationError, PackedTensor
from egg_dispatch.mlir.flow_ops import FLOW_SLICE, slice_operands
from egg_dispatch.mlir.ir import Operation
from egg_dispatch.mlir.ops import tensor_type

if TYPE_CHECKING:
    from egg_dispatch.evaluate.core import Interpreter

__all__: list[str] = []


def _plain(frame: Frame, op: Operation) -> np.ndarray:
    x = frame.get(op.operands[0])
    if isinstance(x, PackedTensor):
        raise EvaluationError("its source is a packed (encoded) tensor, which IREE cannot slice")
    return np.asarray(x)


@handles(FLOW_SLICE)
def _slice(it: Interpreter, op: Operation, frame: Frame) -> list[object]:
    x = _plain(frame, op)
    _, starts, lengths = slice_operands(op)
    offs = [int(it.array(v, frame)) for v in starts]
    sizes = [int(it.array(v, frame)) for v in lengths]
    shape = tensor_type(op.result).shape
    if tuple(sizes) != tuple(shape):
        raise EvaluationError(f"lengths {sizes} differ from the result shape {list(shape)}")
    for d, (o, s, n) in enumerate(zip(offs, sizes, x.shape, strict=True)):
        if o < 0 or o + s > n:
            raise EvaluationError(f"dim {d}: [{o}, {o + s}) is outside the source's {n}")
    return [np.ascontiguousarray(x[tuple(slice(o, o + s) for o, s in zip(offs, sizes, strict=True))])]
