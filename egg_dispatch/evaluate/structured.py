"""Structured ops on NumPy arrays: ``linalg.generic`` in general, contractions, attention, gather.

Everything is vectorized over the op's iteration space (its loops ``d0 .. dN-1``):

* each operand is turned into a *view* of rank N that broadcasts against the iteration space: a
  projected-permutation map (``(d0, d1, d2) -> (d2, d0)``) is a transpose plus size-1 axes for the
  loops it does not use; any other map (constants, ``d0 + d1``, repeated dims) indexes the operand
  with integer grids;
* a body runs once on those views (the caller supplies ``run_body``); ``linalg.index`` reads a grid;
* reduction loops: when every yielded value is ``combiner(out_arg, x)`` with ``x`` independent of the
  out args (``addf``, ``mulf``, ``maximumf``, ``minimumf``, ``addi``, ...), ``x`` is computed over the
  whole space and reduced with the NumPy reduction of the same combiner; any other body is run once
  per point of the reduction loops (the sequential semantics), still vectorized over parallel loops.

Contractions (named matmul-like ops) run as one batched ``np.matmul`` (BLAS for floats) in the
accumulator's precision: f16 inputs compute in f32 and round
once at the end; integers compute in int64 and wrap to the accumulator width, which equals MLIR's
wrapping accumulation.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

from egg_dispatch.mlir.ir import AffineMapAttr, Block, Operation, Value

from .values import EvaluationError

__all__ = [
    "COMBINERS",
    "Fold",
    "LoopSpace",
    "attention",
    "contract",
    "gather",
    "identity_map",
    "loop_sizes",
    "perm_map",
    "reduction_combiners",
    "run_generic",
    "to_output",
    "view",
]

COMBINERS: dict[str, np.ufunc] = {
    "arith.addf": np.add,
    "arith.mulf": np.multiply,
    "arith.maximumf": np.maximum,
    "arith.minimumf": np.minimum,
    "arith.maxnumf": np.fmax,
    "arith.minnumf": np.fmin,
    "arith.addi": np.add,
    "arith.muli": np.multiply,
    "arith.maxsi": np.maximum,
    "arith.minsi": np.minimum,
    "arith.andi": np.bitwise_and,
    "arith.ori": np.bitwise_or,
    "arith.xori": np.bitwise_xor,
}
"""Reduction bodies ``yield combiner(x, out)`` reduced with one NumPy ufunc (unsigned min/max and i1
add/mul take the per-point fallback)."""


def perm_map(num_dims: int, dims: Sequence[int]) -> AffineMapAttr:
    """``affine_map<(d0..) -> (d_i, ...)>`` for the named ops' implicit maps."""
    return AffineMapAttr(num_dims, 0, tuple(("d", d) for d in dims))


def identity_map(rank: int) -> AffineMapAttr:
    """``affine_map<(d0..dn-1) -> (d0..dn-1)>``."""
    return perm_map(rank, range(rank))


@dataclass(frozen=True)
class LoopSpace:
    """The loops an array's axes stand for: ``dims`` (increasing) with their full ``sizes``.

    ``fixed`` pins some loops to one index (the per-point reduction fallback); those axes have size 1.
    """

    sizes: tuple[int, ...]
    dims: tuple[int, ...]
    fixed: tuple[tuple[int, int], ...] = ()

    @staticmethod
    def full(sizes: Sequence[int]) -> LoopSpace:
        """Every loop, none fixed."""
        return LoopSpace(tuple(sizes), tuple(range(len(sizes))))

    @property
    def shape(self) -> tuple[int, ...]:
        """Shape arrays over this space broadcast to."""
        fixed = dict(self.fixed)
        return tuple(1 if d in fixed else self.sizes[d] for d in self.dims)

    def index(self, dim: int) -> np.ndarray:
        """``linalg.index dim`` over this space: an int64 grid broadcastable to :attr:`shape`."""
        fixed = dict(self.fixed)
        if dim in fixed:
            return np.asarray(fixed[dim], np.int64)
        if dim not in self.dims:
            raise EvaluationError(f"linalg.index {dim}: no such loop here")
        shape = [1] * len(self.dims)
        shape[self.dims.index(dim)] = self.sizes[dim]
        return np.arange(self.sizes[dim], dtype=np.int64).reshape(shape)


def loop_sizes(maps: Sequence[AffineMapAttr], shapes: Sequence[tuple[int, ...]]) -> tuple[int, ...]:
    """Loop bounds from the operand shapes (``d_j`` at result i of a map gives size shape[i])."""
    n = maps[0].num_dims
    sizes: list[int | None] = [None] * n
    for m, shape in zip(maps, shapes, strict=True):
        if len(m.results) != len(shape):
            raise EvaluationError(f"indexing map with {len(m.results)} results for an operand of rank {len(shape)}")
        for r, s in zip(m.results, shape, strict=True):
            if r[0] == "d":
                if sizes[r[1]] is None:
                    sizes[r[1]] = s
                elif sizes[r[1]] != s:
                    raise EvaluationError(f"loop d{r[1]} has size {sizes[r[1]]} and {s} in different operands")
    missing = [f"d{j}" for j, s in enumerate(sizes) if s is None]
    if missing:
        raise EvaluationError(f"cannot infer the bounds of loops {', '.join(missing)} from the operand shapes")
    return tuple(s for s in sizes if s is not None)


def _expr(e: tuple, grids: Callable[[int], np.ndarray]) -> np.ndarray | int:
    kind = e[0]
    if kind == "d":
        return grids(e[1])
    if kind == "c":
        return int(e[1])
    if kind == "s":
        raise EvaluationError("affine maps with symbols are not supported")
    a, b = _expr(e[1], grids), _expr(e[2], grids)
    if kind == "+":
        return a + b
    if kind == "-":
        return a - b
    if kind == "*":
        return a * b
    if kind == "floordiv":
        return a // b
    if kind == "ceildiv":
        return -(-a // b)
    if kind == "mod":
        return a % b
    raise EvaluationError(f"unknown affine expression '{kind}'")


def view(arr: np.ndarray, amap: AffineMapAttr, space: LoopSpace) -> np.ndarray:
    """``arr`` read through ``amap`` as an array over ``space`` (size-1 axes for unused loops)."""
    pos = amap.dim_positions()
    fixed = dict(space.fixed)
    if pos is not None and len(set(pos)) == len(pos) and set(pos) <= set(space.dims):
        order = sorted(range(len(pos)), key=lambda i: pos[i])
        t = arr.transpose(order) if order != list(range(len(pos))) else arr
        shape = [1] * len(space.dims)
        for i in order:
            shape[space.dims.index(pos[i])] = arr.shape[i]
        v = t.reshape(shape)
        if any(d in fixed for d in pos):
            v = v[tuple(slice(fixed[d], fixed[d] + 1) if d in fixed and d in pos else slice(None) for d in space.dims)]
        return v
    idx = tuple(_expr(r, space.index) for r in amap.results)
    for axis, (i, n) in enumerate(zip(idx, arr.shape, strict=True)):
        if np.any(np.asarray(i) < 0) or np.any(np.asarray(i) >= n):
            raise EvaluationError(f"indexing map reads out of bounds in dim {axis} (size {n})")
    out = np.asarray(arr[idx]) if idx else arr
    if out.ndim < len(space.dims):
        out = out.reshape((1,) * (len(space.dims) - out.ndim) + out.shape)
    return out


def to_output(val: np.ndarray, amap: AffineMapAttr, space: LoopSpace) -> np.ndarray:
    """Inverse of :func:`view` for an output: space-shaped ``val`` laid out as the operand's dims.

    Loops the output map omits must be size 1 (reduced); a parallel loop it omits keeps its last
    iteration, as sequential execution would.
    """
    pos = amap.dim_positions()
    if pos is None or len(set(pos)) != len(pos):
        raise EvaluationError("output indexing maps must be projected permutations")
    full = [space.sizes[d] if d in pos and d not in dict(space.fixed) else 1 for d in space.dims]
    val = np.broadcast_to(val, np.broadcast_shapes(val.shape, tuple(full)))
    sel = tuple(slice(None) if d in pos else -1 for d in space.dims)
    kept = [d for d in space.dims if d in pos]
    out = val[sel]
    return out.transpose([kept.index(d) for d in pos]) if kept != list(pos) else out


# ------------------------------------------------------------------------------------ generic

BodyFn = Callable[[list[np.ndarray], LoopSpace], list[np.ndarray]]
"""Runs a body on block-argument arrays over a loop space and returns the yielded arrays."""


def reduction_combiners(block: Block, n_in: int) -> list[tuple[Operation, Value]] | None:
    """For each output: the combiner op and its non-accumulator operand, if the body is a plain fold.

    A fold yields ``combiner(out_k, x)`` (either operand order) where ``x`` does not depend on any out
    argument, and ``out_k`` and the combiner's result have no other use.
    """
    out_args = block.args[n_in:]
    term = block.ops[-1] if block.ops else None
    if term is None or len(term.operands) != len(out_args):
        return None
    tainted = set(out_args)
    uses: dict[Value, int] = {}
    for op in block.ops:
        for v in op.operands:
            uses[v] = uses.get(v, 0) + 1
        if any(v in tainted for v in op.operands) and op is not term:
            tainted.update(op.results)
    found: list[tuple[Operation, Value]] = []
    for acc, y in zip(out_args, term.operands, strict=True):
        op = y.owner
        if not isinstance(op, Operation) or op.name not in COMBINERS or op not in block.ops or len(op.operands) != 2:
            return None
        a, b = op.operands
        other = b if a is acc else a if b is acc else None
        if other is None or other in tainted or uses.get(acc, 0) != 1 or uses.get(y, 0) != 1:
            return None
        if op.name in ("arith.addi", "arith.muli") and getattr(acc.type, "name", "") == "i1":
            return None  # i1 add/mul wrap (xor/and); the per-point path gets that right
        found.append((op, other))
    return found


@dataclass(frozen=True)
class Fold:
    """A fold body, split for the vectorized reduction path.

    ``contributions`` returns, per output, the values ``x`` folded at each point of the space;
    ``combiners`` names each output's combiner op (a key of ``COMBINERS``); ``combine(k, init, r)``
    applies output k's combiner to its init and the reduced contributions (with MLIR's op semantics).
    """

    combiners: list[str]
    contributions: BodyFn
    combine: Callable[[int, np.ndarray, np.ndarray], np.ndarray]


def run_generic(
    maps: Sequence[AffineMapAttr],
    iterators: Sequence[str],
    inputs: Sequence[np.ndarray],
    outputs: Sequence[np.ndarray],
    body: BodyFn,
    fold: Fold | None = None,
) -> list[np.ndarray]:
    """``linalg.generic`` semantics; results are in the outputs' layouts (cast by the caller).

    With ``fold`` the reduction loops are reduced by NumPy ufuncs over the whole space; without it
    they run point by point through ``body`` (vectorized over the parallel loops).
    """
    sizes = loop_sizes(maps, [a.shape for a in [*inputs, *outputs]])
    space = LoopSpace.full(sizes)
    red = [d for d, it in enumerate(iterators) if it == "reduction"]
    n_in = len(inputs)
    out_maps = maps[n_in:]
    if not red:
        args = [view(a, m, space) for a, m in zip([*inputs, *outputs], maps, strict=True)]
        ys = body(args, space)
        return [to_output(y, m, space) for y, m in zip(ys, out_maps, strict=True)]
    if fold is not None:
        args = [view(a, m, space) for a, m in zip(inputs, maps[:n_in], strict=True)]
        xs = fold.contributions(args, space)
        results = []
        for k, (x, out, m) in enumerate(zip(xs, outputs, out_maps, strict=True)):
            x = np.broadcast_to(np.asarray(x).astype(out.dtype, copy=False), space.shape)
            reduced = COMBINERS[fold.combiners[k]].reduce(x, axis=tuple(red), keepdims=True)
            results.append(to_output(fold.combine(k, view(out, m, space), reduced), m, space))
        return results
    par_shape = tuple(1 if d in red else s for d, s in enumerate(sizes))
    accs = [np.broadcast_to(view(out, m, space), par_shape) for out, m in zip(outputs, out_maps, strict=True)]
    for point in itertools.product(*(range(sizes[d]) for d in red)):
        sub = LoopSpace(space.sizes, space.dims, tuple(zip(red, point, strict=True)))
        args = [view(a, m, sub) for a, m in zip(inputs, maps[:n_in], strict=True)]
        ys = body([*args, *accs], sub)
        accs = [np.broadcast_to(y, par_shape) for y in ys]
    return [to_output(acc, m, space) for acc, m in zip(accs, out_maps, strict=True)]


# -------------------------------------------------------------------------------- contractions


def compute_dtype(out_dtype: np.dtype) -> np.dtype:
    """Precision a contraction accumulates in: >= f32 for floats, int64 for integers."""
    if out_dtype.kind == "f":
        return np.result_type(out_dtype, np.float32)
    return np.dtype(np.int64)


def _as_compute(x: np.ndarray, dt: np.dtype) -> np.ndarray:
    if x.dtype == np.bool_:  # cast_signed: i1 true is -1
        x = np.where(x, -1, 0)
    return x.astype(dt, copy=False)


def _batched_matmul(
    a: np.ndarray, b: np.ndarray, pa: Sequence[int], pb: Sequence[int], pc: Sequence[int]
) -> np.ndarray | None:
    """``a · b`` laid out as ``pc`` through one ``np.matmul`` (BLAS), if every loop is a batch, M, N or
    K loop; None for other forms (a loop only one input uses, say)."""
    sa, sb, sc = set(pa), set(pb), set(pc)
    bat = [d for d in pc if d in sa and d in sb]
    m = [d for d in pc if d in sa and d not in sb]
    n = [d for d in pc if d in sb and d not in sa]
    k = [d for d in pa if d in sb and d not in sc]
    if sa != set(bat + m + k) or sb != set(bat + n + k) or sc != set(bat + m + n):
        return None
    size = {d: a.shape[i] for i, d in enumerate(pa)} | {d: b.shape[i] for i, d in enumerate(pb)}

    def prod(dims: list[int]) -> int:
        return math.prod(size[d] for d in dims)

    at = a.transpose([pa.index(d) for d in bat + m + k]).reshape(prod(bat), prod(m), prod(k))
    bt = b.transpose([pb.index(d) for d in bat + k + n]).reshape(prod(bat), prod(k), prod(n))
    out = np.matmul(at, bt).reshape([size[d] for d in bat + m + n])
    order = bat + m + n
    return out.transpose([order.index(d) for d in pc])


def contract(
    lhs: np.ndarray, rhs: np.ndarray, acc: np.ndarray, maps: Sequence[AffineMapAttr], out_dtype: np.dtype
) -> np.ndarray:
    """``acc + sum_k cast(lhs) * cast(rhs)`` for a matmul-like op with the given (lhs, rhs, acc) maps.

    Batch/M/N/K forms (every named contraction) run as one ``np.matmul``; any other maps are
    evaluated over the iteration space and summed over the loops the accumulator does not use.
    """
    dt = compute_dtype(out_dtype)
    a, b, c = (_as_compute(x, dt) for x in (lhs, rhs, acc))
    sizes = loop_sizes(maps, [a.shape, b.shape, c.shape])
    pos = [m.dim_positions() for m in maps]
    if all(p is not None and len(set(p)) == len(p) for p in pos):
        prod = _batched_matmul(a, b, pos[0], pos[1], pos[2])  # type: ignore[arg-type]
        if prod is not None:
            return np.asarray(c + prod)
    space = LoopSpace.full(sizes)
    out_dims = set(pos[2] or ())
    red = tuple(d for d in range(len(sizes)) if d not in out_dims)
    prod = np.sum(view(a, maps[0], space) * view(b, maps[1], space), axis=red, keepdims=True)
    return to_output(view(c, maps[2], space) + prod, maps[2], space)


# ---------------------------------------------------------------------------------- attention


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

    Loop roles come from the maps: k1 (in Q and K, not in O) is the dot-product dim, k2 (in K and V,
    not in O) the softmax dim. Computes in at least f32 (IREE accumulates f16 attention in f32).
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
    if not k1 or not k2:
        raise EvaluationError("attention maps do not show a reduction (k1) and a softmax (k2) dimension")
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
