// RUN: egg-dispatch opt --split-input-file --rules hoist --target none %s | filecheck %s

// Condition 3: an f16 contraction written as linalg.generic, both operands encoded in its dispatch.
// Target none resolves every encoding to the identity layout: the first operand's set_encoding is
// hoisted (that rule does not ask for tiles, and condition 5 holds: no `noop` run folded it into its
// source; tests/test_identity_fold_guards.py runs it after `noop`), the later operand's is not (on
// x86_64-avx2, with tiles, it is: 4 plans).
// CHECK-LABEL: plans for @dont_hoist_identity_layout_generic_operand: 2;
// CHECK-SAME:  hoist-bubbled-set-encoding 1
// CHECK-NOT:   hoist-generic-operand-set-encoding
#map = affine_map<(d0, d1, d2) -> (d0, d2)>
#map1 = affine_map<(d0, d1, d2) -> (d2, d1)>
#map2 = affine_map<(d0, d1, d2) -> (d0, d1)>
#enc0 = #iree_encoding.encoding<operand_index = 0 : index, op_type = matmul, element_types = [f16, f16, f32], user_indexing_maps = [#map, #map1, #map2], iteration_sizes = [16, 16, 32]>
#enc1 = #iree_encoding.encoding<operand_index = 1 : index, op_type = matmul, element_types = [f16, f16, f32], user_indexing_maps = [#map, #map1, #map2], iteration_sizes = [16, 16, 32]>
#enc2 = #iree_encoding.encoding<operand_index = 2 : index, op_type = matmul, element_types = [f16, f16, f32], user_indexing_maps = [#map, #map1, #map2], iteration_sizes = [16, 16, 32]>
func.func @dont_hoist_identity_layout_generic_operand(%a: tensor<16x32xf16>, %b: tensor<32x16xf16>) -> tensor<16x16xf32> {
  %0 = flow.dispatch.region -> (tensor<16x16xf32>) {
    %zero = arith.constant 0.0 : f32
    %ea = iree_encoding.set_encoding %a : tensor<16x32xf16> -> tensor<16x32xf16, #enc0>
    %eb = iree_encoding.set_encoding %b : tensor<32x16xf16> -> tensor<32x16xf16, #enc1>
    %e = tensor.empty() : tensor<16x16xf32, #enc2>
    %acc = linalg.fill ins(%zero : f32) outs(%e : tensor<16x16xf32, #enc2>) -> tensor<16x16xf32, #enc2>
    %r = linalg.generic {indexing_maps = [#map, #map1, #map2], iterator_types = ["parallel", "parallel", "reduction"]} ins(%ea, %eb : tensor<16x32xf16, #enc0>, tensor<32x16xf16, #enc1>) outs(%acc : tensor<16x16xf32, #enc2>) {
    ^bb0(%x: f16, %y: f16, %o: f32):
      %xf = arith.extf %x : f16 to f32
      %yf = arith.extf %y : f16 to f32
      %m = arith.mulf %xf, %yf : f32
      %s = arith.addf %o, %m : f32
      linalg.yield %s : f32
    } -> tensor<16x16xf32, #enc2>
    %u = iree_encoding.unset_encoding %r : tensor<16x16xf32, #enc2> -> tensor<16x16xf32>
    flow.return %u : tensor<16x16xf32>
  }
  return %0 : tensor<16x16xf32>
}
