"""Paired, interleaved comparisons of plans against a reference: intervals, a stopping rule, a verdict.

Numbers in, numbers out: no IREE and no clock of its own. ``sample_paired`` asks a *sampler* (any
callable: ``tune`` passes one that runs IREE, tests pass a fake one that returns fixed sequences) for one
measurement of each plan per round, in an interleaved order (reference first, then the plans; the next
round in reverse, so that a drift of the machine during a round hits both sides of every pair alike), and
turns every (plan, reference) pair of a round into one *difference* (the caller's function: ``tune``'s is
the time of the dispatches the plan does not share with IREE's minus IREE's counterparts, over IREE's
whole call; the default is the relative difference ``(x - r) / r``).

**The interval** is the paired Student-t interval of the mean difference: mean +- t(0.975, n-1) s / sqrt(n).
Why t and not a bootstrap: rounds are few (3 to 20), and a percentile bootstrap of so few values is too
narrow (it cannot reach beyond the values seen, so it covers less than 95%), while t with n-1 degrees of
freedom accounts for estimating the spread from the same few values. Pairing removes what both plans of a
round share (load on the machine at that moment). Timing noise is skewed (other work only adds time): a
disturbed round inflates s and widens the interval, so noise makes the answer "cannot tell", not a wrong
"faster". Relative differences rather than log-ratios: the reference's side of a difference can be zero
(a plan that adds a dispatch where IREE's has none), and a difference over the reference's whole call is
the fraction of the call gained. The quantiles are tabulated (no SciPy): exact to 4 digits for 1-30
degrees of freedom, interpolated in 1/df beyond (error below 1e-3).

**The stopping rule** (``StopRule``): a plan is sampled until its interval is at most ``target_width``
wide (after ``min_rounds``), or clear of zero by more than its own width; all sampling ends when every
plan has stopped, or after ``max_rounds`` rounds, or when ``max_seconds`` have passed (checked before
each round after the first; one round always runs). Each comparison says what ended it. Looking at the
interval after every round makes the 95% slightly optimistic (a sequential test); the target width and
the minimum rounds keep the looks few.

**The verdict** (``verdict``): "ours is faster by X%" when a plan's interval is clear of zero below it and
the whole call confirms it (the caller's ``confirmed``); "IREE's plan is within eps of the best plan
measured" when every plan is resolved (its interval reached the target width, or lies clear of zero) and
none is faster, eps being the largest gain any plan's interval still allows (``max(0, -lo)``); otherwise
"cannot tell within this budget", with the plan, its interval and what ended its sampling.
"""

from __future__ import annotations

import itertools
import math
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

__all__ = [
    "Comparison",
    "Interval",
    "Sampling",
    "StopRule",
    "Verdict",
    "kendall_tau",
    "paired_interval",
    "regret",
    "relative_difference",
    "sample_paired",
    "t_quantile",
    "verdict",
]

_T975 = (12.7062, 4.3027, 3.1824, 2.7764, 2.5706, 2.4469, 2.3646, 2.3060, 2.2622, 2.2281, 2.2010, 2.1788, 2.1604,
         2.1448, 2.1314, 2.1199, 2.1098, 2.1009, 2.0930, 2.0860, 2.0796, 2.0739, 2.0687, 2.0639, 2.0595, 2.0555,
         2.0518, 2.0484, 2.0452, 2.0423)  # fmt: skip
"""Student's t 0.975 quantile for 1..30 degrees of freedom."""
_T975_TAIL = ((30, 2.0423), (40, 2.0211), (60, 2.0003), (120, 1.9799), (math.inf, 1.95996))


def t_quantile(df: int) -> float:
    """Student's t 0.975 quantile (the 95% two-sided interval's factor) for ``df`` degrees of freedom."""
    if df < 1:
        raise ValueError(f"degrees of freedom must be at least 1, got {df}")
    if df <= 30:
        return _T975[df - 1]
    for (d0, t0), (d1, t1) in itertools.pairwise(_T975_TAIL):
        if df <= d1:
            x0, x1, x = 1 / d0, (0.0 if d1 == math.inf else 1 / d1), 1 / df
            return t0 + (t1 - t0) * (x0 - x) / (x0 - x1)
    return _T975_TAIL[-1][1]  # pragma: no cover - df <= inf always ends the loop


@dataclass(frozen=True)
class Interval:
    """A 95% confidence interval of a mean difference (plan minus reference; below zero: the plan is faster)."""

    mean: float
    lo: float
    hi: float
    n: int

    @property
    def width(self) -> float:
        return self.hi - self.lo

    @property
    def clear_of_zero(self) -> bool:
        return self.hi < 0 or self.lo > 0

    def text(self) -> str:
        """``-3.1% [-4.0%, -2.2%]`` (differences relative to the reference)."""
        return f"{self.mean:+.1%} [{self.lo:+.1%}, {self.hi:+.1%}]"

    def to_json(self) -> dict[str, float | int]:
        return {"mean": self.mean, "lo": self.lo, "hi": self.hi, "rounds": self.n}


def paired_interval(diffs: Sequence[float]) -> Interval | None:
    """The paired t interval of ``diffs`` (module docstring); None for fewer than two."""
    n = len(diffs)
    if n < 2:
        return None
    mean = math.fsum(diffs) / n
    var = math.fsum((d - mean) ** 2 for d in diffs) / (n - 1)
    half = t_quantile(n - 1) * math.sqrt(var / n)
    return Interval(mean, mean - half, mean + half, n)


def relative_difference(_plan: int, x: float, ref: float) -> float:
    """``(x - ref) / ref``: the default difference of a pair of times."""
    return (x - ref) / ref


@dataclass(frozen=True)
class StopRule:
    """When to stop sampling (module docstring)."""

    target_width: float = 0.02
    """The interval width, as a fraction of the reference, that is precise enough."""
    min_rounds: int = 3
    max_rounds: int = 10
    max_seconds: float | None = None

    def __post_init__(self) -> None:
        if self.max_rounds < 1 or self.min_rounds < 1 or not self.target_width > 0:
            raise ValueError(f"a stopping rule needs at least one round and a positive width: {self}")


@dataclass
class Comparison:
    """One plan against the reference: the paired differences of its rounds and what ended its sampling."""

    plan: int
    diffs: list[float] = field(default_factory=list)
    ended: str = ""
    """``target width reached after N rounds``, ``clear of zero after N rounds``, ``round budget ended
    after N rounds`` or ``time budget (S s) ended after N rounds``."""

    @property
    def interval(self) -> Interval | None:
        return paired_interval(self.diffs)

    def resolved(self, rule: StopRule) -> bool:
        """Its interval is precise enough (``rule.target_width``) or clear of zero."""
        iv = self.interval
        return iv is not None and (iv.width <= rule.target_width or iv.clear_of_zero)


@dataclass
class Sampling[M]:
    """What ``sample_paired`` measured: every plan's samples (index 0 the reference) and the comparisons."""

    samples: list[list[M]]
    comparisons: list[Comparison]
    rounds: int = 0
    ended: str = ""
    """What ended the sampling as a whole."""


def _done(c: Comparison, rule: StopRule) -> str:
    iv = c.interval
    if iv is None or iv.n < rule.min_rounds:
        return ""
    if iv.width <= rule.target_width:
        return f"target width reached after {iv.n} rounds"
    if iv.clear_of_zero and min(abs(iv.lo), abs(iv.hi)) > iv.width:
        return f"clear of zero after {iv.n} rounds"
    return ""


def sample_paired[M](
    sample: Callable[[int], M],
    plans: int,
    rule: StopRule,
    *,
    difference: Callable[[int, M, M], float] = relative_difference,  # type: ignore[assignment]
    clock: Callable[[], float] = time.monotonic,
    started: float | None = None,
    progress: Callable[[int, list[int]], None] | None = None,
) -> Sampling[M]:
    """Sample the reference (plan 0) and ``plans`` other plans (1..plans) in interleaved rounds under
    ``rule`` (module docstring). ``sample(i)`` measures plan i once; ``difference(i, x, ref)`` is one
    round's paired difference of plan i; ``started``: the ``clock()`` reading ``rule.max_seconds`` counts
    from (default: now); ``progress(round, active plans)`` is told of each round."""
    out: Sampling[M] = Sampling([[] for _ in range(plans + 1)], [Comparison(i) for i in range(1, plans + 1)])
    start = clock() if started is None else started
    active = list(range(1, plans + 1))
    while active:
        r = out.rounds
        if r >= rule.max_rounds:
            out.ended = f"round budget ended after {r} rounds"
            break
        if r > 0 and rule.max_seconds is not None and clock() - start > rule.max_seconds:
            out.ended = f"time budget ({rule.max_seconds:g} s) ended after {r} rounds"
            break
        if progress is not None:
            progress(r, list(active))
        order = [0, *active] if r % 2 == 0 else [*reversed(active), 0]
        got = {i: sample(i) for i in order}
        for i in order:
            out.samples[i].append(got[i])
        out.rounds += 1
        for i in active:
            out.comparisons[i - 1].diffs.append(difference(i, got[i], got[0]))
        for i in list(active):
            why = _done(out.comparisons[i - 1], rule)
            if why:
                out.comparisons[i - 1].ended = why
                active.remove(i)
    if not active and not out.ended:
        out.ended = f"every plan resolved after {out.rounds} rounds"
    for c in out.comparisons:
        c.ended = c.ended or out.ended
    return out


@dataclass(frozen=True)
class Verdict:
    """``tune``'s answer: ``kind`` is ``faster``, ``within`` or ``cannot tell``."""

    kind: str
    text: str
    plan: int | None = None
    """The plan found faster (``faster``) or the one that left the answer open (``cannot tell``)."""
    epsilon: float | None = None
    """``within``: the largest gain over the reference any plan's interval allows."""


def verdict(
    comparisons: Sequence[Comparison],
    labels: Sequence[str],
    rule: StopRule,
    confirmed: Callable[[int], tuple[bool, str]] | None = None,
) -> Verdict:
    """The verdict of the module docstring. ``labels[i]`` names plan i (``labels[0]`` the reference);
    ``confirmed(i)``: (whether the whole call confirms plan i faster, why not)."""
    ref = labels[0]
    faster: list[tuple[Interval, Comparison]] = []
    open_: list[tuple[Comparison, str]] = []
    for c in comparisons:
        iv = c.interval
        if iv is None:
            few = f"{len(c.diffs)} round(s) measured, too few for an interval"
            open_.append((c, f"{labels[c.plan]}: {few} ({c.ended})"))
            continue
        if iv.hi < 0:
            ok, why = confirmed(c.plan) if confirmed is not None else (True, "")
            if ok:
                faster.append((iv, c))
            else:
                open_.append((c, f"{labels[c.plan]} measures {-iv.mean:.1%} faster in the dispatches that differ "
                                 f"({iv.text()}) but the whole call does not confirm it: {why}"))  # fmt: skip
        elif not c.resolved(rule):
            open_.append((c, f"{labels[c.plan]} is {iv.text()} against {ref}, wider than the {rule.target_width:.1%} "
                             f"target ({c.ended})"))  # fmt: skip
    if faster:
        iv, c = min(faster, key=lambda f: f[0].mean)
        text = f"ours is faster by {-iv.mean:.1%} ({labels[c.plan]}: 95% interval {iv.text()}, clear of zero)"
        return Verdict("faster", text, c.plan)
    if open_:
        c, why = max(open_, key=lambda o: o[0].interval.width if o[0].interval is not None else math.inf)
        return Verdict("cannot tell", f"cannot tell within this budget: {why}", c.plan)
    if not comparisons:
        none = "none compiled, ran and matched"
        return Verdict("cannot tell", f"cannot tell within this budget: no plan to compare with {ref} ({none})")
    ivs = [(c.interval, c) for c in comparisons if c.interval is not None]
    eps = max(max(0.0, -iv.lo) for iv, _ in ivs)
    iv, c = min(ivs, key=lambda x: x[0].lo)
    text = (f"{ref} is within {eps:.1%} of the best plan measured (closest: {labels[c.plan]}, 95% interval "
            f"{iv.text()})")  # fmt: skip
    return Verdict("within", text, c.plan, eps)


def kendall_tau(xs: Sequence[float], ys: Sequence[float]) -> float | None:
    """Kendall's tau-b of two orders (ties in either count neither way and shrink the denominator, as
    tau-b does); None for fewer than two items or when a side is all ties."""
    n = len(xs)
    if n != len(ys) or n < 2:
        return None
    conc = disc = tx = ty = 0
    for i in range(n):
        for j in range(i + 1, n):
            dx, dy = xs[i] - xs[j], ys[i] - ys[j]
            if dx == 0 and dy == 0:
                continue
            if dx == 0:
                tx += 1
            elif dy == 0:
                ty += 1
            elif (dx > 0) == (dy > 0):
                conc += 1
            else:
                disc += 1
    denom = math.sqrt((conc + disc + tx) * (conc + disc + ty))
    return (conc - disc) / denom if denom else None


def regret(predicted: Sequence[float], measured: Sequence[float], top: int) -> float | None:
    """Top-``top`` regret: the fastest measured among the ``top`` best predicted, over the fastest measured
    of all, minus one (0: the model's ``top`` picks hold the fastest plan). Ties in prediction keep their
    given order."""
    if not measured or len(predicted) != len(measured):
        return None
    best = min(measured)
    if best <= 0:
        return None
    picks = sorted(range(len(predicted)), key=lambda i: predicted[i])[:top]
    return min(measured[i] for i in picks) / best - 1.0
