// RUN: egg-dispatch opt --split-input-file --rules const_eval --target x86_64-avx2 %s | filecheck %s

// fold_constants.egg conditions 1-3: a static slice (rows 1 and 3: offsets [1, 0], sizes [2, 4], strides
// [2, 1]) of a dense constant, inside the dispatch that reads it, is also the constant IREE's const-eval
// folds it into (HoistIntoGlobals + JitGlobals): plan 1 reads that constant, the rows written out by hand.
// CHECK-LABEL: plans for @fold_a_slice_of_a_constant: 2;
// CHECK-SAME:  fold-constant-slice 1
// CHECK:       plan 0 of {{.*}}: dispatch{tensor.extract_slice, linalg.generic}{{$}}
// CHECK:       plan 1 of {{.*}}: dispatch{linalg.generic}{{$}}
// CHECK-NEXT:  #map
// CHECK-NEXT:  func.func
// CHECK-NEXT:    arith.constant dense<{{\[}}[4.0e+00, 5.0e+00, 6.0e+00, 7.0e+00], [1.2e+01, 1.3e+01, 1.4e+01, 1.5e+01]]> : tensor<2x4xf32>
#id2 = affine_map<(d0, d1) -> (d0, d1)>
func.func @fold_a_slice_of_a_constant(%x: tensor<2x4xf32>) -> tensor<2x4xf32> {
  %cst = arith.constant dense<[[0.0, 1.0, 2.0, 3.0], [4.0, 5.0, 6.0, 7.0], [8.0, 9.0, 10.0, 11.0], [12.0, 13.0, 14.0, 15.0]]> : tensor<4x4xf32>
  %y = flow.dispatch.region -> (tensor<2x4xf32>) {
    %s = tensor.extract_slice %cst[1, 0] [2, 4] [2, 1] : tensor<4x4xf32> to tensor<2x4xf32>
    %e = tensor.empty() : tensor<2x4xf32>
    %r = linalg.generic {indexing_maps = [#id2, #id2, #id2], iterator_types = ["parallel", "parallel"]} ins(%x, %s : tensor<2x4xf32>, tensor<2x4xf32>) outs(%e : tensor<2x4xf32>) {
    ^bb0(%a: f32, %b: f32, %o: f32):
      %v = arith.addf %a, %b : f32
      linalg.yield %v : f32
    } -> tensor<2x4xf32>
    flow.return %r : tensor<2x4xf32>
  }
  return %y : tensor<2x4xf32>
}

// -----

// fold_constants.egg conditions 4 and 7: an expand_shape of a dense constant is the constant MLIR's
// reshape folder gives (foldReshapeOp), the same elements in row-major order; between dispatches (the
// importer's Dispatch of the reshape the dispatch reads) that constant is a dispatch input, nothing run.
// CHECK-LABEL: plans for @fold_a_reshape_of_a_constant: 2;
// CHECK-SAME:  fold-constant-dispatch {{[0-9]+}}, fold-constant-reshape 1
// CHECK:       plan 0 of {{.*}}: dispatch{tensor.expand_shape, linalg.generic}{{$}}
// CHECK:       plan 1 of {{.*}}: dispatch{linalg.generic}{{$}}
// CHECK-NEXT:  #map
// CHECK-NEXT:  func.func
// CHECK-NEXT:    arith.constant dense<{{\[}}[0.0e+00, 1.0e+00, 2.0e+00, 3.0e+00], [4.0e+00, 5.0e+00, 6.0e+00, 7.0e+00]]> : tensor<2x4xf32>
#id2 = affine_map<(d0, d1) -> (d0, d1)>
func.func @fold_a_reshape_of_a_constant(%x: tensor<2x4xf32>) -> tensor<2x4xf32> {
  %cst = arith.constant dense<[0.0, 1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0]> : tensor<8xf32>
  %s = tensor.expand_shape %cst [[0, 1]] output_shape [2, 4] : tensor<8xf32> into tensor<2x4xf32>
  %y = flow.dispatch.region -> (tensor<2x4xf32>) {
    %e = tensor.empty() : tensor<2x4xf32>
    %r = linalg.generic {indexing_maps = [#id2, #id2, #id2], iterator_types = ["parallel", "parallel"]} ins(%x, %s : tensor<2x4xf32>, tensor<2x4xf32>) outs(%e : tensor<2x4xf32>) {
    ^bb0(%a: f32, %b: f32, %o: f32):
      %v = arith.addf %a, %b : f32
      linalg.yield %v : f32
    } -> tensor<2x4xf32>
    flow.return %r : tensor<2x4xf32>
  }
  return %y : tensor<2x4xf32>
}

// -----

// fold_constants.egg condition 6: a chain folds one op at a time. Row 2 of the constant, collapsed to a
// vector, expanded to 2x2: the slice folds, then the collapse of that constant, then the expand; every
// prefix of the chain is a plan (plan 3 reads the last constant, [[8, 9], [10, 11]]).
// CHECK-LABEL: plans for @fold_a_reshape_of_a_slice_of_a_constant: 4;
// CHECK-SAME:  fold-constant-reshape 2, fold-constant-slice 1
// CHECK:       plan 0 of {{.*}}: dispatch{tensor.extract_slice, tensor.collapse_shape, tensor.expand_shape, linalg.generic}{{$}}
// CHECK:       plan 1 of {{.*}}: dispatch{tensor.collapse_shape, tensor.expand_shape, linalg.generic}{{$}}
// CHECK:       plan 2 of {{.*}}: dispatch{tensor.expand_shape, linalg.generic}{{$}}
// CHECK:       plan 3 of {{.*}}: dispatch{linalg.generic}{{$}}
// CHECK-NEXT:  #map
// CHECK-NEXT:  func.func
// CHECK-NEXT:    arith.constant dense<{{\[}}[8.0e+00, 9.0e+00], [1.0e+01, 1.1e+01]]> : tensor<2x2xf32>
#id2 = affine_map<(d0, d1) -> (d0, d1)>
func.func @fold_a_reshape_of_a_slice_of_a_constant(%x: tensor<2x2xf32>) -> tensor<2x2xf32> {
  %cst = arith.constant dense<[[0.0, 1.0, 2.0, 3.0], [4.0, 5.0, 6.0, 7.0], [8.0, 9.0, 10.0, 11.0], [12.0, 13.0, 14.0, 15.0]]> : tensor<4x4xf32>
  %row = tensor.extract_slice %cst[2, 0] [1, 4] [1, 1] : tensor<4x4xf32> to tensor<1x4xf32>
  %flat = tensor.collapse_shape %row [[0, 1]] : tensor<1x4xf32> into tensor<4xf32>
  %s = tensor.expand_shape %flat [[0, 1]] output_shape [2, 2] : tensor<4xf32> into tensor<2x2xf32>
  %y = flow.dispatch.region -> (tensor<2x2xf32>) {
    %e = tensor.empty() : tensor<2x2xf32>
    %r = linalg.generic {indexing_maps = [#id2, #id2, #id2], iterator_types = ["parallel", "parallel"]} ins(%x, %s : tensor<2x2xf32>, tensor<2x2xf32>) outs(%e : tensor<2x2xf32>) {
    ^bb0(%a: f32, %b: f32, %o: f32):
      %v = arith.addf %a, %b : f32
      linalg.yield %v : f32
    } -> tensor<2x2xf32>
    flow.return %r : tensor<2x2xf32>
  }
  return %y : tensor<2x2xf32>
}

// -----

// fold_constants.egg condition 5: a linalg.transpose of a dense constant (a hoistable leaf, const-evaluated
// by IREE) is the transposed constant.
// CHECK-LABEL: plans for @fold_a_transpose_of_a_constant: 2;
// CHECK-SAME:  fold-constant-transpose 1
// CHECK:       plan 0 of {{.*}}: dispatch{linalg.transpose, linalg.generic}{{$}}
// CHECK:       plan 1 of {{.*}}: dispatch{linalg.generic}{{$}}
// CHECK-NEXT:  #map
// CHECK-NEXT:  func.func
// CHECK-NEXT:    arith.constant dense<{{\[}}[0.0e+00, 2.0e+00, 4.0e+00, 6.0e+00], [1.0e+00, 3.0e+00, 5.0e+00, 7.0e+00]]> : tensor<2x4xf32>
#id2 = affine_map<(d0, d1) -> (d0, d1)>
func.func @fold_a_transpose_of_a_constant(%x: tensor<2x4xf32>) -> tensor<2x4xf32> {
  %cst = arith.constant dense<[[0.0, 1.0], [2.0, 3.0], [4.0, 5.0], [6.0, 7.0]]> : tensor<4x2xf32>
  %init = tensor.empty() : tensor<2x4xf32>
  %s = linalg.transpose ins(%cst : tensor<4x2xf32>) outs(%init : tensor<2x4xf32>) permutation = [1, 0]
  %y = flow.dispatch.region -> (tensor<2x4xf32>) {
    %e = tensor.empty() : tensor<2x4xf32>
    %r = linalg.generic {indexing_maps = [#id2, #id2, #id2], iterator_types = ["parallel", "parallel"]} ins(%x, %s : tensor<2x4xf32>, tensor<2x4xf32>) outs(%e : tensor<2x4xf32>) {
    ^bb0(%a: f32, %b: f32, %o: f32):
      %v = arith.addf %a, %b : f32
      linalg.yield %v : f32
    } -> tensor<2x4xf32>
    flow.return %r : tensor<2x4xf32>
  }
  return %y : tensor<2x4xf32>
}

// -----

// fold_constants.egg condition 1: a dense_resource constant (a torch export's weights) folds too: its
// blob's row 1 is [4, 8, 12, 16], printed as the hex IREE reads.
// CHECK-LABEL: plans for @fold_a_slice_of_a_dense_resource: 2;
// CHECK-SAME:  fold-constant-slice 1
// CHECK:       plan 1 of {{.*}}: dispatch{linalg.generic}{{$}}
// CHECK-NEXT:  #map
// CHECK-NEXT:  func.func
// CHECK-NEXT:    arith.constant dense<"0x00008040000000410000404100008041"> : tensor<1x4xf32>
#id2 = affine_map<(d0, d1) -> (d0, d1)>
func.func @fold_a_slice_of_a_dense_resource(%x: tensor<1x4xf32>) -> tensor<1x4xf32> {
  %cst = arith.constant dense_resource<fold.w> : tensor<2x4xf32>
  %s = tensor.extract_slice %cst[1, 0] [1, 4] [1, 1] : tensor<2x4xf32> to tensor<1x4xf32>
  %y = flow.dispatch.region -> (tensor<1x4xf32>) {
    %e = tensor.empty() : tensor<1x4xf32>
    %r = linalg.generic {indexing_maps = [#id2, #id2, #id2], iterator_types = ["parallel", "parallel"]} ins(%x, %s : tensor<1x4xf32>, tensor<1x4xf32>) outs(%e : tensor<1x4xf32>) {
    ^bb0(%a: f32, %b: f32, %o: f32):
      %v = arith.addf %a, %b : f32
      linalg.yield %v : f32
    } -> tensor<1x4xf32>
    flow.return %r : tensor<1x4xf32>
  }
  return %y : tensor<1x4xf32>
}

{-#
  dialect_resources: {
    builtin: {
      fold.w: "0x040000000000000000000000000000000000000000008040000000410000404100008041"
    }
  }
#-}

// -----

// fold_constants.egg condition 1: a slice of an external parameter is not folded: IREE reads the
// parameter from a file at run time and const-evaluates nothing of it.
// CHECK-LABEL: plans for @dont_fold_a_slice_of_a_parameter: 1;
// CHECK-NOT:   fold-constant
// CHECK:       plan 0 of
#id2 = affine_map<(d0, d1) -> (d0, d1)>
util.global private @w = #flow.parameter.named<"model"::"w"> : tensor<4x4xf32>
func.func @dont_fold_a_slice_of_a_parameter(%x: tensor<2x4xf32>) -> tensor<2x4xf32> {
  %w = util.global.load @w : tensor<4x4xf32>
  %s = tensor.extract_slice %w[1, 0] [2, 4] [1, 1] : tensor<4x4xf32> to tensor<2x4xf32>
  %y = flow.dispatch.region -> (tensor<2x4xf32>) {
    %e = tensor.empty() : tensor<2x4xf32>
    %r = linalg.generic {indexing_maps = [#id2, #id2, #id2], iterator_types = ["parallel", "parallel"]} ins(%x, %s : tensor<2x4xf32>, tensor<2x4xf32>) outs(%e : tensor<2x4xf32>) {
    ^bb0(%a: f32, %b: f32, %o: f32):
      %v = arith.addf %a, %b : f32
      linalg.yield %v : f32
    } -> tensor<2x4xf32>
    flow.return %r : tensor<2x4xf32>
  }
  return %y : tensor<2x4xf32>
}

// -----

// fold_constants.egg condition 2: a slice at an offset read from an argument is not static: no fold.
// CHECK-LABEL: plans for @dont_fold_a_dynamic_slice: 1;
// CHECK-NOT:   fold-constant
// CHECK:       plan 0 of
#id2 = affine_map<(d0, d1) -> (d0, d1)>
func.func @dont_fold_a_dynamic_slice(%x: tensor<2x4xf32>, %i: index) -> tensor<2x4xf32> {
  %cst = arith.constant dense<[[0.0, 1.0, 2.0, 3.0], [4.0, 5.0, 6.0, 7.0], [8.0, 9.0, 10.0, 11.0], [12.0, 13.0, 14.0, 15.0]]> : tensor<4x4xf32>
  %s = tensor.extract_slice %cst[%i, 0] [2, 4] [1, 1] : tensor<4x4xf32> to tensor<2x4xf32>
  %y = flow.dispatch.region -> (tensor<2x4xf32>) {
    %e = tensor.empty() : tensor<2x4xf32>
    %r = linalg.generic {indexing_maps = [#id2, #id2, #id2], iterator_types = ["parallel", "parallel"]} ins(%x, %s : tensor<2x4xf32>, tensor<2x4xf32>) outs(%e : tensor<2x4xf32>) {
    ^bb0(%a: f32, %b: f32, %o: f32):
      %v = arith.addf %a, %b : f32
      linalg.yield %v : f32
    } -> tensor<2x4xf32>
    flow.return %r : tensor<2x4xf32>
  }
  return %y : tensor<2x4xf32>
}

// -----

// fold_constants.egg condition 3: an i1 constant is sub-byte (IREE never hoists one as a leaf): no fold.
// CHECK-LABEL: plans for @dont_fold_a_slice_of_a_sub_byte_constant: 1;
// CHECK-NOT:   fold-constant
// CHECK:       plan 0 of
#id2 = affine_map<(d0, d1) -> (d0, d1)>
func.func @dont_fold_a_slice_of_a_sub_byte_constant(%x: tensor<2x4xf32>) -> tensor<2x4xf32> {
  %m = arith.constant dense<[[true, false, true, false], [false, true, false, true], [true, true, false, false], [false, false, true, true]]> : tensor<4x4xi1>
  %s = tensor.extract_slice %m[1, 0] [2, 4] [1, 1] : tensor<4x4xi1> to tensor<2x4xi1>
  %y = flow.dispatch.region -> (tensor<2x4xf32>) {
    %e = tensor.empty() : tensor<2x4xf32>
    %zero = arith.constant 0.0 : f32
    %r = linalg.generic {indexing_maps = [#id2, #id2, #id2], iterator_types = ["parallel", "parallel"]} ins(%x, %s : tensor<2x4xf32>, tensor<2x4xi1>) outs(%e : tensor<2x4xf32>) {
    ^bb0(%a: f32, %b: i1, %o: f32):
      %v = arith.select %b, %a, %zero : f32
      linalg.yield %v : f32
    } -> tensor<2x4xf32>
    flow.return %r : tensor<2x4xf32>
  }
  return %y : tensor<2x4xf32>
}

// -----

// fold_constants.egg conditions 3 and 4: an expand_shape to a dynamic shape (an output_shape size read
// from an argument) is not static: no fold.
// CHECK-LABEL: plans for @dont_fold_a_dynamic_reshape: 1;
// CHECK-NOT:   fold-constant
// CHECK:       plan 0 of
#id2 = affine_map<(d0, d1) -> (d0, d1)>
func.func @dont_fold_a_dynamic_reshape(%x: tensor<?x4xf32>) -> tensor<?x4xf32> {
  %c0 = arith.constant 0 : index
  %cst = arith.constant dense<[0.0, 1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0]> : tensor<8xf32>
  %d = tensor.dim %x, %c0 : tensor<?x4xf32>
  %s = tensor.expand_shape %cst [[0, 1]] output_shape [%d, 4] : tensor<8xf32> into tensor<?x4xf32>
  %y = flow.dispatch.region -> (tensor<?x4xf32>{%d}) {
    %e = tensor.empty(%d) : tensor<?x4xf32>
    %r = linalg.generic {indexing_maps = [#id2, #id2, #id2], iterator_types = ["parallel", "parallel"]} ins(%x, %s : tensor<?x4xf32>, tensor<?x4xf32>) outs(%e : tensor<?x4xf32>) {
    ^bb0(%a: f32, %b: f32, %o: f32):
      %v = arith.addf %a, %b : f32
      linalg.yield %v : f32
    } -> tensor<?x4xf32>
    flow.return %r : tensor<?x4xf32>
  }
  return %y : tensor<?x4xf32>
}


