"""``egg-dispatch ARGS`` run in the test's own process, answered as a subprocess would answer it."""

from __future__ import annotations

import contextlib
import io
import subprocess

from egg_dispatch.cli import main

__all__ = ["cli_process"]


def cli_process(*args: str) -> subprocess.CompletedProcess[str]:
    """The command line's exit code, stdout and stderr, without an interpreter start and the package's
    imports per call (about a second of CPU each, more than most commands take)."""
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            code = main(list(args))
        except SystemExit as e:  # argparse's usage errors
            code = e.code if isinstance(e.code, int) else 2
    return subprocess.CompletedProcess(["egg-dispatch", *args], code, out.getvalue(), err.getvalue())
