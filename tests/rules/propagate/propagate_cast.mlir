// RUN: egg-dispatch opt --split-input-file --no-initial-plan --rules propagate --target x86_64-avx2 %s | filecheck %s

// PropagateEncodings swaps a tensor.cast and the set_encoding of its result when the encoding is a
// serialized layout: conditions 1-3 of propagate_cast.egg hold (both ops outside any dispatch, a
// #iree_encoding.layout of a testing layout with its `layouts`, the source a cast). Plan 1 is IREE's:
// the cast now runs between the encoded types.
// CHECK-LABEL: plans for @propagate_through_cast: 2; {{.*}}propagate-set-encoding-through-cast 1
// CHECK:       plan 0 of @propagate_through_cast: tensor.cast iree_encoding.set_encoding{{$}}
// CHECK:       plan 1 of @propagate_through_cast: iree_encoding.set_encoding tensor.cast{{$}}
// CHECK:         iree_encoding.set_encoding %arg0 : tensor<16x?xf32> -> tensor<16x?xf32, #iree_encoding.layout<[#iree_encoding.testing<layouts = []>]>>
// CHECK-NEXT:    tensor.cast %{{.+}} : tensor<16x?xf32, #iree_encoding.layout<{{.+}}>> to tensor<?x8xf32, #iree_encoding.layout<{{.+}}>>
#layout = #iree_encoding.layout<[#iree_encoding.testing<layouts = []>]>
func.func @propagate_through_cast(%src: tensor<16x?xf32>) -> tensor<?x8xf32, #layout> {
  %cast = tensor.cast %src : tensor<16x?xf32> to tensor<?x8xf32>
  %e = iree_encoding.set_encoding %cast : tensor<?x8xf32> -> tensor<?x8xf32, #layout>
  return %e : tensor<?x8xf32, #layout>
}


// -----

// Condition 2 refused: a testing layout without `layouts` is not serialized
// (TestingAttr::isSerialized), so the layout is not, and the cast stays below the encode.
// CHECK-LABEL: plans for @dont_propagate_unserialized: 1; {{.*}}rule matches: none

#testing = #iree_encoding.layout<[#iree_encoding.testing<>]>
func.func @dont_propagate_unserialized(%src: tensor<16x?xf32>) -> tensor<?x8xf32, #testing> {
  %cast = tensor.cast %src : tensor<16x?xf32> to tensor<?x8xf32>
  %e = iree_encoding.set_encoding %cast : tensor<?x8xf32> -> tensor<?x8xf32, #testing>
  return %e : tensor<?x8xf32, #testing>
}

// -----

// Condition 1 refused: the cast and the set_encoding are inside a dispatch (the pass moves only ops
// outside dispatches).
// CHECK-LABEL: plans for @dont_propagate_in_a_dispatch: 1; {{.*}}rule matches: none

#layout = #iree_encoding.layout<[#iree_encoding.testing<layouts = []>]>
func.func @dont_propagate_in_a_dispatch(%src: tensor<16x8xf32>) -> tensor<16x8xf32, #layout> {
  %0 = flow.dispatch.region -> (tensor<16x8xf32, #layout>) {
    %cast = tensor.cast %src : tensor<16x8xf32> to tensor<?x8xf32>
    %e = iree_encoding.set_encoding %cast : tensor<?x8xf32> -> tensor<?x8xf32, #layout>
    %back = tensor.cast %e : tensor<?x8xf32, #layout> to tensor<16x8xf32, #layout>
    flow.return %back : tensor<16x8xf32, #layout>
  }
  return %0 : tensor<16x8xf32, #layout>
}

// -----

// Condition 2 refused for the encoding the cost model prices: #iree_encoding.encoding has no
// propagation through a cast (only LayoutAttr's interface handles tensor.cast).
// CHECK-LABEL: plans for @dont_propagate_a_matmul_encoding: 1; {{.*}}rule matches: none
// CHECK:       plan 0 of @dont_propagate_a_matmul_encoding: tensor.cast iree_encoding.set_encoding{{$}}
#mk = affine_map<(d0, d1, d2) -> (d0, d2)>
#kn = affine_map<(d0, d1, d2) -> (d2, d1)>
#mn = affine_map<(d0, d1, d2) -> (d0, d1)>
#lhs = #iree_encoding.encoding<operand_index = 0 : index, op_type = matmul, element_types = [f32, f32, f32], user_indexing_maps = [#mk, #kn, #mn], iteration_sizes = [16, 32, 8]>
func.func @dont_propagate_a_matmul_encoding(%src: tensor<16x?xf32>) -> tensor<16x8xf32, #lhs> {
  %cast = tensor.cast %src : tensor<16x?xf32> to tensor<16x8xf32>
  %e = iree_encoding.set_encoding %cast : tensor<16x8xf32> -> tensor<16x8xf32, #lhs>
  return %e : tensor<16x8xf32, #lhs>
}
