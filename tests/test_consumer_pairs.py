"""A generic reading an unset_encoding in its dispatch pays ``consumer_after_unpack`` (``cost.model.consumer_pairs``).

Checked by walking the chosen plans by hand: which chosen elementwise generics read a chosen
``UnsetEncoding``; the plan graph's time equals the extractor's objective with the charge; and the
ILP itself (warm-started from the charge-blind optimum) moves the bias onto the encoded accumulator
(``sink_unset``) or off the unpack when the charge is large. No timing: the charge is made up.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from egg_dispatch.cost.table import CostTable
from egg_dispatch.egraph.data import EGraphData
from egg_dispatch.extract.common import plan_objective
from egg_dispatch.extract.ilp import solve_ilp
from egg_dispatch.pipeline import explore
from egg_dispatch.target.kernels import Fit
from egg_dispatch.target.profile import Target
from tests.test_transient_step import _calibrated

FIXTURES = Path(__file__).parent / "fixtures"


def _with_consumer(tmp_path: Path, fixed_us: float) -> Target:
    t = _calibrated(tmp_path, 0.0)
    assert t.kernels is not None
    return dataclasses.replace(t, kernels=dataclasses.replace(t.kernels, consumer_after_unpack=Fit(fixed_us=fixed_us)))


def _generics_after_unset(g: EGraphData, choice: dict[str, str]) -> int:
    """Chosen Generic nodes one of whose chosen inputs is an UnsetEncoding / Unpack node: by hand."""
    count = 0
    for nid in choice.values():
        node = g.nodes[nid]
        if node.op != "Generic":
            continue
        ins, c = [], node.children[1]
        while c in choice and g.nodes[choice[c]].op == "TCons":
            ins.append(g.nodes[choice[c]].children[0])
            c = g.nodes[choice[c]].children[1]
        count += any(k in choice and g.nodes[choice[k]].op in ("UnsetEncoding", "Unpack") for k in set(ins))
    return count


def _without_pairs(costs: CostTable) -> CostTable:
    return CostTable(dict(costs), costs.exclusive, costs.conflicts, costs.once)


@pytest.mark.parametrize("fixture", ["mlp2.mlir", "transformer_block.mlir", "attention_explicit.mlir"])
def test_the_plan_graph_prices_the_charge_as_the_extractor(tmp_path: Path, fixture: str) -> None:
    ex = explore(FIXTURES / fixture, _with_consumer(tmp_path, 3.0), lam=0.0, start="input")
    assert ex.costs.pairs
    for cand in [ex.best, *([ex.baseline] if ex.baseline else [])]:
        with_pairs = plan_objective(ex.data, cand.choice, ex.costs, 0.0)
        assert cand.metrics.run_seconds == pytest.approx(with_pairs, rel=1e-9)
        charged = with_pairs - plan_objective(ex.data, cand.choice, _without_pairs(ex.costs), 0.0)
        assert charged == pytest.approx(3e-6 * _generics_after_unset(ex.data, cand.choice), abs=1e-12)


@pytest.mark.slow
def test_a_large_charge_moves_the_bias_off_the_unpack(tmp_path: Path) -> None:
    ex = explore(FIXTURES / "transformer_block.mlir", _with_consumer(tmp_path, 1000.0), lam=0.0, start="input")
    blind = solve_ilp(ex.data, _without_pairs(ex.costs), 0.0)
    assert _generics_after_unset(ex.data, blind.choice) > 0  # without the charge the bias follows the unset
    assert _generics_after_unset(ex.data, ex.best.choice) == 0
    solved = solve_ilp(ex.data, ex.costs, 0.0, warm_start=blind)  # the ILP alone, not greedy, finds it
    assert _generics_after_unset(ex.data, solved.choice) == 0 and solved.stats["source"] == "solver"
