// CloneProducersIntoDispatchRegions (RegionOpUtils.cpp isCloneableIntoDispatchOp, LinalgExt Utils.cpp
// isBitExtendOp): an all-parallel generic whose widest input has fewer bits than its output (here an
// i8 weight sign-extended to i32) is cloned into the dispatch of the matmul reading it, so the wide
// weight is never written to memory. The cloned-into dispatch is the data-tiling variant's concern:
// the extend sits next to the weight's set_encoding.
// rules/clone.egg clone-producer-rhs, conditions 3 (the extend is cloneable: a bit extend) and 4.
// EXPECT: in
#id = affine_map<(d0, d1) -> (d0, d1)>
util.func public @i8_weight_extend_cloned_into_matmul(%a: tensor<8x16xi32>, %w: tensor<16x32xi8>) -> tensor<8x32xi32> {
  %c0 = arith.constant 0 : i32
  %we = tensor.empty() : tensor<16x32xi32>
  %wide = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]} ins(%w : tensor<16x32xi8>) outs(%we : tensor<16x32xi32>) {
  ^bb0(%x: i8, %o: i32):
    %y = arith.extsi %x : i8 to i32
    linalg.yield %y : i32
  } -> tensor<16x32xi32>
  %res = flow.dispatch.region -> (tensor<8x32xi32>) {
    %e = tensor.empty() : tensor<8x32xi32>
    %f = linalg.fill ins(%c0 : i32) outs(%e : tensor<8x32xi32>) -> tensor<8x32xi32>
    %m = linalg.matmul ins(%a, %wide : tensor<8x16xi32>, tensor<16x32xi32>) outs(%f : tensor<8x32xi32>) -> tensor<8x32xi32>
    flow.return %m : tensor<8x32xi32>
  }
  util.return %res : tensor<8x32xi32>
}

// -----

// A dequantization (i8 to f32, times a per-column f32 scale broadcast over the rows) is a bit extend
// too: isBitExtendOp compares only the inputs of the highest rank (the i8 weight) with the output, so
// the rank-1 f32 scale does not stop it; the dequantization is cloned in front of the weight's
// set_encoding inside the matmul dispatch.
// rules/clone.egg clone-producer-into-set-encoding (condition 3: the dequantization is a bit extend).
// EXPECT: in
#id = affine_map<(d0, d1) -> (d0, d1)>
#col = affine_map<(d0, d1) -> (d1)>
#mk = affine_map<(d0, d1, d2) -> (d0, d2)>
#kn = affine_map<(d0, d1, d2) -> (d2, d1)>
#mn = affine_map<(d0, d1, d2) -> (d0, d1)>
#lhs = #iree_encoding.encoding<operand_index = 0 : index, op_type = matmul, element_types = [f32, f32, f32], user_indexing_maps = [#mk, #kn, #mn], iteration_sizes = [8, 32, 16]>
#rhs = #iree_encoding.encoding<operand_index = 1 : index, op_type = matmul, element_types = [f32, f32, f32], user_indexing_maps = [#mk, #kn, #mn], iteration_sizes = [8, 32, 16]>
#acc = #iree_encoding.encoding<operand_index = 2 : index, op_type = matmul, element_types = [f32, f32, f32], user_indexing_maps = [#mk, #kn, #mn], iteration_sizes = [8, 32, 16]>
util.func public @scaled_dequant_cloned_before_encode(%a: tensor<8x16xf32>, %w: tensor<16x32xi8>, %s: tensor<32xf32>) -> tensor<8x32xf32> {
  %we = tensor.empty() : tensor<16x32xf32>
  %deq = linalg.generic {indexing_maps = [#id, #col, #id], iterator_types = ["parallel", "parallel"]} ins(%w, %s : tensor<16x32xi8>, tensor<32xf32>) outs(%we : tensor<16x32xf32>) {
  ^bb0(%x: i8, %sc: f32, %o: f32):
    %y = arith.sitofp %x : i8 to f32
    %z = arith.mulf %y, %sc : f32
    linalg.yield %z : f32
  } -> tensor<16x32xf32>
  %res = flow.dispatch.region -> (tensor<8x32xf32>) {
    %zero = arith.constant 0.000000e+00 : f32
    %l = iree_encoding.set_encoding %a : tensor<8x16xf32> -> tensor<8x16xf32, #lhs>
    %r = iree_encoding.set_encoding %deq : tensor<16x32xf32> -> tensor<16x32xf32, #rhs>
    %e = tensor.empty() : tensor<8x32xf32, #acc>
    %f = linalg.fill ins(%zero : f32) outs(%e : tensor<8x32xf32, #acc>) -> tensor<8x32xf32, #acc>
    %m = linalg.matmul indexing_maps = [#mk, #kn, #mn] ins(%l, %r : tensor<8x16xf32, #lhs>, tensor<16x32xf32, #rhs>) outs(%f : tensor<8x32xf32, #acc>) -> tensor<8x32xf32, #acc>
    %u = iree_encoding.unset_encoding %m : tensor<8x32xf32, #acc> -> tensor<8x32xf32>
    flow.return %u : tensor<8x32xf32>
  }
  util.return %res : tensor<8x32xf32>
}

// -----

// An f16 to f32 extension of the lhs is cloned the same way (arith.extf: a float bit extend).
// rules/clone.egg clone-producer-lhs (condition 3).
// EXPECT: in
#id = affine_map<(d0, d1) -> (d0, d1)>
util.func public @f16_lhs_extend_cloned(%a: tensor<4x16xf16>, %b: tensor<16x8xf32>) -> tensor<4x8xf32> {
  %ae = tensor.empty() : tensor<4x16xf32>
  %wide = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]} ins(%a : tensor<4x16xf16>) outs(%ae : tensor<4x16xf32>) {
  ^bb0(%x: f16, %o: f32):
    %y = arith.extf %x : f16 to f32
    linalg.yield %y : f32
  } -> tensor<4x16xf32>
  %res = flow.dispatch.region -> (tensor<4x8xf32>) {
    %zero = arith.constant 0.000000e+00 : f32
    %e = tensor.empty() : tensor<4x8xf32>
    %f = linalg.fill ins(%zero : f32) outs(%e : tensor<4x8xf32>) -> tensor<4x8xf32>
    %m = linalg.matmul ins(%wide, %b : tensor<4x16xf32>, tensor<16x8xf32>) outs(%f : tensor<4x8xf32>) -> tensor<4x8xf32>
    flow.return %m : tensor<4x8xf32>
  }
  util.return %res : tensor<4x8xf32>
}

// -----

// A widening generic with a math op in its body is not a bit extend (isBitExtendOrTruncateOp refuses
// math ops, "to avoid expensive operations"): it is not cloned; the pass then wraps the generic,
// left outside any dispatch, in a dispatch of its own (CloneProducersIntoDispatchRegions.cpp,
// wrapOpInDispatchRegion), and the matmul dispatch reads its result.
// EXPECT: in
#id = affine_map<(d0, d1) -> (d0, d1)>
util.func public @extend_with_exp_gets_own_dispatch(%a: tensor<4x16xf16>, %b: tensor<16x8xf32>) -> tensor<4x8xf32> {
  %ae = tensor.empty() : tensor<4x16xf32>
  %wide = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]} ins(%a : tensor<4x16xf16>) outs(%ae : tensor<4x16xf32>) {
  ^bb0(%x: f16, %o: f32):
    %y = arith.extf %x : f16 to f32
    %z = math.exp %y : f32
    linalg.yield %z : f32
  } -> tensor<4x16xf32>
  %res = flow.dispatch.region -> (tensor<4x8xf32>) {
    %zero = arith.constant 0.000000e+00 : f32
    %e = tensor.empty() : tensor<4x8xf32>
    %f = linalg.fill ins(%zero : f32) outs(%e : tensor<4x8xf32>) -> tensor<4x8xf32>
    %m = linalg.matmul ins(%wide, %b : tensor<4x16xf32>, tensor<16x8xf32>) outs(%f : tensor<4x8xf32>) -> tensor<4x8xf32>
    flow.return %m : tensor<4x8xf32>
  }
  util.return %res : tensor<4x8xf32>
}

// -----

// A narrowing generic (f32 to f16, a bit truncate) is not cloned either: only extends are
// (isBitExtendOp); it gets a dispatch of its own, whose result the consumer reads.
// EXPECT: in
#id = affine_map<(d0, d1) -> (d0, d1)>
util.func public @truncate_gets_own_dispatch(%a: tensor<8x8xf32>) -> tensor<8x8xf16> {
  %te = tensor.empty() : tensor<8x8xf16>
  %narrow = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]} ins(%a : tensor<8x8xf32>) outs(%te : tensor<8x8xf16>) {
  ^bb0(%x: f32, %o: f16):
    %y = arith.truncf %x : f32 to f16
    linalg.yield %y : f16
  } -> tensor<8x8xf16>
  %res = flow.dispatch.region -> (tensor<8x8xf16>) {
    %e = tensor.empty() : tensor<8x8xf16>
    %g = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]} ins(%narrow : tensor<8x8xf16>) outs(%e : tensor<8x8xf16>) {
    ^bb0(%x: f16, %o: f16):
      %y = arith.addf %x, %x : f16
      linalg.yield %y : f16
    } -> tensor<8x8xf16>
    flow.return %g : tensor<8x8xf16>
  }
  util.return %res : tensor<8x8xf16>
}

// -----

// A same-width elementwise generic (f32 to f32) is not cloneable (neither a bit extend nor on the
// list): like any generic left outside, it is wrapped in its own dispatch before the consumer.
// EXPECT: in
#id = affine_map<(d0, d1) -> (d0, d1)>
util.func public @same_width_generic_gets_own_dispatch(%a: tensor<4x16xf32>, %b: tensor<16x8xf32>) -> tensor<4x8xf32> {
  %ae = tensor.empty() : tensor<4x16xf32>
  %neg = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]} ins(%a : tensor<4x16xf32>) outs(%ae : tensor<4x16xf32>) {
  ^bb0(%x: f32, %o: f32):
    %y = arith.negf %x : f32
    linalg.yield %y : f32
  } -> tensor<4x16xf32>
  %res = flow.dispatch.region -> (tensor<4x8xf32>) {
    %zero = arith.constant 0.000000e+00 : f32
    %e = tensor.empty() : tensor<4x8xf32>
    %f = linalg.fill ins(%zero : f32) outs(%e : tensor<4x8xf32>) -> tensor<4x8xf32>
    %m = linalg.matmul ins(%neg, %b : tensor<4x16xf32>, tensor<16x8xf32>) outs(%f : tensor<4x8xf32>) -> tensor<4x8xf32>
    flow.return %m : tensor<4x8xf32>
  }
  util.return %res : tensor<4x8xf32>
}

// -----

// A widening generic with a reduction loop is not a bit extend (isBitExtendOrTruncateOp wants every
// loop parallel): the f16 row sums accumulated in f32 are not cloned but get their own dispatch.
// EXPECT: in
#in = affine_map<(d0, d1) -> (d0, d1)>
#out = affine_map<(d0, d1) -> (d0)>
#id1 = affine_map<(d0) -> (d0)>
util.func public @widening_reduction_gets_own_dispatch(%a: tensor<8x16xf16>) -> tensor<8xf32> {
  %zero = arith.constant 0.000000e+00 : f32
  %se = tensor.empty() : tensor<8xf32>
  %sf = linalg.fill ins(%zero : f32) outs(%se : tensor<8xf32>) -> tensor<8xf32>
  %sums = linalg.generic {indexing_maps = [#in, #out], iterator_types = ["parallel", "reduction"]} ins(%a : tensor<8x16xf16>) outs(%sf : tensor<8xf32>) {
  ^bb0(%x: f16, %o: f32):
    %y = arith.extf %x : f16 to f32
    %z = arith.addf %y, %o : f32
    linalg.yield %z : f32
  } -> tensor<8xf32>
  %res = flow.dispatch.region -> (tensor<8xf32>) {
    %e = tensor.empty() : tensor<8xf32>
    %g = linalg.generic {indexing_maps = [#id1, #id1], iterator_types = ["parallel"]} ins(%sums : tensor<8xf32>) outs(%e : tensor<8xf32>) {
    ^bb0(%x: f32, %o: f32):
      %y = arith.mulf %x, %x : f32
      linalg.yield %y : f32
    } -> tensor<8xf32>
    flow.return %g : tensor<8xf32>
  }
  util.return %res : tensor<8xf32>
}

// -----

// Generics left outside every dispatch are each wrapped in a dispatch of their own
// (CloneProducersIntoDispatchRegions.cpp, runOnOperation: the walk calling wrapOpInDispatchRegion),
// bit extends included: an exp of an extended f16 input, neither inside a dispatch, becomes two
// dispatches, the extend's and the exp's, and the second cloning round finds the extend already
// wrapped (it is not cloned into the exp's dispatch).
// The e-graph keeps two generics chained outside the dispatches as one computation: no rule puts the
// producer generic in a dispatch of its own (Generic(k2, [Generic(k1, ...)]) -> Generic(k2, [Dispatch(Generic(k1, ...))])).
// EXPECT: missing no e-node Dispatch(Generic(linalg.generic, TCons, TCons))
#id = affine_map<(d0, d1) -> (d0, d1)>
util.func public @chained_outside_generics_each_wrapped(%a: tensor<4x16xf16>, %b: tensor<16x8xf32>) -> tensor<4x8xf32> {
  %ae = tensor.empty() : tensor<4x16xf32>
  %wide = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]} ins(%a : tensor<4x16xf16>) outs(%ae : tensor<4x16xf32>) {
  ^bb0(%x: f16, %o: f32):
    %y = arith.extf %x : f16 to f32
    linalg.yield %y : f32
  } -> tensor<4x16xf32>
  %ee = tensor.empty() : tensor<4x16xf32>
  %ex = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]} ins(%wide : tensor<4x16xf32>) outs(%ee : tensor<4x16xf32>) {
  ^bb0(%x: f32, %o: f32):
    %y = math.exp %x : f32
    linalg.yield %y : f32
  } -> tensor<4x16xf32>
  %res = flow.dispatch.region -> (tensor<4x8xf32>) {
    %zero = arith.constant 0.000000e+00 : f32
    %e = tensor.empty() : tensor<4x8xf32>
    %f = linalg.fill ins(%zero : f32) outs(%e : tensor<4x8xf32>) -> tensor<4x8xf32>
    %m = linalg.matmul ins(%ex, %b : tensor<4x16xf32>, tensor<16x8xf32>) outs(%f : tensor<4x8xf32>) -> tensor<4x8xf32>
    flow.return %m : tensor<4x8xf32>
  }
  util.return %res : tensor<4x8xf32>
}

// -----

// A cloneable producer with two consumer dispatches is cloned into each (clonePrecedingOpIntoDispatchRegion
// copies it; the original, now dead, is erased): the i8 to f32 extend of one weight feeds two matmuls
// and both dispatches extend it themselves.
// rules/clone.egg clone-producer-rhs, in each consumer (condition 3).
// EXPECT: in
#id = affine_map<(d0, d1) -> (d0, d1)>
util.func public @extend_cloned_into_both_consumers(%a: tensor<4x16xf32>, %c: tensor<2x16xf32>, %w: tensor<16x8xi8>) -> (tensor<4x8xf32>, tensor<2x8xf32>) {
  %we = tensor.empty() : tensor<16x8xf32>
  %wide = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]} ins(%w : tensor<16x8xi8>) outs(%we : tensor<16x8xf32>) {
  ^bb0(%x: i8, %o: f32):
    %y = arith.sitofp %x : i8 to f32
    linalg.yield %y : f32
  } -> tensor<16x8xf32>
  %r1 = flow.dispatch.region -> (tensor<4x8xf32>) {
    %zero = arith.constant 0.000000e+00 : f32
    %e = tensor.empty() : tensor<4x8xf32>
    %f = linalg.fill ins(%zero : f32) outs(%e : tensor<4x8xf32>) -> tensor<4x8xf32>
    %m = linalg.matmul ins(%a, %wide : tensor<4x16xf32>, tensor<16x8xf32>) outs(%f : tensor<4x8xf32>) -> tensor<4x8xf32>
    flow.return %m : tensor<4x8xf32>
  }
  %r2 = flow.dispatch.region -> (tensor<2x8xf32>) {
    %zero = arith.constant 0.000000e+00 : f32
    %e = tensor.empty() : tensor<2x8xf32>
    %f = linalg.fill ins(%zero : f32) outs(%e : tensor<2x8xf32>) -> tensor<2x8xf32>
    %m = linalg.matmul ins(%c, %wide : tensor<2x16xf32>, tensor<16x8xf32>) outs(%f : tensor<2x8xf32>) -> tensor<2x8xf32>
    flow.return %m : tensor<2x8xf32>
  }
  util.return %r1, %r2 : tensor<4x8xf32>, tensor<2x8xf32>
}
