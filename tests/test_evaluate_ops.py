"""The evaluator on the ops PyTorch exports use, each against plain NumPy written here.

Covers what IREE's input and global-optimization phases produce for standard PyTorch blocks: generics
with constant-result maps (keepdim reductions, size-1 broadcasts), ``arith``/``math`` elementwise ops
and casts, ``tensor.concat`` / ``tensor.pad`` / ``linalg.softmax`` / ``cf.assert`` (with their custom
syntax round-tripping and accepted by ``iree-opt``), layout ops, attention with and without masks,
gathers and embedding lookups, and the index ranges of random inputs. Expected values never use the
evaluator's own helpers.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from egg_dispatch.evaluate import EvaluationError, evaluate
from egg_dispatch.evaluate.check import check_module, function_inputs
from egg_dispatch.evaluate.index_ranges import index_bounds
from egg_dispatch.iree.tools import find_tool, iree_opt_parses
from egg_dispatch.mlir.compare import ir_key
from egg_dispatch.mlir.parser import parse_mlir
from egg_dispatch.mlir.printer import print_mlir

RNG = np.random.default_rng(7)
needs_iree_opt = pytest.mark.skipif(find_tool("iree-opt") is None, reason="iree-opt not installed")


def run(text: str, *inputs: object) -> list[np.ndarray]:
    return evaluate(parse_mlir(text, "snippet.mlir"), list(inputs))  # type: ignore[arg-type]


def grid(*shape: int, dtype: type = np.float32) -> np.ndarray:
    return (RNG.integers(-16, 17, shape) / 16).astype(dtype)


def bf16(x: np.ndarray) -> np.ndarray:
    """Round to bfloat16 (nearest even) and back, by bit manipulation written here."""
    b = np.asarray(x, np.float32).view(np.uint32).astype(np.uint64)
    lsb = (b >> 16) & 1
    return ((b + 0x7FFF + lsb) & 0xFFFF0000).astype(np.uint32).view(np.float32)


def elementwise(op: str, in_types: list[str], out_type: str, shape: tuple[int, ...] = (5,), extra: str = "") -> str:
    """A function applying ``op`` on tensors, and the same op in a generic body (two results)."""
    dims = "x".join(map(str, shape))
    t = [f"tensor<{dims}x{e}>" for e in in_types]
    tout = f"tensor<{dims}x{out_type}>"
    args = ", ".join(f"%a{i}: {x}" for i, x in enumerate(t))
    vals = ", ".join(f"%a{i}" for i in range(len(t)))
    bvals = ", ".join(f"%b{i}" for i in range(len(t)))
    bargs = ", ".join(f"%b{i}: {e}" for i, e in enumerate(in_types))
    rank = len(shape)
    idmap = f"affine_map<({', '.join(f'd{i}' for i in range(rank))}) -> ({', '.join(f'd{i}' for i in range(rank))})>"
    maps = ", ".join([idmap] * (len(t) + 1))
    iters = ", ".join(['"parallel"'] * rank)
    tensor_sig, scalar_sig = _op_types(op, t, tout, in_types, out_type)
    return f"""
func.func @f({args}) -> ({tout}, {tout}) {{
  %r = {op} {vals}{extra} : {tensor_sig}
  %e = tensor.empty() : {tout}
  %g = linalg.generic {{indexing_maps = [{maps}], iterator_types = [{iters}]}}
      ins({vals} : {", ".join(t)}) outs(%e : {tout}) {{
  ^bb0({bargs}, %o: {out_type}):
    %y = {op} {bvals}{extra} : {scalar_sig}
    linalg.yield %y : {out_type}
  }} -> {tout}
  return %r, %g : {tout}, {tout}
}}"""


def _op_types(op: str, t: list[str], tout: str, in_types: list[str], out_type: str) -> tuple[str, str]:
    short = op.split()[0].split(".")[1]
    if short in ("extf", "truncf", "extsi", "extui", "trunci", "sitofp", "uitofp", "fptosi", "fptoui",
                 "index_cast", "bitcast"):  # fmt: skip
        return f"{t[0]} to {tout}", f"{in_types[0]} to {out_type}"
    if short in ("cmpf", "cmpi"):
        return t[0], in_types[0]
    if short == "select":
        return f"{t[0]}, {t[1]}", in_types[1]
    if len(set(in_types)) > 1:
        return ", ".join(t), ", ".join(in_types)
    return t[0], in_types[0]


def both(text: str, *inputs: object) -> np.ndarray:
    """Run an ``elementwise`` program; the tensor op and the generic body must agree bit for bit."""
    r, g = run(text, *inputs)
    np.testing.assert_array_equal(r, g)
    return r


# ------------------------------------------------------------------------- generics with constant maps


def test_keepdim_reduction_writes_through_a_constant_output_map() -> None:
    text = """
func.func @f(%x: tensor<2x3x4xf32>, %init: tensor<2x3x2xf32>) -> (tensor<2x3x1xf32>, tensor<2x3x2xf32>) {
  %c0 = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<2x3x1xf32>
  %z = linalg.fill ins(%c0 : f32) outs(%e : tensor<2x3x1xf32>) -> tensor<2x3x1xf32>
  %s = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2) -> (d0, d1, d2)>,
                                        affine_map<(d0, d1, d2) -> (d0, d1, 0)>],
                       iterator_types = ["parallel", "parallel", "reduction"]}
      ins(%x : tensor<2x3x4xf32>) outs(%z : tensor<2x3x1xf32>) {
  ^bb0(%a: f32, %o: f32):
    %y = arith.addf %a, %o : f32
    linalg.yield %y : f32
  } -> tensor<2x3x1xf32>
  %m = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2) -> (d0, d1, d2)>,
                                        affine_map<(d0, d1, d2) -> (d0, d1, 1)>],
                       iterator_types = ["parallel", "parallel", "reduction"]}
      ins(%x : tensor<2x3x4xf32>) outs(%init : tensor<2x3x2xf32>) {
  ^bb0(%a: f32, %o: f32):
    %y = arith.maximumf %a, %o : f32
    linalg.yield %y : f32
  } -> tensor<2x3x2xf32>
  return %s, %m : tensor<2x3x1xf32>, tensor<2x3x2xf32>
}"""
    x, init = grid(2, 3, 4), grid(2, 3, 2)
    s, m = run(text, x, init)
    np.testing.assert_allclose(s, x.sum(axis=2, keepdims=True), rtol=1e-6)
    want = init.copy()
    want[:, :, 1] = np.maximum(x.max(axis=2), init[:, :, 1])  # index 0 is never written: keeps the init
    np.testing.assert_array_equal(m, want)


def test_constant_maps_in_a_sequential_reduction_and_a_parallel_op() -> None:
    """A body that is not a plain fold (the per-point path) and a parallel op writing (0, d1)."""
    text = """
func.func @f(%x: tensor<3x4xf32>, %b: tensor<1x4xf32>) -> (tensor<3x1xf32>, tensor<2x4xf32>) {
  %c0 = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<3x1xf32>
  %z = linalg.fill ins(%c0 : f32) outs(%e : tensor<3x1xf32>) -> tensor<3x1xf32>
  %s = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, 0)>],
                       iterator_types = ["parallel", "reduction"]}
      ins(%x : tensor<3x4xf32>) outs(%z : tensor<3x1xf32>) {
  ^bb0(%a: f32, %o: f32):
    %h = arith.mulf %o, %a : f32
    %y = arith.addf %h, %a : f32
    linalg.yield %y : f32
  } -> tensor<3x1xf32>
  %e2 = tensor.empty() : tensor<2x4xf32>
  %f2 = linalg.fill ins(%c0 : f32) outs(%e2 : tensor<2x4xf32>) -> tensor<2x4xf32>
  %p = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (0, d1)>],
                       iterator_types = ["parallel", "parallel"]}
      ins(%b : tensor<1x4xf32>) outs(%f2 : tensor<2x4xf32>) {
  ^bb0(%a: f32, %o: f32):
    %y = arith.negf %a : f32
    linalg.yield %y : f32
  } -> tensor<2x4xf32>
  return %s, %p : tensor<3x1xf32>, tensor<2x4xf32>
}"""
    x, b = grid(3, 4), grid(1, 4)
    s, p = run(text, x, b)
    acc = np.zeros(3, np.float32)
    for j in range(4):
        acc = acc * x[:, j] + x[:, j]
    np.testing.assert_allclose(s[:, 0], acc, rtol=1e-6)
    np.testing.assert_array_equal(p, np.stack([-b[0], np.zeros(4, np.float32)]))


def test_broadcast_input_maps_with_constants() -> None:
    text = """
func.func @f(%x: tensor<1x4xf32>, %y: tensor<3x1xf32>) -> tensor<3x4xf32> {
  %e = tensor.empty() : tensor<3x4xf32>
  %r = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (0, d1)>, affine_map<(d0, d1) -> (d0, 0)>,
                                        affine_map<(d0, d1) -> (d0, d1)>],
                       iterator_types = ["parallel", "parallel"]}
      ins(%x, %y : tensor<1x4xf32>, tensor<3x1xf32>) outs(%e : tensor<3x4xf32>) {
  ^bb0(%a: f32, %b: f32, %o: f32):
    %v = arith.subf %a, %b : f32
    linalg.yield %v : f32
  } -> tensor<3x4xf32>
  return %r : tensor<3x4xf32>
}"""
    x, y = grid(1, 4), grid(3, 1)
    (r,) = run(text, x, y)
    np.testing.assert_array_equal(r, x - y)


# ------------------------------------------------------------------------------ arith / math


CMPF = {
    "oeq": lambda a, b: a == b, "ogt": lambda a, b: a > b, "oge": lambda a, b: a >= b, "olt": lambda a, b: a < b,
    "ole": lambda a, b: a <= b, "one": lambda a, b: (a != b) & ~np.isnan(a) & ~np.isnan(b),
    "ord": lambda a, b: ~np.isnan(a) & ~np.isnan(b), "ueq": lambda a, b: (a == b) | np.isnan(a) | np.isnan(b),
    "ugt": lambda a, b: ~(a <= b), "uge": lambda a, b: ~(a < b), "ult": lambda a, b: ~(a >= b),
    "ule": lambda a, b: ~(a > b), "une": lambda a, b: a != b, "uno": lambda a, b: np.isnan(a) | np.isnan(b),
    "false": lambda a, b: np.zeros(a.shape, bool), "true": lambda a, b: np.ones(a.shape, bool),
}  # fmt: skip


@pytest.mark.parametrize("pred", sorted(CMPF))
def test_cmpf_every_predicate(pred: str) -> None:
    a = np.array([1.0, np.nan, 2.0, -1.0, np.nan, 0.0], np.float32)
    b = np.array([1.0, 1.0, 1.0, 3.0, np.nan, -0.0], np.float32)
    got = both(elementwise(f"arith.cmpf {pred},", ["f32", "f32"], "i1", (6,)), a, b)
    with np.errstate(invalid="ignore"):
        np.testing.assert_array_equal(got, CMPF[pred](a, b))


CMPI = {
    "eq": (np.equal, False), "ne": (np.not_equal, False), "slt": (np.less, False), "sle": (np.less_equal, False),
    "sgt": (np.greater, False), "sge": (np.greater_equal, False), "ult": (np.less, True),
    "ule": (np.less_equal, True), "ugt": (np.greater, True), "uge": (np.greater_equal, True),
}  # fmt: skip


@pytest.mark.parametrize("pred", sorted(CMPI))
def test_cmpi_every_predicate(pred: str) -> None:
    a = np.array([1, -1, 5, -128, 127, 0], np.int8)
    b = np.array([1, 1, -5, 127, -128, 0], np.int8)
    fn, unsigned = CMPI[pred]
    got = both(elementwise(f"arith.cmpi {pred},", ["i8", "i8"], "i1", (6,)), a, b)
    np.testing.assert_array_equal(got, fn(a.view(np.uint8), b.view(np.uint8)) if unsigned else fn(a, b))


def test_select_on_tensors_and_in_bodies() -> None:
    c = np.array([True, False, True, False])
    a, b = grid(4), grid(4)
    got = both(elementwise("arith.select", ["i1", "f32", "f32"], "f32", (4,)), c, a, b)
    np.testing.assert_array_equal(got, np.where(c, a, b))
    # A scalar condition on tensors (as torch-mlir writes it for torch.where with a 0-d mask).
    text = """
func.func @f(%c: i1, %a: tensor<4xf32>, %b: tensor<4xf32>) -> tensor<4xf32> {
  %r = arith.select %c, %a, %b : tensor<4xf32>
  return %r : tensor<4xf32>
}"""
    for cond in (True, False):
        (r,) = run(text, cond, a, b)
        np.testing.assert_array_equal(r, a if cond else b)


@pytest.mark.parametrize(
    ("op", "ref"),
    [
        ("arith.maximumf", lambda a, b: np.where(np.isnan(a) | np.isnan(b), np.nan, np.maximum(a, b))),
        ("arith.minimumf", lambda a, b: np.where(np.isnan(a) | np.isnan(b), np.nan, np.minimum(a, b))),
        ("arith.maxnumf", lambda a, b: np.where(np.isnan(a), b, np.where(np.isnan(b), a, np.maximum(a, b)))),
        ("arith.minnumf", lambda a, b: np.where(np.isnan(a), b, np.where(np.isnan(b), a, np.minimum(a, b)))),
    ],
)
def test_min_max_nan_semantics(op: str, ref: object) -> None:
    a = np.array([1.0, np.nan, 3.0, np.nan, -2.0], np.float32)
    b = np.array([2.0, 1.0, np.nan, np.nan, -3.0], np.float32)
    got = both(elementwise(op, ["f32", "f32"], "f32"), a, b)
    np.testing.assert_array_equal(got, ref(a, b).astype(np.float32))  # type: ignore[operator]


def test_float_casts() -> None:
    x = np.array([1.0, 1 / 3, 65504.0, 1e-8, -2.5], np.float32)
    h = both(elementwise("arith.truncf", ["f32"], "f16"), x)
    assert h.dtype == np.float16
    np.testing.assert_array_equal(h, x.astype(np.float16))
    w = both(elementwise("arith.extf", ["f16"], "f32"), h)
    np.testing.assert_array_equal(w, h.astype(np.float32))
    y = np.array([1.0, 1 / 3, 1.00390625, 1.01171875, -300.7], np.float32)  # two ties: to even
    b = both(elementwise("arith.truncf", ["f32"], "bf16"), y)
    np.testing.assert_array_equal(b, bf16(y))
    back = both(elementwise("arith.extf", ["bf16"], "f32"), b)
    np.testing.assert_array_equal(back, b)


def test_integer_casts() -> None:
    i8 = np.array([-128, -1, 0, 1, 127], np.int8)
    np.testing.assert_array_equal(both(elementwise("arith.extsi", ["i8"], "i32"), i8), i8.astype(np.int32))
    np.testing.assert_array_equal(
        both(elementwise("arith.extui", ["i8"], "i32"), i8), i8.view(np.uint8).astype(np.int32)
    )
    i32 = np.array([300, -300, 127, 128, -129], np.int32)
    np.testing.assert_array_equal(both(elementwise("arith.trunci", ["i32"], "i8"), i32), i32.astype(np.int8))
    np.testing.assert_array_equal(both(elementwise("arith.sitofp", ["i8"], "f32"), i8), i8.astype(np.float32))
    np.testing.assert_array_equal(
        both(elementwise("arith.uitofp", ["i8"], "f32"), i8), i8.view(np.uint8).astype(np.float32)
    )
    f = np.array([-2.7, -0.5, 0.5, 2.7, 100.2], np.float32)
    np.testing.assert_array_equal(both(elementwise("arith.fptosi", ["f32"], "i32"), f), np.trunc(f).astype(np.int32))
    fu = np.array([0.0, 0.5, 2.7, 200.9, 255.0], np.float32)
    np.testing.assert_array_equal(
        both(elementwise("arith.fptoui", ["f32"], "i8"), fu), np.trunc(fu).astype(np.uint8).view(np.int8)
    )
    i64 = np.array([0, 3, -1, 7, 1 << 40], np.int64)
    np.testing.assert_array_equal(both(elementwise("arith.index_cast", ["i64"], "index"), i64), i64)
    np.testing.assert_array_equal(both(elementwise("arith.index_cast", ["index"], "i32"), i64), i64.astype(np.int32))
    np.testing.assert_array_equal(both(elementwise("arith.bitcast", ["f32"], "i32"), f), f.view(np.int32))
    bits = both(
        elementwise("arith.bitcast", ["i16"], "f16"), np.array([0x3C00, 0xC000 - 65536, 0, 1, 0x7BFF], np.int16)
    )
    np.testing.assert_array_equal(bits, np.array([1.0, -2.0, 0.0, 2.0**-24, 65504.0], np.float16))


_ERF = np.vectorize(math.erf)

MATH = [
    ("math.exp", np.exp), ("math.exp2", np.exp2), ("math.log", np.log), ("math.log1p", np.log1p),
    ("math.tanh", np.tanh), ("math.erf", _ERF), ("math.rsqrt", lambda x: 1 / np.sqrt(x)), ("math.sqrt", np.sqrt),
    ("math.sin", np.sin), ("math.cos", np.cos), ("math.absf", np.abs), ("math.floor", np.floor),
    ("math.ceil", np.ceil), ("math.round", lambda x: np.sign(x) * np.floor(np.abs(x) + 0.5)),
    ("math.roundeven", np.round),
]  # fmt: skip


@pytest.mark.parametrize(("op", "ref"), MATH, ids=[m[0] for m in MATH])
@pytest.mark.parametrize("et", ["f32", "f16"])
def test_math_unary(op: str, ref: object, et: str) -> None:
    dt = np.float32 if et == "f32" else np.float16
    x = np.array([0.5, 1.5, 2.5, -0.5, -2.5, 3.0, 0.25, 7.75], dt)
    if op in ("math.log", "math.rsqrt", "math.sqrt", "math.log1p"):
        x = np.abs(x) + dt(0.125)
    got = both(elementwise(op, [et], et, (8,)), x)
    want = np.asarray(ref(x.astype(np.float64))).astype(dt)  # type: ignore[operator]
    np.testing.assert_allclose(got.astype(np.float64), want.astype(np.float64), rtol=2 * np.finfo(dt).eps, atol=0)


def test_powers() -> None:
    x = np.array([0.5, 2.0, 3.0, 1.5], np.float32)
    y = np.array([2.0, -1.0, 0.5, 3.0], np.float32)
    np.testing.assert_allclose(both(elementwise("math.powf", ["f32", "f32"], "f32", (4,)), x, y), x**y, rtol=1e-6)
    n = np.array([2, -1, 0, 3], np.int32)
    np.testing.assert_allclose(
        both(elementwise("math.fpowi", ["f32", "i32"], "f32", (4,)), x, n), x.astype(np.float64) ** n, rtol=1e-6
    )
    a = np.array([2, -3, 1, 5], np.int32)
    b = np.array([3, 3, -2, 0], np.int32)
    want = np.array([8, -27, 1, 1], np.int32)  # 1^-2 = 1; negative powers of |a| > 1 give 0
    np.testing.assert_array_equal(both(elementwise("math.ipowi", ["i32", "i32"], "i32", (4,)), a, b), want)


def test_integer_and_bool_tensors() -> None:
    a = np.array([7, -7, 100, -128], np.int8)
    b = np.array([2, 2, 100, -1], np.int8)
    np.testing.assert_array_equal(both(elementwise("arith.addi", ["i8", "i8"], "i8", (4,)), a, b), a + b)
    np.testing.assert_array_equal(
        both(elementwise("arith.divsi", ["i8", "i8"], "i8", (4,)), a, b), np.array([3, -3, 1, -128], np.int8)
    )
    p, q = np.array([True, True, False, False]), np.array([True, False, True, False])
    np.testing.assert_array_equal(both(elementwise("arith.andi", ["i1", "i1"], "i1", (4,)), p, q), p & q)
    np.testing.assert_array_equal(both(elementwise("arith.xori", ["i1", "i1"], "i1", (4,)), p, q), p ^ q)


# ------------------------------------------------------------------------ tensor.concat / pad


CONCAT = """
func.func @f(%a: tensor<2x3xf32>, %b: tensor<2x4xf32>, %c: tensor<2x1xf32>) -> tensor<2x8xf32> {
  %r = tensor.concat dim(1) %a, %b, %c : (tensor<2x3xf32>, tensor<2x4xf32>, tensor<2x1xf32>) -> tensor<2x8xf32>
  return %r : tensor<2x8xf32>
}"""

PAD = """
func.func @f(%x: tensor<2x3xf32>) -> (tensor<3x6xf32>, tensor<2x5xf32>) {
  %cst = arith.constant -1.5 : f32
  %p = tensor.pad %x low[1, 1] high[0, 2] {
  ^bb0(%i: index, %j: index):
    tensor.yield %cst : f32
  } : tensor<2x3xf32> to tensor<3x6xf32>
  %q = tensor.pad %x nofold low[0, 0] high[0, 2] {
  ^bb0(%i: index, %j: index):
    %s = arith.addi %i, %j : index
    %v = arith.index_cast %s : index to i32
    %f = arith.sitofp %v : i32 to f32
    tensor.yield %f : f32
  } : tensor<2x3xf32> to tensor<2x5xf32>
  return %p, %q : tensor<3x6xf32>, tensor<2x5xf32>
}"""

SOFTMAX = """
func.func @f(%x: tensor<2x3x8xf32>) -> (tensor<2x3x8xf32>, tensor<2x3x8xf32>) {
  %e = tensor.empty() : tensor<2x3x8xf32>
  %s = linalg.softmax dimension(2) ins(%x : tensor<2x3x8xf32>) outs(%e : tensor<2x3x8xf32>) -> tensor<2x3x8xf32>
  %t = linalg.softmax dimension(0) ins(%x : tensor<2x3x8xf32>) outs(%e : tensor<2x3x8xf32>) -> tensor<2x3x8xf32>
  return %s, %t : tensor<2x3x8xf32>, tensor<2x3x8xf32>
}"""

ASSERT = """
func.func @f(%ids: tensor<4xi64>, %table: tensor<5x3xf32>) -> tensor<4x3xf32> {
  %c5 = arith.constant 5 : index
  %c0 = arith.constant 0 : i64
  %e = tensor.empty() : tensor<4x3xf32>
  %r = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0)>, affine_map<(d0, d1) -> (d0, d1)>],
                       iterator_types = ["parallel", "parallel"]}
      ins(%ids : tensor<4xi64>) outs(%e : tensor<4x3xf32>) {
  ^bb0(%in: i64, %out: f32):
    %i = arith.index_cast %in : i64 to index
    %j = linalg.index 1 : index
    %lt = arith.cmpi slt, %i, %c5 : index
    cf.assert %lt, "index must be smaller than dim size"
    %ge = arith.cmpi sge, %in, %c0 : i64
    cf.assert %ge, "index must be larger or equal to 0"
    %v = tensor.extract %table[%i, %j] : tensor<5x3xf32>
    linalg.yield %v : f32
  } -> tensor<4x3xf32>
  return %r : tensor<4x3xf32>
}"""


def test_concat() -> None:
    a, b, c = grid(2, 3), grid(2, 4), grid(2, 1)
    (r,) = run(CONCAT, a, b, c)
    np.testing.assert_array_equal(r, np.concatenate([a, b, c], axis=1))


def test_pad_constant_and_index_dependent() -> None:
    x = grid(2, 3)
    p, q = run(PAD, x)
    want = np.full((3, 6), -1.5, np.float32)
    want[1:3, 1:4] = x
    np.testing.assert_array_equal(p, want)
    want_q = np.add.outer(np.arange(2), np.arange(5)).astype(np.float32)
    want_q[:, :3] = x
    np.testing.assert_array_equal(q, want_q)


def test_softmax() -> None:
    x = grid(2, 3, 8) * 4
    s, t = run(SOFTMAX, x)
    for axis, got in ((2, s), (0, t)):
        e = np.exp(x.astype(np.float64) - x.max(axis=axis, keepdims=True))
        np.testing.assert_allclose(got, e / e.sum(axis=axis, keepdims=True), rtol=1e-6)


def test_softmax_f16_and_bf16() -> None:
    for et, dt in (("f16", np.float16), ("bf16", np.float32)):
        text = SOFTMAX.replace("xf32", f"x{et}")
        x = grid(2, 3, 8).astype(dt)
        s, _ = run(text, x)
        assert s.dtype == dt
        e = np.exp(x.astype(np.float64) - x.max(axis=2, keepdims=True))
        eps = 2.0**-10 if et == "f16" else 2.0**-7
        np.testing.assert_allclose(s.astype(np.float64), e / e.sum(axis=2, keepdims=True), rtol=8 * eps)
        if et == "bf16":
            np.testing.assert_array_equal(s, bf16(s))  # every value is a bf16 value


def test_embedding_lookup_with_asserts() -> None:
    ids = np.array([4, 0, 2, 4], np.int64)
    table = grid(5, 3)
    (r,) = run(ASSERT, ids, table)
    np.testing.assert_array_equal(r, table[ids])
    with pytest.raises(
        EvaluationError, match=r"snippet.mlir:\d+:\d+: error: 'cf.assert': assertion failed: index must"
    ):
        run(ASSERT, np.array([5, 0, 0, 0], np.int64), table)


# --------------------------------------------------------------------------- layout ops


def test_transpose_broadcast_copy() -> None:
    text = """
func.func @f(%x: tensor<2x3x4xf32>, %v: tensor<3xf32>) -> (tensor<4x2x3xf32>, tensor<2x3x5xf32>, tensor<2x3x4xf32>) {
  %e1 = tensor.empty() : tensor<4x2x3xf32>
  %t = linalg.transpose ins(%x : tensor<2x3x4xf32>) outs(%e1 : tensor<4x2x3xf32>) permutation = [2, 0, 1]
  %e2 = tensor.empty() : tensor<2x3x5xf32>
  %b = linalg.broadcast ins(%v : tensor<3xf32>) outs(%e2 : tensor<2x3x5xf32>) dimensions = [0, 2]
  %e3 = tensor.empty() : tensor<2x3x4xf32>
  %c = linalg.copy ins(%x : tensor<2x3x4xf32>) outs(%e3 : tensor<2x3x4xf32>) -> tensor<2x3x4xf32>
  return %t, %b, %c : tensor<4x2x3xf32>, tensor<2x3x5xf32>, tensor<2x3x4xf32>
}"""
    x, v = grid(2, 3, 4), grid(3)
    t, b, c = run(text, x, v)
    np.testing.assert_array_equal(t, np.transpose(x, (2, 0, 1)))
    np.testing.assert_array_equal(b, np.broadcast_to(v[None, :, None], (2, 3, 5)))
    np.testing.assert_array_equal(c, x)


# ----------------------------------------------------------------------------- attention, gather


def _attention_text(mask: str | None) -> str:
    maps = [
        "affine_map<(b, m, n, k1, k2) -> (b, m, k1)>",
        "affine_map<(b, m, n, k1, k2) -> (b, k2, k1)>",
        "affine_map<(b, m, n, k1, k2) -> (b, k2, n)>",
        "affine_map<(b, m, n, k1, k2) -> ()>",
    ]
    ins = "%q, %k, %v, %scale"
    types = "tensor<2x4x8xf32>, tensor<2x6x8xf32>, tensor<2x6x5xf32>, f32"
    arg = ""
    if mask is not None:
        maps.append("affine_map<(b, m, n, k1, k2) -> (b, m, k2)>")
        ins += ", %mask"
        types += f", tensor<2x4x6x{mask}>"
        arg = f", %mask: tensor<2x4x6x{mask}>"
    maps.append("affine_map<(b, m, n, k1, k2) -> (b, m, n)>")
    return f"""
func.func @f(%q: tensor<2x4x8xf32>, %k: tensor<2x6x8xf32>, %v: tensor<2x6x5xf32>{arg}) -> tensor<2x4x5xf32> {{
  %scale = arith.constant 0.35 : f32
  %e = tensor.empty() : tensor<2x4x5xf32>
  %o = iree_linalg_ext.attention {{indexing_maps = [{", ".join(maps)}]}}
      ins({ins} : {types}) outs(%e : tensor<2x4x5xf32>) {{
  ^bb0(%s: f32):
    iree_linalg_ext.yield %s : f32
  }} -> tensor<2x4x5xf32>
  return %o : tensor<2x4x5xf32>
}}"""


def _softmax_ref(s: np.ndarray) -> np.ndarray:
    e = np.exp(s - s.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)


@pytest.mark.parametrize("mask", [None, "i1", "f32"])
def test_attention_with_and_without_mask(mask: str | None) -> None:
    q, k, v = grid(2, 4, 8), grid(2, 6, 8), grid(2, 6, 5)
    s = np.einsum("bmk,bnk->bmn", q.astype(np.float64), k) * np.float64(np.float32(0.35))
    inputs: list[np.ndarray] = [q, k, v]
    if mask == "i1":
        causal = np.tril(np.ones((4, 6), bool))
        m = np.broadcast_to(causal, (2, 4, 6)).copy()
        inputs.append(m)
        s = np.where(m, s, -np.inf)
    elif mask == "f32":
        m = np.where(np.tril(np.ones((4, 6), bool)), 0.0, -np.inf).astype(np.float32)
        m = np.broadcast_to(m, (2, 4, 6)).copy()
        inputs.append(m)
        s = s + m
    (o,) = run(_attention_text(mask), *inputs)
    np.testing.assert_allclose(o, np.einsum("bmn,bnd->bmd", _softmax_ref(s), v), rtol=1e-5, atol=1e-6)


GATHER = """
func.func @f(%src: tensor<6x4xf32>, %idx: tensor<3x1xi32>) -> tensor<3x4xf32> {
  %e = tensor.empty() : tensor<3x4xf32>
  %g = iree_linalg_ext.gather dimension_map = [0] ins(%src, %idx : tensor<6x4xf32>, tensor<3x1xi32>)
      outs(%e : tensor<3x4xf32>) -> tensor<3x4xf32>
  return %g : tensor<3x4xf32>
}"""


def test_gather_rows() -> None:
    src = grid(6, 4)
    idx = np.array([[5], [0], [3]], np.int32)
    (g,) = run(GATHER, src, idx)
    np.testing.assert_array_equal(g, src[idx[:, 0]])


# ----------------------------------------------------------------------- f16 weights, bf16 values


def test_f16_weights_widened_by_extf_then_matmul() -> None:
    text = """
func.func @f(%x: tensor<3x4xf32>) -> tensor<3x2xf32> {
  %w = arith.constant dense<[[0.5, -1.0], [0.25, 2.0], [1.5, 0.125], [-0.75, 1.0]]> : tensor<4x2xf16>
  %e = tensor.empty() : tensor<4x2xf32>
  %wf = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, d1)>],
                        iterator_types = ["parallel", "parallel"]}
      ins(%w : tensor<4x2xf16>) outs(%e : tensor<4x2xf32>) {
  ^bb0(%a: f16, %o: f32):
    %y = arith.extf %a : f16 to f32
    linalg.yield %y : f32
  } -> tensor<4x2xf32>
  %c0 = arith.constant 0.0 : f32
  %e2 = tensor.empty() : tensor<3x2xf32>
  %z = linalg.fill ins(%c0 : f32) outs(%e2 : tensor<3x2xf32>) -> tensor<3x2xf32>
  %m = linalg.matmul ins(%x, %wf : tensor<3x4xf32>, tensor<4x2xf32>) outs(%z : tensor<3x2xf32>) -> tensor<3x2xf32>
  return %m : tensor<3x2xf32>
}"""
    w = np.array([[0.5, -1.0], [0.25, 2.0], [1.5, 0.125], [-0.75, 1.0]], np.float32)
    x = grid(3, 4)
    (m,) = run(text, x)
    np.testing.assert_allclose(m, x @ w, rtol=1e-6)


def test_bf16_elementwise_rounds_every_op() -> None:
    a = grid(5).astype(np.float32) / 3
    b = np.array([3.0, 7.0, 11.0, 13.0, 17.0], np.float32)
    got = both(elementwise("arith.divf", ["bf16", "bf16"], "bf16"), bf16(a), bf16(b))
    np.testing.assert_array_equal(got, bf16(bf16(a) / bf16(b)))


# ------------------------------------------------------------------------- round trip, iree-opt


SYNTAX = {"concat": CONCAT, "pad": PAD, "softmax": SOFTMAX, "assert": ASSERT}


@pytest.mark.parametrize("name", sorted(SYNTAX))
def test_new_syntax_round_trips(name: str) -> None:
    module = parse_mlir(SYNTAX[name], "snippet.mlir")
    assert not module.warnings  # modelled, not opaque
    assert not [op for op in module.walk() if op.opaque_text is not None]
    printed = print_mlir(module)
    again = parse_mlir(printed, "printed.mlir")
    assert ir_key(again) == ir_key(module)
    assert print_mlir(again) == printed


@needs_iree_opt
@pytest.mark.parametrize("name", sorted(SYNTAX))
def test_iree_opt_reads_the_printed_syntax(name: str) -> None:
    ok, err = iree_opt_parses(print_mlir(parse_mlir(SYNTAX[name], "snippet.mlir")))
    assert ok, err


@pytest.mark.parametrize(
    "bad",
    [
        CONCAT.replace("-> tensor<2x8xf32>\n", "-> tensor<2x9xf32>\n", 1),
        PAD.replace(
            "high[0, 2] {\n  ^bb0(%i: index, %j: index):\n    tensor.yield %cst",
            "high[0, 3] {\n  ^bb0(%i: index, %j: index):\n    tensor.yield %cst",
            1,
        ),
        SOFTMAX.replace("dimension(2)", "dimension(3)"),
        ASSERT.replace('cf.assert %lt, "index', 'cf.assert %i, "index'),
    ],
    ids=["concat-shape", "pad-shape", "softmax-dim", "assert-type"],
)
def test_new_syntax_is_verified(bad: str) -> None:
    from egg_dispatch.mlir.lexer import MLIRSyntaxError

    with pytest.raises(MLIRSyntaxError, match=r"snippet.mlir:\d+:\d+: error"):
        parse_mlir(bad, "snippet.mlir")


# ------------------------------------------------------------------------------- index ranges


def test_index_bounds_follow_casts_reshapes_and_generic_bodies() -> None:
    text = """
func.func @f(%ids: tensor<2x2xi64>, %g: tensor<3xi32>, %n: tensor<4xi64>, %s: index, %table: tensor<5x3xf32>)
    -> (tensor<4x3xf32>, tensor<3x3xf32>, f32, tensor<4xi64>) {
  %flat = tensor.collapse_shape %ids [[0, 1]] : tensor<2x2xi64> into tensor<4xi64>
  %e = tensor.empty() : tensor<4x3xf32>
  %r = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0)>, affine_map<(d0, d1) -> (d0, d1)>],
                       iterator_types = ["parallel", "parallel"]}
      ins(%flat : tensor<4xi64>) outs(%e : tensor<4x3xf32>) {
  ^bb0(%in: i64, %out: f32):
    %i = arith.index_cast %in : i64 to index
    %j = linalg.index 1 : index
    %v = tensor.extract %table[%i, %j] : tensor<5x3xf32>
    linalg.yield %v : f32
  } -> tensor<4x3xf32>
  %gi = tensor.expand_shape %g [[0, 1]] output_shape [3, 1] : tensor<3xi32> into tensor<3x1xi32>
  %t = tensor.extract_slice %table[0, 0] [4, 3] [1, 1] : tensor<5x3xf32> to tensor<4x3xf32>
  %eg = tensor.empty() : tensor<3x3xf32>
  %gg = iree_linalg_ext.gather dimension_map = [0] ins(%t, %gi : tensor<4x3xf32>, tensor<3x1xi32>)
      outs(%eg : tensor<3x3xf32>) -> tensor<3x3xf32>
  %c0 = arith.constant 0 : index
  %x = tensor.extract %table[%c0, %s] : tensor<5x3xf32>
  return %r, %gg, %x, %n : tensor<4x3xf32>, tensor<3x3xf32>, f32, tensor<4xi64>
}"""
    module = parse_mlir(text, "snippet.mlir")
    func = module.function()
    assert index_bounds(func) == {0: 5, 1: 4, 3: 3}  # %n is not an index: no bound
    for seed in range(5):
        ids, g, _, s, _ = function_inputs(func, seed)
        assert ids.min() >= 0 and ids.max() < 5 and g.min() >= 0 and g.max() < 4 and 0 <= int(s) < 3
        assert check_module(module, "x86_64-avx2", seed).passed  # defined on every seeded input


def test_index_bounds_of_dynamic_slice_offsets() -> None:
    """A one-row gather as global optimization folds it: extract the index, slice at it."""
    text = """
func.func @f(%table: tensor<5x3xf32>, %i: tensor<i32>, %j: index) -> (tensor<3xf32>, tensor<2x3xf32>) {
  %x = tensor.extract %i[] : tensor<i32>
  %k = arith.index_cast %x : i32 to index
  %row = tensor.extract_slice %table[%k, 0] [1, 3] [1, 1] : tensor<5x3xf32> to tensor<3xf32>
  %two = tensor.extract_slice %table[%j, 0] [2, 3] [1, 1] : tensor<5x3xf32> to tensor<2x3xf32>
  return %row, %two : tensor<3xf32>, tensor<2x3xf32>
}"""
    module = parse_mlir(text, "snippet.mlir")
    assert index_bounds(module.function()) == {1: 5, 2: 4}
    for seed in range(8):
        table, i, j = function_inputs(module.function(), seed)
        row, two = evaluate(module, [table, i, j])
        np.testing.assert_array_equal(row, table[int(i)])
        np.testing.assert_array_equal(two, table[int(j) : int(j) + 2])


# ------------------------------------------------------------------- forms global optimization leaves


def test_attention_with_folded_unit_dims() -> None:
    """No key dim (k2, one key: every weight 1) and no head dim (k1: scores are plain products)."""
    text = """
func.func @f(%q: tensor<2x4x8xf32>, %k: tensor<2x8xf32>, %v: tensor<2x3xf32>, %q1: tensor<2x4xf32>,
             %k1: tensor<2x5xf32>, %v1: tensor<2x5x3xf32>) -> (tensor<2x4x3xf32>, tensor<2x4x3xf32>) {
  %s = arith.constant 0.5 : f32
  %e = tensor.empty() : tensor<2x4x3xf32>
  %o = iree_linalg_ext.attention <indexing_maps = [affine_map<(d0, d1, d2, d3) -> (d0, d1, d3)>,
      affine_map<(d0, d1, d2, d3) -> (d0, d3)>, affine_map<(d0, d1, d2, d3) -> (d0, d2)>,
      affine_map<(d0, d1, d2, d3) -> ()>, affine_map<(d0, d1, d2, d3) -> (d0, d1, d2)>]>
      ins(%q, %k, %v, %s : tensor<2x4x8xf32>, tensor<2x8xf32>, tensor<2x3xf32>, f32) outs(%e : tensor<2x4x3xf32>) {
  ^bb0(%x: f32):
    iree_linalg_ext.yield %x : f32
  } -> tensor<2x4x3xf32>
  %o1 = iree_linalg_ext.attention <indexing_maps = [affine_map<(d0, d1, d2, d3) -> (d0, d1)>,
      affine_map<(d0, d1, d2, d3) -> (d0, d3)>, affine_map<(d0, d1, d2, d3) -> (d0, d3, d2)>,
      affine_map<(d0, d1, d2, d3) -> ()>, affine_map<(d0, d1, d2, d3) -> (d0, d1, d2)>]>
      ins(%q1, %k1, %v1, %s : tensor<2x4xf32>, tensor<2x5xf32>, tensor<2x5x3xf32>, f32) outs(%e : tensor<2x4x3xf32>) {
  ^bb0(%x: f32):
    iree_linalg_ext.yield %x : f32
  } -> tensor<2x4x3xf32>
  return %o, %o1 : tensor<2x4x3xf32>, tensor<2x4x3xf32>
}"""
    q, k, v, q1, k1, v1 = grid(2, 4, 8), grid(2, 8), grid(2, 3), grid(2, 4), grid(2, 5), grid(2, 5, 3)
    o, o1 = run(text, q, k, v, q1, k1, v1)
    np.testing.assert_allclose(o, np.broadcast_to(v[:, None, :], (2, 4, 3)), rtol=1e-6)
    s = q1[:, :, None].astype(np.float64) * k1[:, None, :] * 0.5  # [b, m, n]
    np.testing.assert_allclose(o1, np.einsum("bmn,bnd->bmd", _softmax_ref(s), v1), rtol=1e-5, atol=1e-6)


ABI = """
util.func public @main(%arg0: !hal.buffer_view, %arg1: !hal.buffer_view, %arg2: !hal.buffer_view)
    -> (!hal.buffer_view, !hal.buffer_view) attributes {iree.abi.stub, iree.reflection = {iree.abi.declaration =
    "sync func @main(%input0: tensor<3xf32>, %input1: tensor<2xi32>, %input2: tensor<4xf32>) \
-> (%output0: tensor<3xf32>, %output1: tensor<2xi32>)"}} {
  %0 = hal.tensor.import %arg1 "input1" : !hal.buffer_view -> tensor<2xi32>
  %1 = arith.addi %0, %0 : tensor<2xi32>
  %2 = hal.tensor.export %1 "output1" : tensor<2xi32> -> !hal.buffer_view
  util.return %arg0, %2 : !hal.buffer_view, !hal.buffer_view
}"""


def test_abi_arguments_returned_as_is_or_unused_take_their_declared_types() -> None:
    from egg_dispatch.evaluate import function_input_types

    module = parse_mlir(ABI, "snippet.mlir")
    types = function_input_types(module.function())
    assert [(t.shape, t.element.name) for t in types] == [((3,), "f32"), ((2,), "i32"), ((4,), "f32")]  # type: ignore[attr-defined]
    x, n, unused = grid(3), np.array([3, -4], np.int32), grid(4)
    a, b = run(ABI, x, n, unused)
    np.testing.assert_array_equal(a, x)
    np.testing.assert_array_equal(b, 2 * n)


def test_relative_error_treats_matching_nan_and_inf_as_equal() -> None:
    from egg_dispatch.evaluate.check import relative_error

    want = np.array([1.0, np.nan, np.inf, -2.0])
    assert relative_error(want.copy(), want) == 0.0
    assert relative_error(np.array([1.0, np.nan, np.inf, -2.5]), want) == pytest.approx(0.25)
    assert relative_error(np.array([1.0, 0.0, np.inf, -2.0]), want) == math.inf  # NaN in one only
    assert relative_error(np.zeros(3), want) == math.inf  # another shape


def test_the_one_relative_error_is_nan_and_inf_aware_for_check_tune_and_bench() -> None:
    """``evaluate.check.relative_error`` is the only one: ``measure.tune`` and ``measure.bench`` use it
    (their own versions gave 0 for a NaN in one result only, and bench's gave 0 for any error once the
    reference held an inf, which it scaled by). Values by hand."""
    from egg_dispatch.evaluate.check import relative_error
    from egg_dispatch.measure import bench, tune

    assert tune.relative_error is relative_error and bench.relative_error is relative_error
    assert not hasattr(tune, "_rel_error") and not hasattr(bench, "_rel_error")
    want = np.array([2.0, np.nan, np.inf, -np.inf, -4.0])
    # |2.5 - 2| over the largest finite |want| (4); the NaN and the infinities agree
    assert relative_error(np.array([2.5, np.nan, np.inf, -np.inf, -4.0]), want) == 0.125
    assert relative_error(np.array([2.0, np.nan, -np.inf, -np.inf, -4.0]), want) == math.inf  # inf of the other sign
    assert relative_error(np.array([2.0, 1.0, np.inf, -np.inf, -4.0]), want) == math.inf  # NaN in want only
    assert relative_error(np.array([2.0, np.nan, np.inf, 7.0, -4.0]), want) == math.inf  # -inf in want only
    assert relative_error(np.array([np.nan, 1.0]), np.array([1.0, 1.0])) == math.inf  # NaN in got only
    assert relative_error(np.array([np.inf, 1.0]), np.array([1.0, 1.0])) == math.inf  # inf in got only
    assert relative_error(np.float32([1.0, 3.0]), np.float32([1.0, 4.0])) == 0.25  # f32: in float64
    assert relative_error(np.zeros((0, 3)), np.zeros((0, 3))) == 0.0  # nothing to differ
    # an all-zero want: divided by float64's smallest normal, not by zero
    assert relative_error(np.array([0.0, 1e-300]), np.zeros(2)) == pytest.approx(1e-300 / 2.2250738585072014e-308)


def test_dispatch_region_count_uses_values_from_above() -> None:
    """IREE prints ``count() -> (index, index, index) { flow.return %c1, %c1, %c1 }`` with ``%c1``
    defined outside: a flow.dispatch.region's count region is not isolated (a workgroups' one is)."""
    text = """
func.func @f(%x: tensor<2x2xf32>) -> tensor<2x2xf32> {
  %c1 = arith.constant 1 : index
  %r = flow.dispatch.region -> (tensor<2x2xf32>) {
    %y = arith.addf %x, %x : tensor<2x2xf32>
    flow.return %y : tensor<2x2xf32>
  } count() -> (index, index, index) {
    flow.return %c1, %c1, %c1 : index, index, index
  }
  return %r : tensor<2x2xf32>
}"""
    module = parse_mlir(text, "snippet.mlir")
    assert ir_key(parse_mlir(print_mlir(module))) == ir_key(module)
    x = grid(2, 2)
    (r,) = evaluate(module, [x])
    np.testing.assert_array_equal(r, x + x)
