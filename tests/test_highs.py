"""HiGHS as the exact extractor runs it (``extract.highs``): Ctrl-C stops a solve at once, and a solve
never waits for Python (the GIL), so the Python work ``pipeline`` does beside HiGHS does not slow it.

Both use a market-split instance (Cornuéjols and Dawande): four equations over thirty binaries, which
branch and bound cannot close in seconds, so the solve is still running when the test acts on it.
"""

from __future__ import annotations

import _thread
import sys
import threading
import time

import highspy
import numpy as np
import pytest

from egg_dispatch.extract.highs import new_highs, run_interruptibly


def market_split(rows: int = 4, binaries: int = 30, seed: int = 1) -> highspy.Highs:
    """min Σ|slack| s.t. a·x + s⁺ − s⁻ = ⌊Σa/2⌋ per row, x binary: hard for branch and bound."""
    a = np.random.default_rng(seed).integers(0, 100, (rows, binaries)).astype(float)
    matrix = np.hstack([a, np.eye(rows), -np.eye(rows)])
    h = new_highs()
    h.setOptionValue("output_flag", False)
    h.setOptionValue("threads", 1)
    lp = highspy.HighsLp()
    lp.num_col_, lp.num_row_ = binaries + 2 * rows, rows
    lp.col_cost_ = np.array([0.0] * binaries + [1.0] * (2 * rows))
    lp.col_lower_ = np.zeros(lp.num_col_)
    lp.col_upper_ = np.array([1.0] * binaries + [highspy.kHighsInf] * (2 * rows))
    lp.row_lower_ = lp.row_upper_ = np.floor(a.sum(axis=1) / 2)
    lp.a_matrix_.format_ = highspy.MatrixFormat.kRowwise
    nonzero = [np.nonzero(r)[0] for r in matrix]
    lp.a_matrix_.start_ = np.cumsum([0] + [len(nz) for nz in nonzero])
    lp.a_matrix_.index_ = np.concatenate(nonzero)
    lp.a_matrix_.value_ = np.concatenate([r[nz] for r, nz in zip(matrix, nonzero, strict=True)])
    lp.integrality_ = [highspy.HighsVarType.kInteger] * binaries + [highspy.HighsVarType.kContinuous] * (2 * rows)
    h.passModel(lp)
    return h


def test_ctrl_c_stops_the_solve_at_once() -> None:
    h = market_split()
    h.setOptionValue("time_limit", 60.0)
    threading.Timer(0.3, _thread.interrupt_main).start()  # Ctrl-C, as the terminal delivers it
    started = time.perf_counter()
    with pytest.raises(KeyboardInterrupt):
        run_interruptibly(h)
    assert time.perf_counter() - started < 5.0  # stopped, not left to its 60 s limit
    assert not h.is_solver_running()


def test_a_solve_never_waits_for_python() -> None:
    """A thread keeps the GIL for 1.5 s (a switch interval longer than that) while HiGHS solves under a
    0.3 s time limit: HiGHS's own clock must stay near 0.3 s. A solve that called into Python (as
    highspy's callbacks do at every simplex iteration) would wait the 1.5 s out."""
    h = market_split()
    h.setOptionValue("time_limit", 0.3)
    interval = sys.getswitchinterval()

    def hold_the_gil() -> None:
        time.sleep(0.05)  # HiGHS is in its solve by then
        end = time.perf_counter() + 1.5
        while time.perf_counter() < end:
            pass

    holder = threading.Thread(target=hold_the_gil)
    sys.setswitchinterval(10.0)
    try:
        holder.start()
        run_interruptibly(h)
        holder.join()
    finally:
        sys.setswitchinterval(interval)
    assert h.getModelStatus() == highspy.HighsModelStatus.kTimeLimit
    assert h.getRunTime() < 1.0, f"HiGHS ran {h.getRunTime():.2f} s under a 0.3 s limit: it waited for the GIL"
