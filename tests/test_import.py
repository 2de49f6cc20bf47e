"""Term import: the seed reproducer's terms have the structure the rules will match on."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from egg_dispatch.egraph.importer import import_function
from egg_dispatch.egraph.program import ProgramGraph
from egg_dispatch.egraph.terms import Contract, Op
from egg_dispatch.evaluate import evaluate
from egg_dispatch.mlir.parser import parse_file, parse_mlir
from egg_dispatch.pipeline import explore

FIXTURES = Path(__file__).parent / "fixtures"


def _check(graph: ProgramGraph, fact: str) -> None:
    graph.run(f"(check {fact})")


def _resolve(imp, name: str) -> str:
    return imp.expand(name)


def test_seed_terms_structure() -> None:
    module = parse_file(FIXTURES / "seed_iree313.mlir")
    imp = import_function(module)
    assert len(imp.results) == 2
    folded = [f for *_, f in imp.slice_folds]  # each slice's rows, a constant of its own (fold_constants.egg)
    (const_key,) = [k for k in imp.constants if k not in folded]
    cst = imp.constants[const_key]
    assert cst.type.shape == (16, 8)
    assert [(c, o, s) for c, o, s, *_ in imp.slice_folds] == [(const_key, (0, 0), (8, 8)), (const_key, (8, 0), (8, 8))]
    for f, row in zip(folded, (0, 8), strict=True):
        assert (imp.constants[f].array == cst.array[row : row + 8]).all()
    for i, (row, name) in enumerate(zip((0, 8), imp.results, strict=True)):
        term = _resolve(imp, name)
        # Contract(kind, Slice(Const c, [row, 0], [8, 8], [1, 1]), Arg i, Fill(Scalar 0, Empty [8, 8]))
        assert term.startswith('(Contract "linalg.matmul:(d0,d2);(d1,d2);(d0,d1)" (Slice (Const ')
        assert f"(vec-of {row} 0) (vec-of 8 8) (vec-of 1 1))" in term
        assert f"(Arg {i})" in term
        assert term.endswith('(Fill (Scalar "0.0e+00" "f32") (Empty (vec-of 8 8) "f32")))')
    graph = ProgramGraph(imp)
    # Shapes and element types are facts rules can read.
    _check(graph, f"(= (shape {imp.results[0]}) (vec-of 8 8))")
    _check(graph, f'(= (dtype {imp.results[0]}) "f32")')
    _check(graph, f'(= (shape (Const "{const_key}")) (vec-of 16 8))')
    # Both slices share one Const e-class: the import keeps SSA sharing.
    _check(graph, f'(= {imp.results[0]} (Contract "linalg.matmul:(d0,d2);(d1,d2);(d0,d1)" '
                  f'(Slice (Const "{const_key}") (vec-of 0 0) (vec-of 8 8) (vec-of 1 1)) (Arg 0) '
                  f'(Fill (Scalar "0.0e+00" "f32") (Empty (vec-of 8 8) "f32"))))')  # fmt: skip


def test_reported_spelling_matches_iree313_structure() -> None:
    """matmul_transpose_b (retired upstream) is read as IREE 3.13's linalg.matmul with its maps: the
    same contraction kind as the 3.13 spelling, so the same rules match."""
    imp = import_function(parse_file(Path("egg_dispatch/examples/seed_reproducer.mlir")))
    kinds = {t.kind for t in imp.lets.values() if isinstance(t, Contract)}
    theirs = import_function(parse_file(FIXTURES / "seed_iree313.mlir"))
    assert kinds == {t.kind for t in theirs.lets.values() if isinstance(t, Contract)}
    assert kinds == {"linalg.matmul:(d0,d2);(d1,d2);(d0,d1)"}


def test_dispatch_regions_and_encodings_imported_as_markers() -> None:
    imp = import_function(parse_file(FIXTURES / "seed_after_set_encoding.mlir"))
    terms = [_resolve(imp, r) for r in imp.results]
    for term in terms:
        assert term.startswith("(Dispatch (UnsetEncoding (Contract ")
        assert term.count("(SetEncoding ") == 3  # lhs, rhs and the encoded accumulator
        assert "(Enc 0 " in term and "(Enc 1 " in term and "(Enc 2 " in term
    assert len(imp.encodings) == 3


def test_hoisted_globals_imported_as_const_eval() -> None:
    imp = import_function(parse_file(FIXTURES / "seed_dispatch_creation.mlir"))
    terms = [_resolve(imp, r) for r in imp.results]
    for term in terms:
        assert term.startswith("(Dispatch (UnsetEncoding (Contract ")
        assert "(ConstEval " in term  # the LHS comes from a global filled by an initializer
        assert "(Dispatch (SetEncoding (Arg " in term  # the RHS: a run-time flow.tensor.encode
    consts = list(imp.constants.values())
    assert [c.type.shape for c in consts] == [(8, 8), (8, 8)]
    assert not np.array_equal(consts[0].array, consts[1].array)


def test_unknown_ops_become_opaque_barriers() -> None:
    text = """
    func.func @f(%a: tensor<4x4xf32>) -> tensor<4x4xf32> {
      %0 = mydialect.mystery %a {k = 1} : tensor<4x4xf32> -> tensor<4x4xf32>
      return %0 : tensor<4x4xf32>
    }
    """
    module = parse_mlir(text, "t.mlir")
    assert any("not modelled" in w for w in module.warnings)
    imp = import_function(module)
    term = _resolve(imp, imp.results[0])
    assert term.startswith('(Op "mydialect.mystery#') and "(TCons (Arg 0) (TNil))" in term


@pytest.mark.parametrize("name", sorted(p.name for p in FIXTURES.glob("*.mlir")))
def test_every_fixture_imports(name: str) -> None:
    imp = import_function(parse_file(FIXTURES / name))
    graph = ProgramGraph(imp)
    size = graph.size()
    assert size.enodes >= len(imp.lets)
    assert imp.results and all(r in imp.lets for r in imp.results)


GATHER = """
func.func @gather(%ids: tensor<4xi64>) -> tensor<4x3xf32> {
  %table = arith.constant dense<[[0.0, 1.0, 2.0], [10.0, 11.0, 12.0], [20.0, 21.0, 22.0], [30.0, 31.0, 32.0],
                                 [40.0, 41.0, 42.0]]> : tensor<5x3xf32>
  %e = tensor.empty() : tensor<4x3xf32>
  %g = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0)>, affine_map<(d0, d1) -> (d0, d1)>],
                       iterator_types = ["parallel", "parallel"]} ins(%ids : tensor<4xi64>) outs(%e : tensor<4x3xf32>) {
  ^bb0(%id: i64, %o: f32):
    %row = arith.index_cast %id : i64 to index
    %col = linalg.index 1 : index
    %v = tensor.extract %table[%row, %col] : tensor<5x3xf32>
    linalg.yield %v : f32
  } -> tensor<4x3xf32>
  return %g : tensor<4x3xf32>
}"""


def test_a_tensor_constant_a_body_reads_is_an_input() -> None:
    """A gather's table, a constant its body reads with ``tensor.extract``, is an input of the op's term
    (IREE passes it to the dispatch that reads it), not part of the op's key; every plan still computes
    the gather (numpy's indexing is the reference)."""
    module = parse_mlir(GATHER)
    imp = import_function(module)
    (op,) = [t for t in imp.lets.values() if isinstance(t, Op)]
    assert [imp.lets[x].head for x in op.inputs] == ["Arg", "Empty", "Const"]  # ins, outs, then the table
    table = np.arange(5)[:, None] * 10 + np.arange(3)[None, :]
    ids = np.array([4, 0, 2, 2], np.int64)
    result = explore(module, "x86_64-avx2", start="input", top_k=2)
    for cand in [result.best, *result.top]:
        (got,) = evaluate(cand.mlir, [ids])
        np.testing.assert_array_equal(got, table[ids].astype(np.float32))
