// RUN: egg-dispatch opt --split-input-file --rules noop --target none %s | filecheck %s

// noop_reshape.egg conditions 7-9: a chain of three static reshapes (collapse, expand, collapse) of a dispatch's
// result, read by another dispatch, is between dispatches a view of that result; IREE converts each to a
// flow.tensor.reshape and folds them into the one from 1x16x32 to 8x64, which its plan reads. Both spellings are
// plans (noop_reshape.egg condition 9: the chain's source is a dispatch result, read from a buffer).
// CHECK-LABEL: plans for @fold_reshape_chain: 2;
// CHECK-SAME:  fold-reshape-chain3 1
// CHECK:       plan 0 of @fold_reshape_chain: dispatch{linalg.generic} tensor.collapse_shape tensor.expand_shape tensor.collapse_shape dispatch{linalg.generic}
// CHECK:       plan 1 of @fold_reshape_chain: dispatch{linalg.generic} flow.tensor.reshape dispatch{linalg.generic}
// CHECK:       flow.tensor.reshape %{{[0-9]+}} : tensor<1x16x32xf32> -> tensor<8x64xf32>
#id2 = affine_map<(d0, d1) -> (d0, d1)>
#id3 = affine_map<(d0, d1, d2) -> (d0, d1, d2)>
func.func @fold_reshape_chain(%x: tensor<1x16x32xf32>) -> tensor<8x64xf32> {
  %init = tensor.empty() : tensor<1x16x32xf32>
  %y = linalg.generic {indexing_maps = [#id3, #id3], iterator_types = ["parallel", "parallel", "parallel"]} ins(%x : tensor<1x16x32xf32>) outs(%init : tensor<1x16x32xf32>) {
  ^bb0(%a: f32, %o: f32):
    %s = arith.addf %a, %a : f32
    linalg.yield %s : f32
  } -> tensor<1x16x32xf32>
  %c = tensor.collapse_shape %y [[0, 1], [2]] : tensor<1x16x32xf32> into tensor<16x32xf32>
  %e = tensor.expand_shape %c [[0, 1], [2, 3]] output_shape [8, 2, 2, 16] : tensor<16x32xf32> into tensor<8x2x2x16xf32>
  %f = tensor.collapse_shape %e [[0], [1, 2, 3]] : tensor<8x2x2x16xf32> into tensor<8x64xf32>
  %init2 = tensor.empty() : tensor<8x64xf32>
  %z = linalg.generic {indexing_maps = [#id2, #id2], iterator_types = ["parallel", "parallel"]} ins(%f : tensor<8x64xf32>) outs(%init2 : tensor<8x64xf32>) {
  ^bb0(%a: f32, %o: f32):
    %s = arith.mulf %a, %a : f32
    linalg.yield %s : f32
  } -> tensor<8x64xf32>
  return %z : tensor<8x64xf32>
}

// -----

// noop_reshape.egg conditions 7-9: two reshapes (a collapse, an expand to another shape) likewise.
// CHECK-LABEL: plans for @fold_reshape_pair: 2;
// CHECK-SAME:  fold-reshape-chain 1
// CHECK:       plan 1 of @fold_reshape_pair: dispatch{linalg.generic} flow.tensor.reshape dispatch{linalg.generic}
// CHECK:       flow.tensor.reshape %{{[0-9]+}} : tensor<1x16x32xf32> -> tensor<8x2x32xf32>
#id3 = affine_map<(d0, d1, d2) -> (d0, d1, d2)>
func.func @fold_reshape_pair(%x: tensor<1x16x32xf32>) -> tensor<8x2x32xf32> {
  %init = tensor.empty() : tensor<1x16x32xf32>
  %y = linalg.generic {indexing_maps = [#id3, #id3], iterator_types = ["parallel", "parallel", "parallel"]} ins(%x : tensor<1x16x32xf32>) outs(%init : tensor<1x16x32xf32>) {
  ^bb0(%a: f32, %o: f32):
    %s = arith.addf %a, %a : f32
    linalg.yield %s : f32
  } -> tensor<1x16x32xf32>
  %c = tensor.collapse_shape %y [[0, 1], [2]] : tensor<1x16x32xf32> into tensor<16x32xf32>
  %f = tensor.expand_shape %c [[0, 1], [2]] output_shape [8, 2, 32] : tensor<16x32xf32> into tensor<8x2x32xf32>
  %init2 = tensor.empty() : tensor<8x2x32xf32>
  %z = linalg.generic {indexing_maps = [#id3, #id3], iterator_types = ["parallel", "parallel", "parallel"]} ins(%f : tensor<8x2x32xf32>) outs(%init2 : tensor<8x2x32xf32>) {
  ^bb0(%a: f32, %o: f32):
    %s = arith.mulf %a, %a : f32
    linalg.yield %s : f32
  } -> tensor<8x2x32xf32>
  return %z : tensor<8x2x32xf32>
}

// -----

// noop_reshape.egg condition 7: a chain with a dynamic size (the expand_shape's output_shape operand) is not folded.
// CHECK-LABEL: plans for @dont_fold_a_dynamic_chain: 1;
// CHECK-NOT:   fold-reshape-chain
// CHECK-NOT:   flow.tensor.reshape
#id2 = affine_map<(d0, d1) -> (d0, d1)>
func.func @dont_fold_a_dynamic_chain(%x: tensor<?x32xf32>) -> tensor<?x32xf32> {
  %c0 = arith.constant 0 : index
  %n = tensor.dim %x, %c0 : tensor<?x32xf32>
  %init = tensor.empty(%n) : tensor<?x32xf32>
  %y = linalg.generic {indexing_maps = [#id2, #id2], iterator_types = ["parallel", "parallel"]} ins(%x : tensor<?x32xf32>) outs(%init : tensor<?x32xf32>) {
  ^bb0(%a: f32, %o: f32):
    %s = arith.addf %a, %a : f32
    linalg.yield %s : f32
  } -> tensor<?x32xf32>
  %c = tensor.collapse_shape %y [[0, 1]] : tensor<?x32xf32> into tensor<?xf32>
  %e = tensor.expand_shape %c [[0, 1, 2]] output_shape [%n, 2, 16] : tensor<?xf32> into tensor<?x2x16xf32>
  %f = tensor.collapse_shape %e [[0], [1, 2]] : tensor<?x2x16xf32> into tensor<?x32xf32>
  %z = linalg.generic {indexing_maps = [#id2, #id2], iterator_types = ["parallel", "parallel"]} ins(%f : tensor<?x32xf32>) outs(%init : tensor<?x32xf32>) {
  ^bb0(%a: f32, %o: f32):
    %s = arith.mulf %a, %a : f32
    linalg.yield %s : f32
  } -> tensor<?x32xf32>
  return %z : tensor<?x32xf32>
}

// -----

// noop_reshape.egg condition 8: a chain the function returns is no Dispatch's body (the start state returns the
// reshapes themselves), so it is kept as written.
// CHECK-LABEL: plans for @dont_fold_a_returned_chain: 1;
// CHECK-NOT:   fold-reshape-chain
// CHECK-NOT:   flow.tensor.reshape
#id3 = affine_map<(d0, d1, d2) -> (d0, d1, d2)>
func.func @dont_fold_a_returned_chain(%x: tensor<1x16x32xf32>) -> tensor<8x64xf32> {
  %init = tensor.empty() : tensor<1x16x32xf32>
  %y = linalg.generic {indexing_maps = [#id3, #id3], iterator_types = ["parallel", "parallel", "parallel"]} ins(%x : tensor<1x16x32xf32>) outs(%init : tensor<1x16x32xf32>) {
  ^bb0(%a: f32, %o: f32):
    %s = arith.addf %a, %a : f32
    linalg.yield %s : f32
  } -> tensor<1x16x32xf32>
  %c = tensor.collapse_shape %y [[0, 1], [2]] : tensor<1x16x32xf32> into tensor<16x32xf32>
  %e = tensor.expand_shape %c [[0, 1], [2, 3]] output_shape [8, 2, 2, 16] : tensor<16x32xf32> into tensor<8x2x2x16xf32>
  %f = tensor.collapse_shape %e [[0], [1, 2, 3]] : tensor<8x2x2x16xf32> into tensor<8x64xf32>
  return %f : tensor<8x64xf32>
}
