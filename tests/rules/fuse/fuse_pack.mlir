// RUN: egg-dispatch opt --split-input-file --rules fuse --target x86_64-avx2 %s | filecheck %s

// Both operands arrive encoded by flow.tensor.encode; with 8x8 operands and 8x1 tiles the pack
// can be fused back into the matmul's dispatch (tiles divide, 256 B on the stack).
// CHECK-LABEL: plans for @fuse_pack_into_contraction: {{[2-9]}}
// CHECK:       of @fuse_pack_into_contraction: encode dispatch{iree_encoding.set_encoding, linalg.fill,
// CHECK:       iree_encoding.set_encoding %arg0
#map = affine_map<(d0, d1, d2) -> (d0, d2)>
#map1 = affine_map<(d0, d1, d2) -> (d1, d2)>
#map2 = affine_map<(d0, d1, d2) -> (d0, d1)>
#lhs = #iree_encoding.encoding<operand_index = 0 : index, op_type = matmul, element_types = [f32, f32, f32], user_indexing_maps = [#map, #map1, #map2], iteration_sizes = [8, 8, 8]>
#rhs = #iree_encoding.encoding<operand_index = 1 : index, op_type = matmul, element_types = [f32, f32, f32], user_indexing_maps = [#map, #map1, #map2], iteration_sizes = [8, 8, 8]>
#out = #iree_encoding.encoding<operand_index = 2 : index, op_type = matmul, element_types = [f32, f32, f32], user_indexing_maps = [#map, #map1, #map2], iteration_sizes = [8, 8, 8]>
func.func @fuse_pack_into_contraction(%lhs: tensor<8x8xf32>, %rhs: tensor<8x8xf32>) -> tensor<8x8xf32> {
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

// -----

// Condition 1: 12 rows are not a multiple of the 8-row tile, so the LHS pack cannot be fused
// into the mmt4d dispatch (the 16x8 RHS can).
// CHECK-LABEL: plans for @dont_fuse_pack_not_divisible: {{[1-9]}}
// CHECK-NOT:   iree_encoding.set_encoding %arg0
#map = affine_map<(d0, d1, d2) -> (d0, d2)>
#map1 = affine_map<(d0, d1, d2) -> (d1, d2)>
#map2 = affine_map<(d0, d1, d2) -> (d0, d1)>
#lhs = #iree_encoding.encoding<operand_index = 0 : index, op_type = matmul, element_types = [f32, f32, f32], user_indexing_maps = [#map, #map1, #map2], iteration_sizes = [12, 16, 8]>
#rhs = #iree_encoding.encoding<operand_index = 1 : index, op_type = matmul, element_types = [f32, f32, f32], user_indexing_maps = [#map, #map1, #map2], iteration_sizes = [12, 16, 8]>
#out = #iree_encoding.encoding<operand_index = 2 : index, op_type = matmul, element_types = [f32, f32, f32], user_indexing_maps = [#map, #map1, #map2], iteration_sizes = [12, 16, 8]>
func.func @dont_fuse_pack_not_divisible(%lhs: tensor<12x8xf32>, %rhs: tensor<16x8xf32>) -> tensor<12x16xf32> {
  %l = flow.tensor.encode %lhs : tensor<12x8xf32> -> tensor<12x8xf32, #lhs>
  %r = flow.tensor.encode %rhs : tensor<16x8xf32> -> tensor<16x8xf32, #rhs>
  %0 = flow.dispatch.region -> (tensor<12x16xf32>) {
    %zero = arith.constant 0.0 : f32
    %e = tensor.empty() : tensor<12x16xf32, #out>
    %f = linalg.fill ins(%zero : f32) outs(%e : tensor<12x16xf32, #out>) -> tensor<12x16xf32, #out>
    %m = linalg.matmul indexing_maps = [#map, #map1, #map2] ins(%l, %r : tensor<12x8xf32, #lhs>, tensor<16x8xf32, #rhs>) outs(%f : tensor<12x16xf32, #out>) -> tensor<12x16xf32, #out>
    %u = iree_encoding.unset_encoding %m : tensor<12x16xf32, #out> -> tensor<12x16xf32>
    flow.return %u : tensor<12x16xf32>
  }
  return %0 : tensor<12x16xf32>
}

// -----

// Condition 2: a 256x256 f32 operand packs into 256 KiB, over the 32 KiB stack limit
// (IREE: 'exceeded stack allocation limit of 32768 bytes').
// CHECK-LABEL: plans for @dont_fuse_pack_over_stack_limit: {{[1-9]}}
// CHECK-NOT:   iree_encoding.set_encoding %arg0
#map = affine_map<(d0, d1, d2) -> (d0, d2)>
#map1 = affine_map<(d0, d1, d2) -> (d1, d2)>
#map2 = affine_map<(d0, d1, d2) -> (d0, d1)>
#lhs = #iree_encoding.encoding<operand_index = 0 : index, op_type = matmul, element_types = [f32, f32, f32], user_indexing_maps = [#map, #map1, #map2], iteration_sizes = [256, 8, 256]>
#rhs = #iree_encoding.encoding<operand_index = 1 : index, op_type = matmul, element_types = [f32, f32, f32], user_indexing_maps = [#map, #map1, #map2], iteration_sizes = [256, 8, 256]>
#out = #iree_encoding.encoding<operand_index = 2 : index, op_type = matmul, element_types = [f32, f32, f32], user_indexing_maps = [#map, #map1, #map2], iteration_sizes = [256, 8, 256]>
func.func @dont_fuse_pack_over_stack_limit(%lhs: tensor<256x256xf32>, %rhs: tensor<8x256xf32>) -> tensor<256x8xf32> {
  %l = flow.tensor.encode %lhs : tensor<256x256xf32> -> tensor<256x256xf32, #lhs>
  %r = flow.tensor.encode %rhs : tensor<8x256xf32> -> tensor<8x256xf32, #rhs>
  %0 = flow.dispatch.region -> (tensor<256x8xf32>) {
    %zero = arith.constant 0.0 : f32
    %e = tensor.empty() : tensor<256x8xf32, #out>
    %f = linalg.fill ins(%zero : f32) outs(%e : tensor<256x8xf32, #out>) -> tensor<256x8xf32, #out>
    %m = linalg.matmul indexing_maps = [#map, #map1, #map2] ins(%l, %r : tensor<256x256xf32, #lhs>, tensor<8x256xf32, #rhs>) outs(%f : tensor<256x8xf32, #out>) -> tensor<256x8xf32, #out>
    %u = iree_encoding.unset_encoding %m : tensor<256x8xf32, #out> -> tensor<256x8xf32>
    flow.return %u : tensor<256x8xf32>
  }
  return %0 : tensor<256x8xf32>
}
