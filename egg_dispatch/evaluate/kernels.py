"""NumPy reference kernels for ``linalg.pack``, ``linalg.unpack`` and ``linalg.(batch_)mmt4d``.

The NumPy evaluator holds encoded tensors *physically* (docs/design.md §2.6), so a wrong rewrite rule gives
wrong numbers; these kernels are the ground truth it runs. Their semantics mirror MLIR exactly:
``pack``/``unpack`` follow ``mlir/include/mlir/Dialect/Linalg/IR/LinalgRelayoutOps.td`` and ``mmt4d``
follows ``mlir/python/mlir/dialects/linalg/opdsl/ops/core_named_ops.py`` (docs/iree-data-tiling.md §4):

* pack: outer dims are ``ceil(src[d] / tile)`` for tiled dims, ``outer_dims_perm`` permutes the outer
  dims, the tile dims are appended in ``inner_dims_pos`` order, and tiled dims are padded at the high
  end with ``padding_value``;
* unpack: the inverse, dropping the padding (an implicit slice to ``dest_shape``);
* mmt4d: ``acc[m,n,m0,n0] += sum_{k,k0} cast(lhs[m,k,m0,k0]) * cast(rhs[n,k,n0,k0])`` (the RHS is
  transposed: N before K); ``batch_mmt4d`` adds a leading batch dim to all three operands.

Everything is vectorized: relayouts are one ``np.pad`` + reshape + transpose copy, and a contraction is
a single BLAS ``np.matmul`` over the whole problem (never a Python loop over tiles). All functions are
pure: inputs are never modified, results are fresh C-contiguous arrays.

Numerics: f16 inputs accumulate in f32 (rounded once to an f16 accumulator); integer contractions are
exact with wrap-around to the accumulator width (i8×i8→i32 runs on float BLAS only while every partial
sum is exactly representable, otherwise on int64; see ``_contract``).
"""

from __future__ import annotations

import math
import threading
from collections.abc import Sequence

import numpy as np

from egg_dispatch.target.layout import ceil_div, check_relayout, packed_outer_shape

__all__ = ["batch_mmt4d", "default_acc_dtype", "mmt4d", "pack", "unpack"]


def _split_axes(shape: Sequence[int], tile_of: dict[int, int]) -> tuple[list[int], list[int], dict[int, int]]:
    """Shape with every tiled dim d split into (outer_d, tile_d); axis of each outer and inner part."""
    split: list[int] = []
    outer_axis: list[int] = []
    inner_axis: dict[int, int] = {}
    for d, s in enumerate(shape):
        outer_axis.append(len(split))
        if d in tile_of:
            split += [ceil_div(s, tile_of[d]), tile_of[d]]
            inner_axis[d] = len(split) - 1
        else:
            split.append(s)
    return split, outer_axis, inner_axis


def pack(
    src: np.ndarray,
    inner_dims_pos: Sequence[int],
    inner_tiles: Sequence[int],
    outer_dims_perm: Sequence[int] | None = None,
    padding_value: float | int = 0,
) -> np.ndarray:
    """``linalg.pack``: tile ``src`` into a rank-(n+k) array, zero-padding tiled dims at the high end.

    IREE's materialization always pads with zero of the element type (docs/iree-data-tiling.md §1.9), hence the default.
    """
    pos, tiles, perm = check_relayout(src.ndim, inner_dims_pos, inner_tiles, outer_dims_perm)
    tile_of = dict(zip(pos, tiles, strict=True))
    pad = [(0, (-s) % tile_of[d]) if d in tile_of else (0, 0) for d, s in enumerate(src.shape)]
    if any(hi for _, hi in pad):
        src = np.pad(src, pad, mode="constant", constant_values=padding_value)
    split, outer_axis, inner_axis = _split_axes(src.shape, tile_of)
    axes = [outer_axis[p] for p in perm] + [inner_axis[d] for d in pos]
    return _relayout(src.reshape(split).transpose(axes))


def unpack(
    packed: np.ndarray,
    inner_dims_pos: Sequence[int],
    inner_tiles: Sequence[int],
    outer_dims_perm: Sequence[int] | None = None,
    dest_shape: Sequence[int] | None = None,
) -> np.ndarray:
    """``linalg.unpack``: undo the outer permutation, merge tiles, slice the padding off.

    ``dest_shape`` is the logical (unpadded) shape; ``None`` keeps the full padded extent.
    """
    n = packed.ndim - len(tuple(inner_dims_pos))
    if n < 0:
        raise ValueError(f"packed rank {packed.ndim} is below the number of inner tiles {len(inner_dims_pos)}")
    pos, tiles, perm = check_relayout(n, inner_dims_pos, inner_tiles, outer_dims_perm)
    if tuple(packed.shape[n:]) != tiles:
        raise ValueError(f"packed trailing dims {packed.shape[n:]} do not match inner_tiles {tiles}")
    tile_of = dict(zip(pos, tiles, strict=True))
    outer = [0] * n
    for i, d in enumerate(perm):
        outer[d] = packed.shape[i]
    padded = [o * tile_of.get(d, 1) for d, o in enumerate(outer)]
    dest = tuple(padded) if dest_shape is None else tuple(int(s) for s in dest_shape)
    if packed_outer_shape(dest, pos, tiles, perm) != packed.shape:
        raise ValueError(f"packed shape {packed.shape} does not come from dest_shape {dest}")
    inv = [0] * n
    for i, d in enumerate(perm):
        inv[d] = i
    axes: list[int] = []
    for d in range(n):
        axes.append(inv[d])
        if d in tile_of:
            axes.append(n + pos.index(d))
    full = _relayout(packed.transpose(axes)).reshape(padded)
    if tuple(padded) != dest:
        full = np.ascontiguousarray(full[tuple(slice(0, s) for s in dest)])
    return full


def default_acc_dtype(lhs_dtype: np.dtype | type, rhs_dtype: np.dtype | type | None = None) -> np.dtype:
    """Accumulator type IREE uses when none is given: i32 for integers, f32 for f16/f32, else f64."""
    dt = np.result_type(lhs_dtype, lhs_dtype if rhs_dtype is None else rhs_dtype)
    if dt.kind in "iub":
        return np.dtype(np.int64 if dt.itemsize > 4 else np.int32)
    if dt.kind == "f":
        return np.dtype(np.float64 if dt.itemsize > 4 else np.float32)
    raise TypeError(f"mmt4d does not support element type {dt}")


def _int_product_bound(a: np.dtype, b: np.dtype, k: int) -> int:
    """Largest |partial sum| of a length-k integer dot product, from the dtype ranges."""
    ia, ib = np.iinfo(a), np.iinfo(b)
    return max(abs(ia.min), ia.max) * max(abs(ib.min), ib.max) * max(k, 1)


def _relayout(view: np.ndarray, dtype: np.dtype | None = None, out: np.ndarray | None = None) -> np.ndarray:
    """Copy a strided view into a fresh (or the given C-contiguous) array, converting to ``dtype``.

    When the innermost axis is a contiguous run (a tile row), each run is copied as one opaque
    ``void`` element: NumPy's strided copy then moves whole runs instead of single elements, which
    makes cold-cache relayouts ~1.7x faster (the mmt4d benchmark is bound by these copies).
    """
    dtype = view.dtype if dtype is None else np.dtype(dtype)
    if out is None:
        out = np.empty(view.shape, dtype)
    if dtype == view.dtype and view.ndim and view.shape[-1] > 1 and view.strides[-1] == view.itemsize:
        run = np.dtype((np.void, view.shape[-1] * view.itemsize))
        np.copyto(out.view(run), view.view(run))
    else:
        np.copyto(out, view, casting="unsafe")
    return out


_SCRATCH = threading.local()
_SCRATCH_MAX_BYTES = 64 << 20


def _scratch(slot: int, shape: Sequence[int], dtype: np.dtype) -> np.ndarray:
    """Per-thread reusable work buffer for temporaries that never escape a kernel call.

    Fresh multi-MB arrays page-fault on first touch (~1 ms per 4 MB in this VM), which cost mmt4d
    more than its relayout copies; reusing its three temporaries keeps it near np.matmul speed.
    Buffers above ``_SCRATCH_MAX_BYTES`` are not kept, so at most 3 x 64 MiB stays allocated.
    """
    nbytes = math.prod(shape) * dtype.itemsize
    if nbytes > _SCRATCH_MAX_BYTES:
        return np.empty(shape, dtype)
    bufs: list[np.ndarray | None] = _SCRATCH.__dict__.setdefault("bufs", [None, None, None])
    buf = bufs[slot]
    if buf is None or buf.nbytes < nbytes:
        buf = bufs[slot] = np.empty(nbytes, np.uint8)
    return buf[:nbytes].view(dtype).reshape(shape)


def _kmajor(x: np.ndarray, dtype: np.dtype, slot: int) -> np.ndarray:
    """[..., X1, K1, X0, K0] -> contiguous [..., K1*K0, X1*X0].

    K-major keeps each X0 run of a tile together (for K0 = 1 they are contiguous in the source), so the
    copy is cheap and the result is a plain, or transposed, operand that BLAS takes without a copy.
    """
    *batch, x1, k1, x0, k0 = x.shape
    nb = len(batch)
    axes = [*range(nb), nb + 1, nb + 3, nb, nb + 2]
    view = x.transpose(axes)
    return _relayout(view, dtype, _scratch(slot, view.shape, dtype)).reshape(*batch, k1 * k0, x1 * x0)


def _contract(lhs: np.ndarray, rhs: np.ndarray, acc: np.ndarray | None, acc_dtype: np.dtype) -> np.ndarray:
    """Shared body of mmt4d and batch_mmt4d for any number of leading batch dims.

    Numerics:
    * floats compute in ``result_type(inputs, acc, f32)``: f16 (and f16 accumulators) accumulate in f32
      and are rounded to the accumulator type once at the end;
    * integers are exact with wrap-around to the accumulator width (MLIR's ``arith`` semantics). The
      product runs on float BLAS only when every partial sum is an integer the float represents
      exactly (|a|·|b|·K ≤ 2^24 for f32, ≤ 2^53 for f64 — for i8×i8 that is K ≤ 1024 resp. K ≤ 2^39;
      then every FMA in any summation order is exact); otherwise it falls back to int64 ``np.matmul``.
      The result is converted to int64, the accumulator added, and the sum wrapped to ``acc_dtype``.
    """
    if lhs.ndim != rhs.ndim or lhs.ndim < 4:
        raise ValueError(f"mmt4d operands must be [...,X1,K1,X0,K0]; got {lhs.shape} and {rhs.shape}")
    *batch, m1, k1, m0, k0 = lhs.shape
    *rbatch, n1, rk1, n0, rk0 = rhs.shape
    if rbatch != batch or (rk1, rk0) != (k1, k0):
        raise ValueError(f"mmt4d operand shapes {lhs.shape} and {rhs.shape} disagree in batch or K")
    out_shape = (*batch, m1, n1, m0, n0)
    if acc is not None and acc.shape != out_shape:
        raise ValueError(f"mmt4d accumulator shape {acc.shape} != expected {out_shape}")
    kinds = {lhs.dtype.kind, rhs.dtype.kind}
    if not kinds <= set("iuf"):
        raise TypeError(f"mmt4d does not support {lhs.dtype} x {rhs.dtype}")
    k = k1 * k0
    if "f" in kinds or acc_dtype.kind == "f":
        compute = np.result_type(lhs.dtype, rhs.dtype, acc_dtype, np.float32)
        if compute.kind != "f":
            compute = np.dtype(np.float64)
        final = compute
    else:
        bound = _int_product_bound(lhs.dtype, rhs.dtype, k)
        compute = np.dtype(np.float32 if bound <= 2**24 else np.float64 if bound <= 2**53 else np.int64)
        final = np.dtype(np.int64)
    a = _kmajor(lhs, compute, 0)  # [..., K, M]
    b = _kmajor(rhs, compute, 1)  # [..., K, N]
    # One BLAS call: the transposed view of `a` is passed to gemm as a transpose flag, without a copy.
    prod = np.matmul(a.swapaxes(-1, -2), b, out=_scratch(2, (*batch, m1 * m0, n1 * n0), compute))
    if prod.dtype != final:
        prod = prod.astype(final)
    nb = len(batch)
    tiled = prod.reshape(*batch, m1, m0, n1, n0).transpose(*range(nb), nb, nb + 2, nb + 1, nb + 3)
    if acc is not None:
        out = np.add(acc.astype(final, copy=False), tiled)  # one pass: relayout + accumulate
    else:
        out = _relayout(tiled)
    return out.astype(acc_dtype, copy=False)


def _resolve_acc_dtype(
    lhs: np.ndarray, rhs: np.ndarray, acc: np.ndarray | None, acc_dtype: np.dtype | type | None
) -> np.dtype:
    if acc is not None:
        if acc_dtype is not None and np.dtype(acc_dtype) != acc.dtype:
            raise ValueError(f"acc_dtype {np.dtype(acc_dtype)} contradicts acc.dtype {acc.dtype}")
        return acc.dtype
    return np.dtype(acc_dtype) if acc_dtype is not None else default_acc_dtype(lhs.dtype, rhs.dtype)


def mmt4d(
    lhs: np.ndarray,
    rhs: np.ndarray,
    acc: np.ndarray | None = None,
    acc_dtype: np.dtype | type | None = None,
) -> np.ndarray:
    """``linalg.mmt4d``: lhs [M1,K1,M0,K0] · rhs [N1,K1,N0,K0] (+ acc) -> [M1,N1,M0,N0].

    ``acc`` None means a zero accumulator of ``acc_dtype`` (default: :func:`default_acc_dtype`).
    """
    if lhs.ndim != 4 or rhs.ndim != 4:
        raise ValueError(f"mmt4d takes 4-D operands; got {lhs.shape} and {rhs.shape}")
    return _contract(lhs, rhs, acc, _resolve_acc_dtype(lhs, rhs, acc, acc_dtype))


def batch_mmt4d(
    lhs: np.ndarray,
    rhs: np.ndarray,
    acc: np.ndarray | None = None,
    acc_dtype: np.dtype | type | None = None,
) -> np.ndarray:
    """``linalg.batch_mmt4d``: [B,M1,K1,M0,K0] · [B,N1,K1,N0,K0] (+ acc) -> [B,M1,N1,M0,N0]."""
    if lhs.ndim != 5 or rhs.ndim != 5:
        raise ValueError(f"batch_mmt4d takes 5-D operands; got {lhs.shape} and {rhs.shape}")
    return _contract(lhs, rhs, acc, _resolve_acc_dtype(lhs, rhs, acc, acc_dtype))
