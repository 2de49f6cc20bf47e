"""What the evaluator passes between ops: NumPy arrays, packed tensors, and the error it raises.

Every tensor value is a NumPy array of its logical shape, except an encoded tensor whose layout the
target resolves to real tiles: that one is a :class:`PackedTensor` holding the *physical* packed array
(docs/design.md §2.6), so an op that reads it with the wrong layout computes wrong numbers instead of
silently reading a logical copy. Scalars are 0-d arrays, so ``arith``/``math`` ops work the same on
scalars, on tensors and inside ``linalg.generic`` bodies. Arrays are never modified in place: an op
that updates a tensor (``insert_slice``, a dispatch store) copies it first.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from egg_dispatch.evaluate.kernels import unpack
from egg_dispatch.mlir.ir import DispatchTensorType, Loc, ScalarType, TensorType, Type, numpy_dtype
from egg_dispatch.target.layout import Layout

__all__ = ["EvaluationError", "PackedTensor", "dtype_of", "element_type", "round_bf16", "to_type"]


class EvaluationError(Exception):
    """An op the evaluator cannot run (or runs into undefined behaviour); names the op and its location.

    The message reads ``file:line:col: error: 'op.name' ...`` like the parser's errors, so the CLI can
    print it as one line.
    """

    def __init__(self, message: str, loc: Loc | None = None, op_name: str | None = None) -> None:
        where = f"{loc}: " if loc is not None else ""
        what = f"'{op_name}': " if op_name else ""
        super().__init__(f"{where}error: {what}{message}")
        self.loc = loc
        self.op_name = op_name
        self.message = message


@dataclass(frozen=True, eq=False)
class PackedTensor:
    """An encoded tensor held physically: the ``linalg.pack`` result of its logical value.

    ``packed`` has the packed (tiled, zero-padded) shape of ``layout``; ``shape`` is the logical shape
    the tensor type states. Only :meth:`unpack` (``unset_encoding``) recovers logical values.
    """

    packed: np.ndarray
    layout: Layout
    shape: tuple[int, ...]

    @property
    def dtype(self) -> np.dtype:
        """Element dtype of the packed array."""
        return self.packed.dtype

    def unpack(self) -> np.ndarray:
        """The logical tensor: ``linalg.unpack`` to :attr:`shape`, dropping the padding."""
        lay = self.layout
        return unpack(self.packed, lay.inner_dims_pos, lay.inner_tiles, lay.outer_dims_perm, self.shape)

    def __repr__(self) -> str:
        return f"PackedTensor(shape={self.shape}, packed={self.packed.shape}, {self.layout})"


def element_type(t: Type) -> ScalarType:
    """The element type of a tensor, dispatch binding or scalar type."""
    if isinstance(t, ScalarType):
        return t
    if isinstance(t, TensorType):
        return t.element
    if isinstance(t, DispatchTensorType):
        return t.tensor.element
    raise EvaluationError(f"type {t} has no element type")


def dtype_of(t: Type) -> np.dtype:
    """NumPy dtype holding values of ``t`` (bf16 lives in float32, rounded after every op)."""
    try:
        return numpy_dtype(element_type(t))
    except ValueError as e:
        raise EvaluationError(str(e)) from None


def round_bf16(x: np.ndarray) -> np.ndarray:
    """Round float32 values to the nearest bfloat16 (ties to even), kept in float32; NaN stays NaN."""
    x = np.asarray(x, dtype=np.float32)
    bits = x.view(np.uint32).astype(np.uint64)
    rounded = ((bits + 0x7FFF + ((bits >> 16) & 1)) & 0xFFFF0000).astype(np.uint32)
    out = rounded.view(np.float32)
    return np.where(np.isnan(x), x, out)


def to_type(x: np.ndarray | float | int | bool, t: Type) -> np.ndarray:
    """``x`` as an array of ``t``'s element dtype (a plain C cast: ints wrap, floats round)."""
    elem = element_type(t)
    dt = dtype_of(elem)
    arr = np.asarray(x)
    if arr.dtype != dt:
        if dt == np.bool_ and arr.dtype.kind in "iu":
            arr = (arr & 1).astype(np.bool_)
        else:
            with np.errstate(all="ignore"):
                arr = arr.astype(dt)
    if elem.name == "bf16":
        arr = round_bf16(arr)
    return arr
