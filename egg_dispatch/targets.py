"""Target profiles and IREE's CPU encoding resolver: inner tiles, the narrow-M/N rule, pack layouts.

The cost model and the NumPy evaluator need to know, per target, what layout a data-tiling encoding
resolves to (or that it resolves to the identity), plus a few throughput numbers (design.md §2.4).
This module mirrors IREE's CPU resolver (domain.md §3-4; ``CPUEncodingExternalModels.cpp``
``chooseMatmulTile``, ``Encoding/Utils/Utils.cpp`` ``getPo2MatmulNarrowDim``, and
``Codegen/Utils/Utils.cpp`` ``getEncodingInfoForMatmul``) so that layouts are exactly what IREE 3.13
materializes. Profiles are JSON files: the built-ins live in ``egg_dispatch/targets/``; every number
there carries a one-line justification in the file's ``notes``.
"""

from __future__ import annotations

import json
import math
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, fields
from functools import cache
from importlib import resources
from pathlib import Path
from types import MappingProxyType
from typing import Any

from egg_dispatch.kernels import packed_outer_shape

__all__ = [
    "LHS",
    "RESULT",
    "RHS",
    "ContractionDims",
    "Layout",
    "Target",
    "TargetError",
    "builtin_target_names",
    "choose_matmul_tile",
    "contraction_dims",
    "load_target",
    "matmul_narrow_dim",
    "packed_nbytes",
    "packed_shape",
    "resolve_layout",
    "swaps_operands",
    "target_from_dict",
]

LHS, RHS, RESULT = 0, 1, 2
Tile = tuple[int, int, int]
ElementTypes = tuple[str, str, str]
Maps = Sequence[Sequence[int]]


class TargetError(ValueError):
    """A target profile is unknown or malformed; the message names the file and the bad field."""


@dataclass(frozen=True)
class Target:
    """A target profile: resolver tiles per element-type triple plus the cost model's constants."""

    name: str
    description: str
    encoding_resolver: bool
    tiles: Mapping[ElementTypes, Tile] = field(hash=False)
    mmt4d_peak_gflops: Mapping[str, float] = field(hash=False)
    matmul_peak_gflops: Mapping[str, float] = field(hash=False)
    memory_bandwidth_gbps: float
    dispatch_overhead_us: float
    max_stack_allocation_size: int
    notes: Mapping[str, str] = field(default_factory=dict, hash=False, compare=False)
    source: str = field(default="<dict>", compare=False)

    def tile(self, element_types: ElementTypes | str) -> Tile | None:
        """The big (non-narrow) tile for these element types; None when the resolver has none."""
        if not self.encoding_resolver:
            return None
        return self.tiles.get(_element_types(element_types))

    def peak_gflops(self, element_types: ElementTypes | str, data_tiled: bool) -> float:
        """Peak rate for the LHS element type's class; classes without an entry run at the f32 rate."""
        cls = _element_types(element_types)[0]
        table = self.mmt4d_peak_gflops if data_tiled and self.mmt4d_peak_gflops else self.matmul_peak_gflops
        return table.get(cls, table["f32"])

    def __reduce__(self) -> tuple[Any, tuple[Any, ...]]:
        """Pickle support: the read-only mapping proxies are rebuilt from plain dicts."""
        values = [getattr(self, f.name) for f in fields(self)]
        return (_rebuild_target, tuple(dict(v) if isinstance(v, MappingProxyType) else v for v in values))


def _rebuild_target(*values: Any) -> Target:
    return Target(*(MappingProxyType(v) if isinstance(v, dict) else v for v in values))


# --------------------------------------------------------------------------------------------------
# Loading and validation
# --------------------------------------------------------------------------------------------------

_REQUIRED: dict[str, type | tuple[type, ...]] = {
    "name": str,
    "description": str,
    "encoding_resolver": bool,
    "tiles": dict,
    "mmt4d_peak_gflops": dict,
    "matmul_peak_gflops": dict,
    "memory_bandwidth_gbps": (int, float),
    "dispatch_overhead_us": (int, float),
    "max_stack_allocation_size": int,
}
_OPTIONAL: dict[str, type] = {"notes": dict}


def _is_number(v: Any) -> bool:
    return isinstance(v, int | float) and not isinstance(v, bool) and math.isfinite(v)


def _element_types(spec: ElementTypes | str | Sequence[str]) -> ElementTypes:
    parts = tuple(p.strip() for p in spec.split(",")) if isinstance(spec, str) else tuple(spec)
    if len(parts) != 3 or not all(isinstance(p, str) and p for p in parts):
        raise ValueError(f"element types must be (lhs, rhs, result), e.g. 'f32,f32,f32'; got {spec!r}")
    return (parts[0], parts[1], parts[2])


def target_from_dict(data: Any, source: str = "<dict>") -> Target:
    """Validate a decoded profile and build a :class:`Target`; errors name ``source`` and the field."""

    def fail(fld: str, problem: str) -> TargetError:
        return TargetError(f"{source}: field {fld!r}: {problem}")

    if not isinstance(data, dict):
        raise TargetError(f"{source}: a target profile must be a JSON object, got {type(data).__name__}")
    for key in data:
        if key not in _REQUIRED and key not in _OPTIONAL:
            raise fail(key, f"unknown field (expected {sorted([*_REQUIRED, *_OPTIONAL])})")
    for key, typ in {**_REQUIRED, **_OPTIONAL}.items():
        if key not in data:
            if key in _REQUIRED:
                raise fail(key, "missing")
            continue
        value = data[key]
        if not isinstance(value, typ) or (typ is not bool and isinstance(value, bool)):
            names = typ.__name__ if isinstance(typ, type) else "number"
            raise fail(key, f"expected {names}, got {type(value).__name__} {value!r}")
    for key in ("memory_bandwidth_gbps", "max_stack_allocation_size"):
        if not _is_number(data[key]) or data[key] <= 0:
            raise fail(key, f"must be a positive number, got {data[key]!r}")
    if not _is_number(data["dispatch_overhead_us"]) or data["dispatch_overhead_us"] < 0:
        raise fail("dispatch_overhead_us", f"must be a non-negative number, got {data['dispatch_overhead_us']!r}")

    tiles: dict[ElementTypes, Tile] = {}
    for key, tile in data["tiles"].items():
        try:
            types = _element_types(key)
        except ValueError as err:
            raise fail(f"tiles.{key}", str(err)) from None
        ok = isinstance(tile, list) and len(tile) == 3
        if not ok or not all(isinstance(t, int) and not isinstance(t, bool) and t > 0 for t in tile):
            raise fail(f"tiles.{key}", f"expected [M0, N0, K0] of 3 positive integers, got {tile!r}")
        tiles[types] = (tile[0], tile[1], tile[2])
    if tiles and not data["encoding_resolver"]:
        raise fail("tiles", "must be empty when encoding_resolver is false (every encoding is identity)")

    peaks: dict[str, dict[str, float]] = {}
    for key in ("mmt4d_peak_gflops", "matmul_peak_gflops"):
        for cls, v in data[key].items():
            if not _is_number(v) or v <= 0:
                raise fail(f"{key}.{cls}", f"must be a positive number, got {v!r}")
        needed = key == "matmul_peak_gflops" or data["encoding_resolver"]
        if needed and "f32" not in data[key]:
            raise fail(key, "needs an 'f32' entry (the fallback for element types without their own)")
        peaks[key] = {cls: float(v) for cls, v in data[key].items()}
    notes = data.get("notes", {})
    if not all(isinstance(v, str) for v in notes.values()):
        raise fail("notes", "every note must be a string")

    return Target(
        name=data["name"],
        description=data["description"],
        encoding_resolver=data["encoding_resolver"],
        tiles=MappingProxyType(tiles),
        mmt4d_peak_gflops=MappingProxyType(peaks["mmt4d_peak_gflops"]),
        matmul_peak_gflops=MappingProxyType(peaks["matmul_peak_gflops"]),
        memory_bandwidth_gbps=float(data["memory_bandwidth_gbps"]),
        dispatch_overhead_us=float(data["dispatch_overhead_us"]),
        max_stack_allocation_size=int(data["max_stack_allocation_size"]),
        notes=MappingProxyType(dict(notes)),
        source=source,
    )


def _load_text(text: str, source: str) -> Target:
    try:
        data = json.loads(text)
    except json.JSONDecodeError as err:
        raise TargetError(f"{source}: invalid JSON at line {err.lineno} column {err.colno}: {err.msg}") from None
    return target_from_dict(data, source)


def builtin_target_names() -> tuple[str, ...]:
    """Names of the profiles shipped in ``egg_dispatch/targets/``."""
    folder = resources.files("egg_dispatch") / "targets"
    return tuple(sorted(p.name[: -len(".json")] for p in folder.iterdir() if p.name.endswith(".json")))


@cache
def _load_builtin(name: str) -> Target:
    res = resources.files("egg_dispatch") / "targets" / f"{name}.json"
    return _load_text(res.read_text(encoding="utf-8"), str(res))


def load_target(name_or_path: str | os.PathLike[str]) -> Target:
    """A built-in profile by name (e.g. ``"x86_64-avx2"``), or a user's JSON profile by path."""
    if isinstance(name_or_path, str) and name_or_path in builtin_target_names():
        return _load_builtin(name_or_path)
    path = Path(name_or_path)
    if not path.is_file():
        raise TargetError(f"{path}: not a built-in target ({', '.join(builtin_target_names())}) and no such file")
    return _load_text(path.read_text(encoding="utf-8"), str(path))


# --------------------------------------------------------------------------------------------------
# Tile choice (narrow-M/N rule) and layouts
# --------------------------------------------------------------------------------------------------


def _po2_ceil(x: int) -> int:
    return 1 if x <= 1 else 1 << (x - 1).bit_length()


def matmul_narrow_dim(m: int | None, n: int | None) -> tuple[str, int] | None:
    """IREE's ``getPo2MatmulNarrowDim``: ("M"|"N", size rounded up to a power of two) or None.

    ``None`` sizes are dynamic: with one dynamic the other is narrow; with both, or M == N, none is.
    """
    if m is None and n is None:
        return None
    if n is None or (m is not None and m < n):
        return ("M", _po2_ceil(m))  # type: ignore[arg-type]
    if m is None or n < m:
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
        return None  # the CPU resolver gives identity with more than one B, M, N or K dim (domain.md §2)
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
) -> Layout | None:
    """Layout of operand ``operand_index`` (LHS=0, RHS=1, RESULT=2) of a matmul-like contraction.

    ``maps`` gives, per operand, the loop dim of each of its dims (plain matmul: ((0,2),(2,1),(0,1))).
    Mirrors ``getEncodingInfoForMatmul``: outer_dims_perm lists the operand's [batch?, M?, N?, K?]
    dims, inner dims/tiles are its [M?, N?, K?] dims with tiles (M0, N0, K0); for a narrow-N RESULT
    the last two entries of each are swapped and the mmt4d runs on swapped operands
    (:func:`swaps_operands`). None means the identity layout (no tile, no resolver, not a matmul).
    """
    if operand_index not in (LHS, RHS, RESULT):
        raise ValueError(f"operand_index must be 0 (LHS), 1 (RHS) or 2 (RESULT), got {operand_index}")
    setup = _matmul_setup(target, element_types, maps, iteration_sizes)
    if setup is None:
        return None
    cd, tile, narrow = setup
    own = list(maps[operand_index])
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
    """True when IREE lowers this contraction to mmt4d(RHS, LHS): a narrow-N result (domain.md §1.9)."""
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
