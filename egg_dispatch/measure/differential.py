"""Differential measurement: time what two plans of one program do not share.

Two plans of a program share most of their dispatches, and timing the whole call of each measures the
shared ones twice, with their noise. IREE's host-execution profiling (``iree.profiling``) gives every
executable function's kernel time per call; the dispatches one plan has and the other lacks are found by
*content*, and only their times are compared: Σ over the candidate's unshared executions minus Σ over
IREE's, over IREE's whole call (``relative_gain``), a number per interleaved round for ``measure.stats``.

Matching: each module is compiled once more to IREE's ``flow`` phase (``--compile-to=flow``, large
constants elided), where every dispatch is a ``flow.executable`` holding its export and its function's
body; a body with the executable's own names replaced is the dispatch's key (``executable_keys``): two
plans' dispatches with one key are the same kernel on the same operand types and encodings (an untiled
``matmul`` and a data-tiled one are named alike by IREE but differ here). Executables made after
``flow`` (the encodes IREE's stream phase turns into ``_encoding_<N>_encode_<from>_to_<to>``, copies)
are keyed by their profiled name without its ordinal, which holds their shapes and element types. IREE
deduplicates identical executables: a function profiled ``n`` times per call counts ``n`` times. The
unshared part is the multiset difference of the two plans' keys (``unshared``).
"""

from __future__ import annotations

import hashlib
import math
import re
from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass

from egg_dispatch.iree.profiling import DispatchTimes

__all__ = [
    "FLOW_FLAGS",
    "Unshared",
    "calls_profiled",
    "executable_keys",
    "executions_per_call",
    "per_call",
    "profile_key",
    "relative_gain",
    "unshared",
    "unshared_seconds",
]

FLOW_FLAGS = ("--compile-to=flow", "--mlir-elide-elementsattrs-if-larger=16")
"""``iree-compile`` flags of the flow-phase text ``executable_keys`` reads (constants elided: a model's
weights would make it as large as the model)."""

_EXECUTABLE = re.compile(r"^  flow\.executable (?:private |public )?@(?P<name>[\w$.-]+) \{$")
_EXPORT = re.compile(r"flow\.executable\.export (?:public |private )?@(?P<name>[\w$.-]+)")
_ORDINAL = re.compile(r"_dispatch_\d+_|^_encoding_\d+_")


def executable_keys(flow: str) -> dict[str, str]:
    """Export function name -> content key of every ``flow.executable`` in IREE's flow-phase text."""
    keys: dict[str, str] = {}
    lines = flow.splitlines()
    i = 0
    while i < len(lines):
        m = _EXECUTABLE.match(lines[i])
        if m is None:
            i += 1
            continue
        j = i + 1
        while j < len(lines) and lines[j] != "  }":
            j += 1
        body = "\n".join(lines[i : j + 1])
        exports = [e["name"] for e in _EXPORT.finditer(body)]
        for name in sorted({m["name"], *exports}, key=len, reverse=True):  # longest first: a prefix of another
            body = body.replace(f"@{name}", "@_")
        digest = "flow:" + hashlib.sha256(body.encode()).hexdigest()[:16]
        for e in exports:
            keys[e] = digest
        i = j + 1
    return keys


def profile_key(name: str, keys: Mapping[str, str]) -> str:
    """The key of a profiled executable function: its flow content, else its name without the ordinal."""
    if name in keys:
        return keys[name]
    return "name:" + _ORDINAL.sub(lambda m: "_dispatch_N_" if "dispatch" in m[0] else "_encoding_N_", name)


def calls_profiled(times: DispatchTimes) -> int:
    """The calls one profile covers: IREE's count of command-buffer executions, unless it counted at most
    one or a number that does not divide every function's samples -- IREE 3.13 counts 1 for a dynamic
    model's async-ABI call however many calls ran (mlp_dyn: 446 samples of every function, ``calls`` 1) --
    then the gcd of the sample counts (every function runs a whole number of times per call, and in a plan
    some once). 0 when nothing was sampled."""
    counts = [n for n in times.samples.values() if n > 0]
    if not counts:
        return times.calls
    if times.calls > 1 and all(n % times.calls == 0 for n in counts):
        return times.calls
    return math.gcd(*counts)


def executions_per_call(times: DispatchTimes, name: str, calls: int) -> int:
    """How many times per call the executable function ``name`` ran (``calls``: ``calls_profiled(times)``;
    at least 1, and 1 when no call was counted)."""
    return max(1, round(times.samples.get(name, 0) / calls)) if calls else 1


def per_call(times: DispatchTimes, keys: Mapping[str, str]) -> dict[str, tuple[int, float, str]]:
    """Key -> (executions per call, mean seconds per execution, a function name) of one profile."""
    out: dict[str, tuple[int, float, str]] = {}
    calls = calls_profiled(times)
    for name, seconds in times.seconds.items():
        n = executions_per_call(times, name, calls)
        k = profile_key(name, keys)
        if k in out:  # two functions with one key (a name-keyed collision): their executions pooled
            m, s, first = out[k]
            out[k] = (m + n, (m * s + n * seconds) / (m + n), first)
        else:
            out[k] = (n, seconds, name)
    return out


@dataclass(frozen=True)
class Unshared:
    """The executions each plan has that the other lacks (key -> count per call), with names to show."""

    ours: dict[str, int]
    theirs: dict[str, int]
    names: dict[str, str]
    shared: int
    """Executions per call both have."""

    def describe(self, side: str) -> list[str]:
        """``2x name`` per unshared executable of ``side`` (``ours`` or ``theirs``), for a report."""
        got = self.ours if side == "ours" else self.theirs
        return [f"{n}x {self.names[k]}" if n > 1 else self.names[k] for k, n in sorted(got.items())]


def unshared(ours: Mapping[str, tuple[int, float, str]], theirs: Mapping[str, tuple[int, float, str]]) -> Unshared:
    """The multiset difference of two plans' executions (``per_call`` of each)."""
    a = Counter({k: v[0] for k, v in ours.items()})
    b = Counter({k: v[0] for k, v in theirs.items()})
    names = {k: v[2] for k, v in {**theirs, **ours}.items()}
    return Unshared(dict(a - b), dict(b - a), names, sum((a & b).values()))


def unshared_seconds(profile: Mapping[str, tuple[int, float, str]], only: Mapping[str, int]) -> float:
    """Σ count x seconds of the executions ``only`` lists, as one round's ``profile`` (``per_call``) timed them."""
    return sum(n * profile[k][1] for k, n in only.items() if k in profile)


def relative_gain(
    ours: Mapping[str, tuple[int, float, str]],
    theirs: Mapping[str, tuple[int, float, str]],
    diff: Unshared,
    their_call_seconds: float,
) -> float:
    """(Σ our unshared kernel time - Σ theirs) / their whole call: one round's paired difference (below
    zero: ours is faster by that fraction of IREE's call)."""
    return (unshared_seconds(ours, diff.ours) - unshared_seconds(theirs, diff.theirs)) / their_call_seconds
