// RUN: egg-dispatch opt --split-input-file --rules clone --target x86_64-avx2 %s | filecheck %s

// The initial plan clones the slice into the matmul's dispatch; the alternative computes it once
// in a dispatch of its own (a copy) that the matmul's dispatch reads.
// CHECK-LABEL: plans for @slice_in_own_dispatch_once: {{[2-9]}}
// CHECK:       of @slice_in_own_dispatch_once: dispatch{tensor.extract_slice} dispatch{iree_encoding.set_encoding, iree_encoding.set_encoding,
// CHECK:       flow.dispatch.region -> (tensor<8x8xf32>) {
// CHECK-NEXT:    tensor.extract_slice %arg0[8, 0] [8, 8] [1, 1]
// CHECK-NEXT:    flow.return
func.func @slice_in_own_dispatch_once(%w: tensor<16x8xf32>, %rhs: tensor<8x8xf32>) -> tensor<8x8xf32> {
  %zero = arith.constant 0.0 : f32
  %s = tensor.extract_slice %w[8, 0] [8, 8] [1, 1] : tensor<16x8xf32> to tensor<8x8xf32>
  %acc_e = tensor.empty() : tensor<8x8xf32>
  %acc = linalg.fill ins(%zero : f32) outs(%acc_e : tensor<8x8xf32>) -> tensor<8x8xf32>
  %r = linalg.matmul indexing_maps = [affine_map<(d0, d1, d2) -> (d0, d2)>, affine_map<(d0, d1, d2) -> (d1, d2)>, affine_map<(d0, d1, d2) -> (d0, d1)>] ins(%s, %rhs : tensor<8x8xf32>, tensor<8x8xf32>) outs(%acc : tensor<8x8xf32>) -> tensor<8x8xf32>
  return %r : tensor<8x8xf32>
}

// -----

// clone.egg condition 2: the slice's source is computed inside the dispatch by an opaque op, so the slice
// cannot run before the dispatch: no plan puts it in a dispatch of its own.
// CHECK-LABEL: plans for @dont_slice_in_own_dispatch_of_in_dispatch_value: 1;
func.func @dont_slice_in_own_dispatch_of_in_dispatch_value(%a: tensor<16x8xf32>, %rhs: tensor<8x8xf32>) -> tensor<8x8xf32> {
  %zero = arith.constant 0.0 : f32
  %r0 = flow.dispatch.region -> (tensor<8x8xf32>) {
    %x = mydialect.opaque_scale %a : tensor<16x8xf32> -> tensor<16x8xf32>
    %s = tensor.extract_slice %x[0, 0] [8, 8] [1, 1] : tensor<16x8xf32> to tensor<8x8xf32>
    %e = tensor.empty() : tensor<8x8xf32>
    %f = linalg.fill ins(%zero : f32) outs(%e : tensor<8x8xf32>) -> tensor<8x8xf32>
    %m = linalg.matmul indexing_maps = [affine_map<(d0, d1, d2) -> (d0, d2)>, affine_map<(d0, d1, d2) -> (d1, d2)>, affine_map<(d0, d1, d2) -> (d0, d1)>] ins(%s, %rhs : tensor<8x8xf32>, tensor<8x8xf32>) outs(%f : tensor<8x8xf32>) -> tensor<8x8xf32>
    flow.return %m : tensor<8x8xf32>
  }
  return %r0 : tensor<8x8xf32>
}

// -----

// clone.egg condition 1: an insert_slice is not an extract_slice: IREE gives it a dispatch of its own and never
// clones it into the matmul's (it is not cloneable); no rule offers another placement. (The same
// program with an extract_slice has two plans.)
// CHECK-LABEL: plans for @dont_clone_insert_slice: 1; {{.*}} rule matches: none
// CHECK:       plan 0 of @dont_clone_insert_slice: dispatch{tensor.insert_slice} dispatch{iree_encoding.set_encoding,
func.func @dont_clone_insert_slice(%a: tensor<4x8xf32>, %w: tensor<8x8xf32>, %rhs: tensor<8x8xf32>) -> tensor<8x8xf32> {
  %zero = arith.constant 0.0 : f32
  %s = tensor.insert_slice %a into %w[0, 0] [4, 8] [1, 1] : tensor<4x8xf32> into tensor<8x8xf32>
  %acc_e = tensor.empty() : tensor<8x8xf32>
  %acc = linalg.fill ins(%zero : f32) outs(%acc_e : tensor<8x8xf32>) -> tensor<8x8xf32>
  %r = linalg.matmul indexing_maps = [affine_map<(d0, d1, d2) -> (d0, d2)>, affine_map<(d0, d1, d2) -> (d1, d2)>, affine_map<(d0, d1, d2) -> (d0, d1)>] ins(%s, %rhs : tensor<8x8xf32>, tensor<8x8xf32>) outs(%acc : tensor<8x8xf32>) -> tensor<8x8xf32>
  return %r : tensor<8x8xf32>
}
