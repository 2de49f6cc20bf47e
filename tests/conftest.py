"""Every test runs against an empty cache directory of its own.

``--target host`` (the default of every command) reads this CPU's calibrated profile from the user's
cache directory, and ``explore`` prices nodes by the measurement cache there: either would make the
suite's results depend on what the machine's user ran before. ``EGG_DISPATCH_CACHE_DIR`` points both
at a fresh temporary directory, so ``host`` is the built-in profile of this CPU's ISA and no node is
priced by measurement unless the test records it.

Importing ``tests.hypothesis_profiles`` loads the hypothesis profile ``HYPOTHESIS_PROFILE`` names
(``ci`` unless set) before any test is collected.
"""

from __future__ import annotations

from pathlib import Path

import pytest

import tests.hypothesis_profiles  # noqa: F401  (registers and loads the profile)


@pytest.fixture(autouse=True)
def _isolated_cache_dir(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch) -> Path:
    cache = tmp_path_factory.mktemp("egg-dispatch-cache")
    monkeypatch.setenv("EGG_DISPATCH_CACHE_DIR", str(cache))
    return cache


def _run_order(item: pytest.Item) -> int:
    """Slow hypothesis properties first (the longest single tests), then other ``slow`` tests, then the
    fast lane: with ``--dist worksteal`` (``pyproject.toml``) no worker is left running a long test
    while the other has finished everything else."""
    if item.get_closest_marker("slow") is None:
        return 2
    return 0 if getattr(getattr(item, "obj", None), "is_hypothesis_test", False) else 1


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Mark ``iree`` every test that skips itself without IREE's tools (a ``skipif`` whose reason names
    IREE, one of its tools or its runtime), so that ``-m "not iree"`` and ``-m iree`` select by what a test
    needs; then order the run (``_run_order``; a stable sort, the same on every worker)."""
    for item in items:
        for mark in item.iter_markers("skipif"):
            reason = str(mark.kwargs.get("reason", ""))
            if "IREE" in reason or "iree-" in reason or "iree.runtime" in reason:
                item.add_marker(pytest.mark.iree)
                break
    items.sort(key=_run_order)
