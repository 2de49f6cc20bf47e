"""A progress bar for the long measuring commands (``calibrate``, ``tune``): tqdm on a terminal, else lines."""

from __future__ import annotations

import sys

__all__ = ["ProgressBar"]


class ProgressBar:
    """tqdm on stderr when stderr is a terminal; otherwise one ``egg-dispatch: <command> [i/n] ...`` line
    per step, so that logs of non-interactive runs still say where a run is."""

    def __init__(self, command: str) -> None:
        self.command = command
        self.bar = None
        self.last = ""
        try:
            from tqdm import tqdm

            self.bar = tqdm(total=1, file=sys.stderr, disable=not sys.stderr.isatty(), unit="step")
        except ImportError:  # pragma: no cover - tqdm is a dependency
            pass

    def __call__(self, message: str, done: int, total: int) -> None:
        if self.bar is not None and not self.bar.disable:
            self.bar.total = max(total, 1)
            self.bar.set_description(message[:40])
            self.bar.n = done
            self.bar.refresh()
        elif message != self.last or done == total:
            print(f"egg-dispatch: {self.command} [{done}/{total}] {message}", file=sys.stderr, flush=True)
        self.last = message

    def close(self) -> None:
        if self.bar is not None:
            self.bar.close()
