"""Data-tile or not, per contraction (``rules/untile.egg``), end to end.

On an 8x8 matmul the plan ``explore`` chooses follows the target's numbers: with a profile whose plain
matmul is cheaper than mmt4d plus its packs, the plain ``linalg.matmul`` (no encoding left); with one whose
mmt4d is cheaper, the data-tiled plan. The profiles are the built-in AVX2 profile with only the peaks and
overheads changed. The chosen plan is then followed through every later stage: the plan graph and its
metrics, the emitted MLIR (ours, ``iree-opt``, ``iree-compile --compile-from=dispatch-creation`` of the
``--emit iree`` form, and a run when the host can), the NumPy evaluator, ``--explain`` and the report's
"rules that made the difference".
"""

from __future__ import annotations

import copy
import json
from importlib import resources

import numpy as np
import pytest

from egg_dispatch.cli import main
from egg_dispatch.emit.iree.module import emit_iree, iree_cpu, runnable_here
from egg_dispatch.evaluate import evaluate
from egg_dispatch.iree.tools import compile_module, iree_available, iree_opt_parses, run_module
from egg_dispatch.mlir.printer import print_mlir
from egg_dispatch.pipeline import explore
from egg_dispatch.result.explain import explain
from egg_dispatch.result.exploration import Exploration
from egg_dispatch.result.report import differences, text, to_json, untiled
from egg_dispatch.target.profile import Target, target_from_dict

MAPS = (
    "indexing_maps = [affine_map<(d0, d1, d2) -> (d0, d2)>, affine_map<(d0, d1, d2) -> (d2, d1)>, "
    "affine_map<(d0, d1, d2) -> (d0, d1)>]"
)


def matmul(name: str, m: int, n: int, k: int, suffix: str = "") -> str:
    return f"""
  %e{suffix} = tensor.empty() : tensor<{m}x{n}xf32>
  %f{suffix} = linalg.fill ins(%zero : f32) outs(%e{suffix} : tensor<{m}x{n}xf32>) -> tensor<{m}x{n}xf32>
  %{name} = linalg.matmul {MAPS} ins(%a{suffix}, %b{suffix} : tensor<{m}x{k}xf32>, tensor<{k}x{n}xf32>)
      outs(%f{suffix} : tensor<{m}x{n}xf32>) -> tensor<{m}x{n}xf32>"""


TINY = f"""func.func @tiny(%a: tensor<8x8xf32>, %b: tensor<8x8xf32>) -> tensor<8x8xf32> {{
  %zero = arith.constant 0.0 : f32{matmul("r", 8, 8, 8)}
  return %r : tensor<8x8xf32>
}}
"""

MIXED = f"""func.func @mixed(%a0: tensor<8x8xf32>, %b0: tensor<8x8xf32>, %a1: tensor<256x256xf32>,
    %b1: tensor<256x256xf32>) -> (tensor<8x8xf32>, tensor<256x256xf32>) {{
  %zero = arith.constant 0.0 : f32{matmul("small", 8, 8, 8, "0")}{matmul("large", 256, 256, 256, "1")}
  return %small, %large : tensor<8x8xf32>, tensor<256x256xf32>
}}
"""


def builtin(name: str) -> dict:
    return json.loads((resources.files("egg_dispatch.target") / "profiles" / f"{name}.json").read_text())


def profile(mmt4d: float, matmul_peak: float, overhead_us: float = 5.0, name: str = "x86_64-avx2") -> Target:
    """The built-in profile with only its peaks (GFLOP/s, every element type) and launch overhead changed."""
    data = copy.deepcopy(builtin(name))
    data["mmt4d_peak_gflops"] = {k: mmt4d for k in data["mmt4d_peak_gflops"]}
    data["matmul_peak_gflops"] = {k: matmul_peak for k in data["matmul_peak_gflops"]}
    data["dispatch_overhead_us"] = overhead_us
    return target_from_dict(data, f"{name} (test peaks)")


PLAIN_CHEAPER = profile(mmt4d=1.0, matmul_peak=1000.0)
"""mmt4d at 1 GFLOP/s, a plain matmul at 1 TFLOP/s: dropping data tiling wins at any size."""
MMT4D_CHEAPER = profile(mmt4d=1000.0, matmul_peak=0.01)
"""mmt4d at 1 TFLOP/s, a plain matmul at 10 MFLOP/s: 0.1 ms for the 8x8 matmul, far above its packs."""


def encoded_ops(e: Exploration) -> list[str]:
    return [op.name for op in e.best.mlir.walk() if op.name.startswith("iree_encoding")]


def contraction_types(e: Exploration) -> list[list[tuple[tuple[int, ...], bool]]]:
    """(shape, encoded) of every operand and the result of each linalg.matmul of the chosen plan."""
    return [
        [(v.type.shape, v.type.encoding is not None) for v in (*op.operands, *op.results)]  # type: ignore[attr-defined]
        for op in e.best.mlir.walk()
        if op.name == "linalg.matmul"
    ]


PLAIN_8X8 = [((8, 8), False)] * 4


@pytest.fixture(scope="module")
def plain() -> Exploration:
    return explore(TINY, PLAIN_CHEAPER, start="input")


@pytest.fixture(scope="module")
def tiled() -> Exploration:
    return explore(TINY, MMT4D_CHEAPER, start="input")


def test_plain_matmul_chosen_when_it_is_cheaper(plain: Exploration) -> None:
    assert encoded_ops(plain) == []
    assert contraction_types(plain) == [PLAIN_8X8]
    assert untiled(plain.data, plain.best.choice)
    assert [d.ops for d in plain.best.plan.dispatches] == [["Fill", "Contract"]]
    assert plain.saturation.matches.get("untile-contraction", 0) >= 1
    # priced at the plain-matmul rate: 2*8^3 flop at 1000 GFLOP/s, plus the bytes it moves, plus the fill
    bw = PLAIN_CHEAPER.memory_bandwidth_gbps * 1e9
    kernel = 1024 / 1000e9 + 4 * 256 / bw + 256 / bw
    assert plain.best.plan.dispatches[0].flops_seconds == pytest.approx(kernel)
    # IREE keeps data tiling on: the modelled baseline is the data-tiled plan
    assert plain.baseline is not None
    assert any(op.name == "iree_encoding.unset_encoding" for op in plain.baseline.mlir.walk())
    assert not untiled(plain.data, plain.baseline.choice)
    assert plain.best.metrics.objective < plain.baseline.metrics.objective


def test_data_tiled_plan_chosen_when_mmt4d_is_cheaper(tiled: Exploration) -> None:
    assert "iree_encoding.set_encoding" in encoded_ops(tiled) and "iree_encoding.unset_encoding" in encoded_ops(tiled)
    assert not untiled(tiled.data, tiled.best.choice)
    assert contraction_types(tiled) == [[((8, 8), True)] * 4]
    # the plain alternative is held, and is dearer
    assert tiled.saturation.matches.get("untile-contraction", 0) >= 1
    assert "held     data tiling dropped (plain linalg.matmul)" in explain(tiled)


def test_each_contraction_decides_for_itself() -> None:
    """With the built-in AVX2 numbers the 8x8 matmul drops data tiling and the 256^3 one keeps it."""
    e = explore(MIXED, "x86_64-avx2", start="input")
    types = contraction_types(e)
    assert len(types) == 2
    assert sorted(types) == sorted([PLAIN_8X8, [((256, 256), True)] * 4])
    assert len(untiled(e.data, e.best.choice)) == 1
    why = explain(e)
    assert "- linalg.matmul #1: chosen data tiling dropped (plain linalg.matmul)" in why
    assert "- linalg.matmul #2: chosen data-tiled (mmt4d)" in why
    assert all(r.ok for r in e.check())


@pytest.mark.parametrize("which", ["plain", "tiled"])
def test_evaluator_runs_the_chosen_plan(which: str, request: pytest.FixtureRequest) -> None:
    e: Exploration = request.getfixturevalue(which)
    rng = np.random.default_rng(11)
    a, b = (rng.integers(-8, 8, (8, 8)).astype(np.float32) / 8 for _ in range(2))
    (got,) = evaluate(e.best.mlir, [a, b], target=e.target)
    np.testing.assert_array_equal(got, a @ b)
    assert all(r.ok for r in e.check())


def test_explain_lists_the_alternative(plain: Exploration) -> None:
    why = explain(plain)
    assert "data tiling per contraction (untile):" in why
    assert "- linalg.matmul #1: chosen data tiling dropped (plain linalg.matmul)" in why
    assert "held     data-tiled (mmt4d)" in why
    assert "chosen   none: data tiling dropped for this contraction (see below)" in why


def test_explain_gives_the_refused_condition() -> None:
    """Without untile the plain alternative is not held; with untile on an input whose LHS is encoded by no
    set_encoding, condition 1 is named."""
    e = explore(TINY, PLAIN_CHEAPER, start="input", families=("hoist",))
    assert "data tiling per contraction" not in explain(e)
    encodings = "".join(
        f"#e{i} = #iree_encoding.encoding<operand_index = {i} : index, op_type = matmul, element_types = "
        "[f32, f32, f32], user_indexing_maps = [#map, #map1, #map2], iteration_sizes = [8, 8, 8]>\n"
        for i in range(3)
    )
    src = """#map = affine_map<(d0, d1, d2) -> (d0, d2)>
#map1 = affine_map<(d0, d1, d2) -> (d1, d2)>
#map2 = affine_map<(d0, d1, d2) -> (d0, d1)>
ENCODINGS
func.func @encoded_lhs(%a: tensor<8x8xf32, #e0>, %b: tensor<8x8xf32>) -> tensor<8x8xf32> {
  %0 = flow.dispatch.region -> (tensor<8x8xf32>) {
    %sb = iree_encoding.set_encoding %b : tensor<8x8xf32> -> tensor<8x8xf32, #e1>
    %z = arith.constant 0.0 : f32
    %e = tensor.empty() : tensor<8x8xf32, #e2>
    %f = linalg.fill ins(%z : f32) outs(%e : tensor<8x8xf32, #e2>) -> tensor<8x8xf32, #e2>
    %m = linalg.matmul indexing_maps = [#map, #map1, #map2] ins(%a, %sb : tensor<8x8xf32, #e0>,
        tensor<8x8xf32, #e1>) outs(%f : tensor<8x8xf32, #e2>) -> tensor<8x8xf32, #e2>
    %u = iree_encoding.unset_encoding %m : tensor<8x8xf32, #e2> -> tensor<8x8xf32>
    flow.return %u : tensor<8x8xf32>
  }
  func.return %0 : tensor<8x8xf32>
}
""".replace("ENCODINGS\n", encodings)
    e = explore(src, PLAIN_CHEAPER, start="input", baseline=False)
    assert "data-tiled; refused  untile: 1. the LHS is encoded by no set_encoding" in explain(e)


def test_report_names_the_rule(plain: Exploration, tiled: Exploration) -> None:
    assert "+ untile: data tiling dropped: a plain contraction (no pack, no mmt4d)" in differences(plain)
    report = text(plain)
    assert "rules that made the difference:\n  + untile:" in report
    assert not any("noop" in d for d in differences(plain))  # no encoding left, but not an identity layout
    assert not any("untile" in d for d in differences(tiled))
    assert to_json(plain)["egraph"]["rule_matches"]["untile-contraction"] >= 1


def test_cli_explain(capsys: pytest.CaptureFixture[str], tmp_path) -> None:
    src = tmp_path / "tiny.mlir"
    src.write_text(TINY)
    prof = tmp_path / "plain.json"
    data = copy.deepcopy(builtin("x86_64-avx2"))
    data["mmt4d_peak_gflops"] = {k: 1.0 for k in data["mmt4d_peak_gflops"]}
    data["matmul_peak_gflops"] = {k: 1000.0 for k in data["matmul_peak_gflops"]}
    prof.write_text(json.dumps(data))
    assert main(["explore", str(src), "--target-file", str(prof), "--from", "input", "--explain"]) == 0
    out = capsys.readouterr().out
    assert "chosen plan: dispatch{linalg.fill, linalg.matmul}" in out
    assert "+ untile: data tiling dropped" in out
    assert "chosen data tiling dropped (plain linalg.matmul)" in out


@pytest.mark.slow
@pytest.mark.skipif(not iree_available(), reason="IREE not installed (egg-dispatch[iree])")
@pytest.mark.parametrize("program", ["tiny", "mixed"])
@pytest.mark.parametrize("materialize", [False, True])
def test_iree_accepts_and_compiles_the_plain_plan(program: str, materialize: bool) -> None:
    """Our MLIR (flow.dispatch.region form) parses with iree-opt; the --emit iree form compiles with
    iree-compile --compile-from=dispatch-creation (also with the other contraction's encodings spelled as
    pack / mmt4d / unpack) and, where the host can run it, computes the input's numbers."""
    e = (
        explore(TINY, PLAIN_CHEAPER, start="input")
        if program == "tiny"
        else explore(MIXED, "x86_64-avx2", start="input")
    )
    assert untiled(e.data, e.best.choice)
    ok, err = iree_opt_parses(print_mlir(e.best.mlir))
    assert ok, err
    text_ = emit_iree(e.best.mlir, e.target, materialize=materialize)
    ok, err = iree_opt_parses(text_)
    assert ok, err
    vmfb = compile_module(
        text_, data_tiling=False, target_cpu=iree_cpu("x86_64-avx2").cpu, compile_from="dispatch-creation"
    )
    if not runnable_here("x86_64-avx2")[0]:
        return
    rng = np.random.default_rng(3)
    shapes = [(8, 8), (8, 8)] if program == "tiny" else [(8, 8), (8, 8), (256, 256), (256, 256)]
    inputs = [(rng.integers(-8, 8, s) / 8).astype(np.float32) for s in shapes]
    got = run_module(vmfb, e.imported.function, inputs)
    want = evaluate(e.module, inputs)
    for a, b in zip(got, want, strict=True):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-5)
