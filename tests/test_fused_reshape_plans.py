"""Every plan the rules hold for a reshape between two contractions computes the program's numbers
(``rules/fuse_encode.egg``'s encode fused into its producer's dispatch through the reshape; the lit
case ``tests/rules/fuse/fuse_encode_through_reshape.mlir`` shows the plan exists). The reference is
the input program evaluated as written, plain; each plan is evaluated with the target's packed layouts.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from egg_dispatch.evaluate import evaluate, select_function
from egg_dispatch.evaluate.check import function_inputs
from egg_dispatch.mlir.parser import parse_mlir
from tests.test_explore_property import run_cli

CASE = Path(__file__).parent / "rules" / "fuse" / "fuse_encode_through_reshape.mlir"


@pytest.mark.parametrize("target", ["x86_64-avx2", "x86_64-avx512"])
def test_every_plan_through_the_reshape_computes_the_program(target: str) -> None:
    rc, out, err = run_cli(
        ["opt", str(CASE), "--split-input-file", "--rules", "fuse,hoist", "--target", target, "--max-plans", "64"]
    )
    assert rc == 0, err
    first = out.split("\n// -----\n")[0]  # the first case of the file: the fused one
    plans = first.split("\n// ----- plan ")[1:]
    fused = [p for p in plans if "iree_encoding.unset_encoding, tensor.expand_shape, iree_encoding.set_encoding}" in p]
    assert fused, "no plan moves the reshape and the encode into the matmul's dispatch"
    program = parse_mlir(CASE.read_text().split("\n// -----\n")[0], str(CASE))
    inputs = function_inputs(select_function(program), seed=3)
    want = evaluate(program, inputs)
    for text in plans:
        plan = parse_mlir(text.split("\n", 1)[1], "<plan>")
        for got, ref in zip(evaluate(plan, inputs, target=target), want, strict=True):
            np.testing.assert_allclose(got, ref, rtol=1e-5, atol=1e-5)
