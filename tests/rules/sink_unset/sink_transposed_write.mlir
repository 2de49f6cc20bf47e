// RUN: egg-dispatch opt --split-input-file --rules sink_unset --target x86_64-avx2 %s | filecheck %s

// Condition 8 with the identity layout: AVX2 has no tiles for an f32 x f16 matmul, so the accumulator's layout is
// the identity. IREE's SinkUnsetEncodingOp does not ask the layout: its plan runs the consumer on the encoded
// accumulator (IREE 3.13's --compile-to=dispatch-creation output on this function: the init, a tensor<64x16xf32>
// empty, encoded (an encoded empty, as IREE prints it) with the accumulator's encoding with (d0, d1) -> (d1, d0)
// appended, the generic on the matmul's result, then the unset_encoding). The consumer is a 2-d transpose written
// through its output map (the K projection of an attention with f16 weights, as IREE's dispatch creation prints it:
// random_models.py seed 14, tests/fixtures/random_model_14.mlir): conditions 1, 2, 3 and 4 (its input map is the
// identity), 5 (the output map is a permutation, appended to the init's encoding: #EO) and 7 (the whole contraction
// result). Condition 8 holds whether or not `noop` has folded the unset_encoding into the matmul first (`noop` runs
// before this family in every iteration; tests/test_identity_fold_guards.py runs this case after it: the rule
// fires, the sunk generic folds back into the plain one, one plan, saturated). Before, the rule never fired next to
// `noop`, and IREE's plan of that model was not in the e-graph.
// CHECK-LABEL: plans for @sink_transposed_write_identity_layout: 2; {{.*}}sink-unset-through-elementwise-identity-layout 1
// CHECK:       plan 1 of @sink_transposed_write_identity_layout: dispatch{iree_encoding.set_encoding, iree_encoding.set_encoding, linalg.fill, linalg.matmul, linalg.generic, iree_encoding.unset_encoding}
// CHECK:       #[[T:map[0-9]*]] = affine_map<(d0, d1) -> (d1, d0)>
// CHECK:       #[[EO:encoding[0-9]*]] = #iree_encoding.encoding<operand_index = 2 : index, {{.*}} user_indexing_maps = [#map, #map1, [#map2, #[[T]]]], iteration_sizes = [16, 64, 64]>
// CHECK:         %[[M:[0-9]+]] = linalg.matmul
// CHECK-NEXT:    %[[I:[0-9]+]] = tensor.empty() : tensor<64x16xf32, #[[EO]]>
// CHECK-NEXT:    linalg.generic {indexing_maps = [#{{map[0-9]*}}, #[[T]]]{{.*}} ins(%[[M]] : tensor<16x64xf32, #encoding{{[0-9]*}}>) outs(%[[I]] : tensor<64x16xf32, #[[EO]]>)
// CHECK:         iree_encoding.unset_encoding %{{.*}} : tensor<64x16xf32, #[[EO]]> -> tensor<64x16xf32>
#map = affine_map<(d0, d1, d2) -> (d0, d2)>
#map1 = affine_map<(d0, d1, d2) -> (d1, d2)>
#map2 = affine_map<(d0, d1, d2) -> (d0, d1)>
#lhs = #iree_encoding.encoding<operand_index = 0 : index, op_type = matmul, element_types = [f32, f16, f32], user_indexing_maps = [#map, #map1, #map2], iteration_sizes = [16, 64, 64]>
#rhs = #iree_encoding.encoding<operand_index = 1 : index, op_type = matmul, element_types = [f32, f16, f32], user_indexing_maps = [#map, #map1, #map2], iteration_sizes = [16, 64, 64]>
#out = #iree_encoding.encoding<operand_index = 2 : index, op_type = matmul, element_types = [f32, f16, f32], user_indexing_maps = [#map, #map1, #map2], iteration_sizes = [16, 64, 64]>
func.func @sink_transposed_write_identity_layout(%a: tensor<16x64xf32>, %b: tensor<64x64xf16>) -> tensor<64x16xf32> {
  %0 = flow.dispatch.region -> (tensor<64x16xf32>) {
    %e = tensor.empty() : tensor<64x16xf32>
    %zero = arith.constant 0.0 : f32
    %l = iree_encoding.set_encoding %a : tensor<16x64xf32> -> tensor<16x64xf32, #lhs>
    %r = iree_encoding.set_encoding %b : tensor<64x64xf16> -> tensor<64x64xf16, #rhs>
    %ee = tensor.empty() : tensor<16x64xf32, #out>
    %f = linalg.fill ins(%zero : f32) outs(%ee : tensor<16x64xf32, #out>) -> tensor<16x64xf32, #out>
    %m = linalg.matmul indexing_maps = [#map, #map1, #map2] ins(%l, %r : tensor<16x64xf32, #lhs>, tensor<64x64xf16, #rhs>) outs(%f : tensor<16x64xf32, #out>) -> tensor<16x64xf32, #out>
    %u = iree_encoding.unset_encoding %m : tensor<16x64xf32, #out> -> tensor<16x64xf32>
    %y = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d1, d0)>], iterator_types = ["parallel", "parallel"]} ins(%u : tensor<16x64xf32>) outs(%e : tensor<64x16xf32>) {
    ^bb0(%x: f32, %o: f32):
      linalg.yield %x : f32
    } -> tensor<64x16xf32>
    flow.return %y : tensor<64x16xf32>
  }
  func.return %0 : tensor<64x16xf32>
}
