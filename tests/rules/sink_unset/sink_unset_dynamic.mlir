// RUN: egg-dispatch opt --split-input-file --no-initial-plan --rules sink_unset --target x86_64-avx2 %s | filecheck %s

// Dynamic shapes. The conditions are structural (maps, iterator types, operand kinds, the layout being
// tiled), so a matmul with a dynamic row count (IREE's form: the operands encoded by flow.tensor.encode)
// sinks its unset_encoding below a bias + ReLU as a static one does (the rule fires: the generic on the
// encoded [?, 8] accumulator, the bias [8] encoded to match). That plan packs the bias inside the
// dispatch next to an accumulator of unbounded size, which the fused-pack footprint cannot bound
// (refuse-fused-pack-generic-operand); with `hoist` (explore's default) the bias is encoded by a
// dispatch of its own and the sunk plan stands.
// CHECK-LABEL: plans for @sink_dynamic_rows: 1; {{.*}} refuse-fused-pack-generic-operand 1{{.*}} sink-unset-through-elementwise 1
#map = affine_map<(d0, d1, d2) -> (d0, d2)>
#map1 = affine_map<(d0, d1, d2) -> (d1, d2)>
#map2 = affine_map<(d0, d1, d2) -> (d0, d1)>
#encoding = #iree_encoding.encoding<operand_index = 0 : index, op_type = matmul, element_types = [f32, f32, f32], user_indexing_maps = [#map, #map1, #map2], iteration_sizes = [?, 8, 8]>
#encoding1 = #iree_encoding.encoding<operand_index = 1 : index, op_type = matmul, element_types = [f32, f32, f32], user_indexing_maps = [#map, #map1, #map2], iteration_sizes = [?, 8, 8]>
#encoding2 = #iree_encoding.encoding<operand_index = 2 : index, op_type = matmul, element_types = [f32, f32, f32], user_indexing_maps = [#map, #map1, #map2], iteration_sizes = [?, 8, 8]>
func.func @sink_dynamic_rows(%arg0: tensor<?x8xf32>, %arg1: tensor<8x8xf32>, %bias: tensor<8xf32>) -> tensor<?x8xf32> {
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
    %e = tensor.empty(%m) : tensor<?x8xf32>
    %y = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d1)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]} ins(%7, %bias : tensor<?x8xf32>, tensor<8xf32>) outs(%e : tensor<?x8xf32>) {
    ^bb0(%x: f32, %c: f32, %o: f32):
      %s = arith.addf %x, %c : f32
      %t = arith.maximumf %s, %3 : f32
      linalg.yield %t : f32
    } -> tensor<?x8xf32>
    flow.return %y : tensor<?x8xf32>
  }
  func.return %0 : tensor<?x8xf32>
}

// -----

// Condition 6 with a dynamic row count: a body that reads linalg.index sinks like any other (its index
// on the tiles is the logical one, outer * tile + inner, as IREE's codegen rewrites it).
// CHECK-LABEL: plans for @sink_dynamic_index: 2; {{.*}} rule matches: {{.*}}sink-unset-through-elementwise 1
// CHECK:       of @sink_dynamic_index: {{.*}}linalg.matmul, linalg.generic, iree_encoding.unset_encoding}
#map = affine_map<(d0, d1, d2) -> (d0, d2)>
#map1 = affine_map<(d0, d1, d2) -> (d1, d2)>
#map2 = affine_map<(d0, d1, d2) -> (d0, d1)>
#encoding = #iree_encoding.encoding<operand_index = 0 : index, op_type = matmul, element_types = [f32, f32, f32], user_indexing_maps = [#map, #map1, #map2], iteration_sizes = [?, 8, 8]>
#encoding1 = #iree_encoding.encoding<operand_index = 1 : index, op_type = matmul, element_types = [f32, f32, f32], user_indexing_maps = [#map, #map1, #map2], iteration_sizes = [?, 8, 8]>
#encoding2 = #iree_encoding.encoding<operand_index = 2 : index, op_type = matmul, element_types = [f32, f32, f32], user_indexing_maps = [#map, #map1, #map2], iteration_sizes = [?, 8, 8]>
func.func @sink_dynamic_index(%arg0: tensor<?x8xf32>, %arg1: tensor<8x8xf32>) -> tensor<?x8xf32> {
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
    %e = tensor.empty(%m) : tensor<?x8xf32>
    %y = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]} ins(%7 : tensor<?x8xf32>) outs(%e : tensor<?x8xf32>) {
    ^bb0(%x: f32, %o: f32):
      %i = linalg.index 1 : index
      %ii = arith.index_cast %i : index to i32
      %f = arith.sitofp %ii : i32 to f32
      %s = arith.addf %x, %f : f32
      linalg.yield %s : f32
    } -> tensor<?x8xf32>
    flow.return %y : tensor<?x8xf32>
  }
  func.return %0 : tensor<?x8xf32>
}
