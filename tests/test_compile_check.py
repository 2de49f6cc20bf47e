"""Every recommended plan compiles (issue 52, point 1): ``iree.compile_check``.

With IREE installed, ``explore`` compiles each dispatch of the chosen plan that IREE's plan (as modelled) does
not have, alone, and extracts again without those IREE rejects (a conflict each). Checked here:

* the two reproductions of the issue (``benchmarks/random_programs.py`` seed 4 on x86_64-avx2: a generic
  i8 contraction with its set_encodings fused in, "failed to legalize operation 'flow.tensor.encode'"; the
  transformers BERT fixture on the default target), and seed 11 on x86_64-avx512 (a batched matmul, bias,
  collapse and the next matmul's set_encoding in one dispatch: over the stack limit), give a plan that
  compiles whole, with ``iree-compile --compile-from=dispatch-creation --compile-to=executable-targets``
  (codegen included, as in the check). The rules change under these programs: whether the model's own
  choice is rejected is asked of IREE in the test, and when it is, the check must have excluded a dispatch;
* a rejected dispatch becomes a conflict the extractor avoids (a rejection forced by a fake compiler, so
  that it holds whatever IREE's limits are);
* answers are cached: a second run compiles nothing;
* random programs' chosen plans compile whole (a hypothesis property: the ``--check`` properties of
  ``test_explore_property.py`` run with ``--no-compile-check``, at 600 examples the check would add half);
* the report's lines (text and JSON), ``--no-compile-check`` and the report without IREE.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Callable
from pathlib import Path

import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

import egg_dispatch.iree.compile_check as cc
import egg_dispatch.iree.tools as tools
from egg_dispatch.cost import violated_conflicts
from egg_dispatch.emit.iree.abi import abi_shell
from egg_dispatch.emit.iree.module import emit_iree
from egg_dispatch.iree.dispatch_creation import first_error_line, iree_compile_flags
from egg_dispatch.iree.tools import CACHE_ENV, IreeError, compile_module, iree_available
from egg_dispatch.pipeline import explore
from egg_dispatch.result.exploration import Exploration
from egg_dispatch.target.profile import load_target
from tests.cli_process import cli_process
from tests.hypothesis_profiles import examples

ROOT = Path(__file__).parent.parent
sys.path.insert(0, str(ROOT / "benchmarks"))
from random_programs import program, programs  # noqa: E402

sys.path.remove(str(ROOT / "benchmarks"))

needs_iree = pytest.mark.skipif(not iree_available(), reason="IREE not installed (egg-dispatch[iree])")
BERT = ROOT / "tests" / "fixtures" / "models" / "hf_bert" / "input.mlir"


def whole_plan_error(ex: Exploration) -> str | None:
    """IREE's first error compiling the chosen plan whole (codegen included), None when it compiles."""
    text = emit_iree(ex.best.mlir, ex.target, abi=abi_shell(ex.module, ex.imported.function))
    _, cpu, others = iree_compile_flags(ex.target)
    flags = [*others, "--compile-to=executable-targets"]
    try:
        compile_module(text, data_tiling=False, target_cpu=cpu, extra_flags=flags, compile_from="dispatch-creation")
    except IreeError as e:
        return first_error_line(e.stderr)
    return None


@needs_iree
@pytest.mark.slow
@pytest.mark.parametrize(("seed", "target"), [(4, "x86_64-avx2"), (11, "x86_64-avx512")])
def test_random_program_plans_compile(seed: int, target: str) -> None:
    """The chosen plan compiles whole; where the model's own choice does not (seed 11 on AVX-512, at this
    writing: a batched matmul, bias, collapse and the next matmul's set_encoding in one dispatch, over the
    stack limit, which no codegen-limit table predicts), the check excluded a dispatch to get there."""
    unchecked = explore(program(seed), target, compile_check=False)
    ex = explore(program(seed), target)
    check = ex.compile_check
    assert check is not None and check.status == "compiles", check
    assert whole_plan_error(ex) is None
    if whole_plan_error(unchecked) is not None:
        assert check.rounds >= 1 and check.excluded
        assert not violated_conflicts(ex.costs, ex.best.choice)
        for r in check.excluded:  # each rejection is a conflict the final plan avoids
            assert not set(r.nodes) <= set(ex.best.choice.values())


@needs_iree
@pytest.mark.slow
def test_bert_plan_compiles_on_the_default_target() -> None:
    ex = explore(BERT, "host")
    check = ex.compile_check
    assert check is not None and check.status == "compiles", check
    assert whole_plan_error(ex) is None


@needs_iree
@pytest.mark.slow
@settings(max_examples=examples(10))
@given(programs(), st.sampled_from(["x86_64-avx2", "x86_64-avx512", "aarch64-neon"]))
def test_random_programs_plans_compile(text: str, target: str) -> None:
    """The property the check gives (the ``--check`` properties run without it, at 600 examples): the
    chosen plan of a random program, its new dispatches compiled alone, compiles whole."""
    ex = explore(text, target, start="input", baseline=True)
    check = ex.compile_check
    assert check is not None and check.status == "compiles", (check, text)
    # A dispatch our IREE emission cannot write alone (a dynamic plan spelled with packs: neither can it the
    # whole plan, emit.iree's limit, not the check's) is reported as not checked: nothing to compile.
    assume(not check.skipped)
    assert whole_plan_error(ex) is None, text


def _reject(rejected: Callable[[str], bool], calls: list[list[str]]):
    """A compiler that rejects every dispatch whose text is ``rejected`` (and records what it was asked)."""

    def compile_units(texts, target):
        calls.append(list(texts))
        return [("error: rejected by the test" if rejected(t) else None) for t in texts], len(texts)

    return compile_units


def fused_dispatch() -> cc.Unit:
    """The dispatch of seed 4's best plan on AVX2 that has both set_encodings fused into it."""
    ex = explore(program(4), "x86_64-avx2", compile_check=False)
    units = cc.plan_units(ex.data, ex.best, "main", ex.target)
    assert isinstance(units, list)
    fused = [u for u in units if "set_encoding" in u.label]
    assert fused, "the model's plan fuses a set_encoding into a dispatch"
    return fused[0]


@needs_iree
def test_a_rejected_dispatch_becomes_a_conflict_and_is_avoided(monkeypatch: pytest.MonkeyPatch) -> None:
    """Seed 4 on AVX2: the model fuses both set_encodings into the contraction's dispatch. Rejecting that
    dispatch makes its nodes a conflict, and the plan chosen next has another."""
    fused = fused_dispatch()
    calls: list[list[str]] = []
    monkeypatch.setattr(cc, "compile_units", _reject(lambda t: t == fused.text, calls))
    ex = explore(program(4), "x86_64-avx2", baseline=False)
    check = ex.compile_check
    assert check is not None and check.status == "compiles" and check.rounds >= 1
    assert [r.label for r in check.excluded] == [fused.label]
    assert check.excluded[0].error == "error: rejected by the test"
    assert fused.nodes in ex.costs.conflicts or any(set(c) <= set(fused.nodes) for c in ex.costs.conflicts)
    assert not violated_conflicts(ex.costs, ex.best.choice)
    assert fused.text in calls[0] and all(fused.text not in texts for texts in calls[1:])
    units = cc.plan_units(ex.data, ex.best, "main", ex.target)
    assert isinstance(units, list) and fused.text not in {u.text for u in units}


@needs_iree
def test_a_plan_no_alternative_avoids_keeps_it_and_says_so(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(cc, "compile_units", _reject(lambda t: "linalg.generic" in t, []))
    ex = explore(program(4), "x86_64-avx2", baseline=False)
    check = ex.compile_check
    assert check is not None and check.status == "rejected" and check.kept
    assert "IREE rejects" in check.summary() and any(line.startswith("  kept: ") for line in check.details())


@needs_iree
def test_answers_are_cached(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.delenv(CACHE_ENV, raising=False)  # only the user's cache (the suite shares another)
    monkeypatch.setenv("EGG_DISPATCH_CACHE_DIR", str(tmp_path))
    one = explore(program(4), "x86_64-avx2", baseline=False).compile_check
    two = explore(program(4), "x86_64-avx2", baseline=False).compile_check
    assert one is not None and two is not None
    assert one.checked >= 1 and one.compiled == one.checked
    assert two.compiled == 0 and two.checked == one.checked and two.status == one.status
    assert len(list((tmp_path / cc.CACHE_FOLDER).glob("*.json"))) == one.compiled


def run_cli(*argv: str) -> tuple[int, str]:
    """``egg-dispatch explore ARGV`` in this process: (exit code, stdout)."""
    done = cli_process("explore", *argv)
    return done.returncode, done.stdout


@needs_iree
def test_report_lines(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    src = tmp_path / "seed4.mlir"
    src.write_text(program(4))
    fused = fused_dispatch()
    monkeypatch.setattr(cc, "compile_units", _reject(lambda t: t == fused.text, []))
    rc, out = run_cli(str(src), "--target", "x86_64-avx2", "--baseline", "modelled")
    assert rc == 0
    lines = out.splitlines()
    summary = next(line for line in lines if "compile check:" in line)
    assert summary.startswith("  compile check: the plan compiles (") and " re-extraction(s))" in summary
    # the report wraps a line at 160 characters: an excluded dispatch's error may be on the lines after it
    at = [i for i, line in enumerate(lines) if line.startswith("    excluded: ")]
    assert len(at) == 1
    entry = " ".join(x.strip() for x in lines[at[0] : at[0] + 3])
    assert ": error: rejected by the test" in entry and all(len(x) <= 160 for x in lines)
    # a cache of its own: in the first one the rejection is known now, and imposed before extraction
    monkeypatch.setenv("EGG_DISPATCH_CACHE_DIR", str(tmp_path / "json"))
    rc, out = run_cli(str(src), "--target", "x86_64-avx2", "--baseline", "modelled", "--emit", "json")
    data = json.loads(out)["compile_check"]
    assert data["seeded"] == 0
    assert data["status"] == "compiles" and data["rounds"] >= 1 and len(data["excluded"]) == 1
    assert data["excluded"][0]["error"] == "error: rejected by the test"
    rc, out = run_cli(str(src), "--target", "x86_64-avx2", "--no-compile-check")
    assert "  compile check: not checked (turned off by --no-compile-check)" in out.splitlines()


def test_without_iree_the_report_says_not_checked(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    import egg_dispatch.iree.tools as tools

    monkeypatch.setattr(tools, "iree_available", lambda: False)
    src = tmp_path / "seed4.mlir"
    src.write_text(program(4))
    rc, out = run_cli(str(src), "--target", "x86_64-avx2", "--from", "input", "--baseline", "modelled")
    assert rc == 0
    assert "  compile check: not checked (IREE is not installed)" in out.splitlines()


def test_the_ilp_imposes_the_conflicts_greedy_avoids() -> None:
    """A conflict no plan avoids (the root's only node) is not imposed, and no longer lifts the others: the
    ILP still avoids the avoidable one (a compile check's conflicts next to an unavoidable table conflict)."""
    from egg_dispatch.cost import CostTable, NodeCost
    from egg_dispatch.extract.ilp import solve_ilp
    from tests.test_extract import build

    g = build({"R": [("f", "F", ("A", "B"))], "A": [("a1", "A1", ()), ("a2", "A2", ())],
               "B": [("b1", "B1", ()), ("b2", "B2", ())]}, "R")  # fmt: skip
    prices = {"f": 0.0, "a1": 1.0, "a2": 2.0, "b1": 1.0, "b2": 3.0}
    costs = CostTable({n: NodeCost(s, 0.0, 0.0) for n, s in prices.items()}, conflicts=(("f",), ("a1", "b1")))
    r = solve_ilp(g, costs, 0.0)
    assert r.choice == {"R": "f", "A": "a2", "B": "b1"}
    assert violated_conflicts(costs, r.choice) == [("f",)]


@needs_iree
def test_known_rejections_are_conflicts_before_the_first_extraction(monkeypatch: pytest.MonkeyPatch) -> None:
    """What IREE rejected in one exploration (its conflicts, kept per e-graph in the user's cache) is imposed
    before the next exploration of the same program extracts: no re-extraction, and the rejected dispatch
    is never compiled (nor extracted) again."""
    fused = fused_dispatch()
    calls: list[list[str]] = []
    monkeypatch.setattr(cc, "compile_units", _reject(lambda t: t == fused.text, calls))
    one = explore(program(4), "x86_64-avx2", baseline=False).compile_check
    assert one is not None and one.rounds >= 1 and one.seeded == 0 and len(one.excluded) == 1
    calls.clear()
    ex = explore(program(4), "x86_64-avx2", baseline=False)
    two = ex.compile_check
    assert two is not None and two.status == "compiles" and two.rounds == 0 and not two.excluded
    assert two.seeded >= 1 and "known rejection(s) avoided from the start" in two.summary()
    assert all(fused.text not in texts for texts in calls)
    assert not violated_conflicts(ex.costs, ex.best.choice)
    # --no-compile-check imposes nothing: the check's knowledge is the check's
    off = explore(program(4), "x86_64-avx2", baseline=False, compile_check=False)
    assert off.compile_check is not None and off.compile_check.seeded == 0
    units = cc.plan_units(off.data, off.best, "main", off.target)
    assert isinstance(units, list) and fused.text in {u.text for u in units}


def _hold_highs(monkeypatch: pytest.MonkeyPatch, real_exact_ilp, done) -> None:  # type: ignore[no-untyped-def]
    """Explore's HiGHS starts solving only once ``done`` is set (by the round ahead, faked or real)."""
    import egg_dispatch.pipeline as pipeline

    def exact_ilp(*args, solving=None, **kwargs):  # type: ignore[no-untyped-def]
        def then_wait(start):  # type: ignore[no-untyped-def]
            if solving is not None:
                solving(start)
            done.wait(120)

        return real_exact_ilp(*args, solving=then_wait, **kwargs)

    monkeypatch.setattr(pipeline, "exact_ilp", exact_ilp)


@needs_iree
@pytest.mark.parametrize(
    ("seed", "rejecting"), [(7, False), (7, True), (1, False)], ids=["taken", "taken-rejects", "not-taken"]
)
def test_the_round_done_while_highs_solves_ends_as_the_check_alone(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, seed: int, rejecting: bool
) -> None:
    """While HiGHS proves optimal the plan it started from, explore emits that plan and runs the check's
    first round on it (``start_ahead``); when HiGHS chooses it (seed 7), the check takes that round instead
    of compiling again; when HiGHS chooses another (seed 1), the round is not taken. Forced here (HiGHS
    waits for the round): the same plan, rounds, exclusions and count of compiled dispatches as without
    the round, and, when it was taken, IREE asked the same (once each)."""
    import threading

    import egg_dispatch.pipeline as pipeline

    text = program(seed)  # HiGHS decides its plan (seed 4's is enumerated)
    unchecked = explore(text, "x86_64-avx2", baseline=False, compile_check=False)
    units = cc.plan_units(unchecked.data, unchecked.best, "main", unchecked.target)
    assert isinstance(units, list) and unchecked.best.extraction is not None
    assert unchecked.best.extraction.method == "ilp-highs"
    victim = next(u for u in units if u.text and not u.skipped).text
    real_start_ahead, real_exact_ilp = cc.start_ahead, pipeline.exact_ilp

    def run(ahead: bool, cache: Path) -> tuple[Exploration, list[str], list[object]]:
        calls: list[list[str]] = []
        done, made = threading.Event(), []
        monkeypatch.setenv("EGG_DISPATCH_CACHE_DIR", str(cache))  # known rejections apart
        monkeypatch.setattr(cc, "compile_units", _reject(lambda t: rejecting and t == victim, calls))

        def start_ahead(*args, **kwargs):  # type: ignore[no-untyped-def]
            if not ahead:
                made.append(None)
                done.set()
                return None
            try:
                finish = real_start_ahead(*args, **kwargs)
            except BaseException:
                done.set()
                raise

            def finished():  # type: ignore[no-untyped-def]
                try:
                    made.append(finish())
                    return made[-1]
                finally:
                    done.set()

            return finished

        monkeypatch.setattr(pipeline, "start_ahead", start_ahead)
        _hold_highs(monkeypatch, real_exact_ilp, done)
        ex = explore(text, "x86_64-avx2", baseline=False)
        return ex, [t for texts in calls for t in texts], made

    alone, asked_alone, _ = run(False, tmp_path / "alone")
    ahead, asked_ahead, made = run(True, tmp_path / "ahead")
    assert len(made) == 1 and isinstance(made[0], cc.Ahead)  # HiGHS solved, and the round ran meanwhile
    taken = made[0].choice == unchecked.best.choice  # greedy's plan was HiGHS's answer
    assert taken == (seed == 7)
    one, two = alone.compile_check, ahead.compile_check
    assert one is not None and two is not None
    assert (two.status, two.rounds, two.checked, two.shared, two.compiled) == (
        one.status,
        one.rounds,
        one.checked,
        one.shared,
        one.compiled,
    )
    assert [r.label for r in two.excluded] == [r.label for r in one.excluded]
    assert bool(one.excluded) == rejecting
    assert ahead.best.choice == alone.best.choice
    e1, e2 = alone.best.extraction, ahead.best.extraction
    assert e1 is not None and e2 is not None and (e2.objective, e2.method) == (e1.objective, e1.method)
    if taken:
        assert sorted(asked_ahead) == sorted(asked_alone)


@needs_iree
def test_a_round_ahead_that_fails_leaves_explore_as_without_it(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """The round ahead is a head start only: when it raises (here forced), explore makes and checks the
    chosen plan after HiGHS, as without it."""
    import threading

    import egg_dispatch.pipeline as pipeline

    text = program(7)
    monkeypatch.setenv("EGG_DISPATCH_CACHE_DIR", str(tmp_path / "alone"))
    alone = explore(text, "x86_64-avx2", baseline=False)
    tried: list[bool] = []
    done = threading.Event()

    def failing(*args, **kwargs):  # type: ignore[no-untyped-def]
        tried.append(True)
        done.set()
        raise RuntimeError("no head start")

    monkeypatch.setattr(pipeline, "start_ahead", failing)
    _hold_highs(monkeypatch, pipeline.exact_ilp, done)
    monkeypatch.setenv("EGG_DISPATCH_CACHE_DIR", str(tmp_path / "failing"))
    ex = explore(text, "x86_64-avx2", baseline=False)
    assert tried == [True]
    one, two = alone.compile_check, ex.compile_check
    assert one is not None and two is not None
    assert (two.status, two.checked, two.shared) == (one.status, one.checked, one.shared)
    assert ex.best.choice == alone.best.choice


@needs_iree
def test_a_round_split_over_several_runs_answers_as_one_run_per_dispatch(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """``compile_units`` splits ``MIN_PER_PROCESS`` or more dispatches per CPU over side-by-side runs:
    each dispatch gets the answer it gets compiled alone, rejections included (two dispatches spoiled
    here, one in each run), in the order given."""
    texts: list[str] = []
    for seed in range(12):
        ex = explore(program(seed), "x86_64-avx2", baseline=False, compile_check=False)
        units = cc.plan_units(ex.data, ex.best, "main", ex.target)
        assert isinstance(units, list)
        texts += [u.text for u in units if u.text and not u.skipped and u.text not in texts]
        if len(texts) >= 2 * cc.MIN_PER_PROCESS + 2:
            break
    spoiled = [t.replace("linalg.", "linalg.no_such_", 1) for t in (texts[1], texts[-2])]
    texts[1], texts[-2] = spoiled
    target = load_target("x86_64-avx2")
    runs: list[int] = []  # chunks per iree-compile run
    real_compile = tools.compile_module

    def counted(text, **kwargs):  # type: ignore[no-untyped-def]
        runs.append(text.count("// -----\n") + 1)
        return real_compile(text, **kwargs)

    monkeypatch.setattr(tools, "compile_module", counted)
    monkeypatch.setattr(cc, "usable_cpus", lambda: 2)
    monkeypatch.setenv("EGG_DISPATCH_CACHE_DIR", str(tmp_path / "split"))
    together, compiled = cc.compile_units(texts, target)
    assert compiled == len(texts) and sorted(runs) == sorted([len(texts) // 2, len(texts) - len(texts) // 2])
    monkeypatch.setenv("EGG_DISPATCH_CACHE_DIR", str(tmp_path / "alone"))
    alone = [cc.compile_units([t], target)[0][0] for t in texts]
    assert together == alone
    assert [e is not None for e in together] == [t in spoiled for t in texts]
    assert all("no_such_" in (e or "") for e in together if e is not None)


@needs_iree
def test_irees_plan_tested_for_membership_while_iree_compiles_is_the_answer_after(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """While the round ahead waits for IREE's compiles, explore tests whether IREE's own plan (priced by
    then) is one of the e-graph's plans; the CLI takes that answer (``iree_plan_membership``), which
    must be the test's answer made afterwards, from scratch. HiGHS is held for the round, and the round
    for IREE's plan."""
    import threading
    import time

    import egg_dispatch.pipeline as pipeline
    from egg_dispatch.egraph.membership import NORMALIZATIONS, plan_membership
    from egg_dispatch.util.deadline import Deadline

    monkeypatch.setenv("EGG_DISPATCH_CACHE_DIR", str(tmp_path))
    priced, done = threading.Event(), threading.Event()
    real_price, real_start = pipeline.price_iree_own, pipeline.start_ahead

    def price(*args, **kwargs):  # type: ignore[no-untyped-def]
        try:
            return real_price(*args, **kwargs)
        finally:
            priced.set()

    def start_ahead(*args, **kwargs):  # type: ignore[no-untyped-def]
        finish = real_start(*args, **kwargs)
        priced.wait(120)
        time.sleep(0.3)  # the future holding IREE's plan is answered right after the pricing returns

        def finished():  # type: ignore[no-untyped-def]
            try:
                return finish()
            finally:
                done.set()

        return finished

    monkeypatch.setattr(pipeline, "price_iree_own", price)
    monkeypatch.setattr(pipeline, "start_ahead", start_ahead)
    _hold_highs(monkeypatch, pipeline.exact_ilp, done)
    ex = explore(program(7), "x86_64-avx2", iree_own_plan=True)
    assert done.is_set() and ex.iree_own is not None and ex.iree_own.explored is not None
    assert ex.iree_own_membership is not None  # found out while IREE compiled
    own = ex.iree_own.explored
    fresh = plan_membership(
        ex.data, ex.imported, own.data, own.best.choice, own.imported, NORMALIZATIONS, Deadline(ex.stage_seconds)
    )
    taken = pipeline.iree_plan_membership(ex, ex.iree_own)
    assert taken is ex.iree_own_membership[0]
    assert taken == fresh


def test_a_dispatch_repeated_layer_after_layer_is_emitted_once_for_all() -> None:
    """``plan_units`` emits one text per distinct dispatch (``alone_structure``: the module alone without
    SSA names): on a two-layer encoder every dispatch and encode of the second layer has the first one's
    structure, and structures are equal exactly where the emitted texts are (each op emitted on its own,
    the reference), so sharing an emission changes no unit's text."""
    sys.path.insert(0, str(ROOT / "benchmarks"))
    try:
        from generate import transformer  # type: ignore[import-not-found]
    finally:
        sys.path.remove(str(ROOT / "benchmarks"))
    text, _ = transformer(2)
    ex = explore(text, "x86_64-avx2", start="input", compile_check=False, baseline=False)
    from egg_dispatch.emit.iree.module import needs_materialization

    physical = needs_materialization(ex.best.mlir, ex.target)
    ops = [
        op
        for op in ex.best.mlir.function(ex.imported.function).regions[0].entry.ops
        if op.name in ("flow.dispatch.region", "iree_encoding.set_encoding")
    ]
    keys = [cc.alone_structure(op) for op in ops]
    texts = [cc.emitted_alone(op, ex.imported.function, ex.target, physical) for op in ops]
    assert all(t for t, _ in texts), "every unit of this plan can be emitted alone"
    for i in range(len(ops)):
        for j in range(i):
            assert (keys[i] == keys[j]) == (texts[i] == texts[j]), (i, j)
    assert len(set(keys)) <= len(keys) // 2 + 1, "the second layer repeats the first"
    units = cc.plan_units(ex.data, ex.best, ex.imported.function, ex.target)
    assert isinstance(units, list)
    assert sorted(u.text for u in units if u.label.startswith("dispatch")) == sorted(
        t for op, (t, _) in zip(ops, texts, strict=True) if op.name == "flow.dispatch.region"
    )
