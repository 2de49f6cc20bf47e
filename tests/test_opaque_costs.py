"""Softmax and attention dispatches priced by what calibrate measures (``KernelCosts.softmax``,
``attention``), not by a flops formula.

The model cannot see into ``linalg.softmax`` or ``iree_linalg_ext.attention``; on the Xeon the formula
missed them 4-15x (the BERT block's [128, 16] softmax ran 3.3 µs, 0.2 predicted). The calibration
programs must compute what they say (checked by the NumPy evaluator against NumPy's own softmax and
attention), calibration must recover known parameters from synthetic measurements, and the model must
price each op by its fit where measured and as before where not. No timing: every number is made up.
"""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from egg_dispatch.cost import TensorInfo
from egg_dispatch.cost.op_time import attention_kind, op_seconds
from egg_dispatch.evaluate import evaluate
from egg_dispatch.measure.kernel_fit import fit_kernels
from egg_dispatch.measure.micro import opaque
from egg_dispatch.mlir.parser import parse_mlir
from egg_dispatch.pipeline import explore
from egg_dispatch.target.kernels import Fit, attention_flops
from egg_dispatch.target.profile import load_target
from tests.test_measured_costs import _synthetic_calibration

SOFTMAX = ((128, 16), (512, 16), (64, 64), (256, 64))
ATTENTION = ((4, 16, 8, 16, 8), (8, 16, 8, 24, 4), (2, 32, 16, 32, 16), (8, 64, 32, 64, 32))


def _softmax(x: np.ndarray) -> np.ndarray:
    e = np.exp(x - x.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)


def test_the_calibration_programs_compute_softmax_and_attention() -> None:
    prog = opaque("s", "softmax", SOFTMAX)
    got = evaluate(parse_mlir(prog.text, "<softmax>"), prog.inputs)
    for x, y in zip(prog.inputs, got, strict=True):
        np.testing.assert_allclose(y, _softmax(x.astype(np.float64)), rtol=1e-5, atol=1e-7)
    prog = opaque("a", "attention", ATTENTION)
    got = evaluate(parse_mlir(prog.text, "<attention>"), prog.inputs)
    for i, (b, m, k1, k2, n) in enumerate(ATTENTION):
        q, k, v = (a.astype(np.float64) for a in prog.inputs[3 * i : 3 * i + 3])
        assert q.shape == (b, m, k1) and k.shape == (b, k2, k1) and v.shape == (b, k2, n)
        want = _softmax(q @ k.transpose(0, 2, 1) / np.sqrt(k1)) @ v
        np.testing.assert_allclose(got[i], want, rtol=1e-4, atol=1e-6)
    assert [c.sizes for c in prog.cases] == list(ATTENTION) and [c.dispatch for c in prog.cases] == [0, 1, 2, 3]


def _with_opaque_samples():
    """0.3 µs + 1.5 ns per element for a softmax; 0.4 µs + flops at 20 GFLOP/s for an attention."""
    target = load_target("x86_64-avx512")
    cal = _synthetic_calibration(target, 0.05, 1.5, 150.0)
    cal.samples["softmax"] = [((r, c), "f32,f32,f32", 0.3e-6 + r * c * 1.5e-9) for r, c in SOFTMAX]
    cal.samples["attention"] = [
        (s, "f32,f32,f32", 0.4e-6 + attention_flops(s[0] * s[1], s[2], s[3], s[4]) / 20e9) for s in ATTENTION
    ]
    return target, cal


def test_calibration_fits_softmax_on_elements_and_attention_on_flops() -> None:
    target, cal = _with_opaque_samples()
    kernels, residuals = fit_kernels(cal, target)
    assert kernels.softmax.fixed_us == pytest.approx(0.3, rel=1e-3)
    assert kernels.softmax.rate_g == pytest.approx(1 / 1.5, rel=1e-3)  # giga elements per second
    assert kernels.attention.fixed_us == pytest.approx(0.4, rel=1e-3)
    assert kernels.attention.rate_g == pytest.approx(20.0, rel=1e-3)
    assert residuals["softmax"] < 1e-6 and residuals["attention"] < 1e-6
    # fewer than three samples: nothing fitted (the model keeps its formula)
    cal.samples["attention"] = cal.samples["attention"][:2]
    assert not fit_kernels(cal, target)[0].attention.measured


def test_attention_flops_counts_both_products() -> None:
    # Q·Kᵀ: rows x K2 x K1 multiply-adds; P·V: rows x K2 x N; two flops each
    assert attention_flops(64, 8, 16, 4) == 2 * 64 * 16 * 8 + 2 * 64 * 16 * 4


def test_the_model_prices_an_attention_by_its_fit_where_measured() -> None:
    target, cal = _with_opaque_samples()
    kernels, _ = fit_kernels(cal, target)
    t = dataclasses.replace(target, kernels=kernels)
    q, k, v = TensorInfo((8, 16, 8), "f32"), TensorInfo((8, 24, 8), "f32"), TensorInfo((8, 24, 4), "f32")
    out = TensorInfo((8, 16, 4), "f32")
    flops = attention_flops(8 * 16, 8, 24, 4)
    assert op_seconds("attention", [q, k, v], out, t) == pytest.approx(0.4e-6 + flops / 20e9, rel=1e-3)
    # unmeasured: twice its flops at the plain-matmul peak, as before calibrate measured attention
    unmeasured = dataclasses.replace(t, kernels=dataclasses.replace(kernels, attention=Fit()))
    bw = unmeasured.memory_bandwidth_gbps * 1e9
    moved = sum(x.stored_bytes for x in (q, k, v, out))
    peak = unmeasured.peak_gflops("f32,f32,f32", data_tiled=False) * 1e9
    assert op_seconds("attention", [q, k, v], out, unmeasured) == pytest.approx(2 * flops / peak + moved / bw)


SOFTMAX_PROGRAM = """
func.func @probs(%x: tensor<128x16xf32>) -> tensor<128x16xf32> {
  %e = tensor.empty() : tensor<128x16xf32>
  %s = linalg.softmax dimension(1) ins(%x : tensor<128x16xf32>) outs(%e : tensor<128x16xf32>) -> tensor<128x16xf32>
  return %s : tensor<128x16xf32>
}
"""


def _softmax_dispatch_seconds(target) -> float:
    ex = explore(SOFTMAX_PROGRAM, target)
    (d,) = ex.best.plan.dispatches
    return d.flops_seconds


@pytest.mark.slow
def test_a_softmax_dispatch_is_priced_by_the_softmax_fit_where_measured() -> None:
    target, cal = _with_opaque_samples()
    kernels, _ = fit_kernels(cal, target)
    measured = dataclasses.replace(target, kernels=kernels)
    assert _softmax_dispatch_seconds(measured) == pytest.approx(0.3e-6 + 128 * 16 * 1.5e-9, rel=1e-3)
    # without a softmax fit, the elementwise generic's (as before softmax was measured)
    plain = dataclasses.replace(target, kernels=dataclasses.replace(kernels, softmax=Fit()))
    x = TensorInfo((128, 16), "f32")
    assert _softmax_dispatch_seconds(plain) == pytest.approx(op_seconds("generic", [x], x, plain), rel=1e-6)


def test_an_attention_the_formula_misses_twice_over_keeps_its_points() -> None:
    """Measured here, 64-wide heads ran at a tenth of the smaller heads' rate: a formula through all of
    them fits most points (median error small) and misses those 10x. Any point missed by more than 2x
    keeps the measured points as the table the model interpolates."""
    target, cal = _with_opaque_samples()
    big = ((12, 64, 64, 64, 64), (8, 128, 64, 128, 64))
    cal.samples["attention"] += [(s, "f32,f32,f32", attention_flops(s[0] * s[1], s[2], s[3], s[4]) / 2e9) for s in big]
    fit = fit_kernels(cal, target)[0].attention
    assert len(fit.points) == len(ATTENTION) + len(big)
    flops = attention_flops(12 * 64, 64, 64, 64)
    assert fit.seconds(flops) == pytest.approx(flops / 2e9, rel=1e-9)  # at a point: the point
    # and without the outliers, the formula alone
    cal.samples["attention"] = cal.samples["attention"][: len(ATTENTION)]
    assert not fit_kernels(cal, target)[0].attention.points


HEADS_AFTER_TOKENS = "attention:(d0,d3,d1,d4);(d0,d5,d1,d4);(d0,d5,d1,d2);();(d0,d1,d3,d5);(d0,d1,d3,d2)"
"""An exported block's attention on [B, S, H, D] Q, K, V (d0 B, d1 H, d2 N, d3 M, d4 K1, d5 K2),
a mask, and a [B, H, S, D] result: the maps, not the layout, say which dim is the keys'."""
COLLAPSED = "attention:(d0,d1,d3);(d0,d4,d3);(d0,d4,d2);();(d0,d1,d4);(d0,d1,d2)"


def test_attention_flops_follow_the_indexing_maps() -> None:
    target, cal = _with_opaque_samples()
    t = dataclasses.replace(target, kernels=fit_kernels(cal, target)[0])
    b, h, m, k1, k2, n = 2, 4, 16, 8, 24, 8
    scale = TensorInfo((), "f32")
    permuted = [
        TensorInfo((b, m, h, k1), "f32"),
        TensorInfo((b, k2, h, k1), "f32"),
        TensorInfo((b, k2, h, n), "f32"),
        scale,
        TensorInfo((b, h, m, k2), "f32"),
    ]
    collapsed = [
        TensorInfo((b * h, m, k1), "f32"),
        TensorInfo((b * h, k2, k1), "f32"),
        TensorInfo((b * h, k2, n), "f32"),
        scale,
        TensorInfo((b * h, m, k2), "f32"),
    ]
    flops = attention_flops(b * h * m, k1, k2, n)
    want = 0.4e-6 + flops / 20e9
    out4, out3 = TensorInfo((b, h, m, n), "f32"), TensorInfo((b * h, m, n), "f32")
    assert op_seconds(HEADS_AFTER_TOKENS, permuted, out4, t) == pytest.approx(want, rel=1e-3)
    assert op_seconds(COLLAPSED, collapsed, out3, t) == pytest.approx(want, rel=1e-3)
    # by the layout alone the heads would have been read as the keys (k2 = 4): a third of the flops
    by_layout = 0.4e-6 + attention_flops(b * m * h, k1, h, n) / 20e9
    assert op_seconds("attention", permuted, out4, t) == pytest.approx(by_layout, rel=1e-3)


def test_an_attention_op_gives_its_maps_to_the_kind() -> None:
    text = """
func.func @att(%q: tensor<8x16x8xf32>, %k: tensor<8x24x8xf32>, %v: tensor<8x24x4xf32>, %m: tensor<8x16x24xf32>)
    -> tensor<8x16x4xf32> {
  %s = arith.constant 0.35 : f32
  %e = tensor.empty() : tensor<8x16x4xf32>
  %a = iree_linalg_ext.attention <indexing_maps = [affine_map<(d0, d1, d2, d3, d4) -> (d0, d1, d3)>,
      affine_map<(d0, d1, d2, d3, d4) -> (d0, d4, d3)>, affine_map<(d0, d1, d2, d3, d4) -> (d0, d4, d2)>,
      affine_map<(d0, d1, d2, d3, d4) -> ()>, affine_map<(d0, d1, d2, d3, d4) -> (d0, d1, d4)>,
      affine_map<(d0, d1, d2, d3, d4) -> (d0, d1, d2)>]>
      ins(%q, %k, %v, %s, %m : tensor<8x16x8xf32>, tensor<8x24x8xf32>, tensor<8x24x4xf32>, f32, tensor<8x16x24xf32>)
      outs(%e : tensor<8x16x4xf32>) {
  ^bb0(%w: f32):
    iree_linalg_ext.yield %w : f32
  } -> tensor<8x16x4xf32>
  return %a : tensor<8x16x4xf32>
}
"""
    module = parse_mlir(text, "<att>")
    (op,) = [o for o in module.walk() if o.name == "iree_linalg_ext.attention"]
    assert attention_kind(op) == COLLAPSED
