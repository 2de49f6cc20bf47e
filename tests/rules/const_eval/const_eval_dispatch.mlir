// RUN: egg-dispatch opt --split-input-file --rules const_eval --target x86_64-avx2 %s | filecheck %s

// const_eval.egg conditions 1 and 3: a dispatch that builds a causal mask from linalg.index reads no
// function argument, and its 16x16 f32 result (1 KiB) is under the threshold: const-expr hoisting
// (run again after IREE's data-tiling passes) computes it once at load into a global, read by the
// dispatch that adds it. Plan 1 is the start state, the mask computed on every call.
// CHECK-LABEL: plans for @const_eval_a_dispatch_of_a_generic: 2;
// CHECK-SAME:  const-eval-dispatch-of-generic 1
// CHECK:       plan 0 of {{.*}}: init{linalg.generic} dispatch{linalg.generic}{{$}}
// CHECK:       util.global private @{{.+}} : tensor<16x16xf32>
// CHECK:       util.initializer
// CHECK:         linalg.index
// CHECK:       plan 1 of {{.*}}: dispatch{linalg.generic} dispatch{linalg.generic}{{$}}
#id2 = affine_map<(d0, d1) -> (d0, d1)>
func.func @const_eval_a_dispatch_of_a_generic(%x: tensor<16x16xf32>) -> tensor<16x16xf32> {
  %mask = flow.dispatch.region -> (tensor<16x16xf32>) {
    %e = tensor.empty() : tensor<16x16xf32>
    %m = linalg.generic {indexing_maps = [#id2], iterator_types = ["parallel", "parallel"]} outs(%e : tensor<16x16xf32>) {
    ^bb0(%o: f32):
      %i = linalg.index 0 : index
      %j = linalg.index 1 : index
      %lt = arith.cmpi ult, %i, %j : index
      %zero = arith.constant 0.0 : f32
      %ninf = arith.constant 0xFF800000 : f32
      %v = arith.select %lt, %ninf, %zero : f32
      linalg.yield %v : f32
    } -> tensor<16x16xf32>
    flow.return %m : tensor<16x16xf32>
  }
  %y = flow.dispatch.region -> (tensor<16x16xf32>) {
    %init = tensor.empty() : tensor<16x16xf32>
    %r = linalg.generic {indexing_maps = [#id2, #id2, #id2], iterator_types = ["parallel", "parallel"]} ins(%x, %mask : tensor<16x16xf32>, tensor<16x16xf32>) outs(%init : tensor<16x16xf32>) {
    ^bb0(%a: f32, %b: f32, %o: f32):
      %s = arith.addf %a, %b : f32
      linalg.yield %s : f32
    } -> tensor<16x16xf32>
    flow.return %r : tensor<16x16xf32>
  }
  return %y : tensor<16x16xf32>
}

// -----

// const_eval.egg condition 1: the first dispatch scales the argument, so a function argument feeds
// it: it runs on every call, not at load.
// CHECK-LABEL: plans for @dont_const_eval_a_dispatch_reading_an_argument: 1;
// CHECK-NOT:   const-eval-dispatch-of-generic
// CHECK-NOT:   init{
#id2 = affine_map<(d0, d1) -> (d0, d1)>
func.func @dont_const_eval_a_dispatch_reading_an_argument(%x: tensor<16x16xf32>) -> tensor<16x16xf32> {
  %t = flow.dispatch.region -> (tensor<16x16xf32>) {
    %e = tensor.empty() : tensor<16x16xf32>
    %m = linalg.generic {indexing_maps = [#id2, #id2], iterator_types = ["parallel", "parallel"]} ins(%x : tensor<16x16xf32>) outs(%e : tensor<16x16xf32>) {
    ^bb0(%a: f32, %o: f32):
      %v = arith.mulf %a, %a : f32
      linalg.yield %v : f32
    } -> tensor<16x16xf32>
    flow.return %m : tensor<16x16xf32>
  }
  %y = flow.dispatch.region -> (tensor<16x16xf32>) {
    %init = tensor.empty() : tensor<16x16xf32>
    %r = linalg.generic {indexing_maps = [#id2, #id2, #id2], iterator_types = ["parallel", "parallel"]} ins(%x, %t : tensor<16x16xf32>, tensor<16x16xf32>) outs(%init : tensor<16x16xf32>) {
    ^bb0(%a: f32, %b: f32, %o: f32):
      %s = arith.addf %a, %b : f32
      linalg.yield %s : f32
    } -> tensor<16x16xf32>
    flow.return %r : tensor<16x16xf32>
  }
  return %y : tensor<16x16xf32>
}

// -----

// const_eval.egg condition 3: the same mask at 1024x512 f32 is 2 MiB, over the 1 MiB threshold
// (--iree-opt-const-expr-max-size-increase-threshold): it is not hoisted into a global.
// CHECK-LABEL: plans for @dont_const_eval_a_dispatch_over_the_threshold: 1;
// CHECK-NOT:   const-eval-dispatch-of-generic
// CHECK-NOT:   init{
#id2 = affine_map<(d0, d1) -> (d0, d1)>
func.func @dont_const_eval_a_dispatch_over_the_threshold(%x: tensor<1024x512xf32>) -> tensor<1024x512xf32> {
  %mask = flow.dispatch.region -> (tensor<1024x512xf32>) {
    %e = tensor.empty() : tensor<1024x512xf32>
    %m = linalg.generic {indexing_maps = [#id2], iterator_types = ["parallel", "parallel"]} outs(%e : tensor<1024x512xf32>) {
    ^bb0(%o: f32):
      %i = linalg.index 0 : index
      %j = linalg.index 1 : index
      %lt = arith.cmpi ult, %i, %j : index
      %zero = arith.constant 0.0 : f32
      %ninf = arith.constant 0xFF800000 : f32
      %v = arith.select %lt, %ninf, %zero : f32
      linalg.yield %v : f32
    } -> tensor<1024x512xf32>
    flow.return %m : tensor<1024x512xf32>
  }
  %y = flow.dispatch.region -> (tensor<1024x512xf32>) {
    %init = tensor.empty() : tensor<1024x512xf32>
    %r = linalg.generic {indexing_maps = [#id2, #id2, #id2], iterator_types = ["parallel", "parallel"]} ins(%x, %mask : tensor<1024x512xf32>, tensor<1024x512xf32>) outs(%init : tensor<1024x512xf32>) {
    ^bb0(%a: f32, %b: f32, %o: f32):
      %s = arith.addf %a, %b : f32
      linalg.yield %s : f32
    } -> tensor<1024x512xf32>
    flow.return %r : tensor<1024x512xf32>
  }
  return %y : tensor<1024x512xf32>
}

// -----

// const_eval.egg condition 1 through a reshape: the table a dispatch broadcasts over the heads is a
// collapse_shape of a constant, and a reshape of a const-expr is a const-expr (IREE's ConstExprAnalysis;
// rules/analysis.egg const-expr-reshape), so the dispatch is evaluated at load (the RoPE tables of
// transformers' Llama and Qwen2: a collapsed cos table broadcast to 4 heads). The collapse is also the
// constant it folds into (fold_constants.egg condition 4), which plans 1 and 3 read.
// CHECK-LABEL: plans for @const_eval_a_dispatch_of_a_reshaped_constant: 4;
// CHECK-SAME:  const-eval-dispatch-of-generic 1
// CHECK:       plan 0 of {{.*}}: init{tensor.collapse_shape, linalg.generic} dispatch{linalg.generic}{{$}}
// CHECK:       plan 1 of {{.*}}: init{linalg.generic} dispatch{linalg.generic}{{$}}
#bcast = affine_map<(d0, d1) -> (d1)>
#id2 = affine_map<(d0, d1) -> (d0, d1)>
func.func @const_eval_a_dispatch_of_a_reshaped_constant(%x: tensor<4x16xf32>) -> tensor<4x16xf32> {
  %cst = arith.constant dense<[[0.0, 0.5, 1.0, 1.5], [2.0, 2.5, 3.0, 3.5], [4.0, 4.5, 5.0, 5.5], [6.0, 6.5, 7.0, 7.5]]> : tensor<4x4xf32>
  %flat = tensor.collapse_shape %cst [[0, 1]] : tensor<4x4xf32> into tensor<16xf32>
  %table = flow.dispatch.region -> (tensor<4x16xf32>) {
    %e = tensor.empty() : tensor<4x16xf32>
    %b = linalg.generic {indexing_maps = [#bcast, #id2], iterator_types = ["parallel", "parallel"]} ins(%flat : tensor<16xf32>) outs(%e : tensor<4x16xf32>) {
    ^bb0(%a: f32, %o: f32):
      %c = math.cos %a : f32
      linalg.yield %c : f32
    } -> tensor<4x16xf32>
    flow.return %b : tensor<4x16xf32>
  }
  %y = flow.dispatch.region -> (tensor<4x16xf32>) {
    %init = tensor.empty() : tensor<4x16xf32>
    %r = linalg.generic {indexing_maps = [#id2, #id2, #id2], iterator_types = ["parallel", "parallel"]} ins(%x, %table : tensor<4x16xf32>, tensor<4x16xf32>) outs(%init : tensor<4x16xf32>) {
    ^bb0(%a: f32, %b: f32, %o: f32):
      %s = arith.mulf %a, %b : f32
      linalg.yield %s : f32
    } -> tensor<4x16xf32>
    flow.return %r : tensor<4x16xf32>
  }
  return %y : tensor<4x16xf32>
}
