// RUN: egg-dispatch opt --split-input-file --no-initial-plan --rules untile --target x86_64-avx2 %s | filecheck %s

// Each legality condition of rules/untile.egg refused, on inputs in IREE's data-tiling spelling
// (taken as they are).

// The same spelling with every condition met (the control for the cases below): the plain
// matmul is a plan.
// CHECK-LABEL: plans for @untile_explicit_encodings: 2; {{.*}} rule matches: untile-contraction 1
// CHECK:       of @untile_explicit_encodings: dispatch{linalg.fill, linalg.matmul}
#map = affine_map<(d0, d1, d2) -> (d0, d2)>
#map1 = affine_map<(d0, d1, d2) -> (d1, d2)>
#map2 = affine_map<(d0, d1, d2) -> (d0, d1)>
#encoding = #iree_encoding.encoding<operand_index = 0 : index, op_type = matmul, element_types = [f32, f32, f32], user_indexing_maps = [#map, #map1, #map2], iteration_sizes = [8, 8, 8]>
#encoding1 = #iree_encoding.encoding<operand_index = 1 : index, op_type = matmul, element_types = [f32, f32, f32], user_indexing_maps = [#map, #map1, #map2], iteration_sizes = [8, 8, 8]>
#encoding2 = #iree_encoding.encoding<operand_index = 2 : index, op_type = matmul, element_types = [f32, f32, f32], user_indexing_maps = [#map, #map1, #map2], iteration_sizes = [8, 8, 8]>
func.func @untile_explicit_encodings(%arg0: tensor<8x8xf32>, %arg1: tensor<8x8xf32>) -> tensor<8x8xf32> {
  %0 = flow.dispatch.region -> (tensor<8x8xf32>) {
    %1 = iree_encoding.set_encoding %arg0 : tensor<8x8xf32> -> tensor<8x8xf32, #encoding>
    %2 = iree_encoding.set_encoding %arg1 : tensor<8x8xf32> -> tensor<8x8xf32, #encoding1>
    %3 = arith.constant 0.0 : f32
    %4 = tensor.empty() : tensor<8x8xf32, #encoding2>
    %5 = linalg.fill ins(%3 : f32) outs(%4 : tensor<8x8xf32, #encoding2>) -> tensor<8x8xf32, #encoding2>
    %6 = linalg.matmul indexing_maps = [#map, #map1, #map2] ins(%1, %2 : tensor<8x8xf32, #encoding>, tensor<8x8xf32, #encoding1>) outs(%5 : tensor<8x8xf32, #encoding2>) -> tensor<8x8xf32, #encoding2>
    %7 = iree_encoding.unset_encoding %6 : tensor<8x8xf32, #encoding2> -> tensor<8x8xf32>
    flow.return %7 : tensor<8x8xf32>
  }
  func.return %0 : tensor<8x8xf32>
}

// -----

// Condition 1: the LHS is encoded but no set_encoding produced it (an encoded argument): there is
// no plain LHS to read, so the contraction keeps its encodings.
// CHECK-LABEL: plans for @dont_untile_encoded_lhs_without_set_encoding: 1; {{.*}} rule matches: none
// CHECK-NOT:   linalg.matmul {{.*}} -> tensor<8x8xf32>{{$}}
#map = affine_map<(d0, d1, d2) -> (d0, d2)>
#map1 = affine_map<(d0, d1, d2) -> (d1, d2)>
#map2 = affine_map<(d0, d1, d2) -> (d0, d1)>
#encoding = #iree_encoding.encoding<operand_index = 0 : index, op_type = matmul, element_types = [f32, f32, f32], user_indexing_maps = [#map, #map1, #map2], iteration_sizes = [8, 8, 8]>
#encoding1 = #iree_encoding.encoding<operand_index = 1 : index, op_type = matmul, element_types = [f32, f32, f32], user_indexing_maps = [#map, #map1, #map2], iteration_sizes = [8, 8, 8]>
#encoding2 = #iree_encoding.encoding<operand_index = 2 : index, op_type = matmul, element_types = [f32, f32, f32], user_indexing_maps = [#map, #map1, #map2], iteration_sizes = [8, 8, 8]>
func.func @dont_untile_encoded_lhs_without_set_encoding(%arg0: tensor<8x8xf32, #encoding>, %arg1: tensor<8x8xf32>) -> tensor<8x8xf32> {
  %0 = flow.dispatch.region -> (tensor<8x8xf32>) {
    %2 = iree_encoding.set_encoding %arg1 : tensor<8x8xf32> -> tensor<8x8xf32, #encoding1>
    %3 = arith.constant 0.0 : f32
    %4 = tensor.empty() : tensor<8x8xf32, #encoding2>
    %5 = linalg.fill ins(%3 : f32) outs(%4 : tensor<8x8xf32, #encoding2>) -> tensor<8x8xf32, #encoding2>
    %6 = linalg.matmul indexing_maps = [#map, #map1, #map2] ins(%arg0, %2 : tensor<8x8xf32, #encoding>, tensor<8x8xf32, #encoding1>) outs(%5 : tensor<8x8xf32, #encoding2>) -> tensor<8x8xf32, #encoding2>
    %7 = iree_encoding.unset_encoding %6 : tensor<8x8xf32, #encoding2> -> tensor<8x8xf32>
    flow.return %7 : tensor<8x8xf32>
  }
  func.return %0 : tensor<8x8xf32>
}

// -----

// Condition 2: the same for the RHS.
// CHECK-LABEL: plans for @dont_untile_encoded_rhs_without_set_encoding: 1; {{.*}} rule matches: none
// CHECK-NOT:   linalg.matmul {{.*}} -> tensor<8x8xf32>{{$}}
#map = affine_map<(d0, d1, d2) -> (d0, d2)>
#map1 = affine_map<(d0, d1, d2) -> (d1, d2)>
#map2 = affine_map<(d0, d1, d2) -> (d0, d1)>
#encoding = #iree_encoding.encoding<operand_index = 0 : index, op_type = matmul, element_types = [f32, f32, f32], user_indexing_maps = [#map, #map1, #map2], iteration_sizes = [8, 8, 8]>
#encoding1 = #iree_encoding.encoding<operand_index = 1 : index, op_type = matmul, element_types = [f32, f32, f32], user_indexing_maps = [#map, #map1, #map2], iteration_sizes = [8, 8, 8]>
#encoding2 = #iree_encoding.encoding<operand_index = 2 : index, op_type = matmul, element_types = [f32, f32, f32], user_indexing_maps = [#map, #map1, #map2], iteration_sizes = [8, 8, 8]>
func.func @dont_untile_encoded_rhs_without_set_encoding(%arg0: tensor<8x8xf32>, %arg1: tensor<8x8xf32, #encoding1>) -> tensor<8x8xf32> {
  %0 = flow.dispatch.region -> (tensor<8x8xf32>) {
    %1 = iree_encoding.set_encoding %arg0 : tensor<8x8xf32> -> tensor<8x8xf32, #encoding>
    %3 = arith.constant 0.0 : f32
    %4 = tensor.empty() : tensor<8x8xf32, #encoding2>
    %5 = linalg.fill ins(%3 : f32) outs(%4 : tensor<8x8xf32, #encoding2>) -> tensor<8x8xf32, #encoding2>
    %6 = linalg.matmul indexing_maps = [#map, #map1, #map2] ins(%1, %arg1 : tensor<8x8xf32, #encoding>, tensor<8x8xf32, #encoding1>) outs(%5 : tensor<8x8xf32, #encoding2>) -> tensor<8x8xf32, #encoding2>
    %7 = iree_encoding.unset_encoding %6 : tensor<8x8xf32, #encoding2> -> tensor<8x8xf32>
    flow.return %7 : tensor<8x8xf32>
  }
  func.return %0 : tensor<8x8xf32>
}

// -----

// Condition 3: the accumulator is encoded but is neither a fill of an encoded tensor.empty nor a
// set_encoding (an encoded argument): no plain accumulator.
// CHECK-LABEL: plans for @dont_untile_encoded_accumulator_without_set_encoding: 1; {{.*}} rule matches: none
// CHECK-NOT:   linalg.matmul {{.*}} -> tensor<8x8xf32>{{$}}
#map = affine_map<(d0, d1, d2) -> (d0, d2)>
#map1 = affine_map<(d0, d1, d2) -> (d1, d2)>
#map2 = affine_map<(d0, d1, d2) -> (d0, d1)>
#encoding = #iree_encoding.encoding<operand_index = 0 : index, op_type = matmul, element_types = [f32, f32, f32], user_indexing_maps = [#map, #map1, #map2], iteration_sizes = [8, 8, 8]>
#encoding1 = #iree_encoding.encoding<operand_index = 1 : index, op_type = matmul, element_types = [f32, f32, f32], user_indexing_maps = [#map, #map1, #map2], iteration_sizes = [8, 8, 8]>
#encoding2 = #iree_encoding.encoding<operand_index = 2 : index, op_type = matmul, element_types = [f32, f32, f32], user_indexing_maps = [#map, #map1, #map2], iteration_sizes = [8, 8, 8]>
func.func @dont_untile_encoded_accumulator_without_set_encoding(%arg0: tensor<8x8xf32>, %arg1: tensor<8x8xf32>, %arg2: tensor<8x8xf32, #encoding2>) -> tensor<8x8xf32> {
  %0 = flow.dispatch.region -> (tensor<8x8xf32>) {
    %1 = iree_encoding.set_encoding %arg0 : tensor<8x8xf32> -> tensor<8x8xf32, #encoding>
    %2 = iree_encoding.set_encoding %arg1 : tensor<8x8xf32> -> tensor<8x8xf32, #encoding1>
    %6 = linalg.matmul indexing_maps = [#map, #map1, #map2] ins(%1, %2 : tensor<8x8xf32, #encoding>, tensor<8x8xf32, #encoding1>) outs(%arg2 : tensor<8x8xf32, #encoding2>) -> tensor<8x8xf32, #encoding2>
    %7 = iree_encoding.unset_encoding %6 : tensor<8x8xf32, #encoding2> -> tensor<8x8xf32>
    flow.return %7 : tensor<8x8xf32>
  }
  func.return %0 : tensor<8x8xf32>
}

// -----

// Condition 4: the RHS carries the encoding of another contraction (iteration sizes [8, 16, 8],
// not this one's [8, 8, 8]): not the start state IREE's SetEncoding writes, nothing to undo.
// CHECK-LABEL: plans for @dont_untile_operand_in_another_contractions_encoding: 1; {{.*}} rule matches: none
// CHECK-NOT:   linalg.matmul {{.*}} -> tensor<8x8xf32>{{$}}
#map = affine_map<(d0, d1, d2) -> (d0, d2)>
#map1 = affine_map<(d0, d1, d2) -> (d1, d2)>
#map2 = affine_map<(d0, d1, d2) -> (d0, d1)>
#encoding = #iree_encoding.encoding<operand_index = 0 : index, op_type = matmul, element_types = [f32, f32, f32], user_indexing_maps = [#map, #map1, #map2], iteration_sizes = [8, 8, 8]>
#encoding1 = #iree_encoding.encoding<operand_index = 1 : index, op_type = matmul, element_types = [f32, f32, f32], user_indexing_maps = [#map, #map1, #map2], iteration_sizes = [8, 8, 8]>
#encoding2 = #iree_encoding.encoding<operand_index = 2 : index, op_type = matmul, element_types = [f32, f32, f32], user_indexing_maps = [#map, #map1, #map2], iteration_sizes = [8, 8, 8]>
#encoding3 = #iree_encoding.encoding<operand_index = 1 : index, op_type = matmul, element_types = [f32, f32, f32], user_indexing_maps = [#map, #map1, #map2], iteration_sizes = [8, 16, 8]>
func.func @dont_untile_operand_in_another_contractions_encoding(%arg0: tensor<8x8xf32>, %arg1: tensor<8x8xf32>) -> tensor<8x8xf32> {
  %0 = flow.dispatch.region -> (tensor<8x8xf32>) {
    %1 = iree_encoding.set_encoding %arg0 : tensor<8x8xf32> -> tensor<8x8xf32, #encoding>
    %2 = iree_encoding.set_encoding %arg1 : tensor<8x8xf32> -> tensor<8x8xf32, #encoding3>
    %3 = arith.constant 0.0 : f32
    %4 = tensor.empty() : tensor<8x8xf32, #encoding2>
    %5 = linalg.fill ins(%3 : f32) outs(%4 : tensor<8x8xf32, #encoding2>) -> tensor<8x8xf32, #encoding2>
    %6 = linalg.matmul indexing_maps = [#map, #map1, #map2] ins(%1, %2 : tensor<8x8xf32, #encoding>, tensor<8x8xf32, #encoding3>) outs(%5 : tensor<8x8xf32, #encoding2>) -> tensor<8x8xf32, #encoding2>
    %7 = iree_encoding.unset_encoding %6 : tensor<8x8xf32, #encoding2> -> tensor<8x8xf32>
    flow.return %7 : tensor<8x8xf32>
  }
  func.return %0 : tensor<8x8xf32>
}

// -----

// Condition 5: the unset_encoding returns only part of the result (6 of 8 rows). IREE's verifier
// rejects this ('expected to preserve the logical shape of the tensor'); our reader takes it, and
// the rule does not equate a 6x8 tensor with an 8x8 contraction.
// CHECK-LABEL: plans for @dont_untile_partial_unset_encoding: 1; {{.*}} rule matches: none
// CHECK-NOT:   linalg.matmul {{.*}} -> tensor<8x8xf32>{{$}}
#map = affine_map<(d0, d1, d2) -> (d0, d2)>
#map1 = affine_map<(d0, d1, d2) -> (d1, d2)>
#map2 = affine_map<(d0, d1, d2) -> (d0, d1)>
#encoding = #iree_encoding.encoding<operand_index = 0 : index, op_type = matmul, element_types = [f32, f32, f32], user_indexing_maps = [#map, #map1, #map2], iteration_sizes = [8, 8, 8]>
#encoding1 = #iree_encoding.encoding<operand_index = 1 : index, op_type = matmul, element_types = [f32, f32, f32], user_indexing_maps = [#map, #map1, #map2], iteration_sizes = [8, 8, 8]>
#encoding2 = #iree_encoding.encoding<operand_index = 2 : index, op_type = matmul, element_types = [f32, f32, f32], user_indexing_maps = [#map, #map1, #map2], iteration_sizes = [8, 8, 8]>
func.func @dont_untile_partial_unset_encoding(%arg0: tensor<8x8xf32>, %arg1: tensor<8x8xf32>) -> tensor<6x8xf32> {
  %0 = flow.dispatch.region -> (tensor<6x8xf32>) {
    %1 = iree_encoding.set_encoding %arg0 : tensor<8x8xf32> -> tensor<8x8xf32, #encoding>
    %2 = iree_encoding.set_encoding %arg1 : tensor<8x8xf32> -> tensor<8x8xf32, #encoding1>
    %3 = arith.constant 0.0 : f32
    %4 = tensor.empty() : tensor<8x8xf32, #encoding2>
    %5 = linalg.fill ins(%3 : f32) outs(%4 : tensor<8x8xf32, #encoding2>) -> tensor<8x8xf32, #encoding2>
    %6 = linalg.matmul indexing_maps = [#map, #map1, #map2] ins(%1, %2 : tensor<8x8xf32, #encoding>, tensor<8x8xf32, #encoding1>) outs(%5 : tensor<8x8xf32, #encoding2>) -> tensor<8x8xf32, #encoding2>
    %7 = iree_encoding.unset_encoding %6 : tensor<8x8xf32, #encoding2> -> tensor<6x8xf32>
    flow.return %7 : tensor<6x8xf32>
  }
  func.return %0 : tensor<6x8xf32>
}
