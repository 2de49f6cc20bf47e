// RUN: egg-dispatch opt --split-input-file --rules noop --target none %s | filecheck %s

// Target none resolves every encoding to the identity, whatever the sizes: the set_encoding of a
// dynamically shaped tensor folds away (the plan returns the argument itself).
// CHECK-LABEL: plans for @fold_identity_dynamic_set_encoding: 1; {{.*}} fold-identity-set-encoding
// CHECK:       plan 0 of @fold_identity_dynamic_set_encoding:
// CHECK:       func.return %arg0 : tensor<?x8xf32>
#map = affine_map<(d0, d1, d2) -> (d0, d2)>
#map1 = affine_map<(d0, d1, d2) -> (d1, d2)>
#map2 = affine_map<(d0, d1, d2) -> (d0, d1)>
#lhs = #iree_encoding.encoding<operand_index = 0 : index, op_type = matmul, element_types = [f32, f32, f32], user_indexing_maps = [#map, #map1, #map2], iteration_sizes = [?, 8, 8]>
func.func @fold_identity_dynamic_set_encoding(%x: tensor<?x8xf32>, %n: index) -> tensor<?x8xf32, #lhs> {
  %s = iree_encoding.set_encoding %x encoding_dims{%n} : tensor<?x8xf32> -> tensor<?x8xf32, #lhs>
  return %s : tensor<?x8xf32, #lhs>
}
