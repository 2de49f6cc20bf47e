"""``explore --emit iree`` on a dynamic plan that needs physical encodings never ends in an internal error.

tests/fixtures/dynamic/qkv_dynamic_k.mlir on ``aarch64-neon``: the plan slices encoded tensors whose tiled
dimension is dynamic, so ``--emit iree`` must spell its encodings as pack / mmt4d / unpack
(``emit.iree.needs_materialization``), with run-time tile counts the emitter does not write. That once
crashed in ``packed_shape`` (a TypeError, "internal error"); now the emitter refuses it with a reason
(``EmitIreeError``), and ``explore`` says so in one error line (exit 2) when it has no IREE plan to write
instead, or writes IREE's own plan with a note when it has one.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from egg_dispatch.cli import main
from egg_dispatch.emit.iree.module import EmitIreeError, emit_iree
from egg_dispatch.pipeline import explore

PROGRAM = Path(__file__).parent / "fixtures" / "dynamic" / "qkv_dynamic_k.mlir"
ARGS = ["--target", "aarch64-neon", "--min-gain", "0", "--no-compile-check", "--from", "input"]


def test_the_emitter_refuses_a_dynamic_tiled_dim_with_a_reason() -> None:
    result = explore(PROGRAM, "aarch64-neon", start="input", compile_check=False)
    with pytest.raises(EmitIreeError, match=r"a dynamic dimension of tensor<\?x\?xf32> is tiled by the aarch64-neon"):
        emit_iree(result.best.mlir, result.target, materialize=True)


def test_emit_iree_of_such_a_plan_is_one_error_line_not_an_internal_error(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["explore", str(PROGRAM), *ARGS, "--baseline", "modelled", "--emit", "iree"]) == 2
    err = capsys.readouterr().err
    lines = [x for x in err.splitlines() if "error" in x]
    assert len(lines) == 1 and "internal error" not in err, err
    assert "the chosen plan cannot be written in IREE's form for aarch64-neon: a dynamic dimension" in lines[0]
