// RUN: egg-dispatch opt --split-input-file --rules clone --target x86_64-avx2 %s | filecheck %s

// A fused projection's result split between dispatches, one part reshaped into heads for a batch matmul
// that encodes it (the fused q/k/v split of a transformer's attention, with the contraction data-tiled).
// The start state computes the slice and the reshape as one value between dispatches and encodes it in the
// batch matmul's dispatch (or, hoisted, in an encode of its own); IREE's plan copies the slice in a
// dispatch of its own (ConvertTensorToFlowPass: a non-contiguous top-level extract_slice), reshapes the
// copy (flow.tensor.reshape) and encodes that (flow.tensor.encode). Conditions 1-3: a static slice, read
// by the set_encoding through a reshape between dispatches, of a dispatch's result.
// (With the hoist family too the set_encoding also moves into an encode of its own that reads the reshaped
// copy, IREE's spelling: dispatch{tensor.extract_slice} dispatch{tensor.expand_shape, iree_encoding.set_encoding}.)
// CHECK-LABEL: plans for @slice_reshaped_then_encoded: 2;
// CHECK-SAME:  slice-in-own-dispatch-before-reshape-for-set-encoding 1
// CHECK:       of @slice_reshaped_then_encoded: {{.*}} dispatch{tensor.extract_slice} dispatch{tensor.expand_shape, iree_encoding.set_encoding, iree_encoding.set_encoding, linalg.fill, linalg.batch_matmul, iree_encoding.unset_encoding}
// CHECK:       %[[V:.+]] = flow.dispatch.region -> (tensor<16x32xf32>) {
// CHECK-NEXT:    tensor.extract_slice %{{.*}}[0, 64] [16, 32] [1, 1] : tensor<16x96xf32> to tensor<16x32xf32>
// CHECK-NEXT:    flow.return
// CHECK:       flow.dispatch.region -> (tensor<2x8x16xf32>) {
// CHECK-NEXT:    tensor.expand_shape %[[V]] {{\[\[}}0, 1], [2]] output_shape [2, 8, 32] : tensor<16x32xf32> into tensor<2x8x32xf32>
// CHECK-NEXT:    iree_encoding.set_encoding
func.func @slice_reshaped_then_encoded(%x: tensor<16x32xf32>, %w: tensor<32x96xf32>, %b: tensor<2x32x16xf32>) -> tensor<2x8x16xf32> {
  %zero = arith.constant 0.0 : f32
  %acc_e = tensor.empty() : tensor<16x96xf32>
  %acc = linalg.fill ins(%zero : f32) outs(%acc_e : tensor<16x96xf32>) -> tensor<16x96xf32>
  %qkv = linalg.matmul ins(%x, %w : tensor<16x32xf32>, tensor<32x96xf32>) outs(%acc : tensor<16x96xf32>) -> tensor<16x96xf32>
  %v = tensor.extract_slice %qkv[0, 64] [16, 32] [1, 1] : tensor<16x96xf32> to tensor<16x32xf32>
  %vh = tensor.expand_shape %v [[0, 1], [2]] output_shape [2, 8, 32] : tensor<16x32xf32> into tensor<2x8x32xf32>
  %s_e = tensor.empty() : tensor<2x8x16xf32>
  %s0 = linalg.fill ins(%zero : f32) outs(%s_e : tensor<2x8x16xf32>) -> tensor<2x8x16xf32>
  %s = linalg.batch_matmul ins(%vh, %b : tensor<2x8x32xf32>, tensor<2x32x16xf32>) outs(%s0 : tensor<2x8x16xf32>) -> tensor<2x8x16xf32>
  return %s : tensor<2x8x16xf32>
}

// -----

// Condition 3: the slice's source an argument (a dispatch input, a buffer the copy reads); the copy's
// result is reshaped and encoded as above.
// CHECK-LABEL: plans for @slice_of_argument_reshaped_then_encoded: 2;
// CHECK-SAME:  slice-in-own-dispatch-before-reshape-for-set-encoding 1
// CHECK:       of @slice_of_argument_reshaped_then_encoded: dispatch{tensor.extract_slice} dispatch{tensor.expand_shape, iree_encoding.set_encoding, iree_encoding.set_encoding, linalg.fill, linalg.batch_matmul
func.func @slice_of_argument_reshaped_then_encoded(%qkv: tensor<16x96xf32>, %b: tensor<2x32x16xf32>) -> tensor<2x8x16xf32> {
  %zero = arith.constant 0.0 : f32
  %v = tensor.extract_slice %qkv[0, 64] [16, 32] [1, 1] : tensor<16x96xf32> to tensor<16x32xf32>
  %vh = tensor.expand_shape %v [[0, 1], [2]] output_shape [2, 8, 32] : tensor<16x32xf32> into tensor<2x8x32xf32>
  %s_e = tensor.empty() : tensor<2x8x16xf32>
  %s0 = linalg.fill ins(%zero : f32) outs(%s_e : tensor<2x8x16xf32>) -> tensor<2x8x16xf32>
  %s = linalg.batch_matmul ins(%vh, %b : tensor<2x8x32xf32>, tensor<2x32x16xf32>) outs(%s0 : tensor<2x8x16xf32>) -> tensor<2x8x16xf32>
  return %s : tensor<2x8x16xf32>
}

// -----

// Condition 2: the set_encoding reads the slice itself, no reshape between: the slice is cloned into the
// dispatch (or copied by rules/clone.egg's own rule), and this rule has nothing to give.
// CHECK-LABEL: plans for @dont_copy_slice_encoded_without_reshape: {{[0-9]+}};
// CHECK-NOT:   slice-in-own-dispatch-before-reshape-for-set-encoding
func.func @dont_copy_slice_encoded_without_reshape(%x: tensor<16x32xf32>, %w: tensor<32x96xf32>, %b: tensor<32x16xf32>) -> tensor<16x16xf32> {
  %zero = arith.constant 0.0 : f32
  %acc_e = tensor.empty() : tensor<16x96xf32>
  %acc = linalg.fill ins(%zero : f32) outs(%acc_e : tensor<16x96xf32>) -> tensor<16x96xf32>
  %qkv = linalg.matmul ins(%x, %w : tensor<16x32xf32>, tensor<32x96xf32>) outs(%acc : tensor<16x96xf32>) -> tensor<16x96xf32>
  %v = tensor.extract_slice %qkv[0, 64] [16, 32] [1, 1] : tensor<16x96xf32> to tensor<16x32xf32>
  %s_e = tensor.empty() : tensor<16x16xf32>
  %s0 = linalg.fill ins(%zero : f32) outs(%s_e : tensor<16x16xf32>) -> tensor<16x16xf32>
  %s = linalg.matmul ins(%v, %b : tensor<16x32xf32>, tensor<32x16xf32>) outs(%s0 : tensor<16x16xf32>) -> tensor<16x16xf32>
  return %s : tensor<16x16xf32>
}

// -----

// Condition 3: the slice's source is computed between the dispatches by an op the model does not see
// into, not read from a buffer: a dispatch of the slice would compute that op, not copy a slice.
// CHECK-LABEL: plans for @dont_copy_slice_of_computed_value_for_encoding: {{[0-9]+}};
// CHECK-NOT:   slice-in-own-dispatch-before-reshape-for-set-encoding
func.func @dont_copy_slice_of_computed_value_for_encoding(%a: tensor<16x96xf32>, %b: tensor<2x32x16xf32>) -> tensor<2x8x16xf32> {
  %zero = arith.constant 0.0 : f32
  %qkv = mydialect.opaque_scale %a : tensor<16x96xf32> -> tensor<16x96xf32>
  %v = tensor.extract_slice %qkv[0, 64] [16, 32] [1, 1] : tensor<16x96xf32> to tensor<16x32xf32>
  %vh = tensor.expand_shape %v [[0, 1], [2]] output_shape [2, 8, 32] : tensor<16x32xf32> into tensor<2x8x32xf32>
  %s_e = tensor.empty() : tensor<2x8x16xf32>
  %s0 = linalg.fill ins(%zero : f32) outs(%s_e : tensor<2x8x16xf32>) -> tensor<2x8x16xf32>
  %s = linalg.batch_matmul ins(%vh, %b : tensor<2x8x32xf32>, tensor<2x32x16xf32>) outs(%s0 : tensor<2x8x16xf32>) -> tensor<2x8x16xf32>
  return %s : tensor<2x8x16xf32>
}

// -----

// Condition 1: a slice at an offset read from an argument is a Slice too (its offset an operand of the
// copy dispatch, as ConvertTensorToFlowPass gives flow.tensor.slice its dynamic offsets): the copy is derived.
// CHECK-LABEL: plans for @dynamic_slice_reshaped_then_encoded: {{[0-9]+}};
// CHECK-SAME:  slice-in-own-dispatch-before-reshape-for-set-encoding 1
// CHECK:       %[[V:.+]] = flow.dispatch.region -> (tensor<16x32xf32>) {
// CHECK-NEXT:    tensor.extract_slice %arg0[0, %arg1] [16, 32] [1, 1] : tensor<16x96xf32> to tensor<16x32xf32>
// CHECK-NEXT:    flow.return
// CHECK:       tensor.expand_shape %[[V]]
func.func @dynamic_slice_reshaped_then_encoded(%qkv: tensor<16x96xf32>, %off: index, %b: tensor<2x32x16xf32>) -> tensor<2x8x16xf32> {
  %zero = arith.constant 0.0 : f32
  %v = tensor.extract_slice %qkv[0, %off] [16, 32] [1, 1] : tensor<16x96xf32> to tensor<16x32xf32>
  %vh = tensor.expand_shape %v [[0, 1], [2]] output_shape [2, 8, 32] : tensor<16x32xf32> into tensor<2x8x32xf32>
  %s_e = tensor.empty() : tensor<2x8x16xf32>
  %s0 = linalg.fill ins(%zero : f32) outs(%s_e : tensor<2x8x16xf32>) -> tensor<2x8x16xf32>
  %s = linalg.batch_matmul ins(%vh, %b : tensor<2x8x32xf32>, tensor<2x32x16xf32>) outs(%s0 : tensor<2x8x16xf32>) -> tensor<2x8x16xf32>
  return %s : tensor<2x8x16xf32>
}
