// RUN: egg-dispatch opt --split-input-file --rules propagate --target x86_64-avx2 %s | filecheck %s

// Two tile-aligned row slices of one constant (8-row tiles on AVX2): one packed copy of the whole
// 16x8 constant, and each matmul reads a tile-aligned slice of it.
// CHECK-LABEL: plans for @propagate_row_slices_of_constant: {{[1-9]}}
// CHECK:       %[[P:.+]] = iree_encoding.set_encoding %{{.*}} : tensor<16x8xf32> -> tensor<16x8xf32, #encoding{{[0-9]*}}>
// CHECK-NEXT:  tensor.extract_slice %[[P]][8, 0] [8, 8] [1, 1] : tensor<16x8xf32, #encoding{{[0-9]*}}> to tensor<8x8xf32, #encoding{{[0-9]*}}>
func.func @propagate_row_slices_of_constant(%rhs: tensor<8x8xf32>) -> tensor<8x8xf32> {
  %zero = arith.constant 0.0 : f32
  %w = arith.constant dense<[[-1.00, 0.75, 0.25, -0.25, -0.75, 1.00, 0.50, 0.00], [-0.50, -1.00, 0.75, 0.25, -0.25, -0.75, 1.00, 0.50], [0.00, -0.50, -1.00, 0.75, 0.25, -0.25, -0.75, 1.00], [0.50, 0.00, -0.50, -1.00, 0.75, 0.25, -0.25, -0.75], [1.00, 0.50, 0.00, -0.50, -1.00, 0.75, 0.25, -0.25], [-0.75, 1.00, 0.50, 0.00, -0.50, -1.00, 0.75, 0.25], [-0.25, -0.75, 1.00, 0.50, 0.00, -0.50, -1.00, 0.75], [0.25, -0.25, -0.75, 1.00, 0.50, 0.00, -0.50, -1.00], [0.75, 0.25, -0.25, -0.75, 1.00, 0.50, 0.00, -0.50], [-1.00, 0.75, 0.25, -0.25, -0.75, 1.00, 0.50, 0.00], [-0.50, -1.00, 0.75, 0.25, -0.25, -0.75, 1.00, 0.50], [0.00, -0.50, -1.00, 0.75, 0.25, -0.25, -0.75, 1.00], [0.50, 0.00, -0.50, -1.00, 0.75, 0.25, -0.25, -0.75], [1.00, 0.50, 0.00, -0.50, -1.00, 0.75, 0.25, -0.25], [-0.75, 1.00, 0.50, 0.00, -0.50, -1.00, 0.75, 0.25], [-0.25, -0.75, 1.00, 0.50, 0.00, -0.50, -1.00, 0.75]]> : tensor<16x8xf32>
  %s0 = tensor.extract_slice %w[0, 0] [8, 8] [1, 1] : tensor<16x8xf32> to tensor<8x8xf32>
  %s1 = tensor.extract_slice %w[8, 0] [8, 8] [1, 1] : tensor<16x8xf32> to tensor<8x8xf32>
  %a0_e = tensor.empty() : tensor<8x8xf32>
  %a0 = linalg.fill ins(%zero : f32) outs(%a0_e : tensor<8x8xf32>) -> tensor<8x8xf32>
  %r0 = linalg.matmul indexing_maps = [affine_map<(d0, d1, d2) -> (d0, d2)>, affine_map<(d0, d1, d2) -> (d1, d2)>, affine_map<(d0, d1, d2) -> (d0, d1)>] ins(%s0, %rhs : tensor<8x8xf32>, tensor<8x8xf32>) outs(%a0 : tensor<8x8xf32>) -> tensor<8x8xf32>
  %a1_e = tensor.empty() : tensor<8x8xf32>
  %a1 = linalg.fill ins(%zero : f32) outs(%a1_e : tensor<8x8xf32>) -> tensor<8x8xf32>
  %r1 = linalg.matmul indexing_maps = [affine_map<(d0, d1, d2) -> (d0, d2)>, affine_map<(d0, d1, d2) -> (d1, d2)>, affine_map<(d0, d1, d2) -> (d0, d1)>] ins(%s1, %rhs : tensor<8x8xf32>, tensor<8x8xf32>) outs(%a1 : tensor<8x8xf32>) -> tensor<8x8xf32>
  %sum_e = tensor.empty() : tensor<8x8xf32>
  %sum = linalg.add ins(%r0, %r1 : tensor<8x8xf32>, tensor<8x8xf32>) outs(%sum_e : tensor<8x8xf32>) -> tensor<8x8xf32>
  return %sum : tensor<8x8xf32>
}

// -----

// propagate_slice.egg condition 2: a row slice at offset 5 with 8-row tiles is not tile-aligned.
// CHECK-LABEL: plans for @dont_propagate_unaligned_offset: {{[1-9]}}
// CHECK-NOT:   tensor<16x8xf32, #encoding
func.func @dont_propagate_unaligned_offset(%rhs: tensor<8x8xf32>) -> tensor<8x8xf32> {
  %zero = arith.constant 0.0 : f32
  %w = arith.constant dense<[[-1.00, 0.25, -0.75, 0.50, -0.50, 0.75, -0.25, 1.00], [0.00, -1.00, 0.25, -0.75, 0.50, -0.50, 0.75, -0.25], [1.00, 0.00, -1.00, 0.25, -0.75, 0.50, -0.50, 0.75], [-0.25, 1.00, 0.00, -1.00, 0.25, -0.75, 0.50, -0.50], [0.75, -0.25, 1.00, 0.00, -1.00, 0.25, -0.75, 0.50], [-0.50, 0.75, -0.25, 1.00, 0.00, -1.00, 0.25, -0.75], [0.50, -0.50, 0.75, -0.25, 1.00, 0.00, -1.00, 0.25], [-0.75, 0.50, -0.50, 0.75, -0.25, 1.00, 0.00, -1.00], [0.25, -0.75, 0.50, -0.50, 0.75, -0.25, 1.00, 0.00], [-1.00, 0.25, -0.75, 0.50, -0.50, 0.75, -0.25, 1.00], [0.00, -1.00, 0.25, -0.75, 0.50, -0.50, 0.75, -0.25], [1.00, 0.00, -1.00, 0.25, -0.75, 0.50, -0.50, 0.75], [-0.25, 1.00, 0.00, -1.00, 0.25, -0.75, 0.50, -0.50], [0.75, -0.25, 1.00, 0.00, -1.00, 0.25, -0.75, 0.50], [-0.50, 0.75, -0.25, 1.00, 0.00, -1.00, 0.25, -0.75], [0.50, -0.50, 0.75, -0.25, 1.00, 0.00, -1.00, 0.25]]> : tensor<16x8xf32>
  %s = tensor.extract_slice %w[5, 0] [8, 8] [1, 1] : tensor<16x8xf32> to tensor<8x8xf32>
  %acc_e = tensor.empty() : tensor<8x8xf32>
  %acc = linalg.fill ins(%zero : f32) outs(%acc_e : tensor<8x8xf32>) -> tensor<8x8xf32>
  %r = linalg.matmul indexing_maps = [affine_map<(d0, d1, d2) -> (d0, d2)>, affine_map<(d0, d1, d2) -> (d1, d2)>, affine_map<(d0, d1, d2) -> (d0, d1)>] ins(%s, %rhs : tensor<8x8xf32>, tensor<8x8xf32>) outs(%acc : tensor<8x8xf32>) -> tensor<8x8xf32>
  return %r : tensor<8x8xf32>
}

// -----

// propagate_slice.egg condition 3: 12 rows from offset 0 end in the middle of the second 8-row tile, before the end
// of the 16 rows. (The input is IREE's hoisted form: a fused pack of 12 rows would not be legal.)
// CHECK-LABEL: plans for @dont_propagate_partial_tile: {{[1-9]}}
// CHECK-NOT:   flow.tensor.encode %arg0 : tensor<16x8xf32>
#pmap = affine_map<(d0, d1, d2) -> (d0, d2)>
#pmap1 = affine_map<(d0, d1, d2) -> (d1, d2)>
#pmap2 = affine_map<(d0, d1, d2) -> (d0, d1)>
#lhs = #iree_encoding.encoding<operand_index = 0 : index, op_type = matmul, element_types = [f32, f32, f32], user_indexing_maps = [#pmap, #pmap1, #pmap2], iteration_sizes = [12, 16, 8]>
#rhs = #iree_encoding.encoding<operand_index = 1 : index, op_type = matmul, element_types = [f32, f32, f32], user_indexing_maps = [#pmap, #pmap1, #pmap2], iteration_sizes = [12, 16, 8]>
#out = #iree_encoding.encoding<operand_index = 2 : index, op_type = matmul, element_types = [f32, f32, f32], user_indexing_maps = [#pmap, #pmap1, #pmap2], iteration_sizes = [12, 16, 8]>

func.func @dont_propagate_partial_tile(%w: tensor<16x8xf32>, %rhs: tensor<16x8xf32>) -> tensor<12x16xf32> {
  %zero = arith.constant 0.0 : f32
  %s = tensor.extract_slice %w[0, 0] [12, 8] [1, 1] : tensor<16x8xf32> to tensor<12x8xf32>
  %l = flow.tensor.encode %s : tensor<12x8xf32> -> tensor<12x8xf32, #lhs>
  %r = flow.tensor.encode %rhs : tensor<16x8xf32> -> tensor<16x8xf32, #rhs>
  %0 = flow.dispatch.region -> (tensor<12x16xf32>) {
    %e = tensor.empty() : tensor<12x16xf32, #out>
    %f = linalg.fill ins(%zero : f32) outs(%e : tensor<12x16xf32, #out>) -> tensor<12x16xf32, #out>
    %m = linalg.matmul indexing_maps = [#pmap, #pmap1, #pmap2] ins(%l, %r : tensor<12x8xf32, #lhs>, tensor<16x8xf32, #rhs>) outs(%f : tensor<12x16xf32, #out>) -> tensor<12x16xf32, #out>
    %u = iree_encoding.unset_encoding %m : tensor<12x16xf32, #out> -> tensor<12x16xf32>
    flow.return %u : tensor<12x16xf32>
  }
  return %0 : tensor<12x16xf32>
}

// -----

// Q/K/V-style row slices of an argument, already hoisted by IREE (one encode per slice): one
// encode of the whole 16x8 argument serves both tile-aligned slices.
// CHECK-LABEL: plans for @propagate_hoisted_row_slices_of_argument: {{[1-9]}}
// CHECK:       of @propagate_hoisted_row_slices_of_argument: encode encode dispatch{tensor.extract_slice, linalg.fill, linalg.matmul, iree_encoding.unset_encoding} dispatch{tensor.extract_slice,
// CHECK:       flow.tensor.encode %arg0 : tensor<16x8xf32> -> tensor<16x8xf32, #encoding
#pmap = affine_map<(d0, d1, d2) -> (d0, d2)>
#pmap1 = affine_map<(d0, d1, d2) -> (d1, d2)>
#pmap2 = affine_map<(d0, d1, d2) -> (d0, d1)>
#lhs = #iree_encoding.encoding<operand_index = 0 : index, op_type = matmul, element_types = [f32, f32, f32], user_indexing_maps = [#pmap, #pmap1, #pmap2], iteration_sizes = [8, 8, 8]>
#rhs = #iree_encoding.encoding<operand_index = 1 : index, op_type = matmul, element_types = [f32, f32, f32], user_indexing_maps = [#pmap, #pmap1, #pmap2], iteration_sizes = [8, 8, 8]>
#out = #iree_encoding.encoding<operand_index = 2 : index, op_type = matmul, element_types = [f32, f32, f32], user_indexing_maps = [#pmap, #pmap1, #pmap2], iteration_sizes = [8, 8, 8]>

func.func @propagate_hoisted_row_slices_of_argument(%w: tensor<16x8xf32>, %rhs: tensor<8x8xf32>) -> tensor<8x8xf32> {
  %zero = arith.constant 0.0 : f32
  %s0 = tensor.extract_slice %w[0, 0] [8, 8] [1, 1] : tensor<16x8xf32> to tensor<8x8xf32>
  %l0 = flow.tensor.encode %s0 : tensor<8x8xf32> -> tensor<8x8xf32, #lhs>
  %s1 = tensor.extract_slice %w[8, 0] [8, 8] [1, 1] : tensor<16x8xf32> to tensor<8x8xf32>
  %l1 = flow.tensor.encode %s1 : tensor<8x8xf32> -> tensor<8x8xf32, #lhs>
  %r = flow.tensor.encode %rhs : tensor<8x8xf32> -> tensor<8x8xf32, #rhs>
  %d0 = flow.dispatch.region -> (tensor<8x8xf32>) {
    %e = tensor.empty() : tensor<8x8xf32, #out>
    %f = linalg.fill ins(%zero : f32) outs(%e : tensor<8x8xf32, #out>) -> tensor<8x8xf32, #out>
    %m = linalg.matmul indexing_maps = [#pmap, #pmap1, #pmap2] ins(%l0, %r : tensor<8x8xf32, #lhs>, tensor<8x8xf32, #rhs>) outs(%f : tensor<8x8xf32, #out>) -> tensor<8x8xf32, #out>
    %u = iree_encoding.unset_encoding %m : tensor<8x8xf32, #out> -> tensor<8x8xf32>
    flow.return %u : tensor<8x8xf32>
  }
  %d1 = flow.dispatch.region -> (tensor<8x8xf32>) {
    %e = tensor.empty() : tensor<8x8xf32, #out>
    %f = linalg.fill ins(%zero : f32) outs(%e : tensor<8x8xf32, #out>) -> tensor<8x8xf32, #out>
    %m = linalg.matmul indexing_maps = [#pmap, #pmap1, #pmap2] ins(%l1, %r : tensor<8x8xf32, #lhs>, tensor<8x8xf32, #rhs>) outs(%f : tensor<8x8xf32, #out>) -> tensor<8x8xf32, #out>
    %u = iree_encoding.unset_encoding %m : tensor<8x8xf32, #out> -> tensor<8x8xf32>
    flow.return %u : tensor<8x8xf32>
  }
  %sum_e = tensor.empty() : tensor<8x8xf32>
  %sum = linalg.add ins(%d0, %d1 : tensor<8x8xf32>, tensor<8x8xf32>) outs(%sum_e : tensor<8x8xf32>) -> tensor<8x8xf32>
  return %sum : tensor<8x8xf32>
}

// -----

// propagate_slice.egg condition 1: a strided slice (every other row) is not a slice of the packed tensor.
// CHECK-LABEL: plans for @dont_propagate_strided_slice: {{[1-9]}}
// CHECK-NOT:   tensor<16x8xf32, #encoding
func.func @dont_propagate_strided_slice(%rhs: tensor<8x8xf32>) -> tensor<8x8xf32> {
  %zero = arith.constant 0.0 : f32
  %w = arith.constant dense<[[-1.00, 0.25, -0.75, 0.50, -0.50, 0.75, -0.25, 1.00], [0.00, -1.00, 0.25, -0.75, 0.50, -0.50, 0.75, -0.25], [1.00, 0.00, -1.00, 0.25, -0.75, 0.50, -0.50, 0.75], [-0.25, 1.00, 0.00, -1.00, 0.25, -0.75, 0.50, -0.50], [0.75, -0.25, 1.00, 0.00, -1.00, 0.25, -0.75, 0.50], [-0.50, 0.75, -0.25, 1.00, 0.00, -1.00, 0.25, -0.75], [0.50, -0.50, 0.75, -0.25, 1.00, 0.00, -1.00, 0.25], [-0.75, 0.50, -0.50, 0.75, -0.25, 1.00, 0.00, -1.00], [0.25, -0.75, 0.50, -0.50, 0.75, -0.25, 1.00, 0.00], [-1.00, 0.25, -0.75, 0.50, -0.50, 0.75, -0.25, 1.00], [0.00, -1.00, 0.25, -0.75, 0.50, -0.50, 0.75, -0.25], [1.00, 0.00, -1.00, 0.25, -0.75, 0.50, -0.50, 0.75], [-0.25, 1.00, 0.00, -1.00, 0.25, -0.75, 0.50, -0.50], [0.75, -0.25, 1.00, 0.00, -1.00, 0.25, -0.75, 0.50], [-0.50, 0.75, -0.25, 1.00, 0.00, -1.00, 0.25, -0.75], [0.50, -0.50, 0.75, -0.25, 1.00, 0.00, -1.00, 0.25]]> : tensor<16x8xf32>
  %s = tensor.extract_slice %w[0, 0] [8, 8] [2, 1] : tensor<16x8xf32> to tensor<8x8xf32>
  %acc_e = tensor.empty() : tensor<8x8xf32>
  %acc = linalg.fill ins(%zero : f32) outs(%acc_e : tensor<8x8xf32>) -> tensor<8x8xf32>
  %r = linalg.matmul indexing_maps = [affine_map<(d0, d1, d2) -> (d0, d2)>, affine_map<(d0, d1, d2) -> (d1, d2)>, affine_map<(d0, d1, d2) -> (d0, d1)>] ins(%s, %rhs : tensor<8x8xf32>, tensor<8x8xf32>) outs(%acc : tensor<8x8xf32>) -> tensor<8x8xf32>
  return %r : tensor<8x8xf32>
}
