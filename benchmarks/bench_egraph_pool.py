"""Declared e-graphs from the pool against one built per exploration.

``egraph.program`` keeps e-graphs with the schema and rule files declared (bases) and reuses them
across programs (push, add the program, pop). This benchmark explores the same programs in one process
both ways, interleaved program by program, and reports the median seconds per exploration and the
ratio fresh / pooled, for the saturation alone and for the whole in-process ``explore --check``
(``--from input --baseline modelled``, what the property tests run).

Run: ``python benchmarks/bench_egraph_pool.py [--rounds 5] [FILE.mlir ...]``.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import statistics
import time
from collections.abc import Callable
from pathlib import Path

from egg_dispatch.cli import main as cli_main
from egg_dispatch.egraph import program
from egg_dispatch.egraph.importer import import_function
from egg_dispatch.egraph.rules import saturate
from egg_dispatch.mlir.parser import parse_file
from egg_dispatch.start.initial_plan import initial_plan
from egg_dispatch.target.host import host_cpu
from egg_dispatch.target.profile import load_target
from egg_dispatch.util.table import table_lines

ROOT = Path(__file__).resolve().parents[1]
DEFAULT_FILES = [
    ROOT / "tests" / "fixtures" / n
    for n in ("qkv_const.mlir", "i8_matmul.mlir", "unaligned.mlir", "mlp2.mlir", "matmul_m1.mlir", "col_slices.mlir")
]


def _saturate(path: Path) -> Callable[[], None]:
    imported = import_function(initial_plan(parse_file(path)))
    target = load_target("x86_64-avx2")

    def run() -> None:
        graph, _ = saturate(imported, target)
        graph.serialized()
        graph.release()

    return run


def _explore(path: Path) -> Callable[[], None]:
    argv = ["explore", str(path), "--from", "input", "--baseline", "modelled", "--check", "--emit", "json"]

    def run() -> None:
        with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
            if cli_main(argv) != 0:
                raise SystemExit(f"explore failed on {path}")

    return run


def _seconds(fn: Callable[[], None]) -> float:
    start = time.perf_counter()
    fn()
    return time.perf_counter() - start


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("files", nargs="*", type=Path, default=DEFAULT_FILES)
    ap.add_argument("--rounds", type=int, default=5)
    args = ap.parse_args(argv)
    rows = []
    for what, make in (("saturate + serialize", _saturate), ("explore --check", _explore)):
        runs = [make(f) for f in args.files]
        for fn in runs:  # warm: imports, caches, one base in the pool
            fn()
        times: dict[str, list[float]] = {"fresh": [], "pooled": []}
        for _ in range(args.rounds):
            for fn in runs:
                with program.fresh_bases():
                    times["fresh"].append(_seconds(fn))
                times["pooled"].append(_seconds(fn))
        f, p = statistics.median(times["fresh"]), statistics.median(times["pooled"])
        rows.append([what, f"{f * 1e3:.1f}", f"{p * 1e3:.1f}", f"{f / p:.2f}"])
    print(f"host: {host_cpu()[0]}; {len(args.files)} files x {args.rounds} rounds, median per exploration")
    for line in table_lines(["what", "fresh ms", "pooled ms", "fresh / pooled"], rows, left=1):
        print(line)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
