"""A pack fused into its contraction's dispatch, priced per operand role by a table over the
contraction's shape (``KernelCosts.fused_pack``).

On the Xeon one formula on elements did not fit both roles and all shapes: an LHS packed inside its
dispatch cost 0-0.4 ns per element at M <= 16 and N <= 64 and up to 0.9 ns with a wider N or from
M = 32 on, an RHS 0.2-0.4 ns at M <= 16 and 0.4-0.8 beyond. Synthetic measurements of a machine with
two such regimes: calibration must record them per role and shape, the model must price a fused pack
by its role's table at the contraction's M, N, K, and the choice between a fused and a standalone pack
must follow the table. No timing: every number is made up.
"""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import pytest

from egg_dispatch.cost import TensorInfo
from egg_dispatch.cost.contraction import contraction_mnk
from egg_dispatch.cost.op_time import in_dispatch_pack_extra
from egg_dispatch.egraph.rules import FAMILIES
from egg_dispatch.measure.calibrate import profile_dict
from egg_dispatch.measure.kernel_fit import fit_kernels, padded_flops
from egg_dispatch.pipeline import explore
from egg_dispatch.target.layout import resolve_layout
from egg_dispatch.target.profile import Target, TargetError, load_target, write_profile
from tests.test_measured_costs import _synthetic_calibration

F32 = "f32,f32,f32"
SHAPES = ((4, 64, 32), (16, 64, 32), (16, 128, 48), (32, 64, 48), (64, 32, 48), (32, 128, 48))
RHS_NS = 0.5


def _lhs_ns(m: int, n: int) -> float:
    return 0.2 if m <= 16 and n <= 64 else 0.8


def _calibration(target: Target, lhs_scale: float = 1.0):
    """mmt4d pre-packed at ``SHAPES`` (fixed 0.2 µs + flops at 150 GFLOP/s) and the same with the LHS
    or the RHS packed inside its dispatch, at ``_lhs_ns`` (times ``lhs_scale``) and ``RHS_NS`` per
    element of the packed operand on top."""
    cal = _synthetic_calibration(target, 0.05, 1.5, 150.0)
    for m, n, k in SHAPES:
        base = 0.2e-6 + padded_flops(target, F32, (m, n, k)) / 150e9
        cal.samples["mmt4d"].append(((m, n, k), F32, base))
        lhs = base + m * k * _lhs_ns(m, n) * lhs_scale * 1e-9
        cal.samples.setdefault("mmt4d+pack_lhs", []).append(((m, n, k), F32, lhs))
        cal.samples.setdefault("mmt4d+pack_rhs", []).append(((m, n, k), F32, base + n * k * RHS_NS * 1e-9))
    return cal


def _target(tmp_path: Path, name: str, lhs_scale: float = 1.0) -> Target:
    base = load_target("x86_64-avx512")
    cal = _calibration(base, lhs_scale)
    cal.kernels, cal.residuals = fit_kernels(cal, base)
    path = tmp_path / f"{name}.json"
    write_profile(profile_dict(base, cal, quick=True), path)
    return load_target(str(path))


def test_calibration_records_each_roles_cost_per_element_at_each_shape() -> None:
    target = load_target("x86_64-avx512")
    kernels, _ = fit_kernels(_calibration(target), target)
    lhs = {p[:3]: p[3] for p in kernels.fused_pack["lhs"]}
    rhs = {p[:3]: p[3] for p in kernels.fused_pack["rhs"]}
    assert set(lhs) == set(rhs) == {tuple(float(x) for x in s) for s in SHAPES}
    for m, n, k in SHAPES:
        assert lhs[(m, n, k)] == pytest.approx(_lhs_ns(m, n) * 1e-9, rel=1e-6)
        assert rhs[(m, n, k)] == pytest.approx(RHS_NS * 1e-9, rel=1e-6)


def test_the_table_is_exact_at_its_points_and_weighs_the_nearest_between_them() -> None:
    target = load_target("x86_64-avx512")
    k, _ = fit_kernels(_calibration(target), target)
    assert k.fused_pack_seconds("lhs", 32, 64, 48, 1536) == pytest.approx(1536 * 0.8e-9, rel=1e-6)
    assert k.fused_pack_seconds("lhs", 16, 64, 32, 512) == pytest.approx(512 * 0.2e-9, rel=1e-6)
    # (48, 64, 48): its three nearest points in log M, N, K are all of the 0.8 ns regime
    assert k.fused_pack_seconds("lhs", 48, 64, 48, 2304) == pytest.approx(2304 * 0.8e-9, rel=1e-6)
    # (8, 48, 32): two 0.2 ns points at distance 1.08 and a 0.8 ns one at 1.83 (hand-computed 0.289)
    per_element = k.fused_pack_seconds("lhs", 8, 48, 32, 1.0)
    assert per_element == pytest.approx(0.289e-9, rel=0.01)
    assert k.fused_pack_seconds("rhs", 8, 512, 8, 100) == pytest.approx(100 * RHS_NS * 1e-9, rel=1e-6)
    assert k.fused_pack_seconds("acc", 32, 64, 48, 100) is None  # a role never measured: no table


def test_the_model_charges_a_fused_pack_its_roles_table_at_the_contractions_shape() -> None:
    target = load_target("x86_64-avx512")
    kernels, _ = fit_kernels(_calibration(target), target)
    t = dataclasses.replace(target, kernels=kernels)
    layout = resolve_layout(t, 0, F32, ((0, 2), (1, 2), (0, 1)), (32, 64, 48))
    assert layout is not None
    src, packed = TensorInfo((32, 48), "f32"), TensorInfo((32, 48), "f32", layout)
    nbytes = src.logical_bytes + packed.stored_bytes
    standalone = kernels.traffic("pack", 0, "f32").seconds(src.numel, nbytes)
    assert in_dispatch_pack_extra(t, src, packed, 0, (32, 64, 48)) == pytest.approx(1536 * 0.8e-9 - standalone)
    # without the contraction's shape, the fit over both roles (as before the table)
    pooled = kernels.pack_in_dispatch.seconds(src.numel, nbytes) - standalone
    assert in_dispatch_pack_extra(t, src, packed, 0) == pytest.approx(pooled)


def test_contraction_mnk_reads_m_n_k_through_the_maps() -> None:
    x, w, acc = TensorInfo((32, 48), "f32"), TensorInfo((64, 48), "f32"), TensorInfo((32, 64), "f32")
    assert contraction_mnk("contract:linalg.matmul:(d0,d2);(d1,d2);(d0,d1)", [x, w, acc]) == (32, 64, 48)
    wt = TensorInfo((48, 64), "f32")
    assert contraction_mnk("contract:linalg.matmul:(d0,d2);(d2,d1);(d0,d1)", [x, wt, acc]) == (32, 64, 48)
    b = [TensorInfo((2, 16, 8), "f32"), TensorInfo((2, 8, 24), "f32"), TensorInfo((2, 16, 24), "f32")]
    assert contraction_mnk("contract:linalg.batch_matmul:(d0,d1,d3);(d0,d3,d2);(d0,d1,d2)", b) == (16, 24, 8)
    assert contraction_mnk("contract:linalg.matmul:(d0,d2);(d1,d2);(d0,d1)", b) is None  # maps of rank 2


PROGRAM = """
#x = affine_map<(d0, d1, d2) -> (d0, d2)>
#w = affine_map<(d0, d1, d2) -> (d1, d2)>
#y = affine_map<(d0, d1, d2) -> (d0, d1)>
func.func @proj(%x: tensor<32x48xf32>) -> tensor<32x64xf32> {
  %w = arith.constant dense<0.5> : tensor<64x48xf32>
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<32x64xf32>
  %acc = linalg.fill ins(%zero : f32) outs(%e : tensor<32x64xf32>) -> tensor<32x64xf32>
  %y = linalg.matmul indexing_maps = [#x, #w, #y] ins(%x, %w : tensor<32x48xf32>, tensor<64x48xf32>)
    outs(%acc : tensor<32x64xf32>) -> tensor<32x64xf32>
  return %y : tensor<32x64xf32>
}
"""


def _fuses_lhs_pack(ex) -> bool:
    return any("SetEncoding" in d.ops and "Contract" in d.ops for d in ex.best.plan.dispatches)


def test_the_choice_of_a_fused_or_standalone_pack_follows_the_table(tmp_path: Path) -> None:
    """The activation x [32, 48] is packed on every call: inside the matmul's dispatch or in one of its
    own. Data tiling kept (``untile`` left out): with a fused LHS pack nearly free the model fuses it
    (one launch and one standalone pack saved); at 50x the price it packs x in a dispatch of its own."""
    families = [f for f in FAMILIES if f != "untile"]
    cheap = explore(PROGRAM, _target(tmp_path, "cheap", 0.0), families=families)
    dear = explore(PROGRAM, _target(tmp_path, "dear", 50.0), families=families)
    assert _fuses_lhs_pack(cheap)
    assert not _fuses_lhs_pack(dear)
    assert any(d.ops == ["SetEncoding"] for d in dear.best.plan.dispatches)


def test_a_profile_keeps_its_table_and_a_malformed_one_names_the_field(tmp_path: Path) -> None:
    t = _target(tmp_path, "p")
    assert t.kernels is not None
    assert {p[:3] for p in t.kernels.fused_pack["lhs"]} == {tuple(float(x) for x in s) for s in SHAPES}
    path = tmp_path / "p.json"
    data = json.loads(path.read_text())
    data["kernels"]["fused_pack"]["lhs"][0] = [32, 64]
    path.write_text(json.dumps(data))
    with pytest.raises(TargetError, match=r"p\.json.*kernels\.fused_pack\.lhs"):
        load_target(str(path))
    data["kernels"]["fused_pack"] = {"acc": []}
    path.write_text(json.dumps(data))
    with pytest.raises(TargetError, match=r"kernels\.fused_pack\.acc"):
        load_target(str(path))
