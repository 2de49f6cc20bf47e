"""A stage's share of ``--budget seconds``: when it ends, and what a stage that reached it says.

Every stage of a command (import, saturation, facts, extraction, membership, emission, check) runs under
the same number of seconds, each on its own clock: a stage that reaches it stops where it is and hands on
its best answer (saturation: the e-graph so far; extraction: the best plan found; membership: no answer;
check: the plans evaluated so far), and says so in a ``StageStop`` the report prints. Import and emission
are one pass over the program, linear in its size, and cannot hand on half a program: they are timed and
reported as over their budget, never cut.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field

__all__ = ["Deadline", "StageStop"]


@dataclass(frozen=True)
class StageStop:
    """One stage that reached its budget, and what it handed on."""

    stage: str
    seconds: float
    handed_on: str

    def message(self) -> str:
        return f"{self.stage} reached its budget ({self.seconds:g} s): {self.handed_on}"


@dataclass
class Deadline:
    """``seconds`` from ``start`` on ``clock`` (``time.perf_counter``; a test passes its own)."""

    seconds: float
    clock: Callable[[], float] = time.perf_counter
    start: float = field(default=-1.0)

    def __post_init__(self) -> None:
        if self.start < 0:
            self.start = self.clock()

    def remaining(self) -> float:
        return max(0.0, self.seconds - (self.clock() - self.start))

    def expired(self) -> bool:
        return self.clock() - self.start >= self.seconds

    def stop(self, stage: str, handed_on: str) -> StageStop:
        return StageStop(stage, self.seconds, handed_on)
