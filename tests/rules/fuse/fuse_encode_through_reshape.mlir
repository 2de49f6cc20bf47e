// RUN: egg-dispatch opt --split-input-file --rules fuse --target x86_64-avx2 %s | filecheck %s

// fuse_encode.egg conditions 1-2: a matmul's result, reshaped into heads (expand_shape) between two
// dispatches, feeds a batch matmul: the reshape moves into the matmul's dispatch with the batch
// matmul's set_encoding, which returns the encoded heads (IREE's plan of an attention block).
// CHECK-LABEL: plans for @fuse_encode_through_expand_shape: {{[2-9]|[1-9][0-9]}}; {{.*}}fuse-encode-through-reshape
// CHECK:       plan {{[0-9]+}} of @fuse_encode_through_expand_shape: {{.*}}linalg.matmul, iree_encoding.unset_encoding, tensor.expand_shape, iree_encoding.set_encoding}{{.*}}
// CHECK:         iree_encoding.unset_encoding %{{.*}} : tensor<8x16xf32, #encoding{{[0-9]*}}> -> tensor<8x16xf32>
// CHECK-NEXT:    tensor.expand_shape
// CHECK-NEXT:    iree_encoding.set_encoding
// CHECK-NEXT:    flow.return
func.func @fuse_encode_through_expand_shape(%x: tensor<8x16xf32>, %w: tensor<16x16xf32>, %v: tensor<2x16x8xf32>) -> tensor<2x4x8xf32> {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<8x16xf32>
  %acc = linalg.fill ins(%zero : f32) outs(%e : tensor<8x16xf32>) -> tensor<8x16xf32>
  %q = linalg.matmul ins(%x, %w : tensor<8x16xf32>, tensor<16x16xf32>) outs(%acc : tensor<8x16xf32>) -> tensor<8x16xf32>
  %heads = tensor.expand_shape %q [[0, 1], [2]] output_shape [2, 4, 16] : tensor<8x16xf32> into tensor<2x4x16xf32>
  %e2 = tensor.empty() : tensor<2x4x8xf32>
  %acc2 = linalg.fill ins(%zero : f32) outs(%e2 : tensor<2x4x8xf32>) -> tensor<2x4x8xf32>
  %r = linalg.batch_matmul ins(%heads, %v : tensor<2x4x16xf32>, tensor<2x16x8xf32>) outs(%acc2 : tensor<2x4x8xf32>) -> tensor<2x4x8xf32>
  return %r : tensor<2x4x8xf32>
}

// -----

// fuse_encode.egg condition 2: only reshapes are walked through: a bitcast between the dispatches is
// an op of its own (it reinterprets the elements), and the encode is not moved past it.
// CHECK-LABEL: plans for @dont_fuse_encode_through_a_bitcast:
// CHECK-NOT:   fuse-encode-through-reshape
// CHECK-NOT:   iree_encoding.unset_encoding, tensor.bitcast, iree_encoding.set_encoding}
func.func @dont_fuse_encode_through_a_bitcast(%x: tensor<8x16xi32>, %w: tensor<16x16xi32>, %v: tensor<16x8xf32>) -> tensor<8x8xf32> {
  %zero = arith.constant 0 : i32
  %e = tensor.empty() : tensor<8x16xi32>
  %acc = linalg.fill ins(%zero : i32) outs(%e : tensor<8x16xi32>) -> tensor<8x16xi32>
  %q = linalg.matmul ins(%x, %w : tensor<8x16xi32>, tensor<16x16xi32>) outs(%acc : tensor<8x16xi32>) -> tensor<8x16xi32>
  %c = tensor.bitcast %q : tensor<8x16xi32> to tensor<8x16xf32>
  %fz = arith.constant 0.0 : f32
  %e2 = tensor.empty() : tensor<8x8xf32>
  %acc2 = linalg.fill ins(%fz : f32) outs(%e2 : tensor<8x8xf32>) -> tensor<8x8xf32>
  %r = linalg.matmul ins(%c, %v : tensor<8x16xf32>, tensor<16x8xf32>) outs(%acc2 : tensor<8x8xf32>) -> tensor<8x8xf32>
  return %r : tensor<8x8xf32>
}

// -----

// fuse_encode.egg condition 3: the reshaped value is a bias add's result (an elementwise generic
// after the matmul, in its dispatch): the encode moves through the reshape into that dispatch, after
// the generic (IREE fuses through a reshape of any linalg op's result).
// CHECK-LABEL: plans for @fuse_encode_through_a_reshaped_bias_add: {{[2-9]|[1-9][0-9]}}; {{.*}}fuse-encode-through-reshape-lhs
// CHECK:       plan {{[0-9]+}} of @fuse_encode_through_a_reshaped_bias_add: dispatch{{{.*}}linalg.matmul, iree_encoding.unset_encoding, linalg.generic, tensor.expand_shape, iree_encoding.set_encoding} dispatch{iree_encoding.set_encoding, linalg.fill, linalg.batch_matmul
func.func @fuse_encode_through_a_reshaped_bias_add(%x: tensor<8x16xf32>, %w: tensor<16x16xf32>, %b: tensor<16xf32>, %v: tensor<2x16x8xf32>) -> tensor<2x4x8xf32> {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<8x16xf32>
  %acc = linalg.fill ins(%zero : f32) outs(%e : tensor<8x16xf32>) -> tensor<8x16xf32>
  %q = linalg.matmul ins(%x, %w : tensor<8x16xf32>, tensor<16x16xf32>) outs(%acc : tensor<8x16xf32>) -> tensor<8x16xf32>
  %qb = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d1)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]} ins(%q, %b : tensor<8x16xf32>, tensor<16xf32>) outs(%e : tensor<8x16xf32>) {
  ^bb0(%a: f32, %c: f32, %o: f32):
    %s = arith.addf %a, %c : f32
    linalg.yield %s : f32
  } -> tensor<8x16xf32>
  %heads = tensor.expand_shape %qb [[0, 1], [2]] output_shape [2, 4, 16] : tensor<8x16xf32> into tensor<2x4x16xf32>
  %e2 = tensor.empty() : tensor<2x4x8xf32>
  %acc2 = linalg.fill ins(%zero : f32) outs(%e2 : tensor<2x4x8xf32>) -> tensor<2x4x8xf32>
  %r = linalg.batch_matmul ins(%heads, %v : tensor<2x4x16xf32>, tensor<2x16x8xf32>) outs(%acc2 : tensor<2x4x8xf32>) -> tensor<2x4x8xf32>
  return %r : tensor<2x4x8xf32>
}

// -----

// fuse_encode_linalg.egg condition 1: a reduction's result (a row sum) is walked through too, as
// isFusableWithSetEncoding accepts any linalg op: IREE's plan (iree-compile 3.13, checked) computes the
// row sum, the expand_shape and the set_encoding in one dispatch that returns the encoded LHS.
// CHECK-LABEL: plans for @fuse_encode_through_a_reshaped_row_sum: 3; {{.*}}fuse-encode-through-reshape-lhs
// CHECK:       of @fuse_encode_through_a_reshaped_row_sum: dispatch{linalg.fill, linalg.generic, tensor.expand_shape, iree_encoding.set_encoding} dispatch{
func.func @fuse_encode_through_a_reshaped_row_sum(%x: tensor<8x16x4xf32>, %v: tensor<2x16x8xf32>) -> tensor<2x4x8xf32> {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<8x16xf32>
  %acc = linalg.fill ins(%zero : f32) outs(%e : tensor<8x16xf32>) -> tensor<8x16xf32>
  %q = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2) -> (d0, d1, d2)>, affine_map<(d0, d1, d2) -> (d0, d1)>], iterator_types = ["parallel", "parallel", "reduction"]} ins(%x : tensor<8x16x4xf32>) outs(%acc : tensor<8x16xf32>) {
  ^bb0(%a: f32, %o: f32):
    %s = arith.addf %a, %o : f32
    linalg.yield %s : f32
  } -> tensor<8x16xf32>
  %heads = tensor.expand_shape %q [[0, 1], [2]] output_shape [2, 4, 16] : tensor<8x16xf32> into tensor<2x4x16xf32>
  %e2 = tensor.empty() : tensor<2x4x8xf32>
  %acc2 = linalg.fill ins(%zero : f32) outs(%e2 : tensor<2x4x8xf32>) -> tensor<2x4x8xf32>
  %r = linalg.batch_matmul ins(%heads, %v : tensor<2x4x16xf32>, tensor<2x16x8xf32>) outs(%acc2 : tensor<2x4x8xf32>) -> tensor<2x4x8xf32>
  return %r : tensor<2x4x8xf32>
}

// -----

// fuse_encode.egg condition 3: the reshaped value is an attention op's result (a decode step: one
// query per head, the heads [4, 8] expanded to [1, 1, 4, 8] and collapsed to [1, 1, 32] for o_proj):
// isFusableWithSetEncoding accepts an attention op as the set_encoding's producer, and IREE's plan
// (iree-compile 3.13, checked) computes the attention, both reshapes and the set_encoding in one
// dispatch that returns the encoded LHS.
// CHECK-LABEL: plans for @fuse_encode_through_a_reshaped_attention: 3; {{.*}}fuse-encode-through-reshape-lhs
// CHECK:       plan 2 of @fuse_encode_through_a_reshaped_attention: dispatch{iree_linalg_ext.attention, tensor.expand_shape, tensor.collapse_shape, iree_encoding.set_encoding} dispatch{
// CHECK:         iree_linalg_ext.attention
// CHECK:         tensor.expand_shape %{{.*}} {{\[\[}}0, 1, 2], [3]] output_shape [1, 1, 4, 8]
// CHECK-NEXT:    tensor.collapse_shape %{{.*}} {{\[\[}}0], [1], [2, 3]]
// CHECK-NEXT:    iree_encoding.set_encoding %{{.*}} : tensor<1x1x32xf32> -> tensor<1x1x32xf32, #encoding
// CHECK-NEXT:    flow.return
func.func @fuse_encode_through_a_reshaped_attention(%q: tensor<4x8xf32>, %k: tensor<4x16x8xf32>, %v: tensor<4x8x16xf32>, %w: tensor<1x32x16xf32>) -> tensor<1x1x16xf32> {
  %scale = arith.constant 0.125 : f32
  %e = tensor.empty() : tensor<4x8xf32>
  %a = iree_linalg_ext.attention <indexing_maps = [affine_map<(d0, d1, d2, d3) -> (d0, d2)>, affine_map<(d0, d1, d2, d3) -> (d0, d3, d2)>, affine_map<(d0, d1, d2, d3) -> (d0, d1, d3)>, affine_map<(d0, d1, d2, d3) -> ()>, affine_map<(d0, d1, d2, d3) -> (d0, d1)>]> ins(%q, %k, %v, %scale : tensor<4x8xf32>, tensor<4x16x8xf32>, tensor<4x8x16xf32>, f32) outs(%e : tensor<4x8xf32>) {
  ^bb0(%s: f32):
    iree_linalg_ext.yield %s : f32
  } -> tensor<4x8xf32>
  %x = tensor.expand_shape %a [[0, 1, 2], [3]] output_shape [1, 1, 4, 8] : tensor<4x8xf32> into tensor<1x1x4x8xf32>
  %y = tensor.collapse_shape %x [[0], [1], [2, 3]] : tensor<1x1x4x8xf32> into tensor<1x1x32xf32>
  %zero = arith.constant 0.0 : f32
  %e2 = tensor.empty() : tensor<1x1x16xf32>
  %acc = linalg.fill ins(%zero : f32) outs(%e2 : tensor<1x1x16xf32>) -> tensor<1x1x16xf32>
  %r = linalg.batch_matmul ins(%y, %w : tensor<1x1x32xf32>, tensor<1x32x16xf32>) outs(%acc : tensor<1x1x16xf32>) -> tensor<1x1x16xf32>
  return %r : tensor<1x1x16xf32>
}

// -----

// fuse_encode.egg condition 3: an op the check does not list (linalg.softmax left whole: not a linalg
// structured op, not attention or gather) is not walked through: the encode stays out of its dispatch.
// CHECK-LABEL: plans for @dont_fuse_encode_through_a_reshaped_softmax: 2;
// CHECK-NOT:   fuse-encode-through-reshape
// CHECK-NOT:   linalg.softmax, tensor.expand_shape
func.func @dont_fuse_encode_through_a_reshaped_softmax(%s: tensor<4x8xf32>, %w: tensor<1x32x16xf32>) -> tensor<1x1x16xf32> {
  %e = tensor.empty() : tensor<4x8xf32>
  %a = linalg.softmax dimension(1) ins(%s : tensor<4x8xf32>) outs(%e : tensor<4x8xf32>) -> tensor<4x8xf32>
  %x = tensor.expand_shape %a [[0, 1, 2], [3]] output_shape [1, 1, 4, 8] : tensor<4x8xf32> into tensor<1x1x4x8xf32>
  %y = tensor.collapse_shape %x [[0], [1], [2, 3]] : tensor<1x1x4x8xf32> into tensor<1x1x32xf32>
  %zero = arith.constant 0.0 : f32
  %e2 = tensor.empty() : tensor<1x1x16xf32>
  %acc = linalg.fill ins(%zero : f32) outs(%e2 : tensor<1x1x16xf32>) -> tensor<1x1x16xf32>
  %r = linalg.batch_matmul ins(%y, %w : tensor<1x1x32xf32>, tensor<1x32x16xf32>) outs(%acc : tensor<1x1x16xf32>) -> tensor<1x1x16xf32>
  return %r : tensor<1x1x16xf32>
}
