// RUN: egg-dispatch opt --split-input-file --no-initial-plan --rules sink_unset --target x86_64-avx2 %s | filecheck %s

// IREE's start state written out (--no-initial-plan), for consumers that IREE's FormDispatchRegions
// would not put in the matmul's dispatch by itself: each fails one condition of rules/sink_unset.egg.

// Positive control, in this form: a ReLU in the dispatch, after the unset_encoding, does sink.
// CHECK-LABEL: plans for @sink_relu_in_dispatch: 2; {{.*}} rule matches: {{.*}}sink-unset-through-elementwise 1
// CHECK:       of @sink_relu_in_dispatch: encode encode dispatch{linalg.fill, linalg.matmul, linalg.generic, iree_encoding.unset_encoding}
#map = affine_map<(d0, d1, d2) -> (d0, d2)>
#map1 = affine_map<(d0, d1, d2) -> (d2, d1)>
#map2 = affine_map<(d0, d1, d2) -> (d0, d1)>
#lhs = #iree_encoding.encoding<operand_index = 0 : index, op_type = matmul, element_types = [f32, f32, f32], user_indexing_maps = [#map, #map1, #map2], iteration_sizes = [8, 32, 16]>
#rhs = #iree_encoding.encoding<operand_index = 1 : index, op_type = matmul, element_types = [f32, f32, f32], user_indexing_maps = [#map, #map1, #map2], iteration_sizes = [8, 32, 16]>
#out = #iree_encoding.encoding<operand_index = 2 : index, op_type = matmul, element_types = [f32, f32, f32], user_indexing_maps = [#map, #map1, #map2], iteration_sizes = [8, 32, 16]>
func.func @sink_relu_in_dispatch(%a: tensor<8x16xf32>, %b: tensor<16x32xf32>) -> tensor<8x32xf32> {
  %l = flow.tensor.encode %a : tensor<8x16xf32> -> tensor<8x16xf32, #lhs>
  %r = flow.tensor.encode %b : tensor<16x32xf32> -> tensor<16x32xf32, #rhs>
  %0 = flow.dispatch.region -> (tensor<8x32xf32>) {
    %zero = arith.constant 0.0 : f32
    %ee = tensor.empty() : tensor<8x32xf32, #out>
    %f = linalg.fill ins(%zero : f32) outs(%ee : tensor<8x32xf32, #out>) -> tensor<8x32xf32, #out>
    %m = linalg.matmul indexing_maps = [#map, #map1, #map2] ins(%l, %r : tensor<8x16xf32, #lhs>, tensor<16x32xf32, #rhs>) outs(%f : tensor<8x32xf32, #out>) -> tensor<8x32xf32, #out>
    %u = iree_encoding.unset_encoding %m : tensor<8x32xf32, #out> -> tensor<8x32xf32>
    %e = tensor.empty() : tensor<8x32xf32>
    %y = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]} ins(%u : tensor<8x32xf32>) outs(%e : tensor<8x32xf32>) {
    ^bb0(%x: f32, %o: f32):
      %t = arith.maximumf %x, %zero : f32
      linalg.yield %t : f32
    } -> tensor<8x32xf32>
    flow.return %y : tensor<8x32xf32>
  }
  func.return %0 : tensor<8x32xf32>
}

// -----

// Condition 1: a row-sum has a reduction loop (over N): no all-parallel generic to run on the tiles.
// CHECK-LABEL: plans for @dont_sink_into_reduction: 1; {{.*}} rule matches: none
#map = affine_map<(d0, d1, d2) -> (d0, d2)>
#map1 = affine_map<(d0, d1, d2) -> (d2, d1)>
#map2 = affine_map<(d0, d1, d2) -> (d0, d1)>
#lhs = #iree_encoding.encoding<operand_index = 0 : index, op_type = matmul, element_types = [f32, f32, f32], user_indexing_maps = [#map, #map1, #map2], iteration_sizes = [8, 32, 16]>
#rhs = #iree_encoding.encoding<operand_index = 1 : index, op_type = matmul, element_types = [f32, f32, f32], user_indexing_maps = [#map, #map1, #map2], iteration_sizes = [8, 32, 16]>
#out = #iree_encoding.encoding<operand_index = 2 : index, op_type = matmul, element_types = [f32, f32, f32], user_indexing_maps = [#map, #map1, #map2], iteration_sizes = [8, 32, 16]>
func.func @dont_sink_into_reduction(%a: tensor<8x16xf32>, %b: tensor<16x32xf32>) -> tensor<8xf32> {
  %l = flow.tensor.encode %a : tensor<8x16xf32> -> tensor<8x16xf32, #lhs>
  %r = flow.tensor.encode %b : tensor<16x32xf32> -> tensor<16x32xf32, #rhs>
  %0 = flow.dispatch.region -> (tensor<8xf32>) {
    %zero = arith.constant 0.0 : f32
    %ee = tensor.empty() : tensor<8x32xf32, #out>
    %f = linalg.fill ins(%zero : f32) outs(%ee : tensor<8x32xf32, #out>) -> tensor<8x32xf32, #out>
    %m = linalg.matmul indexing_maps = [#map, #map1, #map2] ins(%l, %r : tensor<8x16xf32, #lhs>, tensor<16x32xf32, #rhs>) outs(%f : tensor<8x32xf32, #out>) -> tensor<8x32xf32, #out>
    %u = iree_encoding.unset_encoding %m : tensor<8x32xf32, #out> -> tensor<8x32xf32>
    %e = tensor.empty() : tensor<8xf32>
    %z = linalg.fill ins(%zero : f32) outs(%e : tensor<8xf32>) -> tensor<8xf32>
    %y = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0)>], iterator_types = ["parallel", "reduction"]} ins(%u : tensor<8x32xf32>) outs(%z : tensor<8xf32>) {
    ^bb0(%x: f32, %o: f32):
      %s = arith.addf %x, %o : f32
      linalg.yield %s : f32
    } -> tensor<8xf32>
    flow.return %y : tensor<8xf32>
  }
  func.return %0 : tensor<8xf32>
}

// -----

// Condition 7: the unset_encoding's source is no contraction result (an argument encoded as an LHS,
// operand_index 0): there is no accumulator for the generic to run on.
// CHECK-LABEL: plans for @dont_sink_non_result_encoding: 1; {{.*}} rule matches: none
#map = affine_map<(d0, d1, d2) -> (d0, d2)>
#map1 = affine_map<(d0, d1, d2) -> (d2, d1)>
#map2 = affine_map<(d0, d1, d2) -> (d0, d1)>
#lhs = #iree_encoding.encoding<operand_index = 0 : index, op_type = matmul, element_types = [f32, f32, f32], user_indexing_maps = [#map, #map1, #map2], iteration_sizes = [8, 32, 16]>
func.func @dont_sink_non_result_encoding(%a: tensor<8x16xf32>) -> tensor<8x16xf32> {
  %l = flow.tensor.encode %a : tensor<8x16xf32> -> tensor<8x16xf32, #lhs>
  %0 = flow.dispatch.region -> (tensor<8x16xf32>) {
    %zero = arith.constant 0.0 : f32
    %u = iree_encoding.unset_encoding %l : tensor<8x16xf32, #lhs> -> tensor<8x16xf32>
    %e = tensor.empty() : tensor<8x16xf32>
    %y = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]} ins(%u : tensor<8x16xf32>) outs(%e : tensor<8x16xf32>) {
    ^bb0(%x: f32, %o: f32):
      %t = arith.maximumf %x, %zero : f32
      linalg.yield %t : f32
    } -> tensor<8x16xf32>
    flow.return %y : tensor<8x16xf32>
  }
  func.return %0 : tensor<8x16xf32>
}
