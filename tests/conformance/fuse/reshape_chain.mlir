// FuseEncodingOpsIntoDispatchRegions (FusionUtils.cpp, getProducerDispatchValueAndOpChain): the walk
// from a set_encoding up to its producer dispatch looks past tensor.collapse_shape, and the whole
// chain moves into the dispatch with the encode. Here a 2x4x16 elementwise result is collapsed to the
// 8x16 lhs: the dispatch computes, collapses and packs.
// rules/fuse_encode.egg fuse-encode-dispatch-through-reshape (conditions 1-3: a computed
// elementwise result, a reshape, an elementwise producer).
// EXPECT: in
#mk = affine_map<(d0, d1, d2) -> (d0, d2)>
#kn = affine_map<(d0, d1, d2) -> (d2, d1)>
#mn = affine_map<(d0, d1, d2) -> (d0, d1)>
#id3 = affine_map<(d0, d1, d2) -> (d0, d1, d2)>
#lhs = #iree_encoding.encoding<operand_index = 0 : index, op_type = matmul, element_types = [f32, f32, f32], user_indexing_maps = [#mk, #kn, #mn], iteration_sizes = [8, 32, 16]>
#rhs = #iree_encoding.encoding<operand_index = 1 : index, op_type = matmul, element_types = [f32, f32, f32], user_indexing_maps = [#mk, #kn, #mn], iteration_sizes = [8, 32, 16]>
#acc = #iree_encoding.encoding<operand_index = 2 : index, op_type = matmul, element_types = [f32, f32, f32], user_indexing_maps = [#mk, #kn, #mn], iteration_sizes = [8, 32, 16]>
util.func public @collapsed_lhs_fused_with_its_reshape(%a: tensor<2x4x16xf32>, %b: tensor<16x32xf32>) -> tensor<8x32xf32> {
  %init = tensor.empty() : tensor<2x4x16xf32>
  %h = flow.dispatch.region -> (tensor<2x4x16xf32>) {
    %g = linalg.generic {indexing_maps = [#id3, #id3], iterator_types = ["parallel", "parallel", "parallel"]} ins(%a : tensor<2x4x16xf32>) outs(%init : tensor<2x4x16xf32>) {
    ^bb0(%x: f32, %o: f32):
      %y = math.tanh %x : f32
      linalg.yield %y : f32
    } -> tensor<2x4x16xf32>
    flow.return %g : tensor<2x4x16xf32>
  }
  %c = tensor.collapse_shape %h [[0, 1], [2]] : tensor<2x4x16xf32> into tensor<8x16xf32>
  %l = iree_encoding.set_encoding %c : tensor<8x16xf32> -> tensor<8x16xf32, #lhs>
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

// The same walk past a tensor.expand_shape: a flat 512-element weight computed by a dispatch is
// expanded to the 16x32 rhs, and the expand plus the rhs encode join that dispatch.
// (getProducerDispatchValueAndOpChain: collapse_shape and expand_shape alike.)
// The same rule; the reshape is an expand_shape.
// EXPECT: in
#mk = affine_map<(d0, d1, d2) -> (d0, d2)>
#kn = affine_map<(d0, d1, d2) -> (d2, d1)>
#mn = affine_map<(d0, d1, d2) -> (d0, d1)>
#id1 = affine_map<(d0) -> (d0)>
#lhs = #iree_encoding.encoding<operand_index = 0 : index, op_type = matmul, element_types = [f32, f32, f32], user_indexing_maps = [#mk, #kn, #mn], iteration_sizes = [8, 32, 16]>
#rhs = #iree_encoding.encoding<operand_index = 1 : index, op_type = matmul, element_types = [f32, f32, f32], user_indexing_maps = [#mk, #kn, #mn], iteration_sizes = [8, 32, 16]>
#acc = #iree_encoding.encoding<operand_index = 2 : index, op_type = matmul, element_types = [f32, f32, f32], user_indexing_maps = [#mk, #kn, #mn], iteration_sizes = [8, 32, 16]>
util.func public @expanded_rhs_fused_with_its_reshape(%a: tensor<8x16xf32>, %w: tensor<512xf32>) -> tensor<8x32xf32> {
  %init = tensor.empty() : tensor<512xf32>
  %h = flow.dispatch.region -> (tensor<512xf32>) {
    %g = linalg.generic {indexing_maps = [#id1, #id1], iterator_types = ["parallel"]} ins(%w : tensor<512xf32>) outs(%init : tensor<512xf32>) {
    ^bb0(%x: f32, %o: f32):
      %y = arith.addf %x, %x : f32
      linalg.yield %y : f32
    } -> tensor<512xf32>
    flow.return %g : tensor<512xf32>
  }
  %x2 = tensor.expand_shape %h [[0, 1]] output_shape [16, 32] : tensor<512xf32> into tensor<16x32xf32>
  %l = iree_encoding.set_encoding %a : tensor<8x16xf32> -> tensor<8x16xf32, #lhs>
  %r = iree_encoding.set_encoding %x2 : tensor<16x32xf32> -> tensor<16x32xf32, #rhs>
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

// A chain of two reshapes (collapse to 1-d, expand to the lhs shape) is walked through as a whole:
// both reshapes and the encode end up in the producer dispatch, in order
// (getProducerDispatchValueAndOpChain collects the chain; the pass moves it in reverse).
// rules/fuse_encode.egg's reshaped-in-producer-chain builds the chain on the producer's value.
// EXPECT: in
#mk = affine_map<(d0, d1, d2) -> (d0, d2)>
#kn = affine_map<(d0, d1, d2) -> (d2, d1)>
#mn = affine_map<(d0, d1, d2) -> (d0, d1)>
#id = affine_map<(d0, d1) -> (d0, d1)>
#lhs = #iree_encoding.encoding<operand_index = 0 : index, op_type = matmul, element_types = [f32, f32, f32], user_indexing_maps = [#mk, #kn, #mn], iteration_sizes = [8, 32, 16]>
#rhs = #iree_encoding.encoding<operand_index = 1 : index, op_type = matmul, element_types = [f32, f32, f32], user_indexing_maps = [#mk, #kn, #mn], iteration_sizes = [8, 32, 16]>
#acc = #iree_encoding.encoding<operand_index = 2 : index, op_type = matmul, element_types = [f32, f32, f32], user_indexing_maps = [#mk, #kn, #mn], iteration_sizes = [8, 32, 16]>
util.func public @two_reshapes_fused_with_the_encode(%a: tensor<16x8xf32>, %b: tensor<16x32xf32>) -> tensor<8x32xf32> {
  %init = tensor.empty() : tensor<16x8xf32>
  %h = flow.dispatch.region -> (tensor<16x8xf32>) {
    %g = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]} ins(%a : tensor<16x8xf32>) outs(%init : tensor<16x8xf32>) {
    ^bb0(%x: f32, %o: f32):
      %y = arith.mulf %x, %x : f32
      linalg.yield %y : f32
    } -> tensor<16x8xf32>
    flow.return %g : tensor<16x8xf32>
  }
  %flat = tensor.collapse_shape %h [[0, 1]] : tensor<16x8xf32> into tensor<128xf32>
  %re = tensor.expand_shape %flat [[0, 1]] output_shape [8, 16] : tensor<128xf32> into tensor<8x16xf32>
  %l = iree_encoding.set_encoding %re : tensor<8x16xf32> -> tensor<8x16xf32, #lhs>
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

// A reshape in the chain with a second user stops the walk (getProducerDispatchValueAndOpChain wants
// every value of the chain single-use): the collapsed value is also returned, so the collapse and the
// encode both stay outside.
// EXPECT: in
#mk = affine_map<(d0, d1, d2) -> (d0, d2)>
#kn = affine_map<(d0, d1, d2) -> (d2, d1)>
#mn = affine_map<(d0, d1, d2) -> (d0, d1)>
#id3 = affine_map<(d0, d1, d2) -> (d0, d1, d2)>
#lhs = #iree_encoding.encoding<operand_index = 0 : index, op_type = matmul, element_types = [f32, f32, f32], user_indexing_maps = [#mk, #kn, #mn], iteration_sizes = [8, 32, 16]>
#rhs = #iree_encoding.encoding<operand_index = 1 : index, op_type = matmul, element_types = [f32, f32, f32], user_indexing_maps = [#mk, #kn, #mn], iteration_sizes = [8, 32, 16]>
#acc = #iree_encoding.encoding<operand_index = 2 : index, op_type = matmul, element_types = [f32, f32, f32], user_indexing_maps = [#mk, #kn, #mn], iteration_sizes = [8, 32, 16]>
util.func public @collapse_with_second_user_not_fused(%a: tensor<2x4x16xf32>, %b: tensor<16x32xf32>) -> (tensor<8x16xf32>, tensor<8x32xf32>) {
  %init = tensor.empty() : tensor<2x4x16xf32>
  %h = flow.dispatch.region -> (tensor<2x4x16xf32>) {
    %g = linalg.generic {indexing_maps = [#id3, #id3], iterator_types = ["parallel", "parallel", "parallel"]} ins(%a : tensor<2x4x16xf32>) outs(%init : tensor<2x4x16xf32>) {
    ^bb0(%x: f32, %o: f32):
      %y = math.tanh %x : f32
      linalg.yield %y : f32
    } -> tensor<2x4x16xf32>
    flow.return %g : tensor<2x4x16xf32>
  }
  %c = tensor.collapse_shape %h [[0, 1], [2]] : tensor<2x4x16xf32> into tensor<8x16xf32>
  %l = iree_encoding.set_encoding %c : tensor<8x16xf32> -> tensor<8x16xf32, #lhs>
  %r = iree_encoding.set_encoding %b : tensor<16x32xf32> -> tensor<16x32xf32, #rhs>
  %res = flow.dispatch.region -> (tensor<8x32xf32>) {
    %zero = arith.constant 0.0 : f32
    %e = tensor.empty() : tensor<8x32xf32, #acc>
    %f = linalg.fill ins(%zero : f32) outs(%e : tensor<8x32xf32, #acc>) -> tensor<8x32xf32, #acc>
    %m = linalg.matmul indexing_maps = [#mk, #kn, #mn] ins(%l, %r : tensor<8x16xf32, #lhs>, tensor<16x32xf32, #rhs>) outs(%f : tensor<8x32xf32, #acc>) -> tensor<8x32xf32, #acc>
    %u = iree_encoding.unset_encoding %m : tensor<8x32xf32, #acc> -> tensor<8x32xf32>
    flow.return %u : tensor<8x32xf32>
  }
  util.return %c, %res : tensor<8x16xf32>, tensor<8x32xf32>
}

// -----

// A dispatch that only unsets an encoded matmul result (the accumulator layout) takes the next
// matmul's lhs set_encoding: unset_encoding and set_encoding are both on isFusableWithSetEncoding's
// list, so the re-layout from one encoding to the other is one dispatch.
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
util.func public @unset_dispatch_takes_next_encode(%x: tensor<8x32xf32>, %w1: tensor<32x16xf32>, %w2: tensor<16x32xf32>) -> tensor<8x32xf32> {
  %zero = arith.constant 0.0 : f32
  %l1 = iree_encoding.set_encoding %x : tensor<8x32xf32> -> tensor<8x32xf32, #lhs1>
  %r1 = iree_encoding.set_encoding %w1 : tensor<32x16xf32> -> tensor<32x16xf32, #rhs1>
  %packed = flow.dispatch.region -> (tensor<8x16xf32, #acc1>) {
    %e = tensor.empty() : tensor<8x16xf32, #acc1>
    %f = linalg.fill ins(%zero : f32) outs(%e : tensor<8x16xf32, #acc1>) -> tensor<8x16xf32, #acc1>
    %m = linalg.matmul indexing_maps = [#mk, #kn, #mn] ins(%l1, %r1 : tensor<8x32xf32, #lhs1>, tensor<32x16xf32, #rhs1>) outs(%f : tensor<8x16xf32, #acc1>) -> tensor<8x16xf32, #acc1>
    flow.return %m : tensor<8x16xf32, #acc1>
  }
  %plain = flow.dispatch.region -> (tensor<8x16xf32>) {
    %u = iree_encoding.unset_encoding %packed : tensor<8x16xf32, #acc1> -> tensor<8x16xf32>
    flow.return %u : tensor<8x16xf32>
  }
  %l2 = iree_encoding.set_encoding %plain : tensor<8x16xf32> -> tensor<8x16xf32, #lhs2>
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

// FuseEncodingOpsIntoDispatchRegions with a dynamic reshape in the chain: the index computation the
// expand_shape's output_shape reads (the row count, a divsi of the size argument) is moved before the
// producer dispatch so the expand and the encode can join it (moveFollowingOpIntoDispatchRegion moves
// the dependencies; the pass then resolves tensor.dim ops).
// fusable-reshape (rules/analysis.egg) takes the expand's dynamic sizes along into the producer
// dispatch. The row count is the argument's own size, a multiple of 16 (util.assume.int), so that the
// oracle evaluates the program at sizes it is defined for.
// EXPECT: in
#id1 = affine_map<(d0) -> (d0)>
#mk = affine_map<(d0, d1, d2) -> (d0, d2)>
#kn = affine_map<(d0, d1, d2) -> (d2, d1)>
#mn = affine_map<(d0, d1, d2) -> (d0, d1)>
#lhs = #iree_encoding.encoding<operand_index = 0 : index, op_type = matmul, element_types = [f32, f32, f32], user_indexing_maps = [#mk, #kn, #mn], iteration_sizes = [?, 32, 16]>
util.func public @dynamic_rows_expand_then_encode(%a: tensor<?xf32>) -> tensor<?x16xf32, #lhs> {
  %c0 = arith.constant 0 : index
  %d = tensor.dim %a, %c0 : tensor<?xf32>
  %n = util.assume.int %d<udiv = 16> : index
  %init = tensor.empty(%n) : tensor<?xf32>
  %h = flow.dispatch.region -> (tensor<?xf32>{%n}) {
    %g = linalg.generic {indexing_maps = [#id1, #id1], iterator_types = ["parallel"]} ins(%a : tensor<?xf32>) outs(%init : tensor<?xf32>) {
    ^bb0(%x: f32, %o: f32):
      %y = arith.addf %x, %x : f32
      linalg.yield %y : f32
    } -> tensor<?xf32>
    flow.return %g : tensor<?xf32>
  }
  %c16 = arith.constant 16 : index
  %rows = arith.divsi %n, %c16 : index
  %x = tensor.expand_shape %h [[0, 1]] output_shape [%rows, 16] : tensor<?xf32> into tensor<?x16xf32>
  %l = iree_encoding.set_encoding %x encoding_dims{%rows} : tensor<?x16xf32> -> tensor<?x16xf32, #lhs>
  util.return %l : tensor<?x16xf32, #lhs>
}
