// RUN: egg-dispatch opt --split-input-file --rules clone --target x86_64-avx2 %s | filecheck %s

// A fused projection [1, S, 3D] split by rank-reducing slices (1x16x96 -> 16x32), each part
// reshaped into heads for the dispatch that reads them (GPT-2's c_attn, Phi-3's qkv_proj). The importer
// keeps a rank-reducing slice an opaque op; IREE's plan copies each part in a dispatch of its own
// (ConvertTensorToFlowPass convertExtractSliceOps), a Slice whose sizes keep the unit dim, typed by its
// class (16x32), and the consumer reshapes the copy. clone.egg condition 7, the slice's source a reshape of a
// dispatch (condition 6): each of the two operands has both spellings.
// CHECK-LABEL: plans for @rank_reducing_slices_before_reshapes: 4;
// CHECK-SAME:  rank-reducing-slice-of-view-in-own-dispatch-before-reshape 2
// CHECK:       of @rank_reducing_slices_before_reshapes: dispatch{{.*}} dispatch{tensor.expand_shape, tensor.extract_slice} dispatch{tensor.expand_shape, tensor.extract_slice} dispatch{tensor.expand_shape, tensor.expand_shape, linalg.generic}
// CHECK:       %[[Q:.+]] = flow.dispatch.region -> (tensor<16x32xf32>) {
// CHECK-NEXT:    tensor.expand_shape %{{.*}} {{\[\[}}0, 1], [2]] output_shape [1, 16, 96]
// CHECK-NEXT:    tensor.extract_slice %{{.*}}[0, 0, 0] [1, 16, 32] [1, 1, 1] : tensor<1x16x96xf32> to tensor<16x32xf32>
// CHECK-NEXT:    flow.return
// CHECK:       flow.dispatch.region -> (tensor<16x4x8xf32>) {
// CHECK-NEXT:    tensor.expand_shape %[[Q]] {{\[\[}}0], [1, 2]] output_shape [16, 4, 8] : tensor<16x32xf32> into tensor<16x4x8xf32>
#id3 = affine_map<(d0, d1, d2) -> (d0, d1, d2)>
func.func @rank_reducing_slices_before_reshapes(%x: tensor<16x16xf32>, %w: tensor<16x96xf32>) -> tensor<16x4x8xf32> {
  %zero = arith.constant 0.0 : f32
  %acc_e = tensor.empty() : tensor<16x96xf32>
  %acc = linalg.fill ins(%zero : f32) outs(%acc_e : tensor<16x96xf32>) -> tensor<16x96xf32>
  %qkv = linalg.matmul ins(%x, %w : tensor<16x16xf32>, tensor<16x96xf32>) outs(%acc : tensor<16x96xf32>) -> tensor<16x96xf32>
  %e = tensor.expand_shape %qkv [[0, 1], [2]] output_shape [1, 16, 96] : tensor<16x96xf32> into tensor<1x16x96xf32>
  %q = tensor.extract_slice %e[0, 0, 0] [1, 16, 32] [1, 1, 1] : tensor<1x16x96xf32> to tensor<16x32xf32>
  %k = tensor.extract_slice %e[0, 0, 32] [1, 16, 32] [1, 1, 1] : tensor<1x16x96xf32> to tensor<16x32xf32>
  %qh = tensor.expand_shape %q [[0], [1, 2]] output_shape [16, 4, 8] : tensor<16x32xf32> into tensor<16x4x8xf32>
  %kh = tensor.expand_shape %k [[0], [1, 2]] output_shape [16, 4, 8] : tensor<16x32xf32> into tensor<16x4x8xf32>
  %o_e = tensor.empty() : tensor<16x4x8xf32>
  %o = linalg.generic {indexing_maps = [#id3, #id3, #id3], iterator_types = ["parallel", "parallel", "parallel"]} ins(%qh, %kh : tensor<16x4x8xf32>, tensor<16x4x8xf32>) outs(%o_e : tensor<16x4x8xf32>) {
  ^bb0(%a: f32, %b: f32, %out: f32):
    %m = arith.mulf %a, %b : f32
    linalg.yield %m : f32
  } -> tensor<16x4x8xf32>
  return %o : tensor<16x4x8xf32>
}

// -----

// The rank-reducing slice of an argument (a dispatch input, condition 6) between dispatches: the copy in
// a dispatch of its own and the reshape in the consumer's.
// CHECK-LABEL: plans for @rank_reducing_slice_of_argument: 2;
// CHECK-SAME:  rank-reducing-slice-in-own-dispatch-before-reshape 1
// CHECK:       of @rank_reducing_slice_of_argument: dispatch{tensor.extract_slice} dispatch{tensor.expand_shape, linalg.generic}
// CHECK:       %[[V:.+]] = flow.dispatch.region -> (tensor<16x64xf32>) {
// CHECK-NEXT:    tensor.extract_slice %arg0[0, 0, 64] [1, 16, 64] [1, 1, 1] : tensor<1x16x192xf32> to tensor<16x64xf32>
// CHECK-NEXT:    flow.return
// CHECK:       tensor.expand_shape %[[V]] {{\[\[}}0], [1, 2]] output_shape [16, 4, 16] : tensor<16x64xf32> into tensor<16x4x16xf32>
#id3 = affine_map<(d0, d1, d2) -> (d0, d1, d2)>
func.func @rank_reducing_slice_of_argument(%a: tensor<1x16x192xf32>) -> tensor<16x4x16xf32> {
  %v = tensor.extract_slice %a[0, 0, 64] [1, 16, 64] [1, 1, 1] : tensor<1x16x192xf32> to tensor<16x64xf32>
  %vh = tensor.expand_shape %v [[0], [1, 2]] output_shape [16, 4, 16] : tensor<16x64xf32> into tensor<16x4x16xf32>
  %0 = flow.dispatch.region -> (tensor<16x4x16xf32>) {
    %o_e = tensor.empty() : tensor<16x4x16xf32>
    %o = linalg.generic {indexing_maps = [#id3, #id3], iterator_types = ["parallel", "parallel", "parallel"]} ins(%vh : tensor<16x4x16xf32>) outs(%o_e : tensor<16x4x16xf32>) {
    ^bb0(%in: f32, %out: f32):
      %m = arith.mulf %in, %in : f32
      linalg.yield %m : f32
    } -> tensor<16x4x16xf32>
    flow.return %o : tensor<16x4x16xf32>
  }
  return %0 : tensor<16x4x16xf32>
}

// -----

// clone.egg condition 7: the rank-reducing slice's offset is dynamic (no static offsets, sizes and strides): it
// stays the opaque op computed between the dispatches (@rank_reducing_slice_of_argument, static, has two
// plans).
// CHECK-LABEL: plans for @dont_copy_rank_reducing_slice_dynamic_offset: 1;
// CHECK-NOT:   rank-reducing-slice-in-own-dispatch-before-reshape
// CHECK-NOT:   dispatch{tensor.extract_slice}
#id3 = affine_map<(d0, d1, d2) -> (d0, d1, d2)>
func.func @dont_copy_rank_reducing_slice_dynamic_offset(%a: tensor<1x16x192xf32>, %off: index) -> tensor<16x4x16xf32> {
  %v = tensor.extract_slice %a[0, 0, %off] [1, 16, 64] [1, 1, 1] : tensor<1x16x192xf32> to tensor<16x64xf32>
  %vh = tensor.expand_shape %v [[0], [1, 2]] output_shape [16, 4, 16] : tensor<16x64xf32> into tensor<16x4x16xf32>
  %0 = flow.dispatch.region -> (tensor<16x4x16xf32>) {
    %o_e = tensor.empty() : tensor<16x4x16xf32>
    %o = linalg.generic {indexing_maps = [#id3, #id3], iterator_types = ["parallel", "parallel", "parallel"]} ins(%vh : tensor<16x4x16xf32>) outs(%o_e : tensor<16x4x16xf32>) {
    ^bb0(%in: f32, %out: f32):
      %m = arith.mulf %in, %in : f32
      linalg.yield %m : f32
    } -> tensor<16x4x16xf32>
    flow.return %o : tensor<16x4x16xf32>
  }
  return %0 : tensor<16x4x16xf32>
}

// -----

// clone.egg condition 7: a rank-reducing slice of a computed value the model does not see into (condition 6 fails
// with it): a dispatch of the slice would compute that op, not copy a slice.
// CHECK-LABEL: plans for @dont_copy_rank_reducing_slice_of_computed_value: 1;
// CHECK-NOT:   rank-reducing-slice-in-own-dispatch-before-reshape
// CHECK-NOT:   dispatch{tensor.extract_slice}
#id3 = affine_map<(d0, d1, d2) -> (d0, d1, d2)>
func.func @dont_copy_rank_reducing_slice_of_computed_value(%a: tensor<1x16x192xf32>) -> tensor<16x4x16xf32> {
  %x = mydialect.opaque_scale %a : tensor<1x16x192xf32> -> tensor<1x16x192xf32>
  %v = tensor.extract_slice %x[0, 0, 64] [1, 16, 64] [1, 1, 1] : tensor<1x16x192xf32> to tensor<16x64xf32>
  %vh = tensor.expand_shape %v [[0], [1, 2]] output_shape [16, 4, 16] : tensor<16x64xf32> into tensor<16x4x16xf32>
  %0 = flow.dispatch.region -> (tensor<16x4x16xf32>) {
    %o_e = tensor.empty() : tensor<16x4x16xf32>
    %o = linalg.generic {indexing_maps = [#id3, #id3], iterator_types = ["parallel", "parallel", "parallel"]} ins(%vh : tensor<16x4x16xf32>) outs(%o_e : tensor<16x4x16xf32>) {
    ^bb0(%in: f32, %out: f32):
      %m = arith.mulf %in, %in : f32
      linalg.yield %m : f32
    } -> tensor<16x4x16xf32>
    flow.return %o : tensor<16x4x16xf32>
  }
  return %0 : tensor<16x4x16xf32>
}

// -----

// clone.egg condition 5 for a rank-reducing slice: the slice and the reshape are in the dispatch that reads them:
// no reshape between dispatches, so no copy.
// CHECK-LABEL: plans for @dont_copy_rank_reducing_slice_reshaped_in_dispatch: 1;
// CHECK-NOT:   dispatch{tensor.extract_slice}
#id3 = affine_map<(d0, d1, d2) -> (d0, d1, d2)>
func.func @dont_copy_rank_reducing_slice_reshaped_in_dispatch(%a: tensor<1x16x192xf32>) -> tensor<16x4x16xf32> {
  %0 = flow.dispatch.region -> (tensor<16x4x16xf32>) {
    %v = tensor.extract_slice %a[0, 0, 64] [1, 16, 64] [1, 1, 1] : tensor<1x16x192xf32> to tensor<16x64xf32>
    %vh = tensor.expand_shape %v [[0], [1, 2]] output_shape [16, 4, 16] : tensor<16x64xf32> into tensor<16x4x16xf32>
    %o_e = tensor.empty() : tensor<16x4x16xf32>
    %o = linalg.generic {indexing_maps = [#id3, #id3], iterator_types = ["parallel", "parallel", "parallel"]} ins(%vh : tensor<16x4x16xf32>) outs(%o_e : tensor<16x4x16xf32>) {
    ^bb0(%in: f32, %out: f32):
      %m = arith.mulf %in, %in : f32
      linalg.yield %m : f32
    } -> tensor<16x4x16xf32>
    flow.return %o : tensor<16x4x16xf32>
  }
  return %0 : tensor<16x4x16xf32>
}
