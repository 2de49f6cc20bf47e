"""``mlir.debuginfo``: IREE's output printed with ``--mlir-print-debuginfo`` read back without its locations,
and each op's place in the file IREE read (the text below is written as MLIR prints it; the expected
places are read off it by hand)."""

from __future__ import annotations

from egg_dispatch.mlir.debuginfo import strip_locations
from egg_dispatch.mlir.ir import Loc
from egg_dispatch.mlir.parser import parse_mlir

PRINTED = """#map = affine_map<(d0) -> (d0)>
#loc1 = loc("model.mlir":7:10)
#loc2 = loc("model.mlir":9:11)
#loc3 = loc(fused[#loc2, "model.mlir":12:3])
#loc4 = loc(callsite("inner.mlir":1:1 at #loc1))
func.func @f(%arg0: tensor<4xf32> loc("model.mlir":1:14)) -> tensor<4xf32> {
  %0 = tensor.empty() : tensor<4xf32> loc(#loc1)
  %1 = linalg.generic {indexing_maps = [#map, #map], iterator_types = ["parallel"]} ins(%arg0 : tensor<4xf32>) outs(%0 : tensor<4xf32>) {
  ^bb0(%in: f32 loc("model.mlir":9:20), %out: f32 loc("model.mlir":9:30)):
    %2 = arith.addf %in, %in : f32 loc(#loc3)
    linalg.yield %2 : f32 loc(unknown)
  } -> tensor<4xf32> loc(#loc2)
  %3 = arith.negf %1 : tensor<4xf32> loc(#loc4)
  return %3 : tensor<4xf32> loc("model.mlir":20:3)
} loc("model.mlir":1:1)
"""  # noqa: E501 (as MLIR prints it)


def test_locations_are_stripped_and_each_op_placed() -> None:
    text, locs = strip_locations(PRINTED)
    assert "loc(" not in text and "#loc" not in text
    module = parse_mlir(text, "stripped")  # the reader reads what is left
    lines = text.split("\n")
    assert lines[1].startswith("func.func @f(%arg0: tensor<4xf32>) -> tensor<4xf32> {")
    assert lines[4] == "  ^bb0(%in: f32, %out: f32):"
    # by the line the op starts on in the stripped text
    assert locs[3] == Loc("model.mlir", 7, 10)  # tensor.empty, through #loc1
    assert locs[4] == Loc("model.mlir", 9, 11)  # the generic: its location follows its region's `}`
    assert locs[6] == Loc("model.mlir", 9, 11)  # fused[#loc2, ...]: the first place it names
    assert 7 not in locs  # loc(unknown) names no place
    assert locs[9] == Loc("inner.mlir", 1, 1)  # callsite(callee at caller): the callee comes first
    assert locs[10] == Loc("model.mlir", 20, 3)
    assert locs[2] == Loc("model.mlir", 1, 1)  # the function, after its closing `}`
    ops = {op.name: op for op in module.walk()}
    assert locs[ops["linalg.generic"].loc.line] == Loc("model.mlir", 9, 11)  # type: ignore[union-attr]
