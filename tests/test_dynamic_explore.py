"""``explore`` and ``iree-baseline`` on real dynamic PyTorch exports (issue 12), end to end.

The fixtures (tests/fixtures/models/README.md) are PyTorch modules exported with dynamic dims and
recorded by scripts/export_fixtures.py with IREE's runtime and PyTorch's outputs at three sizes each:
``mlp_dyn`` and ``attention_dyn`` (a dynamic sequence length, no bounds), ``mlp_sym`` (dynamic batch
and a sequence of 8 * s, which the export gives as util.assume.int ranges and divisibility).

* ``explore`` plans once for every size: every reported plan passes ``Exploration.check`` at several
  sizes per dynamic dim (1, a non-multiple of the tiles, a multiple), and the chosen plan reproduces
  PyTorch's and IREE's recorded outputs at every recorded size;
* the torch-dialect export is explored from IREE's own start state (needs ``iree-compile``);
* ``--emit iree`` writes dispatches with workloads and dynamic dims that ``iree-compile
  --compile-from=dispatch-creation`` compiles and that, run with ``iree.runtime``, match IREE's own
  module at every recorded size;
* IREE's own dynamic plan is imported (``iree-baseline``) and computes the same numbers;
* the cost model is the weighted mean over the ``--assume`` sizes (else util.assume.int bounds, else
  ``DEFAULT_DYNAMIC_SIZE``), which the report prints; ``--assume`` narrows what the legality facts must
  hold for, so it can prove a fused pack the unbounded dim refuses (``--explain`` says why);
* bad ``--assume`` values and inputs contradicting them are errors naming the dim and the value (exit 2).
"""

from __future__ import annotations

import functools
import json
import re
from pathlib import Path

import numpy as np
import pytest

from egg_dispatch.cost.sizes import DEFAULT_DYNAMIC_SIZE, AssumeError
from egg_dispatch.emit.iree.abi import abi_shell
from egg_dispatch.emit.iree.module import emit_iree, runnable_here
from egg_dispatch.evaluate import evaluate
from egg_dispatch.iree.lowering import iree_compiler_available
from egg_dispatch.iree.tools import compile_module, run_module
from egg_dispatch.pipeline import explore, iree_plan
from egg_dispatch.plan.sized import sizes_of
from egg_dispatch.result.explain import explain
from egg_dispatch.result.report import text as render_report
from tests.cli_process import cli_process

pytestmark = pytest.mark.slow  # IREE builds, explorations at model size or long properties (docs/testing.md)

MODELS = Path(__file__).parent / "fixtures" / "models"
DYNAMIC = ("mlp_dyn", "attention_dyn", "mlp_sym")
TARGET = "x86_64-avx2"
needs_iree = pytest.mark.skipif(not iree_compiler_available(), reason="IREE not installed (egg-dispatch[iree])")


def load_npz(path: Path) -> list[np.ndarray]:
    with np.load(path) as z:
        return [z[k] for k in sorted(z.files, key=lambda k: int(k[3:]))]


def tags(name: str) -> list[str]:
    """The recorded sizes of a fixture (``inputs_<tag>.npz``)."""
    return sorted(p.stem[len("inputs_") :] for p in (MODELS / name).glob("inputs_*.npz"))


def max_rel(got: list[np.ndarray], want: list[np.ndarray]) -> float:
    assert len(got) == len(want)
    worst = 0.0
    for a, b in zip(got, want, strict=True):
        b64 = np.asarray(b, np.float64)
        assert np.asarray(a).shape == b64.shape
        scale = max(float(np.max(np.abs(b64))), 1e-30)
        worst = max(worst, float(np.max(np.abs(np.asarray(a, np.float64) - b64))) / scale)
    return worst


@functools.cache
def explored(name: str, form: str = "input.mlir", assume: tuple[str, ...] = ()):
    return explore(MODELS / name / form, TARGET, assume=list(assume) or None)


def test_fixtures_are_dynamic() -> None:
    for name in DYNAMIC:
        assert len(tags(name)) >= 3
        assert (
            "tensor<?x" in (MODELS / name / "input.mlir").read_text()
            or "x?x" in (MODELS / name / "input.mlir").read_text()
        )


@pytest.mark.parametrize("name", DYNAMIC)
def test_plans_check_at_several_sizes_and_match_recorded_outputs(name: str) -> None:
    e = explored(name)
    assert e.imported.dynamic and e.sizes is not None and e.sizes.dynamic
    checks = e.check()
    assert checks and all(c.ok and not c.skipped for c in checks), checks
    for tag in tags(name):
        inputs = load_npz(MODELS / name / f"inputs_{tag}.npz")
        got = evaluate(e.best.mlir, inputs, target=e.target)
        assert max_rel(got, load_npz(MODELS / name / f"expected_torch_{tag}.npz")) <= 1e-4, tag
        assert max_rel(got, load_npz(MODELS / name / f"expected_iree_{tag}.npz")) <= 1e-5, tag


def test_check_covers_one_and_non_multiples_of_the_tiles() -> None:
    """The check's sizes per unbounded dim are 1, 13 (not a multiple of AVX2's 8 rows) and 16."""
    from egg_dispatch.evaluate import select_function
    from egg_dispatch.evaluate.sizes import check_sizes
    from egg_dispatch.mlir.shapes import function_shapes

    e = explored("mlp_dyn")
    func = select_function(e.module, e.imported.function)
    runs = check_sizes(func, e.imported.domains, function_shapes(func))
    assert sorted(r["arg0.d1"] for r in runs) == [1, 13, 16]


@needs_iree
@pytest.mark.parametrize("name", DYNAMIC)
def test_torch_export_from_irees_start_state(name: str) -> None:
    e = explored(name, "torch.mlir")
    assert e.input is not None and e.input.form == "torch" and e.input.explored_form == "set-encoding"
    assert e.imported.dynamic
    assert all(c.ok for c in e.check() if c.label == "best" or "modelled" in c.label)
    for tag in tags(name):
        got = evaluate(e.best.mlir, load_npz(MODELS / name / f"inputs_{tag}.npz"), target=e.target)
        assert max_rel(got, load_npz(MODELS / name / f"expected_torch_{tag}.npz")) <= 1e-4, tag


@needs_iree
@pytest.mark.parametrize("name", DYNAMIC)
def test_emitted_dynamic_plan_compiles_and_matches_iree(name: str) -> None:
    e = explored(name, "torch.mlir")
    shell = abi_shell(e.module, e.imported.function)
    assert shell is not None
    text = emit_iree(e.best.mlir, e.target, abi=shell)
    # workloads and dynamic dims, as IREE's own dispatch creation writes them
    assert "flow.dispatch.workgroups[%" in text and "iree_tensor_ext.dispatch.workload.ordinal" in text
    assert "hal.buffer_view.dim" in text and re.search(r"dispatch\.tensor<readonly:tensor<[0-9x]*\?", text)
    vmfb = compile_module(text, data_tiling=False, target_cpu="haswell", compile_from="dispatch-creation")
    ok, why = runnable_here(TARGET)
    if not ok:
        pytest.skip(f"compiled only: {why}")
    for tag in tags(name):
        got = run_module(vmfb, "main", load_npz(MODELS / name / f"inputs_{tag}.npz"))
        assert max_rel(got, load_npz(MODELS / name / f"expected_iree_{tag}.npz")) <= 1e-5, tag


@pytest.mark.parametrize("name", DYNAMIC)
def test_irees_own_dynamic_plan_is_imported(name: str) -> None:
    """IREE's printed plan (dispatch_creation.avx2.mlir, recorded) is costed and computes its numbers."""
    plan = iree_plan(MODELS / name / "dispatch_creation.avx2.mlir", TARGET)
    assert plan.error is None and plan.candidate is not None, plan.error
    assert plan.printed_dispatches > 0 and plan.dispatch_count_sane
    assert plan.metrics.run_seconds > 0
    for tag in tags(name):
        got = evaluate(plan.candidate.mlir, load_npz(MODELS / name / f"inputs_{tag}.npz"), target=TARGET)
        assert max_rel(got, load_npz(MODELS / name / f"expected_iree_{tag}.npz")) <= 1e-5, tag


def test_default_sizes_and_their_sources() -> None:
    dyn = explored("mlp_dyn").sizes
    assert dyn is not None
    assert [(d.name, d.values, d.source) for d in dyn.dims] == [("arg0.d1", (DEFAULT_DYNAMIC_SIZE,), "default")]
    sym = explored("mlp_sym").sizes
    assert sym is not None
    got = {d.name: (d.values, d.source) for d in sym.dims}
    assert got == {
        "arg0.d0": ((1, 8), "util.assume.int bounds"),
        "arg0.d1": ((8, 512), "util.assume.int bounds"),
    }
    assert len(sym.configs) == 4 and sum(w for _, w in sym.configs) == pytest.approx(1.0)


def test_the_objective_is_the_weighted_mean_over_the_assumed_sizes() -> None:
    e = explored("mlp_dyn", assume=("arg0.d1=16:3,256:1",))
    at = sizes_of(e.best.plan)
    assert [(env, w) for env, w, _ in at] == [({"arg0.d1": 16}, 0.75), ({"arg0.d1": 256}, 0.25)]
    small, large = at[0][2], at[1][2]
    assert large.run_seconds > small.run_seconds  # the cost depends on the size
    m = e.best.metrics
    assert m.run_seconds == pytest.approx(0.75 * small.run_seconds + 0.25 * large.run_seconds)
    assert m.objective == pytest.approx(0.75 * small.objective + 0.25 * large.objective, rel=1e-6)
    # at one size only, the plan's cost is that size's
    one = explored("mlp_dyn", assume=("arg0.d1=256",))
    assert one.best.metrics.run_seconds > e.best.metrics.run_seconds
    report = render_report(e)
    assert "arg0.d1 = 16 (weight 3), 256 (weight 1) (--assume" in report
    assert "at arg0.d1=16 (weight 0.75)" in report and "at arg0.d1=256 (weight 0.25)" in report


def test_assume_proves_what_an_unbounded_dim_cannot() -> None:
    """attention_dyn's activations [1, s, 32] feed matmuls with AVX2's 8-row LHS tiles: fusing their pack
    into the matmul's dispatch needs 8 | s and a bounded footprint. Unbounded s: refused, with the
    reason --explain prints; --assume s in {16, 32}: provable, and the plan is checked at exactly those."""
    free = explain(explored("attention_dyn"))
    assert "refused  fused pack: 1. the inner tiles do not divide the shape: dim 1 = arg0.d1" in free
    assert "no util.assume.int or --assume bounds it" in free
    e = explored("attention_dyn", assume=("arg0.d1=16,32",))
    assert "refused  fused pack: 1." not in explain(e)
    checks = e.check()
    assert checks and all(c.ok for c in checks)
    odd = explain(explored("attention_dyn", assume=("arg0.d1=13",)))
    assert "arg0.d1 (arg0.d1 in {13}) is not a multiple of the tile 8" in odd


def test_bad_assume_is_an_error() -> None:
    with pytest.raises(AssumeError, match="no such dynamic dimension"):
        explored("mlp_dyn", assume=("seq=8",))
    with pytest.raises(AssumeError, match=r"arg0\.d1"):
        explored("mlp_sym", assume=("arg0.d1=12",))  # util.assume.int says udiv = 8


def test_cli_assume(tmp_path: Path) -> None:
    path = str(MODELS / "mlp_sym" / "input.mlir")
    proc = cli_process("explore", path, "--target", TARGET, "--assume", "arg0.d1=8,64:3", "--emit", "json")
    assert proc.returncode == 0, proc.stderr
    sizes = json.loads(proc.stdout)["sizes"]
    assert json.dumps(sizes).count("arg0.d1") >= 1 and "--assume" in json.dumps(sizes)
    for bad, fragment in (
        ("arg0.d1=12", "arg0.d1"),
        ("nope=3", "no such dynamic dimension"),
        ("arg0.d1", "NAME=SIZE"),
    ):
        proc = cli_process("explore", path, "--target", TARGET, "--assume", bad)
        assert proc.returncode == 2, (bad, proc.stderr)
        assert fragment in proc.stderr and "Traceback" not in proc.stderr, proc.stderr
    # run: an input of a size --assume does not allow names the dim and the value
    np.save(tmp_path / "x.npy", np.zeros((1, 16, 32), np.float32))
    dyn = str(MODELS / "mlp_dyn" / "input.mlir")
    proc = cli_process("run", dyn, f"--input=@{tmp_path / 'x.npy'}", "--assume", "arg0.d1=128,256")
    assert proc.returncode == 2
    assert "arg0.d1 = 16 contradicts --assume arg0.d1=128,256" in proc.stderr
    assert cli_process("run", dyn, f"--input=@{tmp_path / 'x.npy'}", "--assume", "arg0.d1=16").returncode == 0
