// RUN: egg-dispatch opt --split-input-file --rules noop --target %S/square_tiles.json %s | filecheck %s

// With 8x8x8 tiles the first matmul's RESULT layout (8x8 on M,N) is the second matmul's LHS
// layout (8x8 on M,K): unset_encoding followed by set_encoding cancels, and the packed result
// feeds the next matmul directly.
// CHECK-LABEL: plans for @cancel_unset_then_set_encoding: {{[1-9]}}
// CHECK:       of @cancel_unset_then_set_encoding: dispatch{iree_encoding.set_encoding, iree_encoding.set_encoding, linalg.fill, linalg.matmul} dispatch{iree_encoding.set_encoding, linalg.fill, linalg.matmul, iree_encoding.unset_encoding}
func.func @cancel_unset_then_set_encoding(%a: tensor<8x8xf32>, %b: tensor<8x8xf32>, %c: tensor<8x8xf32>) -> tensor<8x8xf32> {
  %zero = arith.constant 0.0 : f32
  %a0_e = tensor.empty() : tensor<8x8xf32>
  %a0 = linalg.fill ins(%zero : f32) outs(%a0_e : tensor<8x8xf32>) -> tensor<8x8xf32>
  %r0 = linalg.matmul indexing_maps = [affine_map<(d0, d1, d2) -> (d0, d2)>, affine_map<(d0, d1, d2) -> (d1, d2)>, affine_map<(d0, d1, d2) -> (d0, d1)>] ins(%a, %b : tensor<8x8xf32>, tensor<8x8xf32>) outs(%a0 : tensor<8x8xf32>) -> tensor<8x8xf32>
  %a1_e = tensor.empty() : tensor<8x8xf32>
  %a1 = linalg.fill ins(%zero : f32) outs(%a1_e : tensor<8x8xf32>) -> tensor<8x8xf32>
  %r1 = linalg.matmul indexing_maps = [affine_map<(d0, d1, d2) -> (d0, d2)>, affine_map<(d0, d1, d2) -> (d1, d2)>, affine_map<(d0, d1, d2) -> (d0, d1)>] ins(%r0, %c : tensor<8x8xf32>, tensor<8x8xf32>) outs(%a1 : tensor<8x8xf32>) -> tensor<8x8xf32>
  return %r1 : tensor<8x8xf32>
}
