"""Measured kernel times the cost model prefers to its formulas: a SQLite cache keyed by node signature.

``egg-dispatch tune`` compiles candidate plans, profiles every dispatch with IREE's runtime and
attributes each dispatch's kernel time to the computations it fuses (``measure.tune``); the times
land here, keyed by a *node signature* (``cost.signature.node_signature``: the op, its kind or body,
shapes, element types, layouts, which operands are packed inside the dispatch) and by the context
they were measured in (target profile, CPU, IREE version). The cost table then uses a measured time
in place of the model's wherever the cache has one, so repeated runs, and other programs that share
dispatches, are priced by measurement without recompiling. A node's time is the median of its
recorded observations (the last ``KEEP`` of them).

The file is plain SQLite from the standard library (``sqlite3``): one ``observations`` table and a
``meta`` table holding the schema version. A file that is not such a cache is an error naming it
(``CacheError``), never a traceback.
"""

from __future__ import annotations

import datetime
import os
import sqlite3
import statistics
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from importlib import metadata
from pathlib import Path

from egg_dispatch.target.host import cache_dir, host_cpu
from egg_dispatch.target.profile import Target

__all__ = ["KEEP", "SCHEMA", "CacheError", "MeasuredTimes", "default_cache_path", "measurement_context"]

SCHEMA = 1
KEEP = 9
"""Observations kept per (context, signature): the median of the most recent ones prices the node."""


class CacheError(Exception):
    """The measurement cache cannot be read or written (the message names the file)."""


def default_cache_path() -> Path:
    """``<user cache dir>/egg-dispatch/measured.sqlite`` (``EGG_DISPATCH_CACHE_DIR`` overrides the dir)."""
    return cache_dir() / "measured.sqlite"


def measurement_context(target: Target) -> str:
    """Where a time is valid: the target profile, this CPU and the IREE compiler that built the code."""
    try:
        iree = metadata.version("iree-base-compiler")
    except metadata.PackageNotFoundError:
        iree = "none"
    cpu, _ = host_cpu()
    return f"{target.name}|{cpu}|iree-base-compiler {iree}"


@dataclass
class MeasuredTimes:
    """Measured seconds per node signature for one context, loaded from (and saved to) a cache file.

    ``path=None`` keeps everything in memory (tests, ``--no-cache`` runs that still want attribution)."""

    context: str
    path: Path | None = None
    _times: dict[str, list[float]] = field(default_factory=dict)
    used: set[str] = field(default_factory=set)
    """Signatures the cost table priced from this cache (for the report)."""

    @classmethod
    def open(cls, path: Path | None, context: str) -> MeasuredTimes:
        """Load the observations of ``context`` from ``path``; a missing file is an empty cache."""
        out = cls(context, path)
        if path is None or not path.exists():
            return out
        with _connect(path, create=False) as db:
            rows = db.execute(
                "SELECT signature, seconds FROM observations WHERE context = ? ORDER BY signature, rowid",
                (context,),
            ).fetchall()
        for signature, seconds in rows:
            out._times.setdefault(signature, []).append(float(seconds))
        return out

    def __len__(self) -> int:
        return len(self._times)

    def __contains__(self, signature: object) -> bool:
        return signature in self._times

    def seconds(self, signature: str | None) -> float | None:
        """The median recorded time of ``signature`` (None when never measured here)."""
        if signature is None:
            return None
        values = self._times.get(signature)
        if not values:
            return None
        self.used.add(signature)
        return statistics.median(values[-KEEP:])

    def record(self, observations: Iterable[tuple[str, float]], source: str) -> int:
        """Add (signature, seconds) observations, in memory and in the file; returns how many."""
        rows = [(s, float(t)) for s, t in observations if s is not None and t >= 0]
        for s, t in rows:
            self._times.setdefault(s, []).append(t)
        if self.path is not None and rows:
            when = datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds")
            with _connect(self.path, create=True) as db:
                db.executemany(
                    "INSERT INTO observations (context, signature, seconds, source, recorded) VALUES (?, ?, ?, ?, ?)",
                    [(self.context, s, t, source, when) for s, t in rows],
                )
                for s in sorted({s for s, _ in rows}):
                    db.execute(
                        "DELETE FROM observations WHERE context = ? AND signature = ? AND rowid NOT IN "
                        "(SELECT rowid FROM observations WHERE context = ? AND signature = ? "
                        "ORDER BY rowid DESC LIMIT ?)",
                        (self.context, s, self.context, s, KEEP),
                    )
        return len(rows)


@contextmanager
def _connect(path: Path, create: bool) -> Iterator[sqlite3.Connection]:
    """A connection with the schema checked (and made, when ``create``); errors name the file."""
    try:
        if create:
            path.parent.mkdir(parents=True, exist_ok=True)
        elif not os.access(path, os.R_OK):
            raise CacheError(f"{path}: error: measurement cache is not readable")
        db = sqlite3.connect(path, timeout=30)
    except (OSError, sqlite3.Error) as e:
        raise CacheError(f"{path}: error: cannot open the measurement cache: {e}") from None
    try:
        with db:
            tables = {r[0] for r in db.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
            if not tables and create:
                db.execute("CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)")
                db.execute("INSERT INTO meta VALUES ('schema', ?)", (str(SCHEMA),))
                db.execute(
                    "CREATE TABLE observations (context TEXT NOT NULL, signature TEXT NOT NULL, "
                    "seconds REAL NOT NULL, source TEXT NOT NULL, recorded TEXT NOT NULL)"
                )
                db.execute("CREATE INDEX observations_key ON observations (context, signature)")
                tables = {"meta", "observations"}
            if not {"meta", "observations"} <= tables:
                raise CacheError(
                    f"{path}: error: not an egg-dispatch measurement cache (tables {sorted(tables) or 'none'}; "
                    "expected meta, observations)"
                )
            row = db.execute("SELECT value FROM meta WHERE key = 'schema'").fetchone()
            if row is None or row[0] != str(SCHEMA):
                raise CacheError(
                    f"{path}: error: field meta.schema: measurement cache schema {row[0] if row else 'missing'}, "
                    f"this egg-dispatch reads {SCHEMA} (delete the file to start a new cache)"
                )
            yield db
    except sqlite3.Error as e:
        raise CacheError(f"{path}: error: not an egg-dispatch measurement cache ({e})") from None
    finally:
        db.close()
