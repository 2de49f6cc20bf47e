# ruff: noqa: E402  (imports follow the sys.path set-up for running from a checkout)
"""How does ``explore`` scale with program size? Generated transformer encoders of 1, 4, 16, 64 layers.

Each program comes from ``benchmarks/generate.py`` (pre-norm encoder layers: layer norms, Q/K/V as three
tile-aligned row slices of one fused [3d, d] weight constant feeding three matmuls, bias adds,
``iree_linalg_ext.attention``, output projection + residual, MLP with bias + tanh-GELU, residual).
Every size runs the pipeline ``explore`` runs, stage by stage, in a fresh child process (so one size's
e-graph cannot slow the next, and a size that runs over ``--size-timeout`` is stopped; the stage it
was in is reported):

* ``parse``    MLIR text -> IR;
* ``import``   IREE's data-tiling start state (``initial_plan``) + egglog terms (``import_function``);
* ``saturate`` every rule family under the budget (``--max-iterations/--max-enodes/--max-seconds``,
  default: explore's);
* ``costs``    serialize the e-graph, per-node cost table;
* ``greedy``   greedy DAG extraction; ``exact``  the ILP on HiGHS warm-started from greedy
  (``--time-limit`` per solve);
* ``plan``     plan graphs (dispatches, metrics) of the exact plan and of the modelled IREE baseline;
* ``emit``     their MLIR.

A failing step of the last two stages is noted under the table and the size still counts; a failure in
an earlier stage, or a timeout, stops the run there.

Columns: ``ops`` in the function body, ``lets`` imported, ``e-nodes`` after saturation and how it
stopped (``saturated`` or the budget that stopped it), seconds per stage, dispatches of our plan and of
the baseline, objective ratio ours/baseline (< 1: ours is better) and greedy/exact, the child's peak
RSS. Sizes run smallest first.

``--self-check`` instead checks, cheaply (a few seconds), that the numbers mean what they say: on 1-layer
programs of every generator variant, ``explore()`` gives the same objectives as the staged run and
``check()`` passes; ``explore()`` runs (no crash) on the generated 4- and 16-layer programs and on
every ``tests/fixtures/*.mlir`` on two targets (with ``check()`` on the fixtures). Exit code 1 on any
failure.

Run: ``python benchmarks/bench_explore.py [--layers 1 4 16 64] [--target x86_64-avx512] [--json FILE]``.
"""

from __future__ import annotations

import argparse
import json
import multiprocessing as mp
import queue
import resource
import sys
import time
import traceback
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(ROOT))  # run from a checkout without installing
sys.path.insert(0, str(HERE))

from generate import transformer

from egg_dispatch.cost.model import cost_table, default_lambda
from egg_dispatch.egraph.data import EGraphData, build_term
from egg_dispatch.egraph.importer import import_function
from egg_dispatch.egraph.rules import FAMILIES, Budget, saturate
from egg_dispatch.emit.choice import normalize_choice
from egg_dispatch.emit.emitter import Emitter
from egg_dispatch.extract import exact_ilp, greedy_dag, plan_contexts
from egg_dispatch.mlir.ir import Module
from egg_dispatch.mlir.parser import parse_mlir
from egg_dispatch.plan.baseline import iree_baseline_choice
from egg_dispatch.plan.graph import Plan, build_plan
from egg_dispatch.start.initial_plan import initial_plan
from egg_dispatch.target.profile import load_target
from egg_dispatch.util.table import table_lines

STAGES = ("parse", "import", "saturate", "costs", "greedy", "exact", "plan", "emit")


@dataclass
class Row:
    layers: int
    ops: int = 0
    text_mb: float = 0.0
    lets: int = 0
    enodes: int = 0
    eclasses: int = 0
    iterations: int = 0
    stop: str = ""
    seconds: dict[str, float] = field(default_factory=dict)
    dispatches: int = 0
    from_choice: bool = False
    """``dispatches`` and ``objective`` are the extractor's (Dispatch nodes needed at run time in the
    chosen term) because the plan graph could not be built; they agree whenever both exist."""
    baseline_dispatches: int | None = None
    objective: float = 0.0
    baseline_objective: float | None = None
    greedy_objective: float = 0.0
    exact_optimal: bool = False
    exact_gap: float | None = None
    rss_mb: float = 0.0
    notes: list[str] = field(default_factory=list)
    """Steps of the plan / emit stages that failed (the row's other numbers are still valid)."""
    error: str | None = None
    """Set when the run failed or timed out: the stage and the exception (or 'timeout')."""

    @property
    def total(self) -> float:
        return sum(self.seconds.values())


def _rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # Linux: KiB


def _spell(data: EGraphData, choice: dict[str, str]) -> dict[str, str]:
    return normalize_choice(data, choice, False)  # report and emit at the encoding level, as explore does


def _step(row: Row, what: str, fn: Callable[[], Any]) -> Any:
    """``fn()``, or None with a note in ``row.notes`` when it raises (BaselineError included)."""
    try:
        return fn()
    except Exception as e:
        row.notes.append(f"{what} failed: {short_traceback(e)}")
        return None


def run_size(
    layers: int,
    target: str,
    budget: Budget,
    lam: float,
    time_limit: float,
    options: dict[str, Any],
    report: Callable[[str], None],
) -> Row:
    """The staged pipeline on a ``layers``-deep program; ``report(stage)`` is called as each stage starts."""
    row = Row(layers)
    text, row.ops = transformer(layers, **options)
    row.text_mb = len(text) / 1e6
    tgt = load_target(target)
    lam = default_lambda(tgt) if lam is None else lam
    clock = time.perf_counter

    def stage(name: str) -> float:
        report(name)
        return clock()

    t = stage("parse")
    module = parse_mlir(text, f"transformer_{layers}.mlir")
    row.seconds["parse"] = clock() - t

    t = stage("import")
    imported = import_function(initial_plan(module))
    row.seconds["import"] = clock() - t
    row.lets = len(imported.lets)

    t = stage("saturate")
    graph, sat = saturate(imported, tgt, FAMILIES, budget)
    row.seconds["saturate"] = clock() - t
    row.enodes, row.eclasses, row.iterations, row.stop = sat.enodes, sat.eclasses, sat.iterations, sat.stop_reason

    t = stage("costs")
    data = EGraphData.from_serialized(graph.serialized())
    del graph
    costs = cost_table(data, imported, tgt)
    row.seconds["costs"] = clock() - t

    t = stage("greedy")
    greedy = greedy_dag(data, costs, lam)
    row.seconds["greedy"] = clock() - t
    row.greedy_objective = greedy.objective

    t = stage("exact")
    exact = exact_ilp(data, costs, lam, time_limit=time_limit, warm_start=greedy)
    row.seconds["exact"] = clock() - t
    row.exact_optimal, row.exact_gap = exact.optimal, exact.gap

    # The last two stages are run step by step: a failure in one step (a recursion limit in a term walk,
    # say) is noted in the row and the other steps still run, so every size reports what does work.
    t = stage("plan")
    # the extractor's own figures (its iterative walk over the choice), replaced by the plan graph's below
    row.objective = exact.objective
    run_nodes, _load_nodes = plan_contexts(data, exact.choice)
    row.dispatches = sum(1 for nid in run_nodes if data.nodes[nid].op == "Dispatch")
    row.from_choice = True

    def plan_graph(choice: dict[str, str]) -> Plan:
        return build_plan(data, _spell(data, choice), imported, tgt, lam)

    def mlir(choice: dict[str, str]) -> Module:
        return Emitter(imported).emit(build_term(data, _spell(data, choice)))  # type: ignore[arg-type]

    ours = _step(row, "plan graph of our plan", lambda: plan_graph(exact.choice))
    if ours is not None:
        row.dispatches, row.objective, row.from_choice = ours.metrics.dispatches, ours.metrics.objective, False
    # greedy's DAG objective may count a computation shared by two dispatches once; its plan graph
    # charges the recomputation, like ours and the baseline's
    greedy_plan = _step(row, "plan graph of the greedy plan", lambda: plan_graph(greedy.choice))
    if greedy_plan is not None:
        row.greedy_objective = greedy_plan.metrics.objective
    base_choice = _step(row, "IREE baseline choice", lambda: iree_baseline_choice(data))
    if base_choice is not None:
        base = _step(row, "plan graph of the baseline", lambda: plan_graph(base_choice))
        if base is not None:
            row.baseline_dispatches, row.baseline_objective = base.metrics.dispatches, base.metrics.objective
    row.seconds["plan"] = clock() - t

    t = stage("emit")
    _step(row, "MLIR of our plan", lambda: mlir(exact.choice))
    if base_choice is not None:
        _step(row, "MLIR of the baseline", lambda: mlir(base_choice))
    row.seconds["emit"] = clock() - t
    row.rss_mb = _rss_mb()
    return row


def short_traceback(e: BaseException, head: int = 5, tail: int = 2) -> str:
    """The outermost ``head`` and innermost ``tail`` frames (a RecursionError has ~1000)."""
    frames = traceback.extract_tb(e.__traceback__)
    shown = [*frames[:head], None, *frames[-tail:]] if len(frames) > head + tail else frames
    lines = [
        f"  {Path(f.filename).name}:{f.lineno} in {f.name}" if f else f"  ... ({len(frames) - head - tail} frames)"
        for f in shown
    ]
    return "\n".join([f"{type(e).__name__}: {str(e)[:300]}", *lines])


def _child(out: mp.Queue, args: tuple) -> None:
    stage = ["start"]

    def report(name: str) -> None:
        stage[0] = name
        out.put(("stage", name))

    try:
        out.put(("row", asdict(run_size(*args, report=report))))
    except BaseException as e:  # report any failure, with its stage, to the parent
        out.put(("error", f"in stage '{stage[0]}': {short_traceback(e)}"))


def run_isolated(args: tuple, timeout: float) -> Row:
    """``run_size`` in a spawned child; on failure or timeout the row says in which stage, with the
    seconds of the stages before it."""
    ctx = mp.get_context("spawn")
    out: mp.Queue = ctx.Queue()
    proc = ctx.Process(target=_child, args=(out, args), daemon=True)
    start = time.perf_counter()
    proc.start()
    stage, started = "start", start
    row: Row | None = None
    error: str | None = None
    durations: dict[str, float] = {}
    alive = True
    while row is None and error is None:
        try:
            kind, value = out.get(timeout=1.0)
        except queue.Empty:
            if not alive or time.perf_counter() - start >= timeout:
                break
            alive = proc.is_alive()  # one more read after the child exits: its last message may be in flight
            continue
        if kind == "stage":
            durations[stage] = time.perf_counter() - started
            stage, started = value, time.perf_counter()
        elif kind == "row":
            row = Row(**value)
        else:
            error = value
    if proc.is_alive() and row is None and error is None:
        proc.terminate()
    proc.join(10)
    if row is None:
        row = Row(args[0])
        text, row.ops = transformer(args[0], **args[5])
        row.text_mb = len(text) / 1e6
        row.seconds = {k: v for k, v in durations.items() if k in STAGES}
        row.seconds[stage] = time.perf_counter() - started
        elapsed = time.perf_counter() - start
        row.error = error or (
            f"timeout after {elapsed:.0f} s in stage '{stage}'"
            if elapsed >= timeout
            else f"child exited with code {proc.exitcode} in stage '{stage}'"
        )
    return row


def _fmt_s(v: float | None) -> str:
    return "-" if v is None else f"{v:.2f}"


def table(rows: list[Row]) -> str:
    header = ("layers", "ops", "MB", "lets", "e-nodes", "stop", *(f"{s} s" for s in STAGES), "total s")
    header += ("disp ours", "disp IREE", "obj ours/IREE", "greedy/exact", "RSS MB")
    lines = []
    for r in rows:
        ratio = f"{r.objective / r.baseline_objective:.3f}" if r.baseline_objective else "-"
        gratio = f"{r.greedy_objective / r.objective:.3f}" if r.objective else "-"
        stop = r.stop + ("" if not r.stop or r.stop == "saturated" else f" ({r.iterations} it)")
        lines.append(
            (
                str(r.layers),
                str(r.ops),
                f"{r.text_mb:.1f}",
                str(r.lets or "-"),
                str(r.enodes or "-"),
                stop or "-",
                *(_fmt_s(r.seconds.get(s)) for s in STAGES),
                _fmt_s(r.total),
                f"{r.dispatches}{'*' if r.from_choice else ''}" if r.dispatches else "-",
                str(r.baseline_dispatches or "-"),
                ratio,
                gratio,
                f"{r.rss_mb:.0f}" if r.rss_mb else "-",
            )
        )
    out = table_lines(header, lines, left=0)
    if any(r.from_choice for r in rows):
        out.append("* the extractor's count (run-time Dispatch nodes of the chosen term): no plan graph, see below")
    for r in rows:
        for problem in [*r.notes, *([r.error] if r.error else [])]:
            out.append(f"{r.layers} layer(s): {problem.rstrip()}")
    return "\n".join(out)


# --- self-check ------------------------------------------------------------------------------------

VARIANTS: tuple[dict[str, Any], ...] = (
    {},
    {"qkv": "fused"},
    {"gelu": "erf"},
    {"attention": "opaque"},
)


def self_check(target: str, lam: float | None) -> int:
    """explore() == the staged run on 1-layer programs (and check() passes); explore on every fixture."""
    from egg_dispatch import explore

    failures = 0
    budget = Budget()
    for opts in VARIANTS:
        text, _ = transformer(1, **opts)
        res = explore(text, target=target, lam=lam)
        row = run_size(1, target, budget, lam, 10.0, opts, lambda _s: None)
        same = abs(res.best.metrics.objective - row.objective) <= 1e-9 * row.objective and (
            res.baseline is None or res.baseline.metrics.dispatches == row.baseline_dispatches
        )
        checked = "n/a (opaque op)" if opts.get("attention") == "opaque" else all(c.ok for c in res.check())
        ok = same and checked is not False
        failures += not ok
        label = f"generated 1 layer {opts or 'default'}"
        print(f"{'ok ' if ok else 'BAD':5s} {label}: explore == staged: {same}, check: {checked}")
    for layers in (4, 16):  # the whole pipeline, as users call it, on deeper programs (a few seconds)
        start = time.perf_counter()
        try:
            res = explore(transformer(layers)[0], target=target, lam=lam)
            status, detail = "ok ", f"{res.stats['enodes']} e-nodes, {res.best.metrics.dispatches} dispatches"
        except Exception as e:
            failures += 1
            status, detail = "CRASH", short_traceback(e, head=3, tail=1).replace("\n", " |")
        print(f"{status:5s} explore() on generated {layers} layers {time.perf_counter() - start:5.2f} s  {detail}")
    for path in sorted((ROOT / "tests" / "fixtures").glob("*.mlir")):
        for tgt in (target, "x86_64-avx2") if target != "x86_64-avx2" else (target, "x86_64-avx512"):
            start = time.perf_counter()
            try:
                res = explore(path, target=tgt, lam=lam)
                checks = res.check()
                bad = [c.label for c in checks if not c.ok]
                status = "ok " if not bad else "BAD"
                failures += bool(bad)
                detail = f"{res.stats['enodes']} e-nodes, {res.best.metrics.dispatches} dispatches" + (
                    f", check failed for {bad}" if bad else ", check ok"
                )
            except Exception as e:
                failures += 1
                status = "CRASH"
                tb = traceback.extract_tb(e.__traceback__)[-1]
                detail = f"{type(e).__name__}: {e} (at {Path(tb.filename).name}:{tb.lineno} in {tb.name})"
            print(f"{status:5s} {path.name:30s} {tgt:14s} {time.perf_counter() - start:5.2f} s  {detail}")
    print(f"self-check: {failures} failure(s)")
    return 1 if failures else 0


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    p.add_argument("--layers", type=int, nargs="+", default=[1, 4, 16, 64])
    p.add_argument("--target", default="x86_64-avx512")
    p.add_argument("--lambda", dest="lam", type=float, default=None, help="default: the target's default_lambda")
    p.add_argument("--max-iterations", type=int, default=Budget.iterations)
    p.add_argument("--max-enodes", type=int, default=Budget.enodes)
    p.add_argument("--max-seconds", type=float, default=Budget.seconds)
    p.add_argument("--time-limit", type=float, default=10.0, help="ILP time limit (explore's default: 10)")
    p.add_argument("--size-timeout", type=float, default=600.0, help="wall seconds per size before it is stopped")
    p.add_argument("--d-model", type=int, default=64)
    p.add_argument("--seq", type=int, default=16)
    p.add_argument("--heads", type=int, default=2)
    p.add_argument("--ff", type=int, default=256)
    p.add_argument("--qkv", choices=("slices", "fused"), default="slices")
    p.add_argument("--attention", choices=("iree", "opaque"), default="iree")
    p.add_argument("--gelu", choices=("tanh", "erf"), default="tanh")
    p.add_argument("--json", type=Path, help="also write the rows as JSON")
    p.add_argument("--self-check", action="store_true", help="cheap correctness checks instead of the benchmark")
    a = p.parse_args(argv)
    if a.self_check:
        return self_check(a.target, a.lam)
    budget = Budget(a.max_iterations, a.max_enodes, a.max_seconds)
    options = dict(d_model=a.d_model, seq=a.seq, heads=a.heads, ff=a.ff, qkv=a.qkv, attention=a.attention, gelu=a.gelu)
    print(
        f"explore scale benchmark: target {a.target}, λ={a.lam:g}, budget {budget}, ILP time limit {a.time_limit:g} s"
        + f"\nprogram: {options}\n",
        flush=True,
    )
    rows: list[Row] = []
    for layers in sorted(a.layers):
        row = run_isolated((layers, a.target, budget, a.lam, a.time_limit, options), a.size_timeout)
        rows.append(row)
        print(f"  {layers} layer(s): {row.total:.1f} s" + (f"  [{row.error.splitlines()[0]}]" if row.error else ""))
        if row.notes:
            print("\n".join(f"    {n.splitlines()[0]}" for n in row.notes))
        if row.error:  # a crash before the plan stage, or a timeout
            skipped = [n for n in a.layers if n > layers]
            if skipped:
                print(f"  stopping: larger sizes {skipped} skipped")
            break
    print()
    print(table(rows))
    if a.json:
        a.json.write_text(json.dumps([asdict(r) for r in rows], indent=2))
    return 0 if all(not r.error for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
