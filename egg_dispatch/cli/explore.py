"""``egg-dispatch explore``: the chosen dispatch plan for a program, next to IREE's, and why.

Runs the whole pipeline (``pipeline.explore``) and prints the report (``result/report.py``, docs/report.md):
the chosen plan's dispatches and globals by kind beside IREE's plan, totals, each contraction's decision
that differs from IREE's (by layer, at its line in the user's file), the rule families that made the
difference, the e-graph's size and whether it saturated; every dispatch with ``--verbose``.
Exit codes: 0 ok, 1 ``--check`` found a plan that does not compute the input's numbers, 2 bad input.
"""

from __future__ import annotations

import argparse
import json
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

from egg_dispatch.cli.args import (
    InputError,
    add_budget_arguments,
    add_cost_arguments,
    add_extractor_arguments,
    add_input_arguments,
    budget_from_args,
    input_source,
    load_target_arg,
    measure_budget_spec,
    non_negative_float,
    output_file,
    parameters_from_args,
    parse_families,
)
from egg_dispatch.cli.assume import add_assume_argument
from egg_dispatch.cli.cache import add_cache_arguments, measurement_cache
from egg_dispatch.cost import AssumeError
from egg_dispatch.egraph.imported import ImportError_
from egg_dispatch.evaluate.values import EvaluationError
from egg_dispatch.measure.recommend import DEFAULT_ROUNDS, DEFAULT_SECONDS, MeasureBudget
from egg_dispatch.mlir.ir import Module
from egg_dispatch.result.decision import MIN_GAIN, Decision, decide

if TYPE_CHECKING:
    from egg_dispatch.cost import MeasuredTimes
    from egg_dispatch.evaluate.parameters import Parameters
    from egg_dispatch.result.exploration import Exploration

__all__ = ["add_arguments", "run"]

PROGRESS_AFTER_SECONDS = 2.0
"""Runs longer than this print what they are doing on stderr."""


def add_arguments(p: argparse.ArgumentParser) -> None:
    add_budget_arguments(p)
    add_assume_argument(p)
    add_input_arguments(p)
    add_cache_arguments(p)
    add_cost_arguments(p)
    p.add_argument("--pareto", action="store_true", help="also compute the time/memory frontier (a λ sweep)")
    add_extractor_arguments(p)
    p.add_argument(
        "--emit",
        choices=("text", "json", "mlir", "dot", "iree"),
        default="text",
        help="text report (default), JSON (schema in result/report.py), the chosen plan's MLIR, its DOT graph, or the "
        "plan in IREE's post-dispatch-creation form (compiles with iree-compile --compile-from=dispatch-creation)",
    )
    p.add_argument(
        "-o", "--output", type=output_file, metavar="FILE", help="write what --emit asks for to FILE, not stdout"
    )
    p.add_argument(
        "--check",
        action="store_true",
        help="evaluate the input and every reported plan with NumPy on seeded inputs; exit 1 on mismatch",
    )
    p.add_argument(
        "--explain",
        action="store_true",
        help="for every set_encoding: the alternatives held, why others were refused, what decided",
    )
    p.add_argument("--timings", action="store_true", help="include wall times in the report (not deterministic)")
    p.add_argument(
        "-v",
        "--verbose",
        action="store_true",
        help="text report: every dispatch, global and contraction of the chosen plan, its signature and the "
        "rule matches (by default a summary: by kind, and what differs from IREE's plan)",
    )
    p.add_argument(
        "--no-compile-check",
        dest="compile_check",
        action="store_false",
        help="do not compile the chosen plan's new dispatches with IREE (by default, when IREE is installed, "
        "each dispatch IREE's own plan does not have is compiled alone, and one IREE rejects is excluded)",
    )
    measure = p.add_mutually_exclusive_group()
    measure.add_argument(
        "--measure",
        dest="measure",
        action="store_true",
        default=None,
        help="measure the recommendation on this machine for a named --target too (by default only for "
        "--target host): ours is recommended only if the dispatches it does not share with IREE's own plan "
        "measure faster; needs IREE and a CPU that runs the target's code",
    )
    measure.add_argument(
        "--no-measure",
        dest="measure",
        action="store_false",
        help="recommend on the model's prediction alone (labelled 'model only'), never timing anything",
    )
    p.add_argument(
        "--measure-budget",
        type=measure_budget_spec,
        metavar="SPEC",
        help=f"the measurement's budget, e.g. 'rounds=6,seconds=20' (default rounds={DEFAULT_ROUNDS},"
        f"seconds={DEFAULT_SECONDS:g}); it stops earlier once its 95%% interval is narrow or clear of zero",
    )
    p.add_argument(
        "--baseline",
        choices=("auto", "iree", "modelled"),
        default="auto",
        help="what to compare with: IREE's own plan from iree-compile --compile-to=dispatch-creation ('iree'), "
        "IREE's passes modelled in the e-graph ('modelled'), or IREE's when it is installed and compiles the "
        "input, the modelled one otherwise ('auto', default)",
    )
    p.add_argument(
        "--min-gain",
        type=non_negative_float,
        default=MIN_GAIN,
        metavar="F",
        help=f"without measurement, recommend (and emit) IREE's own plan unless ours is predicted at least this "
        f"fraction faster (default {MIN_GAIN}: the model's median error between two plans, "
        "benchmarks/bench_fidelity.py; 0: always ours, not measured). Applies when IREE's own plan is the baseline",
    )


class _Progress:
    """Prints stage messages on stderr once a run has taken longer than PROGRESS_AFTER_SECONDS."""

    def __init__(self) -> None:
        self.start = time.perf_counter()
        self.last = "starting"
        self.shown = False
        self.done = threading.Event()
        self.thread = threading.Thread(target=self._watch, daemon=True)
        self.thread.start()

    def _watch(self) -> None:
        if not self.done.wait(PROGRESS_AFTER_SECONDS):
            self.shown = True
            print(f"egg-dispatch: {self.last} ...", file=sys.stderr, flush=True)

    def __call__(self, message: str) -> None:
        self.last = message
        if self.shown:
            print(f"egg-dispatch: {message} ({time.perf_counter() - self.start:.1f} s)", file=sys.stderr, flush=True)

    def stop(self) -> None:
        self.done.set()


def emitted_iree(result: Exploration) -> str:
    """The recommended plan in IREE's post-dispatch-creation form: IREE's own as IREE printed it, or ours
    emitted. Ours that cannot be written so (``EmitIreeError``: a form the emitter does not spell) gives
    IREE's own plan with a note on stderr when IREE's plan is known, else a one-line error (exit 2)."""
    from egg_dispatch.emit.iree.abi import abi_shell
    from egg_dispatch.emit.iree.module import EmitIreeError, emit_iree

    if result.recommended is not result.best and result.iree_plan_text:
        return result.iree_plan_text.rstrip()  # IREE's own plan, as IREE printed it
    shell = abi_shell(result.module, result.imported.function)
    try:
        return emit_iree(result.best.mlir, result.target, abi=shell).rstrip()
    except EmitIreeError as e:
        if result.iree_plan_text:
            note = f"egg-dispatch: note: ours cannot be written in IREE's form ({e}); writing IREE's own plan"
            print(note, file=sys.stderr)
            return result.iree_plan_text.rstrip()
        raise InputError(
            f"{result.module.file}: error: the chosen plan cannot be written in IREE's form for {result.target.name}: "
            f"{e} (--emit mlir writes it in flow.dispatch.region form)"
        ) from None


def use_iree_baseline(
    result: Exploration, module: Module, args: argparse.Namespace, measured: MeasuredTimes | None = None
) -> None:
    """Replace the modelled baseline by IREE's own plan (issue #6), or say why not; with IREE's plan,
    decide which of the two explore recommends (``result.decision``)."""
    from egg_dispatch.iree.tools import iree_available

    if not iree_available():
        if args.baseline == "iree":
            raise InputError("error: --baseline iree needs IREE (pip install 'egg-dispatch[iree]')")
        return
    from egg_dispatch.pipeline import iree_plan_membership, price_iree_own

    plan, why = result.iree_own, result.iree_own_error  # priced by explore beside ours (``run``)
    if plan is None and why is None:  # an exploration made without asking for it
        source = Path(args.file) if args.file not in (None, "-") else module
        iree_text = result.input.iree_plan if result.input else None
        function, assume = result.imported.function, getattr(args, "assume", None)
        plan, why = price_iree_own(source, module, iree_text, result.target, function, assume, measured)
    if plan is not None:
        if plan.candidate is not None:
            plan.candidate.label = "baseline (IREE 3.13 iree-compile, costed by our model)"
            result.baseline = plan.candidate
            result.baseline_membership = iree_plan_membership(result, plan)
            result.warnings += plan.warnings
            result.iree_plan_text = plan.text
            result.decision = decide(result.best.metrics.run_seconds, plan.candidate.metrics.run_seconds, args.min_gain)
            if (check := result.compile_check) is not None and check.status == "rejected":
                why = f"ours has a dispatch IREE rejects ({check.reason})"
                result.decision = Decision(True, f"IREE's own plan is kept: {why}")
            return
        why = f"our model cannot cost IREE's plan: {plan.error}"
    if args.baseline == "iree":
        raise InputError(f"{module.file}: error: no IREE baseline: {why}")
    result.warnings.append(f"note: baseline is IREE's passes as modelled (IREE's own plan unavailable: {why})")


def _nothing_to_measure(result: Exploration, args: argparse.Namespace) -> str | None:
    """Why the model's decision stands without measuring (None: measure)."""
    decision, base = result.decision, result.baseline
    assert decision is not None and base is not None  # called with IREE's plan priced
    if (check := result.compile_check) is not None and check.status == "rejected":
        return "ours keeps a dispatch IREE rejects"
    if args.min_gain == 0:
        return "--min-gain 0 asks for ours"
    if result.best.metrics.run_seconds >= base.metrics.run_seconds:
        return "ours is not predicted faster than IREE's own plan: nothing to measure"
    return None


def recommend(
    result: Exploration,
    args: argparse.Namespace,
    measured: MeasuredTimes | None,
    parameters: Parameters,
    progress: Callable[[str], None],
) -> None:
    """The recommendation measured on this machine when it is the target (``measure.recommend``), else the
    model's labelled ``model only`` with the reason."""
    from egg_dispatch.iree.tools import iree_available
    from egg_dispatch.measure.recommend import measure_recommendation, why_not_measured

    have_iree = iree_available()
    if result.decision is None:
        if not have_iree:  # the modelled baseline: ours, on the model's word
            ours = Decision(False, "ours: IREE's own plan is not available to compare with (IREE is not installed)")
            result.decision = ours.model_only("IREE is not installed")
        return
    spec = args.target_file or args.target
    why = why_not_measured(getattr(args, "measure", None), spec, result.target, iree=have_iree)
    if why is None:
        why = _nothing_to_measure(result, args)
    if why is not None:
        result.decision = result.decision.model_only(why)
        return
    spec = args.measure_budget or {}
    budget = MeasureBudget(int(spec.get("rounds", DEFAULT_ROUNDS)), float(spec.get("seconds", DEFAULT_SECONDS)))
    result.decision = measure_recommendation(
        result, budget, parameters=parameters, measured=measured, progress=progress
    )


def run(args: argparse.Namespace) -> int:
    from egg_dispatch.iree.tools import iree_available
    from egg_dispatch.pipeline import UnsupportedInput, explore
    from egg_dispatch.result import report

    families = parse_families(args.rules)
    target = load_target_arg(args.target_file or args.target)
    source = input_source(args.file)
    parameters = parameters_from_args(args, source)
    budget = budget_from_args(args)
    progress = _Progress()
    measured = measurement_cache(args, target)
    try:
        result = explore(
            source,
            target,
            families=families,
            budget=budget,
            lam=args.lam,
            extractor=args.extractor,
            time_limit=args.time_limit,
            function=args.function,
            pareto=args.pareto,
            progress=progress,
            start=args.start,
            measured=measured,
            assume=args.assume,
            compile_check=None if args.compile_check else False,
            iree_own_plan=args.baseline != "modelled" and iree_available(),
        )
    except UnsupportedInput as e:
        raise InputError(str(e)) from None
    except AssumeError as e:
        raise InputError(f"error: {e}") from None
    except (KeyError, ImportError_) as e:
        name = source.file if isinstance(source, Module) else str(source)
        raise InputError(f"{name}: error: {e.args[0] if e.args else e}") from None
    finally:
        progress.stop()
    module = result.module
    for w in module.warnings:
        print(w, file=sys.stderr)
    if args.baseline != "modelled":
        use_iree_baseline(result, module, args, measured)
        recommend(result, args, measured, parameters, progress)
    if not result.saturation.saturated:
        print(f"egg-dispatch: saturation stopped early: {result.saturation.stop_reason}", file=sys.stderr)
    emit: dict[str, Callable[[], str]] = {
        "text": lambda: report.text(result, verbose=args.verbose),
        "json": lambda: json.dumps(report.to_json(result, args.timings), indent=2, sort_keys=True),
        "mlir": lambda: report.print_mlir(result.recommended.mlir).rstrip(),
        "dot": lambda: report.dot(result.recommended),
        "iree": lambda: emitted_iree(result),
    }
    _write(emit[args.emit](), args.output)
    if args.explain:
        from egg_dispatch.result.explain import explain

        print(explain(result))
    if args.timings and args.emit == "text":
        print("timings: " + ", ".join(f"{k} {v:.3f} s" for k, v in result.timings.items()))
    if args.check:
        failures = 0
        try:
            checks = result.check(parameters=parameters)
        except EvaluationError as e:
            raise InputError(str(e) if e.loc is not None else f"{result.module.file}: {e}") from None
        for w in parameters.warnings:
            print(w, file=sys.stderr)
        _say_stops(result)
        for r in checks:
            if r.skipped:
                print(f"check skipped: {r.label}: {r.skipped}", file=sys.stderr)
                continue
            if r.error:
                print(f"check FAILED: {r.label}: the plan cannot be evaluated: {r.error}", file=sys.stderr)
                failures += 1
                continue
            status = "ok" if r.ok else "MISMATCH"
            print(
                f"check {status}: {r.label}: max relative error {r.max_rel_error:.2e} (tolerance {r.tolerance:.2e})",
                file=sys.stderr,
            )
            failures += not r.ok
        return 1 if failures else 0
    _say_stops(result)
    return 0


def _write(text: str, output: str | None) -> None:
    """``text`` on stdout, or into ``output`` (written whole or not at all)."""
    if output is None:
        print(text)
        return
    from pathlib import Path

    from egg_dispatch.util.files import atomic_write

    Path(output).parent.mkdir(parents=True, exist_ok=True)
    with atomic_write(Path(output)) as f:
        f.write(text + "\n")


def _say_stops(result: Exploration) -> None:
    """Each stage that reached its budget, on stderr (saturation has its own line above)."""
    for stop in result.stops:
        if stop.stage != "saturation":
            print(f"egg-dispatch: {stop.message()}", file=sys.stderr)
