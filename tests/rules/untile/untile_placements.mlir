// RUN: egg-dispatch opt --split-input-file --no-initial-plan --rules untile --target x86_64-avx2 %s | filecheck %s

// Placements, in IREE's own spellings after HoistEncodingOps / HoistIntoGlobals (the input taken
// as it is): the packed copy exists, and dropping tiling reads the plain source instead.
//   flow.dispatch.region { extract_slice; set_encoding }  (hoisted with its slice) -> the slice,
//       cloned into the contraction's dispatch
//   flow.tensor.encode of an argument (hoisted encode of a dispatch input)   -> the argument
//   util.global of set_encoding(constant) (const-evaluated)                 -> the constant
// CHECK-LABEL: plans for @untile_hoisted_and_const_evaluated: 4; {{.*}} rule matches: untile-contraction 2
// CHECK:       of @untile_hoisted_and_const_evaluated: dispatch{tensor.extract_slice, linalg.fill, linalg.matmul} dispatch{tensor.extract_slice, linalg.fill, linalg.matmul}
// CHECK-NOT:   iree_encoding
// CHECK-NOT:   util.global
// CHECK:         %[[S:.+]] = tensor.extract_slice %arg0[8, 0] [8, 8] [1, 1] : tensor<16x8xf32> to tensor<8x8xf32>
// CHECK:         linalg.matmul indexing_maps = [#map, #map1, #map2] ins(%[[S]], %arg1 : tensor<8x8xf32>, tensor<8x8xf32>)
// CHECK:       %[[W:.+]] = arith.constant dense<5.0e-01> : tensor<8x8xf32>
// CHECK:         %[[S2:.+]] = tensor.extract_slice %arg0[8, 0] [8, 8] [1, 1] : tensor<16x8xf32> to tensor<8x8xf32>
// CHECK:         linalg.matmul indexing_maps = [#map, #map1, #map2] ins(%[[S2]], %[[W]] : tensor<8x8xf32>, tensor<8x8xf32>)
#map = affine_map<(d0, d1, d2) -> (d0, d2)>
#map1 = affine_map<(d0, d1, d2) -> (d1, d2)>
#map2 = affine_map<(d0, d1, d2) -> (d0, d1)>
#map3 = affine_map<(d0, d1) -> (d0, d1)>
#encoding = #iree_encoding.encoding<operand_index = 0 : index, op_type = matmul, element_types = [f32, f32, f32], user_indexing_maps = [#map, #map1, #map2], iteration_sizes = [8, 8, 8]>
#encoding1 = #iree_encoding.encoding<operand_index = 1 : index, op_type = matmul, element_types = [f32, f32, f32], user_indexing_maps = [#map, #map1, #map2], iteration_sizes = [8, 8, 8]>
#encoding2 = #iree_encoding.encoding<operand_index = 2 : index, op_type = matmul, element_types = [f32, f32, f32], user_indexing_maps = [#map, #map1, #map2], iteration_sizes = [8, 8, 8]>
util.global private @__hoisted_w : tensor<8x8xf32, #encoding1>
util.initializer {
  %w = arith.constant dense<0.5> : tensor<8x8xf32>
  %e = iree_encoding.set_encoding %w : tensor<8x8xf32> -> tensor<8x8xf32, #encoding1>
  util.global.store %e, @__hoisted_w : tensor<8x8xf32, #encoding1>
  util.return
}
func.func @untile_hoisted_and_const_evaluated(%arg0: tensor<16x8xf32>, %arg1: tensor<8x8xf32>) -> (tensor<8x8xf32>, tensor<8x8xf32>) {
  %lhs = flow.dispatch.region -> (tensor<8x8xf32, #encoding>) {
    %s = tensor.extract_slice %arg0[8, 0] [8, 8] [1, 1] : tensor<16x8xf32> to tensor<8x8xf32>
    %se = iree_encoding.set_encoding %s : tensor<8x8xf32> -> tensor<8x8xf32, #encoding>
    flow.return %se : tensor<8x8xf32, #encoding>
  }
  %rhs = flow.tensor.encode %arg1 : tensor<8x8xf32> -> tensor<8x8xf32, #encoding1>
  %w = util.global.load immutable @__hoisted_w : tensor<8x8xf32, #encoding1>
  %0 = flow.dispatch.region -> (tensor<8x8xf32>) {
    %z = arith.constant 0.0 : f32
    %4 = tensor.empty() : tensor<8x8xf32, #encoding2>
    %5 = linalg.fill ins(%z : f32) outs(%4 : tensor<8x8xf32, #encoding2>) -> tensor<8x8xf32, #encoding2>
    %6 = linalg.matmul indexing_maps = [#map, #map1, #map2] ins(%lhs, %rhs : tensor<8x8xf32, #encoding>, tensor<8x8xf32, #encoding1>) outs(%5 : tensor<8x8xf32, #encoding2>) -> tensor<8x8xf32, #encoding2>
    %7 = iree_encoding.unset_encoding %6 : tensor<8x8xf32, #encoding2> -> tensor<8x8xf32>
    flow.return %7 : tensor<8x8xf32>
  }
  %1 = flow.dispatch.region -> (tensor<8x8xf32>) {
    %z = arith.constant 0.0 : f32
    %4 = tensor.empty() : tensor<8x8xf32, #encoding2>
    %5 = linalg.fill ins(%z : f32) outs(%4 : tensor<8x8xf32, #encoding2>) -> tensor<8x8xf32, #encoding2>
    %6 = linalg.matmul indexing_maps = [#map, #map1, #map2] ins(%lhs, %w : tensor<8x8xf32, #encoding>, tensor<8x8xf32, #encoding1>) outs(%5 : tensor<8x8xf32, #encoding2>) -> tensor<8x8xf32, #encoding2>
    %7 = iree_encoding.unset_encoding %6 : tensor<8x8xf32, #encoding2> -> tensor<8x8xf32>
    flow.return %7 : tensor<8x8xf32>
  }
  func.return %0, %1 : tensor<8x8xf32>, tensor<8x8xf32>
}

// -----

// Computed sources: an encode fused into its producer's dispatch (FuseEncodingOpsIntoDispatchRegions)
// -> that dispatch returns the plain value; a const-evaluated encode of a computed const-expr ->
// the global holds the plain value (HoistIntoGlobals without the encode).
// CHECK-LABEL: plans for @untile_computed_sources: 2; {{.*}} rule matches: untile-contraction 1
// CHECK:       of @untile_computed_sources: init{linalg.generic} dispatch{linalg.generic} dispatch{linalg.fill, linalg.matmul}
// CHECK-NOT:   iree_encoding
// CHECK:       util.global private @[[G:.+]] : tensor<8x8xf32>
// CHECK:       %[[P:.+]] = flow.dispatch.region -> (tensor<8x8xf32>) {
// CHECK:         linalg.generic
// CHECK:       %[[L:.+]] = util.global.load immutable @[[G]] : tensor<8x8xf32>
// CHECK:         linalg.matmul indexing_maps = [#map1, #map2, #map3] ins(%[[P]], %[[L]] : tensor<8x8xf32>, tensor<8x8xf32>)
#map = affine_map<(d0, d1, d2) -> (d0, d2)>
#map1 = affine_map<(d0, d1, d2) -> (d1, d2)>
#map2 = affine_map<(d0, d1, d2) -> (d0, d1)>
#map3 = affine_map<(d0, d1) -> (d0, d1)>
#encoding = #iree_encoding.encoding<operand_index = 0 : index, op_type = matmul, element_types = [f32, f32, f32], user_indexing_maps = [#map, #map1, #map2], iteration_sizes = [8, 8, 8]>
#encoding1 = #iree_encoding.encoding<operand_index = 1 : index, op_type = matmul, element_types = [f32, f32, f32], user_indexing_maps = [#map, #map1, #map2], iteration_sizes = [8, 8, 8]>
#encoding2 = #iree_encoding.encoding<operand_index = 2 : index, op_type = matmul, element_types = [f32, f32, f32], user_indexing_maps = [#map, #map1, #map2], iteration_sizes = [8, 8, 8]>
util.global private @__hoisted_w : tensor<8x8xf32, #encoding1>
util.initializer {
  %w = arith.constant dense<0.5> : tensor<8x8xf32>
  %we = tensor.empty() : tensor<8x8xf32>
  %n = linalg.generic {indexing_maps = [#map3, #map3], iterator_types = ["parallel", "parallel"]} ins(%w : tensor<8x8xf32>) outs(%we : tensor<8x8xf32>) {
  ^bb0(%x: f32, %y: f32):
    %v = arith.negf %x : f32
    linalg.yield %v : f32
  } -> tensor<8x8xf32>
  %e = iree_encoding.set_encoding %n : tensor<8x8xf32> -> tensor<8x8xf32, #encoding1>
  util.global.store %e, @__hoisted_w : tensor<8x8xf32, #encoding1>
  util.return
}
func.func @untile_computed_sources(%arg0: tensor<8x8xf32>) -> tensor<8x8xf32> {
  %lhs = flow.dispatch.region -> (tensor<8x8xf32, #encoding>) {
    %ee = tensor.empty() : tensor<8x8xf32>
    %g = linalg.generic {indexing_maps = [#map3, #map3], iterator_types = ["parallel", "parallel"]} ins(%arg0 : tensor<8x8xf32>) outs(%ee : tensor<8x8xf32>) {
    ^bb0(%x: f32, %y: f32):
      %v = arith.addf %x, %x : f32
      linalg.yield %v : f32
    } -> tensor<8x8xf32>
    %se = iree_encoding.set_encoding %g : tensor<8x8xf32> -> tensor<8x8xf32, #encoding>
    flow.return %se : tensor<8x8xf32, #encoding>
  }
  %w = util.global.load immutable @__hoisted_w : tensor<8x8xf32, #encoding1>
  %0 = flow.dispatch.region -> (tensor<8x8xf32>) {
    %z = arith.constant 0.0 : f32
    %4 = tensor.empty() : tensor<8x8xf32, #encoding2>
    %5 = linalg.fill ins(%z : f32) outs(%4 : tensor<8x8xf32, #encoding2>) -> tensor<8x8xf32, #encoding2>
    %6 = linalg.matmul indexing_maps = [#map, #map1, #map2] ins(%lhs, %w : tensor<8x8xf32, #encoding>, tensor<8x8xf32, #encoding1>) outs(%5 : tensor<8x8xf32, #encoding2>) -> tensor<8x8xf32, #encoding2>
    %7 = iree_encoding.unset_encoding %6 : tensor<8x8xf32, #encoding2> -> tensor<8x8xf32>
    flow.return %7 : tensor<8x8xf32>
  }
  func.return %0 : tensor<8x8xf32>
}
