"""The modelled baseline (``plan.baseline``: IREE 3.13's greedy passes as a policy over the e-graph) on a
model whose e-graph holds two opaque ops that undo each other, each class also holding the other's op.

On the Llama block fixture the policy's walk closed a cycle through a class chosen on another branch (a
list wrapping a class being chosen), so explore had no modelled baseline ("IREE's policy picked a cyclic
plan") and the report compared against nothing when IREE is not installed. ``iree_baseline_choice``
breaks such a cycle with the next-ranked node of one of its classes; what it returns must be a plan: a
DAG from the root that computes the program."""

from __future__ import annotations

from pathlib import Path

import pytest

from egg_dispatch.egraph.enumerate import chosen_cycle, is_acyclic
from egg_dispatch.iree.tools import iree_available
from egg_dispatch.pipeline import explore
from egg_dispatch.plan.baseline import iree_baseline_choice

LLAMA = Path(__file__).parent / "fixtures" / "models" / "llama_block" / "torch.mlir"
pytestmark = pytest.mark.skipif(not iree_available(), reason="the fixture's start state is IREE's (egg-dispatch[iree])")


def test_the_policy_alone_closes_a_cycle_and_the_repair_leaves_a_plan() -> None:
    ex = explore(LLAMA, "x86_64-avx2", baseline=False, extractor="greedy", compile_check=False)
    g = ex.data
    walked = iree_baseline_choice(g, repair=False)
    cycle = chosen_cycle(g, walked)
    assert cycle is not None and not is_acyclic(g, walked)  # what the repair is for, on this fixture
    choice = iree_baseline_choice(g)
    assert is_acyclic(g, choice) and chosen_cycle(g, choice) is None
    changed = [c for c in cycle if choice.get(c) != walked.get(c)]
    assert changed, "the cycle was broken in one of its classes"


def test_explore_has_a_modelled_baseline_that_computes_the_program() -> None:
    ex = explore(LLAMA, "x86_64-avx2", extractor="greedy", compile_check=False)
    assert ex.baseline is not None, ex.warnings
    assert not [w for w in ex.warnings if "cyclic" in w]
    checks = {c.label: c for c in ex.check()}
    base = checks[ex.baseline.label]
    assert not base.skipped and not base.error and base.ok, (base.max_rel_error, base.tolerance)
