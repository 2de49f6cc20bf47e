"""One home for each shared word of the term language (``egraph/terms.py``, ``mlir/ops.py``).

The head sets are read by the importer, the cost model, the plan graph, the emitter and the
explainer; the rules state the same idea as the ``boundary`` relation of ``rules/analysis.egg``. The
tests tie the Python sets to the rules and keep the sets from being spelled again elsewhere.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

import egg_dispatch
from egg_dispatch.egraph.rules import family_source
from egg_dispatch.egraph.terms import BOUNDARY, CONSTRUCTORS, PLACEMENTS, STORED
from egg_dispatch.mlir.ops import RESHAPE_OPS, TENSOR_RESHAPE_OPS

PACKAGE = Path(egg_dispatch.__file__).resolve().parent


def test_boundary_is_the_relation_the_rules_derive() -> None:
    """``BOUNDARY`` has exactly the heads ``rules/analysis.egg`` makes a ``boundary``."""
    rules = re.findall(r"\(rule \(\(= t \((\w+)[^)]*\)\)\) \(\(boundary t\)\)", family_source("analysis"))
    assert rules, "no boundary rule found in rules/analysis.egg"
    assert set(rules) == BOUNDARY


def test_the_head_sets_nest_and_name_constructors() -> None:
    assert PLACEMENTS < STORED < BOUNDARY <= set(CONSTRUCTORS)
    assert PLACEMENTS == {"Dispatch", "ConstEval"}
    assert TENSOR_RESHAPE_OPS < RESHAPE_OPS


def spelled_sets(source: str, words: frozenset[str]) -> list[int]:
    """Lines of tuple, list or set literals that spell exactly ``words`` (a set that only holds them
    among others is another idea, and may)."""
    lines = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Tuple | ast.List | ast.Set):
            strings = {e.value for e in node.elts if isinstance(e, ast.Constant) and isinstance(e.value, str)}
            if strings == words and len(node.elts) == len(words):
                lines.append(node.lineno)
    return lines


def test_no_module_spells_the_placements_or_the_reshapes_again() -> None:
    found = [
        f"{p.relative_to(PACKAGE)}:{line}"
        for p in sorted(PACKAGE.rglob("*.py"))
        if p.name != "terms.py" and p.name != "ops.py"
        for words in (PLACEMENTS, TENSOR_RESHAPE_OPS)
        for line in spelled_sets(p.read_text(), words)
    ]
    assert not found, "spell these with egraph.terms / mlir.ops instead:\n" + "\n".join(found)


def test_the_checker_finds_a_spelled_set() -> None:
    assert spelled_sets('if op in ("Dispatch", "ConstEval"):\n    pass\n', PLACEMENTS) == [1]
    assert spelled_sets('x = {"Dispatch": 1, "ConstEval": 2}\n', PLACEMENTS) == []
    assert spelled_sets('x = {"Arg", "Dispatch", "ConstEval"}\n', PLACEMENTS) == []


# -- terms are typed: egglog text is written and read in egraph/terms.py only ------------------------------
_RE_CALLS = {"compile", "match", "search", "findall", "fullmatch", "sub", "finditer", "split"}
_TERM_TEXT = re.compile(r"\\?\$v|\\?\((?:" + "|".join(CONSTRUCTORS) + r"|Enc|TCons|TNil|Results|vec-of)\b")
"""What a pattern over term text spells: a let name (``$v12``) or an opening constructor (``(Slice``)."""


def term_text_reads(source: str) -> list[int]:
    """Lines that read term text: a regular expression over it (``re.compile(r"^\\(Slice ...")``) or a
    ``.startswith("(Slice ")``-style test of it."""
    lines = []
    for node in ast.walk(ast.parse(source)):
        if not isinstance(node, ast.Call) or not isinstance(node.func, ast.Attribute) or not node.args:
            continue
        first = node.args[0]
        if not isinstance(first, ast.Constant) or not isinstance(first.value, str):
            continue
        regex = isinstance(node.func.value, ast.Name) and node.func.value.id == "re" and node.func.attr in _RE_CALLS
        prefix = node.func.attr in ("startswith", "endswith")
        if (regex or prefix) and _TERM_TEXT.search(first.value):
            lines.append(node.lineno)
    return lines


def test_no_module_reads_term_text_outside_the_boundary() -> None:
    """The importer builds typed terms (``egraph/terms.py``) and every later stage reads their
    attributes; ``egraph/terms.py`` renders them as egglog text, the one boundary (issue 50)."""
    offenders = {
        str(path.relative_to(PACKAGE)): lines
        for path in sorted(PACKAGE.rglob("*.py"))
        if path.relative_to(PACKAGE).as_posix() != "egraph/terms.py"
        and (lines := term_text_reads(path.read_text()))
    }
    assert offenders == {}


def test_the_term_text_checker_finds_a_read() -> None:
    assert term_text_reads('import re\n_S = re.compile(r"^\\(Slice (\\$v[0-9]+) ")\n') == [2]
    assert term_text_reads('ok = term.startswith("(Arg ")\n') == [1]
    assert term_text_reads('x = re.findall(r"\\$v[0-9]+", text)\n') == [1]
    assert term_text_reads('m = re.match(r"%[\\w]+", mlir)\nok = name.startswith("flow.")\n') == []
