// RUN: egg-dispatch opt --split-input-file --no-initial-plan --rules clone --target x86_64-avx2 %s | filecheck %s

// Conditions 8 and 9: a linalg.generic whose body reads a value from outside it (the scalar %s) is an op the
// e-graph holds as opaque; it roots its dispatch, and the pass clones the fill computed outside into that
// dispatch as into any other (isCloneableIntoDispatchOp: FillOp). IREE's lit case
// @clone_dequantization_like does the same for a linalg.batch_mmt4d, @complex_element_type for an empty.
// CHECK-LABEL: plans for @fill_cloned_into_opaque_generic: 2; {{.*}}clone-producer-into-op 1
// CHECK:       plan 0 of @fill_cloned_into_opaque_generic: dispatch{linalg.fill} dispatch{linalg.generic}
// CHECK:       plan 1 of @fill_cloned_into_opaque_generic: dispatch{linalg.fill, linalg.generic}
// CHECK:         linalg.fill
// CHECK-NEXT:    linalg.generic
#id = affine_map<(d0, d1) -> (d0, d1)>
util.func public @fill_cloned_into_opaque_generic(%a: tensor<4x8xf32>, %s: f32) -> tensor<4x8xf32> {
  %half = arith.constant 0.5 : f32
  %e = tensor.empty() : tensor<4x8xf32>
  %f = linalg.fill ins(%half : f32) outs(%e : tensor<4x8xf32>) -> tensor<4x8xf32>
  %r = flow.dispatch.region -> (tensor<4x8xf32>) {
    %e1 = tensor.empty() : tensor<4x8xf32>
    %g = linalg.generic {indexing_maps = [#id, #id, #id], iterator_types = ["parallel", "parallel"]} ins(%a, %f : tensor<4x8xf32>, tensor<4x8xf32>) outs(%e1 : tensor<4x8xf32>) {
    ^bb0(%x: f32, %y: f32, %o: f32):
      %m = arith.mulf %x, %y : f32
      %t = arith.addf %m, %s : f32
      linalg.yield %t : f32
    } -> tensor<4x8xf32>
    flow.return %g : tensor<4x8xf32>
  }
  util.return %r : tensor<4x8xf32>
}

// -----

// Condition 9 (cloneable-op k): a tensor.extract outside every dispatch, whose scalar the generic's body reads,
// is cloned into the dispatch with its index (isCloneableIntoDispatchOp: tensor::ExtractOp; IREE's
// @use_in_dispatch_count).
// CHECK-LABEL: plans for @extract_cloned_into_generic: 2; {{.*}}clone-scalar-op-operand 1
// CHECK:       plan 0 of @extract_cloned_into_generic: dispatch{tensor.extract} dispatch{linalg.generic}
// CHECK:       plan 1 of @extract_cloned_into_generic: dispatch{tensor.extract, linalg.generic}
util.func public @extract_cloned_into_generic(%ids: tensor<2xi32>, %a: tensor<4xi32>) -> tensor<4xi32> {
  %c1 = arith.constant 1 : index
  %v = tensor.extract %ids[%c1] : tensor<2xi32>
  %r = flow.dispatch.region -> (tensor<4xi32>) {
    %e = tensor.empty() : tensor<4xi32>
    %g = linalg.generic {indexing_maps = [affine_map<(d0) -> (d0)>, affine_map<(d0) -> (d0)>], iterator_types = ["parallel"]} ins(%a : tensor<4xi32>) outs(%e : tensor<4xi32>) {
    ^bb0(%x: i32, %o: i32):
      %s = arith.addi %x, %v : i32
      linalg.yield %s : i32
    } -> tensor<4xi32>
    flow.return %g : tensor<4xi32>
  }
  util.return %r : tensor<4xi32>
}

// -----

// Condition 10: a slice of a fill, both outside every dispatch, is read as one value a dispatch of its own
// computes; the pass clones the slice (always cloneable) and may leave its source where it is (IREE's
// @never_clone_scatter_outs_fill_through_slice: a scatter's `original` keeps its fill out). Plan 1 computes the
// fill in a dispatch of its own and slices it in the consumer's dispatch.
// CHECK-LABEL: plans for @slice_of_fill_cloned_without_its_fill: 2; {{.*}}clone-slice-of-cloneable-into-op 1
// CHECK:       plan 0 of @slice_of_fill_cloned_without_its_fill: dispatch{linalg.fill, tensor.extract_slice} dispatch{linalg.generic}
// CHECK:       plan 1 of @slice_of_fill_cloned_without_its_fill: dispatch{linalg.fill} dispatch{tensor.extract_slice, linalg.generic}
#id = affine_map<(d0, d1) -> (d0, d1)>
util.func public @slice_of_fill_cloned_without_its_fill(%a: tensor<4x8xf32>, %s: f32) -> tensor<4x8xf32> {
  %half = arith.constant 0.5 : f32
  %e = tensor.empty() : tensor<8x8xf32>
  %f = linalg.fill ins(%half : f32) outs(%e : tensor<8x8xf32>) -> tensor<8x8xf32>
  %sl = tensor.extract_slice %f[4, 0] [4, 8] [1, 1] : tensor<8x8xf32> to tensor<4x8xf32>
  %r = flow.dispatch.region -> (tensor<4x8xf32>) {
    %e1 = tensor.empty() : tensor<4x8xf32>
    %g = linalg.generic {indexing_maps = [#id, #id, #id], iterator_types = ["parallel", "parallel"]} ins(%a, %sl : tensor<4x8xf32>, tensor<4x8xf32>) outs(%e1 : tensor<4x8xf32>) {
    ^bb0(%x: f32, %y: f32, %o: f32):
      %m = arith.mulf %x, %y : f32
      %t = arith.addf %m, %s : f32
      linalg.yield %t : f32
    } -> tensor<4x8xf32>
    flow.return %g : tensor<4x8xf32>
  }
  util.return %r : tensor<4x8xf32>
}

// -----

// Condition 9 fails: the opaque generic reads a matmul's result, which is no cloneable producer; the matmul keeps
// its dispatch (one plan).
// CHECK-LABEL: plans for @dont_clone_matmul_into_opaque_generic: 1;
// CHECK-NOT:   clone-producer-into-op
#id = affine_map<(d0, d1) -> (d0, d1)>
util.func public @dont_clone_matmul_into_opaque_generic(%a: tensor<4x8xf32>, %b: tensor<8x8xf32>, %c: tensor<4x8xf32>, %s: f32) -> tensor<4x8xf32> {
  %m = flow.dispatch.region -> (tensor<4x8xf32>) {
    %mm = linalg.matmul ins(%a, %b : tensor<4x8xf32>, tensor<8x8xf32>) outs(%c : tensor<4x8xf32>) -> tensor<4x8xf32>
    flow.return %mm : tensor<4x8xf32>
  }
  %r = flow.dispatch.region -> (tensor<4x8xf32>) {
    %e1 = tensor.empty() : tensor<4x8xf32>
    %g = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]} ins(%m : tensor<4x8xf32>) outs(%e1 : tensor<4x8xf32>) {
    ^bb0(%x: f32, %o: f32):
      %t = arith.addf %x, %s : f32
      linalg.yield %t : f32
    } -> tensor<4x8xf32>
    flow.return %g : tensor<4x8xf32>
  }
  util.return %r : tensor<4x8xf32>
}

// -----

// Condition 8 fails: the fill's dispatch is read by a reshape between dispatches, which roots no dispatch: nothing is
// cloned into it.
// CHECK-LABEL: plans for @dont_clone_into_op_between_dispatches: 1; {{.*}} rule matches: none
util.func public @dont_clone_into_op_between_dispatches(%a: tensor<16xf32>) -> tensor<4x4xf32> {
  %d = flow.dispatch.region -> (tensor<16xf32>) {
    %half = arith.constant 0.5 : f32
    %e = tensor.empty() : tensor<16xf32>
    %f = linalg.fill ins(%half : f32) outs(%e : tensor<16xf32>) -> tensor<16xf32>
    flow.return %f : tensor<16xf32>
  }
  %r = tensor.expand_shape %d [[0, 1]] output_shape [4, 4] : tensor<16xf32> into tensor<4x4xf32>
  util.return %r : tensor<4x4xf32>
}

// -----

// Condition 11: a generic outside every dispatch, a function result, gets a dispatch of its own
// (wrapOpInDispatchRegion; IREE's @clone_elementwise_op_empty).
// CHECK-LABEL: plans for @generic_result_wrapped: 2; {{.*}}wrap-generic-result 1
// CHECK:       plan 0 of @generic_result_wrapped: linalg.generic
// CHECK:       plan 1 of @generic_result_wrapped: dispatch{linalg.generic}
util.func public @generic_result_wrapped(%a: tensor<16xf16>) -> tensor<16xf32> {
  %e = tensor.empty() : tensor<16xf32>
  %g = linalg.generic {indexing_maps = [affine_map<(d0) -> (d0)>, affine_map<(d0) -> (d0)>], iterator_types = ["parallel"]} ins(%a : tensor<16xf16>) outs(%e : tensor<16xf32>) {
  ^bb0(%x: f16, %o: f32):
    %y = arith.extf %x : f16 to f32
    linalg.yield %y : f32
  } -> tensor<16xf32>
  util.return %g : tensor<16xf32>
}

// -----

// Condition 11 fails: a reshape outside every dispatch is no generic or gather; the pass leaves it there.
// CHECK-LABEL: plans for @dont_wrap_reshape_result: 1; {{.*}} rule matches: none
// CHECK:       plan 0 of @dont_wrap_reshape_result: tensor.expand_shape
util.func public @dont_wrap_reshape_result(%a: tensor<16xf32>) -> tensor<4x4xf32> {
  %r = tensor.expand_shape %a [[0, 1]] output_shape [4, 4] : tensor<16xf32> into tensor<4x4xf32>
  util.return %r : tensor<4x4xf32>
}
