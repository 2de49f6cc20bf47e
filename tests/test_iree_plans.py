"""Our plans, compiled and run by real IREE (issue 6).

1. ``--emit iree`` writes a plan in IREE's post-dispatch-creation form. For every linalg-level fixture the
   best plan on x86_64-avx2 (and on x86_64-avx512), and for the seed, Q/K/V of a constant and Q/K/V of an
   argument every frontier plan, must parse with our parser and with ``iree-opt``, compile with
   ``iree-compile --compile-from=dispatch-creation``, and, run with ``iree.runtime`` on seeded inputs,
   give the NumPy evaluator's numbers (relative error <= 1e-5; exact for integers). A plan IREE rejects
   fails with IREE's diagnostics in the message. AVX-512 plans run only when the host has avx512f (else
   they are compiled only); aarch64 plans are compiled only.
2. ``iree-baseline``: IREE's own plan for the seed, as IREE 3.13 prints it, costed by our model.
3. ``bench``: a smoke test with one repeat (no timing assertion anywhere).

Compiled modules are cached for the session (keyed by the emitted text), so a plan shared by two tests
is compiled once.
"""

from __future__ import annotations

import functools
import re
from pathlib import Path

import numpy as np
import pytest

from egg_dispatch.cli import main
from egg_dispatch.egraph.rules import FAMILIES
from egg_dispatch.emit.iree.module import (
    MATERIALIZED_NOTE,
    emit_iree,
    iree_cpu,
    needs_materialization,
    runnable_here,
    to_iree_module,
)
from egg_dispatch.evaluate import evaluate, function_input_types, select_function
from egg_dispatch.evaluate.check import random_inputs
from egg_dispatch.iree.tools import IreeError, compile_module, iree_available, iree_opt_parses, run_module
from egg_dispatch.mlir.parser import parse_mlir
from egg_dispatch.pipeline import explore
from egg_dispatch.result.exploration import Candidate, Exploration

pytestmark = [
    pytest.mark.slow,
    pytest.mark.iree,
    pytest.mark.skipif(not iree_available(), reason="IREE not installed (egg-dispatch[iree])"),
]

FIXTURES = Path(__file__).parent / "fixtures"
CORPUS = [
    "seed_iree313",
    "qkv_const",
    "qkv_arg",
    "mlp2",
    "matmul_m1",
    "unaligned",
    "col_slices",
    "f16_matmul",
    "i8_matmul",
    "transformer_block",
]
FRONTIER = ["seed_iree313", "qkv_const", "qkv_arg"]
RTOL = 1e-5


# ------------------------------------------------------------------------------------------------ caches


DATA_TILED = tuple(f for f in FAMILIES if f != "untile")
"""Every family but ``untile``: the best plan keeps its encodings (at these sizes plain matmuls win)."""


@functools.cache
def exploration(fixture: str, target: str, families: tuple[str, ...] = FAMILIES) -> Exploration:
    """``explore`` with the frontier (the best plan is the same with or without it)."""
    return explore(FIXTURES / f"{fixture}.mlir", target, pareto=True, families=families)


@functools.cache
def _compile(text: str, cpu: str) -> bytes | IreeError:
    try:
        return compile_module(text, data_tiling=False, target_cpu=cpu, compile_from="dispatch-creation")
    except IreeError as e:
        return e


def compiled(text: str, target: str, what: str) -> bytes:
    """The vmfb of an emitted plan; IREE rejecting it fails the test with IREE's message."""
    out = _compile(text, iree_cpu(target).cpu or "generic")
    if isinstance(out, IreeError):
        pytest.fail(f"IREE rejected {what}:\n{out.stderr}", pytrace=False)
    return out


def plans(ex: Exploration, frontier: bool) -> list[Candidate]:
    return [ex.best] + ([c for c in ex.pareto if c.choice != ex.best.choice] if frontier else [])


def check_plan(fixture: str, target: str, cand: Candidate, *, run: bool = True) -> None:
    """Emit, parse (ours and iree-opt), compile and (when the host can) run one plan against NumPy."""
    ex = exploration(fixture, target)
    what = f"{fixture} on {target} [{cand.label}]"
    text = emit_iree(cand.mlir, target)
    module = parse_mlir(text, f"<{what}>")
    assert module.function().name == "util.func"
    ok, err = iree_opt_parses(text)
    assert ok, f"iree-opt rejects {what}:\n{err}"
    vmfb = compiled(text, target, what)
    if not run:
        return
    can_run, why = runnable_here(target)
    if not can_run:
        pytest.skip(f"compiled only: {why}")
    func = select_function(ex.module, ex.imported.function)
    inputs = random_inputs(function_input_types(func), seed=0)
    reference = evaluate(ex.module, inputs, function=ex.imported.function)
    got = run_module(vmfb, ex.imported.function, inputs)
    assert len(got) == len(reference)
    for i, (a, b) in enumerate(zip(got, reference, strict=True)):
        assert a.shape == b.shape, f"{what}: result {i} has shape {a.shape}, expected {b.shape}"
        if b.dtype.kind in "iub":
            np.testing.assert_array_equal(a, b, err_msg=f"{what}: result {i}")
            continue
        scale = max(float(np.max(np.abs(b))), 1e-30)
        rel = float(np.max(np.abs(a.astype(np.float64) - b.astype(np.float64)))) / scale
        assert rel <= RTOL, f"{what}: result {i} differs from NumPy by {rel:.2e} of its scale"
    if "flow.tensor.reshape" not in text:  # our evaluator cannot run that op; everything else it can
        ours = evaluate(module, inputs, target=target)
        for a, b in zip(ours, reference, strict=True):
            np.testing.assert_allclose(a, b, rtol=0, atol=RTOL * max(float(np.max(np.abs(b))), 1e-30))


# ------------------------------------------------------------------------------------------------ point 1


@pytest.mark.parametrize("fixture", CORPUS)
def test_best_plan_runs_on_iree_avx2(fixture: str) -> None:
    check_plan(fixture, "x86_64-avx2", exploration(fixture, "x86_64-avx2").best)


@pytest.mark.parametrize("fixture", FRONTIER)
def test_frontier_plans_run_on_iree_avx2(fixture: str) -> None:
    ex = exploration(fixture, "x86_64-avx2")
    assert ex.pareto, "the frontier is empty"
    for cand in plans(ex, frontier=True):
        check_plan(fixture, "x86_64-avx2", cand)


@pytest.mark.parametrize("fixture", CORPUS)
def test_best_plan_on_avx512(fixture: str) -> None:
    """Run when the host has avx512f (compiled only otherwise)."""
    check_plan(fixture, "x86_64-avx512", exploration(fixture, "x86_64-avx512").best)


@pytest.mark.parametrize("fixture", FRONTIER)
def test_frontier_plans_on_avx512(fixture: str) -> None:
    for cand in plans(exploration(fixture, "x86_64-avx512"), frontier=True):
        check_plan(fixture, "x86_64-avx512", cand)


@pytest.mark.parametrize("fixture", ["seed_iree313", "qkv_const", "mlp2"])
def test_target_none_runs_with_the_identity_resolver(fixture: str) -> None:
    ex = exploration(fixture, "none")
    text = emit_iree(ex.best.mlir, "none")
    assert "iree.encoding.resolver = #iree_encoding.identity_resolver" in text
    check_plan(fixture, "none", ex.best)


def test_encoded_plan_compiles_with_the_identity_resolver() -> None:
    """An encoded plan on the ``none`` device: every encoding resolves to the identity and folds away."""
    ex = exploration("mlp2", "x86_64-avx2", DATA_TILED)
    text = emit_iree(ex.best.mlir, "none")
    assert "#iree_encoding.encoding" in text and "#iree_encoding.identity_resolver" in text
    vmfb = compiled(text, "none", "mlp2's AVX2 plan on the identity resolver")
    if runnable_here("none")[0]:
        func = select_function(ex.module, ex.imported.function)
        inputs = random_inputs(function_input_types(func), seed=2)
        np.testing.assert_array_equal(run_module(vmfb, "mlp2", inputs)[0], evaluate(ex.module, inputs)[0])


def test_aarch64_is_compiled_but_not_run_here() -> None:
    ok, why = runnable_here("aarch64-neon")
    assert not ok and "cannot run on this x86-64 host" in why
    ex = exploration("seed_iree313", "aarch64-neon")
    text = emit_iree(ex.best.mlir, "aarch64-neon")
    assert 'target_triple = "aarch64-unknown-unknown-eabi-elf"' in text
    check_plan("seed_iree313", "aarch64-neon", ex.best, run=False)


def test_avx512_runs_only_with_avx512f() -> None:
    from egg_dispatch.emit.iree.module import host_cpu_flags

    ok, why = runnable_here("x86_64-avx512")
    assert "avx512f" in iree_cpu("x86_64-avx512").required_host_flags
    assert ok == all(f in host_cpu_flags() for f in iree_cpu("x86_64-avx512").required_host_flags), why
    assert runnable_here("x86_64-avx2")[0] == ("avx2" in host_cpu_flags())


def test_emitted_seed_has_iree_shape() -> None:
    """The fixture's shape: device global, affinity, ABI wrapper, one workgroups op per dispatch region."""
    ex = exploration("seed_iree313", "x86_64-avx2")
    base = ex.baseline
    assert base is not None
    text = emit_iree(base.mlir, "x86_64-avx2")
    module = parse_mlir(text, "<seed baseline>")
    assert module.attributes["stream.affinity.default"].text == "#hal.device.affinity<@__device_0>"  # type: ignore[attr-defined]
    device = module.globals()["__device_0"].attributes["initial_value"].text  # type: ignore[attr-defined]
    assert 'cpu = "haswell"' in device and "#iree_cpu.cpu_encoding_resolver<>" in device
    assert "max_stack_allocation_size = 32768 : i64" in device and "native_vector_size = 32 : i64" in device
    func = module.function()
    body = [op.name for op in func.regions[0].entry.ops]
    regions = sum(1 for op in base.mlir.walk() if op.name == "flow.dispatch.region")
    assert body.count("flow.dispatch.workgroups") == regions == 2
    assert body.count("hal.tensor.import") == 2 and body.count("hal.tensor.export") == 2
    assert body.count("flow.tensor.encode") == 2  # the arguments' hoisted encodes
    assert sum(1 for op in module.ops if op.name == "util.initializer") == 2
    assert func.attributes["iree.abi.stub"] is not None
    decl = func.attributes["iree.reflection"].get("iree.abi.declaration").value  # type: ignore[attr-defined]
    assert decl.startswith("sync func @split_weight_matmuls(%input0: tensor<8x8xf32>")
    for wg in (op for op in func.walk() if op.name == "flow.dispatch.workgroups"):
        args = wg.regions[0].entry.args
        access = [a.type.access for a in args]  # type: ignore[attr-defined]
        assert access == ["readonly"] * len(wg.operands) + ["writeonly"] * len(wg.results)
        inner = [o.name for o in wg.regions[0].entry.ops]
        assert inner.count("iree_tensor_ext.dispatch.tensor.load") == len(wg.operands)
        assert inner.count("iree_tensor_ext.dispatch.tensor.store") == len(wg.results)
        assert "linalg.matmul" in inner
    avx512 = emit_iree(base.mlir, "x86_64-avx512")
    assert 'cpu = "cascadelake"' in avx512 and "+avx512f" in avx512 and "native_vector_size = 64 : i64" in avx512


def test_encoded_slices_are_materialized() -> None:
    """IREE 3.13 cannot lower a slice of an encoded tensor; such plans are emitted as pack/mmt4d/unpack."""
    found = False
    for fixture in FRONTIER:
        for target in ("x86_64-avx2", "x86_64-avx512"):
            for cand in plans(exploration(fixture, target, DATA_TILED), frontier=True):
                text = emit_iree(cand.mlir, target)
                needed = needs_materialization(cand.mlir, exploration(fixture, target, DATA_TILED).target)
                assert text.startswith(MATERIALIZED_NOTE) == needed
                if needed:
                    found = True
                    assert "#iree_encoding.encoding" not in text and "linalg.mmt4d" in text
    if not found:
        pytest.skip("no frontier plan slices an encoded tensor on these fixtures")


def test_forced_materialization_runs() -> None:
    """The physical spelling of an ordinary plan compiles and computes the same numbers."""
    ex = exploration("mlp2", "x86_64-avx2", DATA_TILED)
    module = to_iree_module(ex.best.mlir, "x86_64-avx2", materialize=True)
    text = emit_iree(ex.best.mlir, "x86_64-avx2", materialize=True)
    assert not any(op.name.startswith("iree_encoding.") for op in module.walk())
    assert "linalg.pack" in text and "linalg.mmt4d" in text and "linalg.unpack" in text
    vmfb = compiled(text, "x86_64-avx2", "mlp2 best, materialized")
    if runnable_here("x86_64-avx2")[0]:
        func = select_function(ex.module, ex.imported.function)
        inputs = random_inputs(function_input_types(func), seed=1)
        reference = evaluate(ex.module, inputs, function=ex.imported.function)
        got = run_module(vmfb, ex.imported.function, inputs)
        np.testing.assert_allclose(got[0], reference[0], rtol=0, atol=RTOL * float(np.max(np.abs(reference[0]))))


def test_cli_emit_iree(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["explore", str(FIXTURES / "seed_iree313.mlir"), "--target", "x86_64-avx2", "--emit", "iree"]) == 0
    text = capsys.readouterr().out
    assert "flow.dispatch.workgroups" in text and "@__device_0" in text
    compiled(text, "x86_64-avx2", "explore --emit iree on the seed")


# ------------------------------------------------------------------------------------------------ point 2


def test_iree_plan_of_the_seed() -> None:
    """IREE 3.13 on AVX2: both slice+encode chains hoisted into 2 globals (filled by initializers with
    flow.tensor.encode), the arguments encoded per call, 2 matmul dispatches."""
    from egg_dispatch.pipeline import iree_plan

    plan = iree_plan(FIXTURES / "seed_iree313.mlir", "x86_64-avx2")
    assert (plan.printed_dispatches, plan.printed_encodes, plan.printed_slices, plan.printed_globals) == (2, 2, 0, 2)
    assert plan.text.count("linalg.matmul") == 2
    assert len(re.findall(r"util\.initializer", plan.text)) == 2
    assert plan.error is None, plan.error
    m = plan.metrics
    assert (m.dispatches, m.encode_dispatches, m.globals) == (4, 2, 2)
    assert plan.dispatch_count_sane
    # the two encoded 8x8 globals (tiles divide: no padding) and the two folded 8x8 constants filling them
    assert m.persistent_bytes == 4 * 8 * 8 * 4
    ours = exploration("seed_iree313", "x86_64-avx2").best.metrics
    assert ours.run_seconds < m.run_seconds  # the model prefers our plan (fewer dispatches)


def test_iree_plan_of_text_already_in_dispatch_creation_form() -> None:
    """IREE's printed output is taken as the plan as it is (no second IREE run): the checked-in fixture."""
    from egg_dispatch.pipeline import iree_plan

    plan = iree_plan(FIXTURES / "seed_dispatch_creation.mlir", "x86_64-avx2")
    assert (plan.printed_dispatches, plan.printed_encodes, plan.printed_globals) == (2, 2, 2)
    assert plan.dispatch_count_sane and plan.metrics.globals == 2


def test_iree_baseline_cli(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["iree-baseline", str(FIXTURES / "seed_iree313.mlir"), "--target", "x86_64-avx2"]) == 0
    out = capsys.readouterr().out
    assert "IREE 3.13, real (imported)" in out and "ours (egg_dispatch best)" in out
    real = next(line for line in out.splitlines() if line.startswith("IREE 3.13, real"))
    assert real.split()[4:7] == ["4", "2", "2"]  # dispatches, encodes, globals


def test_iree_baseline_bad_input(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    assert main(["iree-baseline", str(tmp_path / "missing.mlir")]) == 2
    assert capsys.readouterr().err.strip().endswith("error: no such file")
    assert main(["iree-baseline", str(FIXTURES / "seed_iree313.mlir"), "--target", "nope"]) == 2
    assert len(capsys.readouterr().err.strip().splitlines()) == 1
    bad = tmp_path / "bad.mlir"
    bad.write_text("func.func @f(%a: tensor<4xf32>) -> tensor<4xf32> {\n  return %b : tensor<4xf32>\n}\n")
    assert main(["iree-baseline", str(bad), "--target", "x86_64-avx2"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "IREE rejected the input" in err[-1]


# ------------------------------------------------------------------------------------------------ point 3


def test_separated_pairs_count_only_plans_whose_rounds_do_not_overlap() -> None:
    from egg_dispatch.measure.bench import separated_pairs

    rounds = [[1.0, 1.1, 1.2], [1.15, 1.3], [2.0, 2.1], [2.05]]
    # separated by hand: (0,2) (0,3) (1,2) (1,3); 0~1 overlap (1.2 >= 1.15), 2~3 overlap (2.05 in 2.0-2.1)
    assert separated_pairs([1, 2, 3, 4], rounds) == (4, 4.0)
    # predicted 1, 3, 2, 1: (0,2) right, (0,3) a tie (half), (1,2) and (1,3) wrong
    assert separated_pairs([1, 3, 2, 1], rounds) == (4, 1.5)
    assert separated_pairs([1, 2], [[1.0], []]) == (0, 0.0)
    with pytest.raises(ValueError):
        separated_pairs([1.0], [])


def test_spearman_by_hand() -> None:
    from egg_dispatch.measure.bench import ranks, spearman

    assert ranks([3.0, 1.0, 2.0, 2.0]) == [4.0, 1.0, 2.5, 2.5]
    assert spearman([1, 2, 3, 4], [10, 20, 30, 40]) == pytest.approx(1.0)
    assert spearman([1, 2, 3, 4], [4, 3, 2, 1]) == pytest.approx(-1.0)
    assert spearman([1, 2, 3], [1, 1, 1]) is None


def test_bench_smoke() -> None:
    from egg_dispatch.measure.bench import bench, render

    report = bench(FIXTURES / "seed_iree313.mlir", "x86_64-avx2", pareto=True, repeats=1, min_time=0.01)
    assert report.plans[0].kind == "iree" and len(report.plans) >= 2
    text = render(report)
    assert "ours/IREE" in text and "Spearman" in text
    if report.ran:
        assert report.numbers_ok, text
        assert all(len(p.measured) == 1 and p.measured[0] > 0 for p in report.plans)


def test_bench_cli(capsys: pytest.CaptureFixture[str]) -> None:
    args = ["bench", str(FIXTURES / "matmul_m1.mlir"), "--repeats", "1", "--min-time", "0.01"]
    assert main(args) == 0
    assert "IREE 3.13 (own plan)" in capsys.readouterr().out
    assert main(["bench", str(FIXTURES / "matmul_m1.mlir"), "--repeats", "0"]) == 2
