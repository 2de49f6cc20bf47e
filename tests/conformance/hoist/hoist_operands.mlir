// HoistEncodingOps (HoistEncodingOps.cpp, HoistableSetEncoding): a set_encoding of a value defined
// outside the dispatch moves out of it, for every operand of the contraction.
// EXPECT: in
#map = affine_map<(d0, d1, d2) -> (d0, d2)>
#map1 = affine_map<(d0, d1, d2) -> (d2, d1)>
#map2 = affine_map<(d0, d1, d2) -> (d0, d1)>
#lhs = #iree_encoding.encoding<operand_index = 0 : index, op_type = matmul, element_types = [f32, f32, f32], user_indexing_maps = [#map, #map1, #map2], iteration_sizes = [8, 32, 16]>
#rhs = #iree_encoding.encoding<operand_index = 1 : index, op_type = matmul, element_types = [f32, f32, f32], user_indexing_maps = [#map, #map1, #map2], iteration_sizes = [8, 32, 16]>
#out = #iree_encoding.encoding<operand_index = 2 : index, op_type = matmul, element_types = [f32, f32, f32], user_indexing_maps = [#map, #map1, #map2], iteration_sizes = [8, 32, 16]>
util.func public @hoist_both_argument_encodings(%a: tensor<8x16xf32>, %b: tensor<16x32xf32>) -> tensor<8x32xf32> {
  %0 = flow.dispatch.region -> (tensor<8x32xf32>) {
    %l = iree_encoding.set_encoding %a : tensor<8x16xf32> -> tensor<8x16xf32, #lhs>
    %r = iree_encoding.set_encoding %b : tensor<16x32xf32> -> tensor<16x32xf32, #rhs>
    %zero = arith.constant 0.0 : f32
    %e = tensor.empty() : tensor<8x32xf32, #out>
    %f = linalg.fill ins(%zero : f32) outs(%e : tensor<8x32xf32, #out>) -> tensor<8x32xf32, #out>
    %m = linalg.matmul indexing_maps = [#map, #map1, #map2] ins(%l, %r : tensor<8x16xf32, #lhs>, tensor<16x32xf32, #rhs>) outs(%f : tensor<8x32xf32, #out>) -> tensor<8x32xf32, #out>
    %u = iree_encoding.unset_encoding %m : tensor<8x32xf32, #out> -> tensor<8x32xf32>
    flow.return %u : tensor<8x32xf32>
  }
  util.return %0 : tensor<8x32xf32>
}

// -----

// The same for a batch matmul: both operand encodings leave the dispatch.
// EXPECT: in
#map = affine_map<(d0, d1, d2, d3) -> (d0, d1, d3)>
#map1 = affine_map<(d0, d1, d2, d3) -> (d0, d3, d2)>
#map2 = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2)>
#lhs = #iree_encoding.encoding<operand_index = 0 : index, op_type = matmul, element_types = [f32, f32, f32], user_indexing_maps = [#map, #map1, #map2], iteration_sizes = [2, 8, 16, 32]>
#rhs = #iree_encoding.encoding<operand_index = 1 : index, op_type = matmul, element_types = [f32, f32, f32], user_indexing_maps = [#map, #map1, #map2], iteration_sizes = [2, 8, 16, 32]>
#out = #iree_encoding.encoding<operand_index = 2 : index, op_type = matmul, element_types = [f32, f32, f32], user_indexing_maps = [#map, #map1, #map2], iteration_sizes = [2, 8, 16, 32]>
util.func public @hoist_batch_matmul_encodings(%a: tensor<2x8x32xf32>, %b: tensor<2x32x16xf32>) -> tensor<2x8x16xf32> {
  %0 = flow.dispatch.region -> (tensor<2x8x16xf32>) {
    %l = iree_encoding.set_encoding %a : tensor<2x8x32xf32> -> tensor<2x8x32xf32, #lhs>
    %r = iree_encoding.set_encoding %b : tensor<2x32x16xf32> -> tensor<2x32x16xf32, #rhs>
    %zero = arith.constant 0.0 : f32
    %e = tensor.empty() : tensor<2x8x16xf32, #out>
    %f = linalg.fill ins(%zero : f32) outs(%e : tensor<2x8x16xf32, #out>) -> tensor<2x8x16xf32, #out>
    %m = linalg.batch_matmul indexing_maps = [#map, #map1, #map2] ins(%l, %r : tensor<2x8x32xf32, #lhs>, tensor<2x32x16xf32, #rhs>) outs(%f : tensor<2x8x16xf32, #out>) -> tensor<2x8x16xf32, #out>
    %u = iree_encoding.unset_encoding %m : tensor<2x8x16xf32, #out> -> tensor<2x8x16xf32>
    flow.return %u : tensor<2x8x16xf32>
  }
  util.return %0 : tensor<2x8x16xf32>
}
