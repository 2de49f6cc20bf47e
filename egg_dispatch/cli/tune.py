"""``egg-dispatch tune [FILE]``: measure the model's best candidate plans and IREE's own, keep the fastest.

The measuring is ``measure.tune`` (its docstring says what is measured and how the winner is chosen).
Prints predicted versus measured for every candidate with the 95% interval of its differing dispatches
against IREE's plan, the verdict (ours is faster by X%, IREE's plan is within eps of the best plan
measured, or cannot tell within this budget: why), the ranking quality (Kendall's tau, top-1 and top-5
regret); ``-o FILE`` writes the plan chosen (``--emit iree`` form, which
``iree-compile --compile-from=dispatch-creation`` compiles; IREE's own dispatch-creation output when
IREE's plan is kept). Measured dispatch times go to the measurement cache (``--cache``, ``--no-cache``).
Exit codes: 0 ok, 2 bad input (IREE not installed, bad flags, a corrupt cache).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from egg_dispatch.cli.args import (
    InputError,
    add_budget_arguments,
    add_cost_arguments,
    add_extractor_arguments,
    add_input_arguments,
    add_jobs_argument,
    explore_options,
    input_source,
    load_target_arg,
    output_file,
    parameters_from_args,
    positive_float,
    positive_int,
    require_iree,
)
from egg_dispatch.cli.cache import add_cache_arguments, measurement_cache
from egg_dispatch.cli.progress import ProgressBar
from egg_dispatch.cost import CacheError

__all__ = ["register", "render", "report_json", "run"]


def register(sub: argparse._SubParsersAction) -> None:
    from egg_dispatch.iree.tools import DEFAULT_MIN_TIME
    from egg_dispatch.measure.tune import DEFAULT_REPEATS, DEFAULT_TARGET_WIDTH, DEFAULT_TOP_K

    p = sub.add_parser(
        "tune",
        help="measure the best candidate plans and IREE's own on this CPU; answer with a verdict",
        description="Explore FILE, compile the model's k best plans distinct in priced decisions, every frontier "
        "plan and IREE's own plan with iree-compile, check their numbers against the NumPy evaluator, time the "
        "dispatches each plan does not share with IREE's (host-execution profiles) and the whole calls, paired and "
        "interleaved, until a 95% interval is narrow enough or the budget ends, and answer: ours is faster by X%, "
        "IREE's plan is within eps of the best measured, or cannot tell; measured dispatch times are cached for "
        "later explorations.",
    )
    p.add_argument(
        "file", nargs="?", metavar="FILE|-", help="MLIR input; '-' reads stdin; default: the built-in example"
    )
    add_budget_arguments(p)
    add_input_arguments(p)
    add_cost_arguments(p)
    add_extractor_arguments(p)
    p.add_argument(
        "--top-k",
        type=positive_int,
        default=DEFAULT_TOP_K,
        metavar="K",
        help=f"the model's K best distinct plans are candidates (default {DEFAULT_TOP_K})",
    )
    p.add_argument(
        "--max-candidates",
        type=positive_int,
        default=16,
        metavar="N",
        help="at most N candidates measured, IREE's own plan included (default 16)",
    )
    p.add_argument(
        "--repeats",
        type=positive_int,
        default=DEFAULT_REPEATS,
        metavar="N",
        help=f"at most N interleaved timing rounds (default {DEFAULT_REPEATS}); a plan stops being timed once "
        "its interval reaches --target-width",
    )
    p.add_argument(
        "--target-width",
        type=positive_float,
        default=DEFAULT_TARGET_WIDTH,
        metavar="F",
        help="stop timing a plan when the 95%% interval of its differing dispatches against IREE's plan is at most "
        f"F of IREE's call wide (default {DEFAULT_TARGET_WIDTH:g})",
    )
    p.add_argument(
        "--min-time",
        type=positive_float,
        default=DEFAULT_MIN_TIME,
        metavar="S",
        help=f"seconds per measurement of one candidate (default {DEFAULT_MIN_TIME:g})",
    )
    p.add_argument(
        "--measure-seconds",
        type=positive_float,
        metavar="S",
        help="stop starting timing rounds after S seconds in all (default: no limit; at least one round runs)",
    )
    add_jobs_argument(p, "candidates")
    add_cache_arguments(p)
    p.add_argument(
        "--emit",
        choices=("text", "json", "iree"),
        default="text",
        help="print the text report (default), a JSON report (one object per candidate), or the winner's module",
    )
    p.add_argument("-o", "--output", type=output_file, metavar="FILE", help="write the winner's module to FILE")
    p.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    from egg_dispatch.cli.run import evaluation_input_error
    from egg_dispatch.evaluate import EvaluationError
    from egg_dispatch.iree.tools import IreeError
    from egg_dispatch.measure.tune import tune

    require_iree("tune", ("iree-compile", "iree-benchmark-module", "iree-profile"))
    target = load_target_arg(args.target_file or args.target)
    given = input_source(args.file)
    if isinstance(given, Path):
        source: str | Path = given
    else:
        from egg_dispatch.mlir.printer import print_mlir

        source = print_mlir(given)
    cache = measurement_cache(args, target)
    parameters = parameters_from_args(args, given)
    bar = ProgressBar("tune")
    try:
        report = tune(
            source,
            target,
            top_k=args.top_k,
            max_candidates=args.max_candidates,
            repeats=args.repeats,
            min_time=args.min_time,
            jobs=args.jobs,
            max_seconds=args.measure_seconds,
            target_width=args.target_width,
            measured=cache,
            parameters=parameters,
            explore_options={**explore_options(args), "lam": args.lam},
            progress=bar,
        )
    except CacheError as e:
        raise InputError(str(e)) from None
    except IreeError as e:
        from egg_dispatch.iree.dispatch_creation import first_error_line

        detail = f": {first_error_line(e.stderr)}" if e.stderr else ""
        raise InputError(f"{args.file or 'input'}: {str(e).splitlines()[0]}{detail}") from None
    except EvaluationError as e:  # a parameter the files given cannot provide (wrong scope, key or size)
        raise evaluation_input_error(e, args.file or "input") from None
    finally:
        bar.close()
    for w in parameters.warnings:
        print(w, file=sys.stderr)
    winner_text = _winner_text(report)
    if args.output and winner_text is not None:
        from egg_dispatch.util.files import atomic_write

        with atomic_write(Path(args.output)) as f:
            f.write(winner_text)
    if args.emit == "json":
        print(json.dumps(report_json(report), indent=2))
    elif args.emit == "iree":
        if winner_text is None:
            raise InputError("error: no candidate compiled, ran and matched the input's numbers")
        print(winner_text.rstrip())
    else:
        print(render(report, cache_path=str(cache.path) if cache is not None and cache.path else None))
    return 0


def _winner_text(report) -> str | None:
    w = report.winner
    if w is None:
        return None
    if w.is_iree:
        ex = report.exploration
        if ex is not None and ex.input is not None and ex.input.iree_plan:
            return ex.input.iree_plan
        return None
    return w.text


def _us(x: float | None) -> str:
    return "-" if x is None else f"{x * 1e6:.2f}"


def _interval(iv) -> dict | None:
    return None if iv is None else iv.to_json()


def _plan_json(report, c) -> dict:
    iree = None if c.is_iree else c.unshared
    return {
        "label": c.label,
        "predicted_us": None if c.predicted_seconds is None else c.predicted_seconds * 1e6,
        "measured_us": None if c.median is None else c.median * 1e6,
        "is_iree": c.is_iree,
        "chosen": c.chosen,
        "max_rel_error": c.max_rel_error,
        "error": c.error,
        "same_module_as": c.also,
        "priced_like": c.merged,
        "rounds_us": [t * 1e6 for t in c.measured],
        "differential": None
        if c.is_iree or not c.diffs
        else {
            "matched_by": c.matched_by,
            "interval": _interval(c.interval),
            "rounds": c.diffs,
            "ended": c.ended,
            "ours_only": iree.describe("ours") if iree is not None else None,
            "iree_only": iree.describe("theirs") if iree is not None else None,
            "shared_per_call": iree.shared if iree is not None else None,
        },
        "whole_call_interval": None if c.is_iree else _interval(report.call_interval(c)),
    }


def report_json(report) -> dict:
    """One object per candidate (label, predicted_us, measured_us, is_iree, chosen, the differential
    interval and the dispatches behind it), the verdict, the stopping rule and the ranking quality."""
    v = report.verdict
    rule = report.rule
    return {
        "function": report.function,
        "target": report.target,
        "repeats": report.repeats,
        "timed": report.ran,
        "reason": report.reason or None,
        "plans": [_plan_json(report, c) for c in report.candidates],
        "verdict": None
        if v is None
        else {"kind": v.kind, "text": v.text, "plan": _label(report, v.plan), "epsilon": v.epsilon},
        "stopping": {
            "target_width": rule.target_width,
            "min_rounds": rule.min_rounds,
            "max_rounds": rule.max_rounds,
            "max_seconds": rule.max_seconds,
            "ended": report.ended or None,
        },
        "ranking": {
            "kendall_tau": report.kendall_tau,
            "top1_regret": report.regret(1),
            "top5_regret": report.regret(5),
        },
        "extracted": report.extracted,
        "speedup_vs_iree": report.speedup,
        "cache_records": report.cache_records,
        "stopped_early": report.stopped or None,
        "notes": report.notes,
    }


def _label(report, plan: int | None) -> str | None:
    """The label of the verdict's plan (an index into the plans timed, IREE's first)."""
    if plan is None:
        return None
    timed = [c for c in report.candidates if c.vmfb is not None and c.error is None]
    return timed[plan].label if plan < len(timed) else None


def _few(names: list[str]) -> str:
    """At most four executables' names (``none`` for none)."""
    return (", ".join(names[:4]) + (f" and {len(names) - 4} more" if len(names) > 4 else "")) or "none"


def _pct(x: float | None) -> str:
    return "-" if x is None else f"{x:.1%}"


def render(report, cache_path: str | None = None) -> str:
    from egg_dispatch.util.table import table_lines

    head = ("plan", "predicted us", "measured us (median)", "vs IREE", "differing dispatches (95%)", "max rel err", "")
    iree = report.iree
    rows = []
    for c in report.candidates:
        ratio = c.median / iree.median if iree is not None and c.median and iree.median else None
        iv = None if c.is_iree else c.interval
        rows.append(
            (
                c.label + (f" (= {', '.join(c.also)})" if c.also else ""),
                _us(c.predicted_seconds),
                _us(c.median) if c.error is None else "excluded",
                "-" if ratio is None else f"{ratio:.2f}",
                "-" if iv is None else iv.text() + (" (whole call)" if c.matched_by == "whole call" else ""),
                "-" if c.max_rel_error is None else f"{c.max_rel_error:.1e}",
                "<- chosen" if c.chosen else (c.error or ""),
            )
        )
    rule = report.rule
    lines = [f"@{report.function} on {report.target}: {len(report.candidates)} candidates, at most {rule.max_rounds} "
             f"interleaved rounds until a {rule.target_width:.1%}-wide interval (iree-benchmark-module and "
             "host-execution profiles, local-sync, 1 thread)"]  # fmt: skip
    lines += table_lines(head, rows, left=1)
    if not report.ran:
        lines.append(f"not timed: {report.reason}")
    if report.verdict is not None:
        lines.append(f"verdict: {report.verdict.text}")
    w = report.winner
    if w is not None and not w.is_iree and report.speedup is not None:
        lines.append(f"chosen: {w.label}, whole call {report.speedup:.2f}x IREE's own plan's speed")
    elif w is not None and not w.is_iree:
        lines.append(f"chosen: {w.label} (IREE's own plan not measured)")
    elif w is not None:
        lines.append("chosen: IREE's own plan")
    for c in report.candidates:
        if c.unshared is not None and c.diffs:
            ours, theirs = c.unshared.describe("ours"), c.unshared.describe("theirs")
            lines.append(f"  {c.label}: {_few(ours)} against IREE's {_few(theirs)} ({c.unshared.shared} "
                         f"execution(s) per call shared); {c.ended}")  # fmt: skip
    if report.ran and report.verdict is not None:
        tau = report.kendall_tau
        lines.append(f"ranking: Kendall tau {'n/a' if tau is None else f'{tau:+.2f}'}, top-1 regret "
                     f"{_pct(report.regret(1))}, top-5 regret {_pct(report.regret(5))} (predicted vs measured "
                     "whole calls)")  # fmt: skip
    merged = sum(len(c.merged) for c in report.candidates)
    if merged:
        lines.append(f"{merged} plan(s) the model prices identically to a candidate were not measured again")
    if report.stopped:
        lines.append(f"stopped early: {report.stopped}")
    if report.cache_records:
        lines.append(f"measurement cache: {report.cache_records} node times recorded ({cache_path or 'in memory'})")
    lines += [f"note: {n}" for n in report.notes]
    return "\n".join(lines)
