// RUN: egg-dispatch opt --split-input-file --rules clone --target x86_64-avx2 %s | filecheck %s

// A concatenation returned: an argument and a computed half inserted into a tensor.empty between
// dispatches. The start state computes both inserts as one value between dispatches; IREE's plan
// (ConvertTensorToFlowPass: a top-level insert_slice that is not one contiguous range) copies each
// insert in a dispatch of its own, the second writing its half into the first one's copy
// (flow_copies.egg conditions 1-3: the chain is returned, its sources are dispatch inputs, the first
// insert's destination a tensor.empty and the second's the first one's copy).
// CHECK-LABEL: plans for @concat_returned: 4; {{.*}} insert-destination-in-own-dispatch 1, {{.*}}returned-insert-in-own-dispatch 1
// CHECK:       plan 3 of @concat_returned: dispatch{linalg.generic} dispatch{tensor.insert_slice} dispatch{tensor.insert_slice}
// CHECK:       %[[G:.+]] = flow.dispatch.region -> (tensor<16x8xf32>) {
// CHECK:       %[[A:.+]] = flow.dispatch.region -> (tensor<16x16xf32>) {
// CHECK-NEXT:    %[[E:.+]] = tensor.empty() : tensor<16x16xf32>
// CHECK-NEXT:    tensor.insert_slice %arg1 into %[[E]][0, 0] [16, 8] [1, 1]
// CHECK:       flow.dispatch.region -> (tensor<16x16xf32>) {
// CHECK-NEXT:    tensor.insert_slice %[[G]] into %[[A]][0, 8] [16, 8] [1, 1]
// CHECK-NEXT:    flow.return
#id = affine_map<(d0, d1) -> (d0, d1)>
func.func @concat_returned(%a: tensor<16x8xf32>, %b: tensor<16x8xf32>) -> tensor<16x16xf32> {
  %e0 = tensor.empty() : tensor<16x8xf32>
  %g = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]} ins(%a : tensor<16x8xf32>) outs(%e0 : tensor<16x8xf32>) {
  ^bb0(%in: f32, %o: f32):
    %v = arith.mulf %in, %in : f32
    linalg.yield %v : f32
  } -> tensor<16x8xf32>
  %e = tensor.empty() : tensor<16x16xf32>
  %i0 = tensor.insert_slice %b into %e[0, 0] [16, 8] [1, 1] : tensor<16x8xf32> into tensor<16x16xf32>
  %i1 = tensor.insert_slice %g into %i0[0, 8] [16, 8] [1, 1] : tensor<16x8xf32> into tensor<16x16xf32>
  return %i1 : tensor<16x16xf32>
}

// -----

// A KV cache: the past cache (an argument) and the new position (computed) concatenated, the result
// reshaped between dispatches for the dispatch that reads it (flow_copies.egg condition 1: read by a
// reshape). IREE's plan copies each insert and the reshape is a view of the second copy.
// CHECK-LABEL: plans for @kv_cache_reshaped: 4; {{.*}} insert-in-own-dispatch-before-reshape 1
// CHECK:       plan 3 of @kv_cache_reshaped: dispatch{linalg.generic} dispatch{tensor.insert_slice} dispatch{tensor.insert_slice} tensor.collapse_shape dispatch{linalg.generic}
// CHECK:       %[[A:.+]] = flow.dispatch.region -> (tensor<2x8x4xf32>) {
// CHECK-NEXT:    %[[E:.+]] = tensor.empty() : tensor<2x8x4xf32>
// CHECK-NEXT:    tensor.insert_slice %arg0 into %[[E]][0, 0, 0] [2, 7, 4] [1, 1, 1]
// CHECK:       %[[B:.+]] = flow.dispatch.region -> (tensor<2x8x4xf32>) {
// CHECK-NEXT:    tensor.insert_slice %{{.*}} into %[[A]][0, 7, 0] [2, 1, 4] [1, 1, 1]
// CHECK:       tensor.collapse_shape %[[B]] {{\[\[}}0], [1, 2]] : tensor<2x8x4xf32> into tensor<2x32xf32>
#id2 = affine_map<(d0, d1) -> (d0, d1)>
func.func @kv_cache_reshaped(%cache: tensor<2x7x4xf32>, %x: tensor<2x4xf32>) -> tensor<2x32xf32> {
  %e0 = tensor.empty() : tensor<2x4xf32>
  %g = linalg.generic {indexing_maps = [#id2, #id2], iterator_types = ["parallel", "parallel"]} ins(%x : tensor<2x4xf32>) outs(%e0 : tensor<2x4xf32>) {
  ^bb0(%in: f32, %o: f32):
    %v = arith.mulf %in, %in : f32
    linalg.yield %v : f32
  } -> tensor<2x4xf32>
  %e = tensor.empty() : tensor<2x8x4xf32>
  %i0 = tensor.insert_slice %cache into %e[0, 0, 0] [2, 7, 4] [1, 1, 1] : tensor<2x7x4xf32> into tensor<2x8x4xf32>
  %i1 = tensor.insert_slice %g into %i0[0, 7, 0] [2, 1, 4] [1, 1, 1] : tensor<2x4xf32> into tensor<2x8x4xf32>
  %c = tensor.collapse_shape %i1 [[0], [1, 2]] : tensor<2x8x4xf32> into tensor<2x32xf32>
  %e1 = tensor.empty() : tensor<2x32xf32>
  %r = linalg.generic {indexing_maps = [#id2, #id2], iterator_types = ["parallel", "parallel"]} ins(%c : tensor<2x32xf32>) outs(%e1 : tensor<2x32xf32>) {
  ^bb0(%in: f32, %o: f32):
    %v = arith.addf %in, %in : f32
    linalg.yield %v : f32
  } -> tensor<2x32xf32>
  return %r : tensor<2x32xf32>
}

// -----

// flow_copies.egg condition 1: the concatenation is computed inside the dispatch that reads it (not
// between dispatches), so no insert is copied: one plan.
// CHECK-LABEL: plans for @dont_copy_insert_in_dispatch: 1; {{.*}} rule matches: none
#id3 = affine_map<(d0, d1) -> (d0, d1)>
util.func public @dont_copy_insert_in_dispatch(%a: tensor<16x8xf32>, %b: tensor<16x8xf32>) -> tensor<16x16xf32> {
  %r = flow.dispatch.region -> (tensor<16x16xf32>) {
    %e = tensor.empty() : tensor<16x16xf32>
    %i0 = tensor.insert_slice %a into %e[0, 0] [16, 8] [1, 1] : tensor<16x8xf32> into tensor<16x16xf32>
    %i1 = tensor.insert_slice %b into %i0[0, 8] [16, 8] [1, 1] : tensor<16x8xf32> into tensor<16x16xf32>
    %g = linalg.generic {indexing_maps = [#id3, #id3], iterator_types = ["parallel", "parallel"]} ins(%i1 : tensor<16x16xf32>) outs(%e : tensor<16x16xf32>) {
    ^bb0(%in: f32, %o: f32):
      %v = arith.mulf %in, %in : f32
      linalg.yield %v : f32
    } -> tensor<16x16xf32>
    flow.return %g : tensor<16x16xf32>
  }
  util.return %r : tensor<16x16xf32>
}

// -----

// flow_copies.egg condition 2: the first insert's source is a strided slice the concatenation computes
// itself (no dispatch input, no view of one), so it is not copied, and the second insert, whose
// destination is then no copy, is not either: one plan.
// CHECK-LABEL: plans for @dont_copy_insert_of_computed_source: 1; {{.*}} rule matches: none
func.func @dont_copy_insert_of_computed_source(%a: tensor<32x8xf32>, %b: tensor<16x8xf32>) -> tensor<16x16xf32> {
  %s = tensor.extract_slice %a[0, 0] [16, 8] [2, 1] : tensor<32x8xf32> to tensor<16x8xf32>
  %e = tensor.empty() : tensor<16x16xf32>
  %i0 = tensor.insert_slice %s into %e[0, 0] [16, 8] [1, 1] : tensor<16x8xf32> into tensor<16x16xf32>
  %i1 = tensor.insert_slice %b into %i0[0, 8] [16, 8] [1, 1] : tensor<16x8xf32> into tensor<16x16xf32>
  return %i1 : tensor<16x16xf32>
}

// -----

// flow_copies.egg condition 3: the first insert writes into a linalg.fill computed with it (neither a
// tensor.empty nor a dispatch input), so it is not copied, nor is the second: one plan.
// CHECK-LABEL: plans for @dont_copy_insert_into_fill: 1; {{.*}} rule matches: none
func.func @dont_copy_insert_into_fill(%a: tensor<16x8xf32>, %b: tensor<16x8xf32>) -> tensor<16x16xf32> {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<16x16xf32>
  %f = linalg.fill ins(%zero : f32) outs(%e : tensor<16x16xf32>) -> tensor<16x16xf32>
  %i0 = tensor.insert_slice %a into %f[0, 0] [16, 8] [1, 1] : tensor<16x8xf32> into tensor<16x16xf32>
  %i1 = tensor.insert_slice %b into %i0[0, 8] [16, 8] [1, 1] : tensor<16x8xf32> into tensor<16x16xf32>
  return %i1 : tensor<16x16xf32>
}

// -----

// An output split in two and returned: two slices of a dispatch's result between dispatches. IREE's
// plan (ConvertTensorToFlowPass: a top-level extract_slice) copies each slice by a command of its own,
// flow.tensor.slice (flow_copies.egg conditions 4-5: the function returns the slices, their source is
// a dispatch's result).
// CHECK-LABEL: plans for @split_returned: 4; {{.*}}returned-slice-in-own-dispatch 2
// CHECK:       plan 3 of @split_returned: dispatch{linalg.generic} dispatch{tensor.extract_slice} dispatch{tensor.extract_slice}
// CHECK:       %[[G:.+]] = flow.dispatch.region -> (tensor<8x64xf32>) {
// CHECK:       flow.dispatch.region -> (tensor<8x32xf32>) {
// CHECK-NEXT:    tensor.extract_slice %[[G]][0, 0] [8, 32] [1, 1]
// CHECK:       flow.dispatch.region -> (tensor<8x32xf32>) {
// CHECK-NEXT:    tensor.extract_slice %[[G]][0, 32] [8, 32] [1, 1]
#id = affine_map<(d0, d1) -> (d0, d1)>
func.func @split_returned(%a: tensor<8x64xf32>) -> (tensor<8x32xf32>, tensor<8x32xf32>) {
  %e0 = tensor.empty() : tensor<8x64xf32>
  %g = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]} ins(%a : tensor<8x64xf32>) outs(%e0 : tensor<8x64xf32>) {
  ^bb0(%in: f32, %o: f32):
    %v = arith.mulf %in, %in : f32
    linalg.yield %v : f32
  } -> tensor<8x64xf32>
  %s0 = tensor.extract_slice %g[0, 0] [8, 32] [1, 1] : tensor<8x64xf32> to tensor<8x32xf32>
  %s1 = tensor.extract_slice %g[0, 32] [8, 32] [1, 1] : tensor<8x64xf32> to tensor<8x32xf32>
  return %s0, %s1 : tensor<8x32xf32>, tensor<8x32xf32>
}

// -----

// Not when the slice is not returned (condition 4): a slice the consumer's dispatch reads is cloned into
// it (clone.egg), never copied on its own.
// CHECK-LABEL: plans for @dont_copy_slice_read_by_a_dispatch:
// CHECK-NOT:   returned-slice-in-own-dispatch
// CHECK:       plan 0 of
#id = affine_map<(d0, d1) -> (d0, d1)>
func.func @dont_copy_slice_read_by_a_dispatch(%a: tensor<8x64xf32>) -> tensor<8x32xf32> {
  %e0 = tensor.empty() : tensor<8x64xf32>
  %g = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]} ins(%a : tensor<8x64xf32>) outs(%e0 : tensor<8x64xf32>) {
  ^bb0(%in: f32, %o: f32):
    %v = arith.mulf %in, %in : f32
    linalg.yield %v : f32
  } -> tensor<8x64xf32>
  %s0 = tensor.extract_slice %g[0, 32] [8, 32] [1, 1] : tensor<8x64xf32> to tensor<8x32xf32>
  %e1 = tensor.empty() : tensor<8x32xf32>
  %h = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]} ins(%s0 : tensor<8x32xf32>) outs(%e1 : tensor<8x32xf32>) {
  ^bb0(%in: f32, %o: f32):
    %v = arith.addf %in, %in : f32
    linalg.yield %v : f32
  } -> tensor<8x32xf32>
  return %h : tensor<8x32xf32>
}

// -----

// A rank-reducing slice a gather reads in its dispatch (a [1, 64] position-ids buffer cut to its first
// 16 as a [16], the table rows they pick): IREE's dispatch loads it with the unit dim's size kept
// (flow_copies.egg conditions 6-7), the Slice the importer reads IREE's plan as; the e-graph holds the
// opaque slice and that Slice in one class, and every plan computes the gather.
// CHECK-LABEL: plans for @gather_position_ids: 1; {{.*}}rank-reducing-slice-is-a-slice 1
// CHECK:       of @gather_position_ids: dispatch{tensor.extract_slice, linalg.generic}
func.func @gather_position_ids(%table: tensor<64x8xf32>) -> tensor<16x8xf32> {
  %ids = arith.constant dense<[[0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 21, 22, 23, 24, 25, 26, 27, 28, 29, 30, 31, 32, 33, 34, 35, 36, 37, 38, 39, 40, 41, 42, 43, 44, 45, 46, 47, 48, 49, 50, 51, 52, 53, 54, 55, 56, 57, 58, 59, 60, 61, 62, 63]]> : tensor<1x64xi64>
  %s = tensor.extract_slice %ids[0, 0] [1, 16] [1, 1] : tensor<1x64xi64> to tensor<16xi64>
  %e = tensor.empty() : tensor<16x8xf32>
  %g = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]} ins(%s : tensor<16xi64>) outs(%e : tensor<16x8xf32>) {
  ^bb0(%id: i64, %o: f32):
    %r = arith.index_cast %id : i64 to index
    %c = linalg.index 1 : index
    %v = tensor.extract %table[%r, %c] : tensor<64x8xf32>
    linalg.yield %v : f32
  } -> tensor<16x8xf32>
  return %g : tensor<16x8xf32>
}

// -----

// Not when the slice is read between dispatches (condition 7): a rank-reducing slice returned by the
// function stays the opaque op.
// CHECK-LABEL: plans for @dont_slice_returned_rank_reducing: 1; {{.*}} rule matches:
// CHECK-NOT:   rank-reducing-slice-is-a-slice
func.func @dont_slice_returned_rank_reducing(%a: tensor<1x16x8xf32>) -> tensor<16x8xf32> {
  %s = tensor.extract_slice %a[0, 0, 0] [1, 16, 8] [1, 1, 1] : tensor<1x16x8xf32> to tensor<16x8xf32>
  return %s : tensor<16x8xf32>
}
