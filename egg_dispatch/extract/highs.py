"""HiGHS objects made and run as the extractors need them: silent, and stopped by Ctrl-C."""

from __future__ import annotations

import os
import sys

import highspy

__all__ = ["new_highs", "run_interruptibly"]

_banner_silenced = False


def new_highs() -> highspy.Highs:
    """A Highs object; the first one in a process prints a banner on C++ stdout, which would corrupt
    ``--emit json`` output, so that one construction runs with fd 1 pointed at /dev/null."""
    global _banner_silenced
    if _banner_silenced:
        return highspy.Highs()
    sys.stdout.flush()
    saved, null = os.dup(1), os.open(os.devnull, os.O_WRONLY)
    os.dup2(null, 1)
    try:
        h = highspy.Highs()
    finally:
        os.dup2(saved, 1)
        os.close(saved)
        os.close(null)
        _banner_silenced = True
    return h


def run_interruptibly(h: highspy.Highs) -> None:
    """``h.run()`` in HiGHS's own solver thread, waited on from this one. Python delivers Ctrl-C to the
    main thread between bytecodes only, so during a plain ``run`` it waited for the solve to end (up to
    the time limit); here the solve's time limit is cut to zero, HiGHS stops at its next check (within
    milliseconds) and the interrupt is raised.

    HiGHS solves with its callbacks off: highspy's callback (and its interrupt check, which highspy's own
    cancelling relies on) calls into Python at every simplex iteration, so the solve waited for the GIL
    whenever Python ran beside it (as ``pipeline`` runs the round ahead while HiGHS solves: a model's
    solve took 3.1 s instead of 2.2). The time limit is a number HiGHS reads at each check, which
    another thread may set while it solves."""
    h.disableCallbacks()
    h.startSolve()
    try:
        while not h.wait(0.1)[0]:
            pass
    except KeyboardInterrupt:
        h.setOptionValue("time_limit", 0.0)
        while not h.wait(0.1)[0]:
            pass
        raise
