// RUN: egg-dispatch opt --split-input-file --rules materialize --target none %s | filecheck %s

// Target none has no tiles for any size: the dynamic contraction keeps its encodings (no pack).
// CHECK-LABEL: plans for @dont_materialize_dynamic_identity_layout: 1; {{.*}} rule matches: none
// CHECK-NOT:   linalg.pack
func.func @dont_materialize_dynamic_identity_layout(%x: tensor<?x8xf32>, %w: tensor<8x8xf32>) -> tensor<?x8xf32> {
  %c0 = arith.constant 0 : index
  %zero = arith.constant 0.0 : f32
  %d0 = tensor.dim %x, %c0 : tensor<?x8xf32>
  %d = util.assume.int %d0<umin = 8, umax = 64, udiv = 8> : index
  %acc_e = tensor.empty(%d) : tensor<?x8xf32>
  %acc = linalg.fill ins(%zero : f32) outs(%acc_e : tensor<?x8xf32>) -> tensor<?x8xf32>
  %r = linalg.matmul indexing_maps = [affine_map<(d0, d1, d2) -> (d0, d2)>, affine_map<(d0, d1, d2) -> (d1, d2)>, affine_map<(d0, d1, d2) -> (d0, d1)>] ins(%x, %w : tensor<?x8xf32>, tensor<8x8xf32>) outs(%acc : tensor<?x8xf32>) -> tensor<?x8xf32>
  return %r : tensor<?x8xf32>
}
