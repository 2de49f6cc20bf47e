// RUN: egg-dispatch opt --split-input-file --rules hoist --target x86_64-avx2 %s | filecheck %s

// Condition 4 (layout-of e = Tiled): HoistEncodingOps walks every set_encoding of a dispatch, whoever reads it. Here a
// linalg.generic whose body reads the scalar %s from outside (an op the e-graph holds as opaque) reads the encoded
// argument; its set_encoding gets an encode dispatch of its own (flow.tensor.encode), as for a contraction.
// CHECK-LABEL: plans for @hoist_set_encoding_read_by_an_opaque_generic: 2; {{.*}}hoist-op-operand-set-encoding 1
// CHECK:       plan 1 of @hoist_set_encoding_read_by_an_opaque_generic: encode dispatch{linalg.generic, iree_encoding.unset_encoding}
// CHECK:       flow.tensor.encode %arg0 : tensor<16x16xf32> -> tensor<16x16xf32, #encoding>
#map = affine_map<(d0, d1, d2) -> (d0, d2)>
#map1 = affine_map<(d0, d1, d2) -> (d2, d1)>
#map2 = affine_map<(d0, d1, d2) -> (d0, d1)>
#id = affine_map<(d0, d1) -> (d0, d1)>
#lhs = #iree_encoding.encoding<operand_index = 0 : index, op_type = matmul, element_types = [f32, f32, f32], user_indexing_maps = [#map, #map1, #map2], iteration_sizes = [16, 16, 16]>
func.func @hoist_set_encoding_read_by_an_opaque_generic(%a: tensor<16x16xf32>, %s: f32) -> tensor<16x16xf32> {
  %0 = flow.dispatch.region -> (tensor<16x16xf32>) {
    %ea = iree_encoding.set_encoding %a : tensor<16x16xf32> -> tensor<16x16xf32, #lhs>
    %e = tensor.empty() : tensor<16x16xf32, #lhs>
    %g = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]} ins(%ea : tensor<16x16xf32, #lhs>) outs(%e : tensor<16x16xf32, #lhs>) {
    ^bb0(%x: f32, %o: f32):
      %y = arith.mulf %x, %s : f32
      linalg.yield %y : f32
    } -> tensor<16x16xf32, #lhs>
    %u = iree_encoding.unset_encoding %g : tensor<16x16xf32, #lhs> -> tensor<16x16xf32>
    flow.return %u : tensor<16x16xf32>
  }
  func.return %0 : tensor<16x16xf32>
}

// -----

// Condition 4 (Enc -1 name ..): an encoding the cost model does not price (#iree_encoding.testing) read by a call
// is hoisted with its row slice (conditions 1 and 2 as for a contraction; IREE's @hoist_convertible_slice_op).
// CHECK-LABEL: plans for @hoist_testing_encoding_read_by_a_call: 2; {{.*}}hoist-op-operand-unpriced-set-encoding 1
// CHECK:       plan 1 of @hoist_testing_encoding_read_by_a_call: dispatch{tensor.extract_slice, iree_encoding.set_encoding} dispatch{util.call}
// CHECK:       flow.dispatch.region -> (tensor<640x320xf32, #iree_encoding.testing<>>) {
// CHECK-NEXT:    tensor.extract_slice %arg0[7, 0] [640, 320] [1, 1]
// CHECK-NEXT:    iree_encoding.set_encoding
#encoding = #iree_encoding.testing<>
util.func private @get_tensor(tensor<640x320xf32, #encoding>) -> tensor<640x320xf32>
util.func public @hoist_testing_encoding_read_by_a_call(%input: tensor<1024x320xf32>) -> tensor<640x320xf32> {
  %0 = flow.dispatch.region -> (tensor<640x320xf32>) {
    %1 = tensor.extract_slice %input[7, 0] [640, 320] [1, 1] : tensor<1024x320xf32> to tensor<640x320xf32>
    %2 = iree_encoding.set_encoding %1 : tensor<640x320xf32> -> tensor<640x320xf32, #encoding>
    %3 = util.call @get_tensor(%2) : (tensor<640x320xf32, #encoding>) -> tensor<640x320xf32>
    flow.return %3 : tensor<640x320xf32>
  }
  util.return %0 : tensor<640x320xf32>
}

// -----

// Condition 4 fails: HoistEncodingOps never hoists a set_encoding of a padding encoding (one plan: in the dispatch).
// CHECK-LABEL: plans for @dont_hoist_padding_encoding: 1;
// CHECK-NOT:   hoist-op-operand
#pad = #iree_encoding.padding<[0, 64]>
util.func private @get_padded(tensor<640x320xf32, #pad>) -> tensor<640x320xf32>
util.func public @dont_hoist_padding_encoding(%input: tensor<640x320xf32>) -> tensor<640x320xf32> {
  %0 = flow.dispatch.region -> (tensor<640x320xf32>) {
    %2 = iree_encoding.set_encoding %input : tensor<640x320xf32> -> tensor<640x320xf32, #pad>
    %3 = util.call @get_padded(%2) : (tensor<640x320xf32, #pad>) -> tensor<640x320xf32>
    flow.return %3 : tensor<640x320xf32>
  }
  util.return %0 : tensor<640x320xf32>
}

// -----

// Condition 4 fails: the target resolves this matmul encoding (f32 x f16 -> f32, element types it has no tiles for) to
// the identity layout, which `noop` removes: nothing to hoist for an opaque reader (one plan).
// CHECK-LABEL: plans for @dont_hoist_identity_layout_for_an_opaque_generic: 1;
// CHECK-NOT:   hoist-op-operand
#map = affine_map<(d0, d1, d2) -> (d0, d2)>
#map1 = affine_map<(d0, d1, d2) -> (d2, d1)>
#map2 = affine_map<(d0, d1, d2) -> (d0, d1)>
#id = affine_map<(d0, d1) -> (d0, d1)>
#lhs = #iree_encoding.encoding<operand_index = 0 : index, op_type = matmul, element_types = [f32, f16, f32], user_indexing_maps = [#map, #map1, #map2], iteration_sizes = [16, 16, 16]>
func.func @dont_hoist_identity_layout_for_an_opaque_generic(%a: tensor<16x16xf32>, %s: f32) -> tensor<16x16xf32> {
  %0 = flow.dispatch.region -> (tensor<16x16xf32>) {
    %ea = iree_encoding.set_encoding %a : tensor<16x16xf32> -> tensor<16x16xf32, #lhs>
    %e = tensor.empty() : tensor<16x16xf32, #lhs>
    %g = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]} ins(%ea : tensor<16x16xf32, #lhs>) outs(%e : tensor<16x16xf32, #lhs>) {
    ^bb0(%x: f32, %o: f32):
      %y = arith.mulf %x, %s : f32
      linalg.yield %y : f32
    } -> tensor<16x16xf32, #lhs>
    %u = iree_encoding.unset_encoding %g : tensor<16x16xf32, #lhs> -> tensor<16x16xf32>
    flow.return %u : tensor<16x16xf32>
  }
  func.return %0 : tensor<16x16xf32>
}
