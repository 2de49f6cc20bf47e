// A column slice of a splat constant: not Flow-mappable, so our hoist condition 2 keeps its
// set_encoding in the dispatch; but IREE's greedy rewrite folds the slice of a splat into a new splat
// constant first, and a constant's set_encoding is hoisted. The e-graph holds that constant in the
// slice's e-class (rules/fold_constants.egg conditions 1-3), and hoists its set_encoding.
// EXPECT: in
#mk = affine_map<(d0, d1, d2) -> (d0, d2)>
#kn = affine_map<(d0, d1, d2) -> (d2, d1)>
#mn = affine_map<(d0, d1, d2) -> (d0, d1)>
#lhs = #iree_encoding.encoding<operand_index = 0 : index, op_type = matmul, element_types = [f32, f32, f32], user_indexing_maps = [#mk, #kn, #mn], iteration_sizes = [4, 8, 16]>
#rhs = #iree_encoding.encoding<operand_index = 1 : index, op_type = matmul, element_types = [f32, f32, f32], user_indexing_maps = [#mk, #kn, #mn], iteration_sizes = [4, 8, 16]>
#out = #iree_encoding.encoding<operand_index = 2 : index, op_type = matmul, element_types = [f32, f32, f32], user_indexing_maps = [#mk, #kn, #mn], iteration_sizes = [4, 8, 16]>
util.func public @splat_weight_column_half(%x: tensor<4x16xf32>) -> tensor<4x8xf32> {
  %w = arith.constant dense<0.25> : tensor<16x16xf32>
  %0 = flow.dispatch.region -> (tensor<4x8xf32>) {
    %l = iree_encoding.set_encoding %x : tensor<4x16xf32> -> tensor<4x16xf32, #lhs>
    %half = tensor.extract_slice %w[0, 8] [16, 8] [1, 1] : tensor<16x16xf32> to tensor<16x8xf32>
    %r = iree_encoding.set_encoding %half : tensor<16x8xf32> -> tensor<16x8xf32, #rhs>
    %zero = arith.constant 0.0 : f32
    %e = tensor.empty() : tensor<4x8xf32, #out>
    %f = linalg.fill ins(%zero : f32) outs(%e : tensor<4x8xf32, #out>) -> tensor<4x8xf32, #out>
    %m = linalg.matmul indexing_maps = [#mk, #kn, #mn] ins(%l, %r : tensor<4x16xf32, #lhs>, tensor<16x8xf32, #rhs>) outs(%f : tensor<4x8xf32, #out>) -> tensor<4x8xf32, #out>
    %u = iree_encoding.unset_encoding %m : tensor<4x8xf32, #out> -> tensor<4x8xf32>
    flow.return %u : tensor<4x8xf32>
  }
  util.return %0 : tensor<4x8xf32>
}
