// FuseEncodingOpsIntoDispatchRegions (FuseEncodingOpsIntoDispatchRegions.cpp, and FusionUtils.cpp
// getProducerDispatchValueAndOpChain): without aggressive fusion, a producer result with a second
// user is not fused: here the squared input is both encoded for the matmul and returned plain, so the
// set_encoding stays outside between the two dispatches (fusing it would need the dispatch to return
// both forms).
// EXPECT: in
#mk = affine_map<(d0, d1, d2) -> (d0, d2)>
#kn = affine_map<(d0, d1, d2) -> (d2, d1)>
#mn = affine_map<(d0, d1, d2) -> (d0, d1)>
#id = affine_map<(d0, d1) -> (d0, d1)>
#lhs = #iree_encoding.encoding<operand_index = 0 : index, op_type = matmul, element_types = [f32, f32, f32], user_indexing_maps = [#mk, #kn, #mn], iteration_sizes = [8, 32, 16]>
#rhs = #iree_encoding.encoding<operand_index = 1 : index, op_type = matmul, element_types = [f32, f32, f32], user_indexing_maps = [#mk, #kn, #mn], iteration_sizes = [8, 32, 16]>
#acc = #iree_encoding.encoding<operand_index = 2 : index, op_type = matmul, element_types = [f32, f32, f32], user_indexing_maps = [#mk, #kn, #mn], iteration_sizes = [8, 32, 16]>
util.func public @squared_lhs_also_returned(%a: tensor<8x16xf32>, %b: tensor<16x32xf32>) -> (tensor<8x16xf32>, tensor<8x32xf32>) {
  %init = tensor.empty() : tensor<8x16xf32>
  %sq = flow.dispatch.region -> (tensor<8x16xf32>) {
    %g = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]} ins(%a : tensor<8x16xf32>) outs(%init : tensor<8x16xf32>) {
    ^bb0(%x: f32, %o: f32):
      %y = arith.mulf %x, %x : f32
      linalg.yield %y : f32
    } -> tensor<8x16xf32>
    flow.return %g : tensor<8x16xf32>
  }
  %l = iree_encoding.set_encoding %sq : tensor<8x16xf32> -> tensor<8x16xf32, #lhs>
  %r = iree_encoding.set_encoding %b : tensor<16x32xf32> -> tensor<16x32xf32, #rhs>
  %res = flow.dispatch.region -> (tensor<8x32xf32>) {
    %zero = arith.constant 0.0 : f32
    %e = tensor.empty() : tensor<8x32xf32, #acc>
    %f = linalg.fill ins(%zero : f32) outs(%e : tensor<8x32xf32, #acc>) -> tensor<8x32xf32, #acc>
    %m = linalg.matmul indexing_maps = [#mk, #kn, #mn] ins(%l, %r : tensor<8x16xf32, #lhs>, tensor<16x32xf32, #rhs>) outs(%f : tensor<8x32xf32, #acc>) -> tensor<8x32xf32, #acc>
    %u = iree_encoding.unset_encoding %m : tensor<8x32xf32, #acc> -> tensor<8x32xf32>
    flow.return %u : tensor<8x32xf32>
  }
  util.return %sq, %res : tensor<8x16xf32>, tensor<8x32xf32>
}

// -----

// One producer result encoded twice, as the lhs of one matmul and the rhs of another: it has two
// users (getProducerDispatchValueAndOpChain bails out), so neither set_encoding moves into the
// producer's dispatch.
// EXPECT: in
#mk = affine_map<(d0, d1, d2) -> (d0, d2)>
#kn = affine_map<(d0, d1, d2) -> (d2, d1)>
#mn = affine_map<(d0, d1, d2) -> (d0, d1)>
#id = affine_map<(d0, d1) -> (d0, d1)>
#lhs = #iree_encoding.encoding<operand_index = 0 : index, op_type = matmul, element_types = [f32, f32, f32], user_indexing_maps = [#mk, #kn, #mn], iteration_sizes = [16, 16, 16]>
#rhs = #iree_encoding.encoding<operand_index = 1 : index, op_type = matmul, element_types = [f32, f32, f32], user_indexing_maps = [#mk, #kn, #mn], iteration_sizes = [16, 16, 16]>
#acc = #iree_encoding.encoding<operand_index = 2 : index, op_type = matmul, element_types = [f32, f32, f32], user_indexing_maps = [#mk, #kn, #mn], iteration_sizes = [16, 16, 16]>
util.func public @one_value_encoded_as_lhs_and_rhs(%a: tensor<16x16xf32>) -> tensor<16x16xf32> {
  %init = tensor.empty() : tensor<16x16xf32>
  %neg = flow.dispatch.region -> (tensor<16x16xf32>) {
    %g = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]} ins(%a : tensor<16x16xf32>) outs(%init : tensor<16x16xf32>) {
    ^bb0(%x: f32, %o: f32):
      %y = arith.negf %x : f32
      linalg.yield %y : f32
    } -> tensor<16x16xf32>
    flow.return %g : tensor<16x16xf32>
  }
  %l = iree_encoding.set_encoding %neg : tensor<16x16xf32> -> tensor<16x16xf32, #lhs>
  %r = iree_encoding.set_encoding %neg : tensor<16x16xf32> -> tensor<16x16xf32, #rhs>
  %res = flow.dispatch.region -> (tensor<16x16xf32>) {
    %zero = arith.constant 0.0 : f32
    %e = tensor.empty() : tensor<16x16xf32, #acc>
    %f = linalg.fill ins(%zero : f32) outs(%e : tensor<16x16xf32, #acc>) -> tensor<16x16xf32, #acc>
    %m = linalg.matmul indexing_maps = [#mk, #kn, #mn] ins(%l, %r : tensor<16x16xf32, #lhs>, tensor<16x16xf32, #rhs>) outs(%f : tensor<16x16xf32, #acc>) -> tensor<16x16xf32, #acc>
    %u = iree_encoding.unset_encoding %m : tensor<16x16xf32, #acc> -> tensor<16x16xf32>
    flow.return %u : tensor<16x16xf32>
  }
  util.return %res : tensor<16x16xf32>
}

// -----

// A set_encoding of a function argument has no producer dispatch (getProducerDispatchValueAndOpChain
// finds no OpResult): nothing to fuse into, the encode stays where it is.
// EXPECT: in
#mk = affine_map<(d0, d1, d2) -> (d0, d2)>
#kn = affine_map<(d0, d1, d2) -> (d2, d1)>
#mn = affine_map<(d0, d1, d2) -> (d0, d1)>
#lhs = #iree_encoding.encoding<operand_index = 0 : index, op_type = matmul, element_types = [f32, f32, f32], user_indexing_maps = [#mk, #kn, #mn], iteration_sizes = [4, 8, 16]>
#rhs = #iree_encoding.encoding<operand_index = 1 : index, op_type = matmul, element_types = [f32, f32, f32], user_indexing_maps = [#mk, #kn, #mn], iteration_sizes = [4, 8, 16]>
#acc = #iree_encoding.encoding<operand_index = 2 : index, op_type = matmul, element_types = [f32, f32, f32], user_indexing_maps = [#mk, #kn, #mn], iteration_sizes = [4, 8, 16]>
util.func public @argument_encodes_stay_outside(%a: tensor<4x16xf32>, %b: tensor<16x8xf32>) -> tensor<4x8xf32> {
  %l = iree_encoding.set_encoding %a : tensor<4x16xf32> -> tensor<4x16xf32, #lhs>
  %r = iree_encoding.set_encoding %b : tensor<16x8xf32> -> tensor<16x8xf32, #rhs>
  %res = flow.dispatch.region -> (tensor<4x8xf32>) {
    %zero = arith.constant 0.0 : f32
    %e = tensor.empty() : tensor<4x8xf32, #acc>
    %f = linalg.fill ins(%zero : f32) outs(%e : tensor<4x8xf32, #acc>) -> tensor<4x8xf32, #acc>
    %m = linalg.matmul indexing_maps = [#mk, #kn, #mn] ins(%l, %r : tensor<4x16xf32, #lhs>, tensor<16x8xf32, #rhs>) outs(%f : tensor<4x8xf32, #acc>) -> tensor<4x8xf32, #acc>
    %u = iree_encoding.unset_encoding %m : tensor<4x8xf32, #acc> -> tensor<4x8xf32>
    flow.return %u : tensor<4x8xf32>
  }
  util.return %res : tensor<4x8xf32>
}

// -----

// A set_encoding already inside a dispatch is not a candidate (the pass collects only set_encodings
// for which isNonNullAndOutsideDispatch holds): the matmul dispatch keeps its own operand encode even
// though its source is another dispatch's single-use result.
// EXPECT: in
#mk = affine_map<(d0, d1, d2) -> (d0, d2)>
#kn = affine_map<(d0, d1, d2) -> (d2, d1)>
#mn = affine_map<(d0, d1, d2) -> (d0, d1)>
#id = affine_map<(d0, d1) -> (d0, d1)>
#lhs = #iree_encoding.encoding<operand_index = 0 : index, op_type = matmul, element_types = [f32, f32, f32], user_indexing_maps = [#mk, #kn, #mn], iteration_sizes = [8, 32, 16]>
#rhs = #iree_encoding.encoding<operand_index = 1 : index, op_type = matmul, element_types = [f32, f32, f32], user_indexing_maps = [#mk, #kn, #mn], iteration_sizes = [8, 32, 16]>
#acc = #iree_encoding.encoding<operand_index = 2 : index, op_type = matmul, element_types = [f32, f32, f32], user_indexing_maps = [#mk, #kn, #mn], iteration_sizes = [8, 32, 16]>
util.func public @encode_inside_consumer_untouched(%a: tensor<8x16xf32>, %b: tensor<16x32xf32>) -> tensor<8x32xf32> {
  %init = tensor.empty() : tensor<8x16xf32>
  %ab = flow.dispatch.region -> (tensor<8x16xf32>) {
    %g = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]} ins(%a : tensor<8x16xf32>) outs(%init : tensor<8x16xf32>) {
    ^bb0(%x: f32, %o: f32):
      %y = math.absf %x : f32
      linalg.yield %y : f32
    } -> tensor<8x16xf32>
    flow.return %g : tensor<8x16xf32>
  }
  %res = flow.dispatch.region -> (tensor<8x32xf32>) {
    %l = iree_encoding.set_encoding %ab : tensor<8x16xf32> -> tensor<8x16xf32, #lhs>
    %r = iree_encoding.set_encoding %b : tensor<16x32xf32> -> tensor<16x32xf32, #rhs>
    %zero = arith.constant 0.0 : f32
    %e = tensor.empty() : tensor<8x32xf32, #acc>
    %f = linalg.fill ins(%zero : f32) outs(%e : tensor<8x32xf32, #acc>) -> tensor<8x32xf32, #acc>
    %m = linalg.matmul indexing_maps = [#mk, #kn, #mn] ins(%l, %r : tensor<8x16xf32, #lhs>, tensor<16x32xf32, #rhs>) outs(%f : tensor<8x32xf32, #acc>) -> tensor<8x32xf32, #acc>
    %u = iree_encoding.unset_encoding %m : tensor<8x32xf32, #acc> -> tensor<8x32xf32>
    flow.return %u : tensor<8x32xf32>
  }
  util.return %res : tensor<8x32xf32>
}

// -----

// A producer dispatch holding an op outside isFusableWithSetEncoding's list (here a tensor.insert_slice
// writing the argument into a zero-filled larger tensor, a padding written by hand) refuses the
// encode: it stays outside, between the dispatches.
// EXPECT: in
#mk = affine_map<(d0, d1, d2) -> (d0, d2)>
#kn = affine_map<(d0, d1, d2) -> (d2, d1)>
#mn = affine_map<(d0, d1, d2) -> (d0, d1)>
#lhs = #iree_encoding.encoding<operand_index = 0 : index, op_type = matmul, element_types = [f32, f32, f32], user_indexing_maps = [#mk, #kn, #mn], iteration_sizes = [8, 32, 16]>
#rhs = #iree_encoding.encoding<operand_index = 1 : index, op_type = matmul, element_types = [f32, f32, f32], user_indexing_maps = [#mk, #kn, #mn], iteration_sizes = [8, 32, 16]>
#acc = #iree_encoding.encoding<operand_index = 2 : index, op_type = matmul, element_types = [f32, f32, f32], user_indexing_maps = [#mk, #kn, #mn], iteration_sizes = [8, 32, 16]>
util.func public @insert_slice_producer_not_fusable(%a: tensor<8x12xf32>, %b: tensor<16x32xf32>) -> tensor<8x32xf32> {
  %zero = arith.constant 0.0 : f32
  %padded = flow.dispatch.region -> (tensor<8x16xf32>) {
    %e0 = tensor.empty() : tensor<8x16xf32>
    %z = linalg.fill ins(%zero : f32) outs(%e0 : tensor<8x16xf32>) -> tensor<8x16xf32>
    %ins = tensor.insert_slice %a into %z[0, 0] [8, 12] [1, 1] : tensor<8x12xf32> into tensor<8x16xf32>
    flow.return %ins : tensor<8x16xf32>
  }
  %l = iree_encoding.set_encoding %padded : tensor<8x16xf32> -> tensor<8x16xf32, #lhs>
  %r = iree_encoding.set_encoding %b : tensor<16x32xf32> -> tensor<16x32xf32, #rhs>
  %res = flow.dispatch.region -> (tensor<8x32xf32>) {
    %e = tensor.empty() : tensor<8x32xf32, #acc>
    %f = linalg.fill ins(%zero : f32) outs(%e : tensor<8x32xf32, #acc>) -> tensor<8x32xf32, #acc>
    %m = linalg.matmul indexing_maps = [#mk, #kn, #mn] ins(%l, %r : tensor<8x16xf32, #lhs>, tensor<16x32xf32, #rhs>) outs(%f : tensor<8x32xf32, #acc>) -> tensor<8x32xf32, #acc>
    %u = iree_encoding.unset_encoding %m : tensor<8x32xf32, #acc> -> tensor<8x32xf32>
    flow.return %u : tensor<8x32xf32>
  }
  util.return %res : tensor<8x32xf32>
}

// -----

// An op between the producer dispatch and the set_encoding that is not a reshape (here a
// tensor.extract_slice outside any dispatch) stops the walk up the chain
// (getProducerDispatchValueAndOpChain looks only past collapse_shape / expand_shape), so the encode
// is not fused.
// EXPECT: in
#mk = affine_map<(d0, d1, d2) -> (d0, d2)>
#kn = affine_map<(d0, d1, d2) -> (d2, d1)>
#mn = affine_map<(d0, d1, d2) -> (d0, d1)>
#id = affine_map<(d0, d1) -> (d0, d1)>
#lhs = #iree_encoding.encoding<operand_index = 0 : index, op_type = matmul, element_types = [f32, f32, f32], user_indexing_maps = [#mk, #kn, #mn], iteration_sizes = [8, 32, 16]>
#rhs = #iree_encoding.encoding<operand_index = 1 : index, op_type = matmul, element_types = [f32, f32, f32], user_indexing_maps = [#mk, #kn, #mn], iteration_sizes = [8, 32, 16]>
#acc = #iree_encoding.encoding<operand_index = 2 : index, op_type = matmul, element_types = [f32, f32, f32], user_indexing_maps = [#mk, #kn, #mn], iteration_sizes = [8, 32, 16]>
util.func public @slice_between_producer_and_encode(%a: tensor<16x16xf32>, %b: tensor<16x32xf32>) -> tensor<8x32xf32> {
  %init = tensor.empty() : tensor<16x16xf32>
  %ex = flow.dispatch.region -> (tensor<16x16xf32>) {
    %g = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]} ins(%a : tensor<16x16xf32>) outs(%init : tensor<16x16xf32>) {
    ^bb0(%x: f32, %o: f32):
      %y = math.exp %x : f32
      linalg.yield %y : f32
    } -> tensor<16x16xf32>
    flow.return %g : tensor<16x16xf32>
  }
  %top = tensor.extract_slice %ex[0, 0] [8, 16] [1, 1] : tensor<16x16xf32> to tensor<8x16xf32>
  %l = iree_encoding.set_encoding %top : tensor<8x16xf32> -> tensor<8x16xf32, #lhs>
  %r = iree_encoding.set_encoding %b : tensor<16x32xf32> -> tensor<16x32xf32, #rhs>
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
