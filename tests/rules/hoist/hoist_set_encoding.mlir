// RUN: egg-dispatch opt --split-input-file --rules hoist --target x86_64-avx2 %s | filecheck %s

// The bug's pattern (IREE #21100): a row slice of a constant feeds a matmul. The slice is one
// contiguous range (structurally Flow-mappable), so the set_encoding is hoisted into its own
// dispatch together with the slice; the argument's set_encoding becomes flow.tensor.encode.
// CHECK-LABEL: plans for @hoist_row_slice_of_constant: {{[1-9]}}
// CHECK:       flow.dispatch.region -> (tensor<8x8xf32, #encoding{{[0-9]*}}>) {
// CHECK-NEXT:    tensor.extract_slice %{{.*}}[8, 0] [8, 8] [1, 1] : tensor<16x8xf32> to tensor<8x8xf32>
// CHECK-NEXT:    iree_encoding.set_encoding
// CHECK:       flow.tensor.encode %arg0 : tensor<8x8xf32> -> tensor<8x8xf32, #encoding{{[0-9]*}}>
// CHECK:       linalg.matmul
func.func @hoist_row_slice_of_constant(%rhs: tensor<8x8xf32>) -> tensor<8x8xf32> {
  %zero = arith.constant 0.0 : f32
  %w = arith.constant dense<[[-1.00, 0.25, -0.75, 0.50, -0.50, 0.75, -0.25, 1.00], [0.00, -1.00, 0.25, -0.75, 0.50, -0.50, 0.75, -0.25], [1.00, 0.00, -1.00, 0.25, -0.75, 0.50, -0.50, 0.75], [-0.25, 1.00, 0.00, -1.00, 0.25, -0.75, 0.50, -0.50], [0.75, -0.25, 1.00, 0.00, -1.00, 0.25, -0.75, 0.50], [-0.50, 0.75, -0.25, 1.00, 0.00, -1.00, 0.25, -0.75], [0.50, -0.50, 0.75, -0.25, 1.00, 0.00, -1.00, 0.25], [-0.75, 0.50, -0.50, 0.75, -0.25, 1.00, 0.00, -1.00], [0.25, -0.75, 0.50, -0.50, 0.75, -0.25, 1.00, 0.00], [-1.00, 0.25, -0.75, 0.50, -0.50, 0.75, -0.25, 1.00], [0.00, -1.00, 0.25, -0.75, 0.50, -0.50, 0.75, -0.25], [1.00, 0.00, -1.00, 0.25, -0.75, 0.50, -0.50, 0.75], [-0.25, 1.00, 0.00, -1.00, 0.25, -0.75, 0.50, -0.50], [0.75, -0.25, 1.00, 0.00, -1.00, 0.25, -0.75, 0.50], [-0.50, 0.75, -0.25, 1.00, 0.00, -1.00, 0.25, -0.75], [0.50, -0.50, 0.75, -0.25, 1.00, 0.00, -1.00, 0.25]]> : tensor<16x8xf32>
  %s = tensor.extract_slice %w[8, 0] [8, 8] [1, 1] : tensor<16x8xf32> to tensor<8x8xf32>
  %acc_e = tensor.empty() : tensor<8x8xf32>
  %acc = linalg.fill ins(%zero : f32) outs(%acc_e : tensor<8x8xf32>) -> tensor<8x8xf32>
  %r = linalg.matmul indexing_maps = [affine_map<(d0, d1, d2) -> (d0, d2)>, affine_map<(d0, d1, d2) -> (d1, d2)>, affine_map<(d0, d1, d2) -> (d0, d1)>] ins(%s, %rhs : tensor<8x8xf32>, tensor<8x8xf32>) outs(%acc : tensor<8x8xf32>) -> tensor<8x8xf32>
  return %r : tensor<8x8xf32>
}

// -----

// A row slice of a function argument is hoisted too (IREE then copies it: flow.tensor.slice).
// CHECK-LABEL: plans for @hoist_row_slice_of_argument: {{[1-9]}}
// CHECK:       flow.dispatch.region -> (tensor<8x8xf32, #encoding{{[0-9]*}}>) {
// CHECK-NEXT:    tensor.extract_slice %arg0[0, 0] [8, 8] [1, 1]
// CHECK-NEXT:    iree_encoding.set_encoding
func.func @hoist_row_slice_of_argument(%w: tensor<16x8xf32>, %rhs: tensor<8x8xf32>) -> tensor<8x8xf32> {
  %zero = arith.constant 0.0 : f32
  %s = tensor.extract_slice %w[0, 0] [8, 8] [1, 1] : tensor<16x8xf32> to tensor<8x8xf32>
  %acc_e = tensor.empty() : tensor<8x8xf32>
  %acc = linalg.fill ins(%zero : f32) outs(%acc_e : tensor<8x8xf32>) -> tensor<8x8xf32>
  %r = linalg.matmul indexing_maps = [affine_map<(d0, d1, d2) -> (d0, d2)>, affine_map<(d0, d1, d2) -> (d1, d2)>, affine_map<(d0, d1, d2) -> (d0, d1)>] ins(%s, %rhs : tensor<8x8xf32>, tensor<8x8xf32>) outs(%acc : tensor<8x8xf32>) -> tensor<8x8xf32>
  return %r : tensor<8x8xf32>
}

// -----

// Condition 2: a column slice is not one contiguous range (not Flow-mappable), so the
// set_encoding stays in the matmul's dispatch with its slice (legal here: 8x1 tiles divide 8x8).
// CHECK-LABEL: plans for @dont_hoist_column_slice: {{[1-9]}}
// CHECK-NOT:   flow.dispatch.region -> (tensor<8x8xf32, #encoding
func.func @dont_hoist_column_slice(%rhs: tensor<8x8xf32>) -> tensor<8x8xf32> {
  %zero = arith.constant 0.0 : f32
  %w = arith.constant dense<[[-1.00, 0.25, -0.75, 0.50, -0.50, 0.75, -0.25, 1.00, 0.00, -1.00, 0.25, -0.75, 0.50, -0.50, 0.75, -0.25], [1.00, 0.00, -1.00, 0.25, -0.75, 0.50, -0.50, 0.75, -0.25, 1.00, 0.00, -1.00, 0.25, -0.75, 0.50, -0.50], [0.75, -0.25, 1.00, 0.00, -1.00, 0.25, -0.75, 0.50, -0.50, 0.75, -0.25, 1.00, 0.00, -1.00, 0.25, -0.75], [0.50, -0.50, 0.75, -0.25, 1.00, 0.00, -1.00, 0.25, -0.75, 0.50, -0.50, 0.75, -0.25, 1.00, 0.00, -1.00], [0.25, -0.75, 0.50, -0.50, 0.75, -0.25, 1.00, 0.00, -1.00, 0.25, -0.75, 0.50, -0.50, 0.75, -0.25, 1.00], [0.00, -1.00, 0.25, -0.75, 0.50, -0.50, 0.75, -0.25, 1.00, 0.00, -1.00, 0.25, -0.75, 0.50, -0.50, 0.75], [-0.25, 1.00, 0.00, -1.00, 0.25, -0.75, 0.50, -0.50, 0.75, -0.25, 1.00, 0.00, -1.00, 0.25, -0.75, 0.50], [-0.50, 0.75, -0.25, 1.00, 0.00, -1.00, 0.25, -0.75, 0.50, -0.50, 0.75, -0.25, 1.00, 0.00, -1.00, 0.25]]> : tensor<8x16xf32>
  %s = tensor.extract_slice %w[0, 8] [8, 8] [1, 1] : tensor<8x16xf32> to tensor<8x8xf32>
  %acc_e = tensor.empty() : tensor<8x8xf32>
  %acc = linalg.fill ins(%zero : f32) outs(%acc_e : tensor<8x8xf32>) -> tensor<8x8xf32>
  %r = linalg.matmul indexing_maps = [affine_map<(d0, d1, d2) -> (d0, d2)>, affine_map<(d0, d1, d2) -> (d1, d2)>, affine_map<(d0, d1, d2) -> (d0, d1)>] ins(%s, %rhs : tensor<8x8xf32>, tensor<8x8xf32>) outs(%acc : tensor<8x8xf32>) -> tensor<8x8xf32>
  return %r : tensor<8x8xf32>
}

// -----

// Condition 2: the set_encoding's source is an op we do not model (a barrier) computed inside
// the dispatch: nothing can move it out, so no plan hoists that set_encoding.
// CHECK-LABEL: plans for @dont_hoist_opaque_producer_in_dispatch
// CHECK-NOT:   flow.dispatch.region -> (tensor<16x8xf32, #encoding
func.func @dont_hoist_opaque_producer_in_dispatch(%a: tensor<16x8xf32>, %rhs: tensor<16x8xf32>) -> tensor<16x16xf32> {
  %zero = arith.constant 0.0 : f32
  %r0 = flow.dispatch.region -> (tensor<16x16xf32>) {
    %x = mydialect.opaque_scale %a : tensor<16x8xf32> -> tensor<16x8xf32>
    %e = tensor.empty() : tensor<16x16xf32>
    %f = linalg.fill ins(%zero : f32) outs(%e : tensor<16x16xf32>) -> tensor<16x16xf32>
    %m = linalg.matmul indexing_maps = [affine_map<(d0, d1, d2) -> (d0, d2)>, affine_map<(d0, d1, d2) -> (d1, d2)>, affine_map<(d0, d1, d2) -> (d0, d1)>] ins(%x, %rhs : tensor<16x8xf32>, tensor<16x8xf32>) outs(%f : tensor<16x16xf32>) -> tensor<16x16xf32>
    flow.return %m : tensor<16x16xf32>
  }
  return %r0 : tensor<16x16xf32>
}

// -----

// The accumulator's set_encoding is hoisted too when the matmul accumulates into an argument (a
// residual passed in as its init), conditions 1-2 as for the operands: with all three hoisted, the
// dispatch holds only the matmul and its unset_encoding.
// CHECK-LABEL: plans for @hoist_accumulator_argument: {{[1-9][0-9]*}}; {{.*}}hoist-set-encoding-accumulator
// CHECK:       of @hoist_accumulator_argument: encode encode encode dispatch{linalg.matmul, iree_encoding.unset_encoding}
// CHECK:       flow.tensor.encode %arg2 : tensor<8x8xf32> -> tensor<8x8xf32, #encoding{{[0-9]*}}>
// CHECK:       flow.dispatch.region -> (tensor<8x8xf32>) {
// CHECK-NEXT:    linalg.matmul
func.func @hoist_accumulator_argument(%a: tensor<8x16xf32>, %b: tensor<16x8xf32>, %c: tensor<8x8xf32>) -> tensor<8x8xf32> {
  %r = linalg.matmul ins(%a, %b : tensor<8x16xf32>, tensor<16x8xf32>) outs(%c : tensor<8x8xf32>) -> tensor<8x8xf32>
  return %r : tensor<8x8xf32>
}
