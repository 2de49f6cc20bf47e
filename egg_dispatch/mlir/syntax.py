"""Custom assembly syntax of the ops egg_dispatch models: functions, returns, arith / math,
``affine.apply`` and the tensor slicing and reshaping ops, read and written; ``OpSyntax`` assembles
every dialect's reader.

Each ``_p_*`` method parses what follows the op name and returns the built ``Operation``; keys
of the attributes follow ``mlir.ops``; ``_HANDLERS`` maps op names to them, with each dialect
module's own table (``IREE_READERS``, ...). Unknown ops go through ``parse_opaque``. The ``_print_*``
functions at the end write the same forms back (registered into ``printer.OP_PRINTERS``).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import TYPE_CHECKING, cast

from egg_dispatch.mlir.flow_ops import FLOW_SLICE, parse_flow_slice
from egg_dispatch.mlir.ir import (
    AffineMapAttr,
    ArrayAttr,
    Attr,
    BoolAttr,
    DenseAttr,
    DictAttr,
    FloatAttr,
    FunctionType,
    IntAttr,
    Operation,
    ScalarType,
    StrAttr,
    TensorType,
    Type,
    TypeAttr,
    Value,
)
from egg_dispatch.mlir.lexer import describe, int_value
from egg_dispatch.mlir.literals import symbol, symbol_name
from egg_dispatch.mlir.ops import (
    CAST_OPS,
    DYNAMIC,
    RETURN_OPS,
    TENSOR_RESHAPE_OPS,
    attr,
    function_type,
    make_int_list,
    sym_name,
)
from egg_dispatch.mlir.parser_base import ParserBase
from egg_dispatch.mlir.printer import prints, prints_dialect
from egg_dispatch.mlir.syntax_iree import IREE_READERS, IreeSyntax
from egg_dispatch.mlir.syntax_linalg import LINALG_READERS, LinalgSyntax
from egg_dispatch.mlir.syntax_tensor import TENSOR_READERS, TensorSyntax

if TYPE_CHECKING:
    from egg_dispatch.mlir.printer import Printer

__all__ = ["OpSyntax"]

_CAST_OPS = CAST_OPS
_RETURNS = RETURN_OPS
_STRUCTURED_PREFIXES = ("linalg.", "iree_linalg_ext.")
_DECIMAL = re.compile(r"-?[0-9]{1,18}")
_PLAIN_INT_LIST = re.compile(r"\[\s*(?:-?[0-9]{1,18}(?:\s*,\s*-?[0-9]{1,18})*\s*)?\]")
"""``[0, -1, 8]``: decimal integers (each a whole ``int`` token: what follows a number is a space, a
comma or the ``]``) and nothing else; ``static_list`` reads any other list token by token."""


class OpSyntax(IreeSyntax, LinalgSyntax, TensorSyntax):
    def parse_custom_op(self, name: str, start: int, n_results: int) -> Operation:
        handler = _HANDLERS.get(name)
        if handler is not None:
            return handler(self, name, start)
        if name in _RETURNS:
            return self._p_return(name, start)
        dialect, _, short = name.partition(".")
        if dialect in ("arith", "math") and name not in ("arith.constant",):
            return self._p_elementwise(name, short, start)
        if name.startswith(_STRUCTURED_PREFIXES) and self.looks_structured():
            return self.parse_structured(name, start)
        return self.parse_opaque(name, start, n_results)

    # ------------------------------------------------------------------------------ helpers
    def typed_operands(self, start: int) -> tuple[list[Value], list[Type]]:
        """``(%a, %b : T1, T2)``, checking the written types against the values."""
        lex = self.lex
        lex.expect("(")
        vals = self.operand_list()
        types: list[Type] = []
        if vals:
            lex.expect(":", "before the operand types")
            types = self.parse_type_list()
        lex.expect(")")
        self.check_types(vals, types, start)
        return vals, types

    def opt_attr_dict(self, attrs: dict[str, Attr]) -> None:
        if self.lex.at("{"):
            attrs.update(self.parse_dict().items)

    def static_list(self, close: str = "]") -> tuple[list[int], list[Value]]:
        """``[0, %i, 8]`` -> static ints (DYNAMIC for SSA entries) and the SSA values in order."""
        lex = self.lex
        tok = lex.peek()
        if close == "]" and tok.text == "[" and tok.kind == "punct":
            plain = _PLAIN_INT_LIST.match(lex.text, tok.pos)
            if plain is not None:  # the usual all-static list, read at once
                lex.restore(plain.end())
                return [int(d) for d in _DECIMAL.findall(plain.group())], []
        lex.expect("[")
        static: list[int] = []
        dyn: list[Value] = []
        while not lex.at(close):
            if lex.peek().kind == "value":
                dyn.append(self.operand())
                static.append(DYNAMIC)
            else:
                static.append(int_value(lex, lex.expect_kind("int", "an integer or an SSA value")))
            if not lex.accept(","):
                break
        lex.expect(close)
        return static, dyn

    # ------------------------------------------------------------------------------ functions
    def _p_func(self, name: str, start: int) -> Operation:
        lex = self.lex
        attrs: dict[str, Attr] = {}
        if lex.peek().kind == "ident" and lex.peek().text in ("public", "private", "nested"):
            attrs["sym_visibility"] = StrAttr(lex.next().text)
        sym = lex.expect_kind("symbol", "a function name (@name)")
        attrs["sym_name"] = StrAttr(symbol_name(lex, sym))
        lex.expect("(")
        args: list[tuple[str, Type, int]] = []
        arg_attrs: list[DictAttr] = []
        named = lex.peek().kind == "value" or lex.at(")")  # a declaration may list bare types, as MLIR prints
        while not lex.at(")"):
            if named:
                t = lex.expect_kind("value", "a function argument (%name: type)")
                lex.expect(":")
                args.append((t.text[1:], self.parse_type(), t.pos))
            else:
                pos = lex.peek().pos
                args.append((f"arg{len(args)}", self.parse_type(), pos))
            arg_attrs.append(self.parse_dict() if lex.at("{") else DictAttr(()))
            if not lex.accept(","):
                break
        lex.expect(")")
        results: list[Type] = []
        if lex.accept("->"):
            results = self.parse_result_types()
        if any(a.items for a in arg_attrs):
            attrs["arg_attrs"] = ArrayAttr(tuple(arg_attrs))
        attrs["function_type"] = TypeAttr(FunctionType(tuple(t for _, t, _ in args), tuple(results)))
        if lex.accept("attributes"):
            attrs.update(self.parse_dict().items)
        regions = []
        if lex.at("{"):
            if not named:
                raise lex.error("a function with a body names its arguments (%name: type)", args[0][2])
            regions.append(self.parse_region(args, isolated=True))
        op = self.make_op(name, [], [], attributes=attrs, regions=regions)
        self._verify_returns(op, results)
        return op

    def _verify_returns(self, func: Operation, results: list[Type]) -> None:
        for block in func.regions[0].blocks if func.regions else []:
            for op in block.ops:
                if op.name in ("func.return", "return", "util.return"):
                    got = [v.type for v in op.operands]
                    if len(got) != len(results):
                        raise self.lex.error(
                            f"return has {len(got)} operand(s) but the function returns {len(results)}",
                            _pos(self, op),
                        )
                    for i, (g, r) in enumerate(zip(got, results, strict=True)):
                        if g != r:
                            raise self.lex.error(
                                f"return operand #{i} has type {self.type_str(g)} but the function "
                                f"returns {self.type_str(r)}",
                                _pos(self, op),
                            )

    def _p_return(self, name: str, start: int) -> Operation:
        lex = self.lex
        vals = self.operand_list()
        if vals:
            lex.expect(":", "before the returned types")
            self.check_types(vals, self.parse_type_list(), start)
        return self.make_op(name, vals, [])

    # ---------------------------------------------------------------------------- arith / math
    def _p_constant(self, name: str, start: int) -> Operation:
        attrs: dict[str, Attr] = {}
        self.opt_attr_dict(attrs)
        value = self.parse_attribute()
        if isinstance(value, DenseAttr):
            typ: Type = value.type
        elif isinstance(value, IntAttr | FloatAttr) and value.type is not None:
            typ = value.type
        elif isinstance(value, BoolAttr):
            typ = ScalarType("i1")
        elif isinstance(value, IntAttr):
            typ = ScalarType("i64")  # MLIR's default for an untyped integer
        elif isinstance(value, FloatAttr):
            typ = ScalarType("f64")
        else:
            raise self.lex.error("expected a constant value (a number, true/false or a dense literal)", start)
        attrs["value"] = value
        return self.make_op(name, [], [typ], attributes=attrs)

    def _p_elementwise(self, name: str, short: str, start: int) -> Operation:
        lex = self.lex
        attrs: dict[str, Attr] = {}
        if short in ("cmpf", "cmpi"):
            attrs["predicate"] = StrAttr(lex.expect_kind("ident", "a comparison predicate").text)
            lex.expect(",")
        vals = self.operand_list()
        if not vals:
            raise lex.error(f"expected an SSA operand for '{name}', found {describe(lex.peek())}")
        for flag in ("fastmath", "overflow"):
            if lex.accept(flag):
                lex.expect("<")
                words = [lex.expect_kind("ident", f"{flag} flags").text]
                while lex.accept(","):
                    words.append(lex.expect_kind("ident", f"{flag} flags").text)
                attrs[flag] = StrAttr(",".join(words))
                lex.expect(">")
        self.opt_attr_dict(attrs)
        lex.expect(":", f"before the type of '{name}'")
        types = self.parse_type_list()
        if short in _CAST_OPS:
            lex.expect("to", "in a cast")
            self.check_types(vals, types, start)
            return self.make_op(name, vals, [self.parse_type()], attributes=attrs)
        if short in ("cmpf", "cmpi"):
            self.check_types(vals, types * len(vals), start)
            t = types[0]
            res: Type = TensorType(t.shape, ScalarType("i1")) if isinstance(t, TensorType) else ScalarType("i1")
            return self.make_op(name, vals, [res], attributes=attrs)
        if short == "select":
            if len(types) == 1:
                types = [vals[0].type, types[0], types[0]]
            else:
                types = [types[0], types[1], types[1]]
            self.check_types(vals, types, start)
            return self.make_op(name, vals, [types[-1]], attributes=attrs)
        if len(types) == 1:
            self.check_types(vals, types * len(vals), start)
            return self.make_op(name, vals, [types[0]], attributes=attrs)
        # One type per operand (``math.fpowi %x, %n : f32, i64``): the result has the first one's type.
        self.check_types(vals, types, start)
        return self.make_op(name, vals, [types[0]], attributes=attrs)

    def _p_affine(self, name: str, start: int) -> Operation:
        """``affine.apply #map(%d, ...)[%s, ...]`` (and ``affine.min`` / ``affine.max``): the index
        values of the map's dims, then of its symbols; the map under ``map``."""
        lex = self.lex
        m = self.parse_attribute()
        if not isinstance(m, AffineMapAttr):
            raise lex.error(f"expected an affine map after '{name}'", start)
        lex.expect("(", "before the affine map's dimension operands")
        dims = self.operand_list()
        lex.expect(")")
        syms: list[Value] = []
        if lex.accept("["):
            syms = self.operand_list()
            lex.expect("]")
        if (len(dims), len(syms)) != (m.num_dims, m.num_symbols):
            raise lex.error(
                f"the map of '{name}' has {m.num_dims} dimension(s) and {m.num_symbols} symbol(s), but "
                f"{len(dims)} and {len(syms)} operand(s) are given",
                start,
            )
        if name == "affine.apply" and len(m.results) != 1:
            raise lex.error(f"the map of affine.apply has {len(m.results)} results, not one", start)
        self.check_types([*dims, *syms], [ScalarType("index")] * (len(dims) + len(syms)), start)
        attrs: dict[str, Attr] = {"map": m}
        self.opt_attr_dict(attrs)
        return self.make_op(name, [*dims, *syms], [ScalarType("index")], attributes=attrs)

    # -------------------------------------------------------------------------------- tensor
    def _p_empty(self, name: str, start: int) -> Operation:
        """``tensor.empty(%d, ...) [attr-dict] : T``: one index operand per dynamic dim of T."""
        lex = self.lex
        lex.expect("(")
        dims = self.operand_list()
        lex.expect(")")
        attrs: dict[str, Attr] = {}
        self.opt_attr_dict(attrs)
        lex.expect(":")
        t = self.parse_type()
        n = t.num_dynamic if isinstance(t, TensorType) else 0
        if len(dims) != n:
            raise lex.error(f"tensor.empty of {self.type_str(t)} needs {n} dynamic size(s), found {len(dims)}", start)
        self.check_types(dims, [ScalarType("index")] * n, start)
        return self.make_op(name, dims, [t], attributes=attrs)

    def _p_extract_slice(self, name: str, start: int) -> Operation:
        lex = self.lex
        src = self.operand()
        offs, d1 = self.static_list()
        sizes, d2 = self.static_list()
        strides, d3 = self.static_list()
        attrs: dict[str, Attr] = {}
        self.opt_attr_dict(attrs)
        lex.expect(":")
        self.check_types([src], [self.parse_type()], start)
        lex.expect("to")
        res = self.parse_type()
        attrs |= {"static_offsets": make_int_list(offs), "static_sizes": make_int_list(sizes),
                  "static_strides": make_int_list(strides)}  # fmt: skip
        self._check_slice(src.type, offs, sizes, strides, start)
        return self.make_op(name, [src, *d1, *d2, *d3], [res], attributes=attrs)

    def _p_insert_slice(self, name: str, start: int) -> Operation:
        lex = self.lex
        src = self.operand()
        lex.expect("into")
        dst = self.operand()
        offs, d1 = self.static_list()
        sizes, d2 = self.static_list()
        strides, d3 = self.static_list()
        attrs: dict[str, Attr] = {}
        self.opt_attr_dict(attrs)
        lex.expect(":")
        src_t = self.parse_type()
        lex.expect("into")
        dst_t = self.parse_type()
        self.check_types([src, dst], [src_t, dst_t], start)
        attrs |= {"static_offsets": make_int_list(offs), "static_sizes": make_int_list(sizes),
                  "static_strides": make_int_list(strides)}  # fmt: skip
        self._check_slice(dst_t, offs, sizes, strides, start)
        return self.make_op(name, [src, dst, *d1, *d2, *d3], [dst_t], attributes=attrs)

    def _check_slice(self, src: Type, offs: list[int], sizes: list[int], strides: list[int], pos: int) -> None:
        if not isinstance(src, TensorType):
            return
        if not (len(offs) == len(sizes) == len(strides) == src.rank):
            raise self.lex.error(
                f"slice has {len(offs)} offsets, {len(sizes)} sizes and {len(strides)} strides for a "
                f"rank-{src.rank} tensor",
                pos,
            )
        for d, (o, s, st, dim) in enumerate(zip(offs, sizes, strides, src.shape, strict=True)):
            if DYNAMIC in (o, s, st):
                continue
            if o < 0 or s < 0 or st < 1 or (s > 0 and dim is not None and o + (s - 1) * st >= dim):
                raise self.lex.error(
                    f"slice out of bounds in dim {d}: offset {o}, size {s}, stride {st} on a dimension of {dim}",
                    pos,
                )

    def _p_reshape(self, name: str, start: int) -> Operation:
        lex = self.lex
        src = self.operand()
        reassoc = self.parse_attribute()
        attrs: dict[str, Attr] = {"reassociation": reassoc}
        dyn: list[Value] = []
        if name.endswith("expand_shape"):
            lex.expect("output_shape")
            shape, dyn = self.static_list()
            attrs["static_output_shape"] = make_int_list(shape)
            self.check_types(dyn, [ScalarType("index")] * len(dyn), start)
        self.opt_attr_dict(attrs)
        lex.expect(":")
        self.check_types([src], [self.parse_type()], start)
        lex.expect("into")
        return self.make_op(name, [src, *dyn], [self.parse_type()], attributes=attrs)

    def _p_extract(self, name: str, start: int) -> Operation:
        lex = self.lex
        src = self.operand()
        lex.expect("[")
        idx = self.operand_list()
        lex.expect("]")
        lex.expect(":")
        t = self.parse_type()
        if not isinstance(t, TensorType):
            raise lex.error(f"tensor.extract needs a tensor type, found {self.type_str(t)}", start)
        self.check_types([src], [t], start)
        if len(idx) != t.rank:
            raise lex.error(f"tensor.extract of a rank-{t.rank} tensor needs {t.rank} indices, found {len(idx)}", start)
        self.check_types(idx, [ScalarType("index")] * len(idx), start)
        return self.make_op(name, [src, *idx], [t.element])

    def _p_dim(self, name: str, start: int) -> Operation:
        lex = self.lex
        src = self.operand()
        lex.expect(",")
        idx = self.operand()
        lex.expect(":")
        self.check_types([src, idx], [self.parse_type(), ScalarType("index")], start)
        return self.make_op(name, [src, idx], [ScalarType("index")])


def _pos(p: ParserBase, op: Operation) -> int:
    loc = op.loc
    if loc is None:
        return p.lex.pos
    return p.lex.pos_of(loc)


_HANDLERS: dict[str, Callable[[OpSyntax, str, int], Operation]] = {
    "func.func": OpSyntax._p_func,
    "util.func": OpSyntax._p_func,
    "arith.constant": OpSyntax._p_constant,
    "affine.apply": OpSyntax._p_affine,
    "affine.min": OpSyntax._p_affine,
    "affine.max": OpSyntax._p_affine,
    "tensor.empty": OpSyntax._p_empty,
    "tensor.extract_slice": OpSyntax._p_extract_slice,
    "tensor.insert_slice": OpSyntax._p_insert_slice,
    "tensor.collapse_shape": OpSyntax._p_reshape,
    "tensor.expand_shape": OpSyntax._p_reshape,
    "tensor.extract": OpSyntax._p_extract,
    "tensor.dim": OpSyntax._p_dim,
    FLOW_SLICE: parse_flow_slice,
    **IREE_READERS,
    **LINALG_READERS,
    **TENSOR_READERS,
}


# ------------------------------------------------------------------------------------ printing
# The writer side of the readers above: each function writes what follows the op name.
@prints("func.func", "util.func")
def _print_func(p: Printer, op: Operation, indent: str) -> str:
    """``[visibility] @name(%arg0: T [{attrs}], ...) [-> R] [attributes {...}] [{ body }]``."""
    a = op.attributes
    ft = function_type(op)
    vis = f" {attr(op, 'sym_visibility', StrAttr).value}" if "sym_visibility" in a else ""
    args = _func_args(p, op, ft)  # before the results: the order aliases are named in
    res = f" -> {p.results(list(ft.results))}" if ft.results else ""
    if len(ft.results) == 1 and isinstance(ft.results[0], TensorType):
        res = f" -> {p.type(ft.results[0])}"
    rest = p.extra_attrs(op, {"sym_name", "function_type", "sym_visibility", "arg_attrs"})
    attrs = f" attributes {p.dict(list(rest.items()))}" if rest else ""
    body = f" {p.region(op.regions[0], indent)}" if op.regions else ""
    return f"{vis} {symbol(sym_name(op))}({', '.join(args)}){res}{attrs}{body}"


def _func_args(p: Printer, op: Operation, ft: FunctionType) -> list[str]:
    """``%name: T`` per argument, with its attribute dict when it has one; a declaration's arguments as
    IREE prints them (``func.func``: bare types, ``util.func``: ``%argN: T``)."""
    entry = op.regions[0].entry if op.regions else None
    # one DictAttr per argument
    arg_attrs = cast("tuple[DictAttr, ...] | None", getattr(op.attributes.get("arg_attrs"), "items", None))
    args = []
    for i, t in enumerate(ft.inputs):
        name = f"%{entry.args[i].name}: " if entry else ("" if op.name == "func.func" else f"%arg{i}: ")
        extra = ""
        if arg_attrs is not None and arg_attrs[i].items:
            extra = " " + p.attr(arg_attrs[i])
        args.append(f"{name}{p.type(t)}{extra}")
    return args


@prints(*_RETURNS)
def _print_return(p: Printer, op: Operation, indent: str) -> str:
    """``%a, %b : T1, T2`` (nothing for no operands)."""
    if not op.operands:
        return ""
    return f" {p.values(op.operands)} : {p.types([v.type for v in op.operands])}"


@prints("arith.constant")
def _print_constant(p: Printer, op: Operation, indent: str) -> str:
    """``[{attrs}] value``: the value carries its type."""
    extra = p.attr_dict(p.extra_attrs(op, {"value"}))
    return f"{extra} {p.attr(op.attributes['value'])}"


@prints_dialect("arith", "math")
def _print_elementwise(p: Printer, op: Operation, indent: str) -> str:
    """``[pred,] %a, %b [fastmath<..>] [overflow<..>] [{attrs}] : T`` (casts: ``: T to T'``)."""
    a = op.attributes
    short = op.name.partition(".")[2]
    pred = f" {attr(op, 'predicate', StrAttr).value}," if "predicate" in a else ""
    fm = f" fastmath<{attr(op, 'fastmath', StrAttr).value}>" if "fastmath" in a else ""
    fm += f" overflow<{attr(op, 'overflow', StrAttr).value}>" if "overflow" in a else ""
    extra = p.attr_dict(p.extra_attrs(op, {"predicate", "fastmath", "overflow"}))
    ops_ = p.values(op.operands)
    if short in _CAST_OPS:
        return f" {ops_}{fm}{extra} : {p.types([v.type for v in op.operands])} to {p.type(op.result.type)}"
    if short in ("cmpf", "cmpi"):
        return f"{pred} {ops_}{fm}{extra} : {p.type(op.operands[0].type)}"
    if short == "select":
        c = op.operands[0].type
        if isinstance(c, TensorType):
            return f" {ops_}{extra} : {p.type(c)}, {p.type(op.result.type)}"
        return f" {ops_}{extra} : {p.type(op.result.type)}"
    if any(v.type != op.result.type for v in op.operands):
        return f" {ops_}{fm}{extra} : {p.types([v.type for v in op.operands])}"
    return f" {ops_}{fm}{extra} : {p.type(op.result.type)}"


@prints("affine.apply", "affine.min", "affine.max")
def _print_affine(p: Printer, op: Operation, indent: str) -> str:
    """``#map(%d, ...)[%s, ...] [{attrs}]`` (no ``[]`` without symbols, as MLIR prints it)."""
    m = attr(op, "map", AffineMapAttr)
    dims, syms = op.operands[: m.num_dims], op.operands[m.num_dims :]
    sym_s = f"[{p.values(syms)}]" if syms else ""
    return f" {p.attr(m)}({p.values(dims)}){sym_s}{p.attr_dict(p.extra_attrs(op, {'map'}))}"


@prints("tensor.empty")
def _print_empty(p: Printer, op: Operation, indent: str) -> str:
    return f"({p.values(op.operands)}){p.attr_dict(dict(op.attributes))} : {p.type(op.result.type)}"


_SLICE_KEYS = ("static_offsets", "static_sizes", "static_strides")


def _slice(p: Printer, op: Operation, dyn: list[Value]) -> str:
    """``[offsets] [sizes] [strides]`` then the attribute dict."""
    sl = " ".join(p.static(op, k, dyn) for k in _SLICE_KEYS)
    return sl + p.attr_dict(p.extra_attrs(op, set(_SLICE_KEYS)))


@prints("tensor.extract_slice")
def _print_extract_slice(p: Printer, op: Operation, indent: str) -> str:
    src = op.operands[0]
    sl = _slice(p, op, list(op.operands[1:]))
    return f" {p.value(src)}{sl} : {p.type(src.type)} to {p.type(op.result.type)}"


@prints("tensor.insert_slice")
def _print_insert_slice(p: Printer, op: Operation, indent: str) -> str:
    src = op.operands[0]
    sl = _slice(p, op, list(op.operands[2:]))
    return f" {p.value(src)} into {p.value(op.operands[1])}{sl} : {p.type(src.type)} into {p.type(op.result.type)}"


@prints(*TENSOR_RESHAPE_OPS)
def _print_reshape(p: Printer, op: Operation, indent: str) -> str:
    """``%x [[0, 1], [2]] [output_shape [..]] [{attrs}] : T into T'``."""
    reassoc = p.attr(op.attributes["reassociation"])
    shape = ""
    if op.name == "tensor.expand_shape":
        shape = f" output_shape {p.static(op, 'static_output_shape', list(op.operands[1:]))}"
    extra = p.attr_dict(p.extra_attrs(op, {"reassociation", "static_output_shape"}))
    src = op.operands[0]
    return f" {p.value(src)} {reassoc}{shape}{extra} : {p.type(src.type)} into {p.type(op.result.type)}"


@prints("tensor.extract")
def _print_extract(p: Printer, op: Operation, indent: str) -> str:
    return f" {p.value(op.operands[0])}[{p.values(op.operands[1:])}] : {p.type(op.operands[0].type)}"


@prints("tensor.dim")
def _print_dim(p: Printer, op: Operation, indent: str) -> str:
    return f" {p.values(op.operands)} : {p.type(op.operands[0].type)}"
