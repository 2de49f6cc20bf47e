"""Every test runs against an empty cache directory of its own.

``--target host`` (the default of every command) reads this CPU's calibrated profile from the user's
cache directory, and ``explore`` prices nodes by the measurement cache there: either would make the
suite's results depend on what the machine's user ran before. ``EGG_DISPATCH_CACHE_DIR`` points both
at a fresh temporary directory, so ``host`` is the built-in profile of this CPU's ISA and no node is
priced by measurement unless the test records it. ``EGG_DISPATCH_MEASURE=0`` turns off what ``explore``
does by default on ``--target host`` with IREE installed, timing its recommendation against IREE's plan
(``measure.recommend``): the suite's thousands of explorations time nothing, and a test of that
measurement passes a fake sampler (tests/test_measured_recommendation.py).

Importing ``tests.hypothesis_profiles`` loads the hypothesis profile ``HYPOTHESIS_PROFILE`` names
(``ci`` unless set) before any test is collected.

Every ``iree-compile`` the package runs in this run (and in the commands tests start) goes through one
cache directory the xdist workers share (``EGG_DISPATCH_IREE_CACHE``, ``egg_dispatch.iree.tools``):
IREE's output is a function of its input and flags, and many tests ask for the same one (the model
tests for a fixture's dispatch creation; ``vmfb_cache``'s users, ``test_iree_ground_truth`` and
``test_iree_fixtures``, for a fixture's vmfb).
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

import tests.hypothesis_profiles  # noqa: F401  (registers and loads the profile)


@pytest.fixture(autouse=True)
def _isolated_cache_dir(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch) -> Path:
    cache = tmp_path_factory.mktemp("egg-dispatch-cache")
    monkeypatch.setenv("EGG_DISPATCH_CACHE_DIR", str(cache))
    monkeypatch.setenv("EGG_DISPATCH_MEASURE", "0")  # explore's default measurement (measure.recommend): off
    return cache


@pytest.fixture(scope="session", autouse=True)
def _shared_iree_outputs(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """``EGG_DISPATCH_IREE_CACHE`` for the whole run: one directory of this run (under pytest's base
    temporary directory, which the xdist workers share), never a user's or an earlier run's."""
    from egg_dispatch.iree.tools import CACHE_ENV

    base = tmp_path_factory.getbasetemp()
    folder = (base.parent if os.environ.get("PYTEST_XDIST_WORKER") else base) / "iree-outputs"
    folder.mkdir(parents=True, exist_ok=True)
    saved = os.environ.get(CACHE_ENV)
    os.environ[CACHE_ENV] = str(folder)
    yield folder
    if saved is None:
        os.environ.pop(CACHE_ENV, None)
    else:
        os.environ[CACHE_ENV] = saved


@pytest.fixture(scope="session", autouse=True)
def _bytecode_for_children(tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    """The Python processes tests start (``python -m egg_dispatch``, ``filecheck``) keep their bytecode in
    one folder of this run (``PYTHONPYCACHEPREFIX``), also where the machine sets
    ``PYTHONDONTWRITEBYTECODE``: else each of them compiles the package from source, as no installed
    package does. The checkout gets no ``__pycache__``."""
    base = tmp_path_factory.getbasetemp()
    folder = (base.parent if os.environ.get("PYTEST_XDIST_WORKER") else base) / "pycache"
    saved = {k: os.environ.get(k) for k in ("PYTHONPYCACHEPREFIX", "PYTHONDONTWRITEBYTECODE")}
    os.environ["PYTHONPYCACHEPREFIX"] = str(folder)
    os.environ.pop("PYTHONDONTWRITEBYTECODE", None)
    yield
    for k, v in saved.items():
        if v is None:
            os.environ.pop(k, None)
        else:
            os.environ[k] = v


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


VmfbCache = Callable[..., bytes]
"""``get(path, *, data_tiling, compile_from=None)``: the vmfb ``compile_module`` makes of the file."""


@pytest.fixture(scope="session")
def vmfb_cache(_shared_iree_outputs: Path) -> VmfbCache:
    """``compile_module`` of a fixture file, compiled once per run, not once per worker and test file:
    ``compile_module`` keeps its output in the run's shared ``EGG_DISPATCH_IREE_CACHE`` folder
    (``_shared_iree_outputs``), keyed by the file's text, the flags and IREE, with a lock per key so that
    a worker asking for one another worker is compiling waits for it. A failure raises ``IreeError``
    and is not kept."""
    from egg_dispatch.iree.tools import compile_module

    def get(path: Path, *, data_tiling: bool, compile_from: str | None = None) -> bytes:
        return compile_module(path, data_tiling=data_tiling, compile_from=compile_from)

    return get
