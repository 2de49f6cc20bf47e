"""Which plan ``explore`` recommends: ours, or IREE's own when the model cannot tell them apart.

The model's prediction of how much faster one plan is than another has an error of its own, which
``benchmarks/bench_fidelity.py`` measures between plans of ours and IREE's own plan: a median of about
3-5% of the ratio on a calibrated profile (docs/measurements.md §2.5). A plan predicted faster than IREE's
by less than that is not known to be faster, and such predicted ties have measured slower than IREE's
plan; 5% is a floor, not a margin. So explore keeps IREE's own plan unless ours is predicted faster by at
least ``MIN_GAIN``; ``tune`` measures instead of guessing.

When IREE is installed and this machine is the target, ``explore`` measures instead
(``measure.recommend``): ours is recommended only when the dispatches it does not share with IREE's plan
measure faster (their 95% interval clear of zero, the whole call confirming), and the decision carries
that measurement (``Measured``). Otherwise the decision is the model's, labelled ``model only`` with the
reason it was not measured (``Decision.not_measured``).
"""

from __future__ import annotations

from dataclasses import dataclass, replace

__all__ = ["MEASURED", "MIN_GAIN", "MODEL_ONLY", "Decision", "Measured", "decide"]

MIN_GAIN = 0.05
"""Smallest predicted gain over IREE's own plan (a fraction of its time) for which explore chooses ours."""


MODEL_ONLY = "model only"
MEASURED = "measured"


@dataclass(frozen=True)
class Measured:
    """The differential measurement behind a decision (``measure.recommend``): ours against IREE's own plan."""

    verdict: str
    """``faster`` (ours), ``within`` (resolved, not faster), ``slower`` (clear of zero above), ``cannot tell``
    (the budget ended first) or ``failed`` (ours could not be compiled, run or matched: ``detail`` says why)."""
    rounds: int = 0
    max_rounds: int = 0
    ended: str = ""
    """What ended the sampling (``stats.Comparison.ended``): ``target width reached after 3 rounds``, ..."""
    mean: float | None = None
    lo: float | None = None
    hi: float | None = None
    """The 95% interval of (ours - IREE's) in the dispatches that differ, over IREE's whole call."""
    matched_by: str = ""
    """``flow`` (the differing dispatches, matched by content) or ``whole call``."""
    ours_only: tuple[str, ...] = ()
    iree_only: tuple[str, ...] = ()
    call_ratio: float | None = None
    """Ours' median whole call over IREE's."""
    cached: bool = False
    """Read from the measurement cache (``<cache dir>/recommend``), not measured in this run."""
    recorded: int = 0
    """Computations' measured times this run recorded in the measurement cache (``cost.measured``)."""
    detail: str = ""
    """``failed``: why; otherwise, for a dynamic program, the sizes it was measured at."""

    @property
    def stopped_early(self) -> bool:
        """Sampling ended before the round budget (resolved, or the time budget ended)."""
        return 0 < self.rounds < self.max_rounds

    def interval_text(self) -> str:
        if self.mean is None or self.lo is None or self.hi is None:
            return "no interval"
        return f"{self.mean:+.1%} [{self.lo:+.1%}, {self.hi:+.1%}]"

    def summary(self) -> str:
        """One line for the text report."""
        if self.verdict == "failed":
            return f"measured: ours could not be measured ({self.detail})"
        what = "the dispatches that differ" if self.matched_by == "flow" else "the whole call"
        out = f"measured on this machine: ours - IREE's in {what} {self.interval_text()} of IREE's call (95%)"
        out += f", {self.rounds} of at most {self.max_rounds} rounds"
        if self.stopped_early:
            out += f", stopped early: {self.ended}"
        elif self.ended:
            out += f" ({self.ended})"
        if self.call_ratio is not None:
            out += f"; whole call ours/IREE {self.call_ratio:.3f}"
        if self.detail:
            out += f"; {self.detail}"
        if self.cached:
            out += "; from the cache"
        if self.recorded:
            out += f"; {self.recorded} computation time(s) recorded for the cost model"
        return out

    def to_json(self) -> dict[str, object]:
        return {
            "verdict": self.verdict,
            "interval": None if self.mean is None else {"mean": self.mean, "lo": self.lo, "hi": self.hi},
            "rounds": self.rounds,
            "max_rounds": self.max_rounds,
            "ended": self.ended,
            "stopped_early": self.stopped_early,
            "matched_by": self.matched_by,
            "ours_only": list(self.ours_only),
            "iree_only": list(self.iree_only),
            "call_ratio": self.call_ratio,
            "cached": self.cached,
            "recorded": self.recorded,
            "detail": self.detail,
        }


@dataclass(frozen=True)
class Decision:
    keep_iree: bool
    """True: IREE's own plan is the recommendation (ours is not predicted faster by ``min_gain``)."""
    reason: str
    basis: str = MODEL_ONLY
    """``measured`` (``measured`` says how) or ``model only`` (``not_measured`` says why)."""
    not_measured: str = ""
    measured: Measured | None = None

    def model_only(self, why: str) -> Decision:
        """This decision, labelled as the model's alone because of ``why``."""
        return replace(self, basis=MODEL_ONLY, not_measured=why, measured=None)

    def basis_line(self) -> str:
        """The text report's line under the recommendation."""
        if self.basis == MEASURED and self.measured is not None:
            return self.measured.summary()
        return f"model only: not measured ({self.not_measured or 'no measurement'})"

    def to_json(self) -> dict[str, object]:
        out: dict[str, object] = {"keep_iree": self.keep_iree, "reason": self.reason, "basis": self.basis}
        if self.basis == MODEL_ONLY:
            out["not_measured"] = self.not_measured
        if self.measured is not None:
            out["measurement"] = self.measured.to_json()
        return out


def decide(ours_seconds: float, iree_seconds: float | None, min_gain: float = MIN_GAIN) -> Decision:
    """Ours unless IREE's plan is known (priced) and ours is not predicted ``min_gain`` faster than it;
    ``min_gain`` 0 asks for ours always, even where it is predicted slower (the CLI's "0: always ours")."""
    if iree_seconds is None or iree_seconds <= 0:
        return Decision(False, "IREE's own plan is not available to compare with: ours is chosen")
    gain = 1.0 - ours_seconds / iree_seconds
    ours_us, iree_us = ours_seconds * 1e6, iree_seconds * 1e6
    if min_gain == 0:
        return Decision(
            False,
            f"ours, as --min-gain 0 asks: predicted {ours_us:.2f} us against IREE's own plan's {iree_us:.2f} us "
            f"({gain:+.1%})",
        )
    if gain >= min_gain:
        return Decision(
            False, f"ours is predicted {gain:.1%} faster than IREE's own plan ({ours_us:.2f} vs {iree_us:.2f} us)"
        )
    return Decision(
        True,
        f"IREE's own plan is kept: ours is predicted {ours_us:.2f} us against its {iree_us:.2f} us "
        f"({gain:+.1%}), not the {min_gain:.0%} faster that the model's error between plans requires "
        "(--min-gain; `tune` measures both)",
    )
