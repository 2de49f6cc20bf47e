// RUN: egg-dispatch opt --split-input-file --rules clone --target x86_64-avx2 %s | filecheck %s

// A fused q/k/v projection split in three between dispatches, each third reshaped into heads for the
// dispatch that reads all three (GPT-2's c_attn before its attention). The initial plan computes each
// slice and reshape as one value between dispatches; IREE's plan copies each slice in a dispatch of its
// own (ConvertTensorToFlowPass: a non-contiguous top-level extract_slice) and the consumer reshapes the
// copy. Each of the three operands has both spellings: 2 x 2 x 2 plans.
// CHECK-LABEL: plans for @slices_before_reshapes: 8;
// CHECK:       of @slices_before_reshapes: dispatch{{.*}} dispatch{tensor.expand_shape, tensor.extract_slice} dispatch{tensor.expand_shape, tensor.extract_slice} dispatch{tensor.expand_shape, tensor.extract_slice} dispatch{tensor.expand_shape, tensor.expand_shape, tensor.expand_shape, linalg.generic}
// CHECK:       %[[Q:.+]] = flow.dispatch.region -> (tensor<2x16x32xf32>) {
// CHECK-NEXT:    tensor.expand_shape %{{.*}} {{\[\[}}0, 1], [2]] output_shape [2, 16, 96]
// CHECK-NEXT:    tensor.extract_slice %{{.*}}[0, 0, 0] [2, 16, 32] [1, 1, 1] : tensor<2x16x96xf32> to tensor<2x16x32xf32>
// CHECK-NEXT:    flow.return
// CHECK:       flow.dispatch.region -> (tensor<2x16x4x8xf32>) {
// CHECK-NEXT:    tensor.expand_shape %[[Q]] {{\[\[}}0], [1], [2, 3]] output_shape [2, 16, 4, 8] : tensor<2x16x32xf32> into tensor<2x16x4x8xf32>
#id4 = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>
func.func @slices_before_reshapes(%x: tensor<32x16xf32>, %w: tensor<16x96xf32>) -> tensor<2x16x4x8xf32> {
  %zero = arith.constant 0.0 : f32
  %acc_e = tensor.empty() : tensor<32x96xf32>
  %acc = linalg.fill ins(%zero : f32) outs(%acc_e : tensor<32x96xf32>) -> tensor<32x96xf32>
  %qkv = linalg.matmul ins(%x, %w : tensor<32x16xf32>, tensor<16x96xf32>) outs(%acc : tensor<32x96xf32>) -> tensor<32x96xf32>
  %e = tensor.expand_shape %qkv [[0, 1], [2]] output_shape [2, 16, 96] : tensor<32x96xf32> into tensor<2x16x96xf32>
  %q = tensor.extract_slice %e[0, 0, 0] [2, 16, 32] [1, 1, 1] : tensor<2x16x96xf32> to tensor<2x16x32xf32>
  %k = tensor.extract_slice %e[0, 0, 32] [2, 16, 32] [1, 1, 1] : tensor<2x16x96xf32> to tensor<2x16x32xf32>
  %v = tensor.extract_slice %e[0, 0, 64] [2, 16, 32] [1, 1, 1] : tensor<2x16x96xf32> to tensor<2x16x32xf32>
  %qh = tensor.expand_shape %q [[0], [1], [2, 3]] output_shape [2, 16, 4, 8] : tensor<2x16x32xf32> into tensor<2x16x4x8xf32>
  %kh = tensor.expand_shape %k [[0], [1], [2, 3]] output_shape [2, 16, 4, 8] : tensor<2x16x32xf32> into tensor<2x16x4x8xf32>
  %vh = tensor.expand_shape %v [[0], [1], [2, 3]] output_shape [2, 16, 4, 8] : tensor<2x16x32xf32> into tensor<2x16x4x8xf32>
  %o_e = tensor.empty() : tensor<2x16x4x8xf32>
  %o = linalg.generic {indexing_maps = [#id4, #id4, #id4, #id4], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%qh, %kh, %vh : tensor<2x16x4x8xf32>, tensor<2x16x4x8xf32>, tensor<2x16x4x8xf32>) outs(%o_e : tensor<2x16x4x8xf32>) {
  ^bb0(%a: f32, %b: f32, %c: f32, %out: f32):
    %m = arith.mulf %a, %b : f32
    %s = arith.addf %m, %c : f32
    linalg.yield %s : f32
  } -> tensor<2x16x4x8xf32>
  return %o : tensor<2x16x4x8xf32>
}

// -----

// The slice of an argument (a dispatch input) between dispatches: the same two spellings, the copy in a
// dispatch of its own and the reshape in the consumer's.
// CHECK-LABEL: plans for @slice_of_argument_before_reshape: 2;
// CHECK:       of @slice_of_argument_before_reshape: dispatch{tensor.extract_slice} dispatch{tensor.expand_shape, linalg.generic}
// CHECK:       %[[K:.+]] = flow.dispatch.region -> (tensor<2x16x32xf32>) {
// CHECK-NEXT:    tensor.extract_slice %arg0[0, 0, 32] [2, 16, 32] [1, 1, 1]
// CHECK-NEXT:    flow.return
// CHECK:       tensor.expand_shape %[[K]]
#id4 = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>
func.func @slice_of_argument_before_reshape(%a: tensor<2x16x96xf32>) -> tensor<2x16x4x8xf32> {
  %k = tensor.extract_slice %a[0, 0, 32] [2, 16, 32] [1, 1, 1] : tensor<2x16x96xf32> to tensor<2x16x32xf32>
  %kh = tensor.expand_shape %k [[0], [1], [2, 3]] output_shape [2, 16, 4, 8] : tensor<2x16x32xf32> into tensor<2x16x4x8xf32>
  %0 = flow.dispatch.region -> (tensor<2x16x4x8xf32>) {
    %o_e = tensor.empty() : tensor<2x16x4x8xf32>
    %o = linalg.generic {indexing_maps = [#id4, #id4], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%kh : tensor<2x16x4x8xf32>) outs(%o_e : tensor<2x16x4x8xf32>) {
    ^bb0(%in: f32, %out: f32):
      %m = arith.mulf %in, %in : f32
      linalg.yield %m : f32
    } -> tensor<2x16x4x8xf32>
    flow.return %o : tensor<2x16x4x8xf32>
  }
  return %0 : tensor<2x16x4x8xf32>
}

// -----

// clone.egg condition 5: the slice and the reshape are in the dispatch that reads them: no reshape between
// dispatches, so no copy (@slice_of_argument_before_reshape, with them between dispatches, has two plans).
// CHECK-LABEL: plans for @dont_copy_slice_reshaped_in_dispatch: 1;
// CHECK-NOT:   dispatch{tensor.extract_slice}
#id4 = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>
func.func @dont_copy_slice_reshaped_in_dispatch(%a: tensor<2x16x96xf32>) -> tensor<2x16x4x8xf32> {
  %0 = flow.dispatch.region -> (tensor<2x16x4x8xf32>) {
    %k = tensor.extract_slice %a[0, 0, 32] [2, 16, 32] [1, 1, 1] : tensor<2x16x96xf32> to tensor<2x16x32xf32>
    %kh = tensor.expand_shape %k [[0], [1], [2, 3]] output_shape [2, 16, 4, 8] : tensor<2x16x32xf32> into tensor<2x16x4x8xf32>
    %o_e = tensor.empty() : tensor<2x16x4x8xf32>
    %o = linalg.generic {indexing_maps = [#id4, #id4], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%kh : tensor<2x16x4x8xf32>) outs(%o_e : tensor<2x16x4x8xf32>) {
    ^bb0(%in: f32, %out: f32):
      %m = arith.mulf %in, %in : f32
      linalg.yield %m : f32
    } -> tensor<2x16x4x8xf32>
    flow.return %o : tensor<2x16x4x8xf32>
  }
  return %0 : tensor<2x16x4x8xf32>
}

// -----

// clone.egg condition 6: the slice's source is computed between the dispatches by an op the model does not see
// into, not read from a buffer: a dispatch of the slice would compute that op, not copy a slice.
// CHECK-LABEL: plans for @dont_copy_slice_of_computed_value: 1;
// CHECK-NOT:   dispatch{tensor.extract_slice}
#id4 = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>
func.func @dont_copy_slice_of_computed_value(%a: tensor<2x16x96xf32>) -> tensor<2x16x4x8xf32> {
  %x = mydialect.opaque_scale %a : tensor<2x16x96xf32> -> tensor<2x16x96xf32>
  %k = tensor.extract_slice %x[0, 0, 32] [2, 16, 32] [1, 1, 1] : tensor<2x16x96xf32> to tensor<2x16x32xf32>
  %kh = tensor.expand_shape %k [[0], [1], [2, 3]] output_shape [2, 16, 4, 8] : tensor<2x16x32xf32> into tensor<2x16x4x8xf32>
  %0 = flow.dispatch.region -> (tensor<2x16x4x8xf32>) {
    %o_e = tensor.empty() : tensor<2x16x4x8xf32>
    %o = linalg.generic {indexing_maps = [#id4, #id4], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%kh : tensor<2x16x4x8xf32>) outs(%o_e : tensor<2x16x4x8xf32>) {
    ^bb0(%in: f32, %out: f32):
      %m = arith.mulf %in, %in : f32
      linalg.yield %m : f32
    } -> tensor<2x16x4x8xf32>
    flow.return %o : tensor<2x16x4x8xf32>
  }
  return %0 : tensor<2x16x4x8xf32>
}
