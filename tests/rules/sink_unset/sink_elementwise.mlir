// RUN: egg-dispatch opt --split-input-file --rules sink_unset --target x86_64-avx2 %s | filecheck %s

// A bias [N] broadcast along rows plus ReLU, fused into the matmul's dispatch (IREE's start state: the
// unset_encoding between them). The family adds the generic on the encoded accumulator, the bias set
// to the accumulator's encoding with its map appended ([.., [acc map, (d0, d1) -> (d1)]]: packed
// [N1, N0]), the unset_encoding after it: IREE's SinkUnsetEncodingOp.
// CHECK-LABEL: plans for @sink_bias_relu: 2; {{.*}} rule matches: {{.*}}sink-unset-through-elementwise 1
// CHECK:       of @sink_bias_relu: dispatch{{.*}}linalg.matmul, iree_encoding.set_encoding, linalg.generic, iree_encoding.unset_encoding}
// CHECK-DAG:   #[[ACC:encoding[0-9]*]] = #iree_encoding.encoding<operand_index = 2 : index, {{.*}}user_indexing_maps = [#map, #map1, #map2], iteration_sizes = [8, 32, 16]>
// CHECK-DAG:   #[[BIAS:encoding[0-9]*]] = #iree_encoding.encoding<operand_index = 2 : index, {{.*}}user_indexing_maps = [#map, #map1, [#map2, #map3]], iteration_sizes = [8, 32, 16]>
// CHECK-DAG:   #map3 = affine_map<(d0, d1) -> (d1)>
// CHECK:         %[[MM:.+]] = linalg.matmul {{.*}} -> tensor<8x32xf32, #[[ACC]]>
// CHECK-NEXT:    %[[B:.+]] = iree_encoding.set_encoding %arg2 : tensor<32xf32> -> tensor<32xf32, #[[BIAS]]>
// CHECK-NEXT:    %[[G:.+]] = linalg.generic {{.*}} ins(%[[MM]], %[[B]] : tensor<8x32xf32, #[[ACC]]>, tensor<32xf32, #[[BIAS]]>) outs(%{{.*}} : tensor<8x32xf32, #[[ACC]]>)
// CHECK:         } -> tensor<8x32xf32, #[[ACC]]>
// CHECK-NEXT:    iree_encoding.unset_encoding %[[G]] : tensor<8x32xf32, #[[ACC]]> -> tensor<8x32xf32>
func.func @sink_bias_relu(%a: tensor<8x16xf32>, %b: tensor<16x32xf32>, %bias: tensor<32xf32>) -> tensor<8x32xf32> {
  %zero = arith.constant 0.0 : f32
  %acc_e = tensor.empty() : tensor<8x32xf32>
  %acc = linalg.fill ins(%zero : f32) outs(%acc_e : tensor<8x32xf32>) -> tensor<8x32xf32>
  %r = linalg.matmul ins(%a, %b : tensor<8x16xf32>, tensor<16x32xf32>) outs(%acc : tensor<8x32xf32>) -> tensor<8x32xf32>
  %e = tensor.empty() : tensor<8x32xf32>
  %y = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d1)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]} ins(%r, %bias : tensor<8x32xf32>, tensor<32xf32>) outs(%e : tensor<8x32xf32>) {
  ^bb0(%x: f32, %c: f32, %o: f32):
    %s = arith.addf %x, %c : f32
    %t = arith.maximumf %s, %zero : f32
    linalg.yield %t : f32
  } -> tensor<8x32xf32>
  return %y : tensor<8x32xf32>
}

// -----

// Condition 4, other forms: a bias [M] broadcast along columns gets its own appended map
// ((d0, d1) -> (d0): packed [M1, M0]), a residual of the result's shape (identity map) the
// accumulator's encoding itself, and a scalar operand stays as it is.
// CHECK-LABEL: plans for @sink_column_bias_residual_scalar: 2; {{.*}} rule matches: {{.*}}sink-unset-through-elementwise 1
// CHECK-DAG:   #[[ACC:encoding[0-9]*]] = #iree_encoding.encoding<operand_index = 2 : index, {{.*}}user_indexing_maps = [#map, #map1, #map2], iteration_sizes = [8, 32, 16]>
// CHECK-DAG:   #[[COL:encoding[0-9]*]] = #iree_encoding.encoding<operand_index = 2 : index, {{.*}}user_indexing_maps = [#map, #map1, [#map2, #[[D0:map[0-9]*]]]], iteration_sizes = [8, 32, 16]>
// CHECK-DAG:   #[[D0]] = affine_map<(d0, d1) -> (d0)>
// CHECK:         %[[MM:.+]] = linalg.matmul {{.*}} -> tensor<8x32xf32, #[[ACC]]>
// CHECK-DAG:     %[[B:.+]] = iree_encoding.set_encoding %arg2 : tensor<8xf32> -> tensor<8xf32, #[[COL]]>
// CHECK-DAG:     %[[R:.+]] = iree_encoding.set_encoding %arg3 : tensor<8x32xf32> -> tensor<8x32xf32, #[[ACC]]>
// CHECK:         linalg.generic {{.*}} ins(%[[MM]], %[[B]], %[[R]], %{{.*}} : tensor<8x32xf32, #[[ACC]]>, tensor<8xf32, #[[COL]]>, tensor<8x32xf32, #[[ACC]]>, f32)
// CHECK:         iree_encoding.unset_encoding %{{.*}} : tensor<8x32xf32, #[[ACC]]> -> tensor<8x32xf32>
func.func @sink_column_bias_residual_scalar(%a: tensor<8x16xf32>, %b: tensor<16x32xf32>, %bias: tensor<8xf32>, %res: tensor<8x32xf32>) -> tensor<8x32xf32> {
  %zero = arith.constant 0.0 : f32
  %scale = arith.constant 0.5 : f32
  %acc_e = tensor.empty() : tensor<8x32xf32>
  %acc = linalg.fill ins(%zero : f32) outs(%acc_e : tensor<8x32xf32>) -> tensor<8x32xf32>
  %r = linalg.matmul ins(%a, %b : tensor<8x16xf32>, tensor<16x32xf32>) outs(%acc : tensor<8x32xf32>) -> tensor<8x32xf32>
  %e = tensor.empty() : tensor<8x32xf32>
  %y = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0)>, affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> ()>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]} ins(%r, %bias, %res, %scale : tensor<8x32xf32>, tensor<8xf32>, tensor<8x32xf32>, f32) outs(%e : tensor<8x32xf32>) {
  ^bb0(%x: f32, %c: f32, %q: f32, %k: f32, %o: f32):
    %s = arith.addf %x, %c : f32
    %m = arith.mulf %q, %k : f32
    %t = arith.addf %s, %m : f32
    linalg.yield %t : f32
  } -> tensor<8x32xf32>
  return %y : tensor<8x32xf32>
}

// -----

// Condition 7, second form: a chain of elementwise ops (bias add, then its own ReLU generic) runs on
// the encoded accumulator all the way; the unset_encoding ends up after the last one.
// CHECK-LABEL: plans for @sink_through_a_chain: 3; {{.*}} rule matches: {{.*}}sink-unset-through-elementwise 2
// CHECK:       of @sink_through_a_chain: dispatch{{.*}}linalg.matmul, iree_encoding.set_encoding, linalg.generic, linalg.generic, iree_encoding.unset_encoding}
func.func @sink_through_a_chain(%a: tensor<8x16xf32>, %b: tensor<16x32xf32>, %bias: tensor<32xf32>) -> tensor<8x32xf32> {
  %zero = arith.constant 0.0 : f32
  %acc_e = tensor.empty() : tensor<8x32xf32>
  %acc = linalg.fill ins(%zero : f32) outs(%acc_e : tensor<8x32xf32>) -> tensor<8x32xf32>
  %r = linalg.matmul ins(%a, %b : tensor<8x16xf32>, tensor<16x32xf32>) outs(%acc : tensor<8x32xf32>) -> tensor<8x32xf32>
  %e = tensor.empty() : tensor<8x32xf32>
  %y = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d1)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]} ins(%r, %bias : tensor<8x32xf32>, tensor<32xf32>) outs(%e : tensor<8x32xf32>) {
  ^bb0(%x: f32, %c: f32, %o: f32):
    %s = arith.addf %x, %c : f32
    linalg.yield %s : f32
  } -> tensor<8x32xf32>
  %e2 = tensor.empty() : tensor<8x32xf32>
  %z = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]} ins(%y : tensor<8x32xf32>) outs(%e2 : tensor<8x32xf32>) {
  ^bb0(%x: f32, %o: f32):
    %t = arith.maximumf %x, %zero : f32
    linalg.yield %t : f32
  } -> tensor<8x32xf32>
  return %z : tensor<8x32xf32>
}

// -----

// Not a condition: the other operand is a scalar the function takes (an f32 argument), read as it is: the
// scaling runs on the encoded accumulator, and the unset_encoding follows it.
// CHECK-LABEL: plans for @sink_through_a_scale_by_an_argument: {{[2-9]|[1-9][0-9]}}; {{.*}}sink-unset-through-elementwise
// CHECK:       of @sink_through_a_scale_by_an_argument: {{.*}}linalg.matmul, linalg.generic, iree_encoding.unset_encoding}
// CHECK:       linalg.matmul
// CHECK-NEXT:  linalg.generic {{.*}} ins(%{{.*}}, %arg2 : tensor<8x16xf32, #encoding{{[0-9]*}}>, f32) outs(%{{.*}} : tensor<8x16xf32, #encoding{{[0-9]*}}>)
func.func @sink_through_a_scale_by_an_argument(%a: tensor<8x32xf32>, %b: tensor<32x16xf32>, %s: f32) -> tensor<8x16xf32> {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<8x16xf32>
  %acc = linalg.fill ins(%zero : f32) outs(%e : tensor<8x16xf32>) -> tensor<8x16xf32>
  %m = linalg.matmul ins(%a, %b : tensor<8x32xf32>, tensor<32x16xf32>) outs(%acc : tensor<8x16xf32>) -> tensor<8x16xf32>
  %y = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> ()>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]} ins(%m, %s : tensor<8x16xf32>, f32) outs(%e : tensor<8x16xf32>) {
  ^bb0(%x: f32, %c: f32, %o: f32):
    %p = arith.mulf %x, %c : f32
    linalg.yield %p : f32
  } -> tensor<8x16xf32>
  return %y : tensor<8x16xf32>
}

// -----

// Not a condition: a rank-0 tensor operand (a scale in a tensor<f32>) gets the accumulator's encoding
// with its map (d0, d1) -> () appended, an encoding on no dims (the identity layout), as IREE's
// generateSinkingEncodings gives it; the scaling runs on the encoded accumulator.
// CHECK-LABEL: plans for @sink_with_a_rank0_operand: 2;
// CHECK:       plan 1 of @sink_with_a_rank0_operand: dispatch{{.*}}linalg.matmul, iree_encoding.set_encoding, linalg.generic, iree_encoding.unset_encoding}
// CHECK:       #[[NONE:.+]] = affine_map<(d0, d1) -> ()>
// CHECK:       #[[E:.+]] = #iree_encoding.encoding<operand_index = 2 : index, {{.*}}user_indexing_maps = [#map, #map1, [#map2, #[[NONE]]]]
// CHECK:       iree_encoding.set_encoding %arg2 : tensor<f32> -> tensor<f32, #[[E]]>
func.func @sink_with_a_rank0_operand(%a: tensor<8x16xf32>, %b: tensor<16x32xf32>, %s: tensor<f32>) -> tensor<8x32xf32> {
  %zero = arith.constant 0.0 : f32
  %acc_e = tensor.empty() : tensor<8x32xf32>
  %acc = linalg.fill ins(%zero : f32) outs(%acc_e : tensor<8x32xf32>) -> tensor<8x32xf32>
  %r = linalg.matmul ins(%a, %b : tensor<8x16xf32>, tensor<16x32xf32>) outs(%acc : tensor<8x32xf32>) -> tensor<8x32xf32>
  %e = tensor.empty() : tensor<8x32xf32>
  %y = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> ()>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]} ins(%r, %s : tensor<8x32xf32>, tensor<f32>) outs(%e : tensor<8x32xf32>) {
  ^bb0(%x: f32, %c: f32, %o: f32):
    %t = arith.mulf %x, %c : f32
    linalg.yield %t : f32
  } -> tensor<8x32xf32>
  return %y : tensor<8x32xf32>
}

// -----

// Condition 7, every encoded input a site: the second residual add reads the first one's result (its
// generic sunk onto the first matmul's accumulator, in that matmul's dispatch) and, in its own
// dispatch, the unset_encoding of the second matmul. IREE's SinkUnsetEncodingOp is rooted at that
// unset_encoding: the add runs on the second accumulator (K = 32), the first residual set to it and the
// bias to it with (d0, d1) -> (d1) appended (issue 51: gpt2's and llama's second residual).
// CHECK-LABEL: plans for @sink_second_residual_on_its_own_accumulator: 4; {{.*}}sink-unset-through-elementwise 2
// CHECK:       plan 2 of @sink_second_residual_on_its_own_accumulator: dispatch{{.*}}linalg.generic} dispatch{{.*}}linalg.matmul, iree_encoding.set_encoding, linalg.generic, iree_encoding.unset_encoding}
// CHECK-DAG:   #[[ACC2:encoding[0-9]*]] = #iree_encoding.encoding<operand_index = 2 : index, {{.*}}user_indexing_maps = [#map, #map1, #map2], iteration_sizes = [8, 32, 32]>
// CHECK-DAG:   #[[BIAS2:encoding[0-9]*]] = #iree_encoding.encoding<operand_index = 2 : index, {{.*}}user_indexing_maps = [#map, #map1, [#map2, #map{{[0-9]+}}]], iteration_sizes = [8, 32, 32]>
// CHECK:         %[[H:.+]] = iree_encoding.set_encoding %0 : tensor<8x32xf32> -> tensor<8x32xf32, #[[ACC2]]>
// CHECK:         %[[MM:.+]] = linalg.matmul {{.*}} -> tensor<8x32xf32, #[[ACC2]]>
// CHECK-NEXT:    %[[B:.+]] = iree_encoding.set_encoding %arg4 : tensor<32xf32> -> tensor<32xf32, #[[BIAS2]]>
// CHECK-NEXT:    linalg.generic {{.*}} ins(%[[H]], %[[MM]], %[[B]] : tensor<8x32xf32, #[[ACC2]]>, tensor<8x32xf32, #[[ACC2]]>, tensor<32xf32, #[[BIAS2]]>)
func.func @sink_second_residual_on_its_own_accumulator(%x: tensor<8x16xf32>, %w1: tensor<16x32xf32>, %res: tensor<8x32xf32>, %w2: tensor<32x32xf32>, %bias: tensor<32xf32>) -> tensor<8x32xf32> {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<8x32xf32>
  %acc = linalg.fill ins(%zero : f32) outs(%e : tensor<8x32xf32>) -> tensor<8x32xf32>
  %r1 = linalg.matmul ins(%x, %w1 : tensor<8x16xf32>, tensor<16x32xf32>) outs(%acc : tensor<8x32xf32>) -> tensor<8x32xf32>
  %h = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]} ins(%r1, %res : tensor<8x32xf32>, tensor<8x32xf32>) outs(%e : tensor<8x32xf32>) {
  ^bb0(%a: f32, %b: f32, %o: f32):
    %s = arith.addf %a, %b : f32
    linalg.yield %s : f32
  } -> tensor<8x32xf32>
  %r2 = linalg.matmul ins(%h, %w2 : tensor<8x32xf32>, tensor<32x32xf32>) outs(%acc : tensor<8x32xf32>) -> tensor<8x32xf32>
  %y = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d1)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]} ins(%h, %r2, %bias : tensor<8x32xf32>, tensor<8x32xf32>, tensor<32xf32>) outs(%e : tensor<8x32xf32>) {
  ^bb0(%a: f32, %b: f32, %c: f32, %o: f32):
    %s = arith.addf %b, %c : f32
    %t = arith.addf %a, %s : f32
    linalg.yield %t : f32
  } -> tensor<8x32xf32>
  return %y : tensor<8x32xf32>
}

// -----

// Condition 5 with a transposing output map: the ReLU writes the encoded result transposed
// ((d0, d1) -> (d1, d0)). The init, and the result, get the accumulator's encoding with the output map
// appended (generateSinkingEncodings' createNewEncoding on the init): the accumulator's tiles on the
// swapped dims; the unset_encoding after the generic returns the transposed [32, 8] (issue 51:
// gemma2's attention output, transposed from [heads, seq, dim] to [seq, heads, dim]).
// CHECK-LABEL: plans for @sink_transposed_output: 2; {{.*}}sink-unset-through-elementwise 1
// CHECK:       plan 1 of @sink_transposed_output: dispatch{{.*}}linalg.matmul, linalg.generic, iree_encoding.unset_encoding}
// CHECK-DAG:   #[[T:map[0-9]*]] = affine_map<(d0, d1) -> (d1, d0)>
// CHECK-DAG:   #[[ACC:encoding[0-9]*]] = #iree_encoding.encoding<operand_index = 2 : index, {{.*}}user_indexing_maps = [#map, #map1, #map2], iteration_sizes = [8, 32, 16]>
// CHECK-DAG:   #[[OUT:encoding[0-9]*]] = #iree_encoding.encoding<operand_index = 2 : index, {{.*}}user_indexing_maps = [#map, #map1, [#map2, #[[T]]]], iteration_sizes = [8, 32, 16]>
// CHECK:         %[[MM:.+]] = linalg.matmul {{.*}} -> tensor<8x32xf32, #[[ACC]]>
// CHECK-NEXT:    %[[E:.+]] = tensor.empty() : tensor<32x8xf32, #[[OUT]]>
// CHECK-NEXT:    %[[G:.+]] = linalg.generic {{.*}} ins(%[[MM]] : tensor<8x32xf32, #[[ACC]]>) outs(%[[E]] : tensor<32x8xf32, #[[OUT]]>)
// CHECK:         } -> tensor<32x8xf32, #[[OUT]]>
// CHECK-NEXT:    iree_encoding.unset_encoding %[[G]] : tensor<32x8xf32, #[[OUT]]> -> tensor<32x8xf32>
func.func @sink_transposed_output(%a: tensor<8x16xf32>, %b: tensor<16x32xf32>) -> tensor<32x8xf32> {
  %zero = arith.constant 0.0 : f32
  %acc_e = tensor.empty() : tensor<8x32xf32>
  %acc = linalg.fill ins(%zero : f32) outs(%acc_e : tensor<8x32xf32>) -> tensor<8x32xf32>
  %r = linalg.matmul ins(%a, %b : tensor<8x16xf32>, tensor<16x32xf32>) outs(%acc : tensor<8x32xf32>) -> tensor<8x32xf32>
  %e = tensor.empty() : tensor<32x8xf32>
  %y = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d1, d0)>], iterator_types = ["parallel", "parallel"]} ins(%r : tensor<8x32xf32>) outs(%e : tensor<32x8xf32>) {
  ^bb0(%x: f32, %o: f32):
    %t = arith.maximumf %x, %zero : f32
    linalg.yield %t : f32
  } -> tensor<32x8xf32>
  return %y : tensor<32x8xf32>
}

// -----

// Condition 6: a body that reads linalg.index (a bias computed from the column index) runs on the
// encoded accumulator too; on the tiles its index is the logical one, outer * tile + inner, as IREE's
// codegen rewrites it (materialized: linalg.index 1 * 8 + linalg.index 3 on AVX2's 8x8 tiles).
// CHECK-LABEL: plans for @sink_linalg_index: 2; {{.*}} rule matches: {{.*}}sink-unset-through-elementwise 1
// CHECK:       of @sink_linalg_index: dispatch{{.*}}linalg.matmul, linalg.generic, iree_encoding.unset_encoding}
// CHECK:         linalg.index 1 : index
func.func @sink_linalg_index(%a: tensor<8x16xf32>, %b: tensor<16x32xf32>) -> tensor<8x32xf32> {
  %zero = arith.constant 0.0 : f32
  %acc_e = tensor.empty() : tensor<8x32xf32>
  %acc = linalg.fill ins(%zero : f32) outs(%acc_e : tensor<8x32xf32>) -> tensor<8x32xf32>
  %r = linalg.matmul ins(%a, %b : tensor<8x16xf32>, tensor<16x32xf32>) outs(%acc : tensor<8x32xf32>) -> tensor<8x32xf32>
  %e = tensor.empty() : tensor<8x32xf32>
  %y = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]} ins(%r : tensor<8x32xf32>) outs(%e : tensor<8x32xf32>) {
  ^bb0(%x: f32, %o: f32):
    %i = linalg.index 1 : index
    %ii = arith.index_cast %i : index to i32
    %f = arith.sitofp %ii : i32 to f32
    %t = arith.addf %x, %f : f32
    linalg.yield %t : f32
  } -> tensor<8x32xf32>
  return %y : tensor<8x32xf32>
}
