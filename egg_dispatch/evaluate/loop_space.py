"""Loop spaces and operand views through indexing maps: the primitives every structured-op evaluator shares."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

from egg_dispatch.evaluate.values import EvaluationError
from egg_dispatch.mlir.ir import AffineMapAttr

__all__ = ["LoopSpace", "identity_map", "loop_expr", "loop_sizes", "perm_map", "to_output", "view"]


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


def loop_expr(e: tuple, grids: Callable[[int], np.ndarray]) -> np.ndarray | int:
    """The value of one affine result expression (``("d", j)``, ``("c", k)``, or a binary op) over the loop grids."""
    kind = e[0]
    if kind == "d":
        return grids(e[1])
    if kind == "c":
        return int(e[1])
    if kind == "s":
        raise EvaluationError("affine maps with symbols are not supported")
    a, b = loop_expr(e[1], grids), loop_expr(e[2], grids)
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
    idx = tuple(loop_expr(r, space.index) for r in amap.results)
    for axis, (ix, n) in enumerate(zip(idx, arr.shape, strict=True)):
        if np.any(np.asarray(ix) < 0) or np.any(np.asarray(ix) >= n):
            raise EvaluationError(f"indexing map reads out of bounds in dim {axis} (size {n})")
    out = np.asarray(arr[idx]) if idx else arr
    if out.ndim < len(space.dims):
        out = out.reshape((1,) * (len(space.dims) - out.ndim) + out.shape)
    return out


def _dims_of(e: tuple) -> set[int]:
    """The loop dims an affine expression reads."""
    if e[0] == "d":
        return {e[1]}
    if e[0] in ("c", "s"):
        return set()
    return _dims_of(e[1]) | _dims_of(e[2])


def to_output(val: np.ndarray, amap: AffineMapAttr, space: LoopSpace, init: np.ndarray | None = None) -> np.ndarray:
    """Inverse of :func:`view` for an output: space-shaped ``val`` laid out as the operand's dims.

    Loops the output map omits must be size 1 (reduced); a parallel loop it omits keeps its last
    iteration, as sequential execution would. Any other map (a constant result such as a keepdim
    reduction's ``(d0, d1, d2) -> (d0, d1, 0)``, an affine expression, a repeated dim) scatters into a
    copy of ``init`` (the op's init operand): elements the map never reaches keep their init values.
    """
    pos = amap.dim_positions()
    if pos is not None and len(set(pos)) == len(pos):
        full = [space.sizes[d] if d in pos and d not in dict(space.fixed) else 1 for d in space.dims]
        val = np.broadcast_to(val, np.broadcast_shapes(val.shape, tuple(full)))
        sel = tuple(slice(None) if d in pos else -1 for d in space.dims)
        kept = [d for d in space.dims if d in pos]
        out = val[sel]
        return out.transpose([kept.index(d) for d in pos]) if kept != list(pos) else out
    if init is None:
        raise EvaluationError("an output indexing map that is not a projected permutation needs the init operand")
    used = sorted(set().union(*(_dims_of(r) for r in amap.results)) & set(space.dims))
    full = [space.sizes[d] if d in used else 1 for d in space.dims]
    val = np.broadcast_to(val, np.broadcast_shapes(val.shape, tuple(full)))
    vals = val[tuple(slice(None) if d in used else -1 for d in space.dims)]  # axes: the used loops
    sub = LoopSpace(space.sizes, tuple(used))
    idx = tuple(np.broadcast_to(np.asarray(loop_expr(r, sub.index), np.int64), vals.shape) for r in amap.results)
    for axis, (i, n) in enumerate(zip(idx, init.shape, strict=True)):
        if np.any(i < 0) or np.any(i >= n):
            raise EvaluationError(f"output indexing map writes out of bounds in dim {axis} (size {n})")
    out = np.array(init, dtype=np.result_type(init.dtype, vals.dtype), copy=True)
    out[idx] = vals
    return out
