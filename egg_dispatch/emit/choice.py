"""Spelling a chosen plan at one level (encoding ops or their materialized twins) before it is emitted."""

from __future__ import annotations

from egg_dispatch.egraph.data import EGraphData

__all__ = ["normalize_choice", "twins"]

_ENCODING_LEVEL = {"Pack": "SetEncoding", "Unpack": "UnsetEncoding", "Mmt4d": "Contract"}


def _operands(op: str, children: tuple[str, ...]) -> tuple[frozenset[str], str] | tuple[str, ...]:
    """The tensor operands a node and its twin at the other level share (mmt4d may swap lhs/rhs)."""
    if op == "Contract":
        return frozenset(children[1:3]), children[3]
    if op == "Mmt4d":
        return frozenset(children[0:2]), children[2]
    return children[:1]


def normalize_choice(g: EGraphData, choice: dict[str, str], materialized: bool) -> dict[str, str]:
    """Spell every class at one level: encoding-level ops, or their materialized twins.

    A twin computes the same bytes from the same operand classes (``Pack(x)`` for
    ``SetEncoding(x)``, ``Mmt4d(a, b, c)`` or ``Mmt4d(b, a, c)`` for ``Contract(k, a, b, c)``).
    """
    twins = {v: k for k, v in _ENCODING_LEVEL.items()} if materialized else _ENCODING_LEVEL
    out = dict(choice)
    for c, nid in choice.items():
        node = g.nodes[nid]
        want = twins.get(node.op)
        if want is None:
            continue
        key = _operands(node.op, node.children)
        for alt in g.choices(c):
            if alt.op == want and _operands(alt.op, alt.children) == key:
                out[c] = alt.id
                break
    return out


def twins(g: EGraphData, nid: str) -> list[str]:
    """The nodes of ``nid``'s class that spell it at the other level (``Pack`` for ``SetEncoding``, ...),
    which the plan emits as the same op (``normalize_choice``)."""
    node = g.nodes[nid]
    ops = {node.op, *(k for k, v in _ENCODING_LEVEL.items() if v == node.op), _ENCODING_LEVEL.get(node.op, "")}
    ops.discard(node.op)
    key = _operands(node.op, node.children)
    return [alt.id for alt in g.choices(node.eclass) if alt.op in ops and _operands(alt.op, alt.children) == key]
