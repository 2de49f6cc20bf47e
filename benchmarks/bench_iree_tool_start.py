"""IREE's tools called through pip's console-script wrappers against the binaries they exec.

pip installs ``iree-opt`` and ``iree-compile`` into the venv's ``bin/`` as Python scripts that start an
interpreter, import IREE's package and exec the binary it ships. ``egg_dispatch.iree.tools.find_tool``
resolves such a wrapper to that binary. This benchmark runs the same commands both ways, interleaved
round by round, and reports the median seconds per call and the ratio wrapper / binary:

- ``iree-opt`` parsing and verifying a small module (``tests/fixtures/*.mlir``);
- ``iree-compile --compile-to=dispatch-creation`` with data tiling (IREE's plan, what ``explore`` asks
  IREE for), on the same files.

Run: ``python benchmarks/bench_iree_tool_start.py [--rounds 5] [FILE.mlir ...]``.
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import time
from pathlib import Path

from egg_dispatch.iree.tools import compile_flags, find_tool
from egg_dispatch.target.host import host_cpu
from egg_dispatch.util.table import table_lines

ROOT = Path(__file__).resolve().parents[1]
DEFAULT_FILES = sorted((ROOT / "tests" / "fixtures").glob("*.mlir"))[:6]


def _seconds(cmd: list[str]) -> float:
    start = time.perf_counter()
    proc = subprocess.run(cmd, capture_output=True, check=False)
    elapsed = time.perf_counter() - start
    if proc.returncode != 0:
        raise SystemExit(f"failed: {' '.join(cmd)}\n{proc.stderr.decode(errors='replace')[-2000:]}")
    return elapsed


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("files", nargs="*", type=Path, default=DEFAULT_FILES)
    ap.add_argument("--rounds", type=int, default=5)
    args = ap.parse_args(argv)
    here = Path(sys.executable).parent
    rows = []
    for tool, flags in (
        ("iree-opt", ["-o", "/dev/null"]),
        (
            "iree-compile",
            [
                *compile_flags(data_tiling=True, target_cpu="haswell", extra_flags=["--compile-to=dispatch-creation"]),
                "-o",
                "/dev/null",
            ],
        ),
    ):
        wrapper, binary = here / tool, find_tool(tool)
        if not wrapper.is_file() or binary is None or binary == wrapper:
            print(f"{tool}: no console-script wrapper next to {sys.executable}; nothing to compare")
            continue
        times: dict[str, list[float]] = {"wrapper": [], "binary": []}
        for _ in range(args.rounds):
            for f in args.files:
                times["wrapper"].append(_seconds([str(wrapper), str(f), *flags]))
                times["binary"].append(_seconds([str(binary), str(f), *flags]))
        w, b = statistics.median(times["wrapper"]), statistics.median(times["binary"])
        rows.append([tool, f"{w * 1e3:.0f}", f"{b * 1e3:.0f}", f"{w / b:.1f}"])
    print(f"host: {host_cpu()[0]}; {len(args.files)} files x {args.rounds} rounds, median per call")
    for line in table_lines(["tool", "wrapper ms/call", "binary ms/call", "wrapper / binary"], rows, left=1):
        print(line)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
