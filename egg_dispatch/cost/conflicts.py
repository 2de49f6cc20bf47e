"""Plans IREE's codegen rejects although every node in them is legal alone: extraction-level conflicts.

A *conflict* is a set of e-nodes no plan may choose all of. The rules' legality facts judge one
rewrite at a time, on one e-class; some failures of IREE's codegen depend on what *several* classes
chose, which no rule can see because the alternatives live in the same classes. Two are known:

**An encode fused into its producer's dispatch after a plain elementwise consumer of an unset_encoding
in that dispatch** -- ``{contraction, unset_encoding, linalg.generic (bias + ReLU, on the plain
value), set_encoding}`` in one dispatch, the plan the ``fuse`` family's
``fuse-encode-into-producer-dispatch`` rule builds when the generic was *not* sunk onto the encoded
accumulator (``sink_unset``). LLVMCPU's tiling cannot fuse the unpack -> generic -> pack chain through
the pack's padded tiles, so the generic's whole result and the pack's padded destination are
allocated on the stack: ``iree-compile`` fails with "exceeded stack allocation limit of 32768 bytes"
or "One or more operations with large vector sizes (32768 bytes) were found". The conflict applies
when ``padded(x) + logical(x) >= `` the stack limit (``unset_generic_set_over_stack``), which matched
every probed size on AVX-512 and is conservative on AVX2. The same dispatch with the generic on the
*encoded* accumulator (IREE's own MLP plan: SinkUnsetEncodingOp, then
FuseEncodingOpsIntoDispatchRegions) compiles, and stays allowed: the conflict names the plain
generic's node, not the class.

The conflicts are found on the e-graph (the chosen-together nodes of one such dispatch: the Dispatch
node, its set_encoding, the plain generic(s) -- up to ``CHAIN_DEPTH`` elementwise ops -- the operand
list nodes through which they read, and the unset_encoding), priced at the sizes the cost model uses;
a dynamic dim counts as unbounded (refused), as the fused pack's footprint does (egraph/size_facts.py).
Each conflict lists first the node a greedy repair bans first: the plain generic of the unset_encoding
chain (its class then takes the sunk form, when ``sink_unset`` built one). (A pack fused into a
generic's dispatch over the stack is a rule-level refusal, ``refuse-fused-pack-generic-operand`` in
rules/analysis.egg: the bad node is one operand-list node, which legality can subsume.)

**A plain contraction whose result is packed with a result layout in its own dispatch** --
``{plain contraction, (plain elementwise generics,) set_encoding}``, which the ``untile`` family makes
possible: the contraction's unset_encoding class holds the plain contraction, and a set_encoding of
that class (an encoded consumer: a residual add that ``sink_unset`` runs on the tiles, or the
accumulator of the next contraction) may choose it. IREE's LLVMCPU codegen then tiles the contraction
for its pack consumer's inner tiles and vectorizes a large block of it, and fails with "One or more
operations with large vector sizes (... bytes) were found" on a ``vector.contract``. The conflict
applies when the pack's layout tiles two dims by more than 1 (an LHS layout, M0 x 1, or M = 1 tiles,
1 x N0, compile) and ``M * N * min(K, 16) * element bytes`` reaches ``Target.plain_result_pack_bytes``
(``plain_result_pack_over``): every failure ``scripts/probe_plain_result_pack.py`` found
(``tests/fixtures/probes/plain_result_pack.json``) is inside it, and it also refuses some shapes that
compile, so it is conservative. IREE's own plans never build this dispatch (data tiling is all or
nothing there).

The probes behind both conditions: docs/built-in-profiles.md §5.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Protocol

from egg_dispatch.egraph.data import EGraphData, Node

__all__ = [
    "CHAIN_DEPTH",
    "MAX_PER_SITE",
    "codegen_conflicts",
    "is_result_layout",
    "plain_result_pack_conflicts",
    "plain_result_pack_over",
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
    """What a conflict test needs of a class (``cost.facts.TensorInfo``)."""

    @property
    def shape(self) -> tuple[int, ...]: ...

    @property
    def layout(self) -> object: ...

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


PLAIN_RESULT_PACK_K_TILE = 16
"""The reduction extent the plain contraction's vector tile took in the probe: every failure had
``M * N * min(K, 16)`` elements at or over the limit (docs/built-in-profiles.md §5.2)."""


def plain_result_pack_over(mnk: tuple[int, int, int] | None, elem_bytes: int, limit: int) -> bool:
    """A plain M x N x K contraction packed with a result layout in its dispatch reaches IREE's vector
    limit (``Target.plain_result_pack_bytes``); unknown or dynamic sizes count as over."""
    if mnk is None or any(d < 0 for d in mnk):
        return True
    m, n, k = mnk
    return m * n * min(k, PLAIN_RESULT_PACK_K_TILE) * elem_bytes >= limit


def codegen_conflicts(
    g: EGraphData,
    limit: int,
    info: Callable[[str], _Info],
    plain_limit: int | None = None,
    mnk: Callable[[Node], tuple[int, int, int] | None] | None = None,
) -> tuple[tuple[str, ...], ...]:
    """Every conflict of the e-graph (module docstring), sorted; ``limit`` is the target's
    ``max_stack_allocation_size``, ``info(class)`` the cost model's tensor facts; with ``plain_limit``
    (``Target.plain_result_pack_bytes``) and ``mnk`` (a node's contraction sizes, None for a node that
    is no contraction) the plain-contraction result packs too."""
    out = unset_generic_set_conflicts(g, limit, info)
    if plain_limit is not None and mnk is not None:
        out |= plain_result_pack_conflicts(g, plain_limit, info, mnk)
    return tuple(sorted(out))


def is_result_layout(layout: object) -> bool:
    """A layout that tiles two dims by more than 1: an accumulator's (M0 x N0), not an operand's (M0 x 1)."""
    tiles = getattr(layout, "inner_tiles", ())
    return sum(1 for t in tiles if t > 1) >= 2


def plain_result_pack_conflicts(
    g: EGraphData, limit: int, info: Callable[[str], _Info], mnk: Callable[[Node], tuple[int, int, int] | None]
) -> set[tuple[str, ...]]:
    """The {plain contraction, plain generics, pack of the result} dispatches over ``limit``."""
    out: set[tuple[str, ...]] = set()
    for c in g.classes:
        if not g.is_term_class(c):
            continue
        for s in g.choices(c):
            if s.op not in _ENCODE or not g.is_term_class(s.children[0]) or not is_result_layout(info(c).layout):
                continue
            x = s.children[0]
            if info(x).layout is not None:
                continue
            paths = []
            for path in _plain_contractions(g, x, CHAIN_DEPTH, info, mnk):
                contraction = g.nodes[path[-1]]
                if plain_result_pack_over(mnk(contraction), info(contraction.eclass).elem_bytes, limit):
                    paths.append(path)
                    if len(paths) > MAX_PER_SITE:
                        break
            if len(paths) > MAX_PER_SITE:
                paths = sorted({_coarse(g, p) for p in paths})
            out.update((s.id, *p) for p in paths)
    return out


def _plain_contractions(
    g: EGraphData,
    c: str,
    depth: int,
    info: Callable[[str], _Info],
    mnk: Callable[[Node], tuple[int, int, int] | None],
    seen: frozenset[str] = frozenset(),
) -> Iterator[tuple[str, ...]]:
    """Node paths from class ``c`` (plain, computed in the encode's dispatch) to a plain contraction in
    the same dispatch: the contraction itself, or plain generics and their operand lists' TCons nodes
    down to one (up to ``depth`` generics). A ``Dispatch`` node ends the dispatch: not followed."""
    if c in seen:
        return
    for m in g.choices(c):
        if m.op in ("Contract", "Generic") and mnk(m) is not None:
            yield (m.id,)
        elif m.op == "Generic" and depth > 0 and len(m.children) >= 2:
            for elem, via in _operands(g, m.children[1], ()):
                if g.is_term_class(elem) and info(elem).layout is None:
                    for rest in _plain_contractions(g, elem, depth - 1, info, mnk, seen | {c}):
                        yield (m.id, *via, *rest)


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
