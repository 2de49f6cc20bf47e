// RUN: egg-dispatch opt --split-input-file --no-initial-plan --rules fuse --target x86_64-avx2 %s | filecheck %s

// FuseEncodingOpsIntoDispatchRegions, fuse_encode.egg condition 1: the set_encoding reads a flow.tensor.slice (IREE's
// copy of a hoisted slice of an argument), no value an op computes: there is no producer dispatch to
// fuse it into. The LHS encode stays in the matmul's dispatch in every plan (only the RHS's hoisted
// encode is fused back there, by rule (a)).
// CHECK-LABEL: plans for @dont_fuse_encode_into_a_copy: 2; {{.*}}rule matches: encoding-of-contract 1, fuse-pack-into-contraction-rhs 1{{$}}
// CHECK:       plan 0 of @dont_fuse_encode_into_a_copy: dispatch{tensor.extract_slice} encode dispatch{iree_encoding.set_encoding, linalg.fill, linalg.matmul, iree_encoding.unset_encoding}
// CHECK:       plan 1 of @dont_fuse_encode_into_a_copy: dispatch{tensor.extract_slice} dispatch{iree_encoding.set_encoding, iree_encoding.set_encoding, linalg.fill, linalg.matmul, iree_encoding.unset_encoding}
#map = affine_map<(d0, d1, d2) -> (d0, d2)>
#map1 = affine_map<(d0, d1, d2) -> (d2, d1)>
#map2 = affine_map<(d0, d1, d2) -> (d0, d1)>
#lhs = #iree_encoding.encoding<operand_index = 0 : index, op_type = matmul, element_types = [f32, f32, f32], user_indexing_maps = [#map, #map1, #map2], iteration_sizes = [8, 32, 16]>
#rhs = #iree_encoding.encoding<operand_index = 1 : index, op_type = matmul, element_types = [f32, f32, f32], user_indexing_maps = [#map, #map1, #map2], iteration_sizes = [8, 32, 16]>
#out = #iree_encoding.encoding<operand_index = 2 : index, op_type = matmul, element_types = [f32, f32, f32], user_indexing_maps = [#map, #map1, #map2], iteration_sizes = [8, 32, 16]>
func.func @dont_fuse_encode_into_a_copy(%a: tensor<16x16xf32>, %b: tensor<16x32xf32>) -> tensor<8x32xf32> {
  %c0 = arith.constant 0 : index
  %c8 = arith.constant 8 : index
  %c16 = arith.constant 16 : index
  %s = flow.tensor.slice %a[%c8, %c0 for %c8, %c16] : tensor<16x16xf32> -> tensor<8x16xf32>
  %r = flow.tensor.encode %b : tensor<16x32xf32> -> tensor<16x32xf32, #rhs>
  %0 = flow.dispatch.region -> (tensor<8x32xf32>) {
    %l = iree_encoding.set_encoding %s : tensor<8x16xf32> -> tensor<8x16xf32, #lhs>
    %zero = arith.constant 0.0 : f32
    %ee = tensor.empty() : tensor<8x32xf32, #out>
    %f = linalg.fill ins(%zero : f32) outs(%ee : tensor<8x32xf32, #out>) -> tensor<8x32xf32, #out>
    %m = linalg.matmul indexing_maps = [#map, #map1, #map2] ins(%l, %r : tensor<8x16xf32, #lhs>, tensor<16x32xf32, #rhs>) outs(%f : tensor<8x32xf32, #out>) -> tensor<8x32xf32, #out>
    %u = iree_encoding.unset_encoding %m : tensor<8x32xf32, #out> -> tensor<8x32xf32>
    flow.return %u : tensor<8x32xf32>
  }
  func.return %0 : tensor<8x32xf32>
}
