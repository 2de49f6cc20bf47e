"""Exact extraction as a MILP on HiGHS (``highspy``): prune, order only inside SCCs, warm-start, keep the best.

Model (docs/egglog.md §7, extended with the run/load contexts of ``cost/table.py``), over the
*pruned* e-graph:

* binaries x_n per node; a_c = Σ_{n∈c} x_n ≤ 1 per class (continuous: integral through the x's);
  x_n ≤ a_d for every child class d of n; a_c = 1 for the root and every class all plans need.
* run context r_c ∈ [0, 1], r_root = 1, r_d ≥ r_c + x_n − 1 for each edge n→d where n is not a
  ``ConstEval``; node n is charged run_seconds through y_n ≥ x_n + r_c − 1 and λ·memory_bytes on
  x_n. Minimization pushes r and y down to exactly the plan's contexts (costs are ≥ 0). Classes
  no ``ConstEval`` reaches, and classes every plan needs at run time, are always at run time:
  they get no r, and their nodes pay run time on x. (An assignment form, Σ_n z_n = r_c with
  z_n ≤ x_n, has a tighter LP but solved the 5k benchmark more slowly.)
* a ``once`` charge (``cost/table.py``) is a column z ∈ [0, 1] carrying its seconds, with
  z ≥ x_n (or z ≥ x_n + r_c − 1 below a ``ConstEval``) for each of its nodes n; a ``pairs`` charge
  (p, n) a column v ≥ x_p + x_n − 1 (one per user u of p's class, v ≥ x_u + x_p + x_n − 2, when p is
  exclusive); the ``gate`` a column t ∈ [0, 1] with t ≥ x_n (or x_n + r_c − 1) for each of its nodes,
  and a ``gated`` charge on n a column v ≥ x_n + t − 1 (per user, as for pairs, when n is exclusive).
* acyclicity: a level l_c ∈ [0, M−1] only for classes inside a non-trivial SCC of the class graph
  (networkx), with l_c − l_d + M·x_n ≤ M − 1 for edges inside it, M = the SCC's size. Acyclic
  graphs (every real one so far) need no ordering at all (docs/egglog.md §4.4, lesson 2).

Pruning (docs/egglog.md §4.4, lesson 1; ``prune.py``), each step exact: classes unreachable from the root;
subsumed and self-loop nodes (``EGraphData.choices``); nodes that cannot be grounded (no acyclic
derivation of some child class, so no plan uses them); dominated nodes (a sibling with no more run
time, no more memory, a subset of the child classes, and no run context where the dominated node
had load context). Fixing the classes every plan needs (``necessary_classes``) took the 5k-node benchmark
from a 45% gap after 10 s to optimal in about a second.

Why the warm start is mapped (docs/egglog.md §4.4, footnote ¹): HiGHS silently drops a start that sets a
pruned node, so greedy's dominated nodes are first replaced by their dominators (never worse).
The returned plan is the best of greedy, mapped greedy and the solver's incumbent, each priced by
``plan_objective``: a time limit can never make the answer worse than greedy (extraction-gym #12).
"""

from __future__ import annotations

import dataclasses
import math
import time
from collections.abc import Callable, Mapping, Sequence

import highspy
import networkx as nx
import numpy as np

from egg_dispatch.cost import (
    LOAD_BOUNDARY_OPS,
    CostTable,
    NodeCost,
    gated_charges,
    once_charges,
    pair_charges,
    violated,
    violated_conflicts,
)
from egg_dispatch.egraph.data import EGraphData
from egg_dispatch.extract.common import ZERO_COST, ExtractionResult, check_costs, extraction_result, plan_contexts
from egg_dispatch.extract.greedy import greedy_dag
from egg_dispatch.extract.highs import new_highs, run_interruptibly
from egg_dispatch.extract.prune import PrunedGraph, necessary_classes, prune

__all__ = ["NoMorePlans", "solve_ilp"]

_OBJECTIVE_SCALE = 1000.0
"""What the warm start's objective is scaled to inside HiGHS (see ``solve_ilp``)."""


class _Model:
    """Columns and rows of the MILP, built row-wise into plain lists (HiGHS takes them in one call):
    a row's entries are kept as given and flattened into the CSR arrays once, in ``lp``."""

    def __init__(self) -> None:
        self.cost: list[float] = []
        self.lower: list[float] = []
        self.upper: list[float] = []
        self.integer: list[bool] = []
        self.rows: list[list[tuple[int, float]]] = []
        self.row_lower: list[float] = []
        self.row_upper: list[float] = []

    def col(self, cost: float, lower: float, upper: float, integer: bool) -> int:
        self.cost.append(cost)
        self.lower.append(lower)
        self.upper.append(upper)
        self.integer.append(integer)
        return len(self.cost) - 1

    def row(self, entries: list[tuple[int, float]], lower: float, upper: float) -> None:
        self.rows.append(entries)
        self.row_lower.append(lower)
        self.row_upper.append(upper)

    def lp(self) -> highspy.HighsLp:
        lp = highspy.HighsLp()
        lp.num_col_, lp.num_row_ = len(self.cost), len(self.row_lower)
        lp.col_cost_ = np.array(self.cost)
        lp.col_lower_, lp.col_upper_ = np.array(self.lower), np.array(self.upper)
        lp.row_lower_, lp.row_upper_ = np.array(self.row_lower), np.array(self.row_upper)
        lp.a_matrix_.format_ = highspy.MatrixFormat.kRowwise
        lp.a_matrix_.num_col_, lp.a_matrix_.num_row_ = lp.num_col_, lp.num_row_
        starts = np.zeros(len(self.rows) + 1, dtype=np.int32)
        np.cumsum([len(r) for r in self.rows], out=starts[1:])
        entries = [e for r in self.rows for e in r]
        lp.a_matrix_.start_ = starts
        lp.a_matrix_.index_ = np.array([j for j, _ in entries], dtype=np.int32)
        lp.a_matrix_.value_ = np.array([v for _, v in entries], dtype=np.float64)
        kinds = (highspy.HighsVarType.kContinuous, highspy.HighsVarType.kInteger)
        lp.integrality_ = [kinds[i] for i in self.integer]
        return lp


def _warm_values(
    g: EGraphData,
    p: PrunedGraph,
    choice: Mapping[str, str],
    cols: Mapping[tuple[str, str], int],
    ncol: int,
    sccs: list[list[str]],
    once: Sequence[tuple[float, frozenset[str]]] = (),
) -> list[float]:
    """Column values of a (mapped) plan: x, a, r, y from its contexts, z from the ``once`` charges
    it pays, levels from a topological order."""
    values = [0.0] * ncol
    run, _ = plan_contexts(g, choice)
    for i, (_, nodes) in enumerate(once):
        if ("z", str(i)) in cols and not nodes.isdisjoint(run):
            values[cols[("z", str(i))]] = 1.0
    for c, nid in choice.items():
        values[cols[("x", nid)]] = values[cols[("a", c)]] = 1.0
        if ("r", c) in cols and nid in run:
            values[cols[("r", c)]] = 1.0
            if ("y", nid) in cols:
                values[cols[("y", nid)]] = 1.0
    order = {c: i for i, c in enumerate(g.classes)}
    for members in sccs:
        inside = set(members)
        sub: nx.DiGraph[str] = nx.DiGraph()
        sub.add_nodes_from(members)
        sub.add_edges_from((c, d) for c in members if c in choice for d in p.kids[choice[c]] if d in inside)
        for level, c in enumerate(nx.lexicographical_topological_sort(sub, key=order.__getitem__)):
            values[cols[("l", c)]] = float(level)
    return values


def _postorder(succ: Mapping[str, Mapping[str, None]], root: str) -> list[str]:
    """The classes ``root`` reaches, in depth-first post-order (successors in their order): the order
    ``networkx.dfs_postorder_nodes`` gives, without building a networkx graph."""
    out: list[str] = []
    seen = {root}
    stack = [(root, iter(succ[root]))]
    while stack:
        c, it = stack[-1]
        for d in it:
            if d not in seen:
                seen.add(d)
                stack.append((d, iter(succ[d])))
                break
        else:
            stack.pop()
            out.append(c)
    return out


def _cycles(succ: Mapping[str, Mapping[str, None]]) -> list[list[str]]:
    """The strongly connected components of more than one class (Tarjan's algorithm, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    on_stack: set[str] = set()
    stack: list[str] = []
    out: list[list[str]] = []
    for start in succ:
        if start in index:
            continue
        index[start] = low[start] = len(index)
        stack.append(start)
        on_stack.add(start)
        work = [(start, iter(succ[start]))]
        while work:
            v, it = work[-1]
            for w in it:
                if w not in index:
                    index[w] = low[w] = len(index)
                    stack.append(w)
                    on_stack.add(w)
                    work.append((w, iter(succ[w])))
                    break
                if w in on_stack:
                    low[v] = min(low[v], index[w])
            else:
                work.pop()
                if work:
                    u = work[-1][0]
                    low[u] = min(low[u], low[v])
                if low[v] == index[v]:
                    component = []
                    while True:
                        w = stack.pop()
                        on_stack.discard(w)
                        component.append(w)
                        if w == v:
                            break
                    if len(component) > 1:
                        out.append(component)
    return out


class NoMorePlans(ValueError):
    """Every plan the e-graph holds is excluded (k-best extraction ran out)."""


def solve_ilp(
    g: EGraphData,
    costs: Mapping[str, NodeCost],
    lam: float,
    time_limit: float = 10.0,
    warm_start: ExtractionResult | None = None,
    *,
    seed: int = 0,
    rel_gap: float = 1e-7,
    exclude: Sequence[Mapping[str, str]] = (),
    solving: Callable[[ExtractionResult], None] | None = None,
) -> ExtractionResult:
    """Exact DAG-cost extraction (module docstring); deterministic: one thread, a fixed seed.

    ``solving`` is called once HiGHS starts (the model built: what follows releases the GIL, so a caller
    may start Python work of its own then), if it does, with the plan HiGHS starts from (greedy's, on the
    pruned model), which is often the answer.

    ``costs.exclusive`` nodes (computations fused into several dispatches run in each) are charged
    their run_seconds once per chosen user: a column w_{p,n} >= x_p + x_n - 1 per user node p.

    ``exclude`` lists plans (choices) the result must differ from: a no-good cut per plan (its chosen
    nodes cannot all be chosen again), for the k best distinct plans. Raises ``NoMorePlans`` when
    every plan is excluded.
    """
    start = time.perf_counter()
    check_costs(costs, lam)
    if warm_start is not None:  # repriced: it may be any plan
        greedy = extraction_result(g, warm_start.choice, costs, lam, warm_start.method, start)
    else:  # priced with these costs already
        greedy = greedy_dag(g, costs, lam)
    p = prune(g, costs)
    mapped_choice = {c: p.kept(n) for c, n in greedy.choice.items()}
    same = mapped_choice == greedy.choice  # nothing greedy chose was pruned: the same plan, priced already
    mapped_res = greedy if same else extraction_result(g, mapped_choice, costs, lam, "greedy-dag", start)
    mapped = mapped_res.choice  # only what the root still reaches: the rest may be pruned away
    excluded = [frozenset({c: p.kept(n) for c, n in e.items()}.items()) for e in exclude]

    # Conflicts (combinations IREE's codegen rejects) are excluded when greedy found a plan without them
    # (so some plan satisfies them all); one greedy's plan keeps, the e-graph may hold no plan without:
    # it is not imposed (explore warns that the plan keeps it).
    kept = set(violated_conflicts(costs, greedy.choice))
    conflicts = tuple(c for c in CostTable.of(costs).conflicts if c not in kept)

    def allowed(choice: Mapping[str, str]) -> bool:
        mapped_choice = frozenset({c: p.kept(n) for c, n in choice.items()}.items())
        return not any(ex <= mapped_choice for ex in excluded) and not violated(conflicts, choice)

    candidates = [
        cand for cand in ((greedy.objective, 0, "greedy", greedy), (mapped_res.objective, 1, "mapped", mapped_res))
        if allowed(cand[3].choice)
    ]  # fmt: skip
    stats: dict[str, object] = dict(p.stats)
    stats.update(greedy_objective=greedy.objective, mapped_objective=mapped_res.objective)
    decisions = sum(len(v) > 1 for v in p.nodes.values())
    stats["decisions"] = decisions
    if decisions == 0 and not allowed(mapped):
        raise NoMorePlans("the e-graph holds no other plan")
    if (decisions == 0 or mapped_res.objective == 0.0) and allowed(mapped):
        # One plan left, or a zero-cost plan with costs >= 0: optimal without a solver.
        return _final(mapped_res, start, True, 0.0, {**stats, "source": "mapped"})

    scale = mapped_res.objective / _OBJECTIVE_SCALE
    f = _Formulation(g, p, costs, lam, scale)
    f.build(conflicts, excluded)
    stats.update(f.stats())
    h = _highs_for(f, mapped, time_limit, seed, rel_gap)
    solve_start = time.perf_counter()
    if solving is not None:
        solving(mapped_res)
    run_interruptibly(h)
    stats["solver_seconds"] = time.perf_counter() - solve_start
    status = h.getModelStatus()
    info = h.getInfo()
    stats.update(status=h.modelStatusToString(status), mip_nodes=int(info.mip_node_count))
    optimal = status == highspy.HighsModelStatus.kOptimal
    if info.primal_solution_status == highspy.kSolutionStatusFeasible:
        chosen = f.chosen(h.getSolution().col_value)
        try:
            solved = extraction_result(g, chosen, costs, lam, "ilp-highs", start)
        except ValueError as e:  # not integral within tolerance: HiGHS bug or numerical trouble
            stats["solver_plan_invalid"] = str(e)
        else:
            stats["solver_objective"] = solved.objective
            if allowed(solved.choice):
                candidates.append((solved.objective, -1, "solver", solved))
    if not candidates:
        raise NoMorePlans("no plan left outside the excluded ones (or none found within the time limit)")
    objective, _, source, best = min(candidates, key=lambda t: (t[0], t[1]))
    bound = info.mip_dual_bound * scale
    gap: float | None = None
    if math.isfinite(bound):
        stats["lower_bound"] = bound
        gap = 0.0 if objective <= 0 else max(0.0, (objective - bound) / objective)
    stats["source"] = source
    return _final(best, start, optimal, gap, stats)


def _final(
    priced: ExtractionResult, start: float, optimal: bool, gap: float | None, stats: dict[str, object]
) -> ExtractionResult:
    """The answer: a plan ``extraction_result`` priced here already (same costs and λ, so the same
    totals), as the ILP's result."""
    seconds = time.perf_counter() - start
    return dataclasses.replace(priced, method="ilp-highs", seconds=seconds, optimal=optimal, gap=gap, stats=stats)


def _highs_for(
    f: _Formulation, mapped: Mapping[str, str], time_limit: float, seed: int, rel_gap: float
) -> highspy.Highs:
    """HiGHS set up to solve ``f``: one thread, a fixed seed, the limits, and ``mapped`` as its start."""
    h = new_highs()
    for name, value in (
        ("output_flag", False),
        ("threads", 1),
        ("random_seed", seed),
        ("time_limit", float(time_limit)),
        ("mip_rel_gap", rel_gap),
        ("mip_abs_gap", 1e-10),
    ):
        if h.setOptionValue(name, value) != highspy.HighsStatus.kOk:  # HiGHS only returns the error
            raise ValueError(f"HiGHS rejected option {name}={value!r}")
    h.passModel(f.m.lp())
    solution = highspy.HighsSolution()
    solution.col_value = f.warm(mapped)
    solution.value_valid = True
    h.setSolution(solution)
    return h


class _Formulation:
    """The MILP of one extraction (module docstring): its columns, rows, and what the warm start and
    the reading of a solution need to know of them. Columns and rows are made in a fixed order, so
    the same e-graph and costs give the same model."""

    def __init__(self, g: EGraphData, p: PrunedGraph, costs: Mapping[str, NodeCost], lam: float, scale: float):
        self.g, self.p, self.costs, self.lam, self.scale = g, p, costs, lam, scale
        self.exclusive: frozenset[str] = CostTable.of(costs).exclusive
        self.m = _Model()
        self.cols: dict[tuple[str, str], int] = {}
        self.charges = once_charges(costs)
        self.products: list[tuple[int, tuple[str, ...]]] = []  # (column, nodes): 1 when all of them are chosen
        self.gate_col: int | None = None
        self.gated_cols: list[tuple[int, tuple[str, ...]]] = []  # (column, nodes): 1 when all chosen and the gate runs
        self.gate: frozenset[str] = frozenset()
        self._contexts()

    def _contexts(self) -> None:
        """Context: classes below some ConstEval need r; every other reachable class is always at run
        time, and so is a class every plan needs at run time. Cycles get level columns."""
        g, p = self.g, self.p
        succ: dict[str, dict[str, None]] = {c: {} for c in p.classes}  # the class graph, edges in first-seen order
        for c in p.classes:
            for n in p.nodes[c]:
                succ[c].update(dict.fromkeys(p.kids[n]))
        self.needed, needed_at_run = necessary_classes(g, p, _postorder(succ, g.root))
        below: set[str] = set()
        todo = [d for c in p.classes for n in p.nodes[c] if g.nodes[n].op in LOAD_BOUNDARY_OPS for d in p.kids[n]]
        while todo:
            c = todo.pop()
            if c not in below:
                below.add(c)
                todo.extend(d for n in p.nodes[c] for d in p.kids[n])
        self.below = below - needed_at_run
        self.scc_of: dict[str, tuple[int, int]] = {}
        self.big = sorted((sorted(s) for s in _cycles(succ)), key=lambda s: s[0])
        for k, members in enumerate(self.big):
            for c in members:
                self.scc_of[c] = (k, len(members))

    def build(self, conflicts: Sequence[tuple[str, ...]], excluded: Sequence[frozenset[tuple[str, str]]]) -> None:
        """Every column and row, in a fixed order."""
        self._columns()
        self._structure_rows()
        pairs = pair_charges(self.costs)
        gated, self.gate = gated_charges(self.costs)
        users = self._users() if self.exclusive or pairs or gated else {}
        self._exclusive_rows(users)
        self._once_rows()
        self._pair_rows(pairs, users)
        self._gated_rows(gated, users)
        self._cut_rows(conflicts, excluded)

    def _columns(self) -> None:
        """x per node, a per class, r and y in load contexts, l in cycles."""
        p, m, cols, below = self.p, self.m, self.cols, self.below
        for c in p.classes:
            for n in p.nodes[c]:
                cost = self.costs.get(n, ZERO_COST)
                per_use = n in self.exclusive and c not in below  # charged on its users' w columns instead
                charge = self.lam * cost.memory_bytes + (0.0 if c in below or per_use else cost.run_seconds)
                cols[("x", n)] = m.col(charge / self.scale, 0.0, 1.0, True)
        for c in p.classes:
            cols[("a", c)] = m.col(0.0, 1.0 if c in self.needed else 0.0, 1.0, False)
        for c in p.classes:
            if c in below:
                cols[("r", c)] = m.col(0.0, 0.0, 1.0, False)
                for n in p.nodes[c]:
                    run_s = self.costs.get(n, ZERO_COST).run_seconds
                    if run_s > 0:
                        cols[("y", n)] = m.col(run_s / self.scale, 0.0, 1.0, False)
        for c, (_, size) in self.scc_of.items():
            cols[("l", c)] = m.col(0.0, 0.0, float(size - 1), False)

    def _structure_rows(self) -> None:
        """One node per active class, kids active, run contexts passed down, levels along cycles."""
        p, m, cols = self.p, self.m, self.cols
        for c in p.classes:
            m.row([(cols[("x", n)], 1.0) for n in p.nodes[c]] + [(cols[("a", c)], -1.0)], 0.0, 0.0)
        for c in p.classes:
            rc = cols.get(("r", c))
            for n in p.nodes[c]:
                x = cols[("x", n)]
                for d in p.kids[n]:
                    m.row([(x, 1.0), (cols[("a", d)], -1.0)], -math.inf, 0.0)
                    self._context_row(n, x, rc, cols.get(("r", d)))
                    self._level_row(c, d, x)
                if ("y", n) in cols and rc is not None:
                    m.row([(x, 1.0), (rc, 1.0), (cols[("y", n)], -1.0)], -math.inf, 1.0)

    def _context_row(self, n: str, x: int, rc: int | None, rd: int | None) -> None:
        """A kid of a node at run time is at run time too (unless the node is a load boundary)."""
        if rd is None or self.g.nodes[n].op in LOAD_BOUNDARY_OPS:
            return
        if rc is None:
            self.m.row([(x, 1.0), (rd, -1.0)], -math.inf, 0.0)
        else:
            self.m.row([(rc, 1.0), (x, 1.0), (rd, -1.0)], -math.inf, 1.0)

    def _level_row(self, c: str, d: str, x: int) -> None:
        """Inside one cycle of classes, a chosen node's kid sits on a lower level (no cyclic plan)."""
        if c in self.scc_of and self.scc_of.get(d, (-1,))[0] == self.scc_of[c][0]:
            big_m = float(self.scc_of[c][1])
            self.m.row([(self.cols[("l", c)], 1.0), (self.cols[("l", d)], -1.0), (x, big_m)], -math.inf, big_m - 1)

    def _users(self) -> dict[str, set[str]]:
        """class -> the run-time nodes that use it (per-use charges)."""
        p = self.p
        users: dict[str, set[str]] = {}
        for c in p.classes:
            for n in p.nodes[c]:
                if self.g.nodes[n].op not in LOAD_BOUNDARY_OPS:
                    for d in set(p.kids[n]):
                        users.setdefault(d, set()).add(n)
        return users

    def _exclusive_rows(self, users: Mapping[str, set[str]]) -> None:
        """An exclusive node's run time once per chosen user: w >= x_user + x_node - 1."""
        p, m, cols = self.p, self.m, self.cols
        for c in p.classes if self.exclusive else ():
            if c in self.below:
                continue
            for n in p.nodes[c]:
                run_s = self.costs.get(n, ZERO_COST).run_seconds
                if n not in self.exclusive or run_s <= 0:
                    continue
                for u in sorted(users.get(c, ())):
                    w = m.col(run_s / self.scale, 0.0, 1.0, False)
                    m.row([(cols[("x", u)], 1.0), (cols[("x", n)], 1.0), (w, -1.0)], -math.inf, 1.0)

    def _runs_row(self, c: str, n: str, z: int) -> None:
        """z >= run(n): 1 when n is chosen at run time."""
        rc = self.cols.get(("r", c))
        if rc is None:  # always at run time when chosen
            self.m.row([(self.cols[("x", n)], 1.0), (z, -1.0)], -math.inf, 0.0)
        else:  # at run time when chosen in a run context: x + r - 1 <= z
            self.m.row([(self.cols[("x", n)], 1.0), (rc, 1.0), (z, -1.0)], -math.inf, 1.0)

    def _once_rows(self) -> None:
        """A charge paid once if any of its nodes runs: z >= run(n)."""
        p = self.p
        for i, (seconds, once) in enumerate(self.charges):
            charged = [(c, n) for c in p.classes for n in p.nodes[c] if n in once]
            if not charged:
                continue
            z = self.cols[("z", str(i))] = self.m.col(seconds / self.scale, 0.0, 1.0, False)
            for c, n in charged:
                self._runs_row(c, n, z)

    def _per_user(self, n: str, users: Mapping[str, set[str]]) -> list[tuple[str, ...]]:
        """The user groups a charge on ``n`` is paid per: each user if n is exclusive, else once."""
        return [(u,) for u in sorted(users.get(self.g.nodes[n].eclass, ()))] if n in self.exclusive else [()]

    def _pair_rows(self, pairs: Sequence[tuple[float, str, str]], users: Mapping[str, set[str]]) -> None:
        """Both chosen: v >= x_gen + x_unset - 1 (per user if exclusive)."""
        g, cols = self.g, self.cols
        for seconds, gen, unset in pairs:
            if ("x", gen) not in cols or ("x", unset) not in cols or g.nodes[gen].eclass in self.below:
                continue  # pruned, or at load time (not charged here; the plan is re-priced exactly)
            for extra in self._per_user(gen, users):
                nodes = (*extra, gen, unset)
                v = self.m.col(seconds / self.scale, 0.0, 1.0, False)
                self.m.row([*((cols[("x", n)], 1.0) for n in nodes), (v, -1.0)], -math.inf, float(len(nodes) - 1))
                self.products.append((v, nodes))

    def _gated_rows(self, gated: Sequence[tuple[float, str]], users: Mapping[str, set[str]]) -> None:
        """A gate column t, 1 if any gate node runs; each gated charge v >= x_n + t - 1 (per user if
        exclusive)."""
        p, g, cols = self.p, self.g, self.cols
        gate_members = [(c, n) for c in p.classes for n in p.nodes[c] if n in self.gate] if gated else []
        if not gate_members:
            return
        gate_col = self.gate_col = self.m.col(0.0, 0.0, 1.0, False)
        for c, n in gate_members:
            self._runs_row(c, n, gate_col)
        for seconds, n in gated:
            if ("x", n) not in cols or g.nodes[n].eclass in self.below:
                continue  # pruned, or possibly at load time (the plan is re-priced exactly)
            for extra in self._per_user(n, users):
                nodes = (*extra, n)
                v = self.m.col(seconds / self.scale, 0.0, 1.0, False)
                self.m.row(
                    [*((cols[("x", k)], 1.0) for k in nodes), (gate_col, 1.0), (v, -1.0)], -math.inf, float(len(nodes))
                )
                self.gated_cols.append((v, nodes))

    def _cut_rows(self, conflicts: Sequence[tuple[str, ...]], excluded: Sequence[frozenset[tuple[str, str]]]) -> None:
        """Conflicts (combinations IREE's codegen rejects: not all of one) and no-good cuts (not every
        node of an excluded plan again)."""
        cols = self.cols
        kept = {n for ns in self.p.nodes.values() for n in ns}
        for conflict in conflicts:
            if all(n in kept for n in conflict):  # (a pruned node is in no plan the model can return)
                self.m.row(
                    [(cols[("x", n)], 1.0) for n in dict.fromkeys(conflict)], -math.inf, float(len(set(conflict)) - 1)
                )
        for ex in excluded:
            chosen_cols = [cols[("x", n)] for _, n in sorted(ex) if ("x", n) in cols]
            if chosen_cols:
                self.m.row([(j, 1.0) for j in chosen_cols], -math.inf, float(len(chosen_cols) - 1))

    def stats(self) -> dict[str, object]:
        """The model's size, for ``ExtractionResult.stats``."""
        return dict(
            columns=len(self.m.cost),
            rows=len(self.m.row_lower),
            needed=len(self.needed),
            context_vars=sum(1 for k in self.cols if k[0] == "r"),
            level_vars=len(self.scc_of),
            sccs=len(self.big),
            largest_scc=max((len(s) for s in self.big), default=0),
        )

    def warm(self, mapped: Mapping[str, str]) -> list[float]:
        """Column values of the plan ``mapped``, product and gate columns included."""
        warm = _warm_values(self.g, self.p, mapped, self.cols, len(self.m.cost), self.big, self.charges)
        chosen_warm = set(mapped.values())
        for col, nodes in self.products:
            warm[col] = 1.0 if all(n in chosen_warm for n in nodes) else 0.0
        if self.gate_col is not None:
            gate_on = not self.gate.isdisjoint(plan_contexts(self.g, mapped)[0])
            warm[self.gate_col] = 1.0 if gate_on else 0.0
            for col, nodes in self.gated_cols:
                warm[col] = 1.0 if gate_on and all(n in chosen_warm for n in nodes) else 0.0
        return warm

    def chosen(self, values: Sequence[float]) -> dict[str, str]:
        """The plan a solution's column values select: per class, its node with the largest x, if > 0.5."""
        chosen: dict[str, str] = {}
        for c in self.p.classes:
            best = max(self.p.nodes[c], key=lambda n: values[self.cols[("x", n)]])
            if values[self.cols[("x", best)]] > 0.5:
                chosen[c] = best
        return chosen
