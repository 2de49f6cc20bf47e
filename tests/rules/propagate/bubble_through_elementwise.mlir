// RUN: egg-dispatch opt --split-input-file --rules propagate --target x86_64-avx2 %s | filecheck %s

// A weight stored as f16 and widened by an extf generic (cloned into the matmul's dispatch, like
// IREE's bit-extend ops): the set_encoding moves above the extf, so the f16 weight is what gets
// packed and the widening runs on the packed tiles.
// CHECK-LABEL: plans for @bubble_set_encoding_through_dequant: {{[2-9]}}
// CHECK:       iree_encoding.set_encoding %{{.*}} : tensor<16x32xf16> -> tensor<16x32xf16, #encoding
// CHECK:       linalg.generic {{.*}} ins(%{{.*}} : tensor<16x32xf16, #encoding{{[0-9]*}}>) outs(%{{.*}} : tensor<16x32xf32, #encoding
func.func @bubble_set_encoding_through_dequant(%x: tensor<16x32xf32>) -> tensor<16x16xf32> {
  %zero = arith.constant 0.0 : f32
  %w16 = arith.constant dense<1.5> : tensor<16x32xf16>
  %e = tensor.empty() : tensor<16x32xf32>
  %w = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]} ins(%w16 : tensor<16x32xf16>) outs(%e : tensor<16x32xf32>) {
  ^bb0(%i: f16, %o: f32):
    %f = arith.extf %i : f16 to f32
    linalg.yield %f : f32
  } -> tensor<16x32xf32>
  %acc_e = tensor.empty() : tensor<16x16xf32>
  %acc = linalg.fill ins(%zero : f32) outs(%acc_e : tensor<16x16xf32>) -> tensor<16x16xf32>
  %r = linalg.matmul indexing_maps = [affine_map<(d0, d1, d2) -> (d0, d2)>, affine_map<(d0, d1, d2) -> (d1, d2)>, affine_map<(d0, d1, d2) -> (d0, d1)>] ins(%x, %w : tensor<16x32xf32>, tensor<16x32xf32>) outs(%acc : tensor<16x16xf32>) -> tensor<16x16xf32>
  return %r : tensor<16x16xf32>
}

// -----

// propagate_bubble.egg condition 1: the producer transposes (its input map is not the identity): the packed layout
// would not line up with the input's dims, so the set_encoding stays below it.
// CHECK-LABEL: plans for @dont_bubble_through_transposing_generic: {{[1-9]}}
// CHECK-NOT:   -> tensor<32x16xf16, #encoding
func.func @dont_bubble_through_transposing_generic(%x: tensor<16x32xf32>) -> tensor<16x16xf32> {
  %zero = arith.constant 0.0 : f32
  %w16 = arith.constant dense<1.5> : tensor<32x16xf16>
  %e = tensor.empty() : tensor<16x32xf32>
  %w = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d1, d0)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]} ins(%w16 : tensor<32x16xf16>) outs(%e : tensor<16x32xf32>) {
  ^bb0(%i: f16, %o: f32):
    %f = arith.extf %i : f16 to f32
    linalg.yield %f : f32
  } -> tensor<16x32xf32>
  %acc_e = tensor.empty() : tensor<16x16xf32>
  %acc = linalg.fill ins(%zero : f32) outs(%acc_e : tensor<16x16xf32>) -> tensor<16x16xf32>
  %r = linalg.matmul indexing_maps = [affine_map<(d0, d1, d2) -> (d0, d2)>, affine_map<(d0, d1, d2) -> (d1, d2)>, affine_map<(d0, d1, d2) -> (d0, d1)>] ins(%x, %w : tensor<16x32xf32>, tensor<16x32xf32>) outs(%acc : tensor<16x16xf32>) -> tensor<16x16xf32>
  return %r : tensor<16x16xf32>
}

// -----

// propagate_bubble.egg condition 2: the widening generic's init is a value the program passes in,
// not a tensor.empty: an encoded init would have to be made from it as well, so the set_encoding
// stays below the generic and only the f32 weight is packed.
// CHECK-LABEL: plans for @dont_bubble_through_generic_with_an_init_value: {{[1-9]}}
// CHECK-NOT:   -> tensor<16x32xf16, #encoding
func.func @dont_bubble_through_generic_with_an_init_value(%x: tensor<16x32xf32>, %init: tensor<16x32xf32>) -> tensor<16x16xf32> {
  %zero = arith.constant 0.0 : f32
  %w16 = arith.constant dense<1.5> : tensor<16x32xf16>
  %w = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]} ins(%w16 : tensor<16x32xf16>) outs(%init : tensor<16x32xf32>) {
  ^bb0(%i: f16, %o: f32):
    %f = arith.extf %i : f16 to f32
    linalg.yield %f : f32
  } -> tensor<16x32xf32>
  %acc_e = tensor.empty() : tensor<16x16xf32>
  %acc = linalg.fill ins(%zero : f32) outs(%acc_e : tensor<16x16xf32>) -> tensor<16x16xf32>
  %r = linalg.matmul indexing_maps = [affine_map<(d0, d1, d2) -> (d0, d2)>, affine_map<(d0, d1, d2) -> (d1, d2)>, affine_map<(d0, d1, d2) -> (d0, d1)>] ins(%x, %w : tensor<16x32xf32>, tensor<16x32xf32>) outs(%acc : tensor<16x16xf32>) -> tensor<16x16xf32>
  return %r : tensor<16x16xf32>
}
