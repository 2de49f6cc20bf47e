// RUN: egg-dispatch opt --split-input-file --rules fuse --target x86_64-avx2 %s | filecheck %s

// A bias add reading the matmul's result fuses into its dispatch (the unset_encoding sinks into
// it), or stays a dispatch of its own: both plans are in the e-graph.
// CHECK-LABEL: plans for @fuse_elementwise_consumer: {{[2-9]}}
// CHECK:       flow.dispatch.region -> (tensor<8x8xf32>) {
// CHECK:         iree_encoding.unset_encoding
// CHECK-NEXT:    tensor.empty
// CHECK-NEXT:    linalg.generic
func.func @fuse_elementwise_consumer(%a: tensor<8x8xf32>, %b: tensor<8x8xf32>, %bias: tensor<8xf32>) -> tensor<8x8xf32> {
  %zero = arith.constant 0.0 : f32
  %acc_e = tensor.empty() : tensor<8x8xf32>
  %acc = linalg.fill ins(%zero : f32) outs(%acc_e : tensor<8x8xf32>) -> tensor<8x8xf32>
  %r = linalg.matmul indexing_maps = [affine_map<(d0, d1, d2) -> (d0, d2)>, affine_map<(d0, d1, d2) -> (d1, d2)>, affine_map<(d0, d1, d2) -> (d0, d1)>] ins(%a, %b : tensor<8x8xf32>, tensor<8x8xf32>) outs(%acc : tensor<8x8xf32>) -> tensor<8x8xf32>
  %e = tensor.empty() : tensor<8x8xf32>
  %y = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d1)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]} ins(%r, %bias : tensor<8x8xf32>, tensor<8xf32>) outs(%e : tensor<8x8xf32>) {
  ^bb0(%x: f32, %c: f32, %o: f32):
    %s = arith.addf %x, %c : f32
    linalg.yield %s : f32
  } -> tensor<8x8xf32>
  return %y : tensor<8x8xf32>
}

// -----

// Condition 1: only all-parallel (elementwise) consumers fuse or split: a row-sum reduction is a root of its
// own dispatch in every plan.
// CHECK-LABEL: plans for @dont_split_reduction_consumer: 1;
func.func @dont_split_reduction_consumer(%a: tensor<8x8xf32>, %b: tensor<8x8xf32>) -> tensor<8xf32> {
  %zero = arith.constant 0.0 : f32
  %acc_e = tensor.empty() : tensor<8x8xf32>
  %acc = linalg.fill ins(%zero : f32) outs(%acc_e : tensor<8x8xf32>) -> tensor<8x8xf32>
  %r = linalg.matmul indexing_maps = [affine_map<(d0, d1, d2) -> (d0, d2)>, affine_map<(d0, d1, d2) -> (d1, d2)>, affine_map<(d0, d1, d2) -> (d0, d1)>] ins(%a, %b : tensor<8x8xf32>, tensor<8x8xf32>) outs(%acc : tensor<8x8xf32>) -> tensor<8x8xf32>
  %e = tensor.empty() : tensor<8xf32>
  %z = linalg.fill ins(%zero : f32) outs(%e : tensor<8xf32>) -> tensor<8xf32>
  %y = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0)>], iterator_types = ["parallel", "reduction"]} ins(%r : tensor<8x8xf32>) outs(%z : tensor<8xf32>) {
  ^bb0(%x: f32, %o: f32):
    %s = arith.addf %x, %o : f32
    linalg.yield %s : f32
  } -> tensor<8xf32>
  return %y : tensor<8xf32>
}

// -----

// Condition 2: splitting a consumer out into a dispatch of its own needs an unset_encoding to read
// (the contraction's result): the second of two elementwise generics in one dispatch reads the first's
// plain result, so no rule splits it (without the condition the split fires, and 64 plans appear).
// CHECK-LABEL: plans for @dont_split_a_consumer_of_a_plain_value: 1; {{.*}}rule matches: none
#map = affine_map<(d0, d1) -> (d0, d1)>
func.func @dont_split_a_consumer_of_a_plain_value(%a: tensor<8x8xf32>, %b: tensor<8x8xf32>) -> tensor<8x8xf32> {
  %0 = flow.dispatch.region -> (tensor<8x8xf32>) {
    %e = tensor.empty() : tensor<8x8xf32>
    %x = linalg.generic {indexing_maps = [#map, #map, #map], iterator_types = ["parallel", "parallel"]} ins(%a, %b : tensor<8x8xf32>, tensor<8x8xf32>) outs(%e : tensor<8x8xf32>) {
    ^bb0(%p: f32, %q: f32, %o: f32):
      %s = arith.addf %p, %q : f32
      linalg.yield %s : f32
    } -> tensor<8x8xf32>
    %e2 = tensor.empty() : tensor<8x8xf32>
    %y = linalg.generic {indexing_maps = [#map, #map], iterator_types = ["parallel", "parallel"]} ins(%x : tensor<8x8xf32>) outs(%e2 : tensor<8x8xf32>) {
    ^bb0(%p: f32, %o: f32):
      %s = arith.mulf %p, %p : f32
      linalg.yield %s : f32
    } -> tensor<8x8xf32>
    flow.return %y : tensor<8x8xf32>
  }
  return %0 : tensor<8x8xf32>
}
