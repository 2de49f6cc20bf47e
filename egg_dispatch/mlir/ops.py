"""How modelled ops keep their custom-syntax pieces in the generic IR, and accessors for them.

Every modelled op is an ``Operation`` whose operands, results and regions are as in MLIR's generic
form; the custom-syntax parts live in attributes under these fixed keys:

========================================  =====================================================================
op                                        operands / attributes / regions
========================================  =====================================================================
func.func, util.func                      ``sym_name`` StrAttr, ``function_type`` TypeAttr(FunctionType),
                                          ``sym_visibility`` StrAttr (optional); body region (entry block args)
func.return, util.return                  operands
arith.constant                            ``value``: DenseAttr | IntAttr | FloatAttr
affine.apply / affine.min / affine.max    [*dims, *symbols] (index values, as the map counts them);
                                          ``map`` AffineMapAttr
tensor.empty                              [*sizes]: one index per ``?`` of the result type
tensor.extract_slice                      [source, *dynamic]; ``static_offsets/static_sizes/static_strides``
                                          (ArrayAttr of IntAttr; DYNAMIC marks an SSA entry, taken in order
                                          from the operands after the source)
tensor.insert_slice                       [source, dest, *dynamic]; same three attributes
tensor.collapse_shape                     [src]; ``reassociation`` ArrayAttr[ArrayAttr[IntAttr]]
tensor.expand_shape                       [src, *dynamic]; ``reassociation``; ``static_output_shape`` ArrayAttr[IntAttr]
                                          (DYNAMIC marks an SSA entry)
tensor.extract                            [tensor, *indices]
tensor.dim                                [tensor, index]
tensor.concat                             [*inputs]; ``dim`` IntAttr (the concatenated dimension)
tensor.pad                                [source, *dynamic low, *dynamic high]; ``static_low``/``static_high``
                                          ArrayAttr[IntAttr] (DYNAMIC marks an SSA entry), ``nofold`` UnitAttr
                                          (optional); region: index args (one per dim), ``tensor.yield`` value
linalg.fill                               [value, init] (``operandSegmentSizes`` = (1, 1))
linalg named / generic / transpose /      ins then outs as operands; ``operandSegmentSizes`` ArrayAttr[IntAttr]
broadcast / pack / unpack / mmt4d         of (num_ins, num_outs); ``indexing_maps`` (optional for named ops),
                                          ``iterator_types`` (generic: ArrayAttr[StrAttr]), ``permutation``
                                          (transpose), ``dimensions`` (broadcast); generic has a body region
linalg.pack                               [source, dest, padding_value?, *dynamic tiles]; ``inner_dims_pos``,
                                          ``inner_tiles`` (DYNAMIC marks an SSA entry), ``outer_dims_perm``
                                          (optional), ``has_padding`` UnitAttr if padded; ``dim_segments``
                                          [dynamic tiles] when it has any
linalg.unpack                             [source, dest, *dynamic tiles]; ``inner_dims_pos``, ``inner_tiles``,
                                          ``outer_dims_perm``; ``dim_segments`` as pack
linalg.index                              ``dim`` IntAttr
linalg.softmax                            [input, init] (no ``operandSegmentSizes``); ``dimension`` IntAttr
iree_encoding.set_encoding / unset_       [source, *encoding_dims(, *result dims)]; encoding in the result /
  encoding                                source TensorType; ``dim_segments`` (set: [encoding_dims]; unset:
                                          [encoding_dims, result dims])
flow.dispatch.region                      [*workload, *result dims]; ``workload`` IntAttr (count, when written),
                                          ``dim_segments`` (one per result); region whose terminator is
                                          ``flow.return``
flow.dispatch.workgroups                  [*workload, *arguments, *argument dims, *result dims]; ``workload``,
                                          ``dim_segments`` (one per argument, then one per result),
                                          ``tied_operands`` (with a tied result); body region (args are
                                          bindings: the arguments', then the untied results'); ``count``
                                          region
flow.tensor.encode / reshape / bitcast,   [source, *source dims, *result dims]; ``dim_segments`` [source, result]
  iree_tensor_ext.bitcast
flow.tensor.tie_shape                     [source, *dims]; ``dim_segments`` [dims]
flow.tensor.transfer                      [source, *dims]; ``target`` (a StrAttr or a device affinity);
                                          ``dim_segments`` [dims]
util.global                               ``sym_name``, ``type`` TypeAttr, ``initial_value`` (optional),
                                          ``sym_visibility``, ``is_mutable`` UnitAttr (optional)
util.initializer                          body region
util.global.load                          ``global`` SymbolRefAttr, ``is_immutable`` UnitAttr (optional)
util.global.store                         [value]; ``global`` SymbolRefAttr
hal.tensor.import / export                [source, wait fence?, *dims]; ``name`` StrAttr (optional), ``wait``
                                          UnitAttr when the async ABI's fence is the second operand;
                                          ``dim_segments`` [dims of the imported / exported tensor]
hal.buffer_view.dim                       [buffer view]; ``index`` IntAttr
hal.tensor.barrier                        [*tensors, fence]; results: the tensors (identity once ready)
flow.tensor.constant                      ``value``: ParameterAttr (a named parameter) or DenseAttr
iree_tensor_ext.compute_barrier.start/end [source, *source dims]; ``dim_segments`` [source dims]
iree_tensor_ext.dispatch.tensor.load      [binding, *dynamic, *binding dims]; ``static_offsets/sizes/strides``;
                                          ``dim_segments`` [binding dims]
iree_tensor_ext.dispatch.tensor.store     [value, binding, *dynamic, *binding dims]; as load
iree_tensor_ext.dispatch.workload.ordinal [value]; ``ordinal`` IntAttr (its workload position)
util.assume.int                           [*values]; ``assumptions``: per operand a DictAttr (umin, umax,
                                          udiv) or an ArrayAttr of them (one row per call site)
iree_linalg_ext.attention                 ins (q, k, v, scale[, mask]) then outs; ``indexing_maps``; region
iree_linalg_ext.gather                    ins (source, indices) then outs; ``dimension_map``; region
cf.assert                                 [condition (i1)]; ``msg`` StrAttr; no results
arith.* / math.* (scalar or tensor)       operands; ``predicate`` StrAttr (cmpf/cmpi), ``fastmath`` /
                                          ``overflow`` StrAttr (optional)
========================================  =====================================================================

Attributes an op carries in an ``attributes {...}`` / ``{...}`` dictionary are kept under their own
names next to these.
"""

from __future__ import annotations

from egg_dispatch.mlir.ir import (
    AffineMapAttr,
    ArrayAttr,
    Attr,
    FunctionType,
    IntAttr,
    Operation,
    StrAttr,
    TensorType,
    TypeAttr,
    Value,
)

__all__ = [
    "CAST_OPS",
    "CONTRACTION_OPS",
    "DEFAULT_MAPS",
    "DIM_SEGMENTS",
    "DYNAMIC",
    "ELEMENTWISE_DIALECTS",
    "RESHAPE_OPS",
    "RETURN_OPS",
    "TENSOR_RESHAPE_OPS",
    "TIED_OPERANDS",
    "WORKLOAD",
    "attr",
    "base_operands",
    "dim_group",
    "dim_groups",
    "function_type",
    "indexing_maps",
    "ins",
    "int_list",
    "iterator_types",
    "outs",
    "result_bindings",
    "set_dims",
    "static_slice",
    "sym_name",
    "tensor_type",
    "tied_operands",
    "workgroups_arguments",
    "workload",
]

DYNAMIC = -(2**63)
"""Marks an SSA-valued entry in ``static_offsets`` and friends (MLIR's ``ShapedType::kDynamic``)."""

CONTRACTION_OPS = frozenset(
    {
        "linalg.matmul",
        "linalg.batch_matmul",
        "linalg.matvec",
        "linalg.vecmat",
    }
)
"""Named ops of the matmul family that IREE's SetEncoding encodes (docs/iree-data-tiling.md §1.1)."""

DEFAULT_MAPS = {
    "linalg.matmul": ((0, 2), (2, 1), (0, 1)),
    "linalg.batch_matmul": ((0, 1, 3), (0, 3, 2), (0, 1, 2)),
    "linalg.matvec": ((0, 1), (1,), (0,)),
    "linalg.vecmat": ((0,), (0, 1), (1,)),
}
"""Loop dims of each operand of the named matmul ops when they print no ``indexing_maps``."""

ELEMENTWISE_DIALECTS = ("arith", "math")

TENSOR_RESHAPE_OPS = frozenset({"tensor.collapse_shape", "tensor.expand_shape"})
"""``tensor`` ops that only reinterpret a tensor's shape (the row-major data unchanged)."""

RESHAPE_OPS = TENSOR_RESHAPE_OPS | {"flow.tensor.reshape"}
"""Every reshape, ``flow.tensor.reshape`` being what IREE prints between dispatches: views of their
input's bytes."""

CAST_OPS = frozenset({
    "extf", "truncf", "sitofp", "uitofp", "fptosi", "fptoui", "extsi", "extui", "trunci",
    "index_cast", "index_castui", "bitcast", "scaling_extf", "scaling_truncf",
})  # fmt: skip
"""arith casts (short names): ``op %x : T to T'`` in both the reader and the printer (the scaling ones,
``op %x, %scale : T, S to T'``, list a type per operand)."""

RETURN_OPS = frozenset({
    "func.return", "return", "util.return", "flow.return", "linalg.yield", "iree_linalg_ext.yield",
    "tensor.yield", "scf.yield",
})  # fmt: skip
"""Terminators written ``op %a, %b : T, T``."""


DIM_SEGMENTS = "dim_segments"
"""Attribute of an op whose types carry ``{%d, ...}`` dynamic-size lists (or ``encoding_dims{...}``):
how many of its trailing operands belong to each list, in the op's printed order (see the table)."""

WORKLOAD = "workload"
"""Attribute of ``flow.dispatch.region`` / ``flow.dispatch.workgroups``: how many leading operands are
the ``[%w, ...]`` workload."""

TIED_OPERANDS = "tied_operands"
"""Attribute of ``flow.dispatch.workgroups`` with tied results (``-> %x``): per result, the captured
operand it is (updated in place, through that operand's binding), or -1."""


def dim_groups(op: Operation) -> list[list[Value]]:
    """The dynamic-size operands of each ``{...}`` list of ``op`` (``DIM_SEGMENTS``), in order."""
    seg = int_list(op.attributes.get(DIM_SEGMENTS))
    if not seg:
        return []
    i = len(op.operands) - sum(seg)
    out = []
    for n in seg:
        out.append(op.operands[i : i + n])
        i += n
    return out


def dim_group(op: Operation, i: int) -> list[Value]:
    """The ``i``-th dynamic-size list of ``op`` (empty when the op has none)."""
    groups = dim_groups(op)
    return groups[i] if i < len(groups) else []


def base_operands(op: Operation) -> list[Value]:
    """``op``'s operands without its trailing dynamic-size lists (``DIM_SEGMENTS``)."""
    n = sum(int_list(op.attributes.get(DIM_SEGMENTS)))
    return op.operands[: len(op.operands) - n] if n else list(op.operands)


def workload(op: Operation) -> list[Value]:
    """The ``[%w, ...]`` workload of a dispatch region / workgroups op."""
    a = op.attributes.get(WORKLOAD)
    return op.operands[: a.value] if isinstance(a, IntAttr) else []


def workgroups_arguments(op: Operation) -> list[Value]:
    """The captured arguments of ``flow.dispatch.workgroups`` (without workload and dynamic sizes)."""
    base = base_operands(op)
    return base[len(workload(op)) :]


def tied_operands(op: Operation) -> list[int | None]:
    """Per result of ``flow.dispatch.workgroups``: the captured operand it is tied to, or None."""
    tied = int_list(op.attributes.get(TIED_OPERANDS)) or (-1,) * len(op.results)
    return [t if t >= 0 else None for t in tied]


def result_bindings(op: Operation) -> list[int]:
    """Per result of ``flow.dispatch.workgroups``: the body argument it is written through (a tied one:
    its operand's binding; the others: the bindings after the captured operands', in order)."""
    n_in = len(workgroups_arguments(op))
    out = []
    untied = 0
    for t in tied_operands(op):
        if t is None:
            out.append(n_in + untied)
            untied += 1
        else:
            out.append(t)
    return out


def set_dims(attrs: dict[str, Attr], groups: list[list[Value]]) -> list[Value]:
    """Record ``groups`` (one list per ``{...}``) in ``attrs``; returns the operands to append."""
    if any(groups):
        attrs[DIM_SEGMENTS] = make_int_list([len(g) for g in groups])
    return [v for g in groups for v in g]


def int_list(attr: Attr | None) -> tuple[int, ...]:
    """An ``ArrayAttr`` of ``IntAttr`` as a tuple of ints (``()`` for a missing attribute)."""
    if attr is None:
        return ()
    assert isinstance(attr, ArrayAttr), attr
    return tuple(a.value for a in attr.items)  # type: ignore[attr-defined]  # its items are IntAttr (ArrayAttr holds Attr)


def make_int_list(values: tuple[int, ...] | list[int]) -> ArrayAttr:
    return ArrayAttr(tuple(IntAttr(int(v)) for v in values))


def segments(op: Operation) -> tuple[int, int]:
    seg = int_list(op.attributes.get("operandSegmentSizes"))
    if len(seg) == 2:
        return seg[0], seg[1]
    return len(op.operands) - len(op.results), len(op.results)


def ins(op: Operation) -> list[Value]:
    """The ``ins(...)`` operands of a structured (linalg / linalg_ext) op."""
    n_in, _ = segments(op)
    return op.operands[:n_in]


def outs(op: Operation) -> list[Value]:
    """The ``outs(...)`` operands of a structured op (its inits)."""
    n_in, n_out = segments(op)
    return op.operands[n_in : n_in + n_out]


def static_slice(op: Operation) -> tuple[tuple[int, ...], tuple[int, ...], tuple[int, ...]]:
    """(offsets, sizes, strides) of a slice-like op; entries may be ``DYNAMIC``."""
    return (
        int_list(op.attributes.get("static_offsets")),
        int_list(op.attributes.get("static_sizes")),
        int_list(op.attributes.get("static_strides")),
    )


def attr[A: Attr](op: Operation, key: str, kind: type[A]) -> A:
    """``op.attributes[key]``, which the table above says is a ``kind``."""
    a = op.attributes[key]
    assert isinstance(a, kind), f"{op.name}: attribute {key} is {a!r}, not a {kind.__name__}"
    return a


def sym_name(op: Operation) -> str:
    """The ``sym_name`` of a function or global."""
    return attr(op, "sym_name", StrAttr).value


def function_type(func: Operation) -> FunctionType:
    """The declared signature of a ``func.func`` / ``util.func``."""
    t = attr(func, "function_type", TypeAttr).type
    assert isinstance(t, FunctionType), f"@{sym_name(func)}: function_type is {t}"
    return t


def tensor_type(v: Value) -> TensorType:
    assert isinstance(v.type, TensorType), f"%{v.name} is not a tensor: {v.type}"
    return v.type


def is_opaque(op: Operation) -> bool:
    return op.opaque_text is not None


def indexing_maps(op: Operation) -> list[AffineMapAttr]:
    """The op's ``indexing_maps`` attribute as affine maps (empty when it has none)."""
    items = getattr(op.attributes.get("indexing_maps"), "items", ())
    return [m for m in items if isinstance(m, AffineMapAttr)]


def iterator_types(op: Operation) -> tuple[str, ...]:
    it = op.attributes.get("iterator_types")
    if it is None:
        return ()
    assert isinstance(it, ArrayAttr)
    return tuple(a.value if isinstance(a, StrAttr) else str(a) for a in it.items)
