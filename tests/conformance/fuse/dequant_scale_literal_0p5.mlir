// The scale is written 0.5; IREE prints it back as 5.000000e-01: floats compare by value.
// The same for the weight (operand 1): a dispatch dequantizing an i8 weight to f32 gets the weight's
// set_encoding, so the dequantized weight is written once, already in the packed layout.
// (FuseEncodingOpsIntoDispatchRegions.cpp: the producer kind does not matter, any linalg op is fusable.)
// EXPECT: in
#mk = affine_map<(d0, d1, d2) -> (d0, d2)>
#kn = affine_map<(d0, d1, d2) -> (d2, d1)>
#mn = affine_map<(d0, d1, d2) -> (d0, d1)>
#id = affine_map<(d0, d1) -> (d0, d1)>
#lhs = #iree_encoding.encoding<operand_index = 0 : index, op_type = matmul, element_types = [f32, f32, f32], user_indexing_maps = [#mk, #kn, #mn], iteration_sizes = [8, 32, 16]>
#rhs = #iree_encoding.encoding<operand_index = 1 : index, op_type = matmul, element_types = [f32, f32, f32], user_indexing_maps = [#mk, #kn, #mn], iteration_sizes = [8, 32, 16]>
#acc = #iree_encoding.encoding<operand_index = 2 : index, op_type = matmul, element_types = [f32, f32, f32], user_indexing_maps = [#mk, #kn, #mn], iteration_sizes = [8, 32, 16]>
util.func public @dequantized_weight_encoded_in_its_dispatch(%a: tensor<8x16xf32>, %w: tensor<16x32xi8>) -> tensor<8x32xf32> {
  %init = tensor.empty() : tensor<16x32xf32>
  %deq = flow.dispatch.region -> (tensor<16x32xf32>) {
    %g = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]} ins(%w : tensor<16x32xi8>) outs(%init : tensor<16x32xf32>) {
    ^bb0(%x: i8, %o: f32):
      %y = arith.sitofp %x : i8 to f32
      %s = arith.constant 0.5 : f32
      %z = arith.mulf %y, %s : f32
      linalg.yield %z : f32
    } -> tensor<16x32xf32>
    flow.return %g : tensor<16x32xf32>
  }
  %l = iree_encoding.set_encoding %a : tensor<8x16xf32> -> tensor<8x16xf32, #lhs>
  %r = iree_encoding.set_encoding %deq : tensor<16x32xf32> -> tensor<16x32xf32, #rhs>
  %res = flow.dispatch.region -> (tensor<8x32xf32>) {
    %zero = arith.constant 0.0 : f32
    %e = tensor.empty() : tensor<8x32xf32, #acc>
    %f = linalg.fill ins(%zero : f32) outs(%e : tensor<8x32xf32, #acc>) -> tensor<8x32xf32, #acc>
    %m = linalg.matmul indexing_maps = [#mk, #kn, #mn] ins(%l, %r : tensor<8x16xf32, #lhs>, tensor<16x32xf32, #rhs>) outs(%f : tensor<8x32xf32, #acc>) -> tensor<8x32xf32, #acc>
    %u = iree_encoding.unset_encoding %m : tensor<8x32xf32, #acc> -> tensor<8x32xf32>
    flow.return %u : tensor<8x32xf32>
  }
  util.return %res : tensor<8x32xf32>
}

