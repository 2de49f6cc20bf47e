// An unset_encoding of the matmul result followed by a relu generic in the same dispatch: the
// unset_encoding sinks below the relu, which then runs on the encoded tensor.
// Source: HoistEncodingOps.cpp, SinkUnsetEncodingOp
// (EncodingPropagationAttrInterface::isPropagableDown).
// Matters: the epilogue runs on packed tiles and fuses with the matmul.
// EXPECT: in
#mk = affine_map<(d0, d1, d2) -> (d0, d2)>
#kn = affine_map<(d0, d1, d2) -> (d2, d1)>
#mn = affine_map<(d0, d1, d2) -> (d0, d1)>
#id = affine_map<(d0, d1) -> (d0, d1)>
#lhs = #iree_encoding.encoding<operand_index = 0 : index, op_type = matmul, element_types = [f32, f32, f32], user_indexing_maps = [#mk, #kn, #mn], iteration_sizes = [8, 16, 32]>
#rhs = #iree_encoding.encoding<operand_index = 1 : index, op_type = matmul, element_types = [f32, f32, f32], user_indexing_maps = [#mk, #kn, #mn], iteration_sizes = [8, 16, 32]>
#acc = #iree_encoding.encoding<operand_index = 2 : index, op_type = matmul, element_types = [f32, f32, f32], user_indexing_maps = [#mk, #kn, #mn], iteration_sizes = [8, 16, 32]>
util.func public @sink_unset_through_relu(%x: tensor<8x32xf32>, %w: tensor<32x16xf32>) -> tensor<8x16xf32> {
  %r = flow.dispatch.region -> (tensor<8x16xf32>) {
    %xe = iree_encoding.set_encoding %x : tensor<8x32xf32> -> tensor<8x32xf32, #lhs>
    %we = iree_encoding.set_encoding %w : tensor<32x16xf32> -> tensor<32x16xf32, #rhs>
    %zero = arith.constant 0.0 : f32
    %init = tensor.empty() : tensor<8x16xf32, #acc>
    %acc0 = linalg.fill ins(%zero : f32) outs(%init : tensor<8x16xf32, #acc>) -> tensor<8x16xf32, #acc>
    %mm = linalg.matmul ins(%xe, %we : tensor<8x32xf32, #lhs>, tensor<32x16xf32, #rhs>) outs(%acc0 : tensor<8x16xf32, #acc>) -> tensor<8x16xf32, #acc>
    %y = iree_encoding.unset_encoding %mm : tensor<8x16xf32, #acc> -> tensor<8x16xf32>
    %e = tensor.empty() : tensor<8x16xf32>
    %relu = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]} ins(%y : tensor<8x16xf32>) outs(%e : tensor<8x16xf32>) {
    ^bb0(%a: f32, %o: f32):
      %c0 = arith.constant 0.000000e+00 : f32
      %m = arith.maximumf %a, %c0 : f32
      linalg.yield %m : f32
    } -> tensor<8x16xf32>
    flow.return %relu : tensor<8x16xf32>
  }
  util.return %r : tensor<8x16xf32>
}

// -----

// Sinking through a bias add: the bias (a 1-D argument) gets a new set_encoding inside the
// dispatch, which the hoisting phase then moves out of it.
// Source: HoistEncodingOps.cpp, SinkUnsetEncodingOp, then the hoisting walk.
// Matters: the standard GEMM + bias layer.
// EXPECT: in
#mk = affine_map<(d0, d1, d2) -> (d0, d2)>
#kn = affine_map<(d0, d1, d2) -> (d2, d1)>
#mn = affine_map<(d0, d1, d2) -> (d0, d1)>
#id = affine_map<(d0, d1) -> (d0, d1)>
#lhs = #iree_encoding.encoding<operand_index = 0 : index, op_type = matmul, element_types = [f32, f32, f32], user_indexing_maps = [#mk, #kn, #mn], iteration_sizes = [8, 16, 32]>
#rhs = #iree_encoding.encoding<operand_index = 1 : index, op_type = matmul, element_types = [f32, f32, f32], user_indexing_maps = [#mk, #kn, #mn], iteration_sizes = [8, 16, 32]>
#acc = #iree_encoding.encoding<operand_index = 2 : index, op_type = matmul, element_types = [f32, f32, f32], user_indexing_maps = [#mk, #kn, #mn], iteration_sizes = [8, 16, 32]>
#col = affine_map<(d0, d1) -> (d1)>
util.func public @sink_unset_through_bias_add(%x: tensor<8x32xf32>, %w: tensor<32x16xf32>, %bias: tensor<16xf32>) -> tensor<8x16xf32> {
  %r = flow.dispatch.region -> (tensor<8x16xf32>) {
    %xe = iree_encoding.set_encoding %x : tensor<8x32xf32> -> tensor<8x32xf32, #lhs>
    %we = iree_encoding.set_encoding %w : tensor<32x16xf32> -> tensor<32x16xf32, #rhs>
    %zero = arith.constant 0.0 : f32
    %init = tensor.empty() : tensor<8x16xf32, #acc>
    %acc0 = linalg.fill ins(%zero : f32) outs(%init : tensor<8x16xf32, #acc>) -> tensor<8x16xf32, #acc>
    %mm = linalg.matmul ins(%xe, %we : tensor<8x32xf32, #lhs>, tensor<32x16xf32, #rhs>) outs(%acc0 : tensor<8x16xf32, #acc>) -> tensor<8x16xf32, #acc>
    %y = iree_encoding.unset_encoding %mm : tensor<8x16xf32, #acc> -> tensor<8x16xf32>
    %e = tensor.empty() : tensor<8x16xf32>
    %b = linalg.generic {indexing_maps = [#id, #col, #id], iterator_types = ["parallel", "parallel"]} ins(%y, %bias : tensor<8x16xf32>, tensor<16xf32>) outs(%e : tensor<8x16xf32>) {
    ^bb0(%a: f32, %c: f32, %o: f32):
      %s = arith.addf %a, %c : f32
      linalg.yield %s : f32
    } -> tensor<8x16xf32>
    flow.return %b : tensor<8x16xf32>
  }
  util.return %r : tensor<8x16xf32>
}

// -----

// Sinking through an f32 -> f16 truncf epilogue: the generic produces an encoded f16 tensor and the
// unset_encoding moves after it.
// Source: HoistEncodingOps.cpp, SinkUnsetEncodingOp.
// Matters: the unpack then moves half the bytes.
// EXPECT: in
#mk = affine_map<(d0, d1, d2) -> (d0, d2)>
#kn = affine_map<(d0, d1, d2) -> (d2, d1)>
#mn = affine_map<(d0, d1, d2) -> (d0, d1)>
#id = affine_map<(d0, d1) -> (d0, d1)>
#lhs = #iree_encoding.encoding<operand_index = 0 : index, op_type = matmul, element_types = [f32, f32, f32], user_indexing_maps = [#mk, #kn, #mn], iteration_sizes = [8, 16, 32]>
#rhs = #iree_encoding.encoding<operand_index = 1 : index, op_type = matmul, element_types = [f32, f32, f32], user_indexing_maps = [#mk, #kn, #mn], iteration_sizes = [8, 16, 32]>
#acc = #iree_encoding.encoding<operand_index = 2 : index, op_type = matmul, element_types = [f32, f32, f32], user_indexing_maps = [#mk, #kn, #mn], iteration_sizes = [8, 16, 32]>
util.func public @sink_unset_through_narrowing(%x: tensor<8x32xf32>, %w: tensor<32x16xf32>) -> tensor<8x16xf16> {
  %r = flow.dispatch.region -> (tensor<8x16xf16>) {
    %xe = iree_encoding.set_encoding %x : tensor<8x32xf32> -> tensor<8x32xf32, #lhs>
    %we = iree_encoding.set_encoding %w : tensor<32x16xf32> -> tensor<32x16xf32, #rhs>
    %zero = arith.constant 0.0 : f32
    %init = tensor.empty() : tensor<8x16xf32, #acc>
    %acc0 = linalg.fill ins(%zero : f32) outs(%init : tensor<8x16xf32, #acc>) -> tensor<8x16xf32, #acc>
    %mm = linalg.matmul ins(%xe, %we : tensor<8x32xf32, #lhs>, tensor<32x16xf32, #rhs>) outs(%acc0 : tensor<8x16xf32, #acc>) -> tensor<8x16xf32, #acc>
    %y = iree_encoding.unset_encoding %mm : tensor<8x16xf32, #acc> -> tensor<8x16xf32>
    %e = tensor.empty() : tensor<8x16xf16>
    %t = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]} ins(%y : tensor<8x16xf32>) outs(%e : tensor<8x16xf16>) {
    ^bb0(%a: f32, %o: f16):
      %h = arith.truncf %a : f32 to f16
      linalg.yield %h : f16
    } -> tensor<8x16xf16>
    flow.return %t : tensor<8x16xf16>
  }
  util.return %r : tensor<8x16xf16>
}

// -----

// Sinking through a transposing elementwise consumer (input map (d1, d0)): the result's encoding
// carries the permuted map.
// Source: HoistEncodingOps.cpp, SinkUnsetEncodingOp (generateSinkingEncodings with a permutation
// map; rules/sink_unset.egg condition 4).
// EXPECT: in
#mk = affine_map<(d0, d1, d2) -> (d0, d2)>
#kn = affine_map<(d0, d1, d2) -> (d2, d1)>
#mn = affine_map<(d0, d1, d2) -> (d0, d1)>
#id = affine_map<(d0, d1) -> (d0, d1)>
#lhs = #iree_encoding.encoding<operand_index = 0 : index, op_type = matmul, element_types = [f32, f32, f32], user_indexing_maps = [#mk, #kn, #mn], iteration_sizes = [8, 16, 32]>
#rhs = #iree_encoding.encoding<operand_index = 1 : index, op_type = matmul, element_types = [f32, f32, f32], user_indexing_maps = [#mk, #kn, #mn], iteration_sizes = [8, 16, 32]>
#acc = #iree_encoding.encoding<operand_index = 2 : index, op_type = matmul, element_types = [f32, f32, f32], user_indexing_maps = [#mk, #kn, #mn], iteration_sizes = [8, 16, 32]>
#tr = affine_map<(d0, d1) -> (d1, d0)>
util.func public @sink_unset_through_transpose(%x: tensor<8x32xf32>, %w: tensor<32x16xf32>) -> tensor<16x8xf32> {
  %r = flow.dispatch.region -> (tensor<16x8xf32>) {
    %xe = iree_encoding.set_encoding %x : tensor<8x32xf32> -> tensor<8x32xf32, #lhs>
    %we = iree_encoding.set_encoding %w : tensor<32x16xf32> -> tensor<32x16xf32, #rhs>
    %zero = arith.constant 0.0 : f32
    %init = tensor.empty() : tensor<8x16xf32, #acc>
    %acc0 = linalg.fill ins(%zero : f32) outs(%init : tensor<8x16xf32, #acc>) -> tensor<8x16xf32, #acc>
    %mm = linalg.matmul ins(%xe, %we : tensor<8x32xf32, #lhs>, tensor<32x16xf32, #rhs>) outs(%acc0 : tensor<8x16xf32, #acc>) -> tensor<8x16xf32, #acc>
    %y = iree_encoding.unset_encoding %mm : tensor<8x16xf32, #acc> -> tensor<8x16xf32>
    %e = tensor.empty() : tensor<16x8xf32>
    %t = linalg.generic {indexing_maps = [#tr, #id], iterator_types = ["parallel", "parallel"]} ins(%y : tensor<8x16xf32>) outs(%e : tensor<16x8xf32>) {
    ^bb0(%a: f32, %o: f32):
      %n = arith.negf %a : f32
      linalg.yield %n : f32
    } -> tensor<16x8xf32>
    flow.return %t : tensor<16x8xf32>
  }
  util.return %r : tensor<16x8xf32>
}

// -----

// Sinking through a generic with a rank-0 tensor<f32> scale: the scale gets a set_encoding, which,
// being rank 0, stays in the dispatch.
// Source: HoistEncodingOps.cpp, SinkUnsetEncodingOp, then the rank-0 check of the hoisting walk.
// rules/sink_unset.egg: the rank-0 operand's encoding is on no dims (not a condition).
// EXPECT: in
#mk = affine_map<(d0, d1, d2) -> (d0, d2)>
#kn = affine_map<(d0, d1, d2) -> (d2, d1)>
#mn = affine_map<(d0, d1, d2) -> (d0, d1)>
#id = affine_map<(d0, d1) -> (d0, d1)>
#lhs = #iree_encoding.encoding<operand_index = 0 : index, op_type = matmul, element_types = [f32, f32, f32], user_indexing_maps = [#mk, #kn, #mn], iteration_sizes = [8, 16, 32]>
#rhs = #iree_encoding.encoding<operand_index = 1 : index, op_type = matmul, element_types = [f32, f32, f32], user_indexing_maps = [#mk, #kn, #mn], iteration_sizes = [8, 16, 32]>
#acc = #iree_encoding.encoding<operand_index = 2 : index, op_type = matmul, element_types = [f32, f32, f32], user_indexing_maps = [#mk, #kn, #mn], iteration_sizes = [8, 16, 32]>
#none = affine_map<(d0, d1) -> ()>
util.func public @sink_unset_with_rank0_scale(%x: tensor<8x32xf32>, %w: tensor<32x16xf32>, %s: tensor<f32>) -> tensor<8x16xf32> {
  %r = flow.dispatch.region -> (tensor<8x16xf32>) {
    %xe = iree_encoding.set_encoding %x : tensor<8x32xf32> -> tensor<8x32xf32, #lhs>
    %we = iree_encoding.set_encoding %w : tensor<32x16xf32> -> tensor<32x16xf32, #rhs>
    %zero = arith.constant 0.0 : f32
    %init = tensor.empty() : tensor<8x16xf32, #acc>
    %acc0 = linalg.fill ins(%zero : f32) outs(%init : tensor<8x16xf32, #acc>) -> tensor<8x16xf32, #acc>
    %mm = linalg.matmul ins(%xe, %we : tensor<8x32xf32, #lhs>, tensor<32x16xf32, #rhs>) outs(%acc0 : tensor<8x16xf32, #acc>) -> tensor<8x16xf32, #acc>
    %y = iree_encoding.unset_encoding %mm : tensor<8x16xf32, #acc> -> tensor<8x16xf32>
    %e = tensor.empty() : tensor<8x16xf32>
    %t = linalg.generic {indexing_maps = [#id, #none, #id], iterator_types = ["parallel", "parallel"]} ins(%y, %s : tensor<8x16xf32>, tensor<f32>) outs(%e : tensor<8x16xf32>) {
    ^bb0(%a: f32, %b: f32, %o: f32):
      %m = arith.mulf %a, %b : f32
      linalg.yield %m : f32
    } -> tensor<8x16xf32>
    flow.return %t : tensor<8x16xf32>
  }
  util.return %r : tensor<8x16xf32>
}

// -----

// Sinking through a generic with a plain f32 scalar operand: the scalar needs no encoding at all.
// Source: HoistEncodingOps.cpp, SinkUnsetEncodingOp.
// EXPECT: in
#mk = affine_map<(d0, d1, d2) -> (d0, d2)>
#kn = affine_map<(d0, d1, d2) -> (d2, d1)>
#mn = affine_map<(d0, d1, d2) -> (d0, d1)>
#id = affine_map<(d0, d1) -> (d0, d1)>
#lhs = #iree_encoding.encoding<operand_index = 0 : index, op_type = matmul, element_types = [f32, f32, f32], user_indexing_maps = [#mk, #kn, #mn], iteration_sizes = [8, 16, 32]>
#rhs = #iree_encoding.encoding<operand_index = 1 : index, op_type = matmul, element_types = [f32, f32, f32], user_indexing_maps = [#mk, #kn, #mn], iteration_sizes = [8, 16, 32]>
#acc = #iree_encoding.encoding<operand_index = 2 : index, op_type = matmul, element_types = [f32, f32, f32], user_indexing_maps = [#mk, #kn, #mn], iteration_sizes = [8, 16, 32]>
#none = affine_map<(d0, d1) -> ()>
util.func public @sink_unset_with_scalar_scale(%x: tensor<8x32xf32>, %w: tensor<32x16xf32>, %s: f32) -> tensor<8x16xf32> {
  %r = flow.dispatch.region -> (tensor<8x16xf32>) {
    %xe = iree_encoding.set_encoding %x : tensor<8x32xf32> -> tensor<8x32xf32, #lhs>
    %we = iree_encoding.set_encoding %w : tensor<32x16xf32> -> tensor<32x16xf32, #rhs>
    %zero = arith.constant 0.0 : f32
    %init = tensor.empty() : tensor<8x16xf32, #acc>
    %acc0 = linalg.fill ins(%zero : f32) outs(%init : tensor<8x16xf32, #acc>) -> tensor<8x16xf32, #acc>
    %mm = linalg.matmul ins(%xe, %we : tensor<8x32xf32, #lhs>, tensor<32x16xf32, #rhs>) outs(%acc0 : tensor<8x16xf32, #acc>) -> tensor<8x16xf32, #acc>
    %y = iree_encoding.unset_encoding %mm : tensor<8x16xf32, #acc> -> tensor<8x16xf32>
    %e = tensor.empty() : tensor<8x16xf32>
    %t = linalg.generic {indexing_maps = [#id, #none, #id], iterator_types = ["parallel", "parallel"]} ins(%y, %s : tensor<8x16xf32>, f32) outs(%e : tensor<8x16xf32>) {
    ^bb0(%a: f32, %b: f32, %o: f32):
      %m = arith.mulf %a, %b : f32
      linalg.yield %m : f32
    } -> tensor<8x16xf32>
    flow.return %t : tensor<8x16xf32>
  }
  util.return %r : tensor<8x16xf32>
}

// -----

// The unset_encoding feeds two generics: it has more than one use, so nothing sinks.
// Source: HoistEncodingOps.cpp, SinkUnsetEncodingOp ("has multiple uses").
// EXPECT: in
#mk = affine_map<(d0, d1, d2) -> (d0, d2)>
#kn = affine_map<(d0, d1, d2) -> (d2, d1)>
#mn = affine_map<(d0, d1, d2) -> (d0, d1)>
#id = affine_map<(d0, d1) -> (d0, d1)>
#lhs = #iree_encoding.encoding<operand_index = 0 : index, op_type = matmul, element_types = [f32, f32, f32], user_indexing_maps = [#mk, #kn, #mn], iteration_sizes = [8, 16, 32]>
#rhs = #iree_encoding.encoding<operand_index = 1 : index, op_type = matmul, element_types = [f32, f32, f32], user_indexing_maps = [#mk, #kn, #mn], iteration_sizes = [8, 16, 32]>
#acc = #iree_encoding.encoding<operand_index = 2 : index, op_type = matmul, element_types = [f32, f32, f32], user_indexing_maps = [#mk, #kn, #mn], iteration_sizes = [8, 16, 32]>
util.func public @no_sink_unset_with_two_consumers(%x: tensor<8x32xf32>, %w: tensor<32x16xf32>) -> (tensor<8x16xf32>, tensor<8x16xf32>) {
  %r:2 = flow.dispatch.region -> (tensor<8x16xf32>, tensor<8x16xf32>) {
    %xe = iree_encoding.set_encoding %x : tensor<8x32xf32> -> tensor<8x32xf32, #lhs>
    %we = iree_encoding.set_encoding %w : tensor<32x16xf32> -> tensor<32x16xf32, #rhs>
    %zero = arith.constant 0.0 : f32
    %init = tensor.empty() : tensor<8x16xf32, #acc>
    %acc0 = linalg.fill ins(%zero : f32) outs(%init : tensor<8x16xf32, #acc>) -> tensor<8x16xf32, #acc>
    %mm = linalg.matmul ins(%xe, %we : tensor<8x32xf32, #lhs>, tensor<32x16xf32, #rhs>) outs(%acc0 : tensor<8x16xf32, #acc>) -> tensor<8x16xf32, #acc>
    %y = iree_encoding.unset_encoding %mm : tensor<8x16xf32, #acc> -> tensor<8x16xf32>
    %e = tensor.empty() : tensor<8x16xf32>
    %n = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]} ins(%y : tensor<8x16xf32>) outs(%e : tensor<8x16xf32>) {
    ^bb0(%a: f32, %o: f32):
      %v = arith.negf %a : f32
      linalg.yield %v : f32
    } -> tensor<8x16xf32>
    %q = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]} ins(%y : tensor<8x16xf32>) outs(%e : tensor<8x16xf32>) {
    ^bb0(%a: f32, %o: f32):
      %v = arith.mulf %a, %a : f32
      linalg.yield %v : f32
    } -> tensor<8x16xf32>
    flow.return %n, %q : tensor<8x16xf32>, tensor<8x16xf32>
  }
  util.return %r#0, %r#1 : tensor<8x16xf32>, tensor<8x16xf32>
}

// -----

// The consumer is a row-sum reduction: it is not propagable down, the unset stays before it.
// Source: HoistEncodingOps.cpp, SinkUnsetEncodingOp (isPropagableDown: getNumReductionLoops() != 0
// refuses).
// EXPECT: in
#mk = affine_map<(d0, d1, d2) -> (d0, d2)>
#kn = affine_map<(d0, d1, d2) -> (d2, d1)>
#mn = affine_map<(d0, d1, d2) -> (d0, d1)>
#id = affine_map<(d0, d1) -> (d0, d1)>
#lhs = #iree_encoding.encoding<operand_index = 0 : index, op_type = matmul, element_types = [f32, f32, f32], user_indexing_maps = [#mk, #kn, #mn], iteration_sizes = [8, 16, 32]>
#rhs = #iree_encoding.encoding<operand_index = 1 : index, op_type = matmul, element_types = [f32, f32, f32], user_indexing_maps = [#mk, #kn, #mn], iteration_sizes = [8, 16, 32]>
#acc = #iree_encoding.encoding<operand_index = 2 : index, op_type = matmul, element_types = [f32, f32, f32], user_indexing_maps = [#mk, #kn, #mn], iteration_sizes = [8, 16, 32]>
#row = affine_map<(d0, d1) -> (d0)>
util.func public @no_sink_unset_through_row_sum(%x: tensor<8x32xf32>, %w: tensor<32x16xf32>) -> tensor<8xf32> {
  %r = flow.dispatch.region -> (tensor<8xf32>) {
    %xe = iree_encoding.set_encoding %x : tensor<8x32xf32> -> tensor<8x32xf32, #lhs>
    %we = iree_encoding.set_encoding %w : tensor<32x16xf32> -> tensor<32x16xf32, #rhs>
    %zero = arith.constant 0.0 : f32
    %init = tensor.empty() : tensor<8x16xf32, #acc>
    %acc0 = linalg.fill ins(%zero : f32) outs(%init : tensor<8x16xf32, #acc>) -> tensor<8x16xf32, #acc>
    %mm = linalg.matmul ins(%xe, %we : tensor<8x32xf32, #lhs>, tensor<32x16xf32, #rhs>) outs(%acc0 : tensor<8x16xf32, #acc>) -> tensor<8x16xf32, #acc>
    %y = iree_encoding.unset_encoding %mm : tensor<8x16xf32, #acc> -> tensor<8x16xf32>
    %e = tensor.empty() : tensor<8xf32>
    %z = linalg.fill ins(%zero : f32) outs(%e : tensor<8xf32>) -> tensor<8xf32>
    %s = linalg.generic {indexing_maps = [#id, #row], iterator_types = ["parallel", "reduction"]} ins(%y : tensor<8x16xf32>) outs(%z : tensor<8xf32>) {
    ^bb0(%a: f32, %o: f32):
      %v = arith.addf %o, %a : f32
      linalg.yield %v : f32
    } -> tensor<8xf32>
    flow.return %s : tensor<8xf32>
  }
  util.return %r : tensor<8xf32>
}

// -----

// The unset_encoding ends the dispatch and its consumer is outside: no sinking across the boundary.
// Source: HoistEncodingOps.cpp, SinkUnsetEncodingOp (both ops must be inside a dispatch).
// EXPECT: in
#mk = affine_map<(d0, d1, d2) -> (d0, d2)>
#kn = affine_map<(d0, d1, d2) -> (d2, d1)>
#mn = affine_map<(d0, d1, d2) -> (d0, d1)>
#id = affine_map<(d0, d1) -> (d0, d1)>
#lhs = #iree_encoding.encoding<operand_index = 0 : index, op_type = matmul, element_types = [f32, f32, f32], user_indexing_maps = [#mk, #kn, #mn], iteration_sizes = [8, 16, 32]>
#rhs = #iree_encoding.encoding<operand_index = 1 : index, op_type = matmul, element_types = [f32, f32, f32], user_indexing_maps = [#mk, #kn, #mn], iteration_sizes = [8, 16, 32]>
#acc = #iree_encoding.encoding<operand_index = 2 : index, op_type = matmul, element_types = [f32, f32, f32], user_indexing_maps = [#mk, #kn, #mn], iteration_sizes = [8, 16, 32]>
util.func public @no_sink_unset_into_consumer_outside(%x: tensor<8x32xf32>, %w: tensor<32x16xf32>) -> tensor<8x16xf32> {
  %r = flow.dispatch.region -> (tensor<8x16xf32>) {
    %xe = iree_encoding.set_encoding %x : tensor<8x32xf32> -> tensor<8x32xf32, #lhs>
    %we = iree_encoding.set_encoding %w : tensor<32x16xf32> -> tensor<32x16xf32, #rhs>
    %zero = arith.constant 0.0 : f32
    %init = tensor.empty() : tensor<8x16xf32, #acc>
    %acc0 = linalg.fill ins(%zero : f32) outs(%init : tensor<8x16xf32, #acc>) -> tensor<8x16xf32, #acc>
    %mm = linalg.matmul ins(%xe, %we : tensor<8x32xf32, #lhs>, tensor<32x16xf32, #rhs>) outs(%acc0 : tensor<8x16xf32, #acc>) -> tensor<8x16xf32, #acc>
    %y = iree_encoding.unset_encoding %mm : tensor<8x16xf32, #acc> -> tensor<8x16xf32>
    flow.return %y : tensor<8x16xf32>
  }
  %e = tensor.empty() : tensor<8x16xf32>
  %n = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]} ins(%r : tensor<8x16xf32>) outs(%e : tensor<8x16xf32>) {
  ^bb0(%a: f32, %o: f32):
    %v = arith.negf %a : f32
    linalg.yield %v : f32
  } -> tensor<8x16xf32>
  util.return %n : tensor<8x16xf32>
}

// -----

// The dispatch returns the encoded result; the unset_encoding and its consumer are both outside any
// dispatch: nothing sinks.
// Source: HoistEncodingOps.cpp, SinkUnsetEncodingOp (isNonNullAndOutsideDispatch).
// EXPECT: in
#mk = affine_map<(d0, d1, d2) -> (d0, d2)>
#kn = affine_map<(d0, d1, d2) -> (d2, d1)>
#mn = affine_map<(d0, d1, d2) -> (d0, d1)>
#id = affine_map<(d0, d1) -> (d0, d1)>
#lhs = #iree_encoding.encoding<operand_index = 0 : index, op_type = matmul, element_types = [f32, f32, f32], user_indexing_maps = [#mk, #kn, #mn], iteration_sizes = [8, 16, 32]>
#rhs = #iree_encoding.encoding<operand_index = 1 : index, op_type = matmul, element_types = [f32, f32, f32], user_indexing_maps = [#mk, #kn, #mn], iteration_sizes = [8, 16, 32]>
#acc = #iree_encoding.encoding<operand_index = 2 : index, op_type = matmul, element_types = [f32, f32, f32], user_indexing_maps = [#mk, #kn, #mn], iteration_sizes = [8, 16, 32]>
util.func public @no_sink_unset_outside_dispatch(%x: tensor<8x32xf32>, %w: tensor<32x16xf32>) -> tensor<8x16xf32> {
  %r = flow.dispatch.region -> (tensor<8x16xf32, #acc>) {
    %xe = iree_encoding.set_encoding %x : tensor<8x32xf32> -> tensor<8x32xf32, #lhs>
    %we = iree_encoding.set_encoding %w : tensor<32x16xf32> -> tensor<32x16xf32, #rhs>
    %zero = arith.constant 0.0 : f32
    %init = tensor.empty() : tensor<8x16xf32, #acc>
    %acc0 = linalg.fill ins(%zero : f32) outs(%init : tensor<8x16xf32, #acc>) -> tensor<8x16xf32, #acc>
    %mm = linalg.matmul ins(%xe, %we : tensor<8x32xf32, #lhs>, tensor<32x16xf32, #rhs>) outs(%acc0 : tensor<8x16xf32, #acc>) -> tensor<8x16xf32, #acc>
    flow.return %mm : tensor<8x16xf32, #acc>
  }
  %y = iree_encoding.unset_encoding %r : tensor<8x16xf32, #acc> -> tensor<8x16xf32>
  %e = tensor.empty() : tensor<8x16xf32>
  %n = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]} ins(%y : tensor<8x16xf32>) outs(%e : tensor<8x16xf32>) {
  ^bb0(%a: f32, %o: f32):
    %v = arith.negf %a : f32
    linalg.yield %v : f32
  } -> tensor<8x16xf32>
  util.return %n : tensor<8x16xf32>
}

// -----

// The unset result is the init (outs) of the consumer, not an input: no sinking.
// Source: HoistEncodingOps.cpp, SinkUnsetEncodingOp (EncodingAttr's isPropagableDown:
// genericOp.isDpsInit(target)).
// EXPECT: in
#mk = affine_map<(d0, d1, d2) -> (d0, d2)>
#kn = affine_map<(d0, d1, d2) -> (d2, d1)>
#mn = affine_map<(d0, d1, d2) -> (d0, d1)>
#id = affine_map<(d0, d1) -> (d0, d1)>
#lhs = #iree_encoding.encoding<operand_index = 0 : index, op_type = matmul, element_types = [f32, f32, f32], user_indexing_maps = [#mk, #kn, #mn], iteration_sizes = [8, 16, 32]>
#rhs = #iree_encoding.encoding<operand_index = 1 : index, op_type = matmul, element_types = [f32, f32, f32], user_indexing_maps = [#mk, #kn, #mn], iteration_sizes = [8, 16, 32]>
#acc = #iree_encoding.encoding<operand_index = 2 : index, op_type = matmul, element_types = [f32, f32, f32], user_indexing_maps = [#mk, #kn, #mn], iteration_sizes = [8, 16, 32]>
util.func public @no_sink_unset_into_init(%x: tensor<8x32xf32>, %w: tensor<32x16xf32>, %z: tensor<8x16xf32>) -> tensor<8x16xf32> {
  %r = flow.dispatch.region -> (tensor<8x16xf32>) {
    %xe = iree_encoding.set_encoding %x : tensor<8x32xf32> -> tensor<8x32xf32, #lhs>
    %we = iree_encoding.set_encoding %w : tensor<32x16xf32> -> tensor<32x16xf32, #rhs>
    %zero = arith.constant 0.0 : f32
    %init = tensor.empty() : tensor<8x16xf32, #acc>
    %acc0 = linalg.fill ins(%zero : f32) outs(%init : tensor<8x16xf32, #acc>) -> tensor<8x16xf32, #acc>
    %mm = linalg.matmul ins(%xe, %we : tensor<8x32xf32, #lhs>, tensor<32x16xf32, #rhs>) outs(%acc0 : tensor<8x16xf32, #acc>) -> tensor<8x16xf32, #acc>
    %y = iree_encoding.unset_encoding %mm : tensor<8x16xf32, #acc> -> tensor<8x16xf32>
    %n = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]} ins(%z : tensor<8x16xf32>) outs(%y : tensor<8x16xf32>) {
    ^bb0(%a: f32, %o: f32):
      %v = arith.addf %a, %o : f32
      linalg.yield %v : f32
    } -> tensor<8x16xf32>
    flow.return %n : tensor<8x16xf32>
  }
  util.return %r : tensor<8x16xf32>
}

// -----

// The consumer broadcasts the unset result to 3-D: the unset operand's map (d1, d2) is a projected
// permutation but not a permutation, so it cannot be inverted and nothing sinks.
// Source: HoistEncodingOps.cpp, SinkUnsetEncodingOp (isPropagableDown: the target's map must be a
// permutation).
// EXPECT: in
#mk = affine_map<(d0, d1, d2) -> (d0, d2)>
#kn = affine_map<(d0, d1, d2) -> (d2, d1)>
#mn = affine_map<(d0, d1, d2) -> (d0, d1)>
#id = affine_map<(d0, d1) -> (d0, d1)>
#lhs = #iree_encoding.encoding<operand_index = 0 : index, op_type = matmul, element_types = [f32, f32, f32], user_indexing_maps = [#mk, #kn, #mn], iteration_sizes = [8, 16, 32]>
#rhs = #iree_encoding.encoding<operand_index = 1 : index, op_type = matmul, element_types = [f32, f32, f32], user_indexing_maps = [#mk, #kn, #mn], iteration_sizes = [8, 16, 32]>
#acc = #iree_encoding.encoding<operand_index = 2 : index, op_type = matmul, element_types = [f32, f32, f32], user_indexing_maps = [#mk, #kn, #mn], iteration_sizes = [8, 16, 32]>
#in3 = affine_map<(d0, d1, d2) -> (d1, d2)>
#id3 = affine_map<(d0, d1, d2) -> (d0, d1, d2)>
util.func public @no_sink_unset_through_broadcast(%x: tensor<8x32xf32>, %w: tensor<32x16xf32>) -> tensor<2x8x16xf32> {
  %r = flow.dispatch.region -> (tensor<2x8x16xf32>) {
    %xe = iree_encoding.set_encoding %x : tensor<8x32xf32> -> tensor<8x32xf32, #lhs>
    %we = iree_encoding.set_encoding %w : tensor<32x16xf32> -> tensor<32x16xf32, #rhs>
    %zero = arith.constant 0.0 : f32
    %init = tensor.empty() : tensor<8x16xf32, #acc>
    %acc0 = linalg.fill ins(%zero : f32) outs(%init : tensor<8x16xf32, #acc>) -> tensor<8x16xf32, #acc>
    %mm = linalg.matmul ins(%xe, %we : tensor<8x32xf32, #lhs>, tensor<32x16xf32, #rhs>) outs(%acc0 : tensor<8x16xf32, #acc>) -> tensor<8x16xf32, #acc>
    %y = iree_encoding.unset_encoding %mm : tensor<8x16xf32, #acc> -> tensor<8x16xf32>
    %e = tensor.empty() : tensor<2x8x16xf32>
    %b = linalg.generic {indexing_maps = [#in3, #id3], iterator_types = ["parallel", "parallel", "parallel"]} ins(%y : tensor<8x16xf32>) outs(%e : tensor<2x8x16xf32>) {
    ^bb0(%a: f32, %o: f32):
      linalg.yield %a : f32
    } -> tensor<2x8x16xf32>
    flow.return %b : tensor<2x8x16xf32>
  }
  util.return %r : tensor<2x8x16xf32>
}

// -----

// The consumer's other operand is read with a map repeating a dim ((d0, d1) -> (d0, d1, d0)), not a
// projected permutation: the encoding would not lower, so nothing sinks, though the unset operand's
// own map is the identity.
// Source: HoistEncodingOps.cpp, SinkUnsetEncodingOp (isPropagableDown: every operand map a
// projected permutation).
// EXPECT: in
#mk = affine_map<(d0, d1, d2) -> (d0, d2)>
#kn = affine_map<(d0, d1, d2) -> (d2, d1)>
#mn = affine_map<(d0, d1, d2) -> (d0, d1)>
#id = affine_map<(d0, d1) -> (d0, d1)>
#lhs = #iree_encoding.encoding<operand_index = 0 : index, op_type = matmul, element_types = [f32, f32, f32], user_indexing_maps = [#mk, #kn, #mn], iteration_sizes = [8, 16, 32]>
#rhs = #iree_encoding.encoding<operand_index = 1 : index, op_type = matmul, element_types = [f32, f32, f32], user_indexing_maps = [#mk, #kn, #mn], iteration_sizes = [8, 16, 32]>
#acc = #iree_encoding.encoding<operand_index = 2 : index, op_type = matmul, element_types = [f32, f32, f32], user_indexing_maps = [#mk, #kn, #mn], iteration_sizes = [8, 16, 32]>
#diag = affine_map<(d0, d1) -> (d0, d1, d0)>
util.func public @no_sink_unset_beside_repeated_dim_operand(%x: tensor<8x32xf32>, %w: tensor<32x16xf32>, %t: tensor<8x16x8xf32>) -> tensor<8x16xf32> {
  %r = flow.dispatch.region -> (tensor<8x16xf32>) {
    %xe = iree_encoding.set_encoding %x : tensor<8x32xf32> -> tensor<8x32xf32, #lhs>
    %we = iree_encoding.set_encoding %w : tensor<32x16xf32> -> tensor<32x16xf32, #rhs>
    %zero = arith.constant 0.0 : f32
    %init = tensor.empty() : tensor<8x16xf32, #acc>
    %acc0 = linalg.fill ins(%zero : f32) outs(%init : tensor<8x16xf32, #acc>) -> tensor<8x16xf32, #acc>
    %mm = linalg.matmul ins(%xe, %we : tensor<8x32xf32, #lhs>, tensor<32x16xf32, #rhs>) outs(%acc0 : tensor<8x16xf32, #acc>) -> tensor<8x16xf32, #acc>
    %y = iree_encoding.unset_encoding %mm : tensor<8x16xf32, #acc> -> tensor<8x16xf32>
    %e = tensor.empty() : tensor<8x16xf32>
    %s = linalg.generic {indexing_maps = [#id, #diag, #id], iterator_types = ["parallel", "parallel"]} ins(%y, %t : tensor<8x16xf32>, tensor<8x16x8xf32>) outs(%e : tensor<8x16xf32>) {
    ^bb0(%a: f32, %b: f32, %o: f32):
      %v = arith.addf %a, %b : f32
      linalg.yield %v : f32
    } -> tensor<8x16xf32>
    flow.return %s : tensor<8x16xf32>
  }
  util.return %r : tensor<8x16xf32>
}
