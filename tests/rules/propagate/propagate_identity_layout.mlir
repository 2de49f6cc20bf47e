// RUN: egg-dispatch opt --split-input-file --rules propagate --target none %s | filecheck %s

// propagate_slice.egg condition 4: with no resolver (target none) the layout is the identity: nothing to propagate.
// CHECK-LABEL: plans for @dont_propagate_identity_layout: {{[1-9]}}
// CHECK-NOT:   tensor<16x8xf32, #encoding
func.func @dont_propagate_identity_layout(%rhs: tensor<8x8xf32>) -> tensor<8x8xf32> {
  %zero = arith.constant 0.0 : f32
  %w = arith.constant dense<[[-1.00, 0.25, -0.75, 0.50, -0.50, 0.75, -0.25, 1.00], [0.00, -1.00, 0.25, -0.75, 0.50, -0.50, 0.75, -0.25], [1.00, 0.00, -1.00, 0.25, -0.75, 0.50, -0.50, 0.75], [-0.25, 1.00, 0.00, -1.00, 0.25, -0.75, 0.50, -0.50], [0.75, -0.25, 1.00, 0.00, -1.00, 0.25, -0.75, 0.50], [-0.50, 0.75, -0.25, 1.00, 0.00, -1.00, 0.25, -0.75], [0.50, -0.50, 0.75, -0.25, 1.00, 0.00, -1.00, 0.25], [-0.75, 0.50, -0.50, 0.75, -0.25, 1.00, 0.00, -1.00], [0.25, -0.75, 0.50, -0.50, 0.75, -0.25, 1.00, 0.00], [-1.00, 0.25, -0.75, 0.50, -0.50, 0.75, -0.25, 1.00], [0.00, -1.00, 0.25, -0.75, 0.50, -0.50, 0.75, -0.25], [1.00, 0.00, -1.00, 0.25, -0.75, 0.50, -0.50, 0.75], [-0.25, 1.00, 0.00, -1.00, 0.25, -0.75, 0.50, -0.50], [0.75, -0.25, 1.00, 0.00, -1.00, 0.25, -0.75, 0.50], [-0.50, 0.75, -0.25, 1.00, 0.00, -1.00, 0.25, -0.75], [0.50, -0.50, 0.75, -0.25, 1.00, 0.00, -1.00, 0.25]]> : tensor<16x8xf32>
  %s = tensor.extract_slice %w[8, 0] [8, 8] [1, 1] : tensor<16x8xf32> to tensor<8x8xf32>
  %acc_e = tensor.empty() : tensor<8x8xf32>
  %acc = linalg.fill ins(%zero : f32) outs(%acc_e : tensor<8x8xf32>) -> tensor<8x8xf32>
  %r = linalg.matmul indexing_maps = [affine_map<(d0, d1, d2) -> (d0, d2)>, affine_map<(d0, d1, d2) -> (d1, d2)>, affine_map<(d0, d1, d2) -> (d0, d1)>] ins(%s, %rhs : tensor<8x8xf32>, tensor<8x8xf32>) outs(%acc : tensor<8x8xf32>) -> tensor<8x8xf32>
  return %r : tensor<8x8xf32>
}
