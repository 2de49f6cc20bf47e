"""Dynamic shapes in the reader and printer, and the symbolic sizes ``mlir.shapes`` gives them (``mlir.symbolic``).

Real dynamic exports (tests/fixtures/models/*_dyn: torch export, IREE's input phase and IREE's own
dispatch-creation output) and a file with every dynamic form the reader models
(tests/fixtures/dynamic/forms.mlir) are read, printed and read again to the same IR, and IREE's own
printer must print what we print exactly as it prints the original (so nothing was lost or changed
in meaning, only re-spelled).
"""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from egg_dispatch.iree.tools import find_tool
from egg_dispatch.mlir.compare import ir_key
from egg_dispatch.mlir.ir import TensorType
from egg_dispatch.mlir.lexer import MLIRSyntaxError
from egg_dispatch.mlir.parser import parse_file, parse_mlir
from egg_dispatch.mlir.printer import print_mlir
from egg_dispatch.mlir.shapes import function_shapes
from egg_dispatch.mlir.symbolic import Dim, Domain, divides, lower_bound, parse_symbol, upper_bound

FIXTURES = Path(__file__).parent / "fixtures"
MODELS = FIXTURES / "models"
DYNAMIC_FILES = [
    FIXTURES / "dynamic" / "forms.mlir",
    *(MODELS / m / f for m in ("mlp_dyn", "attention_dyn") for f in ("input.mlir", "dispatch_creation.avx2.mlir")),
]
IREE_OPT = find_tool("iree-opt")
ids = {"ids": lambda p: f"{p.parent.name}/{p.name}"}


@pytest.mark.parametrize("path", DYNAMIC_FILES, **ids)
def test_round_trip(path: Path) -> None:
    module = parse_file(path)
    printed = print_mlir(module)
    again = parse_mlir(printed, "printed.mlir")
    assert ir_key(again) == ir_key(module)
    assert print_mlir(again) == printed
    assert "?x" in printed


def _iree_print(text: str) -> str:
    assert IREE_OPT is not None
    proc = subprocess.run(
        [str(IREE_OPT), "-", "--mlir-print-local-scope"], input=text, capture_output=True, text=True, timeout=300
    )
    assert proc.returncode == 0, proc.stderr[:2000]
    return proc.stdout


@pytest.mark.slow
@pytest.mark.skipif(IREE_OPT is None, reason="iree-opt not installed (pip install egg-dispatch[iree])")
@pytest.mark.parametrize("path", DYNAMIC_FILES, **ids)
def test_iree_prints_ours_as_the_original(path: Path) -> None:
    assert _iree_print(print_mlir(parse_file(path))) == _iree_print(path.read_text())


def test_dim_lists_are_operands() -> None:
    module = parse_file(FIXTURES / "dynamic" / "forms.mlir")
    func = module.function()
    ops = {op.name: op for op in func.walk()}
    imp = ops["hal.tensor.import"]
    assert [v.name for v in imp.operands] == ["arg0", "0"]
    unset = ops["iree_encoding.unset_encoding"]
    assert [v.name for v in unset.operands] == ["se", "7", "7"]  # source, encoding_dims, result dims
    wg = ops["flow.dispatch.workgroups"]
    assert [v.name for v in wg.operands] == ["7", "10", "7", "7", "7"]  # workload, arguments, dims
    assume = ops["util.assume.int"]
    assert assume.results[0].type.name == "index"
    assert isinstance(ops["tensor.empty"].results[0].type, TensorType)
    assert ops["tensor.empty"].results[0].type.shape == (None, 64)


def test_symbolic_shapes_of_forms() -> None:
    func = parse_file(FIXTURES / "dynamic" / "forms.mlir").function()
    shapes = function_shapes(func)
    assert shapes.arguments == {"arg0.d0": (0, 0)}
    # udiv 4 and [1, 1024] from the first assumption; the second's two rows (either may hold) add
    # nothing stronger than what both allow (umin 4, udiv 4).
    assert shapes.domains["arg0.d0"] == Domain(4, 1024, 4)
    by_name = {r.name: r for op in func.walk() for r in op.results}
    s = Dim.sym("arg0.d0")
    assert shapes.scalar(by_name["6"]) == 4 * s
    assert shapes.scalar(by_name["7"]) == s  # (4 * s) divsi 4
    assert shapes.shape(by_name["8"]) == (s, Dim.const(4), Dim.const(8))
    assert shapes.shape(by_name["11"]) == (Dim.const(1), s, Dim.const(64))
    expand = next(op for op in func.walk() if op.name == "tensor.expand_shape")
    assert shapes.shape(expand.results[0]) == (Dim.const(1), s, Dim.const(64))


def test_symbolic_shapes_of_a_real_export() -> None:
    func = parse_file(MODELS / "attention_dyn" / "dispatch_creation.avx2.mlir").function()
    shapes = function_shapes(func)
    s = Dim.sym("arg0.d1")
    seen = {
        tuple(map(str, shapes.shape(r))) for op in func.walk() for r in op.results if isinstance(r.type, TensorType)
    }
    assert ("4", "arg0.d1", "arg0.d1") in seen  # the attention mask, reshaped from tensor<?xf32>{4*s*s}
    assert ("4*arg0.d1*arg0.d1",) in seen
    assert not shapes.unknown  # every size of IREE's own plan is seen through
    assert s.symbols() == {"arg0.d1"}


def test_an_unset_encoding_has_its_sources_sizes_whatever_names_them() -> None:
    """An unset_encoding returns its whole source: a ``{%n}`` naming the dynamic size with a size
    argument (as a hand-written input does) and a ``{%d}`` of ``tensor.dim`` (as IREE's passes print
    it) give the same symbol, the source's; a result of another shape keeps the sizes it names."""
    enc = (
        "#iree_encoding.encoding<operand_index = 2 : index, op_type = matmul, element_types = [f32, f32, f32], "
        "user_indexing_maps = [affine_map<(d0, d1, d2) -> (d0, d2)>, affine_map<(d0, d1, d2) -> (d1, d2)>, "
        "affine_map<(d0, d1, d2) -> (d0, d1)>]>"
    )
    func = parse_mlir(
        f"""
func.func @f(%x: tensor<4x?xf32, {enc}>, %n: index, %m: index) -> (tensor<4x?xf32>, tensor<4x?xf32>, tensor<?x?xf32>) {{
  %c1 = arith.constant 1 : index
  %d = tensor.dim %x, %c1 : tensor<4x?xf32, {enc}>
  %a = iree_encoding.unset_encoding %x : tensor<4x?xf32, {enc}> -> tensor<4x?xf32>{{%n}}
  %b = iree_encoding.unset_encoding %x : tensor<4x?xf32, {enc}> -> tensor<4x?xf32>{{%d}}
  %c = iree_encoding.unset_encoding %x : tensor<4x?xf32, {enc}> -> tensor<?x?xf32>{{%m, %n}}
  return %a, %b, %c : tensor<4x?xf32>, tensor<4x?xf32>, tensor<?x?xf32>
}}""",
        "<unset>",
    ).function()
    shapes = function_shapes(func)
    by_name = {r.name: r for op in func.walk() for r in op.results}
    own = (Dim.const(4), Dim.sym("arg0.d1"))
    assert shapes.shape(by_name["a"]) == shapes.shape(by_name["b"]) == own
    assert shapes.shape(by_name["c"]) == (Dim.sym("arg2"), Dim.sym("arg1"))


def test_dim_algebra() -> None:
    s, t = Dim.sym("s"), Dim.sym("t")
    assert s * 4 + 4 * s == 8 * s
    assert (s * 8).floordiv(4) == 2 * s  # exact quotient
    assert str((s * 2 + 1).floordiv(2)) == "((2*s + 1) floordiv 2)"
    assert (s * t - t * s) == Dim.const(0)
    assert (s + 3).evaluate({"s": 5}) == 8
    assert (s * 3 + 1).ceildiv(2).evaluate({"s": 3}) == 5
    assert (s * 4).mod(4) == Dim.const(0)
    with pytest.raises(KeyError):
        (s + t).evaluate({"s": 1})


def test_proofs_hold_for_every_allowed_value() -> None:
    s = Dim.sym("s")
    assert not divides(8, s, {})  # nothing known: 13 is a size
    assert divides(8, s, {"s": Domain(1, None, 8)})
    assert divides(8, 4 * s, {"s": Domain(0, None, 2)})
    assert not divides(8, 4 * s, {"s": Domain(0, None, 1)})
    assert divides(8, s, {"s": Domain(values=(16, 128))})
    assert not divides(8, s, {"s": Domain(values=(16, 13))})
    assert divides(4, s * s, {"s": Domain(1, 64, 2)})  # enumerated: every even square
    assert upper_bound(s, {}) is None
    assert upper_bound(4 * s + 1, {"s": Domain(1, 100)}) == 401
    assert upper_bound(s.floordiv(3), {"s": Domain(1, 1 << 40)}) == (1 << 40) // 3
    assert lower_bound(s - 2, {"s": Domain(4, None)}) == 2
    assert upper_bound(s, {"s": Domain(values=(1, 13, 16))}) == 16


def test_symbol_spellings() -> None:
    assert parse_symbol("arg0.d1") == parse_symbol("arg0.1") == parse_symbol("arg0[1]") == "arg0.d1"
    assert parse_symbol("seq") is None


def test_assume_int_errors() -> None:
    bad = "func.func @f(%d: index) -> index {\n  %e = util.assume.int %d<udiv = 0> : index\n  return %e : index\n}\n"
    with pytest.raises(MLIRSyntaxError, match="udiv must be positive"):
        parse_mlir(bad)


def test_static_slice_of_a_dynamic_dim() -> None:
    """A static offset and size on a '?' dim is bounds-checked at run time, not by the reader (which
    still checks the static dims of the same slice)."""
    ok = """
    func.func @f(%a: tensor<?x4xf32>) -> tensor<2x3xf32> {
      %s = tensor.extract_slice %a[5, 1] [2, 3] [1, 1] : tensor<?x4xf32> to tensor<2x3xf32>
      return %s : tensor<2x3xf32>
    }"""
    assert parse_mlir(ok).function("f") is not None
    with pytest.raises(MLIRSyntaxError, match="slice out of bounds in dim 1"):
        parse_mlir(ok.replace("[5, 1] [2, 3]", "[5, 2] [2, 3]"))


DYNAMIC_CONCAT = """func.func @f(%a: tensor<?x4xf32>, %b: tensor<2x4xf32>) -> tensor<?x4xf32> {
  %c = tensor.concat dim(0) %a, %b : (tensor<?x4xf32>, tensor<2x4xf32>) -> tensor<?x4xf32>
  return %c : tensor<?x4xf32>
}
"""
DYNAMIC_PAD = """func.func @f(%a: tensor<?x4xf32>) -> tensor<?x6xf32> {
  %z = arith.constant 0.0 : f32
  %p = tensor.pad %a low[0, 1] high[0, 1] {
  ^bb0(%i: index, %j: index):
    tensor.yield %z : f32
  } : tensor<?x4xf32> to tensor<?x6xf32>
  return %p : tensor<?x6xf32>
}
"""


@pytest.mark.parametrize("text", [DYNAMIC_CONCAT, DYNAMIC_PAD], ids=["concat", "pad"])
def test_concat_and_pad_of_dynamic_sizes_read_and_their_static_sizes_are_checked(text: str) -> None:
    """A '?' size in tensor.concat / tensor.pad is left to run time (it was a TypeError in the reader);
    the static sizes beside it are still checked, with file:line:col."""
    module = parse_mlir(text, "dyn.mlir")
    assert print_mlir(module).count("?x") >= 2
    wrong = text.replace("tensor<2x4xf32>", "tensor<2x5xf32>").replace("tensor<?x6xf32>", "tensor<?x7xf32>")
    with pytest.raises(MLIRSyntaxError, match=r"dyn\.mlir:\d+:\d+: error: tensor\.(concat|pad)"):
        parse_mlir(wrong, "dyn.mlir")
