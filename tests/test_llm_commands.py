"""Every command on the transformers fixtures, and a wrong parameter file in every command (issue 53).

- Bad input: a parameter file that lacks a key the model declares, or holds it with another shape, is
  one line naming the file, the key and the type the module expects (exit 2, no traceback), in every
  command that takes ``--parameters``, before any work starts (``Parameters.validate``). The bad files
  are written here from ``hf_llama``'s ``params.irpa`` the way iree-turbine writes one (IREE's runtime
  ``ParameterIndex``, each entry with its ``PYTORCH:{"dtype", "shape"}`` metadata).
- Point 1: ``explore --check --parameters``, ``check`` and ``run`` on the file a user has (``torch.mlir``)
  of every transformers fixture (the six ``hf_*`` prefills, ``hf_llama_dyn`` with a dynamic sequence length
  and the ``llama_decode`` step); ``run``'s numbers are compared with what IREE recorded for the fixture's
  inputs (``expected_iree.npz``, or ``expected_iree_s<N>.npz`` at each recorded length: IREE compiled the
  same program and ran it with the same ``params.irpa``). ``explore`` here extracts greedily
  (``--time-limit 0``) and skips the compile check to stay cheap; ``iree-baseline``, ``bench``, ``tune``
  and ``explore --emit iree`` compiled and run against ``expected_iree`` are run on every fixture by
  ``benchmarks/bench_llm_commands.py`` (a minute or more per fixture), ``iree-baseline`` here on one.
- A size the size analysis does not see through (``arith.minsi`` of a size, as torch-mlir clamps a slice's
  end on a dynamic dim; a length read from an argument's data) is a dynamic size, not a refusal: the plan
  computes it with clones of the input's ops, on the host in IREE's form (``flow.tensor.load``), and gives
  the input's numbers (the evaluator) and IREE's (compiled) at three sizes.
- ``bench`` (and ``tune``) of a dynamic program draw their inputs at the sizes ``explore`` prices and
  measures at (an internal error before).
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import numpy as np
import pytest

from egg_dispatch.cli import build_parser, main

MODELS = Path(__file__).parent / "fixtures" / "models"
TRANSFORMERS = ("hf_llama", "hf_qwen2", "hf_gpt2", "hf_bert", "hf_phi3", "hf_gemma2", "hf_llama_dyn", "llama_decode")
"""The transformers fixtures of the suite: prefills of transformers' own classes (``hf_llama_dyn``: the Llama
exported with a dynamic sequence length, recorded at three) and a decode step."""
WITH_PARAMETERS = ("explore", "iree-baseline", "bench", "tune", "check", "run")
TOLERANCE = 1e-4
"""Max |ours - IREE's| / max |IREE's| over an output: the bound the fixtures' IREE-vs-torch outputs meet
(tests/test_model_fixtures.py); the evaluator computes in f32 with another summation order."""
LLAMA = MODELS / "hf_llama"
MISSING_KEY = "model.model.layers.1.self_attn.q_proj.weight"  # tensor<64x64xf32> in the module
SHAPE_KEY = "model.model.layers.0.self_attn.k_proj.weight"  # tensor<32x64xf32> (2 KV heads of 16)
TYPE_KEY = "model.model.norm.weight"  # tensor<64xf32>

try:
    import iree.runtime as ireert
except ImportError:  # pragma: no cover - the test extra installs it
    ireert = None

needs_iree = pytest.mark.skipif(ireert is None, reason="iree.runtime not installed (egg-dispatch[iree])")


def _load_npz(path: Path, prefix: str) -> list[np.ndarray]:
    with np.load(path) as z:
        return [z[k] for k in sorted(z.files, key=lambda k: int(k[len(prefix) :]))]


def _rewrite_irpa(out: Path, *, drop: str | None = None, halve: str | None = None, retype: str | None = None) -> Path:
    """``hf_llama``'s parameter file with ``drop`` left out, ``halve`` written with half its rows (data and
    recorded shape agree, as an export of another config would), or ``retype`` recorded as float16."""
    assert ireert is not None
    src = ireert.ParameterIndex()
    src.load(str(LLAMA / "params.irpa"))
    dst = ireert.ParameterIndex()
    found = set()
    for key, entry in src.items():
        data = ireert.parameter_index_entry_as_numpy_flat_ndarray(entry).tobytes()
        raw = bytes(entry.metadata)
        assert raw.startswith(b"PYTORCH:")
        meta = json.loads(raw[len(b"PYTORCH:") :])
        if key == drop:
            found.add(key)
            continue
        if key == halve:
            found.add(key)
            rows, cols = meta["shape"]
            meta["shape"] = [rows // 2, cols]
            data = data[: len(data) // 2]
        if key == retype:
            found.add(key)
            meta["dtype"] = "float16"
        dst.add_buffer(key, data, metadata="PYTORCH:" + json.dumps(meta))
    assert found == {k for k in (drop, halve, retype) if k is not None}
    dst.create_archive_file(str(out))
    return out


def _argv(command: str, file: Path, params: Path, tmp_path: Path) -> list[str]:
    argv = [command, str(file), f"--parameters=model={params}"]
    if command == "run":
        (ids,) = _load_npz(file.parent / "inputs.npz", "arg")
        np.save(tmp_path / "ids.npy", ids)
        argv.append(f"--input=@{tmp_path / 'ids.npy'}")
    return argv


def test_these_are_the_commands_that_take_parameters() -> None:
    """The list the tests below run is every command with ``--parameters``: a command that gains the flag
    must also check the file up front (``parameters_from_args(args, program)``) and be added here."""
    sub = next(a for a in build_parser()._actions if isinstance(a, argparse._SubParsersAction))
    taking = {name for name, p in sub.choices.items() if any("--parameters" in a.option_strings for a in p._actions)}
    assert taking == set(WITH_PARAMETERS)


@needs_iree
@pytest.mark.parametrize("command", WITH_PARAMETERS)
@pytest.mark.parametrize(
    ("kind", "key", "says"),
    [
        ("missing", MISSING_KEY, f"no parameter '{MISSING_KEY}' (expected tensor<64x64xf32>)"),
        ("shape", SHAPE_KEY, f"parameter '{SHAPE_KEY}' has shape [16, 64], the module expects tensor<32x64xf32>"),
    ],
    ids=("missing", "shape"),
)
def test_a_wrong_parameter_file_is_one_error_naming_file_key_and_type(
    command: str, kind: str, key: str, says: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Before: ``explore`` and ``iree-baseline`` (without ``--check``) exited 0 with the file unread;
    ``bench`` and ``tune`` exited 2 only after exploring and compiling, the error at a line of IREE's
    SetEncoding output; ``check`` and ``run`` said it without a location. Now every command stops first,
    with one line at the declaration in the user's file."""
    bad = tmp_path / f"{kind}.irpa"
    if kind == "missing":
        _rewrite_irpa(bad, drop=key)
    else:
        _rewrite_irpa(bad, halve=key)
    code = main(_argv(command, LLAMA / "input.mlir", bad, tmp_path))
    out, err = capsys.readouterr()
    assert code == 2, err
    lines = err.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in err, err
    assert f"{LLAMA / 'input.mlir'}:" in lines[0] and ": error: " in lines[0]
    assert f"{bad}: {says}" in lines[0], lines[0]
    assert out == ""


@needs_iree
def test_a_parameter_recorded_with_another_element_type_is_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Same size in bytes is not enough where the file records the dtype: f16 data read as f32 would be
    garbage numbers, not an error."""
    bad = _rewrite_irpa(tmp_path / "type.irpa", retype=TYPE_KEY)
    assert main(_argv("check", LLAMA / "torch.mlir", bad, tmp_path)) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1
    assert err.startswith(f"{LLAMA / 'torch.mlir'}:")  # the user's file, not IREE's lowering of it
    assert f"{bad}: parameter '{TYPE_KEY}' has element type f16, the module expects tensor<64xf32>" in err


def test_the_right_file_passes_validation_and_stand_ins_need_none() -> None:
    from egg_dispatch.evaluate.parameters import ParameterFile, Parameters, declared_parameters
    from egg_dispatch.mlir.parser import parse_file

    module = parse_file(LLAMA / "torch.mlir")
    declared = declared_parameters(module)
    assert len(declared) == 21 and declared[("model", MISSING_KEY)].type.shape == (64, 64)
    Parameters().validate(module)  # no file: stand-in values, nothing to check
    if ireert is not None:
        Parameters([ParameterFile(LLAMA / "params.irpa", "model")]).validate(module)


# ------------------------------------------------------------------------- every fixture, cheap commands


@pytest.mark.slow  # 2-9 s each: IREE lowers the export, dispatch creation, the e-graph, two evaluations
@needs_iree
@pytest.mark.parametrize("name", TRANSFORMERS)
def test_explore_check_and_run_on_a_transformers_fixture(
    name: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    folder = MODELS / name
    torch_mlir, params = folder / "torch.mlir", folder / "params.irpa"
    argv = ["explore", str(torch_mlir), "--check", f"--parameters=model={params}", "--time-limit", "0"]
    code = main([*argv, "--no-compile-check", "--target", "x86_64-avx2"])
    err = capsys.readouterr().err
    assert code == 0, err
    assert "check ok: best" in err and "MISMATCH" not in err and "no --parameters" not in err

    code = main(["check", str(torch_mlir), f"--parameters=model={params}", "--target", "x86_64-avx2"])
    out, err = capsys.readouterr()
    assert code == 0, err + out

    for tag in _recorded(folder):  # "" (inputs.npz), or each length of a dynamic export (_s8 ...)
        inputs = _load_npz(folder / f"inputs{tag}.npz", "arg")
        want = _load_npz(folder / f"expected_iree{tag}.npz", "out")
        argv = ["run", str(torch_mlir), f"--parameters=model={params}"]
        for i, x in enumerate(inputs):
            np.save(tmp_path / f"arg{i}.npy", x)
            argv.append(f"--input=@{tmp_path / f'arg{i}.npy'}")
        outs = [tmp_path / f"out{tag}{i}.npy" for i in range(len(want))]
        code = main([*argv, *(f"--output=@{o}" for o in outs)])
        err = capsys.readouterr().err
        assert code == 0, err
        for o, w in zip(outs, want, strict=True):
            got = np.load(o)
            assert got.shape == w.shape and got.dtype == w.dtype
            assert np.abs(got.astype(np.float64) - w).max() <= TOLERANCE * np.abs(w).max(), (name, o.name)


def _recorded(folder: Path) -> list[str]:
    """The suffixes of a fixture's recorded inputs: ``""`` for ``inputs.npz``, else each ``_s<N>`` of
    ``inputs_s<N>.npz`` (a dynamic export, recorded at several lengths)."""
    if (folder / "inputs.npz").is_file():
        return [""]
    tags = sorted(p.stem.removeprefix("inputs") for p in folder.glob("inputs_s*.npz"))
    assert len(tags) >= 3, folder  # the export's length and two more
    return tags


@pytest.mark.slow  # IREE's plan compiled and imported; ours explored with the ILP
@needs_iree
def test_iree_baseline_checks_the_decode_step_with_its_parameters(capsys: pytest.CaptureFixture[str]) -> None:
    """IREE's own plan of the decode step read, costed and evaluated with the recorded parameters."""
    folder = MODELS / "llama_decode"
    argv = ["iree-baseline", str(folder / "torch.mlir"), "--check", f"--parameters=model={folder / 'params.irpa'}"]
    code = main([*argv, "--target", "x86_64-avx2"])
    out, err = capsys.readouterr()
    assert code == 0, err
    assert "IREE 3.13, real (imported)" in out
    assert "check ok: IREE 3.13, real (imported)" in err and "MISMATCH" not in err


# ------------------------------------------------------------------ sizes the size analysis does not see through

_SIZED_MATMUL = """
  %s = tensor.extract_slice %x[0, 0] [%n, 32] [1, 1] : tensor<?x32xf32> to tensor<?x32xf32>
  %e = tensor.empty(%n) : tensor<?x32xf32>
  %zero = arith.constant 0.0 : f32
  %f = linalg.fill ins(%zero : f32) outs(%e : tensor<?x32xf32>) -> tensor<?x32xf32>
  %m = linalg.matmul ins(%s, %w : tensor<?x32xf32>, tensor<32x32xf32>) outs(%f : tensor<?x32xf32>) -> tensor<?x32xf32>
  util.return %m : tensor<?x32xf32>
}
"""
SIZED = {
    # torch-mlir clamps a slice's end with arith.minsi (x[:, :k] on a dynamic dim): not an affine size
    "clamped": """util.func public @f(%x: tensor<?x32xf32>, %w: tensor<32x32xf32>) -> tensor<?x32xf32> {
  %c0 = arith.constant 0 : index
  %c8 = arith.constant 8 : index
  %d = tensor.dim %x, %c0 : tensor<?x32xf32>
  %n = arith.minsi %d, %c8 : index"""
    + _SIZED_MATMUL,
    # a length passed as data (a 1-element tensor), as a decode step's position can be
    "read": """util.func public @f(%x: tensor<?x32xf32>, %w: tensor<32x32xf32>, %t: tensor<1xi64>) -> tensor<?x32xf32> {
  %c0 = arith.constant 0 : index
  %v = tensor.extract %t[%c0] : tensor<1xi64>
  %n = arith.index_cast %v : i64 to index"""
    + _SIZED_MATMUL,
}
ROWS = (3, 8, 12)
"""Rows of %x: below, at and above the clamp of 8; the length read is min(rows, 5)."""


def _sized_inputs(name: str, rows: int) -> list[np.ndarray]:
    rng = np.random.default_rng(rows)
    x = rng.standard_normal((rows, 32)).astype(np.float32)
    w = rng.standard_normal((32, 32)).astype(np.float32)
    return [x, w] + ([np.array([min(rows, 5)], np.int64)] if name == "read" else [])


@pytest.mark.parametrize("name", SIZED)
def test_a_size_the_analysis_does_not_see_through_is_still_a_dynamic_size(
    name: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Before: exit 2, "a plan of @f needs the size %n, which a arith.minsi gives: the model cannot compute
    it from the function's arguments" (a tensor.extract for the other). Now the ops that give the size are
    cloned into the plan, and the plan computes the input's numbers at every size."""
    from egg_dispatch.evaluate import evaluate
    from egg_dispatch.mlir.parser import parse_file

    src, plan = tmp_path / f"{name}.mlir", tmp_path / f"{name}.plan.mlir"
    src.write_text(SIZED[name])
    argv = ["explore", str(src), "--from", "input", "--emit", "mlir", "-o", str(plan), "--target", "x86_64-avx2"]
    code = main([*argv, "--no-compile-check"])
    err = capsys.readouterr().err
    assert code == 0, err
    text = plan.read_text()
    assert ("arith.minsi" if name == "clamped" else "tensor.extract %arg2") in text
    for rows in ROWS:
        inputs = _sized_inputs(name, rows)
        (want,) = evaluate(parse_file(src), inputs)
        (got,) = evaluate(parse_file(plan), inputs)
        assert got.shape == want.shape == (min(rows, 8 if name == "clamped" else 5), 32)
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)


@pytest.mark.slow  # IREE compiles the input and two plans
@needs_iree
@pytest.mark.parametrize("name", SIZED)
def test_the_iree_form_of_such_a_plan_compiles_and_matches_iree(name: str, tmp_path: Path) -> None:
    """``--emit iree`` from IREE's own start (``--from auto``) and from the input: the size is host code
    (``arith.minsi``; ``flow.tensor.load`` of the argument), not a dispatch returning an ``index`` (which
    IREE refuses: "index types must not cross the dispatch boundary"); the plan runs and gives IREE's
    numbers on three sizes."""
    from egg_dispatch.emit.iree.module import runnable_here
    from egg_dispatch.iree.tools import compile_module, run_module
    from egg_dispatch.target.profile import load_target

    runs, why = runnable_here(load_target("x86_64-avx2"))
    src = tmp_path / f"{name}.mlir"
    src.write_text(SIZED[name])
    reference = compile_module(src, data_tiling=True, target_cpu="haswell") if runs else b""
    for start in ("auto", "input"):
        plan = tmp_path / f"{name}.{start}.plan.mlir"
        argv = ["explore", str(src), "--from", start, "--emit", "iree", "-o", str(plan), "--target", "x86_64-avx2"]
        assert main(argv) == 0
        text = plan.read_text()
        assert "tensor<index>" not in text and ("flow.tensor.load" in text) == (name == "read")
        vmfb = compile_module(text, data_tiling=False, target_cpu="haswell", compile_from="dispatch-creation")
        if not runs:
            pytest.skip(f"compiled; not run here: {why}")
        for rows in ROWS:
            inputs = _sized_inputs(name, rows)
            (want,) = run_module(reference, "f", inputs)
            (got,) = run_module(vmfb, "f", inputs)
            assert got.shape == want.shape
            np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)


RESHAPED = """util.func public @f(%x: tensor<?x32xf32>, %w: tensor<16x16xf32>) -> tensor<?x16xf32> {
  %c0 = arith.constant 0 : index
  %d = tensor.dim %x, %c0 : tensor<?x32xf32>
  %di = arith.index_cast %d : index to i64
  %c2 = arith.constant 2 : i64
  %c16 = arith.constant 16 : i64
  %n = arith.muli %di, %c2 : i64
  %shape = tensor.from_elements %n, %c16 : tensor<2xi64>
  %r = tensor.reshape %x(%shape) : (tensor<?x32xf32>, tensor<2xi64>) -> tensor<?x16xf32>
  %ni = arith.index_cast %n : i64 to index
  %e = tensor.empty(%ni) : tensor<?x16xf32>
  %zero = arith.constant 0.0 : f32
  %f = linalg.fill ins(%zero : f32) outs(%e : tensor<?x16xf32>) -> tensor<?x16xf32>
  %m = linalg.matmul ins(%r, %w : tensor<?x16xf32>, tensor<16x16xf32>) outs(%f : tensor<?x16xf32>) -> tensor<?x16xf32>
  util.return %m : tensor<?x16xf32>
}
"""
"""torch-mlir's ``view`` of a dynamic dim (hf_llama_dyn's head split): ``tensor.reshape`` to the sizes a
``tensor.from_elements`` of ``i64`` sizes holds, here ``[2 * rows, 16]``."""


def _reshaped_inputs(rows: int) -> list[np.ndarray]:
    rng = np.random.default_rng(rows)
    return [rng.standard_normal((rows, 32)).astype(np.float32), rng.standard_normal((16, 16)).astype(np.float32)]


def test_a_reshape_to_a_shape_tensor_is_read_sized_evaluated_and_explored(tmp_path: Path) -> None:
    """Before: ``tensor.reshape`` and ``tensor.from_elements`` were opaque ops (not evaluated; the reshape's
    size unknown), and a plan needing that size was refused (exit 2, "a plan of @main$async needs the size
    %reshape_11.d1, which a tensor.reshape gives" on hf_llama_dyn). Now both are read, printed and
    evaluated, the size is ``2 * arg0.d0``, and explore converts the reshape as IREE does
    (``flow.tensor.reshape``, start.tensor_to_flow), whose plan computes the input's numbers."""
    from egg_dispatch.evaluate import evaluate
    from egg_dispatch.mlir.parser import parse_file, parse_mlir
    from egg_dispatch.mlir.printer import print_mlir
    from egg_dispatch.mlir.shapes import function_shapes
    from egg_dispatch.start.tensor_to_flow import flow_reshapes

    module = parse_mlir(RESHAPED, "<reshaped>")
    printed = print_mlir(module)
    assert "tensor.reshape %x(%shape) : (tensor<?x32xf32>, tensor<2xi64>) -> tensor<?x16xf32>\n" in printed
    assert "tensor.from_elements %n, %c16 : tensor<2xi64>\n" in printed
    func = module.function()
    reshape = next(op for op in func.walk() if op.name == "tensor.reshape")
    assert str(function_shapes(func).shape(reshape.result)[0]) == "2*arg0.d0"
    converted = parse_mlir(RESHAPED, "<reshaped>")
    assert flow_reshapes(converted) == 1
    text = print_mlir(converted)
    assert "flow.tensor.reshape %x : tensor<?x32xf32>{%r_src0} -> tensor<?x16xf32>{%r_d0}" in text
    assert " tensor.reshape" not in text and "tensor.from_elements" not in text  # the shape was only its
    src, plan = tmp_path / "reshaped.mlir", tmp_path / "plan.mlir"
    src.write_text(RESHAPED)
    argv = ["explore", str(src), "--from", "input", "--emit", "mlir", "-o", str(plan), "--target", "x86_64-avx2"]
    assert main([*argv, "--no-compile-check"]) == 0
    for rows in ROWS:
        x, w = _reshaped_inputs(rows)
        want = x.reshape(2 * rows, 16) @ w
        for program in (module, converted, parse_file(plan)):
            (got,) = evaluate(program, [x, w])
            np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)


@pytest.mark.slow  # IREE compiles the input and the plan
@needs_iree
def test_the_iree_plan_of_a_reshape_to_a_shape_tensor_matches_iree(tmp_path: Path) -> None:
    """From IREE's own start state (``tensor.reshape`` between dispatches, as hf_llama_dyn's): the plan in
    IREE's form compiles and gives IREE's numbers at three sizes."""
    from egg_dispatch.emit.iree.module import runnable_here
    from egg_dispatch.iree.tools import compile_module, run_module
    from egg_dispatch.target.profile import load_target

    runs, why = runnable_here(load_target("x86_64-avx2"))
    src, plan = tmp_path / "reshaped.mlir", tmp_path / "plan.mlir"
    src.write_text(RESHAPED)
    argv = ["explore", str(src), "--emit", "iree", "-o", str(plan), "--target", "x86_64-avx2", "--no-compile-check"]
    assert main(argv) == 0
    text = plan.read_text()
    assert "flow.tensor.reshape" in text and " tensor.reshape" not in text
    vmfb = compile_module(text, data_tiling=False, target_cpu="haswell", compile_from="dispatch-creation")
    if not runs:
        pytest.skip(f"compiled; not run here: {why}")
    reference = compile_module(src, data_tiling=True, target_cpu="haswell")
    for rows in ROWS:
        inputs = _reshaped_inputs(rows)
        (want,) = run_module(reference, "f", inputs)
        (got,) = run_module(vmfb, "f", inputs)
        assert got.shape == want.shape == (2 * rows, 16)
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)


def test_flow_tensor_load_is_read_printed_and_evaluated() -> None:
    """IREE's host read, as IREE prints it in its own plan (no ``[]`` for a 0-d tensor)."""
    from egg_dispatch.evaluate import evaluate
    from egg_dispatch.mlir.parser import parse_mlir
    from egg_dispatch.mlir.printer import print_mlir

    text = (
        "util.func public @g(%a: tensor<?x4xi64>, %b: tensor<i64>, %i: index) -> (i64, i64) {\n"
        "  %c0 = arith.constant 0 : index\n"
        "  %d = tensor.dim %a, %c0 : tensor<?x4xi64>\n"
        "  %v = flow.tensor.load %a[%i, %i] : tensor<?x4xi64>{%d}\n"
        "  %w = flow.tensor.load %b : tensor<i64>\n"
        "  util.return %v, %w : i64, i64\n}\n"
    )
    module = parse_mlir(text, "<load>")
    printed = print_mlir(module)
    assert "flow.tensor.load %a[%i, %i] : tensor<?x4xi64>{%d}\n" in printed
    assert "flow.tensor.load %b : tensor<i64>\n" in printed
    assert print_mlir(parse_mlir(printed, "<again>")) == printed
    v, w = evaluate(module, [np.arange(12).reshape(3, 4), np.array(7), np.array(2)])
    assert int(v) == 10 and int(w) == 7


@pytest.mark.slow  # IREE compiles two plans; both timed once
@needs_iree
def test_bench_times_a_dynamic_program_at_the_sizes_it_is_priced_at(capsys: pytest.CaptureFixture[str]) -> None:
    """Before: "internal error: TypeError: unsupported operand type(s) for *: 'int' and 'NoneType'" (the
    random inputs were drawn at the declared shape, ``?`` included), in ``bench`` and ``tune``. Now they
    are drawn at the sizes ``explore --measure`` times (the heaviest priced), and the report says which."""
    from egg_dispatch.emit.iree.module import runnable_here
    from egg_dispatch.target.profile import load_target

    if not runnable_here(load_target("x86_64-avx2"))[0]:
        pytest.skip("this host cannot run x86_64-avx2 code")
    path = MODELS / "mlp_dyn" / "torch.mlir"
    code = main(["bench", str(path), "--target", "x86_64-avx2", "--min-time", "0.01", "--repeats", "1"])
    out, err = capsys.readouterr()
    assert code == 0, err
    assert "note: timed at arg0.d1=" in out and "ours: best" in out
