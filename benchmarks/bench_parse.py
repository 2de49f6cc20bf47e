"""Reading speed of egg_dispatch's MLIR reader (``egg_dispatch.mlir.parser.parse_mlir``): seconds per MB.

Run: ``python benchmarks/bench_parse.py FILE [FILE ...] [--repeat N] [--profile]``.

Each file is read into memory once, then parsed ``--repeat`` times; the best time (CPU time of this
process, less disturbed by other work on a shared machine than wall time) is reported per file, with
its size and seconds per MB. ``--profile`` prints a cProfile of one more parse of each file instead.

The three texts ``egg-dispatch explore`` reads for a model are the user's file, IREE's start state
(the IR before ``iree-dispatch-creation-hoist-encoding-ops``) and IREE's own plan (the output of
``--compile-to=dispatch-creation``); for the 22-layer Llama written by ``benchmarks/llama_shapes.py``::

    iree-compile llama.mlir --iree-hal-target-backends=llvm-cpu --iree-llvmcpu-target-cpu=haswell \\
        --iree-dispatch-creation-data-tiling --compile-to=dispatch-creation \\
        --mlir-print-ir-before=iree-dispatch-creation-hoist-encoding-ops -o plan.mlir 2> start_raw.mlir
    tail -n +2 start_raw.mlir > start.mlir   # the dump's first line is its banner
    python benchmarks/bench_parse.py llama.mlir start.mlir plan.mlir
"""

from __future__ import annotations

import argparse
import cProfile
import pstats
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from egg_dispatch.mlir.parser import parse_mlir, read_text


def best_seconds(text: str, file: str, repeat: int) -> float:
    """The least CPU time of ``repeat`` parses of ``text``."""
    best = float("inf")
    for _ in range(repeat):
        start = time.process_time()
        parse_mlir(text, file)
        best = min(best, time.process_time() - start)
    return best


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("files", nargs="+", type=Path, help="MLIR files to parse")
    ap.add_argument("--repeat", type=int, default=5, help="parses per file; the best is reported (default 5)")
    ap.add_argument("--profile", action="store_true", help="print a cProfile of one parse of each file")
    args = ap.parse_args(argv)
    total_mb = total_s = 0.0
    print(f"{'file':<48} {'MB':>7} {'s':>8} {'s/MB':>7}")
    for path in args.files:
        text = read_text(path)
        mb = len(text.encode()) / 1e6
        if args.profile:
            profile = cProfile.Profile()
            profile.runcall(parse_mlir, text, str(path))
            print(f"== {path}")
            pstats.Stats(profile).sort_stats("tottime").print_stats(25)
            continue
        seconds = best_seconds(text, str(path), args.repeat)
        total_mb += mb
        total_s += seconds
        print(f"{str(path)[-48:]:<48} {mb:>7.2f} {seconds:>8.3f} {seconds / mb:>7.3f}")
    if total_mb and len(args.files) > 1:
        print(f"{'total':<48} {total_mb:>7.2f} {total_s:>8.3f} {total_s / total_mb:>7.3f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
