// RUN: egg-dispatch opt --split-input-file --rules fuse --target x86_64-avx2 %s | filecheck %s

// Condition 1: attention written with generic contractions, its heads collapsed for the output projection
// (probabilities [2, 16, 16] times V [16, 2, 24] into [16, 2, 24], then [16, 48]): the contraction
// generic's dispatch also collapses and encodes the projection's LHS, as IREE's plan of such a model does
// (benchmarks/random_models.py, attention="generic" with GQA; iree-compile 3.13: the collapse_shape and
// the set_encoding in the contraction's dispatch, which returns the encoded LHS).
// CHECK-LABEL: plans for @fuse_encode_through_a_collapsed_generic_contraction: {{[0-9]+}}; {{.*}}fuse-encode-through-reshape-lhs
// CHECK:       of @fuse_encode_through_a_collapsed_generic_contraction: dispatch{linalg.fill, linalg.generic, tensor.collapse_shape, iree_encoding.set_encoding} dispatch{
// CHECK:         linalg.generic
// CHECK-NEXT:    ^bb0
// CHECK:         tensor.collapse_shape %{{.*}} {{\[\[}}0], [1, 2]] : tensor<16x2x24xf32> into tensor<16x48xf32>
// CHECK-NEXT:    iree_encoding.set_encoding %{{.*}} : tensor<16x48xf32> -> tensor<16x48xf32, #encoding
// CHECK-NEXT:    flow.return
func.func @fuse_encode_through_a_collapsed_generic_contraction(%p: tensor<2x16x16xf32>, %v: tensor<16x24xf32>, %w: tensor<48x32xf32>) -> tensor<16x32xf32> {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<16x2x24xf32>
  %acc = linalg.fill ins(%zero : f32) outs(%e : tensor<16x2x24xf32>) -> tensor<16x2x24xf32>
  %ctx = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2, d3) -> (d1, d0, d3)>, affine_map<(d0, d1, d2, d3) -> (d3, d2)>, affine_map<(d0, d1, d2, d3) -> (d0, d1, d2)>], iterator_types = ["parallel", "parallel", "parallel", "reduction"]} ins(%p, %v : tensor<2x16x16xf32>, tensor<16x24xf32>) outs(%acc : tensor<16x2x24xf32>) {
  ^bb0(%a: f32, %b: f32, %o: f32):
    %m = arith.mulf %a, %b : f32
    %s = arith.addf %o, %m : f32
    linalg.yield %s : f32
  } -> tensor<16x2x24xf32>
  %merged = tensor.collapse_shape %ctx [[0], [1, 2]] : tensor<16x2x24xf32> into tensor<16x48xf32>
  %e2 = tensor.empty() : tensor<16x32xf32>
  %acc2 = linalg.fill ins(%zero : f32) outs(%e2 : tensor<16x32xf32>) -> tensor<16x32xf32>
  %r = linalg.matmul ins(%merged, %w : tensor<16x48xf32>, tensor<48x32xf32>) outs(%acc2 : tensor<16x32xf32>) -> tensor<16x32xf32>
  return %r : tensor<16x32xf32>
}

// -----

// Condition 1: an op that is no linalg.generic (linalg.softmax left whole, not a linalg structured op, in
// a dispatch of its own) is not walked through: the encode of its collapsed result stays out of its dispatch.
// CHECK-LABEL: plans for @dont_fuse_encode_through_a_collapsed_softmax: 2;
// CHECK-NOT:   fuse-encode-through-reshape
// CHECK-NOT:   linalg.softmax, tensor.collapse_shape
func.func @dont_fuse_encode_through_a_collapsed_softmax(%x: tensor<16x2x24xf32>, %w: tensor<48x32xf32>) -> tensor<16x32xf32> {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<16x2x24xf32>
  %y = linalg.softmax dimension(2) ins(%x : tensor<16x2x24xf32>) outs(%e : tensor<16x2x24xf32>) -> tensor<16x2x24xf32>
  %merged = tensor.collapse_shape %y [[0], [1, 2]] : tensor<16x2x24xf32> into tensor<16x48xf32>
  %e2 = tensor.empty() : tensor<16x32xf32>
  %acc2 = linalg.fill ins(%zero : f32) outs(%e2 : tensor<16x32xf32>) -> tensor<16x32xf32>
  %r = linalg.matmul ins(%merged, %w : tensor<16x48xf32>, tensor<48x32xf32>) outs(%acc2 : tensor<16x32xf32>) -> tensor<16x32xf32>
  return %r : tensor<16x32xf32>
}
