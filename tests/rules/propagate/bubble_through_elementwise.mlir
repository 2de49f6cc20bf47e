// RUN: egg-dispatch opt --split-input-file --rules propagate --target x86_64-avx2 %s | filecheck %s

// A weight stored as f16 and widened by an extf generic (cloned into the matmul's dispatch, like
// IREE's bit-extend ops): the set_encoding moves above the extf, so the f16 weight is what gets
// packed and the widening runs on the packed tiles.
// CHECK-LABEL: plans for @bubble_set_encoding_through_dequant: {{[2-9]}}
// CHECK:       iree_encoding.set_encoding %{{.*}} : tensor<16x32xf16> -> tensor<16x32xf16, #encoding
// CHECK:       linalg.generic {{.*}} ins(%{{.*}} : tensor<16x32xf16, #encoding{{[0-9]*}}>) outs(%{{.*}} : tensor<16x32xf32, #encoding
func.func @bubble_set_encoding_through_dequant(%x: tensor<16x32xf32>) -> tensor<16x16xf32> {
  %zero = arith.constant 0.0 : f32
  %w16 = arith.constant dense<1.5> : tensor<16x32xf16>
  %e = tensor.empty() : tensor<16x32xf32>
  %w = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]} ins(%w16 : tensor<16x32xf16>) outs(%e : tensor<16x32xf32>) {
  ^bb0(%i: f16, %o: f32):
    %f = arith.extf %i : f16 to f32
    linalg.yield %f : f32
  } -> tensor<16x32xf32>
  %acc_e = tensor.empty() : tensor<16x16xf32>
  %acc = linalg.fill ins(%zero : f32) outs(%acc_e : tensor<16x16xf32>) -> tensor<16x16xf32>
  %r = linalg.matmul indexing_maps = [affine_map<(d0, d1, d2) -> (d0, d2)>, affine_map<(d0, d1, d2) -> (d1, d2)>, affine_map<(d0, d1, d2) -> (d0, d1)>] ins(%x, %w : tensor<16x32xf32>, tensor<16x32xf32>) outs(%acc : tensor<16x16xf32>) -> tensor<16x16xf32>
  return %r : tensor<16x16xf32>
}

// -----

// propagate_bubble.egg condition 3 holds for a transposing producer (its input map is a permutation):
// the set_encoding moves above it and the f16 weight's encoding appends the transpose to the RHS's
// maps, so its packed layout is the RHS's tiles on the weight's own (transposed) dims.
// CHECK-LABEL: plans for @bubble_through_transposing_generic: 2;
// CHECK:       #[[T:.+]] = affine_map<(d0, d1) -> (d1, d0)>
// CHECK:       #[[ENC:.+]] = #iree_encoding.encoding<operand_index = 1 : index, {{.*}} user_indexing_maps = [#map, [#map1, #[[T]]], #map2]
// CHECK:       iree_encoding.set_encoding %{{.*}} : tensor<32x16xf16> -> tensor<32x16xf16, #[[ENC]]>
func.func @bubble_through_transposing_generic(%x: tensor<16x32xf32>) -> tensor<16x16xf32> {
  %zero = arith.constant 0.0 : f32
  %w16 = arith.constant dense<1.5> : tensor<32x16xf16>
  %e = tensor.empty() : tensor<16x32xf32>
  %w = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d1, d0)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]} ins(%w16 : tensor<32x16xf16>) outs(%e : tensor<16x32xf32>) {
  ^bb0(%i: f16, %o: f32):
    %f = arith.extf %i : f16 to f32
    linalg.yield %f : f32
  } -> tensor<16x32xf32>
  %acc_e = tensor.empty() : tensor<16x16xf32>
  %acc = linalg.fill ins(%zero : f32) outs(%acc_e : tensor<16x16xf32>) -> tensor<16x16xf32>
  %r = linalg.matmul indexing_maps = [affine_map<(d0, d1, d2) -> (d0, d2)>, affine_map<(d0, d1, d2) -> (d1, d2)>, affine_map<(d0, d1, d2) -> (d0, d1)>] ins(%x, %w : tensor<16x32xf32>, tensor<16x32xf32>) outs(%acc : tensor<16x16xf32>) -> tensor<16x16xf32>
  return %r : tensor<16x16xf32>
}

// -----

// propagate_bubble.egg condition 2: the widening generic's init is a value the program passes in,
// not a tensor.empty: an encoded init would have to be made from it as well, so the set_encoding
// stays below the generic and only the f32 weight is packed.
// CHECK-LABEL: plans for @dont_bubble_through_generic_with_an_init_value: {{[1-9]}}
// CHECK-NOT:   -> tensor<16x32xf16, #encoding
func.func @dont_bubble_through_generic_with_an_init_value(%x: tensor<16x32xf32>, %init: tensor<16x32xf32>) -> tensor<16x16xf32> {
  %zero = arith.constant 0.0 : f32
  %w16 = arith.constant dense<1.5> : tensor<16x32xf16>
  %w = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]} ins(%w16 : tensor<16x32xf16>) outs(%init : tensor<16x32xf32>) {
  ^bb0(%i: f16, %o: f32):
    %f = arith.extf %i : f16 to f32
    linalg.yield %f : f32
  } -> tensor<16x32xf32>
  %acc_e = tensor.empty() : tensor<16x16xf32>
  %acc = linalg.fill ins(%zero : f32) outs(%acc_e : tensor<16x16xf32>) -> tensor<16x16xf32>
  %r = linalg.matmul indexing_maps = [affine_map<(d0, d1, d2) -> (d0, d2)>, affine_map<(d0, d1, d2) -> (d1, d2)>, affine_map<(d0, d1, d2) -> (d0, d1)>] ins(%x, %w : tensor<16x32xf32>, tensor<16x32xf32>) outs(%acc : tensor<16x16xf32>) -> tensor<16x16xf32>
  return %r : tensor<16x16xf32>
}

// -----

// propagate_bubble.egg conditions 1 and 3: an i8 weight dequantized with a per-row scale inside the dispatch that encodes it
// (a bit extend: its widest input of the highest rank, the i8 weight, is narrower than the f32 result).
// Both inputs get set_encodings (the hoist family can then move them out of the dispatch): the weight's
// encoding appends the identity map, the scale's its map (d0, d1) -> (d0), and the dequantization runs
// on the packed tiles.
// CHECK-LABEL: plans for @bubble_through_scaled_dequant: 2;
// CHECK:       plan 1 of @bubble_through_scaled_dequant: dispatch{iree_encoding.set_encoding, iree_encoding.set_encoding, linalg.generic}
// CHECK-DAG:   #[[ID:.+]] = affine_map<(d0, d1) -> (d0, d1)>
// CHECK-DAG:   #[[ROW:.+]] = affine_map<(d0, d1) -> (d0)>
// CHECK-DAG:   #[[Q:.+]] = #iree_encoding.encoding<operand_index = 1 : index, {{.*}} user_indexing_maps = [#map, [#map1, #[[ID]]], #map2]
// CHECK-DAG:   #[[S:.+]] = #iree_encoding.encoding<operand_index = 1 : index, {{.*}} user_indexing_maps = [#map, [#map1, #[[ROW]]], #map2]
// CHECK-DAG:   iree_encoding.set_encoding %arg0 : tensor<16x32xi8> -> tensor<16x32xi8, #[[Q]]>
// CHECK-DAG:   iree_encoding.set_encoding %arg1 : tensor<16xf32> -> tensor<16xf32, #[[S]]>
#mk = affine_map<(d0, d1, d2) -> (d0, d2)>
#nk = affine_map<(d0, d1, d2) -> (d1, d2)>
#mn = affine_map<(d0, d1, d2) -> (d0, d1)>
#rhs = #iree_encoding.encoding<operand_index = 1 : index, op_type = matmul, element_types = [f32, f32, f32], user_indexing_maps = [#mk, #nk, #mn], iteration_sizes = [16, 16, 32]>
util.func public @bubble_through_scaled_dequant(%q: tensor<16x32xi8>, %scale: tensor<16xf32>) -> tensor<16x32xf32, #rhs> {
  %r = flow.dispatch.region -> (tensor<16x32xf32, #rhs>) {
    %e = tensor.empty() : tensor<16x32xf32>
    %w = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]} ins(%q, %scale : tensor<16x32xi8>, tensor<16xf32>) outs(%e : tensor<16x32xf32>) {
    ^bb0(%i: i8, %c: f32, %o: f32):
      %f = arith.sitofp %i : i8 to f32
      %m = arith.mulf %f, %c : f32
      linalg.yield %m : f32
    } -> tensor<16x32xf32>
    %s = iree_encoding.set_encoding %w : tensor<16x32xf32> -> tensor<16x32xf32, #rhs>
    flow.return %s : tensor<16x32xf32, #rhs>
  }
  util.return %r : tensor<16x32xf32, #rhs>
}
// -----

// propagate_bubble.egg condition 1: a broadcast (one input of lower rank read through a projection, a body that only
// yields) is the other producer IREE bubbles through: a row broadcast to the weight's shape.
// CHECK-LABEL: plans for @bubble_through_broadcast: 2;
// CHECK:       plan 1 of @bubble_through_broadcast: dispatch{iree_encoding.set_encoding, linalg.generic}
// CHECK:       iree_encoding.set_encoding %arg0 : tensor<32xf32> -> tensor<32xf32, #encoding{{[0-9]*}}>
#mk = affine_map<(d0, d1, d2) -> (d0, d2)>
#nk = affine_map<(d0, d1, d2) -> (d1, d2)>
#mn = affine_map<(d0, d1, d2) -> (d0, d1)>
#rhs = #iree_encoding.encoding<operand_index = 1 : index, op_type = matmul, element_types = [f32, f32, f32], user_indexing_maps = [#mk, #nk, #mn], iteration_sizes = [16, 16, 32]>
util.func public @bubble_through_broadcast(%row: tensor<32xf32>) -> tensor<16x32xf32, #rhs> {
  %r = flow.dispatch.region -> (tensor<16x32xf32, #rhs>) {
    %e = tensor.empty() : tensor<16x32xf32>
    %w = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d1)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]} ins(%row : tensor<32xf32>) outs(%e : tensor<16x32xf32>) {
    ^bb0(%i: f32, %o: f32):
      linalg.yield %i : f32
    } -> tensor<16x32xf32>
    %s = iree_encoding.set_encoding %w : tensor<16x32xf32> -> tensor<16x32xf32, #rhs>
    flow.return %s : tensor<16x32xf32, #rhs>
  }
  util.return %r : tensor<16x32xf32, #rhs>
}
// -----

// propagate_bubble.egg condition 1 fails: a generic that keeps its element type (f32 to f32) and does arithmetic is
// neither a bit extend nor a broadcast; the set_encoding stays below it.
// CHECK-LABEL: plans for @dont_bubble_through_arithmetic: 1;
// CHECK-NOT:   bubble-set-encoding-through-generic
func.func @dont_bubble_through_arithmetic(%x: tensor<16x32xf32>, %v: tensor<16x32xf32>) -> tensor<16x16xf32> {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<16x32xf32>
  %w = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]} ins(%v : tensor<16x32xf32>) outs(%e : tensor<16x32xf32>) {
  ^bb0(%i: f32, %o: f32):
    %n = arith.negf %i : f32
    linalg.yield %n : f32
  } -> tensor<16x32xf32>
  %acc_e = tensor.empty() : tensor<16x16xf32>
  %acc = linalg.fill ins(%zero : f32) outs(%acc_e : tensor<16x16xf32>) -> tensor<16x16xf32>
  %r = linalg.matmul indexing_maps = [affine_map<(d0, d1, d2) -> (d0, d2)>, affine_map<(d0, d1, d2) -> (d1, d2)>, affine_map<(d0, d1, d2) -> (d0, d1)>] ins(%x, %w : tensor<16x32xf32>, tensor<16x32xf32>) outs(%acc : tensor<16x16xf32>) -> tensor<16x16xf32>
  return %r : tensor<16x16xf32>
}
// -----

// propagate_bubble.egg condition 3 fails: the widening generic reads row 0 of its input through a constant result,
// (d0, d1) -> (0, d1), no projection of the loops, so no composed map exists for the input's encoding.
// CHECK-LABEL: plans for @dont_bubble_through_a_constant_map: 1;
// CHECK-NOT:   bubble-set-encoding-through-generic
func.func @dont_bubble_through_a_constant_map(%x: tensor<16x32xf32>, %v: tensor<1x32xf16>) -> tensor<16x16xf32> {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<16x32xf32>
  %w = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (0, d1)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]} ins(%v : tensor<1x32xf16>) outs(%e : tensor<16x32xf32>) {
  ^bb0(%i: f16, %o: f32):
    %f = arith.extf %i : f16 to f32
    linalg.yield %f : f32
  } -> tensor<16x32xf32>
  %acc_e = tensor.empty() : tensor<16x16xf32>
  %acc = linalg.fill ins(%zero : f32) outs(%acc_e : tensor<16x16xf32>) -> tensor<16x16xf32>
  %r = linalg.matmul indexing_maps = [affine_map<(d0, d1, d2) -> (d0, d2)>, affine_map<(d0, d1, d2) -> (d1, d2)>, affine_map<(d0, d1, d2) -> (d0, d1)>] ins(%x, %w : tensor<16x32xf32>, tensor<16x32xf32>) outs(%acc : tensor<16x16xf32>) -> tensor<16x16xf32>
  return %r : tensor<16x16xf32>
}

// -----

// propagate_bubble.egg condition 4 fails: an i8 LHS (K tile 2 on AVX2) of 31 columns is a broadcast of
// one row. K is the dim the contraction reduces, and 31 is not a multiple of 2, so the packed tiles
// hold K padding the broadcast would run on; the set_encoding stays below it. (M and N padding would
// not stop it: the unpack drops those rows and columns.)
// CHECK-LABEL: plans for @dont_bubble_into_k_padding: 1; {{.*}} rule matches: none
#mk = affine_map<(d0, d1, d2) -> (d0, d2)>
#nk = affine_map<(d0, d1, d2) -> (d1, d2)>
#mn = affine_map<(d0, d1, d2) -> (d0, d1)>
#lhs = #iree_encoding.encoding<operand_index = 0 : index, op_type = matmul, element_types = [i8, i8, i32], user_indexing_maps = [#mk, #nk, #mn], iteration_sizes = [8, 16, 31]>
util.func public @dont_bubble_into_k_padding(%row: tensor<31xi8>) -> tensor<8x31xi8, #lhs> {
  %r = flow.dispatch.region -> (tensor<8x31xi8, #lhs>) {
    %e = tensor.empty() : tensor<8x31xi8>
    %b = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d1)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]} ins(%row : tensor<31xi8>) outs(%e : tensor<8x31xi8>) {
    ^bb0(%i: i8, %o: i8):
      linalg.yield %i : i8
    } -> tensor<8x31xi8>
    %s = iree_encoding.set_encoding %b : tensor<8x31xi8> -> tensor<8x31xi8, #lhs>
    flow.return %s : tensor<8x31xi8, #lhs>
  }
  util.return %r : tensor<8x31xi8, #lhs>
}

// -----

// propagate_bubble.egg condition 4 holds with N padding: 12 weight rows (N) in 8-row tiles leave four
// padded rows the dequantization runs on, which the unpack of the result drops; K (32) is whole. The
// rule fires; its two packs with padding cannot stay in the dispatch (refuse-fused-pack-generic-operand),
// so with `propagate` alone the start state stays the only plan, and `hoist` moves them out
// (tests/test_new_forms_compute_the_program.py evaluates those plans).
// CHECK-LABEL: plans for @bubble_over_n_padding: 1; {{.*}}bubble-set-encoding-through-generic 1{{.*}}refuse-fused-pack-generic-operand 2
#mk = affine_map<(d0, d1, d2) -> (d0, d2)>
#nk = affine_map<(d0, d1, d2) -> (d1, d2)>
#mn = affine_map<(d0, d1, d2) -> (d0, d1)>
#rhs = #iree_encoding.encoding<operand_index = 1 : index, op_type = matmul, element_types = [f32, f32, f32], user_indexing_maps = [#mk, #nk, #mn], iteration_sizes = [16, 12, 32]>
util.func public @bubble_over_n_padding(%q: tensor<12x32xi8>, %scale: tensor<12xf32>) -> tensor<12x32xf32, #rhs> {
  %r = flow.dispatch.region -> (tensor<12x32xf32, #rhs>) {
    %e = tensor.empty() : tensor<12x32xf32>
    %w = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]} ins(%q, %scale : tensor<12x32xi8>, tensor<12xf32>) outs(%e : tensor<12x32xf32>) {
    ^bb0(%i: i8, %c: f32, %o: f32):
      %f = arith.sitofp %i : i8 to f32
      %one = arith.constant 1.0 : f32
      %g = arith.addf %f, %one : f32
      %m = arith.mulf %g, %c : f32
      linalg.yield %m : f32
    } -> tensor<12x32xf32>
    %s = iree_encoding.set_encoding %w : tensor<12x32xf32> -> tensor<12x32xf32, #rhs>
    flow.return %s : tensor<12x32xf32, #rhs>
  }
  util.return %r : tensor<12x32xf32, #rhs>
}

// -----

// propagate_bubble.egg conditions 4 and 5 hold for an encoding AVX2 resolves to the identity layout (an f16
// accumulator of f32 operands: no tiles, no padding), on a target with an encoding resolver, with no `noop` run to
// fold the set_encoding away: it moves above the widening generic as IREE moves it, and the output map
// (d0, d1, d2) -> (d1, d2, d0), a permutation that is not its own inverse, is inverted before the input's map is
// appended: (d2, d0, d1) (IREE's lit case @bubble_through_non_involutive_permutation).
// CHECK-LABEL: plans for @bubble_on_an_identity_layout: 2; {{.*}}bubble-set-encoding-through-generic 1
// CHECK:       plan 1 of @bubble_on_an_identity_layout
// CHECK:       #[[P:map[0-9]*]] = affine_map<(d0, d1, d2) -> (d2, d0, d1)>
// CHECK:       #[[ENC:encoding[0-9]*]] = #iree_encoding.encoding<operand_index = 1 : index, {{.*}} user_indexing_maps = [#map, [#map1, #[[P]]], #map]>
// CHECK:       iree_encoding.set_encoding %arg0 : tensor<2x16x8xf16> -> tensor<2x16x8xf16, #[[ENC]]>
#map = affine_map<(d0, d1, d2) -> (d0, d1, d2)>
#map1 = affine_map<(d0, d1, d2) -> (d1, d2, d0)>
#map2 = affine_map<(d0, d1, d2, d3) -> (d0, d3, d2)>
#map3 = affine_map<(d0, d1, d2, d3) -> (d0, d1, d3)>
#encoding = #iree_encoding.encoding<operand_index = 1 : index, op_type = matmul, element_types = [f32, f32, f16], user_indexing_maps = [#map2, #map3, #map2]>
func.func @bubble_on_an_identity_layout(%arg0: tensor<2x16x8xf16>) -> tensor<16x8x2xf32, #encoding> {
  %6 = flow.dispatch.region -> (tensor<16x8x2xf32, #encoding>) {
    %8 = tensor.empty() : tensor<16x8x2xf32>
    %11 = linalg.generic {indexing_maps = [#map, #map1], iterator_types = ["parallel", "parallel", "parallel"]} ins(%arg0 : tensor<2x16x8xf16>) outs(%8 : tensor<16x8x2xf32>) {
    ^bb0(%in: f16, %out: f32):
      %18 = arith.extf %in : f16 to f32
      linalg.yield %18 : f32
    } -> tensor<16x8x2xf32>
    %13 = iree_encoding.set_encoding %11 : tensor<16x8x2xf32> -> tensor<16x8x2xf32, #encoding>
    flow.return %13 : tensor<16x8x2xf32, #encoding>
  }
  return %6 : tensor<16x8x2xf32, #encoding>
}
