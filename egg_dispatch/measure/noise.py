"""Is the machine quiet enough to calibrate on? The repeats' spread and the other load, as numbers.

``egg-dispatch calibrate`` keeps the fastest of each point's repeats (other work only adds time), but
the fastest of three disturbed runs is still disturbed, and a profile measured on a busy machine
prices every plan by it. Two signs say a run was disturbed, and both are read here, on numbers the
caller passes in (nothing here times anything, so tests feed it fake repeats and a fake load reader):

* the **spread** of a point's repeats: (max - min) / median over its ``keep`` fastest repeats
  (``point_spread``). On a quiet machine the repeats of one kernel agree within a few per cent; a
  point over ``SPREAD_LIMIT`` is re-timed (``calibrate`` re-runs the programs holding one, at most
  ``RETRIES`` rounds), and where it stays over it the run says so. Over the fastest ``keep``, not
  all, so that a retry which measures undisturbed again replaces a disturbed repeat;
* the **other load**: the 1-minute load average (``os.getloadavg``) less the one CPU the benchmark
  itself keeps busy, against the CPU count, read at the start and after every round of timing
  (``LoadReader``); over ``LOAD_LIMIT`` of the CPUs, the run says so.

Both go into the profile's provenance (``Noise.to_dict``, ``spread_summary``), so a profile says how
disturbed the run that made it was.
"""

from __future__ import annotations

import os
import statistics
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field

from egg_dispatch.target.host import usable_cpus

__all__ = [
    "LOAD_LIMIT",
    "RETRIES",
    "SPREAD_LIMIT",
    "LoadReader",
    "Noise",
    "point_spread",
    "read_load",
    "spread_summary",
    "worst_first",
]

SPREAD_LIMIT = 0.10
"""A point whose fastest repeats differ by more than 10% of their median is noisy."""

RETRIES = 2
"""Rounds of re-timing the programs that hold a noisy point, at most (within the time budget)."""

LOAD_LIMIT = 0.5
"""Other work using more than half the CPUs (1-minute load average, less the benchmark's own CPU)
makes a run busy."""

LoadReader = Callable[[], float | None]
"""The 1-minute load average now; None where the system does not say (``read_load``)."""


def read_load() -> float | None:
    """``os.getloadavg()[0]``; None where it is not available (Windows)."""
    try:
        return os.getloadavg()[0]
    except (AttributeError, OSError):  # pragma: no cover - platform dependent
        return None


def point_spread(values: Sequence[float], keep: int) -> float:
    """(max - min) / median of the ``keep`` fastest of ``values`` (at least 2); 0 with fewer than two
    values or a median of 0."""
    fastest = sorted(values)[: max(keep, 2)]
    if len(fastest) < 2:
        return 0.0
    mid = statistics.median(fastest)
    return (fastest[-1] - fastest[0]) / mid if mid > 0 else 0.0


def spread_summary(by_key: Mapping[str, Sequence[float]]) -> dict:
    """The profile's ``provenance.spread`` from each fit's points' spreads: overall median and max,
    the number of points over ``SPREAD_LIMIT``, and per key (a kind of sample: what a fit is made on) its
    median and max (rounded)."""
    every = [s for values in by_key.values() for s in values]
    if not every:
        return {}
    return {
        "limit": SPREAD_LIMIT,
        "median": round(statistics.median(every), 4),
        "max": round(max(every), 4),
        "points": len(every),
        "noisy_points": sum(s > SPREAD_LIMIT for s in every),
        "by_kind": {
            key: {"median": round(statistics.median(v), 4), "max": round(max(v), 4)}
            for key, v in sorted(by_key.items())
            if v
        },
    }


@dataclass
class Noise:
    """What a calibration run saw of other work on the machine."""

    cpus: int = field(default_factory=usable_cpus)
    load_start: float | None = None
    """1-minute load average before anything was compiled."""
    load_during: list[float] = field(default_factory=list)
    """The same after each round of timing (the benchmark's own process counts 1)."""
    retried: int = 0
    """Programs re-timed because one of their points was noisy (summed over the rounds)."""
    rounds: int = 0
    """Retry rounds run (at most ``RETRIES``)."""
    noisy: list[tuple[str, float]] = field(default_factory=list)
    """(point, spread) still over ``SPREAD_LIMIT`` after the retries, worst first."""

    def read(self, load: LoadReader, *, during: bool) -> None:
        value = load()
        if value is None:
            return
        if during:
            self.load_during.append(value)
        else:
            self.load_start = value

    def other_load(self) -> float | None:
        """The most other work seen, in CPUs: the start's load average, or the largest during timing
        less the benchmark's own CPU; None where no load was read."""
        seen = ([self.load_start] if self.load_start is not None else []) + [x - 1 for x in self.load_during]
        return max(0.0, max(seen)) if seen else None

    def busy(self) -> bool:
        other = self.other_load()
        return other is not None and other > LOAD_LIMIT * self.cpus

    def warning(self) -> str | None:
        """One line saying what was disturbed, or None for a quiet run."""
        parts = []
        if self.noisy:
            name, worst = self.noisy[0]
            parts.append(
                f"{len(self.noisy)} point(s) still spread over {SPREAD_LIMIT:.0%} after "
                f"{self.rounds} retry round(s) (worst {name}: {worst:.0%})"
            )
        if self.busy():
            parts.append(f"other load {self.other_load():.1f} on {self.cpus} CPU(s) (limit {LOAD_LIMIT:.0%} of them)")
        if not parts:
            return None
        return "warning: noisy machine: " + "; ".join(parts) + "; calibrate again on a quiet machine to trust it"

    def to_dict(self) -> dict:
        """The provenance entry (``provenance.noise``)."""
        return {
            "cpus": self.cpus,
            "load_start": None if self.load_start is None else round(self.load_start, 2),
            "load_max_during": round(max(self.load_during), 2) if self.load_during else None,
            "busy": self.busy(),
            "retry_rounds": self.rounds,
            "retried_programs": self.retried,
            "noisy_after_retries": [[name, round(s, 4)] for name, s in self.noisy],
        }


def worst_first(points: Iterable[tuple[str, float]]) -> list[tuple[str, float]]:
    """Points over ``SPREAD_LIMIT``, the widest spread first (then by name: deterministic)."""
    return sorted(((n, s) for n, s in points if s > SPREAD_LIMIT), key=lambda p: (-p[1], p[0]))
