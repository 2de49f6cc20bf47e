"""The cost model's M = 1 contractions and encodes against IREE's profile of them (issue 53, point 4).

On a decode step every contraction is M = 1 (a matrix-vector product). ``explore`` prices each dispatch of
its plan and of IREE's own; this script compiles both plans, profiles them with IREE's host-execution
profiling (kernel time per executable, no launch overhead: ``iree.profiling``), and compares each kernel
the model priced with the one IREE ran, tied by what it computes (``measure.kernel_agreement``: an
``M x N x K`` contraction, or a per-call encode of one type). Per plan and kind (our plain contractions,
IREE's data-tiled ones, IREE's encodes) it reports the median predicted/measured ratio over the keys tied
like with like (a contraction run as often per call on both sides: ``Row.tied``), weighted by executions
per call, against the fidelity goal (median within 1.5x, docs/calibration-and-fidelity.md).

Rounds alternate the two plans (``--rounds``, each profiling ``--min-time`` seconds); a kernel's measured
time is its median over rounds. The target is the built-in profile of this CPU's ISA unless ``--target``
names another one this CPU runs (``host``: the profile ``egg-dispatch calibrate`` wrote).

    .venv/bin/python benchmarks/bench_m1_kernels.py                      # the decode fixture
    .venv/bin/python benchmarks/bench_m1_kernels.py --target host --json out.json
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(ROOT))

from egg_dispatch.emit.iree import emit_iree  # noqa: E402
from egg_dispatch.emit.iree.abi import abi_shell  # noqa: E402
from egg_dispatch.emit.iree.device import runnable_here  # noqa: E402
from egg_dispatch.iree.dispatch_creation import iree_compile_flags  # noqa: E402
from egg_dispatch.iree.profiling import profile_module  # noqa: E402
from egg_dispatch.iree.tools import compile_module  # noqa: E402
from egg_dispatch.measure.kernel_agreement import (  # noqa: E402
    KernelKey,
    Profiled,
    Row,
    agreement,
    median_ratio,
    predicted,
    profiled,
)
from egg_dispatch.mlir.ops import sym_name  # noqa: E402
from egg_dispatch.pipeline import explore, for_iree, iree_plan  # noqa: E402
from egg_dispatch.result.plan_view import view  # noqa: E402
from egg_dispatch.target.host import host_cpu, host_isa_target  # noqa: E402
from egg_dispatch.target.profile import load_target  # noqa: E402
from egg_dispatch.util.table import table_lines  # noqa: E402

DECODE = ROOT / "tests" / "fixtures" / "models" / "llama_decode"
GOAL = 1.5
"""The fidelity goal: the median predicted/measured ratio within 1/GOAL .. GOAL."""


def _pooled_rounds(rounds: list[dict[KernelKey, Profiled]]) -> dict[KernelKey, Profiled]:
    """Per key, the median over rounds of its measured seconds (count and names from the first round)."""
    out: dict[KernelKey, Profiled] = {}
    for key in sorted({k for r in rounds for k in r}):
        seen = [r[key] for r in rounds if key in r]
        out[key] = Profiled(statistics.median(p.seconds for p in seen), seen[0].count, seen[0].names)
    return out


def _fmt(seconds: float | None) -> str:
    return "-" if seconds is None else f"{seconds * 1e6:.2f}"


def _rows_table(rows: list[Row]) -> list[str]:
    body = [
        (
            " ".join(r.key),
            _fmt(r.predicted.seconds if r.predicted else None),
            str(r.predicted.count) if r.predicted else "-",
            _fmt(r.profiled.seconds if r.profiled else None),
            str(r.profiled.count) if r.profiled else "-",
            "-" if r.ratio is None else f"{r.ratio:.2f}" + ("" if r.tied else " (not tied)"),
        )
        for r in rows
    ]
    head = ("kernel", "predicted µs", "per call", "measured µs", "per call", "pred/meas")
    return table_lines(head, body, left=1)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("source", nargs="?", type=Path, default=DECODE / "torch.mlir")
    ap.add_argument("--target", help="a built-in profile this CPU runs, or host (default: this CPU's ISA)")
    ap.add_argument("--parameters", default=None, help="SCOPE=FILE (default: the fixture's model=params.irpa)")
    ap.add_argument("--inputs", type=Path, default=None, help="an .npz of arg0..argN (default: the fixture's)")
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--min-time", type=float, default=0.2, help="seconds each profiling run loops for")
    ap.add_argument("--json", type=Path, help="also write the rows and medians here")
    args = ap.parse_args()

    name = args.target or host_isa_target()[0]
    if name is None:
        raise SystemExit("no built-in profile for this CPU: pass --target")
    tgt = load_target(name)
    ok, why = runnable_here(tgt)
    if not ok:
        raise SystemExit(f"cannot measure here: {why}")
    src: Path = args.source
    params = args.parameters or (
        f"model={src.parent / 'params.irpa'}" if (src.parent / "params.irpa").is_file() else None
    )
    files = [tuple(params.split("=", 1))] if params else []
    npz = np.load(args.inputs or src.parent / "inputs.npz")
    inputs = [npz[f"arg{i}"] for i in range(len(npz.files))]

    started = time.perf_counter()
    ex = explore(src, tgt, compile_check=False)
    own = iree_plan(src, tgt)
    if own.candidate is None:
        raise SystemExit(f"our model cannot cost IREE's plan: {own.error}")
    fname = ex.imported.function
    shell = abi_shell(ex.module, fname)
    entry = sym_name(shell.wrappers[0]) if shell is not None and shell.wrappers else fname
    data_tiling, cpu, others = iree_compile_flags(tgt)
    ours_text = emit_iree(ex.best.mlir, tgt, abi=shell)
    plans = {
        "ours": (
            ex.best,
            compile_module(
                ours_text, data_tiling=False, target_cpu=cpu, extra_flags=others, compile_from="dispatch-creation"
            ),
        ),
        "IREE": (
            own.candidate,
            compile_module(for_iree(src), data_tiling=data_tiling, target_cpu=cpu, extra_flags=others),
        ),
    }
    rounds: dict[str, list[dict[KernelKey, Profiled]]] = {k: [] for k in plans}
    for _ in range(args.rounds):
        for label, (_, vmfb) in plans.items():
            times = profile_module(vmfb, entry, inputs, min_time=args.min_time, call_time=False, parameters=files)
            rounds[label].append(profiled(times))
    took = time.perf_counter() - started

    cpu_model, _ = host_cpu()
    print(f"{src} on {cpu_model}; target {tgt.name} (profile {tgt.source});")
    print(f"{args.rounds} rounds of {args.min_time:g} s per plan, alternating; {took:.0f} s in all\n")
    report: dict[str, object] = {"source": str(src), "cpu": cpu_model, "target": tgt.name, "rounds": args.rounds}
    medians: dict[str, float | None] = {}
    for label, (cand, _) in plans.items():
        rows = agreement(predicted(cand, view(cand.mlir)), _pooled_rounds(rounds[label]))
        print(f"{label}'s plan")
        print("\n".join(_rows_table(rows)))
        print()
        for kind in ("matmul", "encode"):
            medians[f"{label} {kind}"] = median_ratio(rows, kind)
        report[label] = [
            {
                "key": list(r.key),
                "predicted_s": r.predicted.seconds if r.predicted else None,
                "predicted_count": r.predicted.count if r.predicted else None,
                "measured_s": r.profiled.seconds if r.profiled else None,
                "measured_count": r.profiled.count if r.profiled else None,
                "executables": list(r.profiled.names) if r.profiled else [],
            }
            for r in rows
        ]
    print("median predicted/measured over the tied rows (a contraction as often per call on both sides),")
    print("weighted by executions per call (goal: within 1/1.5 .. 1.5):")
    for what, m in medians.items():
        if m is None:
            continue
        verdict = "met" if 1 / GOAL <= m <= GOAL else "NOT met"
        print(f"  {what:<14} {m:6.2f}  {verdict}")
    report["medians"] = medians
    if args.json:
        args.json.write_text(json.dumps(report, indent=1) + "\n")


if __name__ == "__main__":
    main()
