// RUN: egg-dispatch opt --split-input-file --no-initial-plan --rules sink_unset --target x86_64-avx2 %s | filecheck %s

// Condition 4 holds for a transpose: the encoded accumulator is read through (d0, d1) -> (d1, d0). IREE's
// generateSinkingEncodings appends inversePermutation of that map, then each operand's own map (createNewEncoding):
// the result gets [#map2, (d1, d0)] (the accumulator's tiles on the swapped dims) and the bias [32], read through
// (d0, d1) -> (d0), gets [#map2, (d1, d0), (d0)]: the accumulator's N tiles. Written from IREE 3.13's output of
// iree-dispatch-creation-hoist-encoding-ops on this function (IREE's lit case
// @propagate_unset_encoding_transposed_result_dims is the same without the bias).
// CHECK-LABEL: plans for @sink_transposed_read: 2; {{.*}}sink-unset-through-elementwise 1
// CHECK:       plan 1 of @sink_transposed_read: {{.*}}linalg.matmul, iree_encoding.set_encoding, linalg.generic, iree_encoding.unset_encoding}
// CHECK:       #[[T:map[0-9]*]] = affine_map<(d0, d1) -> (d1, d0)>
// CHECK-NEXT:  #[[B:map[0-9]*]] = affine_map<(d0, d1) -> (d0)>
// CHECK-NEXT:  #[[EB:encoding[0-9]*]] = #iree_encoding.encoding<operand_index = 2 : index, {{.*}} user_indexing_maps = [#map, #map1, [#map2, #[[T]], #[[B]]]], iteration_sizes = [8, 32, 16]>
// CHECK-NEXT:  #[[EO:encoding[0-9]*]] = #iree_encoding.encoding<operand_index = 2 : index, {{.*}} user_indexing_maps = [#map, #map1, [#map2, #[[T]]]], iteration_sizes = [8, 32, 16]>
// CHECK:         iree_encoding.set_encoding %arg2 : tensor<32xf32> -> tensor<32xf32, #[[EB]]>
// CHECK:         linalg.generic {indexing_maps = [#[[T]], #[[B]], #{{map[0-9]*}}]{{.*}} outs(%{{.*}} : tensor<32x8xf32, #[[EO]]>)
// CHECK:         iree_encoding.unset_encoding %{{.*}} : tensor<32x8xf32, #[[EO]]> -> tensor<32x8xf32>
#map = affine_map<(d0, d1, d2) -> (d0, d2)>
#map1 = affine_map<(d0, d1, d2) -> (d2, d1)>
#map2 = affine_map<(d0, d1, d2) -> (d0, d1)>
#lhs = #iree_encoding.encoding<operand_index = 0 : index, op_type = matmul, element_types = [f32, f32, f32], user_indexing_maps = [#map, #map1, #map2], iteration_sizes = [8, 32, 16]>
#rhs = #iree_encoding.encoding<operand_index = 1 : index, op_type = matmul, element_types = [f32, f32, f32], user_indexing_maps = [#map, #map1, #map2], iteration_sizes = [8, 32, 16]>
#out = #iree_encoding.encoding<operand_index = 2 : index, op_type = matmul, element_types = [f32, f32, f32], user_indexing_maps = [#map, #map1, #map2], iteration_sizes = [8, 32, 16]>
func.func @sink_transposed_read(%a: tensor<8x16xf32>, %b: tensor<16x32xf32>, %bias: tensor<32xf32>) -> tensor<32x8xf32> {
  %l = flow.tensor.encode %a : tensor<8x16xf32> -> tensor<8x16xf32, #lhs>
  %r = flow.tensor.encode %b : tensor<16x32xf32> -> tensor<16x32xf32, #rhs>
  %0 = flow.dispatch.region -> (tensor<32x8xf32>) {
    %zero = arith.constant 0.0 : f32
    %ee = tensor.empty() : tensor<8x32xf32, #out>
    %f = linalg.fill ins(%zero : f32) outs(%ee : tensor<8x32xf32, #out>) -> tensor<8x32xf32, #out>
    %m = linalg.matmul indexing_maps = [#map, #map1, #map2] ins(%l, %r : tensor<8x16xf32, #lhs>, tensor<16x32xf32, #rhs>) outs(%f : tensor<8x32xf32, #out>) -> tensor<8x32xf32, #out>
    %u = iree_encoding.unset_encoding %m : tensor<8x32xf32, #out> -> tensor<8x32xf32>
    %e = tensor.empty() : tensor<32x8xf32>
    %y = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d1, d0)>, affine_map<(d0, d1) -> (d0)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]} ins(%u, %bias : tensor<8x32xf32>, tensor<32xf32>) outs(%e : tensor<32x8xf32>) {
    ^bb0(%x: f32, %c: f32, %o: f32):
      %s = arith.addf %x, %c : f32
      %t = arith.maximumf %s, %zero : f32
      linalg.yield %t : f32
    } -> tensor<32x8xf32>
    flow.return %y : tensor<32x8xf32>
  }
  func.return %0 : tensor<32x8xf32>
}

// -----

// Condition 8 with the identity layout: AVX2 has no tiles for f8 operands, so the accumulator's layout is the
// identity; on a target with an encoding resolver (with `noop` run first too: sink_transposed_write.mlir), the
// bf16-truncating scale runs on the encoded value as IREE runs it (IREE's lit case
// @propagate_unset_encoding_through_generic: a transpose of the accumulator and a rank-0 scale, encoded on no dims).
// CHECK-LABEL: plans for @sink_on_an_identity_layout: 2; {{.*}}sink-unset-through-elementwise-identity-layout 1
// CHECK:       plan 1 of @sink_on_an_identity_layout: dispatch{iree_encoding.set_encoding, linalg.generic, iree_encoding.unset_encoding}
// CHECK:         iree_encoding.set_encoding %arg1 : tensor<f32> -> tensor<f32, #encoding{{[0-9]*}}>
#map = affine_map<(d0, d1, d2) -> (d0, d2)>
#map1 = affine_map<(d0, d1, d2) -> (d1, d2)>
#map2 = affine_map<(d0, d1, d2) -> (d0, d1)>
#encoding = #iree_encoding.encoding<operand_index = 2 : index, op_type = matmul, element_types = [f8E4M3FNUZ, f8E4M3FNUZ, f32], user_indexing_maps = [#map, #map1, #map2]>
func.func @sink_on_an_identity_layout(%arg0: tensor<16x64xf32, #encoding>, %arg1: tensor<f32>) -> tensor<64x16xbf16> {
  %0 = flow.dispatch.region -> (tensor<64x16xbf16>) {
    %1 = iree_encoding.unset_encoding %arg0 : tensor<16x64xf32, #encoding> -> tensor<16x64xf32>
    %2 = tensor.empty() : tensor<64x16xbf16>
    %3 = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d1, d0)>, affine_map<(d0, d1) -> ()>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]} ins(%1, %arg1 : tensor<16x64xf32>, tensor<f32>) outs(%2 : tensor<64x16xbf16>) {
    ^bb0(%in: f32, %in_0: f32, %out: bf16):
      %4 = arith.mulf %in, %in_0 : f32
      %5 = arith.truncf %4 : f32 to bf16
      linalg.yield %5 : bf16
    } -> tensor<64x16xbf16>
    flow.return %3 : tensor<64x16xbf16>
  }
  func.return %0 : tensor<64x16xbf16>
}
