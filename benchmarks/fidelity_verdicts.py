"""``bench_fidelity.py --verdicts``: a recommendation you can trust, shown on programs at realistic sizes (issue 52).

Per program (a GPT-2 block, a BERT block, the Llama fixture, a 512 -> 2048 MLP, Q/K/V of a [2304, 768]
weight -- GPT-2's ``c_attn`` shape --, a SwiGLU whose gate and up projections are two halves of one
[2000, 512] weight) it reports:

* **explore's recommendation**, as ``egg-dispatch explore --measure`` makes it on this machine (the model's
  best plan, compile-checked, measured against IREE's own plan by ``measure.recommend`` when the model
  prefers it; IREE's own plan otherwise), for this CPU's built-in profile and, when one is given
  (``--profile FILE``) or ``egg-dispatch calibrate`` has written one for this CPU, a calibrated profile;
  and the recommended plan's **measured ratio to IREE's plan**: both compiled, checked against the NumPy
  evaluator and timed whole-call, interleaved, in a fresh measurement (``stats.sample_paired``), with the
  95% interval of the ratio (``stats.paired_interval`` of the relative differences). A recommendation of
  IREE's own plan is IREE's module: its ratio is 1 by construction and is not timed;
* **tune's verdict** (``measure.tune``: faster by X% / IREE's plan within eps / cannot tell) with the 95%
  interval behind it (the differing dispatches of the verdict's plan against IREE's, over IREE's call),
  Kendall's tau and the top-1 regret of the model's order over the plans timed;
* whether **a second tune run**, started right after the first, gives the same kind of verdict;
* the machine (CPU model, ISA), IREE's version and the date;

and the goals of issue 52's "Done when": the recommendation measures at most 1.02x IREE's plan on every
program with both profiles, and the two tune runs agree on at least five of six programs.

Each exploration and tune run prices by the model alone (no measurement cache), so that the second tune
run is not steered by what the first recorded; explore's recommendation cache (``measure.recommend``) is
a fresh one for the run (``--reuse-measurements`` keeps the user's), so every recommendation is measured
now. The tune runs use the calibrated profile when there is one, else the built-in one.

The budget (defaults: tune's top-3 plans, at most 5 rounds of 0.05 s measurements, no tune round
started after 60 s of its run, explore's own measurement budget of 6 rounds / 15 s, 15 s to time a
recommended plan of ours against IREE's) keeps the whole run near 15 minutes on a quiet 2-core machine
(about 2.5 minutes a program, most of it compiling); run it on a quiet one. ``--write-doc`` writes
the table into ``docs/measurements.md`` (the log: the one page that records dated runs; or the page it
names) between the ``fidelity-verdicts`` comments; ``--json`` (default
``benchmarks/results/fidelity-verdicts-<cpu>.json``) keeps every number; ``--from-json FILE`` renders
a saved run again without timing anything.

Run: ``python benchmarks/bench_fidelity.py --verdicts [--profile FILE] [--write-doc]``.
"""

from __future__ import annotations

import argparse
import contextlib
import datetime
import json
import os
import statistics
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).parent))

from bench_vs_iree import MT, _acc, _func, _t, _weights

from egg_dispatch.cost.measured import MeasuredTimes, measurement_context
from egg_dispatch.measure.stats import StopRule, paired_interval, sample_paired
from egg_dispatch.measure.tune import TuneCandidate, TuneReport, tune
from egg_dispatch.result.exploration import Exploration
from egg_dispatch.target.host import cache_dir, calibrated_profile_path, host_cpu, host_isa_target
from egg_dispatch.target.profile import Target, load_target

ROOT = Path(__file__).resolve().parent.parent
PROGRAMS = (
    "model:gpt2_block",
    "model:bert_block",
    "model:llama_block",
    "mlp_512_2048",
    "qkv_const_64x768",
    "swiglu_2000x512",
)
"""Issue 52's programs (``bench_fidelity``'s names; the SwiGLU is generated here)."""
BEGIN, END = "<!-- fidelity-verdicts:begin -->", "<!-- fidelity-verdicts:end -->"
DOC = ROOT / "docs" / "measurements.md"
"""Where ``--write-doc`` writes by default: the log page, the one page that records dated runs."""
RATIO_GOAL = 1.02
AGREE_GOAL = 5
"""Of six programs: the two tune runs give the same verdict on at least this many."""
TARGET_WIDTH = 0.02
INTRO = (
    "## Verdicts: explore's recommendation and tune's answer, measured (issue 52)\n\n"
    "Written by `python benchmarks/bench_fidelity.py --verdicts --write-doc` "
    "(`benchmarks/fidelity_verdicts.py` says what each column is); the part between the two "
    "`fidelity-verdicts` comments is the last run's output, not edited by hand.\n"
)


# ------------------------------------------------------------------------------------ the SwiGLU program


def swiglu(tokens: int = 64, d: int = 512, fused: int = 2000) -> str:
    """``(silu(x @ gate^T) * (x @ up^T)) @ down^T`` with gate and up the two row halves of one constant
    [fused, d] weight (a checkpoint's fused ``gate_up_proj``) and a constant [d, fused / 2] down weight,
    every matmul with a transposed RHS as torch's ``F.linear`` exports it."""
    f = fused // 2
    w, down = _weights((fused, d), 21), _weights((d, f), 22)
    body = (
        f'  %w = arith.constant dense<"0x{w.astype("<f4").tobytes().hex().upper()}"> : {_t(fused, d)}\n'
        f'  %down = arith.constant dense<"0x{down.astype("<f4").tobytes().hex().upper()}"> : {_t(d, f)}\n'
        "  %zero = arith.constant 0.0 : f32\n  %one = arith.constant 1.0 : f32\n"
    )
    body += _acc("h", tokens, f)
    for i, name in enumerate(("gate", "up")):
        body += f"  %w_{name} = tensor.extract_slice %w[{i * f}, 0] [{f}, {d}] [1, 1] : {_t(fused, d)} to {_t(f, d)}\n"
        body += (
            f"  %{name} = linalg.matmul {MT} ins(%x, %w_{name} : {_t(tokens, d)}, {_t(f, d)}) "
            f"outs(%acc_h : {_t(tokens, f)}) -> {_t(tokens, f)}\n"
        )
    maps = "[affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, d1)>]"
    body += (
        f'  %h = linalg.generic {{indexing_maps = {maps}, iterator_types = ["parallel", "parallel"]}} '
        f"ins(%gate, %up : {_t(tokens, f)}, {_t(tokens, f)}) outs(%e_h : {_t(tokens, f)}) {{\n"
        "  ^bb0(%g: f32, %u: f32, %o: f32):\n"
        "    %n = arith.negf %g : f32\n    %x1 = math.exp %n : f32\n    %x2 = arith.addf %x1, %one : f32\n"
        "    %s = arith.divf %g, %x2 : f32\n    %y = arith.mulf %s, %u : f32\n    linalg.yield %y : f32\n"
        f"  }} -> {_t(tokens, f)}\n"
    )
    body += _acc("y", tokens, d)
    body += (
        f"  %y = linalg.matmul {MT} ins(%h, %down : {_t(tokens, f)}, {_t(d, f)}) "
        f"outs(%acc_y : {_t(tokens, d)}) -> {_t(tokens, d)}\n"
    )
    return _func("swiglu", f"%x: {_t(tokens, d)}", ["%y"], [_t(tokens, d)], body)


def programs() -> dict[str, str | Path]:
    """Every program ``--verdicts`` may run: ``bench_fidelity``'s and the SwiGLU."""
    from bench_fidelity import all_programs

    return {**all_programs(), "swiglu_2000x512": swiglu()}


# ------------------------------------------------------------------------------------ profiles


@dataclass(frozen=True)
class Profile:
    label: str
    """``built-in`` or ``calibrated``."""
    spec: str
    """The built-in target's name or the profile file."""
    flags: tuple[str, ...]
    """``explore``'s flags that select it (and measure: a named target measures when asked)."""
    target: Target


def profiles_of(given: str | None) -> tuple[list[Profile], str]:
    """This CPU's built-in profile and the calibrated one (``given``, else this CPU's from ``calibrate``),
    and a note when there is no calibrated profile."""
    builtin, _ = host_isa_target()
    if builtin is None:
        raise SystemExit("error: this CPU has no built-in profile (x86-64 with AVX2, or AArch64, is needed)")
    out = [Profile("built-in", builtin, ("--target", builtin, "--measure"), load_target(builtin))]
    path = Path(given) if given else calibrated_profile_path()
    if path.is_file():
        out.append(Profile("calibrated", str(path), ("--target-file", str(path), "--measure"), load_target(path)))
        return out, ""
    if given:
        raise SystemExit(f"error: --profile {given}: no such file")
    return out, (f"no calibrated profile for this CPU ({path}): run `egg-dispatch calibrate --quick` first, or "
                 "pass --profile FILE")  # fmt: skip


@contextlib.contextmanager
def fresh_recommend_cache(keep: bool) -> Iterator[None]:
    """A fresh cache directory for explore's measured recommendations (the module docstring), sharing the
    user's compile-check cache (what IREE rejects does not depend on the machine's load)."""
    if keep:
        yield
        return
    real = cache_dir()
    old = os.environ.get("EGG_DISPATCH_CACHE_DIR")
    with tempfile.TemporaryDirectory(prefix="fidelity_verdicts_cache_") as tmp:
        with contextlib.suppress(OSError):
            (real / "compile-check").mkdir(parents=True, exist_ok=True)
            os.symlink(real / "compile-check", Path(tmp) / "compile-check")
        os.environ["EGG_DISPATCH_CACHE_DIR"] = tmp
        try:
            yield
        finally:
            if old is None:
                os.environ.pop("EGG_DISPATCH_CACHE_DIR", None)
            else:
                os.environ["EGG_DISPATCH_CACHE_DIR"] = old


# ------------------------------------------------------------------------------------ explore's recommendation


def explore_recommendation(
    path: Path, profile: Profile, args: argparse.Namespace, say: Callable[[str], None]
) -> tuple[Exploration, str, dict]:
    """``egg-dispatch explore FILE <profile flags> --no-cache``, in this process, up to its recommendation:
    the exploration, the recommended plan as ``--emit iree`` writes it, and the decision's JSON."""
    from egg_dispatch.cli import build_parser
    from egg_dispatch.cli import explore as cli_explore
    from egg_dispatch.cli.args import budget_from_args, input_source, parameters_from_args, parse_families
    from egg_dispatch.pipeline import explore

    budget = f"rounds={args.measure_rounds},seconds={args.measure_seconds:g}"
    cli = build_parser().parse_args(["explore", str(path), *profile.flags, "--no-cache", "--measure-budget", budget])
    source = input_source(cli.file)
    parameters = parameters_from_args(cli, source)
    result = explore(
        source, profile.target, families=parse_families(cli.rules), budget=budget_from_args(cli), lam=cli.lam,
        extractor=cli.extractor, time_limit=cli.time_limit, function=cli.function, pareto=cli.pareto,
        progress=None, start=cli.start, measured=None, assume=cli.assume, compile_check=None,
    )  # fmt: skip
    cli_explore.use_iree_baseline(result, result.module, cli, None)
    cli_explore.recommend(result, cli, None, parameters, say)
    text = cli_explore.emitted_iree(result)
    decision = result.decision.to_json() if result.decision is not None else {}
    if result.compile_check is not None:
        decision["compile_check"] = result.compile_check.to_json()
    return result, text, decision


def _entry(ex: Exploration) -> str:
    from egg_dispatch.emit.iree.abi import abi_shell
    from egg_dispatch.mlir.ops import sym_name

    shell = abi_shell(ex.module, ex.imported.function)
    return sym_name(shell.wrappers[0]) if shell is not None and shell.wrappers else ex.imported.function


def measure_against_iree(
    path: Path, ex: Exploration, text: str, target: Target, rounds: int, min_time: float, seconds: float
) -> dict:
    """The recommended plan (``text``) against IREE's own plan compiled from the input with data tiling:
    both checked against the NumPy evaluator, then timed whole-call in interleaved rounds until the
    95% interval of (ours - IREE's) / IREE's is ``TARGET_WIDTH`` wide or clear of zero, or the budget ends."""
    from egg_dispatch.evaluate import evaluate, select_function
    from egg_dispatch.evaluate.check import function_inputs
    from egg_dispatch.iree.dispatch_creation import first_error_line, iree_compile_flags
    from egg_dispatch.iree.tools import IreeError, benchmark_module, compile_module
    from egg_dispatch.measure.recommend import measurement_sizes
    from egg_dispatch.measure.stand_in import runtime_parameters
    from egg_dispatch.measure.tune import check_numbers, tolerance_of
    from egg_dispatch.pipeline import for_iree

    data_tiling, cpu, others = iree_compile_flags(target)
    iree = TuneCandidate("IREE's own plan", True, None)
    ours = TuneCandidate("recommended", False, None, text=text)
    try:
        iree.vmfb = compile_module(for_iree(path), data_tiling=data_tiling, target_cpu=cpu, extra_flags=others)
        ours.vmfb = compile_module(
            text, data_tiling=False, target_cpu=cpu, extra_flags=others, compile_from="dispatch-creation"
        )
    except IreeError as e:
        return {"error": f"IREE rejected it: {first_error_line(e.stderr) if e.stderr else str(e).splitlines()[0]}"}
    entry = _entry(ex)
    env, _ = measurement_sizes(ex)
    inputs = function_inputs(select_function(ex.module, ex.imported.function), 0, env)
    reference = evaluate(ex.module, inputs, function=ex.imported.function)
    rule = StopRule(TARGET_WIDTH, min(3, rounds), rounds, seconds)
    with runtime_parameters(ex.module, None) as files, tempfile.TemporaryDirectory(prefix="verdicts_") as tmp:
        for tc in (iree, ours):
            check_numbers(tc, entry, inputs, reference, files, tolerance_of(ex))
            if tc.error is not None:
                return {"error": f"{tc.label}: {tc.error}"}
        paths = []
        for k, x in enumerate(inputs):
            paths.append(Path(tmp) / f"in{k}.npy")
            np.save(paths[-1], x)
        mods = []
        for k, tc in enumerate((iree, ours)):
            mods.append(Path(tmp) / f"m{k}.vmfb")
            mods[-1].write_bytes(tc.vmfb)  # type: ignore[arg-type]

        def sample(i: int) -> float:
            return benchmark_module(mods[i], entry, paths, min_time=min_time, parameters=files)

        sampling = sample_paired(sample, 1, rule)
    comp = sampling.comparisons[0]
    return ratio_record(sampling.samples[0], sampling.samples[1], comp.diffs, comp.ended)


def ratio_record(iree: list[float], ours: list[float], diffs: list[float], ended: str) -> dict:
    """The JSON of a whole-call comparison: the ratio (1 + the mean relative difference), its 95% interval,
    the median ratio and every round."""
    iv = paired_interval(diffs)
    return {
        "ratio": None if iv is None else 1 + iv.mean,
        "lo": None if iv is None else 1 + iv.lo,
        "hi": None if iv is None else 1 + iv.hi,
        "median_ratio": statistics.median(ours) / statistics.median(iree) if ours and iree else None,
        "rounds": len(diffs),
        "ended": ended,
        "iree_us": [t * 1e6 for t in iree],
        "ours_us": [t * 1e6 for t in ours],
    }


def recommendation(
    name: str, path: Path, profile: Profile, args: argparse.Namespace, log: Callable[[str], None]
) -> dict:
    """explore's recommendation under ``profile`` and its measured ratio to IREE's plan (module docstring)."""
    t0 = time.perf_counter()
    ex, text, decision = explore_recommendation(path, profile, args, lambda m: log(f"{profile.label}: {m}"))
    keep = ex.recommended is not ex.best and bool(ex.iree_plan_text)  # what --emit iree writes: IREE's own plan
    out: dict = {
        "profile": profile.label,
        "spec": profile.spec,
        "decision": decision,
        "plan": "IREE" if keep else "ours",
    }
    if keep:
        out["measured"] = {"ratio": 1.0, "lo": None, "hi": None, "identical": True}
    else:
        log(f"{profile.label}: ours is recommended; timing it against IREE's own plan")
        out["measured"] = measure_against_iree(
            path, ex, text, profile.target, args.rounds, args.min_time, args.confirm_seconds
        )
    out["seconds"] = time.perf_counter() - t0
    log(f"{profile.label}: {recommendation_cell(out)}, measured {ratio_cell(out)} ({out['seconds']:.0f} s)")
    return out


# ------------------------------------------------------------------------------------ tune


def tune_run(path: Path, target: Target, args: argparse.Namespace, log: Callable[[str], None]) -> dict:
    """One ``tune`` run (the model alone prices it: a fresh in-memory measurement cache) and its verdict."""
    t0 = time.perf_counter()

    def progress(message: str, done: int, total: int) -> None:
        if message.startswith("timing") or done == total:
            log(f"{message} {done}/{total}" if not message.startswith("timing") else message)

    report = tune(
        path,
        target,
        top_k=args.top_k,
        max_candidates=args.top_k + 1,
        repeats=args.rounds,
        min_time=args.min_time,
        jobs=args.jobs,
        max_seconds=args.tune_seconds,
        target_width=TARGET_WIDTH,
        measured=MeasuredTimes(measurement_context(target)),
        progress=progress,
    )
    out = tune_record(report)
    out["seconds"] = time.perf_counter() - t0
    return out


def tune_record(report: TuneReport) -> dict:
    """The verdict, the interval behind it (its plan's differing dispatches against IREE's, and the whole
    calls), Kendall's tau, top-1 and top-5 regret, and every plan's numbers."""
    timed = [c for c in report.candidates if c.vmfb is not None and c.error is None]
    v = report.verdict
    plan = timed[v.plan] if v is not None and v.plan is not None and v.plan < len(timed) else None
    iv = plan.interval if plan is not None else None
    call = report.call_interval(plan) if plan is not None else None
    return {
        "verdict": None if v is None else v.kind,
        "text": None if v is None else v.text,
        "epsilon": None if v is None else v.epsilon,
        "plan": None if plan is None else plan.label,
        "interval": None if iv is None else iv.to_json(),
        "call_interval": None if call is None else call.to_json(),
        "matched_by": None if plan is None else plan.matched_by,
        "kendall_tau": report.kendall_tau,
        "top1_regret": report.regret(1),
        "top5_regret": report.regret(5),
        "ended": report.ended,
        "reason": report.reason or None,
        "plans": [
            {
                "label": c.label,
                "is_iree": c.is_iree,
                "predicted_us": None if c.predicted_seconds is None else c.predicted_seconds * 1e6,
                "rounds_us": [t * 1e6 for t in c.measured],
                "diffs": list(c.diffs),
                "error": c.error,
                "chosen": c.chosen,
            }
            for c in report.candidates
        ],
        "notes": report.notes,
    }


# ------------------------------------------------------------------------------------ one program


def run_program(name: str, path: Path, profiles: list[Profile], args: argparse.Namespace, start: float) -> dict:
    def log(message: str) -> None:
        print(f"[{time.perf_counter() - start:6.0f} s] {name}: {message}", file=sys.stderr, flush=True)

    t0 = time.perf_counter()
    out: dict = {"program": name, "recommendations": [], "tune": []}
    for p in profiles:
        try:
            out["recommendations"].append(recommendation(name, path, p, args, log))
        except Exception as e:  # a program explore rejects is a result: listed, not fatal
            out["recommendations"].append({"profile": p.label, "spec": p.spec, "error": _first_line(e)})
            log(f"{p.label}: explore failed: {_first_line(e)}")
    tune_profile = profiles[-1]  # the calibrated one when there is one
    out["tune_profile"] = tune_profile.label
    for run in (1, 2):
        log(f"tune run {run} of 2 ({tune_profile.label} profile)")

        def tune_log(message: str, run: int = run) -> None:
            log(f"tune {run}: {message}")

        try:
            out["tune"].append(tune_run(path, tune_profile.target, args, tune_log))
        except Exception as e:
            out["tune"].append({"verdict": None, "error": _first_line(e)})
        t = out["tune"][-1]
        log(f"tune {run}: {t.get('text') or t.get('error')}")
    out["seconds"] = time.perf_counter() - t0
    return out


def _first_line(e: Exception) -> str:
    return str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__


# ------------------------------------------------------------------------------------ the table


def _pct(x: float | None) -> str:
    return "-" if x is None else f"{x:+.1%}"


def recommendation_cell(rec: dict | None) -> str:
    """``ours (measured faster)``, ``IREE (kept: within 1.2%)``, ``IREE (model: ours not faster)``, ..."""
    if rec is None:
        return "-"
    if "error" in rec:
        return f"error: {rec['error']}"[:60]
    d = rec.get("decision") or {}
    m = d.get("measurement")
    if m is not None:
        why = m.get("verdict", "?")
        if why == "faster":
            return "ours (measured faster)"
        return f"IREE (measured: {why})"
    if d.get("keep_iree", True):
        return "IREE (model)"
    return "ours (model only)"


def ratio_cell(rec: dict | None) -> str:
    """The measured ratio to IREE's plan with its 95% interval, ``1.00 (same)`` for IREE's own plan."""
    if rec is None or "error" in rec:
        return "-"
    m = rec.get("measured") or {}
    if m.get("identical"):
        return "1.00 (same)"
    if "error" in m:
        return f"not measured: {m['error']}"[:60]
    if m.get("ratio") is None:
        return "-"
    if m.get("lo") is None:
        return f"{m['ratio']:.3f}"
    return f"{m['ratio']:.3f} [{m['lo']:.3f}, {m['hi']:.3f}]"


def verdict_cell(t: dict | None) -> str:
    if t is None:
        return "-"
    if t.get("error"):
        return f"error: {t['error']}"[:60]
    kind = t.get("verdict")
    if kind is None:
        return "-"
    iv = t.get("interval")
    interval = f" {_pct(iv['mean'])} [{_pct(iv['lo'])}, {_pct(iv['hi'])}]" if iv else ""
    if kind == "within" and t.get("epsilon") is not None:
        return f"within {t['epsilon']:.1%}{interval}"
    return f"{kind}{interval}"


def agreement(runs: list[dict]) -> bool | None:
    """Two tune runs agree: both gave a verdict, of the same kind (None: fewer than two verdicts)."""
    kinds = [r.get("verdict") for r in runs]
    if len(kinds) < 2 or any(k is None for k in kinds[:2]):
        return None
    return kinds[0] == kinds[1]


def _rec(r: dict, label: str) -> dict | None:
    return next((x for x in r.get("recommendations", []) if x.get("profile") == label), None)


def _ok_ratio(rec: dict | None) -> bool | None:
    """The recommendation measures at most ``RATIO_GOAL`` x IREE's plan (None: not measured)."""
    if rec is None or "error" in rec:
        return None
    m = rec.get("measured") or {}
    ratio = m.get("ratio")
    return None if ratio is None else ratio <= RATIO_GOAL


def table(data: dict) -> list[str]:
    """The markdown table of a run (``data``: the JSON ``main`` writes)."""
    rows = ["| program | recommendation, built-in | measured / IREE (95%) | recommendation, calibrated | "
            "measured / IREE (95%) | tune verdict (95% interval) | Kendall τ | top-1 regret | 2nd tune run |",
            "|---|---|---|---|---|---|---|---|---|"]  # fmt: skip
    for r in data["results"]:
        runs = r.get("tune", [])
        first = runs[0] if runs else None
        tau = None if first is None else first.get("kendall_tau")
        reg = None if first is None else first.get("top1_regret")
        agree = agreement(runs)
        second = "-" if agree is None else ("agrees" if agree else f"differs: {verdict_cell(runs[1])}")
        if agree and len(runs) > 1:
            second += f" ({verdict_cell(runs[1])})"
        cal = _rec(r, "calibrated")
        cells = [
            r["program"],
            recommendation_cell(_rec(r, "built-in")),
            ratio_cell(_rec(r, "built-in")),
            recommendation_cell(cal) if cal is not None else "no profile",
            ratio_cell(cal),
            verdict_cell(first),
            "-" if tau is None else f"{tau:+.2f}",
            "-" if reg is None else f"{reg:.1%}",
            second,
        ]
        rows.append("| " + " | ".join(c.replace("|", "\\|") for c in cells) + " |")
    return rows


def goals(data: dict) -> list[str]:
    """One line per "Done when" criterion of issue 52 that this benchmark measures."""
    results = data["results"]
    lines = []
    for label in ("built-in", "calibrated"):
        recs = [(r["program"], _rec(r, label)) for r in results]
        if all(rec is None for _, rec in recs):
            why = data.get("calibrated_note") or "not run"
            lines.append(
                f"goal: recommendation <= {RATIO_GOAL:.2f}x IREE's plan, {label} profile: not measured ({why})"
            )
            continue
        ok = [p for p, rec in recs if _ok_ratio(rec)]
        bad = [f"{p} {ratio_cell(rec)}" for p, rec in recs if _ok_ratio(rec) is False]
        missing = [p for p, rec in recs if _ok_ratio(rec) is None]
        lines.append(f"goal: recommendation <= {RATIO_GOAL:.2f}x IREE's plan (mean ratio of interleaved whole calls), "
                     f"{label} profile: {len(ok)}/{len(recs)}"
                     f"{'; above: ' + ', '.join(bad) if bad else ''}"
                     f"{'; not measured: ' + ', '.join(missing) if missing else ''}")  # fmt: skip
    agreements = [(r["program"], agreement(r.get("tune", []))) for r in results]
    agree = sum(1 for _, a in agreements if a)
    need = AGREE_GOAL if len(results) == len(PROGRAMS) else -(-AGREE_GOAL * len(results) // len(PROGRAMS))
    differ = [p for p, a in agreements if a is False]
    none = [p for p, a in agreements if a is None]
    unsure = sum(1 for r in results if agreement(r.get("tune", [])) and r["tune"][0].get("verdict") == "cannot tell")
    with_iv = sum(1 for r in results for t in r.get("tune", [])[:2] if t.get("interval"))
    lines.append(f"goal: two back-to-back tune runs give the same verdict on >= {need} of {len(results)}: {agree}/"
                 f"{len(results)} ({'met' if agree >= need else 'not met'}; of them 'cannot tell' twice: {unsure})"
                 f"{'; differ: ' + ', '.join(differ) if differ else ''}"
                 f"{'; no verdict: ' + ', '.join(none) if none else ''}; verdicts with an interval: {with_iv}/"
                 f"{2 * len(results)}")  # fmt: skip
    return lines


def header(data: dict) -> str:
    s = data["settings"]
    cal = next((p["spec"] for p in data.get("profiles", []) if p["label"] == "calibrated"), None)
    uncal = (
        ""
        if all(p["calibrated"] for p in data.get("profiles", []) if p["label"] == "calibrated")
        else (" (holds no measured kernels: not calibrated)")
    )
    return (f"{data['cpu']} ({data['isa']}), {data['cores']} cores; IREE {data['iree_compiler']}; {data['date']}; "
            f"tune on the {data.get('tune_profile', '?')} profile: top-{s['top_k']}, at most {s['rounds']} rounds of "
            f"{s['min_time']:g} s, none started after {s['tune_seconds']:g} s of the run; explore's measurement: "
            f"rounds={s['measure_rounds']}, seconds={s['measure_seconds']:g}; "
            f"calibrated profile: {cal or 'none'}{uncal}")  # fmt: skip


def doc_block(data: dict) -> str:
    return "\n".join([f"Run: {header(data)}.", "", *table(data), "", *(f"- {g}" for g in goals(data))])


def write_doc(path: Path, block: str) -> None:
    """Replace the part of ``path`` between ``BEGIN`` and ``END`` by ``block`` (appended with ``INTRO`` when
    the page has no such part)."""
    text = path.read_text() if path.exists() else "# Calibration and cost-model fidelity\n"
    body = f"{BEGIN}\n{block}\n{END}"
    if BEGIN in text and END in text:
        head, rest = text.split(BEGIN, 1)
        _, tail = rest.split(END, 1)
        text = head + body + tail
    else:
        text = text.rstrip("\n") + "\n\n" + INTRO + "\n" + body + "\n"
    path.write_text(text)


def _slug(text: str) -> str:
    import re

    return re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-")[:60] or "cpu"


# ------------------------------------------------------------------------------------ main


def parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(prog="bench_fidelity.py --verdicts", description=__doc__.split("\n\n")[0])
    ap.add_argument("--programs", nargs="*", help=f"names (default: {' '.join(PROGRAMS)}); any of bench_fidelity's too")
    ap.add_argument("--profile", metavar="FILE", help="a calibrated profile (default: this CPU's, if calibrated)")
    ap.add_argument("--top-k", type=int, default=3, help="tune's k best distinct plans (default 3)")
    ap.add_argument("--rounds", type=int, default=5, help="most interleaved rounds per measurement (default 5)")
    ap.add_argument("--min-time", type=float, default=0.05, help="seconds per timed call (default 0.05)")
    ap.add_argument(
        "--tune-seconds", type=float, default=60.0,
        help="a tune run starts no timing round after this many seconds of the run, compiling included (default 60)",
    )  # fmt: skip
    ap.add_argument("--measure-rounds", type=int, default=6, help="explore's measurement rounds (default 6)")
    ap.add_argument("--measure-seconds", type=float, default=15.0, help="explore's measurement seconds (default 15)")
    ap.add_argument(
        "--confirm-seconds", type=float, default=15.0,
        help="seconds of timing a recommended plan of ours against IREE's (default 15)",
    )  # fmt: skip
    ap.add_argument("--jobs", type=int, default=2, help="compiles at a time (default 2)")
    ap.add_argument(
        "--reuse-measurements", action="store_true",
        help="let explore reuse the user's cached measured recommendations (default: measure every one now)",
    )  # fmt: skip
    ap.add_argument("--json", metavar="FILE", help="default benchmarks/results/fidelity-verdicts-<cpu>.json")
    ap.add_argument(
        "--write-doc", type=Path, nargs="?", const=DOC, metavar="MD",
        help=f"write the table into this page (default {DOC.relative_to(ROOT)}) between the markers",
    )  # fmt: skip
    ap.add_argument("--from-json", type=Path, metavar="FILE", help="render a saved run; time nothing")
    return ap


def main(argv: list[str] | None = None) -> int:
    args = parser().parse_args(argv)
    if args.from_json:
        data = json.loads(args.from_json.read_text())
        return _report(data, args.write_doc)
    known = programs()
    names = args.programs or list(PROGRAMS)
    if unknown := sorted(set(names) - set(known)):
        parser().error(f"unknown programs {unknown}; known: {sorted(known)}")
    profiles, note = profiles_of(args.profile)
    if note:
        print(f"note: {note}; only the built-in profile is measured", file=sys.stderr)
    cpu, flags = host_cpu()
    isa, isa_why = host_isa_target()
    try:
        iree = metadata.version("iree-base-compiler")
    except metadata.PackageNotFoundError:
        iree = "unknown"
    start = time.perf_counter()
    results = []
    with fresh_recommend_cache(args.reuse_measurements), tempfile.TemporaryDirectory(prefix="verdicts_") as tmp:
        from bench_fidelity import program_file

        for k, name in enumerate(names, 1):
            print(
                f"[{time.perf_counter() - start:6.0f} s] program {k}/{len(names)}: {name}", file=sys.stderr, flush=True
            )
            results.append(run_program(name, program_file(name, known[name], Path(tmp)), profiles, args, start))
    data = {
        "benchmark": "bench_fidelity --verdicts",
        "cpu": cpu,
        "isa": f"{isa}: {isa_why}",
        "avx512": "avx512f" in flags,
        "cores": os.cpu_count(),
        "iree_compiler": iree,
        "date": datetime.date.today().isoformat(),
        "profiles": [{"label": p.label, "spec": p.spec, "calibrated": p.target.kernels is not None} for p in profiles],
        "calibrated_note": note or None,
        "tune_profile": profiles[-1].label,
        "settings": {k: getattr(args, k) for k in ("top_k", "rounds", "min_time", "tune_seconds", "measure_rounds",
                                                   "measure_seconds", "confirm_seconds", "reuse_measurements")},
        "seconds": time.perf_counter() - start,
        "results": results,
    }  # fmt: skip
    out = Path(args.json) if args.json else ROOT / "benchmarks" / "results" / f"fidelity-verdicts-{_slug(cpu)}.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(data, indent=1) + "\n")
    print(f"wrote {out} ({data['seconds']:.0f} s in all)", file=sys.stderr)
    return _report(data, args.write_doc)


def _report(data: dict, doc: Path | None) -> int:
    print(header(data))
    print()
    print("\n".join(table(data)))
    print()
    print("\n".join(goals(data)))
    if doc is not None:
        write_doc(doc, doc_block(data))
        print(f"wrote the table into {doc}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
