"""The model's kernel times against IREE's profile of the same plan, kind by kind.

``tune`` ties a profiled executable to the plan dispatch it is by IREE's program-order numbering, which
breaks where IREE adds dispatches (a copy for a slice between dispatches) or deduplicates executables. Here
the tie is by *what a kernel computes*: a contraction of one ``M x N x K`` (IREE names every dispatch by its
root op and its loop ranges, ``main$async_dispatch_18_batch_matmul_1x1x256x256_f32``), or a per-call encode
(``_encoding_5_encode_1x1x256xf32_to_1x1x256xf32``). Layers of a model repeat their shapes, so one key
usually stands for several dispatches; the model prices alike dispatches alike, and their profiled times
are pooled (IREE runs one deduplicated executable for all of them).

A plan's predicted kernel is its dispatch's compute and traffic (``DispatchInfo.flops_seconds``), without
the launch: IREE's host-execution profile times the kernel alone (``iree.profiling``). Whatever else a
contraction's dispatch fuses (a decode, a residual add) is in both figures.
"""

from __future__ import annotations

import re
import statistics
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from egg_dispatch.iree.profiling import DispatchTimes
from egg_dispatch.measure.differential import calls_profiled, executions_per_call
from egg_dispatch.mlir.ir import Operation
from egg_dispatch.mlir.ir_types import TensorType
from egg_dispatch.result.per_call import emitted_dispatches
from egg_dispatch.result.plan_view import PlanView

if TYPE_CHECKING:
    from egg_dispatch.result.exploration import Candidate

__all__ = ["KernelKey", "Predicted", "Profiled", "Row", "agreement", "median_ratio", "predicted", "profiled"]

type KernelKey = tuple[str, ...]
"""``("matmul", "1x256x256")`` (M x N x K, a batch of 1 dropped) or ``("encode", "1x1x256xf32")``."""

_CONTRACTION = re.compile(
    r"_dispatch_\d+_(?:batch_)?(?:matmul|matvec|vecmat|contract)(?:_like)?(?:_transpose_[ab])?_(?P<dims>\d+(?:x\d+)+)_"
)
_ENCODE = re.compile(r"^_encoding_\d+_encode_(?P<type>[\dx]+x[a-z]+\d+)_to_")


@dataclass(frozen=True)
class Predicted:
    """The model's kernels of one key in one plan."""

    seconds: float
    """Mean predicted kernel seconds (launch excluded) over the plan's dispatches of this key."""
    count: int
    """Dispatches of this key per call."""


@dataclass(frozen=True)
class Profiled:
    """IREE's profiled executables of one key in one compiled plan."""

    seconds: float
    """Mean measured kernel seconds per execution, over every execution of this key."""
    count: int
    """Executions of this key per call."""
    names: tuple[str, ...]


@dataclass(frozen=True)
class Row:
    key: KernelKey
    predicted: Predicted | None
    profiled: Profiled | None

    @property
    def ratio(self) -> float | None:
        """predicted / measured (None when either is missing or the measurement is 0)."""
        if self.predicted is None or self.profiled is None or self.profiled.seconds <= 0:
            return None
        return self.predicted.seconds / self.profiled.seconds

    @property
    def tied(self) -> bool:
        """Like compared with like: both sides have the key, a contraction as often per call (otherwise the
        key pools other dispatches on one side: a dispatch holding two contractions is keyed by its first
        here, by the root op IREE picks there). Every encode of one type is the same kernel, so an encode
        is tied whatever the counts (IREE may run fewer than the plan lists: it folds an encode of a value
        encoded already)."""
        if self.predicted is None or self.profiled is None:
            return False
        return self.key[0] == "encode" or self.predicted.count == self.profiled.count


def _mnk(dims: Sequence[int]) -> str:
    """``MxNxK`` of a contraction's loop ranges (batch first; a batch of 1 is dropped)."""
    *batch, m, n, k = dims
    batch = [b for b in batch if b != 1]
    return "x".join(str(d) for d in (*batch, m, n, k))


def profiled_key(name: str) -> KernelKey | None:
    """The key of a profiled executable function by its name (None: not a contraction or an encode)."""
    if m := _ENCODE.match(name):
        return ("encode", m["type"])
    if (m := _CONTRACTION.search(name)) and len(dims := [int(d) for d in m["dims"].split("x")]) >= 3:
        return ("matmul", _mnk(dims))
    return None


def profiled(times: DispatchTimes) -> dict[KernelKey, Profiled]:
    """Every contraction and encode of one profile, pooled by key."""
    calls = calls_profiled(times)
    pooled: dict[KernelKey, tuple[float, int, list[str]]] = {}
    for name, seconds in sorted(times.seconds.items()):
        key = profiled_key(name)
        if key is None:
            continue
        n = executions_per_call(times, name, calls)
        total, count, names = pooled.get(key, (0.0, 0, []))
        pooled[key] = (total + n * seconds, count + n, [*names, name])
    return {k: Profiled(total / count, count, tuple(names)) for k, (total, count, names) in pooled.items()}


def _encoded_type(t: object) -> str | None:
    """``1x1x256xf32`` of ``tensor<1x1x256xf32>``, as IREE names an encode executable (None: not a
    static tensor type)."""
    if not isinstance(t, TensorType) or not all(isinstance(d, int) and d >= 0 for d in t.shape):
        return None
    return "x".join([*(str(d) for d in t.shape), str(t.element)])


def _region_encoded_type(region: Operation) -> str | None:
    """What an encode dispatch encodes: the type its first ``set_encoding`` reads."""
    op = next((o for o in region.walk() if o.name == "iree_encoding.set_encoding" and o.operands), None)
    return _encoded_type(op.operands[0].type) if op is not None else None


def predicted(c: Candidate, v: PlanView) -> dict[KernelKey, Predicted]:
    """Every run-time contraction dispatch and per-call encode of ``c`` (``v``: the view of its MLIR) with
    the model's kernel time, pooled by key. A dispatch with several contractions is keyed by its first;
    an encode in a dispatch of its own (or a ``flow.tensor.encode``) by the type it reads. Empty when the
    plan's MLIR and its graph do not line up (``result.per_call.emitted_dispatches``)."""
    at = emitted_dispatches(c)
    pooled: dict[KernelKey, list[float]] = {}
    first: dict[int, str] = {}
    for k in v.contractions:
        first.setdefault(k.dispatch, k.shape)
    for i, d in enumerate(v.dispatches):
        info = at.get(id(d.op))
        if info is None:
            continue
        if i in first and "?" not in first[i]:
            pooled.setdefault(("matmul", _mnk([int(x) for x in first[i].split("x")])), []).append(info.flops_seconds)
        elif d.encode_only and (t := _region_encoded_type(d.op)):
            pooled.setdefault(("encode", t), []).append(info.flops_seconds)
    func = next((op for op in c.mlir.ops if op.name in ("func.func", "util.func") and op.regions), None)
    for op in func.regions[0].entry.ops if func is not None else ():
        if op.name == "flow.tensor.encode" and (info := at.get(id(op))) is not None:
            if t := _encoded_type(op.operands[0].type):
                pooled.setdefault(("encode", t), []).append(info.flops_seconds)
    return {k: Predicted(statistics.fmean(s), len(s)) for k, s in pooled.items()}


def agreement(pred: Mapping[KernelKey, Predicted], prof: Mapping[KernelKey, Profiled]) -> list[Row]:
    """One row per key either side has, in key order."""
    return [Row(k, pred.get(k), prof.get(k)) for k in sorted({*pred, *prof})]


def median_ratio(rows: Sequence[Row], kind: str) -> float | None:
    """The median predicted/measured ratio over the rows of ``kind`` (``matmul`` or ``encode``) that are
    ``tied``, each weighted by its executions per call (None: no such row)."""
    ratios: list[float] = []
    for r in rows:
        if r.key[0] == kind and r.tied and r.ratio is not None and r.profiled is not None:
            ratios += [r.ratio] * r.profiled.count
    return statistics.median(ratios) if ratios else None
