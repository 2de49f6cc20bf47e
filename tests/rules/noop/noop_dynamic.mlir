// RUN: egg-dispatch opt --split-input-file --rules noop --target x86_64-avx2 %s | filecheck %s

// Dynamic shapes. The unset_encoding of a matmul result (8x8 tiles on M, N; narrow-N swapped) and the
// set_encoding as the next matmul's LHS (8x1 on M, K) have different layouts whatever the row count is
// (the tiles depend on the encodings' '?' iteration sizes, not on the value): the pair does not cancel.
// CHECK-LABEL: plans for @dont_cancel_dynamic_mismatched_layouts: 1; {{.*}} rule matches: none
// CHECK:       iree_encoding.unset_encoding %arg0 encoding_dims{%[[D:.+]]} : tensor<?x8xf32, #encoding{{[0-9]*}}> -> tensor<?x8xf32>{%[[D]]}
// CHECK:       iree_encoding.set_encoding
#map = affine_map<(d0, d1, d2) -> (d0, d2)>
#map1 = affine_map<(d0, d1, d2) -> (d1, d2)>
#map2 = affine_map<(d0, d1, d2) -> (d0, d1)>
#out = #iree_encoding.encoding<operand_index = 2 : index, op_type = matmul, element_types = [f32, f32, f32], user_indexing_maps = [#map, #map1, #map2], iteration_sizes = [?, 8, 8]>
#lhs2 = #iree_encoding.encoding<operand_index = 0 : index, op_type = matmul, element_types = [f32, f32, f32], user_indexing_maps = [#map, #map1, #map2], iteration_sizes = [?, 8, 8]>
func.func @dont_cancel_dynamic_mismatched_layouts(%y: tensor<?x8xf32, #out>, %n: index) -> tensor<?x8xf32, #lhs2> {
  %u = iree_encoding.unset_encoding %y encoding_dims{%n} : tensor<?x8xf32, #out> -> tensor<?x8xf32>{%n}
  %s = iree_encoding.set_encoding %u encoding_dims{%n} : tensor<?x8xf32> -> tensor<?x8xf32, #lhs2>
  return %s : tensor<?x8xf32, #lhs2>
}

// -----

// A tiled layout with a dynamic row count is a real pack for every size: it stays.
// CHECK-LABEL: plans for @dont_fold_tiled_dynamic_set_encoding: 1; {{.*}} rule matches: none
// CHECK:       iree_encoding.set_encoding %arg0 encoding_dims{%{{.*}}} : tensor<?x8xf32> -> tensor<?x8xf32, #encoding
#map = affine_map<(d0, d1, d2) -> (d0, d2)>
#map1 = affine_map<(d0, d1, d2) -> (d1, d2)>
#map2 = affine_map<(d0, d1, d2) -> (d0, d1)>
#lhs = #iree_encoding.encoding<operand_index = 0 : index, op_type = matmul, element_types = [f32, f32, f32], user_indexing_maps = [#map, #map1, #map2], iteration_sizes = [?, 8, 8]>
func.func @dont_fold_tiled_dynamic_set_encoding(%x: tensor<?x8xf32>, %n: index) -> tensor<?x8xf32, #lhs> {
  %s = iree_encoding.set_encoding %x encoding_dims{%n} : tensor<?x8xf32> -> tensor<?x8xf32, #lhs>
  return %s : tensor<?x8xf32, #lhs>
}
