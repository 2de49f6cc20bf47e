"""Bad input: ``file:line:col: error: <what was expected>`` and exit code 2, never a traceback.

Syntax errors and verifier-level errors (types, bounds, arity) are reported the same way, each at an
exact position.
"""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

from egg_dispatch.cli import main
from egg_dispatch.mlir.lexer import MAX_NESTING
from egg_dispatch.mlir.parser import MLIRSyntaxError, parse_bytes, parse_file, parse_mlir

FIXTURES = Path(__file__).parent / "fixtures"
ERROR_LINE = re.compile(r"^[^:]+:\d+:\d+: error: .+$")

HEAD = "func.func @f(%a: tensor<8x8xf32>) -> tensor<8x8xf32> {\n"
TAIL = "  return %a : tensor<8x8xf32>\n}\n"
RESOURCE = (
    "func.func @f() -> tensor<4xf32> {\n"
    "  %c = arith.constant dense_resource<w> : tensor<4xf32>\n"
    "  return %c : tensor<4xf32>\n"
    "}\n"
    "{-#\n  dialect_resources: {\n    builtin: {\n"
    '      w: "0x040000000000803F00000040"\n'  # the header and two f32 values: 8 bytes short
    "    }\n  }\n#-}\n"
)
ENCODING = (
    "func.func @f(%a: tensor<8xf32, #iree_encoding.encoding<operand_index = 0 : index, op_type = matmul, "
    "element_types = [f32, f32, f32], tile_sizes = [8]>>) {\n  return\n}\n"
)

# (id, text, line, col, fragment of the message)
CASES = [
    ("unknown-ssa-value", HEAD + "  return %b : tensor<8x8xf32>\n}\n", 2, 10, "use of undefined SSA value %b"),
    (
        "redefined-ssa-value",
        HEAD + "  %x = tensor.empty() : tensor<8x8xf32>\n  %x = tensor.empty() : tensor<8x8xf32>\n" + TAIL,
        3,
        3,
        "redefinition of SSA value %x",
    ),
    (
        "operand-type-mismatch",
        HEAD
        + "  %z = arith.constant 0.0 : f32\n"
        + "  %y = linalg.fill ins(%z : f32) outs(%a : tensor<4x4xf32>) -> tensor<4x4xf32>\n"
        + TAIL,
        3,
        39,
        "operand %a has type tensor<8x8xf32> but the op expects tensor<4x4xf32>",
    ),
    (
        "matmul-ins-type-mismatch",
        HEAD
        + "  %m = linalg.matmul ins(%a, %a : tensor<4x4xf32>, tensor<8x8xf32>) outs(%a : tensor<8x8xf32>)"
        + " -> tensor<8x8xf32>\n"
        + TAIL,
        2,
        26,
        "operand %a has type tensor<8x8xf32> but the op expects tensor<4x4xf32>",
    ),
    (
        "slice-out-of-bounds",
        HEAD + "  %s = tensor.extract_slice %a[4, 0] [8, 8] [1, 1] : tensor<8x8xf32> to tensor<8x8xf32>\n" + TAIL,
        2,
        3,
        "slice out of bounds in dim 0: offset 4, size 8, stride 1 on a dimension of 8",
    ),
    (
        "slice-rank",
        HEAD + "  %s = tensor.extract_slice %a[0] [8] [1] : tensor<8x8xf32> to tensor<8xf32>\n" + TAIL,
        2,
        3,
        "slice has 1 offsets, 1 sizes and 1 strides for a rank-2 tensor",
    ),
    ("resource-blob-too-short", RESOURCE, 2, 38, "resource blob 'w' (after its 4-byte header) holds 2 elements"),
    (
        "hex-literal-too-short",
        HEAD + '  %c = arith.constant dense<"0x0000803F0000803F"> : tensor<4xf32>\n' + TAIL,
        2,
        29,
        "constant data holds 2 elements (8 bytes) but tensor<4xf32> needs 4",
    ),
    (
        "return-arity",
        HEAD + "  return %a, %a : tensor<8x8xf32>, tensor<8x8xf32>\n}\n",
        2,
        3,
        "return has 2 operand(s) but the function returns 1",
    ),
    (
        "return-type",
        "func.func @f(%a: tensor<8x8xf32>) -> tensor<8x8xf16> {\n" + TAIL,
        2,
        3,
        "return operand #0 has type tensor<8x8xf32> but the function returns tensor<8x8xf16>",
    ),
    (
        "dynamic-dims-missing",
        "util.func @f(%v: !hal.buffer_view) -> tensor<?x8xf32> {\n"
        "  %a = hal.tensor.import %v : !hal.buffer_view -> tensor<?x8xf32>\n  util.return %a : tensor<?x8xf32>\n}\n",
        3,
        3,
        "has 1 dynamic dimension(s): expected their sizes as '{%d, ...}' right after it",
    ),
    (
        "dynamic-dims-count",
        "func.func @f(%a: tensor<?x?xf32>, %d: index) -> tensor<?x?xf32> {\n"
        "  %b = flow.tensor.tie_shape %a : tensor<?x?xf32>{%d}\n  return %b : tensor<?x?xf32>\n}\n",
        2,
        50,
        "tensor<?x?xf32> has 2 dynamic dimension(s) but 1 size(s) are given",
    ),
    (
        "dynamic-dims-type",
        "func.func @f(%a: tensor<?xf32>, %d: i32) -> tensor<?xf32> {\n"
        "  %b = flow.tensor.tie_shape %a : tensor<?xf32>{%d}\n  return %b : tensor<?xf32>\n}\n",
        2,
        49,
        "operand %d has type i32 but the op expects index",
    ),
    (
        "dynamic-empty",
        HEAD + "  %e = tensor.empty(%a) : tensor<8x8xf32>\n" + TAIL,
        2,
        3,
        "tensor.empty of tensor<8x8xf32> needs 0 dynamic size(s), found 1",
    ),
    (
        "dynamic-empty-count",
        "func.func @f(%d: index) -> tensor<?x?xf32> {\n  %e = tensor.empty(%d) : tensor<?x?xf32>\n"
        "  return %e : tensor<?x?xf32>\n}\n",
        2,
        3,
        "tensor.empty of tensor<?x?xf32> needs 2 dynamic size(s), found 1",
    ),
    (
        "assume-int-field",
        "func.func @f(%d: index) -> index {\n  %e = util.assume.int %d<umin = 1, umix = 4> : index\n"
        "  return %e : index\n}\n",
        2,
        26,
        "unknown util.assume.int field 'umix' (expected umin, umax or udiv)",
    ),
    ("empty-file", "", 1, 1, "empty input: expected a module or a function"),
    ("only-comments", "// nothing here\n\n", 1, 1, "empty input: expected a module or a function"),
    (
        "unterminated-region",
        HEAD + "  %x = tensor.empty() : tensor<8x8xf32>\n  return %a : tensor<8x8xf32>\n",
        4,
        1,
        "expected '}' to close the region opened at line 1, column 54 (reached the end of the file)",
    ),
    (
        "dense-element-count",
        HEAD + "  %c = arith.constant dense<[1.0, 2.0, 3.0]> : tensor<4xf32>\n" + TAIL,
        2,
        29,
        "dense literal has 3 element(s) in dimension 0, but tensor<4xf32> has 4",
    ),
    (
        "dense-ragged-rows",
        HEAD + "  %c = arith.constant dense<[[1.0, 2.0], [3.0]]> : tensor<2x2xf32>\n" + TAIL,
        2,
        42,
        "dense literal has 1 element(s) in dimension 1, but tensor<2x2xf32> has 2",
    ),
    (
        "dense-float-in-int",
        HEAD + "  %c = arith.constant dense<[1, 2.5]> : tensor<2xi32>\n" + TAIL,
        2,
        33,
        "expected an integer element of type i32, found '2.5'",
    ),
    (
        "undefined-alias",
        HEAD + "  %x = tensor.empty() : tensor<8x8xf32, #enc>\n" + TAIL,
        2,
        41,
        "undefined attribute alias #enc",
    ),
    ("unknown-encoding-field", ENCODING, 1, 134, "unknown #iree_encoding.encoding field 'tile_sizes'"),
    (
        "integer-out-of-range",
        HEAD + "  %c = arith.constant 300 : i8\n" + TAIL,
        2,
        23,
        "integer 300 does not fit in i8",
    ),
    (
        "result-count",
        HEAD + "  %x, %y = tensor.empty() : tensor<8x8xf32>\n" + TAIL,
        2,
        3,
        "'tensor.empty' produces 1 result(s) but 2 name(s) are bound",
    ),
    (
        "unterminated-string",
        'func.func @f() attributes {s = "abc} {\n  return\n}\n',
        1,
        32,
        "unterminated string literal",
    ),
    ("bad-escape", 'func.func @f() attributes {s = "a\\qb"} {\n  return\n}\n', 1, 34, "bad escape in a string"),
    (
        "unexpected-character",
        HEAD + "  %x = tensor.empty() ; tensor<8x8xf32>\n" + TAIL,
        2,
        23,
        "unexpected character ';'",
    ),
    (
        "not-a-type",
        HEAD + "  %x = tensor.empty() : tensor<8x8xfloat>\n" + TAIL,
        2,
        36,
        "expected a type, found 'float'",
    ),
    (
        "missing-colon",
        HEAD + "  %s = tensor.extract_slice %a[0, 0] [8, 8] [1, 1] tensor<8x8xf32> to tensor<8x8xf32>\n" + TAIL,
        2,
        52,
        "expected ':', found 'tensor'",
    ),
    ("deep-nesting", "func.func @f() attributes {a = " + "[" * 10_000 + "\n", 1, 160, "nested more than 128 levels"),
    (
        "deep-regions",
        "func.func @f() {\n" + '"a.b"() ({\n' * 1000,
        MAX_NESTING + 1,
        10,
        "regions nested more than 128 levels deep",
    ),
    (
        "alias-redefinition",
        "#m = affine_map<(d0) -> (d0)>\n#m = affine_map<(d0) -> (d0)>\n" + HEAD + TAIL,
        2,
        1,
        "redefinition of alias #m",
    ),
    (
        "generic-op-operand-type",
        HEAD + '  %g = "my.op"(%a) : (tensor<4x4xf32>) -> tensor<8x8xf32>\n' + TAIL,
        2,
        16,
        "operand %a has type tensor<8x8xf32> but the op expects tensor<4x4xf32>",
    ),
    (
        "extract-not-a-tensor",
        HEAD + "  %o = my.op\n  %e = tensor.extract %o[] : f32\n" + TAIL,
        3,
        3,
        "needs a tensor type",
    ),
]


@pytest.mark.parametrize(("text", "line", "col", "fragment"), [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_error_position_and_message(text: str, line: int, col: int, fragment: str) -> None:
    with pytest.raises(MLIRSyntaxError) as info:
        parse_mlir(text, "bad.mlir")
    err = info.value
    assert ERROR_LINE.match(str(err)), str(err)
    assert (err.loc.file, err.loc.line, err.loc.col) == ("bad.mlir", line, col), str(err)
    assert str(err).startswith(f"bad.mlir:{line}:{col}: error: ")
    assert fragment in err.message, str(err)


def test_at_least_twelve_distinct_cases() -> None:
    assert len({c[0] for c in CASES}) == len(CASES) >= 12


def test_truncated_fixture() -> None:
    text = (FIXTURES / "seed_iree313.mlir").read_text()
    cut = text[: text.index("ins(%w_top") + len("ins(%w_top")]  # in the middle of the first matmul
    with pytest.raises(MLIRSyntaxError) as info:
        parse_mlir(cut, "cut.mlir")
    assert str(info.value) == "cut.mlir:33:167: error: expected ':' before the operand types, found end of file"
    # Cut inside the constant's literal: the unterminated '<' of dense< is reported where it opens.
    with pytest.raises(MLIRSyntaxError) as info:
        parse_mlir(text[: len(text) // 2], "cut.mlir")
    assert str(info.value) == "cut.mlir:11:33: error: unterminated '<' (reached the end of the file)"
    # Cut before the final '}': the function's region is unterminated.
    with pytest.raises(MLIRSyntaxError) as info:
        parse_mlir(text.rstrip()[:-1], "cut.mlir")
    assert str(info.value).startswith("cut.mlir:40:1: error: expected '}' to close the region opened at line 10,")


@pytest.mark.parametrize(
    ("raw", "line", "col", "fragment"),
    [
        (b"func.func @f() {\n  return\n}\x00\x01\x02", 3, 2, "binary data (NUL byte)"),
        (b"\x7fELF\x02\x01\x01\x00\x00", 1, 8, "binary data (NUL byte)"),
        (b"func.func @f() {\n  // caf\xe9\n  return\n}\n", 2, 9, "not UTF-8"),
        (b"\xff\xfe\x00f\x00u", 1, 1, "not UTF-8"),
    ],
    ids=["nul-after-text", "elf-header", "latin1-comment", "utf16-bom"],
)
def test_binary_garbage(tmp_path: Path, raw: bytes, line: int, col: int, fragment: str) -> None:
    path = tmp_path / "bin.mlir"
    path.write_bytes(raw)
    with pytest.raises(MLIRSyntaxError) as info:
        parse_file(path)
    assert str(info.value).startswith(f"{path}:{line}:{col}: error: ")
    assert fragment in info.value.message
    with pytest.raises(MLIRSyntaxError):
        parse_bytes(raw, "bin.mlir")


def test_deep_nesting_of_every_kind_is_an_error() -> None:
    deep = {
        "types": "func.func @f(%a: " + "(" * 10_000,
        "affine": "#m = affine_map<(d0) -> (" + "(" * 10_000 + "d0)>\n",
        "affine-chain": "#m = affine_map<(d0) -> (d0" + " + d0" * 10_000 + ")>\n",
        "dense": "func.func @f() {\n  %c = arith.constant dense<" + "[" * 10_000 + "> : tensor<2xf32>\n",
        "regions": "func.func @f() {\n" + "flow.dispatch.region -> () {\n" * 10_000,
    }
    for kind, text in deep.items():
        with pytest.raises(MLIRSyntaxError) as info:
            parse_mlir(text, "deep.mlir")
        assert ERROR_LINE.match(str(info.value).splitlines()[0]), (kind, str(info.value))


# ----------------------------------------------------------------------------------------------- CLI

BAD = HEAD + "  %s = tensor.extract_slice %a[4, 0] [8, 8] [1, 1] : tensor<8x8xf32> to tensor<8x8xf32>\n" + TAIL
BAD_ERROR = "bad.mlir:2:3: error: slice out of bounds in dim 0: offset 4, size 8, stride 1 on a dimension of 8"


def test_cli_reports_one_line_and_exit_2(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys) -> None:
    (tmp_path / "bad.mlir").write_text(BAD)
    monkeypatch.chdir(tmp_path)
    assert main(["explore", "bad.mlir"]) == 2
    out, err = capsys.readouterr()
    assert out == ""
    assert err == BAD_ERROR + "\n"


@pytest.mark.parametrize(
    ("name", "text", "line"),
    [
        ("undefined.mlir", CASES[0][1], "undefined.mlir:2:10: error: use of undefined SSA value %b"),
        ("types.mlir", CASES[2][1], "types.mlir:3:39: error: operand %a has type tensor<8x8xf32>"),
        ("empty.mlir", "", "empty.mlir:1:1: error: empty input: expected a module or a function"),
    ],
)
def test_cli_syntax_and_verifier_errors(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys, name: str, text: str, line: str
) -> None:
    (tmp_path / name).write_text(text)
    monkeypatch.chdir(tmp_path)
    assert main(["explore", name]) == 2
    out, err = capsys.readouterr()
    assert out == "" and len(err.splitlines()) == 1 and err.startswith(line)


def test_cli_binary_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys) -> None:
    (tmp_path / "bin.mlir").write_bytes(b"\x89PNG\r\n\x1a\n\x00\x00")
    monkeypatch.chdir(tmp_path)
    assert main(["explore", "bin.mlir"]) == 2
    _, err = capsys.readouterr()
    assert err == "bin.mlir:1:1: error: input is not UTF-8 text (binary file?)\n"


def test_cli_stdin_error(monkeypatch: pytest.MonkeyPatch, capsys) -> None:
    import io

    monkeypatch.setattr(sys, "stdin", io.StringIO(BAD))
    assert main(["explore", "-"]) == 2
    _, err = capsys.readouterr()
    assert err == BAD_ERROR.replace("bad.mlir", "<stdin>") + "\n"


def test_cli_missing_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys) -> None:
    monkeypatch.chdir(tmp_path)
    assert main(["explore", "missing.mlir"]) == 2
    _, err = capsys.readouterr()
    assert err == "missing.mlir: error: no such file\n"


@pytest.mark.slow
def test_cli_subprocess(tmp_path: Path) -> None:
    (tmp_path / "bad.mlir").write_text(BAD)
    proc = subprocess.run(
        [sys.executable, "-m", "egg_dispatch", "explore", "bad.mlir"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 2
    assert proc.stdout == ""
    assert proc.stderr == BAD_ERROR + "\n"
    assert "Traceback" not in proc.stderr
