"""The plan IREE 3.13's greedy passes produce, picked from the same e-graph, costed by the same model.

Modelled from docs/iree-data-tiling.md §1.4-1.8 and §7 (and checked against IREE's own output for the seed,
``tests/fixtures/seed_dispatch_creation.mlir``):

1. a set_encoding whose chain is hoistable (HoistEncodingOps: ConstantLike or Flow-mappable slices)
   is hoisted; a hoisted chain that is a const-expr becomes a global at module load
   (HoistIntoGlobals), the original constant kept; a hoisted slice of an argument is a copy
   (flow.tensor.slice) before its encode; encodes of the same argument are shared (CSE);
2. a chain that is not hoistable (a column slice, an opaque producer) stays in the dispatch;
3. no propagation through slices; identity layouts fold away; elementwise consumers are fused
   into their producer's dispatch (FormDispatchRegions); encodings stay at the encoding level;
   an elementwise consumer runs on the encoded accumulator when its unset_encoding has one use
   (SinkUnsetEncodingOp, ``rules/sink_unset.egg``), its bias's encode hoisted like any other; a
   set_encoding of another dispatch's result whose only use it is, is fused into that producer
   dispatch (FuseEncodingOpsIntoDispatchRegions);
4. data tiling is on for every contraction: never the plain contraction ``untile`` adds next to
   an unset_encoding.
"""

from __future__ import annotations

from collections.abc import Callable

from egg_dispatch.egraph.data import EGraphData, Node, node_order
from egg_dispatch.egraph.enumerate import MATERIALIZED_OPS, chosen_cycle
from egg_dispatch.util.deep import allow_deep_recursion
from egg_dispatch.util.registry import OpTable

__all__ = ["MAX_REPAIRS", "BaselineError", "iree_baseline_choice"]


class BaselineError(Exception):
    """The e-graph does not hold IREE's plan (e.g. the rules that build it were not run)."""


def _hoisted_classes(g: EGraphData) -> set[str]:
    """Classes A for which some contraction (or operand list of a generic) reads Dispatch(A):
    HoistEncodingOps could hoist A."""
    out: set[str] = set()
    for c in g.classes:
        for node in g.choices(c):
            if node.op not in ("Contract", "TCons"):
                continue
            for k in node.children[1:3] if node.op == "Contract" else node.children[:1]:
                for kn in g.choices(k):
                    if kn.op == "Dispatch" and _has_op(g, kn.children[0], "SetEncoding"):
                        out.add(kn.children[0])
    return out


def _has_op(g: EGraphData, c: str, op: str) -> bool:
    return any(n.op == op for n in g.choices(c))


_TRANSPARENT = frozenset({"TCons", "Dispatch", "SetEncoding"})
"""Nodes that pass a value on to the op that reads it (a list position, a placement, an encode)."""


def _owners(g: EGraphData) -> dict[str, set[str]]:
    """Class -> the classes of the ops that read it (through operand lists, placements and encodes, so
    the forms of one use count once; IREE's forms only): more than one is a value with several uses,
    which IREE's sinking and encode fusion refuse."""
    parents: dict[str, set[tuple[str, str]]] = {}
    for c in g.classes:
        for node in g.choices(c):
            if node.op in MATERIALIZED_OPS or (node.op == "Contract" and _has_op(g, c, "UnsetEncoding")):
                continue  # forms IREE's plan never has (twins of an encoding op, untile's plain contraction)
            for k in set(node.children):
                if k != c and g.is_term_class(k):
                    parents.setdefault(k, set()).add((node.op, c))
    memo: dict[str, set[str]] = {}

    def owners(c: str, seen: frozenset[str]) -> set[str]:
        if c in memo:
            return memo[c]
        out: set[str] = set()
        for op, p in parents.get(c, ()):
            if p in seen:
                continue
            out |= owners(p, seen | {p}) if op in _TRANSPARENT else {p}
        memo[c] = out
        return out

    return {c: owners(c, frozenset({c})) for c in g.classes if g.is_term_class(c)}


def _computed(g: EGraphData, c: str) -> bool:
    return any(n.op in ("Generic", "Op", "UnsetEncoding", "InsertSlice") for n in g.choices(c))


MAX_REPAIRS = 64
"""Cycles ``iree_baseline_choice`` breaks before it gives up."""


def iree_baseline_choice(g: EGraphData, *, repair: bool = True) -> dict[str, str]:
    """IREE's plan in ``g``: class -> node id, picked greedily from the root by IREE's policy.

    The greedy walk avoids a node that reads a class being chosen above it, but a cycle can also close
    through a class chosen on another branch (two opaque ops the rules found to undo each other, each
    class holding the other's op besides its own producer). Each cycle left is broken where the policy's
    next-ranked node of one of its classes leaves no cycle through that class (``_IreePolicy.repair``).
    ``repair=False``: the walk's choice as it is, cycles included (what the repair is measured against)."""
    allow_deep_recursion()
    policy = _IreePolicy(g)
    policy.choose(g.root, "run", frozenset())
    if not repair:
        return policy.choice
    for _ in range(MAX_REPAIRS):
        cycle = chosen_cycle(g, policy.choice)
        if cycle is None:
            return policy.choice
        if not policy.repair(cycle):
            break
    raise BaselineError("IREE's policy picked a cyclic plan")


_Rank = tuple[float, ...]
"""A node's rank under IREE's policy: the lowest is the node IREE's passes produce."""

_Ranker = Callable[["_IreePolicy", Node, str], _Rank]
"""Ranks a node of one op: ``(policy, node, ctx)``, ``ctx`` where it runs (``run``, ``hoisted``, ``load``)."""

_RANKERS: OpTable[_Ranker] = OpTable("rankers")
"""Op name -> its ranker; an op without one ranks ``(1,)``."""
_ranks = _RANKERS.handles


class _IreePolicy:
    """IREE's greedy choices over one e-graph: the rank of each node (``_RANKERS``) and the walk from the
    root that takes the best-ranked buildable node of each class into ``choice``."""

    def __init__(self, g: EGraphData) -> None:
        self.g = g
        self.hoistable = _hoisted_classes(g)
        self.owners = _owners(g)
        self.derivable = _derivable(g)
        self.choice: dict[str, str] = {}
        self.context: dict[str, str] = {}
        """Where each chosen class runs (``run``, ``hoisted``, ``load``): a repair chooses again there."""

    def repair(self, cycle: list[str]) -> bool:
        """Break ``cycle``: in the first of its classes (in its order) where one does, the best-ranked
        other node after which no cycle runs through that class (children not chosen yet chosen by the
        policy; undone when it does not help). False when no class of the cycle has one."""
        g = self.g
        for c in cycle:
            ctx = self.context.get(c, "run")
            others = [n for n in g.choices(c) if n.id != self.choice[c]]
            others = [n for n in others if all(k in self.derivable or not g.is_term_class(k) for k in n.children)]
            for alt in sorted(others, key=lambda n: (self.rank(n, ctx), node_order(n.id))):
                before, kept = dict(self.choice), dict(self.context)
                self.choice[c] = alt.id
                child_ctx = {"Dispatch": "hoisted", "ConstEval": "load"}.get(alt.op, ctx)
                for k in alt.children:
                    self.choose(k, child_ctx, frozenset({c}))
                left = chosen_cycle(g, self.choice)
                if left is None or c not in left:
                    return True
                self.choice, self.context = before, kept
        return False

    def single_use(self, c: str) -> bool:
        return len(self.owners.get(c, ())) <= 1

    def fused_into_producer(self, n: Node) -> bool:
        """Dispatch(SetEncoding(x)) with x computed in that dispatch, x used only by this encode."""
        if n.op != "Dispatch":
            return False
        inner = [m for m in self.g.choices(n.children[0]) if m.op == "SetEncoding"]
        return any(_computed(self.g, m.children[0]) and self.single_use(m.children[0]) for m in inner)

    def operand_rank(self, k: str) -> float:
        """How IREE places an encoded operand: const-evaluated, fused into its producer, hoisted, in place."""
        g = self.g
        ops = {n.op for n in g.choices(k)}
        if "EncodedSlice" in ops and not ops - {"EncodedSlice"}:
            return 9  # only reachable through propagation: IREE has none
        kinds = [n for n in g.choices(k)]
        if any(n.op == "ConstEval" and n.children[0] in self.hoistable for n in kinds):
            return 0
        if any(self.fused_into_producer(n) for n in kinds):
            return 0.5  # hoisted, then fused into its producer's dispatch
        if any(n.op == "Dispatch" and n.children[0] in self.hoistable for n in kinds):
            return 1
        if any(n.op == "ConstEval" for n in kinds):
            return 8  # a global IREE cannot reach: its chain is not hoistable
        return 2

    def rank(self, node: Node, ctx: str) -> _Rank:
        ranker = _RANKERS.get(node.op)
        return ranker(self, node, ctx) if ranker is not None else (1,)

    def choose(self, c: str, ctx: str, path: frozenset[str]) -> None:
        g = self.g
        if c in self.choice or not g.is_term_class(c):
            return
        # only nodes whose children can be built (legality may have emptied a class: a refused operand list)
        options = [n for n in g.choices(c) if all(k in self.derivable or not g.is_term_class(k) for k in n.children)]
        if not options:
            raise BaselineError(f"class {c} has no extractable node")
        # never a node that reads a class being chosen above it (e.g. the unset_encoding sink_unset
        # puts in a generic's class, whose set_encoding is that class's encoded twin): a cycle
        best = min(options, key=lambda n: (bool(path & set(n.children)), self.rank(n, ctx), node_order(n.id)))
        self.choice[c] = best.id
        self.context[c] = ctx
        child_ctx = {"Dispatch": "hoisted", "ConstEval": "load"}.get(best.op, ctx)
        for k in best.children:
            self.choose(k, child_ctx, path | {c})


@_ranks(*MATERIALIZED_OPS, "EncodedSlice")
def _rank_never(p: _IreePolicy, node: Node, ctx: str) -> _Rank:
    """Forms IREE's plan never has: a materialized encoding op, an encode propagated through a slice."""
    return (9,)


@_ranks("Dispatch")
def _rank_dispatch(p: _IreePolicy, node: Node, ctx: str) -> _Rank:
    inner = [m for m in p.g.choices(node.children[0]) if m.op == "SetEncoding"]
    if not inner:
        return (1,)
    # an encode dispatch of its own, or the producer dispatch returning the encoded value: IREE
    # fuses when the producer's result has no other use, and only then
    if p.fused_into_producer(node):
        return (1, 0)
    return (1, 2) if any(_computed(p.g, m.children[0]) for m in inner) else (1, 1)


@_ranks("Contract")
def _rank_contract(p: _IreePolicy, node: Node, ctx: str) -> _Rank:
    if _has_op(p.g, node.eclass, "UnsetEncoding"):
        return (9,)  # the contraction with its encodings dropped (rules/untile.egg): data tiling is on
    return (0, sum(p.operand_rank(k) for k in node.children[1:3]))


@_ranks("UnsetEncoding")
def _rank_unset(p: _IreePolicy, node: Node, ctx: str) -> _Rank:
    g = p.g
    if not _has_op(g, node.children[0], "Generic"):
        return (1,)
    # an elementwise consumer run on the encoded accumulator (rules/sink_unset.egg): IREE's
    # SinkUnsetEncodingOp does it when the unset_encoding it sinks has one use
    plain = [n for n in g.choices(node.eclass) if n.op == "Generic"]
    unsets = [x for n in plain for x in _list_classes(g, n.children[1]) if _has_op(g, x, "UnsetEncoding")]
    return (0, -1) if unsets and all(p.single_use(u) for u in unsets) else (9,)


@_ranks("TCons")
def _rank_operand_list(p: _IreePolicy, node: Node, ctx: str) -> _Rank:
    """An operand list: its encodes placed as IREE places them."""
    return (1, p.operand_rank(node.children[0]))


@_ranks("SetEncoding")
def _rank_set_encoding(p: _IreePolicy, node: Node, ctx: str) -> _Rank:
    src = p.g.choices(node.children[0])
    copies = any(n.op == "Dispatch" for n in src)
    # Hoisted argument slices are copied first; everywhere else the slice is fused.
    if ctx == "hoisted" and any(_slice_of_arg(p.g, n) for n in src):
        return (0, 0 if copies else 1)
    return (0, 1 if copies else 0)


@_ranks("Const")
def _rank_const(p: _IreePolicy, node: Node, ctx: str) -> _Rank:
    """A constant before the slice, reshape or transpose of a constant its class also holds: IREE's
    reshape folders and const-eval leave the constant they fold it into (rules/fold_constants.egg)."""
    return (0,)


@_ranks("Generic")
def _rank_generic(p: _IreePolicy, node: Node, ctx: str) -> _Rank:
    return (0, sum(1 for k in node.children[1:] for n in p.g.choices(k) if n.op == "Dispatch"))


def _derivable(g: EGraphData) -> set[str]:
    """Term classes some acyclic node choice can build (the least fixpoint from the leaves).

    A worklist: each node counts its term children not yet derivable, and a class is derivable once one
    of its nodes counts none. Linear in the e-graph (sweeping every class until nothing changes took a
    sweep per level of the program: quadratic in a model's layers)."""
    out: set[str] = set()
    waiting: dict[int, int] = {}  # a node (by index) -> its term children not yet derivable
    owner: list[str] = []  # a node's class, by index
    parents: dict[str, list[int]] = {}
    ready: list[str] = []
    for c in g.classes:
        if not g.is_term_class(c):
            continue
        for n in g.choices(c):
            kids = {k for k in n.children if g.is_term_class(k)}
            if not kids:
                ready.append(c)
                continue
            i = len(owner)
            owner.append(c)
            waiting[i] = len(kids)
            for k in kids:
                parents.setdefault(k, []).append(i)
    while ready:
        c = ready.pop()
        if c in out:
            continue
        out.add(c)
        for i in parents.get(c, ()):
            waiting[i] -= 1
            if waiting[i] == 0:
                ready.append(owner[i])
    return out


def _slice_of_arg(g: EGraphData, node: Node) -> bool:
    if node.op == "Dispatch":
        return any(_slice_of_arg(g, n) for n in g.choices(node.children[0]))
    return node.op == "Slice" and any(n.op == "Arg" for n in g.choices(node.children[0]))


def _list_classes(g: EGraphData, c: str) -> list[str]:
    """The element classes of a TList class (following its first extractable node)."""
    out: list[str] = []
    seen = set()
    while c not in seen and g.is_term_class(c):
        seen.add(c)
        nodes = [n for n in g.choices(c) if n.op == "TCons"]
        if not nodes:
            break
        out.append(nodes[0].children[0])
        c = nodes[0].children[1]
    return out
