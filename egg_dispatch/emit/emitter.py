"""A chosen plan (a ``Term`` DAG) back to MLIR: ``flow.dispatch.region`` form with globals.

``Dispatch(t)`` becomes a ``flow.dispatch.region`` whose body computes t, with every non-boundary
sub-term fused (cloned) inside and boundaries (arguments, constants, other dispatches, globals)
read from outside; a hoisted encode of a boundary becomes ``flow.tensor.encode``, as IREE prints
it; ``ConstEval(t)`` becomes a ``util.global`` filled by a ``util.initializer``. At the
``materialized`` level encodings are spelled ``linalg.pack`` / ``linalg.mmt4d`` / ``linalg.unpack``.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import cast

from egg_dispatch.egraph.data import EGraphData, Term
from egg_dispatch.egraph.imported import ImportedProgram, Parameter
from egg_dispatch.egraph.terms import COMPUTING, PLACEMENTS, STORED
from egg_dispatch.egraph.terms import Arg as ArgTerm
from egg_dispatch.egraph.terms import enc as enc_text
from egg_dispatch.emit.clone import EmitError, clone_region, inline_captured_constants, rename_uses, rename_values
from egg_dispatch.emit.dims import SizeValues, dynamic_type
from egg_dispatch.emit.packed import PackedGenericError, packed_generic_maps, packed_loop_indices
from egg_dispatch.mlir.ir import (
    AffineMapAttr,
    ArrayAttr,
    Attr,
    Block,
    EncodingAttr,
    FloatAttr,
    FunctionType,
    IntAttr,
    Module,
    Operation,
    Region,
    ScalarType,
    StrAttr,
    SymbolRefAttr,
    TensorType,
    Type,
    TypeAttr,
    UnitAttr,
    Value,
)
from egg_dispatch.mlir.ops import DYNAMIC, RESHAPE_OPS, attr, make_int_list, set_dims, tensor_type
from egg_dispatch.target.layout import Layout
from egg_dispatch.util.deep import allow_deep_recursion

__all__ = ["EmitError", "Emitter", "class_shapes"]


@dataclass
class _Ctx:
    block: Block
    cache: dict[int, Value] = field(default_factory=dict)
    in_dispatch: bool = False
    at_load: bool = False


class Emitter:
    """Builds one ``func.func`` computing the root term's results."""

    def __init__(
        self, imported: ImportedProgram, name: str | None = None, shapes: Mapping[str, tuple[int, ...]] | None = None
    ):
        self.imp = imported
        self.name = name or imported.function
        self.shapes: Mapping[str, tuple[int, ...]] = shapes or {}
        """e-class -> its shape (term vector), the analysis' ``shape`` (``class_shapes``): what types a
        rank-reducing ``Slice``, whose sizes keep the unit dims its class drops (``_slice_shape``)."""
        self.module = Module()
        self.arg_types: dict[int, Type] = {}
        self.arg_dims: dict[int, tuple[int, ...]] = {}
        for let, term in imported.lets.items():
            if isinstance(term, ArgTerm):
                self.arg_types[term.index] = imported.let_types[let]
                if let in imported.let_dims:
                    self.arg_dims[term.index] = imported.let_dims[let]
        self.globals = 0
        self.global_cache: dict[int, str] = {}
        self._typed: dict[int, tuple[Term, Type]] = {}
        self._shaped: dict[int, tuple[Term, tuple[int, ...]]] = {}
        """``type_of`` / ``shape_of`` per term (by identity, the term kept alive with its answer): each
        walks down a chain of terms (a residual stream's fills, slices and inserts), and a model's
        plan asks again at every use."""
        self.opaque: list[tuple[Operation, list[str]]] = []
        """Cloned opaque ops and their operands' names in the source text, renamed after numbering."""
        self.dispatch_order: list[tuple[str, str]] = []
        """("dispatch" | "encode", e-class of the Dispatch term) of every ``flow.dispatch.region`` and
        ``flow.tensor.encode`` of the function (and of every slice between dispatches, which becomes a
        copy dispatch), in program order: IREE numbers its executables in this
        order (``<func>_dispatch_<N>_...``, ``_encoding_<N>_...``), which is how a profiled kernel time
        finds the plan dispatch it belongs to."""

    # ------------------------------------------------------------------------------- types
    def encoding_attr(self, e: Term) -> Attr:
        """The attribute an ``Enc`` term stands for: a priced encoding, or one kept as written."""
        key = enc_text(e.args[0], e.args[1], e.args[2], e.args[3], e.args[4])
        return self.imp.encodings.get(key) or self.imp.unpriced_encodings[key]

    def type_of(self, t: Term) -> Type:
        """The MLIR type of ``t``'s value (memoized per term: see ``_typed``)."""
        known = self._typed.get(id(t))
        if known is None:
            known = self._typed[id(t)] = (t, self._type_of(t))
        return known[1]

    def _type_of(self, t: Term) -> Type:
        op, a = t.op, t.args
        if op == "Arg":
            return self.arg_types[a[0]]
        if op == "Const":
            return self.imp.constants[a[0]].type
        if op == "Scalar":
            return ScalarType(a[1])
        if op == "Size":
            return ScalarType("index")
        if op == "Empty":
            return dynamic_type(a[0], ScalarType(a[1]))
        if op in ("Fill",):
            return self.type_of(a[1])
        if op == "Slice":
            return dynamic_type(self._slice_shape(t), self.elem(a[0]))
        if op == "InsertSlice":
            return self.type_of(a[1])
        if op in ("Contract", "Mmt4d"):
            return self.type_of(a[-1])
        if op == "Generic":  # on encoded operands (set_encoding bubbled above it) its result is encoded too
            return self.type_of(a[2][0]) if a[2] else self.imp.ops[a[0]].results[0].type
        if op == "Op":
            return self.imp.ops[a[0]].results[a[2]].type
        if op == "SetEncoding":
            src = self.type_of(a[0])
            assert isinstance(src, TensorType)
            return TensorType(src.shape, src.element, self.encoding_attr(a[1]))
        if op in ("UnsetEncoding", "Unpack"):
            return dynamic_type(a[1], self.elem(a[0]))
        if op == "Pack":
            src = self.type_of(a[0])
            assert isinstance(src, TensorType)
            return dynamic_type(self.shape_of(t), src.element)
        if op == "EncodedSlice":
            src = self.type_of(a[0])
            assert isinstance(src, TensorType)
            if src.encoding is None:  # a packed (materialized) tensor: slice its outer dims
                return dynamic_type(self._packed_slice(a[0], a[1], a[2])[1], src.element)
            return dynamic_type(a[2], src.element, src.encoding)
        if op in PLACEMENTS:
            return self.type_of(a[0])
        raise EmitError(f"cannot type term {op}")

    def _slice_shape(self, t: Term) -> tuple[int, ...]:
        """A ``Slice``'s result shape: its sizes, or its class's shape where that has fewer dims (a
        rank-reducing ``tensor.extract_slice``, as IREE's copy of a fused projection's third loads it,
        rules/clone.egg condition 7)."""
        sizes = tuple(t.args[2])
        shape = self.shapes.get(t.eclass)
        if isinstance(shape, tuple) and len(shape) < len(sizes):
            return shape
        return sizes

    def shape_of(self, t: Term) -> tuple[int, ...]:
        """``t``'s shape as a term vector (static sizes, size codes for ``?``; memoized per term)."""
        known = self._shaped.get(id(t))
        if known is None:
            known = self._shaped[id(t)] = (t, self._shape_of(t))
        return known[1]

    def _shape_of(self, t: Term) -> tuple[int, ...]:
        op, a = t.op, t.args
        if op in ("Empty",):
            return tuple(a[0])
        if op == "Slice":
            return self._slice_shape(t)
        if op in ("UnsetEncoding", "Unpack"):
            return tuple(a[1])
        if op == "Arg":
            known = self.arg_dims.get(a[0])
            if known:
                return known
            arg_t = self.type_of(t)
            assert isinstance(arg_t, TensorType), f"argument {a[0]} is not a tensor"
            return arg_t.static_shape  # a dynamic argument has its arg_dims
        if op in {"Fill", "SetEncoding"} | PLACEMENTS:
            return self.shape_of(a[1] if op == "Fill" else a[0])
        if op in ("Contract", "Mmt4d", "InsertSlice"):
            return self.shape_of(a[-1] if op != "InsertSlice" else a[1])
        if op == "Generic" and a[2]:
            return self.shape_of(a[2][0])
        if op in ("Generic", "Op"):
            dims = self.imp.op_dims.get(a[0])
            index = a[2] if op == "Op" else 0
            if dims:
                return tuple(dims[index])
        if op == "Pack":
            layout = _layout(a[1])
            tile = dict(zip(layout.inner_dims_pos, layout.inner_tiles, strict=True))
            src = self.shape_of(a[0])
            outer = [self.imp.code(self.imp.dim(v).ceildiv(tile[d])) if d in tile else v for d, v in enumerate(src)]
            return tuple(outer[p] for p in layout.outer_dims_perm) + tuple(layout.inner_tiles)
        if op == "EncodedSlice":
            src_t = self.type_of(a[0])
            if isinstance(src_t, TensorType) and src_t.encoding is None:
                return tuple(self._packed_slice(a[0], a[1], a[2])[1])
            return tuple(a[2])
        typ = self.type_of(t)
        if isinstance(typ, TensorType) and not typ.is_static:
            raise EmitError(f"the sizes of a dynamic {op} are not known to the plan")
        return typ.static_shape if isinstance(typ, TensorType) else ()

    def encoding_dims(self, t: TensorType, shape: tuple[int, ...]) -> list[Value]:
        """The ``encoding_dims{...}`` of a set/unset_encoding of ``t`` (of logical ``shape``): the size of
        each ``?`` iteration size of its encoding, in order -- from the tensor's own dim where the operand's
        map has that loop, else as the input's IR gave it (a weight's encoding: M is the activation's)."""
        e = t.encoding
        if not isinstance(e, EncodingAttr) or not e.iteration_sizes or None not in e.iteration_sizes:
            return []
        maps = e.user_indexing_maps or ()
        own = maps[e.operand_index] if e.operand_index < len(maps) else None
        positions = own.dim_positions() if isinstance(own, AffineMapAttr) else None
        recorded = list(self.imp.encoding_dims.get(self._enc_key(e), ()))
        out: list[Value] = []
        k = 0
        for j, size in enumerate(e.iteration_sizes):
            if size is not None:
                continue
            if positions is not None and j in positions:
                out.append(self.sizes.code(shape[positions.index(j)]))
            elif k < len(recorded):
                out.append(self.sizes.code(recorded[k]))
            else:
                raise EmitError(f"the size of iteration dim {j} of an encoding is not known to the plan")
            k += 1
        return out

    def encoding_dims_needed(self, t: Type) -> bool:
        e = t.encoding if isinstance(t, TensorType) else None
        return isinstance(e, EncodingAttr) and e.iteration_sizes is not None and None in e.iteration_sizes

    def _enc_key(self, e: EncodingAttr) -> str:
        for key, known in self.imp.encodings.items():
            if known == e:
                return key
        return ""

    def dim_values(self, t: Term) -> list[Value]:
        """The ``{%d, ...}`` list of ``t``'s type: one value per ``?`` dim."""
        vec = self.shape_of(t)
        return self.sizes.operands(vec) if any(v < 0 for v in vec) else []

    def elem(self, t: Term) -> ScalarType:
        typ = self.type_of(t)
        return typ.element if isinstance(typ, TensorType) else cast(ScalarType, typ)  # not a tensor: a scalar

    # ------------------------------------------------------------------------------ driver
    def emit(self, root: Term) -> Module:
        allow_deep_recursion()
        if root.op != "Results":
            raise EmitError("the plan's root must be (Results ...)")
        results = root.args[0]
        func_block = Block()
        ft_inputs = [self.arg_types[i] for i in sorted(self.arg_types)]
        for i, t in enumerate(ft_inputs):
            func_block.args.append(Value(f"arg{i}", t, func_block, i))
        self.func_args = func_block.args
        entry = {i: func_block.args[j] for j, i in enumerate(sorted(self.arg_types))}  # as Arg i is emitted
        self.sizes = SizeValues(self.imp, func_block, func_block.args, entry_args=entry)
        top = _Ctx(func_block)
        self.top = top
        values = [self.value(r, top) for r in results]
        ret = Operation("func.return", values)
        func_block.ops.append(ret)
        ft = FunctionType(tuple(ft_inputs), tuple(v.type for v in values))
        func = Operation(
            "func.func",
            attributes={"sym_name": StrAttr(self.name), "function_type": TypeAttr(ft)},
            regions=[Region([func_block])],
        )
        self.module.ops.append(func)
        rename_values(self.module)
        for op, names in self.opaque:
            op.opaque_text = rename_uses(op.opaque_text or "", names, [v.name for v in op.operands])
        return self.module

    def add(
        self,
        ctx: _Ctx,
        name: str,
        operands: list[Value],
        types: list[Type],
        *,
        attributes: dict[str, Attr] | None = None,
        regions: list[Region] | None = None,
    ) -> Operation:
        attrs = attributes if attributes is not None else {}
        op = Operation(name, operands, attributes=attrs, regions=regions if regions is not None else [])
        op.results = [Value("", t, op, i) for i, t in enumerate(types)]
        ctx.block.ops.append(op)
        return op

    def value(self, t: Term, ctx: _Ctx) -> Value:
        key = id(t)
        if key in ctx.cache:
            return ctx.cache[key]
        op, a = t.op, t.args
        boundary = op in STORED
        if ctx.in_dispatch and boundary:
            v = self.value(t, self.top)  # a dispatch input: computed outside, captured
        elif op == "Arg":
            v = self.func_args[sorted(self.arg_types).index(a[0])]  # Arg i: entry-block index
        elif op == "Const":
            attr = self.imp.constants[a[0]]
            if isinstance(attr, Parameter):  # IREE's spelling of a named parameter's value
                v = self.add(ctx, "flow.tensor.constant", [], [attr.type], attributes={"value": attr.attr}).result
            else:
                v = self.add(ctx, "arith.constant", [], [attr.type], attributes={"value": attr}).result
        elif op == "Size":
            v = self.sizes.code(a[0])
        elif op == "Scalar":
            typ = ScalarType(a[1])
            lit = FloatAttr(float(a[0]), typ) if typ.is_float else IntAttr(int(a[0]), typ)
            v = self.add(ctx, "arith.constant", [], [typ], attributes={"value": lit}).result
        elif op == "Dispatch":
            v = self.dispatch(t, ctx)
        elif op == "ConstEval":
            v = self.const_eval(t, ctx)
        else:
            v = self.compute(t, ctx)
        ctx.cache[key] = v
        return v

    def dispatch(self, t: Term, ctx: _Ctx) -> Value:
        inner = t.args[0]
        if ctx.at_load:  # inside an initializer placement does not matter: compute in place
            return self.value(inner, ctx)
        if self.is_view(inner):
            return self.value(inner, self.top)  # a reshape between dispatches: metadata, no dispatch
        if inner.op == "Op" and self.imp.ops[inner.args[0]].name == "flow.dispatch.workgroups":
            self.dispatch_order.append(("dispatch", t.eclass))
            return self.value(inner, self.top)  # a dispatch the model does not see into: as it was
        if inner.op == "SetEncoding" and inner.args[0].op in STORED and inner.args[0].op != "Const":
            src = self.value(inner.args[0], self.top)
            dims = self.dim_values(inner)
            attrs: dict[str, Attr] = {}
            operands = [src, *set_dims(attrs, [dims, dims])]
            encoded = self.add(self.top, "flow.tensor.encode", operands, [self.type_of(inner)], attributes=attrs).result
            self.dispatch_order.append(("encode", t.eclass))
            return encoded
        typ = self.type_of(inner)
        body = Block()
        inner_ctx = _Ctx(body, in_dispatch=True)
        v = self.value(inner, inner_ctx)
        body.ops.append(Operation("flow.return", [v]))
        attrs = {}
        dims = set_dims(attrs, [self.dim_values(inner)])
        region = self.add(
            self.top, "flow.dispatch.region", dims, [typ], attributes=attrs, regions=[Region([body])]
        ).result
        self.dispatch_order.append(("dispatch", t.eclass))
        return region

    def is_view(self, t: Term) -> bool:
        """``t`` is a reshape of a value read from a buffer (a dispatch input, a slice of one, a reshape
        of those): under a ``Dispatch``, metadata between dispatches. A reshape of a value computed
        there is a dispatch (cost/classes.py ``is_view_dispatch``, the same test on classes)."""
        while t.op == "Op" and self.imp.ops[t.args[0]].name in RESHAPE_OPS:
            if not t.args[1] or not isinstance(src := t.args[1][0], Term):
                return False
            t = src
            if t.op not in COMPUTING:
                return True
        return False

    def const_eval(self, t: Term, ctx: _Ctx) -> Value:
        typ = self.type_of(t)
        if id(t) not in self.global_cache:
            name = f"__hoisted_{_type_tag(typ)}_{self.globals}"
            self.globals += 1
            self.module.ops.append(
                Operation(
                    "util.global",
                    attributes={"sym_visibility": StrAttr("private"), "sym_name": StrAttr(name), "type": TypeAttr(typ)},
                )
            )
            body = Block()
            load_ctx = _Ctx(body, at_load=True)
            saved_top = self.top
            self.top = load_ctx
            v = self.value(t.args[0], load_ctx)
            self.top = saved_top
            body.ops.append(Operation("util.global.store", [v], attributes={"global": SymbolRefAttr(name)}))
            body.ops.append(Operation("util.return"))
            self.module.ops.append(Operation("util.initializer", regions=[Region([body])]))
            self.global_cache[id(t)] = name
        name = self.global_cache[id(t)]
        attrs = {"is_immutable": UnitAttr(), "global": SymbolRefAttr(name)}
        return self.add(self.top, "util.global.load", [], [typ], attributes=attrs).result

    def compute(self, t: Term, ctx: _Ctx) -> Value:
        op, a = t.op, t.args
        typ = self.type_of(t)
        v = lambda x: self.value(x, ctx)  # noqa: E731
        if op == "Empty" or (op in ("SetEncoding", "Pack") and a[0].op == "Empty"):
            return self.add(ctx, "tensor.empty", self.dim_values(t), [typ]).result
        if op == "Fill":
            val, init = v(a[0]), v(a[1])
            return self.add(ctx, "linalg.fill", [val, init], [typ], attributes=_seg(1, 1)).result
        if op == "Slice":
            attrs, dyn = self._slice(*a[1:4])
            sliced = self.add(ctx, "tensor.extract_slice", [v(a[0]), *dyn], [typ], attributes=attrs).result
            self._copy_between_dispatches(t, ctx)
            return sliced
        if op == "InsertSlice":
            attrs, dyn = self._slice(*a[2:5])
            return self.add(ctx, "tensor.insert_slice", [v(a[0]), v(a[1]), *dyn], [typ], attributes=attrs).result
        if op == "EncodedSlice":
            src_t = self.type_of(a[0])
            if isinstance(src_t, TensorType) and src_t.encoding is None:
                offs, sizes = self._packed_slice(a[0], a[1], a[2])
                attrs, dyn = self._slice(offs, sizes, (1,) * len(sizes))
            else:
                attrs, dyn = self._slice(a[1], a[2], (1,) * len(a[2]))
            sliced = self.add(ctx, "tensor.extract_slice", [v(a[0]), *dyn], [typ], attributes=attrs).result
            self._copy_between_dispatches(t, ctx)
            return sliced
        if op == "SetEncoding" and ctx.at_load and self.encoding_dims_needed(typ):
            # In an initializer the function's sizes do not exist: IREE hoists a weight's encode of a
            # dynamic contraction as flow.tensor.encode, which lists no encoding_dims.
            return self.add(ctx, "flow.tensor.encode", [v(a[0])], [typ]).result
        if op in ("SetEncoding", "UnsetEncoding"):
            name = "iree_encoding.set_encoding" if op == "SetEncoding" else "iree_encoding.unset_encoding"
            attrs = {}
            enc_t = typ if op == "SetEncoding" else self.type_of(a[0])
            assert isinstance(enc_t, TensorType), f"{op} of a {enc_t}"
            enc_dims = self.encoding_dims(enc_t, self.shape_of(t))
            groups = [enc_dims, self.dim_values(t)] if op == "UnsetEncoding" else [enc_dims]
            dims = set_dims(attrs, groups)
            encoded = self.add(ctx, name, [v(a[0]), *dims], [typ], attributes=attrs).result
            if ctx is self.top:  # outside any dispatch: IREE runs it as an encoding dispatch of its own
                self.dispatch_order.append(("encode", t.eclass))
            return encoded
        if op == "Contract":
            proto = self.imp.ops[f"contract:{a[0]}"]
            return self._clone(proto, [v(a[1]), v(a[2]), v(a[3])], [typ], ctx)
        if op in ("Generic", "Op"):
            proto = self.imp.ops[a[0]]
            if op == "Op" and proto.name == "flow.tensor.reshape" and ctx.in_dispatch:
                return self._reshape_in_dispatch(v(a[1][0]), typ, ctx, self.dim_values(t))
            operands = [v(x) for x in a[1]] + ([v(x) for x in a[2]] if op == "Generic" else [])
            types = [typ] if op == "Generic" else [r.type for r in proto.results]
            new = self._clone(proto, operands, types, ctx)
            clone = new.owner
            assert isinstance(clone, Operation)
            if op == "Generic" and isinstance(typ, TensorType) and typ.rank != tensor_type(proto.results[0]).rank:
                layouts = [_packed_layout(x) for x in (*a[1], *a[2])]
                _repack_elementwise(clone, layouts, len(a[2]))
            return new if op == "Generic" else clone.results[a[2]]
        if op == "Pack":
            layout = _layout(a[1])
            src = v(a[0])
            empty = self.add(ctx, "tensor.empty", self.dim_values(t), [typ]).result
            zero = self._zero(tensor_type(src), ctx)
            attrs = {
                "inner_dims_pos": make_int_list(layout.inner_dims_pos),
                "inner_tiles": make_int_list(layout.inner_tiles),
                "outer_dims_perm": make_int_list(layout.outer_dims_perm),
                "has_padding": UnitAttr(),
                "operandSegmentSizes": make_int_list((1, 1)),
            }
            return self.add(ctx, "linalg.pack", [src, empty, zero], [typ], attributes=attrs).result
        if op == "Unpack":
            layout = _layout(a[2])
            empty = self.add(ctx, "tensor.empty", self.dim_values(t), [typ]).result
            attrs = {
                "inner_dims_pos": make_int_list(layout.inner_dims_pos),
                "inner_tiles": make_int_list(layout.inner_tiles),
                "outer_dims_perm": make_int_list(layout.outer_dims_perm),
                "operandSegmentSizes": make_int_list((1, 1)),
            }
            return self.add(ctx, "linalg.unpack", [v(a[0]), empty], [typ], attributes=attrs).result
        if op == "Mmt4d":
            lhs, rhs, acc = v(a[0]), v(a[1]), v(a[2])
            name = "linalg.batch_mmt4d" if isinstance(typ, TensorType) and typ.rank == 5 else "linalg.mmt4d"
            return self.add(ctx, name, [lhs, rhs, acc], [typ], attributes=_seg(2, 1)).result
        raise EmitError(f"cannot emit term {op}")

    def _reshape_in_dispatch(self, src: Value, result: Type, ctx: _Ctx, dims: list[Value]) -> Value:
        """A ``flow.tensor.reshape`` (a chain of reshapes folded: rules/noop_reshape.egg conditions 7-8; a
        ``tensor.reshape`` of a dynamic size, start.tensor_to_flow) read inside a dispatch, where a flow op
        may not stand: the source collapsed to one dim and expanded to the result's shape (``dims``: its
        ``?`` sizes), the same row-major bytes."""
        source = tensor_type(src)
        assert isinstance(result, TensorType)
        flat = TensorType((source.num_elements if source.is_static else None,), source.element)
        if source.rank != 1:
            groups = ArrayAttr((make_int_list(list(range(source.rank))),)) if source.rank else ArrayAttr(())
            src = self.add(ctx, "tensor.collapse_shape", [src], [flat], attributes={"reassociation": groups}).result
        if result.rank == 1:
            return src
        groups = ArrayAttr((make_int_list(list(range(result.rank))),)) if result.rank else ArrayAttr(())
        static = [DYNAMIC if d is None else d for d in result.shape]
        attrs: dict[str, Attr] = {"reassociation": groups, "static_output_shape": make_int_list(static)}
        return self.add(ctx, "tensor.expand_shape", [src, *dims], [result], attributes=attrs).result

    def _copy_between_dispatches(self, t: Term, ctx: _Ctx) -> None:
        """A slice between dispatches (not of a constant, which folds) becomes a copy dispatch of its own
        in ``emit.iree``, numbered among the dispatches: list it (``cost.model.copied_slice``)."""
        src = t.args[0]
        folds = src.op == "Const" and not isinstance(self.imp.constants[src.args[0]], Parameter)
        if not ctx.in_dispatch and not ctx.at_load and not folds:
            self.dispatch_order.append(("dispatch", t.eclass))

    def _zero(self, typ: TensorType, ctx: _Ctx) -> Value:
        e = typ.element
        lit = FloatAttr(0.0, e) if e.is_float else IntAttr(0, e)
        return self.add(ctx, "arith.constant", [], [e], attributes={"value": lit}).result

    def _slice(self, offsets, sizes, strides) -> tuple[dict, list[Value]]:
        """Slice attributes from term vectors: a size code is an SSA entry (``DYNAMIC``), its value an operand."""
        dyn: list[Value] = []
        static: list[list[int]] = []
        for vec in (offsets, sizes, strides):
            row = []
            for x in vec:
                if x < 0:
                    row.append(DYNAMIC)
                    dyn.append(self.sizes.code(x))
                else:
                    row.append(x)
            static.append(row)
        return _slice_attrs(*static), dyn

    def _packed_slice(self, src: Term, offsets: tuple, sizes: tuple) -> tuple[tuple[int, ...], tuple[int, ...]]:
        """Offsets/sizes on a packed tensor for a tile-aligned slice of its logical tensor (size codes
        for what is dynamic: exact quotients, since the slice is tile-aligned for every size)."""
        assert src.op == "Pack" or src.op in PLACEMENTS
        pack = src
        while pack.op in PLACEMENTS:
            pack = pack.args[0]
        layout = _layout(pack.args[1])
        logical = self.type_of(pack.args[0])
        assert isinstance(logical, TensorType)
        tile = dict(zip(layout.inner_dims_pos, layout.inner_tiles, strict=True))
        dim, code = self.imp.dim, self.imp.code
        outer_o = [code(dim(offsets[d]).floordiv(tile.get(d, 1))) for d in range(len(offsets))]
        outer_s = [code(dim(sizes[d]).ceildiv(tile.get(d, 1))) for d in range(len(sizes))]
        perm = layout.outer_dims_perm or tuple(range(len(offsets)))
        o = tuple(outer_o[p] for p in perm) + (0,) * len(layout.inner_tiles)
        s = tuple(outer_s[p] for p in perm) + tuple(layout.inner_tiles)
        return o, s

    def _clone(self, proto: Operation, operands: list[Value], types: list[Type], ctx: _Ctx) -> Value:
        n = len(proto.operands)
        mapping: dict[Value, Value] = {}
        for key, captured in self.imp.captures.items():
            if self.imp.ops.get(key) is proto:  # a body reading values from outside: they follow the operands
                mapping.update(zip(captured, operands[n:], strict=True))
        operands = operands[:n]
        op = Operation(proto.name, operands, [], dict(proto.attributes), [], None, proto.opaque_text)
        if proto.opaque_text is not None:
            self.opaque.append((op, [v.name for v in proto.operands]))
        op.results = [Value("", t, op, i) for i, t in enumerate(types)]
        op.regions = [clone_region(r, mapping) for r in proto.regions]
        inline_captured_constants(proto, op, mapping)
        ctx.block.ops.append(op)
        return op.results[0]


def _repack_elementwise(op: Operation, layouts: list[Layout | None], n_out: int) -> None:
    """An elementwise generic on packed operands runs on the packed iteration space, with the maps IREE's
    materialization gives it (``emit.packed``: the identity where every operand has the output's layout,
    a broadcast bias reading its own tiles)."""
    try:
        # a generic's indexing_maps: an ArrayAttr of AffineMapAttr (mlir.ops' table)
        maps_in = cast("tuple[AffineMapAttr, ...]", attr(op, "indexing_maps", ArrayAttr).items)
        maps, rank = packed_generic_maps(maps_in, layouts, n_out)
    except PackedGenericError as e:
        raise EmitError(f"cannot spell a linalg.generic on packed operands: {e}") from None
    op.attributes["indexing_maps"] = ArrayAttr(tuple(maps))
    op.attributes["iterator_types"] = ArrayAttr(tuple(StrAttr("parallel") for _ in range(rank)))
    if any(o.name == "linalg.index" for o in op.walk()):
        _logical_indices(op, packed_loop_indices(maps_in, layouts, n_out))


def _logical_indices(op: Operation, loops: dict[int, tuple[int, int, int] | tuple[int]]) -> None:
    """Each ``linalg.index`` of ``op``'s body rewritten for its packed iteration space: the packed outer
    loop's index, times the tile plus the inner loop's index where the loop is tiled (IREE's codegen
    does the same; without it a body that reads its indices would see the tiles' positions)."""
    index_t = ScalarType("index")

    def index_op(dim: int) -> Operation:
        o = Operation("linalg.index", [], [], {"dim": IntAttr(dim)})
        o.results = [Value("", index_t, o, 0)]
        return o

    def arith(name: str, operands: list[Value], attributes: dict[str, Attr] | None = None) -> Operation:
        o = Operation(name, operands, [], attributes or {})
        o.results = [Value("", index_t, o, 0)]
        return o

    for region in op.regions:
        for block in region.blocks:
            ops: list[Operation] = []
            for o in block.ops:
                dim = o.attributes.get("dim") if o.name == "linalg.index" else None
                if not isinstance(dim, IntAttr):
                    ops.append(o)
                    continue
                where = loops[dim.value]
                if len(where) == 1:
                    o.attributes["dim"] = IntAttr(where[0])
                    ops.append(o)
                    continue
                outer, tile, inner = where
                first, size, second = (
                    index_op(outer),
                    arith("arith.constant", [], {"value": IntAttr(tile, index_t)}),
                    index_op(inner),
                )
                scaled = arith("arith.muli", [first.result, size.result])
                o.name, o.operands, o.attributes = "arith.addi", [scaled.result, second.result], {}
                ops += [first, size, scaled, second, o]
            block.ops = ops


def _packed_layout(t: Term) -> Layout | None:
    """The layout a materialized term's value is stored in (None: plain, or a scalar)."""
    if not isinstance(t, Term):
        return None
    op, a = t.op, t.args
    if op == "Pack":
        return _layout(a[1])
    if op == "Mmt4d":
        return _packed_layout(a[2])
    if op == "Fill":
        return _packed_layout(a[1])
    if op == "Generic":
        return _packed_layout(a[2][0]) if a[2] else None
    if op in PLACEMENTS | {"EncodedSlice"}:
        return _packed_layout(a[0])
    return None


def _layout(t: Term) -> Layout:
    if t.op != "Tiled":
        raise EmitError("a pack needs a tiled layout")
    return Layout(tuple(t.args[0]), tuple(t.args[1]), tuple(t.args[2]))


def _seg(n_in: int, n_out: int) -> dict:
    return {"operandSegmentSizes": make_int_list((n_in, n_out))}


def _slice_attrs(offsets, sizes, strides) -> dict:
    return {
        "static_offsets": make_int_list(offsets),
        "static_sizes": make_int_list(sizes),
        "static_strides": make_int_list(strides),
    }


def _type_tag(t: Type) -> str:
    if isinstance(t, TensorType):
        return "tensor_" + "x".join(map(str, t.shape)) + "x" + t.element.name + ("__encoded" if t.encoding else "")
    return str(t)


def class_shapes(data: EGraphData) -> dict[str, tuple[int, ...]]:
    """Every e-class's ``shape`` analysis fact (``Emitter(shapes=...)``)."""
    return {c: s for c, f in data.facts.items() if isinstance(s := f.get("shape"), tuple)}
