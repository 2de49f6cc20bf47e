"""What each contraction of a plan costs per call, by the cost model: its kernel, and the encodes and
decodes it needs at run time.

The plan graph (``plan.graph.build_plan``) prices every run-time dispatch (``DispatchInfo``: its launch,
and each computation it runs with the seconds it is priced at, ``nodes``); the plan's MLIR, read by
``plan_view``, says which dispatch holds each contraction and which op encodes each of its operands and
decodes its result (``Contraction.steps``). The two are tied by ``Candidate.dispatch_order``: the plan's
MLIR holds its run-time dispatches (``flow.dispatch.region`` and ``flow.tensor.encode``) in that order.
No time is computed here: every figure is one the cost model gave the plan.

Per contraction:

* the kernel: its contraction node (``matmul``, or the data-tiled ``mmt4d``) with its dispatch's launch
  (shared equally among the contractions of that dispatch). Not the accumulator's fill: the plan prices
  one fill of a shape once, in whichever dispatch it meets first, so that layers alike would differ;
* each per-call encode and decode attributable to it: an encode (or decode) in a dispatch of its own (an
  encode dispatch, a ``flow.tensor.encode``) is that whole dispatch, launch included; one fused into
  another dispatch is its node's time there. A step several contractions share (one encode read by two
  contractions, one decode after the product of two) is split equally among them. Encodes at load (a
  ``util.initializer``) are not per call and are not counted.

When the plan's MLIR and its graph cannot be tied (another dispatch count), a plan's contractions have no
figures (None).
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from typing import TYPE_CHECKING

from egg_dispatch.mlir.ir import Operation
from egg_dispatch.plan.graph import DispatchInfo
from egg_dispatch.result.plan_view import ROLES, SLICES, PlanView, is_contraction

if TYPE_CHECKING:
    from egg_dispatch.result.exploration import Candidate

__all__ = ["Part", "PerCall", "emitted_dispatches", "per_call"]

_KERNEL = ("Contract", "Mmt4d")
_ENCODE = ("SetEncoding", "Pack")
_DECODE = ("UnsetEncoding", "Unpack")


@dataclass(frozen=True)
class Part:
    """One per-call encode or decode a contraction needs."""

    what: str
    """``LHS encode``, ``ACC encode``, ``decode``, ``encode for generic(add)`` (another input of an op
    between the contraction and its decode, read encoded)."""
    seconds: float
    """This contraction's share of it."""
    own_dispatch: bool
    """A dispatch (or ``flow.tensor.encode``) of its own, launch included; else fused into another."""
    shared_by: int
    """How many contractions of the plan it serves (its time is split among them)."""


@dataclass(frozen=True)
class PerCall:
    """A contraction's predicted time per call in one plan."""

    kernel: str
    """``matmul`` (plain) or ``mmt4d`` (data-tiled)."""
    kernel_seconds: float
    parts: tuple[Part, ...]

    @property
    def steps_seconds(self) -> float:
        """The per-call encodes and decodes."""
        return sum((p.seconds for p in self.parts), 0.0)

    @property
    def seconds(self) -> float:
        return self.kernel_seconds + self.steps_seconds

    def as_json(self) -> dict:
        return {
            "seconds": self.seconds, "kernel": self.kernel, "kernel_seconds": self.kernel_seconds,
            "encode_decode_seconds": self.steps_seconds,
            "steps": [
                {"what": p.what, "seconds": p.seconds, "own_dispatch": p.own_dispatch, "shared_by": p.shared_by}
                for p in self.parts
            ],
        }  # fmt: skip


def emitted_dispatches(c: Candidate) -> dict[int, DispatchInfo]:
    """The plan graph's run-time dispatch of each ``flow.dispatch.region`` and ``flow.tensor.encode`` of the
    plan's MLIR (by ``id`` of the op): the MLIR holds them in ``Candidate.dispatch_order``, which also lists
    a dispatch the model does not see into (``flow.dispatch.workgroups``, kept as it is) and a slice between
    dispatches (a copy dispatch once compiled; a slice op of the function here). Empty when the two do not
    line up (another count, or an encode against a dispatch)."""
    func = next((op for op in c.mlir.ops if op.name in ("func.func", "util.func") and op.regions), None)
    if func is None:
        return {}
    at_run = {d.name: d for d in c.plan.dispatches}
    order = [(kind, at_run[f"dispatch:{cls}"]) for kind, cls in c.dispatch_order if f"dispatch:{cls}" in at_run]
    top = list(func.regions[0].entry.ops)
    kept = ("flow.dispatch.region", "flow.tensor.encode", "flow.dispatch.workgroups")
    for names in (kept, (*kept, *SLICES)):  # a slice of a constant folds: no copy dispatch, not listed
        emitted = [op for op in top if op.name in names]
        if len(emitted) != len(order):
            continue
        pairs = list(zip(emitted, order, strict=True))
        if all((op.name == "flow.tensor.encode") == (kind == "encode") for op, (kind, _) in pairs):
            return {id(op): d for op, (_, d) in pairs}
    return {}


def _head(signature: str | None) -> str | None:
    """A node signature's op (``cost.signature``: the op first, then `` | ``-separated parts)."""
    return None if signature is None else signature.split(" | ", 1)[0]


def _node_seconds(d: DispatchInfo, heads: tuple[str, ...], nth: int, count: int) -> float:
    """The seconds of the ``nth`` of ``count`` ops of one kind (``heads``) in the MLIR of a dispatch: the
    ``nth`` node of that kind in ``d`` when it prices as many, else their mean."""
    times = [t for sig, t in d.nodes if _head(sig) in heads]
    if not times:
        return 0.0
    if len(times) == count and 0 <= nth < count:
        return times[nth]
    return sum(times) / len(times)


def _region_ops(region: Operation, names: tuple[str, ...]) -> list[Operation]:
    return [o for o in region.walk() if o is not region and o.name in names]


def per_call(c: Candidate, v: PlanView) -> list[PerCall | None]:
    """Each contraction of ``v`` (the view of ``c``'s MLIR): its predicted time per call in ``c``'s plan,
    kernel and per-call encodes and decodes (None for all when the MLIR and the plan graph do not line up)."""
    at = emitted_dispatches(c)
    if not at:
        return [None] * len(v.contractions)
    encode_only = {id(d.op) for d in v.dispatches if d.encode_only}
    # Who shares each step: a whole dispatch of its own by that dispatch, a fused op by the op.
    users: Counter[int] = Counter()
    keyed: list[list[tuple[str, int, Operation, Operation | None]]] = []
    for k in v.contractions:
        steps = []
        for role, (op, where) in k.steps.items():
            if where is not None and where.name == "util.initializer":
                continue  # at load: not per call
            whole = where is None or id(where) in encode_only
            key = id(op) if where is None else id(where) if whole else id(op)
            steps.append((role, key, op, where))
        for key in {s[1] for s in steps}:
            users[key] += 1
        keyed.append(steps)
    out: list[PerCall | None] = []
    for k, steps in zip(v.contractions, keyed, strict=True):
        region = v.dispatches[k.dispatch].op
        d = at.get(id(region))
        if d is None:
            out.append(None)
            continue
        mine = [o for o in region.walk() if o is not region and is_contraction(o)]
        n = max(len(mine), 1)
        kernel = d.launch_seconds / n + _node_seconds(d, _KERNEL, _index(mine, k.op), len(mine))
        parts, seen = [], set()
        for role, key, op, where in steps:
            if key in seen:  # two steps of one encode dispatch: the dispatch once
                continue
            seen.add(key)
            what = "decode" if role == "result" else f"{role} encode" if role in ROLES else f"encode {role}"
            heads = _DECODE if role == "result" else _ENCODE
            holder = at.get(id(op)) if where is None else at.get(id(where))
            if holder is None:
                continue
            if where is None or id(where) in encode_only:
                seconds, own = holder.seconds, True
            else:
                same = _region_ops(where, (op.name,))
                seconds, own = _node_seconds(holder, heads, _index(same, op), len(same)), False
            parts.append(Part(what, seconds / users[key], own, users[key]))
        out.append(PerCall("mmt4d" if k.tiled else "matmul", kernel, tuple(parts)))
    return out


def _index(ops: list[Operation], op: Operation) -> int:
    return next((i for i, o in enumerate(ops) if o is op), -1)
