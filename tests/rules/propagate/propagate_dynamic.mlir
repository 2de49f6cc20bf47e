// RUN: egg-dispatch opt --split-input-file --rules propagate --target x86_64-avx2 %s | filecheck %s

// Dynamic shapes: propagate_slice.egg conditions 1-4 must hold for every size the program allows. Every case starts from
// the set_encoding already hoisted with its slice (the legal start: with nothing bounding the rows, a
// pack fused into the matmul's dispatch is refused), so the hoisted-propagation rule is what fires.

// Columns 0..32 of every row: offsets 0, the row count is the source's own (%d, the same expression),
// so on the 8-row tiled dim the slice reaches the end, and columns have 1-wide tiles: one packed copy of
// the whole argument serves the slice, whatever %d is.
// CHECK-LABEL: plans for @propagate_dynamic_whole_rows: 2;
// CHECK:       plan 1 of @propagate_dynamic_whole_rows: encode encode dispatch{tensor.extract_slice,
// CHECK:       flow.tensor.encode %arg0 : tensor<?x64xf32>{%[[D:.+]]} -> tensor<?x64xf32, #encoding{{[0-9]*}}>{%[[D]]}
// CHECK:       tensor.extract_slice %{{.*}}[0, 0] [%[[D]], 32] [1, 1] : tensor<?x64xf32, #encoding{{[0-9]*}}> to tensor<?x32xf32, #encoding
#map = affine_map<(d0, d1, d2) -> (d0, d2)>
#map1 = affine_map<(d0, d1, d2) -> (d1, d2)>
#map2 = affine_map<(d0, d1, d2) -> (d0, d1)>
#lhs = #iree_encoding.encoding<operand_index = 0 : index, op_type = matmul, element_types = [f32, f32, f32], user_indexing_maps = [#map, #map1, #map2], iteration_sizes = [?, 8, 32]>
#rhs = #iree_encoding.encoding<operand_index = 1 : index, op_type = matmul, element_types = [f32, f32, f32], user_indexing_maps = [#map, #map1, #map2], iteration_sizes = [?, 8, 32]>
#out = #iree_encoding.encoding<operand_index = 2 : index, op_type = matmul, element_types = [f32, f32, f32], user_indexing_maps = [#map, #map1, #map2], iteration_sizes = [?, 8, 32]>
func.func @propagate_dynamic_whole_rows(%x: tensor<?x64xf32>, %w: tensor<8x32xf32>) -> tensor<?x8xf32> {
  %c0 = arith.constant 0 : index
  %d = tensor.dim %x, %c0 : tensor<?x64xf32>
  %l = flow.dispatch.region -> (tensor<?x32xf32, #lhs>{%d}) {
    %s = tensor.extract_slice %x[0, 0] [%d, 32] [1, 1] : tensor<?x64xf32> to tensor<?x32xf32>
    %se = iree_encoding.set_encoding %s encoding_dims{%d} : tensor<?x32xf32> -> tensor<?x32xf32, #lhs>
    flow.return %se : tensor<?x32xf32, #lhs>
  }
  %r = flow.tensor.encode %w : tensor<8x32xf32> -> tensor<8x32xf32, #rhs>
  %0 = flow.dispatch.region -> (tensor<?x8xf32>{%d}) {
    %zero = arith.constant 0.0 : f32
    %e = tensor.empty(%d) : tensor<?x8xf32, #out>
    %f = linalg.fill ins(%zero : f32) outs(%e : tensor<?x8xf32, #out>) -> tensor<?x8xf32, #out>
    %mm = linalg.matmul indexing_maps = [#map, #map1, #map2] ins(%l, %r : tensor<?x32xf32, #lhs>, tensor<8x32xf32, #rhs>) outs(%f : tensor<?x8xf32, #out>) -> tensor<?x8xf32, #out>
    %u = iree_encoding.unset_encoding %mm encoding_dims{%d} : tensor<?x8xf32, #out> -> tensor<?x8xf32>{%d}
    flow.return %u : tensor<?x8xf32>
  }
  return %0 : tensor<?x8xf32>
}

// -----

// propagate_slice.egg condition 2: the second half of the rows starts at %d / 2, which is not a multiple of the 8-row tile
// for every %d (13 / 2 = 6), so the encoding is not propagated through the slice.
// CHECK-LABEL: plans for @dont_propagate_dynamic_row_offset: 1; {{.*}} rule matches: none
#map = affine_map<(d0, d1, d2) -> (d0, d2)>
#map1 = affine_map<(d0, d1, d2) -> (d1, d2)>
#map2 = affine_map<(d0, d1, d2) -> (d0, d1)>
#lhs = #iree_encoding.encoding<operand_index = 0 : index, op_type = matmul, element_types = [f32, f32, f32], user_indexing_maps = [#map, #map1, #map2], iteration_sizes = [?, 8, 32]>
#rhs = #iree_encoding.encoding<operand_index = 1 : index, op_type = matmul, element_types = [f32, f32, f32], user_indexing_maps = [#map, #map1, #map2], iteration_sizes = [?, 8, 32]>
#out = #iree_encoding.encoding<operand_index = 2 : index, op_type = matmul, element_types = [f32, f32, f32], user_indexing_maps = [#map, #map1, #map2], iteration_sizes = [?, 8, 32]>
func.func @dont_propagate_dynamic_row_offset(%x: tensor<?x32xf32>, %w: tensor<8x32xf32>) -> tensor<?x8xf32> {
  %c0 = arith.constant 0 : index
  %c2 = arith.constant 2 : index
  %d = tensor.dim %x, %c0 : tensor<?x32xf32>
  %h = arith.divui %d, %c2 : index
  %l = flow.dispatch.region -> (tensor<?x32xf32, #lhs>{%h}) {
    %s = tensor.extract_slice %x[%h, 0] [%h, 32] [1, 1] : tensor<?x32xf32> to tensor<?x32xf32>
    %se = iree_encoding.set_encoding %s encoding_dims{%h} : tensor<?x32xf32> -> tensor<?x32xf32, #lhs>
    flow.return %se : tensor<?x32xf32, #lhs>
  }
  %r = flow.tensor.encode %w : tensor<8x32xf32> -> tensor<8x32xf32, #rhs>
  %0 = flow.dispatch.region -> (tensor<?x8xf32>{%h}) {
    %zero = arith.constant 0.0 : f32
    %e = tensor.empty(%h) : tensor<?x8xf32, #out>
    %f = linalg.fill ins(%zero : f32) outs(%e : tensor<?x8xf32, #out>) -> tensor<?x8xf32, #out>
    %mm = linalg.matmul indexing_maps = [#map, #map1, #map2] ins(%l, %r : tensor<?x32xf32, #lhs>, tensor<8x32xf32, #rhs>) outs(%f : tensor<?x8xf32, #out>) -> tensor<?x8xf32, #out>
    %u = iree_encoding.unset_encoding %mm encoding_dims{%h} : tensor<?x8xf32, #out> -> tensor<?x8xf32>{%h}
    flow.return %u : tensor<?x8xf32>
  }
  return %0 : tensor<?x8xf32>
}

// -----

// The same slice when util.assume.int makes the rows a multiple of 16: the offset and the size, %d / 2,
// are then multiples of 8 for every allowed %d, so the slice is tile-aligned and propagated.
// CHECK-LABEL: plans for @propagate_dynamic_row_offset_with_assume: 2;
// CHECK:       plan 1 of @propagate_dynamic_row_offset_with_assume: encode encode dispatch{tensor.extract_slice,
// CHECK:       tensor.extract_slice %{{.*}} : tensor<?x32xf32, #encoding{{[0-9]*}}> to tensor<?x32xf32, #encoding
#map = affine_map<(d0, d1, d2) -> (d0, d2)>
#map1 = affine_map<(d0, d1, d2) -> (d1, d2)>
#map2 = affine_map<(d0, d1, d2) -> (d0, d1)>
#lhs = #iree_encoding.encoding<operand_index = 0 : index, op_type = matmul, element_types = [f32, f32, f32], user_indexing_maps = [#map, #map1, #map2], iteration_sizes = [?, 8, 32]>
#rhs = #iree_encoding.encoding<operand_index = 1 : index, op_type = matmul, element_types = [f32, f32, f32], user_indexing_maps = [#map, #map1, #map2], iteration_sizes = [?, 8, 32]>
#out = #iree_encoding.encoding<operand_index = 2 : index, op_type = matmul, element_types = [f32, f32, f32], user_indexing_maps = [#map, #map1, #map2], iteration_sizes = [?, 8, 32]>
func.func @propagate_dynamic_row_offset_with_assume(%x: tensor<?x32xf32>, %w: tensor<8x32xf32>) -> tensor<?x8xf32> {
  %c0 = arith.constant 0 : index
  %c2 = arith.constant 2 : index
  %d0 = tensor.dim %x, %c0 : tensor<?x32xf32>
  %d = util.assume.int %d0<umin = 16, udiv = 16> : index
  %h = arith.divui %d, %c2 : index
  %l = flow.dispatch.region -> (tensor<?x32xf32, #lhs>{%h}) {
    %s = tensor.extract_slice %x[%h, 0] [%h, 32] [1, 1] : tensor<?x32xf32> to tensor<?x32xf32>
    %se = iree_encoding.set_encoding %s encoding_dims{%h} : tensor<?x32xf32> -> tensor<?x32xf32, #lhs>
    flow.return %se : tensor<?x32xf32, #lhs>
  }
  %r = flow.tensor.encode %w : tensor<8x32xf32> -> tensor<8x32xf32, #rhs>
  %0 = flow.dispatch.region -> (tensor<?x8xf32>{%h}) {
    %zero = arith.constant 0.0 : f32
    %e = tensor.empty(%h) : tensor<?x8xf32, #out>
    %f = linalg.fill ins(%zero : f32) outs(%e : tensor<?x8xf32, #out>) -> tensor<?x8xf32, #out>
    %mm = linalg.matmul indexing_maps = [#map, #map1, #map2] ins(%l, %r : tensor<?x32xf32, #lhs>, tensor<8x32xf32, #rhs>) outs(%f : tensor<?x8xf32, #out>) -> tensor<?x8xf32, #out>
    %u = iree_encoding.unset_encoding %mm encoding_dims{%h} : tensor<?x8xf32, #out> -> tensor<?x8xf32>{%h}
    flow.return %u : tensor<?x8xf32>
  }
  return %0 : tensor<?x8xf32>
}

// -----

// Bubbling, propagate_bubble.egg condition 4 reads only the dims the contraction reduces: the rows are
// M, whose padding the unpack drops, so a row count nothing bounds does not stop the set_encoding from
// moving above the extf. Its pack of an unbounded ?x32 tensor left in the dispatch is then refused
// (refuse-fused-pack-generic-operand), so without `hoist` the start state stays the only plan.
// CHECK-LABEL: plans for @bubble_dynamic_dequant_unbounded: 1; {{.*}} bubble-set-encoding-through-generic 1{{.*}} refuse-fused-pack-generic-operand 1
#map = affine_map<(d0, d1, d2) -> (d0, d2)>
#map1 = affine_map<(d0, d1, d2) -> (d1, d2)>
#map2 = affine_map<(d0, d1, d2) -> (d0, d1)>
#id = affine_map<(d0, d1) -> (d0, d1)>
#lhs = #iree_encoding.encoding<operand_index = 0 : index, op_type = matmul, element_types = [f32, f32, f32], user_indexing_maps = [#map, #map1, #map2], iteration_sizes = [?, 8, 32]>
#rhs = #iree_encoding.encoding<operand_index = 1 : index, op_type = matmul, element_types = [f32, f32, f32], user_indexing_maps = [#map, #map1, #map2], iteration_sizes = [?, 8, 32]>
#out = #iree_encoding.encoding<operand_index = 2 : index, op_type = matmul, element_types = [f32, f32, f32], user_indexing_maps = [#map, #map1, #map2], iteration_sizes = [?, 8, 32]>
func.func @bubble_dynamic_dequant_unbounded(%x: tensor<?x32xf16>, %w: tensor<8x32xf32>) -> tensor<?x8xf32> {
  %c0 = arith.constant 0 : index
  %d = tensor.dim %x, %c0 : tensor<?x32xf16>
  %l = flow.dispatch.region -> (tensor<?x32xf32, #lhs>{%d}) {
    %e = tensor.empty(%d) : tensor<?x32xf32>
    %xf = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]} ins(%x : tensor<?x32xf16>) outs(%e : tensor<?x32xf32>) {
    ^bb0(%in: f16, %o: f32):
      %v = arith.extf %in : f16 to f32
      linalg.yield %v : f32
    } -> tensor<?x32xf32>
    %se = iree_encoding.set_encoding %xf encoding_dims{%d} : tensor<?x32xf32> -> tensor<?x32xf32, #lhs>
    flow.return %se : tensor<?x32xf32, #lhs>
  }
  %r = flow.tensor.encode %w : tensor<8x32xf32> -> tensor<8x32xf32, #rhs>
  %0 = flow.dispatch.region -> (tensor<?x8xf32>{%d}) {
    %zero = arith.constant 0.0 : f32
    %ea = tensor.empty(%d) : tensor<?x8xf32, #out>
    %f = linalg.fill ins(%zero : f32) outs(%ea : tensor<?x8xf32, #out>) -> tensor<?x8xf32, #out>
    %mm = linalg.matmul indexing_maps = [#map, #map1, #map2] ins(%l, %r : tensor<?x32xf32, #lhs>, tensor<8x32xf32, #rhs>) outs(%f : tensor<?x8xf32, #out>) -> tensor<?x8xf32, #out>
    %u = iree_encoding.unset_encoding %mm encoding_dims{%d} : tensor<?x8xf32, #out> -> tensor<?x8xf32>{%d}
    flow.return %u : tensor<?x8xf32>
  }
  return %0 : tensor<?x8xf32>
}

// -----

// With util.assume.int promising multiples of 8 the tiles divide every size: the set_encoding moves
// above the extf (the rule fires). Left in the dispatch, its pack of an unbounded ?x32 tensor is refused
// (refuse-fused-pack-generic-operand: the fused-pack footprint is not provable), so without `hoist` the
// start state stays the only plan; with `hoist` the bubbled set_encoding becomes an encode dispatch.
// CHECK-LABEL: plans for @bubble_dynamic_dequant_rows_multiple_of_8: 1; {{.*}} bubble-set-encoding-through-generic 1{{.*}} refuse-fused-pack-generic-operand 1
#map = affine_map<(d0, d1, d2) -> (d0, d2)>
#map1 = affine_map<(d0, d1, d2) -> (d1, d2)>
#map2 = affine_map<(d0, d1, d2) -> (d0, d1)>
#id = affine_map<(d0, d1) -> (d0, d1)>
#lhs = #iree_encoding.encoding<operand_index = 0 : index, op_type = matmul, element_types = [f32, f32, f32], user_indexing_maps = [#map, #map1, #map2], iteration_sizes = [?, 8, 32]>
#rhs = #iree_encoding.encoding<operand_index = 1 : index, op_type = matmul, element_types = [f32, f32, f32], user_indexing_maps = [#map, #map1, #map2], iteration_sizes = [?, 8, 32]>
#out = #iree_encoding.encoding<operand_index = 2 : index, op_type = matmul, element_types = [f32, f32, f32], user_indexing_maps = [#map, #map1, #map2], iteration_sizes = [?, 8, 32]>
func.func @bubble_dynamic_dequant_rows_multiple_of_8(%x: tensor<?x32xf16>, %w: tensor<8x32xf32>) -> tensor<?x8xf32> {
  %c0 = arith.constant 0 : index
  %d0 = tensor.dim %x, %c0 : tensor<?x32xf16>
  %d = util.assume.int %d0<umin = 8, udiv = 8> : index
  %l = flow.dispatch.region -> (tensor<?x32xf32, #lhs>{%d}) {
    %e = tensor.empty(%d) : tensor<?x32xf32>
    %xf = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]} ins(%x : tensor<?x32xf16>) outs(%e : tensor<?x32xf32>) {
    ^bb0(%in: f16, %o: f32):
      %v = arith.extf %in : f16 to f32
      linalg.yield %v : f32
    } -> tensor<?x32xf32>
    %se = iree_encoding.set_encoding %xf encoding_dims{%d} : tensor<?x32xf32> -> tensor<?x32xf32, #lhs>
    flow.return %se : tensor<?x32xf32, #lhs>
  }
  %r = flow.tensor.encode %w : tensor<8x32xf32> -> tensor<8x32xf32, #rhs>
  %0 = flow.dispatch.region -> (tensor<?x8xf32>{%d}) {
    %zero = arith.constant 0.0 : f32
    %ea = tensor.empty(%d) : tensor<?x8xf32, #out>
    %f = linalg.fill ins(%zero : f32) outs(%ea : tensor<?x8xf32, #out>) -> tensor<?x8xf32, #out>
    %mm = linalg.matmul indexing_maps = [#map, #map1, #map2] ins(%l, %r : tensor<?x32xf32, #lhs>, tensor<8x32xf32, #rhs>) outs(%f : tensor<?x8xf32, #out>) -> tensor<?x8xf32, #out>
    %u = iree_encoding.unset_encoding %mm encoding_dims{%d} : tensor<?x8xf32, #out> -> tensor<?x8xf32>{%d}
    flow.return %u : tensor<?x8xf32>
  }
  return %0 : tensor<?x8xf32>
}
