"""How fast is the NumPy mmt4d reference kernel next to a plain ``np.matmul`` on the same data?

The evaluator runs every data-tiled contraction through ``egg_dispatch.evaluate.kernels.mmt4d``, so it must stay
close to BLAS speed (goal: mmt4d alone >= 0.8x np.matmul at 1024^3 f32). For each size and tile shape
(AVX-512-like 16x16x1, NEON-like 8x8x1) this times, interleaved in one process:

* ``matmul``  — ``A @ B`` on the row-major operands;
* ``mmt4d``   — mmt4d alone on operands packed beforehand (LHS tiles [M0,K0], RHS B[K,N] tiles [N0,K0]);
* ``chain``   — pack(A) + pack(B) + mmt4d + unpack, as the evaluator runs a set/unset_encoding pair.

Reported as median GFLOP/s (2·n³ flop) over the repeats, with ratios to ``matmul``.
Run: ``python benchmarks/bench_mmt4d.py [--sizes 256 512 ...] [--repeats N]``.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # run from a checkout without installing
from egg_dispatch.evaluate.kernels import mmt4d, pack, unpack

TILES = {"avx512 16x16x1": (16, 16, 1), "neon 8x8x1": (8, 8, 1)}
DEFAULT_REPEATS = {256: 60, 512: 25, 1024: 11, 2048: 5}


def _variants(a: np.ndarray, b: np.ndarray) -> dict[str, Callable[[], np.ndarray]]:
    """Closures to time for one size; the packed operands for 'mmt4d' are prepared here, untimed."""
    n = a.shape[0]
    fns: dict[str, Callable[[], np.ndarray]] = {"matmul": lambda: a @ b}
    for label, (m0, n0, k0) in TILES.items():
        pa = pack(a, [0, 1], [m0, k0])
        pb = pack(b, [1, 0], [n0, k0], [1, 0])

        def chain(m0: int = m0, n0: int = n0, k0: int = k0) -> np.ndarray:
            acc = mmt4d(pack(a, [0, 1], [m0, k0]), pack(b, [1, 0], [n0, k0], [1, 0]))
            return unpack(acc, [0, 1], [m0, n0], dest_shape=(n, n))

        fns[f"mmt4d {label}"] = lambda pa=pa, pb=pb: mmt4d(pa, pb)
        fns[f"chain {label}"] = chain
    return fns


def bench_size(n: int, repeats: int, seed: int = 0) -> dict[str, list[float]]:
    """Seconds of every repeat per variant; variants are interleaved, their order rotated each repeat."""
    rng = np.random.default_rng(seed)
    a = rng.standard_normal((n, n), dtype=np.float32)
    b = rng.standard_normal((n, n), dtype=np.float32)
    fns = _variants(a, b)
    want = a.astype(np.float64) @ b.astype(np.float64)
    for name, fn in fns.items():  # warm-up, and a correctness check of every variant
        out = fn()
        if name.startswith("mmt4d"):
            m0, n0 = TILES[name.removeprefix("mmt4d ")][:2]
            out = unpack(out, [0, 1], [m0, n0], dest_shape=(n, n))
        np.testing.assert_allclose(out, want, rtol=1e-3, atol=1e-2 * np.sqrt(n))
    names = list(fns)
    times: dict[str, list[float]] = {name: [] for name in names}
    for r in range(repeats):
        for name in names[r % len(names) :] + names[: r % len(names)]:
            t0 = time.perf_counter()
            fns[name]()
            times[name].append(time.perf_counter() - t0)
    return times


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[256, 512, 1024, 2048])
    parser.add_argument("--repeats", type=int, default=None, help="repeats per size (default: by size)")
    args = parser.parse_args(argv)

    blas = os.environ.get("OPENBLAS_CORETYPE", "auto")
    print(f"numpy {np.__version__}, OPENBLAS_CORETYPE={blas}, {os.cpu_count()} CPUs; f32, median GFLOP/s\n")
    header = (
        f"{'n':>5} {'tiles':<15} {'matmul':>8} {'mmt4d':>8} {'ratio':>6} {'chain':>8} {'ratio':>6}"
        f"  {'best: mmt4d':>11} {'chain':>6}"
    )
    print(header)
    print("-" * len(header))
    for n in args.sizes:
        times = bench_size(n, args.repeats or DEFAULT_REPEATS.get(n, 5))
        gflops = {name: 2 * n**3 / statistics.median(ts) / 1e9 for name, ts in times.items()}
        best = {name: 2 * n**3 / min(ts) / 1e9 for name, ts in times.items()}
        base = gflops["matmul"]
        for label in TILES:
            mm, ch = gflops[f"mmt4d {label}"], gflops[f"chain {label}"]
            bm, bc = (best[f"{v} {label}"] / best["matmul"] for v in ("mmt4d", "chain"))
            print(
                f"{n:>5} {label:<15} {base:>8.1f} {mm:>8.1f} {mm / base:>6.2f} {ch:>8.1f} {ch / base:>6.2f}"
                f"  {bm:>11.2f} {bc:>6.2f}"
            )
        sys.stdout.flush()
    print("\nmmt4d = mmt4d alone on pre-packed operands; chain = pack(A) + pack(B) + mmt4d + unpack;")
    print("ratio = median GFLOP/s relative to np.matmul on the same row-major data; best-of ratios compare")
    print("the fastest repeats (mmt4d, chain), which is steadier on a shared machine.")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
