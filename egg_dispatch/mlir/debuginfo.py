"""Source locations of MLIR printed with ``--mlir-print-debuginfo``, and that text without them.

IREE keeps every op's location from the file it read (``loc("model.mlir":146:11)``; ops it made
from one get its location, possibly ``fused[...]`` or ``callsite(...)``), so IREE's output printed with
debug info says, for each op, where in the user's file it came from. The reader (``mlir.parser``) does
not read locations: ``strip_locations`` removes them (the ``#locN = loc(...)`` alias lines and every
`` loc(...)``) and returns, per op, the first file position its location names, keyed by the line the
op starts on in the stripped text (``Operation.loc.line`` once that text is parsed).

An op's location is printed at its end: on its own line for a one-line op, after the ``}`` that closes
its last region otherwise; a line ending in ``{`` opens a region op, a line starting with ``}`` closes
one (``} else {`` closes one region and opens the next of the same op).
"""

from __future__ import annotations

import re

from egg_dispatch.mlir.ir import Loc

__all__ = ["strip_locations"]

_ALIAS = re.compile(r"^(#loc\d*) = loc\(")
_OPEN = re.compile(r" loc\(")
_FILE_POS = re.compile(r'"((?:[^"\\]|\\.)*)":(\d+):(\d+)')
_REF = re.compile(r"#loc\d*")


def _close(line: str, start: int) -> int:
    """The index just past the ``)`` matching the ``(`` before ``start`` (strings skipped)."""
    depth, j, in_str = 1, start, False
    while j < len(line) and depth:
        c = line[j]
        if in_str:
            if c == "\\":
                j += 1
            elif c == '"':
                in_str = False
        elif c == '"':
            in_str = True
        elif c == "(":
            depth += 1
        elif c == ")":
            depth -= 1
        j += 1
    return j


def _resolve(body: str, aliases: dict[str, str], seen: frozenset[str] = frozenset()) -> Loc | None:
    """The first file position a location's body names, through aliases."""
    m = _FILE_POS.search(body)
    ref = _REF.search(body)
    if m is not None and (ref is None or m.start() < ref.start()):
        return Loc(m[1], int(m[2]), int(m[3]))
    for r in _REF.findall(body):
        if r in aliases and r not in seen:
            if (found := _resolve(aliases[r], aliases, seen | {r})) is not None:
                return found
    return None


def strip_locations(text: str) -> tuple[str, dict[int, Loc]]:
    """``text`` without locations, and the source position of each op by the (1-based) line it starts on."""
    aliases: dict[str, str] = {}
    lines = text.split("\n")
    kept: list[str] = []
    trailing: list[str | None] = []
    for line in lines:
        if line.startswith("#loc") and (m := _ALIAS.match(line)) is not None:
            end = _close(line, m.end())
            aliases[m[1]] = line[m.end() : end - 1]
            continue
        out, last, i = [], None, 0
        for m in _OPEN.finditer(line):
            if m.start() < i:
                continue
            end = _close(line, m.end())
            out.append(line[i : m.start()])
            last = line[m.end() : end - 1] if not line[end:].strip() else None
            i = end
        out.append(line[i:])
        kept.append("".join(out))
        trailing.append(last)
    locs: dict[int, Loc] = {}
    opened: list[int] = []
    for n, (line, loc) in enumerate(zip(kept, trailing, strict=True), start=1):
        body = line.strip()
        start = n
        if body.startswith("}") and opened:
            start = opened.pop()
        if body.endswith("{"):
            opened.append(start)
        elif loc is not None and (found := _resolve(loc, aliases)) is not None:
            locs[start] = found
    return "\n".join(kept), locs
