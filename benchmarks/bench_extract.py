"""Extraction benchmark: greedy DAG vs exact ILP (HiGHS) on synthetic e-graphs of ~1k, 5k and 20k e-nodes.

Run: ``python benchmarks/bench_extract.py [--sizes 1k,5k,20k] [--seed 0]``.

The e-graphs are generated here, with a fixed seed, to look like saturated placement e-graphs
scaled up: layers of tensor classes (a transformer-like stack, one layer per op), each class with
a few alternatives -- a dispatch of a producer in the layer below, a load-time ``ConstEval`` of it
(in constant weight columns only), a fused binary op over two neighbouring producers (so
producers are shared), a materialized twin, a contraction that needs an extra relayout class only
it reads (so not every class is needed) -- and a few back edges to the layers above (rewrite
cycles, as in Tensat's graphs), which the exact extractor must order. Costs are seconds per call
(1-10 µs per op, launches on dispatches) and bytes (transient results, persistent globals),
λ = 1e-10 s/B as in ``egg_dispatch/cost/model.py``.
"""

from __future__ import annotations

import argparse
import random
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from egg_dispatch.cost.table import NodeCost
from egg_dispatch.egraph.data import EGraphData, Node
from egg_dispatch.extract import exact_ilp, greedy_dag, plan_objective

SIZES = {"1k": (14, 22), "5k": (35, 42), "20k": (67, 88)}
"""Label -> (layers, classes per layer); about 3.4 e-nodes per class."""
TIME_LIMITS = {"1k": 10.0, "5k": 10.0, "20k": 30.0}
LAMBDA = 1e-10
BACK_EDGE_RATE = 0.15
"""Share of classes with an alternative that reads a class one or two layers above (a cycle)."""
LAYOUT_RATE = 0.3
"""Share of classes with an alternative that needs its own relayout class (so not every class is needed)."""


def generate(layers: int, width: int, seed: int) -> tuple[EGraphData, dict[str, NodeCost]]:
    """A layered DAG-with-choices e-graph (module docstring); class ids are ``Tensor-<layer>-<j>``."""
    rng = random.Random(seed)
    rows = [[f"Tensor-{i}-{j}" for j in range(width)] for i in range(layers)]
    nodes: dict[str, Node] = {}
    costs: dict[str, NodeCost] = {}
    classes: dict[str, list[str]] = {}

    def add(nid: str, op: str, c: str, kids: list[str], cost: NodeCost) -> None:
        nodes[nid] = Node(nid, op, c, tuple(kids), tuple(f"{k}/0" for k in kids), False)
        classes.setdefault(c, []).append(nid)
        costs[nid] = cost

    for i in reversed(range(layers)):
        for j, c in enumerate(rows[i]):
            weight = j % 4 == 0  # a weight column: constant all the way down, so ConstEval is legal
            size = rng.choice([4096, 16384, 65536, 262144])
            op_s = rng.uniform(1e-6, 1e-5)
            if i == layers - 1:
                add(f"{c}/0", "Const" if weight else "Arg", c, [], NodeCost(memory_bytes=size if weight else 0))
                continue
            below = rows[i + 1]
            a = below[j]
            b = below[(j + 4) % width] if weight else below[(j + 1 + rng.randrange(3)) % width]
            add(f"{c}/0", "Dispatch", c, [a], NodeCost(run_seconds=5e-6 + op_s, memory_bytes=size))
            add(f"{c}/1", "Generic", c, [a, b], NodeCost(run_seconds=op_s * rng.uniform(0.8, 1.6)))
            if weight and rng.random() < 0.6:
                add(f"{c}/2", "ConstEval", c, [a], NodeCost(run_seconds=1e-8, memory_bytes=size * rng.uniform(1, 2)))
            elif rng.random() < 0.3:
                twin = costs[f"{c}/1"]
                add(f"{c}/2", "Mmt4d", c, [a, b], NodeCost(run_seconds=twin.run_seconds * rng.uniform(0.5, 1.2)))
            if rng.random() < LAYOUT_RATE:  # an optional relayout class only this alternative reads
                t = f"{c}-t"
                add(f"{t}/0", "Op", t, [a], NodeCost(run_seconds=op_s * 0.5, memory_bytes=size))
                add(f"{t}/1", "Dispatch", t, [a], NodeCost(run_seconds=5e-6 + op_s * 0.3, memory_bytes=size))
                add(f"{c}/4", "Contract", c, [t, b], NodeCost(run_seconds=op_s * rng.uniform(0.2, 0.6)))
            if not weight and i > 2 and rng.random() < BACK_EDGE_RATE:
                up = rows[i - rng.randrange(1, 3)][rng.randrange(width)]
                add(f"{c}/3", "Generic", c, [a, up], NodeCost(run_seconds=op_s * 0.3))
    root = "Root-0"
    add(f"{root}/0", "Results", root, rows[0], NodeCost())
    types = {c: "Root" if c == root else "Tensor" for c in classes}
    ordered = {c: sorted(classes[c]) for c in sorted(classes)}
    return EGraphData(dict(sorted(nodes.items())), ordered, types, root), costs


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--sizes", default="1k,5k,20k", help="comma-separated subset of " + ",".join(SIZES))
    p.add_argument("--seed", type=int, default=0)
    args = p.parse_args(argv)
    header = (
        f"{'graph':>5} {'e-nodes':>7} {'classes':>7} {'pruned':>6} {'levels':>6} {'greedy s':>8} "
        f"{'greedy obj':>11} {'exact s':>7} {'exact obj':>11} {'status':>10} {'gap':>8} {'exact/greedy':>12}"
    )
    print(header)
    print("-" * len(header))
    for label in args.sizes.split(","):
        layers, width = SIZES[label]
        g, costs = generate(layers, width, args.seed)
        greedy = greedy_dag(g, costs, LAMBDA)
        exact = exact_ilp(g, costs, LAMBDA, time_limit=TIME_LIMITS[label], warm_start=greedy)
        assert exact.objective == plan_objective(g, exact.choice, costs, LAMBDA) <= greedy.objective
        s = exact.stats
        gap = "-" if exact.gap is None else f"{exact.gap:.2%}"
        status = "optimal" if exact.optimal else str(s.get("status", "?")).replace("Time limit reached", "time limit")
        print(
            f"{label:>5} {len(g.nodes):>7} {len(g.classes):>7} {s['nodes']:>6} {s.get('level_vars', 0):>6} "
            f"{greedy.seconds:>8.3f} {greedy.objective:>11.6g} {exact.seconds:>7.2f} {exact.objective:>11.6g} "
            f"{status:>10} {gap:>8} {exact.objective / greedy.objective:>12.4f}"
        )
    return 0


if __name__ == "__main__":
    start = time.perf_counter()
    code = main()
    print(f"total {time.perf_counter() - start:.1f} s")
    sys.exit(code)
