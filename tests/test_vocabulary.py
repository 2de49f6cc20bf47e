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
