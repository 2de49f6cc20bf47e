"""``egg-dispatch tune [FILE]``: measure the model's best candidate plans and IREE's own, keep the fastest.

The measuring is ``measure.tune`` (its docstring says what is measured and how the winner is chosen).
Prints predicted versus measured for every candidate, the winner and its speedup over IREE's own plan
(1.00 when nothing beats it, said plainly); ``-o FILE`` writes the winner (``--emit iree`` form, which
``iree-compile --compile-from=dispatch-creation`` compiles; IREE's own dispatch-creation output when
IREE's plan wins). Measured dispatch times go to the measurement cache (``--cache``, ``--no-cache``).
Exit codes: 0 ok, 2 bad input (IREE not installed, bad flags, a corrupt cache).
"""

from __future__ import annotations

import argparse
import json
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
    from egg_dispatch.measure.tune import DEFAULT_REPEATS, DEFAULT_TOP_K

    p = sub.add_parser(
        "tune",
        help="measure the best candidate plans and IREE's own on this CPU; keep the fastest",
        description="Explore FILE, compile the model's k best distinct plans, every frontier plan and IREE's own "
        "plan with iree-compile, check their numbers against the NumPy evaluator, time them interleaved with "
        "iree-benchmark-module and choose the fastest; measured dispatch times are cached for later explorations.",
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
        help=f"interleaved timing rounds (default {DEFAULT_REPEATS})",
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
            measured=cache,
            parameters=parameters_from_args(args),
            explore_options={**explore_options(args), "lam": args.lam},
            progress=bar,
        )
    except CacheError as e:
        raise InputError(str(e)) from None
    except IreeError as e:
        from egg_dispatch.iree.dispatch_creation import first_error_line

        detail = f": {first_error_line(e.stderr)}" if e.stderr else ""
        raise InputError(f"{args.file or 'input'}: {str(e).splitlines()[0]}{detail}") from None
    finally:
        bar.close()
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


def report_json(report) -> dict:
    """One object per candidate: label, predicted_us, measured_us, is_iree, chosen (and why excluded)."""
    return {
        "function": report.function,
        "target": report.target,
        "repeats": report.repeats,
        "timed": report.ran,
        "reason": report.reason or None,
        "plans": [
            {
                "label": c.label,
                "predicted_us": None if c.predicted_seconds is None else c.predicted_seconds * 1e6,
                "measured_us": None if c.median is None else c.median * 1e6,
                "is_iree": c.is_iree,
                "chosen": c.chosen,
                "max_rel_error": c.max_rel_error,
                "error": c.error,
                "same_module_as": c.also,
                "rounds_us": [t * 1e6 for t in c.measured],
            }
            for c in report.candidates
        ],
        "speedup_vs_iree": report.speedup,
        "cache_records": report.cache_records,
        "stopped_early": report.stopped or None,
        "notes": report.notes,
    }


def render(report, cache_path: str | None = None) -> str:
    from egg_dispatch.util.table import table_lines

    head = ("plan", "predicted us", "measured us (median)", "vs IREE", "max rel err", "")
    iree = report.iree
    rows = []
    for c in report.candidates:
        ratio = c.median / iree.median if iree is not None and c.median and iree.median else None
        rows.append(
            (
                c.label + (f" (= {', '.join(c.also)})" if c.also else ""),
                _us(c.predicted_seconds),
                _us(c.median) if c.error is None else "excluded",
                "-" if ratio is None else f"{ratio:.2f}",
                "-" if c.max_rel_error is None else f"{c.max_rel_error:.1e}",
                "<- chosen" if c.chosen else (c.error or ""),
            )
        )
    lines = [f"@{report.function} on {report.target}: {len(report.candidates)} candidates, {report.repeats} "
             "interleaved rounds (iree-benchmark-module, local-sync, 1 thread)"]  # fmt: skip
    lines += table_lines(head, rows, left=1)
    if not report.ran:
        lines.append(f"not timed: {report.reason}")
    w = report.winner
    if w is not None and w.is_iree:
        lines.append("IREE's own plan is the fastest measured: nothing beat it (speedup 1.00)")
    elif w is not None and report.speedup is not None:
        lines.append(f"chosen: {w.label}, {report.speedup:.2f}x IREE's own plan's speed")
    elif w is not None:
        lines.append(f"chosen: {w.label} (IREE's own plan not measured)")
    if report.stopped:
        lines.append(f"stopped early: {report.stopped}")
    if report.cache_records:
        lines.append(f"measurement cache: {report.cache_records} node times recorded ({cache_path or 'in memory'})")
    lines += [f"note: {n}" for n in report.notes]
    return "\n".join(lines)
