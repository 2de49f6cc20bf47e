"""Dynamic sizes in the start state: the ``index`` values its new ops need, computed at the function's top.

Forming dispatch regions and setting encodings creates ops whose types have ``?`` (a region's results,
an encoded ``tensor.empty``, ``unset_encoding``); their sizes must be values defined before them.
``TopSizes`` computes each size (``mlir.symbolic.Dim``) once, at the top of the function: an argument's
size is ``tensor.dim`` of a tensor argument or ``hal.buffer_view.dim`` of a buffer view (IREE's ABI),
any other size arithmetic on those (``arith.muli`` ...). A size the analysis cannot see through (an
opaque op's result) has no such value: ``value`` returns None and the caller keeps the IR as it was.
"""

from __future__ import annotations

from egg_dispatch.mlir.ir import Block, IntAttr, Operation, ScalarType, StrAttr, TensorType, Value
from egg_dispatch.mlir.shapes import FunctionShapes
from egg_dispatch.mlir.symbolic import Atom, Dim

__all__ = ["TopSizes"]

INDEX = ScalarType("index")


class TopSizes:
    def __init__(self, func: Operation, shapes: FunctionShapes) -> None:
        self.block: Block = func.regions[0].entry
        self.func = func
        self.shapes = shapes
        self.data_args = {k: self.block.args[i] for k, i in _data_args(func)}
        self.cache: dict[Dim, Value] = {}
        self.created: list[Operation] = []
        """The ops computing the sizes, in order: they go first in the function (block arguments only)."""

    def _add(self, name: str, operands: list[Value], attrs: dict | None = None) -> Value:
        op = Operation(name, operands, [], dict(attrs or {}))
        op.results = [Value(f"size{len(self.created)}", INDEX, op, 0)]
        self.created.append(op)
        return op.results[0]

    def dims(self, v: Value) -> list[Value] | None:
        """The values of ``v``'s ``?`` dims, or None if one cannot be computed at the top."""
        t = v.type
        if not isinstance(t, TensorType) or t.is_static:
            return []
        out = []
        for s, d in zip(t.shape, self.shapes.shape(v), strict=False):
            if s is None:
                value = self.value(d)
                if value is None:
                    return None
                out.append(value)
        return out

    def value(self, d: Dim) -> Value | None:
        if d in self.cache:
            return self.cache[d]
        if not self.shapes.is_symbolic(d):
            return None
        if d.is_const:
            v = self._add("arith.constant", [], {"value": IntAttr(d.value, INDEX)})
        else:
            poly = self._poly(d)
            if poly is None:
                return None
            v = poly
        self.cache[d] = v
        return v

    def _poly(self, d: Dim) -> Value | None:
        total: Value | None = None
        for mono, coeff in sorted(d.terms, key=lambda t: (not t[0], t)):
            term: Value | None = None
            for atom in mono:
                a = self._atom(atom)
                if a is None:
                    return None
                term = a if term is None else self._arith("arith.muli", term, a)
            c = self.value(Dim.const(abs(coeff)))
            assert c is not None
            term = c if term is None else (term if abs(coeff) == 1 else self._arith("arith.muli", term, c))
            if total is None and coeff > 0:
                total = term
            elif total is None:
                zero = self.value(Dim.const(0))
                assert zero is not None
                total = self._arith("arith.subi", zero, term)
            else:
                total = self._arith("arith.addi" if coeff > 0 else "arith.subi", total, term)
        return total

    def _atom(self, a: Atom) -> Value | None:
        key = Dim(terms=(((a,), 1),))
        if key in self.cache:
            return self.cache[key]
        if a.kind == "sym":
            where = self.shapes.arguments.get(a.name)
            arg = self.data_args.get(where[0]) if where else None
            if where is None or arg is None:
                return None
            if where[1] < 0 and arg.type == INDEX:
                v = arg
            elif isinstance(arg.type, TensorType):
                c = self.value(Dim.const(where[1]))
                assert c is not None
                v = self._add("tensor.dim", [arg, c])
            else:  # a buffer view of IREE's ABI
                v = self._add("hal.buffer_view.dim", [arg], {"index": IntAttr(where[1])})
        else:
            assert a.arg is not None, a  # floordiv / ceildiv / mod of a Dim
            inner = self.value(a.arg)
            k = self.value(Dim.const(a.k))
            if inner is None or k is None:
                return None
            op = {"floordiv": "arith.divui", "ceildiv": "arith.ceildivui", "mod": "arith.remui"}[a.kind]
            v = self._arith(op, inner, k)
        self.cache[key] = v
        return v

    def _arith(self, name: str, a: Value, b: Value) -> Value:
        attrs = {"overflow": StrAttr("nsw")} if name in ("arith.muli", "arith.addi", "arith.subi") else None
        return self._add(name, [a, b], attrs)


def _data_args(func: Operation) -> list[tuple[int, int]]:
    from egg_dispatch.mlir.abi import argument_tensor_types

    return [(k, i) for k, (i, _t) in enumerate(argument_tensor_types(func))]
