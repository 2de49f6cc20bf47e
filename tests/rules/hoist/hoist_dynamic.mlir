// RUN: egg-dispatch opt --split-input-file --rules hoist --target x86_64-avx2 %s | filecheck %s

// Dynamic shapes. A row slice of an argument whose row count is a dynamic size (half the argument's)
// is one contiguous range for every size (its columns are whole: the same expression as the source's),
// so its set_encoding is hoisted with it; the set_encoding lists the dynamic iteration size
// (encoding_dims), the region its result's size. Fusing the pack instead is refused: nothing bounds
// the rows (fuse conditions 1-2), so this is the only plan.
// CHECK-LABEL: plans for @hoist_dynamic_row_slice_of_argument: 1;
// CHECK:       %[[D:.+]] = arith.divui
// CHECK:       flow.dispatch.region -> (tensor<?x8xf32, #encoding{{[0-9]*}}>{%[[D]]}) {
// CHECK-NEXT:    tensor.extract_slice %arg0[0, 0] [%[[D]], 8] [1, 1] : tensor<?x8xf32> to tensor<?x8xf32>
// CHECK-NEXT:    iree_encoding.set_encoding %{{.*}} encoding_dims{%[[D]]}
// CHECK:       flow.tensor.encode %arg1
// CHECK:       iree_encoding.unset_encoding %{{.*}} encoding_dims{%[[D]]} : {{.*}} -> tensor<?x8xf32>{%[[D]]}
func.func @hoist_dynamic_row_slice_of_argument(%w: tensor<?x8xf32>, %rhs: tensor<8x8xf32>) -> tensor<?x8xf32> {
  %c0 = arith.constant 0 : index
  %c2 = arith.constant 2 : index
  %zero = arith.constant 0.0 : f32
  %d = tensor.dim %w, %c0 : tensor<?x8xf32>
  %h = arith.divui %d, %c2 : index
  %s = tensor.extract_slice %w[0, 0] [%h, 8] [1, 1] : tensor<?x8xf32> to tensor<?x8xf32>
  %acc_e = tensor.empty(%h) : tensor<?x8xf32>
  %acc = linalg.fill ins(%zero : f32) outs(%acc_e : tensor<?x8xf32>) -> tensor<?x8xf32>
  %r = linalg.matmul indexing_maps = [affine_map<(d0, d1, d2) -> (d0, d2)>, affine_map<(d0, d1, d2) -> (d1, d2)>, affine_map<(d0, d1, d2) -> (d0, d1)>] ins(%s, %rhs : tensor<?x8xf32>, tensor<8x8xf32>) outs(%acc : tensor<?x8xf32>) -> tensor<?x8xf32>
  return %r : tensor<?x8xf32>
}

// -----

// Condition 2 with a dynamic size: a column block of every row (columns 8..16 of all %d rows) is not
// one contiguous range whatever %d is, so the set_encoding is not hoisted; it stays in the matmul's
// dispatch with its slice, which is legal here because util.assume.int bounds the rows (multiples of
// 8 up to 64: the fused packs fit). Both plans keep the slice's set_encoding in the dispatch.
// CHECK-LABEL: plans for @dont_hoist_dynamic_column_slice: 2;
// CHECK-NOT:   flow.dispatch.region -> (tensor<?x8xf32, #encoding
// CHECK:       plan 1 of @dont_hoist_dynamic_column_slice
// CHECK-NOT:   flow.dispatch.region -> (tensor<?x8xf32, #encoding
func.func @dont_hoist_dynamic_column_slice(%w: tensor<?x16xf32>, %rhs: tensor<8x8xf32>) -> tensor<?x8xf32> {
  %c0 = arith.constant 0 : index
  %zero = arith.constant 0.0 : f32
  %d0 = tensor.dim %w, %c0 : tensor<?x16xf32>
  %d = util.assume.int %d0<umin = 8, umax = 64, udiv = 8> : index
  %s = tensor.extract_slice %w[0, 8] [%d, 8] [1, 1] : tensor<?x16xf32> to tensor<?x8xf32>
  %acc_e = tensor.empty(%d) : tensor<?x8xf32>
  %acc = linalg.fill ins(%zero : f32) outs(%acc_e : tensor<?x8xf32>) -> tensor<?x8xf32>
  %r = linalg.matmul indexing_maps = [affine_map<(d0, d1, d2) -> (d0, d2)>, affine_map<(d0, d1, d2) -> (d1, d2)>, affine_map<(d0, d1, d2) -> (d0, d1)>] ins(%s, %rhs : tensor<?x8xf32>, tensor<8x8xf32>) outs(%acc : tensor<?x8xf32>) -> tensor<?x8xf32>
  return %r : tensor<?x8xf32>
}
