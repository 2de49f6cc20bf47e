// CloneProducersIntoDispatchRegions (RegionOpUtils.cpp isUncloneableOp): a tensor.insert_slice is
// never cloned into its consumer's dispatch, cheap as it looks: the padded lhs built by inserting the
// argument into a zero tensor stays outside, and the pass gives the insert nothing else to do (it is
// not a generic, so it is not wrapped in a dispatch of its own either).
// EXPECT: in
util.func public @insert_slice_stays_outside(%a: tensor<6x8xf32>, %b: tensor<8x16xf32>) -> tensor<8x16xf32> {
  %zero = arith.constant 0.000000e+00 : f32
  %pe = tensor.empty() : tensor<8x8xf32>
  %pz = linalg.fill ins(%zero : f32) outs(%pe : tensor<8x8xf32>) -> tensor<8x8xf32>
  %padded = tensor.insert_slice %a into %pz[0, 0] [6, 8] [1, 1] : tensor<6x8xf32> into tensor<8x8xf32>
  %res = flow.dispatch.region -> (tensor<8x16xf32>) {
    %e = tensor.empty() : tensor<8x16xf32>
    %f = linalg.fill ins(%zero : f32) outs(%e : tensor<8x16xf32>) -> tensor<8x16xf32>
    %m = linalg.matmul ins(%padded, %b : tensor<8x8xf32>, tensor<8x16xf32>) outs(%f : tensor<8x16xf32>) -> tensor<8x16xf32>
    flow.return %m : tensor<8x16xf32>
  }
  util.return %res : tensor<8x16xf32>
}

// -----

// A set_encoding outside the dispatch is not cloned (isCloneableIntoDispatchOp lists UnsetEncodingOp
// but not SetEncodingOp): hoisted operand encodes stay where HoistEncodingOps put them, so the packs
// run once, outside the matmul dispatch.
// EXPECT: in
#mk = affine_map<(d0, d1, d2) -> (d0, d2)>
#kn = affine_map<(d0, d1, d2) -> (d2, d1)>
#mn = affine_map<(d0, d1, d2) -> (d0, d1)>
#lhs = #iree_encoding.encoding<operand_index = 0 : index, op_type = matmul, element_types = [f32, f32, f32], user_indexing_maps = [#mk, #kn, #mn], iteration_sizes = [16, 8, 32]>
#rhs = #iree_encoding.encoding<operand_index = 1 : index, op_type = matmul, element_types = [f32, f32, f32], user_indexing_maps = [#mk, #kn, #mn], iteration_sizes = [16, 8, 32]>
#acc = #iree_encoding.encoding<operand_index = 2 : index, op_type = matmul, element_types = [f32, f32, f32], user_indexing_maps = [#mk, #kn, #mn], iteration_sizes = [16, 8, 32]>
util.func public @hoisted_encodes_not_cloned_back(%a: tensor<16x32xf32>, %b: tensor<32x8xf32>) -> tensor<16x8xf32> {
  %l = iree_encoding.set_encoding %a : tensor<16x32xf32> -> tensor<16x32xf32, #lhs>
  %r = iree_encoding.set_encoding %b : tensor<32x8xf32> -> tensor<32x8xf32, #rhs>
  %res = flow.dispatch.region -> (tensor<16x8xf32>) {
    %zero = arith.constant 0.000000e+00 : f32
    %e = tensor.empty() : tensor<16x8xf32, #acc>
    %f = linalg.fill ins(%zero : f32) outs(%e : tensor<16x8xf32, #acc>) -> tensor<16x8xf32, #acc>
    %m = linalg.matmul indexing_maps = [#mk, #kn, #mn] ins(%l, %r : tensor<16x32xf32, #lhs>, tensor<32x8xf32, #rhs>) outs(%f : tensor<16x8xf32, #acc>) -> tensor<16x8xf32, #acc>
    %u = iree_encoding.unset_encoding %m : tensor<16x8xf32, #acc> -> tensor<16x8xf32>
    flow.return %u : tensor<16x8xf32>
  }
  util.return %res : tensor<16x8xf32>
}

// -----

// A non-splat constant larger than iree-flow-inline-constants-max-byte-length (256 bytes by default)
// is not cloned: a 96-element f32 table is 384 bytes, so the dispatch reads it from memory.
// EXPECT: in
#id = affine_map<(d0, d1) -> (d0, d1)>
util.func public @large_constant_not_cloned(%a: tensor<8x12xf32>) -> tensor<8x12xf32> {
  %table = arith.constant dense<[[0.0, 1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0, 9.0, 10.0, 11.0], [12.0, 13.0, 14.0, 15.0, 16.0, 17.0, 18.0, 19.0, 20.0, 21.0, 22.0, 23.0], [24.0, 25.0, 26.0, 27.0, 28.0, 29.0, 30.0, 31.0, 32.0, 33.0, 34.0, 35.0], [36.0, 37.0, 38.0, 39.0, 40.0, 41.0, 42.0, 43.0, 44.0, 45.0, 46.0, 47.0], [48.0, 49.0, 50.0, 51.0, 52.0, 53.0, 54.0, 55.0, 56.0, 57.0, 58.0, 59.0], [60.0, 61.0, 62.0, 63.0, 64.0, 65.0, 66.0, 67.0, 68.0, 69.0, 70.0, 71.0], [72.0, 73.0, 74.0, 75.0, 76.0, 77.0, 78.0, 79.0, 80.0, 81.0, 82.0, 83.0], [84.0, 85.0, 86.0, 87.0, 88.0, 89.0, 90.0, 91.0, 92.0, 93.0, 94.0, 95.0]]> : tensor<8x12xf32>
  %res = flow.dispatch.region -> (tensor<8x12xf32>) {
    %e = tensor.empty() : tensor<8x12xf32>
    %g = linalg.generic {indexing_maps = [#id, #id, #id], iterator_types = ["parallel", "parallel"]} ins(%a, %table : tensor<8x12xf32>, tensor<8x12xf32>) outs(%e : tensor<8x12xf32>) {
    ^bb0(%x: f32, %c: f32, %o: f32):
      %y = arith.addf %x, %c : f32
      linalg.yield %y : f32
    } -> tensor<8x12xf32>
    flow.return %g : tensor<8x12xf32>
  }
  util.return %res : tensor<8x12xf32>
}

// -----

// A fill whose only use inside the dispatch is the destination of a tensor.insert_slice is not cloned
// (hasUnfusableUseInDispatch: an insert_slice dest, and collectUnfusableInitSources): the dispatch
// writing the argument into the top rows of a zero tensor keeps reading the zero tensor from outside.
// EXPECT: in
util.func public @fill_into_insert_dest_not_cloned(%a: tensor<4x8xf32>) -> tensor<8x8xf32> {
  %zero = arith.constant 0.000000e+00 : f32
  %e = tensor.empty() : tensor<8x8xf32>
  %z = linalg.fill ins(%zero : f32) outs(%e : tensor<8x8xf32>) -> tensor<8x8xf32>
  %res = flow.dispatch.region -> (tensor<8x8xf32>) {
    %ins = tensor.insert_slice %a into %z[0, 0] [4, 8] [1, 1] : tensor<4x8xf32> into tensor<8x8xf32>
    flow.return %ins : tensor<8x8xf32>
  }
  util.return %res : tensor<8x8xf32>
}

// -----

// A flow op is never cloned (isUncloneableOp: only arith, affine, complex, encoding, linalg_ext,
// linalg and tensor ops are): the flow.tensor.reshape of the flat weight to 16x8 stays outside, a separate step.
// EXPECT: in
util.func public @flow_reshape_not_cloned(%a: tensor<8x16xf32>, %b: tensor<128xf32>) -> tensor<8x8xf32> {
  %flat = flow.tensor.reshape %b : tensor<128xf32> -> tensor<16x8xf32>
  %res = flow.dispatch.region -> (tensor<8x8xf32>) {
    %zero = arith.constant 0.000000e+00 : f32
    %e = tensor.empty() : tensor<8x8xf32>
    %f = linalg.fill ins(%zero : f32) outs(%e : tensor<8x8xf32>) -> tensor<8x8xf32>
    %m = linalg.matmul ins(%a, %flat : tensor<8x16xf32>, tensor<16x8xf32>) outs(%f : tensor<8x8xf32>) -> tensor<8x8xf32>
    flow.return %m : tensor<8x8xf32>
  }
  util.return %res : tensor<8x8xf32>
}
