"""Structured ops on NumPy arrays: ``linalg.generic`` in general, contractions, attention, gather.

Views and loop spaces are in ``loop_space.py``, attention and gather in ``linalg_ext.py``; this
module re-exports both.

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

# Attention and gather live in linalg_ext.py, loop spaces and views in loop_space.py; re-exported here.
from egg_dispatch.evaluate.linalg_ext import attention, gather
from egg_dispatch.evaluate.loop_space import LoopSpace, identity_map, loop_sizes, perm_map, to_output, view
from egg_dispatch.mlir.ir import AffineMapAttr, Block, Operation, Value

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
        comb = y.owner
        if (
            not isinstance(comb, Operation)
            or comb.name not in COMBINERS
            or comb not in block.ops
            or len(comb.operands) != 2
        ):
            return None
        a, b = comb.operands
        other = b if a is acc else a if b is acc else None
        if other is None or other in tainted or uses.get(acc, 0) != 1 or uses.get(y, 0) != 1:
            return None
        if comb.name in ("arith.addi", "arith.muli") and getattr(acc.type, "name", "") == "i1":
            return None  # i1 add/mul wrap (xor/and); the per-point path gets that right
        found.append((comb, other))
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
        return [to_output(y, m, space, out) for y, m, out in zip(ys, out_maps, outputs, strict=True)]
    if fold is not None:
        args = [view(a, m, space) for a, m in zip(inputs, maps[:n_in], strict=True)]
        xs = fold.contributions(args, space)
        results = []
        for k, (x, out, m) in enumerate(zip(xs, outputs, out_maps, strict=True)):
            x = np.broadcast_to(np.asarray(x).astype(out.dtype, copy=False), space.shape)
            reduced = COMBINERS[fold.combiners[k]].reduce(x, axis=tuple(red), keepdims=True)
            results.append(to_output(fold.combine(k, view(out, m, space), reduced), m, space, out))
        return results
    par_shape = tuple(1 if d in red else s for d, s in enumerate(sizes))
    accs = [np.broadcast_to(view(out, m, space), par_shape) for out, m in zip(outputs, out_maps, strict=True)]
    for point in itertools.product(*(range(sizes[d]) for d in red)):
        sub = LoopSpace(space.sizes, space.dims, tuple(zip(red, point, strict=True)))
        args = [view(a, m, sub) for a, m in zip(inputs, maps[:n_in], strict=True)]
        ys = body([*args, *accs], sub)
        accs = [np.broadcast_to(y, par_shape) for y in ys]
    return [to_output(acc, m, space, out) for acc, m, out in zip(accs, out_maps, outputs, strict=True)]


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
    perms = [p for p in pos if p is not None and len(set(p)) == len(p)]
    if len(perms) == len(pos):
        prod = _batched_matmul(a, b, perms[0], perms[1], perms[2])
        if prod is not None:
            return np.asarray(c + prod)
    space = LoopSpace.full(sizes)
    out_dims = set(pos[2] or ())
    red = tuple(d for d in range(len(sizes)) if d not in out_dims)
    prod = np.sum(view(a, maps[0], space) * view(b, maps[1], space), axis=red, keepdims=True)
    return to_output(view(c, maps[2], space) + prod, maps[2], space, c)
