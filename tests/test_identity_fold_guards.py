"""The rules that run on encodings a target resolves to the identity layout stop once ``noop`` has folded
those encodings into their sources.

IREE bubbles a set_encoding above a widening generic, sinks an unset_encoding below an elementwise
consumer and hoists the set_encoding a generic reads whatever the layout, so the rules do too
(``rules/propagate_bubble.egg`` condition 4, ``rules/sink_unset.egg`` condition 8, ``rules/hoist.egg``),
which is what puts IREE's plans of its lit cases @bubble_through_non_involutive_permutation and
@propagate_unset_encoding_through_generic among ours. With the identity layout, ``noop`` folds
``SetEncoding(x, e)`` into ``x`` (and an unset into its source): run after that, each of those rules
would re-encode, re-hoist or re-sink the folded forms without end (a random program of
``benchmarks/random_programs.py``, seed 3, reached the 200,000 e-node limit that way). Each rule has a
condition that the encoding is not folded (propagate_bubble.egg condition 5, hoist.egg condition 5),
which a lit case of one family cannot show (``--rules`` names one family): here each lit case runs after
``noop``, where the guarded rule must not fire, and under every family in schedule order, where the
e-graph must saturate. ``sink_unset`` is the exception (sink_unset.egg condition 8): its guard never let
it fire next to ``noop`` (which runs first in every iteration), so IREE's plan of a model with an f32 x
f16 projection whose result a transposing generic reads (random_models.py seed 14) was out; it now sinks
the folded unset too, and the sunk generic folds back into the plain one (one class, one plan, saturated:
``tests/rules/sink_unset/sink_transposed_write.mlir``).
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from tests.test_explore_property import run_cli

RULES = Path(__file__).parent / "rules"
CASES = [
    # (lit file, chunk, family, target, the guarded rule)
    ("propagate/bubble_through_elementwise.mlir", 9, "propagate", "x86_64-avx2", "bubble-set-encoding-through-generic"),
    (
        "sink_unset/sink_transposed_read.mlir",
        1,
        "sink_unset",
        "x86_64-avx2",
        "sink-unset-through-elementwise-identity-layout",
    ),
    (
        "sink_unset/sink_transposed_write.mlir",
        0,
        "sink_unset",
        "x86_64-avx2",
        "sink-unset-through-elementwise-identity-layout",
    ),
    ("hoist/hoist_identity_layout.mlir", 0, "hoist", "none", "hoist-bubbled-set-encoding"),
]


def _opt(case: tuple[str, int, str, str, str], rules: str, tmp_path: Path) -> str:
    path, chunk, _, target, _ = case
    source = tmp_path / "case.mlir"
    source.write_text((RULES / path).read_text().split("\n// -----\n")[chunk])
    rc, out, err = run_cli(["opt", str(source), "--no-initial-plan", "--rules", rules, "--target", target])
    assert rc == 0, err
    return out


def _matches(out: str, rule: str) -> int:
    m = re.search(rf"rule matches: .*\b{re.escape(rule)} (\d+)", out)
    return int(m.group(1)) if m else 0


@pytest.mark.parametrize("case", CASES, ids=[f"{c[0]}#{c[1]}" for c in CASES])
def test_the_rule_fires_on_the_unfolded_encoding(case: tuple[str, int, str, str, str], tmp_path: Path) -> None:
    assert _matches(_opt(case, case[2], tmp_path), case[4]) == 1


GUARDED = [c for c in CASES if c[2] != "sink_unset"]
SINKS = [c for c in CASES if c[2] == "sink_unset"]


@pytest.mark.parametrize("case", GUARDED, ids=[f"{c[0]}#{c[1]}" for c in GUARDED])
def test_the_rule_does_not_fire_after_noop_folded_the_encoding(
    case: tuple[str, int, str, str, str], tmp_path: Path
) -> None:
    out = _opt(case, f"noop,{case[2]}", tmp_path)
    assert "saturated" in out.splitlines()[0]
    assert _matches(out, case[4]) == 0
    assert "plans for @" in out and ": 1;" in out.splitlines()[0]  # the program as written, folded


@pytest.mark.parametrize("case", SINKS, ids=[f"{c[0]}#{c[1]}" for c in SINKS])
def test_the_sink_fires_after_noop_folded_the_unset_and_folds_back(
    case: tuple[str, int, str, str, str], tmp_path: Path
) -> None:
    out = _opt(case, f"noop,{case[2]}", tmp_path)
    assert "saturated" in out.splitlines()[0]
    assert _matches(out, case[4]) == 1
    assert "plans for @" in out and ": 1;" in out.splitlines()[0]  # the sunk generic folded into the plain one


@pytest.mark.parametrize("case", CASES, ids=[f"{c[0]}#{c[1]}" for c in CASES])
def test_every_family_saturates(case: tuple[str, int, str, str, str], tmp_path: Path) -> None:
    out = _opt(case, "all", tmp_path)
    header = out.splitlines()[0]
    assert "saturated" in header, header
    enodes = int(re.search(r"e-graph: (\d+) e-nodes", header).group(1))  # type: ignore[union-attr]
    assert enodes < 2000, header
