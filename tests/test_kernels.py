"""pack / unpack / mmt4d reference kernels against their MLIR definitions (docs/iree-data-tiling.md §4)."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from egg_dispatch.evaluate.kernels import batch_mmt4d, default_acc_dtype, mmt4d, pack, unpack
from egg_dispatch.target.layout import packed_outer_shape
from tests.hypothesis_profiles import examples


@st.composite
def relayouts(draw: st.DrawFn, max_rank: int = 4, max_dim: int = 9, max_tile: int = 5) -> tuple:
    """A source shape plus random linalg.pack attributes for it."""
    rank = draw(st.integers(1, max_rank))
    shape = tuple(draw(st.lists(st.integers(1, max_dim), min_size=rank, max_size=rank)))
    pos = draw(st.permutations(range(rank)))[: draw(st.integers(0, rank))]
    tiles = draw(st.lists(st.integers(1, max_tile), min_size=len(pos), max_size=len(pos)))
    perm = draw(st.none() | st.permutations(range(rank)))
    return shape, tuple(pos), tuple(tiles), None if perm is None else tuple(perm)


def reference_pack(src: np.ndarray, pos: tuple, tiles: tuple, perm: tuple | None, pad: float) -> np.ndarray:
    """Element by element from the definition: result[perm(o)..., j...] = src[o*t + j] or padding."""
    n = src.ndim
    perm = tuple(range(n)) if perm is None else perm
    out = np.empty(packed_outer_shape(src.shape, pos, tiles, perm), src.dtype)
    for idx in np.ndindex(*out.shape):
        o = [0] * n
        for i, d in enumerate(perm):
            o[d] = idx[i]
        x = list(o)
        for t, d in enumerate(pos):
            x[d] = o[d] * tiles[t] + idx[n + t]
        inside = all(x[d] < src.shape[d] for d in range(n))
        out[idx] = src[tuple(x)] if inside else pad
    return out


@pytest.mark.slow
@settings(max_examples=examples(300))
@given(relayouts(), st.integers(0, 2**32 - 1))
def test_pack_unpack_round_trip(spec: tuple, seed: int) -> None:
    shape, pos, tiles, perm = spec
    src = np.random.default_rng(seed).standard_normal(shape).astype(np.float32)
    packed = pack(src, pos, tiles, perm, padding_value=7.0)
    assert packed.shape == packed_outer_shape(shape, pos, tiles, perm)
    assert packed.flags.c_contiguous and not np.shares_memory(packed, src)
    back = unpack(packed, pos, tiles, perm, dest_shape=shape)
    np.testing.assert_array_equal(back, src)
    # Without dest_shape, unpack keeps the padded extent: the padding is visible at the high end.
    full = unpack(packed, pos, tiles, perm)
    np.testing.assert_array_equal(full[tuple(slice(0, s) for s in shape)], src)
    assert (full.size - src.size) == int(np.count_nonzero(full == 7.0)) - int(np.count_nonzero(src == 7.0))


@settings(max_examples=examples(120))
@given(relayouts(max_rank=3, max_dim=6, max_tile=4), st.sampled_from([0, -3]))
def test_pack_matches_elementwise_definition(spec: tuple, pad: int) -> None:
    shape, pos, tiles, perm = spec
    src = np.arange(1, int(np.prod(shape)) + 1, dtype=np.int32).reshape(shape)
    np.testing.assert_array_equal(pack(src, pos, tiles, perm, pad), reference_pack(src, pos, tiles, perm, pad))


def test_pack_examples_from_domain() -> None:
    # Seed on AVX-512: 8x8 LHS, tiles [16, 1] -> 1x8x16x1 with zero padding; RHS B[K,N] transposes.
    a = np.arange(64, dtype=np.float32).reshape(8, 8)
    pa = pack(a, [0, 1], [16, 1])
    assert pa.shape == (1, 8, 16, 1)
    np.testing.assert_array_equal(pa[0, :, :8, 0], a.T)
    assert not pa[0, :, 8:, 0].any()
    pb = pack(a, [1, 0], [4, 1], [1, 0])
    assert pb.shape == (2, 8, 4, 1)
    np.testing.assert_array_equal(pb[1, 3, :, 0], a[3, 4:8])


def test_pack_rejects_bad_attributes() -> None:
    x = np.zeros((4, 4))
    for pos, tiles, perm in [([0, 0], [2, 2], None), ([2], [2], None), ([0], [0], None), ([0], [2, 2], None)]:
        with pytest.raises(ValueError):
            pack(x, pos, tiles, perm)
    with pytest.raises(ValueError):
        pack(x, [0], [2], [0, 0])
    with pytest.raises(ValueError):
        unpack(np.zeros((2, 2, 2)), [0], [2], dest_shape=(5, 2))
    with pytest.raises(ValueError):
        unpack(np.zeros((2, 2, 3)), [0], [2])


def _to_2d(x4: np.ndarray) -> np.ndarray:
    """[X1, K1, X0, K0] -> [X1*X0, K1*K0] with the library's unpack (padding kept)."""
    _, _, x0, k0 = x4.shape
    return unpack(x4, [0, 1], [x0, k0])


def _relayout_result(c: np.ndarray, m0: int, n0: int) -> np.ndarray:
    return pack(c, [0, 1], [m0, n0])


tile_dims = st.tuples(*[st.integers(1, 5)] * 6)  # M1, N1, K1, M0, N0, K0


@settings(max_examples=examples(60))
@given(tile_dims, st.booleans(), st.integers(0, 2**32 - 1))
def test_mmt4d_f32_matches_matmul(dims: tuple, with_acc: bool, seed: int) -> None:
    m1, n1, k1, m0, n0, k0 = dims
    rng = np.random.default_rng(seed)
    lhs = rng.standard_normal((m1, k1, m0, k0)).astype(np.float32)
    rhs = rng.standard_normal((n1, k1, n0, k0)).astype(np.float32)
    acc = rng.standard_normal((m1, n1, m0, n0)).astype(np.float32) if with_acc else None
    got = mmt4d(lhs, rhs, acc)
    want = _relayout_result(_to_2d(lhs).astype(np.float64) @ _to_2d(rhs).T.astype(np.float64), m0, n0)
    if acc is not None:
        want += acc
    assert got.dtype == np.float32 and got.shape == (m1, n1, m0, n0)
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)
    einsum = np.einsum("mkab,nkcb->mnac", lhs.astype(np.float64), rhs.astype(np.float64))
    np.testing.assert_allclose(got, einsum + (0 if acc is None else acc), rtol=1e-5, atol=1e-5)


@settings(max_examples=examples(40))
@given(tile_dims, st.sampled_from([None, np.float32, np.float16]), st.integers(0, 2**32 - 1))
def test_mmt4d_f16_accumulates_in_f32(dims: tuple, acc_type: type | None, seed: int) -> None:
    m1, n1, k1, m0, n0, k0 = dims
    rng = np.random.default_rng(seed)
    lhs = rng.standard_normal((m1, k1, m0, k0)).astype(np.float16)
    rhs = rng.standard_normal((n1, k1, n0, k0)).astype(np.float16)
    acc = None if acc_type is None else rng.standard_normal((m1, n1, m0, n0)).astype(acc_type)
    got = mmt4d(lhs, rhs, acc)
    want = _relayout_result(_to_2d(lhs).astype(np.float32) @ _to_2d(rhs).T.astype(np.float32), m0, n0)
    if acc is not None:
        want = want + acc.astype(np.float32)
    assert got.dtype == (np.float32 if acc is None else acc.dtype)
    tol = 1e-5 if got.dtype == np.float32 else 2e-3
    np.testing.assert_allclose(got, want.astype(got.dtype), rtol=tol, atol=tol)


@settings(max_examples=examples(40))
@given(tile_dims, st.booleans(), st.integers(0, 2**32 - 1))
def test_mmt4d_i8_exact_i32(dims: tuple, with_acc: bool, seed: int) -> None:
    m1, n1, k1, m0, n0, k0 = dims
    rng = np.random.default_rng(seed)
    lhs = rng.integers(-128, 128, (m1, k1, m0, k0), dtype=np.int8)
    rhs = rng.integers(-128, 128, (n1, k1, n0, k0), dtype=np.int8)
    acc = rng.integers(-(2**31), 2**31, (m1, n1, m0, n0), dtype=np.int32) if with_acc else None
    got = mmt4d(lhs, rhs, acc)
    want = _relayout_result(_to_2d(lhs).astype(np.int64) @ _to_2d(rhs).T.astype(np.int64), m0, n0)
    if acc is not None:
        want = want + acc
    assert got.dtype == np.int32
    np.testing.assert_array_equal(got, want.astype(np.int32))  # int64 -> int32 wraps like arith.addi


@pytest.mark.parametrize(
    ("dtype", "k1", "k0"),
    [(np.int8, 8, 2), (np.int8, 700, 2), (np.int32, 3, 2), (np.int16, 5, 4)],
    ids=["i8-f32-path", "i8-f64-path", "i32-int64-path", "i16-f64-path"],
)
def test_mmt4d_integer_paths_are_exact(dtype: type, k1: int, k0: int) -> None:
    rng = np.random.default_rng(0)
    info = np.iinfo(dtype)
    lhs = rng.integers(info.min, info.max, (2, k1, 3, k0), dtype=dtype, endpoint=True)
    rhs = rng.integers(info.min, info.max, (2, k1, 4, k0), dtype=dtype, endpoint=True)
    lhs.flat[0], rhs.flat[0] = info.min, info.min  # the largest product magnitude
    acc = np.full((2, 2, 3, 4), np.iinfo(np.int32).max, dtype=np.int32)  # forces wrap-around
    want = np.einsum("mkab,nkcb->mnac", lhs.astype(object), rhs.astype(object)) + acc.astype(object)
    want = ((want + 2**31) % 2**32 - 2**31).astype(np.int64)
    np.testing.assert_array_equal(mmt4d(lhs, rhs, acc), want)


def test_mmt4d_dtypes_and_validation() -> None:
    assert default_acc_dtype(np.int8) == np.int32 and default_acc_dtype(np.float16) == np.float32
    lhs, rhs = np.ones((1, 2, 3, 1), np.float32), np.ones((2, 2, 4, 1), np.float32)
    assert mmt4d(lhs, rhs, acc_dtype=np.float16).dtype == np.float16
    with pytest.raises(ValueError):
        mmt4d(lhs, np.ones((2, 3, 4, 1), np.float32))
    with pytest.raises(ValueError):
        mmt4d(lhs, rhs, np.zeros((1, 2, 3, 3), np.float32))
    with pytest.raises(ValueError):
        mmt4d(lhs[0], rhs[0])
    with pytest.raises(TypeError):
        mmt4d(lhs.astype(np.complex64), rhs)


def test_mmt4d_results_do_not_alias_scratch_or_inputs() -> None:
    rng = np.random.default_rng(1)
    lhs = rng.standard_normal((1, 3, 4, 1)).astype(np.float32)
    rhs = rng.standard_normal((1, 3, 5, 1)).astype(np.float32)
    lhs_copy, first = lhs.copy(), mmt4d(lhs, rhs)
    kept = first.copy()
    mmt4d(rhs, lhs)
    mmt4d(lhs * 2, rhs * 3)
    np.testing.assert_array_equal(first, kept)
    np.testing.assert_array_equal(lhs, lhs_copy)


@settings(max_examples=examples(30))
@given(st.integers(1, 3), tile_dims, st.integers(0, 2**32 - 1))
def test_batch_mmt4d_is_mmt4d_per_batch(b: int, dims: tuple, seed: int) -> None:
    m1, n1, k1, m0, n0, k0 = dims
    rng = np.random.default_rng(seed)
    lhs = rng.standard_normal((b, m1, k1, m0, k0)).astype(np.float32)
    rhs = rng.standard_normal((b, n1, k1, n0, k0)).astype(np.float32)
    acc = rng.standard_normal((b, m1, n1, m0, n0)).astype(np.float32)
    got = batch_mmt4d(lhs, rhs, acc)
    for i in range(b):
        np.testing.assert_allclose(got[i], mmt4d(lhs[i], rhs[i], acc[i]), rtol=1e-5, atol=1e-5)
    with pytest.raises(ValueError):
        batch_mmt4d(lhs[0], rhs[0])


@settings(max_examples=examples(60))
@given(
    st.tuples(st.integers(1, 37), st.integers(1, 37), st.integers(1, 37)),
    st.tuples(st.integers(1, 16), st.integers(1, 16), st.integers(1, 4)),
    st.integers(0, 2**32 - 1),
)
def test_pack_mmt4d_unpack_chain_equals_matmul(mnk: tuple, tile: tuple, seed: int) -> None:
    (m, n, k), (m0, n0, k0) = mnk, tile
    rng = np.random.default_rng(seed)
    a = rng.standard_normal((m, k)).astype(np.float32)
    b = rng.standard_normal((k, n)).astype(np.float32)
    pa = pack(a, [0, 1], [m0, k0])
    pbt = pack(np.ascontiguousarray(b.T), [0, 1], [n0, k0])
    pb = pack(b, [1, 0], [n0, k0], [1, 0])  # the transposing RHS pack gives the same tiles
    np.testing.assert_array_equal(pb, pbt)
    c = unpack(mmt4d(pa, pbt), [0, 1], [m0, n0], dest_shape=(m, n))
    np.testing.assert_allclose(c, a.astype(np.float64) @ b.astype(np.float64), rtol=1e-4, atol=1e-4)


def test_chain_on_all_small_tiles_exhaustively() -> None:
    a = np.arange(35, dtype=np.float64).reshape(5, 7) - 10
    b = np.arange(21, dtype=np.float64).reshape(7, 3) / 4
    for m0, n0, k0 in itertools.product([1, 2, 3, 8], [1, 2, 4], [1, 2, 3]):
        c = mmt4d(pack(a, [0, 1], [m0, k0]), pack(b, [1, 0], [n0, k0], [1, 0]))
        np.testing.assert_allclose(unpack(c, [0, 1], [m0, n0], dest_shape=(5, 3)), a @ b)
