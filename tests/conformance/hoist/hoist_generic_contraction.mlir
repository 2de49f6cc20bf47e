// HoistEncodingOps visits every set_encoding of a dispatch, whatever op reads it: here a contraction
// written as a linalg.generic, its encodings without iteration_sizes (IREE's resolver then takes the
// sizes as unknown and still tiles). Both operand encodings leave the dispatch.
// EXPECT: in
#mk = affine_map<(d0, d1, d2) -> (d0, d2)>
#kn = affine_map<(d0, d1, d2) -> (d2, d1)>
#mn = affine_map<(d0, d1, d2) -> (d0, d1)>
#lhs = #iree_encoding.encoding<operand_index = 0 : index, op_type = matmul, element_types = [f32, f32, f32], user_indexing_maps = [#mk, #kn, #mn]>
#rhs = #iree_encoding.encoding<operand_index = 1 : index, op_type = matmul, element_types = [f32, f32, f32], user_indexing_maps = [#mk, #kn, #mn]>
#out = #iree_encoding.encoding<operand_index = 2 : index, op_type = matmul, element_types = [f32, f32, f32], user_indexing_maps = [#mk, #kn, #mn]>
util.func public @hoist_encodings_of_a_generic_contraction(%x: tensor<16x24xf32>, %w: tensor<24x8xf32>) -> tensor<16x8xf32> {
  %zero = arith.constant 0.0 : f32
  %0 = flow.dispatch.region -> (tensor<16x8xf32>) {
    %l = iree_encoding.set_encoding %x : tensor<16x24xf32> -> tensor<16x24xf32, #lhs>
    %r = iree_encoding.set_encoding %w : tensor<24x8xf32> -> tensor<24x8xf32, #rhs>
    %e = tensor.empty() : tensor<16x8xf32, #out>
    %f = linalg.fill ins(%zero : f32) outs(%e : tensor<16x8xf32, #out>) -> tensor<16x8xf32, #out>
    %m = linalg.generic {indexing_maps = [#mk, #kn, #mn], iterator_types = ["parallel", "parallel", "reduction"]}
        ins(%l, %r : tensor<16x24xf32, #lhs>, tensor<24x8xf32, #rhs>) outs(%f : tensor<16x8xf32, #out>) {
    ^bb0(%a: f32, %b: f32, %acc: f32):
      %p = arith.mulf %a, %b : f32
      %s = arith.addf %p, %acc : f32
      linalg.yield %s : f32
    } -> tensor<16x8xf32, #out>
    %u = iree_encoding.unset_encoding %m : tensor<16x8xf32, #out> -> tensor<16x8xf32>
    flow.return %u : tensor<16x8xf32>
  }
  util.return %0 : tensor<16x8xf32>
}
