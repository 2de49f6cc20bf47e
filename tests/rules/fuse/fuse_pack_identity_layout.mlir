// RUN: egg-dispatch opt --split-input-file --rules fuse --target none %s | filecheck %s

// Condition 4: the program of fuse_pack.mlir's first case (both operands encoded by
// flow.tensor.encode), on target none: every layout is the identity, there is no pack to fuse back
// (on x86_64-avx2 there are 4 plans).
// CHECK-LABEL: plans for @dont_fuse_pack_identity_layout: 1; {{.*}} rule matches: none
#map = affine_map<(d0, d1, d2) -> (d0, d2)>
#map1 = affine_map<(d0, d1, d2) -> (d1, d2)>
#map2 = affine_map<(d0, d1, d2) -> (d0, d1)>
#lhs = #iree_encoding.encoding<operand_index = 0 : index, op_type = matmul, element_types = [f32, f32, f32], user_indexing_maps = [#map, #map1, #map2], iteration_sizes = [8, 8, 8]>
#rhs = #iree_encoding.encoding<operand_index = 1 : index, op_type = matmul, element_types = [f32, f32, f32], user_indexing_maps = [#map, #map1, #map2], iteration_sizes = [8, 8, 8]>
#out = #iree_encoding.encoding<operand_index = 2 : index, op_type = matmul, element_types = [f32, f32, f32], user_indexing_maps = [#map, #map1, #map2], iteration_sizes = [8, 8, 8]>
func.func @dont_fuse_pack_identity_layout(%lhs: tensor<8x8xf32>, %rhs: tensor<8x8xf32>) -> tensor<8x8xf32> {
  %l = flow.tensor.encode %lhs : tensor<8x8xf32> -> tensor<8x8xf32, #lhs>
  %r = flow.tensor.encode %rhs : tensor<8x8xf32> -> tensor<8x8xf32, #rhs>
  %0 = flow.dispatch.region -> (tensor<8x8xf32>) {
    %zero = arith.constant 0.0 : f32
    %e = tensor.empty() : tensor<8x8xf32, #out>
    %f = linalg.fill ins(%zero : f32) outs(%e : tensor<8x8xf32, #out>) -> tensor<8x8xf32, #out>
    %m = linalg.matmul indexing_maps = [#map, #map1, #map2] ins(%l, %r : tensor<8x8xf32, #lhs>, tensor<8x8xf32, #rhs>) outs(%f : tensor<8x8xf32, #out>) -> tensor<8x8xf32, #out>
    %u = iree_encoding.unset_encoding %m : tensor<8x8xf32, #out> -> tensor<8x8xf32>
    flow.return %u : tensor<8x8xf32>
  }
  return %0 : tensor<8x8xf32>
}
