"""Every Markdown file the repository cites exists in it, and so does every section it cites.

Comments, docstrings, rule-file headers, profile notes and the docs point readers to Markdown files
(``docs/iree-data-tiling.md §1.5``, ``tests/fixtures/models/README.md``, a bare ``README.md``). A
citation of a file the repository does not have (notes kept somewhere else, a renamed page) is a
reference nobody can follow, so this test fails on it. A citation resolves when the path exists
relative to the repository root or to the citing file's folder; a bare file name must exist somewhere
in the repository (outside ``.venv``). Citations inside URLs point elsewhere and are not checked.

Sections: ``§N`` or ``§N.M`` right after a cited file (also ranges, ``§1.4-1.8``, and lists, ``§1.9,
§4`` / ``§4.4 and §7``) must be a heading of that file, numbered as ``## N.`` or ``### N.M``.
"""

from __future__ import annotations

import os
import re
import time
from collections.abc import Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SCANNED_DIRS = ("egg_dispatch", "rules", "tests", "benchmarks", "scripts", "notebooks", "docs")
SCANNED_FILES = ("README.md",)
TEXT_SUFFIXES = frozenset(
    {".py", ".egg", ".mlir", ".md", ".json", ".ipynb", ".sh", ".toml", ".txt", ".cfg", ".ini", ".yaml", ".yml"}
)
SKIP_DIRS = frozenset(
    {".venv", ".git", "__pycache__", ".pytest_cache", ".mypy_cache", ".ruff_cache", ".hypothesis", "node_modules"}
)
MD = "." + "md"  # spelled apart so that this file's own text holds no citation to check

MD_END = re.compile(r"\." + "md(?![\\w-])")
"""Where a Markdown file name ends (not inside a longer name: ``.mdx``, ``.md5``)."""
PATH_CHAR = re.compile(r"[\w./-]")
SECTION = r"§\s?\d+(?:\.\d+)*(?:\s?[-–]\s?\d+(?:\.\d+)*)?"
SECTIONS = re.compile(rf"[ \t]*\(?({SECTION}(?:(?:\s*,\s*|\s+and\s+|\s+or\s+){SECTION})*)")
"""The sections cited right after a file: ``§2.5``, ``§1.4-1.8``, ``§1.9, §4``, ``§4.4 and §7``."""
NUMBER = re.compile(r"\d+(?:\.\d+)*")
URL = re.compile(r"https?://\S+")
HEADING = re.compile(r"^#{1,6}\s+§?(\d+(?:\.\d+)*)\.?(?:\s|$)", re.MULTILINE)


def _walk(top: Path) -> Iterator[Path]:
    for folder, dirs, files in os.walk(top):
        dirs[:] = [d for d in dirs if d not in SKIP_DIRS and not d.endswith(".egg-info")]
        for name in files:
            yield Path(folder) / name


def scanned_files(root: Path = ROOT) -> list[Path]:
    """The text files whose citations are checked."""
    out = [root / f for f in SCANNED_FILES if (root / f).is_file()]
    for d in SCANNED_DIRS:
        if (root / d).is_dir():
            out.extend(p for p in _walk(root / d) if p.suffix in TEXT_SUFFIXES)
    return sorted(out)


def markdown_index(root: Path = ROOT) -> dict[str, list[Path]]:
    """Every Markdown file of the repository, by file name."""
    index: dict[str, list[Path]] = {}
    for p in _walk(root):
        if p.suffix == MD:
            index.setdefault(p.name, []).append(p)
    return index


def _resolve(cited: str, citing: Path, root: Path, index: dict[str, list[Path]]) -> list[Path]:
    if cited.startswith("/"):  # an absolute path counts only when it is inside the repository
        p = Path(cited)
        return [p] if p.is_file() and root.resolve() in p.resolve().parents else []
    found = [p for p in (root / cited, citing.parent / cited) if p.is_file()]
    if not found and "/" not in cited:
        found = index.get(cited, [])
    return found


def _sections(path: Path, cache: dict[Path, set[str]]) -> set[str]:
    if path not in cache:
        cache[path] = set(HEADING.findall(path.read_text(encoding="utf-8", errors="replace")))
    return cache[path]


def check_text(
    text: str,
    citing: Path,
    root: Path = ROOT,
    index: dict[str, list[Path]] | None = None,
    cache: dict[Path, set[str]] | None = None,
) -> list[str]:
    """The broken citations in ``text`` (the contents of ``citing``), one message each."""
    index = markdown_index(root) if index is None else index
    cache = {} if cache is None else cache
    text = text.replace("\\u00a7", "§")  # JSON files may escape the section sign
    urls = [m.span() for m in URL.finditer(text)]
    try:
        where = citing.relative_to(root)
    except ValueError:
        where = citing
    problems: list[str] = []
    for m in MD_END.finditer(text):
        start = m.start()  # the name and its folders run back from ".md" over path characters
        while start > 0 and PATH_CHAR.match(text[start - 1]):
            start -= 1
        cited = text[start : m.end()]
        if not re.search(r"[\w-]\." + "md$", cited) or any(a <= start < b for a, b in urls):
            continue
        line = text.count("\n", 0, start) + 1
        targets = _resolve(cited, citing, root, index)
        if not targets:
            problems.append(f"{where}:{line}: cites {cited}, which is not a file of the repository")
            continue
        tail = SECTIONS.match(text, m.end())
        if tail is None:
            continue
        for number in NUMBER.findall(tail.group(1)):
            if not any(number in _sections(t, cache) for t in targets):
                problems.append(f"{where}:{line}: cites {cited} §{number}, which has no heading numbered {number}")
    return problems


def broken_citations(root: Path = ROOT) -> list[str]:
    index = markdown_index(root)
    cache: dict[Path, set[str]] = {}
    problems: list[str] = []
    for path in scanned_files(root):
        problems += check_text(path.read_text(encoding="utf-8", errors="replace"), path, root, index, cache)
    return problems


def test_every_cited_markdown_file_and_section_exists() -> None:
    start = time.perf_counter()
    problems = broken_citations()
    assert not problems, "broken citations:\n" + "\n".join(problems)
    assert time.perf_counter() - start < 5.0  # a repository scan, not a crawl


def test_the_check_catches_a_missing_file_or_section() -> None:
    """The scan would notice: a file that is nowhere, a path that does not resolve, a missing section."""
    citing = ROOT / "egg_dispatch" / "example.py"
    index = markdown_index()
    assert check_text(f"see domain{MD} and egglog-notes{MD} §7", citing, index=index) == [
        f"egg_dispatch/example.py:1: cites domain{MD}, which is not a file of the repository",
        f"egg_dispatch/example.py:1: cites egglog-notes{MD}, which is not a file of the repository",
    ]
    assert check_text(f"x\n# shared/domain{MD} §3", citing, index=index) == [
        f"egg_dispatch/example.py:2: cites shared/domain{MD}, which is not a file of the repository"
    ]
    outside = Path(__file__).resolve().parents[2] / f"outside{MD}"  # absolute, outside the repository
    assert check_text(f"({outside})", citing, index=index) == [
        f"egg_dispatch/example.py:1: cites {outside}, which is not a file of the repository"
    ]
    assert check_text(f"(docs/iree-data-tiling{MD} §1.5, §99 and §3)", citing, index=index) == [
        f"egg_dispatch/example.py:1: cites docs/iree-data-tiling{MD} §99, which has no heading numbered 99"
    ]
    assert check_text(f"docs/iree-data-tiling{MD} \\u00a71.4-1.42", citing, index=index) == [
        f"egg_dispatch/example.py:1: cites docs/iree-data-tiling{MD} §1.42, which has no heading numbered 1.42"
    ]
    # what resolves: root-relative paths, folder-relative paths, bare names, and anything inside a URL
    assert check_text(f"tests/fixtures/models/README{MD}, README{MD}", citing, index=index) == []
    assert check_text(f"see ../README{MD}", ROOT / "docs" / "x.py", index=index) == []
    assert check_text(f"https://github.com/iree-org/iree/blob/main/docs/nowhere{MD}", citing, index=index) == []
