"""The transient step (``KernelCosts.transient_us``) and explore's choice between ours and IREE's plan.

A call pays the step once when any dispatch result is a transient buffer (read by another dispatch,
not returned): checked against a plan graph walked by hand, against the extractor's objective, and by
the extractor's choice when the step is made large. No timing: the step's size is a made-up number.
"""

from __future__ import annotations

from pathlib import Path

import networkx as nx
import pytest

from egg_dispatch.cost.table import CostTable, NodeCost, once_seconds
from egg_dispatch.extract.common import plan_objective
from egg_dispatch.extract.ilp import solve_ilp
from egg_dispatch.pipeline import explore
from egg_dispatch.result.decision import MIN_GAIN, decide
from egg_dispatch.target.profile import Target
from tests.test_measured_costs import synthetic_target

FIXTURES = Path(__file__).parent / "fixtures"


def _calibrated(tmp_path: Path, transient_us: float) -> Target:
    return synthetic_target(tmp_path, f"p{transient_us}", transient_us=transient_us)


def _transient_dispatches(graph: nx.DiGraph) -> list[str]:
    """Dispatches of a plan graph that no result reads (directly or through a view): by hand."""
    out = []
    for n, data in graph.nodes(data=True):
        if data.get("kind") != "dispatch":
            continue
        readers = list(graph.successors(n))
        readers += [s for v in readers if graph.nodes[v].get("kind") == "view" for s in graph.successors(v)]
        if not any(graph.nodes[r].get("kind") == "result" for r in readers):
            out.append(n)
    return out


def test_once_charge_is_paid_once_whatever_the_number_of_nodes() -> None:
    table = CostTable({"a": NodeCost(1.0), "b": NodeCost(2.0)}, once=((5.0, frozenset({"a", "b"})),))
    assert once_seconds(table, {"a"}) == once_seconds(table, {"a", "b"}) == 5.0
    assert once_seconds(table, {"c"}) == 0.0
    assert once_seconds({"a": NodeCost(1.0)}, {"a"}) == 0.0  # a plain mapping has none


@pytest.mark.parametrize("fixture", ["mlp2.mlir", "seed_iree313.mlir", "qkv_arg.mlir", "col_slices.mlir"])
def test_plan_pays_the_step_once_exactly_when_it_has_a_transient(tmp_path: Path, fixture: str) -> None:
    target = _calibrated(tmp_path, 7.0)
    ex = explore(FIXTURES / fixture, target, lam=0.0, start="input")
    assert ex.costs.once and ex.costs.once[0][0] == pytest.approx(7e-6)
    for cand in [ex.best, *([ex.baseline] if ex.baseline else [])]:
        with_step = plan_objective(ex.data, cand.choice, ex.costs, 0.0)
        without = plan_objective(ex.data, cand.choice, _without_once(ex.costs), 0.0)
        # the plan graph prices what the extractor optimizes
        assert cand.metrics.run_seconds == pytest.approx(with_step, rel=1e-9)
        step = 7e-6 if _transient_dispatches(cand.plan.graph) else 0.0
        assert with_step - without == pytest.approx(step, abs=1e-12)
    if fixture == "mlp2.mlir":  # the first layer's result feeds the second: every plan has a transient
        assert _transient_dispatches(ex.best.plan.graph)


def test_a_large_step_makes_the_extractor_avoid_transients(tmp_path: Path) -> None:
    small = explore(FIXTURES / "qkv_const.mlir", _calibrated(tmp_path, 0.0), lam=0.0, start="input")
    large = explore(FIXTURES / "qkv_const.mlir", _calibrated(tmp_path, 1000.0), lam=0.0, start="input")
    # with no step, the best plan has a transient (so the choice is a real one) ...
    assert _transient_dispatches(small.best.plan.graph)
    # ... and with a step larger than anything else, the best has none
    assert not _transient_dispatches(large.best.plan.graph)
    # The ILP itself prices the step (greedy, which cannot, happens to avoid it here): warm-started
    # from the best plan without the step, it still returns one without a transient.
    blind = solve_ilp(large.data, _without_once(large.costs), 0.0)
    assert plan_objective(large.data, blind.choice, large.costs, 0.0) > 1e-3  # it pays the step
    solved = solve_ilp(large.data, large.costs, 0.0, warm_start=blind)
    assert solved.objective < 1e-3 and solved.stats["source"] == "solver"


def test_decide_keeps_iree_unless_ours_is_predicted_min_gain_faster() -> None:
    assert decide(90e-6, 100e-6).keep_iree is False  # 10% faster
    assert decide(96e-6, 100e-6).keep_iree is (0.04 < MIN_GAIN)
    assert decide(101e-6, 100e-6).keep_iree is True  # predicted slower: never ours
    assert decide(99e-6, 100e-6, min_gain=0.0).keep_iree is False
    assert decide(100e-6, None).keep_iree is False  # nothing to compare with
    assert "IREE's own plan is kept" in decide(99e-6, 100e-6).reason


def _without_once(costs: CostTable) -> CostTable:
    return CostTable(dict(costs), costs.exclusive, costs.conflicts)
