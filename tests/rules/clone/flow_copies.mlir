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

// flow_copies.egg condition 2: the first insert's source is a strided slice of an argument.
// ConvertTensorToFlowPass wraps the insert in a dispatch of its own and clones the slice into it
// (cloneProducersToRegion; an extract_slice is cloneable), so IREE's plan (iree-compile 3.13, checked)
// copies it with a strided load (offsets [0, 0], sizes [16, 8], strides [2, 1]) into the tensor.empty,
// and the second insert into that copy.
// CHECK-LABEL: plans for @copy_insert_of_strided_slice: 4; {{.*}} insert-destination-in-own-dispatch 1, {{.*}}returned-insert-in-own-dispatch 1
// CHECK:       plan 3 of @copy_insert_of_strided_slice: dispatch{tensor.extract_slice, tensor.insert_slice} dispatch{tensor.insert_slice}
// CHECK:       %[[A:.+]] = flow.dispatch.region -> (tensor<16x16xf32>) {
// CHECK-NEXT:    %[[S:.+]] = tensor.extract_slice %arg0[0, 0] [16, 8] [2, 1]
// CHECK-NEXT:    %[[E:.+]] = tensor.empty() : tensor<16x16xf32>
// CHECK-NEXT:    tensor.insert_slice %[[S]] into %[[E]][0, 0] [16, 8] [1, 1]
// CHECK:       flow.dispatch.region -> (tensor<16x16xf32>) {
// CHECK-NEXT:    tensor.insert_slice %arg1 into %[[A]][0, 8] [16, 8] [1, 1]
func.func @copy_insert_of_strided_slice(%a: tensor<32x8xf32>, %b: tensor<16x8xf32>) -> tensor<16x16xf32> {
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

// -----

// A partial rotary embedding's concatenation (Phi-3): the heads' [1, 4, 16, 16] view of a dispatch's
// result, its rotated part [.., 0:12] computed by a dispatch and its pass-through part [.., 12:16] a
// rank-reducing slice, concatenated and read by the next dispatch through a chain of two reshapes
// (GQA's expand to [1, 2, 2, 16, 16] and collapse to [2, 2, 16, 16]). IREE's plan (iree-compile 3.13,
// checked; models/hf_phi3) copies each insert, the second loading the pass-through part of the view in
// its own dispatch (flow_copies.egg conditions 8-10: the insert is between dispatches, its source a
// rank-reducing slice with static offsets, the slice's source a reshape of a dispatch's result), and
// reshapes the second copy between dispatches (condition 1: a chain of reshapes reads it).
// CHECK-LABEL: plans for @rotary_pass_through_copied: 4; {{.*}}insert-in-own-dispatch-before-reshape 1, {{.*}}rank-reducing-slice-copied-is-a-slice 2
// CHECK:       plan 3 of @rotary_pass_through_copied: dispatch{linalg.generic} tensor.expand_shape dispatch{tensor.extract_slice, linalg.generic} dispatch{tensor.insert_slice} dispatch{tensor.expand_shape, tensor.extract_slice, tensor.insert_slice} tensor.expand_shape tensor.collapse_shape dispatch{linalg.generic}
// CHECK:       %[[G:.+]] = flow.dispatch.region -> (tensor<4x16x16xf32>) {
// CHECK:       %[[H:.+]] = flow.dispatch.region -> (tensor<4x16x12xf32>) {
// CHECK:       %[[A:.+]] = flow.dispatch.region -> (tensor<1x4x16x16xf32>) {
// CHECK-NEXT:    %[[E:.+]] = tensor.empty() : tensor<1x4x16x16xf32>
// CHECK-NEXT:    tensor.insert_slice %[[H]] into %[[E]][0, 0, 0, 0] [1, 4, 16, 12] [1, 1, 1, 1]
// CHECK:       %[[B:.+]] = flow.dispatch.region -> (tensor<1x4x16x16xf32>) {
// CHECK-NEXT:    %[[X:.+]] = tensor.expand_shape %[[G]] {{\[\[}}0, 1], [2], [3]]
// CHECK-NEXT:    %[[P:.+]] = tensor.extract_slice %[[X]][0, 0, 0, 12] [1, 4, 16, 4] [1, 1, 1, 1] : tensor<1x4x16x16xf32> to tensor<4x16x4xf32>
// CHECK-NEXT:    tensor.insert_slice %[[P]] into %[[A]][0, 0, 0, 12] [1, 4, 16, 4] [1, 1, 1, 1]
// CHECK:       %[[R:.+]] = tensor.expand_shape %[[B]]
// CHECK-NEXT:  tensor.collapse_shape %[[R]]
#id3 = affine_map<(d0, d1, d2) -> (d0, d1, d2)>
#id4 = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>
func.func @rotary_pass_through_copied(%a: tensor<4x16x16xf32>) -> tensor<2x2x16x16xf32> {
  %e0 = tensor.empty() : tensor<4x16x16xf32>
  %g = linalg.generic {indexing_maps = [#id3, #id3], iterator_types = ["parallel", "parallel", "parallel"]} ins(%a : tensor<4x16x16xf32>) outs(%e0 : tensor<4x16x16xf32>) {
  ^bb0(%in: f32, %o: f32):
    %v = arith.mulf %in, %in : f32
    linalg.yield %v : f32
  } -> tensor<4x16x16xf32>
  %x = tensor.expand_shape %g [[0, 1], [2], [3]] output_shape [1, 4, 16, 16] : tensor<4x16x16xf32> into tensor<1x4x16x16xf32>
  %rot = tensor.extract_slice %x[0, 0, 0, 0] [1, 4, 16, 12] [1, 1, 1, 1] : tensor<1x4x16x16xf32> to tensor<4x16x12xf32>
  %pass = tensor.extract_slice %x[0, 0, 0, 12] [1, 4, 16, 4] [1, 1, 1, 1] : tensor<1x4x16x16xf32> to tensor<4x16x4xf32>
  %e1 = tensor.empty() : tensor<4x16x12xf32>
  %h = linalg.generic {indexing_maps = [#id3, #id3], iterator_types = ["parallel", "parallel", "parallel"]} ins(%rot : tensor<4x16x12xf32>) outs(%e1 : tensor<4x16x12xf32>) {
  ^bb0(%in: f32, %o: f32):
    %v = arith.negf %in : f32
    linalg.yield %v : f32
  } -> tensor<4x16x12xf32>
  %e = tensor.empty() : tensor<1x4x16x16xf32>
  %i0 = tensor.insert_slice %h into %e[0, 0, 0, 0] [1, 4, 16, 12] [1, 1, 1, 1] : tensor<4x16x12xf32> into tensor<1x4x16x16xf32>
  %i1 = tensor.insert_slice %pass into %i0[0, 0, 0, 12] [1, 4, 16, 4] [1, 1, 1, 1] : tensor<4x16x4xf32> into tensor<1x4x16x16xf32>
  %r1 = tensor.expand_shape %i1 [[0], [1, 2], [3], [4]] output_shape [1, 2, 2, 16, 16] : tensor<1x4x16x16xf32> into tensor<1x2x2x16x16xf32>
  %r2 = tensor.collapse_shape %r1 [[0, 1], [2], [3], [4]] : tensor<1x2x2x16x16xf32> into tensor<2x2x16x16xf32>
  %e2 = tensor.empty() : tensor<2x2x16x16xf32>
  %y = linalg.generic {indexing_maps = [#id4, #id4], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%r2 : tensor<2x2x16x16xf32>) outs(%e2 : tensor<2x2x16x16xf32>) {
  ^bb0(%in: f32, %o: f32):
    %v = arith.addf %in, %in : f32
    linalg.yield %v : f32
  } -> tensor<2x2x16x16xf32>
  return %y : tensor<2x2x16x16xf32>
}

// -----

// flow_copies.egg conditions 2 and 10: the slices' source is an insert the e-graph does not copy (into
// a linalg.fill, condition 3), so no copy can read it: neither the rank-reducing slice (condition 10)
// nor the plain one (condition 2) is copied, and nothing is (one plan). (IREE would clone the fill into
// that insert's copy; the e-graph's copies stop at condition 3.)
// CHECK-LABEL: plans for @dont_copy_slice_of_uncopied_insert: 1; {{.*}} rule matches: none
func.func @dont_copy_slice_of_uncopied_insert(%a: tensor<16x8xf32>) -> tensor<1x16x16xf32> {
  %zero = arith.constant 0.0 : f32
  %e0 = tensor.empty() : tensor<1x32x8xf32>
  %f = linalg.fill ins(%zero : f32) outs(%e0 : tensor<1x32x8xf32>) -> tensor<1x32x8xf32>
  %i0 = tensor.insert_slice %a into %f[0, 0, 0] [1, 16, 8] [1, 1, 1] : tensor<16x8xf32> into tensor<1x32x8xf32>
  %s = tensor.extract_slice %i0[0, 8, 0] [1, 16, 8] [1, 1, 1] : tensor<1x32x8xf32> to tensor<16x8xf32>
  %t = tensor.extract_slice %i0[0, 4, 0] [1, 16, 8] [1, 1, 1] : tensor<1x32x8xf32> to tensor<1x16x8xf32>
  %e = tensor.empty() : tensor<1x16x16xf32>
  %i1 = tensor.insert_slice %s into %e[0, 0, 0] [1, 16, 8] [1, 1, 1] : tensor<16x8xf32> into tensor<1x16x16xf32>
  %i2 = tensor.insert_slice %t into %i1[0, 0, 8] [1, 16, 8] [1, 1, 1] : tensor<1x16x8xf32> into tensor<1x16x16xf32>
  return %i2 : tensor<1x16x16xf32>
}

// -----

// flow_copies.egg condition 8: the concatenation of a rank-reducing slice is computed inside the dispatch
// that reads it, not between dispatches: the slice stays the opaque op (one plan).
// CHECK-LABEL: plans for @dont_copy_rank_reducing_slice_in_dispatch: 1; {{.*}} rule matches: none
#id3 = affine_map<(d0, d1, d2) -> (d0, d1, d2)>
util.func public @dont_copy_rank_reducing_slice_in_dispatch(%a: tensor<1x16x8xf32>, %b: tensor<16x8xf32>) -> tensor<1x16x16xf32> {
  %r = flow.dispatch.region -> (tensor<1x16x16xf32>) {
    %s = tensor.extract_slice %a[0, 0, 0] [1, 16, 8] [1, 1, 1] : tensor<1x16x8xf32> to tensor<16x8xf32>
    %e = tensor.empty() : tensor<1x16x16xf32>
    %i0 = tensor.insert_slice %s into %e[0, 0, 0] [1, 16, 8] [1, 1, 1] : tensor<16x8xf32> into tensor<1x16x16xf32>
    %i1 = tensor.insert_slice %b into %i0[0, 0, 8] [1, 16, 8] [1, 1, 1] : tensor<16x8xf32> into tensor<1x16x16xf32>
    %g = linalg.generic {indexing_maps = [#id3, #id3], iterator_types = ["parallel", "parallel", "parallel"]} ins(%i1 : tensor<1x16x16xf32>) outs(%e : tensor<1x16x16xf32>) {
    ^bb0(%in: f32, %o: f32):
      %v = arith.mulf %in, %in : f32
      linalg.yield %v : f32
    } -> tensor<1x16x16xf32>
    flow.return %g : tensor<1x16x16xf32>
  }
  util.return %r : tensor<1x16x16xf32>
}

// -----

// flow_copies.egg condition 9: the inserted slice's offset is read out of a tensor (data, not a size):
// no rank-reducing-slice fact, so the slice stays an opaque op and its insert is not copied (the first
// insert, of an argument, is).
// CHECK-LABEL: plans for @dont_copy_data_dependent_rank_reducing_slice: 2;
// CHECK-NOT:   rank-reducing-slice-copied-is-a-slice
// CHECK-NOT:   returned-insert-in-own-dispatch
func.func @dont_copy_data_dependent_rank_reducing_slice(%a: tensor<4x16x8xf32>, %b: tensor<16x8xf32>, %ids: tensor<1xindex>) -> tensor<1x16x16xf32> {
  %c0 = arith.constant 0 : index
  %o = tensor.extract %ids[%c0] : tensor<1xindex>
  %s = tensor.extract_slice %a[%o, 0, 0] [1, 16, 8] [1, 1, 1] : tensor<4x16x8xf32> to tensor<16x8xf32>
  %e = tensor.empty() : tensor<1x16x16xf32>
  %i0 = tensor.insert_slice %b into %e[0, 0, 8] [1, 16, 8] [1, 1, 1] : tensor<16x8xf32> into tensor<1x16x16xf32>
  %i1 = tensor.insert_slice %s into %i0[0, 0, 0] [1, 16, 8] [1, 1, 1] : tensor<16x8xf32> into tensor<1x16x16xf32>
  return %i1 : tensor<1x16x16xf32>
}
