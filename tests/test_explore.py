"""explore: acceptance tests of the chosen plan, the baseline, the frontier, the report and the CLI."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from egg_dispatch.cli import main
from egg_dispatch.egraph.rules import FAMILIES
from egg_dispatch.extract import plan_objective
from egg_dispatch.pipeline import explore
from egg_dispatch.result.report import SCHEMA, to_json

FIXTURES = Path(__file__).parent / "fixtures"
BUILTIN = Path(__file__).parent.parent / "egg_dispatch" / "examples" / "seed_reproducer.mlir"


def _stuck_set_encodings(module) -> int:
    """set_encodings inside a matmul's dispatch whose producer is inside that dispatch too."""
    count = 0
    for region in (op for op in module.walk() if op.name == "flow.dispatch.region"):
        body = region.regions[0].entry.ops
        if not any(o.name.startswith("linalg.matmul") for o in body):
            continue
        inside = {r for o in body for r in o.results}
        count += sum(1 for o in body if o.name == "iree_encoding.set_encoding" and o.operands[0] in inside)
    return count


def test_seed_on_avx512_beats_or_matches_the_baseline_and_is_correct() -> None:
    result = explore(BUILTIN, "x86_64-avx512")
    assert _stuck_set_encodings(result.best.mlir) == 0  # 16-row tiles do not divide 8 rows: never legal here
    assert result.baseline is not None
    assert result.best.metrics.objective <= result.baseline.metrics.objective + 1e-15
    assert all(r.ok for r in result.check()), [(r.label, r.max_rel_error) for r in result.check()]


def test_target_none_removes_every_encoding() -> None:
    result = explore(FIXTURES / "seed_iree313.mlir", "none")
    names = [op.name for op in result.best.mlir.walk()]
    assert not any(n.startswith("iree_encoding") or n == "flow.tensor.encode" for n in names)
    assert all(r.ok for r in result.check())


QKV_ARG = (
    """
func.func @qkv_projection(%x: tensor<16x128xf32>, %in_proj: tensor<384x128xf32>)
    -> (tensor<16x128xf32>, tensor<16x128xf32>, tensor<16x128xf32>) {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<16x128xf32>
  %acc = linalg.fill ins(%zero : f32) outs(%e : tensor<16x128xf32>) -> tensor<16x128xf32>
"""
    + "".join(
        f"""  %w{i} = tensor.extract_slice %in_proj[{128 * i}, 0] [128, 128] [1, 1]
      : tensor<384x128xf32> to tensor<128x128xf32>
  %r{i} = linalg.matmul indexing_maps = [affine_map<(d0, d1, d2) -> (d0, d2)>, affine_map<(d0, d1, d2) -> (d1, d2)>,
      affine_map<(d0, d1, d2) -> (d0, d1)>] ins(%x, %w{i} : tensor<16x128xf32>, tensor<128x128xf32>)
      outs(%acc : tensor<16x128xf32>) -> tensor<16x128xf32>
"""
        for i in range(3)
    )
    + """  return %r0, %r1, %r2 : tensor<16x128xf32>, tensor<16x128xf32>, tensor<16x128xf32>
}
"""
)


def test_qkv_of_an_argument_frontier_has_the_propagated_plan() -> None:
    """Q/K/V slices of a run-time weight (a 384x128 in_proj, as attention layers export it): one
    encode of the whole tensor serves the three tile-aligned slices, with fewer dispatches than
    IREE, which copies each slice and encodes each copy. (The 64 KiB slices are too big to pack
    inside the matmul dispatches: 32 KiB stack limit.) Without `untile`: the plain matmuls, reading
    the slices unpacked, dominate every data-tiled plan of this small program."""
    data_tiled = tuple(f for f in FAMILIES if f != "untile")
    result = explore(QKV_ARG, "x86_64-avx512", pareto=True, families=data_tiled)
    assert result.baseline is not None
    propagated = []
    for cand in result.pareto:
        whole = [
            op
            for op in cand.mlir.walk()
            if op.name in ("flow.tensor.encode", "iree_encoding.set_encoding")
            and getattr(op.operands[0].type, "shape", None) == (384, 128)
        ]
        if len(whole) == 1:
            propagated.append(cand)
    assert propagated, [c.label for c in result.pareto]
    assert all(c.metrics.dispatches < result.baseline.metrics.dispatches for c in propagated)
    assert all(r.ok for r in result.check())


def test_frontier_plans_are_distinct_and_non_dominated() -> None:
    result = explore(FIXTURES / "qkv_const.mlir", "x86_64-avx2", pareto=True)
    points = [(c.metrics.run_seconds, c.metrics.memory_bytes) for c in result.pareto]
    assert len(set(points)) == len(points)
    for a in points:
        for b in points:
            assert not (b != a and b[0] <= a[0] and b[1] <= a[1]), f"{b} dominates {a}"


@pytest.mark.slow
@pytest.mark.parametrize("fixture", ["seed_iree313", "qkv_const", "qkv_arg", "mlp2", "col_slices"])
@pytest.mark.parametrize("target", ["x86_64-avx2", "x86_64-avx512"])
def test_plan_evaluator_equals_the_extractor_objective(fixture: str, target: str) -> None:
    result = explore(FIXTURES / f"{fixture}.mlir", target)
    extraction = result.best.extraction
    assert extraction is not None
    plan_metrics = result.best.metrics
    # The extractor's objective, the reference plan_objective, and the plan graph's own recount agree.
    assert plan_objective(result.data, extraction.choice, result.costs, result.lam) == pytest.approx(
        extraction.objective, rel=1e-12, abs=1e-18
    )
    assert plan_metrics.objective == pytest.approx(extraction.objective, rel=1e-9, abs=1e-15)


def test_text_report_names_irees_plan() -> None:
    """The totals column and plan line of the baseline name it: IREE's own plan (``iree-compile``'s, as
    explore's CLI labels it) as ``IREE`` / ``IREE's own plan``, our model of IREE's passes as modelled."""
    import re

    from egg_dispatch.result.report import markdown, text

    e = explore(FIXTURES / "seed_iree313.mlir", "x86_64-avx2", start="input")
    assert e.baseline is not None and "modelled" in e.baseline.label
    out = text(e, include_mlir=False)
    assert re.search(r"^totals +ours +IREE \(modelled\) +ours/IREE *$", out, re.M), out
    assert re.search(r"^IREE's plan as modelled: \S", out, re.M) and "IREE's own plan:" not in out, out
    assert "| | ours | IREE (modelled) | ratio |" in markdown(e)
    e.baseline.label = "baseline (IREE 3.13 iree-compile, costed by our model)"  # what the CLI sets
    out = text(e, include_mlir=False)
    assert re.search(r"^totals +ours +IREE +ours/IREE *$", out, re.M), out
    assert re.search(r"^IREE's own plan: \S", out, re.M) and "modelled" not in out, out
    assert "baseline" not in out  # every name of IREE's plan in the text report says whose it is
    assert to_json(e)["baseline"]["label"] == e.baseline.label  # the JSON keys stay


def test_json_report_schema() -> None:
    data = to_json(explore(FIXTURES / "seed_iree313.mlir", "x86_64-avx2", pareto=True))
    assert data["schema"] == SCHEMA
    assert set(data) == {
        "schema",
        "file",
        "function",
        "target",
        "lambda",
        "input",
        "costs",
        "egraph",
        "best",
        "baseline",
        "pareto",
        "warnings",
        "compile_check",  # iree.compile_check: "not checked" without IREE
        "differences_from_iree",  # per contraction, what differs from the baseline (result.summary.diff_entries)
    }
    diff_keys = {"who", "layers", "locations", "ours", "iree", "ours_per_call", "iree_per_call", "faster", "verdict"}
    assert all(set(d) == diff_keys for d in data["differences_from_iree"])
    assert set(data["compile_check"]) >= {"status", "reason", "checked", "excluded", "kept"}
    assert set(data["egraph"]) == {"enodes", "eclasses", "iterations", "stop_reason", "rule_matches"}
    assert set(data["input"]) == {"form", "explored_form", "steps", "notes"} and data["input"]["form"] == "linalg"
    assert data["costs"] == {
        "profile": "x86_64-avx2",
        "calibrated": False,
        "measured_on": None,
        "warning": None,
        "measured_nodes": 0,
        "measurement_cache": None,
    }
    baseline = data["baseline"]
    assert (baseline["in_egraph"], baseline["missing"]) == (True, None)  # modelled: a choice of the e-graph
    for plan in [data["best"], baseline, *data["pareto"]]:
        assert set(plan) - ({"in_egraph", "missing", "refused"} if plan is baseline else set()) == {
            "label",
            "signature",
            "objective",
            "run_seconds",
            "load_seconds",
            "persistent_bytes",
            "transient_bytes",
            "peak_live_bytes",
            "dispatches",
            "globals",
            "contractions",  # added by the report that scales to a model (issue 53): earlier keys stay
            "extraction",
            "mlir",
        }
        for d in plan["dispatches"]:
            assert set(d) == {"name", "ops", "bytes_in", "bytes_out", "seconds", "seconds_max_form", "holds"}
            assert d["holds"] and "Op" not in d["holds"].split(" + ")
            assert d["seconds"] >= d["seconds_max_form"] - 1e-18
        assert plan["mlir"].startswith(("#", "func.func", "util.global"))
    json.dumps(data)  # serializable


@pytest.mark.slow
def test_emit_json_is_byte_identical_across_hash_seeds(tmp_path: Path) -> None:
    outputs = set()
    for seed in ("0", "1", "12345"):
        env = {**os.environ, "PYTHONHASHSEED": seed}
        proc = subprocess.run(
            [
                sys.executable,
                "-m",
                "egg_dispatch",
                "explore",
                str(FIXTURES / "qkv_const.mlir"),
                "--emit",
                "json",
                "--pareto",
            ],
            capture_output=True,
            text=True,
            env=env,
            timeout=300,
        )
        assert proc.returncode == 0, proc.stderr
        outputs.add(proc.stdout)
    assert len(outputs) == 1


@pytest.mark.parametrize("emit", ["text", "mlir", "dot"])
def test_cli_emits(emit: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["explore", str(FIXTURES / "seed_iree313.mlir"), "--target", "x86_64-avx2", "--emit", emit]) == 0
    out = capsys.readouterr().out
    marker = {"text": "totals", "mlir": "func.func @", "dot": "digraph plan"}[emit]
    assert marker in out


def test_cli_check_and_explain(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["explore", "--check", "--explain", "--target", "x86_64-avx512"]) == 0
    captured = capsys.readouterr()
    assert "why each set_encoding went where it went" in captured.out
    assert "refused  fused pack: 1. inner tiles do not divide the shape" in captured.out
    assert "check ok: best" in captured.err


def test_bad_target_file_is_a_clean_error(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    bad = tmp_path / "bad.json"
    bad.write_text('{"name": "x"}')
    assert main(["explore", "--target-file", str(bad)]) == 2
    err = capsys.readouterr().err
    assert "bad.json" in err and "Traceback" not in err


def test_budget_stop_is_reported(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["explore", str(FIXTURES / "qkv_const.mlir"), "--max-iterations", "1", "--emit", "json"]) == 0
    captured = capsys.readouterr()
    assert json.loads(captured.out)["egraph"]["stop_reason"] == "iteration limit"
    assert "stopped early: iteration limit" in captured.err


def test_progress_line_for_long_runs(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    """Runs over PROGRESS_AFTER_SECONDS say on stderr what they are doing (here: after 0 s)."""
    import egg_dispatch.cli.explore as explore_cmd

    monkeypatch.setattr(explore_cmd, "PROGRESS_AFTER_SECONDS", 0.0)
    assert main(["explore", str(FIXTURES / "qkv_const.mlir"), "--emit", "json"]) == 0
    err = capsys.readouterr().err
    assert "egg-dispatch: " in err and ("saturated" in err or "imported" in err or "starting" in err)


@pytest.mark.skipif(not __import__("egg_dispatch.iree.tools").iree.tools.iree_available(), reason="IREE not installed")
def test_cli_baseline_is_irees_own_plan_when_iree_is_installed(capsys: pytest.CaptureFixture[str]) -> None:
    """The report compares with IREE's real plan (iree-compile --compile-to=dispatch-creation), and with
    the modelled one on request; IREE's plan for Q/K/V of an argument copies and encodes each slice."""
    args = ["explore", str(FIXTURES / "qkv_arg.mlir"), "--target", "x86_64-avx2", "--emit", "json"]
    assert main(args) == 0
    iree = json.loads(capsys.readouterr().out)["baseline"]
    assert "iree-compile" in iree["label"]
    assert iree["signature"].count("dispatch{tensor.extract_slice} encode") == 3  # IREE's flow.tensor.slice copies
    assert main([*args, "--baseline", "modelled"]) == 0
    modelled = json.loads(capsys.readouterr().out)["baseline"]
    assert "modelled" in modelled["label"]
    # The model replays IREE's decisions, each slice copy (a stream copy in IREE) as a dispatch of its own;
    # IREE's own plan, imported whole, is that same plan.
    assert modelled["signature"] == iree["signature"]


def test_cli_falls_back_to_the_modelled_baseline(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """When IREE cannot give its own plan (here iree-compile fails on it), explore says why and keeps
    going with the modelled baseline."""
    import egg_dispatch.pipeline as pipeline
    from egg_dispatch.iree.tools import IreeError, iree_available

    def fails(*_args: object, **_kwargs: object) -> None:
        raise IreeError("iree-compile failed (exit 1)")

    monkeypatch.setattr(pipeline, "iree_plan", fails)
    assert main(["explore", "--emit", "json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert "modelled" in data["baseline"]["label"]
    unavailable = "note: baseline is IREE's passes as modelled (IREE's own plan unavailable: iree-compile failed"
    assert any(w.startswith(unavailable) for w in data["warnings"]) == iree_available()
