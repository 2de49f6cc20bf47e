// RUN: egg-dispatch opt --split-input-file --rules materialize --target x86_64-avx2 %s | filecheck %s

// A contraction with a dynamic row count materializes as packs into dynamically sized packed tensors
// (ceil(rows / 8) outer tiles, zero-padded), an mmt4d (operands swapped: narrow N) and an unpack to the
// logical rows. util.assume.int makes the rows multiples of 8, so the packs fused into the dispatch are
// legal (the plan's only form here).
// CHECK-LABEL: plans for @materialize_dynamic_matmul: 1;
// CHECK:       %[[R:.+]] = util.assume.int
// CHECK:       %[[T:.+]] = arith.ceildivui %[[R]], %{{.*}} : index
// CHECK:       tensor.empty(%[[T]]) : tensor<?x8x8x1xf32>
// CHECK:       linalg.pack %arg0 padding_value(%{{.*}} : f32) outer_dims_perm = [0, 1] inner_dims_pos = [0, 1] inner_tiles = [8, 1] into %{{.*}} : tensor<?x8xf32> -> tensor<?x8x8x1xf32>
// CHECK:       linalg.mmt4d ins(%{{.*}}, %{{.*}} : tensor<1x8x8x1xf32>, tensor<?x8x8x1xf32>) outs(%{{.*}} : tensor<1x?x8x8xf32>)
// CHECK:       linalg.unpack %{{.*}} outer_dims_perm = [1, 0] inner_dims_pos = [1, 0] inner_tiles = [8, 8] into %{{.*}} : tensor<1x?x8x8xf32> -> tensor<?x8xf32>
func.func @materialize_dynamic_matmul(%x: tensor<?x8xf32>, %w: tensor<8x8xf32>) -> tensor<?x8xf32> {
  %c0 = arith.constant 0 : index
  %zero = arith.constant 0.0 : f32
  %d0 = tensor.dim %x, %c0 : tensor<?x8xf32>
  %d = util.assume.int %d0<umin = 8, umax = 64, udiv = 8> : index
  %acc_e = tensor.empty(%d) : tensor<?x8xf32>
  %acc = linalg.fill ins(%zero : f32) outs(%acc_e : tensor<?x8xf32>) -> tensor<?x8xf32>
  %r = linalg.matmul indexing_maps = [affine_map<(d0, d1, d2) -> (d0, d2)>, affine_map<(d0, d1, d2) -> (d1, d2)>, affine_map<(d0, d1, d2) -> (d0, d1)>] ins(%x, %w : tensor<?x8xf32>, tensor<8x8xf32>) outs(%acc : tensor<?x8xf32>) -> tensor<?x8xf32>
  return %r : tensor<?x8xf32>
}
