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

Run: ``python benchmarks/bench_conformance.py --iree-src DIR [--target x86_64-avx2] [--json FILE]
[--write-doc [PAGE]]``. ``--write-doc`` writes the table, with the checkout, IREE version, target, CPU and
date it was made with, into ``docs/conformance.md`` (or PAGE) between its two ``DOC_BEGIN`` / ``DOC_END``
comments, leaving the rest of the page as it is: the page's table is the last run's, never typed by hand.
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import re
import subprocess
import sys
import time
import traceback
from dataclasses import asdict, dataclass
from importlib import metadata
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
DOC = Path(__file__).resolve().parents[1] / "docs" / "conformance.md"
DOC_BEGIN = "<!-- bench_conformance.py --write-doc: begin -->"
DOC_END = "<!-- bench_conformance.py --write-doc: end -->"
"""The comments around the part of ``docs/conformance.md`` that ``--write-doc`` replaces."""
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


def _counts(cases: list[Case], f: str) -> tuple[int, dict[str, int]]:
    """The cases IREE runs of lit file ``f`` (a chunk its pass rejects is not one), and their count by status."""
    runs = [c for c in cases if c.file == f and c.status != "iree-rejects"]
    statuses = ("in", "missing", "unread", "internal", "numbers", "read")
    return len(runs), {s: sum(c.status == s for c in runs) for s in statuses}


def table(cases: list[Case]) -> list[str]:
    rows = []
    for f in [*ORACLE_FILES, *READ_FILES]:
        runs, n = _counts(cases, f)
        among = str(n["in"]) if f in ORACLE_FILES else f"{n['read']} read"
        rows.append((f, str(runs), among, str(n["missing"] + n["numbers"]), str(n["unread"]), str(n["internal"])))
    head = ("lit file", "cases IREE runs", "IREE's plan among ours", "not among ours", "refused (read)", "internal")
    return table_lines(head, rows)


def doc_table(cases: list[Case]) -> list[str]:
    """``table`` as the Markdown of ``docs/conformance.md``: a lit file by its stem, a file that is only
    read marked so, with ``-`` for the plans it does not compare."""
    head = ("lit file", "cases IREE runs", "IREE's plan among ours", "not among ours", "refused by our reader")
    out = ["| " + " | ".join((*head, "internal errors")) + " |", "|---|---|---|---|---|---|"]
    for f in [*ORACLE_FILES, *READ_FILES]:
        runs, n = _counts(cases, f)
        stem = f.removesuffix(".mlir")
        cells: tuple[object, ...]
        if f in ORACLE_FILES:
            cells = (stem, runs, n["in"], n["missing"] + n["numbers"], n["unread"], n["internal"])
        else:
            cells = (f"{stem} (read)", runs, f"{n['read']} read", "-", n["unread"], n["internal"])
        out.append("| " + " | ".join(str(c) for c in cells) + " |")
    return out


def checkout(iree_src: Path) -> str:
    """``iree_src``'s commit and its date, as git gives them, or what it is when git cannot say."""
    try:
        done = subprocess.run(
            ["git", "-C", str(iree_src), "log", "-1", "--format=%h (%cs)"], capture_output=True, text=True, check=True
        )
    except (OSError, subprocess.CalledProcessError):
        return f"{iree_src.name} (not a git checkout)"
    return done.stdout.strip()


def doc_block(cases: list[Case], provenance: str) -> str:
    """What ``--write-doc`` puts between ``DOC_BEGIN`` and ``DOC_END``: what the run was made with
    (``made_with``), then the table; no timings (a run's times are the benchmark's output, not the page's)."""
    return "\n".join([DOC_BEGIN, provenance, "", *doc_table(cases), DOC_END])


def made_with(iree_src: Path, target: Target, today: datetime.date | None = None) -> str:
    """The sentence above the page's table: the checkout, IREE version, target, CPU and date of the run."""
    try:
        iree = f"IREE {metadata.version('iree-base-compiler')}'s `iree-opt`"
    except metadata.PackageNotFoundError:  # pragma: no cover - the benchmark needs IREE
        iree = "`iree-opt`"
    when = (today or datetime.date.today()).isoformat()
    return (
        f"Written by `--write-doc`: an IREE checkout at {checkout(iree_src)}, {iree}, target {target.name}, "
        f"on {host_cpu()[0]} ({os.cpu_count()} cores), {when}."
    )


def write_doc(page: Path, block: str) -> None:
    """Replace the part of ``page`` from ``DOC_BEGIN`` to ``DOC_END`` (both kept) with ``block``; the
    rest of the page stays byte for byte. A page without exactly one such part is an error."""
    text = page.read_text()
    check_doc(page, text)
    start, end = text.index(DOC_BEGIN), text.index(DOC_END) + len(DOC_END)
    page.write_text(text[:start] + block + text[end:])


def check_doc(page: Path, text: str | None = None) -> None:
    """SystemExit unless ``page`` has ``DOC_BEGIN`` once, then ``DOC_END`` once."""
    text = page.read_text() if text is None else text
    if text.count(DOC_BEGIN) != 1 or text.count(DOC_END) != 1 or text.index(DOC_BEGIN) > text.index(DOC_END):
        raise SystemExit(f"{page}: needs one {DOC_BEGIN!r} and, after it, one {DOC_END!r}")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--iree-src", type=Path, required=True, help="an IREE source checkout")
    ap.add_argument("--target", default="x86_64-avx2")
    ap.add_argument("--json", type=Path, help="also write every case's result here")
    ap.add_argument(
        "--write-doc",
        type=Path,
        nargs="?",
        const=DOC,
        metavar="PAGE",
        help="write the table into PAGE (default docs/conformance.md) between its two marker comments",
    )
    args = ap.parse_args()
    folder = args.iree_src / TESTS
    if not folder.is_dir():
        raise SystemExit(f"{folder}: not a directory (--iree-src names an IREE checkout)")
    if args.write_doc:
        check_doc(args.write_doc)  # before the run, not after it
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
    if args.write_doc:
        write_doc(args.write_doc, doc_block(cases, made_with(args.iree_src, target)))
        print(f"\nwrote the table into {args.write_doc}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
