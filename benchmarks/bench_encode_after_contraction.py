"""An encode fused at the end of a contraction's dispatch against the same encode in a dispatch apart.

IREE's own plans of transformer blocks end a contraction's dispatch with the ``set_encoding`` of its
result for the next contraction (the contraction, an elementwise op on the encoded tiles, the
``unset_encoding``, the ``set_encoding``: FuseEncodingOpsIntoDispatchRegions). ``calibrate`` measures
that encode's cost inside the dispatch by kernel profiles (``micro.encode_after_contraction``, the
``KernelCosts.producer_pack["f32:contraction"]`` table the model prices it by); this benchmark also
times the whole calls. It builds both forms of one
f32 M x N x K contraction with a ReLU on its tiles and its result encoded as the LHS of an M x 128 x N
matmul (decoded by a last dispatch, so neither form returns an encoded tensor), and times them
interleaved: per round the per-dispatch kernels (IREE's host-execution profile) and the whole call
without profiling (``iree.profiling.profile_module``). It reports, per shape, the kernel time the
encode adds to the contraction's dispatch when fused against the encode dispatch's own kernel apart,
and the whole call fused / apart.

Apart, IREE gives the result's encode the executable of the LHS's encode when they have one shape
(N = K), and reports their mean: the table marks that column ``(shared)`` there.

Run: ``python benchmarks/bench_encode_after_contraction.py [MxNxK ...] [--rounds 5] [--min-time 0.1]``.
"""

from __future__ import annotations

import argparse
import statistics
import sys

import numpy as np

from egg_dispatch.emit.iree.module import emit_iree
from egg_dispatch.iree.dispatch_creation import iree_compile_flags
from egg_dispatch.iree.profiling import profile_module
from egg_dispatch.iree.tools import compile_module
from egg_dispatch.measure.micro import encode_after_contraction
from egg_dispatch.mlir.parser import parse_mlir
from egg_dispatch.target.host import host_cpu
from egg_dispatch.target.profile import load_target
from egg_dispatch.util.table import table_lines

DEFAULT_SHAPES = ("32x96x32", "32x128x32", "64x768x768", "128x2048x512")


def program(m: int, n: int, k: int, fused: bool) -> str:
    """The function ``@p(a, b)``: encode a and b, contract, ReLU on the tiles, unset, encode the result
    (in the contraction's dispatch when ``fused``, else a dispatch apart), decode it doubled: the
    program ``calibrate`` measures the same encode with (``micro.encode_after_contraction``)."""
    return encode_after_contraction("p", (m, n, k), fused).text


def _kernel(seconds: dict[str, float], part: str) -> float | None:
    hits = [s for name, s in seconds.items() if part in name]
    return min(hits) if hits else None


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("shapes", nargs="*", default=list(DEFAULT_SHAPES), help="MxNxK (default: %(default)s)")
    ap.add_argument("--rounds", type=int, default=5, help="interleaved rounds (default 5)")
    ap.add_argument("--min-time", type=float, default=0.1, help="seconds per measurement (default 0.1)")
    ap.add_argument("--target", default="host", help="target profile (default: host)")
    args = ap.parse_args(argv)
    target = load_target(args.target)
    _, cpu, others = iree_compile_flags(target)
    rng = np.random.default_rng(0)
    rows = []
    for shape in args.shapes:
        m, n, k = (int(x) for x in shape.split("x"))
        inputs = [(rng.integers(-8, 9, size=s) / 16).astype(np.float32) for s in ((m, k), (n, k))]
        modules = {}
        for fused in (False, True):
            text = emit_iree(parse_mlir(program(m, n, k, fused), f"<encode after {shape}>"), target, materialize=False)
            modules[fused] = compile_module(
                text, data_tiling=False, target_cpu=cpu, extra_flags=others, compile_from="dispatch-creation"
            )
        calls: dict[bool, list[float]] = {False: [], True: []}
        contraction: dict[bool, list[float]] = {False: [], True: []}
        encode: list[float] = []
        shared = n == k  # the LHS's encode has the result's shape: one executable for both
        for _ in range(args.rounds):
            for fused in (False, True):
                prof = profile_module(modules[fused], "p", inputs, min_time=args.min_time)
                assert prof.call_seconds is not None
                calls[fused].append(prof.call_seconds)
                kernel = _kernel(prof.seconds, f"matmul_{m}x{n}x{k}")
                if kernel is not None:
                    contraction[fused].append(kernel)
                if not fused:
                    enc = _kernel(prof.seconds, f"encode_{m}x{n}xf32_to_{m}x{n}xf32")
                    if enc is not None:
                        encode.append(enc)
        med = {f: statistics.median(v) * 1e6 for f, v in contraction.items() if v}
        enc_us = statistics.median(encode) * 1e6 if encode else None
        added = med[True] - med[False] if len(med) == 2 else None
        ratio = statistics.median(calls[True]) / statistics.median(calls[False])
        rows.append((
            shape, f"{med.get(False, float('nan')):.2f}", f"{med.get(True, float('nan')):.2f}",
            "-" if added is None else f"{added:+.2f}",
            "-" if enc_us is None else f"{enc_us:.2f}" + (" (shared)" if shared else ""),
            f"{statistics.median(calls[False]) * 1e6:.1f}", f"{statistics.median(calls[True]) * 1e6:.1f}",
            f"{ratio:.3f}",
        ))  # fmt: skip
        print(f"[{shape}] done", file=sys.stderr, flush=True)
    print(f"{host_cpu()[0]}; iree-compile flags of {target.name}; {args.rounds} interleaved rounds, 1 thread")
    head = ("M x N x K", "contraction apart", "fused", "encode adds", "encode apart", "call apart", "call fused",
            "fused / apart")  # fmt: skip
    print("\n".join(table_lines(head, rows, left=1)))
    print("kernel and call times in µs (medians over the rounds)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
