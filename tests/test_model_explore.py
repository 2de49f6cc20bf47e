"""``explore`` on real PyTorch exports, in every form users have them (tests/fixtures/models/).

For every static model (GPT-2-, BERT- and Llama-style blocks, a tiny LM with a tied embedding, an
int8-weight and an f16-weight MLP) and every form (the raw torch-dialect export, IREE's async-ABI
input phase, and both with external parameters):

* the form is detected and, with IREE installed, explored from IREE's own data-tiling start state (its
  DispatchCreation up to SetEncoding), or after its global optimization with ``--from global-optimization``;
* every reported plan computes the explored program's numbers (``Exploration.check``), with the real
  weights from ``params.irpa`` for the external-parameter forms;
* the explored program and the chosen plan reproduce PyTorch's own outputs (``expected_torch.npz``,
  recorded by scripts/export_fixtures.py) on the recorded inputs;
* ``--emit iree`` of the chosen plan keeps the input's ABI and its parameter references: compiled with
  ``iree-compile --compile-from=dispatch-creation`` and run with the parameter file it matches IREE's
  own module (``expected_iree.npz``).

Tolerances are those of tests/test_model_fixtures.py (relative to each output's magnitude): 1e-4 for
f32 models against PyTorch (transcendental approximations and summation order differ), 1e-2 for the
f16 MLP; against IREE's own module 1e-5 (f32) and 2e-3 (f16), since both run IREE's kernels.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from egg_dispatch.emit.iree.abi import abi_shell
from egg_dispatch.emit.iree.module import emit_iree, runnable_here
from egg_dispatch.evaluate import evaluate
from egg_dispatch.evaluate.parameters import ParameterFile, Parameters
from egg_dispatch.iree.lowering import iree_compiler_available
from egg_dispatch.iree.tools import compile_module, run_module
from egg_dispatch.pipeline import UnsupportedInput, explore

pytestmark = pytest.mark.slow  # IREE builds, explorations at model size or long properties (docs/testing.md)

MODELS = Path(__file__).parent / "fixtures" / "models"
STATIC = ("gpt2_block", "bert_block", "llama_block", "tiny_lm", "int8_mlp", "f16_mlp")
FORMS = ("torch.mlir", "input.mlir", "ext.torch.mlir", "ext.input.mlir")
TARGET = "x86_64-avx2"
needs_iree = pytest.mark.skipif(not iree_compiler_available(), reason="IREE not installed (egg-dispatch[iree])")


def load_npz(path: Path) -> list[np.ndarray]:
    with np.load(path) as z:
        return [z[k] for k in sorted(z.files, key=lambda k: int(k[3:]))]


def max_rel(got: list[np.ndarray], want: list[np.ndarray]) -> float:
    assert len(got) == len(want)
    worst = 0.0
    for a, b in zip(got, want, strict=True):
        b64 = np.asarray(b, np.float64)
        assert np.asarray(a).shape == b64.shape
        scale = max(float(np.max(np.abs(b64))), 1e-30)
        worst = max(worst, float(np.max(np.abs(np.asarray(a, np.float64) - b64))) / scale)
    return worst


def torch_tolerance(name: str) -> float:
    return 1e-2 if name.startswith("f16") else 1e-4


def parameters(name: str, form: str) -> Parameters:
    if not form.startswith("ext."):
        return Parameters()
    return Parameters([ParameterFile(MODELS / name / "params.irpa", "model")])


@needs_iree
@pytest.mark.parametrize("form", FORMS)
@pytest.mark.parametrize("name", STATIC)
def test_every_form_is_explored_from_irees_start_state(name: str, form: str) -> None:
    folder = MODELS / name
    result = explore(folder / form, TARGET)
    assert result.input is not None
    assert result.input.form == ("torch" if "torch" in form else "input")
    assert result.input.explored_form == "set-encoding" and result.input.iree_plan
    assert any("--mlir-print-ir-before=iree-dispatch-creation-hoist-encoding-ops" in s for s in result.input.steps)
    params = parameters(name, form)
    checks = result.check(parameters=params)
    assert checks and all(c.ok and not c.skipped for c in checks if "modelled" in c.label or c.label == "best")
    assert not params.warnings if form.startswith("ext.") else True  # the real weights were found
    inputs = load_npz(folder / "inputs.npz")
    want = load_npz(folder / "expected_torch.npz")
    got = evaluate(result.module, inputs, result.imported.function, parameters=params)
    assert max_rel(got, want) <= torch_tolerance(name)
    got_plan = evaluate(result.best.mlir, inputs, target=result.target, parameters=params)
    assert max_rel(got_plan, want) <= torch_tolerance(name)


@needs_iree
@pytest.mark.parametrize("name", STATIC)
def test_from_global_optimization(name: str) -> None:
    """``--from global-optimization``: IREE's global optimization, then our model of dispatch formation."""
    folder = MODELS / name
    result = explore(folder / "ext.torch.mlir", TARGET, start="global-optimization")
    assert result.input is not None and result.input.explored_form == "global-optimization"
    assert any("--compile-to=global-optimization" in s for s in result.input.steps)
    params = parameters(name, "ext.torch.mlir")
    assert all(c.ok for c in result.check(parameters=params))
    got = evaluate(result.best.mlir, load_npz(folder / "inputs.npz"), target=result.target, parameters=params)
    assert max_rel(got, load_npz(folder / "expected_torch.npz")) <= torch_tolerance(name)


@pytest.mark.parametrize("name", STATIC)
def test_the_input_phase_as_given(name: str) -> None:
    """``--from input``: IREE's async-ABI input phase explored without IREE's help (no IREE needed)."""
    folder = MODELS / name
    result = explore(folder / "ext.input.mlir", TARGET, start="input")
    assert result.input is not None and result.input.steps == [] and result.input.explored_form == "input"
    assert result.imported.function == "main$async"
    params = parameters(name, "ext.input.mlir")
    assert all(c.ok for c in result.check(parameters=params))
    got = evaluate(result.best.mlir, load_npz(folder / "inputs.npz"), target=result.target, parameters=params)
    assert max_rel(got, load_npz(folder / "expected_torch.npz")) <= torch_tolerance(name)


@needs_iree
@pytest.mark.parametrize("form", ["torch.mlir", "ext.torch.mlir"])
@pytest.mark.parametrize("name", STATIC)
def test_emitted_plan_keeps_the_abi_and_the_parameters(name: str, form: str) -> None:
    folder = MODELS / name
    ok, why = runnable_here(TARGET)
    result = explore(folder / form, TARGET, baseline=False)
    shell = abi_shell(result.module, result.imported.function)
    assert shell is not None and shell.function.name == "main$async" and shell.wrappers
    text = emit_iree(result.best.mlir, result.target, abi=shell)
    assert "util.func public @main(" in text and "hal.tensor.import wait(" in text
    if form.startswith("ext."):
        assert '#flow.parameter.named<"model"::' in text and "dense_resource" not in text
    vmfb = compile_module(text, data_tiling=False, target_cpu="haswell", compile_from="dispatch-creation")
    if not ok:
        pytest.skip(f"compiled only: {why}")
    params = [("model", folder / "params.irpa")] if form.startswith("ext.") else []
    got = run_module(vmfb, "main", load_npz(folder / "inputs.npz"), parameters=params)
    tol = 2e-3 if name.startswith("f16") else 1e-5
    assert max_rel(got, load_npz(folder / "expected_iree.npz")) <= tol


def test_torch_dialect_without_iree_names_the_command(monkeypatch: pytest.MonkeyPatch) -> None:
    import egg_dispatch.pipeline as pipeline

    monkeypatch.setattr(pipeline, "iree_compiler_available", lambda: False)
    path = MODELS / "gpt2_block" / "torch.mlir"
    with pytest.raises(UnsupportedInput, match=r"iree-compile .*torch\.mlir --compile-to=input"):
        explore(path, TARGET)
    result = explore(MODELS / "gpt2_block" / "input.mlir", TARGET)
    assert result.input is not None and result.input.explored_form == "input"
    assert any("IREE is not installed" in n for n in result.input.notes)


def test_cli_reports_the_input_form_and_checks_with_parameters(capsys: pytest.CaptureFixture[str]) -> None:
    import json

    from egg_dispatch.cli import main

    folder = MODELS / "int8_mlp"
    args = ["explore", str(folder / "ext.input.mlir"), "--from", "input", "--emit", "json", "--check"]
    assert main([*args, f"--parameters=model={folder / 'params.irpa'}"]) == 0
    captured = capsys.readouterr()
    data = json.loads(captured.out)
    assert data["input"]["form"] == "input" and data["input"]["notes"]
    assert "check ok: best" in captured.err and "no --parameters" not in captured.err
    assert main(args) == 0  # without the file: a deterministic fill, said once
    assert capsys.readouterr().err.count("no --parameters file given") == 1


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        ("other={irpa}", "no parameter file for scope 'model'"),
        ("model={bad}", "not a parameter file"),
        ("model=/nonexistent.irpa", "no such parameter file"),
    ],
)
def test_bad_parameter_files_are_input_errors(spec: str, message: str, tmp_path: Path, capsys) -> None:
    from egg_dispatch.cli import main

    bad = tmp_path / "weights.txt"
    bad.write_text("not parameters")
    folder = MODELS / "int8_mlp"
    np.save(tmp_path / "x.npy", load_npz(folder / "inputs.npz")[0])
    arg = spec.format(irpa=folder / "params.irpa", bad=bad)
    code = main(["run", str(folder / "ext.input.mlir"), "--input=@" + str(tmp_path / "x.npy"), f"--parameters={arg}"])
    assert code == 2
    err = capsys.readouterr().err
    assert message in err and "Traceback" not in err and len(err.strip().splitlines()) == 1
