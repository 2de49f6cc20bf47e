// PropagateEncodings (PropagateEncodings.cpp, runOnOperation): the pass has one pattern,
// SwapEncodingOpWithTensorCastOp, so a set_encoding whose source is an elementwise generic stays
// below it: bubbling an encode through its producer is HoistEncodingOps' job (BubbleUpSetEncodingOp),
// not this pass's. Here the lhs of a matmul is the square of an argument, computed between dispatches.
// EXPECT: in
#mk = affine_map<(d0, d1, d2) -> (d0, d2)>
#kn = affine_map<(d0, d1, d2) -> (d2, d1)>
#mn = affine_map<(d0, d1, d2) -> (d0, d1)>
#id = affine_map<(d0, d1) -> (d0, d1)>
#lhs = #iree_encoding.encoding<operand_index = 0 : index, op_type = matmul, element_types = [f32, f32, f32], user_indexing_maps = [#mk, #kn, #mn], iteration_sizes = [8, 32, 16]>
#rhs = #iree_encoding.encoding<operand_index = 1 : index, op_type = matmul, element_types = [f32, f32, f32], user_indexing_maps = [#mk, #kn, #mn], iteration_sizes = [8, 32, 16]>
#acc = #iree_encoding.encoding<operand_index = 2 : index, op_type = matmul, element_types = [f32, f32, f32], user_indexing_maps = [#mk, #kn, #mn], iteration_sizes = [8, 32, 16]>
util.func public @encode_stays_below_elementwise(%a: tensor<8x16xf32>, %b: tensor<16x32xf32>) -> tensor<8x32xf32> {
  %init = tensor.empty() : tensor<8x16xf32>
  %sq = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]} ins(%a : tensor<8x16xf32>) outs(%init : tensor<8x16xf32>) {
  ^bb0(%x: f32, %o: f32):
    %y = arith.mulf %x, %x : f32
    linalg.yield %y : f32
  } -> tensor<8x16xf32>
  %l = iree_encoding.set_encoding %sq : tensor<8x16xf32> -> tensor<8x16xf32, #lhs>
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

// A tensor.collapse_shape has an encoding propagation op interface (EncodingExternalModels.cpp,
// EncodingCastableOpPropagationInterface), but the pass matches only tensor.cast producers and a
// matmul encoding (EncodingAttr) is not propagable up through anything (isPropagableUp's default):
// the encode of the collapsed 2x4x16 input stays below the collapse.
// EXPECT: in
#mk = affine_map<(d0, d1, d2) -> (d0, d2)>
#kn = affine_map<(d0, d1, d2) -> (d2, d1)>
#mn = affine_map<(d0, d1, d2) -> (d0, d1)>
#lhs = #iree_encoding.encoding<operand_index = 0 : index, op_type = matmul, element_types = [f32, f32, f32], user_indexing_maps = [#mk, #kn, #mn], iteration_sizes = [8, 32, 16]>
#rhs = #iree_encoding.encoding<operand_index = 1 : index, op_type = matmul, element_types = [f32, f32, f32], user_indexing_maps = [#mk, #kn, #mn], iteration_sizes = [8, 32, 16]>
#acc = #iree_encoding.encoding<operand_index = 2 : index, op_type = matmul, element_types = [f32, f32, f32], user_indexing_maps = [#mk, #kn, #mn], iteration_sizes = [8, 32, 16]>
util.func public @encode_stays_below_collapse(%a: tensor<2x4x16xf32>, %b: tensor<16x32xf32>) -> tensor<8x32xf32> {
  %c = tensor.collapse_shape %a [[0, 1], [2]] : tensor<2x4x16xf32> into tensor<8x16xf32>
  %l = iree_encoding.set_encoding %c : tensor<8x16xf32> -> tensor<8x16xf32, #lhs>
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

// A dequantizing generic (i8 weight to f32) below the weight's encode is not crossed either: the
// narrow-weight packing that matters for data tiling comes from HoistEncodingOps, not this pass.
// EXPECT: in
#mk = affine_map<(d0, d1, d2) -> (d0, d2)>
#kn = affine_map<(d0, d1, d2) -> (d2, d1)>
#mn = affine_map<(d0, d1, d2) -> (d0, d1)>
#id = affine_map<(d0, d1) -> (d0, d1)>
#lhs = #iree_encoding.encoding<operand_index = 0 : index, op_type = matmul, element_types = [f32, f32, f32], user_indexing_maps = [#mk, #kn, #mn], iteration_sizes = [4, 16, 32]>
#rhs = #iree_encoding.encoding<operand_index = 1 : index, op_type = matmul, element_types = [f32, f32, f32], user_indexing_maps = [#mk, #kn, #mn], iteration_sizes = [4, 16, 32]>
#acc = #iree_encoding.encoding<operand_index = 2 : index, op_type = matmul, element_types = [f32, f32, f32], user_indexing_maps = [#mk, #kn, #mn], iteration_sizes = [4, 16, 32]>
util.func public @encode_stays_below_dequant(%a: tensor<4x32xf32>, %w: tensor<32x16xi8>) -> tensor<4x16xf32> {
  %we = tensor.empty() : tensor<32x16xf32>
  %deq = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]} ins(%w : tensor<32x16xi8>) outs(%we : tensor<32x16xf32>) {
  ^bb0(%x: i8, %o: f32):
    %y = arith.sitofp %x : i8 to f32
    linalg.yield %y : f32
  } -> tensor<32x16xf32>
  %l = iree_encoding.set_encoding %a : tensor<4x32xf32> -> tensor<4x32xf32, #lhs>
  %r = iree_encoding.set_encoding %deq : tensor<32x16xf32> -> tensor<32x16xf32, #rhs>
  %res = flow.dispatch.region -> (tensor<4x16xf32>) {
    %zero = arith.constant 0.000000e+00 : f32
    %e = tensor.empty() : tensor<4x16xf32, #acc>
    %f = linalg.fill ins(%zero : f32) outs(%e : tensor<4x16xf32, #acc>) -> tensor<4x16xf32, #acc>
    %m = linalg.matmul indexing_maps = [#mk, #kn, #mn] ins(%l, %r : tensor<4x32xf32, #lhs>, tensor<32x16xf32, #rhs>) outs(%f : tensor<4x16xf32, #acc>) -> tensor<4x16xf32, #acc>
    %u = iree_encoding.unset_encoding %m : tensor<4x16xf32, #acc> -> tensor<4x16xf32>
    flow.return %u : tensor<4x16xf32>
  }
  util.return %res : tensor<4x16xf32>
}

// -----

// Encodes inside a dispatch are left alone (bubbleUpSetEncodingOp wants both the set_encoding and
// its producer outside any dispatch, isNonNullAndOutsideDispatch): the matmul dispatch that encodes
// a transposed operand itself keeps the transpose and the encode as they are (with a matmul encoding
// the interface check refuses first; the placement check is the same refusal for a layout encoding).
// EXPECT: in
#mk = affine_map<(d0, d1, d2) -> (d0, d2)>
#kn = affine_map<(d0, d1, d2) -> (d2, d1)>
#mn = affine_map<(d0, d1, d2) -> (d0, d1)>
#id = affine_map<(d0, d1) -> (d0, d1)>
#tr = affine_map<(d0, d1) -> (d1, d0)>
#lhs = #iree_encoding.encoding<operand_index = 0 : index, op_type = matmul, element_types = [f32, f32, f32], user_indexing_maps = [#mk, #kn, #mn], iteration_sizes = [8, 32, 16]>
#rhs = #iree_encoding.encoding<operand_index = 1 : index, op_type = matmul, element_types = [f32, f32, f32], user_indexing_maps = [#mk, #kn, #mn], iteration_sizes = [8, 32, 16]>
#acc = #iree_encoding.encoding<operand_index = 2 : index, op_type = matmul, element_types = [f32, f32, f32], user_indexing_maps = [#mk, #kn, #mn], iteration_sizes = [8, 32, 16]>
util.func public @encode_in_dispatch_untouched(%at: tensor<16x8xf32>, %b: tensor<16x32xf32>) -> tensor<8x32xf32> {
  %res = flow.dispatch.region -> (tensor<8x32xf32>) {
    %te = tensor.empty() : tensor<8x16xf32>
    %t = linalg.generic {indexing_maps = [#tr, #id], iterator_types = ["parallel", "parallel"]} ins(%at : tensor<16x8xf32>) outs(%te : tensor<8x16xf32>) {
    ^bb0(%x: f32, %o: f32):
      linalg.yield %x : f32
    } -> tensor<8x16xf32>
    %l = iree_encoding.set_encoding %t : tensor<8x16xf32> -> tensor<8x16xf32, #lhs>
    %r = iree_encoding.set_encoding %b : tensor<16x32xf32> -> tensor<16x32xf32, #rhs>
    %zero = arith.constant 0.000000e+00 : f32
    %e = tensor.empty() : tensor<8x32xf32, #acc>
    %f = linalg.fill ins(%zero : f32) outs(%e : tensor<8x32xf32, #acc>) -> tensor<8x32xf32, #acc>
    %m = linalg.matmul indexing_maps = [#mk, #kn, #mn] ins(%l, %r : tensor<8x16xf32, #lhs>, tensor<16x32xf32, #rhs>) outs(%f : tensor<8x32xf32, #acc>) -> tensor<8x32xf32, #acc>
    %u = iree_encoding.unset_encoding %m : tensor<8x32xf32, #acc> -> tensor<8x32xf32>
    flow.return %u : tensor<8x32xf32>
  }
  util.return %res : tensor<8x32xf32>
}
