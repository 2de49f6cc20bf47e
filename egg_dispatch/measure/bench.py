"""Our plans against IREE's own, compiled and timed on this CPU (``egg-dispatch bench``).

The model's estimates are only useful if they rank plans the way the machine does. ``bench()`` closes
that loop: it compiles IREE's own plan (``iree-compile`` on the input with data tiling, the normal
pipeline) and ours (``--emit iree``, compiled with ``--compile-from=dispatch-creation``; with ``--pareto``
every frontier plan too), checks on seeded inputs that every module computes the input program's numbers
(the NumPy evaluator's; relative error <= 1e-5), then times them with ``iree-benchmark-module`` on the
single-threaded ``local-sync`` device (the model assumes one thread). Repeats are interleaved (plan A, B,
C, A, B, C, ...) so that load from other processes hits every plan alike; the report gives each plan's
median, the ratio ours / IREE, our model's prediction next to the measurement, and the Spearman rank
correlation between predicted and measured times.

When the target cannot run here the plans are compiled only, and the report says why; IREE failing to
compile its own plan is reported as a result. ``benchmarks/bench_vs_iree.py`` uses ``bench()`` too.
"""

from __future__ import annotations

import math
import tempfile
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from egg_dispatch.emit.iree.abi import abi_shell
from egg_dispatch.emit.iree.module import emit_iree, needs_materialization, runnable_here
from egg_dispatch.evaluate import evaluate, select_function
from egg_dispatch.evaluate.check import function_inputs, relative_error
from egg_dispatch.evaluate.parameters import Parameters
from egg_dispatch.iree.dispatch_creation import first_error_line, iree_compile_flags
from egg_dispatch.iree.tools import DEFAULT_MIN_TIME, IreeError, benchmark_module, compile_module, run_module
from egg_dispatch.measure.measured_plan import MeasuredPlan
from egg_dispatch.measure.stand_in import runtime_parameters
from egg_dispatch.measure.tune import measurement_sizes
from egg_dispatch.mlir.ops import sym_name
from egg_dispatch.pipeline import explore, for_iree, iree_plan
from egg_dispatch.target.profile import Target, load_target
from egg_dispatch.util.table import table_lines

__all__ = [
    "BenchPlan",
    "BenchReport",
    "bench",
    "ranks",
    "render",
    "report_json",
    "separated_pairs",
    "spearman",
]

DEFAULT_REPEATS = 5
"""Interleaved repeats per plan; the report gives their median."""


@dataclass(kw_only=True)
class BenchPlan(MeasuredPlan):
    """One plan ``bench`` compiled (``MeasuredPlan``), and how it was emitted."""

    materialized: bool = False
    """Emitted with explicit pack / mmt4d / unpack (a plan IREE cannot take in encoded form)."""

    @property
    def kind(self) -> str:
        """``"iree"`` (IREE's own plan) or ``"ours"``."""
        return "iree" if self.is_iree else "ours"


@dataclass
class BenchReport:
    function: str
    target: str
    plans: list[BenchPlan]
    repeats: int
    ran: bool
    reason: str = ""
    """Why nothing was timed (the target cannot run on this host)."""
    tolerance: float = 1e-5
    notes: list[str] = field(default_factory=list)

    @property
    def iree(self) -> BenchPlan:
        return next(p for p in self.plans if p.is_iree)

    def ratio(self, plan: BenchPlan) -> float | None:
        """Measured median of ``plan`` over IREE's (below 1: ours is faster)."""
        a, b = plan.median, self.iree.median
        return a / b if a is not None and b else None

    @property
    def spearman(self) -> float | None:
        """Rank correlation of predicted vs measured over the plans that have both."""
        pairs = [(p.predicted_seconds, p.median) for p in self.plans if p.predicted_seconds is not None and p.median]
        if len(pairs) < 3:
            return None
        return spearman([a for a, _ in pairs], [b for _, b in pairs])

    @property
    def numbers_ok(self) -> bool:
        return all(p.max_rel_error is None or p.max_rel_error <= self.tolerance for p in self.plans)


def ranks(xs: Sequence[float]) -> list[float]:
    """1-based ranks, ties sharing their average rank (as Spearman's rho needs)."""
    order = sorted(range(len(xs)), key=lambda i: xs[i])
    out = [0.0] * len(xs)
    i = 0
    while i < len(order):
        j = i
        while j + 1 < len(order) and xs[order[j + 1]] == xs[order[i]]:
            j += 1
        for k in range(i, j + 1):
            out[order[k]] = (i + j) / 2 + 1
        i = j + 1
    return out


def spearman(xs: Sequence[float], ys: Sequence[float]) -> float | None:
    """Spearman's rank correlation (Pearson on average ranks); None when a side has no spread."""
    if len(xs) != len(ys) or len(xs) < 2:
        return None
    rx, ry = np.array(ranks(xs)), np.array(ranks(ys))
    dx, dy = rx - rx.mean(), ry - ry.mean()
    denom = math.sqrt(float((dx * dx).sum()) * float((dy * dy).sum()))
    return float((dx * dy).sum()) / denom if denom else None


def separated_pairs(predicted: Sequence[float], rounds: Sequence[Sequence[float]]) -> tuple[int, float]:
    """(pairs of plans whose measured rounds do not overlap, how many of them the prediction orders the
    same way; a tie in prediction counts half).

    Spearman over plans that measure within each other's scatter ranks noise as much as the model: a
    pair counts only where every round of one plan was faster than every round of the other, which
    interleaved rounds make a statement about the plans rather than about the moment."""
    if len(predicted) != len(rounds):
        raise ValueError("one list of rounds per prediction")
    pairs, agree = 0, 0.0
    for i in range(len(predicted)):
        for j in range(i + 1, len(predicted)):
            if not rounds[i] or not rounds[j]:
                continue
            fast, slow = (i, j) if max(rounds[i]) < min(rounds[j]) else (j, i)
            if not max(rounds[fast]) < min(rounds[slow]):
                continue
            pairs += 1
            gap = predicted[slow] - predicted[fast]
            agree += 1.0 if gap > 0 else 0.5 if gap == 0 else 0.0
    return pairs, agree


def bench(
    source: str | Path,
    target: str | Target = "x86_64-avx2",
    *,
    pareto: bool = False,
    repeats: int = DEFAULT_REPEATS,
    min_time: float = DEFAULT_MIN_TIME,
    seed: int = 0,
    parameters: Parameters | None = None,
    explore_options: dict | None = None,
    progress: Callable[[str], None] | None = None,
) -> BenchReport:
    """Compile IREE's plan and ours for ``source``, check their numbers, time them interleaved.

    ``parameters``: the values of named parameters, given to the evaluator and to IREE's runtime tools
    alike; ``explore_options``: ``explore``'s keyword arguments (extractor, budget, rule families...).
    A function with IREE's async ABI is run through its synchronous wrapper, as ``tune`` runs it."""
    say = progress or (lambda _m: None)
    tgt = load_target(target) if isinstance(target, str) else target
    data_tiling, cpu, others = iree_compile_flags(tgt)
    ex = explore(source, tgt, pareto=pareto, **(explore_options or {}))
    fname = ex.imported.function
    shell = abi_shell(ex.module, fname)
    entry = sym_name(shell.wrappers[0]) if shell is not None and shell.wrappers else fname
    notes: list[str] = []
    say("IREE's own plan")
    iree = iree_plan(source, tgt)
    if iree.candidate is None:
        notes.append(f"our model cannot cost IREE's plan: {iree.error}")
    notes += [w for w in iree.warnings if "not modelled" not in w]
    iree_pred = iree.metrics.run_seconds if iree.candidate else None
    plans = [BenchPlan("IREE 3.13 (own plan)", True, iree_pred)]
    try:
        # The program as explore and iree_plan hand it to IREE (a retired op, an elided blob: as read here).
        plans[0].vmfb = compile_module(for_iree(source), data_tiling=data_tiling, target_cpu=cpu, extra_flags=others)
    except IreeError as e:  # IREE failing on its own plan is a result, not an error of ours
        plans[0].error = first_error_line(e.stderr)
        notes.append(f"IREE 3.13 fails to compile its own plan: {plans[0].error}")
    ours = [ex.best] + [c for c in ex.pareto if c.choice != ex.best.choice]
    for c in ours:
        label = "ours: best" if c is ex.best else f"ours: frontier {c.label}"
        say(f"compiling {label}")
        text = emit_iree(c.mlir, tgt, abi=shell)
        try:
            vmfb = compile_module(text, data_tiling=False, target_cpu=cpu, compile_from="dispatch-creation")
        except IreeError as e:
            raise IreeError(f"IREE rejected {label}", stderr=e.stderr, cmd=e.cmd) from e
        plan = BenchPlan(label, False, c.metrics.run_seconds, vmfb, materialized=needs_materialization(c.mlir, tgt))
        plans.append(plan)
    ok, why = runnable_here(tgt)
    report = BenchReport(fname, tgt.name, plans, repeats, ok, why, notes=notes)
    if not ok:
        return report
    env, at = measurement_sizes(ex)  # a dynamic program: the heaviest sizes its cost averages over
    if env:
        report.notes.append(f"timed {at}")
    inputs = function_inputs(select_function(ex.module, fname), seed, env)
    reference = evaluate(ex.module, inputs, function=fname, parameters=parameters)
    timed = [p for p in plans if p.vmfb is not None]
    with runtime_parameters(ex.module, parameters) as param_files:  # given, else the evaluator's stand-ins
        for p in timed:
            assert p.vmfb is not None  # timed: the compiled plans
            got = run_module(p.vmfb, entry, inputs, parameters=param_files)
            p.max_rel_error = max((relative_error(a, b) for a, b in zip(got, reference, strict=True)), default=0.0)
        _time(timed, entry, inputs, param_files, repeats, min_time, say)
    return report


def _time(
    timed: list[BenchPlan],
    entry: str,
    inputs: Sequence[np.ndarray],
    param_files: Sequence[tuple[str | None, str]],
    repeats: int,
    min_time: float,
    say: Callable[[str], None],
) -> None:
    """``repeats`` interleaved rounds of ``timed`` (whole calls, ``iree-benchmark-module``)."""
    with tempfile.TemporaryDirectory(prefix="egg_dispatch_bench_") as tmp:
        paths = []
        for i, x in enumerate(inputs):
            paths.append(Path(tmp) / f"input{i}.npy")
            np.save(paths[-1], x)
        files = []
        for i, p in enumerate(timed):
            files.append(Path(tmp) / f"plan{i}.vmfb")
            assert p.vmfb is not None
            files[-1].write_bytes(p.vmfb)
        for r in range(repeats):
            say(f"timing, repeat {r + 1}/{repeats}")
            for p, f in zip(timed, files, strict=True):
                p.measured.append(benchmark_module(f, entry, paths, min_time=min_time, parameters=param_files))


def report_json(report: BenchReport) -> dict:
    """``bench --emit json``: one object per plan; ``chosen`` marks the plan ``explore`` chooses."""
    return {
        "function": report.function,
        "target": report.target,
        "repeats": report.repeats,
        "timed": report.ran,
        "reason": report.reason or None,
        "spearman": report.spearman,
        "plans": [
            {
                "label": p.label,
                "predicted_us": None if p.predicted_seconds is None else p.predicted_seconds * 1e6,
                "measured_us": None if p.median is None else p.median * 1e6,
                "is_iree": p.is_iree,
                "chosen": p.label == "ours: best",
                "max_rel_error": p.max_rel_error,
                "error": p.error,
                "materialized": p.materialized,
                "rounds_us": [t * 1e6 for t in p.measured],
            }
            for p in report.plans
        ],
        "notes": report.notes,
    }


def _us(x: float | None) -> str:
    return "-" if x is None else f"{x * 1e6:.2f}"


def render(report: BenchReport) -> str:
    """The text table ``bench`` prints."""
    head = ("plan", "predicted us", "measured us (median)", "ours/IREE", "pred. ratio", "max rel err")
    iree_pred = report.iree.predicted_seconds
    rows = []
    for p in report.plans:
        ratio = report.ratio(p)
        pred_ratio = p.predicted_seconds / iree_pred if p.predicted_seconds is not None and iree_pred else None
        err = "-" if p.max_rel_error is None else f"{p.max_rel_error:.1e}"
        rows.append(
            (
                p.label + (" (pack/mmt4d)" if p.materialized else ""),
                _us(p.predicted_seconds),
                "compile failed" if p.error else _us(p.median),
                "-" if ratio is None or p.is_iree else f"{ratio:.2f}",
                "-" if pred_ratio is None or p.is_iree else f"{pred_ratio:.2f}",
                err,
            )
        )
    lines = [f"@{report.function} on {report.target}, {report.repeats} interleaved repeats (local-sync, 1 thread)"]
    lines += table_lines(head, rows, left=1)
    if not report.ran:
        lines.append(f"not timed: {report.reason}")
    else:
        rho = report.spearman
        n = sum(1 for p in report.plans if p.predicted_seconds is not None and p.median)
        why = "" if rho is not None else " (needs at least 3)" if n < 3 else " (the predictions tie)"
        shown = "n/a" if rho is None else f"{rho:+.2f}"
        lines.append(f"Spearman rank correlation, predicted vs measured: {shown} over {n} plans{why}")
    lines += [f"note: {n}" for n in report.notes]
    return "\n".join(lines)
