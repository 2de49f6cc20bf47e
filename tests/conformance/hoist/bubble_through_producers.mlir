// An i8 -> f32 dequantization (sitofp, times a per-column scale) feeding the matmul RHS: the
// set_encoding bubbles above it onto the i8 weight and the scale (each encoding gets the producer's
// indexing map appended), and those are then hoisted; the dequant runs on packed tiles in the
// dispatch.
// Source: HoistEncodingOps.cpp, BubbleUpSetEncodingOp / bubbleUpSetEncodingThroughGenericOp
// (isBitExtendOp).
// Matters: the narrow weight, not the widened one, is what gets packed and stored.
// rules/propagate_bubble.egg bubble-set-encoding-through-generic (conditions 1-4), then the hoist
// family.
// EXPECT: in
#mk = affine_map<(d0, d1, d2) -> (d0, d2)>
#kn = affine_map<(d0, d1, d2) -> (d2, d1)>
#mn = affine_map<(d0, d1, d2) -> (d0, d1)>
#id = affine_map<(d0, d1) -> (d0, d1)>
#col = affine_map<(d0, d1) -> (d1)>
#lhs = #iree_encoding.encoding<operand_index = 0 : index, op_type = matmul, element_types = [f32, f32, f32], user_indexing_maps = [#mk, #kn, #mn], iteration_sizes = [8, 16, 32]>
#rhs = #iree_encoding.encoding<operand_index = 1 : index, op_type = matmul, element_types = [f32, f32, f32], user_indexing_maps = [#mk, #kn, #mn], iteration_sizes = [8, 16, 32]>
#acc = #iree_encoding.encoding<operand_index = 2 : index, op_type = matmul, element_types = [f32, f32, f32], user_indexing_maps = [#mk, #kn, #mn], iteration_sizes = [8, 16, 32]>
util.func public @bubble_through_int8_dequant(%x: tensor<8x32xf32>, %q: tensor<32x16xi8>, %scale: tensor<16xf32>) -> tensor<8x16xf32> {
  %r = flow.dispatch.region -> (tensor<8x16xf32>) {
    %e = tensor.empty() : tensor<32x16xf32>
    %w = linalg.generic {indexing_maps = [#id, #col, #id], iterator_types = ["parallel", "parallel"]} ins(%q, %scale : tensor<32x16xi8>, tensor<16xf32>) outs(%e : tensor<32x16xf32>) {
    ^bb0(%a: i8, %s: f32, %o: f32):
      %f = arith.sitofp %a : i8 to f32
      %m = arith.mulf %f, %s : f32
      linalg.yield %m : f32
    } -> tensor<32x16xf32>
    %xe = iree_encoding.set_encoding %x : tensor<8x32xf32> -> tensor<8x32xf32, #lhs>
    %we = iree_encoding.set_encoding %w : tensor<32x16xf32> -> tensor<32x16xf32, #rhs>
    %cst = arith.constant 0.0 : f32
    %init = tensor.empty() : tensor<8x16xf32, #acc>
    %acc0 = linalg.fill ins(%cst : f32) outs(%init : tensor<8x16xf32, #acc>) -> tensor<8x16xf32, #acc>
    %mm = linalg.matmul ins(%xe, %we : tensor<8x32xf32, #lhs>, tensor<32x16xf32, #rhs>) outs(%acc0 : tensor<8x16xf32, #acc>) -> tensor<8x16xf32, #acc>
    %out = iree_encoding.unset_encoding %mm : tensor<8x16xf32, #acc> -> tensor<8x16xf32>
    flow.return %out : tensor<8x16xf32>
  }
  util.return %r : tensor<8x16xf32>
}

// -----

// A plain f16 -> f32 extf generic on the LHS: set_encoding bubbles onto the f16 argument and is
// hoisted.
// Source: HoistEncodingOps.cpp, BubbleUpSetEncodingOp (isBitExtendOp).
// Matters: mixed-precision activations.
// rules/propagate_bubble.egg bubble-set-encoding-through-generic (conditions 1-4), then the hoist
// family.
// EXPECT: in
#mk = affine_map<(d0, d1, d2) -> (d0, d2)>
#kn = affine_map<(d0, d1, d2) -> (d2, d1)>
#mn = affine_map<(d0, d1, d2) -> (d0, d1)>
#id = affine_map<(d0, d1) -> (d0, d1)>
#lhs = #iree_encoding.encoding<operand_index = 0 : index, op_type = matmul, element_types = [f32, f32, f32], user_indexing_maps = [#mk, #kn, #mn], iteration_sizes = [8, 16, 32]>
#rhs = #iree_encoding.encoding<operand_index = 1 : index, op_type = matmul, element_types = [f32, f32, f32], user_indexing_maps = [#mk, #kn, #mn], iteration_sizes = [8, 16, 32]>
#acc = #iree_encoding.encoding<operand_index = 2 : index, op_type = matmul, element_types = [f32, f32, f32], user_indexing_maps = [#mk, #kn, #mn], iteration_sizes = [8, 16, 32]>
util.func public @bubble_through_f16_widening(%x: tensor<8x32xf16>, %w: tensor<32x16xf32>) -> tensor<8x16xf32> {
  %r = flow.dispatch.region -> (tensor<8x16xf32>) {
    %e = tensor.empty() : tensor<8x32xf32>
    %xw = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]} ins(%x : tensor<8x32xf16>) outs(%e : tensor<8x32xf32>) {
    ^bb0(%a: f16, %o: f32):
      %f = arith.extf %a : f16 to f32
      linalg.yield %f : f32
    } -> tensor<8x32xf32>
    %xe = iree_encoding.set_encoding %xw : tensor<8x32xf32> -> tensor<8x32xf32, #lhs>
    %we = iree_encoding.set_encoding %w : tensor<32x16xf32> -> tensor<32x16xf32, #rhs>
    %cst = arith.constant 0.0 : f32
    %init = tensor.empty() : tensor<8x16xf32, #acc>
    %acc0 = linalg.fill ins(%cst : f32) outs(%init : tensor<8x16xf32, #acc>) -> tensor<8x16xf32, #acc>
    %mm = linalg.matmul ins(%xe, %we : tensor<8x32xf32, #lhs>, tensor<32x16xf32, #rhs>) outs(%acc0 : tensor<8x16xf32, #acc>) -> tensor<8x16xf32, #acc>
    %out = iree_encoding.unset_encoding %mm : tensor<8x16xf32, #acc> -> tensor<8x16xf32>
    flow.return %out : tensor<8x16xf32>
  }
  util.return %r : tensor<8x16xf32>
}

// -----

// A broadcast generic (32x16 -> 2x32x16, body only a yield) feeding a batch_matmul RHS: the
// set_encoding bubbles onto the 2-D source (encoding extended with the broadcast map) and is
// hoisted.
// Source: HoistEncodingOps.cpp, BubbleUpSetEncodingOp (isBroadcastingOp).
// Matters: the un-broadcast tensor is packed.
// rules/propagate_bubble.egg bubble-set-encoding-through-generic (conditions 1-4), then the hoist
// family.
// EXPECT: in
#bmk = affine_map<(b, m, n, k) -> (b, m, k)>
#bkn = affine_map<(b, m, n, k) -> (b, k, n)>
#bmn = affine_map<(b, m, n, k) -> (b, m, n)>
#kn2 = affine_map<(d0, d1, d2) -> (d1, d2)>
#id3 = affine_map<(d0, d1, d2) -> (d0, d1, d2)>
#lhs = #iree_encoding.encoding<operand_index = 0 : index, op_type = matmul, element_types = [f32, f32, f32], user_indexing_maps = [#bmk, #bkn, #bmn], iteration_sizes = [2, 8, 16, 32]>
#rhs = #iree_encoding.encoding<operand_index = 1 : index, op_type = matmul, element_types = [f32, f32, f32], user_indexing_maps = [#bmk, #bkn, #bmn], iteration_sizes = [2, 8, 16, 32]>
#acc = #iree_encoding.encoding<operand_index = 2 : index, op_type = matmul, element_types = [f32, f32, f32], user_indexing_maps = [#bmk, #bkn, #bmn], iteration_sizes = [2, 8, 16, 32]>
util.func public @bubble_through_batch_broadcast(%x: tensor<2x8x32xf32>, %w: tensor<32x16xf32>) -> tensor<2x8x16xf32> {
  %r = flow.dispatch.region -> (tensor<2x8x16xf32>) {
    %e = tensor.empty() : tensor<2x32x16xf32>
    %wb = linalg.generic {indexing_maps = [#kn2, #id3], iterator_types = ["parallel", "parallel", "parallel"]} ins(%w : tensor<32x16xf32>) outs(%e : tensor<2x32x16xf32>) {
    ^bb0(%a: f32, %o: f32):
      linalg.yield %a : f32
    } -> tensor<2x32x16xf32>
    %xe = iree_encoding.set_encoding %x : tensor<2x8x32xf32> -> tensor<2x8x32xf32, #lhs>
    %we = iree_encoding.set_encoding %wb : tensor<2x32x16xf32> -> tensor<2x32x16xf32, #rhs>
    %cst = arith.constant 0.0 : f32
    %init = tensor.empty() : tensor<2x8x16xf32, #acc>
    %acc0 = linalg.fill ins(%cst : f32) outs(%init : tensor<2x8x16xf32, #acc>) -> tensor<2x8x16xf32, #acc>
    %mm = linalg.batch_matmul ins(%xe, %we : tensor<2x8x32xf32, #lhs>, tensor<2x32x16xf32, #rhs>) outs(%acc0 : tensor<2x8x16xf32, #acc>) -> tensor<2x8x16xf32, #acc>
    %out = iree_encoding.unset_encoding %mm : tensor<2x8x16xf32, #acc> -> tensor<2x8x16xf32>
    flow.return %out : tensor<2x8x16xf32>
  }
  util.return %r : tensor<2x8x16xf32>
}

// -----

// A widening generic whose output map is a transpose (16x32 f16 read as 32x16 f32): the
// set_encoding still bubbles, the operand map composed with the inverse of the output permutation.
// Source: HoistEncodingOps.cpp, bubbleUpSetEncodingThroughGenericOp (output map a permutation,
// invOutputMap).
// Matters: elementwise fusion puts transposes into the dequant's output map.
// rules/propagate_bubble.egg bubble-set-encoding-through-generic (conditions 1-4), then the hoist
// family.
// EXPECT: in
#mk = affine_map<(d0, d1, d2) -> (d0, d2)>
#kn = affine_map<(d0, d1, d2) -> (d2, d1)>
#mn = affine_map<(d0, d1, d2) -> (d0, d1)>
#id = affine_map<(d0, d1) -> (d0, d1)>
#tr = affine_map<(d0, d1) -> (d1, d0)>
#lhs = #iree_encoding.encoding<operand_index = 0 : index, op_type = matmul, element_types = [f32, f32, f32], user_indexing_maps = [#mk, #kn, #mn], iteration_sizes = [8, 16, 32]>
#rhs = #iree_encoding.encoding<operand_index = 1 : index, op_type = matmul, element_types = [f32, f32, f32], user_indexing_maps = [#mk, #kn, #mn], iteration_sizes = [8, 16, 32]>
#acc = #iree_encoding.encoding<operand_index = 2 : index, op_type = matmul, element_types = [f32, f32, f32], user_indexing_maps = [#mk, #kn, #mn], iteration_sizes = [8, 16, 32]>
util.func public @bubble_through_transposing_widening(%x: tensor<8x32xf32>, %wt: tensor<16x32xf16>) -> tensor<8x16xf32> {
  %r = flow.dispatch.region -> (tensor<8x16xf32>) {
    %e = tensor.empty() : tensor<32x16xf32>
    %w = linalg.generic {indexing_maps = [#id, #tr], iterator_types = ["parallel", "parallel"]} ins(%wt : tensor<16x32xf16>) outs(%e : tensor<32x16xf32>) {
    ^bb0(%a: f16, %o: f32):
      %f = arith.extf %a : f16 to f32
      linalg.yield %f : f32
    } -> tensor<32x16xf32>
    %xe = iree_encoding.set_encoding %x : tensor<8x32xf32> -> tensor<8x32xf32, #lhs>
    %we = iree_encoding.set_encoding %w : tensor<32x16xf32> -> tensor<32x16xf32, #rhs>
    %cst = arith.constant 0.0 : f32
    %init = tensor.empty() : tensor<8x16xf32, #acc>
    %acc0 = linalg.fill ins(%cst : f32) outs(%init : tensor<8x16xf32, #acc>) -> tensor<8x16xf32, #acc>
    %mm = linalg.matmul ins(%xe, %we : tensor<8x32xf32, #lhs>, tensor<32x16xf32, #rhs>) outs(%acc0 : tensor<8x16xf32, #acc>) -> tensor<8x16xf32, #acc>
    %out = iree_encoding.unset_encoding %mm : tensor<8x16xf32, #acc> -> tensor<8x16xf32>
    flow.return %out : tensor<8x16xf32>
  }
  util.return %r : tensor<8x16xf32>
}

// -----

// Two producers in a row (broadcast of an f16 weight, then extf): the greedy driver bubbles the
// set_encoding through both, onto the 2-D f16 argument, which is then hoisted.
// Source: HoistEncodingOps.cpp, BubbleUpSetEncodingOp applied repeatedly.
// Matters: chains of cheap producers.
// rules/propagate_bubble.egg bubble-set-encoding-through-generic (conditions 1-4), then the hoist
// family.
// EXPECT: in
#bmk = affine_map<(b, m, n, k) -> (b, m, k)>
#bkn = affine_map<(b, m, n, k) -> (b, k, n)>
#bmn = affine_map<(b, m, n, k) -> (b, m, n)>
#kn2 = affine_map<(d0, d1, d2) -> (d1, d2)>
#id3 = affine_map<(d0, d1, d2) -> (d0, d1, d2)>
#lhs = #iree_encoding.encoding<operand_index = 0 : index, op_type = matmul, element_types = [f32, f32, f32], user_indexing_maps = [#bmk, #bkn, #bmn], iteration_sizes = [2, 8, 16, 32]>
#rhs = #iree_encoding.encoding<operand_index = 1 : index, op_type = matmul, element_types = [f32, f32, f32], user_indexing_maps = [#bmk, #bkn, #bmn], iteration_sizes = [2, 8, 16, 32]>
#acc = #iree_encoding.encoding<operand_index = 2 : index, op_type = matmul, element_types = [f32, f32, f32], user_indexing_maps = [#bmk, #bkn, #bmn], iteration_sizes = [2, 8, 16, 32]>
util.func public @bubble_through_widening_then_broadcast(%x: tensor<2x8x32xf32>, %w: tensor<32x16xf16>) -> tensor<2x8x16xf32> {
  %r = flow.dispatch.region -> (tensor<2x8x16xf32>) {
    %e0 = tensor.empty() : tensor<2x32x16xf16>
    %wb = linalg.generic {indexing_maps = [#kn2, #id3], iterator_types = ["parallel", "parallel", "parallel"]} ins(%w : tensor<32x16xf16>) outs(%e0 : tensor<2x32x16xf16>) {
    ^bb0(%a: f16, %o: f16):
      linalg.yield %a : f16
    } -> tensor<2x32x16xf16>
    %e1 = tensor.empty() : tensor<2x32x16xf32>
    %ww = linalg.generic {indexing_maps = [#id3, #id3], iterator_types = ["parallel", "parallel", "parallel"]} ins(%wb : tensor<2x32x16xf16>) outs(%e1 : tensor<2x32x16xf32>) {
    ^bb0(%a: f16, %o: f32):
      %f = arith.extf %a : f16 to f32
      linalg.yield %f : f32
    } -> tensor<2x32x16xf32>
    %xe = iree_encoding.set_encoding %x : tensor<2x8x32xf32> -> tensor<2x8x32xf32, #lhs>
    %we = iree_encoding.set_encoding %ww : tensor<2x32x16xf32> -> tensor<2x32x16xf32, #rhs>
    %cst = arith.constant 0.0 : f32
    %init = tensor.empty() : tensor<2x8x16xf32, #acc>
    %acc0 = linalg.fill ins(%cst : f32) outs(%init : tensor<2x8x16xf32, #acc>) -> tensor<2x8x16xf32, #acc>
    %mm = linalg.batch_matmul ins(%xe, %we : tensor<2x8x32xf32, #lhs>, tensor<2x32x16xf32, #rhs>) outs(%acc0 : tensor<2x8x16xf32, #acc>) -> tensor<2x8x16xf32, #acc>
    %out = iree_encoding.unset_encoding %mm : tensor<2x8x16xf32, #acc> -> tensor<2x8x16xf32>
    flow.return %out : tensor<2x8x16xf32>
  }
  util.return %r : tensor<2x8x16xf32>
}

// -----

// A widening producer with a reduction loop (f16 sum into f32) is neither a bit-extend nor allowed
// (all loops must be parallel): no bubbling, and its set_encoding stays in the dispatch.
// Source: HoistEncodingOps.cpp, bubbleUpSetEncodingThroughGenericOp (getNumReductionLoops() != 0).
// EXPECT: in
#mk = affine_map<(d0, d1, d2) -> (d0, d2)>
#kn = affine_map<(d0, d1, d2) -> (d2, d1)>
#mn = affine_map<(d0, d1, d2) -> (d0, d1)>
#r3i = affine_map<(d0, d1, d2) -> (d0, d1, d2)>
#r3o = affine_map<(d0, d1, d2) -> (d0, d1)>
#lhs = #iree_encoding.encoding<operand_index = 0 : index, op_type = matmul, element_types = [f32, f32, f32], user_indexing_maps = [#mk, #kn, #mn], iteration_sizes = [8, 16, 32]>
#rhs = #iree_encoding.encoding<operand_index = 1 : index, op_type = matmul, element_types = [f32, f32, f32], user_indexing_maps = [#mk, #kn, #mn], iteration_sizes = [8, 16, 32]>
#acc = #iree_encoding.encoding<operand_index = 2 : index, op_type = matmul, element_types = [f32, f32, f32], user_indexing_maps = [#mk, #kn, #mn], iteration_sizes = [8, 16, 32]>
util.func public @no_bubble_through_widening_sum(%x: tensor<8x32x4xf16>, %w: tensor<32x16xf32>) -> tensor<8x16xf32> {
  %r = flow.dispatch.region -> (tensor<8x16xf32>) {
    %zero = arith.constant 0.0 : f32
    %e = tensor.empty() : tensor<8x32xf32>
    %z = linalg.fill ins(%zero : f32) outs(%e : tensor<8x32xf32>) -> tensor<8x32xf32>
    %xs = linalg.generic {indexing_maps = [#r3i, #r3o], iterator_types = ["parallel", "parallel", "reduction"]} ins(%x : tensor<8x32x4xf16>) outs(%z : tensor<8x32xf32>) {
    ^bb0(%a: f16, %o: f32):
      %f = arith.extf %a : f16 to f32
      %s = arith.addf %o, %f : f32
      linalg.yield %s : f32
    } -> tensor<8x32xf32>
    %xe = iree_encoding.set_encoding %xs : tensor<8x32xf32> -> tensor<8x32xf32, #lhs>
    %we = iree_encoding.set_encoding %w : tensor<32x16xf32> -> tensor<32x16xf32, #rhs>
    %init = tensor.empty() : tensor<8x16xf32, #acc>
    %acc0 = linalg.fill ins(%zero : f32) outs(%init : tensor<8x16xf32, #acc>) -> tensor<8x16xf32, #acc>
    %mm = linalg.matmul ins(%xe, %we : tensor<8x32xf32, #lhs>, tensor<32x16xf32, #rhs>) outs(%acc0 : tensor<8x16xf32, #acc>) -> tensor<8x16xf32, #acc>
    %out = iree_encoding.unset_encoding %mm : tensor<8x16xf32, #acc> -> tensor<8x16xf32>
    flow.return %out : tensor<8x16xf32>
  }
  util.return %r : tensor<8x16xf32>
}

// -----

// The widened tensor is also returned by the dispatch: the producer has two uses, so the
// set_encoding does not bubble and stays in the dispatch.
// Source: HoistEncodingOps.cpp, bubbleUpSetEncodingThroughGenericOp (genericOp->hasOneUse()).
// EXPECT: in
#mk = affine_map<(d0, d1, d2) -> (d0, d2)>
#kn = affine_map<(d0, d1, d2) -> (d2, d1)>
#mn = affine_map<(d0, d1, d2) -> (d0, d1)>
#id = affine_map<(d0, d1) -> (d0, d1)>
#lhs = #iree_encoding.encoding<operand_index = 0 : index, op_type = matmul, element_types = [f32, f32, f32], user_indexing_maps = [#mk, #kn, #mn], iteration_sizes = [8, 16, 32]>
#rhs = #iree_encoding.encoding<operand_index = 1 : index, op_type = matmul, element_types = [f32, f32, f32], user_indexing_maps = [#mk, #kn, #mn], iteration_sizes = [8, 16, 32]>
#acc = #iree_encoding.encoding<operand_index = 2 : index, op_type = matmul, element_types = [f32, f32, f32], user_indexing_maps = [#mk, #kn, #mn], iteration_sizes = [8, 16, 32]>
util.func public @no_bubble_through_widening_with_two_uses(%x: tensor<8x32xf16>, %w: tensor<32x16xf32>) -> (tensor<8x16xf32>, tensor<8x32xf32>) {
  %r:2 = flow.dispatch.region -> (tensor<8x16xf32>, tensor<8x32xf32>) {
    %e = tensor.empty() : tensor<8x32xf32>
    %xw = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]} ins(%x : tensor<8x32xf16>) outs(%e : tensor<8x32xf32>) {
    ^bb0(%a: f16, %o: f32):
      %f = arith.extf %a : f16 to f32
      linalg.yield %f : f32
    } -> tensor<8x32xf32>
    %xe = iree_encoding.set_encoding %xw : tensor<8x32xf32> -> tensor<8x32xf32, #lhs>
    %we = iree_encoding.set_encoding %w : tensor<32x16xf32> -> tensor<32x16xf32, #rhs>
    %cst = arith.constant 0.0 : f32
    %init = tensor.empty() : tensor<8x16xf32, #acc>
    %acc0 = linalg.fill ins(%cst : f32) outs(%init : tensor<8x16xf32, #acc>) -> tensor<8x16xf32, #acc>
    %mm = linalg.matmul ins(%xe, %we : tensor<8x32xf32, #lhs>, tensor<32x16xf32, #rhs>) outs(%acc0 : tensor<8x16xf32, #acc>) -> tensor<8x16xf32, #acc>
    %out = iree_encoding.unset_encoding %mm : tensor<8x16xf32, #acc> -> tensor<8x16xf32>
    flow.return %out, %xw : tensor<8x16xf32>, tensor<8x32xf32>
  }
  util.return %r#0, %r#1 : tensor<8x16xf32>, tensor<8x32xf32>
}

// -----

// The widening generic writes into a function argument instead of a tensor.empty: no bubbling.
// Source: HoistEncodingOps.cpp, bubbleUpSetEncodingThroughGenericOp ("init operand must be
// tensor.empty").
// EXPECT: in
#mk = affine_map<(d0, d1, d2) -> (d0, d2)>
#kn = affine_map<(d0, d1, d2) -> (d2, d1)>
#mn = affine_map<(d0, d1, d2) -> (d0, d1)>
#id = affine_map<(d0, d1) -> (d0, d1)>
#lhs = #iree_encoding.encoding<operand_index = 0 : index, op_type = matmul, element_types = [f32, f32, f32], user_indexing_maps = [#mk, #kn, #mn], iteration_sizes = [8, 16, 32]>
#rhs = #iree_encoding.encoding<operand_index = 1 : index, op_type = matmul, element_types = [f32, f32, f32], user_indexing_maps = [#mk, #kn, #mn], iteration_sizes = [8, 16, 32]>
#acc = #iree_encoding.encoding<operand_index = 2 : index, op_type = matmul, element_types = [f32, f32, f32], user_indexing_maps = [#mk, #kn, #mn], iteration_sizes = [8, 16, 32]>
util.func public @no_bubble_through_widening_into_argument(%x: tensor<8x32xf16>, %buf: tensor<8x32xf32>, %w: tensor<32x16xf32>) -> tensor<8x16xf32> {
  %r = flow.dispatch.region -> (tensor<8x16xf32>) {
    %xw = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]} ins(%x : tensor<8x32xf16>) outs(%buf : tensor<8x32xf32>) {
    ^bb0(%a: f16, %o: f32):
      %f = arith.extf %a : f16 to f32
      linalg.yield %f : f32
    } -> tensor<8x32xf32>
    %xe = iree_encoding.set_encoding %xw : tensor<8x32xf32> -> tensor<8x32xf32, #lhs>
    %we = iree_encoding.set_encoding %w : tensor<32x16xf32> -> tensor<32x16xf32, #rhs>
    %cst = arith.constant 0.0 : f32
    %init = tensor.empty() : tensor<8x16xf32, #acc>
    %acc0 = linalg.fill ins(%cst : f32) outs(%init : tensor<8x16xf32, #acc>) -> tensor<8x16xf32, #acc>
    %mm = linalg.matmul ins(%xe, %we : tensor<8x32xf32, #lhs>, tensor<32x16xf32, #rhs>) outs(%acc0 : tensor<8x16xf32, #acc>) -> tensor<8x16xf32, #acc>
    %out = iree_encoding.unset_encoding %mm : tensor<8x16xf32, #acc> -> tensor<8x16xf32>
    flow.return %out : tensor<8x16xf32>
  }
  util.return %r : tensor<8x16xf32>
}

// -----

// A widening generic with a math.exp in its body is not a bit-extend op (math ops are excluded): no
// bubbling, set_encoding stays.
// Source: HoistEncodingOps.cpp, bubbleUpSetEncoding -> LinalgExt::isBitExtendOp (no math dialect
// ops).
// EXPECT: in
#mk = affine_map<(d0, d1, d2) -> (d0, d2)>
#kn = affine_map<(d0, d1, d2) -> (d2, d1)>
#mn = affine_map<(d0, d1, d2) -> (d0, d1)>
#id = affine_map<(d0, d1) -> (d0, d1)>
#lhs = #iree_encoding.encoding<operand_index = 0 : index, op_type = matmul, element_types = [f32, f32, f32], user_indexing_maps = [#mk, #kn, #mn], iteration_sizes = [8, 16, 32]>
#rhs = #iree_encoding.encoding<operand_index = 1 : index, op_type = matmul, element_types = [f32, f32, f32], user_indexing_maps = [#mk, #kn, #mn], iteration_sizes = [8, 16, 32]>
#acc = #iree_encoding.encoding<operand_index = 2 : index, op_type = matmul, element_types = [f32, f32, f32], user_indexing_maps = [#mk, #kn, #mn], iteration_sizes = [8, 16, 32]>
util.func public @no_bubble_through_widening_with_math(%x: tensor<8x32xf16>, %w: tensor<32x16xf32>) -> tensor<8x16xf32> {
  %r = flow.dispatch.region -> (tensor<8x16xf32>) {
    %e = tensor.empty() : tensor<8x32xf32>
    %xw = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]} ins(%x : tensor<8x32xf16>) outs(%e : tensor<8x32xf32>) {
    ^bb0(%a: f16, %o: f32):
      %f = arith.extf %a : f16 to f32
      %g = math.exp %f : f32
      linalg.yield %g : f32
    } -> tensor<8x32xf32>
    %xe = iree_encoding.set_encoding %xw : tensor<8x32xf32> -> tensor<8x32xf32, #lhs>
    %we = iree_encoding.set_encoding %w : tensor<32x16xf32> -> tensor<32x16xf32, #rhs>
    %cst = arith.constant 0.0 : f32
    %init = tensor.empty() : tensor<8x16xf32, #acc>
    %acc0 = linalg.fill ins(%cst : f32) outs(%init : tensor<8x16xf32, #acc>) -> tensor<8x16xf32, #acc>
    %mm = linalg.matmul ins(%xe, %we : tensor<8x32xf32, #lhs>, tensor<32x16xf32, #rhs>) outs(%acc0 : tensor<8x16xf32, #acc>) -> tensor<8x16xf32, #acc>
    %out = iree_encoding.unset_encoding %mm : tensor<8x16xf32, #acc> -> tensor<8x16xf32>
    flow.return %out : tensor<8x16xf32>
  }
  util.return %r : tensor<8x16xf32>
}

// -----

// A named linalg.broadcast is not a linalg.generic, so the set_encoding does not bubble through it
// (only generics are candidates) and stays in the dispatch.
// Source: HoistEncodingOps.cpp, bubbleUpSetEncoding (getDefiningOp<linalg::GenericOp>).
// EXPECT: in
#bmk = affine_map<(b, m, n, k) -> (b, m, k)>
#bkn = affine_map<(b, m, n, k) -> (b, k, n)>
#bmn = affine_map<(b, m, n, k) -> (b, m, n)>
#lhs = #iree_encoding.encoding<operand_index = 0 : index, op_type = matmul, element_types = [f32, f32, f32], user_indexing_maps = [#bmk, #bkn, #bmn], iteration_sizes = [2, 8, 16, 32]>
#rhs = #iree_encoding.encoding<operand_index = 1 : index, op_type = matmul, element_types = [f32, f32, f32], user_indexing_maps = [#bmk, #bkn, #bmn], iteration_sizes = [2, 8, 16, 32]>
#acc = #iree_encoding.encoding<operand_index = 2 : index, op_type = matmul, element_types = [f32, f32, f32], user_indexing_maps = [#bmk, #bkn, #bmn], iteration_sizes = [2, 8, 16, 32]>
util.func public @no_bubble_through_named_broadcast(%x: tensor<2x8x32xf32>, %w: tensor<32x16xf32>) -> tensor<2x8x16xf32> {
  %r = flow.dispatch.region -> (tensor<2x8x16xf32>) {
    %e = tensor.empty() : tensor<2x32x16xf32>
    %wb = linalg.broadcast ins(%w : tensor<32x16xf32>) outs(%e : tensor<2x32x16xf32>) dimensions = [0]
    %xe = iree_encoding.set_encoding %x : tensor<2x8x32xf32> -> tensor<2x8x32xf32, #lhs>
    %we = iree_encoding.set_encoding %wb : tensor<2x32x16xf32> -> tensor<2x32x16xf32, #rhs>
    %cst = arith.constant 0.0 : f32
    %init = tensor.empty() : tensor<2x8x16xf32, #acc>
    %acc0 = linalg.fill ins(%cst : f32) outs(%init : tensor<2x8x16xf32, #acc>) -> tensor<2x8x16xf32, #acc>
    %mm = linalg.batch_matmul ins(%xe, %we : tensor<2x8x32xf32, #lhs>, tensor<2x32x16xf32, #rhs>) outs(%acc0 : tensor<2x8x16xf32, #acc>) -> tensor<2x8x16xf32, #acc>
    %out = iree_encoding.unset_encoding %mm : tensor<2x8x16xf32, #acc> -> tensor<2x8x16xf32>
    flow.return %out : tensor<2x8x16xf32>
  }
  util.return %r : tensor<2x8x16xf32>
}

// -----

// The widening producer is outside the dispatch: no bubbling (producer and set_encoding must share
// the dispatch); the set_encoding of the widened value is simply hoisted.
// Source: HoistEncodingOps.cpp, BubbleUpSetEncodingOp::matchAndRewrite (same DispatchRegionOp) and
// the hoisting walk.
// EXPECT: in
#mk = affine_map<(d0, d1, d2) -> (d0, d2)>
#kn = affine_map<(d0, d1, d2) -> (d2, d1)>
#mn = affine_map<(d0, d1, d2) -> (d0, d1)>
#id = affine_map<(d0, d1) -> (d0, d1)>
#lhs = #iree_encoding.encoding<operand_index = 0 : index, op_type = matmul, element_types = [f32, f32, f32], user_indexing_maps = [#mk, #kn, #mn], iteration_sizes = [8, 16, 32]>
#rhs = #iree_encoding.encoding<operand_index = 1 : index, op_type = matmul, element_types = [f32, f32, f32], user_indexing_maps = [#mk, #kn, #mn], iteration_sizes = [8, 16, 32]>
#acc = #iree_encoding.encoding<operand_index = 2 : index, op_type = matmul, element_types = [f32, f32, f32], user_indexing_maps = [#mk, #kn, #mn], iteration_sizes = [8, 16, 32]>
util.func public @no_bubble_across_dispatch_boundary(%x: tensor<8x32xf16>, %w: tensor<32x16xf32>) -> tensor<8x16xf32> {
  %e = tensor.empty() : tensor<8x32xf32>
  %xw = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]} ins(%x : tensor<8x32xf16>) outs(%e : tensor<8x32xf32>) {
  ^bb0(%a: f16, %o: f32):
    %f = arith.extf %a : f16 to f32
    linalg.yield %f : f32
  } -> tensor<8x32xf32>
  %r = flow.dispatch.region -> (tensor<8x16xf32>) {
    %xe = iree_encoding.set_encoding %xw : tensor<8x32xf32> -> tensor<8x32xf32, #lhs>
    %we = iree_encoding.set_encoding %w : tensor<32x16xf32> -> tensor<32x16xf32, #rhs>
    %cst = arith.constant 0.0 : f32
    %init = tensor.empty() : tensor<8x16xf32, #acc>
    %acc0 = linalg.fill ins(%cst : f32) outs(%init : tensor<8x16xf32, #acc>) -> tensor<8x16xf32, #acc>
    %mm = linalg.matmul ins(%xe, %we : tensor<8x32xf32, #lhs>, tensor<32x16xf32, #rhs>) outs(%acc0 : tensor<8x16xf32, #acc>) -> tensor<8x16xf32, #acc>
    %out = iree_encoding.unset_encoding %mm : tensor<8x16xf32, #acc> -> tensor<8x16xf32>
    flow.return %out : tensor<8x16xf32>
  }
  util.return %r : tensor<8x16xf32>
}

// -----

// A widening of an immutable f16 global inside the dispatch: the set_encoding bubbles onto the
// global load, but a set_encoding of a util.global.load is then not hoisted (not allowed, a
// const-expr root).
// Source: HoistEncodingOps.cpp, BubbleUpSetEncodingOp, then isHoistableOp / ConstExprHoistingPolicy
// (roots).
// rules/propagate_bubble.egg bubble-set-encoding-through-generic (conditions 1-4), then the hoist
// family.
// EXPECT: in
#mk = affine_map<(d0, d1, d2) -> (d0, d2)>
#kn = affine_map<(d0, d1, d2) -> (d2, d1)>
#mn = affine_map<(d0, d1, d2) -> (d0, d1)>
#id = affine_map<(d0, d1) -> (d0, d1)>
#lhs = #iree_encoding.encoding<operand_index = 0 : index, op_type = matmul, element_types = [f32, f32, f32], user_indexing_maps = [#mk, #kn, #mn], iteration_sizes = [8, 16, 32]>
#rhs = #iree_encoding.encoding<operand_index = 1 : index, op_type = matmul, element_types = [f32, f32, f32], user_indexing_maps = [#mk, #kn, #mn], iteration_sizes = [8, 16, 32]>
#acc = #iree_encoding.encoding<operand_index = 2 : index, op_type = matmul, element_types = [f32, f32, f32], user_indexing_maps = [#mk, #kn, #mn], iteration_sizes = [8, 16, 32]>
util.global private @w_half = dense<1.5> : tensor<32x16xf16>
util.func public @bubble_then_keep_global_weight(%x: tensor<8x32xf32>) -> tensor<8x16xf32> {
  %r = flow.dispatch.region -> (tensor<8x16xf32>) {
    %wh = util.global.load @w_half : tensor<32x16xf16>
    %e = tensor.empty() : tensor<32x16xf32>
    %w = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]} ins(%wh : tensor<32x16xf16>) outs(%e : tensor<32x16xf32>) {
    ^bb0(%a: f16, %o: f32):
      %f = arith.extf %a : f16 to f32
      linalg.yield %f : f32
    } -> tensor<32x16xf32>
    %xe = iree_encoding.set_encoding %x : tensor<8x32xf32> -> tensor<8x32xf32, #lhs>
    %we = iree_encoding.set_encoding %w : tensor<32x16xf32> -> tensor<32x16xf32, #rhs>
    %zero = arith.constant 0.0 : f32
    %init = tensor.empty() : tensor<8x16xf32, #acc>
    %acc0 = linalg.fill ins(%zero : f32) outs(%init : tensor<8x16xf32, #acc>) -> tensor<8x16xf32, #acc>
    %mm = linalg.matmul ins(%xe, %we : tensor<8x32xf32, #lhs>, tensor<32x16xf32, #rhs>) outs(%acc0 : tensor<8x16xf32, #acc>) -> tensor<8x16xf32, #acc>
    %y = iree_encoding.unset_encoding %mm : tensor<8x16xf32, #acc> -> tensor<8x16xf32>
    flow.return %y : tensor<8x16xf32>
  }
  util.return %r : tensor<8x16xf32>
}

// -----

// A widening of a dense f16 constant inside the dispatch: the set_encoding bubbles onto the
// constant, and constant and set_encoding are both hoisted (ConstantLike).
// Source: HoistEncodingOps.cpp, BubbleUpSetEncodingOp, then isHoistableOp (ConstantLike).
// rules/propagate_bubble.egg bubble-set-encoding-through-generic (conditions 1-4), then the hoist
// family.
// EXPECT: in
#mk = affine_map<(d0, d1, d2) -> (d0, d2)>
#kn = affine_map<(d0, d1, d2) -> (d2, d1)>
#mn = affine_map<(d0, d1, d2) -> (d0, d1)>
#id = affine_map<(d0, d1) -> (d0, d1)>
#lhs = #iree_encoding.encoding<operand_index = 0 : index, op_type = matmul, element_types = [f32, f32, f32], user_indexing_maps = [#mk, #kn, #mn], iteration_sizes = [8, 16, 32]>
#rhs = #iree_encoding.encoding<operand_index = 1 : index, op_type = matmul, element_types = [f32, f32, f32], user_indexing_maps = [#mk, #kn, #mn], iteration_sizes = [8, 16, 32]>
#acc = #iree_encoding.encoding<operand_index = 2 : index, op_type = matmul, element_types = [f32, f32, f32], user_indexing_maps = [#mk, #kn, #mn], iteration_sizes = [8, 16, 32]>
util.func public @bubble_then_hoist_constant_weight(%x: tensor<8x32xf32>) -> tensor<8x16xf32> {
  %r = flow.dispatch.region -> (tensor<8x16xf32>) {
    %wh = arith.constant dense<1.5> : tensor<32x16xf16>
    %e = tensor.empty() : tensor<32x16xf32>
    %w = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]} ins(%wh : tensor<32x16xf16>) outs(%e : tensor<32x16xf32>) {
    ^bb0(%a: f16, %o: f32):
      %f = arith.extf %a : f16 to f32
      linalg.yield %f : f32
    } -> tensor<32x16xf32>
    %xe = iree_encoding.set_encoding %x : tensor<8x32xf32> -> tensor<8x32xf32, #lhs>
    %we = iree_encoding.set_encoding %w : tensor<32x16xf32> -> tensor<32x16xf32, #rhs>
    %zero = arith.constant 0.0 : f32
    %init = tensor.empty() : tensor<8x16xf32, #acc>
    %acc0 = linalg.fill ins(%zero : f32) outs(%init : tensor<8x16xf32, #acc>) -> tensor<8x16xf32, #acc>
    %mm = linalg.matmul ins(%xe, %we : tensor<8x32xf32, #lhs>, tensor<32x16xf32, #rhs>) outs(%acc0 : tensor<8x16xf32, #acc>) -> tensor<8x16xf32, #acc>
    %y = iree_encoding.unset_encoding %mm : tensor<8x16xf32, #acc> -> tensor<8x16xf32>
    flow.return %y : tensor<8x16xf32>
  }
  util.return %r : tensor<8x16xf32>
}
