"""The docs guide a reader instead of recording runs (issue 50, point 4).

- ``docs/README.md`` links every page of ``docs/``, so none is found only by chance.
- Dated measurements go to one log page, ``docs/measurements.md``; no other page holds a *dated run
  record*: a paragraph (lines between blank lines; a table is one paragraph) with a date written
  ``YYYY-MM-DD`` and a duration (a number with ``s``, ``ms``, ``µs``, ``us``, ``min``, ``seconds`` or
  ``minutes``, or the words "passed in"). A date alone (a profile's or a checkout's provenance) or a
  time alone (a rule stated with its figure) is not one.
- The table of ``docs/conformance.md`` is written by ``benchmarks/bench_conformance.py --write-doc``
  between two marker comments; the rest of the page is left as it is.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DOCS = ROOT / "docs"
LOG = "measurements.md"

LINK = re.compile(r"\]\(([^)#\s]+)(?:#[^)]*)?\)")
"""The target of a Markdown link, without its anchor."""
DATE = re.compile(r"\b20\d\d-[01]\d-[0-3]\d\b")
DURATION = re.compile(r"\b\d+(?:[.,]\d+)?\s?(?:s|ms|µs|us|min|seconds?|minutes?)\b|\bpassed in\b")


def pages() -> list[Path]:
    return sorted(p for p in DOCS.glob("*.md") if p.name != "README.md")


def linked_from_readme() -> set[str]:
    return {m.group(1) for m in LINK.finditer((DOCS / "README.md").read_text(encoding="utf-8"))}


def dated_run_records(text: str) -> list[tuple[int, str]]:
    """(line number, the paragraph's first dated line) of each paragraph holding a date and a duration."""
    out = []
    start = 1
    for block in re.split(r"\n[ \t]*\n", text):
        if DATE.search(block) and DURATION.search(block):
            n, line = next((i, ln) for i, ln in enumerate(block.splitlines()) if DATE.search(ln))
            out.append((start + n, line.strip()[:160]))
        start += block.count("\n") + 2
    return out


def test_readme_links_every_page() -> None:
    links = linked_from_readme()
    missing = [p.name for p in pages() if p.name not in links]
    assert not missing, f"docs/README.md does not link: {', '.join(missing)}"
    broken = sorted(t for t in links if t.endswith(".md") and not (DOCS / t).is_file())
    assert not broken, f"docs/README.md links pages that do not exist: {', '.join(broken)}"


def test_no_page_but_the_log_records_a_run() -> None:
    found = [
        f"docs/{p.name}:{n}: {line}" for p in pages() if p.name != LOG for n, line in dated_run_records(p.read_text())
    ]
    assert not found, (
        f"dated run records outside docs/{LOG} (move the record there, keep the rule here with a link):\n"
        + "\n".join(found)
    )


def test_the_rule_catches_a_run_record_and_not_a_provenance() -> None:
    assert dated_run_records("Measured 2026-12-04 on a 2-core EPYC:\n2,148 passed in 419 s.") == [
        (1, "Measured 2026-12-04 on a 2-core EPYC:")
    ]
    assert dated_run_records("intro\n\n| run | time |\n|---|---|\n| 2026-12-03 | 14 min 21 s |") == [
        (5, "| 2026-12-03 | 14 min 21 s |")
    ]
    assert dated_run_records("the run took 12 ms\n\nin the fixture's provenance (2026-12-02)") == []
    assert dated_run_records("calibrated on the Xeon, IREE 3.13.0, 2026-12-01; 25 programs") == []
    assert dated_run_records((DOCS / LOG).read_text())  # the log holds records, so the rule sees them


def test_the_conformance_table_is_the_benchmarks(tmp_path: Path) -> None:
    """``--write-doc`` replaces exactly the marked part of the page, with a table and no timing, and the
    page's table has the rows and columns the benchmark writes."""
    sys.path.insert(0, str(ROOT / "benchmarks"))
    try:
        import bench_conformance as bench
    finally:
        sys.path.remove(str(ROOT / "benchmarks"))
    page = (DOCS / "conformance.md").read_text()
    bench.check_doc(DOCS / "conformance.md")
    assert bench.DOC == DOCS / "conformance.md"
    cases = [
        bench.Case("hoist_encoding_ops.mlir", 0, "a", "in"),
        bench.Case("hoist_encoding_ops.mlir", 1, "b", "missing", "no e-node X"),
        bench.Case("hoist_encoding_ops.mlir", 2, "c", "iree-rejects"),
        bench.Case("clone_producers_into_dispatch_regions.mlir", 0, "d", "numbers"),
        bench.Case("set_encoding.mlir", 0, "e", "read"),
        bench.Case("form_dispatch_regions.mlir", 0, "f", "unread", "bad"),
    ]
    block = bench.doc_block(cases, "Written by `--write-doc`: a checkout, IREE, a target, a CPU, 2026-12-07.")
    assert "| hoist_encoding_ops | 2 | 1 | 1 | 0 | 0 |" in block
    assert "| propagate_encodings | 0 | 0 | 0 | 0 | 0 |" in block
    assert "| clone_producers_into_dispatch_regions | 1 | 0 | 1 | 0 | 0 |" in block
    assert "| set_encoding (read) | 1 | 1 read | - | 0 | 0 |" in block
    assert "| form_dispatch_regions (read) | 1 | 0 read | - | 1 | 0 |" in block
    assert not dated_run_records(block)

    marked = page.split(bench.DOC_BEGIN)[1].split(bench.DOC_END)[0]
    rows = [ln for ln in marked.splitlines() if ln.startswith("|")]
    ours = bench.doc_table(cases)
    assert rows[:2] == ours[:2]  # the header and the rule
    assert [r.split("|")[1] for r in rows] == [r.split("|")[1] for r in ours]  # the lit files, in order

    written = tmp_path / "conformance.md"
    written.write_text(page)
    bench.write_doc(written, block)
    assert written.read_text() == page.split(bench.DOC_BEGIN)[0] + block + page.split(bench.DOC_END)[1]
