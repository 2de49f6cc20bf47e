// RUN: egg-dispatch opt --split-input-file --rules const_eval --target x86_64-avx2 %s | filecheck %s

// Condition 2 with a dynamic shape: the LHS is a const-expr (a fill of ones), but its row count is a
// size the caller passes (%n), so its encoded copy cannot be a global (a global has a static type;
// HoistIntoGlobals counts dynamic shapes as too large): no plan const-evaluates it.
// CHECK-LABEL: plans for @dont_const_eval_dynamic_shape: 1; {{.*}} rule matches: none
// CHECK-NOT:   util.global
func.func @dont_const_eval_dynamic_shape(%w: tensor<8x32xf32>, %n: index) -> tensor<?x8xf32> {
  %zero = arith.constant 0.0 : f32
  %one = arith.constant 1.0 : f32
  %m = util.assume.int %n<umin = 8, umax = 64, udiv = 8> : index
  %ones_e = tensor.empty(%m) : tensor<?x32xf32>
  %ones = linalg.fill ins(%one : f32) outs(%ones_e : tensor<?x32xf32>) -> tensor<?x32xf32>
  %acc_e = tensor.empty(%m) : tensor<?x8xf32>
  %acc = linalg.fill ins(%zero : f32) outs(%acc_e : tensor<?x8xf32>) -> tensor<?x8xf32>
  %r = linalg.matmul indexing_maps = [affine_map<(d0, d1, d2) -> (d0, d2)>, affine_map<(d0, d1, d2) -> (d1, d2)>, affine_map<(d0, d1, d2) -> (d0, d1)>] ins(%ones, %w : tensor<?x32xf32>, tensor<8x32xf32>) outs(%acc : tensor<?x8xf32>) -> tensor<?x8xf32>
  return %r : tensor<?x8xf32>
}

// -----

// A static weight of a contraction with a dynamic row count is const-evaluated as usual; its encode in
// the initializer is flow.tensor.encode (the function's sizes, which a set_encoding would list as
// encoding_dims, do not exist at load), as IREE's own hoisted encodes are.
// CHECK-LABEL: plans for @const_eval_weight_of_dynamic_matmul: 2;
// CHECK:       plan 1 of @const_eval_weight_of_dynamic_matmul: init{flow.tensor.encode}
// CHECK:       util.global private @__hoisted_tensor_8x8xf32__encoded
// CHECK:       flow.tensor.encode %{{.*}} : tensor<8x8xf32> -> tensor<8x8xf32, #encoding
func.func @const_eval_weight_of_dynamic_matmul(%x: tensor<?x8xf32>) -> tensor<?x8xf32> {
  %c0 = arith.constant 0 : index
  %zero = arith.constant 0.0 : f32
  %w = arith.constant dense<[[-1.00, 0.25, -0.75, 0.50, -0.50, 0.75, -0.25, 1.00], [0.00, -1.00, 0.25, -0.75, 0.50, -0.50, 0.75, -0.25], [1.00, 0.00, -1.00, 0.25, -0.75, 0.50, -0.50, 0.75], [-0.25, 1.00, 0.00, -1.00, 0.25, -0.75, 0.50, -0.50], [0.75, -0.25, 1.00, 0.00, -1.00, 0.25, -0.75, 0.50], [-0.50, 0.75, -0.25, 1.00, 0.00, -1.00, 0.25, -0.75], [0.50, -0.50, 0.75, -0.25, 1.00, 0.00, -1.00, 0.25], [-0.75, 0.50, -0.50, 0.75, -0.25, 1.00, 0.00, -1.00]]> : tensor<8x8xf32>
  %d0 = tensor.dim %x, %c0 : tensor<?x8xf32>
  %d = util.assume.int %d0<umin = 8, umax = 64, udiv = 8> : index
  %acc_e = tensor.empty(%d) : tensor<?x8xf32>
  %acc = linalg.fill ins(%zero : f32) outs(%acc_e : tensor<?x8xf32>) -> tensor<?x8xf32>
  %r = linalg.matmul indexing_maps = [affine_map<(d0, d1, d2) -> (d0, d2)>, affine_map<(d0, d1, d2) -> (d1, d2)>, affine_map<(d0, d1, d2) -> (d0, d1)>] ins(%x, %w : tensor<?x8xf32>, tensor<8x8xf32>) outs(%acc : tensor<?x8xf32>) -> tensor<?x8xf32>
  return %r : tensor<?x8xf32>
}
