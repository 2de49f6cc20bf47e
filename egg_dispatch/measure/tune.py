"""``egg-dispatch tune``: measure the candidate plans on this machine and keep the fastest.

A model ranks plans; only the machine says which is fastest. ``tune()`` takes the candidates worth
measuring: the ``top_k`` best distinct plans by the model (the exact ILP with no-good cuts,
``extract.k_best``), every plan of the time/memory frontier, and IREE's own plan (the input compiled
by ``iree-compile`` with data tiling, the normal pipeline). Ours are emitted with ``--emit iree``
inside the input's own ABI (``emit.iree.abi``) and deduplicated by that text (two e-graph choices that
print the same module are one candidate). Every module is compiled (``jobs`` in parallel), run on
seeded inputs and compared with the NumPy evaluator of the input program; a candidate IREE rejects or
that computes other numbers is reported with the reason (IREE's first error line) and excluded.

The rest are timed by ``iree-benchmark-module`` on the single-threaded ``local-sync`` device,
interleaved (A, B, C, A, B, C, ...) so that load from other processes hits all alike, each round with
IREE's host-execution profiling (per-dispatch kernel times, ``iree.profiling``) and without it (the
call's time). A plan of ours is chosen over IREE's own only when its median is lower, it was faster
than IREE's in at least two thirds of the rounds, *and* its gain exceeds the scatter of its own rounds
((max - min) / median) and of IREE's undisturbed ones (2 (median - min) / median: other work on the
machine only adds time) and ``MIN_GAIN``: a win inside the noise is not a win, and then IREE's plan
is the answer (speedup 1.00, said plainly). bench_fidelity found wins of 0.15-0.3% that a fresh run
reversed, a 1.7% win on a program whose IREE rounds spread 11%, and 1.1-1.5% wins in every round of
tightly scattered runs that measured 1.003-1.006x IREE's in a fresh process.

Every profiled dispatch of our plans is attributed to the computations it fuses (by the plan graph's
per-dispatch node list, in proportion to their modelled times) and recorded in the measurement cache
(``cost.measured``), so later explorations price those computations by measurement.
"""

from __future__ import annotations

import re
import tempfile
import time
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
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
from egg_dispatch.iree.tools import DEFAULT_MIN_TIME, IreeError, benchmark_module, compile_module, run_module
from egg_dispatch.measure.measured_plan import MeasuredPlan
from egg_dispatch.mlir.ops import sym_name
from egg_dispatch.pipeline import explore, for_iree, iree_plan
from egg_dispatch.result.exploration import Candidate, Exploration
from egg_dispatch.target.profile import Target, load_target

__all__ = [
    "DEFAULT_REPEATS",
    "DEFAULT_TOP_K",
    "TuneCandidate",
    "TuneReport",
    "attribute_dispatch_times",
    "candidate_plans",
    "choose_winner",
    "tune",
]

DEFAULT_TOP_K = 8
DEFAULT_REPEATS = 5
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
    """The module compiled (``--emit iree`` text; None for IREE's own plan, compiled from the input)."""
    dispatch_seconds: dict[str, float] = field(default_factory=dict)
    """Fastest kernel seconds per executable function over the rounds (IREE's profile)."""
    chosen: bool = False
    also: list[str] = field(default_factory=list)
    """Labels of other candidates that emitted the same module."""
    choosable: bool = True
    """False: a plan measured beside the candidates for comparison (``tune(extra_plans=...)``), never
    chosen."""


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


def candidate_plans(ex: Exploration, max_candidates: int) -> list[tuple[str, Candidate]]:
    """Our candidates, in the order they are considered: the model's best, its k best, the frontier."""
    out: list[tuple[str, Candidate]] = [("ours: best", ex.best)]
    seen = {id(ex.best)}
    for c in ex.top:
        if id(c) not in seen:
            seen.add(id(c))
            out.append((f"ours: {c.label}", c))
    for c in ex.pareto:
        if id(c) not in seen and c.choice != ex.best.choice:
            seen.add(id(c))
            out.append((f"ours: frontier {c.label}", c))
    return out[:max_candidates]


def our_candidates(ex: Exploration, max_candidates: int) -> list[tuple[str, Candidate]]:
    """The plans of ours ``tune`` measures for a budget of ``max_candidates``: one is IREE's own."""
    return candidate_plans(ex, max(1, max_candidates - 1))


_DISPATCH = re.compile(r"^(?P<func>.+)_dispatch_(?P<n>\d+)(?:_|$)")
_ENCODING = re.compile(r"^_encoding_(?P<n>\d+)(?:_|$)")


def attribute_dispatch_times(candidate: Candidate, dispatch_seconds: dict[str, float]) -> list[tuple[str, float]]:
    """(node signature, seconds) for every computation of ``candidate`` a profiled kernel time covers.

    IREE numbers executables in program order (``<func>_dispatch_<N>_...`` for the N-th dispatch,
    ``_encoding_<N>_...`` for the N-th encode or decode); ``candidate.dispatch_order`` says which plan
    dispatch each one is. A dispatch's kernel time is shared among the computations it fuses in
    proportion to their modelled times. Dispatches IREE deduplicated (their ordinal has no function of
    its own) are left out rather than guessed; when IREE ran more dispatches than the plan lists, the
    ordinals do not line up and nothing is attributed."""
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
    out: list[tuple[str, float]] = []
    counters = {"dispatch": 0, "encode": 0}
    for kind, eclass in candidate.dispatch_order:
        n = counters[kind]
        counters[kind] += 1
        took = (dispatches if kind == "dispatch" else encodes).get(n)
        info = by_name.get(f"dispatch:{eclass}")
        if took is None or info is None:
            continue
        total = sum(s for _, s in info.nodes)
        if total <= 0:
            continue
        out += [(sig, took * s / total) for sig, s in info.nodes if sig is not None]
    return out


def _tolerance(ex: Exploration) -> float:
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
    measured: MeasuredTimes | None = None,
    parameters: Parameters | None = None,
    explore_options: dict | None = None,
    seed: int = 0,
    progress: Callable[[str, int, int], None] | None = None,
    clock: Callable[[], float] = time.monotonic,
    extra_plans: Callable[[Exploration], Sequence[tuple[str, Candidate]]] | None = None,
) -> TuneReport:
    """Measure IREE's own plan and ours for ``source`` and choose the fastest (module docstring).

    ``extra_plans``: more (label, plan) pairs of the same program, compiled, checked and timed with the
    candidates but never chosen (``TuneCandidate.choosable``): a fidelity benchmark's wider sample."""
    start = clock()
    say = progress or (lambda _m, _d, _t: None)
    tgt = load_target(target) if isinstance(target, str) else target
    data_tiling, cpu, others = iree_compile_flags(tgt)
    say("exploring", 0, 1)
    ex = explore(source, tgt, pareto=True, top_k=top_k, measured=measured, **(explore_options or {}))
    fname = ex.imported.function
    shell = abi_shell(ex.module, fname)
    entry = fname
    if shell is not None and shell.wrappers:
        entry = sym_name(shell.wrappers[0])
    notes: list[str] = []
    plans = [(label, c, True) for label, c in our_candidates(ex, max_candidates)]
    plans += [(label, c, False) for label, c in (extra_plans(ex) if extra_plans is not None else ())]
    cands = _emitted(plans, tgt, shell)
    predicted, modelled = _iree_prediction(ex, source, tgt, notes)
    iree = TuneCandidate("IREE 3.13 (own plan)", True, predicted)
    cands.insert(0, iree)
    report = TuneReport(
        fname, tgt.name, cands, repeats, True, notes=notes, exploration=ex, tolerance=_tolerance(ex),
        iree_from_own_plan=predicted is not None and not modelled,
    )  # fmt: skip

    as_read = for_iree(source)  # what IREE's plan is made from: the program explore read (pipeline.prepare_input)

    def build(tc: TuneCandidate) -> None:
        try:
            if tc.is_iree:
                tc.vmfb = compile_module(as_read, data_tiling=data_tiling, target_cpu=cpu, extra_flags=others)
            else:
                assert tc.text is not None
                tc.vmfb = compile_module(
                    tc.text, data_tiling=False, target_cpu=cpu, extra_flags=others, compile_from="dispatch-creation"
                )
        except IreeError as e:
            tc.error = f"IREE rejected it: {first_error_line(e.stderr) if e.stderr else str(e).splitlines()[0]}"

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
    inputs = function_inputs(select_function(ex.module, fname), seed)
    reference = evaluate(ex.module, inputs, function=fname, parameters=parameters)
    files = [(p.scope, str(p.path)) for p in parameters.files] if parameters is not None else []
    for tc in cands:
        _check_numbers(tc, entry, inputs, reference, files, report.tolerance)
    timed = [c for c in cands if c.vmfb is not None and c.error is None]
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
        steps = repeats * len(timed)
        for r in range(repeats):
            if max_seconds is not None and r > 0 and clock() - start > max_seconds:
                report.stopped = f"time budget ({max_seconds:g} s) reached after {r} of {repeats} rounds"
                break
            for i, (tc, module) in enumerate(zip(timed, modules, strict=True)):
                say(f"timing round {r + 1}/{repeats}", r * len(timed) + i, steps)
                tc.measured.append(benchmark_module(module, entry, paths, min_time=min_time, parameters=files))
                if not tc.is_iree:
                    prof: DispatchTimes = profile_module(
                        module, entry, [np.load(p) for p in paths], min_time=min_time / 2, call_time=False,
                        parameters=files,
                    )  # fmt: skip
                    for name, s in prof.seconds.items():
                        tc.dispatch_seconds[name] = min(s, tc.dispatch_seconds.get(name, s))
        say("timed", steps, steps)
    choose_winner(report, timed)
    if measured is not None:
        where = str(source) if isinstance(source, Path) or "\n" not in str(source) else "<text>"
        for tc in timed:
            if tc.candidate is not None and tc.dispatch_seconds:
                obs = attribute_dispatch_times(tc.candidate, tc.dispatch_seconds)
                report.cache_records += measured.record(obs, f"tune {where} {tc.label}")
    return report


def _emitted(plans: Sequence[tuple[str, Candidate, bool]], tgt: Target, shell: AbiShell | None) -> list[TuneCandidate]:
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


def _check_numbers(
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
    """The fastest plan by median; one of ours only if it also beat IREE's in most rounds, by more than
    its own rounds scatter and IREE's undisturbed ones do (``_spread``)."""
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
        rounds = list(zip(c.measured, iree.measured, strict=False))
        wins = sum(1 for a, b in rounds if a < b)
        assert c.median is not None and iree.median is not None  # both in ranked: measured
        gain = 1.0 - c.median / iree.median
        # beyond the scatter of our plan's rounds and of IREE's undisturbed ones. The challenger must be
        # fast in every round: 1.0-1.5% wins of plans whose rounds scattered 1.5-7.5% (int8 MLP, the
        # 3.9 ms MLP, LLaMA) measured 1.01-1.03x IREE's in fresh runs, and with several candidates one
        # wins by chance. IREE's plan is the reference, and other work on the machine only adds time:
        # one disturbed round of it (3.9, 7.1, 4.0 µs) must not hide a 48% win
        spread = max(_spread(iree.measured, lower_half=True), _spread(c.measured))
        most_rounds = bool(rounds) and wins >= WIN_FRACTION * len(rounds)
        if most_rounds and gain > max(spread, MIN_GAIN):
            c.chosen = True
            return
        if most_rounds and gain <= spread:
            why = f"{gain:.1%} below IREE's, inside the scatter of the rounds ({spread:.1%})"
        elif most_rounds:
            why = f"{gain:.1%} below IREE's, less than a fresh process moves a module by ({MIN_GAIN:.0%})"
        else:
            why = f"below IREE's but faster in only {wins} of {len(rounds)} rounds"
        report.notes.append(f"{c.label}: median {why}: within noise")
