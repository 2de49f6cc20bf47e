"""An all-parallel ``linalg.generic`` spelled on packed operands: the indexing maps IREE's codegen gives it.

``lowerGenericOpWithResolvedLayouts`` (Codegen/ExternalInterfaces/Utils.cpp) materializes an encoded
generic on the tiles: the first output is the anchor (its map a permutation, interchanged to the
identity), its packed dims -- outer dims in ``outer_dims_perm`` order, then its inner tiles -- are the new
iteration space, and every other operand's packed dims map onto it: its outer dims through its own map to
the anchor's outer loops, each of its inner tiles to the anchor's tile of the same dim. A bias ``[N]``
packed ``[N1, N0]`` thus reads ``(d1, d3)`` of an accumulator packed ``[M1, N1, M0, N0]``; operands of one
layout read the identity. Rank-0 operands keep the empty map. Used where a plan spells encodings
physically (``--materialize``, and ``--emit iree`` when a packed tensor is sliced); the evaluator
computes the same mapping on its own for encoded generics (``evaluate.ops_linalg.PackedGeneric``).
"""

from __future__ import annotations

from collections.abc import Sequence

from egg_dispatch.mlir.ir import AffineMapAttr
from egg_dispatch.target.layout import Layout

__all__ = ["PackedGenericError", "packed_generic_maps", "packed_loop_indices"]


class PackedGenericError(ValueError):
    """The generic cannot run on these packed operands (IREE's rewrite fails the same way)."""


def _perm(layout: Layout, rank: int) -> tuple[int, ...]:
    return tuple(layout.outer_dims_perm) or tuple(range(rank))


def packed_generic_maps(
    maps: Sequence[AffineMapAttr], layouts: Sequence[Layout | None], n_out: int
) -> tuple[list[AffineMapAttr], int]:
    """(the packed indexing maps, the packed iteration rank) of a parallel generic whose operands (inputs
    then inits, matching ``maps``) are packed in ``layouts`` (None only for rank-0 operands)."""
    anchor = len(maps) - n_out
    out_map, lay = maps[anchor], layouts[anchor]
    out_dims = out_map.dim_positions()
    if lay is None or out_dims is None or sorted(out_dims) != list(range(out_map.num_dims)):
        raise PackedGenericError("the first output of a generic on packed operands must be packed, by a permutation")
    loop_of = {old: new for new, old in enumerate(out_dims)}
    rank_out = len(out_dims)
    outer_of = {d: i for i, d in enumerate(_perm(lay, rank_out))}
    tile_of = {d: (t, rank_out + i) for i, (d, t) in enumerate(zip(lay.inner_dims_pos, lay.inner_tiles, strict=True))}
    rank = rank_out + len(lay.inner_tiles)
    out: list[AffineMapAttr] = []
    for m, olay in zip(maps, layouts, strict=True):
        if not m.results:
            out.append(AffineMapAttr(rank, 0, ()))
            continue
        dims = m.dim_positions()
        if dims is None or m.num_symbols:
            raise PackedGenericError("the maps of a generic on packed operands must be projected permutations")
        if olay is None:
            raise PackedGenericError("a generic mixes packed and plain operands")
        loops = [loop_of[d] for d in dims]
        packed = [outer_of[loops[p]] for p in _perm(olay, len(dims))]
        for pos, tile in zip(olay.inner_dims_pos, olay.inner_tiles, strict=True):
            want = tile_of.get(loops[pos])
            if want is None or want[0] != tile:
                raise PackedGenericError(
                    f"an operand tiled {tile} on loop d{loops[pos]} does not match the first output's tiles"
                )
            packed.append(want[1])
        out.append(AffineMapAttr(rank, 0, tuple(("d", d) for d in packed)))
    return out, rank


def packed_loop_indices(
    maps: Sequence[AffineMapAttr], layouts: Sequence[Layout | None], n_out: int
) -> dict[int, tuple[int, int, int] | tuple[int]]:
    """Each loop of the generic -> where its logical index comes from in the packed iteration space of
    ``packed_generic_maps``: ``(outer,)`` for a loop the anchor does not tile, ``(outer, tile, inner)``
    for one it does (the index is ``outer * tile + inner``, as IREE's codegen rewrites ``linalg.index``
    on the tiles; the evaluator's ``_LogicalIndices`` computes the same)."""
    anchor = len(maps) - n_out
    out_dims, lay = maps[anchor].dim_positions(), layouts[anchor]
    if lay is None or out_dims is None:
        raise PackedGenericError("the first output of a generic on packed operands must be packed, by a permutation")
    rank_out = len(out_dims)
    outer_of = {d: i for i, d in enumerate(_perm(lay, rank_out))}
    tile_of = {d: (t, rank_out + i) for i, (d, t) in enumerate(zip(lay.inner_dims_pos, lay.inner_tiles, strict=True))}
    out: dict[int, tuple[int, int, int] | tuple[int]] = {}
    for new, old in enumerate(out_dims):
        out[old] = (outer_of[new], *tile_of[new]) if new in tile_of else (outer_of[new],)
    return out
