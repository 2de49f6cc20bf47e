// FuseEncodingOpsIntoDispatchRegions (FuseEncodingOpsIntoDispatchRegions.cpp, runOnOperation and
// isFusableWithSetEncoding): a set_encoding outside any dispatch whose source is the single-use result
// of a dispatch holding an elementwise linalg.generic moves into that dispatch, which then returns the
// encoded value. This is what saves the pack its own dispatch and round trip through memory.
// EXPECT: in
#mk = affine_map<(d0, d1, d2) -> (d0, d2)>
#kn = affine_map<(d0, d1, d2) -> (d2, d1)>
#mn = affine_map<(d0, d1, d2) -> (d0, d1)>
#id = affine_map<(d0, d1) -> (d0, d1)>
#lhs = #iree_encoding.encoding<operand_index = 0 : index, op_type = matmul, element_types = [f32, f32, f32], user_indexing_maps = [#mk, #kn, #mn], iteration_sizes = [8, 32, 16]>
#rhs = #iree_encoding.encoding<operand_index = 1 : index, op_type = matmul, element_types = [f32, f32, f32], user_indexing_maps = [#mk, #kn, #mn], iteration_sizes = [8, 32, 16]>
#acc = #iree_encoding.encoding<operand_index = 2 : index, op_type = matmul, element_types = [f32, f32, f32], user_indexing_maps = [#mk, #kn, #mn], iteration_sizes = [8, 32, 16]>
util.func public @square_then_encode_lhs(%a: tensor<8x16xf32>, %b: tensor<16x32xf32>) -> tensor<8x32xf32> {
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
  util.return %res : tensor<8x32xf32>
}

// -----

// The same for the weight (operand 1): a dispatch dequantizing an i8 weight to f32 gets the weight's
// set_encoding, so the dequantized weight is written once, already in the packed layout.
// (FuseEncodingOpsIntoDispatchRegions.cpp: the producer kind does not matter, any linalg op is fusable.)
// The scale is written as IREE prints it (5.000000e-01): the membership check compares generic bodies
// as text, and 0.5 would read as another body (a reader issue, not a missing rule).
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
      %s = arith.constant 5.000000e-01 : f32
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

// -----

// A reduction producer is fusable too (isFusableWithSetEncoding admits every linalg op, parallel or
// not): the row sums of a 3-d input, reduced over its last dimension, are encoded as the lhs inside
// the reducing dispatch.
// EXPECT: in
#mk = affine_map<(d0, d1, d2) -> (d0, d2)>
#kn = affine_map<(d0, d1, d2) -> (d2, d1)>
#mn = affine_map<(d0, d1, d2) -> (d0, d1)>
#in3 = affine_map<(d0, d1, d2) -> (d0, d1, d2)>
#out2 = affine_map<(d0, d1, d2) -> (d0, d1)>
#lhs = #iree_encoding.encoding<operand_index = 0 : index, op_type = matmul, element_types = [f32, f32, f32], user_indexing_maps = [#mk, #kn, #mn], iteration_sizes = [8, 32, 16]>
#rhs = #iree_encoding.encoding<operand_index = 1 : index, op_type = matmul, element_types = [f32, f32, f32], user_indexing_maps = [#mk, #kn, #mn], iteration_sizes = [8, 32, 16]>
#acc = #iree_encoding.encoding<operand_index = 2 : index, op_type = matmul, element_types = [f32, f32, f32], user_indexing_maps = [#mk, #kn, #mn], iteration_sizes = [8, 32, 16]>
util.func public @row_sums_encoded_in_reduction_dispatch(%a: tensor<8x16x4xf32>, %b: tensor<16x32xf32>) -> tensor<8x32xf32> {
  %zero = arith.constant 0.0 : f32
  %init = tensor.empty() : tensor<8x16xf32>
  %sums = flow.dispatch.region -> (tensor<8x16xf32>) {
    %acc0 = linalg.fill ins(%zero : f32) outs(%init : tensor<8x16xf32>) -> tensor<8x16xf32>
    %g = linalg.generic {indexing_maps = [#in3, #out2], iterator_types = ["parallel", "parallel", "reduction"]} ins(%a : tensor<8x16x4xf32>) outs(%acc0 : tensor<8x16xf32>) {
    ^bb0(%x: f32, %o: f32):
      %y = arith.addf %x, %o : f32
      linalg.yield %y : f32
    } -> tensor<8x16xf32>
    flow.return %g : tensor<8x16xf32>
  }
  %l = iree_encoding.set_encoding %sums : tensor<8x16xf32> -> tensor<8x16xf32, #lhs>
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

// A transposing producer: a generic that writes the 16x8 input as 8x16 (a permuted input map) gets
// the lhs encoding in its dispatch, so the transpose and the pack are one pass over the data.
// (FuseEncodingOpsIntoDispatchRegions.cpp, isFusableWithSetEncoding: linalg ops of any maps.)
// EXPECT: in
#mk = affine_map<(d0, d1, d2) -> (d0, d2)>
#kn = affine_map<(d0, d1, d2) -> (d2, d1)>
#mn = affine_map<(d0, d1, d2) -> (d0, d1)>
#id = affine_map<(d0, d1) -> (d0, d1)>
#tr = affine_map<(d0, d1) -> (d1, d0)>
#lhs = #iree_encoding.encoding<operand_index = 0 : index, op_type = matmul, element_types = [f32, f32, f32], user_indexing_maps = [#mk, #kn, #mn], iteration_sizes = [8, 32, 16]>
#rhs = #iree_encoding.encoding<operand_index = 1 : index, op_type = matmul, element_types = [f32, f32, f32], user_indexing_maps = [#mk, #kn, #mn], iteration_sizes = [8, 32, 16]>
#acc = #iree_encoding.encoding<operand_index = 2 : index, op_type = matmul, element_types = [f32, f32, f32], user_indexing_maps = [#mk, #kn, #mn], iteration_sizes = [8, 32, 16]>
util.func public @transposed_lhs_encoded_in_transpose_dispatch(%at: tensor<16x8xf32>, %b: tensor<16x32xf32>) -> tensor<8x32xf32> {
  %init = tensor.empty() : tensor<8x16xf32>
  %t = flow.dispatch.region -> (tensor<8x16xf32>) {
    %g = linalg.generic {indexing_maps = [#tr, #id], iterator_types = ["parallel", "parallel"]} ins(%at : tensor<16x8xf32>) outs(%init : tensor<8x16xf32>) {
    ^bb0(%x: f32, %o: f32):
      linalg.yield %x : f32
    } -> tensor<8x16xf32>
    flow.return %g : tensor<8x16xf32>
  }
  %l = iree_encoding.set_encoding %t : tensor<8x16xf32> -> tensor<8x16xf32, #lhs>
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

// -----

// A chain of two matmuls: the first one's dispatch (matmul on encoded operands, then unset_encoding)
// also takes the second matmul's lhs set_encoding, so its result leaves already packed for the next
// contraction. (isFusableWithSetEncoding admits set_encoding, unset_encoding, tensor.empty and
// linalg ops: everything a data-tiled matmul dispatch holds.) This is IREE's MLP chaining.
// EXPECT: in
#mk = affine_map<(d0, d1, d2) -> (d0, d2)>
#kn = affine_map<(d0, d1, d2) -> (d2, d1)>
#mn = affine_map<(d0, d1, d2) -> (d0, d1)>
#lhs1 = #iree_encoding.encoding<operand_index = 0 : index, op_type = matmul, element_types = [f32, f32, f32], user_indexing_maps = [#mk, #kn, #mn], iteration_sizes = [8, 16, 32]>
#rhs1 = #iree_encoding.encoding<operand_index = 1 : index, op_type = matmul, element_types = [f32, f32, f32], user_indexing_maps = [#mk, #kn, #mn], iteration_sizes = [8, 16, 32]>
#acc1 = #iree_encoding.encoding<operand_index = 2 : index, op_type = matmul, element_types = [f32, f32, f32], user_indexing_maps = [#mk, #kn, #mn], iteration_sizes = [8, 16, 32]>
#lhs2 = #iree_encoding.encoding<operand_index = 0 : index, op_type = matmul, element_types = [f32, f32, f32], user_indexing_maps = [#mk, #kn, #mn], iteration_sizes = [8, 32, 16]>
#rhs2 = #iree_encoding.encoding<operand_index = 1 : index, op_type = matmul, element_types = [f32, f32, f32], user_indexing_maps = [#mk, #kn, #mn], iteration_sizes = [8, 32, 16]>
#acc2 = #iree_encoding.encoding<operand_index = 2 : index, op_type = matmul, element_types = [f32, f32, f32], user_indexing_maps = [#mk, #kn, #mn], iteration_sizes = [8, 32, 16]>
util.func public @first_matmul_encodes_second_lhs(%x: tensor<8x32xf32>, %w1: tensor<32x16xf32>, %w2: tensor<16x32xf32>) -> tensor<8x32xf32> {
  %zero = arith.constant 0.0 : f32
  %l1 = iree_encoding.set_encoding %x : tensor<8x32xf32> -> tensor<8x32xf32, #lhs1>
  %r1 = iree_encoding.set_encoding %w1 : tensor<32x16xf32> -> tensor<32x16xf32, #rhs1>
  %h = flow.dispatch.region -> (tensor<8x16xf32>) {
    %e = tensor.empty() : tensor<8x16xf32, #acc1>
    %f = linalg.fill ins(%zero : f32) outs(%e : tensor<8x16xf32, #acc1>) -> tensor<8x16xf32, #acc1>
    %m = linalg.matmul indexing_maps = [#mk, #kn, #mn] ins(%l1, %r1 : tensor<8x32xf32, #lhs1>, tensor<32x16xf32, #rhs1>) outs(%f : tensor<8x16xf32, #acc1>) -> tensor<8x16xf32, #acc1>
    %u = iree_encoding.unset_encoding %m : tensor<8x16xf32, #acc1> -> tensor<8x16xf32>
    flow.return %u : tensor<8x16xf32>
  }
  %l2 = iree_encoding.set_encoding %h : tensor<8x16xf32> -> tensor<8x16xf32, #lhs2>
  %r2 = iree_encoding.set_encoding %w2 : tensor<16x32xf32> -> tensor<16x32xf32, #rhs2>
  %res = flow.dispatch.region -> (tensor<8x32xf32>) {
    %e = tensor.empty() : tensor<8x32xf32, #acc2>
    %f = linalg.fill ins(%zero : f32) outs(%e : tensor<8x32xf32, #acc2>) -> tensor<8x32xf32, #acc2>
    %m = linalg.matmul indexing_maps = [#mk, #kn, #mn] ins(%l2, %r2 : tensor<8x16xf32, #lhs2>, tensor<16x32xf32, #rhs2>) outs(%f : tensor<8x32xf32, #acc2>) -> tensor<8x32xf32, #acc2>
    %u = iree_encoding.unset_encoding %m : tensor<8x32xf32, #acc2> -> tensor<8x32xf32>
    flow.return %u : tensor<8x32xf32>
  }
  util.return %res : tensor<8x32xf32>
}

// -----

// A dispatch holding only a tensor.extract_slice of an argument (a slice IREE could not fold into
// a load) is fusable: extract_slice is on isFusableWithSetEncoding's list, as it folds into the
// dispatch's tensor load, so the slice's dispatch takes the set_encoding and packs the slice directly.
// The fuse family only fuses an encode into a dispatch that computes its source (`computed x`).
// EXPECT: missing no e-node SetEncoding(Slice(Arg
#mk = affine_map<(d0, d1, d2) -> (d0, d2)>
#kn = affine_map<(d0, d1, d2) -> (d2, d1)>
#mn = affine_map<(d0, d1, d2) -> (d0, d1)>
#lhs = #iree_encoding.encoding<operand_index = 0 : index, op_type = matmul, element_types = [f32, f32, f32], user_indexing_maps = [#mk, #kn, #mn], iteration_sizes = [8, 32, 16]>
#rhs = #iree_encoding.encoding<operand_index = 1 : index, op_type = matmul, element_types = [f32, f32, f32], user_indexing_maps = [#mk, #kn, #mn], iteration_sizes = [8, 32, 16]>
#acc = #iree_encoding.encoding<operand_index = 2 : index, op_type = matmul, element_types = [f32, f32, f32], user_indexing_maps = [#mk, #kn, #mn], iteration_sizes = [8, 32, 16]>
util.func public @sliced_lhs_encoded_in_slice_dispatch(%big: tensor<16x48xf32>, %b: tensor<16x32xf32>) -> tensor<8x32xf32> {
  %s = flow.dispatch.region -> (tensor<8x16xf32>) {
    %sl = tensor.extract_slice %big[4, 16] [8, 16] [1, 1] : tensor<16x48xf32> to tensor<8x16xf32>
    flow.return %sl : tensor<8x16xf32>
  }
  %l = iree_encoding.set_encoding %s : tensor<8x16xf32> -> tensor<8x16xf32, #lhs>
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

// -----

// A dispatch with two results, only the second encoded: the set_encoding joins the dispatch and the
// dispatch's second result becomes the encoded value, the first one stays plain for its other user.
// (FuseEncodingOpsIntoDispatchRegions.cpp: the use-count check is on the one result, not the
// dispatch; moveFollowingOpIntoDispatchRegion replaces only that result.)
// EXPECT: in
#mk = affine_map<(d0, d1, d2) -> (d0, d2)>
#kn = affine_map<(d0, d1, d2) -> (d2, d1)>
#mn = affine_map<(d0, d1, d2) -> (d0, d1)>
#id = affine_map<(d0, d1) -> (d0, d1)>
#lhs = #iree_encoding.encoding<operand_index = 0 : index, op_type = matmul, element_types = [f32, f32, f32], user_indexing_maps = [#mk, #kn, #mn], iteration_sizes = [8, 32, 16]>
#rhs = #iree_encoding.encoding<operand_index = 1 : index, op_type = matmul, element_types = [f32, f32, f32], user_indexing_maps = [#mk, #kn, #mn], iteration_sizes = [8, 32, 16]>
#acc = #iree_encoding.encoding<operand_index = 2 : index, op_type = matmul, element_types = [f32, f32, f32], user_indexing_maps = [#mk, #kn, #mn], iteration_sizes = [8, 32, 16]>
util.func public @second_result_encoded(%a: tensor<8x16xf32>, %b: tensor<16x32xf32>) -> (tensor<8x16xf32>, tensor<8x32xf32>) {
  %init = tensor.empty() : tensor<8x16xf32>
  %two:2 = flow.dispatch.region -> (tensor<8x16xf32>, tensor<8x16xf32>) {
    %g:2 = linalg.generic {indexing_maps = [#id, #id, #id], iterator_types = ["parallel", "parallel"]} ins(%a : tensor<8x16xf32>) outs(%init, %init : tensor<8x16xf32>, tensor<8x16xf32>) {
    ^bb0(%x: f32, %o1: f32, %o2: f32):
      %n = arith.negf %x : f32
      %d = arith.addf %x, %x : f32
      linalg.yield %n, %d : f32, f32
    } -> (tensor<8x16xf32>, tensor<8x16xf32>)
    flow.return %g#0, %g#1 : tensor<8x16xf32>, tensor<8x16xf32>
  }
  %l = iree_encoding.set_encoding %two#1 : tensor<8x16xf32> -> tensor<8x16xf32, #lhs>
  %r = iree_encoding.set_encoding %b : tensor<16x32xf32> -> tensor<16x32xf32, #rhs>
  %res = flow.dispatch.region -> (tensor<8x32xf32>) {
    %zero = arith.constant 0.0 : f32
    %e = tensor.empty() : tensor<8x32xf32, #acc>
    %f = linalg.fill ins(%zero : f32) outs(%e : tensor<8x32xf32, #acc>) -> tensor<8x32xf32, #acc>
    %m = linalg.matmul indexing_maps = [#mk, #kn, #mn] ins(%l, %r : tensor<8x16xf32, #lhs>, tensor<16x32xf32, #rhs>) outs(%f : tensor<8x32xf32, #acc>) -> tensor<8x32xf32, #acc>
    %u = iree_encoding.unset_encoding %m : tensor<8x32xf32, #acc> -> tensor<8x32xf32>
    flow.return %u : tensor<8x32xf32>
  }
  util.return %two#0, %res : tensor<8x16xf32>, tensor<8x32xf32>
}
