"""What the cost model asks of an e-class or an e-node beyond its tensor facts.

Which heads stand for no computation, the classes of an operand list, whether a class is read from
outside its dispatch or is a reshape, the pack an operand runs inside its consumer's dispatch, how a
pack's source is computed there, which slices run as copies, which classes are function results,
and which nodes are contractions (data-tiled or plain, and their M, N, K). These read the e-graph and
the imported ops its leaves name, never a target, so the node prices (``cost.node_time``), their
signatures (``cost.signature``) and the plan-level charges (``cost.charges``) agree on what a node is.
"""

from __future__ import annotations

from egg_dispatch.cost.contraction import contraction_mnk, generic_contraction_kind, has_reduction
from egg_dispatch.cost.facts import Facts, TensorInfo
from egg_dispatch.egraph.data import EGraphData, Node
from egg_dispatch.egraph.imported import ImportedProgram, Parameter
from egg_dispatch.egraph.terms import BOUNDARY, COMPUTING
from egg_dispatch.mlir.ops import RESHAPE_OPS

__all__ = [
    "TIMELESS",
    "contract_twin",
    "contraction_node_mnk",
    "contraction_tiled",
    "copied_slice",
    "elementwise_proto",
    "fused_pack",
    "is_boundary",
    "is_reshape",
    "is_view_dispatch",
    "list_classes",
    "output_classes",
    "producer_in_dispatch",
]


TIMELESS = frozenset(
    {
        "Arg",
        "Const",
        "Scalar",
        "Size",
        "Empty",
        "Slice",
        "EncodedSlice",
        "Results",
        "TCons",
        "TNil",
        "Dispatch",
        "ConstEval",
    }
)


def list_classes(g: EGraphData, c: str) -> list[str]:
    """The element classes of a TList class (following its first extractable node)."""
    out: list[str] = []
    seen = set()
    while c not in seen:
        seen.add(c)
        nodes = g.choices(c)
        if not nodes or nodes[0].op != "TCons":
            break
        out.append(nodes[0].children[0])
        c = nodes[0].children[1]
    return out


def contract_twin(g: EGraphData, c: str, kids: tuple[str, ...]) -> tuple[str, tuple[str, ...]]:
    """The Contract an Mmt4d was materialized from (same class, same operands; maybe swapped)."""
    for node in g.choices(c):
        if node.op == "Contract" and node.children[3] == kids[2] and set(node.children[1:3]) == set(kids[:2]):
            return node.children[0], node.children[1:]
    raise ValueError("mmt4d without the contraction it materializes")


def is_boundary(g: EGraphData, c: str) -> bool:
    """Class c is read from outside the dispatch (every node of it a boundary)."""
    nodes = g.choices(c)
    return bool(nodes) and all(n.op in BOUNDARY for n in nodes)


def is_reshape(g: EGraphData, imported: ImportedProgram, c: str) -> bool:
    """Class c is a reshape (a view of its input's bytes): every node an Op over a reshape."""
    nodes = g.choices(c)
    return bool(nodes) and all(
        n.op == "Op" and getattr(imported.ops.get(str(g.leaf_value(n.children[0]))), "name", "") in RESHAPE_OPS
        for n in nodes
    )


def is_view_dispatch(g: EGraphData, imported: ImportedProgram, body: str) -> bool:
    """``Dispatch(body)`` is a view between dispatches (metadata, no dispatch of its own): ``body`` is a
    reshape of a value read from a buffer (a dispatch input, a slice of one, a reshape of those). A
    reshape of a value computed in the same dispatch (an elementwise result an encode was fused after,
    then dropped by ``untile``) is a dispatch computing that value and returning it reshaped."""
    seen: set[str] = set()

    def stored(c: str) -> bool:
        if c in seen:
            return True
        seen.add(c)
        nodes = g.choices(c)
        if is_reshape(g, imported, c):
            return all(all(stored(d) for d in list_classes(g, n.children[1])[:1]) for n in nodes)
        return not nodes or not all(n.op in COMPUTING for n in nodes)

    return is_reshape(g, imported, body) and stored(body)


def fused_pack(g: EGraphData, c: str, facts: Facts) -> tuple[TensorInfo, TensorInfo, int | None] | None:
    """(source, packed tensor, operand index) of the pack an operand class runs inside its consumer's
    dispatch, if it is one (a set_encoding, or a slice of one: then the whole packed tensor)."""
    for n in g.choices(c):
        if n.op == "EncodedSlice":
            return fused_pack(g, n.children[0], facts)
        if n.op in ("SetEncoding", "Pack") and not any(m.op == "Empty" for m in g.choices(n.children[0])):
            return facts.info(n.children[0], packed=False), facts.info(c), facts.operand_index(c)
    return None


def producer_in_dispatch(g: EGraphData, c: str, imported: ImportedProgram) -> str | None:
    """How the source class ``c`` of a pack is computed inside the pack's dispatch: ``"elementwise"``
    for an elementwise generic, ``"reshape"`` for a reshape of one (collapsed on its way to the pack, as
    a PyTorch linear layer reads [B, S, D] tokens), ``"contraction"`` for a contraction's result unset
    in the dispatch (with elementwise ops on its tiles or after the unset: a class holding an unset of
    an in-dispatch value and nothing read from outside), None for anything else (a dispatch input, a
    copy): ``KernelCosts.producer_pack`` prices the first three."""

    def elementwise(d: str) -> bool:
        nodes = g.choices(d)
        return bool(nodes) and all(n.op == "Generic" and elementwise_proto(g, n, imported) for n in nodes)

    if elementwise(c):
        return "elementwise"
    if is_reshape(g, imported, c):
        sources = {d for n in g.choices(c) for d in list_classes(g, n.children[1])[:1]}
        if sources and all(elementwise(d) for d in sources):
            return "reshape"
    nodes = g.choices(c)
    unsets = [n for n in nodes if n.op in ("UnsetEncoding", "Unpack")]
    if unsets and not any(n.op in BOUNDARY for n in nodes) and not any(is_boundary(g, n.children[0]) for n in unsets):
        return "contraction"
    return None


def elementwise_proto(g: EGraphData, n: Node, imported: ImportedProgram) -> bool:
    """A Generic node of an all-parallel generic that is no contraction."""
    proto = imported.ops.get(str(g.leaf_value(n.children[0])))
    return not has_reduction(proto) and generic_contraction_kind(proto) is None


def copied_slice(g: EGraphData, imported: ImportedProgram, c: str) -> str | None:
    """The slice class that a value used between dispatches (class ``c``, through reshapes) is, when
    that slice is a copy at run time; else None.

    A slice between dispatches is not a view at run time: ``emit.iree`` gives it a dispatch of its own
    (IREE's dispatch creation does the same with a non-contiguous one, its ``slow_memcpy`` dispatches)
    that copies the slice into a new buffer for its consumer. On the GPT-2 block the three Q/K/V slices
    of the attention's operands ran as three such dispatches, 0.3 µs each with their launches, which the
    model priced as free. A slice of a dense constant is folded into a smaller constant and stays free."""
    seen: set[str] = set()
    while c not in seen:
        seen.add(c)
        nodes = g.choices(c)
        if not nodes:
            return None
        if is_reshape(g, imported, c):
            sources = {tuple(list_classes(g, n.children[1])[:1]) for n in nodes}
            if len(sources) != 1 or not (source := next(iter(sources))):
                return None
            c = source[0]
            continue
        folds = any(
            m.op == "Const" and not isinstance(imported.constants.get(str(g.leaf_value(m.children[0]))), Parameter)
            for n in nodes
            for m in g.choices(n.children[0])
        )
        return c if all(n.op in ("Slice", "EncodedSlice") for n in nodes) and not folds else None
    return None


def output_classes(g: EGraphData, imported: ImportedProgram) -> frozenset[str]:
    """Classes whose buffer is a function result: the root's results, and what a reshape of one views."""
    todo = [d for n in g.choices(g.root) if n.op == "Results" for d in list_classes(g, n.children[0])]
    out: set[str] = set()
    while todo:
        c = todo.pop()
        if c in out:
            continue
        out.add(c)
        for n in g.choices(c):
            if n.op == "Dispatch" and is_reshape(g, imported, n.children[0]):
                todo.extend(d for body in g.choices(n.children[0]) for d in list_classes(g, body.children[1]))
    return frozenset(out)


def contraction_tiled(g: EGraphData, node: Node, facts: Facts, imported: ImportedProgram) -> bool | None:
    """Whether a node is a data-tiled contraction (an operand encoded with a tiled layout: an mmt4d
    kernel), a plain one (False), or no contraction (None)."""
    if node.op in ("Contract", "Mmt4d"):
        kids = node.children
        operands = kids[1:3] if node.op == "Contract" else contract_twin(g, node.eclass, kids)[1][:2]
    elif node.op == "Generic" and generic_contraction_kind(imported.ops.get(str(g.leaf_value(node.children[0])))):
        operands = tuple(list_classes(g, node.children[1])[:2])
    else:
        return None
    return any(facts.info(k).layout is not None for k in operands)


def contraction_node_mnk(
    g: EGraphData, node: Node, facts: Facts, imported: ImportedProgram
) -> tuple[int, int, int] | None:
    """(M, N, K) of a contraction node (a named one, or a generic that is one), else None."""
    if node.op == "Contract":
        kind = "contract:" + str(g.leaf_value(node.children[0]))
        return contraction_mnk(kind, [facts.info(k) for k in node.children[1:4]])
    if node.op == "Generic":
        generic_kind = generic_contraction_kind(imported.ops.get(str(g.leaf_value(node.children[0]))))
        inputs = list_classes(g, node.children[1]) + list_classes(g, node.children[2])
        if generic_kind is not None and len(inputs) == 3:
            return contraction_mnk("contract:" + generic_kind, [facts.info(k) for k in inputs])
    return None
