"""What a plan pays beyond its nodes' op times: per dispatch, per call, and by what else it chooses.

* a dispatch: its launch and the allocation of the buffer it writes (``alloc_seconds``); a dispatch
  of nothing but a slice is a copy of the slice's bytes, in and out, and so is a slice used between
  dispatches (``cost.classes.copied_slice``), which IREE runs as a copy, never as a view
  (``copy_dispatch_seconds``);
* a call: its fixed overhead and one per result; and once per call when any run-time dispatch writes
  a transient buffer (``transient_dispatches``: the ``once`` charge of ``cost.table``);
* an elementwise generic that reads an unset_encoding in its dispatch pays the measured
  ``consumer_after_unpack`` when the plan chooses both (``consumer_pairs``: ``pairs``);
* a plain contraction runs ``KernelCosts.throttle`` slower in a plan that also runs a data-tiled one
  of ``throttle_us`` or more, the core's clock dropping after a long mmt4d kernel
  (``throttle_charges``: ``gated``);
* a computation fused into two dispatches runs in each, so it is charged per use
  (``exclusive_nodes``).

The overheads are measured by a calibrated profile; without one a dispatch costs the profile's
launch overhead and the rest is free.
"""

from __future__ import annotations

from collections.abc import Mapping

from egg_dispatch.cost.classes import (
    contraction_tiled,
    elementwise_proto,
    is_view_dispatch,
    list_classes,
    output_classes,
)
from egg_dispatch.cost.facts import Facts
from egg_dispatch.cost.op_time import op_seconds
from egg_dispatch.egraph.data import EGraphData
from egg_dispatch.egraph.imported import ImportedProgram
from egg_dispatch.target.kernels import KernelCosts
from egg_dispatch.target.profile import Target

__all__ = [
    "alloc_seconds",
    "call_overhead_seconds",
    "call_seconds",
    "consumer_pairs",
    "copy_dispatch_seconds",
    "dispatch_overhead_seconds",
    "exclusive_nodes",
    "launch_seconds",
    "output_seconds",
    "slice_copy_seconds",
    "throttle_charges",
    "throttles",
    "transient_dispatches",
    "transient_seconds",
]


def launch_seconds(target: Target) -> float:
    """Per-dispatch overhead on top of its kernel: measured when the profile is calibrated."""
    return (target.kernels.launch_us if target.kernels else target.dispatch_overhead_us) * 1e-6


def call_seconds(target: Target) -> float:
    """Per-call overhead whatever the plan (import, export, submission); measured, else 0."""
    return target.kernels.call_us * 1e-6 if target.kernels else 0.0


def output_seconds(target: Target) -> float:
    """Per function result and call (its buffer is allocated and exported): measured, else 0."""
    return target.kernels.output_us * 1e-6 if target.kernels else 0.0


def transient_seconds(target: Target) -> float:
    """Once per call when the plan has a transient buffer (``KernelCosts.transient_us``): measured, else 0."""
    return target.kernels.transient_us * 1e-6 if target.kernels else 0.0


def alloc_seconds(target: Target, nbytes: float) -> float:
    """A dispatch's result buffer is allocated and first touched on every call: the measured
    ``KernelCosts.alloc`` by its bytes, else the profile's flat ``alloc_gbps``, else free."""
    k = target.kernels
    if k is None or nbytes <= 0:
        return 0.0
    if k.alloc.measured:
        return k.alloc.seconds(nbytes, nbytes)
    return nbytes / (k.alloc_gbps * 1e9) if k.alloc_gbps > 0 else 0.0


def dispatch_overhead_seconds(target: Target, nbytes: float) -> float:
    """What a run-time dispatch writing ``nbytes`` costs beyond its ops: its launch and the allocation of
    its result buffer (the cost table and the plan graph price a dispatch by this one sum)."""
    return launch_seconds(target) + alloc_seconds(target, nbytes)


def call_overhead_seconds(target: Target, results: int) -> float:
    """What a call with ``results`` function results costs whatever its dispatches: its fixed overhead
    and ``output_seconds`` per result."""
    return call_seconds(target) + output_seconds(target) * results


def slice_copy_seconds(g: EGraphData, c: str, facts: Facts, target: Target) -> float:
    """The copy a dispatch of class ``c`` is when ``c`` is nothing but a slice (every node of it a
    ``Slice`` or ``EncodedSlice``): its result's bytes read and written; 0 for any other dispatch."""
    nodes = g.choices(c)
    if not nodes or any(n.op not in ("Slice", "EncodedSlice") for n in nodes):
        return 0.0
    out = facts.info(c)
    return op_seconds("copy", [out], out, target)


def copy_dispatch_seconds(g: EGraphData, c: str, facts: Facts, target: Target) -> float:
    """A dispatch of its own for the slice class ``c`` (``copied_slice``): launch, result buffer, copy."""
    return dispatch_overhead_seconds(target, facts.info(c).stored_bytes) + slice_copy_seconds(g, c, facts, target)


def consumer_pairs(
    g: EGraphData, imported: ImportedProgram, target: Target, facts: Facts | None = None
) -> tuple[tuple[float, str, str], ...]:
    """(seconds, generic node, unset node): an elementwise generic reading the result of an
    ``unset_encoding`` (or unpack) inside its dispatch pays ``KernelCosts.consumer_after_unpack`` per
    element of its result when a plan chooses both: the generic after the unpack in the contraction's
    dispatch measured slower than the unpack alone, while the same generic on the encoded accumulator
    (``rules/sink_unset.egg``) costs nothing extra, so it pays nothing (docs/measurements.md §3). Empty
    without that fit."""
    k = target.kernels
    if k is None or not k.consumer_after_unpack.measured:
        return ()
    facts = facts or Facts(g)
    out: list[tuple[float, str, str]] = []
    for c in g.classes:
        for p in g.choices(c):
            if p.op != "Generic" or not elementwise_proto(g, p, imported):
                continue
            seconds = k.consumer_after_unpack.seconds(facts.info(c).numel, 0.0)
            if seconds <= 0:
                continue
            for d in dict.fromkeys(list_classes(g, p.children[1])):
                out += [(seconds, p.id, n.id) for n in g.choices(d) if n.op in ("UnsetEncoding", "Unpack")]
    return tuple(out)


def throttles(kernels: KernelCosts, tiled: bool | None, seconds: float) -> bool:
    """Whether a contraction (``contraction_tiled``) of ``seconds`` slows a plan's plain ones: a data-tiled
    one of at least ``KernelCosts.throttle_us`` (the gate of ``throttle_charges``)."""
    return bool(tiled) and kernels.throttle > 0 and seconds >= kernels.throttle_us * 1e-6


def throttle_charges(
    g: EGraphData, imported: ImportedProgram, target: Target, facts: Facts, seconds: Mapping[str, float]
) -> tuple[tuple[tuple[float, str], ...], frozenset[str]]:
    """(``gated`` charges, ``gate``) of ``KernelCosts.throttle``: every plain contraction node pays that
    fraction of its time (``seconds``, by node id) more when the plan also runs a data-tiled one whose
    time reaches ``throttle_us`` (the gate): plain contractions measured slower in a module that also ran
    a long data-tiled one, which a model pricing each kernel as measured alone cannot see
    (docs/measurements.md §3). Empty without the fit."""
    k = target.kernels
    if k is None or k.throttle <= 0:
        return (), frozenset()
    gate: set[str] = set()
    gated: list[tuple[float, str]] = []
    for c in g.classes:
        if not g.is_term_class(c):
            continue
        for n in g.choices(c):
            tiled = contraction_tiled(g, n, facts, imported)
            if tiled is None:
                continue
            if throttles(k, tiled, seconds.get(n.id, 0.0)):
                gate.add(n.id)
            elif not tiled and seconds.get(n.id, 0.0) > 0:
                gated.append((k.throttle * seconds[n.id], n.id))
    return (tuple(gated), frozenset(gate)) if gate and gated else ((), frozenset())


def transient_dispatches(g: EGraphData, imported: ImportedProgram) -> frozenset[str]:
    """Dispatch nodes whose result, at run time, is a transient buffer: not a function result (so
    another dispatch reads it), and not a reshape (a view of its operand's buffer)."""
    outputs = output_classes(g, imported)
    return frozenset(
        n.id
        for c in g.classes
        if c not in outputs and g.is_term_class(c)
        for n in g.choices(c)
        if n.op == "Dispatch" and not is_view_dispatch(g, imported, n.children[0])
    )


_EXCLUSIVE_OPS = frozenset(
    {"SetEncoding", "Pack", "UnsetEncoding", "Unpack", "Contract", "Mmt4d", "Generic", "Op", "InsertSlice"}
)


def exclusive_nodes(g: EGraphData) -> frozenset[str]:
    """Computations a plan must not share between two consumers for free: fused into two dispatches
    they run twice (IREE clones the producer into each), while the DAG objective charges them once.
    Views, fills and encoded empties are cloned at no real cost and stay shareable."""
    below: set[str] = set()  # classes some ConstEval may evaluate at load: charged once, as usual
    todo = [k for c in g.classes for n in g.choices(c) if n.op == "ConstEval" for k in n.children]
    while todo:
        c = todo.pop()
        if c in below or not g.is_term_class(c):
            continue
        below.add(c)
        todo.extend(k for n in g.choices(c) for k in n.children)
    out = set()
    for c in g.classes:
        if c in below:
            continue
        for n in g.choices(c):
            if n.op not in _EXCLUSIVE_OPS:
                continue
            if n.op in ("SetEncoding", "Pack") and any(k.op == "Empty" for k in g.choices(n.children[0])):
                continue
            out.add(n.id)
    return frozenset(out)
