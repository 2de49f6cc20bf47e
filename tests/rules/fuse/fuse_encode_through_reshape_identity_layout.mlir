// RUN: egg-dispatch opt --split-input-file --rules fuse --target none %s | filecheck %s

// fuse_encode.egg conditions 1-3 hold whatever the layout: the bias add of
// fuse_encode_through_reshape.mlir on target none, where every layout is the identity. IREE's
// FuseEncodingOpsIntoDispatchRegions runs before the encodings are materialized, so it moves the
// expand_shape and the encode into the generic's dispatch there too (plans 4 and 5: the generic in the
// matmul's dispatch or in one of its own). With `noop` as well the encodes fold away and that dispatch
// returns the bias add reshaped (tests/test_new_forms_compute_the_program.py evaluates those plans).
// CHECK-LABEL: plans for @fuse_encode_through_reshape_identity_layout: 6;
// CHECK-SAME:  fuse-encode-through-reshape-lhs 1
// CHECK:       plan 0 of {{.*}}: dispatch{{{.*}}linalg.matmul, iree_encoding.unset_encoding, linalg.generic} tensor.expand_shape dispatch{
// CHECK:       plan 4 of {{.*}}: dispatch{{{.*}}linalg.matmul, iree_encoding.unset_encoding, linalg.generic, tensor.expand_shape, iree_encoding.set_encoding} dispatch{
// CHECK:       %[[D:.+]] = flow.dispatch.region -> (tensor<2x4x16xf32, #{{.+}}>) {
// CHECK:         linalg.generic
// CHECK:         %[[X:.+]] = tensor.expand_shape {{.*}} into tensor<2x4x16xf32>
// CHECK-NEXT:    %[[E:.+]] = iree_encoding.set_encoding %[[X]]
// CHECK-NEXT:    flow.return %[[E]]
// CHECK:       plan 5 of {{.*}}: dispatch{{{.*}}linalg.matmul, iree_encoding.unset_encoding} dispatch{linalg.generic, tensor.expand_shape, iree_encoding.set_encoding} dispatch{
func.func @fuse_encode_through_reshape_identity_layout(%x: tensor<8x16xf32>, %w: tensor<16x16xf32>, %b: tensor<16xf32>, %v: tensor<2x16x8xf32>) -> tensor<2x4x8xf32> {
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
