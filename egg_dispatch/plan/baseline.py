"""The plan IREE 3.13's greedy passes produce, picked from the same e-graph, costed by the same model.

Modelled from domain.md §1.4-1.8 and §7 (and checked against IREE's own output for the seed,
``tests/fixtures/seed_dispatch_creation.mlir``):

1. a set_encoding whose chain is hoistable (HoistEncodingOps: ConstantLike or Flow-mappable slices)
   is hoisted; a hoisted chain that is a const-expr becomes a global at module load
   (HoistIntoGlobals), the original constant kept; a hoisted slice of an argument is a copy
   (flow.tensor.slice) before its encode; encodes of the same argument are shared (CSE);
2. a chain that is not hoistable (a column slice, an opaque producer) stays in the dispatch;
3. no propagation through slices; identity layouts fold away; elementwise consumers are fused
   into their producer's dispatch (FormDispatchRegions); encodings stay at the encoding level;
4. data tiling is on for every contraction: never the plain contraction ``untile`` adds next to
   an unset_encoding.
"""

from __future__ import annotations

from egg_dispatch.egraph.data import EGraphData, Node, node_order
from egg_dispatch.egraph.enumerate import MATERIALIZED_OPS, is_acyclic
from egg_dispatch.util.deep import allow_deep_recursion

__all__ = ["BaselineError", "iree_baseline_choice"]


class BaselineError(Exception):
    """The e-graph does not hold IREE's plan (e.g. the rules that build it were not run)."""


def _hoisted_classes(g: EGraphData) -> set[str]:
    """Classes A for which some contraction reads Dispatch(A): HoistEncodingOps could hoist A."""
    out: set[str] = set()
    for c in g.classes:
        for node in g.choices(c):
            if node.op != "Contract":
                continue
            for k in node.children[1:3]:
                for kn in g.choices(k):
                    if kn.op == "Dispatch" and _has_op(g, kn.children[0], "SetEncoding"):
                        out.add(kn.children[0])
    return out


def _has_op(g: EGraphData, c: str, op: str) -> bool:
    return any(n.op == op for n in g.choices(c))


def iree_baseline_choice(g: EGraphData) -> dict[str, str]:
    allow_deep_recursion()
    hoistable = _hoisted_classes(g)
    choice: dict[str, str] = {}

    def operand_rank(k: str) -> int:
        ops = {n.op for n in g.choices(k)}
        if "EncodedSlice" in ops and not ops - {"EncodedSlice"}:
            return 9  # only reachable through propagation: IREE has none
        kinds = [n for n in g.choices(k)]
        if any(n.op == "ConstEval" and n.children[0] in hoistable for n in kinds):
            return 0
        if any(n.op == "Dispatch" and n.children[0] in hoistable for n in kinds):
            return 1
        if any(n.op == "ConstEval" for n in kinds):
            return 8  # a global IREE cannot reach: its chain is not hoistable
        return 2

    def rank(node: Node, ctx: str) -> tuple:
        if node.op in MATERIALIZED_OPS or node.op == "EncodedSlice":
            return (9,)
        if node.op == "Contract" and _has_op(g, node.eclass, "UnsetEncoding"):
            return (9,)  # the contraction with its encodings dropped (rules/untile.egg): data tiling is on
        if node.op == "Contract":
            return (0, sum(operand_rank(k) for k in node.children[1:3]))
        if node.op == "SetEncoding":
            src = g.choices(node.children[0])
            copies = any(n.op == "Dispatch" for n in src)
            # Hoisted argument slices are copied first; everywhere else the slice is fused.
            if ctx == "hoisted" and any(_slice_of_arg(g, n) for n in src):
                return (0, 0 if copies else 1)
            return (0, 1 if copies else 0)
        if node.op == "Generic":
            return (0, sum(1 for k in node.children[1:] for n in g.choices(k) if n.op == "Dispatch"))
        if node.op == "Contract":
            return (0,)
        return (1,)

    def choose(c: str, ctx: str) -> None:
        if c in choice or not g.is_term_class(c):
            return
        options = g.choices(c)
        if not options:
            raise BaselineError(f"class {c} has no extractable node")
        best = min(options, key=lambda n: (rank(n, ctx), node_order(n.id)))
        choice[c] = best.id
        child_ctx = {"Dispatch": "hoisted", "ConstEval": "load"}.get(best.op, ctx)
        for k in best.children:
            choose(k, child_ctx)

    choose(g.root, "run")
    if not is_acyclic(g, choice):
        raise BaselineError("IREE's policy picked a cyclic plan")
    return choice


def _slice_of_arg(g: EGraphData, node: Node) -> bool:
    if node.op == "Dispatch":
        return any(_slice_of_arg(g, n) for n in g.choices(node.children[0]))
    return node.op == "Slice" and any(n.op == "Arg" for n in g.choices(node.children[0]))
