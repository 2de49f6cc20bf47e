"""``tune``'s verdicts and what feeds them, without timing anything (issue 52, points 2 and 4).

- ``measure.differential``: which dispatches two plans share, from made-up flow-phase text and profiles
  (numbers worked by hand);
- ``tune.distinct_plans``: plans the model prices identically are one candidate;
- ``tune.decide``: the verdict chooses the plan, and the whole call must confirm a faster one;
- the JSON and text reports carry the verdict, its interval and the dispatches behind it;
- ``measure.stand_in``: a model with named parameters runs under IREE without ``--parameters`` on the
  evaluator's stand-in values, and ``--parameters`` reaches IREE's tools as ``--parameters=scope=FILE``.

The interval arithmetic and the stopping rule are tests/test_measure_stats.py's.
"""

from __future__ import annotations

import subprocess
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest

from egg_dispatch.iree.profiling import DispatchTimes
from egg_dispatch.iree.tools import iree_available
from egg_dispatch.measure.differential import executable_keys, per_call, profile_key, relative_gain, unshared
from egg_dispatch.measure.stats import Comparison, StopRule
from egg_dispatch.measure.tune import TuneCandidate, TuneReport, decide, distinct_plans, priced_key
from egg_dispatch.plan.graph import DispatchInfo

FIXTURES = Path(__file__).parent / "fixtures"
needs_iree = pytest.mark.skipif(not iree_available(), reason="IREE (iree-base-compiler) not installed")


def _executable(name: str, export: str, body: str) -> str:
    return f"""  flow.executable private @{name} {{
    flow.executable.export public @{export} workgroups() -> (index, index, index) {{
      %x, %y, %z = iree_tensor_ext.dispatch.workgroup_count_from_slice()
      flow.return %x, %y, %z : index, index, index
    }}
    builtin.module {{
      func.func @{export}(%arg0: !iree_tensor_ext.dispatch.tensor<readonly:tensor<4x16xf32{body}>>) {{
        return
      }}
    }}
  }}"""


FLOW = "\n".join([
    "module {",
    _executable("f_dispatch_0", "f_dispatch_0_matmul_4x8x16_f32", ""),
    _executable("f_dispatch_2", "f_dispatch_2_matmul_4x8x16_f32", ", #enc"),  # an encoded operand: another kernel
    "  util.func public @f() {",
    "  }",
    "}",
])  # fmt: skip
THEIRS = "\n".join(["module {", _executable("g_dispatch_5", "g_dispatch_5_matmul_4x8x16_f32", ""), "}"])


def test_dispatches_are_matched_by_content_and_the_rest_by_name_without_ordinal() -> None:
    ours, theirs = executable_keys(FLOW), executable_keys(THEIRS)
    assert set(ours) == {"f_dispatch_0_matmul_4x8x16_f32", "f_dispatch_2_matmul_4x8x16_f32"}
    # the same body under other names is one key; IREE's name alone would have matched the encoded one too
    assert ours["f_dispatch_0_matmul_4x8x16_f32"] == theirs["g_dispatch_5_matmul_4x8x16_f32"]
    assert ours["f_dispatch_2_matmul_4x8x16_f32"] != theirs["g_dispatch_5_matmul_4x8x16_f32"]
    assert profile_key("_encoding_3_encode_4x16xf32_to_4x16xf32", {}) == "name:_encoding_N_encode_4x16xf32_to_4x16xf32"
    assert profile_key("f_dispatch_12_slow_memcpy", {}) == "name:f_dispatch_N_slow_memcpy"
    # ours: the shared matmul once per call (2 us), the encoded one twice per call (3 us each);
    # theirs: the shared matmul (2.1 us) and an encode (1 us); 10 calls profiled each
    mm0, mm2, mm5 = "f_dispatch_0_matmul_4x8x16_f32", "f_dispatch_2_matmul_4x8x16_f32", "g_dispatch_5_matmul_4x8x16_f32"
    enc = "_encoding_3_encode_4x16xf32_to_4x16xf32"
    mine = per_call(DispatchTimes({mm0: 2e-6, mm2: 3e-6}, {mm0: 10, mm2: 20}, 10), ours)
    them = per_call(DispatchTimes({mm5: 2.1e-6, enc: 1e-6}, {mm5: 10, enc: 10}, 10), theirs)
    diff = unshared(mine, them)
    assert diff.shared == 1
    assert diff.describe("ours") == ["2x f_dispatch_2_matmul_4x8x16_f32"]
    assert diff.describe("theirs") == ["_encoding_3_encode_4x16xf32_to_4x16xf32"]
    # (2 x 3 us - 1 us) / IREE's 10 us call: ours is 50% of IREE's call slower in what differs
    assert relative_gain(mine, them, diff, 10e-6) == pytest.approx(0.5)


def _plan(label: str, us: float, dispatches: list[list[str]]) -> SimpleNamespace:
    infos = [DispatchInfo(f"dispatch:{i}", nodes=[(s, 1e-7) for s in sigs], flops_seconds=us * 1e-6 / len(dispatches))
             for i, sigs in enumerate(dispatches)]  # fmt: skip
    metrics = SimpleNamespace(run_seconds=us * 1e-6)
    return SimpleNamespace(label=label, plan=SimpleNamespace(dispatches=infos), metrics=metrics)


def test_plans_priced_identically_are_one_candidate() -> None:
    best = _plan("best", 1.00, [["mm"], ["add"]])
    same = _plan("top 2", 1.004, [["mm"], ["add"]])  # equal to the hundredth of a microsecond, same decisions
    other = _plan("top 3", 1.00, [["mm", "add"]])  # same time, other decisions: another candidate
    slower = _plan("top 4", 1.02, [["mm"], ["add"]])
    assert priced_key(best) == priced_key(same) and priced_key(best) != priced_key(other)  # type: ignore[arg-type]
    ex = SimpleNamespace(best=best, top=[best, same, other, slower])
    kept, merged = distinct_plans(ex, 2)  # type: ignore[arg-type]
    assert [label for label, _ in kept] == ["ours: best", "ours: top 3"]
    assert merged == {"ours: best": ["ours: top 2"], "ours: top 3": []}
    kept, _ = distinct_plans(ex)  # type: ignore[arg-type]
    assert [label for label, _ in kept] == ["ours: best", "ours: top 3", "ours: top 4"]


def _report(ours_calls: list[float], iree_calls: list[float], diffs: list[float]) -> tuple[TuneReport, list]:
    iree = TuneCandidate("IREE", True, 2e-6, vmfb=b"x", measured=iree_calls)
    ours = TuneCandidate("ours: best", False, 1e-6, vmfb=b"x", measured=ours_calls, diffs=diffs, matched_by="flow")
    report = TuneReport("f", "t", [iree, ours], len(iree_calls), True, rule=StopRule(0.02, 3, 10))
    return report, [iree, ours]


def test_the_verdict_chooses_and_the_whole_call_must_confirm() -> None:
    # what differs is 20% of IREE's call faster, and every whole call is 20% faster: ours
    report, timed = _report([0.8, 0.8, 0.81], [1.0, 1.0, 1.01], [-0.2, -0.21, -0.19])
    decide(report, timed, [Comparison(1, timed[1].diffs, "clear of zero after 3 rounds")])
    assert report.verdict is not None and report.verdict.kind == "faster"
    assert report.winner is timed[1] and report.speedup == pytest.approx(1.25)
    # the same dispatches, but the whole calls are slower (a plan whose cost is outside the kernels):
    # IREE's plan, and the verdict says why
    report, timed = _report([1.8, 1.9, 1.85], [1.0, 1.0, 1.01], [-0.02, -0.021, -0.019])
    decide(report, timed, [Comparison(1, timed[1].diffs, "target width reached after 3 rounds")])
    assert report.verdict is not None and report.verdict.kind == "cannot tell"
    assert "does not confirm it: median 85.0% above IREE's" in report.verdict.text
    assert report.winner is timed[0]
    # IREE's plan not measured: no verdict against it, the fastest of ours by the whole call
    report, timed = _report([0.8, 0.8, 0.81], [], [])
    timed[0].error, timed[0].vmfb = "IREE rejected it: error: boom", None
    decide(report, timed[1:], [])
    assert report.verdict is not None and report.verdict.kind == "cannot tell"
    assert "IREE's own plan was not measured (IREE rejected it" in report.verdict.text
    assert report.winner is timed[1]


def test_json_and_text_carry_the_verdict_its_interval_and_the_dispatches() -> None:
    from egg_dispatch.cli.tune import render, report_json
    from egg_dispatch.measure.differential import Unshared

    report, timed = _report([1.02, 1.0, 1.01], [1.0, 1.0, 1.0], [0.004, -0.004, 0.0])
    timed[1].unshared = Unshared({"k": 1}, {"e": 2}, {"k": "f_dispatch_0_matmul", "e": "_encoding_1_encode"}, 3)
    timed[1].ended = "target width reached after 3 rounds"
    decide(report, timed, [Comparison(1, timed[1].diffs, timed[1].ended)])
    data = report_json(report)
    assert data["verdict"]["kind"] == "within" and data["verdict"]["plan"] == "ours: best"
    # eps = -(lo) of the interval 0 +- 4.3027 * 0.004 / sqrt(3)
    assert data["verdict"]["epsilon"] == pytest.approx(4.3027 * 0.004 / 3**0.5, rel=1e-3)
    plan = data["plans"][1]
    assert plan["differential"]["interval"]["rounds"] == 3
    assert plan["differential"]["ours_only"] == ["f_dispatch_0_matmul"]
    assert plan["differential"]["iree_only"] == ["2x _encoding_1_encode"]
    assert plan["whole_call_interval"]["mean"] == pytest.approx(0.01)
    assert data["ranking"]["kendall_tau"] == pytest.approx(-1.0)  # predicted faster, measured slower
    assert data["ranking"]["top1_regret"] == pytest.approx(0.01)
    assert data["plans"][0]["chosen"] and data["stopping"]["target_width"] == 0.02
    text = render(report)
    assert "verdict: IREE is within 1.0% of the best plan measured" in text
    assert "nothing beat it" not in text and "+0.0% [-1.0%, +1.0%]" in text


# ----------------------------------------------------------------------------------- parameters
def test_stand_in_archives_hold_the_evaluators_values_and_reach_iree_as_scoped_flags(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    pytest.importorskip("iree.runtime")
    import iree.runtime as rt

    from egg_dispatch.evaluate.parameters import ParameterFile, Parameters
    from egg_dispatch.iree import tools
    from egg_dispatch.measure.stand_in import named_parameters, runtime_parameters
    from egg_dispatch.mlir.elements import element_bytes
    from egg_dispatch.mlir.ir import ParameterAttr
    from egg_dispatch.mlir.parser import parse_file

    module = parse_file(FIXTURES / "models" / "int8_mlp" / "ext.input.mlir")
    named = named_parameters(module)
    assert {k for _, k in named} == {"fc1.weight_q", "fc1.weight_scale", "fc1.bias", "fc2.weight_q", "fc2.weight_scale",
                                     "fc2.bias"} and {s for s, _ in named} == {"model"}  # fmt: skip
    with runtime_parameters(module, None) as files:
        assert [s for s, _ in files] == ["model"]
        index = rt.ParameterIndex()
        index.load(files[0][1])
        stored = dict(index.items())
        for (scope, key), typ in named.items():
            want = element_bytes(Parameters().value(ParameterAttr(key, scope), typ), typ)
            got = rt.parameter_index_entry_as_numpy_flat_ndarray(stored[key]).tobytes()
            assert got == want, key
        seen: list[list[str]] = []

        def fake_run(cmd, **kwargs):  # the argv IREE's benchmark tool gets
            seen.append(cmd)
            return subprocess.CompletedProcess(cmd, 0, b'{"benchmarks": [{"real_time": 5, "time_unit": "us"}]}', b"")

        monkeypatch.setattr(tools.subprocess, "run", fake_run)
        monkeypatch.setattr(tools, "find_tool", lambda name: Path("/bin/true"))
        assert tools.benchmark_module(Path("m.vmfb"), "main", [], parameters=files) == pytest.approx(5e-6)
        assert f"--parameters=model={files[0][1]}" in seen[0]
    assert not Path(files[0][1]).exists()  # removed with the context
    given = Parameters([ParameterFile.parse("model=/x/params.irpa")])
    with runtime_parameters(module, given) as files:
        assert files == [("model", "/x/params.irpa")]
    with runtime_parameters(parse_file(FIXTURES / "mlp2.mlir"), None) as files:
        assert files == []


@needs_iree
def test_a_model_with_named_parameters_runs_under_iree_without_a_parameter_file() -> None:
    """Before: "required module 'io_parameters' not registered". Now the stand-ins are served, and IREE
    computes the evaluator's numbers on them."""
    from egg_dispatch.evaluate import evaluate, select_function
    from egg_dispatch.evaluate.check import function_inputs, relative_error
    from egg_dispatch.iree.tools import compile_module, run_module
    from egg_dispatch.measure.stand_in import runtime_parameters
    from egg_dispatch.mlir.parser import parse_file

    path = FIXTURES / "models" / "int8_mlp" / "ext.input.mlir"
    module = parse_file(path)
    inputs = function_inputs(select_function(module, "main$async"), 0)
    want = evaluate(module, inputs, function="main$async")  # IREE runs it through its synchronous wrapper
    vmfb = compile_module(path, data_tiling=False, target_cpu="generic")
    with runtime_parameters(module, None) as files:
        got = run_module(vmfb, "main", inputs, parameters=files)
    assert len(got) == len(want)
    assert max(relative_error(a, b) for a, b in zip(got, want, strict=True)) <= 1e-5
    assert np.isfinite(got[0]).all()
