"""The ops and encoding forms IREE's own plan holds, one at a time (no IREE needed): see
tests/test_iree_own_plan.py for the survey that found them and for IREE's plans of whole programs.

1. Bubbled encodings (a list of maps in ``user_indexing_maps``: encoding propagation bubbled a
   set_encoding through an elementwise generic): the layout a target gives the tensor, from the composed
   map (IREE's ``getMapForOperandIndex``) and the contraction's root maps; the packed generic that reads
   such operands (IREE's ``lowerGenericOpWithResolvedLayouts``: broadcast bias, transposed operand,
   transposed output, ``linalg.index``), evaluated physically against the plain program and NumPy.
2. ``flow.tensor.slice`` and ``flow.tensor.reshape``: read, printed back, evaluated, imported (a slice as
   the copy ``Dispatch(Slice ...)``, a reshape as a view read from outside any dispatch) and costed.
3. Warnings about IREE's output name it, not a file of the user's.

Expected layouts are IREE 3.13's own (docs/iree-data-tiling.md §3: f32 tiles 8x8x1 on AVX2, 16x16x1 on AVX-512), not
values this code produced.
"""

from __future__ import annotations

import numpy as np
import pytest

from egg_dispatch.egraph import terms as terms_
from egg_dispatch.egraph.facts import encoding_layout as fact_layout
from egg_dispatch.egraph.importer import import_function
from egg_dispatch.egraph.terms import render
from egg_dispatch.evaluate import EvaluationError, evaluate
from egg_dispatch.iree.dispatch_creation import IREE_PLAN, iree_output_warnings
from egg_dispatch.mlir.ir import EncodingAttr, ScalarType, TensorType
from egg_dispatch.mlir.parser import parse_mlir
from egg_dispatch.mlir.printer import print_mlir
from egg_dispatch.target.layout import Layout, encoded_operand_dims, encoding_attr_layout, encoding_layout
from egg_dispatch.target.profile import load_target

AVX2 = load_target("x86_64-avx2")
AVX512 = load_target("x86_64-avx512")

LHS = "affine_map<(d0, d1, d2) -> (d0, d2)>"
RHS = "affine_map<(d0, d1, d2) -> (d2, d1)>"
ACC = "affine_map<(d0, d1, d2) -> (d0, d1)>"


def enc(index: int, entry: str, sizes: str, maps: tuple[str, str, str] = (LHS, RHS, ACC)) -> str:
    """A matmul encoding of operand ``index``, whose user_indexing_maps entry is ``entry``."""
    entries = list(maps)
    entries[index] = entry
    return (
        f"#iree_encoding.encoding<operand_index = {index} : index, op_type = matmul, element_types = [f32, f32, f32], "
        f"user_indexing_maps = [{', '.join(entries)}], iteration_sizes = [{sizes}]>"
    )


def encoding_of(text: str) -> EncodingAttr:
    t = f"tensor<4xf32, {text}>"
    m = parse_mlir(f"func.func @f(%a: {t}) -> {t} {{\n  return %a : {t}\n}}\n")
    t = m.function().regions[0].entry.args[0].type
    assert isinstance(t, TensorType) and isinstance(t.encoding, EncodingAttr)
    return t.encoding


# ------------------------------------------------------------------------------------- 1. layouts

BIAS_N = f"[{ACC}, affine_map<(d0, d1) -> (d1)>]"
BIAS_M = f"[{ACC}, affine_map<(d0, d1) -> (d0)>]"
TRANSPOSED = f"[{ACC}, affine_map<(d0, d1) -> (d1, d0)>]"
BATCH_BIAS = "[affine_map<(d0, d1, d2, d3) -> (d0, d1, d2)>, affine_map<(d0, d1, d2) -> (d2)>]"
BATCH_MM = (
    "affine_map<(d0, d1, d2, d3) -> (d0, d1, d3)>",
    "affine_map<(d0, d1, d2, d3) -> (d0, d3, d2)>",
    "affine_map<(d0, d1, d2, d3) -> (d0, d1, d2)>",
)


@pytest.mark.parametrize(
    ("entry", "dims"),
    [
        (ACC, (0, 1)),
        (BIAS_N, (1,)),
        (BIAS_M, (0,)),
        (TRANSPOSED, (1, 0)),
        (f"[{ACC}, affine_map<(d0, d1) -> (d1, d0)>, affine_map<(d0, d1) -> (d0)>]", (1,)),  # two generics
    ],
)
def test_composed_operand_dims(entry: str, dims: tuple[int, ...]) -> None:
    assert encoded_operand_dims(encoding_of(enc(2, entry, "5, 20, 3"))) == dims


def test_batch_bias_dims() -> None:
    e = encoding_of(enc(2, BATCH_BIAS, "1, 16, 128, 32", BATCH_MM))
    assert encoded_operand_dims(e) == (2,)  # the N loop of the batch matmul


@pytest.mark.parametrize(("target", "n0", "m0"), [(AVX2, 8, 8), (AVX512, 16, 16)])
def test_bubbled_layouts_are_irees(target, n0: int, m0: int) -> None:
    """A bias [N] of an M x N f32 result is packed [N1, N0]: the accumulator's N tile; one along M,
    [M1, M0]; a transposed [N, M] operand keeps the accumulator's tiles on its own dims."""
    sizes = "64, 64, 8"  # square: no narrow dim, the full tile
    assert encoding_attr_layout(target, encoding_of(enc(2, BIAS_N, sizes))) == Layout((0,), (n0,), (0,))
    assert encoding_attr_layout(target, encoding_of(enc(2, BIAS_M, sizes))) == Layout((0,), (m0,), (0,))
    assert encoding_attr_layout(target, encoding_of(enc(2, TRANSPOSED, sizes))) == Layout((1, 0), (m0, n0), (1, 0))
    plain = encoding_attr_layout(target, encoding_of(enc(2, ACC, sizes)))
    assert plain == Layout((0, 1), (m0, n0), (0, 1))


def test_narrow_n_bias_is_not_swapped() -> None:
    """Narrow N (N=4 < M): the result's tiles are swapped (mmt4d on swapped operands), a vector's are
    not (IREE's transposeInPlace leaves one-tile layouts alone). AVX2 f32 narrow N=4: N0 = 4."""
    sizes = "64, 4, 8"
    acc = encoding_attr_layout(AVX2, encoding_of(enc(2, ACC, sizes)))
    assert acc is not None and acc.inner_tiles == (4, 8) and acc.inner_dims_pos == (1, 0)
    assert encoding_attr_layout(AVX2, encoding_of(enc(2, BIAS_N, sizes))) == Layout((0,), (4,), (0,))


def test_the_cost_model_sees_the_padded_bias() -> None:
    """The facts the cost model prices stored bytes with tile a bubbled encoding too (it was the identity)."""
    e = encoding_of(enc(2, BIAS_N, "64, 20, 8"))
    assert fact_layout(AVX2, e) == Layout((0,), (8,), (0,))  # 20 floats stored as 24


def test_rank_mismatch_is_an_error() -> None:
    from egg_dispatch.target.layout import LayoutError

    e = encoding_of(enc(2, BIAS_N, "5, 20, 3"))
    with pytest.raises(LayoutError, match="rank 1, the tensor 2"):
        encoding_layout(AVX2, TensorType((5, 20), ScalarType("f32"), e))


# ----------------------------------------------------------------------------- 1. packed generics

M, N, K = 5, 20, 3
SIZES = f"{M}, {N}, {K}"
LHS_E, RHS_E, ACC_E = enc(0, LHS, SIZES), enc(1, RHS, SIZES), enc(2, ACC, SIZES)


def _program(extra_arg: str, extra_enc: str, generic: str, out_t: str) -> str:
    """x @ w into an encoded accumulator, then ``generic`` on it and on the encoded ``%b`` (IREE's plan
    after bubbling: the bias encoded, the elementwise op on the encoded result), then unset."""
    return f"""
func.func @f(%x: tensor<{M}x{K}xf32>, %w: tensor<{K}x{N}xf32>, %b: {extra_arg}) -> {out_t} {{
  %zero = arith.constant 0.0 : f32
  %xe = iree_encoding.set_encoding %x : tensor<{M}x{K}xf32> -> tensor<{M}x{K}xf32, {LHS_E}>
  %we = iree_encoding.set_encoding %w : tensor<{K}x{N}xf32> -> tensor<{K}x{N}xf32, {RHS_E}>
  %be = iree_encoding.set_encoding %b : {extra_arg} -> {extra_arg[:-1]}, {extra_enc}>
  %e = tensor.empty() : tensor<{M}x{N}xf32, {ACC_E}>
  %f = linalg.fill ins(%zero : f32) outs(%e : tensor<{M}x{N}xf32, {ACC_E}>) -> tensor<{M}x{N}xf32, {ACC_E}>
  %m = linalg.matmul ins(%xe, %we : tensor<{M}x{K}xf32, {LHS_E}>, tensor<{K}x{N}xf32, {RHS_E}>)
      outs(%f : tensor<{M}x{N}xf32, {ACC_E}>) -> tensor<{M}x{N}xf32, {ACC_E}>
{generic}
  %r = iree_encoding.unset_encoding %g : {out_t[:-1]}, {{OUT_E}}> -> {out_t}
  return %r : {out_t}
}}
"""


def _generic(maps: str, b_t: str, b_e: str, out_t: str, out_e: str, body: str) -> str:
    return (
        f"  %o = tensor.empty() : {out_t[:-1]}, {out_e}>\n"
        f'  %g = linalg.generic {{indexing_maps = [{maps}], iterator_types = ["parallel", "parallel"]}} '
        f"ins(%m, %be : tensor<{M}x{N}xf32, {ACC_E}>, {b_t[:-1]}, {b_e}>) outs(%o : {out_t[:-1]}, {out_e}>) {{\n"
        f"  ^bb0(%in: f32, %bias: f32, %out: f32):\n{body}"
        f"  }} -> {out_t[:-1]}, {out_e}>"
    )


ADD = "    %s = arith.addf %in, %bias : f32\n    linalg.yield %s : f32\n"
CAUSAL = (
    "    %i = linalg.index 0 : index\n    %j = linalg.index 1 : index\n    %up = arith.cmpi ugt, %j, %i : index\n"
    "    %s = arith.addf %in, %bias : f32\n    %ninf = arith.constant -1.0e+30 : f32\n"
    "    %v = arith.select %up, %ninf, %s : f32\n    linalg.yield %v : f32\n"
)
MN = f"tensor<{M}x{N}xf32>"
NM = f"tensor<{N}x{M}xf32>"


def _case(kind: str) -> tuple[str, tuple[int, ...], object]:
    """(program, bias shape, NumPy reference of the result from x, w, b)."""
    i = np.arange(M)[:, None]
    j = np.arange(N)[None, :]
    if kind in ("bias_n", "causal"):
        b_t, b_e = f"tensor<{N}xf32>", enc(2, BIAS_N, SIZES)
        maps = "affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d1)>, affine_map<(d0, d1) -> (d0, d1)>"
        gen = _generic(maps, b_t, b_e, MN, ACC_E, ADD if kind == "bias_n" else CAUSAL)
        prog = _program(b_t, b_e, gen, MN).replace("{OUT_E}", ACC_E)
        if kind == "bias_n":
            return prog, (N,), lambda x, w, b: x @ w + b
        return prog, (N,), lambda x, w, b: np.where(j > i, np.float32(-1e30), x @ w + b)
    if kind == "bias_m":
        b_t, b_e = f"tensor<{M}xf32>", enc(2, BIAS_M, SIZES)
        maps = "affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0)>, affine_map<(d0, d1) -> (d0, d1)>"
        prog = _program(b_t, b_e, _generic(maps, b_t, b_e, MN, ACC_E, ADD), MN).replace("{OUT_E}", ACC_E)
        return prog, (M,), lambda x, w, b: x @ w + b[:, None]
    if kind == "transposed_in":
        b_t, b_e = NM, enc(2, TRANSPOSED, SIZES)
        maps = "affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d1, d0)>, affine_map<(d0, d1) -> (d0, d1)>"
        prog = _program(b_t, b_e, _generic(maps, b_t, b_e, MN, ACC_E, ADD), MN).replace("{OUT_E}", ACC_E)
        return prog, (N, M), lambda x, w, b: x @ w + b.T
    assert kind == "transposed_out"  # the output written as [N, M] (the generic is interchanged)
    b_t, b_e = f"tensor<{N}xf32>", enc(2, BIAS_N, SIZES)
    out_e = enc(2, TRANSPOSED, SIZES)
    maps = "affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d1)>, affine_map<(d0, d1) -> (d1, d0)>"
    prog = _program(b_t, b_e, _generic(maps, b_t, b_e, NM, out_e, ADD), NM).replace("{OUT_E}", out_e)
    return prog, (N,), lambda x, w, b: (x @ w + b).T


@pytest.mark.parametrize("target", [AVX2, AVX512], ids=lambda t: t.name)
@pytest.mark.parametrize("kind", ["bias_n", "bias_m", "transposed_in", "transposed_out", "causal"])
def test_packed_generic_matches_plain_and_numpy(kind: str, target) -> None:
    """Physically packed (M=5, N=20: padded tiles on both targets) = plain = NumPy."""
    prog, b_shape, ref = _case(kind)
    module = parse_mlir(prog)
    rng = np.random.default_rng(7)
    x = (rng.integers(-8, 9, (M, K)) / 16).astype(np.float32)
    w = (rng.integers(-8, 9, (K, N)) / 16).astype(np.float32)
    b = (rng.integers(-8, 9, b_shape) / 16).astype(np.float32)
    want = ref(x, w, b)
    plain = evaluate(module, [x, w, b])[0]
    physical = evaluate(module, [x, w, b], target=target)[0]
    np.testing.assert_array_equal(plain, want)
    np.testing.assert_array_equal(physical, want)


def test_a_bias_tiled_unlike_the_result_is_refused() -> None:
    """A bias whose encoding resolves to another tile than the accumulator's (its own iteration sizes
    here: N=4, narrow) cannot be read tile by tile: an error, never wrong numbers."""
    prog, _, _ = _case("bias_n")
    other = enc(2, BIAS_N, f"{M}, 4, {K}")
    module = parse_mlir(prog.replace(enc(2, BIAS_N, SIZES), other))
    args = [np.ones((M, K), np.float32), np.ones((K, N), np.float32), np.ones(N, np.float32)]
    with pytest.raises(EvaluationError, match="does not match the first output's tiles"):
        evaluate(module, args, target=AVX2)


def test_a_plain_operand_next_to_packed_ones_is_refused() -> None:
    prog, _, _ = _case("bias_n")
    be = f"%be = iree_encoding.set_encoding %b : tensor<{N}xf32> -> tensor<{N}xf32, {enc(2, BIAS_N, SIZES)}>"
    assert be in prog
    prog = prog.replace(be, f"%be = arith.addf %b, %b : tensor<{N}xf32>").replace(
        f"tensor<{N}xf32, {enc(2, BIAS_N, SIZES)}>", f"tensor<{N}xf32>"
    )
    args = [np.ones((M, K), np.float32), np.ones((K, N), np.float32), np.ones(N, np.float32)]
    with pytest.raises(EvaluationError, match="mixes packed"):
        evaluate(parse_mlir(prog), args, target=AVX2)


# -------------------------------------------------------------------- 2. flow.tensor.slice / reshape

FLOW = """
func.func @f(%x: tensor<48x16xf32>) -> (tensor<16x16xf32>, tensor<4x4x16xf32>) {
  %c0 = arith.constant 0 : index
  %c16 = arith.constant 16 : index
  %c32 = arith.constant 32 : index
  %s = flow.tensor.slice %x[%c32, %c0 for %c16, %c16] : tensor<48x16xf32> -> tensor<16x16xf32>
  %r = flow.tensor.reshape %s : tensor<16x16xf32> -> tensor<4x4x16xf32>
  return %s, %r : tensor<16x16xf32>, tensor<4x4x16xf32>
}
"""


def test_flow_slice_and_reshape_round_trip() -> None:
    m = parse_mlir(FLOW)
    assert not m.warnings
    text = print_mlir(m)
    assert "flow.tensor.slice %x[%c32, %c0 for %c16, %c16] : tensor<48x16xf32> -> tensor<16x16xf32>" in text
    assert print_mlir(parse_mlir(text)) == text


def test_flow_slice_and_reshape_evaluate() -> None:
    x = np.arange(48 * 16, dtype=np.float32).reshape(48, 16)
    s, r = evaluate(parse_mlir(FLOW), [x])
    np.testing.assert_array_equal(s, x[32:48, 0:16])
    np.testing.assert_array_equal(r, x[32:48].reshape(4, 4, 16))


def test_flow_slice_out_of_bounds_is_an_error() -> None:
    with pytest.raises(EvaluationError, match="outside the source"):
        evaluate(parse_mlir(FLOW.replace("%x[%c32, %c0", "%x[%c32, %c16")), [np.zeros((48, 16), np.float32)])


@pytest.mark.parametrize(
    ("bad", "message"),
    [
        ("%x[%c32 for %c16, %c16]", "needs 2 start indices and 2 lengths"),
        ("%x[%c32, %c0, %c16, %c16]", "expected 'for'"),
    ],
)
def test_flow_slice_syntax_errors(bad: str, message: str) -> None:
    from egg_dispatch.mlir.lexer import MLIRSyntaxError

    with pytest.raises(MLIRSyntaxError, match=message):
        parse_mlir(FLOW.replace("%x[%c32, %c0 for %c16, %c16]", bad))


def test_flow_slice_is_imported_as_a_copy_and_reshape_as_a_view() -> None:
    """The slice becomes the term the clone family builds for a slice materialized on its own; the
    reshape, which only exists between dispatches, a dispatch input that is a view."""
    imp = import_function(parse_mlir(FLOW))
    terms = [render(t) for t in imp.lets.values()]
    arg = next(k for k, t in imp.lets.items() if t == terms_.Arg(0))
    slices = [k for k, t in imp.lets.items() if t == terms_.Slice(arg, (32, 0), (16, 16), (1, 1))]
    assert len(slices) == 1
    slice_let = slices[0]
    assert f"(Dispatch {slice_let})" in terms
    assert not any("flow.tensor.slice" in t for t in terms)  # not an opaque Op
    reshape = next(k for k, t in zip(imp.lets, terms, strict=True) if t.startswith('(Op "flow.tensor.reshape'))
    assert f"(Dispatch {reshape})" in terms


# -------------------------------------------------------------------------- 3. warnings naming IREE

UNKNOWN_OP = """
func.func @f(%x: tensor<4xf32>) -> tensor<4xf32> {
  %y = mydialect.mystery %x : tensor<4xf32>
  %z = flow.dispatch.workgroups(%y) : (tensor<4xf32>) -> tensor<4xf32> =
      (%a: !iree_tensor_ext.dispatch.tensor<readonly:tensor<4xf32>>,
       %o: !iree_tensor_ext.dispatch.tensor<writeonly:tensor<4xf32>>) {
    %v = iree_tensor_ext.dispatch.tensor.load %a, offsets = [0], sizes = [4], strides = [1]
        : !iree_tensor_ext.dispatch.tensor<readonly:tensor<4xf32>> -> tensor<4xf32>
    iree_tensor_ext.dispatch.tensor.store %v, %o, offsets = [0], sizes = [4], strides = [1]
        : tensor<4xf32> -> !iree_tensor_ext.dispatch.tensor<writeonly:tensor<4xf32>>
    flow.return
  } count() -> (index, index, index) {
    %x0, %y0, %z0 = iree_tensor_ext.dispatch.workgroup_count_from_slice()
    flow.return %x0, %y0, %z0 : index, index, index
  }
  return %z : tensor<4xf32>
}
"""


def test_warnings_about_irees_output_name_it() -> None:
    m = parse_mlir(UNKNOWN_OP, f"<{IREE_PLAN}>")
    assert len(m.warnings) == 2  # the mystery op and the count region's op
    assert iree_output_warnings(m, IREE_PLAN) == [
        f"warning: in {IREE_PLAN}, line 3: 'mydialect.mystery' is not modelled; kept as an opaque op "
        "(a barrier for every rule)"
    ]


def test_iree_plan_warnings_name_iree_not_a_file() -> None:
    """Text already in dispatch-creation form is IREE's plan as it is (no IREE run)."""
    from egg_dispatch.pipeline import iree_plan

    plan = iree_plan(UNKNOWN_OP, "x86_64-avx2")
    assert plan.candidate is not None
    assert plan.warnings and all(w.startswith(f"warning: in {IREE_PLAN}") for w in plan.warnings)
    assert not any("<string>" in w or f"<{IREE_PLAN}>" in w for w in plan.warnings)
