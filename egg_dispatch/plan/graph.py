"""A chosen plan as a networkx graph of dispatches, globals, arguments, constants and results.

The plan-level evaluator recomputes every metric from this graph, by its own traversal (not the
extractor's): which computations run in which dispatch, what each initializer computes at load,
which buffers live between dispatches. The test suite checks that its objective equals the exact
extractor's for the chosen plan.

Counting follows the extractor's DAG semantics: a computation shared by two consumers is counted
once (the first dispatch, in program order, that needs it owns it); the emitted MLIR clones such
fused producers into each consumer dispatch, as IREE does, so the report's dispatch count comes
from the graph, not from the clones.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import networkx as nx

from egg_dispatch.cost import (
    Facts,
    MeasuredTimes,
    call_overhead_seconds,
    consumer_pairs,
    contraction_tiled,
    copied_slice,
    dispatch_overhead_seconds,
    exclusive_nodes,
    is_view_dispatch,
    node_seconds,
    node_signature,
    output_classes,
    slice_copy_seconds,
    throttles,
    transient_seconds,
)
from egg_dispatch.egraph.data import EGraphData
from egg_dispatch.egraph.imported import ImportedProgram
from egg_dispatch.egraph.terms import STORED
from egg_dispatch.extract.common import plan_contexts
from egg_dispatch.target.profile import Target
from egg_dispatch.util.deep import allow_deep_recursion

__all__ = ["DispatchInfo", "Plan", "PlanMetrics", "build_plan"]

_VIEWS = {"Slice", "EncodedSlice", "Empty", "Scalar", "Size", "Results", "TCons", "TNil"}


@dataclass
class DispatchInfo:
    name: str
    ops: list[str] = field(default_factory=list)
    bytes_in: int = 0
    bytes_out: int = 0
    flops_seconds: float = 0.0
    """Σ of its ops' times (compute plus traffic): the additive roofline the objective uses."""
    launch_seconds: float = 0.0
    bytes_seconds: float = 0.0
    nodes: list[tuple[str | None, float]] = field(default_factory=list)
    """(node signature, seconds it is priced at) of every computation it runs: how a measured time of
    the whole dispatch is shared out among them (``measure.tune``)."""

    @property
    def seconds(self) -> float:
        return self.launch_seconds + self.flops_seconds

    @property
    def seconds_max_form(self) -> float:
        """launch + max(compute-and-traffic of its ops, its own in/out traffic): the form of docs/design.md §2.4."""
        return self.launch_seconds + max(self.flops_seconds, self.bytes_seconds)


@dataclass
class PlanMetrics:
    run_seconds: float
    load_seconds: float
    persistent_bytes: int
    transient_bytes: int
    peak_live_bytes: int
    dispatches: int
    encode_dispatches: int
    globals: int
    lam: float

    @property
    def memory_bytes(self) -> int:
        return self.persistent_bytes + self.transient_bytes

    @property
    def objective(self) -> float:
        return self.run_seconds + self.lam * self.memory_bytes


@dataclass
class Plan:
    graph: nx.DiGraph
    dispatches: list[DispatchInfo]
    globals: list[tuple[str, int, list[str]]]
    """(name, stored bytes, ops its initializer runs)."""
    metrics: PlanMetrics
    choice: dict[str, str]
    at_sizes: list[tuple[dict[str, int], float, PlanMetrics]] = field(default_factory=list, compare=False, repr=False)
    """A dynamic program's metrics per size configuration (``plan.sized.plan_at_sizes``); empty if static."""


def _throttle(
    g: EGraphData,
    choice: dict[str, str],
    imported: ImportedProgram,
    target: Target,
    facts: Facts,
    measured: MeasuredTimes | None,
) -> float:
    """``KernelCosts.throttle`` when the plan runs a data-tiled contraction of ``throttle_us`` or more
    at run time (its plain contractions pay it: ``cost.charges.throttle_charges``), else 0."""
    k = target.kernels
    if k is None or k.throttle <= 0:
        return 0.0
    run, _ = plan_contexts(g, choice)
    for nid in sorted(run):
        node = g.nodes[nid]
        if (tiled := contraction_tiled(g, node, facts, imported)) and throttles(
            k, tiled, node_seconds(g, node.eclass, node.op, node.children, facts, imported, target, measured)
        ):
            return k.throttle
    return 0.0


def build_plan(
    g: EGraphData,
    choice: dict[str, str],
    imported: ImportedProgram,
    target: Target,
    lam: float,
    measured: MeasuredTimes | None = None,
) -> Plan:
    """The plan graph of ``choice``, priced as the cost table prices it (with the same ``measured``)."""
    allow_deep_recursion()
    walk = _PlanWalk(g, choice, imported, target, measured)
    root = g.nodes[choice[g.root]]
    results = _list_classes_chosen(g, choice, root.children[0])
    for i, (c, cons) in enumerate(results):
        walk.result(i, c, cons)
    return walk.plan(len(results), lam)


class _PlanWalk:
    """The walk ``build_plan`` makes from a plan's results down its chosen nodes: the graph it builds
    and what it has counted so far."""

    def __init__(
        self,
        g: EGraphData,
        choice: dict[str, str],
        imported: ImportedProgram,
        target: Target,
        measured: MeasuredTimes | None,
    ):
        self.g, self.choice, self.imported, self.target, self.measured = g, choice, imported, target, measured
        self.facts = Facts(g)
        self.exclusive = exclusive_nodes(g)  # same set as the cost table's: charged per use
        self.graph: nx.DiGraph[str] = nx.DiGraph()
        # Already counted: (class, at_load, owning user@dispatch) when fused, (class, at_load) as a producer
        self.owned: set[tuple[str, bool, str] | tuple[str, bool]] = set()
        self.dispatches: list[DispatchInfo] = []
        self.globals: list[tuple[str, int, list[str]]] = []
        self.persistent = 0
        self.load_temporaries = 0
        self.load_seconds = 0.0
        self.top_seconds = 0.0
        self.outputs = output_classes(g, imported)
        self.transients = 0  # run-time dispatch results no function result is: the call pays the step once
        self.pairs = {(gen, unset): sec for sec, gen, unset in consumer_pairs(g, imported, target, self.facts)}
        self.throttle = _throttle(g, choice, imported, target, self.facts, measured)

    def producer(self, c: str) -> str:
        node = self.g.nodes[self.choice[c]]
        if node.op in ("Arg", "Const"):
            return f"{node.op.lower()}{'' if node.op == 'Arg' else ':'}{self.g.leaf_value(node.children[0])}"
        return {"Dispatch": f"dispatch:{c}", "ConstEval": f"global:{c}"}.get(node.op, "")

    def op_time(self, c: str, at_load: bool) -> float:
        g, choice, facts, imported = self.g, self.choice, self.facts, self.imported
        node = g.nodes[choice[c]]
        seconds = node_seconds(g, c, node.op, node.children, facts, imported, self.target, self.measured)
        if self.pairs and node.op == "Generic":  # reading an unset in its dispatch (cost.charges.consumer_pairs)
            ins = dict.fromkeys(k for k, _ in _list_classes_chosen(g, choice, node.children[1]))
            seconds += sum(self.pairs.get((node.id, choice[k]), 0.0) for k in ins)
        if self.throttle and not at_load and contraction_tiled(g, node, facts, imported) is False:
            seconds *= 1.0 + self.throttle  # next to a long mmt4d (cost.charges.throttle_charges)
        return seconds

    def fuse(
        self, c: str, at_load: bool, into: DispatchInfo | None, boundary_reads: list[tuple[str, int]], user: str
    ) -> None:
        """Walk the computation fused at c (down to boundaries), charging each class once."""
        g, choice, facts = self.g, self.choice, self.facts
        node = g.nodes[choice[c]]
        if node.op in STORED:
            self.visit(c, at_load)
            boundary_reads.append((self.producer(c), facts.info(c).stored_bytes))
            return
        if (
            into is None
            and not at_load
            and node.op in ("Slice", "EncodedSlice")
            and copied_slice(g, self.imported, c) == c
        ):
            self.copy_dispatch(c)  # a slice between dispatches runs as a copy dispatch of its own
            boundary_reads.append((f"dispatch:{c}", facts.info(c).stored_bytes))
            return
        for k in node.children:
            if g.is_term_class(k):
                self.fuse(k, at_load, into, boundary_reads, choice[c])
        view = node.op in _VIEWS or (
            node.op in ("SetEncoding", "Pack") and any(n.op == "Empty" for n in g.choices(node.children[0]))
        )
        # A computation fused into several consumers runs for each of them (IREE clones it into each
        # dispatch): exclusive computations are owned per user and per dispatch (a contraction under a
        # generic cloned into two dispatches has one user, the generic's operand list, and runs twice:
        # the extractor's per-user charge misses that, the plan's price does not); everything else once.
        key = (c, at_load, f"{user}@{into.name if into is not None else ''}" if choice[c] in self.exclusive else "")
        if key in self.owned or view:
            if into is not None and not view:
                into.ops.append(node.op)
            return
        self.owned.add(key)
        self.charge(c, node.op, node.children, at_load, into)

    def charge(self, c: str, op: str, kids: tuple[str, ...], at_load: bool, into: DispatchInfo | None) -> None:
        """Count the time of class c's chosen node (``op`` of ``kids``) where it runs."""
        seconds = self.op_time(c, at_load)
        if at_load:
            self.load_seconds += seconds
        elif into is not None:
            into.flops_seconds += seconds
            into.nodes.append((node_signature(self.g, c, op, kids, self.facts, self.imported), seconds))
        else:
            self.top_seconds += seconds
        if into is not None:
            into.ops.append(op)

    def copy_dispatch(self, c: str) -> None:
        """The dispatch ``emit.iree`` gives a slice between dispatches (``cost.classes.copied_slice``)."""
        name = f"dispatch:{c}"
        if (c, False) in self.owned and name in self.graph:
            return
        self.owned.add((c, False))
        self.transients += c not in self.outputs
        self.run_dispatch(name, c, c)  # with the launch: copy_dispatch_seconds

    def run_dispatch(self, name: str, c: str, body: str) -> None:
        """The run-time dispatch ``name`` that computes class ``c`` by fusing ``body`` into it: its launch,
        result allocation, the slice copy ``body`` may start with, its ops and the graph's edges."""
        facts, target = self.facts, self.target
        d = DispatchInfo(name, launch_seconds=dispatch_overhead_seconds(target, facts.info(c).stored_bytes))
        d.flops_seconds = slice_copy_seconds(self.g, body, facts, target)
        d.bytes_out = facts.info(c).stored_bytes
        reads: list[tuple[str, int]] = []
        self.fuse(body, False, d, reads, self.choice[c])
        d.bytes_in = sum(b for _, b in reads)
        d.bytes_seconds = (d.bytes_in + d.bytes_out) / (target.memory_bandwidth_gbps * 1e9)
        self.dispatches.append(d)
        self.graph.add_node(name, kind="dispatch", info=d, bytes=d.bytes_out)
        for src, b in reads:
            self.graph.add_edge(src, name, bytes=b)

    def visit(self, c: str, at_load: bool) -> None:
        """Count the stored value class c is (an argument, a constant, a global or a dispatch's result)."""
        node = self.g.nodes[self.choice[c]]
        name = self.producer(c)
        if (c, at_load) in self.owned and name in self.graph:
            return
        self.owned.add((c, at_load))
        if node.op == "Arg":
            self.graph.add_node(name, kind="argument", bytes=self.facts.info(c).stored_bytes)
        elif node.op == "Const":
            if name not in self.graph:
                self.persistent += self.facts.info(c).logical_bytes
            self.graph.add_node(name, kind="constant", bytes=self.facts.info(c).logical_bytes)
        elif node.op == "ConstEval":
            self.global_(name, c, node.children[0])
        elif node.op == "Dispatch":
            self.dispatch(name, c, node.children[0], at_load)

    def global_(self, name: str, c: str, body: str) -> None:
        """The global ``name`` holding class c, whose initializer computes ``body`` at load."""
        stored = self.facts.info(c).stored_bytes
        reads: list[tuple[str, int]] = []
        before = self.load_seconds
        inner = DispatchInfo(name)
        self.fuse(body, True, inner, reads, self.choice[c])
        if name not in self.graph:
            self.persistent += stored
            self.globals.append((name, stored, inner.ops))
        self.graph.add_node(name, kind="global", bytes=stored, load_seconds=self.load_seconds - before)
        for src, b in reads:
            self.graph.add_edge(src, name, bytes=b)

    def dispatch(self, name: str, c: str, body: str, at_load: bool) -> None:
        """The ``Dispatch`` node of class c over ``body``: a view when it is a reshape, else a dispatch."""
        if is_view_dispatch(self.g, self.imported, body):
            reads: list[tuple[str, int]] = []
            self.fuse(body, at_load, None, reads, self.choice[c])
            self.graph.add_node(name, kind="view", bytes=0)
            for src, b in reads:
                self.graph.add_edge(src, name, bytes=b)
        elif at_load:  # placement inside an initializer: computed in place at load, into a temporary
            self.load_temporaries += self.facts.info(c).stored_bytes
            self.fuse(body, True, None, [], self.choice[c])
        else:
            self.transients += c not in self.outputs
            self.run_dispatch(name, c, body)

    def result(self, i: int, c: str, cons: str) -> None:
        """The plan's ``i``-th function result, class c (read through the list node ``cons``)."""
        reads: list[tuple[str, int]] = []
        self.fuse(c, False, None, reads, cons)
        self.graph.add_node(f"result{i}", kind="result")
        for src, b in reads:
            self.graph.add_edge(src, f"result{i}", bytes=b)

    def plan(self, results: int, lam: float) -> Plan:
        """The plan walked so far, with ``results`` function results, priced with ``lam``."""
        target, dispatches = self.target, self.dispatches
        transient = sum(d.bytes_out for d in dispatches) + self.load_temporaries
        per_call = call_overhead_seconds(target, results)
        per_call += transient_seconds(target) if self.transients else 0.0
        run_seconds = sum(d.seconds for d in dispatches) + self.top_seconds + per_call
        encodes = sum(1 for d in dispatches if d.ops == ["SetEncoding"] or d.ops == ["Pack"])
        metrics = PlanMetrics(
            run_seconds,
            self.load_seconds,
            self.persistent,
            transient,
            _peak_live(self.graph, self.persistent),
            len(dispatches),
            encodes,
            len(self.globals),
            lam,
        )
        return Plan(self.graph, dispatches, self.globals, metrics, self.choice)


def _list_classes_chosen(g: EGraphData, choice: dict[str, str], c: str) -> list[tuple[str, str]]:
    """(element class, the TCons node that uses it) of a chosen operand list."""
    out = []
    while g.nodes[choice[c]].op == "TCons":
        node = g.nodes[choice[c]]
        out.append((node.children[0], choice[c]))
        c = node.children[1]
    return out


def _peak_live(graph: nx.DiGraph, persistent: int) -> int:
    """Peak bytes alive while dispatches run in topological order: persistent data plus every
    dispatch result from its producer until its last consumer has run."""
    order = [n for n in nx.lexicographical_topological_sort(graph) if graph.nodes[n].get("kind") == "dispatch"]
    end = len(order)  # a result read by no later dispatch (a function result) stays alive to the end
    position = {n: i for i, n in enumerate(order)}
    # The i-th result is alive from step i through its last consumer's step: one sweep over the steps,
    # adding each result where it starts and dropping it after its last step (linear, not quadratic).
    change = [0] * (end + 1)
    for i, n in enumerate(order):
        last = max((position.get(s, end) for s in graph.successors(n)), default=end)
        if last >= i:
            change[i] += graph.nodes[n]["bytes"]
            change[min(last, end - 1) + 1] -= graph.nodes[n]["bytes"]
    peak = live = 0
    for step in change[:end]:
        live += step
        peak = max(peak, live)
    return persistent + peak
