// PropagateEncodings (PropagateEncodings.cpp, SwapEncodingOpWithTensorCastOp; the layout's
// propagation interface in ExternalInterfaces/EncodingExternalModels.cpp): a set_encoding of a
// tensor.cast's result moves above the cast when its encoding is a serialized #iree_encoding.layout;
// the cast then casts the encoded tensor. Here a static tensor is cast to a dynamic row count.
// EXPECT: in
#layout = #iree_encoding.layout<[#iree_encoding.testing<layouts = []>]>
util.func public @encode_above_a_cast(%src: tensor<16x8xf32>) -> tensor<?x8xf32, #layout> {
  %cast = tensor.cast %src : tensor<16x8xf32> to tensor<?x8xf32>
  %e = iree_encoding.set_encoding %cast : tensor<?x8xf32> -> tensor<?x8xf32, #layout>
  util.return %e : tensor<?x8xf32, #layout>
}

// -----

// Every layout of the list must be serialized (LayoutAttr::isSerialized): a padding with static
// amounts is (PaddingAttr::isSerialized), so a layout of a padding and a testing layout propagates.
// EXPECT: in
#layout = #iree_encoding.layout<[#iree_encoding.padding<[0, 4]>, #iree_encoding.testing<layouts = []>]>
util.func public @encode_above_a_cast_padded(%src: tensor<16x8xf32>) -> tensor<16x?xf32, #layout> {
  %cast = tensor.cast %src : tensor<16x8xf32> to tensor<16x?xf32>
  %e = iree_encoding.set_encoding %cast : tensor<16x?xf32> -> tensor<16x?xf32, #layout>
  util.return %e : tensor<16x?xf32, #layout>
}

// -----

// A layout holding a testing encoding without `layouts` is not serialized: the pattern fails and the
// cast stays below the encode (IREE's output is the input).
// EXPECT: in
#layout = #iree_encoding.layout<[#iree_encoding.testing<>]>
util.func public @encode_stays_below_a_cast(%src: tensor<16x8xf32>) -> tensor<?x8xf32, #layout> {
  %cast = tensor.cast %src : tensor<16x8xf32> to tensor<?x8xf32>
  %e = iree_encoding.set_encoding %cast : tensor<?x8xf32> -> tensor<?x8xf32, #layout>
  util.return %e : tensor<?x8xf32, #layout>
}

// -----

// Both ops must be outside every dispatch (isNonNullAndOutsideDispatch): a cast and its encode inside
// a dispatch region stay as they are.
// EXPECT: in
#layout = #iree_encoding.layout<[#iree_encoding.testing<layouts = []>]>
util.func public @encode_in_a_dispatch_stays(%src: tensor<16x8xf32>) -> tensor<16x8xf32, #layout> {
  %0 = flow.dispatch.region -> (tensor<16x8xf32, #layout>) {
    %cast = tensor.cast %src : tensor<16x8xf32> to tensor<?x8xf32>
    %e = iree_encoding.set_encoding %cast : tensor<?x8xf32> -> tensor<?x8xf32, #layout>
    %back = tensor.cast %e : tensor<?x8xf32, #layout> to tensor<16x8xf32, #layout>
    flow.return %back : tensor<16x8xf32, #layout>
  }
  util.return %0 : tensor<16x8xf32, #layout>
}
