"""What a buffer allocated on every call costs (``KernelCosts.alloc``), and what an elementwise
producer fused with the pack of its result costs beyond the two apart (``KernelCosts.producer_pack``).

On the Xeon a 4 MiB function result cost 160 µs per call beyond its kernel (a 4 KiB one 2 µs: the
per-call overheads), which no kernel time shows and the model priced at 0; and IREE's encode fused into
its producer's dispatch ran 2-4x the generic and the encode apart ([2, 8, 64] f16 collapsed: 0.72 µs
against 0.08 + 0.11). The calibration programs must compute what they say (checked by the NumPy
evaluator), the fits must recover known parameters from synthetic measurements, and the model must
charge both where a plan has them (the producer's extra where a plan packs in the producer's dispatch:
IREE's own plans, and plans given as input). No timing: every number is made up.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from egg_dispatch.evaluate import evaluate
from egg_dispatch.measure.kernel_fit import (
    Calibration,
    alloc_fit,
    copy_rows,
    producer_apart_seconds,
    producer_pack_table,
)
from egg_dispatch.measure.micro import ENCODE_AFTER_NEXT_N, buffer, encode_after_contraction, producer_pack
from egg_dispatch.mlir.parser import parse_mlir
from egg_dispatch.pipeline import explore
from egg_dispatch.target.kernels import Fit, KernelCosts
from egg_dispatch.target.profile import TargetError, load_target
from tests.test_measured_costs import synthetic_target

MIB = 1 << 20


def test_the_calibration_programs_compute_what_they_say() -> None:
    prog = buffer("b", 1 << 16)
    (got,) = evaluate(parse_mlir(prog.text, "<buffer>"), prog.inputs)
    np.testing.assert_array_equal(got, 3 * prog.inputs[0])
    assert got.nbytes == 1 << 16 and prog.cases[0].sizes == (1 << 16, 0, 0)
    shapes = [(2, 8, 64), (0, 16, 32)]
    for element in ("f32", "f16"):
        for fused in (True, False):
            prog = producer_pack("p", element, shapes, fused)
            got = evaluate(parse_mlir(prog.text, "<producer>"), prog.inputs)
            for x, y in zip(prog.inputs, got, strict=True):
                m = x.shape[0] * x.shape[1] if x.ndim == 3 else x.shape[0]
                plain = x.astype(np.float16) if element == "f16" else x * x
                want = (2 * plain.astype(np.float64)).reshape(m, x.shape[-1])
                np.testing.assert_allclose(y.astype(np.float64), want, rtol=2e-3 if element == "f16" else 1e-6)
            kinds = sorted(c.kind for c in prog.cases)
            assert kinds == (["producer_pack"] * 2 if fused else ["producer_encode"] * 2 + ["producer_generic"] * 2)
            assert {c.sizes for c in prog.cases} == {(16, 64, 1), (16, 32, 0)}


def _alloc_calibration(cost_of) -> Calibration:
    """``alloc`` samples of a machine whose per-call overheads are 2.2 µs and a buffer of B bytes costs
    ``cost_of(B)`` seconds on top."""
    cal = Calibration()
    for nbytes in (4096, 1 << 16, 1 << 18, MIB, 4 * MIB, 16 * MIB):
        cal.samples.setdefault("alloc", []).append(((nbytes, 0, 0), "f32", 2.2e-6 + cost_of(nbytes)))
    return cal


def test_the_allocation_fit_recovers_a_per_byte_rate_and_keeps_a_table_where_it_misses() -> None:
    fit = alloc_fit(_alloc_calibration(lambda b: b / 40e9))
    assert fit.gbps == pytest.approx(40.0, rel=1e-3) and fit.fixed_us == 0 and not fit.points
    assert fit.seconds(MIB, MIB) == pytest.approx(MIB / 40e9, rel=1e-3)
    # nothing up to 256 KiB, then 30 µs per MiB: no one rate fits, the points (less 4 KiB's) are kept
    step = alloc_fit(_alloc_calibration(lambda b: 0.0 if b <= 1 << 18 else 30e-6 * b / MIB))
    assert step.points and step.seconds(4 * MIB - 4096, 0) == pytest.approx(120e-6, rel=1e-6)
    assert [t for _, t in step.points] == sorted(t for _, t in step.points)  # never less for more bytes
    assert not alloc_fit(Calibration()).measured  # nothing measured: free, as before


def test_the_copy_fit_takes_the_copied_slices_buffer_off(tmp_path: Path) -> None:
    cal = Calibration()
    cal.samples["slice_copy"] = [((256, 1024, 0), "f32", 10e-6), ((256, 1024, 1), "f32", 30e-6)]
    ((_, _, delta, _),) = copy_rows(cal, 1e-6)
    ((_, _, less, _),) = copy_rows(cal, 1e-6, Fit(gbps=100.0))
    assert delta == pytest.approx(19e-6) and less == pytest.approx(19e-6 - MIB / 100e9)


ELEMENTWISE = """
func.func @scale(%x: tensor<256x1024xf32>) -> tensor<256x1024xf32> {
  %e = tensor.empty() : tensor<256x1024xf32>
  %y = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, d1)>],
      iterator_types = ["parallel", "parallel"]} ins(%x : tensor<256x1024xf32>) outs(%e : tensor<256x1024xf32>) {
  ^bb0(%i: f32, %o: f32):
    %s = arith.mulf %i, %i : f32
    linalg.yield %s : f32
  } -> tensor<256x1024xf32>
  return %y : tensor<256x1024xf32>
}
"""


@pytest.mark.slow
def test_the_model_charges_a_result_buffer_its_allocation(tmp_path: Path) -> None:
    free = explore(ELEMENTWISE, synthetic_target(tmp_path, "free", alloc=Fit()))
    dear = explore(ELEMENTWISE, synthetic_target(tmp_path, "dear", alloc=Fit(gbps=10.0)))
    assert dear.best.metrics.run_seconds - free.best.metrics.run_seconds == pytest.approx(MIB / 10e9, rel=1e-6)
    # an unmeasured table falls back to the profile's flat rate
    flat = explore(ELEMENTWISE, synthetic_target(tmp_path, "flat", alloc=Fit(), alloc_gbps=20.0))
    assert flat.best.metrics.run_seconds - free.best.metrics.run_seconds == pytest.approx(MIB / 20e9, rel=1e-6)


# a machine whose generics cost 0.1 µs and packs 0.2 µs whatever their size: what the producer table is
# measured against (calibrate.producer_apart_seconds prices them by these fits)
FLAT = KernelCosts(0.05, 1.5, elementwise=Fit(fixed_us=0.1), pack=Fit(fixed_us=0.2))


def _producer_calibration(extra_us) -> Calibration:
    """Producer samples: generic 0.1 µs and encode 0.2 apart, fused 0.3 + ``extra_us(elements,
    reshaped)``."""
    cal = Calibration()
    for m, k, reshaped in ((16, 64, 0), (64, 768, 0), (16, 64, 1), (64, 768, 1)):
        sz, ts = (m, k, reshaped), "f32,f32,f32"
        cal.samples.setdefault("producer_generic", []).append((sz, ts, 0.1e-6))
        cal.samples.setdefault("producer_encode", []).append((sz, ts, 0.2e-6))
        cal.samples.setdefault("producer_pack", []).append((sz, ts, (0.3 + extra_us(m * k, reshaped)) * 1e-6))
    return cal


def test_the_producer_table_holds_the_fused_extra_per_element_signed() -> None:
    table = producer_pack_table(
        _producer_calibration(lambda e, r: (1.0 if r else -0.05) * e / 1024), load_target("x86_64-avx512"), FLAT
    )
    assert set(table) == {"f32", "f32:reshape"}
    assert [e for e, _ in table["f32:reshape"]] == [1024.0, 49152.0]
    assert [x for _, x in table["f32:reshape"]] == pytest.approx([1e-6 / 1024] * 2)
    assert table["f32"][0][1] == pytest.approx(-0.05e-6 / 1024)
    k = KernelCosts(0.05, 1.5, producer_pack=table)
    assert k.producer_pack_seconds("f32", True, 4096) == pytest.approx(4e-6)
    assert k.producer_pack_seconds("f32", False, 2048) == pytest.approx(-0.1e-6)
    # f16 not measured: f32's of the same form; beyond the points: the nearest end's per element
    assert k.producer_pack_seconds("f16", True, 1 << 20) == pytest.approx(1e-6 * 1024)
    assert KernelCosts(0.05, 1.5).producer_pack_seconds("f32", True, 4096) == 0.0


def test_the_producer_table_is_measured_against_the_models_prices_not_a_slow_encode_apart() -> None:
    """An encode measured 12 µs apart (IREE's standalone encode of a [64, 256] f32 LHS on the Xeon)
    where the pack fit says 0.2: the fused dispatch's extra is its time less the model's prices of
    the two (0.3 + 0.1), so the model prices the fused form at its measured 0.4 µs, not below zero."""
    cal = _producer_calibration(lambda e, r: 0.1)
    cal.samples["producer_encode"] = [(sz, ts, 12e-6) for sz, ts, _ in cal.samples["producer_encode"]]
    table = producer_pack_table(cal, load_target("x86_64-avx512"), FLAT)
    k = KernelCosts(0.05, 1.5, producer_pack=table)
    for e, _ in table["f32"]:
        assert 0.3e-6 + k.producer_pack_seconds("f32", False, e) == pytest.approx(0.4e-6)


@pytest.mark.parametrize(("element", "shape"), [("f32", (0, 32, 128)), ("f16", (2, 16, 128))])
def test_the_producer_table_baseline_is_what_the_model_charges_the_two_apart(
    tmp_path: Path, element: str, shape: tuple[int, int, int]
) -> None:
    """``producer_apart_seconds`` is the model's own price of the apart micro-program's generic and
    encode dispatches (else the table would correct the model towards another baseline)."""
    t = synthetic_target(tmp_path, "t", elementwise=Fit(fixed_us=0.05, rate_g=50.0, gbps=20.0))
    assert t.kernels is not None
    prog = producer_pack("p", element, [shape], False)
    ex = explore(prog.text, t, families=[], baseline=False)
    priced = {tuple(d.ops): d.seconds - d.launch_seconds for d in ex.best.plan.dispatches}
    m = max(shape[0], 1) * shape[1]
    generic, pack = producer_apart_seconds(t, t.kernels, (m, shape[2]), element)
    assert priced[("Generic",)] == pytest.approx(generic, rel=1e-9)
    encode = [s for ops, s in priced.items() if ops[-1] == "SetEncoding"]
    assert encode == [pytest.approx(pack, rel=1e-9)]


def test_a_producer_collapsed_on_its_way_to_the_pack_is_priced_by_the_reshape_table(tmp_path: Path) -> None:
    """The fused calibration program itself as a plan (its dispatches as written): the generic over
    [2, 8, 64], the collapse and the pack in one dispatch pay the ``:reshape`` table's extra for the
    1024 packed elements; without a table of that form, the other form's."""
    prog = producer_pack("p", "f32", [(2, 8, 64)], True)

    def run_us(table: dict) -> float:
        t = synthetic_target(tmp_path, "t", producer_pack=table)
        ex = explore(prog.text, t, families=[], baseline=False)
        assert ["Generic", "Op", "SetEncoding"] in [d.ops for d in ex.best.plan.dispatches]
        return ex.best.metrics.run_seconds * 1e6

    none = run_us({})
    assert run_us({"f32:reshape": ((1024.0, 2e-9),), "f32": ((1024.0, 1e-9),)}) - none == pytest.approx(2.048)
    assert run_us({"f32": ((1024.0, 1e-9),)}) - none == pytest.approx(1.024)


def test_the_contraction_table_is_the_encode_inside_the_dispatch_less_the_models_standalone_pack() -> None:
    """``encode_after`` samples: the contraction's dispatch with the encode of its result inside, and
    without (the encode apart). The table's extra plus the model's price of the standalone pack is
    the measured difference, per element of the encoded result; the elementwise tables are not used
    for it, nor it for them."""
    cal = _producer_calibration(lambda e, r: 0.0)
    for (m, n, k), inside_us in (((32, 128, 32), 0.12), ((64, 256, 64), 0.5)):
        cal.samples.setdefault("encode_after", []).append(((m, n, k, 0), "f32,f32,f32", 2.0e-6))
        cal.samples["encode_after"].append(((m, n, k, 1), "f32,f32,f32", (2.0 + inside_us) * 1e-6))
    table = producer_pack_table(cal, load_target("x86_64-avx512"), FLAT)
    assert [e for e, _ in table["f32:contraction"]] == [32.0 * 128, 64.0 * 256]
    k = KernelCosts(0.05, 1.5, producer_pack=table)
    # FLAT prices every pack at 0.2 µs: 0.2 + extra = what the encode added inside the dispatch
    assert 0.2e-6 + k.producer_pack_seconds("f32", False, 4096, after_contraction=True) == pytest.approx(0.12e-6)
    assert 0.2e-6 + k.producer_pack_seconds("f16", False, 16384, after_contraction=True) == pytest.approx(0.5e-6)
    assert k.producer_pack_seconds("f32", False, 4096) == pytest.approx(0.0)  # the elementwise table: 0 extra
    assert (
        KernelCosts(0.05, 1.5, producer_pack={"f32": ((1024.0, 1e-9),)}).producer_pack_seconds(
            "f32", False, 1024, after_contraction=True
        )
        == 0.0
    )


@pytest.mark.parametrize("fused", [False, True])
def test_the_encode_after_contraction_program_computes_twice_the_relu_of_the_matmul(fused: bool) -> None:
    prog = encode_after_contraction("p", (5, 24, 7), fused)
    (got,) = evaluate(parse_mlir(prog.text, "<encode after>"), prog.inputs)
    a, b = (x.astype(np.float64) for x in prog.inputs)
    np.testing.assert_allclose(got, 2 * np.maximum(a @ b.T, 0), rtol=1e-6)
    assert [(c.kind, c.sizes, c.dispatch) for c in prog.cases] == [("encode_after", (5, 24, 7, int(fused)), 0)]
    assert f"iteration_sizes = [5, {ENCODE_AFTER_NEXT_N}, 24]" in prog.text


def test_an_encode_after_a_contractions_unset_is_priced_by_the_contraction_table(tmp_path: Path) -> None:
    """The fused calibration program as a plan: its contraction's dispatch ends with the encode of the
    unset result, which pays the ``:contraction`` table's extra for its 4096 elements, and never the
    elementwise producer's."""
    prog = encode_after_contraction("p", (32, 128, 32), True)

    def run_us(table: dict) -> float:
        t = synthetic_target(tmp_path, "t", producer_pack=table)
        ex = explore(prog.text, t, families=[], baseline=False)
        assert ["Fill", "Contract", "Generic", "UnsetEncoding", "SetEncoding"] in [
            d.ops for d in ex.best.plan.dispatches
        ]
        return ex.best.metrics.run_seconds * 1e6

    none = run_us({})
    assert run_us({"f32:contraction": ((4096.0, -1e-11),)}) - none == pytest.approx(-0.04096)
    assert run_us({"f32": ((4096.0, 1e-9),), "f32:reshape": ((4096.0, 1e-9),)}) == pytest.approx(none)


def test_a_profile_keeps_both_and_a_malformed_table_names_the_field(tmp_path: Path) -> None:
    t = synthetic_target(tmp_path, "p")
    path = tmp_path / "p.json"
    data = json.loads(path.read_text())
    data["kernels"]["alloc"] = {"fixed_us": 0.0, "rate_g": 0.0, "gbps": 38.6, "residual": 0.1}
    data["kernels"]["producer_pack"] = {"f16:reshape": [[1024, 5.7e-10], [98304, 2e-11]]}
    path.write_text(json.dumps(data))
    k = load_target(str(path)).kernels
    assert k is not None and k.alloc.gbps == 38.6 and k.producer_pack["f16:reshape"][1] == (98304.0, 2e-11)
    assert t.kernels is not None
    data["kernels"]["producer_pack"] = {"f16": [[0, 1e-9]]}
    path.write_text(json.dumps(data))
    with pytest.raises(TargetError, match=r"p\.json.*kernels\.producer_pack\.f16"):
        load_target(str(path))
