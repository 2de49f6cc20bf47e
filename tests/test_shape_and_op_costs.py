"""Two corrections calibration makes to the kernel fits (``target/kernels.py``'s module doc): what a
contraction's formula misses at the measured shapes, carried to the shapes near them
(``Fit.shape_factor``), and what a generic's body op costs against an add (``KernelCosts.op_weights``).

Every expected number here is the synthetic machine's own (the samples are built from known
parameters), never the code's output."""

from __future__ import annotations

import dataclasses
import json
import math
from pathlib import Path

import pytest

from egg_dispatch.cost import TensorInfo
from egg_dispatch.cost.op_time import body_op_count, op_seconds
from egg_dispatch.measure.calibrate import profile_dict
from egg_dispatch.measure.kernel_fit import Calibration, fit_kernels
from egg_dispatch.measure.micro import MATH_OPS, generics, math_op_helpers
from egg_dispatch.mlir.parser import parse_mlir
from egg_dispatch.target.profile import Target, TargetError, load_target, write_profile
from tests.test_measured_costs import _synthetic_calibration, needs_iree

PLAIN = "contract:linalg.matmul:(d0,d2);(d1,d2);(d0,d1)"  # x . w^T, the [N, K] weight of a linear layer

# a grid of plain matmuls; the machine runs those with N >= 512 and K >= 384 at M = 64 (a "fast corner") 20%
# faster than the one formula, seconds = 0.1 µs + flops / 100 GFLOP/s, that fits the rest
GRID = [(m, n, k) for m in (8, 64, 512) for n in (64, 256, 512, 1024) for k in (96, 384, 768)]


def _fast_corner(m: int, n: int, k: int) -> bool:
    return m == 64 and n >= 512 and k >= 384


def _plain_truth(m: int, n: int, k: int) -> float:
    t = 0.1e-6 + 2 * m * n * k / 100e9
    return t * 0.8 if _fast_corner(m, n, k) else t


def _operands(m: int, n: int, k: int) -> tuple[list[TensorInfo], TensorInfo]:
    acc = TensorInfo((m, n), "f32")
    return [TensorInfo((m, k), "f32"), TensorInfo((n, k), "f32"), acc], acc


def test_a_local_miss_of_the_contraction_formula_is_carried_to_shapes_near_it_and_no_farther() -> None:
    target = load_target("x86_64-avx512")
    cal = _synthetic_calibration(target, 0.05, 1.5, 150.0)
    cal.samples["matmul"] = [(s, "f32,f32,f32", _plain_truth(*s)) for s in GRID]
    kernels, residuals = fit_kernels(cal, target)
    fit = kernels.matmul["f32,f32,f32"]
    assert fit.shape_width > 0 and len(fit.shape_residuals) == len(GRID)
    assert residuals["matmul.f32,f32,f32 by shape"] < 0.95 * residuals["matmul.f32,f32,f32"]
    t = dataclasses.replace(target, kernels=kernels)
    formula = dataclasses.replace(target, kernels=dataclasses.replace(kernels, matmul={
        "f32,f32,f32": dataclasses.replace(fit, shape_residuals=(), shape_width=0.0)}))  # fmt: skip
    # 64 x 768 x 768 was not measured; it lies between measured shapes of the fast corner
    ops, acc = _operands(64, 768, 768)
    truth = _plain_truth(64, 768, 768)
    by_formula = op_seconds(PLAIN, ops, acc, formula)
    corrected = op_seconds(PLAIN, ops, acc, t)
    assert abs(math.log(corrected / truth)) < 0.5 * abs(math.log(by_formula / truth))
    # a shape far from the corner keeps the formula's time (within 2%)
    ops, acc = _operands(8, 64, 96)
    assert op_seconds(PLAIN, ops, acc, t) == pytest.approx(op_seconds(PLAIN, ops, acc, formula), rel=0.02)


def test_no_shape_residuals_where_the_formula_already_fits() -> None:
    target = load_target("x86_64-avx512")
    cal = _synthetic_calibration(target, 0.05, 1.5, 150.0)
    cal.samples["matmul"] = [(s, "f32,f32,f32", 0.1e-6 + 2 * math.prod(s) / 100e9) for s in GRID]
    kernels, _ = fit_kernels(cal, target)
    fit = kernels.matmul["f32,f32,f32"]
    assert fit.shape_width == 0 and not fit.shape_residuals
    assert fit.shape_factor(64, 768, 768) == 1.0


# an elementwise machine: seconds = 0.05 µs + element-ops / 200 G + bytes / 100 GB/s, where an erf costs
# 150 adds and an exp 60
RATE, GBPS, WEIGHTS = 200e9, 100e9, {"math.erf": 150.0, "math.exp": 60.0}
GENERICS = ((1, 512), (16, 256), (4, 1024), (64, 1024), (256, 1024))


def _generic_truth(r: int, n: int, ops: float) -> float:
    return 0.05e-6 + r * n * ops / RATE + 3 * r * n * 4 / GBPS


def _with_generics(target: Target) -> Calibration:
    cal = _synthetic_calibration(target, 0.05, 1.5, 150.0)
    for r, n in GENERICS:
        for body in (1, 4):
            cal.samples.setdefault("elementwise", []).append(((r, n, body), "f32,f32,f32", _generic_truth(r, n, body)))
        for op, w in WEIGHTS.items():
            # the case's body: the add, the op, and the helpers its input needs (none for erf and exp)
            body_ops = 1 + w + math_op_helpers(op)
            cal.samples.setdefault("elementwise_op", []).append(((r, n, 2), op, _generic_truth(r, n, body_ops)))
    return cal


def test_calibration_recovers_what_a_body_op_costs_against_an_add() -> None:
    target = load_target("x86_64-avx512")
    kernels, _ = fit_kernels(_with_generics(target), target)
    assert kernels.elementwise.rate_g == pytest.approx(RATE / 1e9, rel=0.02)
    assert kernels.op_weights == pytest.approx(WEIGHTS, rel=0.03)


def test_body_op_weights_survive_an_elementwise_fit_without_a_work_rate() -> None:
    """A calibration with one generic shape cannot tell work from bytes, and its fit may put no time on
    element-ops (rate 0: CI saw ``op_weights`` empty then). The weights are still given, measured
    against the plain add's own time per element (its launch and bytes included, so a weight reads lower
    than the synthetic machine's, never below 1): the expectation is worked from ``_generic_truth``."""
    from egg_dispatch.measure.kernel_fit import op_weights
    from egg_dispatch.target.kernels import Fit

    cal = _with_generics(load_target("x86_64-avx512"))
    weights = op_weights(cal, Fit(fixed_us=1.0, rate_g=0.0, gbps=10.0))
    r, n = 16, 256
    add_ops = _generic_truth(r, n, 1) * RATE / (r * n)  # the add's time per element, in element-ops
    assert set(weights) == set(WEIGHTS)
    for op, w in WEIGHTS.items():
        assert weights[op] == pytest.approx(
            max(1.0, (w + math_op_helpers(op)) / add_ops - math_op_helpers(op)), rel=0.3
        )
        assert 1.0 <= weights[op] <= w


def test_a_generic_is_priced_by_the_weights_of_its_body_ops(tmp_path: Path) -> None:
    """A GELU-like body (divf, erf, add, two muls) counts 4 + erf's weight; without weights every op
    counts 1, as before calibration measured them."""
    target = load_target("x86_64-avx512")
    cal = _with_generics(target)
    kernels, _ = fit_kernels(cal, target)
    text = """
func.func @gelu(%x: tensor<32x128xf32>) -> tensor<32x128xf32> {
  %c = arith.constant 1.41421354 : f32
  %h = arith.constant 0.5 : f32
  %one = arith.constant 1.0 : f32
  %e = tensor.empty() : tensor<32x128xf32>
  %g = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, d1)>],
                       iterator_types = ["parallel", "parallel"]}
       ins(%x : tensor<32x128xf32>) outs(%e : tensor<32x128xf32>) {
  ^bb0(%in: f32, %out: f32):
    %0 = arith.divf %in, %c : f32
    %1 = math.erf %0 : f32
    %2 = arith.addf %1, %one : f32
    %3 = arith.mulf %in, %2 : f32
    %4 = arith.mulf %3, %h : f32
    linalg.yield %4 : f32
  } -> tensor<32x128xf32>
  return %g : tensor<32x128xf32>
}"""
    generic = next(o for o in parse_mlir(text, "<gelu>").walk() if o.name == "linalg.generic")
    assert body_op_count(generic) == 5
    assert body_op_count(generic, kernels.op_weights) == pytest.approx(4 + WEIGHTS["math.erf"], rel=0.03)
    t = dataclasses.replace(target, kernels=kernels)
    x = TensorInfo((32, 128), "f32")
    priced = op_seconds("generic", [x], x, t, body_op_count(generic, kernels.op_weights))
    assert priced == pytest.approx(0.05e-6 + 4096 * (4 + 150) / RATE + 2 * 4096 * 4 / GBPS, rel=0.02)
    # the weights and the shape residuals survive the profile file
    cal.samples["matmul"] = [(s, "f32,f32,f32", _plain_truth(*s)) for s in GRID]
    cal.kernels, cal.residuals = fit_kernels(cal, target)
    path = tmp_path / "p.json"
    write_profile(profile_dict(target, cal, quick=True), path)
    back = load_target(str(path)).kernels
    assert back is not None and back.op_weights == cal.kernels.op_weights
    assert back.matmul == cal.kernels.matmul and back.matmul["f32,f32,f32"].shape_width > 0


@pytest.mark.parametrize(
    ("where", "value", "field"),
    [
        (("op_weights",), {"math.erf": -3}, r"kernels\.op_weights\.math\.erf"),
        (("op_weights",), [1, 2], r"kernels\.op_weights"),
        (("matmul", "f32,f32,f32", "shape_residuals"), [[64, 0, 768, 0.1]], r"matmul\.f32,f32,f32\.shape_residuals"),
        (("matmul", "f32,f32,f32", "shape_width"), "wide", r"matmul\.f32,f32,f32\.shape_width"),
    ],
)
def test_a_malformed_weight_or_shape_residual_names_the_field(
    tmp_path: Path, where: tuple[str, ...], value: object, field: str
) -> None:
    target = load_target("x86_64-avx512")
    cal = _with_generics(target)
    cal.samples["matmul"] = [(s, "f32,f32,f32", _plain_truth(*s)) for s in GRID]
    cal.kernels, cal.residuals = fit_kernels(cal, target)
    data = profile_dict(target, cal, quick=True)
    node = data["kernels"]
    for key in where[:-1]:
        node = node[key]
    node[where[-1]] = value
    path = tmp_path / "bad.json"
    path.write_text(json.dumps(data))
    with pytest.raises(TargetError, match=field):
        load_target(str(path))


@pytest.mark.slow
@needs_iree
def test_every_measured_body_op_compiles_in_a_calibration_generic() -> None:
    """The ``elementwise_op`` micro-programs are valid input to IREE for every op calibrate measures."""
    from egg_dispatch.emit.iree.module import emit_iree
    from egg_dispatch.iree.tools import compile_module

    target = load_target("x86_64-avx512")
    prog = generics("ops", "elementwise_op", [(4, 128), (16, 64)], math_ops=MATH_OPS)
    assert [c.types for c in prog.cases] == [*MATH_OPS, *MATH_OPS]
    assert [c.dispatch for c in prog.cases] == list(range(2 * len(MATH_OPS)))
    text = emit_iree(parse_mlir(prog.text, "<ops>"), target, materialize=False)
    assert compile_module(text, data_tiling=False, target_cpu="generic", compile_from="dispatch-creation")
