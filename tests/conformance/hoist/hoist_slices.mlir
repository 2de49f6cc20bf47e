// A set_encoding of a static row slice (full trailing dims, unit strides) of an argument is hoisted
// together with the tensor.extract_slice.
// Source: HoistEncodingOps.cpp, isHoistableOp (extract_slice that
// isOffsetSizeAndStrideStructurallyMappableToFlow).
// Matters: a slice of whole rows is one contiguous range, a flow.tensor.slice outside the dispatch.
// EXPECT: in
#mk = affine_map<(d0, d1, d2) -> (d0, d2)>
#kn = affine_map<(d0, d1, d2) -> (d2, d1)>
#mn = affine_map<(d0, d1, d2) -> (d0, d1)>
#lhs = #iree_encoding.encoding<operand_index = 0 : index, op_type = matmul, element_types = [f32, f32, f32], user_indexing_maps = [#mk, #kn, #mn], iteration_sizes = [8, 16, 32]>
#rhs = #iree_encoding.encoding<operand_index = 1 : index, op_type = matmul, element_types = [f32, f32, f32], user_indexing_maps = [#mk, #kn, #mn], iteration_sizes = [8, 16, 32]>
#acc = #iree_encoding.encoding<operand_index = 2 : index, op_type = matmul, element_types = [f32, f32, f32], user_indexing_maps = [#mk, #kn, #mn], iteration_sizes = [8, 16, 32]>
util.func public @hoist_row_slice(%x: tensor<24x32xf32>, %w: tensor<32x16xf32>) -> tensor<8x16xf32> {
  %r = flow.dispatch.region -> (tensor<8x16xf32>) {
    %xs = tensor.extract_slice %x[8, 0] [8, 32] [1, 1] : tensor<24x32xf32> to tensor<8x32xf32>
    %xe = iree_encoding.set_encoding %xs : tensor<8x32xf32> -> tensor<8x32xf32, #lhs>
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

// A column slice (offset and size on the innermost dim of a 2-D tensor) is not one contiguous
// range: its set_encoding and the slice stay in the dispatch; the other operand's set_encoding is
// still hoisted.
// Source: HoistEncodingOps.cpp, isHoistableOp (not structurally mappable to flow).
// Matters: hoisting is per set_encoding.
// EXPECT: in
#mk = affine_map<(d0, d1, d2) -> (d0, d2)>
#kn = affine_map<(d0, d1, d2) -> (d2, d1)>
#mn = affine_map<(d0, d1, d2) -> (d0, d1)>
#lhs = #iree_encoding.encoding<operand_index = 0 : index, op_type = matmul, element_types = [f32, f32, f32], user_indexing_maps = [#mk, #kn, #mn], iteration_sizes = [8, 16, 32]>
#rhs = #iree_encoding.encoding<operand_index = 1 : index, op_type = matmul, element_types = [f32, f32, f32], user_indexing_maps = [#mk, #kn, #mn], iteration_sizes = [8, 16, 32]>
#acc = #iree_encoding.encoding<operand_index = 2 : index, op_type = matmul, element_types = [f32, f32, f32], user_indexing_maps = [#mk, #kn, #mn], iteration_sizes = [8, 16, 32]>
util.func public @keep_column_slice_in_dispatch(%x: tensor<8x32xf32>, %w: tensor<32x48xf32>) -> tensor<8x16xf32> {
  %r = flow.dispatch.region -> (tensor<8x16xf32>) {
    %xe = iree_encoding.set_encoding %x : tensor<8x32xf32> -> tensor<8x32xf32, #lhs>
    %ws = tensor.extract_slice %w[0, 16] [32, 16] [1, 1] : tensor<32x48xf32> to tensor<32x16xf32>
    %we = iree_encoding.set_encoding %ws : tensor<32x16xf32> -> tensor<32x16xf32, #rhs>
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

// A rank-reducing slice taking one whole plane of a 3-D stack of weights ([2, 0, 0] [1, 32, 16]) is
// contiguous and is hoisted with its set_encoding.
// Source: HoistEncodingOps.cpp, isHoistableOp.
// Matters: stacked (e.g. per-expert or per-layer) weights are sliced so.
// EXPECT: in
#mk = affine_map<(d0, d1, d2) -> (d0, d2)>
#kn = affine_map<(d0, d1, d2) -> (d2, d1)>
#mn = affine_map<(d0, d1, d2) -> (d0, d1)>
#lhs = #iree_encoding.encoding<operand_index = 0 : index, op_type = matmul, element_types = [f32, f32, f32], user_indexing_maps = [#mk, #kn, #mn], iteration_sizes = [8, 16, 32]>
#rhs = #iree_encoding.encoding<operand_index = 1 : index, op_type = matmul, element_types = [f32, f32, f32], user_indexing_maps = [#mk, #kn, #mn], iteration_sizes = [8, 16, 32]>
#acc = #iree_encoding.encoding<operand_index = 2 : index, op_type = matmul, element_types = [f32, f32, f32], user_indexing_maps = [#mk, #kn, #mn], iteration_sizes = [8, 16, 32]>
util.func public @hoist_rank_reducing_plane_slice(%x: tensor<8x32xf32>, %ws: tensor<3x32x16xf32>) -> tensor<8x16xf32> {
  %r = flow.dispatch.region -> (tensor<8x16xf32>) {
    %xe = iree_encoding.set_encoding %x : tensor<8x32xf32> -> tensor<8x32xf32, #lhs>
    %w = tensor.extract_slice %ws[2, 0, 0] [1, 32, 16] [1, 1, 1] : tensor<3x32x16xf32> to tensor<32x16xf32>
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

// A slice with a non-unit stride (every other row) is not mappable to flow: set_encoding and slice
// stay in the dispatch.
// Source: HoistEncodingOps.cpp, isHoistableOp (strides must be 1).
// Matters: a strided read is not a flow.tensor.slice.
// EXPECT: in
#mk = affine_map<(d0, d1, d2) -> (d0, d2)>
#kn = affine_map<(d0, d1, d2) -> (d2, d1)>
#mn = affine_map<(d0, d1, d2) -> (d0, d1)>
#lhs = #iree_encoding.encoding<operand_index = 0 : index, op_type = matmul, element_types = [f32, f32, f32], user_indexing_maps = [#mk, #kn, #mn], iteration_sizes = [8, 16, 32]>
#rhs = #iree_encoding.encoding<operand_index = 1 : index, op_type = matmul, element_types = [f32, f32, f32], user_indexing_maps = [#mk, #kn, #mn], iteration_sizes = [8, 16, 32]>
#acc = #iree_encoding.encoding<operand_index = 2 : index, op_type = matmul, element_types = [f32, f32, f32], user_indexing_maps = [#mk, #kn, #mn], iteration_sizes = [8, 16, 32]>
util.func public @keep_strided_slice_in_dispatch(%x: tensor<16x32xf32>, %w: tensor<32x16xf32>) -> tensor<8x16xf32> {
  %r = flow.dispatch.region -> (tensor<8x16xf32>) {
    %xs = tensor.extract_slice %x[0, 0] [8, 32] [2, 1] : tensor<16x32xf32> to tensor<8x32xf32>
    %xe = iree_encoding.set_encoding %xs : tensor<8x32xf32> -> tensor<8x32xf32, #lhs>
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

// A row slice whose dynamic offset is a function argument (defined outside the dispatch) is
// hoisted.
// Source: HoistEncodingOps.cpp, isHoistableOp and the walk over in-dispatch producers (values from
// outside never block).
// Matters: a dynamic offset, e.g. a KV-cache position, does not prevent packing outside.
// EXPECT: in
#mk = affine_map<(d0, d1, d2) -> (d0, d2)>
#kn = affine_map<(d0, d1, d2) -> (d2, d1)>
#mn = affine_map<(d0, d1, d2) -> (d0, d1)>
#lhs = #iree_encoding.encoding<operand_index = 0 : index, op_type = matmul, element_types = [f32, f32, f32], user_indexing_maps = [#mk, #kn, #mn], iteration_sizes = [8, 16, 32]>
#rhs = #iree_encoding.encoding<operand_index = 1 : index, op_type = matmul, element_types = [f32, f32, f32], user_indexing_maps = [#mk, #kn, #mn], iteration_sizes = [8, 16, 32]>
#acc = #iree_encoding.encoding<operand_index = 2 : index, op_type = matmul, element_types = [f32, f32, f32], user_indexing_maps = [#mk, #kn, #mn], iteration_sizes = [8, 16, 32]>
util.func public @hoist_slice_at_argument_offset(%x: tensor<32x32xf32>, %w: tensor<32x16xf32>, %row: index) -> tensor<8x16xf32> {
  %r = flow.dispatch.region -> (tensor<8x16xf32>) {
    %xs = tensor.extract_slice %x[%row, 0] [8, 32] [1, 1] : tensor<32x32xf32> to tensor<8x32xf32>
    %xe = iree_encoding.set_encoding %xs : tensor<8x32xf32> -> tensor<8x32xf32, #lhs>
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

// The same slice, but its offset is computed inside the dispatch by an arith.muli: the muli is not
// a hoistable op, so the slice and its set_encoding stay.
// Source: HoistEncodingOps.cpp, HoistEncodingOpsPass::runOnOperation (every in-dispatch producer
// must be isHoistableOp).
// Matters: scalar index math inside a dispatch pins the slice there.
// EXPECT: in
#mk = affine_map<(d0, d1, d2) -> (d0, d2)>
#kn = affine_map<(d0, d1, d2) -> (d2, d1)>
#mn = affine_map<(d0, d1, d2) -> (d0, d1)>
#lhs = #iree_encoding.encoding<operand_index = 0 : index, op_type = matmul, element_types = [f32, f32, f32], user_indexing_maps = [#mk, #kn, #mn], iteration_sizes = [8, 16, 32]>
#rhs = #iree_encoding.encoding<operand_index = 1 : index, op_type = matmul, element_types = [f32, f32, f32], user_indexing_maps = [#mk, #kn, #mn], iteration_sizes = [8, 16, 32]>
#acc = #iree_encoding.encoding<operand_index = 2 : index, op_type = matmul, element_types = [f32, f32, f32], user_indexing_maps = [#mk, #kn, #mn], iteration_sizes = [8, 16, 32]>
util.func public @keep_slice_at_offset_computed_in_dispatch(%x: tensor<32x32xf32>, %w: tensor<32x16xf32>, %blk: index) -> tensor<8x16xf32> {
  %r = flow.dispatch.region -> (tensor<8x16xf32>) {
    %c8 = arith.constant 8 : index
    %row = arith.muli %blk, %c8 : index
    %xs = tensor.extract_slice %x[%row, 0] [8, 32] [1, 1] : tensor<32x32xf32> to tensor<8x32xf32>
    %xe = iree_encoding.set_encoding %xs : tensor<8x32xf32> -> tensor<8x32xf32, #lhs>
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

// A slice whose offset is an arith.constant defined inside the dispatch is hoisted with the
// constant (ConstantLike producers are hoistable).
// Source: HoistEncodingOps.cpp, isHoistableOp (OpTrait::ConstantLike).
// Matters: offsets materialized as SSA constants.
// EXPECT: in
#mk = affine_map<(d0, d1, d2) -> (d0, d2)>
#kn = affine_map<(d0, d1, d2) -> (d2, d1)>
#mn = affine_map<(d0, d1, d2) -> (d0, d1)>
#lhs = #iree_encoding.encoding<operand_index = 0 : index, op_type = matmul, element_types = [f32, f32, f32], user_indexing_maps = [#mk, #kn, #mn], iteration_sizes = [8, 16, 32]>
#rhs = #iree_encoding.encoding<operand_index = 1 : index, op_type = matmul, element_types = [f32, f32, f32], user_indexing_maps = [#mk, #kn, #mn], iteration_sizes = [8, 16, 32]>
#acc = #iree_encoding.encoding<operand_index = 2 : index, op_type = matmul, element_types = [f32, f32, f32], user_indexing_maps = [#mk, #kn, #mn], iteration_sizes = [8, 16, 32]>
util.func public @hoist_slice_at_constant_offset(%x: tensor<32x32xf32>, %w: tensor<32x16xf32>) -> tensor<8x16xf32> {
  %r = flow.dispatch.region -> (tensor<8x16xf32>) {
    %row = arith.constant 16 : index
    %xs = tensor.extract_slice %x[%row, 0] [8, 32] [1, 1] : tensor<32x32xf32> to tensor<8x32xf32>
    %xe = iree_encoding.set_encoding %xs : tensor<8x32xf32> -> tensor<8x32xf32, #lhs>
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

// A chain of two slices (a plane of a 3-D tensor, then rows of that plane), both contiguous: the
// whole chain is hoisted with the set_encoding.
// Source: HoistEncodingOps.cpp, HoistEncodingOpsPass::runOnOperation (the worklist walks every
// in-dispatch producer).
// Matters: chained slices appear after slice folding is incomplete.
// EXPECT: missing no e-node Dispatch(SetEncoding(Slice, encoding(operand 0)))
#mk = affine_map<(d0, d1, d2) -> (d0, d2)>
#kn = affine_map<(d0, d1, d2) -> (d2, d1)>
#mn = affine_map<(d0, d1, d2) -> (d0, d1)>
#lhs = #iree_encoding.encoding<operand_index = 0 : index, op_type = matmul, element_types = [f32, f32, f32], user_indexing_maps = [#mk, #kn, #mn], iteration_sizes = [8, 16, 32]>
#rhs = #iree_encoding.encoding<operand_index = 1 : index, op_type = matmul, element_types = [f32, f32, f32], user_indexing_maps = [#mk, #kn, #mn], iteration_sizes = [8, 16, 32]>
#acc = #iree_encoding.encoding<operand_index = 2 : index, op_type = matmul, element_types = [f32, f32, f32], user_indexing_maps = [#mk, #kn, #mn], iteration_sizes = [8, 16, 32]>
util.func public @hoist_slice_of_slice(%x: tensor<4x16x32xf32>, %w: tensor<32x16xf32>) -> tensor<8x16xf32> {
  %r = flow.dispatch.region -> (tensor<8x16xf32>) {
    %plane = tensor.extract_slice %x[1, 0, 0] [1, 16, 32] [1, 1, 1] : tensor<4x16x32xf32> to tensor<16x32xf32>
    %xs = tensor.extract_slice %plane[8, 0] [8, 32] [1, 1] : tensor<16x32xf32> to tensor<8x32xf32>
    %xe = iree_encoding.set_encoding %xs : tensor<8x32xf32> -> tensor<8x32xf32, #lhs>
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

// A 3-D slice taking rows 2..5 of both batches ([0, 2, 0] [2, 4, 32]) is two ranges, not one: the
// batch_matmul LHS set_encoding stays in the dispatch with its slice; the RHS one is hoisted.
// Source: HoistEncodingOps.cpp, isHoistableOp (a partial inner dim under a non-unit outer one is
// not mappable).
// EXPECT: in
#bmk = affine_map<(b, m, n, k) -> (b, m, k)>
#bkn = affine_map<(b, m, n, k) -> (b, k, n)>
#bmn = affine_map<(b, m, n, k) -> (b, m, n)>
#lhs = #iree_encoding.encoding<operand_index = 0 : index, op_type = matmul, element_types = [f32, f32, f32], user_indexing_maps = [#bmk, #bkn, #bmn], iteration_sizes = [2, 4, 16, 32]>
#rhs = #iree_encoding.encoding<operand_index = 1 : index, op_type = matmul, element_types = [f32, f32, f32], user_indexing_maps = [#bmk, #bkn, #bmn], iteration_sizes = [2, 4, 16, 32]>
#acc = #iree_encoding.encoding<operand_index = 2 : index, op_type = matmul, element_types = [f32, f32, f32], user_indexing_maps = [#bmk, #bkn, #bmn], iteration_sizes = [2, 4, 16, 32]>
util.func public @keep_rows_of_two_batches_in_dispatch(%x: tensor<2x8x32xf32>, %w: tensor<2x32x16xf32>) -> tensor<2x4x16xf32> {
  %r = flow.dispatch.region -> (tensor<2x4x16xf32>) {
    %xs = tensor.extract_slice %x[0, 2, 0] [2, 4, 32] [1, 1, 1] : tensor<2x8x32xf32> to tensor<2x4x32xf32>
    %xe = iree_encoding.set_encoding %xs : tensor<2x4x32xf32> -> tensor<2x4x32xf32, #lhs>
    %we = iree_encoding.set_encoding %w : tensor<2x32x16xf32> -> tensor<2x32x16xf32, #rhs>
    %cst = arith.constant 0.0 : f32
    %init = tensor.empty() : tensor<2x4x16xf32, #acc>
    %acc0 = linalg.fill ins(%cst : f32) outs(%init : tensor<2x4x16xf32, #acc>) -> tensor<2x4x16xf32, #acc>
    %mm = linalg.batch_matmul ins(%xe, %we : tensor<2x4x32xf32, #lhs>, tensor<2x32x16xf32, #rhs>) outs(%acc0 : tensor<2x4x16xf32, #acc>) -> tensor<2x4x16xf32, #acc>
    %out = iree_encoding.unset_encoding %mm : tensor<2x4x16xf32, #acc> -> tensor<2x4x16xf32>
    flow.return %out : tensor<2x4x16xf32>
  }
  util.return %r : tensor<2x4x16xf32>
}
