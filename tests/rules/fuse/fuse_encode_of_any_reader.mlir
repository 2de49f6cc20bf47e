// RUN: egg-dispatch opt --split-input-file --no-initial-plan --rules fuse --target x86_64-avx2 %s | filecheck %s

// FuseEncodingOpsIntoDispatchRegions visits every set_encoding outside a dispatch, whatever reads it:
// here a function result, of an encoding the cost model does not price (kept as written). The
// producer dispatch takes the encode (fuse_encode.egg, rule on operand lists, condition 1: the
// source is computed by a linalg.generic); the unfused plan keeps it between the dispatches.
// CHECK-LABEL: plans for @fuse_encode_of_a_result: 2; {{.*}}fuse-encode-into-producer-dispatch-operand 1
// CHECK:       plan 0 of @fuse_encode_of_a_result: dispatch{} dispatch{linalg.generic} iree_encoding.set_encoding{{$}}
// CHECK:       plan 1 of @fuse_encode_of_a_result: dispatch{} dispatch{linalg.generic, iree_encoding.set_encoding}{{$}}
// CHECK:         flow.dispatch.region -> (tensor<8x16xf32, #iree_encoding.testing<>>)
#id = affine_map<(d0, d1) -> (d0, d1)>
#testing = #iree_encoding.testing<>
func.func @fuse_encode_of_a_result(%a: tensor<8x16xf32>) -> tensor<8x16xf32, #testing> {
  %init = tensor.empty() : tensor<8x16xf32>
  %neg = flow.dispatch.region -> (tensor<8x16xf32>) {
    %g = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]} ins(%a : tensor<8x16xf32>) outs(%init : tensor<8x16xf32>) {
    ^bb0(%x: f32, %o: f32):
      %n = arith.negf %x : f32
      linalg.yield %n : f32
    } -> tensor<8x16xf32>
    flow.return %g : tensor<8x16xf32>
  }
  %e = iree_encoding.set_encoding %neg : tensor<8x16xf32> -> tensor<8x16xf32, #testing>
  return %e : tensor<8x16xf32, #testing>
}


// -----

// The same encode read from inside another dispatch is an encode dispatch of its own (plans 0, 2);
// fused, the producer dispatch returns the encoded value and the consumer reads it (plans 1, 3;
// condition 1 again). Whether the consumer's generic joins the unset is the fuse_elementwise choice.
// CHECK-LABEL: plans for @fuse_encode_dispatch_of_a_result: 4; {{.*}}fuse-encode-dispatch-into-producer-dispatch 1
// CHECK:       plan 0 of @fuse_encode_dispatch_of_a_result: dispatch{} dispatch{linalg.generic} encode dispatch{iree_encoding.unset_encoding, linalg.generic}{{$}}
// CHECK:       plan 1 of @fuse_encode_dispatch_of_a_result: dispatch{} dispatch{linalg.generic, iree_encoding.set_encoding} dispatch{iree_encoding.unset_encoding, linalg.generic}{{$}}

#id = affine_map<(d0, d1) -> (d0, d1)>
#testing = #iree_encoding.testing<>
func.func @fuse_encode_dispatch_of_a_result(%a: tensor<8x16xf32>) -> tensor<8x16xf32> {
  %init = tensor.empty() : tensor<8x16xf32>
  %neg = flow.dispatch.region -> (tensor<8x16xf32>) {
    %g = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]} ins(%a : tensor<8x16xf32>) outs(%init : tensor<8x16xf32>) {
    ^bb0(%x: f32, %o: f32):
      %n = arith.negf %x : f32
      linalg.yield %n : f32
    } -> tensor<8x16xf32>
    flow.return %g : tensor<8x16xf32>
  }
  %e = iree_encoding.set_encoding %neg : tensor<8x16xf32> -> tensor<8x16xf32, #testing>
  %out = flow.dispatch.region -> (tensor<8x16xf32>) {
    %u = iree_encoding.unset_encoding %e : tensor<8x16xf32, #testing> -> tensor<8x16xf32>
    %g = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]} ins(%u : tensor<8x16xf32>) outs(%init : tensor<8x16xf32>) {
    ^bb0(%x: f32, %o: f32):
      %d = arith.addf %x, %x : f32
      linalg.yield %d : f32
    } -> tensor<8x16xf32>
    flow.return %g : tensor<8x16xf32>
  }
  return %out : tensor<8x16xf32>
}

// -----

// Condition 1 refused: the set_encoding reads an argument, which no dispatch computes; the single
// plan keeps it as written.
// CHECK-LABEL: plans for @dont_fuse_encode_of_an_argument: 1; {{.*}}rule matches: none
// CHECK:       plan 0 of @dont_fuse_encode_of_an_argument: iree_encoding.set_encoding{{$}}

#id = affine_map<(d0, d1) -> (d0, d1)>
#testing = #iree_encoding.testing<>
func.func @dont_fuse_encode_of_an_argument(%a: tensor<8x16xf32>) -> tensor<8x16xf32, #testing> {
  %e = iree_encoding.set_encoding %a : tensor<8x16xf32> -> tensor<8x16xf32, #testing>
  return %e : tensor<8x16xf32, #testing>
}
