"""Rewrites of plan forms IREE 3.13 rejects into forms it compiles (physical encodings, folded slices, hex blobs)."""

from __future__ import annotations

from typing import cast

import numpy as np

from egg_dispatch.emit.iree.builder import Builder, EmitIreeError, type_text
from egg_dispatch.emit.packed import PackedGenericError, packed_generic_maps
from egg_dispatch.mlir.ir import (
    AffineMapAttr,
    ArrayAttr,
    Attr,
    DenseAttr,
    EncodingAttr,
    FloatAttr,
    FunctionType,
    IntAttr,
    Module,
    Operation,
    Region,
    ScalarType,
    StrAttr,
    TensorType,
    Type,
    TypeAttr,
    UnitAttr,
    Value,
)
from egg_dispatch.mlir.ops import CONTRACTION_OPS, DYNAMIC, attr, make_int_list, segments, static_slice
from egg_dispatch.target.layout import Layout, encoding_layout, encoding_matmul_setup, packed_shape, swaps_operands
from egg_dispatch.target.profile import Target

__all__ = ["fold_constant_slice", "inline_missing_resources", "materialize_encodings", "needs_materialization"]


def needs_materialization(module: Module, target: Target) -> bool:
    """Whether the plan slices a tensor whose encoding resolves to tiles: IREE 3.13 rejects every spelling
    of that (extract_slice or a partial binding load inside a dispatch, flow.tensor.slice outside)."""
    for op in module.walk():
        if op.name == "tensor.extract_slice":
            t = op.operands[0].type
            if isinstance(t, TensorType) and t.encoding is not None and _layout_of(target, t) is not None:
                return True
    return False


def inline_missing_resources(module: Module) -> None:
    """A ``dense_resource`` whose blob the module lacks (plans are emitted without the input's blobs) is
    written as a hex literal: the values are known, and IREE refuses a resource with no data."""
    for op in module.walk():
        for key in ("value", "initial_value"):
            a = op.attributes.get(key)
            if isinstance(a, DenseAttr) and a.form == "resource" and a.resource_key not in module.resources:
                op.attributes[key] = DenseAttr(a.array, a.type, "hex")


def fold_constant_slice(op: Operation) -> DenseAttr | None:
    """A static, unit-stride slice of a dense constant, as the smaller constant it folds to."""
    src = op.operands[0].owner
    if not (isinstance(src, Operation) and src.name == "arith.constant"):
        return None
    value = src.attributes.get("value")
    if not isinstance(value, DenseAttr) or len(op.operands) != 1:
        return None
    offs, sizes, strides = static_slice(op)
    if DYNAMIC in offs or DYNAMIC in sizes or any(s != 1 for s in strides):
        return None
    t = op.result.type
    assert isinstance(t, TensorType)
    arr = np.asarray(value.array)
    if arr.ndim != len(offs):
        return None
    sl = arr[tuple(slice(o, o + s) for o, s in zip(offs, sizes, strict=True))].reshape(t.static_shape)
    return DenseAttr(np.ascontiguousarray(sl), t, "hex" if sl.size > 100 else "list")


def _layout_of(target: Target, t: TensorType) -> Layout | None:
    return encoding_layout(target, t)


def materialize_encodings(module: Module, target: Target) -> Module:
    """The plan with every encoding resolved for ``target``: ``set_encoding`` -> ``linalg.pack`` (zero
    padding), contractions on packed operands -> ``linalg.(batch_)mmt4d`` (swapped for a narrow-N result),
    ``unset_encoding`` -> ``linalg.unpack``, slices of packed tensors -> slices of whole tiles; identity
    encodings are dropped. The same rewrite IREE's MaterializeDeviceEncoding does inside each dispatch."""
    return _Materializer(target).module(module)


class _Materializer:
    def __init__(self, target: Target) -> None:
        self.target = target

    def type(self, t: Type) -> Type:
        if isinstance(t, TensorType) and t.encoding is not None:
            # a '?' (None) passes through an identity layout, and an untiled dim, unchanged
            lay = _layout_of(self.target, t)
            if lay is not None and any(t.shape[d] is None for d in lay.inner_dims_pos):
                raise EmitIreeError(
                    f"a dynamic dimension of {type_text(t.without_encoding())} is tiled by the {self.target.name} "
                    "layout: the physical spelling (pack / mmt4d / unpack), which a slice of an encoded tensor "
                    "needs, would take run-time tile counts this emitter does not write"
                )
            return TensorType(packed_shape(cast("tuple[int, ...]", t.shape), lay), t.element)
        if isinstance(t, FunctionType):
            return FunctionType(tuple(map(self.type, t.inputs)), tuple(map(self.type, t.results)))
        return t

    def module(self, m: Module) -> Module:
        out = Module(name=m.name, attributes=dict(m.attributes), resources=dict(m.resources), file=m.file,
                     has_module_op=m.has_module_op)  # fmt: skip
        mapping: dict[Value, Value] = {}
        for op in m.ops:
            b = Builder()
            self.rewrite(op, b, mapping)
            out.ops.extend(b.block.ops)
        return out

    def attrs(self, op: Operation) -> dict[str, Attr]:
        return {k: (TypeAttr(self.type(v.type)) if isinstance(v, TypeAttr) else v) for k, v in op.attributes.items()}

    def region(self, r: Region, mapping: dict[Value, Value]) -> Region:
        nr = Region()
        for blk in r.blocks:
            nb = Builder()
            nb.block.label = blk.label
            for a in blk.args:
                na = Value(a.name, self.type(a.type), nb.block, a.index)
                mapping[a] = na
                nb.block.args.append(na)
            for o in blk.ops:
                self.rewrite(o, nb, mapping)
            nr.blocks.append(nb.block)
        return nr

    def rewrite(self, op: Operation, b: Builder, mapping: dict[Value, Value]) -> None:
        n = op.name
        ins_ = [mapping.get(v, v) for v in op.operands]
        src_t = op.operands[0].type if op.operands else None
        if n in ("iree_encoding.set_encoding", "iree_encoding.unset_encoding", "flow.tensor.encode"):
            assert isinstance(src_t, TensorType)
            res_t = op.result.type
            assert isinstance(res_t, TensorType)
            v = ins_[0]
            if src_t.encoding is not None and (lay := _layout_of(self.target, src_t)) is not None:
                v = self.unpack(b, v, lay, src_t.without_encoding())
            if res_t.encoding is not None and (lay := _layout_of(self.target, res_t)) is not None:
                v = self.pack(b, v, lay, res_t)
            mapping[op.result] = v
            return
        if n == "tensor.extract_slice" and isinstance(src_t, TensorType) and src_t.encoding is not None:
            lay = _layout_of(self.target, src_t)
            res_t = op.result.type
            assert isinstance(res_t, TensorType)
            if lay is not None:
                if _layout_of(self.target, res_t) != lay or len(op.operands) != 1:
                    raise EmitIreeError("a slice of a packed tensor whose result resolves to another layout")
                offs, sizes, strides = static_slice(op)
                if any(s != 1 for s in strides):
                    raise EmitIreeError("a strided slice of a packed tensor")
                tile = dict(zip(lay.inner_dims_pos, lay.inner_tiles, strict=True))
                outer_o = [o // tile.get(d, 1) for d, o in enumerate(offs)]
                outer_s = [-(-sz // tile.get(d, 1)) for d, sz in enumerate(sizes)]
                perm = lay.outer_dims_perm or tuple(range(len(offs)))
                p_offs = [outer_o[p] for p in perm] + [0] * len(lay.inner_tiles)
                p_sizes = [outer_s[p] for p in perm] + list(lay.inner_tiles)
                attrs: dict[str, Attr] = {
                    "static_offsets": make_int_list(p_offs),
                    "static_sizes": make_int_list(p_sizes),
                    "static_strides": make_int_list([1] * len(p_offs)),
                }
                mapping[op.result] = b.add(n, ins_, [self.type(res_t)], attrs).result
                return
        acc_t = op.results[0].type if op.results else None
        if (
            n in CONTRACTION_OPS
            and isinstance(acc_t, TensorType)
            and acc_t.encoding is not None
            and (lay := _layout_of(self.target, acc_t)) is not None
        ):
            self.contraction(op, b, mapping, acc_t)
            return
        touched = [v.type for v in [*op.operands, *op.results]]
        packed = [
            isinstance(t, TensorType) and t.encoding is not None and _layout_of(self.target, t) is not None
            for t in touched
        ]
        attrs = self.attrs(op)
        if n == "linalg.generic" and any(packed):
            attrs.update(self.generic_attrs(op))
        elif n not in _RETYPED and any(packed):
            raise EmitIreeError(
                f"cannot spell '{n}' on a packed tensor (only pack, unpack, fill, mmt4d, elementwise generics, slices)"
            )
        new = Operation(n, ins_, [], attrs, [], op.loc, op.opaque_text, op.generic_form)
        new.results = [Value(r.name, self.type(r.type), new, r.index) for r in op.results]
        mapping.update(zip(op.results, new.results, strict=True))
        new.regions = [self.region(r, mapping) for r in op.regions]
        b.block.ops.append(new)

    def generic_attrs(self, op: Operation) -> dict[str, Attr]:
        """An elementwise generic on encoded operands, on their packed tiles (``emit.packed``)."""
        layouts = []
        for v in op.operands:
            t = v.type
            layouts.append(_layout_of(self.target, t) if isinstance(t, TensorType) and t.rank else None)
        n_out = segments(op)[1]
        try:
            # a generic's indexing_maps: an ArrayAttr of AffineMapAttr (mlir.ops' table)
            maps_in = cast("tuple[AffineMapAttr, ...]", attr(op, "indexing_maps", ArrayAttr).items)
            maps, rank = packed_generic_maps(maps_in, layouts, n_out)
        except PackedGenericError as e:
            raise EmitIreeError(f"cannot spell '{op.name}' on packed tensors: {e}") from None
        return {
            "indexing_maps": ArrayAttr(tuple(maps)),
            "iterator_types": ArrayAttr(tuple(StrAttr("parallel") for _ in range(rank))),
        }

    def pack(self, b: Builder, v: Value, lay: Layout, t: TensorType) -> Value:
        packed = self.type(t)
        empty = b.add("tensor.empty", [], [packed]).result
        zero = b.add("arith.constant", [], [t.element], {"value": _zero(t.element)}).result
        attrs = {
            "inner_dims_pos": make_int_list(lay.inner_dims_pos),
            "inner_tiles": make_int_list(lay.inner_tiles),
            "outer_dims_perm": make_int_list(lay.outer_dims_perm),
            "has_padding": UnitAttr(),
            "operandSegmentSizes": make_int_list((1, 1)),
        }
        return b.add("linalg.pack", [v, empty, zero], [packed], attrs).result

    def unpack(self, b: Builder, v: Value, lay: Layout, plain: TensorType) -> Value:
        empty = b.add("tensor.empty", [], [plain]).result
        attrs = {
            "inner_dims_pos": make_int_list(lay.inner_dims_pos),
            "inner_tiles": make_int_list(lay.inner_tiles),
            "outer_dims_perm": make_int_list(lay.outer_dims_perm),
            "operandSegmentSizes": make_int_list((1, 1)),
        }
        return b.add("linalg.unpack", [v, empty], [plain], attrs).result

    def contraction(self, op: Operation, b: Builder, mapping: dict[Value, Value], acc_t: TensorType) -> None:
        lhs, rhs, acc = (mapping.get(v, v) for v in op.operands[:3])
        enc = acc_t.encoding
        assert isinstance(enc, EncodingAttr)
        types, maps, sizes = encoding_matmul_setup(enc)
        for v in op.operands[:2]:
            t = v.type
            if not (isinstance(t, TensorType) and t.encoding is not None and _layout_of(self.target, t) is not None):
                raise EmitIreeError(f"'{op.name}' mixes packed and plain operands")
        a, c = (rhs, lhs) if swaps_operands(self.target, types, maps, sizes) else (lhs, rhs)
        out_t = self.type(acc_t)
        rank = out_t.rank if isinstance(out_t, TensorType) else 0
        if rank not in (4, 5):
            raise EmitIreeError(f"a packed contraction of rank {rank} is neither mmt4d nor batch_mmt4d")
        name = "linalg.mmt4d" if rank == 4 else "linalg.batch_mmt4d"
        attrs = {"operandSegmentSizes": make_int_list((2, 1))}
        mapping[op.results[0]] = b.add(name, [a, c, acc], [out_t], attrs).result


_RETYPED = frozenset(
    {"tensor.empty", "linalg.fill", "util.global", "util.global.load", "util.global.store", "flow.dispatch.region",
     "flow.return"}
)  # fmt: skip
"""Ops that only carry a packed tensor: the same op on the packed type."""


def _zero(t: ScalarType) -> FloatAttr | IntAttr:
    return FloatAttr(0.0, t) if t.is_float else IntAttr(0, t)
