// CloneProducersIntoDispatchRegions (CloneProducersIntoDispatchRegions.cpp, cloneProducersToRegion;
// RegionOpUtils.cpp isCloneableIntoDispatchOp): a linalg.fill and its tensor.empty defined outside the
// dispatch that reads them are always cloned in. Here the encoded accumulator of a data-tiled matmul:
// the dispatch then builds its own zero tile instead of reading one from memory.
// rules/clone.egg clone-producer-init, condition 3 (a fill is cloneable).
// EXPECT: in
#mk = affine_map<(d0, d1, d2) -> (d0, d2)>
#kn = affine_map<(d0, d1, d2) -> (d2, d1)>
#mn = affine_map<(d0, d1, d2) -> (d0, d1)>
#lhs = #iree_encoding.encoding<operand_index = 0 : index, op_type = matmul, element_types = [f32, f32, f32], user_indexing_maps = [#mk, #kn, #mn], iteration_sizes = [8, 32, 16]>
#rhs = #iree_encoding.encoding<operand_index = 1 : index, op_type = matmul, element_types = [f32, f32, f32], user_indexing_maps = [#mk, #kn, #mn], iteration_sizes = [8, 32, 16]>
#acc = #iree_encoding.encoding<operand_index = 2 : index, op_type = matmul, element_types = [f32, f32, f32], user_indexing_maps = [#mk, #kn, #mn], iteration_sizes = [8, 32, 16]>
util.func public @encoded_zero_accumulator_cloned(%a: tensor<8x16xf32>, %b: tensor<16x32xf32>) -> tensor<8x32xf32> {
  %zero = arith.constant 0.0 : f32
  %l = iree_encoding.set_encoding %a : tensor<8x16xf32> -> tensor<8x16xf32, #lhs>
  %r = iree_encoding.set_encoding %b : tensor<16x32xf32> -> tensor<16x32xf32, #rhs>
  %e = tensor.empty() : tensor<8x32xf32, #acc>
  %f = linalg.fill ins(%zero : f32) outs(%e : tensor<8x32xf32, #acc>) -> tensor<8x32xf32, #acc>
  %res = flow.dispatch.region -> (tensor<8x32xf32>) {
    %m = linalg.matmul indexing_maps = [#mk, #kn, #mn] ins(%l, %r : tensor<8x16xf32, #lhs>, tensor<16x32xf32, #rhs>) outs(%f : tensor<8x32xf32, #acc>) -> tensor<8x32xf32, #acc>
    %u = iree_encoding.unset_encoding %m : tensor<8x32xf32, #acc> -> tensor<8x32xf32>
    flow.return %u : tensor<8x32xf32>
  }
  util.return %res : tensor<8x32xf32>
}

// -----

// The same for a plain (unencoded) matmul whose fill sits outside with the scalar constant: the
// constant, the empty and the fill are all cloned (scalar arith constants are cloneable too), and the
// dispatch reads nothing but the two operands.
// rules/clone.egg clone-producer-init, condition 3, on the plain accumulator.
// EXPECT: in
util.func public @plain_matmul_fill_cloned(%a: tensor<4x8xf32>, %b: tensor<8x16xf32>) -> tensor<4x16xf32> {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<4x16xf32>
  %f = linalg.fill ins(%zero : f32) outs(%e : tensor<4x16xf32>) -> tensor<4x16xf32>
  %res = flow.dispatch.region -> (tensor<4x16xf32>) {
    %m = linalg.matmul ins(%a, %b : tensor<4x8xf32>, tensor<8x16xf32>) outs(%f : tensor<4x16xf32>) -> tensor<4x16xf32>
    flow.return %m : tensor<4x16xf32>
  }
  util.return %res : tensor<4x16xf32>
}

// -----

// A tensor.extract_slice of an argument is cloned into the dispatch that reads it
// (isCloneableIntoDispatchOp lists ExtractSliceOp): the slice becomes part of the dispatch's load
// instead of a copy of its own. Here the lhs of a matmul is the top half of a larger argument.
// EXPECT: in
util.func public @argument_slice_cloned_into_matmul(%big: tensor<16x8xf32>, %b: tensor<8x16xf32>) -> tensor<8x16xf32> {
  %zero = arith.constant 0.0 : f32
  %top = tensor.extract_slice %big[0, 0] [8, 8] [1, 1] : tensor<16x8xf32> to tensor<8x8xf32>
  %res = flow.dispatch.region -> (tensor<8x16xf32>) {
    %e = tensor.empty() : tensor<8x16xf32>
    %f = linalg.fill ins(%zero : f32) outs(%e : tensor<8x16xf32>) -> tensor<8x16xf32>
    %m = linalg.matmul ins(%top, %b : tensor<8x8xf32>, tensor<8x16xf32>) outs(%f : tensor<8x16xf32>) -> tensor<8x16xf32>
    flow.return %m : tensor<8x16xf32>
  }
  util.return %res : tensor<8x16xf32>
}

// -----

// The same slice feeding a set_encoding inside the dispatch (the encode of a sliced weight, before
// it is hoisted): the slice is cloned in, next to the encode it feeds.
// EXPECT: in
#mk = affine_map<(d0, d1, d2) -> (d0, d2)>
#kn = affine_map<(d0, d1, d2) -> (d2, d1)>
#mn = affine_map<(d0, d1, d2) -> (d0, d1)>
#lhs = #iree_encoding.encoding<operand_index = 0 : index, op_type = matmul, element_types = [f32, f32, f32], user_indexing_maps = [#mk, #kn, #mn], iteration_sizes = [8, 16, 16]>
#rhs = #iree_encoding.encoding<operand_index = 1 : index, op_type = matmul, element_types = [f32, f32, f32], user_indexing_maps = [#mk, #kn, #mn], iteration_sizes = [8, 16, 16]>
#acc = #iree_encoding.encoding<operand_index = 2 : index, op_type = matmul, element_types = [f32, f32, f32], user_indexing_maps = [#mk, #kn, #mn], iteration_sizes = [8, 16, 16]>
util.func public @weight_slice_cloned_next_to_its_encode(%a: tensor<8x16xf32>, %w: tensor<16x64xf32>) -> tensor<8x16xf32> {
  %zero = arith.constant 0.0 : f32
  %ws = tensor.extract_slice %w[0, 16] [16, 16] [1, 1] : tensor<16x64xf32> to tensor<16x16xf32>
  %res = flow.dispatch.region -> (tensor<8x16xf32>) {
    %l = iree_encoding.set_encoding %a : tensor<8x16xf32> -> tensor<8x16xf32, #lhs>
    %r = iree_encoding.set_encoding %ws : tensor<16x16xf32> -> tensor<16x16xf32, #rhs>
    %e = tensor.empty() : tensor<8x16xf32, #acc>
    %f = linalg.fill ins(%zero : f32) outs(%e : tensor<8x16xf32, #acc>) -> tensor<8x16xf32, #acc>
    %m = linalg.matmul indexing_maps = [#mk, #kn, #mn] ins(%l, %r : tensor<8x16xf32, #lhs>, tensor<16x16xf32, #rhs>) outs(%f : tensor<8x16xf32, #acc>) -> tensor<8x16xf32, #acc>
    %u = iree_encoding.unset_encoding %m : tensor<8x16xf32, #acc> -> tensor<8x16xf32>
    flow.return %u : tensor<8x16xf32>
  }
  util.return %res : tensor<8x16xf32>
}

// -----

// An unset_encoding outside any dispatch is cloneable (isCloneableIntoDispatchOp lists
// UnsetEncodingOp): an elementwise dispatch consuming the plain matmul result gets the unset cloned
// in, so it reads the packed accumulator directly.
// (The e-graph holds it by the fuse family's fuse-elementwise-consumer.) The ReLU's zero is defined in
// its body: a scalar captured from outside the dispatch reads as another generic (a reader issue).
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
      %z = arith.constant 0.000000e+00 : f32
      %y = arith.maximumf %x, %z : f32
      linalg.yield %y : f32
    } -> tensor<8x32xf32>
    flow.return %g : tensor<8x32xf32>
  }
  util.return %res : tensor<8x32xf32>
}

// -----

// A splat tensor constant outside is cloned (isCloneableIntoDispatchOp: a SplatElementsAttr constant
// is always inlined): the dispatch adding a bias of 0.25 everywhere materializes the constant itself.
// EXPECT: in
#id = affine_map<(d0, d1) -> (d0, d1)>
util.func public @splat_bias_cloned(%a: tensor<4x8xf32>) -> tensor<4x8xf32> {
  %bias = arith.constant dense<2.500000e-01> : tensor<4x8xf32>
  %res = flow.dispatch.region -> (tensor<4x8xf32>) {
    %e = tensor.empty() : tensor<4x8xf32>
    %g = linalg.generic {indexing_maps = [#id, #id, #id], iterator_types = ["parallel", "parallel"]} ins(%a, %bias : tensor<4x8xf32>, tensor<4x8xf32>) outs(%e : tensor<4x8xf32>) {
    ^bb0(%x: f32, %c: f32, %o: f32):
      %y = arith.addf %x, %c : f32
      linalg.yield %y : f32
    } -> tensor<4x8xf32>
    flow.return %g : tensor<4x8xf32>
  }
  util.return %res : tensor<4x8xf32>
}

// -----

// A small non-splat constant is cloned too when it fits iree-flow-inline-constants-max-byte-length
// (256 bytes by default): a 4-element f32 vector is 16 bytes.
// EXPECT: in
#id = affine_map<(d0, d1) -> (d0, d1)>
#row = affine_map<(d0, d1) -> (d1)>
util.func public @small_dense_constant_cloned(%a: tensor<8x4xf32>) -> tensor<8x4xf32> {
  %scale = arith.constant dense<[1.000000e+00, 2.000000e+00, 3.000000e+00, 4.000000e+00]> : tensor<4xf32>
  %res = flow.dispatch.region -> (tensor<8x4xf32>) {
    %e = tensor.empty() : tensor<8x4xf32>
    %g = linalg.generic {indexing_maps = [#id, #row, #id], iterator_types = ["parallel", "parallel"]} ins(%a, %scale : tensor<8x4xf32>, tensor<4xf32>) outs(%e : tensor<8x4xf32>) {
    ^bb0(%x: f32, %c: f32, %o: f32):
      %y = arith.mulf %x, %c : f32
      linalg.yield %y : f32
    } -> tensor<8x4xf32>
    flow.return %g : tensor<8x4xf32>
  }
  util.return %res : tensor<8x4xf32>
}

// -----

// A tensor.empty outside the dispatch, the init of an elementwise generic inside, is cloned
// (isCloneableIntoDispatchOp lists EmptyOp): the dispatch no longer takes the empty tensor as an input.
// rules/clone.egg clone-producer-into-generic-init, conditions 3 (an empty is cloneable) and 4 (the
// generic's init list).
// EXPECT: in
#id = affine_map<(d0, d1) -> (d0, d1)>
util.func public @empty_init_cloned(%a: tensor<8x8xf32>) -> tensor<8x8xf32> {
  %e = tensor.empty() : tensor<8x8xf32>
  %res = flow.dispatch.region -> (tensor<8x8xf32>) {
    %g = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]} ins(%a : tensor<8x8xf32>) outs(%e : tensor<8x8xf32>) {
    ^bb0(%x: f32, %o: f32):
      %y = arith.subf %x, %x : f32
      linalg.yield %y : f32
    } -> tensor<8x8xf32>
    flow.return %g : tensor<8x8xf32>
  }
  util.return %res : tensor<8x8xf32>
}

// -----

// A scalar read out of a tensor argument (tensor.extract) and the scalar arith op on it are both
// cloneable (isCloneableIntoDispatchOp lists ExtractOp, and arith ops on scalars): the dispatch
// scaling its input by twice that scalar computes the scale itself.
// rules/clone.egg conditions 8 and 9 clone them into the generic the e-graph holds as opaque.
// EXPECT: in
#id = affine_map<(d0, d1) -> (d0, d1)>
util.func public @extracted_scalar_cloned(%a: tensor<4x8xf32>, %s: tensor<2xf32>) -> tensor<4x8xf32> {
  %c1 = arith.constant 1 : index
  %v = tensor.extract %s[%c1] : tensor<2xf32>
  %v2 = arith.addf %v, %v : f32
  %res = flow.dispatch.region -> (tensor<4x8xf32>) {
    %e = tensor.empty() : tensor<4x8xf32>
    %g = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]} ins(%a : tensor<4x8xf32>) outs(%e : tensor<4x8xf32>) {
    ^bb0(%x: f32, %o: f32):
      %y = arith.mulf %x, %v2 : f32
      linalg.yield %y : f32
    } -> tensor<4x8xf32>
    flow.return %g : tensor<4x8xf32>
  }
  util.return %res : tensor<4x8xf32>
}
