"""``measure.stats``: the paired interval, the stopping rule and every verdict, with a fake sampler and a
fake clock (fixed sequences of times: no timing, no IREE). Expected intervals are worked by hand (the
t quantiles from a printed table) or recomputed with ``statistics`` (another implementation of the mean
and the sample deviation than the module's ``math.fsum`` loops)."""

from __future__ import annotations

import itertools
import math
import statistics
from collections.abc import Callable, Sequence

import pytest

from egg_dispatch.measure.stats import (
    StopRule,
    kendall_tau,
    paired_interval,
    regret,
    sample_paired,
    t_quantile,
    verdict,
)


def fake_sampler(series: Sequence[Sequence[float]], calls: list[int] | None = None) -> Callable[[int], float]:
    """Plan i's k-th measurement is ``series[i][k % len]``; ``calls`` records the order plans were asked."""
    its = [itertools.cycle(s) for s in series]

    def sample(i: int) -> float:
        if calls is not None:
            calls.append(i)
        return next(its[i])

    return sample


def test_t_interval_of_a_worked_example() -> None:
    # 1..5: mean 3, s^2 = 10/4, s/sqrt(5) = sqrt(0.5); t(0.975, 4) = 2.776 (table): half-width 1.963
    iv = paired_interval([1.0, 2.0, 3.0, 4.0, 5.0])
    assert iv is not None and iv.n == 5
    assert iv.mean == pytest.approx(3.0)
    assert iv.lo == pytest.approx(3.0 - 2.7764 * math.sqrt(0.5), abs=1e-9)
    assert iv.hi == pytest.approx(4.963, abs=1e-3)
    assert paired_interval([0.5]) is None
    # the table's values, and the interpolation beyond 30 (t(0.975, 45) = 2.0141)
    assert t_quantile(1) == pytest.approx(12.706, abs=1e-3) and t_quantile(10) == pytest.approx(2.228, abs=1e-3)
    assert t_quantile(45) == pytest.approx(2.0141, abs=1e-3)
    assert t_quantile(10**6) == pytest.approx(1.960, abs=1e-3)
    with pytest.raises(ValueError):
        t_quantile(0)


def test_sampling_stops_when_the_interval_reaches_the_target_width() -> None:
    """A plan within 1% of the reference either way: the width falls under 2% at the seventh round."""
    calls: list[int] = []
    rule = StopRule(target_width=0.02, min_rounds=3, max_rounds=50)
    out = sample_paired(fake_sampler([[1.0], [0.99, 1.01]], calls), 1, rule, clock=lambda: 0.0)
    c = out.comparisons[0]
    assert out.rounds == 7 and c.ended == "target width reached after 7 rounds"
    diffs = [-0.01, 0.01] * 3 + [-0.01]
    assert c.diffs == pytest.approx(diffs)
    iv = c.interval
    assert iv is not None
    half = 2.4469 * statistics.stdev(diffs) / math.sqrt(7)  # t(0.975, 6) from the table
    assert iv.mean == pytest.approx(statistics.mean(diffs)) and iv.hi - iv.mean == pytest.approx(half)
    assert iv.width == pytest.approx(0.019774, abs=1e-5)
    # six rounds were not enough: 2 * 2.5706 * s / sqrt(6) with s = 0.010954
    six = paired_interval(diffs[:6])
    assert six is not None and six.width == pytest.approx(0.02299, abs=1e-4) and six.width > 0.02
    # interleaved, the order reversed every other round
    assert calls[:6] == [0, 1, 1, 0, 0, 1]
    v = verdict(out.comparisons, ["IREE", "ours"], rule)
    assert v.kind == "within" and v.epsilon == pytest.approx(-iv.lo)
    assert v.text.startswith(f"IREE is within {-iv.lo:.1%} of the best plan measured")


def test_a_plan_clear_of_zero_stops_early_and_is_the_verdict_when_confirmed() -> None:
    rule = StopRule(target_width=0.02, min_rounds=3, max_rounds=50)
    out = sample_paired(fake_sampler([[1.0], [0.90, 0.92]]), 1, rule, clock=lambda: 0.0)
    c = out.comparisons[0]
    # -0.10, -0.08, -0.10: mean -0.0933, half 4.3027 * 0.011547 / sqrt(3) = 0.02869, width 0.0574 < |hi|
    assert out.rounds == 3 and c.ended == "clear of zero after 3 rounds"
    iv = c.interval
    assert iv is not None and iv.hi == pytest.approx(-0.09333 + 0.02869, abs=1e-4)
    v = verdict(out.comparisons, ["IREE", "ours"], rule, confirmed=lambda i: (True, ""))
    assert v.kind == "faster" and v.plan == 1
    assert v.text.startswith("ours is faster by 9.3% (ours: 95% interval -9.3% [-12.2%, -6.5%], clear of zero)")
    # the whole call does not confirm it: cannot tell, saying why
    v = verdict(out.comparisons, ["IREE", "ours"], rule, confirmed=lambda i: (False, "slower in 2 of 3 rounds"))
    assert v.kind == "cannot tell" and "does not confirm it: slower in 2 of 3 rounds" in v.text


def test_the_fastest_of_several_faster_plans_is_the_verdict_and_a_resolved_plan_stops_being_sampled() -> None:
    calls: list[int] = []
    rule = StopRule(target_width=0.02, min_rounds=3, max_rounds=4)
    series = [[1.0], [0.95, 0.951], [0.80, 0.81], [0.97, 1.03]]
    out = sample_paired(fake_sampler(series, calls), 3, rule, clock=lambda: 0.0)
    assert out.rounds == 4
    # plans 1 and 2 stop after 3 rounds (clear of zero); plan 3 runs into the round budget
    assert [len(c.diffs) for c in out.comparisons] == [3, 3, 4]
    assert calls[-2:] == [3, 0] and calls.count(1) == 3  # round 4: [3, 0] only (reversed order)
    assert out.comparisons[2].ended == "round budget ended after 4 rounds"
    v = verdict(out.comparisons, ["IREE", "a", "b", "c"], rule, confirmed=lambda i: (True, ""))
    assert v.kind == "faster" and v.plan == 2 and "by 19.7%" in v.text


def test_budgets_end_sampling_and_leave_the_answer_open() -> None:
    rule = StopRule(target_width=0.02, min_rounds=3, max_rounds=6)
    noisy = [[1.0], [0.9, 1.1, 0.95, 1.05]]
    out = sample_paired(fake_sampler(noisy), 1, rule, clock=lambda: 0.0)
    assert out.rounds == 6 and out.ended == "round budget ended after 6 rounds"
    v = verdict(out.comparisons, ["IREE", "ours"], rule)
    assert v.kind == "cannot tell" and v.plan == 1
    assert v.text.startswith("cannot tell within this budget: ours is ")
    assert "wider than the 2.0% target (round budget ended after 6 rounds)" in v.text
    # a clock that advances 10 s per reading: checked before rounds 2, 3, 4 (10, 20, 30 > 25)
    ticks = itertools.count(0, 10)
    timed = StopRule(target_width=0.02, min_rounds=3, max_rounds=50, max_seconds=25)
    out = sample_paired(fake_sampler(noisy), 1, timed, clock=lambda: float(next(ticks)))
    assert out.rounds == 3 and out.comparisons[0].ended == "time budget (25 s) ended after 3 rounds"
    # a budget that counts from an earlier reading (tune's: from the start of the run): spent, one round
    out = sample_paired(fake_sampler(noisy), 1, timed, clock=lambda: 0.0, started=-30.0)
    assert out.rounds == 1 and out.ended == "time budget (25 s) ended after 1 rounds"
    # one round only: no interval at all
    one = StopRule(max_rounds=1)
    out = sample_paired(fake_sampler(noisy), 1, one, clock=lambda: 0.0)
    v = verdict(out.comparisons, ["IREE", "ours"], one)
    assert v.kind == "cannot tell" and "1 round(s) measured, too few for an interval" in v.text
    # nothing but the reference measured
    assert verdict([], ["IREE"], rule).kind == "cannot tell"


def test_iree_faster_than_every_plan_is_within_zero_of_the_best() -> None:
    rule = StopRule(target_width=0.02, min_rounds=3, max_rounds=10)
    out = sample_paired(fake_sampler([[1.0], [1.20, 1.22], [1.5]]), 2, rule, clock=lambda: 0.0)
    v = verdict(out.comparisons, ["IREE's plan", "a", "b"], rule)
    assert v.kind == "within" and v.epsilon == 0.0
    assert v.text.startswith("IREE's plan is within 0.0% of the best plan measured (closest: a")


def test_kendall_tau_and_regret_against_hand_counts() -> None:
    # one discordant pair of six: (5 - 1) / 6
    assert kendall_tau([1, 2, 3, 4], [1, 3, 2, 4]) == pytest.approx(4 / 6)
    assert kendall_tau([1, 2, 3], [3, 2, 1]) == pytest.approx(-1.0)
    # tau-b with a tie in x: 2 concordant, 1 tied in x only: 2 / sqrt(3 * 2)
    assert kendall_tau([1, 1, 2], [1, 2, 3]) == pytest.approx(2 / math.sqrt(6))
    assert kendall_tau([1, 1], [1, 2]) is None and kendall_tau([1], [1]) is None
    predicted, measured = [3.0, 1.0, 2.0], [10.0, 12.0, 11.0]
    assert regret(predicted, measured, 1) == pytest.approx(0.2)
    assert regret(predicted, measured, 2) == pytest.approx(0.1)
    assert regret(predicted, measured, 5) == 0.0
