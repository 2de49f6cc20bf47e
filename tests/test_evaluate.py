"""The NumPy evaluator, op by op, against NumPy written here; physical encodings against plain semantics.

Every expected value is computed in this file with plain NumPy (or math.erf), never with the
evaluator's own helpers, so a wrong op semantics, a wrong layout or a wrong slice of a packed
tensor fails a test.
"""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest

from egg_dispatch.evaluate import EvaluationError, PackedTensor, erf, evaluate, ops_linalg
from egg_dispatch.evaluate import encoding as encoding_mod
from egg_dispatch.mlir.ir import DenseAttr
from egg_dispatch.mlir.parser import parse_file, parse_mlir
from egg_dispatch.target import layout as target_layout
from egg_dispatch.target.layout import Layout
from egg_dispatch.target.profile import builtin_target_names, load_target

FIXTURES = Path(__file__).parent / "fixtures"
EXAMPLE = Path(__file__).parents[1] / "egg_dispatch" / "examples" / "seed_reproducer.mlir"
TARGETS = builtin_target_names()
RNG = np.random.default_rng(1234)


def run(text: str, *inputs: np.ndarray | float, target: str | None = None) -> list[np.ndarray]:
    return evaluate(parse_mlir(text, "snippet.mlir"), list(inputs), target=target)


def grid(*shape: int, dtype: type = np.float32) -> np.ndarray:
    """Multiples of 1/16 in [-1, 1]: products and short sums are exact in f32."""
    return (RNG.integers(-16, 17, shape) / 16).astype(dtype)


# ------------------------------------------------------------------------------ linalg.generic


def test_generic_broadcast_maps() -> None:
    text = """
#id = affine_map<(d0, d1) -> (d0, d1)>
func.func @f(%x: tensor<4x6xf32>, %col: tensor<6xf32>, %row: tensor<4xf32>, %s: f32) -> tensor<4x6xf32> {
  %e = tensor.empty() : tensor<4x6xf32>
  %y = linalg.generic {indexing_maps = [#id, affine_map<(d0, d1) -> (d1)>, affine_map<(d0, d1) -> (d0)>,
                                        affine_map<(d0, d1) -> ()>, #id],
                       iterator_types = ["parallel", "parallel"]}
      ins(%x, %col, %row, %s : tensor<4x6xf32>, tensor<6xf32>, tensor<4xf32>, f32) outs(%e : tensor<4x6xf32>) {
  ^bb0(%a: f32, %c: f32, %r: f32, %k: f32, %o: f32):
    %0 = arith.addf %a, %c : f32
    %1 = arith.mulf %0, %r : f32
    %2 = arith.subf %1, %k : f32
    linalg.yield %2 : f32
  } -> tensor<4x6xf32>
  return %y : tensor<4x6xf32>
}"""
    x, col, row = grid(4, 6), grid(6), grid(4)
    (y,) = run(text, x, col, row, 0.25)
    np.testing.assert_array_equal(y, (x + col[None, :]) * row[:, None] - np.float32(0.25))


def test_generic_transposed_constant_and_affine_maps() -> None:
    """A transposing input map, a constant index (torch keepdim style) and a sliding window d0 + d1."""
    text = """
func.func @f(%x: tensor<3x5xf32>, %k: tensor<5x1xf32>, %w: tensor<7xf32>) -> tensor<5x3xf32> {
  %e = tensor.empty() : tensor<5x3xf32>
  %y = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d1, d0)>, affine_map<(d0, d1) -> (d0, 0)>,
                                        affine_map<(d0, d1) -> (d0 + d1)>, affine_map<(d0, d1) -> (d0, d1)>],
                       iterator_types = ["parallel", "parallel"]}
      ins(%x, %k, %w : tensor<3x5xf32>, tensor<5x1xf32>, tensor<7xf32>) outs(%e : tensor<5x3xf32>) {
  ^bb0(%a: f32, %b: f32, %c: f32, %o: f32):
    %0 = arith.mulf %a, %b : f32
    %1 = arith.addf %0, %c : f32
    linalg.yield %1 : f32
  } -> tensor<5x3xf32>
  return %y : tensor<5x3xf32>
}"""
    x, k, w = grid(3, 5), grid(5, 1), grid(7)
    (y,) = run(text, x, k, w)
    i, j = np.meshgrid(np.arange(5), np.arange(3), indexing="ij")
    np.testing.assert_array_equal(y, x.T * k + w[i + j])


REDUCE = """
func.func @f(%x: tensor<4x6xf32>, %init: tensor<4xf32>) -> tensor<4xf32> {
  %y = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0)>],
                       iterator_types = ["parallel", "reduction"]}
      ins(%x : tensor<4x6xf32>) outs(%init : tensor<4xf32>) {
  ^bb0(%a: f32, %acc: f32):
    BODY
  } -> tensor<4xf32>
  return %y : tensor<4xf32>
}"""


@pytest.mark.parametrize(
    ("body", "expected"),
    [
        ("%0 = arith.mulf %a, %a : f32\n %1 = arith.addf %0, %acc : f32\n linalg.yield %1 : f32",
         lambda x, init: init + (x * x).sum(axis=1)),
        ("%1 = arith.maximumf %acc, %a : f32\n linalg.yield %1 : f32",
         lambda x, init: np.maximum(init, x.max(axis=1))),
        ("%1 = arith.minimumf %a, %acc : f32\n linalg.yield %1 : f32",
         lambda x, init: np.minimum(init, x.min(axis=1))),
        ("%e = math.exp %a : f32\n %1 = arith.mulf %e, %acc : f32\n linalg.yield %1 : f32",
         lambda x, init: init * np.exp(x.astype(np.float64)).prod(axis=1)),
    ],
    ids=["sum_of_squares", "max", "min", "product_of_exp"],
)  # fmt: skip
def test_generic_fold_reductions(body: str, expected: object) -> None:
    x, init = grid(4, 6), grid(4)
    (y,) = run(REDUCE.replace("BODY", body), x, init)
    np.testing.assert_allclose(y, expected(x, init), rtol=1e-6)  # type: ignore[operator]


def test_generic_reduction_fallback_is_sequential() -> None:
    """acc = 0.5 * acc + x is not a fold: it must run in loop order (Horner), not as a sum."""
    body = (
        "%h = arith.constant 0.5 : f32\n %0 = arith.mulf %acc, %h : f32\n"
        " %1 = arith.addf %0, %a : f32\n linalg.yield %1 : f32"
    )
    x, init = grid(4, 6), grid(4)
    (y,) = run(REDUCE.replace("BODY", body), x, init)
    want = init.astype(np.float64)
    for k in range(6):
        want = 0.5 * want + x[:, k]
    np.testing.assert_allclose(y, want, rtol=1e-6)


def test_generic_argmax_two_outputs_and_index() -> None:
    text = """
func.func @f(%x: tensor<3x7xf32>, %v0: tensor<3xf32>, %i0: tensor<3xi32>) -> (tensor<3xf32>, tensor<3xi32>) {
  %r:2 = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0)>,
                                          affine_map<(d0, d1) -> (d0)>],
                         iterator_types = ["parallel", "reduction"]}
      ins(%x : tensor<3x7xf32>) outs(%v0, %i0 : tensor<3xf32>, tensor<3xi32>) {
  ^bb0(%a: f32, %best: f32, %bi: i32):
    %j = linalg.index 1 : index
    %ji = arith.index_cast %j : index to i32
    %gt = arith.cmpf ogt, %a, %best : f32
    %v = arith.select %gt, %a, %best : f32
    %i = arith.select %gt, %ji, %bi : i32
    linalg.yield %v, %i : f32, i32
  } -> (tensor<3xf32>, tensor<3xi32>)
  return %r#0, %r#1 : tensor<3xf32>, tensor<3xi32>
}"""
    x = RNG.permutation(21).reshape(3, 7).astype(np.float32)
    v, i = run(text, x, np.full(3, -np.inf, np.float32), np.zeros(3, np.int32))
    np.testing.assert_array_equal(v, x.max(axis=1))
    np.testing.assert_array_equal(i, x.argmax(axis=1).astype(np.int32))


def test_linalg_index_grid() -> None:
    text = """
func.func @f() -> tensor<3x4xi32> {
  %e = tensor.empty() : tensor<3x4xi32>
  %c10 = arith.constant 10 : i32
  %y = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]}
      outs(%e : tensor<3x4xi32>) {
  ^bb0(%o: i32):
    %i = linalg.index 0 : index
    %j = linalg.index 1 : index
    %ii = arith.index_cast %i : index to i32
    %jj = arith.index_cast %j : index to i32
    %t = arith.muli %ii, %c10 : i32
    %s = arith.addi %t, %jj : i32
    linalg.yield %s : i32
  } -> tensor<3x4xi32>
  return %y : tensor<3x4xi32>
}"""
    (y,) = run(text)
    np.testing.assert_array_equal(y, 10 * np.arange(3)[:, None] + np.arange(4)[None, :])


def test_generic_body_reads_a_table_with_tensor_extract() -> None:
    """A gather written as a generic: tensor.extract with per-point indices from the loop space."""
    text = """
func.func @f(%table: tensor<6x3xf32>, %ids: tensor<4xi32>) -> tensor<4x3xf32> {
  %e = tensor.empty() : tensor<4x3xf32>
  %y = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0)>, affine_map<(d0, d1) -> (d0, d1)>],
                       iterator_types = ["parallel", "parallel"]} ins(%ids : tensor<4xi32>) outs(%e : tensor<4x3xf32>) {
  ^bb0(%id: i32, %o: f32):
    %row = arith.index_cast %id : i32 to index
    %col = linalg.index 1 : index
    %v = tensor.extract %table[%row, %col] : tensor<6x3xf32>
    linalg.yield %v : f32
  } -> tensor<4x3xf32>
  return %y : tensor<4x3xf32>
}"""
    table, ids = grid(6, 3), np.array([5, 0, 3, 3], np.int32)
    np.testing.assert_array_equal(run(text, table, ids)[0], table[ids])


def test_bf16_rounds_to_nearest_even() -> None:
    text = """
func.func @f(%x: tensor<4xf32>) -> tensor<4xf32> {
  %t = arith.truncf %x : tensor<4xf32> to tensor<4xbf16>
  %y = arith.extf %t : tensor<4xbf16> to tensor<4xf32>
  return %y : tensor<4xf32>
}"""
    x = np.array([1 + 2**-8, 1 + 3 * 2**-8, 1 + 2**-10, -(1 + 2**-6 + 2**-9)], np.float32)
    np.testing.assert_array_equal(run(text, x)[0], [1.0, 1 + 2**-6, 1.0, -(1 + 2**-6)])


# -------------------------------------------------------------------------------- contractions

MAPS_AT = (
    "[affine_map<(d0, d1, d2) -> (d2, d0)>, affine_map<(d0, d1, d2) -> (d2, d1)>, affine_map<(d0, d1, d2) -> (d0, d1)>]"
)
MAPS_BCAST = (  # the LHS is one row broadcast along M: no batch/M/N/K form, the fallback path
    "[affine_map<(d0, d1, d2) -> (d2)>, affine_map<(d0, d1, d2) -> (d2, d1)>, affine_map<(d0, d1, d2) -> (d0, d1)>]"
)


@pytest.mark.parametrize(
    ("op", "a_shape", "b_shape", "ref"),
    [
        ("linalg.matmul", (5, 7), (7, 3), lambda a, b: a @ b),
        (f"linalg.matmul indexing_maps = {MAPS_AT}", (7, 5), (7, 3), lambda a, b: a.T @ b),
        ("linalg.matmul_transpose_a", (7, 5), (7, 3), lambda a, b: a.T @ b),
        ("linalg.matmul_transpose_b", (5, 7), (3, 7), lambda a, b: a @ b.T),
        ("linalg.batch_matmul", (2, 5, 7), (2, 7, 3), lambda a, b: a @ b),
        ("linalg.matvec", (5, 7), (7,), lambda a, b: a @ b),
        ("linalg.dot", (7,), (7,), lambda a, b: np.asarray(a @ b)),
        (f"linalg.matmul indexing_maps = {MAPS_BCAST}", (7,), (7, 3), lambda a, b: np.broadcast_to(a @ b, (4, 3))),
    ],
)
def test_named_contractions(op: str, a_shape: tuple, b_shape: tuple, ref: object) -> None:
    a, b = grid(*a_shape), grid(*b_shape)
    out = ref(a, b)  # type: ignore[operator]
    t = lambda s: "tensor<" + "".join(f"{d}x" for d in s) + "f32>"  # noqa: E731
    text = f"""
func.func @f(%a: {t(a.shape)}, %b: {t(b.shape)}, %c: {t(out.shape)}) -> {t(out.shape)} {{
  %y = {op} ins(%a, %b : {t(a.shape)}, {t(b.shape)}) outs(%c : {t(out.shape)}) -> {t(out.shape)}
  return %y : {t(out.shape)}
}}"""
    c = grid(*out.shape)
    (y,) = run(text, a, b, c)
    np.testing.assert_array_equal(y, c + out)


def test_mixed_precision_matmuls() -> None:
    text = """
func.func @f(%a: tensor<4x8xi8>, %b: tensor<8x3xi8>, %h: tensor<4x8xf16>, %g: tensor<8x3xf16>)
    -> (tensor<4x3xi32>, tensor<4x3xf32>) {
  %zi = arith.constant 0 : i32
  %zf = arith.constant 0.0 : f32
  %ei = tensor.empty() : tensor<4x3xi32>
  %ef = tensor.empty() : tensor<4x3xf32>
  %ci = linalg.fill ins(%zi : i32) outs(%ei : tensor<4x3xi32>) -> tensor<4x3xi32>
  %cf = linalg.fill ins(%zf : f32) outs(%ef : tensor<4x3xf32>) -> tensor<4x3xf32>
  %yi = linalg.matmul ins(%a, %b : tensor<4x8xi8>, tensor<8x3xi8>) outs(%ci : tensor<4x3xi32>) -> tensor<4x3xi32>
  %yf = linalg.matmul ins(%h, %g : tensor<4x8xf16>, tensor<8x3xf16>) outs(%cf : tensor<4x3xf32>) -> tensor<4x3xf32>
  return %yi, %yf : tensor<4x3xi32>, tensor<4x3xf32>
}"""
    a, b = RNG.integers(-128, 128, (4, 8)).astype(np.int8), RNG.integers(-128, 128, (8, 3)).astype(np.int8)
    h, g = grid(4, 8, dtype=np.float16), grid(8, 3, dtype=np.float16)
    yi, yf = run(text, a, b, h, g)
    assert yi.dtype == np.int32 and yf.dtype == np.float32
    np.testing.assert_array_equal(yi, a.astype(np.int64) @ b.astype(np.int64))
    np.testing.assert_array_equal(yf, h.astype(np.float64) @ g.astype(np.float64))


def test_pack_mmt4d_unpack_ops_equal_matmul() -> None:
    """linalg.pack / mmt4d / unpack as written in MLIR (padding 5 -> 8, 7 -> 8, 6 -> 8)."""
    text = """
func.func @f(%a: tensor<5x6xf32>, %b: tensor<7x6xf32>) -> tensor<5x7xf32> {
  %z = arith.constant 0.0 : f32
  %ea = tensor.empty() : tensor<2x3x4x2xf32>
  %pa = linalg.pack %a padding_value(%z : f32) inner_dims_pos = [0, 1] inner_tiles = [4, 2] into %ea
      : tensor<5x6xf32> -> tensor<2x3x4x2xf32>
  %eb = tensor.empty() : tensor<2x3x4x2xf32>
  %pb = linalg.pack %b padding_value(%z : f32) inner_dims_pos = [0, 1] inner_tiles = [4, 2] into %eb
      : tensor<7x6xf32> -> tensor<2x3x4x2xf32>
  %ec = tensor.empty() : tensor<2x2x4x4xf32>
  %c = linalg.fill ins(%z : f32) outs(%ec : tensor<2x2x4x4xf32>) -> tensor<2x2x4x4xf32>
  %m = linalg.mmt4d ins(%pa, %pb : tensor<2x3x4x2xf32>, tensor<2x3x4x2xf32>) outs(%c : tensor<2x2x4x4xf32>)
      -> tensor<2x2x4x4xf32>
  %e = tensor.empty() : tensor<5x7xf32>
  %y = linalg.unpack %m inner_dims_pos = [0, 1] inner_tiles = [4, 4] into %e : tensor<2x2x4x4xf32> -> tensor<5x7xf32>
  return %y : tensor<5x7xf32>
}"""
    a, b = grid(5, 6), grid(7, 6)
    (y,) = run(text, a, b)
    np.testing.assert_array_equal(y, a @ b.T)


# --------------------------------------------------------------------------- tensor and shapes


def test_transpose_broadcast_reshape_and_slices() -> None:
    text = """
func.func @f(%x: tensor<2x3x4xf32>, %v: tensor<3xf32>, %d: tensor<6x5xf32>, %p: tensor<2x2xf32>)
    -> (tensor<4x2x3xf32>, tensor<2x3x4xf32>, tensor<6x4xf32>, tensor<2x3x2x2xf32>, tensor<6x5xf32>,
        tensor<3x2xf32>, f32, index) {
  %e = tensor.empty() : tensor<4x2x3xf32>
  %t = linalg.transpose ins(%x : tensor<2x3x4xf32>) outs(%e : tensor<4x2x3xf32>) permutation = [2, 0, 1]
  %eb = tensor.empty() : tensor<2x3x4xf32>
  %b = linalg.broadcast ins(%v : tensor<3xf32>) outs(%eb : tensor<2x3x4xf32>) dimensions = [0, 2]
  %c = tensor.collapse_shape %x [[0, 1], [2]] : tensor<2x3x4xf32> into tensor<6x4xf32>
  %r = tensor.expand_shape %c [[0, 1], [2, 3]] output_shape [2, 3, 2, 2] : tensor<6x4xf32> into tensor<2x3x2x2xf32>
  %i = tensor.insert_slice %p into %d[1, 2] [2, 2] [3, 1] : tensor<2x2xf32> into tensor<6x5xf32>
  %s = tensor.extract_slice %d[0, 1] [3, 2] [2, 3] : tensor<6x5xf32> to tensor<3x2xf32>
  %c1 = arith.constant 1 : index
  %c3 = arith.constant 3 : index
  %el = tensor.extract %x[%c1, %c1, %c3] : tensor<2x3x4xf32>
  %dm = tensor.dim %x, %c1 : tensor<2x3x4xf32>
  return %t, %b, %c, %r, %i, %s, %el, %dm : tensor<4x2x3xf32>, tensor<2x3x4xf32>, tensor<6x4xf32>,
      tensor<2x3x2x2xf32>, tensor<6x5xf32>, tensor<3x2xf32>, f32, index
}"""
    x, v, d, p = grid(2, 3, 4), grid(3), grid(6, 5), grid(2, 2)
    t, b, c, r, i, s, el, dm = run(text, x, v, d, p)
    np.testing.assert_array_equal(t, np.transpose(x, (2, 0, 1)))
    np.testing.assert_array_equal(b, np.broadcast_to(v[None, :, None], (2, 3, 4)))
    np.testing.assert_array_equal(c, x.reshape(6, 4))
    np.testing.assert_array_equal(r, x.reshape(2, 3, 2, 2))
    want = d.copy()
    want[1:5:3, 2:4] = p
    np.testing.assert_array_equal(i, want)
    np.testing.assert_array_equal(s, d[0:5:2, 1:5:3])
    assert el == x[1, 1, 3] and el.shape == () and int(dm) == 3


def test_gather_rows_and_nd_index() -> None:
    text = """
func.func @f(%src: tensor<5x3xf32>, %idx: tensor<4xi64>, %src2: tensor<2x2xi32>, %idx2: tensor<2x2xi32>)
    -> (tensor<4x3xf32>, tensor<2xi32>) {
  %e = tensor.empty() : tensor<4x3xf32>
  %g = iree_linalg_ext.gather dimension_map = [0] ins(%src, %idx : tensor<5x3xf32>, tensor<4xi64>)
      outs(%e : tensor<4x3xf32>) -> tensor<4x3xf32>
  %e2 = tensor.empty() : tensor<2xi32>
  %h = iree_linalg_ext.gather dimension_map = [0, 1] ins(%src2, %idx2 : tensor<2x2xi32>, tensor<2x2xi32>)
      outs(%e2 : tensor<2xi32>) -> tensor<2xi32>
  return %g, %h : tensor<4x3xf32>, tensor<2xi32>
}"""
    src, idx = grid(5, 3), np.array([4, 0, 2, 4], np.int64)
    src2 = np.array([[0, 1], [2, 3]], np.int32)
    idx2 = np.array([[0, 1], [1, 0]], np.int32)
    g, h = run(text, src, idx, src2, idx2)
    np.testing.assert_array_equal(g, src[idx])
    np.testing.assert_array_equal(h, [1, 2])  # IREE's e2e test gather_2d_index_with_batch


def _softmax(s: np.ndarray) -> np.ndarray:
    e = np.exp(s - s.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)


def test_attention_equals_explicit_softmax() -> None:
    text = """
func.func @f(%q: tensor<2x4x8xf32>, %k: tensor<2x6x8xf32>, %v: tensor<2x6x5xf32>, %s: f32) -> tensor<2x4x5xf32> {
  %e = tensor.empty() : tensor<2x4x5xf32>
  %o = iree_linalg_ext.attention <indexing_maps = [affine_map<(b, m, n, k1, k2) -> (b, m, k1)>,
      affine_map<(b, m, n, k1, k2) -> (b, k2, k1)>, affine_map<(b, m, n, k1, k2) -> (b, k2, n)>,
      affine_map<(b, m, n, k1, k2) -> ()>, affine_map<(b, m, n, k1, k2) -> (b, m, n)>]>
      ins(%q, %k, %v, %s : tensor<2x4x8xf32>, tensor<2x6x8xf32>, tensor<2x6x5xf32>, f32) outs(%e : tensor<2x4x5xf32>) {
  ^bb0(%score: f32):
    iree_linalg_ext.yield %score : f32
  } -> tensor<2x4x5xf32>
  return %o : tensor<2x4x5xf32>
}"""
    q, k, v = grid(2, 4, 8), grid(2, 6, 8), grid(2, 6, 5)
    (o,) = run(text, q, k, v, 0.35)
    q64, k64, v64 = (t.astype(np.float64) for t in (q, k, v))
    want = _softmax(q64 @ k64.transpose(0, 2, 1) * np.float32(0.35)) @ v64
    np.testing.assert_allclose(o, want, rtol=1e-5, atol=1e-6)


# ---------------------------------------------------------------------------- arith and math


def test_transcendentals_vs_numpy() -> None:
    text = """
func.func @f(%x: tensor<64xf32>) -> (tensor<64xf32>, tensor<64xf32>, tensor<64xf32>, tensor<64xf32>) {
  %a = math.erf %x : tensor<64xf32>
  %b = math.tanh %x : tensor<64xf32>
  %c = math.exp %x : tensor<64xf32>
  %ax = math.absf %x : tensor<64xf32>
  %d = math.rsqrt %ax : tensor<64xf32>
  return %a, %b, %c, %d : tensor<64xf32>, tensor<64xf32>, tensor<64xf32>, tensor<64xf32>
}"""
    x = np.linspace(-4, 4, 64).astype(np.float32)
    a, b, c, d = run(text, x)
    x64 = x.astype(np.float64)
    np.testing.assert_allclose(a, [math.erf(v) for v in x64], rtol=2e-7, atol=1e-7)
    np.testing.assert_allclose(b, np.tanh(x64), rtol=2e-7, atol=1e-7)
    np.testing.assert_allclose(c, np.exp(x64), rtol=2e-7)
    np.testing.assert_allclose(d, 1 / np.sqrt(np.abs(x64)), rtol=3e-7)


def test_erf_float64_accuracy() -> None:
    x = np.concatenate(
        [np.linspace(-7, 7, 20001), np.geomspace(1e-300, 1e-2, 200), [0.0, 2.999999, 3.0, 3.000001, 40.0]]
    )
    x = np.concatenate([x, -x])
    want = np.array([math.erf(v) for v in x])
    got = erf(x)
    assert np.all(np.abs(got - want) <= 2e-15 * np.maximum(np.abs(want), 1e-300))
    assert np.isnan(erf(np.array(np.nan)))


def test_integer_semantics_wrap_and_signedness() -> None:
    text = """
func.func @f(%a: i8, %b: i8, %i: i32, %flag: i1) -> (i8, i8, i8, i8, i8, i1, i32, i32, i8, f32, i32, i8, i8, i64) {
  %add = arith.addi %a, %b : i8
  %mul = arith.muli %a, %b : i8
  %c2 = arith.constant 2 : i8
  %m7 = arith.constant -7 : i8
  %div = arith.divsi %m7, %c2 : i8
  %rem = arith.remsi %m7, %c2 : i8
  %m1 = arith.constant -1 : i8
  %divu = arith.divui %m1, %c2 : i8
  %ult = arith.cmpi ult, %c2, %m1 : i8
  %ext = arith.extui %m1 : i8 to i32
  %exts = arith.extsi %m1 : i8 to i32
  %tr = arith.trunci %i : i32 to i8
  %fl = arith.sitofp %flag : i1 to f32
  %big = arith.constant 2147483647 : i32
  %wrap = arith.addi %big, %i : i32
  %sh = arith.shrui %m1, %c2 : i8
  %fd = arith.floordivsi %m7, %c2 : i8
  %idx = arith.index_castui %m1 : i8 to index
  %idx64 = arith.index_cast %idx : index to i64
  return %add, %mul, %div, %rem, %divu, %ult, %ext, %exts, %tr, %fl, %wrap, %sh, %fd, %idx64
      : i8, i8, i8, i8, i8, i1, i32, i32, i8, f32, i32, i8, i8, i64
}"""
    out = run(text, np.int8(100), np.int8(100), np.int32(300), np.bool_(True))
    expected = [-56, 16, -3, -1, 127, True, 255, -1, 44, -1.0, -2147483349, 63, -4, 255]
    assert [x.item() for x in out] == expected
    assert [x.dtype for x in out[:5]] == [np.int8] * 5


# ------------------------------------------------------------------ globals, dispatch regions


def test_globals_initializer_and_dispatch_region() -> None:
    text = """
util.global private mutable @acc : tensor<4xf32>
util.global private @scale = dense<2.0> : tensor<4xf32>
util.initializer {
  %c = arith.constant dense<[1.0, 2.0, 3.0, 4.0]> : tensor<4xf32>
  %s = util.global.load @scale : tensor<4xf32>
  %e = tensor.empty() : tensor<4xf32>
  %m = linalg.generic {indexing_maps = [affine_map<(d0) -> (d0)>, affine_map<(d0) -> (d0)>, affine_map<(d0) -> (d0)>],
                       iterator_types = ["parallel"]}
      ins(%c, %s : tensor<4xf32>, tensor<4xf32>) outs(%e : tensor<4xf32>) {
  ^bb0(%a: f32, %b: f32, %o: f32):
    %p = arith.mulf %a, %b : f32
    linalg.yield %p : f32
  } -> tensor<4xf32>
  util.global.store %m, @acc : tensor<4xf32>
  util.return
}
func.func @f(%x: tensor<4xf32>) -> tensor<4xf32> {
  %g = util.global.load @acc : tensor<4xf32>
  %r = flow.dispatch.region -> (tensor<4xf32>) {
    %s = arith.addf %g, %x : tensor<4xf32>
    flow.return %s : tensor<4xf32>
  }
  return %r : tensor<4xf32>
}"""
    x = grid(4)
    (y,) = run(text, x)
    np.testing.assert_array_equal(y, x + np.array([2, 4, 6, 8], np.float32))


# ---------------------------------------------------------------------------- seed and targets


def _seed_weight(module: object) -> np.ndarray:
    consts = [op.attributes["value"] for op in module.walk() if op.name == "arith.constant"]  # type: ignore[attr-defined]
    return next(c.array for c in consts if isinstance(c, DenseAttr) and c.array.shape == (16, 8))


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("fixture", ["seed_after_set_encoding", "seed_dispatch_creation"])
def test_seed_physical_equals_plain_and_numpy(fixture: str, target: str) -> None:
    module = parse_file(FIXTURES / f"{fixture}.mlir")
    a, b = grid(8, 8), grid(8, 8)
    plain = evaluate(module, [a, b])
    physical = evaluate(module, [a, b], target=target)
    seed = parse_file(FIXTURES / "seed_iree313.mlir")
    w = _seed_weight(seed)
    for got in (plain, physical):
        np.testing.assert_array_equal(got[0], w[0:8] @ a.T)
        np.testing.assert_array_equal(got[1], w[8:16] @ b.T)


def test_seed_after_set_encoding_really_packs_on_avx512(monkeypatch: pytest.MonkeyPatch) -> None:
    """The physical run packs 8x8 into 16x16 tiles: 1x8x16x1 operands, a 1x1x16x16 result
    (docs/iree-data-tiling.md §4)."""
    seen: list[tuple[tuple[int, ...], ...]] = []
    real = encoding_mod.contract_packed

    def spy(lhs: PackedTensor, rhs: PackedTensor, acc: PackedTensor, *rest: object) -> PackedTensor:
        seen.append((lhs.packed.shape, rhs.packed.shape, acc.packed.shape))
        return real(lhs, rhs, acc, *rest)  # type: ignore[arg-type]

    monkeypatch.setattr(ops_linalg, "contract_packed", spy)
    evaluate(parse_file(FIXTURES / "seed_after_set_encoding.mlir"), [grid(8, 8), grid(8, 8)], target="x86_64-avx512")
    assert seen == [((1, 8, 16, 1), (1, 8, 16, 1), (1, 1, 16, 16))] * 2


def test_builtin_example_equals_numpy_of_its_constant() -> None:
    module = parse_file(EXAMPLE)
    w = _seed_weight(module)
    a, b = grid(8, 8), grid(8, 8)
    top, bottom = evaluate(module, [a, b])
    np.testing.assert_allclose(top, w[0:8].astype(np.float64) @ a.T, rtol=1e-6, atol=1e-6)
    np.testing.assert_allclose(bottom, w[8:16].astype(np.float64) @ b.T, rtol=1e-6, atol=1e-6)


def test_wrong_layout_gives_wrong_numbers(monkeypatch: pytest.MonkeyPatch) -> None:
    """Pack the transposed-RHS operand as if it were a plain [K, N] RHS: same shapes, wrong numbers."""
    real = target_layout.resolve_layout

    def wrong(target: object, operand_index: int, *args: object) -> Layout | None:
        lay = real(target, operand_index, *args)  # type: ignore[arg-type]
        if operand_index == 1 and lay is not None:
            return Layout(lay.inner_dims_pos[::-1], lay.inner_tiles, lay.outer_dims_perm[::-1])
        return lay

    module = parse_file(FIXTURES / "seed_after_set_encoding.mlir")
    a, b = grid(8, 8), grid(8, 8)
    plain = evaluate(module, [a, b])
    monkeypatch.setattr(target_layout, "resolve_layout", wrong)
    broken = evaluate(module, [a, b], target="x86_64-avx2")
    assert not np.array_equal(broken[0], plain[0])
    np.testing.assert_array_equal(broken[0], _seed_weight(parse_file(FIXTURES / "seed_iree313.mlir"))[0:8] @ a)


def _encoding(i: int, m: int, n: int, k: int) -> str:
    maps = (
        "[affine_map<(d0, d1, d2) -> (d0, d2)>, affine_map<(d0, d1, d2) -> (d1, d2)>, "
        "affine_map<(d0, d1, d2) -> (d0, d1)>]"
    )
    return (
        f"#iree_encoding.encoding<operand_index = {i} : index, op_type = matmul, element_types = [f32, f32, f32], "
        f"user_indexing_maps = {maps}, iteration_sizes = [{m}, {n}, {k}]>"
    )


def _propagated_slice(offset: int) -> str:
    """set_encoding of a 16x8 weight, then an 8-row slice of the *packed* tensor feeds the matmul."""
    big, small, rhs, acc = _encoding(0, 16, 8, 8), _encoding(0, 8, 8, 8), _encoding(1, 8, 8, 8), _encoding(2, 8, 8, 8)
    return f"""
func.func @f(%w: tensor<16x8xf32>, %b: tensor<8x8xf32>) -> tensor<8x8xf32> {{
  %z = arith.constant 0.0 : f32
  %pw = iree_encoding.set_encoding %w : tensor<16x8xf32> -> tensor<16x8xf32, {big}>
  %s = tensor.extract_slice %pw[{offset}, 0] [8, 8] [1, 1] : tensor<16x8xf32, {big}> to tensor<8x8xf32, {small}>
  %pb = iree_encoding.set_encoding %b : tensor<8x8xf32> -> tensor<8x8xf32, {rhs}>
  %e = tensor.empty() : tensor<8x8xf32, {acc}>
  %c = linalg.fill ins(%z : f32) outs(%e : tensor<8x8xf32, {acc}>) -> tensor<8x8xf32, {acc}>
  %m = linalg.matmul indexing_maps = [affine_map<(d0, d1, d2) -> (d0, d2)>, affine_map<(d0, d1, d2) -> (d1, d2)>,
                                      affine_map<(d0, d1, d2) -> (d0, d1)>]
      ins(%s, %pb : tensor<8x8xf32, {small}>, tensor<8x8xf32, {rhs}>) outs(%c : tensor<8x8xf32, {acc}>)
      -> tensor<8x8xf32, {acc}>
  %u = iree_encoding.unset_encoding %m : tensor<8x8xf32, {acc}> -> tensor<8x8xf32>
  return %u : tensor<8x8xf32>
}}"""


def test_slice_of_packed_tensor_is_physical() -> None:
    """Rows 8:16 are whole 8-row tiles on AVX2 (right numbers) but half a 16-row tile on AVX-512."""
    w, b = grid(16, 8), grid(8, 8)
    text = _propagated_slice(8)
    np.testing.assert_array_equal(run(text, w, b)[0], w[8:16] @ b.T)
    np.testing.assert_array_equal(run(text, w, b, target="x86_64-avx2")[0], w[8:16] @ b.T)
    assert not np.array_equal(run(text, w, b, target="x86_64-avx512")[0], w[8:16] @ b.T)
    assert not np.array_equal(run(_propagated_slice(4), w, b, target="x86_64-avx2")[0], w[4:12] @ b.T)


@pytest.mark.parametrize("target", ["x86_64-avx512", "aarch64-neon"])
def test_packed_fill_and_elementwise(target: str) -> None:
    """A nonzero fill of an encoded accumulator and an elementwise generic on two packed tensors."""
    acc = _encoding(2, 5, 3, 4)
    text = f"""
func.func @f(%a: tensor<5x3xf32>, %b: tensor<5x3xf32>) -> tensor<5x3xf32> {{
  %one = arith.constant 1.0 : f32
  %pa = iree_encoding.set_encoding %a : tensor<5x3xf32> -> tensor<5x3xf32, {acc}>
  %pb = iree_encoding.set_encoding %b : tensor<5x3xf32> -> tensor<5x3xf32, {acc}>
  %e = tensor.empty() : tensor<5x3xf32, {acc}>
  %f = linalg.fill ins(%one : f32) outs(%e : tensor<5x3xf32, {acc}>) -> tensor<5x3xf32, {acc}>
  %s = linalg.generic {{indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, d1)>,
                                        affine_map<(d0, d1) -> (d0, d1)>],
                       iterator_types = ["parallel", "parallel"]}}
      ins(%pa, %pb : tensor<5x3xf32, {acc}>, tensor<5x3xf32, {acc}>) outs(%f : tensor<5x3xf32, {acc}>) {{
  ^bb0(%x: f32, %y: f32, %o: f32):
    %m = arith.mulf %x, %y : f32
    %r = arith.addf %m, %o : f32
    linalg.yield %r : f32
  }} -> tensor<5x3xf32, {acc}>
  %u = iree_encoding.unset_encoding %s : tensor<5x3xf32, {acc}> -> tensor<5x3xf32>
  return %u : tensor<5x3xf32>
}}"""
    a, b = grid(5, 3), grid(5, 3)
    np.testing.assert_array_equal(run(text, a, b, target=target)[0], a * b + 1)
    assert load_target(target).tile("f32,f32,f32") is not None


def _encoded_matmul(m: int, n: int, k: int, rhs_t: bool, batch: int | None, et: str, acc: str, generic: bool) -> str:
    """set_encoding on LHS, RHS and a filled accumulator, one contraction, unset_encoding."""
    b = f"{batch}x" if batch else ""
    if batch:
        dims, lm, om = "(d0, d1, d2, d3)", "(d0, d1, d3)", "(d0, d1, d2)"
        rm, sizes = ("(d0, d2, d3)" if rhs_t else "(d0, d3, d2)"), f"[{batch}, {m}, {n}, {k}]"
        iters = '["parallel", "parallel", "parallel", "reduction"]'
    else:
        dims, lm, om = "(d0, d1, d2)", "(d0, d2)", "(d0, d1)"
        rm, sizes = ("(d1, d2)" if rhs_t else "(d2, d1)"), f"[{m}, {n}, {k}]"
        iters = '["parallel", "parallel", "reduction"]'
    maps = f"[affine_map<{dims} -> {lm}>, affine_map<{dims} -> {rm}>, affine_map<{dims} -> {om}>]"

    def enc(i: int) -> str:
        return (
            f"#iree_encoding.encoding<operand_index = {i} : index, op_type = matmul, element_types = [{et}, {et}, "
            f"{acc}], user_indexing_maps = {maps}, iteration_sizes = {sizes}>"
        )

    ta, tr, tc = (
        f"tensor<{b}{m}x{k}x{et}",
        f"tensor<{b}{n}x{k}x{et}" if rhs_t else f"tensor<{b}{k}x{n}x{et}",
        f"tensor<{b}{m}x{n}x{acc}",
    )
    zero = "0.0" if acc.startswith("f") else "0"
    if generic:
        fl = acc.startswith("f")
        cast = "arith.extf" if fl else "arith.extsi"
        mul, add = ("arith.mulf", "arith.addf") if fl else ("arith.muli", "arith.addi")
        conv = (f"%xa = {cast} %x : {et} to {acc}\n    %xb = {cast} %y : {et} to {acc}\n") if et != acc else ""
        xa, xb = ("%xa", "%xb") if et != acc else ("%x", "%y")
        contraction = f"""linalg.generic {{indexing_maps = {maps}, iterator_types = {iters}}}
      ins(%ea, %er : {ta}, {enc(0)}>, {tr}, {enc(1)}>) outs(%f : {tc}, {enc(2)}>) {{
  ^bb0(%x: {et}, %y: {et}, %o: {acc}):
    {conv}%p = {mul} {xa}, {xb} : {acc}
    %s = {add} %o, %p : {acc}
    linalg.yield %s : {acc}
  }} -> {tc}, {enc(2)}>"""
    else:
        op = "linalg.batch_matmul" if batch else "linalg.matmul"
        contraction = f"""{op} indexing_maps = {maps} ins(%ea, %er : {ta}, {enc(0)}>, {tr}, {enc(1)}>)
      outs(%f : {tc}, {enc(2)}>) -> {tc}, {enc(2)}>"""
    return f"""
func.func @f(%a: {ta}>, %r: {tr}>) -> {tc}> {{
  %z = arith.constant {zero} : {acc}
  %ea = iree_encoding.set_encoding %a : {ta}> -> {ta}, {enc(0)}>
  %er = iree_encoding.set_encoding %r : {tr}> -> {tr}, {enc(1)}>
  %e = tensor.empty() : {tc}, {enc(2)}>
  %f = linalg.fill ins(%z : {acc}) outs(%e : {tc}, {enc(2)}>) -> {tc}, {enc(2)}>
  %mm = {contraction}
  %u = iree_encoding.unset_encoding %mm : {tc}, {enc(2)}> -> {tc}>
  return %u : {tc}>
}}"""


@pytest.mark.parametrize("target", [None, *TARGETS])
@pytest.mark.parametrize(
    ("m", "n", "k", "rhs_t", "batch", "et", "acc", "generic"),
    [
        (16, 4, 8, False, None, "f32", "f32", False),  # narrow N: mmt4d on swapped operands
        (1, 16, 8, True, None, "f32", "f32", False),  # narrow M (M0 = 1)
        (13, 11, 7, False, None, "f32", "f32", True),  # ragged everywhere; generic contraction form
        (6, 5, 3, True, 2, "f32", "f32", False),  # batch_mmt4d
        (16, 16, 32, False, None, "i8", "i32", True),  # integer tiles (K0 = 2)
        (8, 16, 8, True, None, "f16", "f32", False),  # mixed precision
    ],
)
def test_physical_contractions_equal_numpy(
    target: str | None, m: int, n: int, k: int, rhs_t: bool, batch: int | None, et: str, acc: str, generic: bool
) -> None:
    dt = {"f32": np.float32, "f16": np.float16, "i8": np.int8}[et]
    lead = (batch,) if batch else ()
    a = grid(*lead, m, k, dtype=dt) if et != "i8" else RNG.integers(-128, 128, (*lead, m, k)).astype(dt)
    rshape = (*lead, n, k) if rhs_t else (*lead, k, n)
    r = grid(*rshape, dtype=dt) if et != "i8" else RNG.integers(-128, 128, rshape).astype(dt)
    want = a.astype(np.int64 if et == "i8" else np.float64) @ np.swapaxes(r, -1, -2) if rhs_t else None
    if want is None:
        want = a.astype(np.int64 if et == "i8" else np.float64) @ r
    (got,) = run(_encoded_matmul(m, n, k, rhs_t, batch, et, acc, generic), a, r, target=target)
    np.testing.assert_array_equal(got, want)


# ------------------------------------------------------------------------------------- errors


def test_unsupported_op_names_op_and_location() -> None:
    text = """func.func @f(%x: tensor<4xf32>) -> tensor<4xf32> {
  %y = "foo.bar"(%x) : (tensor<4xf32>) -> tensor<4xf32>
  return %y : tensor<4xf32>
}"""
    with pytest.raises(EvaluationError) as info:
        run(text, grid(4))
    assert str(info.value).startswith("snippet.mlir:2:3: error: 'foo.bar'")
    assert info.value.loc is not None and (info.value.loc.line, info.value.loc.col) == (2, 3)
    opaque = (
        "func.func @f(%x: tensor<4xf32>) -> tensor<4xf32> {\n  %y = foo.baz %x : tensor<4xf32>\n"
        "  return %y : tensor<4xf32>\n}"
    )
    with pytest.raises(EvaluationError, match=r"snippet\.mlir:2:3: error: 'foo\.baz': not modelled"):
        run(opaque, grid(4))


def test_input_mismatch_is_an_error() -> None:
    module = parse_file(FIXTURES / "seed_iree313.mlir")
    with pytest.raises(EvaluationError, match=r"input 1: expected tensor<8x8xf32>, got an array of shape \[8x4\]"):
        evaluate(module, [grid(8, 8), grid(8, 4)])
    with pytest.raises(EvaluationError, match="float64"):
        evaluate(module, [grid(8, 8), np.zeros((8, 8))])
    with pytest.raises(EvaluationError, match="takes 2 inputs"):
        evaluate(module, [grid(8, 8)])
