// FuseEncodingOpsIntoDispatchRegions (FuseEncodingOpsIntoDispatchRegions.cpp, runOnOperation): every
// set_encoding outside a dispatch is a candidate, whatever reads it. Here the encoded value is a
// function result (a module that hands packed activations to the next one): the producer dispatch
// takes the encode and returns the packed value.
// EXPECT: in
#mk = affine_map<(d0, d1, d2) -> (d0, d2)>
#kn = affine_map<(d0, d1, d2) -> (d2, d1)>
#mn = affine_map<(d0, d1, d2) -> (d0, d1)>
#id = affine_map<(d0, d1) -> (d0, d1)>
#lhs = #iree_encoding.encoding<operand_index = 0 : index, op_type = matmul, element_types = [f32, f32, f32], user_indexing_maps = [#mk, #kn, #mn], iteration_sizes = [8, 32, 16]>
util.func public @encode_a_result(%a: tensor<8x16xf32>) -> tensor<8x16xf32, #lhs> {
  %init = tensor.empty() : tensor<8x16xf32>
  %sq = flow.dispatch.region -> (tensor<8x16xf32>) {
    %g = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]} ins(%a : tensor<8x16xf32>) outs(%init : tensor<8x16xf32>) {
    ^bb0(%x: f32, %o: f32):
      %y = arith.mulf %x, %x : f32
      linalg.yield %y : f32
    } -> tensor<8x16xf32>
    flow.return %g : tensor<8x16xf32>
  }
  %l = iree_encoding.set_encoding %sq : tensor<8x16xf32> -> tensor<8x16xf32, #lhs>
  util.return %l : tensor<8x16xf32, #lhs>
}

// -----

// The pass does not look at the encoding: one the cost model does not price (#iree_encoding.testing,
// which IREE's own tests use) is fused the same way. The importer keeps it as written, as an encode
// with no layout, so the fuse family moves it and no rule that needs a layout does.
// EXPECT: in
#id = affine_map<(d0, d1) -> (d0, d1)>
#testing = #iree_encoding.testing<>
util.func public @encode_testing(%a: tensor<8x16xf32>, %b: tensor<8x16xf32>) -> tensor<8x16xf32, #testing> {
  %init = tensor.empty() : tensor<8x16xf32>
  %sum = flow.dispatch.region -> (tensor<8x16xf32>) {
    %g = linalg.generic {indexing_maps = [#id, #id, #id], iterator_types = ["parallel", "parallel"]} ins(%a, %b : tensor<8x16xf32>, tensor<8x16xf32>) outs(%init : tensor<8x16xf32>) {
    ^bb0(%x: f32, %y: f32, %o: f32):
      %s = arith.subf %x, %y : f32
      linalg.yield %s : f32
    } -> tensor<8x16xf32>
    flow.return %g : tensor<8x16xf32>
  }
  %e = iree_encoding.set_encoding %sum : tensor<8x16xf32> -> tensor<8x16xf32, #testing>
  util.return %e : tensor<8x16xf32, #testing>
}

// -----

// A reduction producer (any linalg op is on isFusableWithSetEncoding's list), with a serialized
// layout encoding (#iree_encoding.layout, what an encoding becomes once a target resolved it).
// EXPECT: in
#in = affine_map<(d0, d1) -> (d0, d1)>
#out = affine_map<(d0, d1) -> (d0)>
#layout = #iree_encoding.layout<[#iree_encoding.testing<layouts = []>]>
util.func public @encode_a_reduction(%a: tensor<16x64xf32>) -> tensor<16xf32, #layout> {
  %zero = arith.constant 0.0 : f32
  %init = tensor.empty() : tensor<16xf32>
  %fill = linalg.fill ins(%zero : f32) outs(%init : tensor<16xf32>) -> tensor<16xf32>
  %rows = flow.dispatch.region -> (tensor<16xf32>) {
    %g = linalg.generic {indexing_maps = [#in, #out], iterator_types = ["parallel", "reduction"]} ins(%a : tensor<16x64xf32>) outs(%fill : tensor<16xf32>) {
    ^bb0(%x: f32, %acc: f32):
      %s = arith.addf %x, %acc : f32
      linalg.yield %s : f32
    } -> tensor<16xf32>
    flow.return %g : tensor<16xf32>
  }
  %e = iree_encoding.set_encoding %rows : tensor<16xf32> -> tensor<16xf32, #layout>
  util.return %e : tensor<16xf32, #layout>
}

// -----

// An encode of an elementwise result read by a generic in another dispatch (the generic decodes it
// again, as IREE's tests do with testing encodings): the encode still joins its producer, and the
// consumer dispatch reads the encoded value.
// EXPECT: in
#id = affine_map<(d0, d1) -> (d0, d1)>
#testing = #iree_encoding.testing<>
util.func public @encode_read_by_a_generic(%a: tensor<8x16xf32>) -> tensor<8x16xf32> {
  %init = tensor.empty() : tensor<8x16xf32>
  %neg = flow.dispatch.region -> (tensor<8x16xf32>) {
    %g = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]} ins(%a : tensor<8x16xf32>) outs(%init : tensor<8x16xf32>) {
    ^bb0(%x: f32, %o: f32):
      %n = arith.negf %x : f32
      linalg.yield %n : f32
    } -> tensor<8x16xf32>
    flow.return %g : tensor<8x16xf32>
  }
  %e = iree_encoding.set_encoding %neg : tensor<8x16xf32> -> tensor<8x16xf32, #testing>
  %out = flow.dispatch.region -> (tensor<8x16xf32>) {
    %u = iree_encoding.unset_encoding %e : tensor<8x16xf32, #testing> -> tensor<8x16xf32>
    %g = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]} ins(%u : tensor<8x16xf32>) outs(%init : tensor<8x16xf32>) {
    ^bb0(%x: f32, %o: f32):
      %d = arith.addf %x, %x : f32
      linalg.yield %d : f32
    } -> tensor<8x16xf32>
    flow.return %g : tensor<8x16xf32>
  }
  util.return %out : tensor<8x16xf32>
}
