// RUN: egg-dispatch opt --split-input-file --rules noop --target none %s | filecheck %s

// Each expected plan was checked against IREE: iree-opt
// --pass-pipeline='builtin.module(func.func(iree-dispatch-creation-convert-tensor-to-flow, canonicalize))'
// on the chunk prints the same flow.tensor.reshape (ConvertTensorToFlowPass, then FlattenTensorCastLikeChain).

// noop_reshape.egg conditions 9 and 11: a tensor.reshape of a dynamic size (a flow.tensor.reshape in the start
// state, imported as the view dispatch it is) and the collapse_shape FoldUnitExtentDims puts after it, of a
// dispatch's result (read from a buffer), are IREE's one flow.tensor.reshape from 1x?x64 to ?x4x16,
// its size operands the source's and the collapse's (both the sequence length): the q projection of a Llama with
// a dynamic sequence length (tests/fixtures/models/hf_llama_dyn).
// CHECK-LABEL: plans for @fold_a_dynamic_reshape_then_collapse: 2;
// CHECK-SAME:  fold-sized-reshape-chain-view 1
// CHECK:       plan 0 of @fold_a_dynamic_reshape_then_collapse: dispatch{linalg.generic} flow.tensor.reshape tensor.collapse_shape dispatch{linalg.generic}
// CHECK:       plan 1 of @fold_a_dynamic_reshape_then_collapse: dispatch{linalg.generic} flow.tensor.reshape dispatch{linalg.generic}
// CHECK:       [[N:%[0-9]+]] = tensor.dim %arg0
// CHECK:       flow.tensor.reshape %{{[0-9]+}} : tensor<1x?x64xf32>{[[N]]} -> tensor<?x4x16xf32>{[[N]]}
#id3 = affine_map<(d0, d1, d2) -> (d0, d1, d2)>
#tr = affine_map<(d0, d1, d2) -> (d1, d0, d2)>
func.func @fold_a_dynamic_reshape_then_collapse(%x: tensor<1x?x64xf32>) -> tensor<4x?x16xf32> {
  %c1 = arith.constant 1 : index
  %n = tensor.dim %x, %c1 : tensor<1x?x64xf32>
  %0 = flow.dispatch.region -> (tensor<1x?x64xf32>{%n}) {
    %init = tensor.empty(%n) : tensor<1x?x64xf32>
    %y = linalg.generic {indexing_maps = [#id3, #id3], iterator_types = ["parallel", "parallel", "parallel"]} ins(%x : tensor<1x?x64xf32>) outs(%init : tensor<1x?x64xf32>) {
    ^bb0(%a: f32, %o: f32):
      %s = arith.addf %a, %a : f32
      linalg.yield %s : f32
    } -> tensor<1x?x64xf32>
    flow.return %y : tensor<1x?x64xf32>
  }
  %r = flow.tensor.reshape %0 : tensor<1x?x64xf32>{%n} -> tensor<1x?x4x16xf32>{%n}
  %c = tensor.collapse_shape %r [[0, 1], [2], [3]] : tensor<1x?x4x16xf32> into tensor<?x4x16xf32>
  %1 = flow.dispatch.region -> (tensor<4x?x16xf32>{%n}) {
    %init = tensor.empty(%n) : tensor<4x?x16xf32>
    %t = linalg.generic {indexing_maps = [#tr, #id3], iterator_types = ["parallel", "parallel", "parallel"]} ins(%c : tensor<?x4x16xf32>) outs(%init : tensor<4x?x16xf32>) {
    ^bb0(%a: f32, %o: f32):
      linalg.yield %a : f32
    } -> tensor<4x?x16xf32>
    flow.return %t : tensor<4x?x16xf32>
  }
  return %1 : tensor<4x?x16xf32>
}

// -----

// noop_reshape.egg condition 9: a chain of three (an expand, a collapse, a flow.tensor.reshape: the attention's
// output back to the hidden size) folds pair by pair into the one reshape from ?x2x2x16 to 1x?x64 (plan 1 has the
// first pair folded, plan 2 all three).
// CHECK-LABEL: plans for @fold_a_dynamic_chain_of_three: 3;
// CHECK-SAME:  fold-sized-reshape-chain 2
// CHECK:       plan 2 of @fold_a_dynamic_chain_of_three: dispatch{linalg.generic} flow.tensor.reshape dispatch{linalg.generic}
// CHECK:       [[N:%[0-9]+]] = tensor.dim %arg0
// CHECK:       flow.tensor.reshape %{{[0-9]+}} : tensor<?x2x2x16xf32>{[[N]]} -> tensor<1x?x64xf32>{[[N]]}
#id2 = affine_map<(d0, d1) -> (d0, d1)>
#id4 = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>
#id3 = affine_map<(d0, d1, d2) -> (d0, d1, d2)>
func.func @fold_a_dynamic_chain_of_three(%x: tensor<?x2x2x16xf32>) -> tensor<1x?x64xf32> {
  %c0 = arith.constant 0 : index
  %n = tensor.dim %x, %c0 : tensor<?x2x2x16xf32>
  %0 = flow.dispatch.region -> (tensor<?x2x2x16xf32>{%n}) {
    %init = tensor.empty(%n) : tensor<?x2x2x16xf32>
    %y = linalg.generic {indexing_maps = [#id4, #id4], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%x : tensor<?x2x2x16xf32>) outs(%init : tensor<?x2x2x16xf32>) {
    ^bb0(%a: f32, %o: f32):
      %s = arith.addf %a, %a : f32
      linalg.yield %s : f32
    } -> tensor<?x2x2x16xf32>
    flow.return %y : tensor<?x2x2x16xf32>
  }
  %e = tensor.expand_shape %0 [[0, 1], [2], [3], [4]] output_shape [1, %n, 2, 2, 16] : tensor<?x2x2x16xf32> into tensor<1x?x2x2x16xf32>
  %c = tensor.collapse_shape %e [[0], [1], [2, 3], [4]] : tensor<1x?x2x2x16xf32> into tensor<1x?x4x16xf32>
  %r = flow.tensor.reshape %c : tensor<1x?x4x16xf32>{%n} -> tensor<1x?x64xf32>{%n}
  %1 = flow.dispatch.region -> (tensor<1x?x64xf32>{%n}) {
    %init = tensor.empty(%n) : tensor<1x?x64xf32>
    %z = linalg.generic {indexing_maps = [#id3, #id3], iterator_types = ["parallel", "parallel", "parallel"]} ins(%r : tensor<1x?x64xf32>) outs(%init : tensor<1x?x64xf32>) {
    ^bb0(%a: f32, %o: f32):
      %s = arith.mulf %a, %a : f32
      linalg.yield %s : f32
    } -> tensor<1x?x64xf32>
    flow.return %z : tensor<1x?x64xf32>
  }
  return %1 : tensor<1x?x64xf32>
}

// -----

// noop_reshape.egg condition 12: a chain that gives its source back with its own size (?x32 to ? to ?x2x16 to
// ?x32, all of %n) is the source: IREE's folded flow.tensor.reshape from ?x32{%n} to ?x32{%n} folds away, and the
// second dispatch reads the first's result.
// CHECK-LABEL: plans for @fold_a_dynamic_round_trip: 1;
// CHECK-SAME:  fold-sized-reshape-identity-read 2
// CHECK:       plan 0 of @fold_a_dynamic_round_trip: dispatch{linalg.generic} dispatch{linalg.generic}
// CHECK:       [[Y:%[0-9]+]] = flow.dispatch.region
// CHECK:       ins([[Y]] : tensor<?x32xf32>)
// CHECK-NOT:   flow.tensor.reshape
#id2 = affine_map<(d0, d1) -> (d0, d1)>
func.func @fold_a_dynamic_round_trip(%x: tensor<?x32xf32>) -> tensor<?x32xf32> {
  %c0 = arith.constant 0 : index
  %n = tensor.dim %x, %c0 : tensor<?x32xf32>
  %0 = flow.dispatch.region -> (tensor<?x32xf32>{%n}) {
    %init = tensor.empty(%n) : tensor<?x32xf32>
    %y = linalg.generic {indexing_maps = [#id2, #id2], iterator_types = ["parallel", "parallel"]} ins(%x : tensor<?x32xf32>) outs(%init : tensor<?x32xf32>) {
    ^bb0(%a: f32, %o: f32):
      %s = arith.addf %a, %a : f32
      linalg.yield %s : f32
    } -> tensor<?x32xf32>
    flow.return %y : tensor<?x32xf32>
  }
  %c = tensor.collapse_shape %0 [[0, 1]] : tensor<?x32xf32> into tensor<?xf32>
  %e = tensor.expand_shape %c [[0, 1, 2]] output_shape [%n, 2, 16] : tensor<?xf32> into tensor<?x2x16xf32>
  %f = tensor.collapse_shape %e [[0], [1, 2]] : tensor<?x2x16xf32> into tensor<?x32xf32>
  %1 = flow.dispatch.region -> (tensor<?x32xf32>{%n}) {
    %init = tensor.empty(%n) : tensor<?x32xf32>
    %z = linalg.generic {indexing_maps = [#id2, #id2], iterator_types = ["parallel", "parallel"]} ins(%f : tensor<?x32xf32>) outs(%init : tensor<?x32xf32>) {
    ^bb0(%a: f32, %o: f32):
      %s = arith.mulf %a, %a : f32
      linalg.yield %s : f32
    } -> tensor<?x32xf32>
    flow.return %z : tensor<?x32xf32>
  }
  return %1 : tensor<?x32xf32>
}

// -----

// noop_reshape.egg condition 10: one flow.tensor.reshape (one key: a key names its result) read from two sources
// of other shapes and sizes (?x64 of %n, ?x32 of 2 * %n), each expanded after: each chain folds with its own
// source's size operand, as IREE's do (plan 6: both folded).
// CHECK-LABEL: plans for @fold_two_chains_of_one_reshape_each_with_its_source_sizes: 8;
// CHECK:       plan 6 of @fold_two_chains_of_one_reshape_each_with_its_source_sizes: dispatch{linalg.generic} flow.tensor.reshape dispatch{tensor.expand_shape, tensor.collapse_shape, linalg.generic} flow.tensor.reshape dispatch{linalg.generic}
// CHECK:       [[N:%[0-9]+]] = tensor.dim %arg0
// CHECK:       [[N2:%[0-9]+]] = arith.muli [[N]]
// CHECK:       flow.tensor.reshape %{{[0-9]+}} : tensor<?x64xf32>{[[N]]} -> tensor<?x4x2x8xf32>{[[N]]}
// CHECK:       flow.tensor.reshape %{{[0-9]+}} : tensor<?x32xf32>{[[N2]]} -> tensor<?x4x2x8xf32>{[[N]]}
#id2 = affine_map<(d0, d1) -> (d0, d1)>
#id4 = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>
func.func @fold_two_chains_of_one_reshape_each_with_its_source_sizes(%x: tensor<?x64xf32>) -> (tensor<?x4x2x8xf32>, tensor<?x4x2x8xf32>) {
  %c0 = arith.constant 0 : index
  %c2 = arith.constant 2 : index
  %n = tensor.dim %x, %c0 : tensor<?x64xf32>
  %n2 = arith.muli %n, %c2 : index
  %0 = flow.dispatch.region -> (tensor<?x64xf32>{%n}) {
    %init = tensor.empty(%n) : tensor<?x64xf32>
    %y = linalg.generic {indexing_maps = [#id2, #id2], iterator_types = ["parallel", "parallel"]} ins(%x : tensor<?x64xf32>) outs(%init : tensor<?x64xf32>) {
    ^bb0(%a: f32, %o: f32):
      %s = arith.addf %a, %a : f32
      linalg.yield %s : f32
    } -> tensor<?x64xf32>
    flow.return %y : tensor<?x64xf32>
  }
  %1 = flow.dispatch.region -> (tensor<?x32xf32>{%n2}) {
    %e = tensor.expand_shape %x [[0], [1, 2]] output_shape [%n, 2, 32] : tensor<?x64xf32> into tensor<?x2x32xf32>
    %c = tensor.collapse_shape %e [[0, 1], [2]] : tensor<?x2x32xf32> into tensor<?x32xf32>
    %init = tensor.empty(%n2) : tensor<?x32xf32>
    %y = linalg.generic {indexing_maps = [#id2, #id2], iterator_types = ["parallel", "parallel"]} ins(%c : tensor<?x32xf32>) outs(%init : tensor<?x32xf32>) {
    ^bb0(%a: f32, %o: f32):
      %s = arith.mulf %a, %a : f32
      linalg.yield %s : f32
    } -> tensor<?x32xf32>
    flow.return %y : tensor<?x32xf32>
  }
  %r0 = flow.tensor.reshape %0 : tensor<?x64xf32>{%n} -> tensor<?x4x16xf32>{%n}
  %r1 = flow.tensor.reshape %1 : tensor<?x32xf32>{%n2} -> tensor<?x4x16xf32>{%n}
  %e0 = tensor.expand_shape %r0 [[0], [1], [2, 3]] output_shape [%n, 4, 2, 8] : tensor<?x4x16xf32> into tensor<?x4x2x8xf32>
  %e1 = tensor.expand_shape %r1 [[0], [1], [2, 3]] output_shape [%n, 4, 2, 8] : tensor<?x4x16xf32> into tensor<?x4x2x8xf32>
  %2 = flow.dispatch.region -> (tensor<?x4x2x8xf32>{%n}) {
    %init = tensor.empty(%n) : tensor<?x4x2x8xf32>
    %z = linalg.generic {indexing_maps = [#id4, #id4, #id4], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%e0, %e1 : tensor<?x4x2x8xf32>, tensor<?x4x2x8xf32>) outs(%init : tensor<?x4x2x8xf32>) {
    ^bb0(%a: f32, %b: f32, %o: f32):
      %s = arith.subf %a, %b : f32
      linalg.yield %s : f32
    } -> tensor<?x4x2x8xf32>
    flow.return %z : tensor<?x4x2x8xf32>
  }
  return %2, %e1 : tensor<?x4x2x8xf32>, tensor<?x4x2x8xf32>
}

// -----

// noop_reshape.egg condition 11: a dynamic chain of a value computed in the same dispatch is no view of a buffer
// (no flow op in a dispatch region): not folded.
// CHECK-LABEL: plans for @dont_fold_a_dynamic_chain_of_a_value_computed_in_its_dispatch: 1;
// CHECK-NOT:   fold-sized-reshape
// CHECK-NOT:   flow.tensor.reshape
#id3 = affine_map<(d0, d1, d2) -> (d0, d1, d2)>
#tr = affine_map<(d0, d1, d2) -> (d1, d0, d2)>
func.func @dont_fold_a_dynamic_chain_of_a_value_computed_in_its_dispatch(%x: tensor<1x?x64xf32>) -> tensor<4x?x16xf32> {
  %c1 = arith.constant 1 : index
  %n = tensor.dim %x, %c1 : tensor<1x?x64xf32>
  %0 = flow.dispatch.region -> (tensor<4x?x16xf32>{%n}) {
    %init = tensor.empty(%n) : tensor<1x?x64xf32>
    %y = linalg.generic {indexing_maps = [#id3, #id3], iterator_types = ["parallel", "parallel", "parallel"]} ins(%x : tensor<1x?x64xf32>) outs(%init : tensor<1x?x64xf32>) {
    ^bb0(%a: f32, %o: f32):
      %s = arith.addf %a, %a : f32
      linalg.yield %s : f32
    } -> tensor<1x?x64xf32>
    %e = tensor.expand_shape %y [[0], [1], [2, 3]] output_shape [1, %n, 4, 16] : tensor<1x?x64xf32> into tensor<1x?x4x16xf32>
    %c = tensor.collapse_shape %e [[0, 1], [2], [3]] : tensor<1x?x4x16xf32> into tensor<?x4x16xf32>
    %init2 = tensor.empty(%n) : tensor<4x?x16xf32>
    %t = linalg.generic {indexing_maps = [#tr, #id3], iterator_types = ["parallel", "parallel", "parallel"]} ins(%c : tensor<?x4x16xf32>) outs(%init2 : tensor<4x?x16xf32>) {
    ^bb0(%a: f32, %o: f32):
      linalg.yield %a : f32
    } -> tensor<4x?x16xf32>
    flow.return %t : tensor<4x?x16xf32>
  }
  return %0 : tensor<4x?x16xf32>
}
