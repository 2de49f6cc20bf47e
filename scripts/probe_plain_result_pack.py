"""Probe where IREE's llvm-cpu codegen rejects a plain contraction whose result is packed in its dispatch.

The ``untile`` family lets a contraction drop data tiling while a consumer still reads its result
encoded (a residual add ``sink_unset`` runs on the tiles, the next contraction's accumulator): the
set_encoding of the plain contraction's result then sits in the contraction's dispatch, a dispatch
IREE's own pipeline never builds. This script compiles that dispatch, f32 ``x[M, K] . w[N, K]^T`` and
its result's ``set_encoding`` in one ``flow.dispatch.region`` (emitted with ``emit_iree`` as
``--emit iree`` does, compiled with ``iree-compile --compile-from=dispatch-creation``), over a grid of
M, N, K for haswell (x86_64-avx2) and cascadelake (x86_64-avx512), with the result encoded as the
next contraction's accumulator (``form = "acc"``, inner tiles M0 x N0), as an accumulator after a ReLU
(``"acc_relu"``) and as an LHS (``"lhs"``, inner tiles M0 x 1). Each row records ``ok``, ``stack N``,
``vector N`` (IREE's message) or ``error: ...``; ``tests/fixtures/probes/plain_result_pack.json`` is its
output, which ``tests/test_codegen_conflicts.py`` holds the conflict model (``cost.conflicts``) to.

Run: ``python scripts/probe_plain_result_pack.py -o tests/fixtures/probes/plain_result_pack.json [--jobs 2]``
(about 5 minutes on 2 cores).
"""

from __future__ import annotations

import argparse
import concurrent.futures
import datetime
import itertools
import json
import re
import sys
from importlib import metadata
from pathlib import Path

from egg_dispatch.emit.iree.module import emit_iree
from egg_dispatch.iree.tools import IreeError, compile_module
from egg_dispatch.measure.micro import MAPS, _encoding, _t
from egg_dispatch.mlir.parser import parse_mlir
from egg_dispatch.target.host import host_cpu
from egg_dispatch.target.profile import load_target

CPUS = {"x86_64-avx2": "haswell", "x86_64-avx512": "cascadelake"}
GRID_M = (4, 8, 16, 24, 32, 48, 64, 128)
GRID_N = (8, 16, 32, 48, 64, 256)
GRID_K = (4, 8, 16, 32, 64, 512)
SPOT = ((16, 32, 16), (32, 32, 32), (8, 64, 16), (4, 256, 8), (64, 64, 8), (48, 32, 32), (128, 256, 512))
"""Shapes the ``acc_relu`` and ``lhs`` forms are probed at: failures and passes of the ``acc`` grid."""
NARROW = ((1, 512, 16), (1, 1024, 64), (1, 4096, 512), (2, 512, 16), (2, 1024, 64), (2, 4096, 32))
"""Narrow-M ``acc`` shapes: M = 1 has result tiles 1 x N0 (one tiled dim, as an operand's), M = 2 has 2 x N0."""


def program(m: int, n: int, k: int, form: str) -> str:
    """The probe's function: the plain contraction and its result's set_encoding in one dispatch that
    returns the encoded value, decoded by a dispatch of its own."""
    f = "f32"
    aliases = [f"#e{i} = {_encoding(i, (f, f, f), m, n, k)}" for i in range(3)]
    a_t, b_t, out = _t((m, k), f), _t((n, k), f), _t((m, n), f)
    enc = _t((m, n), f, "#e0" if form == "lhs" else "#e2")
    ident = "affine_map<(d0, d1) -> (d0, d1)>"
    inner = [
        "%z = arith.constant 0.0 : f32",
        f"%e = tensor.empty() : {out}",
        f"%fl = linalg.fill ins(%z : f32) outs(%e : {out}) -> {out}",
        f"%mm = linalg.matmul indexing_maps = [#map, #map1, #map2] ins(%x, %w : {a_t}, {b_t}) "
        f"outs(%fl : {out}) -> {out}",
    ]
    src = "%mm"
    if form == "acc_relu":
        inner.append(
            f'%g = linalg.generic {{indexing_maps = [{ident}, {ident}], iterator_types = ["parallel", "parallel"]}} '
            f"ins(%mm : {out}) outs(%e : {out}) {{\n      ^bb0(%i: f32, %o: f32):\n"
            f"        %q = arith.maximumf %i, %z : f32\n        linalg.yield %q : f32\n      }} -> {out}"
        )
        src = "%g"
    inner += [f"%s = iree_encoding.set_encoding {src} : {out} -> {enc}", f"flow.return %s : {enc}"]
    body = [
        f"%c = flow.dispatch.region -> ({enc}) {{\n      " + "\n      ".join(inner) + "\n    }",
        f"%r = iree_encoding.unset_encoding %c : {enc} -> {out}",
    ]
    head = MAPS + "\n".join(aliases) + "\n"
    return (
        f"{head}func.func @probe(%x: {a_t}, %w: {b_t}) -> {out} {{\n    " + "\n    ".join(body)
        + f"\n    return %r : {out}\n}}\n"
    )  # fmt: skip


def outcome(text: str, target: str) -> str:
    """``ok``, ``stack N``, ``vector N`` or ``error: <first line>`` for one program, emitted in IREE's
    post-dispatch-creation form (``emit_iree``, as ``calibrate`` and ``--emit iree`` do)."""
    module = emit_iree(parse_mlir(text, "<probe>"), load_target(target), materialize=False)
    try:
        compile_module(module, data_tiling=True, target_cpu=CPUS[target], compile_from="dispatch-creation")
        return "ok"
    except IreeError as err:
        msg = str(err)
        if m := re.search(r"stack allocation limit of \d+ bytes for function. Got (\d+) bytes", msg):
            return f"stack {m.group(1)}"
        if m := re.search(r"large vector sizes \((\d+) bytes\)", msg):
            return f"vector {m.group(1)}"
        line = next((ln for ln in msg.splitlines() if "error:" in ln), msg.splitlines()[0] if msg else "")
        return "error: " + line.strip()[:200]


def rows_to_probe() -> list[dict]:
    rows = [
        {"target": t, "m": m, "n": n, "k": k, "form": "acc"}
        for t, m, n, k in itertools.product(CPUS, GRID_M, GRID_N, GRID_K)
    ]
    rows += [
        {"target": t, "m": m, "n": n, "k": k, "form": f} for t in CPUS for f in ("acc_relu", "lhs") for m, n, k in SPOT
    ]
    rows += [{"target": t, "m": m, "n": n, "k": k, "form": "acc"} for t in CPUS for m, n, k in NARROW]
    return rows


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("-o", "--output", type=Path, required=True)
    ap.add_argument("--jobs", type=int, default=2)
    args = ap.parse_args(argv)
    rows = rows_to_probe()
    with concurrent.futures.ThreadPoolExecutor(args.jobs) as pool:
        results = pool.map(lambda r: outcome(program(r["m"], r["n"], r["k"], r["form"]), r["target"]), rows)
        for i, (r, res) in enumerate(zip(rows, results, strict=True)):
            r["iree"] = res
            print(f"[{i + 1}/{len(rows)}] {r}", file=sys.stderr, flush=True)
    about = (
        f"iree-compile {metadata.version('iree-base-compiler')} (--compile-from=dispatch-creation) on one dispatch "
        "holding a plain f32 matmul x[M,K] . w[N,K]^T and the set_encoding of its result: form 'acc' (the "
        "accumulator encoding, inner tiles M0 x N0), 'acc_relu' (the same after a ReLU in the dispatch), 'lhs' "
        "(encoded as an LHS, inner tiles M0 x 1); 'ok' compiled, 'vector N' hit the vector-size limit of N bytes. "
        f"CPUs: {', '.join(f'{c} ({t})' for t, c in CPUS.items())} via --iree-llvmcpu-target-cpu; recorded "
        f"{datetime.date.today()} on {host_cpu()[0]} by scripts/probe_plain_result_pack.py."
    )
    args.output.write_text(json.dumps({"about": about, "rows": rows}, indent=0) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
