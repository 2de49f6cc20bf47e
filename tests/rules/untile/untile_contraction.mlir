// RUN: egg-dispatch opt --split-input-file --rules untile --target x86_64-avx2 %s | filecheck %s

// IREE's data-tiling start state: set_encoding of both operands, a fill of an encoded empty,
// the encoded matmul and its unset_encoding, all in one dispatch. The family adds the same
// matmul with its encodings dropped: plain linalg.matmul codegen on the plain operands, into a
// fill of a plain empty (IREE with --iree-dispatch-creation-data-tiling=false).
// CHECK-LABEL: plans for @untile_matmul: 2; {{.*}} rule matches: untile-contraction 1
// CHECK:       of @untile_matmul: dispatch{iree_encoding.set_encoding, iree_encoding.set_encoding, linalg.fill, linalg.matmul, iree_encoding.unset_encoding}
// CHECK:       of @untile_matmul: dispatch{linalg.fill, linalg.matmul}
// CHECK-NOT:   iree_encoding
// CHECK:         %[[E:.+]] = tensor.empty() : tensor<8x8xf32>
// CHECK-NEXT:    %[[F:.+]] = linalg.fill ins(%{{.*}} : f32) outs(%[[E]] : tensor<8x8xf32>) -> tensor<8x8xf32>
// CHECK-NEXT:    linalg.matmul indexing_maps = [#map, #map1, #map2] ins(%arg0, %arg1 : tensor<8x8xf32>, tensor<8x8xf32>) outs(%[[F]] : tensor<8x8xf32>) -> tensor<8x8xf32>
func.func @untile_matmul(%lhs: tensor<8x8xf32>, %rhs: tensor<8x8xf32>) -> tensor<8x8xf32> {
  %zero = arith.constant 0.0 : f32
  %acc_e = tensor.empty() : tensor<8x8xf32>
  %acc = linalg.fill ins(%zero : f32) outs(%acc_e : tensor<8x8xf32>) -> tensor<8x8xf32>
  %r = linalg.matmul indexing_maps = [affine_map<(d0, d1, d2) -> (d0, d2)>, affine_map<(d0, d1, d2) -> (d1, d2)>, affine_map<(d0, d1, d2) -> (d0, d1)>] ins(%lhs, %rhs : tensor<8x8xf32>, tensor<8x8xf32>) outs(%acc : tensor<8x8xf32>) -> tensor<8x8xf32>
  return %r : tensor<8x8xf32>
}

// -----

// Condition 3, second form: the accumulator is a real tensor (set_encoding of an argument):
// the plain matmul accumulates into the argument itself.
// CHECK-LABEL: plans for @untile_real_accumulator: 2;
// CHECK:       of @untile_real_accumulator: dispatch{linalg.matmul}
// CHECK-NEXT:  func.func
// CHECK-NEXT:    flow.dispatch.region -> (tensor<8x16xf32>) {
// CHECK-NEXT:      linalg.matmul ins(%arg0, %arg1 : tensor<8x4xf32>, tensor<4x16xf32>) outs(%arg2 : tensor<8x16xf32>) -> tensor<8x16xf32>
func.func @untile_real_accumulator(%lhs: tensor<8x4xf32>, %rhs: tensor<4x16xf32>, %acc: tensor<8x16xf32>) -> tensor<8x16xf32> {
  %r = linalg.matmul ins(%lhs, %rhs : tensor<8x4xf32>, tensor<4x16xf32>) outs(%acc : tensor<8x16xf32>) -> tensor<8x16xf32>
  return %r : tensor<8x16xf32>
}

// -----

// Whatever contraction op it is: batch_matmul, matvec, and mixed-precision i8 x i8 -> i32 keep
// their op and element types, without encodings.
// CHECK-LABEL: plans for @untile_batch_matmul: 2;
// CHECK:       of @untile_batch_matmul: dispatch{linalg.fill, linalg.batch_matmul}
// CHECK:         linalg.batch_matmul ins(%arg0, %arg1 : tensor<2x8x4xf32>, tensor<2x4x16xf32>) outs(%{{.*}} : tensor<2x8x16xf32>) -> tensor<2x8x16xf32>
func.func @untile_batch_matmul(%lhs: tensor<2x8x4xf32>, %rhs: tensor<2x4x16xf32>) -> tensor<2x8x16xf32> {
  %zero = arith.constant 0.0 : f32
  %acc_e = tensor.empty() : tensor<2x8x16xf32>
  %acc = linalg.fill ins(%zero : f32) outs(%acc_e : tensor<2x8x16xf32>) -> tensor<2x8x16xf32>
  %r = linalg.batch_matmul ins(%lhs, %rhs : tensor<2x8x4xf32>, tensor<2x4x16xf32>) outs(%acc : tensor<2x8x16xf32>) -> tensor<2x8x16xf32>
  return %r : tensor<2x8x16xf32>
}

// CHECK-LABEL: plans for @untile_matvec: 2;
// CHECK:       of @untile_matvec: dispatch{linalg.fill, linalg.matvec}
// CHECK:         linalg.matvec ins(%arg0, %arg1 : tensor<8x4xf32>, tensor<4xf32>) outs(%{{.*}} : tensor<8xf32>) -> tensor<8xf32>
func.func @untile_matvec(%lhs: tensor<8x4xf32>, %rhs: tensor<4xf32>) -> tensor<8xf32> {
  %zero = arith.constant 0.0 : f32
  %acc_e = tensor.empty() : tensor<8xf32>
  %acc = linalg.fill ins(%zero : f32) outs(%acc_e : tensor<8xf32>) -> tensor<8xf32>
  %r = linalg.matvec ins(%lhs, %rhs : tensor<8x4xf32>, tensor<4xf32>) outs(%acc : tensor<8xf32>) -> tensor<8xf32>
  return %r : tensor<8xf32>
}

// CHECK-LABEL: plans for @untile_i8: 2;
// CHECK:       of @untile_i8: dispatch{linalg.fill, linalg.matmul}
// CHECK:         linalg.fill ins(%{{.*}} : i32) outs(%{{.*}} : tensor<8x16xi32>) -> tensor<8x16xi32>
// CHECK-NEXT:    linalg.matmul ins(%arg0, %arg1 : tensor<8x4xi8>, tensor<4x16xi8>) outs(%{{.*}} : tensor<8x16xi32>) -> tensor<8x16xi32>
func.func @untile_i8(%lhs: tensor<8x4xi8>, %rhs: tensor<4x16xi8>) -> tensor<8x16xi32> {
  %zero = arith.constant 0 : i32
  %acc_e = tensor.empty() : tensor<8x16xi32>
  %acc = linalg.fill ins(%zero : i32) outs(%acc_e : tensor<8x16xi32>) -> tensor<8x16xi32>
  %r = linalg.matmul ins(%lhs, %rhs : tensor<8x4xi8>, tensor<4x16xi8>) outs(%acc : tensor<8x16xi32>) -> tensor<8x16xi32>
  return %r : tensor<8x16xi32>
}

// -----

// The seed's pattern (IREE #21100): a row slice of a constant encoded in the matmul's dispatch.
// Without tiling the slice is read where it was (cloned into the dispatch), nothing is packed.
// CHECK-LABEL: plans for @untile_slice_of_constant: 2;
// CHECK:       of @untile_slice_of_constant: dispatch{tensor.extract_slice, linalg.fill, linalg.matmul}
// CHECK:         %[[S:.+]] = tensor.extract_slice %{{.*}}[8, 0] [8, 8] [1, 1] : tensor<16x8xf32> to tensor<8x8xf32>
// CHECK:         linalg.matmul indexing_maps = [#map, #map1, #map2] ins(%[[S]], %arg0 : tensor<8x8xf32>, tensor<8x8xf32>)
func.func @untile_slice_of_constant(%rhs: tensor<8x8xf32>) -> tensor<8x8xf32> {
  %zero = arith.constant 0.0 : f32
  %w = arith.constant dense<0.5> : tensor<16x8xf32>
  %s = tensor.extract_slice %w[8, 0] [8, 8] [1, 1] : tensor<16x8xf32> to tensor<8x8xf32>
  %acc_e = tensor.empty() : tensor<8x8xf32>
  %acc = linalg.fill ins(%zero : f32) outs(%acc_e : tensor<8x8xf32>) -> tensor<8x8xf32>
  %r = linalg.matmul indexing_maps = [affine_map<(d0, d1, d2) -> (d0, d2)>, affine_map<(d0, d1, d2) -> (d1, d2)>, affine_map<(d0, d1, d2) -> (d0, d1)>] ins(%s, %rhs : tensor<8x8xf32>, tensor<8x8xf32>) outs(%acc : tensor<8x8xf32>) -> tensor<8x8xf32>
  return %r : tensor<8x8xf32>
}

// -----

// Not a condition: other consumers of the encoded result. Two matmuls chained; each gets its
// plain alternative on its own, so the four combinations (tiled/plain x tiled/plain) are plans.
// CHECK-LABEL: plans for @untile_each_contraction_alone: 4;
// CHECK-DAG:   dispatch{iree_encoding.set_encoding, iree_encoding.set_encoding, linalg.fill, linalg.matmul, iree_encoding.unset_encoding} dispatch{linalg.fill, linalg.matmul}
// CHECK-DAG:   dispatch{linalg.fill, linalg.matmul} dispatch{iree_encoding.set_encoding, iree_encoding.set_encoding, linalg.fill, linalg.matmul, iree_encoding.unset_encoding}
// CHECK-DAG:   dispatch{linalg.fill, linalg.matmul} dispatch{linalg.fill, linalg.matmul}
func.func @untile_each_contraction_alone(%a: tensor<8x8xf32>, %b: tensor<8x8xf32>, %c: tensor<8x8xf32>) -> tensor<8x8xf32> {
  %zero = arith.constant 0.0 : f32
  %a0_e = tensor.empty() : tensor<8x8xf32>
  %a0 = linalg.fill ins(%zero : f32) outs(%a0_e : tensor<8x8xf32>) -> tensor<8x8xf32>
  %r0 = linalg.matmul ins(%a, %b : tensor<8x8xf32>, tensor<8x8xf32>) outs(%a0 : tensor<8x8xf32>) -> tensor<8x8xf32>
  %a1_e = tensor.empty() : tensor<8x8xf32>
  %a1 = linalg.fill ins(%zero : f32) outs(%a1_e : tensor<8x8xf32>) -> tensor<8x8xf32>
  %r1 = linalg.matmul ins(%r0, %c : tensor<8x8xf32>, tensor<8x8xf32>) outs(%a1 : tensor<8x8xf32>) -> tensor<8x8xf32>
  return %r1 : tensor<8x8xf32>
}
