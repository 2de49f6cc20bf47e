"""Work run beside the caller: a blocking call on a thread, or a Python call in a forked child process.

``iree-compile`` runs outside the interpreter, so while one thread waits for it the other does Python
work: on a 2-core machine explore's wait for IREE's start state and for the compile check overlap
with parsing. Python work beside Python work only takes turns on one interpreter lock, so pricing
IREE's own plan (a whole exploration of its own) beside ours goes to a child process where the
command line allows it (``allow_child_processes``): a fork, so the child starts with every module
and the parsed input already loaded, and hands back its result pickled. Threads are daemons: an
interrupt (Ctrl-C, which the terminal sends to IREE's process and the child too) does not wait for
them.
"""

from __future__ import annotations

import os
import pickle
import threading
import time
import warnings
from collections.abc import Callable
from concurrent.futures import Future

__all__ = ["allow_child_processes", "in_background", "in_child"]

_children_allowed = False


def allow_child_processes(allowed: bool = True) -> None:
    """Let ``in_child`` fork. Only for a process that runs one command and whose threads hold no lock
    a child could need at the fork (the ``egg-dispatch`` command: ``cli.console_main``): a library
    caller's process (a notebook, pytest with its workers) keeps threads of its own, so by default
    ``in_child`` runs its call on a thread instead."""
    global _children_allowed
    _children_allowed = allowed


def _may_fork() -> bool:
    return _children_allowed and hasattr(os, "fork")


def in_background[T](call: Callable[[], T], name: str = "egg-dispatch-background") -> Future[T]:
    """Start ``call()`` on a daemon thread; ``.result()`` waits for its value or raises its exception."""
    future: Future[T] = Future()

    def run() -> None:
        if not future.set_running_or_notify_cancel():
            return
        try:
            future.set_result(call())
        except BaseException as e:  # handed to the caller of .result(), which decides
            future.set_exception(e)

    threading.Thread(target=run, name=name, daemon=True).start()
    return future


def in_child[T](call: Callable[[], T], name: str = "egg-dispatch-child", *, niceness: int = 0) -> Future[T]:
    """``call()`` in a forked child process when ``allow_child_processes`` allowed it (else on a thread,
    ``in_background``); ``.result()`` gives its value, unpickled, or raises its exception. The value and
    any exception must pickle. The child writes nothing but its answer and ends with ``os._exit``.

    ``niceness`` is added to the child's (``os.nice``): work the parent waits for only at its end runs
    on what the parent leaves idle, instead of taking turns with the parent's own critical path."""
    if not _may_fork():
        return in_background(call, name)
    read_end, write_end = os.pipe()
    with warnings.catch_warnings():  # 3.12 warns of forking with threads: ours hold no lock here
        warnings.simplefilter("ignore", DeprecationWarning)
        pid = os.fork()
    if pid == 0:  # pragma: no cover - the child (coverage does not follow a fork)
        os.close(read_end)
        if niceness:
            os.nice(niceness)
        _answer(call, write_end)
    os.close(write_end)

    def collect() -> T:
        with os.fdopen(read_end, "rb") as f:
            data = f.read()  # the lock is released while the child works
        os.waitpid(pid, 0)
        if not data:
            raise ChildProcessError(f"{name}: the child process ended without an answer")
        ok, value = pickle.loads(data)
        if not ok:
            raise value
        return value

    return in_background(collect, name)


def _answer(call: Callable[[], object], fd: int) -> None:  # pragma: no cover - runs in the child
    """Run ``call`` and write ``(True, value)`` or ``(False, exception)`` to ``fd`` pickled; never returns.
    A parent that is gone (killed, or interrupted alone) takes the child with it within a second."""
    code = 0
    parent = os.getppid()

    def orphaned() -> None:
        while os.getppid() == parent:
            time.sleep(0.5)
        os._exit(1)

    threading.Thread(target=orphaned, daemon=True).start()
    try:
        try:
            payload = pickle.dumps((True, call()), protocol=pickle.HIGHEST_PROTOCOL)
        except BaseException as e:
            code = 1
            try:
                payload = pickle.dumps((False, e), protocol=pickle.HIGHEST_PROTOCOL)
            except Exception:  # an exception that does not pickle: its text does
                payload = pickle.dumps((False, RuntimeError(f"{type(e).__name__}: {e}")))
        view = memoryview(payload)
        while view:  # a pipe, not a file: written in what it takes at a time
            view = view[os.write(fd, view) :]
    finally:
        os._exit(code)
