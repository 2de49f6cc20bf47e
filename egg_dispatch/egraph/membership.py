"""Whether a plan imported on its own (IREE's own plan, read back from what IREE printed) is one of
the plans an e-graph holds, and if not, the decisions of it the e-graph lacks.

Both are terms of one language, so membership is hash-consing, with no rule run and no plan
enumerated: walk the plan bottom-up and find each of its nodes among the e-graph's e-nodes (the same
constructor, its children in the classes the plan's own children were found in). The plan is in the
e-graph when its root is found in the root's class: every node of it is an e-node whose operands lie
in the e-classes of its own operands. Redundant work is allowed: IREE's plan may compute one e-class
two ways (encode one tensor into two layouts that turn out physically identical, unset a result and
set the same layout again), which the e-graph rightly merges; such a plan is in, and ``redundant``
says where (IREE's plan is still costed as IREE runs it). Where the plan is not in, every decision the
e-graph lacks is listed (``all_missing``: each node not found whose operands were all found, so one
miss does not hide the next, and what is above a miss is not counted again). A plan that uses a node
legality refuses is in the e-graph all the same, but no extractor returns it: ``refused`` says which
(IREE's own plan can be one IREE's codegen then fails on, the bug this project was born from).

Leaves are compared by what they stand for, not by how two imports spelled them:

- an op key (``linalg.generic#…``) digests the op as printed, result types included, so a generic
  that IREE runs on encoded operands has another key than the same generic in the e-graph: keys
  match when the ops have the same name, attributes, body and result shapes and element types;
- a reshape is a reshape (``flow.tensor.reshape``, which IREE prints between dispatches, is the
  ``tensor.expand_shape`` / ``collapse_shape`` it was converted from): by its result type;
- an op's body is compared as a structure, not as text: values by where they come from (a block
  argument by number, an op's result by the op's position), so ``%in_3`` and ``%in_0`` are one
  argument, and a scalar ``arith.constant`` by its value, whether the body defines it or reads it
  from outside (our emitter copies such a constant into the body; IREE's output reads it);
- attributes by value: a float by its value and type (IREE prints ``0.5`` as ``5.000000e-01``); an
  opaque op's text with its SSA names renamed in order (its operands are the term's children);
- a contraction's kind (``linalg.matmul:(d0,d2);…``) by its maps, the named op's defaults when it
  prints none (IREE's printer drops ``indexing_maps`` that are the defaults);
- a constant matches by its values' digest and type (IREE may hold it in a ``util.global``);
- a dynamic size by the size it names (``16 * arg0.d1``), not by its code: each import numbers its
  sizes in the order it meets them;
- everything else (encodings, static sizes, argument numbers) by value.

Differences of form normalized: IREE's initializers encode with ``flow.tensor.encode``, read
as ``Dispatch(SetEncoding …)``, where the e-graph's const-eval holds ``ConstEval(SetEncoding …)`` (a
load-time computation is not a run-time dispatch); a reshape between dispatches, read from IREE's
``flow.tensor.reshape`` as ``Dispatch(Op reshape …)``, is the reshape itself (a view, no dispatch).
(A chain of reshapes IREE folds into one ``flow.tensor.reshape`` needs no normalization: the e-graph
holds the folded reshape too, rules/noop_reshape.egg conditions 7-8, and 9-12 with dynamic sizes; nor
does a constant IREE folds a static slice, reshape or transpose of a constant into: the e-graph holds it,
rules/fold_constants.egg.)
A load-time computation of a value the e-graph holds as a constant is that constant
(``load-time-noops``): IREE's initializer encodes a constant bias to a layout the target resolves to
the identity, which the e-graph's ``noop`` family folds into the constant itself, leaving no
``ConstEval`` to find (the encode is redundant work IREE does once, at load); likewise an encode
dispatch of an argument or a constant (``flow.tensor.encode``) to such a layout is the value itself, and
so is one of a value a dispatch computes (``noop`` folds that set_encoding into the value too).
Likewise a set or unset of an encoding the e-graph resolves to the identity layout is its operand
(``identity-encodings``): IREE sinks a consumer under an unset whatever the layout, and with the
identity the consumer it runs "encoded" is the plain one the e-graph holds, its unset a no-op. And a
reshape with dynamic sizes is known by what it reshapes (``reshape-sizes``): IREE's
``flow.tensor.reshape`` lists its source's and its result's dynamic sizes as operands, a
``tensor.collapse_shape`` none and an ``expand_shape`` its result's, and a size (``16 * d0``) IREE
names that the start state never computed as a value.
"""

from __future__ import annotations

import dataclasses
import itertools
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass

from egg_dispatch.egraph.data import EGraphData, Node, Term
from egg_dispatch.egraph.imported import ImportedProgram, Parameter
from egg_dispatch.mlir.ir import ArrayAttr, DenseAttr, FloatAttr, Operation, Region, TensorType, Type, Value
from egg_dispatch.mlir.ops import DEFAULT_MAPS, RESHAPE_OPS
from egg_dispatch.mlir.printer import Printer
from egg_dispatch.util.deadline import Deadline

__all__ = ["NORMALIZATIONS", "Membership", "choice_membership", "plan_membership"]

NORMALIZATIONS = frozenset(
    {
        "structured-bodies",
        "reshapes-alike",
        "initializer-encodes",
        "reshape-views",
        "load-time-noops",
        "identity-encodings",
        "reshape-sizes",
    }
)
"""The differences of form ``plan_membership`` looks through (module docstring), each by name, so
that a caller (a test) can ask without one and see what it is for."""

_Key = tuple[str, tuple[object, ...]]
_Entry = tuple[Node, tuple[Node, ...]]

_MAX_COMBINATIONS = 256
"""Combinations of the classes a node's children can be that are looked up (look-alike leaves)."""

_ENCODING_OPS = frozenset({"SetEncoding", "UnsetEncoding"})

_PLUMBING = frozenset({"TCons", "TNil", "Results"})
"""Term heads that only list values: a miss there is described by the op whose operands they are."""


@dataclass(frozen=True)
class Membership:
    """The answer of ``plan_membership``."""

    in_egraph: bool
    missing: str | None = None
    """Where the plan leaves the e-graph: its first node (bottom-up, in program order) that has no
    e-node, or an e-class the plan needs chosen two ways; None when it is in."""
    refused: str | None = None
    """The first node of the plan that legality refuses (the plan is in, but not extractable)."""
    choice: dict[str, str] | None = None
    """The plan as a choice of the e-graph (class -> node id), when it is in."""
    undecided: str | None = None
    """Why there is no answer (the test reached its budget); ``in_egraph`` is then False and
    ``missing`` says the same, so that a reader who only looks there is not told the plan is out."""
    all_missing: tuple[str, ...] = ()
    """Every decision of the plan the e-graph lacks, in program order (``missing`` is the first)."""
    redundant: tuple[str, ...] = ()
    """The plan's nodes that compute an e-class it also computes another way (redundant work)."""


def plan_membership(
    g: EGraphData,
    imported: ImportedProgram,
    plan: EGraphData,
    plan_choice: dict[str, str],
    plan_imported: ImportedProgram,
    normalize: frozenset[str] = NORMALIZATIONS,
    deadline: Deadline | None = None,
) -> Membership:
    """Whether the plan ``plan_choice`` selects in ``plan`` (imported from ``plan_imported``) is one of
    the plans of ``g`` (imported from ``imported``, then saturated), up to the differences of form
    named in ``normalize`` (``NORMALIZATIONS``). At ``deadline`` the bottom-up walk stops with no
    answer (``Membership.undecided``)."""
    if unknown := normalize - NORMALIZATIONS:
        raise ValueError(f"unknown normalizations {sorted(unknown)}; known: {sorted(NORMALIZATIONS)}")
    return _Matcher(g, imported, plan, plan_choice, plan_imported, normalize).run(deadline)


def choice_membership(g: EGraphData, choice: Mapping[str, str], imported: ImportedProgram) -> Membership:
    """``plan_membership`` of a plan chosen from ``g`` itself (the modelled baseline): in by
    construction, so only legality is asked about, without looking the plan up: ``refused`` is the
    first chosen node, from the root down, that legality subsumed."""
    chosen: dict[str, str] = {}
    refused: str | None = None
    todo = [g.root]
    while todo:
        c = todo.pop()
        if c in chosen:
            continue
        chosen[c] = choice[c]
        node = g.nodes[choice[c]]
        if node.subsumed and refused is None:
            refused = _described(g, choice, _Identities(imported, NORMALIZATIONS), c, lambda n: n.children)
        todo.extend(k for k in reversed(node.children) if g.is_term_class(k))
    return Membership(True, None, refused, chosen)


class _Identities:
    """Canonical identities of one import's leaves (module docstring)."""

    def __init__(self, imported: ImportedProgram, normalize: frozenset[str]):
        self.imported, self.normalize = imported, normalize
        self.printer = Printer(use_aliases=False)
        self.memo: dict[str, object] = {}

    def op(self, op: Operation) -> tuple[object, ...]:
        if op.name in RESHAPE_OPS and "reshapes-alike" in self.normalize:
            return ("reshape", tuple(self.printer.type(_plain(r.type)) for r in op.results))
        attrs = sorted((k, repr(v) if not isinstance(v, DenseAttr) else v.digest()) for k, v in op.attributes.items())
        body = self.body(op) if "structured-bodies" in self.normalize else self.text(op)
        types = [self.printer.type(_plain(r.type)) for r in op.results]
        opaque = _renamed(op.opaque_text) if op.opaque_text is not None else None
        return ("op", op.name, tuple(attrs), body, tuple(types), opaque)

    def text(self, op: Operation) -> str:
        """``op``'s regions as printed."""
        return "\n".join(self.printer.region(r, "") for r in op.regions)

    def body(self, op: Operation) -> tuple[object, ...]:
        """``op``'s regions as nested tuples (class docstring): every op but scalar constants, with its
        attributes, operands as tokens, result types and regions."""
        tokens: dict[Value, object] = {}
        captured: dict[Value, object] = {}

        def token(v: Value) -> object:
            if v in tokens:
                return tokens[v]
            owner = v.owner
            if isinstance(owner, Operation) and (c := _scalar_constant(owner)) is not None:
                return c
            return captured.setdefault(v, ("captured", len(captured), self.printer.type(v.type)))

        def region(r: Region, depth: int) -> tuple[object, ...]:
            blocks = []
            for b in r.blocks:
                for i, a in enumerate(b.args):
                    tokens[a] = ("arg", depth, i, self.printer.type(a.type))
                ops: list[object] = []
                for o in b.ops:
                    if (c := _scalar_constant(o)) is not None:
                        tokens[o.results[0]] = c
                        continue
                    attrs = tuple(sorted((k, _attr_identity(v)) for k, v in o.attributes.items()))
                    args = tuple(token(v) for v in o.operands)
                    for j, res in enumerate(o.results):
                        tokens[res] = ("result", depth, len(ops), j)
                    types = tuple(self.printer.type(res.type) for res in o.results)
                    ops.append((o.name, attrs, args, types, tuple(region(rr, depth + 1) for rr in o.regions)))
                blocks.append(tuple(ops))
            return tuple(blocks)

        return tuple(region(r, 0) for r in op.regions)

    def string(self, s: str) -> object:
        if s in self.memo:
            return self.memo[s]
        out: object = s
        if f"contract:{s}" in self.imported.ops:
            name, _, maps = s.partition(":")
            out = ("contraction", name, maps or _maps_text(DEFAULT_MAPS.get(name, ())))
        elif s in self.imported.ops:
            out = self.op(self.imported.ops[s])
        elif s in self.imported.constants:
            value = self.imported.constants[s]
            if isinstance(value, DenseAttr):
                out = ("dense", self.printer.type(dataclasses.replace(value.type, encoding=None)), value.digest())
            elif isinstance(value, Parameter):
                out = ("parameter", repr(value.attr), self.printer.type(value.type))
        self.memo[s] = out
        return out

    def leaf(self, value: object) -> object:
        if isinstance(value, str):
            return self.string(value)
        if isinstance(value, Term):
            return (value.op, tuple(self.leaf(a) for a in value.args))
        if isinstance(value, tuple | list):
            return tuple(self.leaf(a) for a in value)
        if isinstance(value, int) and value in self.imported.dims:  # a size code: the size it names
            return ("size", self.imported.dims[value])
        return value


class _Matcher:
    def __init__(
        self,
        g: EGraphData,
        imported: ImportedProgram,
        plan: EGraphData,
        plan_choice: dict[str, str],
        plan_imported: ImportedProgram,
        normalize: frozenset[str],
    ):
        self.g, self.plan, self.plan_choice, self.normalize = g, plan, plan_choice, normalize
        self.ours, self.theirs = _Identities(imported, normalize), _Identities(plan_imported, normalize)
        # (constructor, children) -> the e-nodes with them, each with the nodes below it its key looks
        # through (the Dispatch under a ConstEval)
        self.index: dict[_Key, list[_Entry]] = {}
        for c, nids in g.classes.items():
            if not g.is_term_class(c):
                continue
            for nid in nids:
                node = g.nodes[nid]
                self.index.setdefault(self._key(node.op, node.children), []).append((node, ()))
                for i, k in enumerate(node.children):  # a child that is a Dispatch of a reshape
                    for d in self._views(k) if "reshape-views" in normalize else ():
                        kids = (*node.children[:i], d.children[0], *node.children[i + 1 :])
                        self.index.setdefault(self._key(node.op, kids), []).append((node, (d,)))
                if "reshape-sizes" in normalize and _is_reshape(g, node, imported):
                    for source, below in self._sized_sources(node):
                        kids = (node.children[0], source, node.children[2])
                        self.index.setdefault(self._key(node.op, kids), []).append((node, below))
                if node.op == "Const" and "load-time-noops" in normalize:  # a global of what c holds: c
                    self.index.setdefault(self._key("ConstEval", (c,)), []).append((node, ()))
                if node.op in ("Arg", "Const") and "load-time-noops" in normalize:  # an encode dispatch of it
                    self.index.setdefault(self._key("Dispatch", (c,)), []).append((node, ()))
                if node.op == "ConstEval" and "initializer-encodes" in normalize:
                    for d in (g.nodes[m] for m in g.classes[node.children[0]]):
                        if d.op == "Dispatch":
                            self.index.setdefault(self._key(node.op, d.children), []).append((node, (d,)))
        self.layouts: dict[object, str] | None = None
        self.parents: dict[str, str] = {}
        self.found: dict[str, dict[str, tuple[_Entry, tuple[object, ...]]]] = {}  # plan class -> its classes in g
        self.choice: dict[str, str] = {}  # class of g -> the node the plan chose there

    def _sized_sources(self, node: Node) -> list[tuple[str, tuple[Node, ...]]]:
        """A reshape ``node`` of the e-graph keyed by what it reshapes (``reshape-sizes``): each class
        its operand list can start with, and the list's nodes (its dynamic sizes included), looked
        through. A reshape's result is its type (``reshapes-alike``), so only its source says which."""
        out: list[tuple[str, tuple[Node, ...]]] = []
        for cons in (self.g.nodes[n] for n in self.g.classes.get(node.children[1], ())):
            if cons.op == "TCons":
                below = self._list_nodes(cons.children[1])
                if below is not None:
                    out.append((cons.children[0], (cons, *below)))
        return out

    def _list_nodes(self, c: str) -> tuple[Node, ...] | None:
        """One node per class of the operand list ``c`` of the e-graph past its head: its ``TCons``
        cells, their ``Size`` elements and the ``TNil`` (None when an element is not a size)."""
        out: list[Node] = []
        while True:
            cells = [self.g.nodes[n] for n in self.g.classes.get(c, ())]
            nil = next((n for n in cells if n.op == "TNil"), None)
            if nil is not None:
                return (*out, nil)
            cons = next((n for n in cells if n.op == "TCons"), None)
            size = cons and next(
                (self.g.nodes[n] for n in self.g.classes[cons.children[0]] if self.g.nodes[n].op == "Size"), None
            )
            if cons is None or size is None:
                return None
            out += [cons, size]
            c = cons.children[1]

    def _views(self, c: str) -> list[Node]:
        """The ``Dispatch(reshape)`` nodes of class ``c`` of the e-graph."""
        if not self.g.is_term_class(c):
            return []
        out = []
        for nid in self.g.classes[c]:
            d = self.g.nodes[nid]
            if d.op == "Dispatch" and any(
                _is_reshape(self.g, self.g.nodes[m], self.ours.imported) for m in self.g.classes[d.children[0]]
            ):
                out.append(d)
        return out

    def _key(self, op: str, children: tuple[str, ...]) -> _Key:
        return (
            op,
            tuple(c if self.g.is_term_class(c) else ("leaf", self.ours.leaf(self.g.leaf_value(c))) for c in children),
        )

    def run(self, deadline: Deadline | None = None) -> Membership:
        """Bottom-up, every e-class each plan class can be (two leaves that look alike, e.g. equal
        constants, leave more than one), then top-down from the root one node per class."""
        missing: list[str] = []
        lost: set[str] = set()  # plan classes not found, or above one that was not
        for c in self._post_order():
            if deadline is not None and deadline.expired():
                why = f"not decided: the membership test reached its budget ({deadline.seconds:g} s)"
                return Membership(False, why, undecided=why)
            node = self.plan.nodes[self.plan_choice[c]]
            children = self._children(node)
            if any(k in lost for k in children):
                lost.add(c)  # a consequence of a miss below, not a decision of its own
                continue
            slots: list[list[object]] = []
            for k in children:
                if self.plan.is_term_class(k):
                    slots.append(list(self.found[k]))
                else:
                    slots.append([("leaf", self.theirs.leaf(self.plan.leaf_value(k)))])
            found: dict[str, tuple[_Entry, tuple[object, ...]]] = {}
            for kids in itertools.islice(itertools.product(*slots), _MAX_COMBINATIONS):
                candidates = self.index.get((node.op, kids), [])
                usable = [e for e in candidates if not any(n.subsumed for n in (e[0], *e[1]))]
                for entry in usable or candidates:
                    found.setdefault(entry[0].eclass, (entry, kids))
            if not found and node.op in _ENCODING_OPS and "identity-encodings" in self.normalize:
                found = self._identity_encoding(node)
            if not found and node.op == "Dispatch" and "load-time-noops" in self.normalize:
                found = self._identity_encode_dispatch(node)
            if not found:
                missing.append(f"no e-node {self._describe(c)}{self._context(c)}")
                lost.add(c)
                continue
            self.found[c] = found
        if missing:
            return Membership(False, missing[0], all_missing=tuple(missing))
        if self.g.root not in self.found.get(self.plan.root, {}):
            why = "the plan's results are not the e-graph's root"
            return Membership(False, why, all_missing=(why,))
        return self._chosen()

    def _chosen(self) -> Membership:
        """The plan as a choice of the e-graph, from the root down (``run`` found every class); an
        e-class the plan computes a second way is redundant work, kept as its first choice."""
        refused: str | None = None
        redundant: list[str] = []
        todo = [(self.plan.root, self.g.root)]
        seen: set[tuple[str, str]] = set()
        while todo:
            c, ours = todo.pop()
            if (c, ours) in seen:
                continue
            seen.add((c, ours))
            (node, below), kids = self.found[c][ours]
            for n in (node, *below):
                if self.choice.setdefault(n.eclass, n.id) != n.id:
                    redundant.append(f"{self._describe(c)}{self._context(c)}")
                if n.subsumed and refused is None:
                    refused = self._describe(c)
            plan_kids = [k for k in self._children(self.plan.nodes[self.plan_choice[c]]) if self.plan.is_term_class(k)]
            term_kids = [k for k in kids if isinstance(k, str)]
            todo.extend(zip(plan_kids, term_kids, strict=True))
        return Membership(True, None, refused, dict(self.choice), redundant=tuple(redundant))

    def _identity_encoding(self, node: Node) -> dict[str, tuple[_Entry, tuple[object, ...]]]:
        """A set/unset_encoding of the plan to an encoding the e-graph resolves to the identity layout,
        found where its operand was: ``noop`` folds such an encode into its operand, and an unset of a
        value computed on identity-encoded operands (a consumer IREE sinks for any layout) is the plain
        value the e-graph computes (redundant work, no decision)."""
        operand = node.children[0]
        if operand not in self.found:
            return {}
        if node.op == "SetEncoding":
            enc = self.plan.leaf_value(node.children[1])
        else:
            enc = self._plan_encoding(operand)
        if enc is None or self._layouts().get(self.theirs.leaf(enc)) != "IdentityLayout":
            return {}
        rest = tuple(("leaf", self.theirs.leaf(self.plan.leaf_value(k))) for k in node.children[1:])
        return {k: (entry, (k, *rest)) for k, (entry, _) in self.found[operand].items()}

    def _identity_encode_dispatch(self, node: Node) -> dict[str, tuple[_Entry, tuple[object, ...]]]:
        """An encode dispatch of the plan (``flow.tensor.encode``, read as ``Dispatch(SetEncoding(v, e))``)
        to an encoding the e-graph resolves to the identity layout, found where ``v`` was: ``noop`` folds
        the set_encoding into ``v``, so the e-graph has no encode to put in a dispatch of its own (a
        Dispatch in ``v``'s own class would nest without end); IREE still copies ``v`` once (redundant
        work, no decision): ``load-time-noops``, as for an argument or a constant, here for a value a
        dispatch computes (a residual encoded as an f32 x f16 matmul's accumulator, which AVX2 lays out
        as the identity)."""
        inner = node.children[0]
        encode = self.plan.nodes[self.plan_choice[inner]] if inner in self.plan_choice else None
        if encode is None or encode.op != "SetEncoding" or encode.children[0] not in self.found:
            return {}
        enc = self.plan.leaf_value(encode.children[1])
        if enc is None or self._layouts().get(self.theirs.leaf(enc)) != "IdentityLayout":
            return {}
        return {k: (entry, (k,)) for k, (entry, _) in self.found[encode.children[0]].items()}

    def _plan_encoding(self, c: str) -> object:
        """The encoding the plan's class ``c`` is in: its ``encoding-of`` fact, or a generic's by its init
        (the plan is imported with no rule run, so no fact is derived for a generic)."""
        enc = self.plan.facts.get(c, {}).get("encoding-of")
        node = self.plan.nodes[self.plan_choice[c]]
        if enc is None and node.op == "Generic":
            outs = self.plan.nodes[self.plan_choice[node.children[2]]]
            if outs.op == "TCons":
                enc = self._plan_encoding(outs.children[0])
        if enc is None and node.op == "Fill":
            enc = self._plan_encoding(node.children[1])
        return enc

    def _layouts(self) -> dict[object, str]:
        """Encoding (as ``_Identities.leaf`` compares it) -> the head of the layout the e-graph resolves
        it to (``Tiled`` / ``IdentityLayout``), from the e-graph's ``layout-of`` facts."""
        if self.layouts is None:
            self.layouts = {}
            for c, facts in self.g.facts.items():
                layout = facts.get("layout-of")
                if isinstance(layout, Term) and self.g.classes.get(c):
                    enc = self.g.leaf_value(c)
                    self.layouts[self.ours.leaf(enc)] = layout.op
        return self.layouts

    def _children(self, node: Node) -> tuple[str, ...]:
        """``node``'s children, with a ``Dispatch`` under a ``ConstEval`` and a ``Dispatch`` of a
        reshape looked through (module docstring)."""
        if node.op == "ConstEval" and "initializer-encodes" in self.normalize:
            inner = self.plan.nodes[self.plan_choice[node.children[0]]]
            if inner.op == "Dispatch":
                return inner.children
        kids = node.children
        if "reshape-sizes" in self.normalize and _is_reshape(self.plan, node, self.theirs.imported):
            head = self.plan.nodes[self.plan_choice[kids[1]]]
            if head.op == "TCons" and self.plan.nodes[self.plan_choice[head.children[1]]].op == "TCons":
                kids = (kids[0], head.children[0], kids[2])  # dynamic sizes: what it reshapes says it all
        if "reshape-views" not in self.normalize:
            return kids
        return tuple(self._through_view(k) for k in kids)

    def _through_view(self, c: str) -> str:
        """``c``, or the reshape it holds when the plan chose ``Dispatch(reshape)`` there."""
        if not self.plan.is_term_class(c):
            return c
        node = self.plan.nodes[self.plan_choice[c]]
        if node.op != "Dispatch":
            return c
        inner = self.plan.nodes[self.plan_choice[node.children[0]]]
        return node.children[0] if _is_reshape(self.plan, inner, self.theirs.imported) else c

    def _context(self, c: str) -> str:
        """`` in OP(…)``: the first ancestor of ``c`` that is an op, not list plumbing (TCons, Results)."""
        parent = self.parents.get(c)
        while parent is not None and self.plan.nodes[self.plan_choice[parent]].op in _PLUMBING:
            parent = self.parents.get(parent)
        if parent is None or self.plan.nodes[self.plan_choice[c]].op not in _PLUMBING:
            return ""
        return f", the operands of {self._describe(parent, 1)}"

    def _post_order(self) -> list[str]:
        """The plan's term classes, children first, each once (iterative: plans are deep); fills
        ``parents`` (a class -> the first class found using it)."""
        out: list[str] = []
        seen: set[str] = set()
        stack: list[tuple[str, bool]] = [(self.plan.root, False)]
        while stack:
            c, expanded = stack.pop()
            if expanded:
                out.append(c)
                continue
            if c in seen:
                continue
            seen.add(c)
            stack.append((c, True))
            node = self.plan.nodes[self.plan_choice[c]]
            for k in reversed(self._children(node)):
                if self.plan.is_term_class(k):
                    self.parents.setdefault(k, c)
                    stack.append((k, False))
        return out

    def _describe(self, c: str, depth: int = 2) -> str:
        return _described(self.plan, self.plan_choice, self.theirs, c, self._children, depth)


def _is_reshape(g: EGraphData, node: Node, imported: ImportedProgram) -> bool:
    """Whether ``node`` is an ``Op`` of a reshape (``mlir.ops.RESHAPE_OPS``)."""
    if node.op != "Op":
        return False
    op = imported.ops.get(str(g.leaf_value(node.children[0])))
    return op is not None and op.name in RESHAPE_OPS


def _maps_text(maps: tuple[tuple[int, ...], ...]) -> str:
    """Loop dims per operand in the importer's spelling of a contraction's maps: ``(d0,d2);(d2,d1)``."""
    return ";".join("(" + ",".join(f"d{d}" for d in dims) + ")" for dims in maps)


def _plain(t: Type) -> Type:
    """``t`` without its encoding."""
    return dataclasses.replace(t, encoding=None) if isinstance(t, TensorType) else t


def _attr_identity(a: object) -> object:
    """An attribute by value: a float by its value and type, not by how it was spelled (IREE prints
    ``0.5`` as ``5.000000e-01``), a dense one by its elements' digest."""
    if isinstance(a, FloatAttr):
        return ("float", a.value, repr(a.type))
    if isinstance(a, DenseAttr):
        return ("dense", repr(a.type), a.digest())
    if isinstance(a, ArrayAttr):
        return ("array", tuple(_attr_identity(x) for x in a.items))
    return repr(a)


def _renamed(text: str) -> str:
    """``text`` with its SSA values (``%name``) renamed ``%0``, ``%1``, ... in order of appearance: an
    opaque op's text names its operands, which the term's children already give."""
    names: dict[str, str] = {}
    return re.sub(r"%[\w$.#-]+", lambda m: names.setdefault(m.group(0), f"%{len(names)}"), text)


def _scalar_constant(op: Operation) -> tuple[str, object] | None:
    """``("constant", value)`` of a scalar ``arith.constant``, else None."""
    if op.name != "arith.constant" or len(op.results) != 1 or isinstance(op.results[0].type, TensorType):
        return None
    return ("constant", _attr_identity(op.attributes.get("value")))


def _described(
    g: EGraphData,
    choice: Mapping[str, str],
    ids: _Identities,
    c: str,
    children: Callable[[Node], tuple[str, ...]],
    depth: int = 2,
) -> str:
    """Class ``c`` of a plan as a short term: ops by name, constants by type, at most ``depth`` deep."""
    node = g.nodes[choice[c]]
    if depth == 0:
        return node.op
    args = []
    for k in children(node):
        if g.is_term_class(k):
            args.append(_described(g, choice, ids, k, children, depth - 1))
        else:
            args.append(_short(g.leaf_value(k), ids))
    return f"{node.op}({', '.join(args)})" if args else node.op


def _short(value: object, ids: _Identities) -> str:
    if isinstance(value, str):
        if value in ids.imported.ops:
            return ids.imported.ops[value].name
        if value in ids.imported.constants:
            c = ids.imported.constants[value]
            return f"constant {ids.printer.type(c.type)}"
        return repr(value)
    if isinstance(value, Term):
        if value.op == "Enc":  # operand -1: an encoding kept as written, named by its attribute
            return f"encoding({value.args[2]})" if value.args[0] == -1 else f"encoding(operand {value.args[0]})"
        return value.op
    if isinstance(value, tuple | list):
        return "x".join(map(str, value)) if all(isinstance(v, int) for v in value) else "(…)"
    return str(value)
