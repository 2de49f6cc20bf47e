// RUN: egg-dispatch opt --split-input-file --rules fuse --target x86_64-avx2 %s | filecheck %s

// Conditions 1-2 for every size: the LHS has a dynamic row count that nothing bounds, so neither
// "the 8-row tiles divide it" nor "its packed buffer fits the 32 KiB stack" holds for every size
// (13 rows need padding; 4096 rows are 128 KiB): the pack is not fused back into the dispatch.
// CHECK-LABEL: plans for @dont_fuse_pack_unbounded_dynamic_rows: 1;
// CHECK-NOT:   iree_encoding.set_encoding %arg0
#map = affine_map<(d0, d1, d2) -> (d0, d2)>
#map1 = affine_map<(d0, d1, d2) -> (d1, d2)>
#map2 = affine_map<(d0, d1, d2) -> (d0, d1)>
#lhs = #iree_encoding.encoding<operand_index = 0 : index, op_type = matmul, element_types = [f32, f32, f32], user_indexing_maps = [#map, #map1, #map2], iteration_sizes = [?, 8, 8]>
#rhs = #iree_encoding.encoding<operand_index = 1 : index, op_type = matmul, element_types = [f32, f32, f32], user_indexing_maps = [#map, #map1, #map2], iteration_sizes = [?, 8, 8]>
#out = #iree_encoding.encoding<operand_index = 2 : index, op_type = matmul, element_types = [f32, f32, f32], user_indexing_maps = [#map, #map1, #map2], iteration_sizes = [?, 8, 8]>
func.func @dont_fuse_pack_unbounded_dynamic_rows(%lhs: tensor<?x8xf32>, %rhs: tensor<8x8xf32>) -> tensor<?x8xf32> {
  %c0 = arith.constant 0 : index
  %m = tensor.dim %lhs, %c0 : tensor<?x8xf32>
  %l = flow.tensor.encode %lhs : tensor<?x8xf32>{%m} -> tensor<?x8xf32, #lhs>{%m}
  %r = flow.tensor.encode %rhs : tensor<8x8xf32> -> tensor<8x8xf32, #rhs>
  %0 = flow.dispatch.region -> (tensor<?x8xf32>{%m}) {
    %zero = arith.constant 0.0 : f32
    %e = tensor.empty(%m) : tensor<?x8xf32, #out>
    %f = linalg.fill ins(%zero : f32) outs(%e : tensor<?x8xf32, #out>) -> tensor<?x8xf32, #out>
    %mm = linalg.matmul indexing_maps = [#map, #map1, #map2] ins(%l, %r : tensor<?x8xf32, #lhs>, tensor<8x8xf32, #rhs>) outs(%f : tensor<?x8xf32, #out>) -> tensor<?x8xf32, #out>
    %u = iree_encoding.unset_encoding %mm encoding_dims{%m} : tensor<?x8xf32, #out> -> tensor<?x8xf32>{%m}
    flow.return %u : tensor<?x8xf32>
  }
  return %0 : tensor<?x8xf32>
}

// -----

// The same with util.assume.int bounding the rows to multiples of 8 up to 64: the tiles divide every
// allowed size and the largest packed buffers (64x8 LHS, 64x8 accumulator: 4 KiB) fit, so the pack
// can be fused back (the RHS's too).
// CHECK-LABEL: plans for @fuse_pack_dynamic_rows_bounded_by_assume: 4;
// CHECK:       iree_encoding.set_encoding %arg0 encoding_dims{%{{.*}}} : tensor<?x8xf32>
#map = affine_map<(d0, d1, d2) -> (d0, d2)>
#map1 = affine_map<(d0, d1, d2) -> (d1, d2)>
#map2 = affine_map<(d0, d1, d2) -> (d0, d1)>
#lhs = #iree_encoding.encoding<operand_index = 0 : index, op_type = matmul, element_types = [f32, f32, f32], user_indexing_maps = [#map, #map1, #map2], iteration_sizes = [?, 8, 8]>
#rhs = #iree_encoding.encoding<operand_index = 1 : index, op_type = matmul, element_types = [f32, f32, f32], user_indexing_maps = [#map, #map1, #map2], iteration_sizes = [?, 8, 8]>
#out = #iree_encoding.encoding<operand_index = 2 : index, op_type = matmul, element_types = [f32, f32, f32], user_indexing_maps = [#map, #map1, #map2], iteration_sizes = [?, 8, 8]>
func.func @fuse_pack_dynamic_rows_bounded_by_assume(%lhs: tensor<?x8xf32>, %rhs: tensor<8x8xf32>) -> tensor<?x8xf32> {
  %c0 = arith.constant 0 : index
  %d = tensor.dim %lhs, %c0 : tensor<?x8xf32>
  %m = util.assume.int %d<umin = 8, umax = 64, udiv = 8> : index
  %l = flow.tensor.encode %lhs : tensor<?x8xf32>{%m} -> tensor<?x8xf32, #lhs>{%m}
  %r = flow.tensor.encode %rhs : tensor<8x8xf32> -> tensor<8x8xf32, #rhs>
  %0 = flow.dispatch.region -> (tensor<?x8xf32>{%m}) {
    %zero = arith.constant 0.0 : f32
    %e = tensor.empty(%m) : tensor<?x8xf32, #out>
    %f = linalg.fill ins(%zero : f32) outs(%e : tensor<?x8xf32, #out>) -> tensor<?x8xf32, #out>
    %mm = linalg.matmul indexing_maps = [#map, #map1, #map2] ins(%l, %r : tensor<?x8xf32, #lhs>, tensor<8x8xf32, #rhs>) outs(%f : tensor<?x8xf32, #out>) -> tensor<?x8xf32, #out>
    %u = iree_encoding.unset_encoding %mm encoding_dims{%m} : tensor<?x8xf32, #out> -> tensor<?x8xf32>{%m}
    flow.return %u : tensor<?x8xf32>
  }
  return %0 : tensor<?x8xf32>
}
