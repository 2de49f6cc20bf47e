"""Which plan ``explore`` recommends: ours, or IREE's own when the model cannot tell them apart.

The model's prediction of how much faster one plan is than another has an error of its own, which
``benchmarks/bench_fidelity.py`` measures between plans of ours and IREE's own plan: a median of about
3-5% of the ratio on a calibrated profile (docs/measurements.md §2.5). A plan predicted faster than IREE's
by less than that is not known to be faster, and such predicted ties have measured slower than IREE's
plan; 5% is a floor, not a margin. So explore keeps IREE's own plan unless ours is predicted faster by at
least ``MIN_GAIN``; ``tune`` measures instead of guessing.
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["MIN_GAIN", "Decision", "decide"]

MIN_GAIN = 0.05
"""Smallest predicted gain over IREE's own plan (a fraction of its time) for which explore chooses ours."""


@dataclass(frozen=True)
class Decision:
    keep_iree: bool
    """True: IREE's own plan is the recommendation (ours is not predicted faster by ``min_gain``)."""
    reason: str


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
