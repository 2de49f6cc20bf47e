// RUN: egg-dispatch opt --split-input-file --no-initial-plan --rules untile --target x86_64-avx2 %s | filecheck %s

// Dynamic shapes. Conditions 1-5 are structural, so a contraction with a dynamic row count is untiled
// as a static one is: condition 5 (the unset_encoding returns the whole result) compares the two shapes
// as the same expression of the argument's size.
// CHECK-LABEL: plans for @untile_dynamic_rows: 2; {{.*}} rule matches: untile-contraction 1
// CHECK:       of @untile_dynamic_rows: dispatch{linalg.fill, linalg.matmul}
// CHECK:       linalg.matmul indexing_maps = [#map, #map1, #map2] ins(%arg0, %arg1 : tensor<?x8xf32>, tensor<8x8xf32>)
#map = affine_map<(d0, d1, d2) -> (d0, d2)>
#map1 = affine_map<(d0, d1, d2) -> (d1, d2)>
#map2 = affine_map<(d0, d1, d2) -> (d0, d1)>
#encoding = #iree_encoding.encoding<operand_index = 0 : index, op_type = matmul, element_types = [f32, f32, f32], user_indexing_maps = [#map, #map1, #map2], iteration_sizes = [?, 8, 8]>
#encoding1 = #iree_encoding.encoding<operand_index = 1 : index, op_type = matmul, element_types = [f32, f32, f32], user_indexing_maps = [#map, #map1, #map2], iteration_sizes = [?, 8, 8]>
#encoding2 = #iree_encoding.encoding<operand_index = 2 : index, op_type = matmul, element_types = [f32, f32, f32], user_indexing_maps = [#map, #map1, #map2], iteration_sizes = [?, 8, 8]>
func.func @untile_dynamic_rows(%arg0: tensor<?x8xf32>, %arg1: tensor<8x8xf32>) -> tensor<?x8xf32> {
  %c0 = arith.constant 0 : index
  %m = tensor.dim %arg0, %c0 : tensor<?x8xf32>
  %l = flow.tensor.encode %arg0 : tensor<?x8xf32>{%m} -> tensor<?x8xf32, #encoding>{%m}
  %r = flow.tensor.encode %arg1 : tensor<8x8xf32> -> tensor<8x8xf32, #encoding1>
  %0 = flow.dispatch.region -> (tensor<?x8xf32>{%m}) {
    %3 = arith.constant 0.0 : f32
    %4 = tensor.empty(%m) : tensor<?x8xf32, #encoding2>
    %5 = linalg.fill ins(%3 : f32) outs(%4 : tensor<?x8xf32, #encoding2>) -> tensor<?x8xf32, #encoding2>
    %6 = linalg.matmul indexing_maps = [#map, #map1, #map2] ins(%l, %r : tensor<?x8xf32, #encoding>, tensor<8x8xf32, #encoding1>) outs(%5 : tensor<?x8xf32, #encoding2>) -> tensor<?x8xf32, #encoding2>
    %7 = iree_encoding.unset_encoding %6 encoding_dims{%m} : tensor<?x8xf32, #encoding2> -> tensor<?x8xf32>{%m}
    flow.return %7 : tensor<?x8xf32>
  }
  func.return %0 : tensor<?x8xf32>
}

// -----

// Condition 1 with a dynamic row count: the LHS arrives encoded (an argument), so no plain LHS exists.
// CHECK-LABEL: plans for @dont_untile_dynamic_encoded_lhs_without_set_encoding: 1; {{.*}} rule matches: none
#map = affine_map<(d0, d1, d2) -> (d0, d2)>
#map1 = affine_map<(d0, d1, d2) -> (d1, d2)>
#map2 = affine_map<(d0, d1, d2) -> (d0, d1)>
#encoding = #iree_encoding.encoding<operand_index = 0 : index, op_type = matmul, element_types = [f32, f32, f32], user_indexing_maps = [#map, #map1, #map2], iteration_sizes = [?, 8, 8]>
#encoding1 = #iree_encoding.encoding<operand_index = 1 : index, op_type = matmul, element_types = [f32, f32, f32], user_indexing_maps = [#map, #map1, #map2], iteration_sizes = [?, 8, 8]>
#encoding2 = #iree_encoding.encoding<operand_index = 2 : index, op_type = matmul, element_types = [f32, f32, f32], user_indexing_maps = [#map, #map1, #map2], iteration_sizes = [?, 8, 8]>
func.func @dont_untile_dynamic_encoded_lhs_without_set_encoding(%arg0: tensor<?x8xf32, #encoding>, %arg1: tensor<8x8xf32>, %m: index) -> tensor<?x8xf32> {
  %r = flow.tensor.encode %arg1 : tensor<8x8xf32> -> tensor<8x8xf32, #encoding1>
  %0 = flow.dispatch.region -> (tensor<?x8xf32>{%m}) {
    %3 = arith.constant 0.0 : f32
    %4 = tensor.empty(%m) : tensor<?x8xf32, #encoding2>
    %5 = linalg.fill ins(%3 : f32) outs(%4 : tensor<?x8xf32, #encoding2>) -> tensor<?x8xf32, #encoding2>
    %6 = linalg.matmul indexing_maps = [#map, #map1, #map2] ins(%arg0, %r : tensor<?x8xf32, #encoding>, tensor<8x8xf32, #encoding1>) outs(%5 : tensor<?x8xf32, #encoding2>) -> tensor<?x8xf32, #encoding2>
    %7 = iree_encoding.unset_encoding %6 encoding_dims{%m} : tensor<?x8xf32, #encoding2> -> tensor<?x8xf32>{%m}
    flow.return %7 : tensor<?x8xf32>
  }
  func.return %0 : tensor<?x8xf32>
}
