"""Which plan ``explore`` recommends: ours, or IREE's own when the model cannot tell them apart.

The model's prediction of how much faster one plan is than another has an error of its own:
``benchmarks/bench_fidelity.py`` measured the median |log(predicted ratio / measured ratio)| between
a plan of ours and IREE's own plan at 5.2% over 124 plans of 25 programs (Intel Xeon with AVX-512,
calibrated host profile, IREE 3.13, December 2026; 8.5% before the transient step was priced). The
runs with the bias after the unpack priced as well had 2.8% and 3.6%, and the runs with the memory
knee, the matvec fits and the slice copies 3.5-4.6% (``notebooks/data/fidelity.json`` holds the last):
the default stays at the more conservative 5% it was set from. In two of those runs, before clones
were priced per dispatch, a GPT-2 plan that computes a contraction in two dispatches was priced 0.5 µs
too low, predicted 5.2% faster than IREE's plan and measured 1.04-1.05x: 5% is a floor, not a margin. A
plan predicted faster than IREE's by less than that is not known to be faster: on the PyTorch
blocks such predicted ties measured 4-23% slower than IREE's plan. So explore keeps IREE's own plan
unless ours is predicted faster by at least ``MIN_GAIN``; ``tune`` measures instead of guessing.
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
