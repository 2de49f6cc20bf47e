// RUN: egg-dispatch opt --split-input-file --rules noop --target none %s | filecheck %s

// noop_reshape.egg conditions 7-8: a chain of three static reshapes (collapse, expand, collapse) of a dispatch's
// result, read by another dispatch, is between dispatches a view of that result; IREE converts each to a
// flow.tensor.reshape and folds them into the one from 1x16x32 to 8x64, which its plan reads (noop_reshape.egg condition 8: the
// chain's source is a dispatch result, read from a buffer). Its first two reshapes fold too (plan 1).
// CHECK-LABEL: plans for @fold_reshape_chain: 3;
// CHECK-SAME:  fold-reshape-chain 1, fold-reshape-chain3 1
// CHECK:       plan 0 of @fold_reshape_chain: dispatch{linalg.generic} tensor.collapse_shape tensor.expand_shape tensor.collapse_shape dispatch{linalg.generic}
// CHECK:       plan 2 of @fold_reshape_chain: dispatch{linalg.generic} flow.tensor.reshape dispatch{linalg.generic}
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

// noop_reshape.egg conditions 7-8: two reshapes (a collapse, an expand to another shape) likewise.
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

// noop_reshape.egg condition 7: a chain with a dynamic size (the expand_shape's output_shape operand) is not folded
// by the static rules; it gives its source back with its own size, so it is the source (noop_reshape.egg condition 12, tested with
// the other dynamic chains in fold_sized_reshape_chain.mlir).
// CHECK-LABEL: plans for @dont_fold_a_dynamic_chain: 1;
// CHECK-NOT:   fold-reshape-chain{{ }}
// CHECK-NOT:   fold-reshape-chain3
// CHECK-SAME:  fold-sized-reshape-identity
// CHECK:       plan 0 of @dont_fold_a_dynamic_chain: dispatch{linalg.generic} dispatch{linalg.generic}
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

// noop_reshape.egg conditions 7-8: a chain the function returns is one flow.tensor.reshape of the dispatch's result
// too (IREE returns the folded reshape).
// CHECK-LABEL: plans for @fold_a_returned_chain: 3;
// CHECK:       plan 2 of @fold_a_returned_chain: dispatch{linalg.generic} flow.tensor.reshape{{$}}
// CHECK:       [[R:%[0-9]+]] = flow.tensor.reshape %{{[0-9]+}} : tensor<1x16x32xf32> -> tensor<8x64xf32>
// CHECK-NEXT:  func.return [[R]] : tensor<8x64xf32>
#id3 = affine_map<(d0, d1, d2) -> (d0, d1, d2)>
func.func @fold_a_returned_chain(%x: tensor<1x16x32xf32>) -> tensor<8x64xf32> {
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

// -----
// noop_reshape.egg condition 8: a chain of a value computed in the same dispatch is no view of a buffer; the
// dispatch computes and reshapes it, and the chain is not folded into one reshape (its round trips are, by
// fold-reshape-round-trip).
// CHECK-LABEL: plans for @dont_fold_a_chain_of_a_value_computed_in_its_dispatch: 1;
// CHECK-NOT:   fold-reshape-chain
// CHECK-NOT:   flow.tensor.reshape
#id2 = affine_map<(d0, d1) -> (d0, d1)>
#id3 = affine_map<(d0, d1, d2) -> (d0, d1, d2)>
func.func @dont_fold_a_chain_of_a_value_computed_in_its_dispatch(%x: tensor<1x16x32xf32>) -> tensor<8x64xf32> {
  %0 = flow.dispatch.region -> (tensor<8x64xf32>) {
    %init = tensor.empty() : tensor<1x16x32xf32>
    %y = linalg.generic {indexing_maps = [#id3, #id3], iterator_types = ["parallel", "parallel", "parallel"]} ins(%x : tensor<1x16x32xf32>) outs(%init : tensor<1x16x32xf32>) {
    ^bb0(%a: f32, %o: f32):
      %s = arith.addf %a, %a : f32
      linalg.yield %s : f32
    } -> tensor<1x16x32xf32>
    %c = tensor.collapse_shape %y [[0, 1], [2]] : tensor<1x16x32xf32> into tensor<16x32xf32>
    %f = tensor.expand_shape %c [[0], [1, 2]] output_shape [16, 2, 16] : tensor<16x32xf32> into tensor<16x2x16xf32>
    %g = tensor.collapse_shape %f [[0], [1, 2]] : tensor<16x2x16xf32> into tensor<16x32xf32>
    %h = tensor.expand_shape %g [[0, 1], [2]] output_shape [8, 2, 32] : tensor<16x32xf32> into tensor<8x2x32xf32>
    %k = tensor.collapse_shape %h [[0], [1, 2]] : tensor<8x2x32xf32> into tensor<8x64xf32>
    flow.return %k : tensor<8x64xf32>
  }
  return %0 : tensor<8x64xf32>
}

// -----
// noop_reshape.egg conditions 7-8: a chain of an argument cloned into its reader's dispatch is the one reshape too,
// which the emitter spells there as a collapse to one dim and an expand (no flow op in a dispatch region).
// CHECK-LABEL: plans for @fold_a_chain_read_inside_a_dispatch: 3;
// CHECK:       plan 2 of @fold_a_chain_read_inside_a_dispatch: dispatch{tensor.collapse_shape, tensor.expand_shape, linalg.generic}
// CHECK:       tensor.collapse_shape %arg0 {{\[}}[0, 1, 2]] : tensor<1x16x32xf32> into tensor<512xf32>
// CHECK:       tensor.expand_shape %{{[0-9]+}} {{\[}}[0, 1]] output_shape [8, 64] : tensor<512xf32> into tensor<8x64xf32>
// CHECK-NOT:   flow.tensor.reshape
#id2 = affine_map<(d0, d1) -> (d0, d1)>
func.func @fold_a_chain_read_inside_a_dispatch(%x: tensor<1x16x32xf32>) -> tensor<8x64xf32> {
  %0 = flow.dispatch.region -> (tensor<8x64xf32>) {
    %c = tensor.collapse_shape %x [[0, 1], [2]] : tensor<1x16x32xf32> into tensor<16x32xf32>
    %e = tensor.expand_shape %c [[0, 1], [2]] output_shape [8, 2, 32] : tensor<16x32xf32> into tensor<8x2x32xf32>
    %f = tensor.collapse_shape %e [[0], [1, 2]] : tensor<8x2x32xf32> into tensor<8x64xf32>
    %init = tensor.empty() : tensor<8x64xf32>
    %z = linalg.generic {indexing_maps = [#id2, #id2], iterator_types = ["parallel", "parallel"]} ins(%f : tensor<8x64xf32>) outs(%init : tensor<8x64xf32>) {
    ^bb0(%a: f32, %o: f32):
      %s = arith.mulf %a, %a : f32
      linalg.yield %s : f32
    } -> tensor<8x64xf32>
    flow.return %z : tensor<8x64xf32>
  }
  return %0 : tensor<8x64xf32>
}
