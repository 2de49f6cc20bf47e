// RUN: egg-dispatch opt --split-input-file --rules materialize --target x86_64-avx2 %s | filecheck %s

// Encodings become pack / mmt4d / unpack with AVX2's 8x8x1 tiles (docs/iree-data-tiling.md §4).
// CHECK-LABEL: plans for @materialize_matmul: {{[1-9]}}
// CHECK:       linalg.pack %arg0 padding_value(%{{.*}} : f32) outer_dims_perm = [0, 1] inner_dims_pos = [0, 1] inner_tiles = [8, 1] into %{{.*}} : tensor<16x4xf32> -> tensor<2x4x8x1xf32>
// CHECK:       linalg.mmt4d ins(%{{.*}}, %{{.*}} : tensor<2x4x8x1xf32>, tensor<3x4x8x1xf32>) outs(%{{.*}} : tensor<2x3x8x8xf32>)
// CHECK:       linalg.unpack %{{.*}} outer_dims_perm = [0, 1] inner_dims_pos = [0, 1] inner_tiles = [8, 8] into %{{.*}} : tensor<2x3x8x8xf32> -> tensor<16x24xf32>
func.func @materialize_matmul(%lhs: tensor<16x4xf32>, %rhs: tensor<24x4xf32>) -> tensor<16x24xf32> {
  %zero = arith.constant 0.0 : f32
  %acc_e = tensor.empty() : tensor<16x24xf32>
  %acc = linalg.fill ins(%zero : f32) outs(%acc_e : tensor<16x24xf32>) -> tensor<16x24xf32>
  %r = linalg.matmul indexing_maps = [affine_map<(d0, d1, d2) -> (d0, d2)>, affine_map<(d0, d1, d2) -> (d1, d2)>, affine_map<(d0, d1, d2) -> (d0, d1)>] ins(%lhs, %rhs : tensor<16x4xf32>, tensor<24x4xf32>) outs(%acc : tensor<16x24xf32>) -> tensor<16x24xf32>
  return %r : tensor<16x24xf32>
}

// -----

// Condition 4, narrow N (N=4): the result layout is transposed and mmt4d runs on swapped operands (docs/iree-data-tiling.md §1.9):
// mmt4d(RHS 1x64x4x1, LHS 4x64x8x1) -> 1x4x4x8, unpacked with outer [1, 0], tiles [4, 8].
// CHECK-LABEL: plans for @materialize_narrow_n: {{[1-9]}}
// CHECK:       linalg.mmt4d ins(%{{.*}}, %{{.*}} : tensor<1x64x4x1xf32>, tensor<4x64x8x1xf32>) outs(%{{.*}} : tensor<1x4x4x8xf32>)
// CHECK:       linalg.unpack %{{.*}} outer_dims_perm = [1, 0] inner_dims_pos = [1, 0] inner_tiles = [4, 8]
func.func @materialize_narrow_n(%lhs: tensor<32x64xf32>, %rhs: tensor<4x64xf32>) -> tensor<32x4xf32> {
  %zero = arith.constant 0.0 : f32
  %acc_e = tensor.empty() : tensor<32x4xf32>
  %acc = linalg.fill ins(%zero : f32) outs(%acc_e : tensor<32x4xf32>) -> tensor<32x4xf32>
  %r = linalg.matmul indexing_maps = [affine_map<(d0, d1, d2) -> (d0, d2)>, affine_map<(d0, d1, d2) -> (d1, d2)>, affine_map<(d0, d1, d2) -> (d0, d1)>] ins(%lhs, %rhs : tensor<32x64xf32>, tensor<4x64xf32>) outs(%acc : tensor<32x4xf32>) -> tensor<32x4xf32>
  return %r : tensor<32x4xf32>
}
