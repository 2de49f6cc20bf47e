// RUN: egg-dispatch opt --split-input-file --rules fuse --target x86_64-avx2 %s | filecheck %s

// The second matmul's LHS is the first dispatch's result (matmul, bias + ReLU): IREE's start state
// encodes it inside the second matmul's dispatch; FuseEncodingOpsIntoDispatchRegions moves the
// set_encoding into the producer dispatch, which returns the encoded value (IREE's own MLP plan). Its @dont_ case: dont_fuse_encode_into_a_copy.mlir.
// fuse_pack.egg condition 3 (pack-source): that encode is never pulled back into
// the second matmul's dispatch with its producer, so no dispatch holds both matmuls.
// CHECK-LABEL: plans for @fuse_encode_into_producer_dispatch: 4; {{.*}}fuse-encode-into-producer-dispatch-lhs 1
// CHECK-NOT:   dispatch{{[{][^}]*}}linalg.matmul{{[^}]*}}linalg.matmul
// CHECK:       of @fuse_encode_into_producer_dispatch: dispatch{{[{].*}}linalg.matmul, iree_encoding.unset_encoding, linalg.generic, iree_encoding.set_encoding} dispatch{iree_encoding.set_encoding, linalg.fill, linalg.matmul
// CHECK:         %[[D:.+]] = flow.dispatch.region -> (tensor<8x32xf32, #encoding{{[0-9]*}}>)
// CHECK-NOT:   dispatch{{[{][^}]*}}linalg.matmul{{[^}]*}}linalg.matmul
func.func @fuse_encode_into_producer_dispatch(%x: tensor<8x16xf32>, %w1: tensor<16x32xf32>, %b1: tensor<32xf32>, %w2: tensor<32x8xf32>) -> tensor<8x8xf32> {
  %zero = arith.constant 0.0 : f32
  %e1 = tensor.empty() : tensor<8x32xf32>
  %f1 = linalg.fill ins(%zero : f32) outs(%e1 : tensor<8x32xf32>) -> tensor<8x32xf32>
  %m1 = linalg.matmul ins(%x, %w1 : tensor<8x16xf32>, tensor<16x32xf32>) outs(%f1 : tensor<8x32xf32>) -> tensor<8x32xf32>
  %h = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d1)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]} ins(%m1, %b1 : tensor<8x32xf32>, tensor<32xf32>) outs(%e1 : tensor<8x32xf32>) {
  ^bb0(%a: f32, %b: f32, %o: f32):
    %s = arith.addf %a, %b : f32
    %r = arith.maximumf %s, %zero : f32
    linalg.yield %r : f32
  } -> tensor<8x32xf32>
  %e2 = tensor.empty() : tensor<8x8xf32>
  %f2 = linalg.fill ins(%zero : f32) outs(%e2 : tensor<8x8xf32>) -> tensor<8x8xf32>
  %m2 = linalg.matmul ins(%h, %w2 : tensor<8x32xf32>, tensor<32x8xf32>) outs(%f2 : tensor<8x8xf32>) -> tensor<8x8xf32>
  return %m2 : tensor<8x8xf32>
}

