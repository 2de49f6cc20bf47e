"""``iree_linalg_ext`` attention and gather on NumPy arrays, apart from the linalg generic/contraction evaluators."""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np

from egg_dispatch.evaluate.loop_space import LoopSpace, loop_sizes, view
from egg_dispatch.evaluate.values import EvaluationError
from egg_dispatch.mlir.ir import AffineMapAttr

__all__ = ["attention", "gather"]


def attention(
    q: np.ndarray,
    k: np.ndarray,
    v: np.ndarray,
    scale: np.ndarray,
    mask: np.ndarray | None,
    maps: Sequence[AffineMapAttr],
    score_body: Callable[[np.ndarray, LoopSpace], np.ndarray] | None,
    out_dtype: np.dtype,
) -> np.ndarray:
    """``iree_linalg_ext.attention``: softmax(Q·Kᵀ·scale [+ mask] [-> region]) · V, by the maps.

    Loop roles come from the maps: k1 (in Q and K, not in O) are the dot-product dims, k2 (in K and V,
    not in O) the softmax dims (either may be folded away when its size is 1). Computes in at least
    f32 (IREE accumulates f16 attention in f32).
    """
    q_map, k_map, v_map = maps[0], maps[1], maps[2]
    o_map = maps[-1]
    pq, pk, pv, po = (m.dim_positions() for m in (q_map, k_map, v_map, o_map))
    if pq is None or pk is None or pv is None or po is None:
        raise EvaluationError("attention indexing maps must be projected permutations")
    shapes = [q.shape, k.shape, v.shape, scale.shape]
    sizes = loop_sizes([q_map, k_map, v_map, maps[3]], shapes)
    k1 = [d for d in pq if d in pk and d not in po]
    k2 = [d for d in pk if d in pv and d not in po]
    # Global optimization folds unit dims away: with no k1 the scores are plain products, with no k2
    # the softmax runs over one key (every weight is 1).
    score_dims = tuple(sorted((set(pq) | set(pk)) - set(k1)))
    dt = np.result_type(q.dtype, k.dtype, v.dtype, np.float32)

    def letters(p: Sequence[int]) -> str:
        return "".join(chr(ord("a") + d) for d in p)

    s = np.einsum(f"{letters(pq)},{letters(pk)}->{letters(score_dims)}", q.astype(dt), k.astype(dt))
    s = s * scale.astype(dt)
    space = LoopSpace(sizes, score_dims)
    if mask is not None:
        mv = view(mask, maps[4], space)
        s = np.where(mv, s, -np.inf) if mv.dtype == np.bool_ else s + mv.astype(dt)
    if score_body is not None:
        s = np.broadcast_to(score_body(s, space), s.shape).astype(dt)
    axes = tuple(score_dims.index(d) for d in k2)
    with np.errstate(invalid="ignore", over="ignore"):
        e = np.exp(s - np.max(s, axis=axes, keepdims=True))
        p = e / np.sum(e, axis=axes, keepdims=True)
    o = np.einsum(f"{letters(score_dims)},{letters(pv)}->{letters(po)}", p, v.astype(dt))
    return o.astype(out_dtype)


# ------------------------------------------------------------------------------------- gather


def gather(
    source: np.ndarray, indices: np.ndarray, dimension_map: Sequence[int], out_shape: tuple[int, ...]
) -> np.ndarray:
    """``iree_linalg_ext.gather``: out[b..., s...] = source[x] with x[dimension_map[i]] = indices[b..., i].

    The source dims not in ``dimension_map`` form the slice ``s``; the batch rank is the output rank
    minus the slice rank, and ``indices`` may omit its last (index-depth) dim when the depth is 1.
    """
    dims = list(dimension_map)
    slice_dims = [d for d in range(source.ndim) if d not in dims]
    batch_rank = len(out_shape) - len(slice_dims)
    if batch_rank < 0:
        raise EvaluationError("gather output rank is smaller than the source slice rank")
    idx = indices if indices.ndim != batch_rank else indices[..., None]
    if idx.ndim != batch_rank + 1 or idx.shape[-1] != len(dims):
        raise EvaluationError(f"gather indices of shape {indices.shape} do not match dimension_map {dims}")
    batch = idx.shape[:-1]
    nslice = len(slice_dims)
    sel: list[np.ndarray] = [np.empty(0)] * source.ndim
    for i, d in enumerate(dims):
        col = idx[..., i].astype(np.int64)
        if np.any(col < 0) or np.any(col >= source.shape[d]):
            raise EvaluationError(f"gather index out of bounds for source dim {d} (size {source.shape[d]})")
        sel[d] = col.reshape(batch + (1,) * nslice)
    for j, d in enumerate(slice_dims):
        shape = [1] * (len(batch) + nslice)
        shape[len(batch) + j] = source.shape[d]
        sel[d] = np.arange(source.shape[d]).reshape(shape)
    out = source[tuple(sel)]
    if out.shape != tuple(out_shape):
        raise EvaluationError(f"gather produces {out.shape}, but the output is {tuple(out_shape)}")
    return out
