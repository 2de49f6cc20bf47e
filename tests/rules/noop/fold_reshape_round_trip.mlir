// RUN: egg-dispatch opt --split-input-file --rules noop --target none %s | filecheck %s

// noop_reshape.egg conditions 1-3: a collapse_shape and the expand_shape back to the same 1x16x32
// (IREE's CollapseDimensions leaves such pairs around what it flattens) fold to their source, and the
// generic reads the argument itself. noop_reshape.egg condition 4: between dispatches the pair is a view of the
// argument, so no dispatch copies it.
// CHECK-LABEL: plans for @fold_reshape_round_trip: 1;
// CHECK-SAME:  fold-reshape-round-trip {{[0-9]+}}, fold-reshape-round-trip-view {{[0-9]+}}
// CHECK:       plan 0 of @fold_reshape_round_trip: dispatch{linalg.generic}
// CHECK-NOT:   tensor.collapse_shape
// CHECK:       linalg.generic {{.*}} ins(%arg0 : tensor<1x16x32xf32>)
#id3 = affine_map<(d0, d1, d2) -> (d0, d1, d2)>
func.func @fold_reshape_round_trip(%x: tensor<1x16x32xf32>) -> tensor<1x16x32xf32> {
  %c = tensor.collapse_shape %x [[0, 1], [2]] : tensor<1x16x32xf32> into tensor<16x32xf32>
  %e = tensor.expand_shape %c [[0, 1], [2]] output_shape [1, 16, 32] : tensor<16x32xf32> into tensor<1x16x32xf32>
  %init = tensor.empty() : tensor<1x16x32xf32>
  %y = linalg.generic {indexing_maps = [#id3, #id3], iterator_types = ["parallel", "parallel", "parallel"]} ins(%e : tensor<1x16x32xf32>) outs(%init : tensor<1x16x32xf32>) {
  ^bb0(%a: f32, %o: f32):
    %s = arith.addf %a, %a : f32
    linalg.yield %s : f32
  } -> tensor<1x16x32xf32>
  return %y : tensor<1x16x32xf32>
}

// -----

// noop_reshape.egg condition 1: a tensor.cast to a dynamic shape and back is not a pair of reshapes (noop_reshape
// does not fold it; rules/propagate_cast.egg owns casts).
// CHECK-LABEL: plans for @dont_fold_a_cast_round_trip:
// CHECK-NOT:   fold-reshape-round-trip
#id2 = affine_map<(d0, d1) -> (d0, d1)>
func.func @dont_fold_a_cast_round_trip(%x: tensor<16x32xf32>) -> tensor<16x32xf32> {
  %c = tensor.cast %x : tensor<16x32xf32> to tensor<?x32xf32>
  %e = tensor.cast %c : tensor<?x32xf32> to tensor<16x32xf32>
  %init = tensor.empty() : tensor<16x32xf32>
  %y = linalg.generic {indexing_maps = [#id2, #id2], iterator_types = ["parallel", "parallel"]} ins(%e : tensor<16x32xf32>) outs(%init : tensor<16x32xf32>) {
  ^bb0(%a: f32, %o: f32):
    %s = arith.addf %a, %a : f32
    linalg.yield %s : f32
  } -> tensor<16x32xf32>
  return %y : tensor<16x32xf32>
}

// -----

// noop_reshape.egg condition 2: an expand_shape with a dynamic output size (an operand besides its source) is not
// folded, though it gives back the source's shape.
// CHECK-LABEL: plans for @dont_fold_a_dynamic_round_trip:
// CHECK-NOT:   fold-reshape-round-trip
#id2 = affine_map<(d0, d1) -> (d0, d1)>
func.func @dont_fold_a_dynamic_round_trip(%x: tensor<?x16xf32>) -> tensor<?x16xf32> {
  %c0 = arith.constant 0 : index
  %n = tensor.dim %x, %c0 : tensor<?x16xf32>
  %c = tensor.collapse_shape %x [[0, 1]] : tensor<?x16xf32> into tensor<?xf32>
  %e = tensor.expand_shape %c [[0, 1]] output_shape [%n, 16] : tensor<?xf32> into tensor<?x16xf32>
  %init = tensor.empty(%n) : tensor<?x16xf32>
  %y = linalg.generic {indexing_maps = [#id2, #id2], iterator_types = ["parallel", "parallel"]} ins(%e : tensor<?x16xf32>) outs(%init : tensor<?x16xf32>) {
  ^bb0(%a: f32, %o: f32):
    %s = arith.addf %a, %a : f32
    linalg.yield %s : f32
  } -> tensor<?x16xf32>
  return %y : tensor<?x16xf32>
}

// -----

// noop_reshape.egg condition 3: the pair ends in another shape (2x8x32, not 1x16x32): a real reshape, kept (between
// dispatches it is also the one flow.tensor.reshape IREE folds it into: noop_reshape.egg conditions 7-8,
// fold_reshape_chain.mlir; no round-trip fold).
// CHECK-LABEL: plans for @dont_fold_a_reshape_to_another_shape: 2; {{.*}}rule matches: computed-op 1, copy-source-view 1, fold-reshape-chain 1{{$}}
// CHECK:       tensor.collapse_shape
// CHECK:       tensor.expand_shape {{.*}} into tensor<2x8x32xf32>
#id3 = affine_map<(d0, d1, d2) -> (d0, d1, d2)>
func.func @dont_fold_a_reshape_to_another_shape(%x: tensor<1x16x32xf32>) -> tensor<2x8x32xf32> {
  %c = tensor.collapse_shape %x [[0, 1], [2]] : tensor<1x16x32xf32> into tensor<16x32xf32>
  %e = tensor.expand_shape %c [[0, 1], [2]] output_shape [2, 8, 32] : tensor<16x32xf32> into tensor<2x8x32xf32>
  %init = tensor.empty() : tensor<2x8x32xf32>
  %y = linalg.generic {indexing_maps = [#id3, #id3], iterator_types = ["parallel", "parallel", "parallel"]} ins(%e : tensor<2x8x32xf32>) outs(%init : tensor<2x8x32xf32>) {
  ^bb0(%a: f32, %o: f32):
    %s = arith.addf %a, %a : f32
    linalg.yield %s : f32
  } -> tensor<2x8x32xf32>
  return %y : tensor<2x8x32xf32>
}

// -----

// noop_reshape.egg condition 4: a dispatch that computes a generic and returns it collapsed and expanded back is the
// dispatch computing the generic (the pair folds inside it), not a view: the generic keeps its dispatch.
// CHECK-LABEL: plans for @dont_drop_the_dispatch_of_a_computed_round_trip:
// CHECK-SAME:  fold-reshape-round-trip {{[0-9]+}}
// CHECK-NOT:   fold-reshape-round-trip-view
// CHECK:       plan 0 of {{.*}}: dispatch{linalg.generic}{{$}}
#id3 = affine_map<(d0, d1, d2) -> (d0, d1, d2)>
func.func @dont_drop_the_dispatch_of_a_computed_round_trip(%x: tensor<1x16x32xf32>) -> tensor<1x16x32xf32> {
  %r = flow.dispatch.region -> (tensor<1x16x32xf32>) {
    %init = tensor.empty() : tensor<1x16x32xf32>
    %y = linalg.generic {indexing_maps = [#id3, #id3], iterator_types = ["parallel", "parallel", "parallel"]} ins(%x : tensor<1x16x32xf32>) outs(%init : tensor<1x16x32xf32>) {
    ^bb0(%a: f32, %o: f32):
      %s = arith.addf %a, %a : f32
      linalg.yield %s : f32
    } -> tensor<1x16x32xf32>
    %c = tensor.collapse_shape %y [[0, 1], [2]] : tensor<1x16x32xf32> into tensor<16x32xf32>
    %e = tensor.expand_shape %c [[0, 1], [2]] output_shape [1, 16, 32] : tensor<16x32xf32> into tensor<1x16x32xf32>
    flow.return %e : tensor<1x16x32xf32>
  }
  return %r : tensor<1x16x32xf32>
}

// -----

// noop_reshape.egg conditions 5-6: an output split with its unit dim dropped and expanded back (what
// FoldUnitExtentDims writes for a [1, 16] result cut in two [1, 8]) is the slice that keeps the unit
// dim, which IREE then copies as a flow.tensor.slice (flow_copies.egg, a returned slice).
// CHECK-LABEL: plans for @fold_expand_of_rank_reducing_slice: 4; {{.*}}fold-expand-of-rank-reducing-slice 2
// CHECK:       of @fold_expand_of_rank_reducing_slice: dispatch{linalg.generic} tensor.extract_slice tensor.extract_slice
// CHECK:       tensor.extract_slice %{{.*}}[0, 0] [1, 8] [1, 1] : tensor<1x16xf32> to tensor<1x8xf32>
// CHECK-NEXT:  tensor.extract_slice %{{.*}}[0, 8] [1, 8] [1, 1] : tensor<1x16xf32> to tensor<1x8xf32>
#id = affine_map<(d0, d1) -> (d0, d1)>
func.func @fold_expand_of_rank_reducing_slice(%x: tensor<1x16xf32>) -> (tensor<1x8xf32>, tensor<1x8xf32>) {
  %init = tensor.empty() : tensor<1x16xf32>
  %y = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]} ins(%x : tensor<1x16xf32>) outs(%init : tensor<1x16xf32>) {
  ^bb0(%a: f32, %o: f32):
    %s = arith.addf %a, %a : f32
    linalg.yield %s : f32
  } -> tensor<1x16xf32>
  %p = tensor.extract_slice %y[0, 0] [1, 8] [1, 1] : tensor<1x16xf32> to tensor<8xf32>
  %q = tensor.extract_slice %y[0, 8] [1, 8] [1, 1] : tensor<1x16xf32> to tensor<8xf32>
  %p2 = tensor.expand_shape %p [[0, 1]] output_shape [1, 8] : tensor<8xf32> into tensor<1x8xf32>
  %q2 = tensor.expand_shape %q [[0, 1]] output_shape [1, 8] : tensor<8xf32> into tensor<1x8xf32>
  return %p2, %q2 : tensor<1x8xf32>, tensor<1x8xf32>
}

// -----

// Not when the reshape gives the slice another shape (noop_reshape.egg condition 6): the [8] cut
// expanded to [2, 4] is no slice of the [1, 16] result.
// CHECK-LABEL: plans for @dont_fold_expand_to_another_shape: 1; {{.*}} rule matches:
// CHECK-NOT:   fold-expand-of-rank-reducing-slice
#id = affine_map<(d0, d1) -> (d0, d1)>
func.func @dont_fold_expand_to_another_shape(%x: tensor<1x16xf32>) -> tensor<2x4xf32> {
  %init = tensor.empty() : tensor<1x16xf32>
  %y = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]} ins(%x : tensor<1x16xf32>) outs(%init : tensor<1x16xf32>) {
  ^bb0(%a: f32, %o: f32):
    %s = arith.addf %a, %a : f32
    linalg.yield %s : f32
  } -> tensor<1x16xf32>
  %p = tensor.extract_slice %y[0, 0] [1, 8] [1, 1] : tensor<1x16xf32> to tensor<8xf32>
  %p2 = tensor.expand_shape %p [[0, 1]] output_shape [2, 4] : tensor<8xf32> into tensor<2x4xf32>
  return %p2 : tensor<2x4xf32>
}
