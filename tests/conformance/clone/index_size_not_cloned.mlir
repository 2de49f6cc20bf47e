// A dynamic program: the oracle compares plans, and checks numbers only at sizes it can make inputs
// for (here it cannot: a size is an index argument the tensors do not carry).
// An index computation used as the dispatch's result size is not cloned (hasUnfusableUseInDispatch:
// an index value that is an operand of the dispatch op itself is a host-side shape computation): the
// arith.muli giving the dynamic size stays outside, though the tensor.empty inside also reads it.
// EXPECT: in
#id = affine_map<(d0) -> (d0)>
util.func public @index_size_not_cloned(%a: tensor<?xf32>, %n: index) -> tensor<?xf32> {
  %c1 = arith.constant 1 : index
  %size = arith.muli %n, %c1 : index
  %res = flow.dispatch.region -> (tensor<?xf32>{%size}) {
    %e = tensor.empty(%size) : tensor<?xf32>
    %g = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel"]} ins(%a : tensor<?xf32>) outs(%e : tensor<?xf32>) {
    ^bb0(%x: f32, %o: f32):
      %y = arith.mulf %x, %x : f32
      linalg.yield %y : f32
    } -> tensor<?xf32>
    flow.return %g : tensor<?xf32>
  }
  util.return %res : tensor<?xf32>
}
