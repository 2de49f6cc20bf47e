"""Fuzzing the reader with mutants of the fixtures: every mutant loads or raises ``MLIRSyntaxError``.

Mutations: token deletion / insertion / swap / duplication / replacement by MLIR vocabulary, raw
character and byte edits (invalid UTF-8, NUL bytes), punctuation sprinkled anywhere, truncations and
splices of two fixtures. Any other exception (IndexError, ValueError, KeyError, AssertionError,
RecursionError, ...) is a reader bug. A mutant that loads must also print, and the printed text must
read back to the same IR.

Deterministic: ``derandomize=True`` (no example database), 3,800 examples in total (about 20 s).
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from hypothesis import HealthCheck, currently_in_test_context, event, example, given, settings
from hypothesis import strategies as st

from egg_dispatch.mlir.compare import ir_key
from egg_dispatch.mlir.parser import MLIRSyntaxError, parse_bytes, parse_mlir
from egg_dispatch.mlir.printer import print_mlir
from tests.hypothesis_profiles import examples

FIXTURES = Path(__file__).parent / "fixtures"
EXAMPLE = Path(__file__).parent.parent / "egg_dispatch" / "examples" / "seed_reproducer.mlir"
MAX_BYTES = 64 * 1024
"""Fixtures larger than this are not mutated: the reader's paths are the same on a model whose weights
are long hex blobs (``random_model_14.mlir``, 450 KB), but each of its mutants costs a third of a second
to read, print and read again, and one example in forty drew it: half of this file's time."""
TEXTS = [p.read_text() for p in [*sorted(FIXTURES.glob("*.mlir")), EXAMPLE] if p.stat().st_size <= MAX_BYTES]
ERROR = re.compile(r"^[^:]+:\d+:\d+: error: ")
TOKEN = re.compile(r'"(?:[^"\\\n]|\\.)*"|[%@#!^]?[A-Za-z0-9_.$\-]+|->|\S')

VOCAB = [
    *"[](){}<>:,=?*+-|x",
    "->", "::", "{-#", "#-}", "%0", "%arg0", "%cst", "%x#1", "%y:2", "@f", "@\"q\"", "#map", "#map9",
    "#encoding", "!hal.device", "!t", "^bb0:", "^bb1(%z: f32):", "f32", "f16", "bf16", "i1", "i8", "i64",
    "index", "tensor", "tensor<8x8xf32>", "tensor<?x8xf32>", "tensor<0xf32>", "tensor<99999999999x9999999xf32>",
    "vector", "memref<4xf32>", "complex<f32>", "dense", "dense<1.0>", "dense<[1, 2]>", "dense<\"0x0000803F\">",
    "dense_resource<k>", "dense_resource<__elided__>", "affine_map<(d0) -> (d0)>", "affine_map", "array<i64: 1>",
    "#iree_encoding.encoding<", "#iree_encoding.encoding<operand_index = 0>", "iteration_sizes = [?]",
    "0", "1", "-1", "007", "0x7F", "0xFFFFFFFF", "99999999999999999999", "1.5", "1e400", "-0.0", "nan", "inf",
    "true", "false", "unit", '"s"', '"\\x"', '"\\22"', "ins(", "outs(", "attrs", "attributes", "into", "to",
    "output_shape", "permutation", "padding_value", "count", "immutable", "mutable", "private",
    "linalg.matmul", "linalg.generic", "linalg.fill", "linalg.yield", "linalg.index", "linalg.pack",
    "arith.constant", "arith.select", "arith.cmpf", "arith.addf", "math.exp", "tensor.extract", "tensor.dim",
    "tensor.empty", "tensor.expand_shape", "tensor.extract_slice", "func.func", "return", "util.return",
    "util.global", "util.global.load", "flow.dispatch.region", "flow.dispatch.workgroups", "flow.return",
    "iree_linalg_ext.attention", "iree_encoding.set_encoding", "hal.tensor.import", "module",
    '"tensor.empty"', '"linalg.pack"', '"func.return"', '"my.op"(%arg0) : (f32) -> f32', '"x.y"() ({', "<{", "}>",
    "\n", "\t", "\x00", "é", "\U0001f600", "\\", "'", "//", ";", "$", "&", "[" * 300, "(" * 300, "{" * 300,
]  # fmt: skip
SETTINGS = {
    "database": None,
    "suppress_health_check": [HealthCheck.too_slow, HealthCheck.data_too_large, HealthCheck.large_base_example],
}


def check(mutant: str | bytes) -> None:
    """The property: a clean error with a position inside the text, or a module that round-trips."""
    try:
        if isinstance(mutant, bytes):
            module = parse_bytes(mutant, "mutant.mlir")
        else:
            module = parse_mlir(mutant, "mutant.mlir")
    except MLIRSyntaxError as e:
        _event("error")
        assert ERROR.match(str(e)), str(e)
        assert e.loc.file == "mutant.mlir" and e.loc.line >= 1 and e.loc.col >= 1
        n_lines = (mutant.count(b"\n") if isinstance(mutant, bytes) else mutant.count("\n")) + 1
        assert e.loc.line <= n_lines, str(e)
        return
    _event("loaded")
    printed = print_mlir(module)
    again = parse_mlir(printed, "printed.mlir")
    assert ir_key(again) == ir_key(module)


def _event(name: str) -> None:
    """Statistics for ``pytest --hypothesis-show-statistics`` (only inside a Hypothesis test)."""
    if currently_in_test_context():
        event(name)


def spans(text: str) -> list[tuple[int, int]]:
    return [m.span() for m in TOKEN.finditer(text)]


@st.composite
def token_mutants(draw: st.DrawFn) -> str:
    text = draw(st.sampled_from(TEXTS))
    for _ in range(draw(st.integers(1, 4))):
        toks = spans(text)
        if not toks:
            break
        s, e = toks[draw(st.integers(0, len(toks) - 1))]
        kind = draw(st.sampled_from(["delete", "insert", "replace", "swap", "duplicate"]))
        if kind == "delete":
            text = text[:s] + text[e:]
        elif kind == "insert":
            text = text[:s] + draw(st.sampled_from(VOCAB)) + " " + text[s:]
        elif kind == "replace":
            text = text[:s] + draw(st.sampled_from(VOCAB)) + text[e:]
        elif kind == "duplicate":
            text = text[:e] + " " + text[s:e] + text[e:]
        else:
            s2, e2 = toks[draw(st.integers(0, len(toks) - 1))]
            (s, e), (s2, e2) = sorted([(s, e), (s2, e2)])
            if e <= s2:
                text = text[:s] + text[s2:e2] + text[e:s2] + text[s:e] + text[e2:]
    return text


@st.composite
def char_mutants(draw: st.DrawFn) -> str:
    """Punctuation, vocabulary and arbitrary characters anywhere, not only between tokens."""
    text = draw(st.sampled_from(TEXTS))
    for _ in range(draw(st.integers(1, 6))):
        i = draw(st.integers(0, len(text)))
        kind = draw(st.sampled_from(["punct", "vocab", "char", "delete"]))
        if kind == "punct":
            text = text[:i] + draw(st.sampled_from('[](){}<>:,=?*+-|"%@#!^x0')) + text[i:]
        elif kind == "vocab":
            text = text[:i] + draw(st.sampled_from(VOCAB)) + text[i:]
        elif kind == "char":
            text = text[:i] + draw(st.characters(codec="utf-8")) + text[i:]
        else:
            text = text[:i] + text[i + draw(st.integers(1, 8)) :]
    return text


@st.composite
def byte_mutants(draw: st.DrawFn) -> bytes:
    data = bytearray(draw(st.sampled_from(TEXTS)).encode())
    for _ in range(draw(st.integers(1, 4))):
        i = draw(st.integers(0, len(data) - 1))
        kind = draw(st.sampled_from(["flip", "insert", "delete"]))
        if kind == "flip":
            data[i] ^= 1 << draw(st.integers(0, 7))
        elif kind == "insert":
            data[i:i] = draw(st.binary(min_size=1, max_size=4))
        else:
            del data[i : i + draw(st.integers(1, 4))]
    return bytes(data)


@st.composite
def truncations(draw: st.DrawFn) -> str:
    text = draw(st.sampled_from(TEXTS))
    cut = text[: draw(st.integers(0, len(text)))]
    if draw(st.booleans()):
        cut += draw(st.sampled_from(VOCAB))
    return cut


@st.composite
def splices(draw: st.DrawFn) -> str:
    a, b = draw(st.sampled_from(TEXTS)), draw(st.sampled_from(TEXTS))
    return a[: draw(st.integers(0, len(a)))] + b[draw(st.integers(0, len(b))) :]


@pytest.mark.slow
@settings(max_examples=examples(600), **SETTINGS)
@given(token_mutants())
def test_token_mutants(mutant: str) -> None:
    check(mutant)


@pytest.mark.slow
@settings(max_examples=examples(400), **SETTINGS)
@given(char_mutants())
def test_char_mutants(mutant: str) -> None:
    check(mutant)


@pytest.mark.slow
@settings(max_examples=examples(250), **SETTINGS)
@given(byte_mutants())
@example(b"\x00" * 16)
@example(b"func.func @f() {\n  return\n}\n\xc3\x28")
def test_byte_mutants(mutant: bytes) -> None:
    check(mutant)


@settings(max_examples=examples(200), **SETTINGS)
@given(truncations())
def test_truncations(mutant: str) -> None:
    check(mutant)


@pytest.mark.slow
@settings(max_examples=examples(150), **SETTINGS)
@given(splices())
def test_splices(mutant: str) -> None:
    check(mutant)


F = "func.func @f(%a: tensor<8x8xf32>) -> tensor<8x8xf32> {{\n{}\n  return %a : tensor<8x8xf32>\n}}\n"

# Inputs that crashed the reader before it was fixed (each is now an error or a clean load).
REGRESSIONS = [
    F.format("  %i = linalg.index 0x1 : index"),  # ValueError: int('0x1')
    F.format("  %s = tensor.extract_slice %a[007, 0] [1, 8] [1, 1] : tensor<8x8xf32> to tensor<1x8xf32>"),
    F.format("  %c = arith.constant 02 : i32"),  # ValueError: int('02', 0)
    F.format("  %c = arith.constant dense<[1e400, 1]> : tensor<2xi32>"),  # OverflowError: inf to int
    F.format("  %c = arith.constant dense<[nan, 1]> : tensor<2xi32>"),  # ValueError: NaN to int
    F.format("  %c = arith.constant dense<[-315, 1]> : tensor<2xi8>"),  # OverflowError: out of int8
    F.format("  %c = arith.constant dense<[99999999999999999999, 1]> : tensor<2xi64>"),
    F.format("  %c = arith.constant dense<1> : tensor<2xi4>"),  # no NumPy dtype for i4
    F.format("  %c = arith.constant dense<1.0> : tensor<100000x100000x100000xf32>"),  # MemoryError
    F.format("  %c = arith.constant dense_resource<k> : tensor<100000x100000x100000xf32>"),
    'func.func @f() attributes {s = "\\x"} {\n  return\n}\n',  # UnicodeDecodeError in unescape
    F.format("  %x = arith.select : f32"),  # IndexError: select with no operands
    F.format("  %o = foo.bar\n  %e = tensor.extract %o[] : f32"),  # AssertionError: not a tensor
    "func.func @f(%a: vector) {\n  return\n}\n",  # ValueError: '<' not found
    "func.func @f(%a: tensor<99999999999999999999999x2xf32>) {\n  return\n}\n",
    F.format("  %c:0 = foo.bar"),
    F.format("  %c = arith.constant 1.5 : i32"),
    F.format('  %c = arith.constant "x"'),
    "func.func @f() attributes {a = " + "[" * 10_000 + "\n",  # RecursionError
    "func.func @f(%a: " + "(" * 10_000,
    "#m = affine_map<(d0) -> (" + "(" * 10_000 + "d0)>\n",
    "#m = affine_map<(d0) -> (d0" + " + d0" * 10_000 + ")>\n",
    "func.func @f() {\n" + '"a.b"() ({\n' * 10_000,
    "func.func @f() {\n" + "flow.dispatch.region -> () {\n" * 10_000,
    "func.func @f() {\n" + "  %0 = tensor.empty() : tensor<" + "tensor<" * 10_000,
    # Printed differently than read, before the printer fixes:
    "module {\n}\n",
    F.format("  %foo.bar = foo.bar : f32"),
    F.format("  %c = arith.constant dense<[1e10, 1.0]> : tensor<2xf16>"),
    F.format('  %c = arith.constant dense_resource<"a b"> : tensor<2xf32>'),
    F.format("  %s = iree_encoding.setencoding %a : tensor<8x8xf32> -> tensor<8x8xf32, #encoding>"),
    "#t = #my.target<{k = #map}>\n" + F.format(""),
    F.format('  %x = "linalg.pack"(%a) : (tensor<8x8xf32>) -> tensor<8x8xf32>'),  # custom printer on generic op
    F.format('  %x = "linalg.foo"(%a) {operandSegmentSizes = 3} : (tensor<8x8xf32>) -> tensor<8x8xf32>'),
    '"func.func"() : () -> ()\n',
    "#m = affine_map<(d0) -> (d0)>\n#m = affine_map<(d0) -> (d1)>\n" + F.format(""),
    F.format(
        "  %e = tensor.empty() : tensor<8x8xf32>\n"
        "  %t = linalg.transpose ins(%a : tensor<8x8xf32>) outs(%e : tensor<8x8xf32>) permutation = [1, 0]\n"
        "  util.global.store %t, @g : tensor<8x8xf32>"
    ),
]


@pytest.mark.parametrize("text", REGRESSIONS, ids=range(len(REGRESSIONS)))
def test_regressions(text: str) -> None:
    check(text)
