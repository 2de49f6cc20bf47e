"""Model-sized inputs: reader speed and memory, and a GPT-2-small-sized decoder explored end to end.

Every measurement runs in a child process of its own, which reports its wall time per stage and its peak
resident set (``getrusage``; IREE's subprocesses are reported separately), so one measurement's memory
does not hide in another's.

1. **Reader**: a synthetic module with one ``dense_resource`` blob of S MB of hex (a 2048x2048 f32
   weight per 32 MB) is parsed; next to it, in the same child, the floor any reader pays: reading the
   file and ``bytes.fromhex`` of the blob. Reported: MB/s of resource text, ratio to the floor, peak RSS
   against the goal 2 x file + 200 MB.
2. **GPT-2 small** (12 layers, width 768, 12 heads, MLP 3072, vocabulary 50257, sequence 128; 124M
   parameters; ``benchmarks/gpt2_export.py`` writes it with torch + iree-turbine, the ``models`` extra,
   in a separate interpreter given by ``--torch-python``): ``explore --baseline modelled`` on the
   torch-dialect export with inline weights and with external parameters, each (a) from IREE's global
   optimization (the default) and (b) ``--from input``. Reported: each stage's time and the peak RSS,
   against the goals (inline <= 60 s and 3 GB, external <= 20 s and 1 GB on a 2-core machine).

    .venv/bin/python benchmarks/bench_models.py --torch-python /path/to/venv-with-torch/bin/python
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import textwrap
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(ROOT))

from egg_dispatch.util.table import table_lines  # noqa: E402

_READER_CHILD = textwrap.dedent(
    """
    import json, resource, sys, time
    from egg_dispatch.mlir.parser import parse_file
    path, key = sys.argv[1], sys.argv[2]
    t0 = time.perf_counter()
    with open(path) as f:
        text = f.read()
    start = text.index('"0x', text.index(key + ":")) + 3
    data = bytes.fromhex(text[start : text.index('"', start)])
    floor = time.perf_counter() - t0
    del text, data
    t1 = time.perf_counter()
    module = parse_file(path)
    parse = time.perf_counter() - t1
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
    print(json.dumps({"parse_s": parse, "floor_s": floor, "peak_bytes": peak}))
    """
)

_EXPLORE_CHILD = textwrap.dedent(
    """
    import json, resource, sys, time
    from egg_dispatch.pipeline import explore
    path, target, start = sys.argv[1], sys.argv[2], sys.argv[3]
    t0 = time.perf_counter()
    e = explore(path, target, baseline=True, start=start)
    wall = time.perf_counter() - t0
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
    children = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss * 1024
    print(json.dumps({
        "wall_s": wall, "peak_bytes": peak, "iree_peak_bytes": children, "timings": e.timings,
        "saturation_s": e.saturation.seconds, "enodes": e.saturation.enodes, "stop": e.saturation.stop_reason,
        "dispatches": e.best.metrics.dispatches,
        "baseline_dispatches": e.baseline.metrics.dispatches if e.baseline else None,
        "steps": e.input.steps if e.input else [],
    }))
    """
)


def child(code: str, *args: str) -> dict:
    proc = subprocess.run([sys.executable, "-c", code, *args], capture_output=True, text=True, cwd=ROOT)
    if proc.returncode != 0:
        raise SystemExit(f"child failed ({proc.returncode}):\n{proc.stderr[-3000:]}")
    return json.loads(proc.stdout.strip().splitlines()[-1])


def write_resource_module(path: Path, megabytes: int) -> int:
    """A matmul on one f32 constant whose blob holds ``megabytes`` MB of hex; returns the file size."""
    n = int((megabytes * 1e6 / 2 / 4) ** 0.5) // 16 * 16
    rng = os.urandom(n * n * 4)
    with open(path, "w") as f:
        f.write(
            f"func.func @main(%x: tensor<4x{n}xf32>) -> tensor<4x{n}xf32> {{\n"
            f"  %w = arith.constant dense_resource<w0> : tensor<{n}x{n}xf32>\n"
            "  %c0 = arith.constant 0.0 : f32\n"
            f"  %e = tensor.empty() : tensor<4x{n}xf32>\n"
            f"  %f = linalg.fill ins(%c0 : f32) outs(%e : tensor<4x{n}xf32>) -> tensor<4x{n}xf32>\n"
            f"  %r = linalg.matmul ins(%x, %w : tensor<4x{n}xf32>, tensor<{n}x{n}xf32>) outs(%f : tensor<4x{n}xf32>)"
            f" -> tensor<4x{n}xf32>\n"
            f"  return %r : tensor<4x{n}xf32>\n}}\n"
            '{-#\n  dialect_resources: {\n    builtin: {\n      w0: "0x04000000'
        )
        f.write(rng.hex().upper())
        f.write('"\n    }\n  }\n#-}\n')
    return path.stat().st_size


def mb(b: float) -> str:
    return f"{b / 1e6:.0f}"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--sizes", default="64,256", help="reader benchmark blob sizes in MB (default 64,256)")
    ap.add_argument("--models-dir", type=Path, default=Path(tempfile.gettempdir()) / "egg_dispatch_gpt2")
    ap.add_argument("--torch-python", help="an interpreter with torch + iree-turbine, to export GPT-2 if missing")
    ap.add_argument("--target", default="x86_64-avx512")
    ap.add_argument("--skip-reader", action="store_true")
    ap.add_argument("--skip-gpt2", action="store_true")
    args = ap.parse_args()
    import platform

    cpu = next((ln.split(":", 1)[1].strip() for ln in open("/proc/cpuinfo") if ln.startswith("model name")), "")
    print(f"host: {cpu or platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}")
    if not args.skip_reader:
        rows = []
        with tempfile.TemporaryDirectory() as tmp:
            for size in (int(s) for s in args.sizes.split(",")):
                path = Path(tmp) / f"blob{size}.mlir"
                file_bytes = write_resource_module(path, size)
                r = child(_READER_CHILD, str(path), "w0")
                goal = 2 * file_bytes + 200e6
                rows.append(
                    (
                        mb(file_bytes),
                        f"{r['parse_s']:.2f}",
                        f"{file_bytes / 1e6 / r['parse_s']:.0f}",
                        f"{r['parse_s'] / r['floor_s']:.2f}",
                        mb(r["peak_bytes"]),
                        f"{r['peak_bytes'] / goal:.2f}",
                    )
                )
                path.unlink()
        print("\nReader (one dense_resource blob; floor = read the file + bytes.fromhex of the blob)")
        head = ("file MB", "parse s", "MB/s", "parse/floor", "peak MB", "peak/(2 file+200 MB)")
        print("\n".join(table_lines(head, rows)))
    if args.skip_gpt2:
        return 0
    d = args.models_dir
    if not (d / "gpt2.torch.mlir").is_file():
        if not args.torch_python:
            print(f"\nGPT-2: {d} has no export; pass --torch-python (an interpreter with the models extra)")
            return 0
        subprocess.run([args.torch_python, str(HERE / "gpt2_export.py"), str(d)], check=True)
    rows = []
    for form, label in (("gpt2.torch.mlir", "inline weights"), ("gpt2.ext.torch.mlir", "external parameters")):
        size = (d / form).stat().st_size
        for start in ("auto", "input"):
            r = child(_EXPLORE_CHILD, str(d / form), args.target, start)
            t = r["timings"]
            rows.append(
                (
                    label,
                    mb(size),
                    "global-opt" if start == "auto" else "--from input",
                    f"{t.get('input', 0):.1f}",
                    f"{t.get('import', 0) - t.get('input', 0):.1f}",
                    f"{r['saturation_s']:.1f}",
                    f"{t.get('cost_table', 0):.1f}",
                    f"{t.get('extract', 0):.1f}",
                    f"{r['wall_s']:.1f}",
                    mb(r["peak_bytes"]),
                    mb(r["iree_peak_bytes"]),
                    f"{r['dispatches']}/{r['baseline_dispatches']}",
                    f"{r['enodes']} ({r['stop']})",
                )
            )
    print(f"\nGPT-2 small on {args.target} (explore, modelled baseline; seconds per stage; peak RSS in MB)")
    head = ("weights", "file MB", "start", "lower+parse", "import", "saturate", "cost", "extract", "total s",
            "peak MB", "IREE peak MB", "dispatches ours/IREE", "e-nodes")  # fmt: skip
    print("\n".join(table_lines(head, rows)))
    print("goals: inline <= 60 s and 3000 MB; external <= 20 s and 1000 MB (our process)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
