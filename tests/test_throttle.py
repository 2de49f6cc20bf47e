"""Plain contractions next to a long mmt4d kernel run slower (``KernelCosts.throttle``).

The fit is checked on made-up victim and mmt4d times whose answer is worked out by hand; the model's
``gated`` charges by summing, plan by plan, the plain contractions a plan runs when it also runs a
data-tiled one (the layouts the e-graph's facts give each operand); the exact extractor against every
plan of a small program (its objective is never above any of theirs). No timing.
"""

from __future__ import annotations

import dataclasses
import itertools
import math
from pathlib import Path

import pytest

from egg_dispatch.cost import Facts
from egg_dispatch.cost.table import CostTable
from egg_dispatch.egraph.enumerate import enumerate_plans
from egg_dispatch.extract.common import plan_contexts, plan_objective
from egg_dispatch.extract.ilp import solve_ilp
from egg_dispatch.measure.fit import THROTTLE_FLOOR
from egg_dispatch.measure.kernel_fit import Calibration, throttle_fit
from egg_dispatch.measure.micro import THROTTLE_VICTIMS, throttle
from egg_dispatch.pipeline import explore
from egg_dispatch.plan.graph import build_plan
from egg_dispatch.target.kernels import KernelCosts, kernels_from_dict, kernels_to_dict
from tests.test_measured_costs import synthetic_target

FIXTURES = Path(__file__).parent / "fixtures"
F32 = "f32,f32,f32"


def _calibration(rows: list[tuple[float, float]], base: tuple[float, float] = (700e-6, 800e-6)) -> Calibration:
    """Victim pair times ``base`` alone, and slowed by each (mmt4d seconds, fraction) of ``rows``."""
    cal = Calibration()
    victims = cal.samples.setdefault("throttle_victim", [])
    victims += [((0, 0, 0, i), F32, t) for i, t in enumerate(base)]
    for j, (heavy, slower) in enumerate(rows):
        shape = (64, 16 * (j + 1), 768)
        victims += [((*shape, i), F32, t * (1 + slower)) for i, t in enumerate(base)]
        cal.samples.setdefault("throttle_heavy", []).append((shape, F32, heavy))
    return cal


def test_fit_finds_the_threshold_between_the_mmt4d_times_and_the_median_slowdown_above() -> None:
    # 13 µs: 1% (noise); 27, 52, 142 µs: 15, 16, 14%: on from between 13 and 27 µs, median 15%
    fraction, us = throttle_fit(_calibration([(13e-6, 0.01), (27e-6, 0.15), (52e-6, 0.16), (142e-6, 0.14)]))
    assert fraction == pytest.approx(0.15, rel=1e-9)
    assert us == pytest.approx(math.sqrt(13 * 27), rel=1e-9)
    # one noisy set among longer ones that slowed them does not switch it off, nor a long one that did not
    fraction, us = throttle_fit(_calibration([(13e-6, 0.15), (27e-6, 0.01), (52e-6, 0.16)]))
    assert fraction == pytest.approx(0.15, rel=1e-9) and us == pytest.approx(13.0, rel=1e-9)
    fraction, us = throttle_fit(_calibration([(13e-6, 0.01), (27e-6, 0.15), (52e-6, 0.16), (142e-6, 0.02)]))
    assert fraction == pytest.approx(0.15, rel=1e-9) and us == pytest.approx(math.sqrt(13 * 27), rel=1e-9)
    # a short one that slowed them, when most longer ones did not: on only from the longest that did
    fraction, us = throttle_fit(
        _calibration([(13e-6, 0.15), (27e-6, 0.01), (52e-6, 0.02), (98e-6, 0.01), (142e-6, 0.16)])
    )
    assert fraction == pytest.approx(0.16, rel=1e-9) and us == pytest.approx(math.sqrt(98 * 142), rel=1e-9)
    # every one slowed them: on from the shortest
    fraction, us = throttle_fit(_calibration([(13e-6, 0.12), (52e-6, 0.14)]))
    assert fraction == pytest.approx(0.13, rel=1e-9) and us == pytest.approx(13.0, rel=1e-9)


def test_fit_reports_no_throttle_within_noise_or_without_the_programs() -> None:
    assert throttle_fit(_calibration([(52e-6, THROTTLE_FLOOR / 2), (142e-6, -0.01)])) == (0.0, 0.0)
    assert throttle_fit(Calibration()) == (0.0, 0.0)
    cal = _calibration([(52e-6, 0.15)])
    cal.samples["throttle_victim"] = [r for r in cal.samples["throttle_victim"] if r[0][:3] != (0, 0, 0)]
    assert throttle_fit(cal) == (0.0, 0.0)  # no baseline: nothing to compare with


def test_program_times_distinct_victims_next_to_one_mmt4d() -> None:
    prog = throttle("t", (64, 64, 768))
    victims = [c for c in prog.cases if c.kind == "throttle_victim"]
    assert [c.sizes for c in victims] == [(64, 64, 768, i) for i in range(len(THROTTLE_VICTIMS))]
    assert len(set(THROTTLE_VICTIMS)) == len(THROTTLE_VICTIMS)  # IREE would merge identical executables
    (heavy,) = [c for c in prog.cases if c.kind == "throttle_heavy"]
    assert heavy.sizes == (64, 64, 768) and "iree_encoding.set_encoding" in prog.text
    alone = throttle("t0", None)
    assert {c.kind for c in alone.cases} == {"throttle_victim"} and "set_encoding" not in alone.text


def test_profile_round_trips_the_throttle_and_rejects_a_negative_one() -> None:
    k = KernelCosts(0.05, 1.5, throttle=0.17, throttle_us=18.5)
    back = kernels_from_dict(kernels_to_dict(k), lambda field, why: ValueError(f"{field}: {why}"))
    assert (back.throttle, back.throttle_us) == (0.17, 18.5)
    bad = {**kernels_to_dict(k), "throttle": -0.1}
    with pytest.raises(ValueError, match=r"kernels\.throttle"):
        kernels_from_dict(bad, lambda field, why: ValueError(f"{field}: {why}"))


def _by_hand(ex: object, choice: dict[str, str], fraction: float, us: float) -> float:
    """The throttle a plan pays: ``fraction`` of its plain contractions' times when it runs a data-tiled
    one of at least ``us`` (a contraction is data-tiled when an operand has a tiled layout; an mmt4d
    always is)."""
    g, costs = ex.data, ex.costs  # type: ignore[attr-defined]
    facts = Facts(g)
    run, _ = plan_contexts(g, choice)
    plain, tiled = 0.0, []
    for nid in run:
        node = g.nodes[nid]
        if node.op not in ("Contract", "Mmt4d"):
            continue
        operands = node.children[1:3] if node.op == "Contract" else node.children[:2]
        if any(facts.info(k).layout is not None for k in operands):
            tiled.append(costs[nid].run_seconds)
        else:
            plain += costs[nid].run_seconds
    return fraction * plain if any(t >= us * 1e-6 for t in tiled) else 0.0


def _blind(costs: CostTable) -> CostTable:
    return CostTable(dict(costs), costs.exclusive, costs.conflicts, costs.once, costs.pairs)


@pytest.mark.slow
@pytest.mark.parametrize("fixture", ["qkv_arg.mlir", "mlp2.mlir", "transformer_block.mlir"])
def test_plans_pay_the_throttle_as_counted_by_hand_and_the_plan_graph_agrees(tmp_path: Path, fixture: str) -> None:
    target = synthetic_target(tmp_path, "throttle", throttle=0.5, throttle_us=0.0)
    assert target.kernels is not None
    unthrottled = dataclasses.replace(target, kernels=dataclasses.replace(target.kernels, throttle=0.0))
    ex = explore(FIXTURES / fixture, target, lam=0.0, start="input", top_k=4)
    assert ex.costs.gate and ex.costs.gated
    paid = 0
    for cand in [ex.best, *ex.top, *([ex.baseline] if ex.baseline else [])]:
        with_it = plan_objective(ex.data, cand.choice, ex.costs, 0.0)
        charged = with_it - plan_objective(ex.data, cand.choice, _blind(ex.costs), 0.0)
        expected = _by_hand(ex, cand.choice, 0.5, 0.0)
        assert charged == pytest.approx(expected, rel=1e-9, abs=1e-15)
        # the plan graph prices the same extra (its price of nested clones differs from the table's
        # apart from this, so it is compared with the graph of the same plan without the throttle)
        blind = build_plan(ex.data, dict(cand.choice), ex.imported, unthrottled, 0.0)
        assert cand.metrics.run_seconds - blind.metrics.run_seconds == pytest.approx(expected, rel=1e-9, abs=1e-15)
        paid += expected > 0
    if fixture == "qkv_arg.mlir":
        assert paid  # some of its k best data-tile one projection of three: the charge is exercised


def test_the_exact_extractor_is_never_above_any_plan_with_the_throttle(tmp_path: Path) -> None:
    target = synthetic_target(tmp_path, "throttle", throttle=3.0, throttle_us=0.0)
    ex = explore(FIXTURES / "qkv_arg.mlir", target, lam=0.0, start="input")
    best = solve_ilp(ex.data, ex.costs, 0.0)
    plans = list(itertools.islice(enumerate_plans(ex.data, limit=3000), 3000))
    assert len(plans) > 10
    objectives = [plan_objective(ex.data, p, ex.costs, 0.0) for p in plans]
    assert best.objective <= min(objectives) * (1 + 1e-9)
    # some enumerated plan mixes plain and data-tiled contractions and pays for it
    assert any(_by_hand(ex, p, 3.0, 0.0) > 0 for p in plans)
    assert _by_hand(ex, best.choice, 3.0, 0.0) == 0.0  # 300% extra: the optimum never mixes


def test_a_profile_without_the_fit_charges_nothing(tmp_path: Path) -> None:
    target = synthetic_target(tmp_path, "plain")
    assert target.kernels is not None and target.kernels.throttle == 0.0
    ex = explore(FIXTURES / "qkv_arg.mlir", target, lam=0.0, start="input")
    assert not ex.costs.gated and not ex.costs.gate
    assert dataclasses.replace(target.kernels, throttle=0.2).throttle == 0.2
