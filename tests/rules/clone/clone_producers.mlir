// RUN: egg-dispatch opt --split-input-file --rules clone --target x86_64-avx2 %s | filecheck %s

// clone.egg condition 3: a linalg.fill computed outside the matmul's dispatch is cloned into it
// (isCloneableIntoDispatchOp: FillOp), so the dispatch builds its own zero accumulator; the input's
// form, the fill in a dispatch of its own that the matmul reads, stays a plan.
// CHECK-LABEL: plans for @fill_cloned_into_matmul: 2; {{.*}} rule matches: clone-producer-init 1
// CHECK:       plan 0 of @fill_cloned_into_matmul: dispatch{linalg.fill} dispatch{linalg.matmul}
// CHECK:       plan 1 of @fill_cloned_into_matmul: dispatch{linalg.fill, linalg.matmul}
// CHECK:         linalg.fill
// CHECK-NEXT:    linalg.matmul ins(%arg0, %arg1 : {{.*}}) outs(%3 : tensor<4x16xf32>)
util.func public @fill_cloned_into_matmul(%a: tensor<4x8xf32>, %b: tensor<8x16xf32>) -> tensor<4x16xf32> {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<4x16xf32>
  %f = linalg.fill ins(%zero : f32) outs(%e : tensor<4x16xf32>) -> tensor<4x16xf32>
  %res = flow.dispatch.region -> (tensor<4x16xf32>) {
    %m = linalg.matmul ins(%a, %b : tensor<4x8xf32>, tensor<8x16xf32>) outs(%f : tensor<4x16xf32>) -> tensor<4x16xf32>
    flow.return %m : tensor<4x16xf32>
  }
  util.return %res : tensor<4x16xf32>
}

// -----

// clone.egg condition 3 (bit-extend key): a dequantization, an i8 weight sign-extended and scaled by a per-column
// f32 scale, is a bit extend (isBitExtendOp compares only the widest input of the highest rank, the
// i8 weight, with the f32 result): cloned into the matmul's dispatch as its rhs.
// CHECK-LABEL: plans for @dequant_cloned_into_matmul: 2; {{.*}} rule matches: {{.*}}clone-producer-rhs 1
// CHECK:       plan 0 of @dequant_cloned_into_matmul: dispatch{linalg.generic} dispatch{linalg.fill, linalg.matmul}
// CHECK:       plan 1 of @dequant_cloned_into_matmul: dispatch{linalg.generic, linalg.fill, linalg.matmul}
// CHECK:         arith.extsi
// CHECK:         linalg.matmul
#id = affine_map<(d0, d1) -> (d0, d1)>
#row = affine_map<(d0, d1) -> (d1)>
util.func public @dequant_cloned_into_matmul(%a: tensor<4x8xf32>, %w: tensor<8x16xi8>, %s: tensor<16xf32>) -> tensor<4x16xf32> {
  %x = flow.dispatch.region -> (tensor<8x16xf32>) {
    %ee = tensor.empty() : tensor<8x16xf32>
    %g = linalg.generic {indexing_maps = [#id, #row, #id], iterator_types = ["parallel", "parallel"]} ins(%w, %s : tensor<8x16xi8>, tensor<16xf32>) outs(%ee : tensor<8x16xf32>) {
    ^bb0(%v: i8, %c: f32, %o: f32):
      %i = arith.extsi %v : i8 to i32
      %f = arith.sitofp %i : i32 to f32
      %y = arith.mulf %f, %c : f32
      linalg.yield %y : f32
    } -> tensor<8x16xf32>
    flow.return %g : tensor<8x16xf32>
  }
  %res = flow.dispatch.region -> (tensor<4x16xf32>) {
    %zero = arith.constant 0.0 : f32
    %e = tensor.empty() : tensor<4x16xf32>
    %f = linalg.fill ins(%zero : f32) outs(%e : tensor<4x16xf32>) -> tensor<4x16xf32>
    %m = linalg.matmul ins(%a, %x : tensor<4x8xf32>, tensor<8x16xf32>) outs(%f : tensor<4x16xf32>) -> tensor<4x16xf32>
    flow.return %m : tensor<4x16xf32>
  }
  util.return %res : tensor<4x16xf32>
}

// -----

// clone.egg condition 3 fails: a negation keeps its element type (f32 to f32), so it is no bit extend and stays in
// its own dispatch (one plan: the input's).
// CHECK-LABEL: plans for @f32_exp_not_cloned: 1;
// CHECK-NOT:   clone-producer-lhs
// CHECK:       plan 0 of @f32_exp_not_cloned: dispatch{linalg.generic} dispatch{linalg.fill, linalg.matmul}
#id = affine_map<(d0, d1) -> (d0, d1)>
util.func public @f32_exp_not_cloned(%a: tensor<4x8xf32>, %b: tensor<8x16xf32>) -> tensor<4x16xf32> {
  %x = flow.dispatch.region -> (tensor<4x8xf32>) {
    %ee = tensor.empty() : tensor<4x8xf32>
    %g = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]} ins(%a : tensor<4x8xf32>) outs(%ee : tensor<4x8xf32>) {
    ^bb0(%v: f32, %o: f32):
      %y = arith.negf %v : f32
      linalg.yield %y : f32
    } -> tensor<4x8xf32>
    flow.return %g : tensor<4x8xf32>
  }
  %res = flow.dispatch.region -> (tensor<4x16xf32>) {
    %zero = arith.constant 0.0 : f32
    %e = tensor.empty() : tensor<4x16xf32>
    %f = linalg.fill ins(%zero : f32) outs(%e : tensor<4x16xf32>) -> tensor<4x16xf32>
    %m = linalg.matmul ins(%x, %b : tensor<4x8xf32>, tensor<8x16xf32>) outs(%f : tensor<4x16xf32>) -> tensor<4x16xf32>
    flow.return %m : tensor<4x16xf32>
  }
  util.return %res : tensor<4x16xf32>
}

// -----

// clone.egg condition 3 fails: a widening extf followed by a math.exp is no bit extend (isBitExtendOrTruncateOp
// refuses a body with a math op: cloned ops must stay cheap).
// CHECK-LABEL: plans for @extend_with_math_not_cloned: 1;
// CHECK-NOT:   clone-producer-lhs
// CHECK:       plan 0 of @extend_with_math_not_cloned: dispatch{linalg.generic} dispatch{linalg.fill, linalg.matmul}
#id = affine_map<(d0, d1) -> (d0, d1)>
util.func public @extend_with_math_not_cloned(%a: tensor<4x8xf16>, %b: tensor<8x16xf32>) -> tensor<4x16xf32> {
  %x = flow.dispatch.region -> (tensor<4x8xf32>) {
    %ee = tensor.empty() : tensor<4x8xf32>
    %g = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]} ins(%a : tensor<4x8xf16>) outs(%ee : tensor<4x8xf32>) {
    ^bb0(%v: f16, %o: f32):
      %w = arith.extf %v : f16 to f32
      %y = math.exp %w : f32
      linalg.yield %y : f32
    } -> tensor<4x8xf32>
    flow.return %g : tensor<4x8xf32>
  }
  %res = flow.dispatch.region -> (tensor<4x16xf32>) {
    %zero = arith.constant 0.0 : f32
    %e = tensor.empty() : tensor<4x16xf32>
    %f = linalg.fill ins(%zero : f32) outs(%e : tensor<4x16xf32>) -> tensor<4x16xf32>
    %m = linalg.matmul ins(%x, %b : tensor<4x8xf32>, tensor<8x16xf32>) outs(%f : tensor<4x16xf32>) -> tensor<4x16xf32>
    flow.return %m : tensor<4x16xf32>
  }
  util.return %res : tensor<4x16xf32>
}

// -----

// clone.egg condition 4: the fill's dispatch is both a function result and the generic's second input. The clone
// goes into the generic's input list only: the function still returns the fill's own dispatch in every
// plan (a function result is no dispatch to clone into).
// CHECK-LABEL: plans for @fill_returned_and_read: 2; {{.*}}clone-producer-into-generic 1
// CHECK:       plan 0 of @fill_returned_and_read: dispatch{linalg.fill} dispatch{linalg.generic}
// CHECK:       plan 1 of @fill_returned_and_read: dispatch{linalg.fill, linalg.generic} dispatch{linalg.fill}
// CHECK:         func.return %0, %9
#id = affine_map<(d0, d1) -> (d0, d1)>
util.func public @fill_returned_and_read(%a: tensor<8x8xf32>) -> (tensor<8x8xf32>, tensor<8x8xf32>) {
  %f = flow.dispatch.region -> (tensor<8x8xf32>) {
    %zero = arith.constant 0.0 : f32
    %e = tensor.empty() : tensor<8x8xf32>
    %fill = linalg.fill ins(%zero : f32) outs(%e : tensor<8x8xf32>) -> tensor<8x8xf32>
    flow.return %fill : tensor<8x8xf32>
  }
  %res = flow.dispatch.region -> (tensor<8x8xf32>) {
    %e = tensor.empty() : tensor<8x8xf32>
    %g = linalg.generic {indexing_maps = [#id, #id, #id], iterator_types = ["parallel", "parallel"]} ins(%a, %f : tensor<8x8xf32>, tensor<8x8xf32>) outs(%e : tensor<8x8xf32>) {
    ^bb0(%x: f32, %y: f32, %o: f32):
      %s = arith.addf %x, %y : f32
      linalg.yield %s : f32
    } -> tensor<8x8xf32>
    flow.return %g : tensor<8x8xf32>
  }
  util.return %res, %f : tensor<8x8xf32>, tensor<8x8xf32>
}
