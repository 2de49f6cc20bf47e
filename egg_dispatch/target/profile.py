"""Target profiles: inner tiles per element-type triple, throughput numbers and limits (docs/design.md §2.4).

The cost model and the NumPy evaluator need to know, per target, what layout a data-tiling encoding
resolves to (``layout.py`` mirrors IREE's CPU resolver from these tiles) and a few throughput numbers.
Profiles are JSON files: the built-ins live in ``egg_dispatch/target/profiles/``, and every number there
carries a one-line justification in the file's ``notes``; ``--target-file`` loads a user's. The
writer (``write_profile``: what ``egg-dispatch calibrate`` writes) lives here beside the reader.
"""

from __future__ import annotations

import dataclasses
import json
import math
import os
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, fields
from functools import cache
from importlib import resources
from pathlib import Path
from types import MappingProxyType
from typing import Any

from egg_dispatch.target.host import HOST, calibrated_profile_path, host_cpu, host_isa_target
from egg_dispatch.target.kernels import KernelCosts, kernels_from_dict
from egg_dispatch.util.files import atomic_write

__all__ = [
    "LHS",
    "RESULT",
    "RHS",
    "Target",
    "TargetError",
    "builtin_target_names",
    "load_target",
    "target_from_dict",
    "write_profile",
]

LHS, RHS, RESULT = 0, 1, 2
DEFAULT_NATIVE_VECTOR_SIZE = 16
"""IREE's llvm-cpu default ``native_vector_size`` when a target names none (16 bytes: SSE / NEON)."""
MAX_NATIVE_VECTORS = 512
"""``--iree-llvmcpu-max-allowed-number-of-native-vectors`` default (IREE 3.13, ``LLVMCPU/Utils.cpp``)."""
Tile = tuple[int, int, int]
ElementTypes = tuple[str, str, str]


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
    native_vector_size: int = DEFAULT_NATIVE_VECTOR_SIZE
    """Bytes of one native vector register (IREE's ``native_vector_size``: 32 on AVX2, 64 on AVX-512)."""
    max_plain_result_pack_bytes: int | None = None
    """A plain (not data-tiled) contraction whose result is packed with a result layout in its own
    dispatch compiles only while ``M * N * min(K, 16) * element bytes`` stays below this
    (``cost.conflicts.plain_result_pack_over``; probed with iree-compile, the profile's note says
    where); None: ``max_vector_bytes``, the conservative value where nothing was probed."""
    kernels: KernelCosts | None = field(default=None, hash=False, compare=False)
    """Measured kernel costs (``egg-dispatch calibrate``); None: the analytic peaks above are used."""
    provenance: Mapping[str, Any] = field(default_factory=dict, hash=False, compare=False)
    """Where the measured numbers come from: CPU, its features, IREE version, date, flags, fit residuals."""
    notes: Mapping[str, str] = field(default_factory=dict, hash=False, compare=False)
    source: str = field(default="<dict>", compare=False)

    @property
    def max_vector_bytes(self) -> int:
        """Largest vector IREE's llvm-cpu codegen accepts (``LLVMCPUVerifyVectorSizeLegality``:
        ``--iree-llvmcpu-max-allowed-number-of-native-vectors`` = 512 native vectors); a bigger one is
        the error 'One or more operations with large vector sizes (N bytes) were found'."""
        return MAX_NATIVE_VECTORS * self.native_vector_size

    @property
    def plain_result_pack_bytes(self) -> int:
        """``max_plain_result_pack_bytes``, else the vector limit."""
        return self.max_plain_result_pack_bytes or self.max_vector_bytes

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
    args: list[Any] = [MappingProxyType(v) if isinstance(v, dict) else v for v in values]
    return Target(*args)


# --------------------------------------------------------------------------------------------------
# Reading, writing and validation
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
_OPTIONAL: dict[str, type] = {
    "notes": dict,
    "native_vector_size": int,
    "max_plain_result_pack_bytes": int,
    "kernels": dict,
    "provenance": dict,
}


def _is_number(v: Any) -> bool:
    return isinstance(v, int | float) and not isinstance(v, bool) and math.isfinite(v)


def _element_types(spec: ElementTypes | str | Sequence[str]) -> ElementTypes:
    parts = tuple(p.strip() for p in spec.split(",")) if isinstance(spec, str) else tuple(spec)
    if len(parts) != 3 or not all(isinstance(p, str) and p for p in parts):
        raise ValueError(f"element types must be (lhs, rhs, result), e.g. 'f32,f32,f32'; got {spec!r}")
    return (parts[0], parts[1], parts[2])


_Fail = Callable[[str, str], TargetError]
"""Builds the error for a bad field: ``fail(field, problem)``."""


def target_from_dict(data: Any, source: str = "<dict>") -> Target:
    """Validate a decoded profile and build a :class:`Target`; errors name ``source`` and the field."""

    def fail(fld: str, problem: str) -> TargetError:
        return TargetError(f"{source}: field {fld!r}: {problem}")

    if not isinstance(data, dict):
        raise TargetError(f"{source}: a target profile must be a JSON object, got {type(data).__name__}")
    _check_fields(data, fail)
    _check_limits(data, fail)
    tiles = _tiles(data, fail)
    peaks = _peaks(data, fail)
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
        native_vector_size=int(data.get("native_vector_size", DEFAULT_NATIVE_VECTOR_SIZE)),
        max_plain_result_pack_bytes=int(data["max_plain_result_pack_bytes"])
        if "max_plain_result_pack_bytes" in data
        else None,
        kernels=kernels_from_dict(data["kernels"], fail) if "kernels" in data else None,
        provenance=MappingProxyType(dict(data.get("provenance", {}))),
        notes=MappingProxyType(dict(notes)),
        source=source,
    )


def _check_fields(data: dict[str, Any], fail: _Fail) -> None:
    """Every field known, every required one present, each of its JSON type (a bool is no number)."""
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


def _check_limits(data: dict[str, Any], fail: _Fail) -> None:
    """Sizes and bandwidth positive and finite, the dispatch overhead non-negative (type-checked fields)."""
    for key in (
        "memory_bandwidth_gbps",
        "max_stack_allocation_size",
        "native_vector_size",
        "max_plain_result_pack_bytes",
    ):
        if key not in data:
            continue
        if not _is_number(data[key]) or data[key] <= 0:
            raise fail(key, f"must be a positive number, got {data[key]!r}")
    if not _is_number(data["dispatch_overhead_us"]) or data["dispatch_overhead_us"] < 0:
        raise fail("dispatch_overhead_us", f"must be a non-negative number, got {data['dispatch_overhead_us']!r}")


def _tiles(data: dict[str, Any], fail: _Fail) -> dict[ElementTypes, Tile]:
    """The ``tiles`` table by element-type triple; only a target with an encoding resolver may have one."""
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
    return tiles


def _peaks(data: dict[str, Any], fail: _Fail) -> dict[str, dict[str, float]]:
    """Both peak tables, positive numbers with the ``f32`` fallback where it can be looked up."""
    peaks: dict[str, dict[str, float]] = {}
    for key in ("mmt4d_peak_gflops", "matmul_peak_gflops"):
        for cls, v in data[key].items():
            if not _is_number(v) or v <= 0:
                raise fail(f"{key}.{cls}", f"must be a positive number, got {v!r}")
        needed = key == "matmul_peak_gflops" or data["encoding_resolver"]
        if needed and "f32" not in data[key]:
            raise fail(key, "needs an 'f32' entry (the fallback for element types without their own)")
        peaks[key] = {cls: float(v) for cls, v in data[key].items()}
    return peaks


def _load_text(text: str, source: str) -> Target:
    try:
        data = json.loads(text)
    except json.JSONDecodeError as err:
        raise TargetError(f"{source}: invalid JSON at line {err.lineno} column {err.colno}: {err.msg}") from None
    return target_from_dict(data, source)


def host_target() -> Target:
    """This CPU's calibrated profile, or its ISA's built-in profile with ``provenance["warning"]`` saying
    it is not calibrated (commands print it once); an ISA no built-in profile fits falls back to ``none``
    (IREE without data tiling), and the warning says so."""
    path = calibrated_profile_path()
    if path.is_file():
        return _load_text(path.read_text(encoding="utf-8"), str(path))
    isa, why = host_isa_target()
    cpu, _ = host_cpu()
    if isa is None:  # no data-tiling profile fits: IREE's non-data-tiled path, which every CPU has
        base = _load_builtin("none")
        warning = (
            f"warning: --target host: no built-in data-tiling profile for this CPU ({cpu}: {why});\n"
            "  falling back to 'none' (no encodings, IREE without data tiling); pass --target with one of\n"
            f"  {', '.join(builtin_target_names())} or a --target-file"
        )
        return dataclasses.replace(base, provenance=MappingProxyType({**base.provenance, "warning": warning}))
    base = _load_builtin(isa)
    warning = (
        f"warning: --target host: {cpu} is not calibrated (run 'egg-dispatch calibrate');\n"
        f"  using the built-in {isa} profile ({why}), whose numbers were not measured here"
    )
    return dataclasses.replace(base, provenance=MappingProxyType({**base.provenance, "warning": warning}))


def builtin_target_names() -> tuple[str, ...]:
    """Names of the profiles shipped in ``egg_dispatch/target/profiles/``."""
    folder = resources.files("egg_dispatch.target") / "profiles"
    return tuple(sorted(p.name[: -len(".json")] for p in folder.iterdir() if p.name.endswith(".json")))


@cache
def _load_builtin(name: str) -> Target:
    res = resources.files("egg_dispatch.target") / "profiles" / f"{name}.json"
    return _load_text(res.read_text(encoding="utf-8"), str(res))


def load_target(name_or_path: str | os.PathLike[str]) -> Target:
    """A built-in profile by name (e.g. ``"x86_64-avx2"``), ``"host"`` (this CPU: its calibrated
    profile, else its ISA's built-in one, see ``target.host``), or a user's JSON profile by path."""
    if name_or_path == HOST:
        return host_target()
    if isinstance(name_or_path, str) and name_or_path in builtin_target_names():
        return _load_builtin(name_or_path)
    path = Path(name_or_path)
    if not path.is_file():
        raise TargetError(f"{path}: not a built-in target ({', '.join(builtin_target_names())}) and no such file")
    return _load_text(path.read_text(encoding="utf-8"), str(path))


def write_profile(data: Mapping[str, Any], path: Path) -> None:
    """Write a profile (``load_target`` reads it back) as indented JSON, atomically: a temporary file in
    the same directory, then a rename, so an interrupted write leaves the previous file as it was.
    ``calibrate --samples`` writes its measurements with it too."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with atomic_write(path) as f:  # util/files.py: every file the tool writes goes through it
        json.dump(data, f, indent=2)
        f.write("\n")


# --------------------------------------------------------------------------------------------------
# Tile choice (narrow-M/N rule) and layouts
# --------------------------------------------------------------------------------------------------
