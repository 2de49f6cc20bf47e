"""What ``explore()`` returns: the chosen plan, the baseline, the frontier, the e-graph, and checks.

``Exploration`` keeps every stage's output (the input, IREE's start state, the imported program, the
saturation report, the serialized e-graph and its cost table) so that reports, ``--explain`` and
notebooks can look behind the chosen plan; ``check()`` evaluates every plan against the input.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from egg_dispatch.cost import CostTable, SizePlan
from egg_dispatch.egraph.data import EGraphData
from egg_dispatch.egraph.imported import ImportedProgram
from egg_dispatch.egraph.membership import Membership
from egg_dispatch.egraph.rules import SaturationReport
from egg_dispatch.evaluate import EvaluationError, evaluate, select_function
from egg_dispatch.evaluate.check import function_inputs, reduction_length, relative_error, tolerance
from egg_dispatch.evaluate.parameters import Parameters
from egg_dispatch.evaluate.sizes import check_sizes, label, shapes_at
from egg_dispatch.mlir.ir import Loc, Module
from egg_dispatch.mlir.shapes import function_shapes
from egg_dispatch.plan.graph import Plan
from egg_dispatch.result.decision import Decision
from egg_dispatch.target.profile import Target
from egg_dispatch.util.deadline import Deadline, StageStop

if TYPE_CHECKING:
    from egg_dispatch.extract.common import ExtractionResult
    from egg_dispatch.iree.compile_check import CompileCheck

__all__ = ["Candidate", "CheckResult", "Exploration", "InputInfo", "IreePlan"]


@dataclass
class Candidate:
    """One plan: the e-graph choice, its plan graph and metrics, and its MLIR."""

    label: str
    choice: dict[str, str]
    plan: Plan
    mlir: Module
    extraction: ExtractionResult | None = None
    """The extractor's result (objective, gap, time), when an extractor produced this plan."""
    dispatch_order: tuple[tuple[str, str], ...] = ()
    """("dispatch" | "encode", e-class) of the plan's dispatches in the order ``mlir`` holds them
    (``Emitter.dispatch_order``): plan graph dispatch ``dispatch:<class>`` <-> IREE's executable."""

    @property
    def metrics(self):
        return self.plan.metrics


@dataclass
class CheckResult:
    label: str
    max_rel_error: float
    tolerance: float
    skipped: str = ""
    """Why the plan was not evaluated: IREE's own plan holding an op our evaluator does not model (none
    does for the programs tests/test_iree_own_plan.py surveys), or the check reaching its budget."""
    error: str = ""
    """Why evaluating the plan failed although the input evaluates: a wrong plan, so not ok."""

    @property
    def ok(self) -> bool:
        return bool(self.skipped) or (not self.error and self.max_rel_error <= self.tolerance)


@dataclass
class InputInfo:
    """What the input was and what was done to it before exploring (reported in text and JSON)."""

    form: str
    """Where the file stands in IREE's pipeline (``mlir.forms``): torch, input, linalg, ..."""
    explored_form: str
    """The form ``explore`` worked on (``global-optimization`` after running IREE's phase)."""
    steps: list[str] = field(default_factory=list)
    """Commands run on the input (``iree-compile ... --compile-to=global-optimization``)."""
    notes: list[str] = field(default_factory=list)
    """Why a step was skipped (IREE not installed, IREE rejected the input, ``--from input``)."""
    iree_plan: str | None = field(default=None, repr=False)
    """IREE's own plan (its dispatch-creation output), when the start state came from the same run."""
    locations: dict[int, Loc] = field(default_factory=dict, repr=False)
    """Where each op of the explored program (by the line it starts on in IREE's start state) came from in
    the user's file (``iree.lowering.StartState.locations``); empty when explored as read (the ops' own
    positions are then in the user's file)."""

    def describe(self) -> str:
        done = f", explored after {'; '.join(self.steps)}" if self.steps else ""
        return f"{self.form}{done}"


@dataclass
class IreePlan:
    """IREE's own plan for a program: the text IREE printed, what it holds, and our model's metrics."""

    target: str
    text: str
    """``iree-compile --compile-to=dispatch-creation`` output (post-dispatch-creation form)."""
    printed_dispatches: int
    """``flow.dispatch.workgroups`` in the function, as IREE printed them."""
    printed_encodes: int
    """Run-time ``flow.tensor.encode`` in the function (each a dispatch once Stream materializes it)."""
    printed_slices: int
    """Run-time ``flow.tensor.slice`` in the function: a copy each, imported as the ``Dispatch(Slice ...)``
    the clone family builds for a slice materialized on its own, so priced (launch, bytes, its buffer) and
    counted as a dispatch like the modelled baseline's copy of a hoisted argument slice."""
    printed_globals: int
    """``util.global``s other than the device."""
    candidate: Candidate | None = None
    """The ``Candidate`` our model built from IREE's plan (None when it could not cost it)."""
    explored: Exploration | None = None
    """IREE's plan explored on its own, with no rule (its e-graph and import: what membership reads)."""
    error: str | None = None
    """Why our model could not cost the plan."""
    warnings: list[str] = field(default_factory=list)

    @property
    def metrics(self):
        """Our model's ``PlanMetrics`` for IREE's plan (raises when it could not be costed)."""
        if self.candidate is None:
            raise ValueError(f"our model could not cost IREE's plan: {self.error}")
        return self.candidate.metrics

    @property
    def dispatch_count_sane(self) -> bool:
        """The model counts what IREE launches: each workgroups op, each run-time encode (Stream
        materializes it as an encoding dispatch) and each run-time ``flow.tensor.slice`` (a copy)."""
        if self.candidate is None:
            return False
        return self.metrics.dispatches == self.printed_dispatches + self.printed_encodes + self.printed_slices


@dataclass(kw_only=True)
class Exploration:
    """What ``pipeline.explore`` found for one function: the e-graph, the chosen plan, the baseline and
    how they were obtained. Built by keyword."""

    module: Module
    """The program explored (after IREE's phases the input went through: ``input``)."""
    prepared: Module
    """``module`` in IREE's data-tiling start state (dispatch regions, cloned producers, set_encodings)."""
    imported: ImportedProgram
    """The function's egglog terms and what the rest of the pipeline needs to read them back."""
    target: Target
    """The target the plans are priced for."""
    lam: float
    """The memory weight of the objective, seconds per byte."""
    saturation: SaturationReport
    """How saturation went: size, iterations, why it stopped, rule matches."""
    data: EGraphData
    """The saturated e-graph, serialized: what every later stage reads."""
    costs: CostTable
    """The per-node prices and charges the extractors optimized."""
    best: Candidate
    """The model's best plan."""
    baseline: Candidate | None
    """IREE's plan as modelled in the e-graph (or, once the CLI priced it, IREE's own); None: none."""
    pareto: list[Candidate] = field(default_factory=list)
    """The time/memory frontier (``explore(pareto=True)``; empty otherwise)."""
    timings: dict[str, float] = field(default_factory=dict)
    """Wall seconds per stage (not deterministic: reported only with ``--timings``)."""
    warnings: list[str] = field(default_factory=list)
    """What the report shows under its header: input warnings, plans keeping refused forms."""
    input: InputInfo | None = None
    """How the input was brought to the form explored (None: taken as given, from a parsed module)."""
    top: list[Candidate] = field(default_factory=list)
    """The k best distinct plans by the model, best first (``explore(top_k=k)``; empty otherwise)."""
    measured_nodes: int = 0
    """Node signatures the cost table priced from measured times (``cost.measured``) instead of formulas."""
    measured_source: str | None = None
    """The measurement cache those times came from (None: none, or in memory)."""
    sizes: SizePlan | None = None
    """The sizes a dynamic program's costs are the weighted mean over (``cost.sizes``; None: static)."""
    decision: Decision | None = None
    """Ours or IREE's own plan (``result.decision``), once IREE's plan is priced (the CLI; None: not made)."""
    iree_plan_text: str | None = None
    """IREE's own post-dispatch-creation output, when the baseline is IREE's plan (what ``--emit iree``
    writes when the decision keeps it: IREE's plan exactly, not our emission of it)."""
    baseline_membership: Membership | None = None
    """Whether the baseline is one of the e-graph's plans (``egraph.membership``): by construction for
    the modelled one; for IREE's own plan, the answer of a test (None: no baseline)."""
    stage_seconds: float = 20.0
    """Each stage's budget (``--budget seconds``; ``util.deadline``): what later stages (membership of
    IREE's own plan, the check) run under too."""
    stops: list[StageStop] = field(default_factory=list)
    """The stages that reached their budget, in the order they ran, and what each handed on."""
    compile_check: CompileCheck | None = None
    """Whether IREE compiles the chosen plan's new dispatches, and what was excluded because it did not
    (``iree.compile_check``; None: an ``Exploration`` built by hand)."""
    iree_own: IreePlan | None = None
    """IREE's own plan, priced by our model, when ``explore(iree_own_plan=True)`` asked for it (priced beside
    ours, in a child process where allowed, else on a thread: ``pipeline.price_iree_own``); None: not
    asked, or ``iree_own_error`` says why not."""
    iree_own_error: str | None = None
    """Why IREE's own plan was asked for and could not be had (IREE rejects the input, ...)."""
    iree_own_membership: tuple[Membership, StageStop | None] | None = None
    """Whether ``iree_own`` is one of the e-graph's plans and the stop its test reached, when explore found
    that out while it waited for IREE's compiles (``pipeline.iree_plan_membership`` takes it; None: not
    found out then)."""

    @property
    def recommended(self) -> Candidate:
        """The plan to emit: IREE's own when the decision keeps it, else the model's best."""
        if self.decision is not None and self.decision.keep_iree and self.baseline is not None:
            return self.baseline
        return self.best

    @property
    def stats(self) -> dict[str, object]:
        s = self.saturation
        return {
            "enodes": s.enodes,
            "eclasses": s.eclasses,
            "iterations": s.iterations,
            "stop_reason": s.stop_reason,
            "saturation_seconds": s.seconds,
            **{f"{k}_seconds": v for k, v in self.timings.items()},
        }

    def candidates(self) -> list[Candidate]:
        out = [self.best] + ([self.baseline] if self.baseline else [])
        return out + [c for c in self.pareto if c.choice != self.best.choice]

    def check(
        self,
        seed: int = 0,
        parameters: Parameters | None = None,
        extra: Sequence[Candidate] = (),
        deadline: Deadline | None = None,
    ) -> list[CheckResult]:
        """Evaluate the explored program and every plan (best, baseline, frontier, and ``extra``: e.g.
        IREE's own plan next to the modelled baseline) on the same seeded inputs: the program with plain
        semantics, each plan with the target's physical encodings. ``parameters`` gives named parameters
        their values (default: a deterministic fill). ``deadline`` (default: ``stage_seconds`` from now)
        ends the check between two evaluations of the other plans: the chosen plan (the check's answer)
        is always evaluated at every size; a plan not evaluated at every size by then is ``skipped`` with
        the reason, and ``stops`` says the check reached its budget."""
        clock = deadline if deadline is not None else Deadline(self.stage_seconds)
        params = parameters if parameters is not None else Parameters()
        func = select_function(self.module, self.imported.function)
        shapes = function_shapes(func)
        cands = [*self.candidates(), *extra]
        # Plans of this e-graph that choose the same nodes (the baseline is often the best plan) are
        # the same IR: evaluated once per size (``extra`` plans come from other e-graphs).
        ours = {id(c) for c in self.candidates()}
        worst = {id(c): 0.0 for c in cands}
        tol = {id(c): 0.0 for c in cands}
        failed: dict[int, CheckResult] = {}
        envs = list(check_sizes(func, self.imported.domains, shapes))
        done = {id(c): 0 for c in cands}  # sizes each plan was evaluated at
        # A dynamic program is checked at several sizes per dim (evaluate.sizes), each plan at each.
        for env in envs:
            inputs = function_inputs(func, seed, env)
            reference = evaluate(self.module, inputs, function=self.imported.function, parameters=params)
            at = shapes_at(shapes, env) if env else None
            k = max([reduction_length(op, at) for op in func.walk()] + [1])
            where = f" (at {label(env)})" if env else ""
            seen: dict[tuple[tuple[str, str], ...], list] = {}
            for cand in cands:
                if id(cand) in failed or (cand is not self.best and clock.expired()):
                    continue
                same = tuple(sorted(cand.choice.items())) if id(cand) in ours else None
                try:
                    if same is not None and same in seen:
                        got = seen[same]
                    else:
                        got = evaluate(cand.mlir, inputs, target=self.target, parameters=params)
                        if same is not None:
                            seen[same] = got
                except EvaluationError as e:
                    if cand is not self.baseline or "iree-compile" not in cand.label:
                        failed[id(cand)] = CheckResult(cand.label, math.inf, 0.0, error=str(e) + where)
                    else:
                        failed[id(cand)] = CheckResult(cand.label, math.nan, math.nan, skipped=str(e))
                    continue
                for a, b, t in zip(got, reference, self.imported.result_types, strict=True):
                    worst[id(cand)] = max(worst[id(cand)], relative_error(a, b))  # NaN/inf where the input has them
                    tol[id(cand)] = max(tol[id(cand)], tolerance(t, k))
                done[id(cand)] += 1
        short = [c for c in cands if id(c) not in failed and done[id(c)] < len(envs)]
        for c in short:
            failed[id(c)] = CheckResult(
                c.label, math.nan, math.nan,
                skipped=f"the check reached its budget ({clock.seconds:g} s) after {done[id(c)]} of {len(envs)} "
                "evaluation(s) of this plan",
            )  # fmt: skip
        if short:
            self.stops.append(clock.stop("check", f"{len(cands) - len(short)} of {len(cands)} plans checked"))
        return [failed.get(id(c)) or CheckResult(c.label, worst[id(c)], tol[id(c)]) for c in cands]

    def _repr_markdown_(self) -> str:
        from egg_dispatch.result.report import markdown

        return markdown(self)
