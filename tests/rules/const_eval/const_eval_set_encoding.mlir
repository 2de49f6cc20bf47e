// RUN: egg-dispatch opt --split-input-file --rules const_eval --target x86_64-avx2 %s | filecheck %s

// A const-expr chain (constant -> slice -> set_encoding) is evaluated once at module load into a
// global, as HoistIntoGlobals does with IREE's hoisted encodes.
// CHECK-LABEL: plans for @const_eval_row_slice_of_constant: {{[1-9]}}
// CHECK:       util.global private @[[G:.+]] : tensor<8x8xf32, #encoding{{[0-9]*}}>
// CHECK:       util.initializer {
// CHECK:         tensor.extract_slice %{{.*}}[8, 0] [8, 8] [1, 1]
// CHECK-NEXT:    %[[E:.+]] = iree_encoding.set_encoding
// CHECK-NEXT:    util.global.store %[[E]], @[[G]]
// CHECK:       util.global.load immutable @[[G]]
func.func @const_eval_row_slice_of_constant(%rhs: tensor<8x8xf32>) -> tensor<8x8xf32> {
  %zero = arith.constant 0.0 : f32
  %w = arith.constant dense<[[-1.00, 0.25, -0.75, 0.50, -0.50, 0.75, -0.25, 1.00], [0.00, -1.00, 0.25, -0.75, 0.50, -0.50, 0.75, -0.25], [1.00, 0.00, -1.00, 0.25, -0.75, 0.50, -0.50, 0.75], [-0.25, 1.00, 0.00, -1.00, 0.25, -0.75, 0.50, -0.50], [0.75, -0.25, 1.00, 0.00, -1.00, 0.25, -0.75, 0.50], [-0.50, 0.75, -0.25, 1.00, 0.00, -1.00, 0.25, -0.75], [0.50, -0.50, 0.75, -0.25, 1.00, 0.00, -1.00, 0.25], [-0.75, 0.50, -0.50, 0.75, -0.25, 1.00, 0.00, -1.00], [0.25, -0.75, 0.50, -0.50, 0.75, -0.25, 1.00, 0.00], [-1.00, 0.25, -0.75, 0.50, -0.50, 0.75, -0.25, 1.00], [0.00, -1.00, 0.25, -0.75, 0.50, -0.50, 0.75, -0.25], [1.00, 0.00, -1.00, 0.25, -0.75, 0.50, -0.50, 0.75], [-0.25, 1.00, 0.00, -1.00, 0.25, -0.75, 0.50, -0.50], [0.75, -0.25, 1.00, 0.00, -1.00, 0.25, -0.75, 0.50], [-0.50, 0.75, -0.25, 1.00, 0.00, -1.00, 0.25, -0.75], [0.50, -0.50, 0.75, -0.25, 1.00, 0.00, -1.00, 0.25]]> : tensor<16x8xf32>
  %s = tensor.extract_slice %w[8, 0] [8, 8] [1, 1] : tensor<16x8xf32> to tensor<8x8xf32>
  %acc_e = tensor.empty() : tensor<8x8xf32>
  %acc = linalg.fill ins(%zero : f32) outs(%acc_e : tensor<8x8xf32>) -> tensor<8x8xf32>
  %r = linalg.matmul indexing_maps = [affine_map<(d0, d1, d2) -> (d0, d2)>, affine_map<(d0, d1, d2) -> (d1, d2)>, affine_map<(d0, d1, d2) -> (d0, d1)>] ins(%s, %rhs : tensor<8x8xf32>, tensor<8x8xf32>) outs(%acc : tensor<8x8xf32>) -> tensor<8x8xf32>
  return %r : tensor<8x8xf32>
}

// -----

// A column slice cannot be hoisted (not Flow-mappable), but as a const-expr it can still be
// evaluated at load time: an alternative IREE's pass order does not have.
// CHECK-LABEL: plans for @const_eval_column_slice_of_constant: {{[1-9]}}
// CHECK:       util.initializer {
// CHECK:         tensor.extract_slice %{{.*}}[0, 8] [8, 8] [1, 1]
func.func @const_eval_column_slice_of_constant(%rhs: tensor<8x8xf32>) -> tensor<8x8xf32> {
  %zero = arith.constant 0.0 : f32
  %w = arith.constant dense<[[-1.00, 0.25, -0.75, 0.50, -0.50, 0.75, -0.25, 1.00, 0.00, -1.00, 0.25, -0.75, 0.50, -0.50, 0.75, -0.25], [1.00, 0.00, -1.00, 0.25, -0.75, 0.50, -0.50, 0.75, -0.25, 1.00, 0.00, -1.00, 0.25, -0.75, 0.50, -0.50], [0.75, -0.25, 1.00, 0.00, -1.00, 0.25, -0.75, 0.50, -0.50, 0.75, -0.25, 1.00, 0.00, -1.00, 0.25, -0.75], [0.50, -0.50, 0.75, -0.25, 1.00, 0.00, -1.00, 0.25, -0.75, 0.50, -0.50, 0.75, -0.25, 1.00, 0.00, -1.00], [0.25, -0.75, 0.50, -0.50, 0.75, -0.25, 1.00, 0.00, -1.00, 0.25, -0.75, 0.50, -0.50, 0.75, -0.25, 1.00], [0.00, -1.00, 0.25, -0.75, 0.50, -0.50, 0.75, -0.25, 1.00, 0.00, -1.00, 0.25, -0.75, 0.50, -0.50, 0.75], [-0.25, 1.00, 0.00, -1.00, 0.25, -0.75, 0.50, -0.50, 0.75, -0.25, 1.00, 0.00, -1.00, 0.25, -0.75, 0.50], [-0.50, 0.75, -0.25, 1.00, 0.00, -1.00, 0.25, -0.75, 0.50, -0.50, 0.75, -0.25, 1.00, 0.00, -1.00, 0.25]]> : tensor<8x16xf32>
  %s = tensor.extract_slice %w[0, 8] [8, 8] [1, 1] : tensor<8x16xf32> to tensor<8x8xf32>
  %acc_e = tensor.empty() : tensor<8x8xf32>
  %acc = linalg.fill ins(%zero : f32) outs(%acc_e : tensor<8x8xf32>) -> tensor<8x8xf32>
  %r = linalg.matmul indexing_maps = [affine_map<(d0, d1, d2) -> (d0, d2)>, affine_map<(d0, d1, d2) -> (d1, d2)>, affine_map<(d0, d1, d2) -> (d0, d1)>] ins(%s, %rhs : tensor<8x8xf32>, tensor<8x8xf32>) outs(%acc : tensor<8x8xf32>) -> tensor<8x8xf32>
  return %r : tensor<8x8xf32>
}

// -----

// Condition 1: a function argument feeds the chain, so it is not a const-expr.
// CHECK-LABEL: plans for @dont_const_eval_argument_chain
// CHECK-NOT:   util.initializer
func.func @dont_const_eval_argument_chain(%w: tensor<16x8xf32>, %rhs: tensor<8x8xf32>) -> tensor<8x8xf32> {
  %zero = arith.constant 0.0 : f32
  %s = tensor.extract_slice %w[0, 0] [8, 8] [1, 1] : tensor<16x8xf32> to tensor<8x8xf32>
  %acc_e = tensor.empty() : tensor<8x8xf32>
  %acc = linalg.fill ins(%zero : f32) outs(%acc_e : tensor<8x8xf32>) -> tensor<8x8xf32>
  %r = linalg.matmul indexing_maps = [affine_map<(d0, d1, d2) -> (d0, d2)>, affine_map<(d0, d1, d2) -> (d1, d2)>, affine_map<(d0, d1, d2) -> (d0, d1)>] ins(%s, %rhs : tensor<8x8xf32>, tensor<8x8xf32>) outs(%acc : tensor<8x8xf32>) -> tensor<8x8xf32>
  return %r : tensor<8x8xf32>
}

// -----

// Condition 2: packing 17 rows into 8-row tiles pads to 24 rows: the encoded copy of this
// 17x65536 f32 weight grows by 1.75 MiB, over the 1 MiB const-expr size-increase threshold.
// CHECK-LABEL: plans for @dont_const_eval_over_size_limit
// CHECK-NOT:   util.initializer
func.func @dont_const_eval_over_size_limit(%lhs: tensor<32x65536xf32>) -> tensor<32x17xf32> {
  %zero = arith.constant 0.0 : f32
  %w = arith.constant dense<0.5> : tensor<17x65536xf32>
  %acc_e = tensor.empty() : tensor<32x17xf32>
  %acc = linalg.fill ins(%zero : f32) outs(%acc_e : tensor<32x17xf32>) -> tensor<32x17xf32>
  %r = linalg.matmul indexing_maps = [affine_map<(d0, d1, d2) -> (d0, d2)>, affine_map<(d0, d1, d2) -> (d1, d2)>, affine_map<(d0, d1, d2) -> (d0, d1)>] ins(%lhs, %w : tensor<32x65536xf32>, tensor<17x65536xf32>) outs(%acc : tensor<32x17xf32>) -> tensor<32x17xf32>
  return %r : tensor<32x17xf32>
}
