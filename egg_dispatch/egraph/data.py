"""The serialized e-graph as plain Python data, pruned to the roots' cone, and terms read from it.

Every extractor works on this (docs/design.md §2.5): egglog's JSON (egraph-serialize format) parsed
once, sorted so node and class order never depends on hashing, with primitive leaves (integers,
strings, vectors) decoded so a chosen term can be rebuilt without asking egglog again.
"""

from __future__ import annotations

import contextlib
import gc
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import overload

__all__ = ["EGraphData", "Node", "Term", "build_term"]

ANALYSIS_FUNCTIONS = frozenset({"shape", "dtype", "layout-of", "encoding-of"})
"""Function tables: their rows live in their output's e-class but are facts, not alternatives."""
TERM_SORTS = frozenset({"Tensor", "TList", "Root"})
"""Sorts whose classes are decisions; everything else (encodings, layouts, vectors) is a leaf value."""


@contextlib.contextmanager
def gc_paused() -> Iterator[None]:
    """Python's cycle collector off within (and back on after, if it was on): reading a model's e-graph
    makes a few hundred thousand dicts, lists and tuples, none garbage, and the collections their
    allocation triggers cost a third of the time."""
    was_on = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_on:
            gc.enable()


def node_order(nid: str) -> tuple:
    """Sort key of egglog's serialized node ids (``function-12-Slice``): by number, not by text, so
    the order does not depend on how many nodes the e-graph has."""
    parts = nid.split("-")
    return tuple(int(p) if p.isdigit() else p for p in parts)


@dataclass(frozen=True)
class Node:
    id: str
    op: str
    eclass: str
    children: tuple[str, ...]
    """Child e-class ids, in argument order."""
    child_nodes: tuple[str, ...]
    subsumed: bool


@dataclass
class EGraphData:
    nodes: dict[str, Node]
    classes: dict[str, list[str]]
    """Class id -> its node ids (sorted), for classes of ``TERM_SORTS`` and leaf sorts alike."""
    class_type: dict[str, str]
    root: str
    lets: dict[str, str] = field(default_factory=dict)
    """Class id -> the importer's let name, where the class was bound by a let."""
    facts: dict[str, dict[str, object]] = field(default_factory=dict)
    """Analysis values per term class: ``{"shape": (8, 8), "dtype": "f32", "encoding-of": Term}``,
    and per encoding class ``{"layout-of": Term}`` (what the cost model reads)."""
    kept_refused: tuple[str, ...] = ()
    """Nodes legality subsumed that are kept extractable all the same, because without them the root
    has no plan at all (``keep_refused_without_alternative``); empty whenever a legal plan exists."""
    _term_kids: dict[str, tuple[str, ...]] = field(default_factory=dict, init=False, repr=False, compare=False)
    """Cache of ``term_kids`` (a node's children never change; ``dataclasses.replace`` starts a new one)."""

    @classmethod
    def from_serialized(cls, data: Mapping, root_let: str = "$root", *, keep_refused: bool = False) -> EGraphData:
        """The e-graph egglog serialized; ``keep_refused``: see ``keep_refused_without_alternative``.

        Classes are found and pruned to the root's cone on egglog's dicts as they are: ``Node``s are
        made for the cone only (a model's e-graph is mostly analysis and relation rows outside it),
        and for the leaves an analysis value outside the cone reads, when it reads them."""
        with gc_paused():
            return cls._from_serialized(data, root_let, keep_refused)

    @classmethod
    def _from_serialized(cls, data: Mapping, root_let: str, keep_refused: bool) -> EGraphData:
        raw_nodes = data["nodes"]
        class_data = data.get("class_data", {})
        root = next((c for c, d in class_data.items() if d.get("let") == root_let), None)
        if root is None:
            raise ValueError(f"the e-graph has no let {root_let}")
        by_class: dict[str, list[str]] = {}  # class -> its constructor (non-analysis) nodes, sorted
        analysis: list[tuple[str, str, str]] = []  # (function, argument class, value class)
        for nid in sorted(raw_nodes):
            n = raw_nodes[nid]
            op = n["op"]
            if op in ANALYSIS_FUNCTIONS:
                analysis.append((op, raw_nodes[n["children"][0]]["eclass"], n["eclass"]))
                continue
            c = n["eclass"]
            ids = by_class.get(c)
            if ids is None:
                by_class[c] = [nid]
            else:
                ids.append(nid)
        # Prune to the root's cone: analysis tables (shape, dtype, relations) are not part of a plan.
        keep: set[str] = set()
        stack = [root]
        while stack:
            c = stack.pop()
            if c in keep:
                continue
            keep.add(c)
            for nid in by_class.get(c, ()):
                stack.extend([raw_nodes[k]["eclass"] for k in raw_nodes[nid]["children"]])
        classes = {c: by_class[c] for c in sorted(keep)}
        nodes = _Nodes(raw_nodes, by_class)
        kept_nodes = {nid: nodes[nid] for ids in classes.values() for nid in ids}
        types = {c: class_data.get(c, {}).get("type", c.split("-", 1)[0]) for c in classes}
        lets = {c: d["let"] for c, d in class_data.items() if "let" in d and c in keep}
        out = cls(kept_nodes, classes, types, root, lets)
        outside = _Lookup(nodes)  # leaves of analysis values outside the cone, made when read
        for fn, arg, value in analysis:
            if arg in keep and value in by_class:
                node = nodes[by_class[value][0]]
                out.facts.setdefault(arg, {})[fn] = _leaf(out if value in classes else outside, node)
        if keep_refused:
            out.keep_refused_without_alternative()
        return out

    def keep_refused_without_alternative(self) -> None:
        """Make subsumed nodes extractable again where the root has no plan without them.

        Legality subsumes forms IREE's codegen refuses (a pack fused into its mmt4d dispatch), trusting
        the families to have derived an alternative, e.g. the hoisted encode. A budget that stops
        saturation early (or a selection of families that derives none) leaves the class with no node at
        all, though the start state, which is where its only node came from, is a plan. So, only when no
        plan exists otherwise: derive bottom-up through unsubsumed nodes, and whenever that is stuck short
        of the root, release the subsumed nodes whose children are all derivable, in classes that are not
        (those left with no unsubsumed node first), one layer at a time. Released nodes are listed in
        ``kept_refused`` (the pipeline warns about them).
        """
        kids = {
            nid: tuple(dict.fromkeys(d for d in n.children if self.is_term_class(d)))
            for nid, n in self.nodes.items()
            if n.eclass not in n.children and self.is_term_class(n.eclass)
        }
        waiting = {nid: len(ks) for nid, ks in kids.items()}
        parents: dict[str, list[str]] = {}
        for nid, ks in kids.items():
            for d in ks:
                parents.setdefault(d, []).append(nid)
        derivable: set[str] = set()
        ready = [nid for nid, k in waiting.items() if k == 0 and not self.nodes[nid].subsumed]
        refused = {nid for nid, k in waiting.items() if k == 0 and self.nodes[nid].subsumed}
        released: list[str] = []
        while True:
            while ready:
                c = self.nodes[ready.pop()].eclass
                if c in derivable:
                    continue
                derivable.add(c)
                for p in parents.get(c, ()):
                    waiting[p] -= 1
                    if waiting[p] == 0 and self.nodes[p].subsumed:
                        refused.add(p)
                    elif waiting[p] == 0:
                        ready.append(p)
            if self.root in derivable:
                break
            stuck = sorted(n for n in refused if self.nodes[n].eclass not in derivable)
            # Classes legality left no node at all first: giving theirs back may be enough for classes
            # that still have an unsubsumed node to be built with it.
            bare = [n for n in stuck if all(self.nodes[m].subsumed for m in self.classes[self.nodes[n].eclass])]
            layer = bare or stuck
            if not layer:
                break  # no plan even so: the extractors say why
            refused.difference_update(layer)
            released += layer
            ready += layer
        if self.root not in derivable or not released:
            return
        for nid in released:
            n = self.nodes[nid]
            self.nodes[nid] = Node(n.id, n.op, n.eclass, n.children, n.child_nodes, False)
        self.kept_refused = tuple(sorted(released, key=node_order))

    def class_of_let(self, let: str) -> str | None:
        """The e-class a let name was bound to (egglog joins the names of lets in one class)."""
        for c, names in self.lets.items():
            if let in names.split(", "):
                return c
        return None

    def is_term_class(self, c: str) -> bool:
        return self.class_type.get(c) in TERM_SORTS

    def term_kids(self, nid: str) -> tuple[str, ...]:
        """Distinct term child classes of a node, in argument order (leaf classes are not decisions).

        Cached per node: every plan an extractor checks or enumerates walks them again."""
        kids = self._term_kids.get(nid)
        if kids is None:
            kids = tuple(dict.fromkeys(d for d in self.nodes[nid].children if self.is_term_class(d)))
            self._term_kids[nid] = kids
        return kids

    def choices(self, c: str) -> list[Node]:
        """Extractable nodes of class ``c``: not subsumed, and not a self-loop."""
        return [
            self.nodes[n] for n in self.classes[c] if not self.nodes[n].subsumed and c not in self.nodes[n].children
        ]

    def leaf_value(self, c: str) -> object:
        """Decode a leaf class (i64, String, IVec, Encoding, Layout) into a Python value / Term."""
        node = self.nodes[self.classes[c][0]]
        return _leaf(self, node)


@dataclass(frozen=True)
class Term:
    """A chosen term: constructor name and arguments (sub-terms, ints, strings, tuples, lists)."""

    op: str
    args: tuple
    eclass: str = ""

    def __repr__(self) -> str:
        return f"({self.op} {' '.join(map(repr, self.args))})"


class _Nodes(dict[str, Node]):
    """Node id -> ``Node``, made from egglog's serialized dicts when first read. A child that is an
    analysis row living in its class (egglog references any member) is pointed at the class's first
    constructor node instead."""

    def __init__(self, raw_nodes: Mapping[str, Mapping], by_class: Mapping[str, list[str]]):
        super().__init__()
        self._raw = raw_nodes
        self._by_class = by_class

    def __missing__(self, nid: str) -> Node:
        raw = self._raw
        n = raw[nid]
        child_nodes = tuple(n["children"])
        kids = tuple([raw[k]["eclass"] for k in child_nodes])
        if any(raw[k]["op"] in ANALYSIS_FUNCTIONS for k in child_nodes):
            child_nodes = tuple(
                self._by_class[raw[k]["eclass"]][0] if raw[k]["op"] in ANALYSIS_FUNCTIONS else k for k in child_nodes
            )
        node = self[nid] = Node(nid, n["op"], n["eclass"], kids, child_nodes, bool(n.get("subsumed")))
        return node


class _Lookup:
    """Just enough of EGraphData for ``_leaf`` on classes outside the root's cone."""

    def __init__(self, nodes: Mapping[str, Node]):
        self.nodes = nodes


def _leaf(g: EGraphData | _Lookup, node: Node) -> object:
    op = node.op
    if op.startswith('"'):
        return op[1:-1].replace('\\"', '"').replace("\\\\", "\\")
    if op.lstrip("-").isdigit():
        return int(op)
    if op in ("vec-of", "vec-empty"):
        return tuple(_leaf(g, g.nodes[n]) for n in node.child_nodes)
    return Term(op, tuple(_leaf(g, g.nodes[n]) for n in node.child_nodes), node.eclass)


@overload
def build_term(g: EGraphData, choice: Mapping[str, str], c: None = None, memo: dict | None = None) -> Term: ...
@overload
def build_term(g: EGraphData, choice: Mapping[str, str], c: str, memo: dict | None = None) -> object: ...
def build_term(g: EGraphData, choice: Mapping[str, str], c: str | None = None, memo: dict | None = None) -> object:
    """The term a choice (class -> node id) selects, as a DAG of ``Term`` (shared classes share); the
    root class (no ``c``) holds the program's ``Results`` term, another class may hold a list or a leaf.

    Iterative (post-order with an explicit stack): plans of deep programs are thousands of terms deep.
    """
    memo = {} if memo is None else memo
    root = g.root if c is None else c
    stack: list[tuple[str, bool]] = [(root, False)]
    open_: set[str] = set()
    while stack:
        cls, expanded = stack.pop()
        if cls in memo:
            continue
        if not g.is_term_class(cls):
            memo[cls] = g.leaf_value(cls)
            continue
        node = g.nodes[choice[cls]]
        if not expanded:
            if cls in open_:
                raise ValueError(f"the choice is cyclic at class {cls}")
            open_.add(cls)
            stack.append((cls, True))
            stack.extend((k, False) for k in reversed(node.children) if k not in memo)
            continue
        open_.discard(cls)
        if node.op == "TNil":
            value: object = []
        elif node.op == "TCons":
            value = [memo[node.children[0]], *memo[node.children[1]]]
        else:
            value = Term(node.op, tuple([memo[k] for k in node.children]), cls)
        memo[cls] = value
    return memo[root]
