"""One plan compiled, checked and timed on this CPU: what ``bench`` and ``tune`` both record.

``bench.BenchPlan`` and ``tune.TuneCandidate`` extend it with what only one of them keeps; the fields
they share, and their ``median``, are declared here once.
"""

from __future__ import annotations

import statistics
from dataclasses import dataclass, field

__all__ = ["MeasuredPlan"]


@dataclass
class MeasuredPlan:
    """A plan measured against IREE's own: its label, our model's prediction and the measured seconds."""

    label: str
    is_iree: bool
    """IREE's own plan (the input compiled by ``iree-compile`` with data tiling), else one of ours."""
    predicted_seconds: float | None
    """Our model's run time for the plan (None: our model could not cost it, as for IREE's plan at times)."""
    vmfb: bytes | None = None
    """The compiled module; None until compiled, or when IREE rejected the plan (``error`` says why)."""
    error: str | None = None
    """Why the plan was not timed: IREE's error line, or the numbers it got wrong."""
    max_rel_error: float | None = None
    """Against the NumPy evaluator of the input program on seeded inputs (None: not run)."""
    measured: list[float] = field(default_factory=list)
    """Seconds per call, one per interleaved round."""

    @property
    def median(self) -> float | None:
        """The median of the rounds (None: not timed)."""
        return statistics.median(self.measured) if self.measured else None
