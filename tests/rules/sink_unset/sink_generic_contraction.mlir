// RUN: egg-dispatch opt --split-input-file --no-initial-plan --rules sink_unset --target x86_64-avx2 %s | filecheck %s

// Condition 7, a contraction written as a linalg.generic (an i8 x i8 -> i32 matmul with its extends in
// the body), in IREE 3.13's start state as its SetEncoding printed it (--no-initial-plan): IREE encodes
// it like linalg.matmul, so its result is in its encoded init's encoding, and the dequantizing
// consumer runs on it encoded, its f32 init set to that encoding (IREE's own plan of this function).
// CHECK-LABEL: plans for @sink_after_generic_contraction: 2; {{.*}} rule matches: {{.*}}sink-unset-through-elementwise 1
// CHECK:       plan 1 of @sink_after_generic_contraction: dispatch{{.*}}linalg.generic, linalg.generic, iree_encoding.unset_encoding}
// CHECK:         %[[MM:.+]] = linalg.generic {{.*}} outs(%{{.*}} : tensor<8x32xi32, #[[ACC:encoding[0-9]*]]>)
// CHECK:         } -> tensor<8x32xi32, #[[ACC]]>
// CHECK-NEXT:    %[[O:.+]] = tensor.empty() : tensor<8x32xf32, #[[ACC]]>
// CHECK-NEXT:    %[[G:.+]] = linalg.generic {{.*}} ins(%[[MM]] : tensor<8x32xi32, #[[ACC]]>) outs(%[[O]] : tensor<8x32xf32, #[[ACC]]>)
// CHECK:         iree_encoding.unset_encoding %[[G]] : tensor<8x32xf32, #[[ACC]]> -> tensor<8x32xf32>
#map = affine_map<(d0, d1, d2) -> (d0, d2)>
#map1 = affine_map<(d0, d1, d2) -> (d1, d2)>
#map2 = affine_map<(d0, d1, d2) -> (d0, d1)>
#id = affine_map<(d0, d1) -> (d0, d1)>
#lhs = #iree_encoding.encoding<operand_index = 0 : index, op_type = matmul, element_types = [i8, i8, i32], user_indexing_maps = [#map, #map1, #map2], iteration_sizes = [8, 32, 16]>
#rhs = #iree_encoding.encoding<operand_index = 1 : index, op_type = matmul, element_types = [i8, i8, i32], user_indexing_maps = [#map, #map1, #map2], iteration_sizes = [8, 32, 16]>
#out = #iree_encoding.encoding<operand_index = 2 : index, op_type = matmul, element_types = [i8, i8, i32], user_indexing_maps = [#map, #map1, #map2], iteration_sizes = [8, 32, 16]>
func.func @sink_after_generic_contraction(%a: tensor<8x16xi8>, %b: tensor<32x16xi8>) -> tensor<8x32xf32> {
  %0 = flow.dispatch.region -> (tensor<8x32xf32>) {
    %zero = arith.constant 0 : i32
    %e = tensor.empty() : tensor<8x32xf32>
    %scale = arith.constant 2.500000e-01 : f32
    %l = iree_encoding.set_encoding %a : tensor<8x16xi8> -> tensor<8x16xi8, #lhs>
    %r = iree_encoding.set_encoding %b : tensor<32x16xi8> -> tensor<32x16xi8, #rhs>
    %ee = tensor.empty() : tensor<8x32xi32, #out>
    %f = linalg.fill ins(%zero : i32) outs(%ee : tensor<8x32xi32, #out>) -> tensor<8x32xi32, #out>
    %m = linalg.generic {indexing_maps = [#map, #map1, #map2], iterator_types = ["parallel", "parallel", "reduction"]} ins(%l, %r : tensor<8x16xi8, #lhs>, tensor<32x16xi8, #rhs>) outs(%f : tensor<8x32xi32, #out>) {
    ^bb0(%x: i8, %y: i8, %o: i32):
      %xe = arith.extsi %x : i8 to i32
      %ye = arith.extsi %y : i8 to i32
      %p = arith.muli %xe, %ye : i32
      %s = arith.addi %o, %p : i32
      linalg.yield %s : i32
    } -> tensor<8x32xi32, #out>
    %u = iree_encoding.unset_encoding %m : tensor<8x32xi32, #out> -> tensor<8x32xi32>
    %d = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]} ins(%u : tensor<8x32xi32>) outs(%e : tensor<8x32xf32>) {
    ^bb0(%x: i32, %o: f32):
      %c = arith.sitofp %x : i32 to f32
      %t = arith.mulf %c, %scale : f32
      linalg.yield %t : f32
    } -> tensor<8x32xf32>
    flow.return %d : tensor<8x32xf32>
  }
  return %0 : tensor<8x32xf32>
}
