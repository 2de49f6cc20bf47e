"""Memory per e-node: the e-node budget (``--budget enodes=N``) is what bounds explore's memory.

Each size runs in a fresh child process: generate a transformer of L layers (``generate.py``), parse
it, form IREE's start state and import it; then record the resident set (RSS) and run, under the given
budget, what ``explore`` runs after import: saturation, serialization of the e-graph
(``EGraphData``), the cost table, greedy and the exact ILP. The child reports the e-node count, its
RSS before saturating and its peak RSS after each stage (``getrusage`` high-water mark).

Bytes per e-node are the least-squares slope of (peak RSS - RSS before saturating) against e-nodes
over the sizes, for saturation alone and for the whole run: what one more e-node costs, with the
program's own IR (parsed constants) already paid for. With ``--enodes N`` the budget is N, and the
peaks show the cap holding on programs whose e-graph would grow past it.

Run: ``python benchmarks/bench_memory.py [--layers 1 2 4 8 16 32] [--enodes N] [--json FILE]``.
"""

from __future__ import annotations

import argparse
import json
import resource
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(HERE))


def _rss_now() -> int:
    """Current resident set in bytes (Linux /proc)."""
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * resource.getpagesize()


def _peak() -> int:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024  # KiB on Linux


def child(layers: int, enodes: int | None, target: str) -> dict:
    from generate import transformer

    from egg_dispatch.cost.model import cost_table, default_lambda
    from egg_dispatch.egraph.data import EGraphData
    from egg_dispatch.egraph.importer import import_function
    from egg_dispatch.egraph.rules import Budget, saturate
    from egg_dispatch.extract import exact_ilp, greedy_dag
    from egg_dispatch.mlir.parser import parse_mlir
    from egg_dispatch.start.initial_plan import initial_plan
    from egg_dispatch.target.profile import load_target
    from egg_dispatch.util.deep import allow_deep_recursion

    allow_deep_recursion()
    tgt = load_target(target)
    text, ops = transformer(layers)
    imported = import_function(initial_plan(parse_mlir(text, f"<{layers} layers>")))
    del text
    out: dict = {"layers": layers, "ops": ops, "lets": len(imported.lets), "rss_before": _rss_now()}
    budget = Budget(enodes=enodes) if enodes else Budget()
    t = time.perf_counter()
    graph, report = saturate(imported, tgt, budget=budget)
    out.update(enodes=report.enodes, stop=report.stop_reason, seconds=time.perf_counter() - t, peak_saturate=_peak())
    data = EGraphData.from_serialized(graph.serialized(), keep_refused=True)
    out["peak_serialize"] = _peak()
    costs = cost_table(data, imported, tgt)
    lam = default_lambda(tgt)
    greedy = greedy_dag(data, costs, lam)
    exact_ilp(data, costs, lam, time_limit=10.0, warm_start=greedy)
    out["peak_total"] = _peak()
    out["seconds_total"] = time.perf_counter() - t
    return out


def _slope(xs: list[float], ys: list[float]) -> float:
    n = len(xs)
    mx, my = sum(xs) / n, sum(ys) / n
    var = sum((x - mx) ** 2 for x in xs)
    return sum((x - mx) * (y - my) for x, y in zip(xs, ys, strict=True)) / var if var else float("nan")


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--layers", type=int, nargs="+", default=[1, 2, 4, 8, 16, 32])
    p.add_argument("--enodes", type=int, help="e-node budget (default: explore's)")
    p.add_argument("--target", default="x86_64-avx512")
    p.add_argument("--json", type=Path, help="also write the rows as JSON")
    p.add_argument("--child", type=int, help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    if args.child is not None:
        print(json.dumps(child(args.child, args.enodes, args.target)))
        return 0
    rows = []
    mib = 2**20
    head = ("layers", "e-nodes", "stop", "RSS before", "+saturate", "+all", "B/e-node")
    print("{:>6} {:>8} {:<16} {:>10} {:>10} {:>10} {:>9}".format(*head))
    for layers in args.layers:
        cmd = [sys.executable, __file__, "--child", str(layers), "--target", args.target]
        if args.enodes:
            cmd += ["--enodes", str(args.enodes)]
        r = json.loads(subprocess.run(cmd, check=True, capture_output=True, text=True).stdout.splitlines()[-1])
        rows.append(r)
        sat, total = r["peak_saturate"] - r["rss_before"], r["peak_total"] - r["rss_before"]
        print(
            f"{layers:>6} {r['enodes']:>8} {r['stop'][:16]:<16} {r['rss_before'] / mib:>8.0f} M {sat / mib:>8.0f} M "
            f"{total / mib:>8.0f} M {total / max(r['enodes'], 1):>9.0f}",
            flush=True,
        )
    if len(rows) > 1:
        xs = [float(r["enodes"]) for r in rows]
        s_sat = _slope(xs, [float(r["peak_saturate"] - r["rss_before"]) for r in rows])
        s_all = _slope(xs, [float(r["peak_total"] - r["rss_before"]) for r in rows])
        print(f"slope: {s_sat:.0f} bytes per e-node saturating, {s_all:.0f} bytes per e-node for the whole run")
    if args.json:
        args.json.write_text(json.dumps(rows, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
