// A contraction written as a linalg.generic (mulf/addf body, one reduction loop) has its operand
// set_encodings on function arguments hoisted out of the dispatch just like a named matmul's.
// Source: HoistEncodingOps.cpp, HoistEncodingOpsPass::runOnOperation (the hoisting walk visits
// every set_encoding in a dispatch, whatever its consumer).
// Matters: frontends emit generic contractions; the packs must leave the dispatch so they can run
// once, not inside the matmul.
// EXPECT: in
#mk = affine_map<(d0, d1, d2) -> (d0, d2)>
#kn = affine_map<(d0, d1, d2) -> (d2, d1)>
#mn = affine_map<(d0, d1, d2) -> (d0, d1)>
#lhs = #iree_encoding.encoding<operand_index = 0 : index, op_type = matmul, element_types = [f32, f32, f32], user_indexing_maps = [#mk, #kn, #mn], iteration_sizes = [4, 8, 16]>
#rhs = #iree_encoding.encoding<operand_index = 1 : index, op_type = matmul, element_types = [f32, f32, f32], user_indexing_maps = [#mk, #kn, #mn], iteration_sizes = [4, 8, 16]>
#acc = #iree_encoding.encoding<operand_index = 2 : index, op_type = matmul, element_types = [f32, f32, f32], user_indexing_maps = [#mk, #kn, #mn], iteration_sizes = [4, 8, 16]>
util.func public @hoist_generic_contraction_operands(%x: tensor<4x16xf32>, %w: tensor<16x8xf32>) -> tensor<4x8xf32> {
  %r = flow.dispatch.region -> (tensor<4x8xf32>) {
    %xe = iree_encoding.set_encoding %x : tensor<4x16xf32> -> tensor<4x16xf32, #lhs>
    %we = iree_encoding.set_encoding %w : tensor<16x8xf32> -> tensor<16x8xf32, #rhs>
    %cst = arith.constant 0.0 : f32
    %init = tensor.empty() : tensor<4x8xf32, #acc>
    %acc0 = linalg.fill ins(%cst : f32) outs(%init : tensor<4x8xf32, #acc>) -> tensor<4x8xf32, #acc>
    %mm = linalg.generic {indexing_maps = [#mk, #kn, #mn], iterator_types = ["parallel", "parallel", "reduction"]}
        ins(%xe, %we : tensor<4x16xf32, #lhs>, tensor<16x8xf32, #rhs>) outs(%acc0 : tensor<4x8xf32, #acc>) {
    ^bb0(%a: f32, %b: f32, %c: f32):
      %p = arith.mulf %a, %b : f32
      %s = arith.addf %c, %p : f32
      linalg.yield %s : f32
    } -> tensor<4x8xf32, #acc>
    %out = iree_encoding.unset_encoding %mm : tensor<4x8xf32, #acc> -> tensor<4x8xf32>
    flow.return %out : tensor<4x8xf32>
  }
  util.return %r : tensor<4x8xf32>
}

// -----

// A matmul with a transposed RHS (indexing maps (m,k), (n,k), (m,n)) has both operand set_encodings
// hoisted; the encoding's user_indexing_maps carry the transposition, the hoist does not look at
// it.
// Source: HoistEncodingOps.cpp, HoistEncodingOpsPass::runOnOperation.
// Matters: linear layers store their weights N x K.
// EXPECT: in
#mk = affine_map<(d0, d1, d2) -> (d0, d2)>
#nk = affine_map<(d0, d1, d2) -> (d1, d2)>
#mn = affine_map<(d0, d1, d2) -> (d0, d1)>
#lhs = #iree_encoding.encoding<operand_index = 0 : index, op_type = matmul, element_types = [f32, f32, f32], user_indexing_maps = [#mk, #nk, #mn], iteration_sizes = [8, 16, 32]>
#rhs = #iree_encoding.encoding<operand_index = 1 : index, op_type = matmul, element_types = [f32, f32, f32], user_indexing_maps = [#mk, #nk, #mn], iteration_sizes = [8, 16, 32]>
#acc = #iree_encoding.encoding<operand_index = 2 : index, op_type = matmul, element_types = [f32, f32, f32], user_indexing_maps = [#mk, #nk, #mn], iteration_sizes = [8, 16, 32]>
util.func public @hoist_transposed_rhs_matmul(%x: tensor<8x32xf32>, %w: tensor<16x32xf32>) -> tensor<8x16xf32> {
  %r = flow.dispatch.region -> (tensor<8x16xf32>) {
    %xe = iree_encoding.set_encoding %x : tensor<8x32xf32> -> tensor<8x32xf32, #lhs>
    %we = iree_encoding.set_encoding %w : tensor<16x32xf32> -> tensor<16x32xf32, #rhs>
    %cst = arith.constant 0.0 : f32
    %init = tensor.empty() : tensor<8x16xf32, #acc>
    %acc0 = linalg.fill ins(%cst : f32) outs(%init : tensor<8x16xf32, #acc>) -> tensor<8x16xf32, #acc>
    %mm = linalg.matmul indexing_maps = [#mk, #nk, #mn] ins(%xe, %we : tensor<8x32xf32, #lhs>, tensor<16x32xf32, #rhs>) outs(%acc0 : tensor<8x16xf32, #acc>) -> tensor<8x16xf32, #acc>
    %out = iree_encoding.unset_encoding %mm : tensor<8x16xf32, #acc> -> tensor<8x16xf32>
    flow.return %out : tensor<8x16xf32>
  }
  util.return %r : tensor<8x16xf32>
}

// -----

// A matmul accumulating into a function argument: the set_encoding of the accumulator
// (operand_index 2) is hoisted too, like those of the two inputs, and the dispatch keeps only the
// matmul and the unset.
// Source: HoistEncodingOps.cpp, HoistEncodingOpsPass::runOnOperation (every set_encoding of a
// dispatch is a candidate).
// Matters: a residual added into the GEMM output is encoded once, outside the compute dispatch.
// EXPECT: in
#mk = affine_map<(d0, d1, d2) -> (d0, d2)>
#kn = affine_map<(d0, d1, d2) -> (d2, d1)>
#mn = affine_map<(d0, d1, d2) -> (d0, d1)>
#lhs = #iree_encoding.encoding<operand_index = 0 : index, op_type = matmul, element_types = [f32, f32, f32], user_indexing_maps = [#mk, #kn, #mn], iteration_sizes = [8, 16, 32]>
#rhs = #iree_encoding.encoding<operand_index = 1 : index, op_type = matmul, element_types = [f32, f32, f32], user_indexing_maps = [#mk, #kn, #mn], iteration_sizes = [8, 16, 32]>
#acc = #iree_encoding.encoding<operand_index = 2 : index, op_type = matmul, element_types = [f32, f32, f32], user_indexing_maps = [#mk, #kn, #mn], iteration_sizes = [8, 16, 32]>
util.func public @hoist_accumulator_encoding(%x: tensor<8x32xf32>, %w: tensor<32x16xf32>, %c: tensor<8x16xf32>) -> tensor<8x16xf32> {
  %r = flow.dispatch.region -> (tensor<8x16xf32>) {
    %xe = iree_encoding.set_encoding %x : tensor<8x32xf32> -> tensor<8x32xf32, #lhs>
    %we = iree_encoding.set_encoding %w : tensor<32x16xf32> -> tensor<32x16xf32, #rhs>
    %ce = iree_encoding.set_encoding %c : tensor<8x16xf32> -> tensor<8x16xf32, #acc>
    %mm = linalg.matmul ins(%xe, %we : tensor<8x32xf32, #lhs>, tensor<32x16xf32, #rhs>) outs(%ce : tensor<8x16xf32, #acc>) -> tensor<8x16xf32, #acc>
    %out = iree_encoding.unset_encoding %mm : tensor<8x16xf32, #acc> -> tensor<8x16xf32>
    flow.return %out : tensor<8x16xf32>
  }
  util.return %r : tensor<8x16xf32>
}

// -----

// One argument used as both LHS and RHS (x @ x) gets two different set_encodings, and both are
// hoisted (they have different encodings, so cse keeps both).
// Source: HoistEncodingOps.cpp, HoistEncodingOpsPass::runOnOperation.
// Matters: one tensor may need two packed layouts.
// EXPECT: in
#mk = affine_map<(d0, d1, d2) -> (d0, d2)>
#kn = affine_map<(d0, d1, d2) -> (d2, d1)>
#mn = affine_map<(d0, d1, d2) -> (d0, d1)>
#lhs = #iree_encoding.encoding<operand_index = 0 : index, op_type = matmul, element_types = [f32, f32, f32], user_indexing_maps = [#mk, #kn, #mn], iteration_sizes = [16, 16, 16]>
#rhs = #iree_encoding.encoding<operand_index = 1 : index, op_type = matmul, element_types = [f32, f32, f32], user_indexing_maps = [#mk, #kn, #mn], iteration_sizes = [16, 16, 16]>
#acc = #iree_encoding.encoding<operand_index = 2 : index, op_type = matmul, element_types = [f32, f32, f32], user_indexing_maps = [#mk, #kn, #mn], iteration_sizes = [16, 16, 16]>
util.func public @hoist_square_of_one_argument(%x: tensor<16x16xf32>) -> tensor<16x16xf32> {
  %r = flow.dispatch.region -> (tensor<16x16xf32>) {
    %xl = iree_encoding.set_encoding %x : tensor<16x16xf32> -> tensor<16x16xf32, #lhs>
    %xr = iree_encoding.set_encoding %x : tensor<16x16xf32> -> tensor<16x16xf32, #rhs>
    %cst = arith.constant 0.0 : f32
    %init = tensor.empty() : tensor<16x16xf32, #acc>
    %acc0 = linalg.fill ins(%cst : f32) outs(%init : tensor<16x16xf32, #acc>) -> tensor<16x16xf32, #acc>
    %mm = linalg.matmul ins(%xl, %xr : tensor<16x16xf32, #lhs>, tensor<16x16xf32, #rhs>) outs(%acc0 : tensor<16x16xf32, #acc>) -> tensor<16x16xf32, #acc>
    %out = iree_encoding.unset_encoding %mm : tensor<16x16xf32, #acc> -> tensor<16x16xf32>
    flow.return %out : tensor<16x16xf32>
  }
  util.return %r : tensor<16x16xf32>
}

// -----

// Two dispatches encode the same weight with the same encoding: each set_encoding is hoisted, and
// the cse that follows the pass in the pipeline merges the two hoisted copies into one.
// Source: HoistEncodingOps.cpp, HoistEncodingOpsPass::runOnOperation, then cse.
// Matters: a shared weight is packed once.
// EXPECT: in
#mk = affine_map<(d0, d1, d2) -> (d0, d2)>
#kn = affine_map<(d0, d1, d2) -> (d2, d1)>
#mn = affine_map<(d0, d1, d2) -> (d0, d1)>
#lhs = #iree_encoding.encoding<operand_index = 0 : index, op_type = matmul, element_types = [f32, f32, f32], user_indexing_maps = [#mk, #kn, #mn], iteration_sizes = [8, 16, 16]>
#rhs = #iree_encoding.encoding<operand_index = 1 : index, op_type = matmul, element_types = [f32, f32, f32], user_indexing_maps = [#mk, #kn, #mn], iteration_sizes = [8, 16, 16]>
#acc = #iree_encoding.encoding<operand_index = 2 : index, op_type = matmul, element_types = [f32, f32, f32], user_indexing_maps = [#mk, #kn, #mn], iteration_sizes = [8, 16, 16]>
util.func public @hoist_shared_weight_in_two_dispatches(%x: tensor<8x16xf32>, %y: tensor<8x16xf32>, %w: tensor<16x16xf32>) -> (tensor<8x16xf32>, tensor<8x16xf32>) {
  %cst = arith.constant 0.0 : f32
  %r0 = flow.dispatch.region -> (tensor<8x16xf32>) {
    %xe = iree_encoding.set_encoding %x : tensor<8x16xf32> -> tensor<8x16xf32, #lhs>
    %we = iree_encoding.set_encoding %w : tensor<16x16xf32> -> tensor<16x16xf32, #rhs>
    %init = tensor.empty() : tensor<8x16xf32, #acc>
    %acc0 = linalg.fill ins(%cst : f32) outs(%init : tensor<8x16xf32, #acc>) -> tensor<8x16xf32, #acc>
    %mm = linalg.matmul ins(%xe, %we : tensor<8x16xf32, #lhs>, tensor<16x16xf32, #rhs>) outs(%acc0 : tensor<8x16xf32, #acc>) -> tensor<8x16xf32, #acc>
    %out = iree_encoding.unset_encoding %mm : tensor<8x16xf32, #acc> -> tensor<8x16xf32>
    flow.return %out : tensor<8x16xf32>
  }
  %r1 = flow.dispatch.region -> (tensor<8x16xf32>) {
    %ye = iree_encoding.set_encoding %y : tensor<8x16xf32> -> tensor<8x16xf32, #lhs>
    %we = iree_encoding.set_encoding %w : tensor<16x16xf32> -> tensor<16x16xf32, #rhs>
    %init = tensor.empty() : tensor<8x16xf32, #acc>
    %acc0 = linalg.fill ins(%cst : f32) outs(%init : tensor<8x16xf32, #acc>) -> tensor<8x16xf32, #acc>
    %mm = linalg.matmul ins(%ye, %we : tensor<8x16xf32, #lhs>, tensor<16x16xf32, #rhs>) outs(%acc0 : tensor<8x16xf32, #acc>) -> tensor<8x16xf32, #acc>
    %out = iree_encoding.unset_encoding %mm : tensor<8x16xf32, #acc> -> tensor<8x16xf32>
    flow.return %out : tensor<8x16xf32>
  }
  util.return %r0, %r1 : tensor<8x16xf32>, tensor<8x16xf32>
}
