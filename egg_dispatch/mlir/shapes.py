"""Shape inference over a function: the symbolic size (``mlir.symbolic.Dim``) of every dimension of
every tensor value, and of every ``index`` value.

``function_shapes`` walks a function once, in order, into its regions (dispatch regions and
workgroups, with their bindings), and gives every tensor value its dims and every ``index`` value
its ``Dim``. Sizes flow from the arguments (``arg0.d1`` for a ``?`` of argument 0; ``arg2`` for an
integer argument) through ``tensor.dim``, ``tensor.empty(%d)``, index arithmetic (``arith``,
``affine.apply``), reshapes, slices, pads, concatenations, structured ops (a result has its init's
sizes) and IREE's ops (``{%d}`` lists, ``hal.buffer_view.dim``, ``dispatch.workload.ordinal``,
``util.assume.int``).

Contract: two dims that are the same expression of the arguments are the same ``Dim`` (so the same
size whatever the input); a static dim of a value's type always wins over what was inferred; what
the walk cannot see through (an opaque op's result, an op it does not model) gets a fresh unknown
symbol (``%name...``, recorded in ``FunctionShapes.unknown``), never a wrong size, and
``FunctionShapes.is_symbolic`` tells the sizes that can be recomputed from the arguments alone.
``util.assume.int`` rows become the ``Domain`` of the argument sizes they constrain.

Kept apart from the algebra (``mlir.symbolic``), which needs no IR: this module is the only one
that reads ops to build sizes.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import cast

from egg_dispatch.mlir.abi import argument_tensor_types
from egg_dispatch.mlir.affine import affine_value
from egg_dispatch.mlir.ir import (
    AffineMapAttr,
    ArrayAttr,
    Block,
    DictAttr,
    DispatchTensorType,
    IntAttr,
    Operation,
    ScalarType,
    TensorType,
    Type,
    Value,
)
from egg_dispatch.mlir.ops import (
    DYNAMIC,
    attr,
    base_operands,
    dim_group,
    dim_groups,
    int_list,
    outs,
    result_bindings,
    static_slice,
    tensor_type,
    workgroups_arguments,
    workload,
)
from egg_dispatch.mlir.symbolic import Dim, Domain, arg_symbol
from egg_dispatch.util.registry import OpTable

__all__ = ["FunctionShapes", "Shape", "function_shapes"]

Shape = tuple[Dim, ...]


@dataclass
class FunctionShapes:
    """Every tensor value's dims and every index value's size, for one function (and its regions)."""

    shapes: dict[Value, Shape] = field(default_factory=dict)
    scalars: dict[Value, Dim] = field(default_factory=dict)
    domains: dict[str, Domain] = field(default_factory=dict)
    """What ``util.assume.int`` says about each argument size (intersected over its assumptions)."""
    arguments: dict[str, tuple[int, int]] = field(default_factory=dict)
    """Argument size name -> (data argument number, dim): the function's dynamic dimensions (dim -1: an
    integer argument, ``arg2``, is a size of its own)."""
    unknown: dict[str, Value] = field(default_factory=dict)
    """Opaque sizes (an op the analysis does not see through) -> the value they stand for."""
    _unknown_names: dict[tuple[Value, str], str] = field(default_factory=dict)

    def shape(self, v: Value) -> Shape:
        """``v``'s dims (static ones as constants); a value never seen gets unknown symbols."""
        if v not in self.shapes:
            self.shapes[v] = self.fresh_shape(v, v.type)
        return self.shapes[v]

    def scalar(self, v: Value) -> Dim:
        if v not in self.scalars:
            self.scalars[v] = self._unknown(v, "")
        return self.scalars[v]

    def is_symbolic(self, d: Dim) -> bool:
        """Whether ``d`` is built from argument sizes and constants only (it can be recomputed)."""
        return not any(s.startswith("%") for s in d.symbols())

    def _unknown(self, v: Value, suffix: str) -> Dim:
        """The unknown symbol of ``v``'s size (``suffix`` ``.dN``: of its dim N), the same one each time,
        numbered in the order the walk meets them (so the same in every run)."""
        name = self._unknown_names.get((v, suffix))
        if name is None:
            name = f"%{v.name}{suffix}#{len(self._unknown_names)}"
            self._unknown_names[(v, suffix)] = name
            self.unknown[name] = v
        return Dim.sym(name)

    def fresh_shape(self, v: Value, t: Type) -> Shape:
        """Dims for ``v`` read as of type ``t``: its static sizes, an unknown symbol for each ``?``."""
        if isinstance(t, DispatchTensorType):
            t = t.tensor
        if not isinstance(t, TensorType):
            return ()
        return tuple(Dim.const(d) if d is not None else self._unknown(v, f".d{i}") for i, d in enumerate(t.shape))


_Handler = Callable[["_Walker", Operation], None]
_HANDLERS: OpTable[_Handler] = OpTable("shape handlers")
"""Op name -> the ``_Walker`` method that sizes its results; filled by ``_handles`` in the class body.
A handler whose rule does not fit the op passes it on itself (to ``_Walker.other`` or another handler)."""
_handles = _HANDLERS.handles


class _Walker:
    def __init__(self, func: Operation, arg_numbers: dict[Value, int]):
        self.func = func
        self.out = FunctionShapes()
        self.arg_numbers = arg_numbers

    def dims_of(self, values: list[Value]) -> list[Dim]:
        return [self.out.scalar(v) for v in values]

    def static_or(self, v: Value, dims: list[Dim]) -> Shape:
        """``v``'s dims: its type's static sizes, and ``dims`` in order for its ``?``s (a missing one is
        unknown)."""
        t = v.type.tensor if isinstance(v.type, DispatchTensorType) else v.type
        if not isinstance(t, TensorType):
            return ()
        it = iter(dims)
        out = []
        for i, d in enumerate(t.shape):
            if d is not None:
                out.append(Dim.const(d))
            else:
                out.append(next(it, None) or self.out._unknown(v, f".d{i}"))
        return tuple(out)

    def set_shape(self, v: Value, dims: Shape) -> None:
        t = v.type.tensor if isinstance(v.type, DispatchTensorType) else v.type
        if isinstance(t, TensorType) and len(dims) == t.rank:
            # A static dim of the type wins over whatever was inferred (a cast refines it).
            dims = tuple(Dim.const(s) if s is not None else d for s, d in zip(t.shape, dims, strict=True))
            self.out.shapes[v] = dims
        else:
            self.out.shapes[v] = self.out.fresh_shape(v, v.type)

    def same(self, result: Value, source: Value) -> None:
        self.set_shape(result, self.out.shape(source))

    def block(self, block: Block) -> None:
        for op in block.ops:
            self.op(op)

    def op(self, op: Operation) -> None:
        """Give ``op``'s results their sizes: an opaque op's are unknown, index arithmetic is seen
        through (``_SCALAR_OPS``), an op with a handler (``_HANDLERS``) has its own rule, and any other
        op goes to ``other``."""
        n = op.name
        out = self.out
        rs = op.results
        if op.opaque_text is not None:
            for r in rs:
                if isinstance(r.type, ScalarType) and r.type.is_int:
                    out.scalars[r] = out._unknown(r, "")
                elif not isinstance(r.type, ScalarType):
                    out.shape(r)
            return
        scalar = _SCALAR_OPS.get(n)
        if scalar is not None and rs and isinstance(rs[0].type, ScalarType) and rs[0].type.is_int:
            try:
                out.scalars[rs[0]] = scalar(self, op)
            except (ZeroDivisionError, ValueError, KeyError, IndexError):
                out.scalars[rs[0]] = out._unknown(rs[0], "")
            return
        handler = _HANDLERS.get(n)
        if handler is not None:
            handler(self, op)
        else:
            self.other(op)

    def other(self, op: Operation) -> None:
        """An op with no handler (or one its handler passes on): a structured op's results have its
        inits' sizes, an elementwise op on tensors its first tensor operand's, anything else unknown ones."""
        out = self.out
        rs = op.results
        if op.name.startswith(("linalg.", "iree_linalg_ext.")) and outs(op) and len(outs(op)) == len(rs):
            for r, init in zip(rs, outs(op), strict=True):
                self.same(r, init)
        elif rs and all(isinstance(r.type, TensorType) for r in rs):
            tensors = [v for v in op.operands if isinstance(v.type, TensorType)]
            for r in rs:
                if tensors and tensor_type(tensors[0]).rank == tensor_type(r).rank:
                    self.same(r, tensors[0])  # elementwise arith/math on tensors
                else:
                    out.shape(r)
        else:
            for r in rs:
                if isinstance(r.type, ScalarType) and r.type.is_int:
                    out.scalars.setdefault(r, out._unknown(r, ""))
                elif not isinstance(r.type, ScalarType):
                    out.shape(r)

    # ------------------------------------------------------------------ handlers, by op name
    def _sized_by_group(self, op: Operation, k: int) -> None:
        """The result has its type's static sizes and the ``k``-th ``{%d}`` list for its ``?``s."""
        r = op.results[0]
        self.set_shape(r, self.static_or(r, self.dims_of(dim_group(op, k))))

    @_handles("iree_tensor_ext.dispatch.workload.ordinal")
    def ordinal(self, op: Operation) -> None:
        self.out.scalars[op.results[0]] = self.out.scalar(op.operands[0])

    @_handles("tensor.empty")
    def empty(self, op: Operation) -> None:
        r = op.results[0]
        self.set_shape(r, self.static_or(r, self.dims_of(op.operands)))

    @_handles("hal.tensor.import", "flow.tensor.tie_shape", "flow.tensor.transfer")
    def sized_by_first_group(self, op: Operation) -> None:
        self._sized_by_group(op, 0)

    @_handles("flow.tensor.encode", "flow.tensor.reshape", "flow.tensor.bitcast", "iree_tensor_ext.bitcast")
    def sized_by_second_group(self, op: Operation) -> None:
        self._sized_by_group(op, 1)

    @_handles("iree_encoding.unset_encoding")
    def unset_encoding(self, op: Operation) -> None:
        """Sized by its ``{%d}`` list, unless it has none or returns the whole source (``_same_pattern``):
        then it has its source's sizes."""
        if dim_group(op, 1) and not _same_pattern(op):
            self._sized_by_group(op, 1)
        else:
            self.same_as_source(op)

    @_handles(
        "hal.tensor.export",
        "hal.tensor.barrier",
        "iree_tensor_ext.compute_barrier.start",
        "iree_tensor_ext.compute_barrier.end",
        "iree_encoding.set_encoding",
        "tensor.cast",
        "tensor.bitcast",
        "linalg.softmax",
    )
    def same_as_source(self, op: Operation) -> None:
        """Each result has the sizes of the operand in its position."""
        for r, v in zip(op.results, op.operands, strict=False):
            self.same(r, v)

    @_handles("tensor.insert_slice")
    def insert_slice(self, op: Operation) -> None:
        self.same(op.results[0], op.operands[1])

    @_handles("tensor.collapse_shape")
    def collapse_shape(self, op: Operation) -> None:
        src = self.out.shape(op.operands[0])
        groups = [int_list(g) for g in attr(op, "reassociation", ArrayAttr).items]
        self.set_shape(op.results[0], tuple(_product(src[i] for i in g) for g in groups))

    @_handles("tensor.expand_shape")
    def expand_shape(self, op: Operation) -> None:
        static = int_list(op.attributes.get("static_output_shape"))
        dyn = iter(self.dims_of(op.operands[1:]))
        self.set_shape(op.results[0], tuple(next(dyn) if s == DYNAMIC else Dim.const(s) for s in static))

    @_handles("tensor.reshape")
    def reshape(self, op: Operation) -> None:
        """``tensor.reshape %src(%shape)``: dim i is element i of ``%shape`` when a ``tensor.from_elements``
        of sizes builds it (as torch-mlir lowers ``view`` on a dynamic dim); any other shape tensor: unknown."""
        r = op.results[0]
        maker = op.operands[1].owner if len(op.operands) > 1 else None
        if isinstance(maker, Operation) and maker.name == "tensor.from_elements" and isinstance(r.type, TensorType):
            if len(maker.operands) == r.type.rank:
                self.set_shape(r, tuple(self.dims_of(maker.operands)))
                return
        self.out.shape(r)

    @_handles("tensor.concat")
    def concat(self, op: Operation) -> None:
        dim = attr(op, "dim", IntAttr).value
        shapes = [self.out.shape(v) for v in op.operands]
        first = list(shapes[0])
        first[dim] = _sum(s[dim] for s in shapes)
        self.set_shape(op.results[0], tuple(first))

    @_handles("flow.dispatch.region")
    def dispatch_region(self, op: Operation) -> None:
        self.block(op.regions[0].entry)
        for r, dims in zip(op.results, dim_groups(op) or [[] for _ in op.results], strict=True):
            self.set_shape(r, self.static_or(r, self.dims_of(dims)))

    @_handles("util.initializer", "func.func", "util.func")
    def nested_function(self, op: Operation) -> None:
        """A function (or initializer) inside this one is not walked into; a declaration goes to ``other``."""
        if not op.regions:
            self.other(op)

    def _slice_sizes(self, op: Operation) -> list[Dim]:
        """The sizes of a slice-like op (extract_slice, dispatch.tensor.load): static ones, and its
        dynamic size operands, which follow the dynamic offsets."""
        offs, sizes, _strides = static_slice(op)
        dyn = iter(self.dims_of(base_operands(op)[1:]))
        for _ in (s for s in offs if s == DYNAMIC):
            next(dyn)
        return [next(dyn) if s == DYNAMIC else Dim.const(s) for s in sizes]

    @_handles("tensor.extract_slice")
    def slice(self, op: Operation) -> None:
        dims = self._slice_sizes(op)
        r = op.results[0]
        rank = r.type.rank if isinstance(r.type, TensorType) else len(dims)
        i = 0
        while len(dims) > rank and i < len(dims):  # rank-reducing: drop unit sizes, from the left
            if dims[i].is_const and dims[i].value == 1:
                dims.pop(i)
            else:
                i += 1
        self.set_shape(r, tuple(dims))

    @_handles("tensor.pad")
    def pad(self, op: Operation) -> None:
        src = self.out.shape(op.operands[0])
        dyn = iter(self.dims_of(op.operands[1:]))
        low = [next(dyn) if s == DYNAMIC else Dim.const(s) for s in int_list(op.attributes.get("static_low"))]
        high = [next(dyn) if s == DYNAMIC else Dim.const(s) for s in int_list(op.attributes.get("static_high"))]
        self.set_shape(op.results[0], tuple(s + lo + hi for s, lo, hi in zip(src, low, high, strict=True)))

    @_handles("iree_tensor_ext.dispatch.tensor.load")
    def load(self, op: Operation) -> None:
        dims = self._slice_sizes(op)
        r = op.results[0]
        rank = r.type.rank if isinstance(r.type, TensorType) else len(dims)
        dims = [d for d in dims if not (len(dims) > rank and d.is_const and d.value == 1)][-rank:] if rank else []
        self.set_shape(r, tuple(dims))

    @_handles("flow.dispatch.workgroups")
    def workgroups(self, op: Operation) -> None:
        body = op.regions[0].entry
        args = workgroups_arguments(op)
        groups = dim_groups(op) or [[] for _ in [*args, *op.results]]
        for binding, v in zip(body.args, args, strict=False):
            if isinstance(v.type, ScalarType):
                self.out.scalars[binding] = self.out.scalar(v)
            else:
                self.set_shape(binding, self.out.shape(v))
        for b, r, dims in zip(result_bindings(op), op.results, groups[len(args) :], strict=False):
            if b >= len(args) and b < len(body.args):  # a tied result's binding is its operand's
                self.set_shape(body.args[b], self.static_or(r, self.dims_of(dims)))
        for w in workload(op):
            self.out.scalar(w)
        self.block(body)
        for r, dims in zip(op.results, groups[len(args) :], strict=True):
            self.set_shape(r, self.static_or(r, self.dims_of(dims)))

    @_handles("util.assume.int")
    def assume(self, op: Operation) -> None:
        rows_per = attr(op, "assumptions", ArrayAttr).items
        for v, r, per_operand in zip(op.operands, op.results, rows_per, strict=True):
            d = self.out.scalar(v)
            self.out.scalars[r] = d
            rows = [per_operand] if isinstance(per_operand, DictAttr) else list(cast(ArrayAttr, per_operand).items)
            dom = _union_rows(rows)
            _constrain(self.out.domains, d, dom)


def _union_rows(rows: list) -> Domain:
    """Several rows (one per call site): any of them may hold, so only what all allow is known."""
    lo: int | None = None
    hi: int | None = 0
    div = 0
    for row in rows:
        get = row.get if isinstance(row, DictAttr) else (lambda k: None)
        umin, umax, udiv = (getattr(get(k), "value", None) for k in ("umin", "umax", "udiv"))
        lo = (umin or 0) if lo is None else min(lo, umin or 0)
        hi = None if hi is None or umax is None else max(hi, umax)
        div = math.gcd(div, udiv or 1)
    return Domain(lo or 0, hi, div or 1)


def _constrain(domains: dict[str, Domain], d: Dim, dom: Domain) -> None:
    """What an assumption on ``d`` says about its one symbol (``d = c·s``; other forms say nothing
    here: the evaluator still checks them at run time)."""
    if len(d.terms) != 1:
        return
    ((m, c),) = d.terms
    if len(m) != 1 or m[0].kind != "sym" or c <= 0:
        return
    name = m[0].name
    lo = -(-dom.lo // c)
    hi = dom.hi // c if dom.hi is not None else None
    div = dom.div // math.gcd(dom.div, c)
    new = Domain(lo, hi, div)
    domains[name] = domains[name].intersect(new) if name in domains else new


def _product(dims: Iterable[Dim]) -> Dim:
    out = Dim.const(1)
    for d in dims:
        out = out * d
    return out


def _sum(dims: Iterable[Dim]) -> Dim:
    out = Dim.const(0)
    for d in dims:
        out = out + d
    return out


def _same_pattern(op: Operation) -> bool:
    """An unset_encoding whose result has its source's sizes (the same static sizes, ``?`` in the same
    places): it returns the whole tensor, so its sizes are the source's, whatever value names a dynamic
    one in ``{%d}`` (IREE names it by a ``tensor.dim`` of the source, an input by the size argument)."""
    src, res = op.operands[0].type, op.results[0].type
    return isinstance(src, TensorType) and isinstance(res, TensorType) and src.shape == res.shape


def _binary(fn):
    def handler(w: _Walker, op: Operation) -> Dim:
        a, b = (w.out.scalar(v) for v in op.operands[:2])
        return fn(a, b)

    return handler


def _by_const(kind: str):
    def fn(a: Dim, b: Dim) -> Dim:
        if not b.is_const:
            raise ValueError("division by a symbolic size")
        return getattr(a, kind)(b.value)

    return fn


def _mul(a: Dim, b: Dim) -> Dim:
    return a * b


def _constant(w: _Walker, op: Operation) -> Dim:
    v = op.attributes["value"]
    if isinstance(v, IntAttr) and isinstance(op.results[0].type, ScalarType):
        return Dim.const(v.value)
    raise ValueError("not an integer constant")


def _tensor_dim(w: _Walker, op: Operation) -> Dim:
    shape = w.out.shape(op.operands[0])
    return shape[w.out.scalar(op.operands[1]).value]


def _buffer_view_dim(w: _Walker, op: Operation) -> Dim:
    view = op.operands[0]
    k = w.arg_numbers.get(view)
    if k is None:
        raise KeyError("not a function argument")
    index = attr(op, "index", IntAttr).value
    name = arg_symbol(k, index)
    w.out.arguments[name] = (k, index)
    return Dim.sym(name)


def _cast(w: _Walker, op: Operation) -> Dim:
    return w.out.scalar(op.operands[0])


_AFFINE_OPS: dict[str, Callable[[Dim, Dim], Dim]] = {
    "+": lambda a, b: a + b,
    "-": lambda a, b: a - b,
    "*": _mul,
    **{kind: _by_const(kind) for kind in ("floordiv", "ceildiv", "mod")},
}
"""``affine_value``'s operations on sizes (a symbolic divisor: ValueError, an unknown size)."""


def _affine_apply(w: _Walker, op: Operation) -> Dim:
    m = attr(op, "map", AffineMapAttr)
    args = w.dims_of(op.operands)
    return affine_value(m.results[0], args[: m.num_dims], args[m.num_dims :], Dim.const, _AFFINE_OPS)


_SCALAR_OPS = {
    "arith.constant": _constant,
    "tensor.dim": _tensor_dim,
    "hal.buffer_view.dim": _buffer_view_dim,
    "affine.apply": _affine_apply,
    "arith.index_cast": _cast,
    "arith.index_castui": _cast,
    "arith.addi": _binary(lambda a, b: a + b),
    "arith.subi": _binary(lambda a, b: a - b),
    "arith.muli": _binary(_mul),
    "arith.divsi": _binary(_by_const("floordiv")),
    "arith.divui": _binary(_by_const("floordiv")),
    "arith.floordivsi": _binary(_by_const("floordiv")),
    "arith.ceildivsi": _binary(_by_const("ceildiv")),
    "arith.ceildivui": _binary(_by_const("ceildiv")),
    "arith.remsi": _binary(_by_const("mod")),
    "arith.remui": _binary(_by_const("mod")),
}
"""Index arithmetic seen through (sizes are >= 0, so signed and unsigned division agree)."""


def function_shapes(func: Operation, module_ops: list[Operation] | None = None) -> FunctionShapes:
    """Dims of every tensor and size of every index value in ``func`` (see the module docstring); a
    declaration (no body) has none."""
    if not func.regions:
        return FunctionShapes()
    entry = func.regions[0].entry
    numbers: dict[Value, int] = {}
    data_args = argument_tensor_types(func)
    for k, (i, _) in enumerate(data_args):
        numbers[entry.args[i]] = k
    w = _Walker(func, numbers)
    for k, (i, _t) in enumerate(data_args):
        arg = entry.args[i]
        if isinstance(arg.type, TensorType):
            dims = []
            for d, s in enumerate(arg.type.shape):
                if s is None:
                    name = arg_symbol(k, d)
                    w.out.arguments[name] = (k, d)
                    dims.append(Dim.sym(name))
                else:
                    dims.append(Dim.const(s))
            w.out.shapes[arg] = tuple(dims)
        elif isinstance(arg.type, ScalarType) and arg.type.is_int:  # an index argument: a size of its own
            w.out.arguments[f"arg{k}"] = (k, -1)
            w.out.scalars[arg] = Dim.sym(f"arg{k}")
    w.block(entry)
    return w.out
