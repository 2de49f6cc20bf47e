// RUN: egg-dispatch opt --split-input-file --rules noop --target %S/square_tiles.json %s | filecheck %s

// With 8x8x8 tiles the first matmul's RESULT layout (8x8 on M,N) is the second matmul's LHS
// layout (8x8 on M,K): unset_encoding followed by set_encoding cancels, and the packed result
// feeds the next matmul directly.
// CHECK-LABEL: plans for @cancel_unset_then_set_encoding: {{[1-9]}}
// CHECK:       of @cancel_unset_then_set_encoding: dispatch{iree_encoding.set_encoding, iree_encoding.set_encoding, linalg.fill, linalg.matmul} dispatch{iree_encoding.set_encoding, linalg.fill, linalg.matmul, iree_encoding.unset_encoding}
func.func @cancel_unset_then_set_encoding(%a: tensor<8x8xf32>, %b: tensor<8x8xf32>, %c: tensor<8x8xf32>) -> tensor<8x8xf32> {
  %zero = arith.constant 0.0 : f32
  %a0_e = tensor.empty() : tensor<8x8xf32>
  %a0 = linalg.fill ins(%zero : f32) outs(%a0_e : tensor<8x8xf32>) -> tensor<8x8xf32>
  %r0 = linalg.matmul indexing_maps = [affine_map<(d0, d1, d2) -> (d0, d2)>, affine_map<(d0, d1, d2) -> (d1, d2)>, affine_map<(d0, d1, d2) -> (d0, d1)>] ins(%a, %b : tensor<8x8xf32>, tensor<8x8xf32>) outs(%a0 : tensor<8x8xf32>) -> tensor<8x8xf32>
  %a1_e = tensor.empty() : tensor<8x8xf32>
  %a1 = linalg.fill ins(%zero : f32) outs(%a1_e : tensor<8x8xf32>) -> tensor<8x8xf32>
  %r1 = linalg.matmul indexing_maps = [affine_map<(d0, d1, d2) -> (d0, d2)>, affine_map<(d0, d1, d2) -> (d1, d2)>, affine_map<(d0, d1, d2) -> (d0, d1)>] ins(%r0, %c : tensor<8x8xf32>, tensor<8x8xf32>) outs(%a1 : tensor<8x8xf32>) -> tensor<8x8xf32>
  return %r1 : tensor<8x8xf32>
}

// -----

// noop.egg condition 3: the first dispatch unsets only 8 of its 16 result rows. Both layouts are 8x8 on the
// M dim, but the set_encoding of those 8 rows is not the packed 16-row result: the pair does not
// cancel (with all 16 rows it does, by the rule across the dispatch boundary).
// CHECK-LABEL: plans for @dont_cancel_partial_unset_encoding: 1; {{.*}} rule matches: none
#map = affine_map<(d0, d1, d2) -> (d0, d2)>
#map1 = affine_map<(d0, d1, d2) -> (d1, d2)>
#map2 = affine_map<(d0, d1, d2) -> (d0, d1)>
#e0 = #iree_encoding.encoding<operand_index = 0 : index, op_type = matmul, element_types = [f32, f32, f32], user_indexing_maps = [#map, #map1, #map2], iteration_sizes = [16, 16, 8]>
#e1 = #iree_encoding.encoding<operand_index = 1 : index, op_type = matmul, element_types = [f32, f32, f32], user_indexing_maps = [#map, #map1, #map2], iteration_sizes = [16, 16, 8]>
#e2 = #iree_encoding.encoding<operand_index = 2 : index, op_type = matmul, element_types = [f32, f32, f32], user_indexing_maps = [#map, #map1, #map2], iteration_sizes = [16, 16, 8]>
#l0 = #iree_encoding.encoding<operand_index = 0 : index, op_type = matmul, element_types = [f32, f32, f32], user_indexing_maps = [#map, #map1, #map2], iteration_sizes = [8, 16, 16]>
#l1 = #iree_encoding.encoding<operand_index = 1 : index, op_type = matmul, element_types = [f32, f32, f32], user_indexing_maps = [#map, #map1, #map2], iteration_sizes = [8, 16, 16]>
#l2 = #iree_encoding.encoding<operand_index = 2 : index, op_type = matmul, element_types = [f32, f32, f32], user_indexing_maps = [#map, #map1, #map2], iteration_sizes = [8, 16, 16]>
func.func @dont_cancel_partial_unset_encoding(%a: tensor<16x8xf32>, %b: tensor<16x8xf32>, %c: tensor<16x16xf32>) -> tensor<8x16xf32> {
  %zero = arith.constant 0.0 : f32
  %0 = flow.dispatch.region -> (tensor<8x16xf32>) {
    %1 = iree_encoding.set_encoding %a : tensor<16x8xf32> -> tensor<16x8xf32, #e0>
    %2 = iree_encoding.set_encoding %b : tensor<16x8xf32> -> tensor<16x8xf32, #e1>
    %3 = tensor.empty() : tensor<16x16xf32, #e2>
    %4 = linalg.fill ins(%zero : f32) outs(%3 : tensor<16x16xf32, #e2>) -> tensor<16x16xf32, #e2>
    %5 = linalg.matmul indexing_maps = [#map, #map1, #map2] ins(%1, %2 : tensor<16x8xf32, #e0>, tensor<16x8xf32, #e1>) outs(%4 : tensor<16x16xf32, #e2>) -> tensor<16x16xf32, #e2>
    %6 = iree_encoding.unset_encoding %5 : tensor<16x16xf32, #e2> -> tensor<8x16xf32>
    flow.return %6 : tensor<8x16xf32>
  }
  %7 = flow.dispatch.region -> (tensor<8x16xf32>) {
    %8 = iree_encoding.set_encoding %0 : tensor<8x16xf32> -> tensor<8x16xf32, #l0>
    %9 = iree_encoding.set_encoding %c : tensor<16x16xf32> -> tensor<16x16xf32, #l1>
    %10 = tensor.empty() : tensor<8x16xf32, #l2>
    %11 = linalg.fill ins(%zero : f32) outs(%10 : tensor<8x16xf32, #l2>) -> tensor<8x16xf32, #l2>
    %12 = linalg.matmul indexing_maps = [#map, #map1, #map2] ins(%8, %9 : tensor<8x16xf32, #l0>, tensor<16x16xf32, #l1>) outs(%11 : tensor<8x16xf32, #l2>) -> tensor<8x16xf32, #l2>
    %13 = iree_encoding.unset_encoding %12 : tensor<8x16xf32, #l2> -> tensor<8x16xf32>
    flow.return %13 : tensor<8x16xf32>
  }
  return %7 : tensor<8x16xf32>
}
