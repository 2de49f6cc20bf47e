"""``egg-dispatch tune``: measure the candidate plans on this machine against IREE's own and give a verdict.

A model ranks plans; only the machine says which is fastest. ``tune()`` takes the candidates worth
measuring: the ``top_k`` best distinct plans by the model (the exact ILP with no-good cuts,
``extract.k_best``), every plan of the time/memory frontier, and IREE's own plan (the input compiled
by ``iree-compile`` with data tiling, the normal pipeline). Ours are emitted with ``--emit iree``
inside the input's own ABI (``emit.iree.abi``) and deduplicated by that text (two e-graph choices that
print the same module are one candidate). Every module is compiled (``jobs`` in parallel), run on
seeded inputs and compared with the NumPy evaluator of the input program; a candidate IREE rejects or
that computes other numbers is reported with the reason (IREE's first error line) and excluded.

The rest are timed on the single-threaded ``local-sync`` device in interleaved rounds, each plan paired
with IREE's own plan (``measure.stats``: reference first, then the plans, the next round reversed). A
round of a plan is its whole call (``iree-benchmark-module``) and IREE's host-execution profile of it
(per-dispatch kernel times, ``iree.profiling``). What is compared is *what differs*
(``measure.differential``): the kernel time of the dispatches, encodes and copies a candidate does not
share with IREE's plan (matched by their content at IREE's flow phase) minus IREE's counterparts, over
IREE's whole call -- one paired difference per round, whose 95% interval narrows round by round until it
is ``target_width`` wide (or clear of zero) or the rounds or seconds of the budget end. The whole call
stays as the confirmation: a plan the differing dispatches find faster is chosen only if its whole calls
beat IREE's too (``confirms``: in two thirds of the rounds, by more than the scatter of the rounds and
``MIN_GAIN``: bench_fidelity found wins of 0.15-0.3% that a fresh run reversed, a 1.7% win on a program
whose IREE rounds spread 11%, and 1.1-1.5% wins in every round of tightly scattered runs that measured
1.003-1.006x IREE's in a fresh process). The answer is one of three verdicts (``stats.verdict``): ours
is faster by X% (interval clear of zero), IREE's plan is within eps of the best plan measured, or cannot
tell within this budget (and why). Ranking quality is reported as the autotuning literature does:
Kendall's tau of predicted against measured order, top-1 and top-5 regret.

The candidates of ours are the model's k best *distinct in priced decisions*: plans the model prices
identically (equal predicted time to the hundredth of a microsecond and the same priced computations in
the same dispatches, ``priced_key``) are one candidate, so k plans are asked of the extractor for every
candidate wanted (``EXTRACTED_PER_CANDIDATE``) and the first k distinct kept.

Every profiled dispatch of our plans is attributed to the computations it fuses (by the plan graph's
per-dispatch node list, in proportion to their modelled times) and recorded in the measurement cache
(``cost.measured``), so later explorations price those computations by measurement.
"""

from __future__ import annotations

import functools
import os
import re
import tempfile
import time
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import cast

import numpy as np

from egg_dispatch.cost import MeasuredTimes
from egg_dispatch.emit.iree.abi import AbiShell, abi_shell
from egg_dispatch.emit.iree.module import emit_iree, runnable_here
from egg_dispatch.evaluate import evaluate, select_function
from egg_dispatch.evaluate.check import function_inputs, relative_error
from egg_dispatch.evaluate.parameters import Parameters
from egg_dispatch.iree.dispatch_creation import first_error_line, iree_compile_flags
from egg_dispatch.iree.profiling import DispatchTimes, profile_module
from egg_dispatch.iree.tools import (
    DEFAULT_MIN_TIME,
    IreeError,
    benchmark_module,
    compile_module,
    compile_text,
    run_module,
)
from egg_dispatch.measure.differential import FLOW_FLAGS, Unshared, executable_keys, per_call, relative_gain, unshared
from egg_dispatch.measure.measured_plan import MeasuredPlan
from egg_dispatch.measure.stand_in import runtime_parameters
from egg_dispatch.measure.stats import (
    Comparison,
    Interval,
    Sampling,
    StopRule,
    Verdict,
    kendall_tau,
    paired_interval,
    regret,
    sample_paired,
)
from egg_dispatch.measure.stats import verdict as stats_verdict
from egg_dispatch.mlir.ops import sym_name
from egg_dispatch.pipeline import explore, for_iree, iree_plan
from egg_dispatch.plan.graph import DispatchInfo
from egg_dispatch.result.exploration import Candidate, Exploration
from egg_dispatch.target.profile import Target, load_target

__all__ = [
    "DEFAULT_REPEATS",
    "DEFAULT_TARGET_WIDTH",
    "DEFAULT_TOP_K",
    "EXTRACTED_PER_CANDIDATE",
    "TuneCandidate",
    "TuneReport",
    "attribute_dispatch_times",
    "build_candidate",
    "candidate_plans",
    "check_numbers",
    "choose_winner",
    "confirms",
    "decide",
    "distinct_plans",
    "emitted_candidates",
    "kernel_times",
    "measurement_sizes",
    "paired_difference",
    "priced_key",
    "tolerance_of",
    "tune",
    "vmfb_sampler",
]

DEFAULT_TOP_K = 8
DEFAULT_REPEATS = 10
"""The most interleaved rounds (the stopping rule's round budget)."""
DEFAULT_TARGET_WIDTH = 0.02
"""The width of the differing dispatches' 95% interval, as a fraction of IREE's call, that ends sampling."""
EXTRACTED_PER_CANDIDATE = 3
"""Plans asked of the extractor per distinct candidate wanted (many of the k best price alike)."""
WIN_FRACTION = 2 / 3
"""Rounds in which a plan of ours must beat IREE's own to be chosen over it."""
MIN_GAIN = 0.02
"""The least gain over IREE's own plan that counts, however tight the rounds: the same module moves
by 1-5% from one process to the next (its memory layout), which interleaved rounds in one process do
not see."""


@dataclass(kw_only=True)
class TuneCandidate(MeasuredPlan):
    """One plan measured by ``tune`` (``MeasuredPlan``), with what the choice and the cache need."""

    candidate: Candidate | None = None
    text: str | None = None
    """The module compiled (``--emit iree`` text; for IREE's own plan None, compiled from the input, or its
    dispatch-creation output, resumed from there like ours)."""
    dispatch_seconds: dict[str, float] = field(default_factory=dict)
    """Fastest kernel seconds per executable function over the rounds (IREE's profile)."""
    chosen: bool = False
    also: list[str] = field(default_factory=list)
    """Labels of other candidates that emitted the same module."""
    choosable: bool = True
    """False: a plan measured beside the candidates for comparison (``tune(extra_plans=...)``), never
    chosen."""
    flow_keys: dict[str, str] | None = None
    """Executable function -> content key (``differential.executable_keys``); None: not compiled to flow."""
    diffs: list[float] = field(default_factory=list)
    """Per round: (its differing dispatches' kernel time - IREE's counterparts') / IREE's whole call (for
    IREE's plan, and when a side has no flow keys: the whole calls' relative difference)."""
    matched_by: str = ""
    """``flow`` (the differing dispatches, matched by content) or ``whole call`` (no match possible)."""
    unshared: Unshared | None = None
    ended: str = ""
    """What ended its sampling (``stats.Comparison.ended``)."""
    merged: list[str] = field(default_factory=list)
    """Labels of plans the model prices identically to this one (one candidate, ``priced_key``)."""

    @property
    def interval(self) -> Interval | None:
        """95% interval of ``diffs`` (below zero: faster than IREE's plan)."""
        return paired_interval(self.diffs)


@dataclass
class TuneReport:
    function: str
    target: str
    candidates: list[TuneCandidate]
    repeats: int
    ran: bool
    reason: str = ""
    notes: list[str] = field(default_factory=list)
    tolerance: float = 1e-5
    cache_records: int = 0
    """Node times recorded in the measurement cache by this run."""
    exploration: Exploration | None = None
    iree_from_own_plan: bool = False
    """IREE's prediction is its own plan costed by our model (not our model of its passes)."""
    stopped: str = ""
    """Why timing stopped before ``repeats`` rounds (empty: it did not)."""
    rule: StopRule = field(default_factory=StopRule)
    verdict: Verdict | None = None
    ended: str = ""
    """What ended the sampling as a whole."""
    extracted: int = 0
    """Plans the extractor gave for the k best (before merging those priced identically)."""

    def call_interval(self, c: TuneCandidate) -> Interval | None:
        """95% interval of ``c``'s whole call against IREE's, (c - IREE) / IREE per round: a plan is timed
        in the first rounds only (until its interval is precise enough), so its rounds pair with IREE's
        first ones."""
        iree = self.iree
        if iree is None or c is iree:
            return None
        return paired_interval([(a - b) / b for a, b in zip(c.measured, iree.measured, strict=False) if b > 0])

    def _ranked(self) -> tuple[list[float], list[float]]:
        both = [c for c in self.candidates if c.predicted_seconds is not None and c.median and c.error is None]
        return [cast(float, c.predicted_seconds) for c in both], [cast(float, c.median) for c in both]

    @property
    def kendall_tau(self) -> float | None:
        """Kendall's tau-b of predicted against measured (whole-call medians) over the plans timed."""
        return kendall_tau(*self._ranked())

    def regret(self, top: int) -> float | None:
        """Top-``top`` regret of the model's order (``stats.regret``) over the plans timed."""
        return regret(*self._ranked(), top)

    @property
    def iree(self) -> TuneCandidate | None:
        return next((c for c in self.candidates if c.is_iree), None)

    @property
    def winner(self) -> TuneCandidate | None:
        return next((c for c in self.candidates if c.chosen), None)

    @property
    def speedup(self) -> float | None:
        """IREE's own plan's median over the chosen plan's (1.00: nothing beat IREE)."""
        w, i = self.winner, self.iree
        if w is None or i is None or not w.median or not i.median:
            return None
        return i.median / w.median

    @property
    def model_best(self) -> TuneCandidate | None:
        return next((c for c in self.candidates if c.label == "ours: best" or "ours: best" in c.also), None)


def measurement_sizes(result: Exploration) -> tuple[dict[str, int] | None, str]:
    """A dynamic program's sizes to measure at, the heaviest of those its cost is averaged over, and how
    the report names them; (None, "") for a static one. ``bench`` and ``tune`` time at the same sizes."""
    plan = result.sizes
    if plan is None or not plan.dynamic or not plan.configs:
        return None, ""
    env, _ = max(plan.configs, key=lambda c: c[1])
    named = ", ".join(f"{k}={v}" for k, v in sorted(env.items()))
    more = f" (the heaviest of {len(plan.configs)} size configurations priced)" if len(plan.configs) > 1 else ""
    return dict(env), f"at {named}{more}"


def priced_key(c: Candidate) -> tuple:
    """What the model prices of a plan: its predicted time to the hundredth of a microsecond and, per
    dispatch, the priced computations it runs (node signatures) and its time to the hundredth of a
    microsecond. Plans with one key are one candidate: the model cannot tell them apart."""
    dispatches = sorted(
        (tuple(sorted(sig for sig, _ in d.nodes if sig is not None)), round(d.seconds * 1e8)) for d in c.plan.dispatches
    )
    return (round(c.metrics.run_seconds * 1e8), tuple(dispatches))


def distinct_plans(
    ex: Exploration, top_k: int | None = None
) -> tuple[list[tuple[str, Candidate]], dict[str, list[str]]]:
    """The model's best and its k best (``top_k``, default all), one per ``priced_key``: (label, plan) pairs
    in the model's order, and per label kept the labels of the plans merged into it."""
    out: list[tuple[str, Candidate]] = []
    merged: dict[str, list[str]] = {}
    keys: dict[tuple, str] = {}
    seen: set[int] = set()
    for label, c in [("ours: best", ex.best), *((f"ours: {c.label}", c) for c in ex.top)]:
        if id(c) in seen:
            continue
        seen.add(id(c))
        key = priced_key(c)
        if key in keys:
            merged[keys[key]].append(label)
            continue
        if top_k is not None and len(out) >= top_k:
            continue
        keys[key] = label
        merged[label] = []
        out.append((label, c))
    return out, merged


def candidate_plans(ex: Exploration, max_candidates: int, top_k: int | None = None) -> list[tuple[str, Candidate]]:
    """Our candidates, in the order they are considered: the model's best, its k best distinct in priced
    decisions (``distinct_plans``), the frontier."""
    out, _ = distinct_plans(ex, top_k)
    seen = {id(c) for _, c in out} | {id(c) for c in ex.top}
    keys = {priced_key(c) for _, c in out}
    for c in ex.pareto:
        if id(c) not in seen and c.choice != ex.best.choice and priced_key(c) not in keys:
            seen.add(id(c))
            keys.add(priced_key(c))
            out.append((f"ours: frontier {c.label}", c))
    return out[:max_candidates]


def our_candidates(ex: Exploration, max_candidates: int, top_k: int | None = None) -> list[tuple[str, Candidate]]:
    """The plans of ours ``tune`` measures for a budget of ``max_candidates``: one is IREE's own."""
    return candidate_plans(ex, max(1, max_candidates - 1), top_k)


_DISPATCH = re.compile(r"^(?P<func>.+)_dispatch_(?P<n>\d+)(?:_|$)")
_ENCODING = re.compile(r"^_encoding_(?P<n>\d+)(?:_|$)")


def kernel_times(candidate: Candidate, dispatch_seconds: dict[str, float]) -> list[tuple[DispatchInfo, float]]:
    """(plan dispatch, its measured kernel seconds) for every run-time dispatch of ``candidate`` a profiled
    executable is.

    IREE numbers executables in program order (``<func>_dispatch_<N>_...`` for the N-th dispatch,
    ``_encoding_<N>_...`` for the N-th encode or decode); ``candidate.dispatch_order`` says which plan
    dispatch each one is. Dispatches IREE deduplicated (their ordinal has no function of its own) are
    left out rather than guessed; when IREE ran more dispatches than the plan lists, or the executables
    belong to several functions, the ordinals do not line up and nothing is returned."""
    dispatches: dict[int, float] = {}
    encodes: dict[int, float] = {}
    funcs: set[str] = set()
    for name, seconds in dispatch_seconds.items():
        if m := _ENCODING.match(name):
            encodes[int(m["n"])] = seconds
        elif m := _DISPATCH.match(name):
            dispatches[int(m["n"])] = seconds
            funcs.add(m["func"])
    if len(funcs) > 1:  # dispatches of several functions: ordinals are per function, not ours alone
        return []
    kinds = [kind for kind, _ in candidate.dispatch_order]
    if max(dispatches, default=-1) >= kinds.count("dispatch") or max(encodes, default=-1) >= kinds.count("encode"):
        # IREE numbered executables the plan does not list (a slice between dispatches that IREE runs as
        # a copy dispatch of its own): from there on ordinal N is not the plan's N-th dispatch
        return []
    by_name = {d.name: d for d in candidate.plan.dispatches}
    out: list[tuple[DispatchInfo, float]] = []
    counters = {"dispatch": 0, "encode": 0}
    for kind, eclass in candidate.dispatch_order:
        n = counters[kind]
        counters[kind] += 1
        took = (dispatches if kind == "dispatch" else encodes).get(n)
        info = by_name.get(f"dispatch:{eclass}")
        if took is not None and info is not None:
            out.append((info, took))
    return out


def attribute_dispatch_times(candidate: Candidate, dispatch_seconds: dict[str, float]) -> list[tuple[str, float]]:
    """(node signature, seconds) for every computation of ``candidate`` a profiled kernel time covers
    (``kernel_times``): a dispatch's kernel time is shared among the computations it fuses in proportion
    to their modelled times."""
    out: list[tuple[str, float]] = []
    for info, took in kernel_times(candidate, dispatch_seconds):
        total = sum(s for _, s in info.nodes)
        if total <= 0:
            continue
        out += [(sig, took * s / total) for sig, s in info.nodes if sig is not None]
    return out


def tolerance_of(ex: Exploration) -> float:
    """1e-5 of the largest result for f32 programs; f16 / bf16 arithmetic gets 1e-2 (their epsilon is ~1e-3)."""
    text = " ".join(str(v.type) for op in ex.module.walk() for v in op.results)
    return 1e-2 if ("f16" in text or "bf16" in text) else 1e-5


def _iree_prediction(
    ex: Exploration, source: str | Path, target: Target, notes: list[str]
) -> tuple[float | None, bool]:
    """Our model's time for IREE's own plan: the plan IREE printed (from the start-state run, else a
    dispatch-creation compile), costed; our model of IREE's passes when that fails (then True)."""
    text = ex.input.iree_plan if ex.input is not None and ex.input.iree_plan else None
    try:
        found = iree_plan(text if text is not None else source, target, ex.imported.function)
    except (IreeError, ValueError, KeyError, OSError) as e:
        plan, why = None, str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
    else:
        plan, why = found, found.error or ""
    if plan is not None and plan.candidate is not None:
        return plan.metrics.run_seconds, False
    if ex.baseline is not None:
        notes.append(f"IREE's plan is predicted by our model of its passes (its own plan not costed: {why})")
        return ex.baseline.metrics.run_seconds, True
    notes.append(f"our model did not cost IREE's own plan: {why}")
    return None, False


def tune(
    source: str | Path,
    target: str | Target,
    *,
    top_k: int = DEFAULT_TOP_K,
    max_candidates: int = 16,
    repeats: int = DEFAULT_REPEATS,
    min_time: float = DEFAULT_MIN_TIME,
    jobs: int = 2,
    max_seconds: float | None = None,
    target_width: float = DEFAULT_TARGET_WIDTH,
    measured: MeasuredTimes | None = None,
    parameters: Parameters | None = None,
    explore_options: dict | None = None,
    seed: int = 0,
    progress: Callable[[str, int, int], None] | None = None,
    clock: Callable[[], float] = time.monotonic,
    extra_plans: Callable[[Exploration], Sequence[tuple[str, Candidate]]] | None = None,
) -> TuneReport:
    """Measure IREE's own plan and ours for ``source`` and choose the fastest (module docstring).

    ``repeats``: the most interleaved rounds; ``max_seconds``: no round starts after that many seconds
    of the whole run (one always runs); ``target_width``: the differing dispatches' interval width that
    is precise enough (``stats.StopRule``). ``extra_plans``: more (label, plan) pairs of the same program,
    compiled, checked and timed with the candidates but never chosen (``TuneCandidate.choosable``): a
    fidelity benchmark's wider sample."""
    start = clock()
    say = progress or (lambda _m, _d, _t: None)
    tgt = load_target(target) if isinstance(target, str) else target
    say("exploring", 0, 1)
    asked = top_k * EXTRACTED_PER_CANDIDATE
    ex = explore(source, tgt, pareto=True, top_k=asked, measured=measured, **(explore_options or {}))
    fname = ex.imported.function
    shell = abi_shell(ex.module, fname)
    entry = fname
    if shell is not None and shell.wrappers:
        entry = sym_name(shell.wrappers[0])
    notes: list[str] = []
    _, merged = distinct_plans(ex, top_k)
    plans = [(label, c, True) for label, c in our_candidates(ex, max_candidates, top_k)]
    plans += [(label, c, False) for label, c in (extra_plans(ex) if extra_plans is not None else ())]
    cands = emitted_candidates(plans, tgt, shell)
    for tc in cands:
        tc.merged = merged.get(tc.label, [])
    predicted, modelled = _iree_prediction(ex, source, tgt, notes)
    iree = TuneCandidate("IREE 3.13 (own plan)", True, predicted)
    cands.insert(0, iree)
    rule = StopRule(target_width, min(3, repeats), repeats, max_seconds)  # max_seconds: of the whole run
    report = TuneReport(
        fname, tgt.name, cands, repeats, True, notes=notes, exploration=ex, tolerance=tolerance_of(ex),
        iree_from_own_plan=predicted is not None and not modelled, rule=rule,
        extracted=len({id(c) for c in (ex.best, *ex.top)}),
    )  # fmt: skip

    as_read = for_iree(source)  # what IREE's plan is made from: the program explore read (pipeline.prepare_input)
    build = functools.partial(build_candidate, as_read=as_read, target=tgt)
    todo = [c for c in cands if c.error is None]
    done = 0
    with ThreadPoolExecutor(max_workers=max(1, jobs)) as pool:
        for _ in pool.map(build, todo):
            done += 1
            say("compiled", done, len(todo))
    ok, why = runnable_here(tgt)
    if not ok:
        report.ran, report.reason = False, why
        return report
    env, _ = measurement_sizes(ex)  # a dynamic program: the heaviest sizes its cost averages over
    inputs = function_inputs(select_function(ex.module, fname), seed, env)
    reference = evaluate(ex.module, inputs, function=fname, parameters=parameters)
    with runtime_parameters(ex.module, parameters) as files:  # given, else the evaluator's stand-ins
        for tc in cands:
            check_numbers(tc, entry, inputs, reference, files, report.tolerance)
        timed = [c for c in cands if c.vmfb is not None and c.error is None]
        sampling = _measure(report.rule, timed, entry, inputs, files, min_time, (clock, start), say)
    report.ended = sampling.ended
    if "time budget" in sampling.ended:
        report.stopped = sampling.ended
    for comp in sampling.comparisons:
        tc = timed[comp.plan]
        tc.diffs, tc.ended = comp.diffs, comp.ended
    decide(report, timed, sampling.comparisons)
    if measured is not None:
        where = str(source) if isinstance(source, Path) or "\n" not in str(source) else "<text>"
        for tc in timed:
            if tc.candidate is not None and tc.dispatch_seconds:
                obs = attribute_dispatch_times(tc.candidate, tc.dispatch_seconds)
                report.cache_records += measured.record(obs, f"tune {where} {tc.label}")
    return report


def build_candidate(tc: TuneCandidate, *, as_read: str | os.PathLike[str], target: Target) -> None:
    """Compile ``tc`` (IREE's plan from the input with data tiling, ours from its ``--emit iree`` text, and
    IREE's from its dispatch-creation output when that is its ``text``, as ``explore`` measures it) and
    read its flow-phase executables (``differential.executable_keys``); IREE's rejection is its ``error``."""
    data_tiling, cpu, others = iree_compile_flags(target)
    try:
        if tc.is_iree and tc.text is None:
            tc.vmfb = compile_module(as_read, data_tiling=data_tiling, target_cpu=cpu, extra_flags=others)
        else:
            assert tc.text is not None
            tc.vmfb = compile_module(
                tc.text, data_tiling=False, target_cpu=cpu, extra_flags=others, compile_from="dispatch-creation"
            )
    except IreeError as e:
        tc.error = f"IREE rejected it: {first_error_line(e.stderr) if e.stderr else str(e).splitlines()[0]}"
        return
    try:  # the flow phase, whose executables say which dispatches two plans share (measure.differential)
        if tc.is_iree and tc.text is None:
            flow = compile_text(as_read, data_tiling=data_tiling, target_cpu=cpu, extra_flags=[*others, *FLOW_FLAGS])
        else:
            assert tc.text is not None
            flags = [*others, "--compile-from=dispatch-creation", *FLOW_FLAGS]
            flow = compile_text(tc.text, data_tiling=False, target_cpu=cpu, extra_flags=flags)
        tc.flow_keys = executable_keys(flow)
    except IreeError:
        tc.flow_keys = None  # compared by the whole call


def _measure(
    rule: StopRule,
    timed: list[TuneCandidate],
    entry: str,
    inputs: Sequence[np.ndarray],
    files: Sequence[tuple[str | None, str]],
    min_time: float,
    clock: tuple[Callable[[], float], float],
    say: Callable[[str, int, int], None],
) -> Sampling:
    """Interleaved rounds of ``timed`` (``timed[0]`` the reference) under ``rule``: per plan and round its
    whole call and its profile (``_Sample``); ``clock``: the clock and the reading the budget counts from.
    Nothing to compare (one plan or none): no rounds."""
    if len(timed) < 2:
        return Sampling([[] for _ in timed], [], 0, "nothing to compare with")
    with vmfb_sampler(timed, entry, inputs, files, min_time) as sample:

        def progress_of(r: int, active: list[int]) -> None:
            say(f"timing round {r + 1} (at most {rule.max_rounds}), {len(active)} plan(s) open", r, rule.max_rounds)

        sampling = sample_paired(
            sample,
            len(timed) - 1,
            rule,
            difference=paired_difference(timed),
            clock=clock[0],
            started=clock[1],
            progress=progress_of,
        )
        say("timed", rule.max_rounds, rule.max_rounds)
    return sampling


type _Sample = tuple[float, dict[str, tuple[int, float, str]] | None]
"""One round of one plan: its whole call's seconds and its profile per content key (``differential.per_call``)."""


@contextmanager
def vmfb_sampler(
    timed: Sequence[TuneCandidate],
    entry: str,
    inputs: Sequence[np.ndarray],
    files: Sequence[tuple[str | None, str]],
    min_time: float,
) -> Iterator[Callable[[int], _Sample]]:
    """``sample(i)``: one round of the compiled ``timed[i]`` (``stats.sample_paired``'s sampler): its whole
    call (``iree-benchmark-module``, appended to its ``measured``) and its host-execution profile (its
    fastest time per executable kept in ``dispatch_seconds``), keyed by content when it has flow keys."""
    with tempfile.TemporaryDirectory(prefix="egg_dispatch_tune_") as tmp:
        paths = []
        for i, x in enumerate(inputs):
            paths.append(Path(tmp) / f"input{i}.npy")
            np.save(paths[-1], x)
        modules = []
        for i, tc in enumerate(timed):
            modules.append(Path(tmp) / f"plan{i}.vmfb")
            assert tc.vmfb is not None  # timed: the compiled candidates
            modules[-1].write_bytes(tc.vmfb)

        def sample(i: int) -> _Sample:
            tc = timed[i]
            call = benchmark_module(modules[i], entry, paths, min_time=min_time, parameters=files)
            tc.measured.append(call)
            prof: DispatchTimes = profile_module(
                modules[i], entry, inputs, min_time=min_time / 2, call_time=False, parameters=files
            )
            for name, s in prof.seconds.items():
                tc.dispatch_seconds[name] = min(s, tc.dispatch_seconds.get(name, s))
            return call, per_call(prof, tc.flow_keys) if tc.flow_keys is not None else None

        yield sample


def paired_difference(timed: Sequence[TuneCandidate]) -> Callable[[int, _Sample, _Sample], float]:
    """One round's paired difference of plan i against ``timed[0]``: the differing dispatches over the
    reference's whole call when both have flow keys (what they do not share found in the first round),
    else the whole calls' relative difference."""
    ref = timed[0]

    def difference(i: int, x: _Sample, r: _Sample) -> float:
        tc = timed[i]
        if not ref.is_iree or x[1] is None or r[1] is None:
            tc.matched_by = "whole call"
            return (x[0] - r[0]) / r[0]
        if tc.unshared is None:
            tc.unshared = unshared(x[1], r[1])
        tc.matched_by = "flow"
        return relative_gain(x[1], r[1], tc.unshared, r[0])

    return difference


def confirms(iree: TuneCandidate, c: TuneCandidate) -> tuple[bool, str]:
    """Whether ``c``'s whole calls beat IREE's: in two thirds of the rounds, by more than its own rounds
    scatter and IREE's undisturbed ones do (``_spread``) and ``MIN_GAIN``; else why not."""
    rounds = list(zip(c.measured, iree.measured, strict=False))
    wins = sum(1 for a, b in rounds if a < b)
    if c.median is None or not iree.median:
        return False, "not measured"
    gain = 1.0 - c.median / iree.median
    # beyond the scatter of our plan's rounds and of IREE's undisturbed ones. The challenger must be
    # fast in every round: 1.0-1.5% wins of plans whose rounds scattered 1.5-7.5% (int8 MLP, the
    # 3.9 ms MLP, LLaMA) measured 1.01-1.03x IREE's in fresh runs, and with several candidates one
    # wins by chance. IREE's plan is the reference, and other work on the machine only adds time:
    # one disturbed round of it (3.9, 7.1, 4.0 µs) must not hide a 48% win
    spread = max(_spread(iree.measured, lower_half=True), _spread(c.measured))
    most_rounds = bool(rounds) and wins >= WIN_FRACTION * len(rounds)
    if most_rounds and gain > max(spread, MIN_GAIN):
        return True, ""
    if most_rounds and gain <= spread:
        return False, f"median {gain:.1%} below IREE's, inside the scatter of the rounds ({spread:.1%})"
    if most_rounds:
        return False, f"median {gain:.1%} below IREE's, less than a fresh process moves a module by ({MIN_GAIN:.0%})"
    if gain > 0:
        return False, f"median below IREE's but faster in only {wins} of {len(rounds)} rounds"
    return False, f"median {-gain:.1%} above IREE's"


def decide(report: TuneReport, timed: list[TuneCandidate], comparisons: Sequence[Comparison]) -> None:
    """The verdict (``stats.verdict``) of the comparisons against IREE's plan, and the plan chosen: the
    faster one when the verdict says so, else IREE's own (``choose_winner`` when IREE's was not measured)."""
    if not timed:
        return
    labels = [c.label for c in timed]
    iree = report.iree
    if iree is None or timed[0] is not iree:
        why = iree.error if iree is not None and iree.error else "it was not compiled"
        text = f"cannot tell within this budget: IREE's own plan was not measured ({why})"
        report.verdict = Verdict("cannot tell", text)
        choose_winner(report, timed)
        return
    choosable = [c for c in comparisons if timed[c.plan].choosable]
    v = stats_verdict(choosable, labels, report.rule, lambda i: confirms(iree, timed[i]))
    report.verdict = v
    if v.kind == "faster" and v.plan is not None:
        timed[v.plan].chosen = True
    else:
        iree.chosen = True


def emitted_candidates(
    plans: Sequence[tuple[str, Candidate, bool]], tgt: Target, shell: AbiShell | None
) -> list[TuneCandidate]:
    """One ``TuneCandidate`` per distinct emitted module of ``plans`` ((label, plan, choosable) each):
    plans that emit the same text are one candidate with the others' labels in ``also``; a plan that
    cannot be emitted is a candidate with its ``error`` (the others still run)."""
    cands: list[TuneCandidate] = []
    by_text: dict[str, TuneCandidate] = {}
    for label, c, choosable in plans:
        try:
            text = emit_iree(c.mlir, tgt, abi=shell)
        except Exception as e:  # a plan we cannot emit is a result, reported
            err = f"not emitted: {e}"
            cands.append(
                TuneCandidate(label, False, c.metrics.run_seconds, error=err, candidate=c, choosable=choosable)
            )
            continue
        if text in by_text:
            by_text[text].also.append(label)
            continue
        tc = TuneCandidate(label, False, c.metrics.run_seconds, candidate=c, text=text, choosable=choosable)
        by_text[text] = tc
        cands.append(tc)
    return cands


def check_numbers(
    tc: TuneCandidate,
    entry: str,
    inputs: Sequence[np.ndarray],
    reference: Sequence[np.ndarray],
    files: Sequence[tuple[str | None, str]],
    tolerance: float,
) -> None:
    """Run a compiled candidate once on ``inputs``; a failure to run or numbers other than ``reference``
    (beyond ``tolerance``) become its ``error``, and it is not timed."""
    if tc.vmfb is None:
        return
    try:
        got = run_module(tc.vmfb, entry, inputs, parameters=files)
    except IreeError as e:
        tc.error = f"failed to run: {first_error_line(e.stderr) if e.stderr else str(e).splitlines()[0]}"
        return
    tc.max_rel_error = max((relative_error(a, b) for a, b in zip(got, reference, strict=True)), default=0.0)
    if not tc.max_rel_error <= tolerance:
        tc.error = f"computes other numbers (max relative error {tc.max_rel_error:.1e} > {tolerance:g})"


def _spread(times: Sequence[float], lower_half: bool = False) -> float:
    """(max - min) / median of one plan's rounds: how far its own measurements scatter (0 for fewer than
    2); ``lower_half``: 2 (median - min) / median, which one disturbed slow round does not widen."""
    if len(times) < 2:
        return 0.0
    ordered = sorted(times)
    mid = ordered[len(ordered) // 2]
    if mid <= 0:
        return 0.0
    return 2 * (mid - ordered[0]) / mid if lower_half else (ordered[-1] - ordered[0]) / mid


def choose_winner(report: TuneReport, timed: list[TuneCandidate]) -> None:
    """The fastest plan by whole-call median; one of ours only if the whole calls confirm it
    (``confirms``). What ``tune`` chooses by when the differing dispatches cannot be compared."""
    # the measured ones, so median is a float
    ranked = sorted((c for c in timed if c.median is not None and c.choosable), key=lambda c: cast(float, c.median))
    if not ranked:
        return
    iree = report.iree
    if iree is None or iree not in ranked:
        ranked[0].chosen = True
        report.notes.append("IREE's own plan was not measured: the fastest of ours is chosen")
        return
    for c in ranked:
        if c is iree:
            c.chosen = True
            return
        ok, why = confirms(iree, c)
        if ok:
            c.chosen = True
            return
        report.notes.append(f"{c.label}: {why}: within noise")
