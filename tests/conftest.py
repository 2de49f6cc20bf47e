"""Every test runs against an empty cache directory of its own.

``--target host`` (the default of every command) reads this CPU's calibrated profile from the user's
cache directory, and ``explore`` prices nodes by the measurement cache there: either would make the
suite's results depend on what the machine's user ran before. ``EGG_DISPATCH_CACHE_DIR`` points both
at a fresh temporary directory, so ``host`` is the built-in profile of this CPU's ISA and no node is
priced by measurement unless the test records it.
"""

from __future__ import annotations

from pathlib import Path

import pytest


@pytest.fixture(autouse=True)
def _isolated_cache_dir(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch) -> Path:
    cache = tmp_path_factory.mktemp("egg-dispatch-cache")
    monkeypatch.setenv("EGG_DISPATCH_CACHE_DIR", str(cache))
    return cache
