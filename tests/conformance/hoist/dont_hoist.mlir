// A set_encoding of a rank-0 tensor<f32> (a scale for an encoded epilogue) is never hoisted, though
// its source is a function argument; the matmul operands' set_encodings are.
// Source: HoistEncodingOps.cpp, HoistEncodingOpsPass::runOnOperation (inputType.getRank() == 0).
// Matters: a scalar "pack" is just a broadcast, not worth a dispatch.
// EXPECT: in
#mk = affine_map<(d0, d1, d2) -> (d0, d2)>
#kn = affine_map<(d0, d1, d2) -> (d2, d1)>
#mn = affine_map<(d0, d1, d2) -> (d0, d1)>
#id = affine_map<(d0, d1) -> (d0, d1)>
#lhs = #iree_encoding.encoding<operand_index = 0 : index, op_type = matmul, element_types = [f32, f32, f32], user_indexing_maps = [#mk, #kn, #mn], iteration_sizes = [8, 16, 32]>
#rhs = #iree_encoding.encoding<operand_index = 1 : index, op_type = matmul, element_types = [f32, f32, f32], user_indexing_maps = [#mk, #kn, #mn], iteration_sizes = [8, 16, 32]>
#acc = #iree_encoding.encoding<operand_index = 2 : index, op_type = matmul, element_types = [f32, f32, f32], user_indexing_maps = [#mk, #kn, #mn], iteration_sizes = [8, 16, 32]>
#none = affine_map<(d0, d1) -> ()>
#accs = #iree_encoding.encoding<operand_index = 2 : index, op_type = matmul, element_types = [f32, f32, f32], user_indexing_maps = [#mk, #kn, [#mn, #none]], iteration_sizes = [8, 16, 32]>
util.func public @dont_hoist_rank0_set_encoding(%x: tensor<8x32xf32>, %w: tensor<32x16xf32>, %s: tensor<f32>) -> tensor<8x16xf32> {
  %r = flow.dispatch.region -> (tensor<8x16xf32>) {
    %xe = iree_encoding.set_encoding %x : tensor<8x32xf32> -> tensor<8x32xf32, #lhs>
    %we = iree_encoding.set_encoding %w : tensor<32x16xf32> -> tensor<32x16xf32, #rhs>
    %zero = arith.constant 0.0 : f32
    %init = tensor.empty() : tensor<8x16xf32, #acc>
    %acc0 = linalg.fill ins(%zero : f32) outs(%init : tensor<8x16xf32, #acc>) -> tensor<8x16xf32, #acc>
    %mm = linalg.matmul ins(%xe, %we : tensor<8x32xf32, #lhs>, tensor<32x16xf32, #rhs>) outs(%acc0 : tensor<8x16xf32, #acc>) -> tensor<8x16xf32, #acc>
    %se = iree_encoding.set_encoding %s : tensor<f32> -> tensor<f32, #accs>
    %e = tensor.empty() : tensor<8x16xf32, #acc>
    %t = linalg.generic {indexing_maps = [#id, #none, #id], iterator_types = ["parallel", "parallel"]} ins(%mm, %se : tensor<8x16xf32, #acc>, tensor<f32, #accs>) outs(%e : tensor<8x16xf32, #acc>) {
    ^bb0(%a: f32, %b: f32, %o: f32):
      %m = arith.mulf %a, %b : f32
      linalg.yield %m : f32
    } -> tensor<8x16xf32, #acc>
    %y = iree_encoding.unset_encoding %t : tensor<8x16xf32, #acc> -> tensor<8x16xf32>
    flow.return %y : tensor<8x16xf32>
  }
  util.return %r : tensor<8x16xf32>
}

// -----

// The LHS is an elementwise sum of two arguments computed in the dispatch (same width: not a
// bit-extend, so no bubbling; not a const-expr): its set_encoding stays.
// Source: HoistEncodingOps.cpp, the hoisting walk (non-hoistable producer) and bubbleUpSetEncoding
// (isBitExtendOp).
// EXPECT: in
#mk = affine_map<(d0, d1, d2) -> (d0, d2)>
#kn = affine_map<(d0, d1, d2) -> (d2, d1)>
#mn = affine_map<(d0, d1, d2) -> (d0, d1)>
#id = affine_map<(d0, d1) -> (d0, d1)>
#lhs = #iree_encoding.encoding<operand_index = 0 : index, op_type = matmul, element_types = [f32, f32, f32], user_indexing_maps = [#mk, #kn, #mn], iteration_sizes = [8, 16, 32]>
#rhs = #iree_encoding.encoding<operand_index = 1 : index, op_type = matmul, element_types = [f32, f32, f32], user_indexing_maps = [#mk, #kn, #mn], iteration_sizes = [8, 16, 32]>
#acc = #iree_encoding.encoding<operand_index = 2 : index, op_type = matmul, element_types = [f32, f32, f32], user_indexing_maps = [#mk, #kn, #mn], iteration_sizes = [8, 16, 32]>
util.func public @dont_hoist_sum_of_arguments(%x: tensor<8x32xf32>, %x2: tensor<8x32xf32>, %w: tensor<32x16xf32>) -> tensor<8x16xf32> {
  %r = flow.dispatch.region -> (tensor<8x16xf32>) {
    %e = tensor.empty() : tensor<8x32xf32>
    %xs = linalg.generic {indexing_maps = [#id, #id, #id], iterator_types = ["parallel", "parallel"]} ins(%x, %x2 : tensor<8x32xf32>, tensor<8x32xf32>) outs(%e : tensor<8x32xf32>) {
    ^bb0(%a: f32, %b: f32, %o: f32):
      %s = arith.addf %a, %b : f32
      linalg.yield %s : f32
    } -> tensor<8x32xf32>
    %xe = iree_encoding.set_encoding %xs : tensor<8x32xf32> -> tensor<8x32xf32, #lhs>
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

// set_encodings already outside the dispatch are left alone: the pass changes nothing.
// Source: HoistEncodingOps.cpp, the hoisting walk (only set_encodings inside a DispatchRegionOp).
// EXPECT: in
#mk = affine_map<(d0, d1, d2) -> (d0, d2)>
#kn = affine_map<(d0, d1, d2) -> (d2, d1)>
#mn = affine_map<(d0, d1, d2) -> (d0, d1)>
#id = affine_map<(d0, d1) -> (d0, d1)>
#lhs = #iree_encoding.encoding<operand_index = 0 : index, op_type = matmul, element_types = [f32, f32, f32], user_indexing_maps = [#mk, #kn, #mn], iteration_sizes = [8, 16, 32]>
#rhs = #iree_encoding.encoding<operand_index = 1 : index, op_type = matmul, element_types = [f32, f32, f32], user_indexing_maps = [#mk, #kn, #mn], iteration_sizes = [8, 16, 32]>
#acc = #iree_encoding.encoding<operand_index = 2 : index, op_type = matmul, element_types = [f32, f32, f32], user_indexing_maps = [#mk, #kn, #mn], iteration_sizes = [8, 16, 32]>
util.func public @leave_set_encoding_already_outside(%x: tensor<8x32xf32>, %w: tensor<32x16xf32>) -> tensor<8x16xf32> {
  %xe = iree_encoding.set_encoding %x : tensor<8x32xf32> -> tensor<8x32xf32, #lhs>
  %we = iree_encoding.set_encoding %w : tensor<32x16xf32> -> tensor<32x16xf32, #rhs>
  %r = flow.dispatch.region -> (tensor<8x16xf32>) {
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

// An f64 -> f32 truncf producer is a bit-truncate, not a bit-extend: no bubbling, and the
// set_encoding of its result stays in the dispatch.
// Source: HoistEncodingOps.cpp, bubbleUpSetEncoding (isBitExtendOp / isBroadcastingOp only).
// EXPECT: in
#mk = affine_map<(d0, d1, d2) -> (d0, d2)>
#kn = affine_map<(d0, d1, d2) -> (d2, d1)>
#mn = affine_map<(d0, d1, d2) -> (d0, d1)>
#id = affine_map<(d0, d1) -> (d0, d1)>
#lhs = #iree_encoding.encoding<operand_index = 0 : index, op_type = matmul, element_types = [f32, f32, f32], user_indexing_maps = [#mk, #kn, #mn], iteration_sizes = [8, 16, 32]>
#rhs = #iree_encoding.encoding<operand_index = 1 : index, op_type = matmul, element_types = [f32, f32, f32], user_indexing_maps = [#mk, #kn, #mn], iteration_sizes = [8, 16, 32]>
#acc = #iree_encoding.encoding<operand_index = 2 : index, op_type = matmul, element_types = [f32, f32, f32], user_indexing_maps = [#mk, #kn, #mn], iteration_sizes = [8, 16, 32]>
util.func public @dont_bubble_through_narrowing(%x: tensor<8x32xf64>, %w: tensor<32x16xf32>) -> tensor<8x16xf32> {
  %r = flow.dispatch.region -> (tensor<8x16xf32>) {
    %e = tensor.empty() : tensor<8x32xf32>
    %xn = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]} ins(%x : tensor<8x32xf64>) outs(%e : tensor<8x32xf32>) {
    ^bb0(%a: f64, %o: f32):
      %t = arith.truncf %a : f64 to f32
      linalg.yield %t : f32
    } -> tensor<8x32xf32>
    %xe = iree_encoding.set_encoding %xn : tensor<8x32xf32> -> tensor<8x32xf32, #lhs>
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

// A contiguous row slice of a tensor computed inside the dispatch (negf of an argument): the slice
// is hoistable but its source is not, so the whole chain stays.
// Source: HoistEncodingOps.cpp, the hoisting walk (every in-dispatch producer on the path must be
// hoistable).
// EXPECT: in
#mk = affine_map<(d0, d1, d2) -> (d0, d2)>
#kn = affine_map<(d0, d1, d2) -> (d2, d1)>
#mn = affine_map<(d0, d1, d2) -> (d0, d1)>
#id = affine_map<(d0, d1) -> (d0, d1)>
#lhs = #iree_encoding.encoding<operand_index = 0 : index, op_type = matmul, element_types = [f32, f32, f32], user_indexing_maps = [#mk, #kn, #mn], iteration_sizes = [8, 16, 32]>
#rhs = #iree_encoding.encoding<operand_index = 1 : index, op_type = matmul, element_types = [f32, f32, f32], user_indexing_maps = [#mk, #kn, #mn], iteration_sizes = [8, 16, 32]>
#acc = #iree_encoding.encoding<operand_index = 2 : index, op_type = matmul, element_types = [f32, f32, f32], user_indexing_maps = [#mk, #kn, #mn], iteration_sizes = [8, 16, 32]>
util.func public @dont_hoist_slice_of_computed_tensor(%x: tensor<16x32xf32>, %w: tensor<32x16xf32>) -> tensor<8x16xf32> {
  %r = flow.dispatch.region -> (tensor<8x16xf32>) {
    %e = tensor.empty() : tensor<16x32xf32>
    %xn = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]} ins(%x : tensor<16x32xf32>) outs(%e : tensor<16x32xf32>) {
    ^bb0(%a: f32, %o: f32):
      %t = arith.negf %a : f32
      linalg.yield %t : f32
    } -> tensor<16x32xf32>
    %xs = tensor.extract_slice %xn[8, 0] [8, 32] [1, 1] : tensor<16x32xf32> to tensor<8x32xf32>
    %xe = iree_encoding.set_encoding %xs : tensor<8x32xf32> -> tensor<8x32xf32, #lhs>
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

// A set_encoding of a zero-filled tensor.empty accumulator stays in the dispatch: linalg.fill is
// not on the allow list, and ConstExprHoistingPolicy never hoists a fill (it fuses with its
// consumer).
// Source: HoistEncodingOps.cpp, isHoistableOp and the const-expr branch
// (HoistableLinalgOpInterface: no fill leaves).
// EXPECT: in
#mk = affine_map<(d0, d1, d2) -> (d0, d2)>
#kn = affine_map<(d0, d1, d2) -> (d2, d1)>
#mn = affine_map<(d0, d1, d2) -> (d0, d1)>
#id = affine_map<(d0, d1) -> (d0, d1)>
#lhs = #iree_encoding.encoding<operand_index = 0 : index, op_type = matmul, element_types = [f32, f32, f32], user_indexing_maps = [#mk, #kn, #mn], iteration_sizes = [8, 16, 32]>
#rhs = #iree_encoding.encoding<operand_index = 1 : index, op_type = matmul, element_types = [f32, f32, f32], user_indexing_maps = [#mk, #kn, #mn], iteration_sizes = [8, 16, 32]>
#acc = #iree_encoding.encoding<operand_index = 2 : index, op_type = matmul, element_types = [f32, f32, f32], user_indexing_maps = [#mk, #kn, #mn], iteration_sizes = [8, 16, 32]>
util.func public @set_encoding_of_empty_accumulator(%x: tensor<8x32xf32>, %w: tensor<32x16xf32>) -> tensor<8x16xf32> {
  %r = flow.dispatch.region -> (tensor<8x16xf32>) {
    %xe = iree_encoding.set_encoding %x : tensor<8x32xf32> -> tensor<8x32xf32, #lhs>
    %we = iree_encoding.set_encoding %w : tensor<32x16xf32> -> tensor<32x16xf32, #rhs>
    %zero = arith.constant 0.0 : f32
    %init = tensor.empty() : tensor<8x16xf32>
    %acc0 = linalg.fill ins(%zero : f32) outs(%init : tensor<8x16xf32>) -> tensor<8x16xf32>
    %acce = iree_encoding.set_encoding %acc0 : tensor<8x16xf32> -> tensor<8x16xf32, #acc>
    %mm = linalg.matmul ins(%xe, %we : tensor<8x32xf32, #lhs>, tensor<32x16xf32, #rhs>) outs(%acce : tensor<8x16xf32, #acc>) -> tensor<8x16xf32, #acc>
    %y = iree_encoding.unset_encoding %mm : tensor<8x16xf32, #acc> -> tensor<8x16xf32>
    flow.return %y : tensor<8x16xf32>
  }
  util.return %r : tensor<8x16xf32>
}

// -----

// A tensor.collapse_shape of an argument feeding the LHS: a reshape is not on the allow list (only
// extract_slice and ConstantLike), so its set_encoding stays.
// Source: HoistEncodingOps.cpp, isHoistableOp.
// EXPECT: in
#mk = affine_map<(d0, d1, d2) -> (d0, d2)>
#kn = affine_map<(d0, d1, d2) -> (d2, d1)>
#mn = affine_map<(d0, d1, d2) -> (d0, d1)>
#lhs = #iree_encoding.encoding<operand_index = 0 : index, op_type = matmul, element_types = [f32, f32, f32], user_indexing_maps = [#mk, #kn, #mn], iteration_sizes = [8, 16, 32]>
#rhs = #iree_encoding.encoding<operand_index = 1 : index, op_type = matmul, element_types = [f32, f32, f32], user_indexing_maps = [#mk, #kn, #mn], iteration_sizes = [8, 16, 32]>
#acc = #iree_encoding.encoding<operand_index = 2 : index, op_type = matmul, element_types = [f32, f32, f32], user_indexing_maps = [#mk, #kn, #mn], iteration_sizes = [8, 16, 32]>
util.func public @keep_collapse_in_dispatch(%x: tensor<2x4x32xf32>, %w: tensor<32x16xf32>) -> tensor<8x16xf32> {
  %r = flow.dispatch.region -> (tensor<8x16xf32>) {
    %xc = tensor.collapse_shape %x [[0, 1], [2]] : tensor<2x4x32xf32> into tensor<8x32xf32>
    %xe = iree_encoding.set_encoding %xc : tensor<8x32xf32> -> tensor<8x32xf32, #lhs>
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
