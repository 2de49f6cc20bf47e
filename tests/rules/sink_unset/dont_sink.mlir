// RUN: egg-dispatch opt --split-input-file --rules sink_unset --target x86_64-avx2 %s | filecheck %s

// Each case has the consumer in the matmul's dispatch with the unset_encoding before it (IREE's start
// state) and one condition of rules/sink_unset.egg failing: the only plan is the start state.
// (Conditions 1, 4 with a transpose, 7 and 8: dont_sink_in_dispatch.mlir, dont_sink_identity_layout.mlir.)


// Condition 2: the bias is read through a map with a constant ((d0, d1) -> (0, d1)), not a projected
// permutation: the encoding of a bias [1, N] so read has no meaning.
// CHECK-LABEL: plans for @dont_sink_with_constant_map: 1; {{.*}} rule matches: none
// CHECK:       of @dont_sink_with_constant_map: dispatch{{.*}}linalg.matmul, iree_encoding.unset_encoding, linalg.generic}
func.func @dont_sink_with_constant_map(%a: tensor<8x16xf32>, %b: tensor<16x32xf32>, %bias: tensor<1x32xf32>) -> tensor<8x32xf32> {
  %zero = arith.constant 0.0 : f32
  %acc_e = tensor.empty() : tensor<8x32xf32>
  %acc = linalg.fill ins(%zero : f32) outs(%acc_e : tensor<8x32xf32>) -> tensor<8x32xf32>
  %r = linalg.matmul ins(%a, %b : tensor<8x16xf32>, tensor<16x32xf32>) outs(%acc : tensor<8x32xf32>) -> tensor<8x32xf32>
  %e = tensor.empty() : tensor<8x32xf32>
  %y = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (0, d1)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]} ins(%r, %bias : tensor<8x32xf32>, tensor<1x32xf32>) outs(%e : tensor<8x32xf32>) {
  ^bb0(%x: f32, %c: f32, %o: f32):
    %s = arith.addf %x, %c : f32
    linalg.yield %s : f32
  } -> tensor<8x32xf32>
  return %y : tensor<8x32xf32>
}

// -----

// Condition 3: the matmul's result is the generic's init (read as %o), not one of its inputs.
// CHECK-LABEL: plans for @dont_sink_into_init: 1; {{.*}} rule matches: none
// CHECK:       of @dont_sink_into_init: dispatch{{.*}}linalg.matmul, iree_encoding.unset_encoding, linalg.generic}
func.func @dont_sink_into_init(%a: tensor<8x16xf32>, %b: tensor<16x32xf32>, %bias: tensor<32xf32>) -> tensor<8x32xf32> {
  %zero = arith.constant 0.0 : f32
  %acc_e = tensor.empty() : tensor<8x32xf32>
  %acc = linalg.fill ins(%zero : f32) outs(%acc_e : tensor<8x32xf32>) -> tensor<8x32xf32>
  %r = linalg.matmul ins(%a, %b : tensor<8x16xf32>, tensor<16x32xf32>) outs(%acc : tensor<8x32xf32>) -> tensor<8x32xf32>
  %y = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d1)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]} ins(%bias : tensor<32xf32>) outs(%r : tensor<8x32xf32>) {
  ^bb0(%c: f32, %o: f32):
    %s = arith.addf %o, %c : f32
    linalg.yield %s : f32
  } -> tensor<8x32xf32>
  return %y : tensor<8x32xf32>
}

// -----

// Condition 4: the generic broadcasts the encoded tensor (a new trailing loop, PR #24171).
// CHECK-LABEL: plans for @dont_sink_broadcast_of_encoded: 1; {{.*}} rule matches: none
// CHECK:       of @dont_sink_broadcast_of_encoded: dispatch{{.*}}linalg.matmul, iree_encoding.unset_encoding, linalg.generic}
func.func @dont_sink_broadcast_of_encoded(%a: tensor<8x16xf32>, %b: tensor<16x32xf32>) -> tensor<8x32x4xf32> {
  %zero = arith.constant 0.0 : f32
  %acc_e = tensor.empty() : tensor<8x32xf32>
  %acc = linalg.fill ins(%zero : f32) outs(%acc_e : tensor<8x32xf32>) -> tensor<8x32xf32>
  %r = linalg.matmul ins(%a, %b : tensor<8x16xf32>, tensor<16x32xf32>) outs(%acc : tensor<8x32xf32>) -> tensor<8x32xf32>
  %e = tensor.empty() : tensor<8x32x4xf32>
  %y = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2) -> (d0, d1)>, affine_map<(d0, d1, d2) -> (d0, d1, d2)>], iterator_types = ["parallel", "parallel", "parallel"]} ins(%r : tensor<8x32xf32>) outs(%e : tensor<8x32x4xf32>) {
  ^bb0(%x: f32, %o: f32):
    linalg.yield %x : f32
  } -> tensor<8x32x4xf32>
  return %y : tensor<8x32x4xf32>
}

// -----

// Condition 5: the output map is no permutation: (d0, d1, d2) -> (d0, d1) leaves out loop d2, so the
// all-parallel generic writes each element once per d2 (the last write kept). IREE would append that
// projection to the init's encoding, an encoded result on fewer dims than the loops; not modelled.
// CHECK-LABEL: plans for @dont_sink_projected_output: 1; {{.*}} rule matches: none
// CHECK:       of @dont_sink_projected_output: dispatch{{.*}}linalg.matmul, iree_encoding.unset_encoding, linalg.generic}
func.func @dont_sink_projected_output(%a: tensor<8x16xf32>, %b: tensor<16x32xf32>, %g: tensor<8x32x4xf32>) -> tensor<8x32xf32> {
  %zero = arith.constant 0.0 : f32
  %acc_e = tensor.empty() : tensor<8x32xf32>
  %acc = linalg.fill ins(%zero : f32) outs(%acc_e : tensor<8x32xf32>) -> tensor<8x32xf32>
  %r = linalg.matmul ins(%a, %b : tensor<8x16xf32>, tensor<16x32xf32>) outs(%acc : tensor<8x32xf32>) -> tensor<8x32xf32>
  %e = tensor.empty() : tensor<8x32xf32>
  %y = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2) -> (d0, d1)>, affine_map<(d0, d1, d2) -> (d0, d1, d2)>, affine_map<(d0, d1, d2) -> (d0, d1)>], iterator_types = ["parallel", "parallel", "parallel"]} ins(%r, %g : tensor<8x32xf32>, tensor<8x32x4xf32>) outs(%e : tensor<8x32xf32>) {
  ^bb0(%x: f32, %c: f32, %o: f32):
    %s = arith.addf %x, %c : f32
    linalg.yield %s : f32
  } -> tensor<8x32xf32>
  return %y : tensor<8x32xf32>
}
