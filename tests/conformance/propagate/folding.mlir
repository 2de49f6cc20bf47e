// PropagateEncodings (PropagateEncodings.cpp, runOnOperation): the pass runs its pattern with the
// greedy driver and folding enabled (GreedyRewriteConfig::enableFolding), so every op of the function
// is folded along the way. A tensor.cast to its own type folds to its source: the set_encoding then
// reads the argument directly. Worth knowing because the pass changes programs it propagates nothing in.
// The e-graph has no rule folding an identity cast (SetEncoding(Op(tensor.cast, [x]), e) = SetEncoding(x, e)).
// EXPECT: missing no e-node SetEncoding(Arg(0), encoding(operand 0))
#mk = affine_map<(d0, d1, d2) -> (d0, d2)>
#kn = affine_map<(d0, d1, d2) -> (d2, d1)>
#mn = affine_map<(d0, d1, d2) -> (d0, d1)>
#lhs = #iree_encoding.encoding<operand_index = 0 : index, op_type = matmul, element_types = [f32, f32, f32], user_indexing_maps = [#mk, #kn, #mn], iteration_sizes = [8, 32, 16]>
#rhs = #iree_encoding.encoding<operand_index = 1 : index, op_type = matmul, element_types = [f32, f32, f32], user_indexing_maps = [#mk, #kn, #mn], iteration_sizes = [8, 32, 16]>
#acc = #iree_encoding.encoding<operand_index = 2 : index, op_type = matmul, element_types = [f32, f32, f32], user_indexing_maps = [#mk, #kn, #mn], iteration_sizes = [8, 32, 16]>
util.func public @identity_cast_folds(%a: tensor<8x16xf32>, %b: tensor<16x32xf32>) -> tensor<8x32xf32> {
  %same = tensor.cast %a : tensor<8x16xf32> to tensor<8x16xf32>
  %l = iree_encoding.set_encoding %same : tensor<8x16xf32> -> tensor<8x16xf32, #lhs>
  %r = iree_encoding.set_encoding %b : tensor<16x32xf32> -> tensor<16x32xf32, #rhs>
  %res = flow.dispatch.region -> (tensor<8x32xf32>) {
    %zero = arith.constant 0.000000e+00 : f32
    %e = tensor.empty() : tensor<8x32xf32, #acc>
    %f = linalg.fill ins(%zero : f32) outs(%e : tensor<8x32xf32, #acc>) -> tensor<8x32xf32, #acc>
    %m = linalg.matmul indexing_maps = [#mk, #kn, #mn] ins(%l, %r : tensor<8x16xf32, #lhs>, tensor<16x32xf32, #rhs>) outs(%f : tensor<8x32xf32, #acc>) -> tensor<8x32xf32, #acc>
    %u = iree_encoding.unset_encoding %m : tensor<8x32xf32, #acc> -> tensor<8x32xf32>
    flow.return %u : tensor<8x32xf32>
  }
  util.return %res : tensor<8x32xf32>
}

// -----

// Folding, as above: a tensor.extract_slice taking the whole of its source (zero offsets, full sizes,
// unit strides) folds to the source, so the weight's encode reads the argument itself.
// The e-graph has no rule equating a full slice with its source (Slice(x, 0, shape(x), 1) = x).
// EXPECT: missing no e-node Contract('linalg.matmul:', Dispatch(SetEncoding), Dispatch(SetEncoding), Fill(Scalar, SetEncoding))
#mk = affine_map<(d0, d1, d2) -> (d0, d2)>
#kn = affine_map<(d0, d1, d2) -> (d2, d1)>
#mn = affine_map<(d0, d1, d2) -> (d0, d1)>
#lhs = #iree_encoding.encoding<operand_index = 0 : index, op_type = matmul, element_types = [f32, f32, f32], user_indexing_maps = [#mk, #kn, #mn], iteration_sizes = [8, 32, 16]>
#rhs = #iree_encoding.encoding<operand_index = 1 : index, op_type = matmul, element_types = [f32, f32, f32], user_indexing_maps = [#mk, #kn, #mn], iteration_sizes = [8, 32, 16]>
#acc = #iree_encoding.encoding<operand_index = 2 : index, op_type = matmul, element_types = [f32, f32, f32], user_indexing_maps = [#mk, #kn, #mn], iteration_sizes = [8, 32, 16]>
util.func public @full_slice_folds(%a: tensor<8x16xf32>, %b: tensor<16x32xf32>) -> tensor<8x32xf32> {
  %whole = tensor.extract_slice %b[0, 0] [16, 32] [1, 1] : tensor<16x32xf32> to tensor<16x32xf32>
  %l = iree_encoding.set_encoding %a : tensor<8x16xf32> -> tensor<8x16xf32, #lhs>
  %r = iree_encoding.set_encoding %whole : tensor<16x32xf32> -> tensor<16x32xf32, #rhs>
  %res = flow.dispatch.region -> (tensor<8x32xf32>) {
    %zero = arith.constant 0.000000e+00 : f32
    %e = tensor.empty() : tensor<8x32xf32, #acc>
    %f = linalg.fill ins(%zero : f32) outs(%e : tensor<8x32xf32, #acc>) -> tensor<8x32xf32, #acc>
    %m = linalg.matmul indexing_maps = [#mk, #kn, #mn] ins(%l, %r : tensor<8x16xf32, #lhs>, tensor<16x32xf32, #rhs>) outs(%f : tensor<8x32xf32, #acc>) -> tensor<8x32xf32, #acc>
    %u = iree_encoding.unset_encoding %m : tensor<8x32xf32, #acc> -> tensor<8x32xf32>
    flow.return %u : tensor<8x32xf32>
  }
  util.return %res : tensor<8x32xf32>
}

// -----

// Folding reaches the ops nested in a generic's body too: x * 1.0 folds to x (arith.mulf's folder),
// so the producer of the lhs encode becomes a plain x + x.
// The e-graph has no body simplification: the folded generic is another key.
// EXPECT: missing no e-node Generic(linalg.generic, TCons(Arg, TNil), TCons(Empty, TNil))
#mk = affine_map<(d0, d1, d2) -> (d0, d2)>
#kn = affine_map<(d0, d1, d2) -> (d2, d1)>
#mn = affine_map<(d0, d1, d2) -> (d0, d1)>
#lhs = #iree_encoding.encoding<operand_index = 0 : index, op_type = matmul, element_types = [f32, f32, f32], user_indexing_maps = [#mk, #kn, #mn], iteration_sizes = [8, 32, 16]>
#rhs = #iree_encoding.encoding<operand_index = 1 : index, op_type = matmul, element_types = [f32, f32, f32], user_indexing_maps = [#mk, #kn, #mn], iteration_sizes = [8, 32, 16]>
#id = affine_map<(d0, d1) -> (d0, d1)>
#acc = #iree_encoding.encoding<operand_index = 2 : index, op_type = matmul, element_types = [f32, f32, f32], user_indexing_maps = [#mk, #kn, #mn], iteration_sizes = [8, 32, 16]>
util.func public @multiply_by_one_folds_in_body(%a: tensor<8x16xf32>, %b: tensor<16x32xf32>) -> tensor<8x32xf32> {
  %init = tensor.empty() : tensor<8x16xf32>
  %g = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]} ins(%a : tensor<8x16xf32>) outs(%init : tensor<8x16xf32>) {
  ^bb0(%x: f32, %o: f32):
    %one = arith.constant 1.000000e+00 : f32
    %y = arith.mulf %x, %one : f32
    %z = arith.addf %y, %y : f32
    linalg.yield %z : f32
  } -> tensor<8x16xf32>
  %l = iree_encoding.set_encoding %g : tensor<8x16xf32> -> tensor<8x16xf32, #lhs>
  %r = iree_encoding.set_encoding %b : tensor<16x32xf32> -> tensor<16x32xf32, #rhs>
  %res = flow.dispatch.region -> (tensor<8x32xf32>) {
    %zero = arith.constant 0.000000e+00 : f32
    %e = tensor.empty() : tensor<8x32xf32, #acc>
    %f = linalg.fill ins(%zero : f32) outs(%e : tensor<8x32xf32, #acc>) -> tensor<8x32xf32, #acc>
    %m = linalg.matmul indexing_maps = [#mk, #kn, #mn] ins(%l, %r : tensor<8x16xf32, #lhs>, tensor<16x32xf32, #rhs>) outs(%f : tensor<8x32xf32, #acc>) -> tensor<8x32xf32, #acc>
    %u = iree_encoding.unset_encoding %m : tensor<8x32xf32, #acc> -> tensor<8x32xf32>
    flow.return %u : tensor<8x32xf32>
  }
  util.return %res : tensor<8x32xf32>
}

// -----

// Folding inside a dispatch: the accumulator's fill value, 0.5 + 0.5 computed from constants, folds
// to the constant 1.0, so the fill reads a constant.
// The e-graph has no scalar constant folding (Op(arith.addf, [Scalar a, Scalar b]) = Scalar(a + b)).
// EXPECT: missing no e-node Scalar('1.0e+00', 'f32')
#mk = affine_map<(d0, d1, d2) -> (d0, d2)>
#kn = affine_map<(d0, d1, d2) -> (d2, d1)>
#mn = affine_map<(d0, d1, d2) -> (d0, d1)>
#lhs = #iree_encoding.encoding<operand_index = 0 : index, op_type = matmul, element_types = [f32, f32, f32], user_indexing_maps = [#mk, #kn, #mn], iteration_sizes = [8, 32, 16]>
#rhs = #iree_encoding.encoding<operand_index = 1 : index, op_type = matmul, element_types = [f32, f32, f32], user_indexing_maps = [#mk, #kn, #mn], iteration_sizes = [8, 32, 16]>
#acc = #iree_encoding.encoding<operand_index = 2 : index, op_type = matmul, element_types = [f32, f32, f32], user_indexing_maps = [#mk, #kn, #mn], iteration_sizes = [8, 32, 16]>
util.func public @fill_value_folds_to_constant(%a: tensor<8x16xf32>, %b: tensor<16x32xf32>) -> tensor<8x32xf32> {
  %l = iree_encoding.set_encoding %a : tensor<8x16xf32> -> tensor<8x16xf32, #lhs>
  %r = iree_encoding.set_encoding %b : tensor<16x32xf32> -> tensor<16x32xf32, #rhs>
  %res = flow.dispatch.region -> (tensor<8x32xf32>) {
    %half = arith.constant 5.000000e-01 : f32
    %one = arith.addf %half, %half : f32
    %e = tensor.empty() : tensor<8x32xf32, #acc>
    %f = linalg.fill ins(%one : f32) outs(%e : tensor<8x32xf32, #acc>) -> tensor<8x32xf32, #acc>
    %m = linalg.matmul indexing_maps = [#mk, #kn, #mn] ins(%l, %r : tensor<8x16xf32, #lhs>, tensor<16x32xf32, #rhs>) outs(%f : tensor<8x32xf32, #acc>) -> tensor<8x32xf32, #acc>
    %u = iree_encoding.unset_encoding %m : tensor<8x32xf32, #acc> -> tensor<8x32xf32>
    flow.return %u : tensor<8x32xf32>
  }
  util.return %res : tensor<8x32xf32>
}

// -----

// The greedy driver also erases ops without uses: a set_encoding nobody reads disappears. (The
// e-graph never holds dead values: it is built from the function's results, so IREE's plan is in.)
// EXPECT: in
#mk = affine_map<(d0, d1, d2) -> (d0, d2)>
#kn = affine_map<(d0, d1, d2) -> (d2, d1)>
#mn = affine_map<(d0, d1, d2) -> (d0, d1)>
#lhs = #iree_encoding.encoding<operand_index = 0 : index, op_type = matmul, element_types = [f32, f32, f32], user_indexing_maps = [#mk, #kn, #mn], iteration_sizes = [8, 32, 16]>
#rhs = #iree_encoding.encoding<operand_index = 1 : index, op_type = matmul, element_types = [f32, f32, f32], user_indexing_maps = [#mk, #kn, #mn], iteration_sizes = [8, 32, 16]>
#acc = #iree_encoding.encoding<operand_index = 2 : index, op_type = matmul, element_types = [f32, f32, f32], user_indexing_maps = [#mk, #kn, #mn], iteration_sizes = [8, 32, 16]>
util.func public @unused_encode_erased(%a: tensor<8x16xf32>, %b: tensor<16x32xf32>) -> tensor<8x32xf32> {
  %l = iree_encoding.set_encoding %a : tensor<8x16xf32> -> tensor<8x16xf32, #lhs>
  %r = iree_encoding.set_encoding %b : tensor<16x32xf32> -> tensor<16x32xf32, #rhs>
  %unused = iree_encoding.set_encoding %b : tensor<16x32xf32> -> tensor<16x32xf32, #lhs>
  %res = flow.dispatch.region -> (tensor<8x32xf32>) {
    %zero = arith.constant 0.000000e+00 : f32
    %e = tensor.empty() : tensor<8x32xf32, #acc>
    %f = linalg.fill ins(%zero : f32) outs(%e : tensor<8x32xf32, #acc>) -> tensor<8x32xf32, #acc>
    %m = linalg.matmul indexing_maps = [#mk, #kn, #mn] ins(%l, %r : tensor<8x16xf32, #lhs>, tensor<16x32xf32, #rhs>) outs(%f : tensor<8x32xf32, #acc>) -> tensor<8x32xf32, #acc>
    %u = iree_encoding.unset_encoding %m : tensor<8x32xf32, #acc> -> tensor<8x32xf32>
    flow.return %u : tensor<8x32xf32>
  }
  util.return %res : tensor<8x32xf32>
}
