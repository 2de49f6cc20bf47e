"""Constructs of IREE 3.13's DispatchCreation lit-test inputs that the reader and the importer must take
(issue 29): declarations without argument names, small floats, complex numbers, encodings the cost
model does not price, dynamic pack tiles, map / reduce bodies, bitcasts and ``affine.apply`` sizes.

Each input is our own, small: it is read, printed back to the same IR, and imported (what the model
does not see into as an opaque ``Op``, never an internal error). ``test_iree_opt_reads_every_printed_input``
checks that IREE reads what we print for every one of them.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

import numpy as np
import pytest

from egg_dispatch.cli import main
from egg_dispatch.egraph.imported import ImportError_
from egg_dispatch.egraph.importer import import_function
from egg_dispatch.evaluate import EvaluationError, evaluate
from egg_dispatch.iree.tools import find_tool
from egg_dispatch.mlir.compare import ir_key
from egg_dispatch.mlir.ir import DenseAttr, Module, ScalarType, TensorType, element_nbytes
from egg_dispatch.mlir.lexer import MLIRSyntaxError
from egg_dispatch.mlir.ops import function_type, sym_name
from egg_dispatch.mlir.parser import parse_mlir
from egg_dispatch.mlir.printer import print_mlir
from egg_dispatch.mlir.shapes import function_shapes

IREE_OPT = find_tool("iree-opt")

DECLARATIONS = """\
func.func private @external(tensor<4xf32>, f32) -> tensor<4xf32>
util.func private @get_tensor(tensor<4xf32>) -> tensor<4xf32>
util.func public @main(%x: tensor<4xf32>) -> tensor<4xf32> {
  %0 = util.call @get_tensor(%x) : (tensor<4xf32>) -> tensor<4xf32>
  util.return %0 : tensor<4xf32>
}
"""

SMALL_FLOATS = """\
func.func @scaled(%a: tensor<4x32xf4E2M1FN>, %s: tensor<4xf8E8M0FNU>, %o: tensor<4x32xf32>,
                  %b: f6E2M3FN, %c: f8E4M3FN, %d: f8E5M2) -> tensor<4x32xf32> {
  %h = arith.constant 1.5 : f8E4M3FN
  %0 = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0)>,
                                        affine_map<(d0, d1) -> (d0, d1)>],
                       iterator_types = ["parallel", "parallel"]}
      ins(%a, %s : tensor<4x32xf4E2M1FN>, tensor<4xf8E8M0FNU>) outs(%o : tensor<4x32xf32>) {
  ^bb0(%in: f4E2M1FN, %scale: f8E8M0FNU, %out: f32):
    %1 = arith.scaling_extf %in, %scale : f4E2M1FN, f8E8M0FNU to f32
    linalg.yield %1 : f32
  } -> tensor<4x32xf32>
  return %0 : tensor<4x32xf32>
}
"""

COMPLEX = """\
func.func @table(%t: tensor<2x2xcomplex<f32>>) -> tensor<2x2xcomplex<f32>> {
  %c = arith.constant dense<[[(0x7FC00000,0.000000e+00), (1.0,-2.5)], [(3.0,4.0), (5.0,6.0)]]>
      : tensor<2x2xcomplex<f32>>
  %s = arith.constant dense<(1.0,2.0)> : tensor<2x2xcomplex<f32>>
  %0 = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, d1)>,
                                        affine_map<(d0, d1) -> (d0, d1)>],
                       iterator_types = ["parallel", "parallel"]}
      ins(%c, %s : tensor<2x2xcomplex<f32>>, tensor<2x2xcomplex<f32>>) outs(%t : tensor<2x2xcomplex<f32>>) {
  ^bb0(%in: complex<f32>, %in2: complex<f32>, %out: complex<f32>):
    %1 = complex.mul %in, %in2 : complex<f32>
    linalg.yield %1 : complex<f32>
  } -> tensor<2x2xcomplex<f32>>
  return %0 : tensor<2x2xcomplex<f32>>
}
"""

UNPRICED_ENCODINGS = """\
#testing = #iree_encoding.testing<>
#layout = #iree_encoding.layout<[#iree_encoding.testing<layouts = []>]>
util.func public @encoded(%x: tensor<?x64xf32>, %w: tensor<64x32xf32>, %n: index) -> tensor<?x32xf32> {
  %e = iree_encoding.set_encoding %x : tensor<?x64xf32> -> tensor<?x64xf32, #testing>
  %p = iree_encoding.set_encoding %w : tensor<64x32xf32> -> tensor<64x32xf32, #iree_encoding.padding<[0, ?]>>
  %l = iree_encoding.set_encoding %w : tensor<64x32xf32> -> tensor<64x32xf32, #layout>
  %0 = flow.dispatch.region -> (tensor<?x32xf32>{%n}) {
    %u = iree_encoding.unset_encoding %e : tensor<?x64xf32, #testing> -> tensor<?x64xf32>{%n}
    %z = tensor.empty(%n) : tensor<?x32xf32>
    %m = linalg.matmul ins(%u, %w : tensor<?x64xf32>, tensor<64x32xf32>) outs(%z : tensor<?x32xf32>) -> tensor<?x32xf32>
    flow.return %m : tensor<?x32xf32>
  }
  util.return %0 : tensor<?x32xf32>
}
"""

CASTS = """\
func.func @casts(%x: tensor<4x?xf32>) -> (tensor<?x3xf32>, tensor<4x3xi32>) {
  %c = tensor.cast %x {keep} : tensor<4x?xf32> to tensor<?x3xf32>
  %s = tensor.cast %x : tensor<4x?xf32> to tensor<4x3xf32>
  %b = tensor.bitcast %s : tensor<4x3xf32> to tensor<4x3xi32>
  return %c, %b : tensor<?x3xf32>, tensor<4x3xi32>
}
"""

DYNAMIC_TILES = """\
func.func @repack(%x: tensor<16x8xf32>, %t: index, %dest: tensor<?x2x?x4xf32>, %back: tensor<16x8xf32>)
    -> (tensor<?x2x?x4xf32>, tensor<16x8xf32>) {
  %cst = arith.constant 0.0 : f32
  %p = linalg.pack %x padding_value(%cst : f32) inner_dims_pos = [0, 1] inner_tiles = [%t, 4] into %dest
      : tensor<16x8xf32> -> tensor<?x2x?x4xf32>
  %u = linalg.unpack %p inner_dims_pos = [0, 1] inner_tiles = [%t, 4] into %back
      : tensor<?x2x?x4xf32> -> tensor<16x8xf32>
  return %p, %u : tensor<?x2x?x4xf32>, tensor<16x8xf32>
}
"""

MAP_REDUCE = """\
func.func @bodies(%x: tensor<4x8xf32>, %acc: tensor<4xf32>) -> (tensor<4xf32>, tensor<4x8xf32>, tensor<4xf32>) {
  %r = linalg.reduce ins(%x : tensor<4x8xf32>) outs(%acc : tensor<4xf32>) dimensions = [1]
    (%in: f32, %init: f32) {
      %0 = arith.addf %in, %init : f32
      linalg.yield %0 : f32
    }
  %m = linalg.map { math.absf } ins(%x : tensor<4x8xf32>) outs(%x : tensor<4x8xf32>)
  %s = linalg.reduce { arith.maximumf } ins(%m : tensor<4x8xf32>) outs(%acc : tensor<4xf32>) dimensions = [1]
  return %r, %m, %s : tensor<4xf32>, tensor<4x8xf32>, tensor<4xf32>
}
"""

SIZES = """\
#map = affine_map<()[s0] -> (s0 ceildiv 8)>
util.func public @sizes(%x: tensor<?x32xf4E2M1FN>, %k: i64) -> (tensor<?x16xi8>, tensor<?xf32>) {
  %c0 = arith.constant 0 : index
  %d = tensor.dim %x, %c0 : tensor<?x32xf4E2M1FN>
  %b = iree_tensor_ext.bitcast %x : tensor<?x32xf4E2M1FN>{%d} -> tensor<?x16xi8>{%d}
  %n = affine.apply #map()[%d]
  %i = arith.index_cast %k : i64 to index
  %m = affine.apply affine_map<(d0)[s0] -> (d0 * 4 + s0 mod 3)>(%n)[%i]
  %e = tensor.empty(%m) : tensor<?xf32>
  util.return %b, %e : tensor<?x16xi8>, tensor<?xf32>
}
"""

TIED = """\
util.func public @tied(%x: tensor<8x4xf32>, %u: tensor<2x4xf32>, %y: tensor<8x4xf32>)
    -> (tensor<8x4xf32>, tensor<8x4xf32>, tensor<8x4xf32>) {
  %c1 = arith.constant 1 : index
  %0 = flow.dispatch.workgroups[%c1](%u, %x) : (tensor<2x4xf32>, tensor<8x4xf32>) -> %x =
      (%ub: !iree_tensor_ext.dispatch.tensor<readonly:tensor<2x4xf32>>,
       %xb: !iree_tensor_ext.dispatch.tensor<readwrite:tensor<8x4xf32>>) {
    %v = iree_tensor_ext.dispatch.tensor.load %ub, offsets = [0, 0], sizes = [2, 4], strides = [1, 1]
        : !iree_tensor_ext.dispatch.tensor<readonly:tensor<2x4xf32>> -> tensor<2x4xf32>
    iree_tensor_ext.dispatch.tensor.store %v, %xb, offsets = [3, 0], sizes = [2, 4], strides = [1, 1]
        : tensor<2x4xf32> -> !iree_tensor_ext.dispatch.tensor<readwrite:tensor<8x4xf32>>
    flow.return
  }
  %1:2 = flow.dispatch.workgroups[%c1](%y) : (tensor<8x4xf32>) -> (%y, tensor<8x4xf32>) =
      (%yb: !iree_tensor_ext.dispatch.tensor<readwrite:tensor<8x4xf32>>,
       %ob: !iree_tensor_ext.dispatch.tensor<writeonly:tensor<8x4xf32>>) {
    %w = iree_tensor_ext.dispatch.tensor.load %yb, offsets = [0, 0], sizes = [8, 4], strides = [1, 1]
        : !iree_tensor_ext.dispatch.tensor<readwrite:tensor<8x4xf32>> -> tensor<8x4xf32>
    %e = tensor.empty() : tensor<8x4xf32>
    %n = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, d1)>],
                         iterator_types = ["parallel", "parallel"]}
        ins(%w : tensor<8x4xf32>) outs(%e : tensor<8x4xf32>) {
    ^bb0(%in: f32, %out: f32):
      %neg = arith.negf %in : f32
      linalg.yield %neg : f32
    } -> tensor<8x4xf32>
    iree_tensor_ext.dispatch.tensor.store %n, %yb, offsets = [0, 0], sizes = [8, 4], strides = [1, 1]
        : tensor<8x4xf32> -> !iree_tensor_ext.dispatch.tensor<readwrite:tensor<8x4xf32>>
    iree_tensor_ext.dispatch.tensor.store %w, %ob, offsets = [0, 0], sizes = [8, 4], strides = [1, 1]
        : tensor<8x4xf32> -> !iree_tensor_ext.dispatch.tensor<writeonly:tensor<8x4xf32>>
    flow.return
  }
  util.return %0, %1#0, %1#1 : tensor<8x4xf32>, tensor<8x4xf32>, tensor<8x4xf32>
}
"""

TIED_TWICE = """\
util.func public @twice(%u: tensor<2x4xf32>, %x: tensor<8x4xf32>) -> tensor<8x4xf32> {
  %0 = flow.dispatch.workgroups(%u, %x) : (tensor<2x4xf32>, tensor<8x4xf32>) -> %x =
      (%ub: !iree_tensor_ext.dispatch.tensor<readonly:tensor<2x4xf32>>,
       %xb: !iree_tensor_ext.dispatch.tensor<readwrite:tensor<8x4xf32>>) {
    %v = iree_tensor_ext.dispatch.tensor.load %ub, offsets = [0, 0], sizes = [2, 4], strides = [1, 1]
        : !iree_tensor_ext.dispatch.tensor<readonly:tensor<2x4xf32>> -> tensor<2x4xf32>
    iree_tensor_ext.dispatch.tensor.store %v, %xb, offsets = [0, 0], sizes = [2, 4], strides = [1, 1]
        : tensor<2x4xf32> -> !iree_tensor_ext.dispatch.tensor<readwrite:tensor<8x4xf32>>
    iree_tensor_ext.dispatch.tensor.store %v, %xb, offsets = [6, 0], sizes = [2, 4], strides = [1, 1]
        : tensor<2x4xf32> -> !iree_tensor_ext.dispatch.tensor<readwrite:tensor<8x4xf32>>
    flow.return
  }
  util.return %0 : tensor<8x4xf32>
}
"""

ONLINE_ATTENTION = """\
#q = affine_map<(b, m, n, k1, k2) -> (b, m, k1)>
#k = affine_map<(b, m, n, k1, k2) -> (b, k2, k1)>
#v = affine_map<(b, m, n, k1, k2) -> (b, k2, n)>
#s = affine_map<(b, m, n, k1, k2) -> ()>
#o = affine_map<(b, m, n, k1, k2) -> (b, m, n)>
#r = affine_map<(b, m, n, k1, k2) -> (b, m)>
func.func @online(%q: tensor<2x4x8xf32>, %k: tensor<2x6x8xf32>, %v: tensor<2x6x5xf32>, %scale: f32,
                  %acc: tensor<2x4x5xf32>, %max: tensor<2x4xf32>, %sum: tensor<2x4xf32>)
    -> (tensor<2x4x5xf32>, tensor<2x4xf32>, tensor<2x4xf32>) {
  %0:3 = iree_linalg_ext.online_attention <indexing_maps = [#q, #k, #v, #s, #o, #r, #r]>
      ins(%q, %k, %v, %scale : tensor<2x4x8xf32>, tensor<2x6x8xf32>, tensor<2x6x5xf32>, f32)
      outs(%acc, %max, %sum : tensor<2x4x5xf32>, tensor<2x4xf32>, tensor<2x4xf32>) {
  ^bb0(%score: f32):
    iree_linalg_ext.yield %score : f32
  } -> tensor<2x4x5xf32>, tensor<2x4xf32>, tensor<2x4xf32>
  return %0#0, %0#1, %0#2 : tensor<2x4x5xf32>, tensor<2x4xf32>, tensor<2x4xf32>
}
"""

SCATTER_TRANSFER = """\
util.func public @scatter(%idx: tensor<?xi32>, %n: index, %m: index, %update: tensor<?x?xf32>,
                          %original: tensor<?x?xf32>) -> tensor<?x?xf32> {
  %0 = flow.tensor.transfer %idx : tensor<?xi32>{%n} to "target"
  %1 = flow.dispatch.region -> (tensor<?x?xf32>{%m, %n}) {
    %2 = iree_linalg_ext.scatter dimension_map = [0] unique_indices(true)
        ins(%update, %0 : tensor<?x?xf32>, tensor<?xi32>)
        outs(%original : tensor<?x?xf32>) {
      ^bb0(%a: f32, %b: f32):
        %3 = arith.addf %a, %b : f32
        iree_linalg_ext.yield %3 : f32
    } -> tensor<?x?xf32>
    flow.return %2 : tensor<?x?xf32>
  }
  util.return %1 : tensor<?x?xf32>
}
"""

RESULT_LISTS = """\
#id = affine_map<(d0, d1) -> (d0, d1)>
#row = affine_map<(d0, d1) -> (d0)>
util.func public @lists(%x: tensor<4x8xf32>, %a: tensor<4x8xf32>, %b: tensor<4x8xi32>, %r: tensor<4xf32>)
    -> (tensor<4x8xf32>, tensor<4x8xi32>, tensor<4xf32>) {
  %0:2 = linalg.generic {indexing_maps = [#id, #id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%x : tensor<4x8xf32>) outs(%a, %b : tensor<4x8xf32>, tensor<4x8xi32>) {
  ^bb0(%in: f32, %o0: f32, %o1: i32):
    %i = arith.fptosi %in : f32 to i32
    linalg.yield %in, %i : f32, i32
  } -> (tensor<4x8xf32>, tensor<4x8xi32>)
  %1 = iree_linalg_ext.custom_op {indexing_maps = [#id, #row],
      iterator_types = [#iree_linalg_ext.iterator_type<parallel>, #iree_linalg_ext.iterator_type<reduction>]}
      ins(%x : tensor<4x8xf32>) outs(%r : tensor<4xf32>) {
  ^bb0(%t: tensor<?x?xf32>, %s: tensor<?xf32>):
    %2 = linalg.generic {indexing_maps = [#id, #row], iterator_types = ["parallel", "reduction"]}
        ins(%t : tensor<?x?xf32>) outs(%s : tensor<?xf32>) {
    ^bb1(%e: f32, %acc: f32):
      %3 = arith.addf %e, %acc : f32
      linalg.yield %3 : f32
    } -> tensor<?xf32>
    iree_linalg_ext.yield %2 : tensor<?xf32>
  } -> tensor<4xf32>
  util.return %0#0, %0#1, %1 : tensor<4x8xf32>, tensor<4x8xi32>, tensor<4xf32>
}
"""

INPUTS = {
    "declarations": DECLARATIONS,
    "small_floats": SMALL_FLOATS,
    "complex": COMPLEX,
    "unpriced_encodings": UNPRICED_ENCODINGS,
    "dynamic_tiles": DYNAMIC_TILES,
    "casts": CASTS,
    "map_reduce": MAP_REDUCE,
    "sizes": SIZES,
    "tied": TIED,
    "tied_twice": TIED_TWICE,
    "online_attention": ONLINE_ATTENTION,
    "scatter_transfer": SCATTER_TRANSFER,
    "result_lists": RESULT_LISTS,
}


def _read(name: str) -> Module:
    return parse_mlir(INPUTS[name], f"{name}.mlir")


@pytest.mark.parametrize("name", INPUTS)
def test_reads_prints_back_and_imports(name: str) -> None:
    module = _read(name)
    printed = print_mlir(module)
    again = parse_mlir(printed, "printed.mlir")
    assert ir_key(again) == ir_key(module)
    assert print_mlir(again) == printed
    for func in module.defined_functions():
        import_function(module, sym_name(func))


def test_declarations_list_bare_types_and_print_as_iree_does() -> None:
    module = _read("declarations")
    external, get_tensor, main = module.functions()
    assert not external.regions and not get_tensor.regions
    assert module.defined_functions() == [main]
    assert module.function() is main
    printed = print_mlir(module)
    assert "func.func private @external(tensor<4xf32>, f32) -> tensor<4xf32>\n" in printed  # as MLIR prints them
    assert "util.func private @get_tensor(%arg0: tensor<4xf32>) -> tensor<4xf32>\n" in printed  # as IREE does
    assert function_shapes(external).shapes == {}
    with pytest.raises(ImportError_, match=r"declarations\.mlir:1:1: @external is a declaration \(no body\)"):
        import_function(module, "external")


def test_a_body_needs_named_arguments() -> None:
    with pytest.raises(MLIRSyntaxError, match=r"x\.mlir:1:14: error: a function with a body names its arguments"):
        parse_mlir("func.func @f(tensor<4xf32>) {\n  return\n}\n", "x.mlir")


def test_small_float_types_and_their_storage() -> None:
    module = _read("small_floats")
    ft = function_type(module.function())
    assert [t.element.name if isinstance(t, TensorType) else t.name for t in ft.inputs] == [
        "f4E2M1FN", "f8E8M0FNU", "f32", "f6E2M3FN", "f8E4M3FN", "f8E5M2",
    ]  # fmt: skip
    assert all(ScalarType(n).is_float for n in ("f4E2M1FN", "f8E8M0FNU", "f6E2M3FN", "tf32", "f80"))
    # Storage as IREE rounds it: whole bytes, then a power of two.
    sizes = {n: element_nbytes(ScalarType(n)) for n in ("f4E2M1FN", "f6E3M2FN", "f8E5M2FNUZ", "tf32", "f80", "f128")}
    assert sizes == {"f4E2M1FN": 1, "f6E3M2FN": 1, "f8E5M2FNUZ": 1, "tf32": 4, "f80": 16, "f128": 16}
    assert "arith.constant 1.5 : f8E4M3FN" in print_mlir(module)  # the literal as written
    assert "arith.scaling_extf %in, %scale : f4E2M1FN, f8E8M0FNU to f32" in print_mlir(module)
    assert not module.warnings


def test_a_dense_literal_of_small_floats_is_a_clean_refusal() -> None:
    message = r"x\.mlir:1:21: error: unsupported element type f8E4M3FN in a dense literal"
    with pytest.raises(MLIRSyntaxError, match=message):
        parse_mlir("%0 = arith.constant dense<1.0> : tensor<2xf8E4M3FN>\n", "x.mlir")


def test_complex_elements_read_as_numpy_complex() -> None:
    module = _read("complex")
    table, splat = (op.attributes["value"] for op in module.walk() if op.name == "arith.constant")
    assert isinstance(table, DenseAttr) and isinstance(splat, DenseAttr)
    assert table.type.element == ScalarType("complex<f32>") and element_nbytes(table.type.element) == 8
    assert table.array.dtype == np.complex64
    np.testing.assert_array_equal(table.array[1:], [[3 + 4j, 5 + 6j]])
    assert np.isnan(table.array[0, 0].real) and table.array[0, 1] == 1 - 2.5j
    assert splat.is_splat and splat.first() == 1 + 2j
    printed = print_mlir(module)
    assert "dense<[[(0x7FC00000,0.0e+00), (1.0e+00,-2.5e+00)], [(3.0e+00,4.0e+00), (5.0e+00,6.0e+00)]]>" in printed
    assert "dense<(1.0e+00,2.0e+00)> : tensor<2x2xcomplex<f32>>" in printed
    hex_form = parse_mlir('%0 = arith.constant dense<"0x0000803F00000040"> : tensor<3xcomplex<f32>>\n')
    value = hex_form.ops[0].attributes["value"]
    assert isinstance(value, DenseAttr) and value.array.tolist() == [1 + 2j] * 3


def test_unpriced_encodings_are_kept_as_written_with_one_warning() -> None:
    module = _read("unpriced_encodings")
    assert module.warnings == [
        "unpriced_encodings.mlir:4:77: warning: encodings the cost model does not price: #iree_encoding.testing, "
        "#iree_encoding.padding, #iree_encoding.layout; kept as written: their set_encodings and unset_encodings "
        "move as encodes do but have no layout, and the other ops on tensors that carry them are opaque ops "
        "(a barrier for every rule)"
    ]
    printed = print_mlir(module)
    assert "#iree_encoding.padding<[0, ?]>" in printed and "#iree_encoding.testing<>" in printed
    imported = import_function(module)
    # The encodes are encodes, of encodings the target gives no layout: nothing for the cost model to price.
    assert not imported.encodings and not [k for k in imported.ops if not k.startswith("contract:")]
    assert sorted(imported.unpriced_encodings) == [
        '(Enc -1 "#iree_encoding.layout" "#iree_encoding.layout<[#iree_encoding.testing<layouts = []>]>" "" '
        "(vec-empty))",
        '(Enc -1 "#iree_encoding.padding" "#iree_encoding.padding<[0, ?]>" "" (vec-empty))',
        '(Enc -1 "#iree_encoding.testing" "#iree_encoding.testing<>" "" (vec-empty))',
    ]
    heads = sorted(t.head for t in imported.lets.values())
    assert heads.count("SetEncoding") == 3 and heads.count("UnsetEncoding") == 1
    assert "Contract" in heads and "Dispatch" in heads


def test_casts_read_print_and_evaluate() -> None:
    module = _read("casts")
    printed = print_mlir(module)
    assert "%c = tensor.cast %x {keep} : tensor<4x?xf32> to tensor<?x3xf32>" in printed
    assert "%b = tensor.bitcast %s : tensor<4x3xf32> to tensor<4x3xi32>" in printed
    x = np.arange(12, dtype=np.float32).reshape(4, 3)
    same, bits = evaluate(module, [x])
    np.testing.assert_array_equal(same, x)
    np.testing.assert_array_equal(bits, x.view(np.int32))  # the bytes, reinterpreted
    with pytest.raises(EvaluationError, match="dim 1 is 5 at run time, the type says 3"):
        evaluate(module, [np.zeros((4, 5), np.float32)])
    bad = "func.func @f(%x: tensor<4xf32>) -> tensor<5xf32> {\n  %c = tensor.cast %x : tensor<4xf32> to tensor<5xf32>\n"
    with pytest.raises(MLIRSyntaxError, match="incompatible shapes"):
        parse_mlir(bad + "  return %c : tensor<5xf32>\n}\n", "bad.mlir")


def test_dynamic_inner_tiles_read_and_evaluate() -> None:
    module = _read("dynamic_tiles")
    printed = print_mlir(module)
    assert "inner_tiles = [%t, 4] into %dest : tensor<16x8xf32> -> tensor<?x2x?x4xf32>" in printed
    assert "inner_tiles = [%t, 4] into %back : tensor<?x2x?x4xf32> -> tensor<16x8xf32>" in printed
    x = np.arange(128, dtype=np.float32).reshape(16, 8)
    packed, back = evaluate(module, [x, 8, np.zeros((2, 2, 8, 4), np.float32), np.zeros_like(x)])
    np.testing.assert_array_equal(packed, x.reshape(2, 8, 2, 4).transpose(0, 2, 1, 3))
    np.testing.assert_array_equal(back, x)


def test_map_and_reduce_bodies_in_both_spellings() -> None:
    module = _read("map_reduce")
    printed = print_mlir(module)
    assert "dimensions = [1]\n    (%in: f32, %init: f32) {\n      %0 = arith.addf %in, %init : f32" in printed
    # The one-op spellings stand for the bodies MLIR gives them: a block argument per input and init.
    _, mapped, largest = (op for op in module.walk() if op.name in ("linalg.map", "linalg.reduce"))
    for op, body in ((mapped, "math.absf"), (largest, "arith.maximumf")):
        block = op.regions[0].entry
        assert [v.type for v in block.args] == [ScalarType("f32")] * 2
        assert [o.name for o in block.ops] == [body, "linalg.yield"]
    assert block.ops[0].operands == block.args
    assert mapped.regions[0].entry.ops[0].operands == mapped.regions[0].entry.args[:1]
    imported = import_function(module)
    assert sorted(op.name for op in imported.ops.values()) == ["linalg.map", "linalg.reduce", "linalg.reduce"]


def test_affine_apply_and_bitcast_sizes_are_seen_through() -> None:
    module = _read("sizes")
    func = module.function()
    shapes = function_shapes(func)
    by_name = {v.name: v for op in func.walk() for v in op.results}
    assert str(shapes.scalars[by_name["n"]]) == "(arg0.d0 ceildiv 8)"
    assert str(shapes.scalars[by_name["m"]]) == "4*(arg0.d0 ceildiv 8) + (arg1 mod 3)"
    assert str(shapes.shape(by_name["b"])[0]) == "arg0.d0"
    imported = import_function(module)
    assert not any("affine.apply" in key for key in imported.ops)  # sizes, not terms


def test_affine_apply_evaluates_as_mlir_defines_it() -> None:
    module = parse_mlir(
        "func.func @f(%a: index, %b: index) -> (index, index, index) {\n"
        "  %0 = affine.apply affine_map<(d0)[s0] -> (d0 ceildiv 8 + (s0 - 7) mod 3)>(%a)[%b]\n"
        "  %1 = affine.min affine_map<(d0, d1) -> (d0, d1 floordiv 2)>(%a, %b)\n"
        "  %2 = affine.max affine_map<(d0, d1) -> (d0, d1 floordiv 2)>(%a, %b)\n"
        "  return %0, %1, %2 : index, index, index\n}\n"
    )
    assert [int(v) for v in evaluate(module, [17, 5])] == [3 + 1, 2, 17]  # (5 - 7) mod 3 is 1, as floor's


def _start_plan(name: str, tmp_path: Path, capsys: pytest.CaptureFixture[str], text: str = "") -> tuple[int, str, str]:
    """``egg-dispatch opt`` on the input (``text``, else ``INPUTS[name]``) as it is, without rules: its
    start plan, printed."""
    path = tmp_path / f"{name}.mlir"
    path.write_text(text or INPUTS[name])
    code = main(["opt", "--no-initial-plan", "--rules", "noop", "--budget", "iterations=1", "--max-plans", "1",
                 "--target", "x86_64-avx512", str(path)])  # fmt: skip
    out, err = capsys.readouterr()
    return code, out, err


def test_tied_results_are_updates_in_place(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    module = _read("tied")
    printed = print_mlir(module)
    assert "(%u, %x) : (tensor<2x4xf32>, tensor<8x4xf32>) -> %x =\n" in printed
    assert "(%y) : (tensor<8x4xf32>) -> (%y, tensor<8x4xf32>) =\n" in printed
    x = np.arange(32, dtype=np.float32).reshape(8, 4)
    u, y = -np.ones((2, 4), np.float32), x + 100
    updated, negated, copied = evaluate(module, [x, u, y])
    np.testing.assert_array_equal(updated, np.concatenate([x[:3], u, x[5:]]))
    np.testing.assert_array_equal(negated, -y)
    np.testing.assert_array_equal(copied, y)
    imported = import_function(module)
    assert any(t.head == "InsertSlice" for t in imported.lets.values())  # the slice of %x it writes
    code, out, _ = _start_plan("tied", tmp_path, capsys)
    assert code == 0
    plan = parse_mlir(out.split("\n", 2)[2], "plan.mlir")  # after the two header comments
    for got, want in zip(evaluate(plan, [x, u, y]), (updated, negated, copied), strict=True):
        np.testing.assert_array_equal(got, want)


def test_a_tied_result_written_twice_is_an_opaque_dispatch(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    imported = import_function(_read("tied_twice"))
    (root,) = imported.results
    assert imported.expand(root).startswith('(Dispatch (Op "flow.dispatch.workgroups#')
    code, out, _ = _start_plan("tied_twice", tmp_path, capsys)
    assert code == 0 and "flow.dispatch.region" not in out  # kept as it was, not wrapped again
    plan = parse_mlir(out.split("\n", 2)[2], "plan.mlir")
    u, x = np.ones((2, 4), np.float32), np.zeros((8, 4), np.float32)
    np.testing.assert_array_equal(evaluate(plan, [u, x])[0], np.concatenate([u, x[2:6], u]))


def test_online_attention_has_its_three_results() -> None:
    module = _read("online_attention")
    (op,) = (o for o in module.walk() if o.name == "iree_linalg_ext.online_attention")
    f32 = ScalarType("f32")
    assert [r.type for r in op.results] == [TensorType((2, 4, 5), f32), *[TensorType((2, 4), f32)] * 2]
    assert "} -> tensor<2x4x5xf32>, tensor<2x4xf32>, tensor<2x4xf32>\n" in print_mlir(module)
    imported = import_function(module)
    assert [imported.expand(r).rsplit(" ", 1)[1] for r in imported.results] == ["0)", "1)", "2)"]


def test_result_lists_and_heads_are_printed_as_iree_reads_them() -> None:
    printed = print_mlir(_read("result_lists"))
    assert "} -> (tensor<4x8xf32>, tensor<4x8xi32>)\n" in printed  # linalg: in parentheses
    assert "%1 = iree_linalg_ext.custom_op {indexing_maps = [#map, #map1], iterator_types = [" in printed


def test_scatter_and_transfer_are_read_with_their_sizes() -> None:
    module = _read("scatter_transfer")
    assert not module.warnings  # both read into their structure, not kept as text
    (scatter,) = (o for o in module.walk() if o.name == "iree_linalg_ext.scatter")
    assert scatter.opaque_text is None and len(scatter.regions) == 1
    assert " dimension_map = [0] unique_indices(true) ins(" in print_mlir(module)
    shapes = function_shapes(module.function())
    (transfer,) = (o for o in module.walk() if o.name == "flow.tensor.transfer")
    assert [str(d) for d in shapes.shape(transfer.result)] == ["arg1"]  # %n, the sizes its type lists


def test_a_size_read_from_data_is_a_clean_refusal(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A size read from a tensor the program computes (a size read from an argument's data is cloned into
    the plan: tests/test_llm_commands.py)."""
    text = (
        "util.func public @f(%a: tensor<2xi32>) -> tensor<?xf32> {\n"
        "  %t = arith.addi %a, %a : tensor<2xi32>\n"
        "  %c0 = arith.constant 0 : index\n"
        "  %d = tensor.extract %t[%c0] : tensor<2xi32>\n"
        "  %n = arith.index_cast %d : i32 to index\n"
        "  %e = tensor.empty(%n) : tensor<?xf32>\n"
        "  util.return %e : tensor<?xf32>\n}\n"
    )
    code, _, err = _start_plan("data_size", tmp_path, capsys, text)
    assert code == 2
    assert err == (
        f"{tmp_path}/data_size.mlir:4:3: error: a plan of @f needs the size %d, which a tensor.extract gives: the "
        "model cannot compute it from the function's arguments\n"
    )


@pytest.mark.skipif(IREE_OPT is None, reason="iree-opt not installed (pip install egg-dispatch[iree])")
def test_iree_opt_reads_every_printed_input(tmp_path) -> None:
    text = "\n// -----\n".join(print_mlir(_read(name)) for name in INPUTS)
    path = tmp_path / "printed.mlir"
    path.write_text(text)
    proc = subprocess.run(
        [str(IREE_OPT), "--split-input-file", str(path), "-o", "/dev/null"], capture_output=True, text=True, timeout=120
    )
    assert proc.returncode == 0, proc.stderr
