// RUN: egg-dispatch opt --split-input-file --rules fuse --target x86_64-avx512 %s | filecheck %s

// The LHS is computed by an elementwise op inside the matmul's dispatch; on AVX-512 a fused pack of
// its 8 rows is illegal (16-row tiles), so the encode moves into the producer's own dispatch.
// CHECK-LABEL: plans for @fuse_encode_into_producer: {{[1-9]}}
// CHECK:       dispatch{linalg.generic, iree_encoding.set_encoding} encode dispatch{linalg.fill, linalg.matmul,
#map = affine_map<(d0, d1, d2) -> (d0, d2)>
#map1 = affine_map<(d0, d1, d2) -> (d1, d2)>
#map2 = affine_map<(d0, d1, d2) -> (d0, d1)>
#lhs = #iree_encoding.encoding<operand_index = 0 : index, op_type = matmul, element_types = [f32, f32, f32], user_indexing_maps = [#map, #map1, #map2], iteration_sizes = [8, 8, 8]>
#rhs = #iree_encoding.encoding<operand_index = 1 : index, op_type = matmul, element_types = [f32, f32, f32], user_indexing_maps = [#map, #map1, #map2], iteration_sizes = [8, 8, 8]>
#out = #iree_encoding.encoding<operand_index = 2 : index, op_type = matmul, element_types = [f32, f32, f32], user_indexing_maps = [#map, #map1, #map2], iteration_sizes = [8, 8, 8]>

func.func @fuse_encode_into_producer(%a: tensor<8x8xf32>, %b: tensor<8x8xf32>) -> tensor<8x8xf32> {
  %zero = arith.constant 0.0 : f32
  %r = flow.tensor.encode %b : tensor<8x8xf32> -> tensor<8x8xf32, #rhs>
  %r0 = flow.dispatch.region -> (tensor<8x8xf32>) {
    %e = tensor.empty() : tensor<8x8xf32>
    %x = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]} ins(%a : tensor<8x8xf32>) outs(%e : tensor<8x8xf32>) {
    ^bb0(%i: f32, %o: f32):
      %d = arith.addf %i, %i : f32
      linalg.yield %d : f32
    } -> tensor<8x8xf32>
    %l = iree_encoding.set_encoding %x : tensor<8x8xf32> -> tensor<8x8xf32, #lhs>
    %ee = tensor.empty() : tensor<8x8xf32, #out>
    %f = linalg.fill ins(%zero : f32) outs(%ee : tensor<8x8xf32, #out>) -> tensor<8x8xf32, #out>
    %m = linalg.matmul indexing_maps = [#map, #map1, #map2] ins(%l, %r : tensor<8x8xf32, #lhs>, tensor<8x8xf32, #rhs>) outs(%f : tensor<8x8xf32, #out>) -> tensor<8x8xf32, #out>
    %u = iree_encoding.unset_encoding %m : tensor<8x8xf32, #out> -> tensor<8x8xf32>
    flow.return %u : tensor<8x8xf32>
  }
  return %r0 : tensor<8x8xf32>
}

// -----

// Condition 1: the source is a function argument, not computed by an op: that encode is the
// hoist family's (flow.tensor.encode); fuse alone leaves no legal plan on AVX-512 for it.
// CHECK-LABEL: plans for @dont_fuse_encode_into_boundary: 0;
func.func @dont_fuse_encode_into_boundary(%a: tensor<8x8xf32>, %b: tensor<8x8xf32>) -> tensor<8x8xf32> {
  %zero = arith.constant 0.0 : f32
  %acc_e = tensor.empty() : tensor<8x8xf32>
  %acc = linalg.fill ins(%zero : f32) outs(%acc_e : tensor<8x8xf32>) -> tensor<8x8xf32>
  %r = linalg.matmul indexing_maps = [affine_map<(d0, d1, d2) -> (d0, d2)>, affine_map<(d0, d1, d2) -> (d1, d2)>, affine_map<(d0, d1, d2) -> (d0, d1)>] ins(%a, %b : tensor<8x8xf32>, tensor<8x8xf32>) outs(%acc : tensor<8x8xf32>) -> tensor<8x8xf32>
  return %r : tensor<8x8xf32>
}
