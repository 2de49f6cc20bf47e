// RUN: egg-dispatch opt --split-input-file --rules clone --target x86_64-avx2 %s | filecheck %s

// A slice of an argument with a dynamic size (half its rows) feeds a matmul and an elementwise op: it
// can be cloned into each consumer or computed once in a dispatch of its own (its source is a
// dispatch input whatever the size), as a static slice can. util.assume.int bounds the rows, so the matmul's fused packs are legal.
// CHECK-LABEL: plans for @dynamic_slice_in_own_dispatch_once: 2;
// CHECK:       plan 1 of @dynamic_slice_in_own_dispatch_once: dispatch{tensor.extract_slice} dispatch{
// CHECK:       flow.dispatch.region -> (tensor<?x8xf32>{%[[H:.+]]}) {
// CHECK-NEXT:    tensor.extract_slice %arg0[0, 0] [%[[H]], 8] [1, 1] : tensor<?x8xf32> to tensor<?x8xf32>
func.func @dynamic_slice_in_own_dispatch_once(%x: tensor<?x8xf32>, %w: tensor<8x8xf32>) -> (tensor<?x8xf32>, tensor<?x8xf32>) {
  %c0 = arith.constant 0 : index
  %c2 = arith.constant 2 : index
  %zero = arith.constant 0.0 : f32
  %d0 = tensor.dim %x, %c0 : tensor<?x8xf32>
  %d = util.assume.int %d0<umin = 16, umax = 64, udiv = 16> : index
  %h = arith.divui %d, %c2 : index
  %s = tensor.extract_slice %x[0, 0] [%h, 8] [1, 1] : tensor<?x8xf32> to tensor<?x8xf32>
  %acc_e = tensor.empty(%h) : tensor<?x8xf32>
  %acc = linalg.fill ins(%zero : f32) outs(%acc_e : tensor<?x8xf32>) -> tensor<?x8xf32>
  %a = linalg.matmul indexing_maps = [affine_map<(d0, d1, d2) -> (d0, d2)>, affine_map<(d0, d1, d2) -> (d1, d2)>, affine_map<(d0, d1, d2) -> (d0, d1)>] ins(%s, %w : tensor<?x8xf32>, tensor<8x8xf32>) outs(%acc : tensor<?x8xf32>) -> tensor<?x8xf32>
  %e = tensor.empty(%h) : tensor<?x8xf32>
  %b = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]} ins(%s : tensor<?x8xf32>) outs(%e : tensor<?x8xf32>) {
  ^bb0(%in: f32, %o: f32):
    %v = arith.mulf %in, %in : f32
    linalg.yield %v : f32
  } -> tensor<?x8xf32>
  return %a, %b : tensor<?x8xf32>, tensor<?x8xf32>
}

// -----

// clone.egg condition 2 has nothing to hold on: the slice's offset is read out of a tensor (data, not a size), so
// the slice is not a term the clone family can see through; it stays an opaque op in its dispatch.
// CHECK-LABEL: plans for @dont_copy_data_dependent_slice: 1; {{.*}} rule matches: none
func.func @dont_copy_data_dependent_slice(%x: tensor<?x8xf32>, %w: tensor<8x8xf32>, %ids: tensor<1xindex>) -> tensor<8x8xf32> {
  %c0 = arith.constant 0 : index
  %zero = arith.constant 0.0 : f32
  %o = tensor.extract %ids[%c0] : tensor<1xindex>
  %s = tensor.extract_slice %x[%o, 0] [8, 8] [1, 1] : tensor<?x8xf32> to tensor<8x8xf32>
  %acc_e = tensor.empty() : tensor<8x8xf32>
  %acc = linalg.fill ins(%zero : f32) outs(%acc_e : tensor<8x8xf32>) -> tensor<8x8xf32>
  %a = linalg.matmul indexing_maps = [affine_map<(d0, d1, d2) -> (d0, d2)>, affine_map<(d0, d1, d2) -> (d1, d2)>, affine_map<(d0, d1, d2) -> (d0, d1)>] ins(%s, %w : tensor<8x8xf32>, tensor<8x8xf32>) outs(%acc : tensor<8x8xf32>) -> tensor<8x8xf32>
  return %a : tensor<8x8xf32>
}
