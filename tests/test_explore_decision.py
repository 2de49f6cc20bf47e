"""explore's recommendation between ours and IREE's own plan (``result.decision``), through the CLI.

The decision compares two predictions; these tests pin what is done with it, not the model's numbers:
with ``--min-gain`` above any possible gain IREE's plan is kept and emitted exactly as IREE printed
it (checked against ``iree_plan``'s own text), with 0 ours is always emitted, and the JSON and text reports
say which and why.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from egg_dispatch.cli import main
from egg_dispatch.iree.tools import iree_available
from egg_dispatch.pipeline import iree_plan

FIXTURES = Path(__file__).parent / "fixtures"
needs_iree = pytest.mark.skipif(not iree_available(), reason="IREE (iree-base-compiler) not installed")
PROGRAM = FIXTURES / "mlp2.mlir"


def _explore(capsys: pytest.CaptureFixture[str], *flags: str) -> str:
    assert main(["explore", str(PROGRAM), "--target", "x86_64-avx512", *flags]) == 0
    return capsys.readouterr().out


@pytest.mark.slow
@needs_iree
def test_min_gain_above_any_gain_keeps_and_emits_iree_own_plan(capsys: pytest.CaptureFixture[str]) -> None:
    data = json.loads(_explore(capsys, "--emit", "json", "--min-gain", "1.0"))
    assert data["decision"]["keep_iree"] is True
    assert "IREE's own plan is kept" in data["decision"]["reason"]
    emitted = _explore(capsys, "--emit", "iree", "--min-gain", "1.0")
    own = iree_plan(PROGRAM, "x86_64-avx512")
    assert emitted.strip() == own.text.strip()  # IREE's plan as IREE printed it
    text = _explore(capsys, "--min-gain", "1.0")
    assert "recommendation: IREE's own plan is kept" in text


@pytest.mark.slow
@needs_iree
def test_min_gain_zero_emits_ours_always(capsys: pytest.CaptureFixture[str]) -> None:
    """``--min-gain 0`` is "always ours" (its help): ours is recommended and emitted even where it is
    predicted slower than IREE's plan (issue 49 saw IREE's plan emitted then), and the reason gives both
    predictions."""
    data = json.loads(_explore(capsys, "--emit", "json", "--min-gain", "0"))
    ours, theirs = data["best"]["run_seconds"], data["baseline"]["run_seconds"]
    assert data["decision"]["keep_iree"] is False
    reason = data["decision"]["reason"]
    assert "--min-gain 0" in reason and f"{ours * 1e6:.2f} us" in reason and f"{theirs * 1e6:.2f} us" in reason
    emitted = _explore(capsys, "--emit", "iree", "--min-gain", "0")
    assert emitted.strip() != iree_plan(PROGRAM, "x86_64-avx512").text.strip()


def test_modelled_baseline_makes_no_decision(capsys: pytest.CaptureFixture[str]) -> None:
    data = json.loads(_explore(capsys, "--emit", "json", "--baseline", "modelled"))
    assert "decision" not in data  # only IREE's own plan is a plan explore may recommend instead
