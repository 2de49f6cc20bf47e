"""The whole pipeline as one function: parse -> initial plan -> import -> saturate -> extract -> plan.

``explore()`` is the Python API notebooks use and the engine behind ``egg-dispatch explore``:

    result = egg_dispatch.explore("model.mlir", target="x86_64-avx512")
    result.best.metrics.objective, result.baseline, result.pareto, result.stats, result.check()
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from .baseline import BaselineError, iree_baseline_choice
from .cost import DEFAULT_LAMBDA, cost_table
from .deep import allow_deep_recursion
from .egraph_data import EGraphData, build_term
from .emit import Emitter, normalize_choice
from .importer import ImportedProgram, import_function
from .mlir.ir import Module
from .mlir.parser import parse_file, parse_mlir
from .plan import Plan, build_plan
from .rules import FAMILIES, Budget, SaturationReport, saturate
from .targets import Target, load_target

__all__ = ["Candidate", "CheckResult", "Exploration", "explore"]

PARETO_LAMBDAS = (0.0, 1e-12, 1e-11, 1e-10, 1e-9, 1e-8, 1e-7, 1e-6)
"""λ values (seconds per byte) swept for the time/memory frontier: from 'memory is free' to
'1 KiB weighs like 1 ms per call'."""


@dataclass
class Candidate:
    """One plan: the e-graph choice, its plan graph and metrics, and its MLIR."""

    label: str
    choice: dict[str, str]
    plan: Plan
    mlir: Module
    extraction: object | None = None
    """The extractor's result (objective, gap, time), when an extractor produced this plan."""

    @property
    def metrics(self):
        return self.plan.metrics


@dataclass
class CheckResult:
    label: str
    max_rel_error: float
    tolerance: float
    skipped: str = ""
    """Why the plan was not evaluated (only for IREE's own plan: IREE validates it, and it may use ops
    our evaluator does not model, such as flow.tensor.slice)."""

    @property
    def ok(self) -> bool:
        return bool(self.skipped) or self.max_rel_error <= self.tolerance


@dataclass
class Exploration:
    module: Module
    prepared: Module
    imported: ImportedProgram
    target: Target
    lam: float
    saturation: SaturationReport
    data: EGraphData
    costs: dict
    best: Candidate
    baseline: Candidate | None
    pareto: list[Candidate] = field(default_factory=list)
    timings: dict[str, float] = field(default_factory=dict)
    warnings: list[str] = field(default_factory=list)

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

    def check(self, seed: int = 0) -> list[CheckResult]:
        """Evaluate the input and every plan (best, baseline, frontier) on the same seeded inputs:
        the input with plain semantics, each plan with the target's physical encodings."""
        from .check_cmd import random_inputs, reduction_length, tolerance
        from .evaluate import EvaluationError, evaluate, function_input_types, select_function

        func = select_function(self.module, self.imported.function)
        inputs = random_inputs(function_input_types(func), seed)
        reference = evaluate(self.module, inputs, function=self.imported.function)
        k = max([reduction_length(op) for op in func.walk()] + [1])
        results = []
        for cand in self.candidates():
            try:
                got = evaluate(cand.mlir, inputs, target=self.target)
            except EvaluationError as e:
                if cand is not self.baseline or "iree-compile" not in cand.label:
                    raise
                results.append(CheckResult(cand.label, math.nan, math.nan, skipped=str(e)))
                continue
            worst, tol = 0.0, 0.0
            for a, b, t in zip(got, reference, self.imported.result_types, strict=True):
                scale = max(float(np.max(np.abs(b))) if b.size else 0.0, 1e-30)
                worst = max(worst, float(np.max(np.abs(a.astype(np.float64) - b))) / scale if b.size else 0.0)
                tol = max(tol, tolerance(t, k))
            results.append(CheckResult(cand.label, worst, tol))
        return results

    def _repr_markdown_(self) -> str:
        from .report import markdown

        return markdown(self)


def _load(source: str | Path | Module) -> Module:
    if isinstance(source, Module):
        return source
    if isinstance(source, Path) or (isinstance(source, str) and "\n" not in source and source.endswith(".mlir")):
        return parse_file(source)
    return parse_mlir(str(source), "<string>")


def explore(
    source: str | Path | Module,
    target: str | Target = "x86_64-avx512",
    *,
    families: Sequence[str] = FAMILIES,
    budget: Budget | None = None,
    lam: float = DEFAULT_LAMBDA,
    extractor: str = "exact",
    time_limit: float = 10.0,
    function: str | None = None,
    pareto: bool = False,
    baseline: bool = True,
    progress: Callable[[str], None] | None = None,
) -> Exploration:
    """Run the pipeline on MLIR text, a file, or a parsed module; see ``Exploration``."""
    from .extract import exact_ilp, greedy_dag

    allow_deep_recursion()
    timings: dict[str, float] = {}
    say = progress or (lambda _msg: None)
    t0 = time.perf_counter()
    module = _load(source)
    tgt = target if isinstance(target, Target) else load_target(target)
    from .initial_plan import initial_plan

    prepared = initial_plan(module, function)
    imported = import_function(prepared, function)
    timings["import"] = time.perf_counter() - t0
    say(f"imported @{imported.function}: {len(imported.lets)} terms")
    graph, report = saturate(imported, tgt, families, budget)
    say(f"saturated: {report.enodes} e-nodes, {report.stop_reason}")
    t1 = time.perf_counter()
    data = EGraphData.from_serialized(graph.serialized())
    costs = cost_table(data, imported, tgt)
    timings["cost_table"] = time.perf_counter() - t1

    def extract(weight: float):
        greedy = greedy_dag(data, costs, weight)
        if extractor == "greedy":
            return greedy
        return exact_ilp(data, costs, weight, time_limit=time_limit, warm_start=greedy)

    def candidate(label: str, choice: dict[str, str], result: object | None = None) -> Candidate:
        spelled = normalize_choice(data, choice, False)  # report and emit at the encoding level
        plan = build_plan(data, spelled, imported, tgt, lam)
        mlir = Emitter(imported).emit(build_term(data, spelled))  # type: ignore[arg-type]
        return Candidate(label, choice, plan, mlir, result)

    t2 = time.perf_counter()
    result = extract(lam)
    timings["extract"] = time.perf_counter() - t2
    best = candidate("best", result.choice, result)
    base = None
    warnings = list(module.warnings)
    if baseline:
        try:
            base = candidate("baseline (IREE 3.13 passes, modelled)", iree_baseline_choice(data))
        except BaselineError as e:
            warnings.append(f"warning: no modelled IREE baseline: {e}")
    front: list[Candidate] = []
    if pareto:
        say("sweeping λ for the time/memory frontier")
        seen: dict[tuple, Candidate] = {}
        for weight in PARETO_LAMBDAS:
            r = extract(weight)
            c = candidate(f"λ={weight:g}", r.choice, r)
            key = (round(c.metrics.run_seconds, 15), c.metrics.memory_bytes)
            seen.setdefault(key, c)
        front = _non_dominated(list(seen.values()))
    timings["total"] = time.perf_counter() - t0
    return Exploration(module, prepared, imported, tgt, lam, report, data, costs, best, base, front, timings, warnings)


def _non_dominated(cands: list[Candidate]) -> list[Candidate]:
    def dominated(a: Candidate, b: Candidate) -> bool:
        ma, mb = a.metrics, b.metrics
        return (
            mb.run_seconds <= ma.run_seconds
            and mb.memory_bytes <= ma.memory_bytes
            and (mb.run_seconds < ma.run_seconds or mb.memory_bytes < ma.memory_bytes)
        )

    front = [a for a in cands if not any(dominated(a, b) for b in cands if b is not a)]
    return sorted(front, key=lambda c: (c.metrics.run_seconds, c.metrics.memory_bytes))
