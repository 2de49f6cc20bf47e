"""Files written whole or not at all: every file the tool leaves behind goes through ``atomic_write``.

The data goes to a temporary file in the destination's own directory (so the rename never crosses a
file system), which is flushed, synced and renamed over the destination with ``os.replace``, an
atomic step on POSIX and Windows. If anything interrupts the writer first (an exception, Ctrl-C's
``KeyboardInterrupt``, a full disk), the temporary file is removed and the destination is untouched:
readers see the old file or the new one, never half of one.
"""

from __future__ import annotations

import io
import os
import shutil
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import IO, Any, cast

__all__ = ["atomic_write", "write_bytes", "write_text"]

TEMP_PREFIX = ".egg_dispatch-"
"""Temporary files start with this (hidden, and easy to recognise if a crash of the machine leaves one)."""


def _mode_for(path: Path) -> int:
    """The permissions a plain ``open(path, "w")`` would give: the existing file's, else 0o666 less umask."""
    try:
        return path.stat().st_mode & 0o7777
    except FileNotFoundError:
        mask = os.umask(0)
        os.umask(mask)
        return 0o666 & ~mask


@contextmanager
def atomic_write(path: str | os.PathLike[str], mode: str = "w", *, encoding: str | None = None) -> Iterator[IO[Any]]:
    """``with atomic_write(p, "wb") as f: ...``: ``f`` is a temporary file that becomes ``p`` on success.

    ``mode`` is ``"w"`` / ``"wb"`` (replace) or ``"a"`` / ``"ab"`` (the existing content is copied first,
    then appended to, so an interrupted append leaves the old file as it was). Text modes default to
    UTF-8.
    """
    if mode not in ("w", "wb", "a", "ab"):
        raise ValueError(f"atomic_write: mode must be w, wb, a or ab, not {mode!r}")
    dest = Path(path)
    binary = "b" in mode
    fd, tmp = tempfile.mkstemp(prefix=TEMP_PREFIX, suffix=f".{dest.name}.tmp", dir=dest.parent)
    try:
        with os.fdopen(fd, "wb" if binary else "w", encoding=None if binary else (encoding or "utf-8")) as f:
            if mode.startswith("a") and dest.is_file():
                with open(dest, "rb") as old:
                    if binary:
                        shutil.copyfileobj(old, f)
                    else:
                        f.flush()
                        shutil.copyfileobj(old, cast(io.TextIOWrapper, f).buffer)  # fdopen's text mode gives one
            yield f
            f.flush()
            os.fsync(f.fileno())
        os.chmod(tmp, _mode_for(dest))
        os.replace(tmp, dest)
    except BaseException:
        try:
            os.unlink(tmp)
        except FileNotFoundError:
            pass
        raise


def write_text(path: str | os.PathLike[str], text: str, encoding: str = "utf-8") -> None:
    """``Path.write_text``, atomically."""
    with atomic_write(path, "w", encoding=encoding) as f:
        f.write(text)


def write_bytes(path: str | os.PathLike[str], data: bytes) -> None:
    """``Path.write_bytes``, atomically."""
    with atomic_write(path, "wb") as f:
        f.write(data)
