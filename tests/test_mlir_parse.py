"""The MLIR reader on the fixture corpus: every fixture parses without edits, into its structure.

Constants are checked against values decoded here independently of the reader (``bytes.fromhex`` +
``struct`` / ``np.frombuffer`` on the text of the fixture) and against the formula each fixture's
header documents.
"""

from __future__ import annotations

import re
import struct
from pathlib import Path

import numpy as np
import pytest

from egg_dispatch.mlir.ir import (
    AffineMapAttr,
    ArrayAttr,
    DenseAttr,
    DialectAttr,
    DispatchTensorType,
    EncodingAttr,
    IntAttr,
    Module,
    OpaqueType,
    Operation,
    ScalarType,
    StrAttr,
    SymbolRefAttr,
    TensorType,
    Value,
)
from egg_dispatch.mlir.ops import (
    CONTRACTION_OPS,
    DYNAMIC,
    ins,
    int_list,
    is_opaque,
    iterator_types,
    outs,
    static_slice,
)
from egg_dispatch.mlir.parser import ELIDED_SEED, parse_bytes, parse_file, parse_mlir

FIXTURES = Path(__file__).parent / "fixtures"
EXAMPLE = Path(__file__).parent.parent / "egg_dispatch" / "examples" / "seed_reproducer.mlir"
ALL_INPUTS = [*sorted(FIXTURES.glob("*.mlir")), EXAMPLE]

F32 = ScalarType("f32")
# The only op of the corpus the reader does not model (IREE's default workgroup count).
KNOWN_OPAQUE = {"iree_tensor_ext.dispatch.workgroup_count_from_slice"}


def seed_weight() -> np.ndarray:
    """weight[i, j] = ((5*i + 3*j) mod 11 - 5) / 4, as the seed fixtures' headers say."""
    return np.fromfunction(lambda i, j: ((5 * i + 3 * j) % 11 - 5) / 4, (16, 8), dtype=np.int64).astype(np.float32)


def ops_named(module: Module | Operation, name: str) -> list[Operation]:
    return [op for op in module.walk() if op.name == name]


def defining(module: Module, name: str) -> Operation:
    """The op that defines SSA value ``%name`` (first match in walk order)."""
    for op in module.walk():
        if any(v.name == name for v in op.results):
            return op
    raise KeyError(name)


def constant(module: Module, name: str) -> DenseAttr:
    value = defining(module, name).attributes["value"]
    assert isinstance(value, DenseAttr)
    return value


def hex_literal(text: str, pattern: str) -> bytes:
    """The bytes of a hex string found in the fixture text (``pattern`` has one group: the hex digits)."""
    m = re.search(pattern, text)
    assert m, pattern
    return bytes.fromhex(m.group(1))


# --------------------------------------------------------------------------------------------- corpus


@pytest.mark.parametrize("path", ALL_INPUTS, ids=lambda p: p.name)
def test_every_input_parses_with_structure(path: Path) -> None:
    module = parse_file(path)
    assert module.functions(), "every input defines a function"
    opaque = {op.name for op in module.walk() if is_opaque(op)}
    assert opaque <= KNOWN_OPAQUE, f"modelled ops came out opaque: {opaque - KNOWN_OPAQUE}"
    # Every op of the corpus knows its result types (nothing left as <unknown>).
    for op in module.walk():
        for v in op.results:
            assert not (isinstance(v.type, OpaqueType) and v.type.text == "<unknown>"), (op.name, v.name)


def test_parse_bytes_equals_parse_file() -> None:
    path = FIXTURES / "seed_iree313.mlir"
    a, b = parse_file(path), parse_bytes(path.read_bytes(), str(path))
    from egg_dispatch.mlir.compare import ir_key

    assert ir_key(a) == ir_key(b)


def test_unmodelled_op_stays_opaque_with_a_warning() -> None:
    text = (
        "func.func @f(%a: tensor<4xf32>) -> tensor<4xf32> {\n"
        '  %b = my_dialect.frobnicate %a {level = 3 : i64, tag = "x"} : tensor<4xf32> -> tensor<4xf32>\n'
        "  return %b : tensor<4xf32>\n"
        "}\n"
    )
    module = parse_mlir(text, "op.mlir")
    (op,) = ops_named(module, "my_dialect.frobnicate")
    assert is_opaque(op)
    assert op.opaque_text == '%a {level = 3 : i64, tag = "x"} : tensor<4xf32> -> tensor<4xf32>'
    assert [v.name for v in op.operands] == ["a"]
    assert op.results[0].type == TensorType((4,), F32)
    assert module.warnings == [
        "op.mlir:2:3: warning: 'my_dialect.frobnicate' is not modelled; kept as an opaque op (a barrier for every rule)"
    ]


def test_workgroup_count_is_the_only_opaque_op_and_warns() -> None:
    module = parse_file(FIXTURES / "seed_dispatch_creation.mlir")
    assert len(module.warnings) == 2
    assert all("iree_tensor_ext.dispatch.workgroup_count_from_slice" in w for w in module.warnings)
    assert module.warnings[0].startswith(f"{FIXTURES / 'seed_dispatch_creation.mlir'}:43:7: warning: ")


# ------------------------------------------------------------------------------------------ constants


def test_seed_constant_dense_list_equals_written_values() -> None:
    path = FIXTURES / "seed_iree313.mlir"
    module = parse_file(path)
    weight = constant(module, "weight")
    assert weight.form == "list"
    assert weight.type == TensorType((16, 8), F32)
    # The first row as written in the fixture, read with a regex rather than the reader.
    first_row = re.search(r"%weight = arith.constant dense<\[\[([^\]]*)\]", path.read_text()).group(1)  # type: ignore[union-attr]
    assert weight.array[0].tolist() == [float(x) for x in first_row.split(",")]
    np.testing.assert_array_equal(weight.array, seed_weight())


def test_seed_constant_hex_literal_decoded_independently() -> None:
    path = FIXTURES / "seed_after_set_encoding.mlir"
    module = parse_file(path)
    cst = constant(module, "cst")
    assert cst.form == "hex" and cst.array.dtype == np.float32 and cst.array.shape == (16, 8)
    raw = hex_literal(path.read_text(), r'dense<"0x([0-9A-F]+)"> : tensor<16x8xf32>')
    assert len(raw) == 16 * 8 * 4
    np.testing.assert_array_equal(cst.array, np.frombuffer(raw, dtype="<f4").reshape(16, 8))
    np.testing.assert_array_equal(cst.array, seed_weight())


def test_seed_constant_resource_blob_decoded_independently() -> None:
    path = FIXTURES / "seed_resource.mlir"
    module = parse_file(path)
    weight = constant(module, "weight")
    assert weight.form == "resource" and weight.resource_key == "split.weight_16x8.f32"
    blob = hex_literal(path.read_text(), r'split\.weight_16x8\.f32: "0x([0-9A-F]+)"')
    (alignment,) = struct.unpack_from("<I", blob, 0)
    assert alignment == 4
    values = struct.unpack_from("<128f", blob, 4)
    np.testing.assert_array_equal(weight.array, np.array(values, dtype=np.float32).reshape(16, 8))
    np.testing.assert_array_equal(weight.array, seed_weight())
    assert module.resources["split.weight_16x8.f32"].tobytes() == blob
    assert module.warnings == []


def test_hex_and_integer_and_half_constants() -> None:
    mlp = parse_file(FIXTURES / "mlp2.mlir")
    w1 = constant(mlp, "w1")
    raw = hex_literal((FIXTURES / "mlp2.mlir").read_text(), r'%w1 = arith.constant dense<"0x([0-9A-F]+)">')
    np.testing.assert_array_equal(w1.array, np.frombuffer(raw, dtype="<f4").reshape(16, 32))
    expect = np.fromfunction(lambda i, j: ((3 * i + 7 * j) % 10 - 5) / 8, (16, 32), dtype=np.int64)
    np.testing.assert_array_equal(w1.array, expect.astype(np.float32))

    w8 = constant(parse_file(FIXTURES / "i8_matmul.mlir"), "w")
    assert w8.array.dtype == np.int8 and w8.type.element == ScalarType("i8")
    np.testing.assert_array_equal(w8.array, np.fromfunction(lambda i, j: (7 * i + 3 * j) % 31 - 15, (32, 16)))

    w16 = constant(parse_file(FIXTURES / "f16_matmul.mlir"), "w")
    assert w16.array.dtype == np.float16
    expect16 = np.fromfunction(lambda i, j: ((3 * i + 5 * j) % 9 - 4) / 4, (32, 16), dtype=np.int64)
    np.testing.assert_array_equal(w16.array, expect16.astype(np.float16))


def test_torch_resources_and_scalar_tensors() -> None:
    path = FIXTURES / "torch_export.mlir"
    module = parse_file(path)
    table = constant(module, "cst_3")
    blob = hex_literal(path.read_text(), r'torch_tensor_32_16_torch\.float32: "0x([0-9A-F]+)"')
    np.testing.assert_array_equal(table.array, np.frombuffer(blob[4:], dtype="<f4").reshape(32, 16))
    temperature = constant(module, "cst_2")
    assert temperature.type == TensorType((), F32) and temperature.array.shape == () and temperature.array == 2.0
    neg_inf = defining(module, "cst_0").attributes["value"]
    assert neg_inf.value == -np.inf and neg_inf.type == F32  # type: ignore[attr-defined]


def test_elided_resource_fill_is_deterministic_and_warns() -> None:
    first, second = parse_file(EXAMPLE), parse_file(EXAMPLE)
    a, b = constant(first, "fused"), constant(second, "fused")
    assert a.form == "resource" and a.resource_key == "__auto.constant_16_8_torch.float32"
    assert a.array.shape == (16, 8) and a.array.dtype == np.float32
    np.testing.assert_array_equal(a.array, b.array)
    assert np.all(np.abs(a.array) <= 1.0) and len(np.unique(a.array)) > 100  # a real fill, not zeros
    (warning,) = [w for w in first.warnings if ": warning: " in w]  # and the note on its retired op
    assert warning.startswith(f"{EXAMPLE}:18:42: warning: resource '__auto.constant_16_8_torch.float32'")
    assert "no blob" in warning and f"seed {ELIDED_SEED}" in warning
    assert first.warnings == second.warnings


def test_elided_marker_fill_and_different_keys_differ() -> None:
    text = (
        "func.func @f() -> (tensor<4xf32>, tensor<4xf32>) {\n"
        "  %a = arith.constant dense_resource<__elided__> : tensor<4xf32>\n"
        "  %b = arith.constant dense_resource<other> : tensor<4xf32>\n"
        "  return %a, %b : tensor<4xf32>, tensor<4xf32>\n"
        "}\n"
    )
    module = parse_mlir(text, "e.mlir")
    a, b = constant(module, "a"), constant(module, "b")
    assert not np.array_equal(a.array, b.array)
    assert "is elided" in module.warnings[0] and "e.mlir:2:38" in module.warnings[0]
    np.testing.assert_array_equal(a.array, constant(parse_mlir(text, "e.mlir"), "a").array)


# ------------------------------------------------------------------------------------------ tensor ops


def test_slices_static_offsets_sizes_strides() -> None:
    seed = parse_file(FIXTURES / "seed_iree313.mlir")
    top, bottom = ops_named(seed, "tensor.extract_slice")
    assert static_slice(top) == ((0, 0), (8, 8), (1, 1))
    assert static_slice(bottom) == ((8, 0), (8, 8), (1, 1))
    assert top.operands == bottom.operands == [defining(seed, "weight").result]
    assert top.result.type == TensorType((8, 8), F32)

    (_, right) = ops_named(parse_file(FIXTURES / "col_slices.mlir"), "tensor.extract_slice")
    assert static_slice(right) == ((0, 8), (8, 8), (1, 1))
    (rows,) = ops_named(parse_file(FIXTURES / "unaligned.mlir"), "tensor.extract_slice")
    assert static_slice(rows) == ((5, 0), (13, 7), (1, 1))
    bias = [op for op in ops_named(parse_file(FIXTURES / "transformer_block.mlir"), "tensor.extract_slice")]
    assert [static_slice(op)[0] for op in bias] == [(0, 0), (16, 0), (32, 0), (0,), (16,), (32,)]


def test_dynamic_slice_entries_are_operands() -> None:
    text = (
        "func.func @f(%a: tensor<8x8xf32>, %i: index) -> tensor<4x8xf32> {\n"
        "  %s = tensor.extract_slice %a[%i, 0] [4, 8] [1, 1] : tensor<8x8xf32> to tensor<4x8xf32>\n"
        "  return %s : tensor<4x8xf32>\n"
        "}\n"
    )
    (op,) = ops_named(parse_mlir(text), "tensor.extract_slice")
    assert static_slice(op)[0] == (DYNAMIC, 0)
    assert [v.name for v in op.operands] == ["a", "i"]


def test_expand_and_collapse_shape() -> None:
    module = parse_file(FIXTURES / "torch_export.mlir")
    expanded = defining(module, "expanded")
    assert expanded.name == "tensor.expand_shape"
    assert expanded.attributes["reassociation"] == ArrayAttr(
        (ArrayAttr((IntAttr(0), IntAttr(1))), ArrayAttr((IntAttr(2),)))
    )
    assert int_list(expanded.attributes["static_output_shape"]) == (1, 8, 16)
    assert expanded.result.type == TensorType((1, 8, 16), F32)
    keepdim = defining(module, "expanded_9")
    assert [int_list(g) for g in keepdim.attributes["reassociation"].items] == [(0,), (1, 2)]  # type: ignore[attr-defined]
    assert int_list(keepdim.attributes["static_output_shape"]) == (1, 8, 1)
    collapsed = defining(module, "collapsed")
    assert collapsed.name == "tensor.collapse_shape"
    assert collapsed.operands[0].type == TensorType((1, 8), ScalarType("i64"))
    assert collapsed.result.type == TensorType((8,), ScalarType("i64"))


def test_tensor_extract_dim_and_linalg_index() -> None:
    module = parse_file(FIXTURES / "torch_export.mlir")
    extracted = defining(module, "extracted")
    assert extracted.name == "tensor.extract"
    assert [v.name for v in extracted.operands] == ["cst_2"] and extracted.result.type == F32
    dim = defining(module, "dim")
    assert dim.name == "tensor.dim"
    assert [v.name for v in dim.operands] == ["expanded_6", "c2"]
    assert dim.result.type == ScalarType("index")
    indices = ops_named(module, "linalg.index")
    assert [op.attributes["dim"] for op in indices] == [IntAttr(1), IntAttr(1), IntAttr(2)]
    # linalg.index lives in the body of the generic that uses it.
    generic = defining(module, "3")
    assert generic.regions[0].entry.ops[0] is indices[0]


# ----------------------------------------------------------------------------------------- linalg ops


def test_matmul_indexing_maps_dim_positions() -> None:
    module = parse_file(FIXTURES / "seed_iree313.mlir")
    out_a = defining(module, "out_a")
    assert out_a.name == "linalg.matmul" and out_a.name in CONTRACTION_OPS
    maps = out_a.attributes["indexing_maps"].items  # type: ignore[attr-defined]
    assert all(isinstance(m, AffineMapAttr) and m.num_dims == 3 and m.num_symbols == 0 for m in maps)
    assert [m.dim_positions() for m in maps] == [(0, 2), (1, 2), (0, 1)]
    assert [v.name for v in ins(out_a)] == ["w_top", "rhs_a"]
    assert [v.name for v in outs(out_a)] == ["acc_a"]
    fill = defining(module, "acc_a")
    assert fill.name == "linalg.fill" and [v.name for v in ins(fill)] == ["zero"]
    assert [v.name for v in outs(fill)] == ["empty_a"]


def test_named_ops_without_maps_transpose_and_batch_matmul() -> None:
    module = parse_file(FIXTURES / "torch_export.mlir")
    mm = defining(module, "6")
    assert mm.name == "linalg.matmul" and "indexing_maps" not in mm.attributes
    transposed = defining(module, "transposed_7")
    assert transposed.name == "linalg.transpose"
    assert int_list(transposed.attributes["permutation"]) == (0, 2, 1)
    assert [v.name for v in ins(transposed)] == ["3"] and [v.name for v in outs(transposed)] == ["7"]
    assert transposed.result.type == TensorType((1, 16, 8), F32)
    bmm = defining(module, "10")
    assert bmm.name == "linalg.batch_matmul"
    assert [v.name for v in ins(bmm)] == ["expanded_6", "transposed_7"] and [v.name for v in outs(bmm)] == ["9"]
    assert bmm.result.type == TensorType((1, 8, 8), F32)


def test_generic_with_reduction_and_math_body() -> None:
    module = parse_file(FIXTURES / "torch_export.mlir")
    sum_exp = defining(module, "20")
    assert sum_exp.name == "linalg.generic"
    assert iterator_types(sum_exp) == ("parallel", "parallel", "reduction")
    maps = sum_exp.attributes["indexing_maps"].items  # type: ignore[attr-defined]
    assert [m.dim_positions() for m in maps] == [(0, 1, 2), (0, 1), (0, 1)]  # #map/#map1 resolved
    assert [v.name for v in ins(sum_exp)] == ["15", "18"] and [v.name for v in outs(sum_exp)] == ["19"]
    body = sum_exp.regions[0].entry
    assert [a.type for a in body.args] == [F32, F32, F32]
    assert [op.name for op in body.ops] == ["arith.subf", "math.exp", "arith.addf", "linalg.yield"]
    exp = body.ops[1]
    assert not is_opaque(exp) and exp.operands == [body.ops[0].result]
    # The keepdim broadcast map (d0, d1, 0) holds a constant result.
    divide = defining(module, "21")
    assert divide.attributes["indexing_maps"].items[1].results == (("d", 0), ("d", 1), ("c", 0))  # type: ignore[attr-defined]


def test_attention_region_and_operands() -> None:
    module = parse_file(FIXTURES / "transformer_block.mlir")
    attn = defining(module, "attn_h")
    assert attn.name == "iree_linalg_ext.attention"
    assert [v.name for v in ins(attn)] == ["q_h", "k_h", "v_h", "scale"]
    assert [v.name for v in outs(attn)] == ["empty_heads"]
    maps = attn.attributes["indexing_maps"].items  # type: ignore[attr-defined]
    assert [m.dim_positions() for m in maps] == [(0, 1, 3), (0, 4, 3), (0, 4, 2), (), (0, 1, 2)]
    (region,) = attn.regions
    (block,) = region.blocks
    assert [a.type for a in block.args] == [F32]
    (yield_op,) = block.ops
    assert yield_op.name == "iree_linalg_ext.yield" and yield_op.operands == [block.args[0]]
    assert attn.result.type == TensorType((2, 8, 8), F32)


def test_gather_operands() -> None:
    # IREE 3.13's gather has no region (its printer and parser take none); its structure is the operands.
    module = parse_file(FIXTURES / "torch_export.mlir")
    gather = defining(module, "1")
    assert gather.name == "iree_linalg_ext.gather" and gather.regions == []
    assert gather.attributes["dimension_map"] == ArrayAttr((IntAttr(0),))
    assert [v.name for v in ins(gather)] == ["cst_3", "collapsed"] and [v.name for v in outs(gather)] == ["0"]
    assert gather.result.type == TensorType((8, 16), F32)


def test_pack_unpack_mmt4d() -> None:
    text = (
        "func.func @f(%a: tensor<16x8xf32>, %b: tensor<2x1x8x8xf32>) -> tensor<16x8xf32> {\n"
        "  %pad = arith.constant 0.0 : f32\n"
        "  %e = tensor.empty() : tensor<2x1x8x8xf32>\n"
        "  %p = linalg.pack %a padding_value(%pad : f32) outer_dims_perm = [0, 1] inner_dims_pos = [0, 1]"
        " inner_tiles = [8, 8] into %e : tensor<16x8xf32> -> tensor<2x1x8x8xf32>\n"
        "  %m = linalg.mmt4d ins(%p, %b : tensor<2x1x8x8xf32>, tensor<2x1x8x8xf32>) outs(%e : tensor<2x1x8x8xf32>)"
        " -> tensor<2x1x8x8xf32>\n"
        "  %d = tensor.empty() : tensor<16x8xf32>\n"
        "  %u = linalg.unpack %m inner_dims_pos = [0, 1] inner_tiles = [8, 8] into %d"
        " : tensor<2x1x8x8xf32> -> tensor<16x8xf32>\n"
        "  return %u : tensor<16x8xf32>\n"
        "}\n"
    )
    module = parse_mlir(text)
    pack, unpack = defining(module, "p"), defining(module, "u")
    assert int_list(pack.attributes["inner_tiles"]) == (8, 8) and "has_padding" in pack.attributes
    assert [v.name for v in pack.operands] == ["a", "e", "pad"]
    assert int_list(unpack.attributes["inner_dims_pos"]) == (0, 1) and [v.name for v in unpack.operands] == ["m", "d"]
    assert not is_opaque(defining(module, "m"))


# ------------------------------------------------------------------------------------------- IREE form


def test_encoding_attributes_after_alias_resolution() -> None:
    module = parse_file(FIXTURES / "seed_after_set_encoding.mlir")
    assert {"#map", "#map1", "#map2", "#encoding", "#encoding1", "#encoding2"} <= set(module.aliases)
    set_encodings = ops_named(module, "iree_encoding.set_encoding")
    assert len(set_encodings) == 4
    encodings = [op.result.type.encoding for op in set_encodings]  # type: ignore[attr-defined]
    assert all(isinstance(e, EncodingAttr) for e in encodings)
    assert [e.operand_index for e in encodings] == [0, 1, 0, 1]
    for e in encodings:
        assert e.op_type == "matmul"
        assert e.element_types == (F32, F32, F32)
        assert e.iteration_sizes == (8, 8, 8)
        assert [m.dim_positions() for m in e.user_indexing_maps] == [(0, 2), (1, 2), (0, 1)]
        assert e.operand_index_type == "index"
    acc = ops_named(module, "tensor.empty")[0].result.type
    assert acc.encoding.operand_index == 2  # type: ignore[union-attr]
    # The alias-resolved attribute equals the one IREE writes inline in the later dump.
    inline = parse_file(FIXTURES / "seed_dispatch_creation.mlir")
    (encode_rhs, _) = [
        op for op in ops_named(inline, "flow.tensor.encode") if op.result.type.encoding.operand_index == 1
    ]  # type: ignore[union-attr]
    assert encode_rhs.result.type.encoding == encodings[1]  # type: ignore[union-attr]


def test_dispatch_regions_nesting() -> None:
    module = parse_file(FIXTURES / "seed_after_set_encoding.mlir")
    func = module.function("split_weight_matmuls")
    assert func.name == "util.func" and "iree.abi.stub" in func.attributes
    body = func.regions[0].entry
    assert [a.type for a in body.args] == [OpaqueType("!hal.buffer_view")] * 2
    top = [op.name for op in body.ops]
    assert top.count("flow.dispatch.region") == 2
    assert top[:3] == ["arith.constant", "hal.tensor.import", "iree_tensor_ext.compute_barrier.start"]
    assert top[-1] == "util.return"
    cst = body.ops[0].result
    for region_op in (op for op in body.ops if op.name == "flow.dispatch.region"):
        assert region_op.result.type == TensorType((8, 8), F32)
        (block,) = region_op.regions[0].blocks
        names = [op.name for op in block.ops]
        assert names == [
            "arith.constant",
            "tensor.extract_slice",
            "iree_encoding.set_encoding",
            "iree_encoding.set_encoding",
            "tensor.empty",
            "linalg.fill",
            "linalg.matmul",
            "iree_encoding.unset_encoding",
            "flow.return",
        ]
        slice_op = block.ops[1]
        assert slice_op.operands == [cst]  # captured from the enclosing function, not copied
        assert block.ops[2].operands == [slice_op.result]
        matmul = block.ops[6]
        assert ins(matmul) == [block.ops[2].result, block.ops[3].result]
        assert block.ops[-1].operands == [block.ops[7].result]
    imports = ops_named(module, "hal.tensor.import")
    assert [op.attributes["name"] for op in imports] == [StrAttr("input0"), StrAttr("input1")]
    barrier_end = ops_named(module, "iree_tensor_ext.compute_barrier.end")[0]
    assert barrier_end.operands[0].owner.name == "flow.dispatch.region"  # type: ignore[union-attr]
    (device,) = [op for op in module.ops if op.name == "util.global"]
    assert isinstance(device.attributes["initial_value"], DialectAttr)
    assert device.attributes["initial_value"].text.startswith('#hal.device.target<"local", [#hal.executable.target<')  # type: ignore[attr-defined]


def test_workgroups_bindings_and_count_region() -> None:
    module = parse_file(FIXTURES / "seed_dispatch_creation.mlir")
    wgs = ops_named(module, "flow.dispatch.workgroups")
    assert len(wgs) == 2
    wg = wgs[0]
    assert [v.name for v in wg.operands] == ["__hoisted_tensor_8x8xf32__encoded", "2"]
    assert wg.operands[0].owner.name == "util.global.load"  # type: ignore[union-attr]
    assert wg.result.type == TensorType((8, 8), F32)
    body, count = wg.regions
    bindings = body.entry.args
    assert [type(b.type) for b in bindings] == [DispatchTensorType] * 3
    assert [b.type.access for b in bindings] == ["readonly", "readonly", "writeonly"]  # type: ignore[attr-defined]
    assert [b.type.tensor.encoding.operand_index for b in bindings[:2]] == [0, 1]  # type: ignore[attr-defined]
    assert bindings[2].type.tensor == TensorType((8, 8), F32)  # type: ignore[attr-defined]
    load0, load1 = ops_named(wg, "iree_tensor_ext.dispatch.tensor.load")
    assert load0.operands == [bindings[0]] and load1.operands == [bindings[1]]
    assert static_slice(load0) == ((0, 0), (8, 8), (1, 1))
    assert load0.result.type == bindings[0].type.tensor  # type: ignore[attr-defined]
    (store,) = ops_named(wg, "iree_tensor_ext.dispatch.tensor.store")
    assert store.operands[1] is bindings[2] and store.operands[0].owner.name == "iree_encoding.unset_encoding"  # type: ignore[union-attr]
    assert body.entry.ops[-1].name == "flow.return" and body.entry.ops[-1].operands == []
    assert count.entry.args == []
    wc, ret = count.entry.ops
    assert wc.name == "iree_tensor_ext.dispatch.workgroup_count_from_slice" and is_opaque(wc)
    assert [v.type for v in wc.results] == [ScalarType("index")] * 3
    assert ret.name == "flow.return" and ret.operands == wc.results


def test_util_globals_initializers_and_loads() -> None:
    module = parse_file(FIXTURES / "seed_dispatch_creation.mlir")
    assert module.has_module_op and "stream.affinity.default" in module.attributes
    globals_ = module.globals()
    hoisted = globals_["__hoisted_tensor_8x8xf32__encoded"]
    assert hoisted.attributes["sym_visibility"] == StrAttr("private")
    typ = hoisted.attributes["type"].type  # type: ignore[attr-defined]
    assert isinstance(typ.encoding, EncodingAttr) and typ.encoding.operand_index == 0
    inits = [op for op in module.ops if op.name == "util.initializer"]
    assert len(inits) == 2
    cst, encode, store, ret = inits[0].regions[0].entry.ops
    np.testing.assert_array_equal(cst.attributes["value"].array, seed_weight()[:8])  # type: ignore[attr-defined]
    np.testing.assert_array_equal(inits[1].regions[0].entry.ops[0].attributes["value"].array, seed_weight()[8:])  # type: ignore[attr-defined]
    assert encode.name == "flow.tensor.encode" and encode.result.type == typ
    assert store.attributes["global"] == SymbolRefAttr("__hoisted_tensor_8x8xf32__encoded")
    assert store.operands == [encode.result] and ret.name == "util.return"
    load = defining(module, "__hoisted_tensor_8x8xf32__encoded")
    assert load.name == "util.global.load" and "is_immutable" in load.attributes and load.result.type == typ


def test_module_name_and_function_signature() -> None:
    module = parse_file(FIXTURES / "torch_export.mlir")
    assert module.has_module_op and module.name == "tiny_causal_attention"
    main = module.function()
    assert main.attributes["sym_name"] == StrAttr("main")
    ft = main.attributes["function_type"].type  # type: ignore[attr-defined]
    assert ft.inputs == (TensorType((1, 8), ScalarType("i64")),) and ft.results == (TensorType((1, 8, 16), F32),)
    ret = main.regions[0].entry.ops[-1]
    assert ret.name == "return"  # kept as written (func.return's short spelling)
    assert [v.name for v in ret.operands] == ["23"]


def test_values_are_shared_objects() -> None:
    module = parse_file(FIXTURES / "qkv_const.mlir")
    acc = defining(module, "acc").result
    users = [op for op in module.walk() if acc in op.operands]
    assert [op.name for op in users] == ["linalg.matmul"] * 3
    assert isinstance(acc, Value) and acc.owner is defining(module, "acc")


def test_generic_form_of_a_modelled_op_stays_opaque() -> None:
    # MLIR's generic form spells structure differently (properties, regions): such an op is kept verbatim.
    text = (
        "func.func @f(%a: tensor<8x8xf32>) -> tensor<8x8xf32> {\n"
        '  %e = "tensor.empty"() : () -> tensor<8x8xf32>\n'
        '  %g = "my.op"(%a, %e) {k = 1 : i64} : (tensor<8x8xf32>, tensor<8x8xf32>) -> tensor<8x8xf32>\n'
        "  return %g : tensor<8x8xf32>\n"
        "}\n"
    )
    module = parse_mlir(text, "g.mlir")
    empty, generic, _ = module.function().regions[0].entry.ops
    assert empty.generic_form and is_opaque(empty) and empty.opaque_text == "() : () -> tensor<8x8xf32>"
    assert empty.result.type == TensorType((8, 8), F32)
    assert module.warnings == [
        "g.mlir:2:3: warning: 'tensor.empty' in generic form is not modelled; kept as an opaque op "
        "(a barrier for every rule)"
    ]
    # An op without a custom syntax keeps its generic structure.
    assert generic.generic_form and not is_opaque(generic)
    assert generic.operands == [module.function().regions[0].entry.args[0], empty.result]
    assert generic.attributes["k"] == IntAttr(1, ScalarType("i64"))


def test_bf16_literals_are_rounded_to_bf16() -> None:
    text = (
        "func.func @f() -> tensor<3xbf16> {\n"
        "  %c = arith.constant dense<[0.1, 1.00390625, 1.01171875]> : tensor<3xbf16>\n"
        "  return %c : tensor<3xbf16>\n"
        "}\n"
    )
    value = constant(parse_mlir(text), "c")
    assert value.array.dtype == np.float32  # NumPy has no bf16
    bits = value.array.view(np.uint32)
    assert np.all(bits & 0xFFFF == 0)  # exactly representable in bf16
    # 0.1 rounds to 0x3DCD; 1 + 2^-8 is a tie and rounds to even (1.0); 1 + 3*2^-8 rounds up to 1 + 2^-6.
    assert (bits >> 16).tolist() == [0x3DCD, 0x3F80, 0x3F82]


def test_transpose_then_op_without_results() -> None:
    # linalg.transpose's syntax ends in `permutation = [..]`; the next line's `flow.return %t` is an op,
    # not another `key = value` pair of the transpose.
    text = (
        "func.func @f(%a: tensor<8x4xf32>) -> tensor<4x8xf32> {\n"
        "  %r = flow.dispatch.region -> (tensor<4x8xf32>) {\n"
        "    %e = tensor.empty() : tensor<4x8xf32>\n"
        "    %t = linalg.transpose ins(%a : tensor<8x4xf32>) outs(%e : tensor<4x8xf32>) permutation = [1, 0]\n"
        "    flow.return %t : tensor<4x8xf32>\n"
        "  }\n"
        "  return %r : tensor<4x8xf32>\n"
        "}\n"
    )
    module = parse_mlir(text)
    transpose, ret = ops_named(module, "linalg.transpose")[0], ops_named(module, "flow.return")[0]
    assert set(transpose.attributes) == {"permutation", "operandSegmentSizes"}
    assert ret.operands == [transpose.result]
