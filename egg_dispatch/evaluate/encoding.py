"""Physical encodings: the packed layout a target gives an encoded tensor, and ops on packed tensors.

With a target, an encoded tensor type (``tensor<8x8xf32, #iree_encoding.encoding<...>>``) resolves
through :func:`egg_dispatch.target.layout.resolve_layout` (operand_index, element_types,
user_indexing_maps -> dim positions, iteration_sizes) to a ``linalg.pack`` layout, as IREE's CPU
materialization does (docs/iree-data-tiling.md §1.9, §4). ``set_encoding`` then packs with zero padding, a contraction
on packed operands runs the mmt4d kernel (``batch_mmt4d`` with a batch dim; operands swapped for a
narrow-N result), and ``unset_encoding`` unpacks and drops the padding. An encoding the target resolves
to the identity (target ``none``, no tile for the element types, not a matmul) stays a plain array.
Without a target every encoding is ignored (plain semantics).

A slice of a packed tensor is taken physically (whole tiles along tiled dims), so an unaligned or
otherwise illegal slice gives wrong numbers, as it would on the device.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import cast

import numpy as np

from egg_dispatch.evaluate.kernels import batch_mmt4d, mmt4d, pack
from egg_dispatch.evaluate.values import EvaluationError, PackedTensor, dtype_of
from egg_dispatch.mlir.ir import EncodingAttr, TensorType
from egg_dispatch.target import layout as target_layout
from egg_dispatch.target.layout import Layout, LayoutError, packed_shape, swaps_operands
from egg_dispatch.target.profile import Target

__all__ = [
    "contract_packed",
    "encode",
    "encoding_layout",
    "encoding_matmul_setup",
    "logical",
    "slice_packed",
    "zeros",
]

Value = np.ndarray | PackedTensor


def encoding_matmul_setup(enc: EncodingAttr) -> tuple[tuple[str, str, str], list[tuple[int, ...]], list[int | None]]:
    """``target.layout.encoding_matmul_setup``, its errors as ``EvaluationError``."""
    try:
        return target_layout.encoding_matmul_setup(enc)
    except LayoutError as e:
        raise EvaluationError(str(e)) from None


def encoding_layout(target: Target | None, t: TensorType) -> Layout | None:
    """``target.layout.encoding_layout``, its errors as ``EvaluationError``."""
    try:
        return target_layout.encoding_layout(target, t)
    except LayoutError as e:
        raise EvaluationError(str(e)) from None


def encode(x: np.ndarray, t: TensorType, target: Target | None) -> Value:
    """``set_encoding``: pack ``x`` into ``t``'s layout with zero padding (identity: ``x`` itself)."""
    if tuple(x.shape) != t.shape:
        raise EvaluationError(f"encoding a tensor of shape {x.shape} as {t.shape}")
    lay = encoding_layout(target, t)
    if lay is None:
        return x
    return PackedTensor(pack(x, lay.inner_dims_pos, lay.inner_tiles, lay.outer_dims_perm, 0), lay, t.static_shape)


def logical(x: object) -> np.ndarray:
    """The logical values of a run-time value (``unset_encoding`` for a packed tensor)."""
    return x.unpack() if isinstance(x, PackedTensor) else cast(np.ndarray, x)  # else an array (0-d for a scalar)


def zeros(t: TensorType, target: Target | None, fill: np.ndarray | float = 0) -> Value:
    """``tensor.empty`` / ``linalg.fill`` of type ``t``: packed when its encoding resolves to tiles.

    The fill covers the padding too, as a fill materialized on the packed type does.
    """
    dt = dtype_of(t)
    lay = encoding_layout(target, t)
    if lay is None:
        return np.full(t.static_shape, fill, dt)
    return PackedTensor(np.full(packed_shape(t.static_shape, lay), fill, dt), lay, t.static_shape)


def contract_packed(
    lhs: PackedTensor, rhs: PackedTensor, acc: PackedTensor, acc_type: TensorType, target: Target
) -> PackedTensor:
    """A matmul-like op on packed operands: ``(batch_)mmt4d``, on swapped operands for narrow N."""
    enc = acc_type.encoding
    if not isinstance(enc, EncodingAttr):
        raise EvaluationError("the accumulator of a contraction on packed operands has no encoding")
    types, maps, sizes = encoding_matmul_setup(enc)
    a, b = (rhs, lhs) if swaps_operands(target, types, maps, sizes) else (lhs, rhs)
    full = max(a.packed.ndim, b.packed.ndim, acc.packed.ndim)
    if full not in (4, 5):
        raise EvaluationError(f"packed operands of ranks {a.packed.ndim}, {b.packed.ndim} do not form an (batch_)mmt4d")
    batched = full == 5
    pa, pb = _mmt4d_operand(a.packed, batched, False), _mmt4d_operand(b.packed, batched, False)
    # The result of a matvec-like op (the mmt4d's B is a vector) is [M1, 1, M0, 1], of a vecmat-like
    # one [1, N1, 1, N0]: IREE's getExpandedType, isTransposed for the result when B is the vector.
    pc = _mmt4d_operand(acc.packed, batched, b.packed.ndim < full)
    if {pa.ndim, pb.ndim, pc.ndim} != {full}:
        raise EvaluationError(
            f"packed operands of ranks {sorted({a.packed.ndim, b.packed.ndim, acc.packed.ndim})} do not form an "
            "(batch_)mmt4d"
        )
    out = mmt4d(pa, pb, pc) if full == 4 else batch_mmt4d(pa, pb, pc)
    return PackedTensor(out.reshape(acc.packed.shape), acc.layout, acc.shape)


def _mmt4d_operand(x: np.ndarray, batched: bool, transposed: bool) -> np.ndarray:
    """A packed vector ([X1, X0], batched [B, X1, X0]) as IREE expands it into an (batch_)mmt4d
    operand (``getExpandedType``): [1, X1, 1, X0], or [X1, 1, X0, 1] when ``transposed``; a packed
    matrix as it is."""
    if x.ndim != (3 if batched else 2):
        return x
    lead = x.shape[:1] if batched else ()
    x1, x0 = x.shape[-2:]
    return x.reshape((*lead, x1, 1, x0, 1) if transposed else (*lead, 1, x1, 1, x0))


def slice_packed(
    src: PackedTensor,
    offsets: Sequence[int],
    sizes: Sequence[int],
    strides: Sequence[int],
    result: TensorType,
    target: Target | None,
) -> PackedTensor:
    """``extract_slice`` of a packed tensor, taken on the packed array: whole tiles along tiled dims.

    Offsets are divided by the tile (rounding down) and sizes rounded up to whole tiles, so a slice
    that is not tile-aligned reads the wrong rows and carries real data where padding should be zero.
    """
    lay = encoding_layout(target, result)
    if lay != src.layout:
        raise EvaluationError(
            f"slice of a packed tensor with layout {src.layout} into a type whose encoding resolves to {lay}"
        )
    if any(s != 1 for s in strides):
        raise EvaluationError("strided slices of a packed tensor are not supported")
    if len(sizes) != result.rank:
        raise EvaluationError("rank-reducing slices of a packed tensor are not supported")
    tile_of = dict(zip(lay.inner_dims_pos, lay.inner_tiles, strict=True))
    outer: list[slice] = []
    for d, (o, s) in enumerate(zip(offsets, sizes, strict=True)):
        t = tile_of.get(d, 1)
        outer.append(slice(o // t, o // t + -(-s // t)))
    sel = [outer[d] for d in lay.outer_dims_perm] + [slice(None)] * len(lay.inner_tiles)
    return PackedTensor(np.ascontiguousarray(src.packed[tuple(sel)]), lay, result.static_shape)
