"""``bench_fidelity.py --verdicts`` (``benchmarks/fidelity_verdicts.py``): its program, its table and its goals.

No timing: the SwiGLU generator is checked against NumPy by the evaluator, and the table, the verdict
agreement and the "Done when" lines are computed from made-up runs whose answers are known by hand.
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest

from egg_dispatch.evaluate import evaluate
from egg_dispatch.measure.stats import Verdict
from egg_dispatch.measure.tune import TuneCandidate, TuneReport
from egg_dispatch.mlir.parser import parse_mlir

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "benchmarks"))
import fidelity_verdicts as fv  # noqa: E402

sys.path.remove(str(ROOT / "benchmarks"))

MD = "." + "md"  # spelled apart: a page name in a test is no citation (tests/test_citations.py)


def test_the_swiglu_program_computes_silu_of_gate_times_up_then_down() -> None:
    tokens, d, fused = 3, 8, 12
    module = parse_mlir(fv.swiglu(tokens, d, fused), "<swiglu>")
    x = np.random.default_rng(0).integers(-8, 8, size=(tokens, d)).astype(np.float32) / 16
    (got,) = evaluate(module, [x], function="swiglu")
    w = fv._weights((fused, d), 21).astype(np.float64)
    down = fv._weights((d, fused // 2), 22).astype(np.float64)
    gate, up = x @ w[: fused // 2].T, x @ w[fused // 2 :].T
    want = (gate / (1 + np.exp(-gate)) * up) @ down.T
    assert got.shape == (tokens, d)
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)


def _rec(label: str, ratio: float | None, *, ours: bool = True, verdict: str = "faster") -> dict:
    if not ours:
        decision = {"keep_iree": True, "basis": "model only"}
        return {"profile": label, "decision": decision, "measured": {"ratio": 1.0, "identical": True}}
    decision = {"keep_iree": False, "basis": "measured", "measurement": {"verdict": verdict}}
    lo, hi = (None, None) if ratio is None else (ratio - 0.01, ratio + 0.01)
    return {"profile": label, "decision": decision, "measured": {"ratio": ratio, "lo": lo, "hi": hi}}


def _tune(kind: str | None, mean: float = -0.01) -> dict:
    iv = {"mean": mean, "lo": mean - 0.01, "hi": mean + 0.01, "rounds": 5}
    return {"verdict": kind, "epsilon": 0.02 if kind == "within" else None, "interval": iv, "kendall_tau": 0.5,
            "top1_regret": 0.03}  # fmt: skip


def _data(results: list[dict]) -> dict:
    settings = {"top_k": 3, "rounds": 5, "min_time": 0.05, "tune_seconds": 60.0, "measure_rounds": 6,
                "measure_seconds": 15.0, "confirm_seconds": 15.0}  # fmt: skip
    return {"cpu": "CPU", "isa": "x86_64-avx2: AVX2 + FMA", "cores": 2, "iree_compiler": "3.13.0", "date": "D",
            "settings": settings, "profiles": [{"label": "built-in", "spec": "x86_64-avx2", "calibrated": False}],
            "calibrated_note": "no calibrated profile", "results": results}  # fmt: skip


def _program(name: str, ratio: float | None, kinds: tuple[str | None, str | None]) -> dict:
    return {"program": name, "recommendations": [_rec("built-in", ratio)], "tune": [_tune(k) for k in kinds]}


def test_two_runs_agree_when_both_give_a_verdict_of_one_kind() -> None:
    assert fv.agreement([_tune("within"), _tune("within")]) is True
    assert fv.agreement([_tune("cannot tell"), _tune("cannot tell")]) is True
    assert fv.agreement([_tune("faster"), _tune("within")]) is False
    assert fv.agreement([_tune("faster"), {"verdict": None, "error": "IREE rejected it"}]) is None
    assert fv.agreement([_tune("faster")]) is None


def test_the_goals_count_ratios_above_1_02_and_agreements_against_five_of_six() -> None:
    results = [
        _program("a", 0.97, ("faster", "faster")),
        _program("b", 1.00, ("within", "within")),
        _program("c", 1.03, ("within", "within")),  # above 1.02x
        _program("d", None, ("cannot tell", "cannot tell")),  # not measured
        _program("e", 1.02, ("within", "faster")),  # at the goal; the runs differ
        {"program": "f", "recommendations": [_rec("built-in", 1.0, ours=False)], "tune": [_tune("within")] * 2},
    ]
    builtin, calibrated, tune = fv.goals(_data(results))
    assert "built-in profile: 4/6" in builtin
    assert "above: c 1.030 [1.020, 1.040]" in builtin
    assert "not measured: d" in builtin
    assert "calibrated profile: not measured (no calibrated profile)" in calibrated
    assert ">= 5 of 6: 5/6 (met; of them 'cannot tell' twice: 1)" in tune
    assert "differ: e" in tune
    results[0]["tune"][1] = _tune("within")
    assert ">= 5 of 6: 4/6 (not met" in fv.goals(_data(results))[2]


def test_the_table_has_a_row_per_program_with_the_cells_of_its_runs() -> None:
    results = [
        _program("gpt2", 0.95, ("faster", "within")),
        {"program": "qkv", "recommendations": [_rec("built-in", 1.0, ours=False)], "tune": [_tune("within")] * 2},
    ]
    rows = fv.table(_data(results))
    assert len(rows) == 4 and rows[0].count("|") == rows[2].count("|") == 10
    gpt2, qkv = rows[2].split(" | "), rows[3].split(" | ")
    assert gpt2[1:4] == ["ours (measured faster)", "0.950 [0.940, 0.960]", "no profile"]
    assert gpt2[5:8] == ["faster -1.0% [-2.0%, +0.0%]", "+0.50", "3.0%"]
    assert gpt2[8].startswith("differs: within 2.0%")
    assert qkv[1:3] == ["IREE (model)", "1.00 (same)"]
    assert qkv[8].startswith("agrees")


def test_the_verdicts_interval_is_its_plans() -> None:
    iree = TuneCandidate("IREE", True, 2e-6, vmfb=b"m", measured=[2e-6] * 3)
    worse = TuneCandidate("ours: best", False, 1e-6, vmfb=b"m", measured=[2.2e-6] * 3, diffs=[0.09, 0.1, 0.11])
    close = TuneCandidate("ours: top 2", False, 1.5e-6, vmfb=b"m", measured=[2e-6] * 3, diffs=[-0.01, 0.0, 0.01])
    rejected = TuneCandidate("ours: top 3", False, 1.2e-6, error="IREE rejected it")
    report = TuneReport("f", "t", [iree, worse, rejected, close], 3, True)
    report.verdict = Verdict("within", "IREE's plan is within 1.0%", 2, 0.01)  # index 2 of the plans timed
    got = fv.tune_record(report)
    assert got["plan"] == "ours: top 2" and got["verdict"] == "within" and got["epsilon"] == 0.01
    assert got["interval"]["mean"] == 0.0 and got["interval"]["rounds"] == 3
    # predicted 2, 1, 1.5 against measured 2, 2.2, 2 (the rejected plan is not timed): two discordant
    # pairs and one tied in measurement, tau-b = -2 / sqrt(2 * 3)
    assert got["kendall_tau"] == pytest.approx(-2 / 6**0.5)


def test_write_doc_replaces_only_the_marked_part(tmp_path: Path) -> None:
    page = tmp_path / ("log" + MD)
    page.write_text(f"# Log\n\nbefore\n\n{fv.BEGIN}\nold\n{fv.END}\n\nafter\n")
    fv.write_doc(page, "new table")
    assert page.read_text() == f"# Log\n\nbefore\n\n{fv.BEGIN}\nnew table\n{fv.END}\n\nafter\n"
    bare = tmp_path / ("bare" + MD)
    bare.write_text("# Page\n")
    fv.write_doc(bare, "t")
    assert bare.read_text().endswith(f"{fv.BEGIN}\nt\n{fv.END}\n") and fv.INTRO in bare.read_text()
    assert fv.BEGIN in fv.DOC.read_text() and fv.END in fv.DOC.read_text()  # the log has the markers
