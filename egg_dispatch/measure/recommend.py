"""``explore``'s recommendation, measured: ours only when what it does not share with IREE's plan runs faster.

The model's prediction between two plans has an error of several percent, and one mispriced dispatch
kind can make a plan predicted 5% faster run 4.7x slower (issue 52). When IREE is installed and this
machine is the target, ``explore`` therefore measures before it recommends a plan other than IREE's
own: both are compiled (``tune.build_candidate``), run once against the NumPy evaluator
(``tune.check_numbers``), and timed in paired, interleaved rounds (``stats.sample_paired``) in which the
executables ours does not share with IREE's plan (matched by their content at IREE's flow phase,
``measure.differential``) are compared with IREE's counterparts, over IREE's whole call. The rule
(``judge``), the same as ``tune``'s verdict (``stats.verdict``, ``tune.confirms``):

* the 95% interval is clear of zero below it and the whole calls confirm it: **ours**;
* otherwise **IREE's own plan**, and the reason says why: ours measured slower (interval clear of zero
  above), within X% of IREE's plan (the interval resolved, ``X`` the largest gain it still allows), or
  "cannot tell within the budget" (the rounds or seconds ended first); a plan of ours IREE rejects, or
  that computes other numbers, is not recommended either.

**When** (``why_not_measured``): by default only for ``--target host`` (this CPU; a named profile prices
a CPU that may not be this one); a named target when the user asks (``--measure``) and this CPU runs
its code (``emit.iree.device.runnable_here``); never with ``--no-measure``, without IREE, or when the
model does not prefer ours (nothing to measure: IREE's plan is kept on the model's word). The
environment variable ``EGG_DISPATCH_MEASURE=0`` turns the default off (the test suite sets it: its
thousands of explorations must not time anything); ``--measure`` still measures.

**Budget** (``MeasureBudget``): at most ``DEFAULT_ROUNDS`` rounds and ``DEFAULT_SECONDS`` seconds
(``--measure-budget rounds=N,seconds=S``), each measurement ``MIN_TIME`` seconds; sampling stops early
once the interval is ``TARGET_WIDTH`` wide or clear of zero, and the report says what ended it.

**Cache**: an outcome is kept under ``<user cache dir>/egg-dispatch/recommend`` keyed by the two plans'
module texts (IREE's dispatch-creation output and ours as ``--emit iree`` writes it), the target, IREE's
version and this CPU; a later run reuses it when its interval is resolved under the current budget
(narrow enough, or clear of zero), else measures again. **The cost model learns from it**: the kernel time of every
dispatch of ours is attributed to the computations it fuses (``tune.attribute_dispatch_times``) and
recorded in the measurement cache (``cost.measured``), so the next exploration prices them by
measurement -- a dispatch kind measured slower than priced is repriced, and the model stops preferring it.
"""

from __future__ import annotations

import hashlib
import json
import os
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field, replace

from egg_dispatch.cost import MeasuredTimes
from egg_dispatch.evaluate.parameters import Parameters
from egg_dispatch.evaluate.values import EvaluationError
from egg_dispatch.iree.tools import IreeError
from egg_dispatch.measure.stats import Comparison, StopRule, sample_paired
from egg_dispatch.measure.stats import verdict as stats_verdict
from egg_dispatch.measure.tune import (
    DEFAULT_TARGET_WIDTH,
    TuneCandidate,
    attribute_dispatch_times,
    build_candidate,
    check_numbers,
    confirms,
    emitted_candidates,
    measurement_sizes,
    paired_difference,
    tolerance_of,
    vmfb_sampler,
)
from egg_dispatch.result.decision import MEASURED, Decision, Measured
from egg_dispatch.result.exploration import Exploration
from egg_dispatch.target.host import HOST, cache_dir, host_cpu
from egg_dispatch.target.profile import Target
from egg_dispatch.util.files import atomic_write

__all__ = [
    "CACHE_FOLDER",
    "DEFAULT_ROUNDS",
    "DEFAULT_SECONDS",
    "IREE_LABEL",
    "MIN_TIME",
    "OFF_ENV",
    "TARGET_WIDTH",
    "MeasureBudget",
    "Outcome",
    "compare",
    "judge",
    "measure_recommendation",
    "why_not_measured",
]

DEFAULT_ROUNDS = 6
DEFAULT_SECONDS = 20.0
TARGET_WIDTH = DEFAULT_TARGET_WIDTH
MIN_TIME = 0.05
"""Seconds ``iree-benchmark-module`` spends per whole-call measurement (half that per profile)."""
CACHE_FOLDER = "recommend"
CACHE_VERSION = 1
"""Part of every cache key: a change to what an outcome means starts a new cache."""
OFF_ENV = "EGG_DISPATCH_MEASURE"
"""``0`` (or ``off``, ``no``, ``false``): ``explore`` does not measure unless ``--measure`` asks."""
IREE_LABEL = "IREE's own plan"
OURS_LABEL = "ours"

type Sample = tuple[float, dict[str, tuple[int, float, str]] | None]
"""One round of one plan: its whole call's seconds and its profile per content key (``tune``'s)."""


@dataclass(frozen=True)
class MeasureBudget:
    """The most rounds and seconds the measurement may take (``--measure-budget``)."""

    rounds: int = DEFAULT_ROUNDS
    seconds: float = DEFAULT_SECONDS

    def rule(self) -> StopRule:
        return StopRule(TARGET_WIDTH, min(3, self.rounds), self.rounds, self.seconds)


def why_not_measured(
    asked: bool | None, target_spec: str | None, target: Target, *, iree: bool, environ: dict[str, str] | None = None
) -> str | None:
    """None when ``explore`` measures its recommendation, else why not (the ``model only`` label).
    ``asked``: ``--measure`` (True), ``--no-measure`` (False) or neither (None); ``target_spec``: what
    ``--target`` / ``--target-file`` named (``host`` by default)."""
    from egg_dispatch.emit.iree.device import runnable_here

    env = os.environ if environ is None else environ
    if asked is False:
        return "--no-measure"
    if not iree:
        return "IREE is not installed"
    if asked is None:
        if env.get(OFF_ENV, "").strip().lower() in ("0", "off", "no", "false"):
            return f"turned off by {OFF_ENV}={env[OFF_ENV]}"
        if target_spec != HOST:
            return f"the target is {target.name}, not --target host; --measure measures it if this CPU runs it"
    ok, why = runnable_here(target)
    if not ok:
        return f"this machine is not the target ({why})"
    return None


@dataclass
class Outcome:
    """What one measurement found (kept in the cache): per round the paired difference and both whole calls."""

    diffs: list[float] = field(default_factory=list)
    ours_calls: list[float] = field(default_factory=list)
    iree_calls: list[float] = field(default_factory=list)
    ended: str = ""
    matched_by: str = ""
    ours_only: list[str] = field(default_factory=list)
    iree_only: list[str] = field(default_factory=list)
    dispatch_seconds: dict[str, float] = field(default_factory=dict)
    """Ours' fastest kernel seconds per executable function (what the cost model learns from)."""
    at: str = ""
    """A dynamic program: the sizes it was measured at (``arg0.d0=128``), empty for a static one."""

    def comparison(self) -> Comparison:
        return Comparison(1, list(self.diffs), self.ended)

    def answers(self, rule: StopRule) -> bool:
        """Its rounds answer ``rule``: its interval resolved under it (an outcome that could not tell is
        measured again: the machine may be quieter now)."""
        return self.comparison().resolved(rule)


def compare(
    sample: Callable[[int], Sample],
    rule: StopRule,
    *,
    timed: Sequence[TuneCandidate] | None = None,
    clock: Callable[[], float] = time.monotonic,
) -> Outcome:
    """Paired, interleaved rounds of IREE's plan (0) and ours (1) under ``rule``: ``sample(i)`` measures
    plan i once (the real one is ``tune.vmfb_sampler``'s; tests pass fixed sequences). ``timed``: the two
    plans (their ``measured`` and ``dispatch_seconds`` are what the sampler fills)."""
    plans = (
        list(timed)
        if timed is not None
        else [TuneCandidate(IREE_LABEL, True, None), TuneCandidate(OURS_LABEL, False, None)]
    )
    calls: list[list[float]] = [[], []]

    def recording(i: int) -> Sample:
        got = sample(i)
        calls[i].append(got[0])
        return got

    sampling = sample_paired(recording, 1, rule, difference=paired_difference(plans), clock=clock)
    comp = sampling.comparisons[0]
    ours = plans[1]
    diff = ours.unshared
    return Outcome(
        diffs=list(comp.diffs),
        ours_calls=calls[1],
        iree_calls=calls[0],
        ended=comp.ended,
        matched_by=ours.matched_by,
        ours_only=diff.describe("ours") if diff is not None else [],
        iree_only=diff.describe("theirs") if diff is not None else [],
        dispatch_seconds=dict(ours.dispatch_seconds),
    )


def judge(outcome: Outcome, rule: StopRule, *, cached: bool = False) -> Decision:
    """The recommendation ``outcome`` supports (module docstring): ours only when faster, else IREE's plan
    and why."""
    comp = outcome.comparison()
    iree = TuneCandidate(IREE_LABEL, True, None, measured=list(outcome.iree_calls))
    ours = TuneCandidate(OURS_LABEL, False, None, measured=list(outcome.ours_calls))
    v = stats_verdict([comp], [IREE_LABEL, OURS_LABEL], rule, lambda _i: confirms(iree, ours))
    iv = comp.interval
    ratio = ours.median / iree.median if ours.median and iree.median else None
    kind = v.kind
    if kind == "within" and iv is not None and iv.lo > 0:
        kind = "slower"
    measured = Measured(
        kind, len(comp.diffs), rule.max_rounds, comp.ended,
        iv.mean if iv else None, iv.lo if iv else None, iv.hi if iv else None,
        outcome.matched_by, tuple(outcome.ours_only), tuple(outcome.iree_only), ratio, cached, detail=outcome.at,
    )  # fmt: skip
    rounds = f"{len(comp.diffs)} round(s)"
    what = "in the dispatches that differ" if outcome.matched_by == "flow" else "in the whole call"
    if kind == "faster" and iv is not None:
        reason = (f"ours is measured {-iv.mean:.1%} faster than IREE's own plan {what} (95% interval "
                  f"{iv.text()} of its call, clear of zero; the whole call confirms; {rounds})")  # fmt: skip
        return Decision(False, reason, MEASURED, measured=measured)
    if kind == "slower" and iv is not None:
        reason = f"IREE's own plan is kept: ours is measured {iv.mean:.1%} slower {what} ({iv.text()}; {rounds})"
    elif kind == "within" and iv is not None:
        eps = max(0.0, -iv.lo)
        reason = f"IREE's own plan is kept: ours is measured within {eps:.1%} of it {what} ({iv.text()}; {rounds})"
    else:
        why = v.text.removeprefix("cannot tell within this budget: ")
        reason = f"IREE's own plan is kept: cannot tell within the budget ({why})"
    return Decision(True, reason, MEASURED, measured=measured)


def _failed(why: str, rule: StopRule) -> Decision:
    """IREE's plan, because ours could not be measured (rejected by IREE, wrong numbers, not emitted)."""
    m = Measured("failed", 0, rule.max_rounds, detail=why)
    return Decision(True, f"IREE's own plan is kept: ours could not be measured ({why})", MEASURED, measured=m)


# ------------------------------------------------------------------------------------ the cache


def _key(iree_text: str, ours_text: str, target: Target) -> str:
    from egg_dispatch.iree.compile_check import iree_identity

    cpu, _ = host_cpu()
    material = "\0".join([str(CACHE_VERSION), iree_text, ours_text, target.name, iree_identity(), cpu]).encode()
    return hashlib.sha256(material).hexdigest()[:40]


def _load(key: str) -> Outcome | None:
    try:
        data = json.loads((cache_dir() / CACHE_FOLDER / f"{key}.json").read_text())
        return Outcome(**data)
    except (OSError, ValueError, TypeError):
        return None


def _store(key: str, outcome: Outcome) -> None:
    folder = cache_dir() / CACHE_FOLDER
    try:
        folder.mkdir(parents=True, exist_ok=True)
        with atomic_write(folder / f"{key}.json") as f:
            f.write(json.dumps(asdict(outcome)))
    except OSError:  # a read-only cache directory: the outcome is only not kept
        pass


# ------------------------------------------------------------------------------------ the measurement


def measure_recommendation(
    result: Exploration,
    budget: MeasureBudget,
    *,
    parameters: Parameters | None = None,
    measured: MeasuredTimes | None = None,
    seed: int = 0,
    progress: Callable[[str], None] | None = None,
) -> Decision:
    """Measure ``result``'s best plan against IREE's own (``result.iree_plan_text``, compiled from that
    dispatch-creation output as ours is from its ``--emit iree`` text) and decide (module docstring).
    Needs IREE; without IREE's plan text the model's decision stays, labelled model only."""
    from egg_dispatch.emit.iree.abi import abi_shell
    from egg_dispatch.evaluate import evaluate, select_function
    from egg_dispatch.evaluate.check import function_inputs
    from egg_dispatch.measure.stand_in import runtime_parameters
    from egg_dispatch.mlir.ops import sym_name

    say = progress or (lambda _m: None)
    rule = budget.rule()
    tgt, fname = result.target, result.imported.function
    shell = abi_shell(result.module, fname)
    entry = sym_name(shell.wrappers[0]) if shell is not None and shell.wrappers else fname
    if result.iree_plan_text is None:
        return _iree_failed(result, "its dispatch-creation output is not available")
    [ours] = emitted_candidates([(OURS_LABEL, result.best, True)], tgt, shell)
    if ours.error is not None or ours.text is None:
        return _failed(ours.error or "not emitted", rule)
    key = _key(result.iree_plan_text, ours.text, tgt)
    hit = _load(key)
    if hit is not None and hit.answers(rule):
        return judge(hit, rule, cached=True)
    say("measuring ours against IREE's own plan")
    iree = TuneCandidate(IREE_LABEL, True, None, text=result.iree_plan_text)
    for tc in (iree, ours):
        build_candidate(tc, as_read=result.iree_plan_text, target=tgt)
    if iree.error is not None:
        return _iree_failed(result, iree.error)
    func = select_function(result.module, fname)
    env, at = measurement_sizes(result)
    try:
        inputs = function_inputs(func, seed, env)
        reference = evaluate(result.module, inputs, function=fname, parameters=parameters)
        with runtime_parameters(result.module, parameters) as files:
            for tc in (iree, ours):
                check_numbers(tc, entry, inputs, reference, files, tolerance_of(result))
            if iree.error is not None:
                return _iree_failed(result, iree.error)
            if ours.error is not None:
                return _failed(ours.error, rule)
            with vmfb_sampler([iree, ours], entry, inputs, files, MIN_TIME) as sample:
                outcome = compare(sample, rule, timed=[iree, ours])
    except (IreeError, EvaluationError, OSError, ValueError) as e:  # a measurement that could not run
        first = str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
        return _failed(f"the measurement failed: {first}", rule)
    outcome.at = at
    _store(key, outcome)
    decision = judge(outcome, rule)
    if measured is not None and outcome.dispatch_seconds and decision.measured is not None:
        obs = attribute_dispatch_times(result.best, outcome.dispatch_seconds)
        n = measured.record(obs, f"explore {result.module.file} (measured against IREE's own plan)")
        decision = _with_recorded(decision, n)
    return decision


def _iree_failed(result: Exploration, error: str) -> Decision:
    """The model's decision, because IREE's own plan could not be measured to compare with."""
    base = result.decision or Decision(False, "ours (IREE's own plan could not be measured)")
    return base.model_only(f"IREE's own plan could not be measured: {error}")


def _with_recorded(decision: Decision, n: int) -> Decision:
    assert decision.measured is not None
    return replace(decision, measured=replace(decision.measured, recorded=n))
