"""IREE's own passes as the oracle of the rules (issue 29, point 1): each case under
``tests/conformance/<pass>/`` (chunks split by ``// -----``, as IREE's lit tests) is run through
IREE 3.13's pass with ``iree-opt``, and the plan IREE makes must be one of the plans the matching rule
families hold for the program (``egg_dispatch.iree.oracle``), computing the program's numbers.

Each chunk says what it expects on a line of its own:

- ``// EXPECT: in`` -- IREE's plan is one of ours;
- ``// EXPECT: missing <text>`` -- it is not yet, and the first decision the e-graph lacks reads
  ``<text>`` (a rule still to write; the test fails once the rule exists, and the line is updated);
- ``// EXPECT: iree-rejects`` -- IREE's pass itself refuses the input.

The cases are this project's own, one per behaviour of each pass, written from IREE's pass sources
(``compiler/src/iree/compiler/DispatchCreation/``) and checked against IREE 3.13 here.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from egg_dispatch.iree.oracle import PASSES, oracle
from egg_dispatch.iree.tools import find_tool

ROOT = Path(__file__).parent / "conformance"
EXPECT = re.compile(r"^// EXPECT: (in|missing|iree-rejects)\b ?(.*)$", re.M)
FUNC = re.compile(r"func(?:\.func)? (?:public |private )?@(\w+)")


def cases() -> list[tuple[str, str, int, str]]:
    """(pass, file, chunk number, chunk text) of every case."""
    out = []
    for path in sorted(ROOT.glob("*/*.mlir")):
        assert path.parent.name in PASSES, f"{path}: no IREE pass named {path.parent.name!r}"
        for i, chunk in enumerate(path.read_text().split("\n// -----\n")):
            if chunk.strip():
                out.append((path.parent.name, path.name, i, chunk))
    return out


CASES = cases()


def _id(case: tuple[str, str, int, str]) -> str:
    name = FUNC.search(case[3])
    return f"{case[0]}/{case[1]}:{name.group(1) if name else case[2]}"


def test_every_case_says_what_it_expects() -> None:
    for case in CASES:
        found = EXPECT.findall(case[3])
        assert len(found) == 1, f"{_id(case)}: one '// EXPECT:' line, found {len(found)}"
        kind, text = found[0]
        assert kind != "missing" or text, f"{_id(case)}: 'missing' names the decision the e-graph lacks"


@pytest.mark.skipif(find_tool("iree-opt") is None, reason="iree-opt not installed")
@pytest.mark.iree
@pytest.mark.parametrize("case", CASES, ids=[_id(c) for c in CASES])
def test_irees_plan_is_one_of_ours(case: tuple[str, str, int, str]) -> None:
    pass_name, _, _, text = case
    kind, want = EXPECT.findall(text)[0]
    result = oracle(text, pass_name)
    if kind == "iree-rejects":
        assert result.status == "iree-rejects", (result.status, result.detail)
    elif kind == "missing":
        assert result.status == "missing", (result.status, result.detail, result.iree_text)
        assert want in result.detail, result.detail
    else:
        assert result.status == "in", (result.status, result.detail, result.iree_text)
