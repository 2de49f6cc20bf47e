"""IREE's CPU encoding resolver: inner tiles (the narrow-M/N rule), contraction dims, pack layouts.

Mirrors IREE 3.13 (``CPUEncodingExternalModels.cpp`` ``chooseMatmulTile``, ``Encoding/Utils/Utils.cpp``
``getPo2MatmulNarrowDim``, ``Codegen/Utils/Utils.cpp`` ``getEncodingInfoForMatmul``) so that layouts are
exactly what IREE materializes; also the shape arithmetic of ``linalg.pack`` that the cost model, the
evaluator and the emitters share.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from egg_dispatch.mlir.ir import AffineMapAttr, EncodingAttr, TensorType
from egg_dispatch.target.profile import LHS, RESULT, RHS, ElementTypes, Target, Tile

__all__ = [
    "ContractionDims",
    "Layout",
    "LayoutError",
    "ceil_div",
    "check_relayout",
    "choose_matmul_tile",
    "contraction_dims",
    "encoded_operand_dims",
    "encoding_attr_layout",
    "encoding_layout",
    "encoding_matmul_setup",
    "matmul_narrow_dim",
    "packed_nbytes",
    "packed_outer_shape",
    "packed_shape",
    "resolve_layout",
    "swaps_operands",
]

Maps = Sequence[Sequence[int]]


class LayoutError(ValueError):
    """An encoding this resolver cannot read (the evaluator reports it as an ``EvaluationError``)."""


def _po2_ceil(x: int) -> int:
    return 1 if x <= 1 else 1 << (x - 1).bit_length()


def matmul_narrow_dim(m: int | None, n: int | None) -> tuple[str, int] | None:
    """IREE's ``getPo2MatmulNarrowDim``: ("M"|"N", size rounded up to a power of two) or None.

    ``None`` sizes are dynamic: with one dynamic the other is narrow; with both, or M == N, none is.
    """
    if m is None and n is None:
        return None
    if m is not None and (n is None or m < n):
        return ("M", _po2_ceil(m))
    if n is not None and (m is None or n < m):
        return ("N", _po2_ceil(n))
    return None


def _enumerate_tiles(big: Tile) -> list[Tile]:
    """The big tile followed by its power-of-two truncations in M (AVX-512: 16, 8, 4, 2, 1)."""
    m0, n0, k0 = big
    return [big] + [(1 << e, n0, k0) for e in reversed(range(m0.bit_length())) if 1 << e < m0]


def choose_matmul_tile(
    target: Target, element_types: ElementTypes | str, m: int | None, n: int | None, k: int | None
) -> Tile | None:
    """(M0, N0, K0) IREE picks for an M×N×K matmul, or None (identity layout).

    Lowest padding penalty max(tile.M - po2(narrow), 0) first, then the largest M0·N0·K0 (first wins a
    tie). Narrow N is solved as narrow M on swapped sizes and M0/N0 are swapped back. ``k`` does not
    affect the choice on CPU; it is taken to keep the signature that of an encoding's sizes.
    """
    del k
    big = target.tile(element_types)
    if big is None:
        return None
    narrow = matmul_narrow_dim(m, n)
    best: Tile | None = None
    best_key = (0, 0)
    for tile in _enumerate_tiles(big):
        penalty = max(tile[0] - narrow[1], 0) if narrow else 0
        key = (-penalty, tile[0] * tile[1] * tile[2])
        if best is None or key > best_key:
            best, best_key = tile, key
    assert best is not None
    return (best[1], best[0], best[2]) if narrow and narrow[0] == "N" else best


@dataclass(frozen=True)
class ContractionDims:
    """Loop dims of a contraction by role, as MLIR's ``inferContractionDims`` classifies them."""

    batch: tuple[int, ...]
    m: tuple[int, ...]
    n: tuple[int, ...]
    k: tuple[int, ...]


_ROLE_KEYS = ((True, True, True), (True, False, True), (False, True, True), (True, True, False))


def contraction_dims(maps: Maps, num_loops: int) -> ContractionDims | None:
    """Classify loop dims from the (lhs, rhs, result) maps; None if some dim fits no role."""
    if len(maps) != 3:
        return None
    sets = [set(mp) for mp in maps]
    if any(len(s) != len(mp) or any(not 0 <= d < num_loops for d in s) for s, mp in zip(sets, maps, strict=True)):
        return None
    roles: dict[tuple[bool, bool, bool], list[int]] = {}
    for d in range(num_loops):
        roles.setdefault((d in sets[0], d in sets[1], d in sets[2]), []).append(d)
    if set(roles) - set(_ROLE_KEYS):
        return None
    # (in LHS, in RHS, in RESULT) -> role: batch everywhere, M without RHS, N without LHS, K not in RESULT
    batch, m, n, k = (tuple(roles.get(key, ())) for key in _ROLE_KEYS)
    return ContractionDims(batch, m, n, k)


@dataclass(frozen=True)
class Layout:
    """A resolved encoding: the ``linalg.pack``/``unpack`` attributes of one operand."""

    inner_dims_pos: tuple[int, ...]
    inner_tiles: tuple[int, ...]
    outer_dims_perm: tuple[int, ...]


def _matmul_setup(
    target: Target, element_types: ElementTypes | str, maps: Maps, iteration_sizes: Sequence[int | None]
) -> tuple[ContractionDims, Tile, tuple[str, int] | None] | None:
    cd = contraction_dims(maps, len(iteration_sizes))
    if cd is None or len(cd.k) != 1 or len(cd.m) > 1 or len(cd.n) > 1 or len(cd.batch) > 1:
        return None  # the CPU resolver gives identity with more than one B, M, N or K dim (docs/iree-data-tiling.md §2)
    m = iteration_sizes[cd.m[0]] if cd.m else 1
    n = iteration_sizes[cd.n[0]] if cd.n else 1
    tile = choose_matmul_tile(target, element_types, m, n, iteration_sizes[cd.k[0]])
    return None if tile is None else (cd, tile, matmul_narrow_dim(m, n))


def resolve_layout(
    target: Target,
    operand_index: int,
    element_types: ElementTypes | str,
    maps: Maps,
    iteration_sizes: Sequence[int | None],
    own_dims: Sequence[int] | None = None,
) -> Layout | None:
    """Layout of operand ``operand_index`` (LHS=0, RHS=1, RESULT=2) of a matmul-like contraction.

    ``maps`` gives, per operand, the loop dim of each of its dims (plain matmul: ((0,2),(2,1),(0,1))).
    Mirrors ``getEncodingInfoForMatmul``: outer_dims_perm lists the operand's [batch?, M?, N?, K?]
    dims, inner dims/tiles are its [M?, N?, K?] dims with tiles (M0, N0, K0); for a narrow-N RESULT
    the last two entries of each are swapped and the mmt4d runs on swapped operands
    (:func:`swaps_operands`). None means the identity layout (no tile, no resolver, not a matmul).
    ``own_dims`` (default ``maps[operand_index]``) are the loop dims of the encoded tensor's dims when
    they differ from the contraction's operand (a bubbled encoding, :func:`encoded_operand_dims`).
    """
    if operand_index not in (LHS, RHS, RESULT):
        raise ValueError(f"operand_index must be 0 (LHS), 1 (RHS) or 2 (RESULT), got {operand_index}")
    setup = _matmul_setup(target, element_types, maps, iteration_sizes)
    if setup is None:
        return None
    cd, tile, narrow = setup
    own = list(maps[operand_index] if own_dims is None else own_dims)
    perm: list[int] = []
    pos: list[int] = []
    tiles: list[int] = []
    for dims, size in ((cd.batch, None), (cd.m, tile[0]), (cd.n, tile[1]), (cd.k, tile[2])):
        if dims and dims[0] in own:
            perm.append(own.index(dims[0]))
            if size is not None:
                pos.append(own.index(dims[0]))
                tiles.append(size)
    if operand_index == RESULT and narrow and narrow[0] == "N" and len(tiles) >= 2:
        for seq in (pos, tiles, perm):
            seq[-2], seq[-1] = seq[-1], seq[-2]
    return Layout(tuple(pos), tuple(tiles), tuple(perm))


def swaps_operands(
    target: Target, element_types: ElementTypes | str, maps: Maps, iteration_sizes: Sequence[int | None]
) -> bool:
    """True when IREE lowers this contraction to mmt4d(RHS, LHS): a narrow-N result (docs/iree-data-tiling.md §1.9)."""
    setup = _matmul_setup(target, element_types, maps, iteration_sizes)
    return setup is not None and setup[2] is not None and setup[2][0] == "N"


def packed_shape(shape: Sequence[int], layout: Layout | None) -> tuple[int, ...]:
    """Shape of the packed tensor (the logical shape itself for the identity layout)."""
    if layout is None:
        return tuple(shape)
    return packed_outer_shape(shape, layout.inner_dims_pos, layout.inner_tiles, layout.outer_dims_perm)


def packed_nbytes(shape: Sequence[int], elem_bytes: int, layout: Layout | None) -> int:
    """Storage bytes: Π alignTo(dim, tile) × element bytes (``calculatePackedStorageSizeInBytesImpl``)."""
    tile_of = dict(zip(layout.inner_dims_pos, layout.inner_tiles, strict=True)) if layout else {}
    return math.prod(-(-s // tile_of.get(d, 1)) * tile_of.get(d, 1) for d, s in enumerate(shape)) * elem_bytes


def ceil_div(a: int, b: int) -> int:
    return -(-a // b)


def check_relayout(
    rank: int,
    inner_dims_pos: Sequence[int],
    inner_tiles: Sequence[int],
    outer_dims_perm: Sequence[int] | None,
) -> tuple[tuple[int, ...], tuple[int, ...], tuple[int, ...]]:
    """Validate relayout attributes as the MLIR verifier does; return them normalized to tuples."""
    pos = tuple(int(p) for p in inner_dims_pos)
    tiles = tuple(int(t) for t in inner_tiles)
    if len(pos) != len(tiles):
        raise ValueError(f"inner_dims_pos {pos} and inner_tiles {tiles} differ in length")
    if len(set(pos)) != len(pos) or any(not 0 <= p < rank for p in pos):
        raise ValueError(f"inner_dims_pos {pos} must be distinct dims of a rank-{rank} tensor")
    if any(t <= 0 for t in tiles):
        raise ValueError(f"inner_tiles {tiles} must be positive")
    perm = tuple(range(rank)) if outer_dims_perm is None else tuple(int(p) for p in outer_dims_perm)
    if sorted(perm) != list(range(rank)):
        raise ValueError(f"outer_dims_perm {perm} is not a permutation of {rank} dims")
    return pos, tiles, perm


def packed_outer_shape(
    shape: Sequence[int],
    inner_dims_pos: Sequence[int],
    inner_tiles: Sequence[int],
    outer_dims_perm: Sequence[int] | None = None,
) -> tuple[int, ...]:
    """Full rank-(n+k) result shape of ``linalg.pack`` for a source of ``shape``."""
    pos, tiles, perm = check_relayout(len(shape), inner_dims_pos, inner_tiles, outer_dims_perm)
    tile_of = dict(zip(pos, tiles, strict=True))
    outer = [ceil_div(s, tile_of[d]) if d in tile_of else s for d, s in enumerate(shape)]
    return tuple(outer[p] for p in perm) + tiles


def _map_dims(m: AffineMapAttr) -> tuple[int, ...]:
    pos = m.dim_positions()
    if pos is None:
        raise LayoutError("an encoding's user_indexing_maps must be projected permutations")
    return pos


def encoding_matmul_setup(enc: EncodingAttr) -> tuple[tuple[str, str, str], list[tuple[int, ...]], list[int | None]]:
    """(element type names, per-operand loop dims, iteration sizes) of a matmul encoding.

    The loop dims are those of the *root* maps (the first map of a bubbled entry): they describe the
    contraction the encoding was set for, as IREE's ``getRootMaps`` does; an operand's own dims are
    :func:`encoded_operand_dims`."""
    types = tuple(t.name for t in enc.element_types)
    if len(types) != 3:
        raise LayoutError(f"encoding has {len(types)} element types; a matmul encoding has 3")
    maps: list[tuple[int, ...]] = []
    for m in enc.user_indexing_maps or ():
        if isinstance(m, tuple):
            if not m:
                raise LayoutError("an encoding's user_indexing_maps entry is an empty list")
            m = m[0]
        assert isinstance(m, AffineMapAttr)
        maps.append(_map_dims(m))
    if len(maps) != 3:
        raise LayoutError("a matmul encoding needs user_indexing_maps for its 3 operands")
    num_loops = max((max(p) + 1 for p in maps if p), default=0)
    sizes: list[int | None] = list(enc.iteration_sizes) if enc.iteration_sizes is not None else [None] * num_loops
    return (types[0], types[1], types[2]), maps, sizes


def encoded_operand_dims(enc: EncodingAttr) -> tuple[int, ...]:
    """The contraction loop dim of each dim of the tensor ``enc`` encodes: its ``user_indexing_maps``
    entry, composed when encoding propagation bubbled it through generics (IREE's
    ``getMapForOperandIndex``). A bubbled entry ``[m0, m1, ..., mk]`` holds the contraction's map m0
    and, for each generic it was bubbled through, the map from the previous tensor's dims to this
    operand's dims; so dim j reads loop dim ``m0[m1[...mk[j]]]`` (a bias ``[N]`` of a matmul result:
    ``[(d0,d1,d2)->(d0,d1), (d0,d1)->(d1)]`` gives ``(1,)``, the N loop)."""
    maps = enc.user_indexing_maps or ()
    if not 0 <= enc.operand_index < len(maps):
        raise LayoutError(f"encoding operand_index {enc.operand_index} has no user_indexing_maps entry")
    entry = maps[enc.operand_index]
    chain = entry if isinstance(entry, tuple) else (entry,)
    if not chain:
        raise LayoutError("an encoding's user_indexing_maps entry is an empty list")
    dims = _map_dims(chain[-1])
    for m in reversed(chain[:-1]):
        outer = _map_dims(m)
        if any(not 0 <= d < len(outer) for d in dims):
            raise LayoutError("a bubbled encoding's maps do not compose (a result outside the previous map's range)")
        dims = tuple(outer[d] for d in dims)
    return dims


def encoding_attr_layout(target: Target, enc: EncodingAttr) -> Layout | None:
    """The packed layout of a tensor encoded with matmul encoding ``enc`` on ``target`` (None: identity).

    Mirrors ``getEncodingInfoForMatmul``: the contraction's dims come from the root maps, the operand's
    own dims from its composed map, so a bubbled encoding (a bias broadcast along M, a transposed
    operand) gets the dims of the accumulator it is bubbled from that it has: a bias ``[N]`` of a
    result is packed ``[N1, N0]`` (no narrow-N swap for a vector, as IREE's ``transposeInPlace``)."""
    if enc.op_type != "matmul" or enc.operand_index not in (0, 1, 2):
        return None
    types, maps, sizes = encoding_matmul_setup(enc)
    return resolve_layout(target, enc.operand_index, types, maps, sizes, encoded_operand_dims(enc))


def encoding_layout(target: Target | None, t: TensorType) -> Layout | None:
    """The packed layout of encoded type ``t`` on ``target``; None is the identity (a plain array)."""
    enc = t.encoding
    if target is None or not isinstance(enc, EncodingAttr) or enc.op_type != "matmul":
        return None
    if enc.operand_index not in (0, 1, 2):
        return None
    own = encoded_operand_dims(enc)
    if len(own) != t.rank:
        raise LayoutError(f"encoding map of operand {enc.operand_index} has rank {len(own)}, the tensor {t.rank}")
    return encoding_attr_layout(target, enc)
