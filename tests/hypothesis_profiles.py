"""Hypothesis profiles: how many examples each property runs, chosen once for the whole suite.

``HYPOTHESIS_PROFILE`` picks one (``tests/conftest.py`` loads it; default ``ci``):

- ``ci``: what CI and the README's test command run; derandomized, so a run is reproducible and a
  failure found in CI is found again on the developer's machine.
- ``dev``: a tenth of the examples, for the inner loop (with ``-m "not slow"``).
- ``thorough``: twelve times the examples, random seeds (a new part of the input space every run), for a
  night's run before a release or after a rule change: ``HYPOTHESIS_PROFILE=thorough pytest -n 2``.

A property states its ``ci`` count through :func:`examples`, which scales it by the profile, so one
test covers what copies of it used to spread over workers.
"""

from __future__ import annotations

import os

from hypothesis import HealthCheck, settings

__all__ = ["PROFILE", "SCALE", "examples"]

SCALE = {"ci": 1.0, "dev": 0.1, "thorough": 12.0}
"""Examples per property, relative to its ``ci`` count."""

_COMMON = {
    "deadline": None,
    "print_blob": False,
    "suppress_health_check": [HealthCheck.too_slow, HealthCheck.data_too_large, HealthCheck.filter_too_much],
}
settings.register_profile("ci", derandomize=True, **_COMMON)
settings.register_profile("dev", derandomize=True, **_COMMON)
settings.register_profile("thorough", derandomize=False, **_COMMON)

PROFILE = os.environ.get("HYPOTHESIS_PROFILE", "ci")
if PROFILE not in SCALE:
    raise ValueError(f"HYPOTHESIS_PROFILE must be one of {', '.join(SCALE)}, not {PROFILE!r}")
settings.load_profile(PROFILE)


def examples(ci_count: int) -> int:
    """``max_examples`` for a property whose ``ci`` profile runs ``ci_count`` examples (at least 3)."""
    return max(3, round(ci_count * SCALE[PROFILE]))
