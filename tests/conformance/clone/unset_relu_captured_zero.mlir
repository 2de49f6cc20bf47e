// The ReLU's zero is captured from outside the dispatch; IREE clones the constant into it. Bodies
// compare by structure (a scalar constant is its value, defined inside or read from outside).
// An unset_encoding outside any dispatch is cloneable (isCloneableIntoDispatchOp lists
// UnsetEncodingOp): an elementwise dispatch consuming the plain matmul result gets the unset cloned
// in, so it reads the packed accumulator directly.
// EXPECT: in
#mk = affine_map<(d0, d1, d2) -> (d0, d2)>
#kn = affine_map<(d0, d1, d2) -> (d2, d1)>
#mn = affine_map<(d0, d1, d2) -> (d0, d1)>
#id = affine_map<(d0, d1) -> (d0, d1)>
#lhs = #iree_encoding.encoding<operand_index = 0 : index, op_type = matmul, element_types = [f32, f32, f32], user_indexing_maps = [#mk, #kn, #mn], iteration_sizes = [8, 32, 16]>
#rhs = #iree_encoding.encoding<operand_index = 1 : index, op_type = matmul, element_types = [f32, f32, f32], user_indexing_maps = [#mk, #kn, #mn], iteration_sizes = [8, 32, 16]>
#acc = #iree_encoding.encoding<operand_index = 2 : index, op_type = matmul, element_types = [f32, f32, f32], user_indexing_maps = [#mk, #kn, #mn], iteration_sizes = [8, 32, 16]>
util.func public @unset_cloned_into_elementwise_consumer(%a: tensor<8x16xf32>, %b: tensor<16x32xf32>) -> tensor<8x32xf32> {
  %zero = arith.constant 0.0 : f32
  %l = iree_encoding.set_encoding %a : tensor<8x16xf32> -> tensor<8x16xf32, #lhs>
  %r = iree_encoding.set_encoding %b : tensor<16x32xf32> -> tensor<16x32xf32, #rhs>
  %mm = flow.dispatch.region -> (tensor<8x32xf32, #acc>) {
    %e = tensor.empty() : tensor<8x32xf32, #acc>
    %f = linalg.fill ins(%zero : f32) outs(%e : tensor<8x32xf32, #acc>) -> tensor<8x32xf32, #acc>
    %m = linalg.matmul indexing_maps = [#mk, #kn, #mn] ins(%l, %r : tensor<8x16xf32, #lhs>, tensor<16x32xf32, #rhs>) outs(%f : tensor<8x32xf32, #acc>) -> tensor<8x32xf32, #acc>
    flow.return %m : tensor<8x32xf32, #acc>
  }
  %u = iree_encoding.unset_encoding %mm : tensor<8x32xf32, #acc> -> tensor<8x32xf32>
  %res = flow.dispatch.region -> (tensor<8x32xf32>) {
    %e = tensor.empty() : tensor<8x32xf32>
    %g = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]} ins(%u : tensor<8x32xf32>) outs(%e : tensor<8x32xf32>) {
    ^bb0(%x: f32, %o: f32):
      %y = arith.maximumf %x, %zero : f32
      linalg.yield %y : f32
    } -> tensor<8x32xf32>
    flow.return %g : tensor<8x32xf32>
  }
  util.return %res : tensor<8x32xf32>
}

