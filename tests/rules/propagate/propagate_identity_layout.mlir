// RUN: egg-dispatch opt --split-input-file --rules propagate --target none %s | filecheck %s

// propagate_slice.egg condition 4: with no resolver (target none) the layout is the identity: nothing to propagate.
// CHECK-LABEL: plans for @dont_propagate_identity_layout: {{[1-9]}}
// CHECK-NOT:   tensor<16x8xf32, #encoding
func.func @dont_propagate_identity_layout(%rhs: tensor<8x8xf32>) -> tensor<8x8xf32> {
  %zero = arith.constant 0.0 : f32
  %w = arith.constant dense<[[-1.00, 0.25, -0.75, 0.50, -0.50, 0.75, -0.25, 1.00], [0.00, -1.00, 0.25, -0.75, 0.50, -0.50, 0.75, -0.25], [1.00, 0.00, -1.00, 0.25, -0.75, 0.50, -0.50, 0.75], [-0.25, 1.00, 0.00, -1.00, 0.25, -0.75, 0.50, -0.50], [0.75, -0.25, 1.00, 0.00, -1.00, 0.25, -0.75, 0.50], [-0.50, 0.75, -0.25, 1.00, 0.00, -1.00, 0.25, -0.75], [0.50, -0.50, 0.75, -0.25, 1.00, 0.00, -1.00, 0.25], [-0.75, 0.50, -0.50, 0.75, -0.25, 1.00, 0.00, -1.00], [0.25, -0.75, 0.50, -0.50, 0.75, -0.25, 1.00, 0.00], [-1.00, 0.25, -0.75, 0.50, -0.50, 0.75, -0.25, 1.00], [0.00, -1.00, 0.25, -0.75, 0.50, -0.50, 0.75, -0.25], [1.00, 0.00, -1.00, 0.25, -0.75, 0.50, -0.50, 0.75], [-0.25, 1.00, 0.00, -1.00, 0.25, -0.75, 0.50, -0.50], [0.75, -0.25, 1.00, 0.00, -1.00, 0.25, -0.75, 0.50], [-0.50, 0.75, -0.25, 1.00, 0.00, -1.00, 0.25, -0.75], [0.50, -0.50, 0.75, -0.25, 1.00, 0.00, -1.00, 0.25]]> : tensor<16x8xf32>
  %s = tensor.extract_slice %w[8, 0] [8, 8] [1, 1] : tensor<16x8xf32> to tensor<8x8xf32>
  %acc_e = tensor.empty() : tensor<8x8xf32>
  %acc = linalg.fill ins(%zero : f32) outs(%acc_e : tensor<8x8xf32>) -> tensor<8x8xf32>
  %r = linalg.matmul indexing_maps = [affine_map<(d0, d1, d2) -> (d0, d2)>, affine_map<(d0, d1, d2) -> (d1, d2)>, affine_map<(d0, d1, d2) -> (d0, d1)>] ins(%s, %rhs : tensor<8x8xf32>, tensor<8x8xf32>) outs(%acc : tensor<8x8xf32>) -> tensor<8x8xf32>
  return %r : tensor<8x8xf32>
}

// -----

// propagate_bubble.egg condition 4 fails for the identity layout on target none, which has no encoding resolver (IREE
// without data tiling): the set_encoding stays below the widening generic (one plan, the bubbling rule never fires).
// CHECK-LABEL: plans for @dont_bubble_without_a_resolver: 1;
// CHECK-NOT:   bubble-set-encoding-through-generic
#map = affine_map<(d0, d1, d2) -> (d0, d1, d2)>
#map1 = affine_map<(d0, d1, d2) -> (d1, d2, d0)>
#map2 = affine_map<(d0, d1, d2, d3) -> (d0, d3, d2)>
#map3 = affine_map<(d0, d1, d2, d3) -> (d0, d1, d3)>
#encoding = #iree_encoding.encoding<operand_index = 1 : index, op_type = matmul, element_types = [f32, f32, f16], user_indexing_maps = [#map2, #map3, #map2]>
func.func @dont_bubble_without_a_resolver(%arg0: tensor<2x16x8xf16>) -> tensor<16x8x2xf32, #encoding> {
  %6 = flow.dispatch.region -> (tensor<16x8x2xf32, #encoding>) {
    %8 = tensor.empty() : tensor<16x8x2xf32>
    %11 = linalg.generic {indexing_maps = [#map, #map1], iterator_types = ["parallel", "parallel", "parallel"]} ins(%arg0 : tensor<2x16x8xf16>) outs(%8 : tensor<16x8x2xf32>) {
    ^bb0(%in: f16, %out: f32):
      %18 = arith.extf %in : f16 to f32
      linalg.yield %18 : f32
    } -> tensor<16x8x2xf32>
    %13 = iree_encoding.set_encoding %11 : tensor<16x8x2xf32> -> tensor<16x8x2xf32, #encoding>
    flow.return %13 : tensor<16x8x2xf32, #encoding>
  }
  return %6 : tensor<16x8x2xf32, #encoding>
}
