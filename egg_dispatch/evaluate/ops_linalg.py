"""Handlers for ``linalg`` and ``iree_linalg_ext`` ops, plain and on packed (encoded) operands."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, cast

import numpy as np

from egg_dispatch.evaluate import kernels
from egg_dispatch.evaluate.encoding import contract_packed, zeros
from egg_dispatch.evaluate.registry import Frame, handles
from egg_dispatch.evaluate.scalar import apply_elementwise
from egg_dispatch.evaluate.structured import (
    Fold,
    LoopSpace,
    attention,
    contract,
    gather,
    identity_map,
    perm_map,
    reduction_combiners,
    run_generic,
)
from egg_dispatch.evaluate.values import EvaluationError, PackedTensor, element_type, to_type
from egg_dispatch.mlir.ir import AffineMapAttr, ArrayAttr, Block, IntAttr, Operation, ScalarType, Value
from egg_dispatch.mlir.ops import (
    DYNAMIC,
    attr,
    base_operands,
    dim_group,
    ins,
    int_list,
    iterator_types,
    outs,
    tensor_type,
)

if TYPE_CHECKING:
    from egg_dispatch.evaluate.core import Interpreter

__all__ = ["NAMED_CONTRACTIONS", "PackedGeneric"]

NAMED_CONTRACTIONS: dict[str, tuple[int, tuple[tuple[int, ...], ...]]] = {
    "linalg.matmul": (3, ((0, 2), (2, 1), (0, 1))),
    "linalg.batch_matmul": (4, ((0, 1, 3), (0, 3, 2), (0, 1, 2))),
    "linalg.matvec": (2, ((0, 1), (1,), (0,))),
    "linalg.vecmat": (2, ((1,), (1, 0), (0,))),
    "linalg.batch_matvec": (3, ((0, 1, 2), (0, 2), (0, 1))),
    "linalg.batch_vecmat": (3, ((0, 2), (0, 2, 1), (0, 1))),
    "linalg.dot": (1, ((0,), (0,), ())),
}
"""Implicit (lhs, rhs, acc) maps of the named contractions: (number of loops, loop dims per operand). The
retired ``*_transpose_a`` / ``_b`` ops are read as ``linalg.matmul`` / ``batch_matmul`` with their maps
(``mlir.retired``)."""

_NAMED_ELEMENTWISE: dict[str, tuple[str, str]] = {
    "linalg.add": ("arith.addf", "arith.addi"),
    "linalg.sub": ("arith.subf", "arith.subi"),
    "linalg.mul": ("arith.mulf", "arith.muli"),
    "linalg.div": ("arith.divf", "arith.divsi"),
    "linalg.div_unsigned": ("arith.divf", "arith.divui"),
    "linalg.max": ("arith.maximumf", "arith.maxsi"),
    "linalg.min": ("arith.minimumf", "arith.minsi"),
    "linalg.powf": ("math.powf", "math.powf"),
    "linalg.exp": ("math.exp", "math.exp"),
    "linalg.log": ("math.log", "math.log"),
    "linalg.abs": ("math.absf", "math.absi"),
    "linalg.ceil": ("math.ceil", "math.ceil"),
    "linalg.floor": ("math.floor", "math.floor"),
    "linalg.negf": ("arith.negf", "arith.negf"),
    "linalg.sqrt": ("math.sqrt", "math.sqrt"),
    "linalg.rsqrt": ("math.rsqrt", "math.rsqrt"),
    "linalg.tanh": ("math.tanh", "math.tanh"),
    "linalg.erf": ("math.erf", "math.erf"),
    "linalg.round": ("math.round", "math.round"),
}
"""Named elementwise ops as the ``arith``/``math`` op they apply (float, integer)."""

_CASTS = frozenset({"arith.extf", "arith.truncf", "arith.extsi", "arith.extui", "arith.sitofp", "arith.uitofp"})


def _maps(op: Operation) -> list[AffineMapAttr]:
    attr = op.attributes.get("indexing_maps")
    if attr is None:
        return []
    assert isinstance(attr, ArrayAttr)
    maps = [m for m in attr.items if isinstance(m, AffineMapAttr)]
    if len(maps) != len(attr.items):
        raise EvaluationError("indexing_maps must be affine maps")
    return maps


def _operands(vals: list[Value], frame: Frame) -> list[object]:
    """Operand values as held: arrays (scalars are 0-d, with the map ``() -> ()``) or packed tensors."""
    return [frame.get(v) for v in vals]


def _plain(it: Interpreter, vals: list[Value], frame: Frame) -> list[np.ndarray]:
    """Operand values that must be plain arrays (an op without a packed form)."""
    return [it.array(v, frame) for v in vals]


def _out_types(op: Operation) -> list[ScalarType]:
    return [element_type(r.type) for r in op.results]


# --------------------------------------------------------------------------- simple linalg ops


@handles("linalg.fill")
def _fill(it: Interpreter, op: Operation, frame: Frame) -> list[object]:
    value = to_type(it.array(op.operands[0], frame), op.result.type)
    init = frame.get(op.operands[1])
    if isinstance(init, PackedTensor):
        return [PackedTensor(np.full(init.packed.shape, value, init.dtype), init.layout, init.shape)]
    return [zeros(tensor_type(op.result).without_encoding(), None, value)]


@handles("linalg.index")
def _index(it: Interpreter, op: Operation, frame: Frame) -> list[object]:
    return [frame.loop_space().index(attr(op, "dim", IntAttr).value)]


@handles("linalg.transpose")
def _transpose(it: Interpreter, op: Operation, frame: Frame) -> list[object]:
    x = it.array(ins(op)[0], frame)
    return [to_type(x.transpose(int_list(op.attributes["permutation"])), op.result.type)]


@handles("linalg.broadcast")
def _broadcast(it: Interpreter, op: Operation, frame: Frame) -> list[object]:
    x = it.array(ins(op)[0], frame)
    shape = tensor_type(op.result).static_shape
    x = np.expand_dims(x, tuple(int_list(op.attributes["dimensions"])))
    return [to_type(np.broadcast_to(x, shape), op.result.type)]


@handles("linalg.copy")
def _copy(it: Interpreter, op: Operation, frame: Frame) -> list[object]:
    return [to_type(it.array(ins(op)[0], frame), op.result.type)]


@handles(*_NAMED_ELEMENTWISE)
def _named_elementwise(it: Interpreter, op: Operation, frame: Frame) -> list[object]:
    args = _plain(it, ins(op), frame)
    out = it.array(outs(op)[0], frame)
    maps = _maps(op) or [identity_map(out.ndim)] * (len(args) + 1)
    out_t = _out_types(op)[0]
    name = _NAMED_ELEMENTWISE[op.name][0 if out_t.is_float else 1]
    in_t = [element_type(v.type) for v in ins(op)]

    def body(vals: list[np.ndarray], space: LoopSpace) -> list[np.ndarray]:
        return [apply_elementwise(name, vals[: len(args)], in_t, out_t, {})]

    res = run_generic(maps, ["parallel"] * maps[0].num_dims, args, [out], body)
    return [to_type(res[0], out_t)]


# -------------------------------------------------------------------------------- generic


def _contraction_body(block: Block) -> bool:
    """``yield add(out, mul(cast?(in0), cast?(in1)))``: a matmul-like generic."""
    if len(block.args) != 3 or not block.ops or len(block.ops[-1].operands) != 1:
        return False

    def strip(v: Value) -> Value:
        while isinstance(v.owner, Operation) and v.owner.name in _CASTS:
            v = v.owner.operands[0]
        return v

    add = block.ops[-1].operands[0].owner
    if not isinstance(add, Operation) or add.name not in ("arith.addf", "arith.addi"):
        return False
    others = [v for v in add.operands if v is not block.args[2]]
    if len(others) != 1 or not isinstance(others[0].owner, Operation):
        return False
    mul = others[0].owner
    if mul.name not in ("arith.mulf", "arith.muli"):
        return False
    return {strip(v) for v in mul.operands} == {block.args[0], block.args[1]}


@handles("linalg.generic")
def _generic(it: Interpreter, op: Operation, frame: Frame) -> list[object]:
    in_vals, out_vals = _operands(ins(op), frame), _operands(outs(op), frame)
    maps, iters = _maps(op), list(iterator_types(op))
    block = op.regions[0].entry
    if any(isinstance(x, PackedTensor) for x in [*in_vals, *out_vals]):
        return _generic_packed(it, op, frame, in_vals, out_vals, maps, iters, block)
    n_in = len(in_vals)
    plain_in, plain_out = _plain(it, ins(op), frame), _plain(it, outs(op), frame)

    def body(args: list[np.ndarray], space: LoopSpace) -> list[np.ndarray]:
        return cast("list[np.ndarray]", it.run_block(block, args, frame, space))  # a body yields arrays

    fold = None
    found = reduction_combiners(block, n_in) if "reduction" in iters else None
    if found:
        skip = {c for c, _ in found}
        kept = [o for o in block.ops[:-1] if o not in skip]

        def contributions(args: list[np.ndarray], space: LoopSpace) -> list[np.ndarray]:
            sub = Frame(frame, space)
            sub.values.update(zip(block.args[:n_in], args, strict=True))
            it.exec_ops(kept, sub)
            return [cast(np.ndarray, sub.get(x)) for _, x in found]  # the body's values are arrays

        def combine(k: int, init: np.ndarray, reduced: np.ndarray) -> np.ndarray:
            cop = found[k][0]
            t = element_type(cop.result.type)
            pair = [init, reduced] if cop.operands[0] is block.args[n_in + k] else [reduced, init]
            return apply_elementwise(cop.name, pair, [t, t], t, {})

        fold = Fold([c.name for c, _ in found], contributions, combine)
    results = run_generic(maps, iters, plain_in, plain_out, body, fold)
    return [to_type(r, t) for r, t in zip(results, _out_types(op), strict=True)]


def _generic_packed(
    it: Interpreter,
    op: Operation,
    frame: Frame,
    in_vals: list[object],
    out_vals: list[object],
    maps: list[AffineMapAttr],
    iters: list[str],
    block: Block,
) -> list[object]:
    """A generic on packed operands: a contraction runs mmt4d; a parallel op runs on the tiles
    (``PackedGeneric``)."""
    if len(in_vals) == 2 and len(out_vals) == 1 and "reduction" in iters and _contraction_body(block):
        return _contraction_packed(it, op, in_vals, out_vals)
    packed = PackedGeneric.of([*in_vals, *out_vals], maps, iters, len(out_vals))
    # the packed ones' tiles, else an array (a scalar, broadcast by its map () -> ())
    arrays = [x.packed if isinstance(x, PackedTensor) else cast(np.ndarray, x) for x in [*in_vals, *out_vals]]
    n_in = len(in_vals)

    def body(args: list[np.ndarray], space: LoopSpace) -> list[np.ndarray]:
        # _LogicalIndices stands in for the LoopSpace: its own index(), the rest delegated
        logical_space = cast(LoopSpace, _LogicalIndices(space, packed))
        return cast("list[np.ndarray]", it.run_block(block, args, frame, logical_space))  # a body yields arrays

    results = run_generic(packed.maps, ["parallel"] * packed.rank, arrays[:n_in], arrays[n_in:], body)
    return [
        PackedTensor(to_type(r, t), o.layout, o.shape)
        for r, t, o in zip(results, _out_types(op), cast("list[PackedTensor]", out_vals), strict=True)
    ]  # PackedGeneric.of checked that every output (each has a map) is packed


@dataclass(frozen=True)
class PackedGeneric:
    """An all-parallel generic rewritten for its packed operands, as IREE's
    ``lowerGenericOpWithResolvedLayouts`` materializes an encoded generic.

    The first output is the anchor: its map is made the identity by interchanging the loops
    (``loop_of``: original loop -> anchor dim), and its packed dims are the new iteration space (its
    outer dims in ``outer_dims_perm`` order, then its inner tiles). Every other operand's packed dims map
    onto that space: its outer dims (in its own ``outer_dims_perm`` order) through its map to the anchor's
    outer loops, its inner tiles to the anchor's tile of the same dim. So a bias ``[N]`` packed
    ``[N1, N0]`` reads ``(n1, n0)`` of an accumulator packed ``[M1, N1, M0, N0]``. Every operand of rank > 0
    must be packed (IREE's rewrite fails on a mix) with the anchor's tile on each tiled dim; scalars keep
    the empty map. ``linalg.index d`` in the body becomes the logical index, ``outer * tile + inner`` on a
    tiled dim (``computePackedIndex``).
    """

    maps: list[AffineMapAttr]
    rank: int
    loop_of: dict[int, int]
    outer_of: dict[int, int]
    """Anchor dim -> its packed outer loop."""
    tile_of: dict[int, tuple[int, int]]
    """Tiled anchor dim -> (tile, its packed inner loop)."""

    @staticmethod
    def of(values: list[object], maps: list[AffineMapAttr], iters: list[str], n_out: int) -> PackedGeneric:
        if any(i != "parallel" for i in iters):
            raise EvaluationError("a linalg.generic on packed (encoded) operands must be all-parallel")
        anchor = values[len(values) - n_out]
        if not isinstance(anchor, PackedTensor):
            raise EvaluationError("a linalg.generic whose first output is plain cannot read packed (encoded) operands")
        dims = [m.dim_positions() for m in maps]
        out_dims = dims[len(values) - n_out]
        if out_dims is None or sorted(out_dims) != list(range(maps[0].num_dims)):
            raise EvaluationError("the first output map of a generic on packed operands must be a permutation")
        loop_of = {old: new for new, old in enumerate(out_dims)}
        lay = anchor.layout
        rank_out = len(anchor.shape)
        outer_of = {d: i for i, d in enumerate(lay.outer_dims_perm)}
        tiles = zip(lay.inner_dims_pos, lay.inner_tiles, strict=True)
        tile_of = {d: (t, rank_out + i) for i, (d, t) in enumerate(tiles)}
        rank = rank_out + len(lay.inner_tiles)
        out: list[AffineMapAttr] = []
        for x, m, ds in zip(values, maps, dims, strict=True):
            if not m.results:
                out.append(AffineMapAttr(rank, 0, ()))
                continue
            if ds is None:
                raise EvaluationError("the maps of a generic on packed operands must be projected permutations")
            if not isinstance(x, PackedTensor):
                raise EvaluationError("a linalg.generic mixes packed (encoded) and plain operands")
            loops = [loop_of[d] for d in ds]
            olay = x.layout
            packed = [outer_of[loops[p]] for p in olay.outer_dims_perm]
            for pos, tile in zip(olay.inner_dims_pos, olay.inner_tiles, strict=True):
                want = tile_of.get(loops[pos])
                if want is None or want[0] != tile:
                    raise EvaluationError(
                        f"a packed operand tiled {tile} on loop d{loops[pos]} does not match the first output's tiles"
                    )
                packed.append(want[1])
            out.append(AffineMapAttr(rank, 0, tuple(("d", d) for d in packed)))
        return PackedGeneric(out, rank, loop_of, outer_of, tile_of)


@dataclass(frozen=True)
class _LogicalIndices:
    """The loop space of a packed generic as its body's ``linalg.index`` sees it: logical indices."""

    space: LoopSpace
    packed: PackedGeneric

    def index(self, dim: int) -> np.ndarray:
        d = self.packed.loop_of.get(dim)
        if d is None:
            raise EvaluationError(f"linalg.index {dim}: no such loop here")
        outer = self.space.index(self.packed.outer_of[d])
        if d not in self.packed.tile_of:
            return outer
        tile, inner = self.packed.tile_of[d]
        return outer * tile + self.space.index(inner)

    def __getattr__(self, name: str) -> object:
        return getattr(self.space, name)


# ---------------------------------------------------------------------------- contractions


def _contraction_packed(it: Interpreter, op: Operation, in_vals: list[object], out_vals: list[object]) -> list[object]:
    lhs, rhs = in_vals
    acc = out_vals[0]
    if not (isinstance(lhs, PackedTensor) and isinstance(rhs, PackedTensor) and isinstance(acc, PackedTensor)):
        raise EvaluationError("a contraction mixes packed (encoded) and plain operands")
    if it.target is None:  # pragma: no cover - packed values only exist with a target
        raise EvaluationError("packed operands without a target")
    return [contract_packed(lhs, rhs, acc, tensor_type(op.result), it.target)]


@handles(*NAMED_CONTRACTIONS)
def _contraction(it: Interpreter, op: Operation, frame: Frame) -> list[object]:
    in_vals, out_vals = _operands(ins(op), frame), _operands(outs(op), frame)
    if any(isinstance(x, PackedTensor) for x in [*in_vals, *out_vals]):
        return _contraction_packed(it, op, in_vals, out_vals)
    lhs, rhs = _plain(it, ins(op), frame)
    acc = it.array(outs(op)[0], frame)
    maps = _maps(op)
    if not maps:
        n, dims = NAMED_CONTRACTIONS[op.name]
        maps = [perm_map(n, d) for d in dims]
    out_t = tensor_type(op.result)
    return [to_type(contract(lhs, rhs, acc, maps, np.dtype(acc.dtype)), out_t)]


@handles("linalg.mmt4d", "linalg.batch_mmt4d")
def _mmt4d(it: Interpreter, op: Operation, frame: Frame) -> list[object]:
    lhs, rhs = _plain(it, ins(op), frame)
    acc = it.array(outs(op)[0], frame)
    fn = kernels.mmt4d if op.name == "linalg.mmt4d" else kernels.batch_mmt4d
    return [to_type(fn(lhs, rhs, acc), op.result.type)]


def _inner_tiles(it: Interpreter, op: Operation, frame: Frame) -> list[int]:
    """A pack / unpack's ``inner_tiles``, its dynamic ones (``[%t]``) read from the frame."""
    dyn = iter(dim_group(op, 0))
    return [int(it.array(next(dyn), frame)) if t == DYNAMIC else t for t in int_list(op.attributes["inner_tiles"])]


@handles("linalg.pack")
def _pack(it: Interpreter, op: Operation, frame: Frame) -> list[object]:
    base = base_operands(op)
    src = it.array(base[0], frame)
    pad = it.array(base[2], frame) if len(base) > 2 else np.asarray(0, src.dtype)
    perm = op.attributes.get("outer_dims_perm")
    out = kernels.pack(
        src,
        int_list(op.attributes["inner_dims_pos"]),
        _inner_tiles(it, op, frame),
        int_list(perm) if perm is not None else None,
        pad.item(),
    )
    dest = it.array(base[1], frame).shape  # the result's shape, also where the type has '?'
    if out.shape != dest:
        raise EvaluationError(f"pack produces shape {out.shape}, but its destination has shape {dest}")
    return [out]


@handles("linalg.unpack")
def _unpack(it: Interpreter, op: Operation, frame: Frame) -> list[object]:
    src = it.array(op.operands[0], frame)
    dest = it.array(op.operands[1], frame).shape  # the result's shape, also where the type has '?'
    perm = op.attributes.get("outer_dims_perm")
    return [
        kernels.unpack(
            src,
            int_list(op.attributes["inner_dims_pos"]),
            _inner_tiles(it, op, frame),
            int_list(perm) if perm is not None else None,
            dest,
        )
    ]


# -------------------------------------------------------------------------------- linalg_ext


def _is_passthrough(block: Block | None) -> bool:
    return block is None or (len(block.ops) == 1 and block.ops[0].operands == block.args[:1])


@handles("iree_linalg_ext.attention")
def _attention(it: Interpreter, op: Operation, frame: Frame) -> list[object]:
    vals = _plain(it, ins(op), frame)
    maps = _maps(op)
    if len(vals) not in (4, 5) or len(maps) != len(vals) + 1:
        raise EvaluationError("attention takes (q, k, v, scale[, mask]) and one indexing map per operand")
    block = op.regions[0].entry if op.regions else None
    score_body = None
    if not _is_passthrough(block):
        assert block is not None

        def score_body(s: np.ndarray, space: LoopSpace) -> np.ndarray:
            return np.asarray(it.run_block(block, [s], frame, space)[0])

    mask = vals[4] if len(vals) == 5 else None
    out_t = tensor_type(op.result)
    o = attention(vals[0], vals[1], vals[2], vals[3], mask, maps, score_body, np.dtype(np.float64))
    return [to_type(o, out_t)]


@handles("iree_linalg_ext.gather")
def _gather(it: Interpreter, op: Operation, frame: Frame) -> list[object]:
    source, indices = _plain(it, ins(op), frame)
    out = it.array(outs(op)[0], frame)
    got = gather(source, indices, int_list(op.attributes["dimension_map"]), out.shape)
    block = op.regions[0].entry if op.regions else None
    if not _is_passthrough(block):
        assert block is not None
        got = np.asarray(it.run_block(block, [got, out], frame, LoopSpace.full(out.shape))[0])
    return [to_type(np.broadcast_to(got, out.shape), op.result.type)]
