// A dense constant weight defined inside the dispatch is hoisted along with its set_encoding.
// Source: HoistEncodingOps.cpp, isHoistableOp (ConstantLike).
// Matters: the packed constant can then be const-evaluated.
// EXPECT: in
#mk = affine_map<(d0, d1, d2) -> (d0, d2)>
#kn = affine_map<(d0, d1, d2) -> (d2, d1)>
#mn = affine_map<(d0, d1, d2) -> (d0, d1)>
#lhs = #iree_encoding.encoding<operand_index = 0 : index, op_type = matmul, element_types = [f32, f32, f32], user_indexing_maps = [#mk, #kn, #mn], iteration_sizes = [8, 16, 32]>
#rhs = #iree_encoding.encoding<operand_index = 1 : index, op_type = matmul, element_types = [f32, f32, f32], user_indexing_maps = [#mk, #kn, #mn], iteration_sizes = [8, 16, 32]>
#acc = #iree_encoding.encoding<operand_index = 2 : index, op_type = matmul, element_types = [f32, f32, f32], user_indexing_maps = [#mk, #kn, #mn], iteration_sizes = [8, 16, 32]>
util.func public @hoist_constant_weight(%x: tensor<8x32xf32>) -> tensor<8x16xf32> {
  %r = flow.dispatch.region -> (tensor<8x16xf32>) {
    %w = arith.constant dense<0.25> : tensor<32x16xf32>
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

// A slice of a dense constant inside the dispatch: the greedy driver folds the slice into a smaller
// constant, which is then hoisted with the set_encoding.
// Source: HoistEncodingOps.cpp (pattern application folds ops), isHoistableOp.
// Matters: the slice never reaches runtime.
// EXPECT: in
#mk = affine_map<(d0, d1, d2) -> (d0, d2)>
#kn = affine_map<(d0, d1, d2) -> (d2, d1)>
#mn = affine_map<(d0, d1, d2) -> (d0, d1)>
#lhs = #iree_encoding.encoding<operand_index = 0 : index, op_type = matmul, element_types = [f32, f32, f32], user_indexing_maps = [#mk, #kn, #mn], iteration_sizes = [8, 16, 32]>
#rhs = #iree_encoding.encoding<operand_index = 1 : index, op_type = matmul, element_types = [f32, f32, f32], user_indexing_maps = [#mk, #kn, #mn], iteration_sizes = [8, 16, 32]>
#acc = #iree_encoding.encoding<operand_index = 2 : index, op_type = matmul, element_types = [f32, f32, f32], user_indexing_maps = [#mk, #kn, #mn], iteration_sizes = [8, 16, 32]>
util.func public @hoist_slice_of_constant(%x: tensor<8x32xf32>) -> tensor<8x16xf32> {
  %r = flow.dispatch.region -> (tensor<8x16xf32>) {
    %all = arith.constant dense<-0.5> : tensor<64x16xf32>
    %w = tensor.extract_slice %all[32, 0] [32, 16] [1, 1] : tensor<64x16xf32> to tensor<32x16xf32>
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

// A set_encoding of an immutable util.global.load inside the dispatch is NOT hoisted: a global load
// is not on the allow list, and for ConstExprHoistingPolicy a root (the load) is already hoisted.
// Source: HoistEncodingOps.cpp, isHoistableOp and ConstExprHoistingPolicy::makeInvariantDecision
// (Check 2: roots).
// EXPECT: in
#mk = affine_map<(d0, d1, d2) -> (d0, d2)>
#kn = affine_map<(d0, d1, d2) -> (d2, d1)>
#mn = affine_map<(d0, d1, d2) -> (d0, d1)>
#lhs = #iree_encoding.encoding<operand_index = 0 : index, op_type = matmul, element_types = [f32, f32, f32], user_indexing_maps = [#mk, #kn, #mn], iteration_sizes = [8, 16, 32]>
#rhs = #iree_encoding.encoding<operand_index = 1 : index, op_type = matmul, element_types = [f32, f32, f32], user_indexing_maps = [#mk, #kn, #mn], iteration_sizes = [8, 16, 32]>
#acc = #iree_encoding.encoding<operand_index = 2 : index, op_type = matmul, element_types = [f32, f32, f32], user_indexing_maps = [#mk, #kn, #mn], iteration_sizes = [8, 16, 32]>
util.global private @w_direct = dense<0.125> : tensor<32x16xf32>
util.func public @hoist_global_load_weight(%x: tensor<8x32xf32>) -> tensor<8x16xf32> {
  %r = flow.dispatch.region -> (tensor<8x16xf32>) {
    %w = util.global.load @w_direct : tensor<32x16xf32>
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

// An elementwise generic (negf) of an immutable global is a const-expr: the load, the generic and
// the set_encoding are all hoisted out of the dispatch.
// Source: HoistEncodingOps.cpp, the const-expr branch (ConstExprAnalysis + ConstExprHoistingPolicy,
// ENABLE_HOIST).
// Matters: preprocessing of weights moves out of the matmul so it can be evaluated at load time.
// EXPECT: in
#mk = affine_map<(d0, d1, d2) -> (d0, d2)>
#kn = affine_map<(d0, d1, d2) -> (d2, d1)>
#mn = affine_map<(d0, d1, d2) -> (d0, d1)>
#id = affine_map<(d0, d1) -> (d0, d1)>
#lhs = #iree_encoding.encoding<operand_index = 0 : index, op_type = matmul, element_types = [f32, f32, f32], user_indexing_maps = [#mk, #kn, #mn], iteration_sizes = [8, 16, 32]>
#rhs = #iree_encoding.encoding<operand_index = 1 : index, op_type = matmul, element_types = [f32, f32, f32], user_indexing_maps = [#mk, #kn, #mn], iteration_sizes = [8, 16, 32]>
#acc = #iree_encoding.encoding<operand_index = 2 : index, op_type = matmul, element_types = [f32, f32, f32], user_indexing_maps = [#mk, #kn, #mn], iteration_sizes = [8, 16, 32]>
util.global private @w_raw = dense<0.75> : tensor<32x16xf32>
util.func public @hoist_const_expr_of_global(%x: tensor<8x32xf32>) -> tensor<8x16xf32> {
  %r = flow.dispatch.region -> (tensor<8x16xf32>) {
    %raw = util.global.load @w_raw : tensor<32x16xf32>
    %e = tensor.empty() : tensor<32x16xf32>
    %w = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]} ins(%raw : tensor<32x16xf32>) outs(%e : tensor<32x16xf32>) {
    ^bb0(%a: f32, %o: f32):
      %n = arith.negf %a : f32
      linalg.yield %n : f32
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

// The same generic on a mutable global is not a const-expr: nothing but the other operand's
// set_encoding leaves the dispatch.
// Source: HoistEncodingOps.cpp, the const-expr branch (no ConstValueInfo / not const for a mutable
// global).
// EXPECT: in
#mk = affine_map<(d0, d1, d2) -> (d0, d2)>
#kn = affine_map<(d0, d1, d2) -> (d2, d1)>
#mn = affine_map<(d0, d1, d2) -> (d0, d1)>
#id = affine_map<(d0, d1) -> (d0, d1)>
#lhs = #iree_encoding.encoding<operand_index = 0 : index, op_type = matmul, element_types = [f32, f32, f32], user_indexing_maps = [#mk, #kn, #mn], iteration_sizes = [8, 16, 32]>
#rhs = #iree_encoding.encoding<operand_index = 1 : index, op_type = matmul, element_types = [f32, f32, f32], user_indexing_maps = [#mk, #kn, #mn], iteration_sizes = [8, 16, 32]>
#acc = #iree_encoding.encoding<operand_index = 2 : index, op_type = matmul, element_types = [f32, f32, f32], user_indexing_maps = [#mk, #kn, #mn], iteration_sizes = [8, 16, 32]>
util.global private mutable @w_state = dense<0.75> : tensor<32x16xf32>
util.func public @keep_compute_on_mutable_global(%x: tensor<8x32xf32>) -> tensor<8x16xf32> {
  %r = flow.dispatch.region -> (tensor<8x16xf32>) {
    %raw = util.global.load @w_state : tensor<32x16xf32>
    %e = tensor.empty() : tensor<32x16xf32>
    %w = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]} ins(%raw : tensor<32x16xf32>) outs(%e : tensor<32x16xf32>) {
    ^bb0(%a: f32, %o: f32):
      %n = arith.negf %a : f32
      linalg.yield %n : f32
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

// A generic scaling a dense constant (body with a scalar arith.constant) is a const-expr: constant,
// generic and set_encoding are hoisted.
// Source: HoistEncodingOps.cpp, the const-expr branch.
// Matters: folded weight transforms are hoisted, not recomputed.
// EXPECT: in
#mk = affine_map<(d0, d1, d2) -> (d0, d2)>
#kn = affine_map<(d0, d1, d2) -> (d2, d1)>
#mn = affine_map<(d0, d1, d2) -> (d0, d1)>
#id = affine_map<(d0, d1) -> (d0, d1)>
#lhs = #iree_encoding.encoding<operand_index = 0 : index, op_type = matmul, element_types = [f32, f32, f32], user_indexing_maps = [#mk, #kn, #mn], iteration_sizes = [8, 16, 32]>
#rhs = #iree_encoding.encoding<operand_index = 1 : index, op_type = matmul, element_types = [f32, f32, f32], user_indexing_maps = [#mk, #kn, #mn], iteration_sizes = [8, 16, 32]>
#acc = #iree_encoding.encoding<operand_index = 2 : index, op_type = matmul, element_types = [f32, f32, f32], user_indexing_maps = [#mk, #kn, #mn], iteration_sizes = [8, 16, 32]>
util.func public @hoist_scaled_constant_weight(%x: tensor<8x32xf32>) -> tensor<8x16xf32> {
  %r = flow.dispatch.region -> (tensor<8x16xf32>) {
    %raw = arith.constant dense<3.0> : tensor<32x16xf32>
    %e = tensor.empty() : tensor<32x16xf32>
    %w = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]} ins(%raw : tensor<32x16xf32>) outs(%e : tensor<32x16xf32>) {
    ^bb0(%a: f32, %o: f32):
      %h = arith.constant 5.000000e-01 : f32
      %n = arith.mulf %a, %h : f32
      linalg.yield %n : f32
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
