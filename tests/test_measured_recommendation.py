"""explore's recommendation uses measurement (issue 52 point 3), with a fake sampler: no timing asserted.

``measure.recommend.compare`` samples IREE's plan and ours in paired rounds from a *fake* sampler (fixed
sequences of whole-call seconds and per-dispatch profiles); ``judge`` is the rule:

- the differing dispatches measure faster (interval clear of zero) and the whole call confirms -> ours;
- the interval straddles zero and stays wide -> IREE's own plan, "cannot tell within the budget";
- resolved near zero -> IREE's, "within X% of it"; clear of zero above -> IREE's, "slower";
- ``why_not_measured``: --no-measure, no IREE, a named target not asked for, a target this CPU does not
  run, ``EGG_DISPATCH_MEASURE=0`` -> model only, with the reason;
- through the CLI: --no-measure labels the answer "model only" in text and JSON; without IREE the
  recommendation is ours, model only; the default ``--target host`` goes to the measurement.

Numbers worked by hand: IREE's call is 20 us, of which 10 us are shared with ours (``flow:a``) and 5 us
are its own (``flow:b``); ours runs ``flow:c`` instead.
"""

from __future__ import annotations

import itertools
import json
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from egg_dispatch.iree.profiling import DispatchTimes
from egg_dispatch.measure.differential import calls_profiled, per_call
from egg_dispatch.measure.recommend import (
    MeasureBudget,
    Outcome,
    Sample,
    compare,
    judge,
    why_not_measured,
)
from egg_dispatch.measure.stats import StopRule
from egg_dispatch.result.decision import MEASURED, MODEL_ONLY, Decision
from egg_dispatch.result.exploration import Exploration
from egg_dispatch.target.profile import load_target

FIXTURES = Path(__file__).parent / "fixtures"


def _fake(ours_c: list[float], ours_call: list[float], iree_b: float = 5e-6, iree_call: float = 20e-6) -> Callable:
    """A sampler: IREE's plan (0) runs a (10 us, shared) and b; ours (1) runs a and c (``ours_c`` in turn)."""
    c_times: Iterator[float] = itertools.cycle(ours_c)
    calls: Iterator[float] = itertools.cycle(ours_call)

    def sample(i: int) -> Sample:
        if i == 0:
            return iree_call, {"flow:a": (1, 10e-6, "f_dispatch_0_a"), "flow:b": (1, iree_b, "f_dispatch_1_b")}
        return next(calls), {"flow:a": (1, 10e-6, "f_dispatch_0_a"), "flow:c": (1, next(c_times), "f_dispatch_1_c")}

    return sample


RULE = MeasureBudget(rounds=6, seconds=1e9).rule()


def _never_ends() -> float:
    return 0.0


def test_faster_in_what_differs_and_confirmed_by_the_call_recommends_ours() -> None:
    # c takes 2 us (+-0.1) where b takes 5: ours saves 3 us of IREE's 20 us call, -15%
    out = compare(_fake([2.0e-6, 2.1e-6, 1.9e-6], [17e-6, 17.1e-6, 16.9e-6]), RULE, clock=_never_ends)
    assert out.matched_by == "flow" and out.ours_only == ["f_dispatch_1_c"] and out.iree_only == ["f_dispatch_1_b"]
    assert out.diffs[:3] == pytest.approx([-0.15, -0.145, -0.155])
    d = judge(out, RULE)
    assert d.keep_iree is False and d.basis == MEASURED
    assert d.reason.startswith("ours is measured 15.0% faster than IREE's own plan in the dispatches that differ")
    assert "clear of zero" in d.reason and "the whole call confirms" in d.reason
    m = d.measured
    assert m is not None and m.verdict == "faster" and m.hi is not None and m.hi < 0
    assert m.stopped_early and "clear of zero" in m.ended  # resolved after 3 rounds, not 6
    assert d.to_json()["measurement"]["stopped_early"] is True  # type: ignore[index]


def test_faster_in_what_differs_but_not_in_the_whole_call_keeps_irees() -> None:
    out = compare(_fake([2.0e-6, 2.1e-6, 1.9e-6], [20.5e-6, 19.8e-6, 20.4e-6]), RULE, clock=_never_ends)
    d = judge(out, RULE)
    assert d.keep_iree is True and d.measured is not None and d.measured.verdict == "cannot tell"
    assert "the whole call does not confirm it" in d.reason


def test_an_interval_straddling_zero_keeps_irees_plan_and_says_it_cannot_tell() -> None:
    # c: 4 or 6 us against b's 5: +-5% of IREE's call in turn, so the interval stays wider than 2%
    out = compare(_fake([4e-6, 6e-6, 4.4e-6, 5.8e-6], [20e-6]), RULE, clock=_never_ends)
    d = judge(out, RULE)
    m = d.measured
    assert m is not None and m.lo is not None and m.hi is not None and m.lo < 0 < m.hi
    assert d.keep_iree is True and d.basis == MEASURED and m.verdict == "cannot tell"
    assert d.reason.startswith("IREE's own plan is kept: cannot tell within the budget (")
    assert m.rounds == 6 and "round budget ended after 6 rounds" in m.ended and not m.stopped_early


def test_within_and_slower_keep_irees_plan_with_the_interval() -> None:
    # c within +-0.05 us of b: resolved (width < 2%) around zero after 3 rounds
    d = judge(compare(_fake([5.0e-6, 5.05e-6, 4.95e-6], [20e-6]), RULE, clock=_never_ends), RULE)
    assert d.keep_iree is True and d.measured is not None and d.measured.verdict == "within"
    assert d.reason.startswith("IREE's own plan is kept: ours is measured within ")
    assert "of it in the dispatches that differ" in d.reason and "[" in d.reason
    # c takes 9 us: 20% of IREE's call slower
    d = judge(compare(_fake([9.0e-6, 9.1e-6, 8.9e-6], [24e-6]), RULE, clock=_never_ends), RULE)
    assert d.keep_iree is True and d.measured is not None and d.measured.verdict == "slower"
    assert d.reason.startswith("IREE's own plan is kept: ours is measured 20.0% slower")


def test_the_time_budget_ends_sampling_and_the_report_says_so() -> None:
    ticks = itertools.count()
    rule = StopRule(0.02, 3, 6, max_seconds=2.5)
    out = compare(_fake([4e-6, 6e-6], [20e-6]), rule, clock=lambda: float(next(ticks)))
    d = judge(out, rule)
    assert d.measured is not None and d.measured.stopped_early and "time budget (2.5 s) ended" in d.measured.ended
    assert "stopped early: time budget" in d.basis_line()


def test_a_cached_outcome_answers_when_its_interval_is_resolved() -> None:
    out = compare(_fake([2.0e-6, 2.1e-6, 1.9e-6], [17e-6, 17.1e-6, 16.9e-6]), RULE, clock=_never_ends)
    again = Outcome(**json.loads(json.dumps(out.__dict__)))  # what the cache file holds
    assert again.answers(RULE) and judge(again, RULE, cached=True).reason == judge(out, RULE).reason
    assert judge(again, RULE, cached=True).basis_line().endswith("from the cache")
    wide = Outcome(diffs=[0.05, -0.05] * 3, ours_calls=[1.0] * 6, iree_calls=[1.0] * 6)
    assert not wide.answers(RULE)  # it could not tell: measured again


def test_why_not_measured() -> None:
    avx512, neon = load_target("x86_64-avx512"), load_target("aarch64-neon")
    env: dict[str, str] = {}
    assert why_not_measured(False, "host", avx512, iree=True, environ=env) == "--no-measure"
    assert why_not_measured(None, "host", avx512, iree=False, environ=env) == "IREE is not installed"
    assert why_not_measured(True, "host", avx512, iree=False, environ=env) == "IREE is not installed"
    named = why_not_measured(None, "x86_64-avx512", avx512, iree=True, environ=env)
    assert named is not None and "not --target host" in named and "--measure" in named
    off = why_not_measured(None, "host", avx512, iree=True, environ={"EGG_DISPATCH_MEASURE": "0"})
    assert off == "turned off by EGG_DISPATCH_MEASURE=0"
    foreign = why_not_measured(True, "aarch64-neon", neon, iree=True, environ=env)
    assert foreign is not None and foreign.startswith("this machine is not the target (aarch64-neon:")


def test_no_measure_labels_the_answer_model_only_in_text_and_json(capsys: pytest.CaptureFixture[str]) -> None:
    from egg_dispatch.cli import main
    from egg_dispatch.iree.tools import iree_available

    if not iree_available():
        pytest.skip("IREE (iree-base-compiler) not installed")
    argv = ["explore", str(FIXTURES / "mlp2.mlir"), "--no-measure", "--no-compile-check"]
    assert main([*argv, "--emit", "json"]) == 0
    decision = json.loads(capsys.readouterr().out)["decision"]
    assert decision["basis"] == MODEL_ONLY and decision["not_measured"] == "--no-measure"
    assert "measurement" not in decision
    assert main(argv) == 0
    text = capsys.readouterr().out
    assert "\n  model only: not measured (--no-measure)\n" in text


def test_without_iree_the_recommendation_is_ours_model_only(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    from egg_dispatch.cli import main
    from egg_dispatch.iree import tools

    monkeypatch.setattr(tools, "iree_available", lambda: False)
    argv = ["explore", str(FIXTURES / "mlp2.mlir"), "--from", "input", "--no-compile-check", "--emit", "json"]
    assert main(argv) == 0
    decision = json.loads(capsys.readouterr().out)["decision"]
    assert decision["keep_iree"] is False and decision["basis"] == MODEL_ONLY
    assert decision["not_measured"] == "IREE is not installed"


def test_the_default_host_target_measures(capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    """With IREE and ``--target host`` (the default), the recommendation goes to the measurement (here a
    stand-in that answers "cannot tell"), and what it answers is what explore recommends."""
    from egg_dispatch.cli import main
    from egg_dispatch.iree.tools import iree_available
    from egg_dispatch.measure import recommend
    from egg_dispatch.result.decision import Measured

    if not iree_available():
        pytest.skip("IREE (iree-base-compiler) not installed")
    monkeypatch.delenv("EGG_DISPATCH_MEASURE")
    asked: list[str] = []

    def stand_in(result: Exploration, budget: MeasureBudget, **_kw: object) -> Decision:
        asked.append(result.target.name)
        m = Measured("cannot tell", 2, budget.rounds, "time budget (1 s) ended after 2 rounds")
        return Decision(True, "IREE's own plan is kept: cannot tell within the budget (stand-in)", MEASURED, measured=m)

    monkeypatch.setattr(recommend, "measure_recommendation", stand_in)
    # mlp2: the model predicts ours faster than IREE's plan (0.51 against 0.76 us), so there is a plan to measure
    argv = ["explore", str(FIXTURES / "mlp2.mlir"), "--no-compile-check", "--measure-budget", "rounds=4,seconds=1"]
    assert main([*argv, "--emit", "json"]) == 0
    decision = json.loads(capsys.readouterr().out)["decision"]
    assert asked, "the default target did not measure"
    assert decision["basis"] == MEASURED and decision["keep_iree"] is True
    assert decision["measurement"]["max_rounds"] == 4 and decision["measurement"]["stopped_early"] is True


def test_calls_profiled_when_iree_counts_one_execution_for_many_calls() -> None:
    """IREE 3.13 counts one command-buffer execution for a dynamic model's async-ABI calls (mlp_dyn: 446
    samples of each of its three functions, ``calls`` 1): per call each ran once, not 446 times."""
    names = ("f_dispatch_0_a", "f_dispatch_1_b", "_encoding_4_encode_x")
    times = DispatchTimes(dict.fromkeys(names, 1e-6), dict.fromkeys(names, 446), 1)
    assert calls_profiled(times) == 446
    assert {n for n, _, _ in per_call(times, {}).values()} == {1}
    # a count IREE got right stands, even where a function runs twice per call
    assert calls_profiled(DispatchTimes({"a": 1e-6, "b": 1e-6}, {"a": 10, "b": 20}, 10)) == 10
    assert calls_profiled(DispatchTimes({"a": 1e-6, "b": 1e-6}, {"a": 20, "b": 40}, 1)) == 20
