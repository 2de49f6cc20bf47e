"""Custom syntax of the tensor-building ops PyTorch exports use: ``tensor.concat``, ``tensor.pad``,
``linalg.softmax``, ``cf.assert`` (torch-mlir's bounds checks inside embedding lookups), and
``tensor.reshape`` with the ``tensor.from_elements`` shape it reads (torch-mlir's ``view`` of a dynamic dim).

Read by ``TensorSyntax``; written by the ``_print_*`` functions at the end (registered into
``printer.OP_PRINTERS``). Attribute keys are listed in ``mlir.ops``.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import TYPE_CHECKING

from egg_dispatch.mlir.ir import Attr, IntAttr, Operation, ScalarType, StrAttr, TensorType, UnitAttr
from egg_dispatch.mlir.lexer import int_value
from egg_dispatch.mlir.literals import string_literal, unescape
from egg_dispatch.mlir.ops import DYNAMIC, attr, make_int_list
from egg_dispatch.mlir.parser_base import ParserBase
from egg_dispatch.mlir.printer import prints

if TYPE_CHECKING:
    from egg_dispatch.mlir.printer import Printer

__all__ = ["TENSOR_READERS", "TensorSyntax"]


class TensorSyntax(ParserBase):
    def _p_concat(self, name: str, start: int) -> Operation:
        """``tensor.concat dim(D) %a, %b [attr-dict] : (T1, T2) -> T``."""
        lex = self.lex
        lex.expect("dim")
        lex.expect("(")
        dim = int_value(lex, lex.expect_kind("int", "the concatenated dimension"))
        lex.expect(")")
        vals = self.operand_list()
        if not vals:
            raise lex.error("tensor.concat needs at least one operand", start)
        attrs: dict[str, Attr] = {}
        self.opt_attr_dict(attrs)
        lex.expect(":")
        self.check_types(vals, self.parse_paren_types(), start)
        lex.expect("->")
        res = self.parse_type()
        types = [v.type for v in vals]
        tensors = [t for t in types if isinstance(t, TensorType)]
        if isinstance(res, TensorType) and len(tensors) == len(types):
            if not 0 <= dim < res.rank or any(t.rank != res.rank for t in tensors):
                raise lex.error(f"tensor.concat dim({dim}) of rank-{res.rank} tensors of different ranks", start)
            sizes = [t.shape[dim] for t in tensors]
            known = [s for s in sizes if s is not None]
            # a dynamic size ('?') is checked at run time, as MLIR's verifier leaves it
            total = sum(known) if len(known) == len(sizes) and res.shape[dim] is not None else res.shape[dim]
            others = {t.shape[:dim] + t.shape[dim + 1 :] for t in tensors}
            if not _compatible(others, res.shape[:dim] + res.shape[dim + 1 :]) or total != res.shape[dim]:
                raise lex.error(
                    f"tensor.concat dim({dim}): operand shapes do not add up to {self.type_str(res)}", start
                )
        attrs["dim"] = IntAttr(dim)
        return self.make_op(name, vals, [res], attributes=attrs)

    def _p_pad(self, name: str, start: int) -> Operation:
        """``tensor.pad %x [nofold] low[..] high[..] { ^bb0(%i: index, ..): tensor.yield %v : T }
        [attr-dict] : T to T'``."""
        lex = self.lex
        src = self.operand()
        attrs: dict[str, Attr] = {}
        if lex.accept("nofold"):
            attrs["nofold"] = UnitAttr()
        lex.expect("low")
        low, d_low = self.static_list()
        lex.expect("high")
        high, d_high = self.static_list()
        region = self.parse_region()
        self.opt_attr_dict(attrs)
        lex.expect(":")
        src_t = self.parse_type()
        self.check_types([src], [src_t], start)
        lex.expect("to")
        res = self.parse_type()
        if isinstance(src_t, TensorType) and isinstance(res, TensorType):
            if not len(low) == len(high) == src_t.rank == res.rank:
                raise lex.error(
                    f"tensor.pad of a rank-{src_t.rank} tensor needs {src_t.rank} low and high sizes", start
                )
            for d, (lo, hi, s, r) in enumerate(zip(low, high, src_t.shape, res.shape, strict=True)):
                if DYNAMIC in (lo, hi):
                    continue
                if lo < 0 or hi < 0 or (s is not None and r is not None and lo + s + hi != r):
                    raise lex.error(f"tensor.pad: dim {d} of size {s} padded by {lo}, {hi} is not {r}", start)
            entry = region.entry
            if len(entry.args) != src_t.rank or any(a.type != ScalarType("index") for a in entry.args):
                raise lex.error(f"the tensor.pad region takes {src_t.rank} index arguments", start)
            term = entry.ops[-1] if entry.ops else None
            if term is None or term.name != "tensor.yield" or len(term.operands) != 1:
                raise lex.error("the tensor.pad region must end in 'tensor.yield' of one value", start)
            if term.operands[0].type != res.element:
                raise lex.error(f"tensor.pad yields {self.type_str(term.operands[0].type)}, not {res.element}", start)
        attrs |= {"static_low": make_int_list(low), "static_high": make_int_list(high)}
        return self.make_op(name, [src, *d_low, *d_high], [res], attributes=attrs, regions=[region])

    def _p_softmax(self, name: str, start: int) -> Operation:
        """``linalg.softmax [attr-dict] dimension(D) ins(%x : T) outs(%init : T) [-> T]``."""
        lex = self.lex
        attrs: dict[str, Attr] = {}
        self.opt_attr_dict(attrs)
        lex.expect("dimension")
        lex.expect("(")
        dim = int_value(lex, lex.expect_kind("int", "the softmax dimension"))
        lex.expect(")")
        lex.expect("ins")
        src, _ = self.typed_operands(start)
        lex.expect("outs")
        init, out_t = self.typed_operands(start)
        if len(src) != 1 or len(init) != 1:
            raise lex.error("linalg.softmax takes one input and one init", start)
        results = out_t
        if lex.accept("->"):
            results = self.parse_result_types()
            self.check_types(init, results, start)
        t = src[0].type
        if isinstance(t, TensorType):
            if not 0 <= dim < t.rank:
                raise lex.error(f"linalg.softmax dimension({dim}) of a rank-{t.rank} tensor", start)
            if init[0].type != t:
                raise lex.error("linalg.softmax input and init must have the same type", start)
        attrs["dimension"] = IntAttr(dim)
        return self.make_op(name, [*src, *init], results, attributes=attrs)

    def _p_assert(self, name: str, start: int) -> Operation:
        """``cf.assert %cond, "message" [attr-dict]``."""
        lex = self.lex
        cond = self.operand()
        lex.expect(",")
        msg = unescape(lex, lex.expect_kind("string", "the assertion message"))
        attrs: dict[str, Attr] = {"msg": StrAttr(msg)}
        self.opt_attr_dict(attrs)
        self.check_types([cond], [ScalarType("i1")], start)
        return self.make_op(name, [cond], [], attributes=attrs)

    def _p_cast(self, name: str, start: int) -> Operation:
        """``tensor.cast %x [attr-dict] : T1 to T2`` (and ``tensor.bitcast``): a cast between compatible
        shapes (equal ranks, each static size equal or one side dynamic), the element type kept by a
        cast and its width by a bitcast."""
        lex = self.lex
        src = self.operand()
        attrs: dict[str, Attr] = {}
        self.opt_attr_dict(attrs)
        lex.expect(":", f"before the types of '{name}'")
        self.check_types([src], [self.parse_type()], start)
        lex.expect("to", f"in '{name}'")
        res = self.parse_type()
        a, b = src.type, res
        if isinstance(a, TensorType) and isinstance(b, TensorType):
            if not _compatible({a.shape}, b.shape):
                raise lex.error(f"{name} between incompatible shapes {a.shape} and {b.shape}", start)
            if name == "tensor.cast" and a.element != b.element:
                raise lex.error(f"tensor.cast cannot change the element type ({a.element} to {b.element})", start)
        return self.make_op(name, [src], [res], attributes=attrs)

    def _p_shape_reshape(self, name: str, start: int) -> Operation:
        """``tensor.reshape %x(%shape) [attr-dict] : (T, tensor<Nxi64>) -> R``: the result's sizes are the
        elements of the 1-d ``%shape``; the element counts agree when both are static."""
        lex = self.lex
        src = self.operand()
        lex.expect("(")
        shape = self.operand()
        lex.expect(")")
        attrs: dict[str, Attr] = {}
        self.opt_attr_dict(attrs)
        lex.expect(":")
        self.check_types([src, shape], self.parse_paren_types(), start)
        lex.expect("->")
        res = self.parse_type()
        a, s, r = src.type, shape.type, res
        if isinstance(a, TensorType) and isinstance(s, TensorType) and isinstance(r, TensorType):
            if s.rank != 1 or s.shape[0] != r.rank or a.element != r.element:
                raise lex.error(f"tensor.reshape: a shape {s} for a {r} of {a}", start)
            if a.is_static and r.is_static and math.prod(a.static_shape) != math.prod(r.static_shape):
                raise lex.error(f"tensor.reshape: {a} and {r} have different element counts", start)
        return self.make_op(name, [src, shape], [res], attributes=attrs)

    def _p_from_elements(self, name: str, start: int) -> Operation:
        """``tensor.from_elements %a, %b.. [attr-dict] : T``: a static tensor of its scalar operands."""
        lex = self.lex
        vals = self.operand_list()
        attrs: dict[str, Attr] = {}
        self.opt_attr_dict(attrs)
        lex.expect(":")
        res = self.parse_type()
        if isinstance(res, TensorType):
            if not res.is_static or math.prod(res.static_shape) != len(vals):
                raise lex.error(f"tensor.from_elements of {len(vals)} values is no {res}", start)
            self.check_types(vals, [res.element] * len(vals), start)
        return self.make_op(name, vals, [res], attributes=attrs)


TENSOR_READERS: dict[str, Callable[[TensorSyntax, str, int], Operation]] = {
    "tensor.reshape": TensorSyntax._p_shape_reshape,
    "tensor.from_elements": TensorSyntax._p_from_elements,
    "tensor.cast": TensorSyntax._p_cast,
    "tensor.bitcast": TensorSyntax._p_cast,
    "tensor.concat": TensorSyntax._p_concat,
    "tensor.pad": TensorSyntax._p_pad,
    "linalg.softmax": TensorSyntax._p_softmax,
    "cf.assert": TensorSyntax._p_assert,
}
"""Op name -> the method of ``TensorSyntax`` that reads it (``syntax.OpSyntax`` dispatches through it)."""


def _compatible(shapes: set[tuple[int | None, ...]], want: tuple[int | None, ...]) -> bool:
    """Whether every shape in ``shapes`` can equal ``want``: equal sizes, or either one dynamic (``None``)."""
    return all(
        len(s) == len(want) and all(a is None or b is None or a == b for a, b in zip(s, want, strict=True))
        for s in shapes
    )


# ------------------------------------------------------------------------------------ printing
# The writer side of the readers above: each function writes what follows the op name.
@prints("tensor.concat")
def _print_concat(p: Printer, op: Operation, indent: str) -> str:
    extra = p.attr_dict(p.extra_attrs(op, {"dim"}))
    ts = p.types([v.type for v in op.operands])
    dim = attr(op, "dim", IntAttr).value
    return f" dim({dim}) {p.values(op.operands)}{extra} : ({ts}) -> {p.type(op.result.type)}"


@prints("tensor.cast", "tensor.bitcast")
def _print_cast(p: Printer, op: Operation, indent: str) -> str:
    extra = p.attr_dict(p.extra_attrs(op, set()))
    src = op.operands[0]
    return f" {p.value(src)}{extra} : {p.type(src.type)} to {p.type(op.result.type)}"


@prints("tensor.pad")
def _print_pad(p: Printer, op: Operation, indent: str) -> str:
    src, dyn = op.operands[0], list(op.operands[1:])
    nofold = " nofold" if "nofold" in op.attributes else ""
    low, high = p.static(op, "static_low", dyn), p.static(op, "static_high", dyn)
    extra = p.attr_dict(p.extra_attrs(op, {"static_low", "static_high", "nofold"}))
    region = p.region(op.regions[0], indent, print_entry_args=True)
    types = f"{p.type(src.type)} to {p.type(op.result.type)}"
    return f" {p.value(src)}{nofold} low{low} high{high} {region}{extra} : {types}"


@prints("linalg.softmax")
def _print_softmax(p: Printer, op: Operation, indent: str) -> str:
    extra = p.attr_dict(p.extra_attrs(op, {"dimension"}))
    x, init = op.operands[0], op.operands[1]
    return (
        f"{extra} dimension({attr(op, 'dimension', IntAttr).value}) ins({p.value(x)} : {p.type(x.type)}) "
        f"outs({p.value(init)} : {p.type(init.type)}) -> {p.type(op.result.type)}"
    )


@prints("cf.assert")
def _print_assert(p: Printer, op: Operation, indent: str) -> str:
    extra = p.attr_dict(p.extra_attrs(op, {"msg"}))
    return f" {p.value(op.operands[0])}, {string_literal(attr(op, 'msg', StrAttr).value)}{extra}"


@prints("tensor.reshape")
def _print_shape_reshape(p: Printer, op: Operation, indent: str) -> str:
    extra = p.attr_dict(p.extra_attrs(op, set()))
    src, shape = op.operands
    types = f"({p.types([src.type, shape.type])}) -> {p.type(op.result.type)}"
    return f" {p.value(src)}({p.value(shape)}){extra} : {types}"


@prints("tensor.from_elements")
def _print_from_elements(p: Printer, op: Operation, indent: str) -> str:
    extra = p.attr_dict(p.extra_attrs(op, set()))
    return f" {p.values(op.operands)}{extra} : {p.type(op.result.type)}"
