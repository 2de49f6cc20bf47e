"""Target profiles, IREE's tile choice (narrow-M/N rule) and matmul pack layouts (docs/iree-data-tiling.md §3-4)."""

from __future__ import annotations

import dataclasses
import json
import os
import pickle
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from egg_dispatch.evaluate.kernels import batch_mmt4d, mmt4d, pack, unpack
from egg_dispatch.target.layout import (
    Layout,
    choose_matmul_tile,
    contraction_dims,
    matmul_narrow_dim,
    packed_nbytes,
    packed_shape,
    resolve_layout,
    swaps_operands,
)
from egg_dispatch.target.profile import (
    LHS,
    RESULT,
    RHS,
    TargetError,
    builtin_target_names,
    load_target,
    write_profile,
)
from tests.hypothesis_profiles import examples

MATMUL = ((0, 2), (2, 1), (0, 1))  # A[M,K] B[K,N] -> C[M,N]
MATMUL_TB = ((0, 2), (1, 2), (0, 1))  # A[M,K] Bt[N,K] -> C[M,N] (ex matmul_transpose_b)
BATCH_MATMUL = ((0, 1, 3), (0, 3, 2), (0, 1, 2))  # A[B,M,K] B[B,K,N] -> C[B,M,N]
F32 = "f32,f32,f32"
BUILTINS = ["x86_64-avx2", "x86_64-avx512", "aarch64-neon", "none"]


# ---------------------------------------------------------------------------------------- profiles


@pytest.mark.parametrize(
    ("target", "types", "tile"),
    [
        ("x86_64-avx2", F32, (8, 8, 1)),
        ("x86_64-avx2", "f16,f16,f32", (8, 8, 1)),
        ("x86_64-avx2", "f16,f16,f16", (8, 8, 1)),
        ("x86_64-avx2", "bf16,bf16,f32", (8, 8, 1)),
        ("x86_64-avx2", "i8,i8,i32", (8, 8, 2)),
        ("x86_64-avx512", F32, (16, 16, 1)),
        ("x86_64-avx512", "f16,f16,f32", (16, 16, 1)),
        ("x86_64-avx512", "bf16,bf16,f32", (16, 16, 1)),
        ("x86_64-avx512", "i8,i8,i32", (16, 16, 2)),
        ("aarch64-neon", F32, (8, 8, 1)),
        ("aarch64-neon", "f16,f16,f32", (8, 8, 1)),
        ("aarch64-neon", "bf16,bf16,f32", (8, 8, 1)),
        ("aarch64-neon", "i8,i8,i32", None),
        ("none", F32, None),
        ("x86_64-avx2", "f64,f64,f64", None),
    ],
)
def test_tile_table(target: str, types: str, tile: tuple | None) -> None:
    assert load_target(target).tile(types) == tile
    assert load_target(target).tile(tuple(types.split(","))) == tile


def _numeric_paths(obj: Any, prefix: str = "") -> list[str]:
    if isinstance(obj, dict):
        return [p for k, v in obj.items() if k != "notes" for p in _numeric_paths(v, f"{prefix}{k}.")]
    if isinstance(obj, list) or (isinstance(obj, int | float) and not isinstance(obj, bool)):
        return [prefix[:-1]]
    return []


@pytest.mark.parametrize("name", BUILTINS)
def test_builtins_load_and_justify_every_number(name: str) -> None:
    assert name in builtin_target_names()
    target = load_target(name)
    assert target.name == name and target.max_stack_allocation_size == 32768
    assert target.encoding_resolver == (name != "none")
    raw = json.loads(Path(target.source).read_text())
    missing = [p for p in _numeric_paths(raw) if p not in target.notes]
    assert not missing, f"{name}: numbers without a note: {missing}"
    assert target.peak_gflops(F32, data_tiled=False) > 0
    if target.encoding_resolver:  # data tiling must pay off on f32 (docs/iree-data-tiling.md §7: 57.6 vs 130 ms)
        assert target.peak_gflops(F32, data_tiled=True) > target.peak_gflops(F32, data_tiled=False)
    assert load_target(name) is load_target(name)  # cached, and hashable as a frozen dataclass
    assert hash(target) == hash(load_target(name))
    assert pickle.loads(pickle.dumps(target)) == target


def test_every_built_in_number_says_where_it_was_measured_or_why_not() -> None:
    """The x86 profiles' peaks, bandwidth and launch overhead come from ``egg-dispatch calibrate`` (the
    note names the CPU, the IREE version and the date); a number that could not be measured says why (bf16:
    NumPy has no bf16 input; aarch64: no machine). The values themselves are what the notes say."""
    keys = ("mmt4d_peak_gflops", "matmul_peak_gflops", "memory_bandwidth_gbps", "dispatch_overhead_us")
    for name in ("x86_64-avx512", "x86_64-avx2", "none", "aarch64-neon"):
        t = load_target(name)
        for key in keys:
            value = getattr(t, key)
            entries = [f"{key}.{el}" for el in value] if isinstance(value, Mapping) else [key]
            for entry in entries:
                note = t.notes.get(entry, "")
                if name == "aarch64-neon":
                    assert "no AArch64 machine" in note, (name, entry, note)
                else:
                    assert ("Measured by `egg-dispatch calibrate" in note or "measured by the x86_64-avx2" in note
                            or "not measured:" in note), (name, entry, note)  # fmt: skip
                    assert "assumed" not in note.lower() or "not measured:" in note, (name, entry, note)
    avx512 = load_target("x86_64-avx512")
    assert avx512.peak_gflops("i8,i8,i32", data_tiled=True) > avx512.peak_gflops(F32, data_tiled=True)  # measured
    assert load_target("aarch64-neon").peak_gflops("i8,i8,i32", data_tiled=True) > 0  # falls back to f32


def _valid_profile() -> dict:
    return json.loads(Path(load_target("x86_64-avx2").source).read_text())


def _set(path: str, value: Any) -> dict:
    data = _valid_profile()
    *parents, last = path.split("/")
    node = data
    for p in parents:
        node = node[p]
    if value is _DELETE:
        del node[last]
    else:
        node[last] = value
    return data


_DELETE = object()


@pytest.mark.parametrize(
    ("path", "value", "field"),
    [
        ("memory_bandwidth_gbps", _DELETE, "memory_bandwidth_gbps"),  # missing key
        ("name", 3, "name"),  # wrong type
        ("tiles", [[8, 8, 1]], "tiles"),  # wrong container type
        ("memory_bandwidth_gbps", -1.0, "memory_bandwidth_gbps"),  # negative
        ("dispatch_overhead_us", -0.5, "dispatch_overhead_us"),  # negative
        ("encoding_resolver", "yes", "encoding_resolver"),  # wrong type
        ("tiles/f32,f32,f32", [8, 8], "tiles.f32,f32,f32"),  # tile of wrong length
        ("tiles/f32,f32,f32", [8, 0, 1], "tiles.f32,f32,f32"),  # non-positive tile
        ("tiles/f32,f32,f32", [8, True, 1], "tiles.f32,f32,f32"),  # bool is not an int
        ("tiles/f32,f32", [8, 8, 1], "tiles.f32,f32"),  # bad element-type key
        ("mmt4d_peak_gflops/f32", "fast", "mmt4d_peak_gflops.f32"),
        ("matmul_peak_gflops/f32", _DELETE, "matmul_peak_gflops"),
        ("max_stack_allocation_size", 32768.5, "max_stack_allocation_size"),
        ("max_stack_alloc_size", 1, "max_stack_alloc_size"),  # unknown (misspelt) field
    ],
)
def test_malformed_profiles_name_file_and_field(tmp_path: Path, path: str, value: Any, field: str) -> None:
    f = tmp_path / "my-cpu.json"
    f.write_text(json.dumps(_set(path, value)))
    with pytest.raises(TargetError) as err:
        load_target(f)
    assert str(f) in str(err.value) and repr(field) in str(err.value), str(err.value)


def test_more_bad_profiles(tmp_path: Path) -> None:
    bad = tmp_path / "broken.json"
    bad.write_text('{"name": "x",')
    with pytest.raises(TargetError, match=r"broken\.json: invalid JSON at line 1"):
        load_target(bad)
    bad.write_text("[1, 2]")
    with pytest.raises(TargetError, match=r"broken\.json: a target profile must be a JSON object"):
        load_target(str(bad))
    contradictory = _set("encoding_resolver", False)
    bad.write_text(json.dumps(contradictory))
    with pytest.raises(TargetError, match=r"broken\.json: field 'tiles': must be empty"):
        load_target(bad)
    with pytest.raises(TargetError, match="not a built-in target"):
        load_target("x86_64-avx1024")


def test_user_profile_loads_from_path(tmp_path: Path) -> None:
    data = _set("tiles/f32,f32,f32", [4, 16, 1])
    data["name"] = "my-cpu"
    f = tmp_path / "my-cpu.json"
    f.write_text(json.dumps(data))
    target = load_target(f)
    assert target.name == "my-cpu" and target.source == str(f)
    assert choose_matmul_tile(target, F32, 64, 64, 64) == (4, 16, 1)
    assert choose_matmul_tile(target, F32, 64, 1, 64) == (16, 1, 1)  # candidates {4,2,1} x 16, swapped


PROFILE_FILES = sorted(
    [*(Path(__file__).parents[1] / "egg_dispatch" / "target" / "profiles").glob("*.json"),
     *(Path(__file__).parent / "fixtures" / "profiles").glob("*.json")]
)  # fmt: skip


@pytest.mark.parametrize("source", PROFILE_FILES, ids=lambda p: p.name)
def test_written_profile_reads_back_as_the_same_target(tmp_path: Path, source: Path) -> None:
    """``write_profile`` then ``load_target``: every field of the target read from the original file,
    the measured kernels, provenance and notes too (``Target`` equality leaves those out)."""
    data = json.loads(source.read_text(encoding="utf-8"))
    out = tmp_path / "new" / "dir" / "p.json"
    write_profile({"name": "an older profile"}, out)  # the folder is made
    write_profile(data, out)  # and the older file replaced whole
    assert json.loads(out.read_text(encoding="utf-8")) == data
    assert os.listdir(out.parent) == ["p.json"]  # no temporary file left beside it
    original, back = load_target(source), load_target(out)
    for f in dataclasses.fields(original):
        if f.name != "source":
            assert getattr(back, f.name) == getattr(original, f.name), f.name
    assert back.source == str(out)


# ------------------------------------------------------------------------------------ tile choice


@pytest.mark.parametrize(
    ("target", "m", "n", "tile"),
    [
        ("x86_64-avx2", 64, 64, (8, 8, 1)),
        ("x86_64-avx2", 1, 64, (1, 8, 1)),
        ("x86_64-avx2", 4, 64, (4, 8, 1)),
        ("x86_64-avx2", 6, 64, (8, 8, 1)),
        ("x86_64-avx2", 64, 1, (8, 1, 1)),
        ("x86_64-avx2", 64, 4, (8, 4, 1)),
        ("x86_64-avx2", 64, 6, (8, 8, 1)),
        ("x86_64-avx512", 1, 64, (1, 16, 1)),
        ("x86_64-avx512", 4, 64, (4, 16, 1)),
        ("x86_64-avx512", 6, 64, (8, 16, 1)),
        ("x86_64-avx512", 64, 1, (16, 1, 1)),
        ("x86_64-avx512", 64, 4, (16, 4, 1)),
        ("x86_64-avx512", 8, 8, (16, 16, 1)),  # the seed: no narrow dim, pads 8 -> 16
        ("x86_64-avx512", 100, 100, (16, 16, 1)),
        ("x86_64-avx512", 3, None, (4, 16, 1)),  # N dynamic: M is the narrow dim
        ("x86_64-avx512", None, 2, (16, 2, 1)),
        ("x86_64-avx512", None, None, (16, 16, 1)),
        ("aarch64-neon", 2, 64, (2, 8, 1)),
    ],
)
def test_narrow_rule(target: str, m: int | None, n: int | None, tile: tuple) -> None:
    assert choose_matmul_tile(load_target(target), F32, m, n, 64) == tile


def test_narrow_dim_and_i8_tile() -> None:
    assert matmul_narrow_dim(6, 64) == ("M", 8)
    assert matmul_narrow_dim(64, 5) == ("N", 8)
    assert matmul_narrow_dim(8, 8) is None and matmul_narrow_dim(None, None) is None
    assert choose_matmul_tile(load_target("x86_64-avx512"), "i8,i8,i32", 1, 64, 64) == (1, 16, 2)
    assert choose_matmul_tile(load_target("none"), F32, 1, 64, 64) is None


# ---------------------------------------------------------------------------------------- layouts


def test_matmul_layouts_match_domain_table() -> None:
    t = load_target("x86_64-avx2")
    sizes = (64, 64, 64)
    assert resolve_layout(t, LHS, F32, MATMUL, sizes) == Layout((0, 1), (8, 1), (0, 1))
    assert resolve_layout(t, RHS, F32, MATMUL, sizes) == Layout((1, 0), (8, 1), (1, 0))
    assert resolve_layout(t, RHS, F32, MATMUL_TB, sizes) == Layout((0, 1), (8, 1), (0, 1))
    assert resolve_layout(t, RESULT, F32, MATMUL, sizes) == Layout((0, 1), (8, 8), (0, 1))
    assert not swaps_operands(t, F32, MATMUL, sizes)
    # The same layouts for any naming of the loop dims (derived from the maps, not from patterns).
    renamed = ((2, 1), (1, 0), (2, 0))  # M=d2, N=d0, K=d1
    assert resolve_layout(t, RHS, F32, renamed, (64, 64, 64)) == Layout((1, 0), (8, 1), (1, 0))
    assert packed_shape((100, 100), resolve_layout(t, LHS, F32, MATMUL, (100, 100, 100))) == (13, 100, 8, 1)
    t512 = load_target("x86_64-avx512")
    assert packed_shape((100, 100), resolve_layout(t512, LHS, F32, MATMUL, (100, 100, 100))) == (7, 100, 16, 1)


def test_narrow_n_example_avx2_64x4x64() -> None:
    t, sizes = load_target("x86_64-avx2"), (64, 4, 64)
    lhs = resolve_layout(t, LHS, F32, MATMUL, sizes)
    rhs = resolve_layout(t, RHS, F32, MATMUL, sizes)
    res = resolve_layout(t, RESULT, F32, MATMUL, sizes)
    assert rhs is not None and rhs.inner_tiles == (4, 1)
    assert res == Layout(inner_dims_pos=(1, 0), inner_tiles=(4, 8), outer_dims_perm=(1, 0))
    assert swaps_operands(t, F32, MATMUL, sizes)
    pl, pr = packed_shape((64, 64), lhs), packed_shape((64, 4), rhs)
    assert (pl, pr) == ((8, 64, 8, 1), (1, 64, 4, 1))
    out = mmt4d(np.zeros(pr, np.float32), np.zeros(pl, np.float32))  # mmt4d(RHS, LHS)
    assert out.shape == (1, 8, 4, 8) == packed_shape((64, 4), res)


def test_seed_on_avx512() -> None:
    t, sizes = load_target("x86_64-avx512"), (8, 8, 8)
    lhs = resolve_layout(t, LHS, F32, MATMUL_TB, sizes)
    assert lhs == Layout((0, 1), (16, 1), (0, 1)) and packed_shape((8, 8), lhs) == (1, 8, 16, 1)
    res = resolve_layout(t, RESULT, F32, MATMUL_TB, sizes)
    assert packed_shape((8, 8), res) == (1, 1, 16, 16)
    assert packed_nbytes((8, 8), 4, lhs) == 512  # 2x the 256 B original (docs/iree-data-tiling.md §5.2)
    assert packed_nbytes((8, 8), 4, resolve_layout(load_target("x86_64-avx2"), LHS, F32, MATMUL_TB, sizes)) == 256
    assert packed_nbytes((8, 8), 4, None) == 256 and packed_shape((8, 8), None) == (8, 8)


def test_batch_and_vector_layouts() -> None:
    t = load_target("x86_64-avx2")
    assert resolve_layout(t, LHS, F32, BATCH_MATMUL, (3, 64, 64, 64)) == Layout((1, 2), (8, 1), (0, 1, 2))
    assert resolve_layout(t, RHS, F32, BATCH_MATMUL, (3, 64, 64, 64)) == Layout((2, 1), (8, 1), (0, 2, 1))
    res = resolve_layout(t, RESULT, F32, BATCH_MATMUL, (3, 64, 4, 64))
    assert res == Layout((2, 1), (4, 8), (0, 2, 1))
    matvec = ((0, 1), (1,), (0,))  # A[M,K] x[K] -> y[M]: N is absent (size 1), so N is narrow
    assert resolve_layout(t, RHS, F32, matvec, (64, 64)) == Layout((0,), (1,), (0,))
    assert resolve_layout(t, RESULT, F32, matvec, (64, 64)) == Layout((0,), (8,), (0,))


def test_identity_cases() -> None:
    assert resolve_layout(load_target("none"), LHS, F32, MATMUL, (64, 64, 64)) is None
    assert resolve_layout(load_target("aarch64-neon"), LHS, "i8,i8,i32", MATMUL, (64, 64, 64)) is None
    two_m = ((0, 1, 3), (3, 2), (0, 1, 2))  # M = d0 and d1
    assert contraction_dims(two_m, 4) is not None
    assert resolve_layout(load_target("x86_64-avx2"), LHS, F32, two_m, (4, 4, 4, 4)) is None
    assert resolve_layout(load_target("x86_64-avx2"), LHS, F32, ((0, 1), (1, 2), (2,)), (4, 4, 4)) is None
    with pytest.raises(ValueError):
        resolve_layout(load_target("x86_64-avx2"), 3, F32, MATMUL, (4, 4, 4))


# ------------------------------------------------------------------- end to end: layouts are right


def _pack(x: np.ndarray, layout: Layout | None) -> np.ndarray:
    return x if layout is None else pack(x, layout.inner_dims_pos, layout.inner_tiles, layout.outer_dims_perm)


@settings(max_examples=examples(150))
@given(
    st.sampled_from(BUILTINS),
    st.sampled_from(["f32", "i8"]),
    st.sampled_from(["plain", "transpose_b", "batch"]),
    st.tuples(st.integers(1, 40), st.integers(1, 40), st.integers(1, 24), st.integers(1, 3)),
    st.integers(0, 2**32 - 1),
)
def test_resolved_layouts_compute_the_matmul(target: str, dt: str, kind: str, sizes: tuple, seed: int) -> None:
    m, n, k, b = sizes
    t, rng = load_target(target), np.random.default_rng(seed)
    types = F32 if dt == "f32" else "i8,i8,i32"
    batch = (b,) if kind == "batch" else ()
    if dt == "f32":
        a, bm = (rng.standard_normal((*batch, *s)).astype(np.float32) for s in ((m, k), (k, n)))
    else:
        a, bm = (rng.integers(-128, 128, (*batch, *s), dtype=np.int8) for s in ((m, k), (k, n)))
    want = np.matmul(a.astype(np.int64 if dt == "i8" else np.float64), bm)
    maps, iters, rhs = {
        "plain": (MATMUL, (m, n, k), bm),
        "transpose_b": (MATMUL_TB, (m, n, k), np.ascontiguousarray(bm.T)),
        "batch": (BATCH_MATMUL, (b, m, n, k), bm),
    }[kind]
    layouts = [resolve_layout(t, i, types, maps, iters) for i in (LHS, RHS, RESULT)]
    if layouts[0] is None:
        assert all(lay is None for lay in layouts) and (target == "none" or types != F32)
        return
    pa, pb = _pack(a, layouts[0]), _pack(rhs, layouts[1])
    if swaps_operands(t, types, maps, iters):
        pa, pb = pb, pa
    pc = (batch_mmt4d if batch else mmt4d)(pa, pb)
    res = layouts[2]
    assert res is not None and pc.shape == packed_shape(want.shape, res)
    c = unpack(pc, res.inner_dims_pos, res.inner_tiles, res.outer_dims_perm, dest_shape=want.shape)
    if dt == "i8":
        np.testing.assert_array_equal(c, want.astype(np.int32))
    else:
        np.testing.assert_allclose(c, want, rtol=1e-4, atol=1e-4)
