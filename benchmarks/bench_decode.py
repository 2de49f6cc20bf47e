"""Does ``explore`` answer on a decode step in about the time it takes on a prefill of the same model?

The decode step is the suite's fixture ``tests/fixtures/models/llama_decode`` (transformers'
``LlamaForCausalLM``, one token against a KV cache of 127 positions, parameters external). The prefill is
the same model on 128 tokens with no cache, written by ``scripts/export_decode_fixture.py --prefill DIR``
in an interpreter that has the ``models`` extra and transformers (``--torch-python``), or read from
``--prefill-dir`` when it was written before.

Each run is ``egg-dispatch explore FILE`` with default flags (``--emit json``, so the report is not
printed), in a child process of its own, timed from the outside (wall time, IREE's own subprocesses
included). Decode and prefill alternate, ``--repeats`` times each; the report gives each run, the
medians and their ratio decode / prefill, and the CPU it ran on.

    .venv/bin/python benchmarks/bench_decode.py --torch-python /path/to/venv-with-torch/bin/python
"""

from __future__ import annotations

import argparse
import json
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DECODE = ROOT / "tests" / "fixtures" / "models" / "llama_decode" / "torch.mlir"


def cpu_name() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def explore_seconds(path: Path) -> float:
    """Wall time of ``egg-dispatch explore PATH --emit json`` in a child process (exit 0 required)."""
    start = time.perf_counter()
    done = subprocess.run(
        [sys.executable, "-m", "egg_dispatch", "explore", str(path), "--emit", "json"],
        capture_output=True,
        text=True,
        cwd=path.parent,
    )
    took = time.perf_counter() - start
    if done.returncode != 0:
        raise SystemExit(f"explore {path} exited {done.returncode}:\n{done.stderr[-2000:]}")
    return took


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--torch-python", help="an interpreter with torch, iree-turbine and transformers")
    ap.add_argument("--prefill-dir", type=Path, help="a folder export_decode_fixture.py --prefill wrote")
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--json", type=Path, help="also write the measurements here")
    opts = ap.parse_args()
    with tempfile.TemporaryDirectory(prefix="bench_decode_") as tmp:
        folder = opts.prefill_dir
        if folder is None:
            if opts.torch_python is None:
                raise SystemExit("give --torch-python (to write the prefill) or --prefill-dir")
            folder = Path(tmp)
            script = ROOT / "scripts" / "export_decode_fixture.py"
            subprocess.run([opts.torch_python, str(script), "--prefill", str(folder)], check=True)
        prefill = folder / "torch.mlir"
        runs: dict[str, list[float]] = {"decode": [], "prefill": []}
        for _ in range(opts.repeats):
            runs["decode"].append(explore_seconds(DECODE))
            runs["prefill"].append(explore_seconds(prefill))
    med = {k: statistics.median(v) for k, v in runs.items()}
    print(f"CPU: {cpu_name()}; {opts.repeats} interleaved runs each of egg-dispatch explore (default flags)")
    for k, v in runs.items():
        print(f"  {k:8s} " + "  ".join(f"{t:6.2f} s" for t in v) + f"   median {med[k]:.2f} s")
    print(f"decode / prefill: {med['decode'] / med['prefill']:.2f}")
    if opts.json:
        opts.json.write_text(json.dumps({"cpu": cpu_name(), "runs": runs, "median": med}, indent=2) + "\n")


if __name__ == "__main__":
    main()
