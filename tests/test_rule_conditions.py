"""Every numbered legality condition of a rule file names what enforces it and has a lit case.

A rule file (``rules/<stem>.egg``) lists the conditions under which its rules apply as numbered
comment lines (``;;   2. text  [relation ...]``), numbered 1..n through the file. Each condition
names, in brackets, the egglog relation, function or constructor pattern that enforces it (or
inherits the bracket of its ``Applies only when [...]`` line): a condition is enforced beside its
rule, or says which relation does it.

Each condition is cited by a lit case of its family (``tests/rules/<family>/*.mlir``), as
``Condition N`` / ``Conditions N-M`` / ``Conditions N, M and K`` in a comment. In a family of several
rule files (``FAMILY_FILES``) the citation names the file (``fuse_pack.egg condition 1``), or the
lit file is named after it (``[dont_]fuse_pack...mlir``). A citation of a condition that does not
exist fails too.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from egg_dispatch.egraph.rules import FAMILIES, RULES_DIR, family_files
from egg_dispatch.egraph.terms import SCHEMA

LIT = Path(__file__).parent / "rules"

_DECLARED = re.compile(r"\((?:relation|function|constructor|sort) ([\w-]+)")
_VARIANT = re.compile(r"\(datatype \w+((?: \([\w-]+[^()]*\))+)\)")
_CONDITION = re.compile(r"^;;\s+(\d+)\.\s+(.*)$")
_BRACKETS = re.compile(r"\[([^\]]+)\]")
_CITATION = re.compile(r"(?:(\w+)\.egg,? )?[Cc]onditions? (\d+(?:\s*(?:,|and|-)\s*\d+)*)")


def declared_names() -> set[str]:
    texts = [SCHEMA, *((RULES_DIR / p.name).read_text() for p in RULES_DIR.iterdir() if p.name.endswith(".egg"))]
    names = {n for t in texts for n in _DECLARED.findall(t)}
    for t in texts:
        for variants in _VARIANT.findall(t):
            names.update(re.findall(r"\(([\w-]+)", variants))
    return names


def conditions(text: str) -> dict[int, str]:
    """Number -> text (with its continuation lines and, when it has no bracket, the bracket of the
    ``Applies only when`` line above it) of each numbered condition in a rule file."""
    out: dict[int, str] = {}
    inherited: dict[int, str] = {}
    preface, current = "", None
    for line in text.splitlines():
        m = _CONDITION.match(line)
        if not line.startswith(";;"):
            preface, current = "", None
        elif "Applies only when" in line:
            preface, current = " ".join(_BRACKETS.findall(line)), None
        elif m:
            current = int(m.group(1))
            if current in out:
                raise AssertionError(f"condition {current} is numbered twice")
            out[current], inherited[current] = m.group(2), preface
        elif current is not None and re.match(r";;\s{5,}\S", line):
            out[current] += " " + line[2:].strip()
        else:
            current = None
    return {n: t if _BRACKETS.search(t) or not inherited[n] else f"{t} [{inherited[n]}]" for n, t in out.items()}


def cited(numbers: str) -> set[int]:
    out: set[int] = set()
    for part in re.split(r"\s*(?:,|and)\s*", numbers):
        lo, _, hi = part.partition("-")
        out.update(range(int(lo), int(hi or lo) + 1))
    return out


def citations(family: str) -> dict[str, dict[int, list[str]]]:
    """Rule-file stem -> condition -> the lit cases (file:line) that cite it."""
    stems = family_files(family)
    out: dict[str, dict[int, list[str]]] = {s: {} for s in stems}
    for path in sorted((LIT / family).glob("*.mlir")):
        named = [s for s in stems if path.stem.removeprefix("dont_").startswith(s)]
        for i, line in enumerate(path.read_text().splitlines(), 1):
            if not line.startswith("//") or "CHECK" in line or "RUN:" in line:
                continue
            for stem, numbers in _CITATION.findall(line):
                where = f"{path.relative_to(LIT.parent)}:{i}"
                stem = stem or (stems[0] if len(stems) == 1 else named[0] if named else "")
                assert stem in out, f"{where}: name the rule file the condition is of ({', '.join(stems)})"
                for n in cited(numbers):
                    out[stem].setdefault(n, []).append(where)
    return out


RULE_FILES = [(f, s) for f in FAMILIES for s in family_files(f)]


@pytest.mark.parametrize(("family", "stem"), RULE_FILES, ids=[s for _, s in RULE_FILES])
def test_every_condition_names_its_relation_and_is_cited(family: str, stem: str) -> None:
    conds = conditions((RULES_DIR / f"{stem}.egg").read_text())
    assert conds, f"rules/{stem}.egg lists no numbered condition"
    assert sorted(conds) == list(range(1, len(conds) + 1)), f"rules/{stem}.egg: conditions {sorted(conds)}"
    names = declared_names()
    for n, text in conds.items():
        words = {w for b in _BRACKETS.findall(text) for w in re.findall(r"[\w-]+", b)}
        assert words & names, f"rules/{stem}.egg condition {n} names no relation that enforces it: {text}"
    cites = citations(family)[stem]
    missing = sorted(set(conds) - set(cites))
    assert not missing, f"rules/{stem}.egg: no lit case in tests/rules/{family}/ cites condition(s) {missing}"
    unknown = {n: w for n, w in cites.items() if n not in conds}
    assert not unknown, f"citations of conditions rules/{stem}.egg does not have: {unknown}"


def test_the_readers_can_fail() -> None:
    text = ";; Applies only when [tile-aligned sl e]:\n;;   1. a\n;;      b\n;;   2. c [boundary x]\n(rule)\n;; 3. d\n"
    assert conditions(text) == {1: "a b [tile-aligned sl e]", 2: "c [boundary x]", 3: "d"}
    assert cited("1-3, 5 and 7") == {1, 2, 3, 5, 7}
    assert "boundary" in declared_names() and "Tiled" in declared_names() and "Slice" in declared_names()
