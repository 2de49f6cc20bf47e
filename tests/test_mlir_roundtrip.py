"""Printer: parse -> print -> parse gives the same IR, printing is stable, and IREE reads what we print."""

from __future__ import annotations

import subprocess
from pathlib import Path

import numpy as np
import pytest

from egg_dispatch.iree.tools import find_tool
from egg_dispatch.mlir.compare import ir_key
from egg_dispatch.mlir.ir import DenseAttr, IntAttr, Module
from egg_dispatch.mlir.ops import make_int_list
from egg_dispatch.mlir.parser import parse_file, parse_mlir
from egg_dispatch.mlir.printer import print_mlir

FIXTURES = Path(__file__).parent / "fixtures"
EXAMPLE = Path(__file__).parent.parent / "egg_dispatch" / "examples" / "seed_reproducer.mlir"
ALL_INPUTS = [*sorted(FIXTURES.glob("*.mlir")), EXAMPLE]
# Every input is either linalg level or IREE's own output form, so IREE must read all of their printed
# forms; the built-in example too (iree-opt rejects its file): its linalg.matmul_transpose_b, retired
# upstream, is read and printed as linalg.matmul with indexing_maps.
IREE_READABLE = ALL_INPUTS
IREE_OPT = find_tool("iree-opt")

ids = {"ids": lambda p: p.name}


def reparse(text: str) -> Module:
    return parse_mlir(text, "printed.mlir")


@pytest.mark.parametrize("path", ALL_INPUTS, **ids)
@pytest.mark.parametrize("use_aliases", [True, False], ids=["aliases", "inline"])
def test_round_trip_gives_equal_ir(path: Path, use_aliases: bool) -> None:
    module = parse_file(path)
    printed = print_mlir(module, use_aliases=use_aliases)
    again = reparse(printed)
    assert ir_key(again) == ir_key(module)
    # The same warnings (positions move: the printed layout differs). A note on how the input was spelled
    # (a retired op, read as what it is now) does not survive: the printed form is the op it is now.
    warned = [w.split(": warning: ")[1] for w in module.warnings if ": warning: " in w]
    assert [w.split(": warning: ")[1] for w in again.warnings] == warned
    assert not again.respelled and not any(": note: " in w for w in again.warnings)


@pytest.mark.parametrize("path", ALL_INPUTS, **ids)
def test_printing_is_stable(path: Path) -> None:
    printed = print_mlir(parse_file(path))
    assert print_mlir(reparse(printed)) == printed


def test_printed_aliases_and_resources() -> None:
    printed = print_mlir(parse_file(FIXTURES / "seed_after_set_encoding.mlir"))
    assert printed.startswith("#map = affine_map<(d0, d1, d2) -> (d0, d2)>\n")
    assert "#encoding = #iree_encoding.encoding<operand_index = 0 : index, op_type = matmul" in printed
    assert "user_indexing_maps = [#map, #map1, #map2]" in printed
    assert 'dense<"0x0000A0BF' in printed  # 128 elements: printed as hex, like IREE
    resource = print_mlir(parse_file(FIXTURES / "seed_resource.mlir"))
    assert "dense_resource<split.weight_16x8.f32> : tensor<16x8xf32>" in resource
    assert '      split.weight_16x8.f32: "0x04000000' in resource and resource.rstrip().endswith("#-}")
    # An elided blob stays elided (the fill is not invented data in the output) and refills the same.
    example = print_mlir(parse_file(EXAMPLE))
    assert "dialect_resources" not in example


def test_ir_key_sees_differences() -> None:
    module = parse_file(FIXTURES / "seed_iree313.mlir")
    key = ir_key(module)
    weight = next(op for op in module.walk() if op.name == "arith.constant").attributes["value"]
    assert isinstance(weight, DenseAttr)
    weight.array = weight.array.copy()
    weight.array[3, 4] += 1
    assert ir_key(module) != key
    other = parse_file(FIXTURES / "seed_iree313.mlir")
    slice_op = next(op for op in other.walk() if op.name == "tensor.extract_slice")
    slice_op.attributes["static_offsets"] = make_int_list((0, 1))
    assert ir_key(other) != key
    # SSA names do not matter.
    renamed = parse_mlir((FIXTURES / "seed_iree313.mlir").read_text().replace("%w_top", "%renamed"))
    assert ir_key(renamed) == key


SPECIAL = """\
module @"quoted name" attributes {my.note = "tab\\there, quote \\" backslash \\\\ newline\\nbyte \\E9 é"} {
  util.global private @g = dense<[1, 2]> : tensor<2xi32>
  func.func @"my func"(%a: tensor<2xf32>) -> (tensor<2xf32>, tensor<3xf16>, tensor<2xbf16>, tensor<2xf64>) {
    %nan = arith.constant dense<[0x7FC00000, 0xFF800000]> : tensor<2xf32>
    %h = arith.constant dense<[0x7E00, 0xFC00, 6.550400e+04]> : tensor<3xf16>
    %b = arith.constant dense<[0x7FC0, 1.000000e+00]> : tensor<2xbf16>
    %d = arith.constant dense<[0x7FF0000000000000, -0.000000e+00]> : tensor<2xf64>
    %i = arith.constant dense<[255, -128]> : tensor<2xi8>
    %s = arith.constant 0xFF800000 : f32
    %t = arith.constant dense<true> : tensor<2xi1>
    %e = arith.constant dense<> : tensor<0xf32>
    %sum = arith.addf %a, %nan : tensor<2xf32>
    return %sum, %h, %b, %d : tensor<2xf32>, tensor<3xf16>, tensor<2xbf16>, tensor<2xf64>
  }
}
"""


def test_special_values_round_trip() -> None:
    module = parse_mlir(SPECIAL, "special.mlir")
    assert module.name == "quoted name"
    assert module.attributes["my.note"].value == 'tab\there, quote " backslash \\ newline\nbyte \udce9 é'  # type: ignore[attr-defined]
    consts = {op.results[0].name: op.attributes["value"] for op in module.walk() if op.name == "arith.constant"}
    assert np.isnan(consts["nan"].array[0]) and consts["nan"].array[1] == -np.inf  # type: ignore[attr-defined]
    assert consts["h"].array.dtype == np.float16 and np.isinf(consts["h"].array[1])  # type: ignore[attr-defined]
    assert consts["i"].array.tolist() == [-1, -128]  # type: ignore[attr-defined]  # 255 is -1's bits in i8
    printed = print_mlir(module)
    assert "0x7E00" in printed and "0xFC00" in printed and "0x7FF0000000000000" in printed and "0x7FC0" in printed
    again = reparse(printed)
    assert ir_key(again) == ir_key(module)
    assert print_mlir(again) == printed


def test_empty_module_prints_as_a_module() -> None:
    module = parse_mlir("module {\n}\n")
    assert module.ops == [] and print_mlir(module) == "module {\n}\n"
    assert print_mlir(Module()) == "module {\n}\n"
    assert ir_key(reparse(print_mlir(Module()))) == ir_key(Module())


def test_opaque_text_inlines_aliases() -> None:
    # The printer picks its own alias names; an opaque op's text must not refer to the file's aliases.
    text = (
        "#keep = affine_map<(d0) -> (d0)>\n"
        "#attr = #my.thing<[#keep]>\n"
        "func.func @f(%a: tensor<4xf32>) -> tensor<4xf32> {\n"
        "  %b = my.op %a {m = #keep, t = #attr} : tensor<4xf32> -> tensor<4xf32>\n"
        "  return %b : tensor<4xf32>\n"
        "}\n"
    )
    module = parse_mlir(text)
    op = module.function().regions[0].entry.ops[0]
    assert op.opaque_text == (
        "%a {m = affine_map<(d0) -> (d0)>, t = #my.thing<[affine_map<(d0) -> (d0)>]>} : tensor<4xf32> -> tensor<4xf32>"
    )
    assert ir_key(reparse(print_mlir(module))) == ir_key(module)


def test_int_attr_types_survive() -> None:
    module = parse_mlir("func.func @f() -> i8 {\n  %c = arith.constant 255 : i8\n  return %c : i8\n}\n")
    value = module.function().regions[0].entry.ops[0].attributes["value"]
    assert value == IntAttr(255, value.type)  # type: ignore[attr-defined]
    assert "arith.constant 255 : i8" in print_mlir(module)


# -------------------------------------------------------------------------------------------- iree-opt


def iree_opt(path: Path) -> subprocess.CompletedProcess[str]:
    assert IREE_OPT is not None
    return subprocess.run([str(IREE_OPT), str(path), "-o", "/dev/null"], capture_output=True, text=True, timeout=120)


@pytest.mark.slow
@pytest.mark.skipif(IREE_OPT is None, reason="iree-opt not installed (pip install egg-dispatch[iree])")
@pytest.mark.parametrize("path", IREE_READABLE, **ids)
def test_iree_opt_parses_printed_output(path: Path, tmp_path: Path) -> None:
    out = tmp_path / path.name
    out.write_text(print_mlir(parse_file(path)))
    proc = iree_opt(out)
    assert proc.returncode == 0, proc.stderr


@pytest.mark.skipif(IREE_OPT is None, reason="iree-opt not installed (pip install egg-dispatch[iree])")
def test_iree_opt_parses_printed_special_values(tmp_path: Path) -> None:
    out = tmp_path / "special.mlir"
    out.write_text(print_mlir(parse_mlir(SPECIAL)))
    proc = iree_opt(out)
    assert proc.returncode == 0, proc.stderr


def test_string_literals_escape_exactly_what_mlir_escapes() -> None:
    """``mlir.literals.string_literal`` against MLIR's rule written out here per character: a quote and a
    backslash are escaped by a backslash, newline and tab by ``\\n`` / ``\\t``, other control bytes (and
    DEL) as ``\\XX``, a surrogate-escaped non-UTF-8 byte as its ``\\XX``; every other character as is.
    Every character of the BMP alone, then inside plain text (the printer's quick path for plain text
    must agree with the rule)."""
    from egg_dispatch.mlir.literals import string_literal

    def mlir_rule(ch: str) -> str:
        code = ord(ch)
        if ch in '"\\':
            return "\\" + ch
        if ch in "\n\t":
            return {"\n": "\\n", "\t": "\\t"}[ch]
        if code < 0x20 or code == 0x7F:
            return f"\\{code:02X}"
        if 0xDC80 <= code <= 0xDCFF:
            return f"\\{code - 0xDC00:02X}"
        return ch

    for code in range(0x10000):
        ch = chr(code)
        assert string_literal(ch) == '"' + mlir_rule(ch) + '"', hex(code)
        assert string_literal(f"model.layers.{ch}.w") == f'"model.layers.{mlir_rule(ch)}.w"', hex(code)
    key = "model.model.layers.3.self_attn.q_proj.weight"
    assert string_literal(key) == f'"{key}"'
