"""A blocking call (an IREE subprocess) run on a thread while this one goes on.

``iree-compile`` runs outside the interpreter, so while one thread waits for it the other does Python
work: on a 2-core machine explore's wait for IREE's start state and for the compile check overlap
with parsing, and with pricing IREE's own plan. The thread is a daemon: an interrupt (Ctrl-C, which
the terminal sends to IREE's process too) does not wait for it.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from concurrent.futures import Future

__all__ = ["in_background"]


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
