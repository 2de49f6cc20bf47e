// RUN: egg-dispatch opt --split-input-file --rules materialize --target none %s | filecheck %s

// Conditions 1-3: with the identity layout there is nothing to pack, to unpack or to run as mmt4d.
// CHECK-LABEL: plans for @dont_materialize_identity_layout: {{[1-9]}}
// CHECK-NOT:   linalg.pack
// CHECK-NOT:   linalg.unpack
// CHECK-NOT:   linalg.mmt4d
func.func @dont_materialize_identity_layout(%lhs: tensor<8x8xf32>, %rhs: tensor<8x8xf32>) -> tensor<8x8xf32> {
  %zero = arith.constant 0.0 : f32
  %acc_e = tensor.empty() : tensor<8x8xf32>
  %acc = linalg.fill ins(%zero : f32) outs(%acc_e : tensor<8x8xf32>) -> tensor<8x8xf32>
  %r = linalg.matmul indexing_maps = [affine_map<(d0, d1, d2) -> (d0, d2)>, affine_map<(d0, d1, d2) -> (d1, d2)>, affine_map<(d0, d1, d2) -> (d0, d1)>] ins(%lhs, %rhs : tensor<8x8xf32>, tensor<8x8xf32>) outs(%acc : tensor<8x8xf32>) -> tensor<8x8xf32>
  return %r : tensor<8x8xf32>
}
