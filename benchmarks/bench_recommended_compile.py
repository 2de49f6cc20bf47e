"""Explore's recommended plan compiles for x86_64-avx2 and x86_64-avx512 on every fixture and model
fixture (issue 52, Done-when): the whole set, models included, which the suite covers only in part
(``tests/test_recommended_plans_compile.py`` says which pairs run where and why).

For every source of ``all_sources()`` and target: ``egg-dispatch explore SOURCE --target T --emit iree``
(measurement off: the model's recommendation, as a named target gets by default), then every module of
a target in one ``iree-compile --compile-from=dispatch-creation --compile-to=executable-targets
--split-input-file`` run (``iree.compile_check.compile_units``). Prints a line per source and target
(seconds to explore, IREE's answer) and the totals; exit 1 when IREE rejects
any recommended plan.

    .venv/bin/python benchmarks/bench_recommended_compile.py [--target x86_64-avx2 ...] [--match SUBSTRING]
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
os.environ["EGG_DISPATCH_MEASURE"] = "0"  # the model's recommendation: nothing is timed here

from egg_dispatch.iree.compile_check import compile_units  # noqa: E402
from egg_dispatch.target.profile import load_target  # noqa: E402
from tests.cli_process import cli_process  # noqa: E402
from tests.test_recommended_plans_compile import TARGETS, all_sources  # noqa: E402


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--target", action="append", choices=TARGETS, help="default: both")
    ap.add_argument("--match", default="", help="only sources whose path holds this")
    args = ap.parse_args(argv)
    sources = [s for s in all_sources() if args.match in str(s)]
    failed = total = 0
    started = time.perf_counter()
    for target in args.target or TARGETS:
        texts, rows = [], []
        for src in sources:
            t0 = time.perf_counter()
            done = cli_process("explore", str(src), "--target", target, "--emit", "iree")
            took = time.perf_counter() - t0
            name = str(src.relative_to(ROOT / "tests" / "fixtures"))
            if done.returncode != 0:
                rows.append((name, f"explore exited {done.returncode}: {done.stderr.strip().splitlines()[-1][:120]}"))
                failed += 1
                continue
            texts.append((name, took, done.stdout))
        errors, compiled = compile_units([t for *_, t in texts], load_target(target))
        for (name, took, _), err in zip(texts, errors, strict=True):
            rows.append((name, f"explore {took:5.1f} s  {'compiles' if err is None else err[:110]}"))
            failed += err is not None
        total += len(sources)
        print(f"{target}: {len(sources)} sources, {compiled} module(s) compiled (the rest cached)")
        for name, line in rows:
            print(f"  {name:42s} {line}")
    print(f"{total - failed} of {total} recommended plans compile ({time.perf_counter() - started:.0f} s)")
    return 1 if failed else 0


if __name__ == "__main__":
    raise SystemExit(main())
