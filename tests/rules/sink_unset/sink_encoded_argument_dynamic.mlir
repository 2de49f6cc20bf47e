// RUN: egg-dispatch opt --split-input-file --no-initial-plan --rules sink_unset --target x86_64-avx2 %s | filecheck %s

// Condition 7 on dynamic sizes: the unset_encoding of an encoded argument names its dynamic size
// with another value (%n) than the argument's own; its sizes are its source's all the same (the same
// shape, 4096x?: it returns the whole tensor), and the scaling generic runs on the encoded tensor
// before the unset_encoding, the scalar read as it is.
// CHECK-LABEL: plans for @scale_on_encoded_dynamic_argument: 2; {{.*}}sink-unset-through-elementwise 1
// CHECK:       plan 1 of @scale_on_encoded_dynamic_argument: dispatch{linalg.generic, iree_encoding.unset_encoding}
// CHECK:         tensor.empty(%arg2) : tensor<4096x?xf32, #encoding>
// CHECK-NEXT:    linalg.generic {{.*}} ins(%arg0, %arg1 : tensor<4096x?xf32, #encoding>, f32) outs(%1 : tensor<4096x?xf32, #encoding>)
#mk = affine_map<(d0, d1, d2) -> (d0, d2)>
#nk = affine_map<(d0, d1, d2) -> (d1, d2)>
#mn = affine_map<(d0, d1, d2) -> (d0, d1)>
#id = affine_map<(d0, d1) -> (d0, d1)>
#scalar = affine_map<(d0, d1) -> ()>
#acc = #iree_encoding.encoding<operand_index = 2 : index, op_type = matmul, element_types = [f32, f32, f32], user_indexing_maps = [#mk, #nk, #mn]>
util.func public @scale_on_encoded_dynamic_argument(%x: tensor<4096x?xf32, #acc>, %s: f32, %n: index) -> tensor<4096x?xf32> {
  %r = flow.dispatch.region -> (tensor<4096x?xf32>{%n}) {
    %u = iree_encoding.unset_encoding %x : tensor<4096x?xf32, #acc> -> tensor<4096x?xf32>{%n}
    %e = tensor.empty(%n) : tensor<4096x?xf32>
    %g = linalg.generic {indexing_maps = [#id, #scalar, #id], iterator_types = ["parallel", "parallel"]} ins(%u, %s : tensor<4096x?xf32>, f32) outs(%e : tensor<4096x?xf32>) {
    ^bb0(%a: f32, %b: f32, %o: f32):
      %y = arith.mulf %a, %b : f32
      linalg.yield %y : f32
    } -> tensor<4096x?xf32>
    flow.return %g : tensor<4096x?xf32>
  }
  util.return %r : tensor<4096x?xf32>
}
