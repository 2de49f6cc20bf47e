"""Our plans against IREE's own, measured on this CPU, at realistic sizes.

The fixtures in ``tests/fixtures`` are tiny (8x8 .. 48x16) so that tests stay fast; at that size every
plan costs a few microseconds of dispatch overhead. This benchmark generates the same program shapes at
the sizes of a small transformer and runs ``egg_dispatch.measure.bench.bench`` on each (IREE's own plan from
``iree-compile`` with data tiling, our best plan and every frontier plan from ``--emit iree`` compiled
with ``--compile-from=dispatch-creation``; outputs checked against IREE's; timed with
``iree-benchmark-module`` on ``local-sync``, interleaved repeats, medians):

* ``seed``      the #21100 pattern: a [2048, 512] constant cut into two row halves, each the LHS of a
                transposed-RHS matmul with a [128, 512] argument;
* ``qkv_const`` Q/K/V projection: 128 tokens x 768, a fused [2304, 768] in_proj constant (torch's
                ``in_proj_weight``, i.e. the 768x2304 weight transposed) cut into three row slices;
* ``qkv_arg``   the same with the weight as a function argument;
* ``mlp``       ``relu(x @ w1 + b1) @ w2 + b2``, 128 tokens, 512 -> 2048 -> 512;
* ``gemv``      one token (M = 1) times a [768, 3072] constant: narrow-M tiles;
* ``col_slices`` a [256, 1024] constant cut into two *column* halves (not hoistable by IREE).

Weights are small integers / 64 and inputs multiples of 1/16, so every result is exact in f32 and the
plans must agree with IREE's bit for bit (the report shows the largest relative difference).

Printed: per plan, our model's predicted time, the measured median, ours/IREE measured and predicted;
per program and pooled over all plans, the Spearman rank correlation of predicted vs measured.

Run: ``python benchmarks/bench_vs_iree.py [--target x86_64-avx2] [--repeats 5] [--programs seed mlp ...]``.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np

from egg_dispatch.emit.iree.module import runnable_here
from egg_dispatch.measure.bench import BenchReport, bench, spearman
from egg_dispatch.util.table import table_lines

MT = (
    "indexing_maps = [affine_map<(d0, d1, d2) -> (d0, d2)>, affine_map<(d0, d1, d2) -> (d1, d2)>, "
    "affine_map<(d0, d1, d2) -> (d0, d1)>]"
)
"""A matmul with a transposed RHS (``x @ w^T``), as torch's ``F.linear`` is exported."""


def _weights(shape: tuple[int, ...], salt: int) -> np.ndarray:
    return (np.random.default_rng(salt).integers(-6, 7, size=shape) / 64.0).astype(np.float32)


def _hex(a: np.ndarray) -> str:
    return f'dense<"0x{a.astype("<f4").tobytes().hex().upper()}"> : {_t(*a.shape)}'


def _t(*shape: int) -> str:
    return "tensor<" + "x".join(map(str, shape)) + "xf32>"


def _acc(name: str, m: int, n: int) -> str:
    return (
        f"  %e_{name} = tensor.empty() : {_t(m, n)}\n"
        f"  %acc_{name} = linalg.fill ins(%zero : f32) outs(%e_{name} : {_t(m, n)}) -> {_t(m, n)}\n"
    )


def seed(rows: int = 2048, k: int = 512, n: int = 128) -> str:
    h = rows // 2
    body = f"  %w = arith.constant {_hex(_weights((rows, k), 1))}\n  %zero = arith.constant 0.0 : f32\n"
    outs = []
    for i, name in enumerate(("a", "b")):
        body += f"  %w_{name} = tensor.extract_slice %w[{i * h}, 0] [{h}, {k}] [1, 1] : {_t(rows, k)} to {_t(h, k)}\n"
        body += _acc(name, h, n)
        body += (
            f"  %o_{name} = linalg.matmul {MT} ins(%w_{name}, %r_{name} : {_t(h, k)}, {_t(n, k)}) "
            f"outs(%acc_{name} : {_t(h, n)}) -> {_t(h, n)}\n"
        )
        outs.append(f"%o_{name}")
    sig = f"%r_a: {_t(n, k)}, %r_b: {_t(n, k)}"
    return _func("split_weight_matmuls", sig, outs, [_t(h, n)] * 2, body)


def qkv(tokens: int = 128, d: int = 768, weight_is_arg: bool = False) -> str:
    body = "  %zero = arith.constant 0.0 : f32\n"
    if not weight_is_arg:
        body = f"  %in_proj = arith.constant {_hex(_weights((3 * d, d), 2))}\n" + body
    body += _acc("x", tokens, d)
    outs = []
    for i, name in enumerate("qkv"):
        body += (
            f"  %w_{name} = tensor.extract_slice %in_proj[{i * d}, 0] [{d}, {d}] [1, 1] : "
            f"{_t(3 * d, d)} to {_t(d, d)}\n"
        )
        body += (
            f"  %{name} = linalg.matmul {MT} ins(%x, %w_{name} : {_t(tokens, d)}, {_t(d, d)}) "
            f"outs(%acc_x : {_t(tokens, d)}) -> {_t(tokens, d)}\n"
        )
        outs.append(f"%{name}")
    sig = f"%x: {_t(tokens, d)}" + (f", %in_proj: {_t(3 * d, d)}" if weight_is_arg else "")
    return _func("qkv_projection", sig, outs, [_t(tokens, d)] * 3, body)


def mlp(tokens: int = 128, d: int = 512, f: int = 2048) -> str:
    b1 = _weights((f,), 4)
    b2 = _weights((d,), 6)
    body = (
        f"  %w1 = arith.constant {_hex(_weights((d, f), 3))}\n  %b1 = arith.constant {_hex(b1)}\n"
        f"  %w2 = arith.constant {_hex(_weights((f, d), 5))}\n  %b2 = arith.constant {_hex(b2)}\n"
        "  %zero = arith.constant 0.0 : f32\n"
    )
    body += _acc("1", tokens, f)
    body += _matmul("mm1", "%x", "%w1", "%acc_1", tokens, d, f)
    body += _bias("h", "%mm1", "%b1", "%e_1", tokens, f, relu=True)
    body += _acc("2", tokens, d)
    body += _matmul("mm2", "%h", "%w2", "%acc_2", tokens, f, d)
    body += _bias("y", "%mm2", "%b2", "%e_2", tokens, d, relu=False)
    return _func("mlp", f"%x: {_t(tokens, d)}", ["%y"], [_t(tokens, d)], body)


def _matmul(out: str, a: str, b: str, acc: str, m: int, k: int, n: int) -> str:
    return f"  %{out} = linalg.matmul ins({a}, {b} : {_t(m, k)}, {_t(k, n)}) outs({acc} : {_t(m, n)}) -> {_t(m, n)}\n"


def _bias(out: str, x: str, b: str, init: str, m: int, n: int, relu: bool) -> str:
    maps = "[affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d1)>, affine_map<(d0, d1) -> (d0, d1)>]"
    tail = (
        "    %r = arith.maximumf %s, %zero : f32\n    linalg.yield %r : f32\n"
        if relu
        else "    linalg.yield %s : f32\n"
    )
    return (
        f'  %{out} = linalg.generic {{indexing_maps = {maps}, iterator_types = ["parallel", "parallel"]}} '
        f"ins({x}, {b} : {_t(m, n)}, {_t(n)}) outs({init} : {_t(m, n)}) {{\n"
        f"  ^bb0(%in: f32, %bias: f32, %o: f32):\n    %s = arith.addf %in, %bias : f32\n{tail}  }} -> {_t(m, n)}\n"
    )


def gemv(k: int = 768, n: int = 3072) -> str:
    body = f"  %w = arith.constant {_hex(_weights((k, n), 7))}\n  %zero = arith.constant 0.0 : f32\n" + _acc("y", 1, n)
    body += f"  %y = linalg.matmul ins(%x, %w : {_t(1, k)}, {_t(k, n)}) outs(%acc_y : {_t(1, n)}) -> {_t(1, n)}\n"
    return _func("gemv_row", f"%x: {_t(1, k)}", ["%y"], [_t(1, n)], body)


def col_slices(m: int = 256, k: int = 1024, n: int = 128) -> str:
    h = k // 2
    body = f"  %w = arith.constant {_hex(_weights((m, k), 8))}\n  %zero = arith.constant 0.0 : f32\n"
    outs = []
    for i, name in enumerate(("a", "b")):
        body += f"  %w_{name} = tensor.extract_slice %w[0, {i * h}] [{m}, {h}] [1, 1] : {_t(m, k)} to {_t(m, h)}\n"
        body += _acc(name, m, n)
        body += (
            f"  %o_{name} = linalg.matmul {MT} ins(%w_{name}, %r_{name} : {_t(m, h)}, {_t(n, h)}) "
            f"outs(%acc_{name} : {_t(m, n)}) -> {_t(m, n)}\n"
        )
        outs.append(f"%o_{name}")
    return _func("column_halves", f"%r_a: {_t(n, h)}, %r_b: {_t(n, h)}", outs, [_t(m, n)] * 2, body)


def _func(name: str, sig: str, outs: list[str], types: list[str], body: str) -> str:
    res = types[0] if len(types) == 1 else "(" + ", ".join(types) + ")"
    return f"func.func @{name}({sig}) -> {res} {{\n{body}  return {', '.join(outs)} : {', '.join(types)}\n}}\n"


PROGRAMS: dict[str, Callable[[], str]] = {
    "seed": seed,
    "qkv_const": qkv,
    "qkv_arg": lambda: qkv(weight_is_arg=True),
    "mlp": mlp,
    "gemv": gemv,
    "col_slices": col_slices,
}


def _us(x: float | None) -> str:
    return "-" if x is None else f"{x * 1e6:.1f}"


def table(reports: dict[str, BenchReport]) -> str:
    head = ("program", "plan", "predicted us", "measured us", "ours/IREE meas.", "ours/IREE pred.", "max rel err")
    rows = []
    for prog, rep in reports.items():
        iree_pred = rep.iree.predicted_seconds
        for p in rep.plans:
            ratio = rep.ratio(p)
            pr = p.predicted_seconds / iree_pred if p.predicted_seconds is not None and iree_pred else None
            rows.append(
                (
                    prog,
                    p.label + (" (pack/mmt4d)" if p.materialized else ""),
                    _us(p.predicted_seconds),
                    "compile failed" if p.error else _us(p.median),
                    "-" if p.kind == "iree" or ratio is None else f"{ratio:.2f}",
                    "-" if p.kind == "iree" or pr is None else f"{pr:.2f}",
                    "-" if p.max_rel_error is None else f"{p.max_rel_error:.0e}",
                )
            )
    out = table_lines(head, rows, left=2)
    return "\n".join(out)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--target", default="x86_64-avx2")
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--min-time", type=float, default=0.1, help="seconds per measurement")
    ap.add_argument("--programs", nargs="*", default=list(PROGRAMS), choices=list(PROGRAMS))
    ap.add_argument("--no-pareto", action="store_true", help="time only our best plan")
    ap.add_argument("--json", metavar="FILE", help="also write the numbers as JSON")
    args = ap.parse_args(argv)
    ok, why = runnable_here(args.target)
    if not ok:
        print(f"cannot time on this host: {why}", file=sys.stderr)
        return 1
    reports: dict[str, BenchReport] = {}
    with tempfile.TemporaryDirectory(prefix="bench_vs_iree_") as tmp:
        for name in args.programs:
            path = Path(tmp) / f"{name}.mlir"
            path.write_text(PROGRAMS[name]())
            t0 = time.perf_counter()
            reports[name] = bench(
                path,
                args.target,
                pareto=not args.no_pareto,
                repeats=args.repeats,
                min_time=args.min_time,
                progress=lambda m, n=name: print(f"[{n}] {m}", file=sys.stderr, flush=True),
            )
            print(f"[{name}] done in {time.perf_counter() - t0:.1f} s", file=sys.stderr, flush=True)
    print(f"target {args.target}, {args.repeats} interleaved repeats, iree-benchmark-module --device=local-sync")
    print(table(reports))
    print()
    pooled_p: list[float] = []
    pooled_m: list[float] = []
    for name, rep in reports.items():
        rho = rep.spearman
        pairs = [(p.predicted_seconds, p.median) for p in rep.plans if p.predicted_seconds is not None and p.median]
        pooled_p += [a for a, _ in pairs]  # type: ignore[misc]
        pooled_m += [b for _, b in pairs]  # type: ignore[misc]
        best = next(p for p in rep.plans if p.label == "ours: best")
        r = rep.ratio(best)
        why = " (fewer than 3 plans)" if len(pairs) < 3 else " (the predictions tie)"
        shown = f"{rho:+.2f}" if rho is not None else "n/a" + why
        print(
            f"{name:<11} ours best / IREE measured {'-' if r is None else f'{r:.2f}'}; Spearman over {len(pairs)} "
            f"plans {shown}" + "".join(f"; note: {n}" for n in rep.notes)
        )
    rho_all = spearman(pooled_p, pooled_m) if len(pooled_p) >= 3 else None
    shown = "n/a" if rho_all is None else f"{rho_all:+.2f}"
    print(f"pooled Spearman (all plans, all programs, n={len(pooled_p)}): {shown}")
    bad = [
        f"{n}: {p.label}"
        for n, r in reports.items()
        for p in r.plans
        if p.max_rel_error is not None and p.max_rel_error > r.tolerance
    ]
    if args.json:
        data = {
            n: [
                {
                    "plan": p.label,
                    "predicted_s": p.predicted_seconds,
                    "measured_s": p.measured,
                    "max_rel_error": p.max_rel_error,
                }
                for p in r.plans
            ]
            for n, r in reports.items()
        }
        Path(args.json).write_text(json.dumps(data, indent=2))
    if bad:
        print("plans computing different numbers than IREE: " + ", ".join(bad), file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
