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
from hypothesis import given, settings
from hypothesis import strategies as st

from egg_dispatch.iree.oracle import PASSES, oracle
from egg_dispatch.iree.tools import find_tool
from tests.hypothesis_profiles import examples

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
    assert len(CASES) >= 40
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


# ------------------------------------------------------------------------------------- property

ELEMENTS = {"f32": ("f32", "f32", "0.0"), "f16": ("f16", "f32", "0.0"), "i8": ("i8", "i32", "0")}
"""Operand element type -> (operand, accumulator, zero) of the contractions the property draws."""


def _dense(rows: int, cols: int, batch: int | None, elem: str, salt: int) -> str:
    """A dense literal whose elements differ (``(3i + 5j + salt) mod 7 - 3``, as floats unless i8)."""

    def v(i: int, j: int) -> str:
        x = (3 * i + 5 * j + salt) % 7 - 3
        return str(x) if elem == "i8" else f"{x / 2:.1f}"

    matrix = "[" + ", ".join("[" + ", ".join(v(i, j) for j in range(cols)) + "]" for i in range(rows)) + "]"
    return f"dense<{'[' + ', '.join([matrix] * batch) + ']' if batch else matrix}>"


@st.composite
def hoist_programs(draw: st.DrawFn) -> str:
    """A function of one to three dispatch regions, each a matmul or batch matmul with its operands'
    set_encodings inside, as IREE's SetEncoding leaves them: operands that are arguments (one may
    feed several contractions), constants, or row slices (Flow-mappable: hoisted with the slice) and
    column slices (not: left in the dispatch) of an argument or a constant; f32, f16 or i8 operands.
    Constants are not splats, as weights are not (IREE folds a slice of a splat into a new splat,
    which makes a column slice hoistable: a decision the rules lack, the case
    ``tests/conformance/hoist/hoist_folded_splat_slice.mlir`` says so), and producers IREE bubbles an
    encoding through (dequantization, broadcasts) are not drawn: the rules lack that decision too."""
    elem = draw(st.sampled_from(sorted(ELEMENTS)))
    a_t, c_t, zero = ELEMENTS[elem]
    batch = draw(st.sampled_from([None, 2]))
    size = st.sampled_from([1, 2, 4, 8, 12, 16])
    m, n, k = draw(size), draw(size), draw(size)
    pre = f"{batch}x" if batch else ""
    if batch:
        maps = [
            "(d0, d1, d2, d3) -> (d0, d1, d3)",
            "(d0, d1, d2, d3) -> (d0, d3, d2)",
            "(d0, d1, d2, d3) -> (d0, d1, d2)",
        ]
        sizes = f"[{batch}, {m}, {n}, {k}]"
        op = "linalg.batch_matmul"
    else:
        maps = ["(d0, d1, d2) -> (d0, d2)", "(d0, d1, d2) -> (d2, d1)", "(d0, d1, d2) -> (d0, d1)"]
        sizes = f"[{m}, {n}, {k}]"
        op = "linalg.matmul"
    head = [f"#map{i} = affine_map<{mp}>" for i, mp in enumerate(maps)]
    for i, name in enumerate(("lhs", "rhs", "out")):
        head.append(
            f"#{name} = #iree_encoding.encoding<operand_index = {i} : index, op_type = matmul, element_types = "
            f"[{a_t}, {a_t}, {c_t}], user_indexing_maps = [#map0, #map1, #map2], iteration_sizes = {sizes}>"
        )
    args: list[str] = []
    top: list[str] = []
    shapes = {"lhs": (m, k), "rhs": (k, n)}

    def operand(role: str, region: int) -> tuple[list[str], str]:
        """(ops inside the region, the value the set_encoding reads) for one operand."""
        rows, cols = shapes[role]
        t = f"tensor<{pre}{rows}x{cols}x{a_t}>"
        kind = draw(st.sampled_from(["arg", "shared", "const", "row_slice", "col_slice"]))
        if kind == "shared" and f"%{role}_shared" in " ".join(args):
            return [], f"%{role}_shared"
        if kind in ("arg", "shared"):
            name = f"%{role}_shared" if kind == "shared" else f"%{role}{region}"
            args.append(f"{name}: {t}")
            return [], name
        if kind == "const":
            top.append(f"  %{role}_c{region} = arith.constant {_dense(rows, cols, batch, a_t, region)} : {t}")
            return [], f"%{role}_c{region}"
        big_rows, big_cols = (2 * rows, cols) if kind == "row_slice" else (rows, 2 * cols)
        big = f"tensor<{pre}{big_rows}x{big_cols}x{a_t}>"
        if draw(st.booleans()):
            src = f"%{role}_big{region}"
            args.append(f"{src}: {big}")
        else:
            src = f"%{role}_bigc{region}"
            top.append(f"  {src} = arith.constant {_dense(big_rows, big_cols, batch, a_t, region + 7)} : {big}")
        off = (rows, 0) if kind == "row_slice" else (0, cols)
        zeros, ones = ("0, " if batch else ""), ("1, " if batch else "")
        full = f"{batch}, " if batch else ""
        sl = (
            f"    %{role}_s{region} = tensor.extract_slice {src}[{zeros}{off[0]}, {off[1]}] [{full}{rows}, {cols}] "
            f"[{ones}1, 1] : {big} to {t}"
        )
        return [sl], f"%{role}_s{region}"

    body: list[str] = []
    results: list[str] = []
    out_t = f"tensor<{pre}{m}x{n}x{c_t}>"
    for r in range(draw(st.integers(1, 3))):
        inside: list[str] = []
        values = {}
        for role in ("lhs", "rhs"):
            ops, v = operand(role, r)
            inside += ops
            rows, cols = shapes[role]
            t = f"tensor<{pre}{rows}x{cols}x{a_t}>"
            inside.append(
                f"    %{role}_e{r} = iree_encoding.set_encoding {v} : {t} -> tensor<{pre}{rows}x{cols}x{a_t}, #{role}>"
            )
            values[role] = f"%{role}_e{r}"
        enc_out = f"tensor<{pre}{m}x{n}x{c_t}, #out>"
        inside += [
            f"    %z{r} = arith.constant {zero} : {c_t}",
            f"    %empty{r} = tensor.empty() : {enc_out}",
            f"    %acc{r} = linalg.fill ins(%z{r} : {c_t}) outs(%empty{r} : {enc_out}) -> {enc_out}",
            f"    %mm{r} = {op} indexing_maps = [#map0, #map1, #map2] ins({values['lhs']}, {values['rhs']} : "
            f"tensor<{pre}{m}x{k}x{a_t}, #lhs>, tensor<{pre}{k}x{n}x{a_t}, #rhs>) "
            f"outs(%acc{r} : {enc_out}) -> {enc_out}",
            f"    %u{r} = iree_encoding.unset_encoding %mm{r} : {enc_out} -> {out_t}",
            f"    flow.return %u{r} : {out_t}",
        ]
        body += [f"  %r{r} = flow.dispatch.region -> ({out_t}) {{", *inside, "  }"]
        results.append(f"%r{r}")
    signature = ", ".join(args)
    ret_types = ", ".join([out_t] * len(results))
    return "\n".join(
        [
            *head,
            f"util.func public @generated({signature}) -> ({ret_types}) {{",
            *top,
            *body,
            f"  util.return {', '.join(results)} : {ret_types}",
            "}",
        ]
    )


@pytest.mark.skipif(find_tool("iree-opt") is None, reason="iree-opt not installed")
@pytest.mark.iree
@pytest.mark.slow
@settings(max_examples=examples(40), deadline=None)
@given(hoist_programs())
def test_irees_hoisting_of_generated_programs_is_one_of_our_plans(program: str) -> None:
    result = oracle(program, "hoist")
    assert result.status == "in", f"{result.status}: {result.detail}\n{program}\n--- IREE:\n{result.iree_text}"
