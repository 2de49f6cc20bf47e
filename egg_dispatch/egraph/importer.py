"""IR -> egglog terms: one ``let`` per SSA value, so terms stay shallow and sharing stays explicit.

What the importer recognises (docs/design.md §2.2): function arguments (also through
``hal.tensor.import``), constants, slices, fills, the matmul family, generics, encodings, existing
``flow.dispatch.region`` / ``flow.dispatch.workgroups`` (as ``Dispatch`` markers),
``flow.tensor.encode`` (a run-time encode dispatch), ``flow.tensor.slice`` (the copy IREE makes of a
hoisted slice of an argument: ``Dispatch(Slice ...)``, the term the clone family builds for a slice
materialized on its own) and globals filled by ``util.initializer`` (as ``ConstEval``). Every other op
becomes ``(Op key inputs i)``: a barrier no rule looks inside; ``flow.tensor.reshape``, which only
exists between dispatches, is ``Dispatch(Op ...)``, a dispatch input priced as the view it is.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from dataclasses import replace
from typing import cast

from egg_dispatch.egraph import terms as T
from egg_dispatch.egraph.const_folds import fold_constants
from egg_dispatch.egraph.import_util import (
    captured_values,
    digest_key,
    encoding_key,
    is_arith_constant,
    maps_key,
)
from egg_dispatch.egraph.imported import ImportedProgram, ImportError_, Parameter
from egg_dispatch.egraph.terms import BOUNDARY, enc, ivec, quote, render
from egg_dispatch.mlir.abi import argument_tensor_types
from egg_dispatch.mlir.encoding import is_serialized_layout, unpriced_encoding
from egg_dispatch.mlir.flow_ops import FLOW_SLICE, slice_operands
from egg_dispatch.mlir.ir import (
    AffineMapAttr,
    Attr,
    Block,
    DenseAttr,
    EncodingAttr,
    FloatAttr,
    IntAttr,
    Module,
    Operation,
    ParameterAttr,
    ScalarType,
    SymbolRefAttr,
    TensorType,
    Type,
    TypeAttr,
    Value,
)
from egg_dispatch.mlir.literals import float_str
from egg_dispatch.mlir.ops import (
    CONTRACTION_OPS,
    DYNAMIC,
    RESHAPE_OPS,
    attr,
    base_operands,
    dim_group,
    function_type,
    ins,
    outs,
    result_bindings,
    set_dims,
    static_slice,
    sym_name,
    tied_operands,
    workgroups_arguments,
)
from egg_dispatch.mlir.printer import Printer
from egg_dispatch.mlir.shapes import function_shapes
from egg_dispatch.util.registry import OpTable

__all__ = ["encoding_key", "import_function", "maps_key"]

_PLACED = {
    "flow.dispatch.region",
    "flow.dispatch.workgroups",
    "flow.tensor.encode",
    "util.global.load",
    "hal.tensor.import",
    "arith.constant",
}
"""Top-level ops whose results are already dispatch inputs (or constants IREE clones)."""


_IDENTITY_OPS = {
    "hal.tensor.export",
    "iree_tensor_ext.compute_barrier.start",
    "iree_tensor_ext.compute_barrier.end",
    "flow.tensor.tie_shape",
}

_CARRIERS = {*_IDENTITY_OPS, *_PLACED} - {"flow.tensor.encode", "arith.constant"}
"""Ops that only pass tensors on: an encoding the cost model does not price does not make them opaque."""

_OpHandler = Callable[["_Importer", Operation], bool]
_OP_HANDLERS: OpTable[_OpHandler] = OpTable("importer handlers", unique=True)
"""Op name -> the ``_Importer`` method that imports it (filled by ``_handles``): True when it did, False
when the op is imported as an opaque ``(Op ...)`` after all."""
_handles = _OP_HANDLERS.handles


class _Importer:
    def __init__(self, module: Module, function: Operation):
        self.module = module
        self.func = function
        self.out = ImportedProgram(sym_name(function))
        self.terms: dict[Value, str] = {}
        self.printer = Printer(use_aliases=False)
        self.n = 0
        self.globals: dict[str, str] = {}
        self.in_region = 0
        self.top_level: set[Value] = set()
        """Values the function body computes outside any dispatch region."""
        self.outside: dict[Value, str] = {}
        self.shapes = function_shapes(function)
        """Symbolic sizes of every value (``mlir.shapes``): a ``?`` dim becomes a size code."""
        self.sizes: dict[Value, str] = {}
        """The ``(Size code)`` let of each index value used as an operand."""
        self.out.domains = dict(self.shapes.domains)
        self.out.arguments = dict(self.shapes.arguments)
        entry = function.regions[0].entry
        if any(o.name in ("flow.dispatch.region", "flow.dispatch.workgroups") for o in entry.ops):
            self.top_level = {r for o in entry.ops if o.name not in _PLACED for r in o.results}

    # -- helpers ---------------------------------------------------------------------------------
    def let(self, value: Value | None, term: T.Expr, typ: Type | None, like: Value | None = None) -> str:
        """``(let $vN term)`` with its shape and dtype facts; a dynamic shape's sizes are those of
        ``like`` (default: ``value``)."""
        name = f"$v{self.n}"
        self.n += 1
        self.out.program.append(f"(let {name} {render(term)})")
        self.out.lets[name] = term
        if typ is not None:
            self.out.let_types[name] = typ
            if isinstance(typ, TensorType):
                dims = self.dims(like or value or (term if isinstance(term, T.Op) else None), typ)
                self.out.let_dims[name] = dims
                self.out.program.append(f"(set (shape {name}) {ivec(dims)})")
                self.out.program.append(f"(set (dtype {name}) {quote(typ.element.name)})")
            elif isinstance(typ, ScalarType):
                self.out.program.append(f"(set (shape {name}) (vec-empty))")
                self.out.program.append(f"(set (dtype {name}) {quote(typ.name)})")
        if value is not None:
            self.terms[value] = name
        return name

    def dims(self, v: Value | T.Op | None, typ: TensorType) -> tuple[int, ...]:
        """``typ``'s shape as a term vector: static sizes, size codes for its ``?`` (those of ``v``, a
        value or an ``(Op ...)`` term)."""
        if typ.is_static:
            return tuple(typ.static_shape)
        if v is None:
            raise ImportError_("a dynamic shape with no value to take its sizes from")
        if isinstance(v, T.Op):  # the sizes of that op's result
            dims = self.out.op_dims.get(v.key)
            if not dims:
                raise ImportError_("a dynamic shape with no value to take its sizes from")
            return tuple(dims[v.result])
        sym = self.shapes.shape(v)
        if len(sym) != typ.rank:  # a buffer view never imported: its declared type's sizes are unknown
            sym = self.shapes.fresh_shape(v, typ)
        return tuple(s if s is not None else self.out.code(d) for s, d in zip(typ.shape, sym, strict=True))

    def size(self, v: Value) -> int | None:
        """The term-vector entry of an index value: its constant, its size code, or None (not a size)."""
        d = self.shapes.scalars.get(v)
        if d is None or not self.shapes.is_symbolic(d):
            return None
        return self.out.code(d)

    def is_size_only(self, op: Operation) -> bool:
        """An op that only computes sizes (``tensor.dim``, index arithmetic, ``util.assume.int``...):
        its results are read through ``(Size code)`` where used, so it has no term of its own."""
        if not op.results or op.regions or op.name == "arith.constant" or op.opaque_text is not None:
            return False
        return all(
            isinstance(r.type, ScalarType) and r.type.is_int and self.size(r) is not None and r not in self.terms
            for r in op.results
        )

    def t(self, v: Value) -> str:
        if v not in self.terms and isinstance(v.type, ScalarType) and (code := self.size(v)) is not None:
            if v not in self.sizes:
                self.sizes[v] = self.let(None, T.Size(code), v.type) if code < 0 else self._const_index(code)
            return self.sizes[v]
        try:
            term = self.terms[v]
        except KeyError:
            raise ImportError_(f"%{v.name} is used before it is defined (or comes from an unsupported op)") from None
        if self.in_region and v in self.top_level and self._head(term) not in BOUNDARY:
            # Computed between dispatches (a transpose, a reshape): IREE runs it on its own, before
            # the dispatch that reads it, so here it is a dispatch input.
            if v not in self.outside:
                self.outside[v] = self.let(None, T.Dispatch(term), v.type, like=v)
            return self.outside[v]
        return term

    def _head(self, let: str) -> str:
        """The constructor a let binds ("" for a name that is not a let)."""
        term = self.out.lets.get(let)
        return term.head if term is not None else ""

    def _const_index(self, value: int) -> str:
        return self.let(None, T.Scalar(str(value), "index"), ScalarType("index"))

    def encoding(self, e: EncodingAttr) -> str:
        key = encoding_key(e)
        self.out.encodings[key] = e
        return key

    def unpriced_encoding_op(self, op: Operation) -> bool:
        """A set/unset_encoding of an encoding the cost model does not price, as a ``SetEncoding`` /
        ``UnsetEncoding`` of an ``(Enc -1 name text ...)`` term: the fuse and hoist rules move it like any
        other encode (FuseEncodingOpsIntoDispatchRegions does not look at the encoding), while no rule
        that needs the target's layout does (it has none). False for other encodings."""
        encoded = op.result.type if op.name == "iree_encoding.set_encoding" else op.operands[0].type
        plain = op.operands[0].type if op.name == "iree_encoding.set_encoding" else op.result.type
        if not isinstance(encoded, TensorType) or not isinstance(plain, TensorType) or plain.encoding is not None:
            return False
        name, e = unpriced_encoding(encoded), encoded.encoding
        if name is None or e is None:
            return False
        text = self.printer.attr(e)
        key = enc(-1, name, text, "", [])
        self.out.unpriced_encodings[key] = e
        codes = [self.size(v) for v in dim_group(op, 0)]
        if codes and all(c is not None for c in codes):
            self.out.encoding_dims.setdefault(key, tuple(c for c in codes if c is not None))
        elif codes:
            return False  # encoding_dims the size analysis does not know: kept as an opaque op
        if op.name == "iree_encoding.set_encoding":
            self.let(op.result, T.SetEncoding(self.t(op.operands[0]), key), encoded)
            self.propagable_cast(op, key, e)
        else:
            self.let(op.result, T.UnsetEncoding(self.t(op.operands[0]), self.dims(op.result, plain)), plain)
        return True

    def propagable_cast(self, set_encoding: Operation, key: str, e: Attr) -> None:
        """``(propagable-cast cast key cast')`` for a set_encoding of a ``tensor.cast``'s result, with
        ``cast'`` the same cast of the encoded source (IREE's PropagateEncodings,
        ``rules/propagate_cast.egg``). Conditions 1 and 2 of that rule are checked here: both ops are
        outside every dispatch, and the encoding is a serialized layout."""
        cast_op = set_encoding.operands[0].owner
        if self.in_region or not isinstance(cast_op, Operation) or cast_op.name != "tensor.cast":
            return
        if cast_op.regions or cast_op.opaque_text is not None or not is_serialized_layout(e):
            return
        src_t, res_t = cast_op.operands[0].type, cast_op.result.type
        if not isinstance(src_t, TensorType) or not isinstance(res_t, TensorType) or src_t.encoding is not None:
            return
        src = Value("src", replace(src_t, encoding=e))
        twin = Operation(cast_op.name, [src], [Value("cast", replace(res_t, encoding=e))], dict(cast_op.attributes))
        twin.results[0].owner = twin
        original = self.op_key(cast_op, unique=False)
        self.out.program.append(f"(propagable-cast {quote(original)} {key} {quote(self.op_key(twin, False, cast_op))})")

    def with_encoding(self, term: T.Expr, typ: Type, value: Value | None) -> str:
        """A term of an encoded tensor type that IREE builds directly (an encoded empty)."""
        if isinstance(typ, TensorType) and isinstance(typ.encoding, EncodingAttr):
            plain = self.let(None, term, typ.without_encoding(), like=value)
            return self.let(value, T.SetEncoding(plain, self.encoding(typ.encoding)), typ)
        return self.let(value, term, typ)

    def constant_key(self, value: DenseAttr | ParameterAttr, typ: TensorType) -> str:
        """The ``Const`` name of an inline constant (by content) or a named parameter (by its key)."""
        if isinstance(value, ParameterAttr):
            key = f"param_{value.scope + '::' if value.scope else ''}{value.key}"
            self.out.constants[key] = Parameter(value, typ)
            return key
        key = f"cst_{'x'.join('?' if d is None else str(d) for d in typ.shape)}x{typ.element}_{value.digest()[:10]}"
        self.out.constants[key] = value
        return key

    def op_key(self, op: Operation, unique: bool, like: Operation | None = None) -> str:
        """The ``Op`` key of ``op``: its name, attributes, body and result types (and, when ``unique``,
        its location); a dynamic result's sizes are those of ``like``'s results (default: ``op``'s)."""
        attrs = sorted(
            (k, repr(v) if not isinstance(v, DenseAttr) else v.digest()[:10]) for k, v in op.attributes.items()
        )
        body = ""
        if op.regions:
            body = "\n".join(self.printer.region(r, "") for r in op.regions)
        types = [self.printer.type(r.type) for r in op.results]
        where = str(op.loc) if unique else ""
        sized = (like or op).results
        dims = [
            self.dims(v, r.type) if isinstance(r.type, TensorType) else ()
            for v, r in zip(sized, op.results, strict=True)
        ]
        dynamic = [d for d in dims if any(v < 0 for v in d)]
        parts = [op.name, attrs, body, types, op.opaque_text, where, *([dynamic] if dynamic else [])]
        key = f"{op.name}#{digest_key(*parts)}"
        self.out.ops[key] = op
        if dynamic or any(isinstance(r.type, TensorType) and not r.type.is_static for r in op.results):
            # the sizes of its results (an op's key says which expression; a `?` the analysis knows is
            # a constant, e.g. a tensor.cast of a static tensor, is that constant)
            self.out.op_dims[key] = dims
        return key

    def compose_reshapes(self) -> None:
        """``reshape_chains``: for every chain of two or three static reshapes of the program (each op's
        result type the next one's operand type), the one ``flow.tensor.reshape`` from the first operand's
        type to the last result's, registered as an op of its own (rules/noop_reshape.egg conditions 7-8).
        Only plain (unencoded) static tensors with one operand, whose first and last types differ (a chain
        back to its source's shape is ``fold-reshape-round-trip``'s)."""
        reshapes = [
            (key, op)
            for key, op in self.out.ops.items()
            if op.name in RESHAPE_OPS
            and len(op.operands) == 1
            and len(op.results) == 1
            and all(
                isinstance(t, TensorType) and t.is_static and t.encoding is None
                for t in (op.operands[0].type, op.results[0].type)
            )
        ]
        by_source: dict[str, list[tuple[str, Operation]]] = {}
        for key, op in reshapes:
            by_source.setdefault(self.printer.type(op.operands[0].type), []).append((key, op))
        chains: list[tuple[tuple[str, ...], Operation]] = []
        for key, op in reshapes:
            for key2, op2 in by_source.get(self.printer.type(op.results[0].type), []):
                chains.append(((key, key2), op2))
                for key3, op3 in by_source.get(self.printer.type(op2.results[0].type), []):
                    chains.append(((key, key2, key3), op3))
        for keys, last in chains:
            first = self.out.ops[keys[0]]
            source, result = first.operands[0].type, last.results[0].type
            if self.printer.type(source) == self.printer.type(result):
                continue
            composed = Operation("flow.tensor.reshape", [Value("source", source)])
            composed.results = [Value("result", result, composed, 0)]
            self.out.reshape_chains.append((keys, self.op_key(composed, unique=False)))

    def compose_sized_reshapes(self) -> None:
        """``sized_reshape_chains``: IREE's FlattenTensorCastLikeChain (a ``flow.tensor.reshape`` of a
        ``flow.tensor.reshape`` is the one reshape of the first's source, with the first's source sizes and
        the second's result sizes) on the reshapes with a dynamic size, which IREE converts between
        dispatches to ``flow.tensor.reshape`` (rules/noop_reshape.egg conditions 9-12). For every pair of
        reshapes of the program (each result type the next one's operand type), and for a composed reshape
        and a reshape on either side of it (chains of three, folded pair by pair as IREE does): the composed
        ``flow.tensor.reshape`` for each source shape the first reads in the program, with one size operand
        per ``?`` of its source and of its result, registered as an op of its own; the source's shape and
        the composed op's size operands (term-vector entries) go with it. A chain back to its source's
        type and sizes is ``sized_reshape_identities`` (TensorReshapeOp::fold). Only plain (unencoded)
        tensors, one of them dynamic. A key names an op by its result (not its source), so a composed
        reshape may share its key with a reshape of the program, whose op is kept."""
        index = ScalarType("index")
        written = dict(self.out.ops)
        last: dict[str, Operation] = {  # key -> an op with its result (a key names its result's type and sizes)
            key: op
            for key, op in written.items()
            if op.name in RESHAPE_OPS
            and op.operands
            and len(op.results) == 1
            and all(isinstance(t, TensorType) and t.encoding is None for t in (op.operands[0].type, op.results[0].type))
        }
        types = [cast(TensorType, t) for op in last.values() for t in (op.operands[0].type, op.results[0].type)]
        if all(t.is_static for t in types):
            return
        originals = list(last)
        # key -> the (type, shape) of each source it reads (the program's own reshapes: its lets)
        sources: dict[str, dict[str, tuple[TensorType, tuple[int, ...]]]] = {}
        for term in self.out.lets.values():
            if isinstance(term, T.Op) and term.key in last and term.inputs:
                typ, dims = self.out.let_types.get(term.inputs[0]), self.out.let_dims.get(term.inputs[0])
                if isinstance(typ, TensorType) and typ.encoding is None and dims is not None:
                    sources.setdefault(term.key, {})[f"{self.printer.type(typ)}{dims}"] = (typ, dims)
        by_source: dict[str, list[str]] = {}  # a type -> the reshapes reading it
        by_result: dict[str, list[str]] = {}  # a type -> the reshapes giving it
        for key in originals:
            for typed in {self.printer.type(typ) for typ, _ in sources.get(key, {}).values()}:
                by_source.setdefault(typed, []).append(key)
            by_result.setdefault(self.printer.type(last[key].results[0].type), []).append(key)

        def compose(k1: str, k2: str) -> list[str]:
            """The keys of reshape ``k1`` then ``k2`` folded, one per source shape ``k1`` reads."""
            out: list[str] = []
            result = cast(TensorType, last[k2].results[0].type)
            res_dims = self.dims(last[k2].results[0], result)
            for source, src_dims in list(sources.get(k1, {}).values()):
                if source.is_static and result.is_static:  # the static chain rules' (conditions 7-8)
                    continue
                if self.printer.type(source) == self.printer.type(result):
                    if src_dims == res_dims:  # the same sizes: TensorReshapeOp::fold, the source itself
                        self.out.sized_reshape_identities.append((k1, k2, src_dims))
                    continue
                groups = [
                    [Value(f"d{i}", index) for i, d in enumerate(source.shape) if d is None],
                    [Value(f"r{i}", index) for i, d in enumerate(result.shape) if d is None],
                ]
                attrs: dict[str, Attr] = {}
                composed = Operation("flow.tensor.reshape", [Value("source", source), *set_dims(attrs, groups)])
                composed.attributes = attrs
                composed.results = [Value("result", result, composed, 0)]
                key = self.op_key(composed, unique=False, like=last[k2])
                if key in written:
                    self.out.ops[key] = written[key]
                last.setdefault(key, last[k2])
                known = sources.setdefault(key, {})
                mark = f"{self.printer.type(source)}{src_dims}"
                if (k1, k2, key, mark) in seen:
                    continue
                seen.add((k1, k2, key, mark))
                known.setdefault(mark, (source, src_dims))
                out.append(key)
                sizes = [c for c, d in zip(src_dims, source.shape, strict=True) if d is None]
                sizes += [c for c, d in zip(res_dims, result.shape, strict=True) if d is None]
                self.out.sized_reshape_chains.append((k1, k2, key, src_dims, tuple(sizes)))
            return out

        seen: set[tuple[str, str, str, str]] = set()
        for k1 in originals:
            for k2 in by_source.get(self.printer.type(last[k1].results[0].type), []):
                for f in compose(k1, k2):
                    for k3 in by_source.get(self.printer.type(last[k2].results[0].type), []):  # a third after
                        compose(f, k3)
                    for typed in {self.printer.type(typ) for typ, _ in sources.get(k1, {}).values()}:
                        for k0 in by_result.get(typed, []):  # ... or before
                            compose(k0, f)

    # -- ops -------------------------------------------------------------------------------------
    def import_block_ops(self, ops: list[Operation]) -> list[str] | None:
        """Import ops in order; returns the terms of the terminator's operands."""
        for op in ops:
            if op.name in ("func.return", "return", "util.return", "flow.return", "util.global.store"):
                return [self.t(v) for v in op.operands]
            self.import_op(op)
        return None

    def import_op(self, op: Operation) -> None:
        """Import one op: the cases no op name decides first (size-only, opaque, unpriced encodings,
        carriers), then the op's handler in ``_OP_HANDLERS``; an op with none, or whose handler declines
        it, becomes an opaque ``(Op ...)``."""
        n = op.name
        if self.is_size_only(op):
            return
        if op.opaque_text is not None:
            self.generic_op(op, unique=True)
            return
        if n in ("iree_encoding.set_encoding", "iree_encoding.unset_encoding") and self.unpriced_encoding_op(op):
            return
        if n not in _CARRIERS and any(unpriced_encoding(v.type) for v in [*op.operands, *op.results]):
            self.generic_op(op, unique=False)  # carried through as written: a barrier the cost model does not see into
            return
        handler = _OP_HANDLERS.get(n)
        if handler is None or not handler(self, op):
            self.generic_op(op, unique=False)

    # -- op handlers: True when the op is imported, False to import it as an opaque (Op ...) -------
    @_handles("arith.constant")
    def arith_constant(self, op: Operation) -> bool:
        value = op.attributes["value"]
        r = op.result
        if isinstance(value, DenseAttr):
            self.let(r, T.Const(self.constant_key(value, value.type)), r.type)
        elif isinstance(value, FloatAttr | IntAttr):
            lit = float_str(value.value) if isinstance(value, FloatAttr) else str(value.value)
            self.let(r, T.Scalar(lit, str(r.type)), r.type)
        else:
            return False
        return True

    @_handles(*_IDENTITY_OPS)
    def identity(self, op: Operation) -> bool:
        self.terms[op.result] = self.t(op.operands[0])
        return True

    @_handles("hal.tensor.barrier")
    def tensor_barrier(self, op: Operation) -> bool:
        """The joined tensors, once ready (the fence is ABI plumbing)."""
        for r, v in zip(op.results, op.operands[:-1], strict=True):
            self.terms[r] = self.t(v)
        return True

    @_handles("flow.tensor.constant")
    def flow_constant(self, op: Operation) -> bool:
        value = op.attributes["value"]
        if not isinstance(value, DenseAttr | ParameterAttr):
            return False
        cst_t = cast(TensorType, op.result.type)  # a flow.tensor.constant is a tensor
        self.let(op.result, T.Const(self.constant_key(value, cst_t)), cst_t)
        return True

    @_handles("hal.tensor.import")
    def tensor_import(self, op: Operation) -> bool:
        src = op.operands[0]
        entry = self.func.regions[0].entry
        if src in entry.args:
            self.let(op.result, T.Arg(entry.args.index(src)), op.result.type)
            self.terms.setdefault(src, self.terms[op.result])  # also returned as is (util.return %arg0)
        else:
            self.terms[op.result] = self.t(src)
        return True

    @_handles("tensor.empty")
    def tensor_empty(self, op: Operation) -> bool:
        t = op.result.type
        assert isinstance(t, TensorType)
        self.with_encoding(T.Empty(self.dims(op.result, t), t.element.name), t, op.result)
        return True

    @_handles("linalg.fill")
    def linalg_fill(self, op: Operation) -> bool:
        v, init = ins(op)[0], outs(op)[0]
        self.let(op.result, T.Fill(self.t(v), self.t(init)), op.result.type)
        return True

    @_handles("tensor.extract_slice", "tensor.insert_slice")
    def tensor_slice(self, op: Operation) -> bool:
        """Rank-reducing slices, and data-dependent offsets, stay opaque."""
        n = op.name
        entries = self.slice_entries(op, 1 if n == "tensor.extract_slice" else 2)
        reduced = n == "tensor.extract_slice" and (
            entries is None or len(entries[1]) != getattr(op.result.type, "rank", -1)
        )
        if entries is None or reduced:
            return False
        offs, sizes, strides = entries
        if n == "tensor.extract_slice":
            self.let(op.result, T.Slice(self.t(op.operands[0]), offs, sizes, strides), op.result.type)
        else:
            src, dst = op.operands[0], op.operands[1]
            self.let(op.result, T.InsertSlice(self.t(src), self.t(dst), offs, sizes, strides), op.result.type)
        return True

    @_handles(*CONTRACTION_OPS)
    def contraction(self, op: Operation) -> bool:
        if len(ins(op)) != 2 or len(outs(op)) != 1:
            return False
        kind = f"{op.name}:{maps_key(op.attributes.get('indexing_maps'))}"
        self.out.ops.setdefault(f"contract:{kind}", op)
        lhs, rhs = ins(op)
        self.let(op.result, T.Contract(kind, self.t(lhs), self.t(rhs), self.t(outs(op)[0])), op.result.type)
        self.contraction_encoding_dims(op)
        return True

    @_handles("linalg.mmt4d")
    def linalg_mmt4d(self, op: Operation) -> bool:
        lhs, rhs = ins(op)
        self.let(op.result, T.Mmt4d(self.t(lhs), self.t(rhs), self.t(outs(op)[0])), op.result.type)
        return True

    @_handles("linalg.generic")
    def linalg_generic(self, op: Operation) -> bool:
        """A one-result generic whose body captures only scalar constants; others stay opaque."""
        if len(op.results) != 1 or not all(_inlined(v) for v in captured_values(op)):
            return False
        key = self.op_key(op, unique=False)
        i_terms = tuple(self.t(v) for v in ins(op))
        o_terms = tuple(self.t(v) for v in outs(op))
        self.let(op.result, T.Generic(key, i_terms, o_terms), op.result.type)
        return True

    def encoding_op_dims(self, op: Operation) -> None:
        """Record the ``encoding_dims`` a set/unset_encoding lists, when the size analysis knows them all."""
        if not dim_group(op, 0):
            return
        enc_t = op.result.type if op.name.startswith("iree_encoding.set") else op.operands[0].type
        codes = [self.size(v) for v in dim_group(op, 0)]
        known = [c for c in codes if c is not None]
        if isinstance(enc_t, TensorType) and isinstance(enc_t.encoding, EncodingAttr) and len(known) == len(codes):
            self.out.encoding_dims.setdefault(self.encoding(enc_t.encoding), tuple(known))

    @_handles("iree_encoding.set_encoding")
    def set_encoding(self, op: Operation) -> bool:
        self.encoding_op_dims(op)
        t = op.result.type
        assert isinstance(t, TensorType) and isinstance(t.encoding, EncodingAttr)
        self.let(op.result, T.SetEncoding(self.t(op.operands[0]), self.encoding(t.encoding)), t)
        return True

    @_handles("iree_encoding.unset_encoding")
    def unset_encoding(self, op: Operation) -> bool:
        self.encoding_op_dims(op)
        t = op.result.type
        assert isinstance(t, TensorType)
        self.let(op.result, T.UnsetEncoding(self.t(op.operands[0]), self.dims(op.result, t)), t)
        return True

    @_handles("flow.tensor.encode")
    def flow_encode(self, op: Operation) -> bool:
        """A run-time encode of a plain tensor: ``Dispatch(SetEncoding ...)``; others stay opaque."""
        t = op.result.type
        src_t = op.operands[0].type
        if not (
            isinstance(t, TensorType)
            and isinstance(t.encoding, EncodingAttr)
            and (isinstance(src_t, TensorType) and src_t.encoding is None)
        ):
            return False
        inner = self.let(None, T.SetEncoding(self.t(op.operands[0]), self.encoding(t.encoding)), t, like=op.result)
        self.let(op.result, T.Dispatch(inner), t)
        return True

    @_handles(FLOW_SLICE)
    def flow_slice(self, op: Operation) -> bool:
        """``flow.tensor.slice`` with constant starts and lengths: the slice, copied by its own
        command (``Dispatch(Slice ...)``); False (an opaque op) when an index is not a constant."""
        src, starts, lengths = slice_operands(op)
        offs = [o for v in starts if (o := _index_constant(v)) is not None]
        sizes = [s for v in lengths if (s := _index_constant(v)) is not None]
        if len(offs) != len(starts) or len(sizes) != len(lengths):
            return False
        inner = self.let(None, T.Slice(self.t(src), tuple(offs), tuple(sizes), (1,) * len(sizes)), op.result.type)
        self.let(op.result, T.Dispatch(inner), op.result.type)
        return True

    @_handles("flow.tensor.reshape")
    def flow_reshape(self, op: Operation) -> bool:
        """Only ever between dispatches: its result is read from outside them."""
        key = self.op_key(op, unique=False)
        inner = self.let(None, T.Op(key, tuple(self.t(v) for v in op.operands), 0), op.result.type)
        self.let(op.result, T.Dispatch(inner), op.result.type)
        return True

    @_handles("flow.dispatch.region")
    def dispatch_region(self, op: Operation) -> bool:
        self.in_region += 1
        returned = self.import_block_ops(op.regions[0].entry.ops) or []
        self.in_region -= 1
        for r, term in zip(op.results, returned, strict=True):
            self.let(r, T.Dispatch(term), r.type)
        return True

    @_handles("flow.dispatch.workgroups")
    def dispatch_workgroups(self, op: Operation) -> bool:
        self.import_workgroups(op)
        return True

    @_handles("util.global.load")
    def global_load(self, op: Operation) -> bool:
        self.terms[op.result] = self.global_term(attr(op, "global", SymbolRefAttr).name, op)
        return True

    def contraction_encoding_dims(self, op: Operation) -> None:
        """The ``?`` iteration sizes of a contraction's encodings, from its operands' shapes (what its
        set/unset_encodings must list as ``encoding_dims``; a weight's encoding has no M of its own)."""
        for v in op.operands:
            t = v.type
            e = t.encoding if isinstance(t, TensorType) else None
            if not isinstance(e, EncodingAttr) or not e.iteration_sizes or None not in e.iteration_sizes:
                continue
            maps = e.user_indexing_maps or ()
            codes: list[int] = []
            for j, size in enumerate(e.iteration_sizes):
                if size is not None:
                    continue
                found = None
                for w, m in zip(op.operands, maps, strict=False):
                    pos = m.dim_positions() if isinstance(m, AffineMapAttr) else None
                    wt = w.type
                    if pos is not None and j in pos and isinstance(wt, TensorType):
                        found = self.dims(w, wt)[pos.index(j)]
                        break
                if found is None:
                    break
                codes.append(found)
            else:
                self.out.encoding_dims.setdefault(self.encoding(e), tuple(codes))

    def slice_entries(
        self, op: Operation, first: int
    ) -> tuple[tuple[int, ...], tuple[int, ...], tuple[int, ...]] | None:
        """(offsets, sizes, strides) of a slice-like op as term vectors (size codes for SSA entries that
        are sizes); None when an entry is a value that is not (a data-dependent offset)."""
        dyn = iter(base_operands(op)[first:])
        out: list[list[int]] = []
        for static in static_slice(op):
            vals = []
            for s in static:
                if s != DYNAMIC:
                    vals.append(s)
                    continue
                code = self.size(next(dyn))
                if code is None:
                    return None
                vals.append(code)
            out.append(vals)
        if any(s <= 0 for s in out[2]):  # a stride is a size code: keep it opaque
            return None
        return tuple(out[0]), tuple(out[1]), tuple(out[2])

    def generic_op(self, op: Operation, unique: bool) -> None:
        key = self.op_key(op, unique)
        captured = [v for v in captured_values(op) if not _inlined(v)]
        if captured:
            self.out.captures[key] = captured
        inputs = tuple(self.t(v) for v in [*op.operands, *captured])
        for i, r in enumerate(op.results):
            self.let(r, T.Op(key, inputs, i), r.type)

    def import_workgroups(self, op: Operation) -> None:
        """Bindings map to the captured operands; a full-size load is the operand itself. A result is
        what the one store through its binding writes: all of it, or, for a result tied to an operand
        (``-> %x``), that slice of the operand (``InsertSlice``). A tied result written otherwise (no
        store, several, a load after the store, a slice whose place the sizes do not give) makes the
        whole op an opaque dispatch."""
        body = op.regions[0].entry
        captured_values = workgroups_arguments(op)
        n_in = len(captured_values)
        tied = tied_operands(op)
        bindings = result_bindings(op)
        if any(t is not None and not self.writes_once(body, b) for t, b in zip(tied, bindings, strict=True)):
            self.opaque_dispatch(op)
            return
        for arg, captured in zip(body.args[:n_in], captured_values, strict=True):
            if isinstance(captured.type, ScalarType) and self.size(captured) is not None:
                continue  # a size: read through (Size code) where the body uses it
            self.terms[arg] = self.t(captured)
        stored: dict[int, str] = {}
        for inner in body.ops:
            if inner.name == "iree_tensor_ext.dispatch.tensor.load":
                src = inner.operands[0]
                entries = self.slice_entries(inner, 1)
                if entries is None:
                    self.generic_op(inner, unique=False)
                    continue
                offs, sizes, strides = entries
                full = self.shapes.shape(src)
                whole = tuple(self.out.code(d) for d in full)
                if sizes == whole and not any(offs) and set(strides) <= {1}:
                    self.terms[inner.result] = self.t(src)
                else:
                    self.let(inner.result, T.Slice(self.t(src), offs, sizes, strides), inner.result.type)
            elif inner.name == "iree_tensor_ext.dispatch.tensor.store":
                b = body.args.index(inner.operands[1])
                stored[b] = self.t(inner.operands[0])
                if tied_to := [t for t, rb in zip(tied, bindings, strict=True) if rb == b and t is not None]:
                    stored[b] = self.stored_in_place(inner, stored[b], captured_values[tied_to[0]])
            elif inner.name == "flow.return":
                break
            else:
                self.import_op(inner)
        for i, (r, b) in enumerate(zip(op.results, bindings, strict=True)):
            if b not in stored:
                raise ImportError_(f"{op.loc}: flow.dispatch.workgroups result #{i} is never stored")
            self.let(r, T.Dispatch(stored[b]), r.type)

    def writes_once(self, body: Block, b: int) -> bool:
        """Whether binding ``b`` is stored to exactly once, at a place its sizes give, and not read after."""
        binding = body.args[b]
        touching = [o for o in body.ops if binding in o.operands]
        stores = [o for o in touching if o.name == "iree_tensor_ext.dispatch.tensor.store"]
        return len(stores) == 1 and touching[-1] is stores[0] and self.slice_entries(stores[0], 2) is not None

    def stored_in_place(self, store: Operation, value: str, operand: Value) -> str:
        """What a store through a tied operand's binding leaves in it: the value, or the operand with that
        slice replaced (``writes_once`` checked that its place is known)."""
        entries = self.slice_entries(store, 2)
        assert entries is not None
        offs, sizes, strides = entries
        whole = tuple(self.out.code(d) for d in self.shapes.shape(store.operands[1]))
        if sizes == whole and not any(offs) and set(strides) <= {1}:
            return value
        return self.let(None, T.InsertSlice(value, self.t(operand), offs, sizes, strides), operand.type, like=operand)

    def opaque_dispatch(self, op: Operation) -> None:
        """``op``, a dispatch the model does not see into, as ``Dispatch(Op ...)`` per result."""
        key = self.op_key(op, unique=False)
        inputs = tuple(self.t(v) for v in op.operands)
        for i, r in enumerate(op.results):
            inner = self.let(None, T.Op(key, inputs, i), r.type, like=r)
            self.let(r, T.Dispatch(inner), r.type)

    def global_term(self, name: str, load: Operation) -> str:
        if name in self.globals:
            return self.globals[name]
        g = self.module_globals.get(name)
        if g is None:
            raise ImportError_(f"{load.loc}: util.global.load of unknown global @{name}")
        init = g.attributes.get("initial_value")
        typ = attr(g, "type", TypeAttr).type
        if isinstance(init, DenseAttr | ParameterAttr):
            key = f"global_{name}"
            # a global initialized to a parameter holds a tensor
            self.out.constants[key] = init if isinstance(init, DenseAttr) else Parameter(init, cast(TensorType, typ))
            term = self.let(None, T.Const(key), typ)
        else:
            stored = self.initializer_value(name)
            if stored is None:
                raise ImportError_(f"{load.loc}: global @{name} has neither an initial value nor an initializer")
            term = self.let(None, T.ConstEval(stored), typ)
        self.globals[name] = term
        return term

    @functools.cached_property
    def module_globals(self) -> dict[str, Operation]:
        """The module's globals by name, read once (not once per global loaded)."""
        return self.module.globals()

    @functools.cached_property
    def global_stores(self) -> dict[str, tuple[Block, int]]:
        """Each global's first ``util.global.store`` in an initializer (in module order): the
        initializer's block and the store's index in it. Read once, not once per global loaded."""
        out: dict[str, tuple[Block, int]] = {}
        for op in self.module.ops:
            if op.name != "util.initializer":
                continue
            block = op.regions[0].entry
            for i, inner in enumerate(block.ops):
                if inner.name == "util.global.store":
                    out.setdefault(attr(inner, "global", SymbolRefAttr).name, (block, i))
        return out

    def initializer_value(self, name: str) -> str | None:
        if (store := self.global_stores.get(name)) is None:
            return None
        block, i = store
        saved = dict(self.terms)
        values = self.import_block_ops(block.ops[: i + 1])
        self.terms = saved
        return values[0] if values else None


def _inlined(v: Value) -> bool:
    """A value a body reads from outside that is part of the op itself: a scalar constant (the op's key
    holds its value; the emitter copies it into the body). A tensor constant a body reads (a gather's
    table) is an input like any other, as IREE passes it to the dispatch that reads it."""
    return is_arith_constant(v) and not isinstance(v.type, TensorType)


def _index_constant(v: Value) -> int | None:
    """The value of an ``index`` defined by ``arith.constant``, else None."""
    op = v.owner
    value = op.attributes.get("value") if isinstance(op, Operation) and op.name == "arith.constant" else None
    return int(value.value) if isinstance(value, IntAttr) else None


def import_function(module: Module, function: str | None = None) -> ImportedProgram:
    """Import one function (default: the first public one) as egglog lets, one per SSA value."""
    func = module.function(function)
    if not func.regions:
        raise ImportError_(f"{func.loc}: @{sym_name(func)} is a declaration (no body): there is no program to import")
    imp = _Importer(module, func)
    ft = function_type(func)
    entry = func.regions[0].entry
    imp.out.arg_types = list(ft.inputs)
    imported = {op.operands[0] for op in func.walk() if op.name == "hal.tensor.import" and op.operands}
    for i, typ in argument_tensor_types(func):
        arg = entry.args[i]  # a buffer view never imported (returned as is, or unused) takes its declared type
        if isinstance(arg.type, TensorType | ScalarType) or (arg not in imported and typ is not None):
            imp.let(arg, T.Arg(i), typ)
    results = imp.import_block_ops(entry.ops)
    if results is None:
        raise ImportError_(f"{func.loc}: function @{imp.out.function} has no return")
    imp.out.results = results
    returns = next(op for op in entry.ops if op.name in ("func.return", "return", "util.return"))
    imp.out.result_types = [imp.out.let_types.get(r, v.type) for r, v in zip(results, returns.operands, strict=True)]
    imp.out.program.append(f"(let $root {render(T.Results(tuple(results)))})")
    imp.out.size_sources = {
        name: v.owner if isinstance(v.owner, Operation) else None for name, v in imp.shapes.unknown.items()
    }
    imp.compose_reshapes()
    imp.compose_sized_reshapes()
    fold_constants(imp.out)
    return imp.out
