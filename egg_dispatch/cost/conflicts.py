"""Plans IREE's codegen rejects although every node in them is legal alone: extraction-level conflicts.

A *conflict* is a set of e-nodes no plan may choose all of. The rules' legality facts judge one
rewrite at a time, on one e-class; some failures of IREE's codegen depend on what *several* classes
chose, which no rule can see because the alternatives live in the same classes. The one found so far:

**An encode fused into its producer's dispatch after a plain elementwise consumer of an unset_encoding
in that dispatch** -- ``{contraction, unset_encoding, linalg.generic (bias + ReLU, on the plain
value), set_encoding}`` in one dispatch, the plan the ``fuse`` family's
``fuse-encode-into-producer-dispatch`` rule builds when the generic was *not* sunk onto the encoded
accumulator (``sink_unset``). LLVMCPU's tiling cannot fuse the unpack -> generic -> pack chain through
the pack's padded tiles, so the generic's whole result and the pack's padded destination are
allocated on the stack: ``iree-compile`` fails with "exceeded stack allocation limit of 32768 bytes"
or "One or more operations with large vector sizes (32768 bytes) were found". Probed with IREE 3.13
on AVX-512 (Intel Xeon), f32 MLPs with bias + ReLU, the generic's result [M, F]: rejected whenever
``padded(x) + logical(x) >= 32 KiB`` (16x256, 32x128, 64x64, 24x160 rejected; 8x256, 16x128, 32x64
compiled); AVX2 compiled every size tried, so the condition is conservative there. The same dispatch
with the generic on the *encoded* accumulator (IREE's own MLP plan: SinkUnsetEncodingOp, then
FuseEncodingOpsIntoDispatchRegions) compiles at every size, and stays allowed: the conflict names the
plain generic's node, not the class.

**A set_encoding left in the dispatch of a linalg.generic that reads it** (a contraction written as a
generic, e.g. f16 x f16 -> f32 with ``arith.extf``, or an op a set_encoding was bubbled through) over
the fused-pack footprint the ``fuse`` family's legality uses for contractions: explore's plan for a
128x512 f16 activation times a 512x2048 f16 weight kept both packs in the dispatch and iree-compile
rejected it ("large vector sizes (32768 bytes)"); with the conflict, the weight is const-evaluated and
the activation encoded in a dispatch of its own, as IREE does.

The conflicts are found on the e-graph (the chosen-together nodes of one such dispatch: the Dispatch
node, its set_encoding, the plain generic(s) -- up to ``CHAIN_DEPTH`` elementwise ops -- the operand
list nodes through which they read, and the unset_encoding), priced at the sizes the cost model uses;
a dynamic dim counts as unbounded (refused), as the fused pack's footprint does (egraph/size_facts.py).
Each conflict lists first the node a greedy repair bans first: the plain generic of the unset_encoding
chain (its class then takes the sunk form, when ``sink_unset`` built one), the operand-list node that
reads an in-dispatch pack of a generic (the list then takes the hoisted or const-evaluated operand).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Protocol

from egg_dispatch.egraph.data import EGraphData, Node

__all__ = [
    "CHAIN_DEPTH",
    "MAX_PER_SITE",
    "codegen_conflicts",
    "unset_generic_set_conflicts",
    "unset_generic_set_over_stack",
]

CHAIN_DEPTH = 3
"""Elementwise generics between the unset_encoding and the set_encoding that are looked through."""

MAX_PER_SITE = 64
"""Conflicts listed per (dispatch, set_encoding, generic); beyond it the operand-list nodes are left
out of the sets (coarser, so conservative: it may forbid a plan that reads the unset from elsewhere)."""

_ENCODE = ("SetEncoding", "Pack")
_DECODE = ("UnsetEncoding", "Unpack")


class _Info(Protocol):
    """What a conflict test needs of a class (``cost.model.TensorInfo``)."""

    shape: tuple[int, ...]
    layout: object

    @property
    def elem_bytes(self) -> int: ...

    @property
    def numel(self) -> int: ...

    @property
    def stored_numel(self) -> int: ...


def unset_generic_set_over_stack(x: _Info, packed: _Info, limit: int) -> bool:
    """The generic's result x and the pack's padded destination do not fit the stack together (any
    dynamic dim: not provably)."""
    if any(d < 0 for d in x.shape):
        return True
    return x.numel * x.elem_bytes + packed.stored_numel * packed.elem_bytes >= limit


def codegen_conflicts(
    g: EGraphData, limit: int, info: Callable[[str], _Info], vector_bytes: int | None = None
) -> tuple[tuple[str, ...], ...]:
    """Every conflict of the e-graph (module docstring), sorted; ``limit`` is the target's
    ``max_stack_allocation_size``, ``vector_bytes`` its vector-size limit (default: the stack limit)
    and ``info(class)`` the cost model's tensor facts."""
    out = set(_generic_fused_packs(g, limit, vector_bytes or limit, info))
    out.update(unset_generic_set_conflicts(g, limit, info))
    return tuple(sorted(out))


def unset_generic_set_conflicts(g: EGraphData, limit: int, info: Callable[[str], _Info]) -> set[tuple[str, ...]]:
    """The {contraction, unset_encoding, plain generic, set_encoding} dispatches over ``limit``."""
    out: set[tuple[str, ...]] = set()
    for c in g.classes:
        if not g.is_term_class(c):
            continue
        for n in g.choices(c):
            if n.op != "Dispatch":
                continue
            for s in g.choices(n.children[0]):
                if s.op not in _ENCODE or not g.is_term_class(s.children[0]):
                    continue
                x = s.children[0]
                if not unset_generic_set_over_stack(info(x), info(s.eclass), limit):
                    continue
                for m in g.choices(x):
                    if m.op != "Generic":
                        continue
                    paths = []
                    for path in _reads_of_unset(g, m, CHAIN_DEPTH, info, True):
                        paths.append(path)
                        if len(paths) > MAX_PER_SITE:
                            break
                    if len(paths) > MAX_PER_SITE:
                        paths = sorted({_coarse(g, p) for p in paths})
                    out.update((m.id, n.id, s.id, *p) for p in paths)
    return out


def _generic_fused_packs(
    g: EGraphData, limit: int, vector_bytes: int, info: Callable[[str], _Info]
) -> Iterator[tuple[str, ...]]:
    """A set_encoding left inside the dispatch of a linalg.generic that reads it (a contraction written as
    a generic, or an op a set_encoding was bubbled through): the same footprint condition as the
    ``fuse`` family's fused pack into a contraction (egraph/facts.py ``fused_footprint_legal``: packed
    operand + the generic's packed result within the stack limit, the operand under the vector
    limit), which no rule checks for a generic's operands."""
    for c in g.classes:
        if not g.is_term_class(c):
            continue
        for m in g.choices(c):
            if m.op != "Generic" or len(m.children) < 2:
                continue
            out_info = info(m.eclass)
            acc = out_info.stored_numel * out_info.elem_bytes if out_info.layout is not None else 0
            for elem, via in _operands(g, m.children[1], ()):
                for s in g.choices(elem):
                    if s.op not in _ENCODE or not g.is_term_class(s.children[0]):
                        continue
                    if any(k.op == "Empty" for k in g.choices(s.children[0])):
                        continue  # an init's encoding: nothing is packed
                    packed = info(elem)
                    if packed.layout is None:
                        continue
                    nbytes = packed.stored_numel * packed.elem_bytes
                    if any(d < 0 for d in packed.shape) or nbytes + acc > limit or nbytes >= vector_bytes:
                        # the list node reading the pack first: banning it leaves the hoisted and the
                        # const-evaluated spellings of that operand (the pack's own class has them too)
                        yield (via[-1], *via[:-1], m.id, s.id)


def _coarse(g: EGraphData, path: tuple[str, ...]) -> tuple[str, ...]:
    return tuple(nid for nid in path if g.nodes[nid].op != "TCons")


def _reads_of_unset(
    g: EGraphData, generic: Node, depth: int, info: Callable[[str], _Info], first: bool = False
) -> Iterator[tuple[str, ...]]:
    """Node paths by which a plain generic reads an unset_encoding in its own dispatch: the operand
    list's TCons nodes down to the operand, then the unset (or a plain generic and its own path)."""
    if len(generic.children) < 2 or (not first and info(generic.eclass).layout is not None):
        return
    for elem, via in _operands(g, generic.children[1], ()):
        for k in g.choices(elem):
            if k.op in _DECODE:
                yield (*via, k.id)
            elif k.op == "Generic" and depth > 1:
                for rest in _reads_of_unset(g, k, depth - 1, info):
                    yield (*via, k.id, *rest)


def _operands(g: EGraphData, lst: str, via: tuple[str, ...], seen: frozenset[str] = frozenset()) -> Iterator[
    tuple[str, tuple[str, ...]]
]:  # fmt: skip
    """(operand class, the TCons nodes that reach it) for every spelling of an operand list."""
    if lst in seen or not g.is_term_class(lst):
        return
    for t in g.choices(lst):
        if t.op != "TCons" or len(t.children) != 2:
            continue
        yield t.children[0], (*via, t.id)
        yield from _operands(g, t.children[1], (*via, t.id), seen | {lst})
