"""IREE's own DispatchCreation lit tests through the oracle (``egg_dispatch.iree.oracle``): for every
case (``// -----`` chunk) of the lit files of the passes the rules mirror, is IREE's plan among ours?

Given an IREE source checkout (``--iree-src DIR``; nothing is downloaded), each chunk of

- hoist_encoding_ops, propagate_encodings, fuse_encoding_ops_into_dispatch_regions (their RUN line's
  pipeline) and clone_producers_into_dispatch_regions (with the options IREE's data-tiling pipeline
  runs it with: not aggressive) goes through IREE 3.13's pass with ``iree-opt`` and the oracle, with
  the families that mirror the pass;
- set_encoding and form_dispatch_regions is only read and imported (reading alone: their passes make
  IREE's start state, which ``start/`` models);

and the table says, per file: the cases IREE runs (a chunk IREE's pass rejects is not one), IREE's plan
among ours, not among them, refused by our reader or importer (a bug: IREE accepts the input), and
internal errors; then every case that is not among ours, with the first decision the e-graph lacks.

Run: ``python benchmarks/bench_conformance.py --iree-src DIR [--target x86_64-avx2] [--json FILE]``.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
import time
import traceback
from dataclasses import asdict, dataclass
from pathlib import Path

from egg_dispatch.egraph.imported import ImportError_
from egg_dispatch.iree.dispatch_creation import first_error_line
from egg_dispatch.iree.oracle import PASSES, IreePass, oracle, saturated
from egg_dispatch.iree.tools import IreeError, iree_opt_passes
from egg_dispatch.mlir.ops import sym_name
from egg_dispatch.mlir.parser import MLIRSyntaxError, parse_mlir
from egg_dispatch.target.host import host_cpu
from egg_dispatch.target.profile import Target, load_target
from egg_dispatch.util.table import table_lines

TESTS = Path("compiler/src/iree/compiler/DispatchCreation/test")
ORACLE_FILES = {
    "hoist_encoding_ops.mlir": PASSES["hoist"].families,
    "propagate_encodings.mlir": PASSES["propagate"].families,
    "fuse_encoding_ops_into_dispatch_regions.mlir": PASSES["fuse"].families,
    "clone_producers_into_dispatch_regions.mlir": PASSES["clone"].families,
}
"""Each lit file's families: those the oracle asks for its pass (``iree.oracle.PASSES``)."""
READ_FILES = ("set_encoding.mlir", "form_dispatch_regions.mlir")
PIPELINE = re.compile(r'--pass-pipeline="([^"]+)"')
FUNC = re.compile(r"func(?:\.func)? (?:public |private )?@(\w+)")


@dataclass
class Case:
    file: str
    index: int
    name: str
    status: str  # in, missing, unread, internal, iree-rejects, numbers, read
    detail: str = ""


def chunks(text: str) -> list[str]:
    return [c for c in text.split("\n// -----\n") if c.strip()]


def first_pipeline(text: str) -> str:
    m = PIPELINE.search(text)
    if m is None:
        raise SystemExit("no --pass-pipeline on a RUN line")
    return m.group(1)


def run_oracle_file(path: Path, families: tuple[str, ...], target: Target) -> list[Case]:
    text = path.read_text()
    if path.name.startswith("clone_"):
        p = PASSES["clone"]  # as IREE's data-tiling pipeline runs it (not the RUN line's aggressive=true)
    else:
        p = IreePass(first_pipeline(text), families, "")
    out = []
    for i, chunk in enumerate(chunks(text)):
        name = m.group(1) if (m := FUNC.search(chunk)) else f"chunk {i}"
        try:
            r = oracle(chunk, p, target)
            out.append(Case(path.name, i, name, r.status, r.detail))
        except Exception as e:  # an internal error: a bug with a case
            out.append(Case(path.name, i, name, "internal", f"{type(e).__name__}: {_last_frame(e)}"))
    return out


def run_read_file(path: Path, target: Target) -> list[Case]:
    text = path.read_text()
    pipeline = first_pipeline(text)
    out = []
    for i, chunk in enumerate(chunks(text)):
        name = m.group(1) if (m := FUNC.search(chunk)) else f"chunk {i}"
        try:
            iree_opt_passes(chunk, pipeline)
        except IreeError as e:
            out.append(Case(path.name, i, name, "iree-rejects", first_error_line(e.stderr or str(e))))
            continue
        try:
            module = parse_mlir(chunk, "<case>")
            for f in module.functions():
                saturated(module, target, (), sym_name(f))
            out.append(Case(path.name, i, name, "read"))
        except (MLIRSyntaxError, ImportError_, ValueError, KeyError) as e:
            out.append(Case(path.name, i, name, "unread", first_error_line(str(e.args[0] if e.args else e))))
        except Exception as e:
            out.append(Case(path.name, i, name, "internal", f"{type(e).__name__}: {_last_frame(e)}"))
    return out


def _last_frame(e: Exception) -> str:
    frames = traceback.extract_tb(e.__traceback__)
    where = f" ({Path(frames[-1].filename).name}:{frames[-1].lineno})" if frames else ""
    return f"{str(e).splitlines()[0] if str(e) else ''}{where}"


def table(cases: list[Case]) -> list[str]:
    rows = []
    for f in [*ORACLE_FILES, *READ_FILES]:
        mine = [c for c in cases if c.file == f]
        runs = [c for c in mine if c.status != "iree-rejects"]
        n = {s: sum(c.status == s for c in runs) for s in ("in", "missing", "unread", "internal", "numbers", "read")}
        among = str(n["in"]) if f in ORACLE_FILES else f"{n['read']} read"
        rows.append((f, str(len(runs)), among, str(n["missing"] + n["numbers"]), str(n["unread"]), str(n["internal"])))
    head = ("lit file", "cases IREE runs", "IREE's plan among ours", "not among ours", "refused (read)", "internal")
    return table_lines(head, rows)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--iree-src", type=Path, required=True, help="an IREE source checkout")
    ap.add_argument("--target", default="x86_64-avx2")
    ap.add_argument("--json", type=Path, help="also write every case's result here")
    args = ap.parse_args()
    folder = args.iree_src / TESTS
    if not folder.is_dir():
        raise SystemExit(f"{folder}: not a directory (--iree-src names an IREE checkout)")
    target = load_target(args.target)
    start = time.perf_counter()
    cases: list[Case] = []
    for f, families in ORACLE_FILES.items():
        cases += run_oracle_file(folder / f, families, target)
    for f in READ_FILES:
        cases += run_read_file(folder / f, target)
    print(f"IREE's DispatchCreation lit tests through the oracle, target {target.name}, on {host_cpu()[0]}")
    print(f"({len(cases)} chunks in {time.perf_counter() - start:.0f} s)\n")
    print("\n".join(table(cases)))
    print()
    for c in cases:
        if c.status not in ("in", "read", "iree-rejects"):
            print(f"{c.file} #{c.index} @{c.name}: {c.status}: {c.detail}")
    if args.json:
        args.json.write_text(json.dumps([asdict(c) for c in cases], indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
