"""Every budget the parser accepts gives a plan, says which limit stopped it, and the plan checks.

Issue 13, point 1. The smallest limits (one iteration, one e-node, a tenth of a millisecond: all below
what the start state needs) stop saturation before any alternative is derived; legality has then
subsumed the start state's own fused packs, and the plan must still be the start state (the input
itself, always a plan), flagged as stopped by the limit. The ILP's time limit gives the best plan found,
greedy's at worst, with its gap (or "unknown" before HiGHS has a bound).

Every fixture (``tests/fixtures/*.mlir``) and the built-in example, through the command line::

    egg-dispatch explore FILE --budget SPEC --check --emit json --baseline modelled --from input

with the three minimal limits on each, then random budgets, extractors and ILP time limits drawn by
hypothesis (derandomized), and ``opt`` and the other commands that saturate with the minimal ones.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from egg_dispatch.cli import main
from egg_dispatch.iree.lowering import iree_compiler_available
from egg_dispatch.mlir.forms import file_form
from tests.hypothesis_profiles import examples

FIXTURES = Path(__file__).parent / "fixtures"
INPUTS: list[str | None] = [None, *sorted(str(p) for p in FIXTURES.glob("*.mlir"))]
"""The built-in example (None: no FILE) and every fixture."""
MINIMAL = ("iterations=1", "enodes=1", "seconds=0.0001")
STOPS = ("saturated", "iteration limit", "e-node limit", "time limit")


def _usable(path: str | None) -> bool:
    """Torch-dialect fixtures need IREE to be read at all (it lowers them)."""
    return path is None or file_form(Path(path)) != "torch" or iree_compiler_available()


def explore(capsys: pytest.CaptureFixture[str], path: str | None, *flags: str) -> tuple[dict, str]:
    """``explore --check --emit json`` on ``path``; exit 0 required; the JSON report and stderr."""
    argv = ["explore", *([path] if path else []), *flags, "--check", "--emit", "json", "--baseline", "modelled"]
    capsys.readouterr()
    code = main([*argv, "--from", "input"])
    out, err = capsys.readouterr()
    assert code == 0, f"{' '.join(argv)}: exit {code}\n{err}"
    assert "check FAILED" not in err and "MISMATCH" not in err, err
    assert "check ok: best" in err, err
    return json.loads(out), err


def assert_stopped_as_reported(report: dict, err: str, spec: str) -> None:
    """A plan, a stop reason among the limits, stderr saying so when it stopped early, and the reason
    consistent with the budget that was given."""
    assert report["best"]["dispatches"] is not None and report["best"]["signature"]
    stop = report["egraph"]["stop_reason"]
    assert stop.startswith(STOPS), stop
    if stop != "saturated":
        assert f"saturation stopped early: {stop}" in err
    limits = dict(part.split("=") for part in spec.split(","))
    if stop.startswith("iteration limit"):
        assert report["egraph"]["iterations"] == int(limits["iterations"])
    if stop.startswith("e-node limit"):
        assert "enodes" in limits
    if stop.startswith("time limit"):
        assert "seconds" in limits


CASES = [(p, spec) for p in INPUTS for spec in MINIMAL]


@pytest.mark.slow
@pytest.mark.parametrize(("path", "spec"), CASES, ids=[f"{Path(p).stem if p else 'builtin'}-{s}" for p, s in CASES])
def test_minimal_budgets_give_the_start_state(path: str | None, spec: str, capsys: pytest.CaptureFixture[str]) -> None:
    if not _usable(path):
        pytest.skip("torch-dialect input needs IREE")
    report, err = explore(capsys, path, "--budget", spec)
    assert_stopped_as_reported(report, err, spec)
    assert report["egraph"]["stop_reason"] != "saturated" or spec.startswith("iterations")


def test_the_issue_invocation(capsys: pytest.CaptureFixture[str]) -> None:
    """``explore --budget iterations=1,enodes=50,seconds=1`` on the built-in example (issue 13): the start
    state, flagged as stopped by the e-node limit, and the fused packs it keeps named as such. On AVX-512,
    whose 16x16 tiles pad the 8x8 operands, so legality refuses the packs fused in the start state (AVX2's
    8x8 tiles fit them; ``--target host`` would make the test depend on the machine)."""
    report, err = explore(capsys, None, "--budget", "iterations=1,enodes=50,seconds=1", "--target", "x86_64-avx512")
    assert report["egraph"]["stop_reason"].startswith("e-node limit")
    assert "saturation stopped early: e-node limit" in err
    assert any("keeps forms legality refuses" in w for w in report["warnings"])


@pytest.mark.slow
@settings(
    max_examples=examples(60),
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(
    path=st.sampled_from([p for p in INPUTS if _usable(p)]),
    iterations=st.one_of(st.none(), st.integers(1, 6)),
    enodes=st.one_of(st.none(), st.integers(1, 400), st.sampled_from([10**3, 10**4, 10**6])),
    seconds=st.one_of(st.none(), st.sampled_from([1e-4, 1e-3, 0.01, 0.05, 1.0, 30.0])),
    extractor=st.sampled_from(["exact", "greedy"]),
    time_limit=st.sampled_from([0.0, 1e-6, 1e-3, 10.0]),
    pareto=st.booleans(),
)
def test_random_budgets(
    capsys: pytest.CaptureFixture[str],
    path: str | None,
    iterations: int | None,
    enodes: int | None,
    seconds: float | None,
    extractor: str,
    time_limit: float,
    pareto: bool,
) -> None:
    limits = {"iterations": iterations, "enodes": enodes, "seconds": seconds}
    spec = ",".join(f"{k}={v}" for k, v in limits.items() if v is not None) or "iterations=30"
    flags = ["--budget", spec, "--extractor", extractor, "--time-limit", str(time_limit)]
    report, err = explore(capsys, path, *flags, *(["--pareto"] if pareto else []))
    assert_stopped_as_reported(report, err, spec)
    ex = report["best"]["extraction"]
    assert ex is not None and ex["objective"] >= 0
    if extractor == "exact":  # the best plan found, never worse than greedy's; a gap when it has a bound
        assert ex["method"] in ("ilp-highs", "exhaustive")  # a small e-graph is enumerated (exact_ilp)
        assert ex["gap"] is None or 0 <= ex["gap"] <= 1
        assert ex["optimal"] or ex["gap"] is None or ex["gap"] >= 0


def test_ilp_time_limit_reports_the_plan_found(capsys: pytest.CaptureFixture[str]) -> None:
    """The text report of an ILP its time limit stopped: the plan it found (greedy's at worst), and its gap."""
    capsys.readouterr()
    args = ["explore", str(FIXTURES / "transformer_block.mlir"), "--from", "input", "--baseline", "modelled"]
    assert main([*args, "--time-limit", "0.000001"]) == 0
    line = next(x for x in capsys.readouterr().out.splitlines() if x.strip().startswith("extractor:"))
    assert "stopped by its time limit" in line and "gap" in line


@pytest.mark.parametrize("spec", MINIMAL)
def test_opt_with_minimal_budgets_prints_the_start_state(spec: str, capsys: pytest.CaptureFixture[str]) -> None:
    """``opt`` saturates too: stopped early, it still prints a plan (the start state's forms kept)."""
    capsys.readouterr()
    assert main(["opt", "--budget", spec]) == 0
    out = capsys.readouterr().out
    header = out.splitlines()[0]
    assert header.startswith("// ===== plans for @hoist_failure_repro: ") and not header.endswith(": 0;")
    assert int(header.split(": ")[1].split(";")[0]) >= 1
    assert "// ----- plan 0 of @hoist_failure_repro" in out


def _graph(spec: dict[str, list[tuple[str, list[str], bool]]]):
    """EGraphData from ``class -> [(node id, child classes, subsumed)]`` (root "R")."""
    from egg_dispatch.egraph.data import EGraphData, Node

    nodes = {
        nid: Node(nid, nid, c, tuple(kids), tuple(spec[k][0][0] for k in kids), sub)
        for c, ns in spec.items()
        for nid, kids, sub in ns
    }
    classes = {c: sorted(n[0] for n in ns) for c, ns in spec.items()}
    return EGraphData(nodes, classes, {c: "Root" if c == "R" else "Tensor" for c in classes}, "R")


def test_refused_nodes_are_kept_only_where_no_plan_exists_without_them() -> None:
    """The start-state fallback in isolation: a class legality emptied gets its nodes back only when the
    root has no plan otherwise, and then only that class (a class with a legal way to build it does not)."""
    from egg_dispatch.extract import greedy_dag

    # A's only node is refused: without it there is no plan at all.
    g = _graph({"R": [("r", ["A", "B"], False)], "A": [("a", ["C"], True)], "B": [("b", [], False)],
                "C": [("c", [], False), ("c2", [], True)]})  # fmt: skip
    g.keep_refused_without_alternative()
    assert g.kept_refused == ("a",) and not g.nodes["a"].subsumed and g.nodes["c2"].subsumed
    assert greedy_dag(g, {}, 0.0).choice["A"] == "a"
    # R can be built through r2 (legal) instead: nothing is given back.
    g = _graph({"R": [("r", ["A"], False), ("r2", ["B"], False)], "A": [("a", [], True)], "B": [("b", [], False)]})
    g.keep_refused_without_alternative()
    assert g.kept_refused == () and g.nodes["a"].subsumed
    # Two layers: the refused node of D must come back before C's (legal) node can be built.
    g = _graph({"R": [("r", ["C"], False)], "C": [("c", ["D"], False), ("c_refused", [], True)],
                "D": [("d", [], True)]})  # fmt: skip
    g.keep_refused_without_alternative()
    assert g.kept_refused == ("d",)  # C has a legal node once D is back: its refused one stays out
    assert greedy_dag(g, {}, 0.0).choice == {"R": "r", "C": "c", "D": "d"}
