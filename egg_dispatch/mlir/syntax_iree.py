"""Custom syntax of IREE's own ops (encodings, flow, hal, util), read (``IreeSyntax``, with the generic
reader for unknown ops) and written (the ``_print_*`` functions at the end, registered into
``printer.OP_PRINTERS``)."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, cast

from egg_dispatch.mlir.ir import (
    ABI_SHELL_OPS,
    ArrayAttr,
    Attr,
    DenseAttr,
    DictAttr,
    IntAttr,
    OpaqueType,
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
from egg_dispatch.mlir.lexer import int_value
from egg_dispatch.mlir.literals import symbol, symbol_name
from egg_dispatch.mlir.ops import (
    TIED_OPERANDS,
    WORKLOAD,
    attr,
    base_operands,
    dim_group,
    dim_groups,
    make_int_list,
    set_dims,
    sym_name,
    tied_operands,
    workgroups_arguments,
    workload,
)
from egg_dispatch.mlir.parser_base import ParserBase
from egg_dispatch.mlir.printer import prints

if TYPE_CHECKING:
    from egg_dispatch.mlir.printer import Printer

__all__ = ["IREE_READERS", "UNARY_DIMS", "UNKNOWN", "IreeSyntax"]

UNARY_DIMS: dict[str, tuple[str, ...]] = {
    "iree_encoding.set_encoding": ("encoding",),
    "iree_encoding.unset_encoding": ("encoding", "result"),
    "flow.tensor.encode": ("source", "result"),
    "flow.tensor.reshape": ("source", "result"),
    "flow.tensor.bitcast": ("source", "result"),
    "iree_tensor_ext.bitcast": ("source", "result"),
    "iree_tensor_ext.compute_barrier.start": ("source",),
    "iree_tensor_ext.compute_barrier.end": ("source",),
}
"""The ``{...}`` size lists of each ``op %x : T -> T'`` op, in order (its ``DIM_SEGMENTS``):
``encoding`` (``encoding_dims{...}``), ``source`` (after T), ``result`` (after T')."""

_OPERAND_LISTS = ("ins", "outs")
"""Words that continue an unknown op on its next line (a structured op's ``ins(...)`` / ``outs(...)``)."""

UNKNOWN = OpaqueType("<unknown>")
"""Result type of an opaque op whose syntax does not say it; refined by the first typed use."""


class IreeSyntax(ParserBase):
    # ------------------------------------------------------------------------- encodings, flow
    def _p_unary_typed(self, name: str, start: int) -> Operation:
        """``op %x [encoding_dims{...}] [attr-dict] : T[{%d}] -> T'[{%d}]`` (set/unset_encoding,
        flow.tensor.encode / reshape / bitcast, compute barriers); which lists an op has: ``UNARY_DIMS``."""
        lex = self.lex
        src = self.operand()
        lists = UNARY_DIMS[name]
        groups: list[list[Value]] = []
        if "encoding" in lists:
            enc_dims: list[Value] = []
            if lex.accept("encoding_dims"):
                at = lex.expect("{").pos
                enc_dims = self.operand_list()
                lex.expect("}", "to close encoding_dims")
                self.check_types(enc_dims, [ScalarType("index")] * len(enc_dims), at)
            groups.append(enc_dims)
        attrs: dict[str, Attr] = {}
        self.opt_attr_dict(attrs)
        lex.expect(":")
        src_t = self.parse_type()
        self.check_types([src], [src_t], start)
        if "source" in lists:
            groups.append(self.parse_dims(src_t, "the source type"))
        lex.expect("->")
        res_t = self.parse_type()
        if "result" in lists:
            groups.append(self.parse_dims(res_t, "the result type"))
        return self.make_op(name, [src, *set_dims(attrs, groups)], [res_t], attributes=attrs)

    def _p_tie_shape(self, name: str, start: int) -> Operation:
        """``flow.tensor.tie_shape %x : tensor<?x..>{%d}``: %x, its dynamic sizes named."""
        lex = self.lex
        src = self.operand()
        attrs: dict[str, Attr] = {}
        self.opt_attr_dict(attrs)
        lex.expect(":")
        t = self.parse_type()
        self.check_types([src], [t], start)
        dims = self.parse_dims(t)
        return self.make_op(name, [src, *set_dims(attrs, [dims])], [t], attributes=attrs)

    def _p_tensor_load(self, name: str, start: int) -> Operation:
        """``flow.tensor.load %x[%i, ...] : tensor<?x..>{%d}`` (no ``[]`` for a 0-d %x): one element of %x
        read on the host (what ``tensor.extract`` between dispatches becomes); operands %x, the indices, then
        the sizes."""
        lex = self.lex
        src = self.operand()
        idx: list[Value] = []
        if lex.accept("["):  # none for a 0-d tensor
            idx = self.operand_list("]")
            lex.expect("]")
        attrs: dict[str, Attr] = {}
        self.opt_attr_dict(attrs)
        lex.expect(":")
        t = self.parse_type()
        if not isinstance(t, TensorType):
            raise lex.error(f"flow.tensor.load needs a tensor type, found {self.type_str(t)}", start)
        self.check_types([src], [t], start)
        dims = self.parse_dims(t)
        return self.make_op(name, [src, *idx, *set_dims(attrs, [dims])], [t.element], attributes=attrs)

    def _p_transfer(self, name: str, start: int) -> Operation:
        """``flow.tensor.transfer %x : tensor<?x..>{%d} to TARGET [attributes {..}]``: %x moved to a
        device (``target``: a string or an affinity attribute), its sizes unchanged."""
        lex = self.lex
        src = self.operand()
        lex.expect(":")
        t = self.parse_type()
        self.check_types([src], [t], start)
        dims = self.parse_dims(t)
        lex.expect("to", "before the transfer's target")
        attrs: dict[str, Attr] = {"target": self.parse_attribute()}
        if lex.accept("attributes"):
            attrs.update(self.parse_dict().items)
        return self.make_op(name, [src, *set_dims(attrs, [dims])], [t], attributes=attrs)

    def _p_buffer_view_dim(self, name: str, start: int) -> Operation:
        """``hal.buffer_view.dim<%view : !hal.buffer_view>[i] : index``: an argument's dynamic size."""
        lex = self.lex
        lex.expect("<")
        view = self.operand()
        lex.expect(":")
        self.check_types([view], [self.parse_type()], start)
        lex.expect(">")
        lex.expect("[")
        index = int_value(lex, lex.expect_kind("int", "a dimension index"))
        lex.expect("]")
        attrs: dict[str, Attr] = {"index": IntAttr(index)}
        self.opt_attr_dict(attrs)
        lex.expect(":")
        return self.make_op(name, [view], [self.parse_type()], attributes=attrs)

    def _p_workload_ordinal(self, name: str, start: int) -> Operation:
        """``iree_tensor_ext.dispatch.workload.ordinal %arg, N : index``: %arg, the N-th workload entry."""
        lex = self.lex
        v = self.operand()
        lex.expect(",")
        attrs: dict[str, Attr] = {"ordinal": IntAttr(int_value(lex, lex.expect_kind("int", "a workload ordinal")))}
        self.opt_attr_dict(attrs)
        lex.expect(":")
        t = self.parse_type()
        self.check_types([v], [t], start)
        return self.make_op(name, [v], [t], attributes=attrs)

    def _p_assume_int(self, name: str, start: int) -> Operation:
        """``util.assume.int %a<umin = 1, umax = 16, udiv = 8>, %b[<...>, <...>] : index, index``: the
        operands, with what may be assumed of them (one row, or one per call site: any may hold)."""
        lex = self.lex
        values: list[Value] = []
        rows_per: list[Attr] = []
        while True:
            values.append(self.operand())
            rows: list[Attr] = []
            if lex.accept("["):
                while not lex.at("]"):
                    rows.append(self._assumption_row())
                    if not lex.accept(","):
                        break
                lex.expect("]")
                rows_per.append(ArrayAttr(tuple(rows)))
            else:
                rows_per.append(self._assumption_row())
            if not lex.accept(","):
                break
        attrs: dict[str, Attr] = {"assumptions": ArrayAttr(tuple(rows_per))}
        self.opt_attr_dict(attrs)
        lex.expect(":")
        types = self.parse_type_list()
        self.check_types(values, types, start)
        return self.make_op(name, values, types, attributes=attrs)

    def _assumption_row(self) -> DictAttr:
        lex = self.lex
        at = lex.expect("<").pos
        items: list[tuple[str, Attr]] = []
        while not lex.at(">"):
            key = lex.expect_kind("ident", "umin, umax or udiv").text
            if key not in ("umin", "umax", "udiv"):
                raise lex.error(f"unknown util.assume.int field '{key}' (expected umin, umax or udiv)", at)
            lex.expect("=")
            value = int_value(lex, lex.expect_kind("int", "an integer"))
            if value < 0 or (key == "udiv" and value == 0):
                need = "positive" if key == "udiv" else ">= 0"
                raise lex.error(f"util.assume.int {key} must be {need}, not {value}", at)
            items.append((key, IntAttr(value)))
            if not lex.accept(","):
                break
        lex.expect(">", "to close the assumption")
        return DictAttr(tuple(items))

    def _p_hal_tensor(self, name: str, start: int) -> Operation:
        """``hal.tensor.import [wait(%fence) =>] %src ["name"] {attrs} : !hal.buffer_view -> tensor<..>``
        and ``hal.tensor.export %t ["name"] : tensor<..> -> !hal.buffer_view``. The async ABI's wait
        fence is a second operand, flagged by the ``wait`` attribute."""
        lex = self.lex
        attrs: dict[str, Attr] = {}
        fence: list[Value] = []
        if name == "hal.tensor.import" and lex.accept("wait"):
            lex.expect("(")
            fence = [self.operand()]
            lex.expect(")")
            lex.expect("=")
            lex.expect(">", "after 'wait(...) ='")
            attrs["wait"] = UnitAttr()
        src = self.operand()
        if lex.peek().kind == "string":
            attrs["name"] = StrAttr(lex.next().text[1:-1])
        self.opt_attr_dict(attrs)
        lex.expect(":")
        src_t = self.parse_type()
        self.check_types([src], [src_t], start)
        dims = self.parse_dims(src_t, "the exported type") if name == "hal.tensor.export" else []
        lex.expect("->")
        res_t = self.parse_type()
        if name == "hal.tensor.import":
            dims = self.parse_dims(res_t, "the imported type")
        return self.make_op(name, [src, *fence, *set_dims(attrs, [dims])], [res_t], attributes=attrs)

    def _p_hal_barrier(self, name: str, start: int) -> Operation:
        """``hal.tensor.barrier join(%a, %b : T1, T2) => %fence : !hal.fence``: the tensors, once ready."""
        lex = self.lex
        lex.expect("join")
        values, types = self.typed_operands(start)
        lex.expect("=")
        lex.expect(">", "after 'join(...) ='")
        fence = self.operand()
        attrs: dict[str, Attr] = {}
        self.opt_attr_dict(attrs)
        lex.expect(":")
        self.check_types([fence], [self.parse_type()], start)
        return self.make_op(name, [*values, fence], types, attributes=attrs)

    def _p_tensor_constant(self, name: str, start: int) -> Operation:
        """``flow.tensor.constant #flow.parameter.named<...> : tensor<..>`` (or a dense literal)."""
        lex = self.lex
        attrs: dict[str, Attr] = {}
        self.opt_attr_dict(attrs)
        attrs["value"] = self.parse_attribute()
        lex.expect(":")
        typ = self.parse_type()
        return self.make_op(name, [], [typ], attributes=attrs)

    def _workload(self, attrs: dict[str, Attr]) -> list[Value]:
        """An optional ``[%w, ...]`` workload (index values), recorded under ``WORKLOAD``."""
        lex = self.lex
        if not lex.at("["):
            return []
        at = lex.expect("[").pos
        values = self.operand_list()
        lex.expect("]", "to close the workload")
        self.check_types(values, [ScalarType("index")] * len(values), at)
        attrs[WORKLOAD] = IntAttr(len(values))
        return values

    def _types_with_dims(self) -> tuple[list[Type], list[list[Value]]]:
        """``(T1{%d}, T2)`` or a single ``T{%d}``: the types and each one's dynamic sizes."""
        types, dims, _ = self._workgroups_results(None)
        return types, dims

    def _workgroups_results(self, captured: list[Value] | None) -> tuple[list[Type], list[list[Value]], list[int]]:
        """``(T{%d}, %x{%d})`` or a single one: each result's type and dynamic sizes, and the captured
        operand it is tied to (``%x``: the result is that operand, updated in place; -1: untied).
        ``captured`` None: types only (a region's results, a workgroups op's operand types)."""
        lex = self.lex
        types: list[Type] = []
        dims: list[list[Value]] = []
        tied: list[int] = []
        paren = lex.accept("(")
        while not (paren and lex.at(")")):
            if captured is not None and lex.peek().kind == "value":
                tok = lex.peek()
                v = self.operand()
                if v not in captured:
                    raise lex.error(f"a tied result must name a captured operand, and {tok.text} is not one", tok.pos)
                tied.append(captured.index(v))
                types.append(v.type)
            else:
                tied.append(-1)
                types.append(self.parse_type())
            dims.append(self.parse_dims(types[-1]))
            if not (paren and lex.accept(",")):
                break
        if paren:
            lex.expect(")")
        return types, dims, tied

    def _p_dispatch_region(self, name: str, start: int) -> Operation:
        lex = self.lex
        attrs: dict[str, Attr] = {}
        wl = self._workload(attrs)
        lex.expect("->")
        results, dims = self._types_with_dims()
        if lex.accept("attributes"):
            attrs.update(self.parse_dict().items)
        regions = [self.parse_region()]
        if lex.accept("count"):
            regions.append(self._count_region(isolated=False))  # IREE's count() uses values from above
        return self.make_op(name, [*wl, *set_dims(attrs, dims)], results, attributes=attrs, regions=regions)

    def _count_region(self, isolated: bool = True) -> Region:
        lex = self.lex
        lex.expect("(")
        args: list[tuple[str, Type, int]] = []
        while not lex.at(")"):
            t = lex.expect_kind("value", "a workload argument")
            lex.expect(":")
            args.append((t.text[1:], self.parse_type(), t.pos))
            if not lex.accept(","):
                break
        lex.expect(")")
        lex.expect("->")
        self.parse_paren_types()
        return self.parse_region(args, isolated=isolated)

    def _p_workgroups(self, name: str, start: int) -> Operation:
        lex = self.lex
        attrs: dict[str, Attr] = {}
        wl = self._workload(attrs)
        lex.expect("(")
        captured = self.operand_list()
        lex.expect(")")
        lex.expect(":")
        in_types, in_dims = self._types_with_dims()
        self.check_types(captured, in_types, start)
        lex.expect("->")
        results, res_dims, tied = self._workgroups_results(captured)
        if any(i >= 0 for i in tied):
            attrs[TIED_OPERANDS] = make_int_list(tied)
        dims = set_dims(attrs, [*in_dims, *res_dims])
        if lex.accept("attributes"):
            attrs.update(self.parse_dict().items)
        lex.expect("=")
        lex.expect("(")
        args: list[tuple[str, Type, int]] = []
        while not lex.at(")"):
            t = lex.expect_kind("value", "a dispatch binding")
            lex.expect(":")
            args.append((t.text[1:], self.parse_type(), t.pos))
            if not lex.accept(","):
                break
        lex.expect(")")
        regions = [self.parse_region(args, isolated=True)]
        if lex.accept("count"):
            regions.append(self._count_region())
        return self.make_op(name, [*wl, *captured, *dims], results, attributes=attrs, regions=regions)

    def _p_dispatch_tensor(self, name: str, start: int) -> Operation:
        lex = self.lex
        operands = [self.operand()]
        if name.endswith("store"):
            lex.expect(",")
            operands.append(self.operand())
        attrs: dict[str, Attr] = {}
        dyn: list[Value] = []
        for key in ("offsets", "sizes", "strides"):
            lex.expect(",")
            lex.expect(key)
            lex.expect("=")
            static, d = self.static_list()
            dyn += d
            attrs[f"static_{key}"] = make_int_list(static)
        lex.expect(":")
        t_in = self.parse_type()
        binding_dims = [] if name.endswith("store") else self.parse_dims(t_in, "the binding type")
        lex.expect("->")
        t_out = self.parse_type()
        if name.endswith("store"):
            binding_dims = self.parse_dims(t_out, "the binding type")
            self.check_types(operands, [t_in, t_out], start)
            return self.make_op(name, operands + dyn + set_dims(attrs, [binding_dims]), [], attributes=attrs)
        self.check_types(operands, [t_in], start)
        return self.make_op(name, operands + dyn + set_dims(attrs, [binding_dims]), [t_out], attributes=attrs)

    # -------------------------------------------------------------------------------- util
    def _p_global(self, name: str, start: int) -> Operation:
        lex = self.lex
        attrs: dict[str, Attr] = {}
        while lex.peek().kind == "ident" and lex.peek().text in ("public", "private", "nested", "mutable"):
            word = lex.next().text
            attrs["is_mutable" if word == "mutable" else "sym_visibility"] = (
                UnitAttr() if word == "mutable" else StrAttr(word)
            )
        attrs["sym_name"] = StrAttr(symbol_name(lex, lex.expect_kind("symbol", "a global name (@name)")))
        self.opt_attr_dict(attrs)
        typ: Type | None = None
        if lex.accept("="):
            alias = lex.peek().text
            init = self.parse_attribute()
            attrs["initial_value"] = init
            if isinstance(init, DenseAttr):
                typ = init.type
            elif alias in self.attr_alias_types:
                typ = self.attr_alias_types[alias]
        if lex.accept(":"):
            typ = self.parse_type()
        if typ is None:
            raise lex.error("expected ': type' for util.global", start)
        attrs["type"] = TypeAttr(typ)
        return self.make_op(name, [], [], attributes=attrs)

    def _p_initializer(self, name: str, start: int) -> Operation:
        attrs: dict[str, Attr] = {}
        if self.lex.accept("attributes"):
            attrs.update(self.parse_dict().items)
        return self.make_op(name, [], [], attributes=attrs, regions=[self.parse_region(isolated=True)])

    def _p_global_load(self, name: str, start: int) -> Operation:
        lex = self.lex
        attrs: dict[str, Attr] = {}
        if lex.accept("immutable"):
            attrs["is_immutable"] = UnitAttr()
        attrs["global"] = SymbolRefAttr(symbol_name(lex, lex.expect_kind("symbol", "a global name")))
        self.opt_attr_dict(attrs)
        lex.expect(":")
        return self.make_op(name, [], [self.parse_type()], attributes=attrs)

    def _p_global_store(self, name: str, start: int) -> Operation:
        lex = self.lex
        v = self.operand()
        lex.expect(",")
        attrs: dict[str, Attr] = {"global": SymbolRefAttr(symbol_name(lex, lex.expect_kind("symbol", "a global name")))}
        lex.expect(":")
        self.check_types([v], [self.parse_type()], start)
        return self.make_op(name, [v], [], attributes=attrs)

    # ------------------------------------------------------------------------------- opaque
    def parse_opaque(self, name: str, start: int, n_results: int) -> Operation:
        """An op we do not model: keep its text, find the values it uses and its result types."""
        lex = self.lex
        text = lex.text
        pos = lex.save()
        end = pos
        depth = 0
        operands: list[Value] = []
        colon_at: int | None = None
        while True:
            tok = lex.peek()
            if tok.kind == "eof":
                if depth:
                    raise lex.error(f"unterminated '{name}' (reached the end of the file)", start)
                break
            newline_before = "\n" in text[end : tok.pos]
            if depth == 0 and newline_before and tok.text not in ("{", "(", "[", "<", ":", "->", ",", *_OPERAND_LISTS):
                break
            if depth == 0 and tok.text == "}":
                break
            lex.next()
            if tok.text in ("(", "[", "{", "<"):
                depth += 1
            elif tok.text in (")", "]", "}", ">"):
                depth -= 1
            elif tok.kind == "value" and depth >= 0:
                try:
                    v = self.lookup(tok.text, tok.pos)
                except Exception:
                    v = None
                if v is not None and v not in operands:
                    operands.append(v)
            elif tok.text == ":" and depth == 0:
                colon_at = lex.pos
            end = lex.pos
        lex.restore(end)
        result_types: list[Type] = [UNKNOWN] * n_results
        if colon_at is not None and n_results:
            sub = lex.save()
            n_pending = len(self.pending_resources)
            try:
                lex.restore(colon_at)
                types = self.parse_type_list() if not lex.at("(") else self.parse_paren_types()
                if lex.accept("->") or lex.accept("to") or lex.accept("into"):
                    types = self.parse_result_types()
                if len(types) >= n_results:
                    result_types = types[-n_results:]
            except Exception:
                pass
            del self.pending_resources[n_pending:]
            lex.restore(sub)
        if name not in ABI_SHELL_OPS:
            self.warnings.append(
                f"{lex.loc(start)}: warning: '{name}' is not modelled; kept as an opaque op (a barrier for every rule)"
            )
        op = self.make_op(name, operands, result_types)
        op.opaque_text = self.inline_aliases(text[pos:end], pos).strip()  # ``pos`` is just past the op name
        return op


IREE_READERS: dict[str, Callable[[IreeSyntax, str, int], Operation]] = {
    "iree_encoding.set_encoding": IreeSyntax._p_unary_typed,
    "iree_encoding.unset_encoding": IreeSyntax._p_unary_typed,
    "flow.tensor.encode": IreeSyntax._p_unary_typed,
    "flow.tensor.reshape": IreeSyntax._p_unary_typed,
    "flow.tensor.bitcast": IreeSyntax._p_unary_typed,
    "iree_tensor_ext.bitcast": IreeSyntax._p_unary_typed,
    "flow.tensor.tie_shape": IreeSyntax._p_tie_shape,
    "flow.tensor.transfer": IreeSyntax._p_transfer,
    "flow.tensor.load": IreeSyntax._p_tensor_load,
    "hal.buffer_view.dim": IreeSyntax._p_buffer_view_dim,
    "iree_tensor_ext.dispatch.workload.ordinal": IreeSyntax._p_workload_ordinal,
    "util.assume.int": IreeSyntax._p_assume_int,
    "iree_tensor_ext.compute_barrier.start": IreeSyntax._p_unary_typed,
    "iree_tensor_ext.compute_barrier.end": IreeSyntax._p_unary_typed,
    "hal.tensor.import": IreeSyntax._p_hal_tensor,
    "hal.tensor.export": IreeSyntax._p_hal_tensor,
    "hal.tensor.barrier": IreeSyntax._p_hal_barrier,
    "flow.tensor.constant": IreeSyntax._p_tensor_constant,
    "flow.dispatch.region": IreeSyntax._p_dispatch_region,
    "flow.dispatch.workgroups": IreeSyntax._p_workgroups,
    "iree_tensor_ext.dispatch.tensor.load": IreeSyntax._p_dispatch_tensor,
    "iree_tensor_ext.dispatch.tensor.store": IreeSyntax._p_dispatch_tensor,
    "util.global": IreeSyntax._p_global,
    "util.initializer": IreeSyntax._p_initializer,
    "util.global.load": IreeSyntax._p_global_load,
    "util.global.store": IreeSyntax._p_global_store,
}
"""Op name -> the method of ``IreeSyntax`` that reads it (``syntax.OpSyntax`` dispatches through it)."""


# ------------------------------------------------------------------------------------ printing
# The writer side of the readers above: each function writes what follows the op name.
@prints(*UNARY_DIMS)
def _print_unary_typed(p: Printer, op: Operation, indent: str) -> str:
    """``%x [encoding_dims{..}] [{attrs}] : T[{%d}] -> T'[{%d}]``, the lists ``UNARY_DIMS`` names."""
    src = op.operands[0]
    lists = dict(zip(UNARY_DIMS[op.name], range(3), strict=False))

    def group(key: str) -> list[Value]:
        return dim_group(op, lists[key]) if key in lists else []

    enc = group("encoding")
    enc_s = f" encoding_dims{{{p.values(enc)}}}" if enc else ""
    src_t = p.type(src.type) + p.dims(group("source"))
    res_t = p.type(op.result.type) + p.dims(group("result"))
    return f" {p.value(src)}{enc_s}{p.attr_dict(p.extra_attrs(op, set()))} : {src_t} -> {res_t}"


@prints("flow.tensor.transfer")
def _print_transfer(p: Printer, op: Operation, indent: str) -> str:
    src = op.operands[0]
    rest = p.extra_attrs(op, {"target"})
    extra = f" attributes {p.dict(list(rest.items()))}" if rest else ""
    return f" {p.value(src)} : {p.type(src.type)}{p.dims(dim_group(op, 0))} to {p.attr(op.attributes['target'])}{extra}"


@prints("flow.tensor.load")
def _print_tensor_load(p: Printer, op: Operation, indent: str) -> str:
    src, dims = op.operands[0], dim_group(op, 0)
    idx = op.operands[1 : len(op.operands) - len(dims)]
    extra = p.attr_dict(p.extra_attrs(op, set()))
    at = f"[{p.values(idx)}]" if idx else ""
    return f" {p.value(src)}{at}{extra} : {p.type(src.type)}{p.dims(dims)}"


@prints("flow.tensor.tie_shape")
def _print_tie_shape(p: Printer, op: Operation, indent: str) -> str:
    src = op.operands[0]
    extra = p.attr_dict(p.extra_attrs(op, set()))
    return f" {p.value(src)}{extra} : {p.type(src.type)}{p.dims(dim_group(op, 0))}"


@prints("hal.buffer_view.dim")
def _print_buffer_view_dim(p: Printer, op: Operation, indent: str) -> str:
    view = op.operands[0]
    extra = p.attr_dict(p.extra_attrs(op, {"index"}))
    index = attr(op, "index", IntAttr).value
    return f"<{p.value(view)} : {p.type(view.type)}>[{index}]{extra} : {p.type(op.result.type)}"


@prints("iree_tensor_ext.dispatch.workload.ordinal")
def _print_workload_ordinal(p: Printer, op: Operation, indent: str) -> str:
    extra = p.attr_dict(p.extra_attrs(op, {"ordinal"}))
    return f" {p.value(op.operands[0])}, {attr(op, 'ordinal', IntAttr).value}{extra} : {p.type(op.result.type)}"


@prints("util.assume.int")
def _print_assume_int(p: Printer, op: Operation, indent: str) -> str:
    parts = []
    for v, rows in zip(op.operands, attr(op, "assumptions", ArrayAttr).items, strict=True):
        if isinstance(rows, DictAttr):
            parts.append(p.value(v) + _assumption(rows))
        else:  # one row per call site
            parts.append(p.value(v) + "[" + ", ".join(_assumption(r) for r in cast(ArrayAttr, rows).items) + "]")
    extra = p.attr_dict(p.extra_attrs(op, {"assumptions"}))
    return f" {', '.join(parts)}{extra} : {p.types([r.type for r in op.results])}"


def _assumption(row: object) -> str:
    items = getattr(row, "items", ())
    return "<" + ", ".join(f"{k} = {v.value}" for k, v in items) + ">"


@prints("hal.tensor.import", "hal.tensor.export")
def _print_hal_tensor(p: Printer, op: Operation, indent: str) -> str:
    a = op.attributes
    src = op.operands[0]
    wait = f" wait({p.value(op.operands[1])}) =>" if "wait" in a else ""
    name = f' "{attr(op, "name", StrAttr).value}"' if "name" in a else ""
    extra = p.attr_dict(p.extra_attrs(op, {"name", "wait"}))
    dims = p.dims(dim_group(op, 0))
    if op.name == "hal.tensor.import":
        return f"{wait} {p.value(src)}{name}{extra} : {p.type(src.type)} -> {p.type(op.result.type)}{dims}"
    return f"{wait} {p.value(src)}{name}{extra} : {p.type(src.type)}{dims} -> {p.type(op.result.type)}"


@prints("hal.tensor.barrier")
def _print_hal_barrier(p: Printer, op: Operation, indent: str) -> str:
    joined, fence = op.operands[:-1], op.operands[-1]
    extra = p.attr_dict(dict(op.attributes))
    return (
        f" join({p.values(joined)} : {p.types([v.type for v in joined])}) => {p.value(fence)}{extra}"
        f" : {p.type(fence.type)}"
    )


@prints("flow.tensor.constant")
def _print_tensor_constant(p: Printer, op: Operation, indent: str) -> str:
    extra = p.attr_dict(p.extra_attrs(op, {"value"}))
    return f"{extra} {p.attr(op.attributes['value'])} : {p.type(op.result.type)}"


def _workload_and_attrs(p: Printer, op: Operation, spelled: frozenset[str] = frozenset()) -> tuple[str, str]:
    """``[%w, ...]`` (when the op has a workload) and `` attributes {..}`` (when it has others than the
    ``spelled`` ones)."""
    rest = p.extra_attrs(op, set(spelled))
    attrs = f" attributes {p.dict(list(rest.items()))}" if rest else ""
    wl = f"[{p.values(workload(op))}]" if WORKLOAD in op.attributes else ""
    return wl, attrs


def _count(p: Printer, op: Operation, indent: str) -> str:
    """The workgroup count region `` count(%a: index, ..) -> (index, index, index) {..}``, if any."""
    if len(op.regions) < 2:
        return ""
    r = op.regions[1]
    args = ", ".join(f"%{v.name}: {p.type(v.type)}" for v in r.entry.args)
    return f" count({args}) -> (index, index, index) {p.region(r, indent)}"


@prints("flow.dispatch.region")
def _print_dispatch_region(p: Printer, op: Operation, indent: str) -> str:
    wl, attrs = _workload_and_attrs(p, op)
    groups = dim_groups(op) or [[] for _ in op.results]
    results = ", ".join(p.type(r.type) + p.dims(d) for r, d in zip(op.results, groups, strict=True))
    return f"{wl} -> ({results}){attrs} {p.region(op.regions[0], indent)}{_count(p, op, indent)}"


@prints("flow.dispatch.workgroups")
def _print_workgroups(p: Printer, op: Operation, indent: str) -> str:
    captured = workgroups_arguments(op)
    groups = dim_groups(op) or [[] for _ in [*captured, *op.results]]
    ins_t = ", ".join(p.type(v.type) + p.dims(d) for v, d in zip(captured, groups, strict=False))
    tied = tied_operands(op)
    res_ts = [
        (p.value(captured[t]) if t is not None else p.type(r.type)) + p.dims(d)
        for r, t, d in zip(op.results, tied, groups[len(captured) :], strict=True)
    ]
    res_t = res_ts[0] if len(res_ts) == 1 else "(" + ", ".join(res_ts) + ")"
    bindings = ", ".join(f"%{v.name}: {p.type(v.type)}" for v in op.regions[0].entry.args)
    wl, attrs = _workload_and_attrs(p, op, frozenset({TIED_OPERANDS}))
    return (f"{wl}({p.values(captured)}) : ({ins_t}) -> {res_t}{attrs} =\n"
            f"{indent}    ({bindings}) {p.region(op.regions[0], indent)}{_count(p, op, indent)}")  # fmt: skip


@prints("iree_tensor_ext.dispatch.tensor.load", "iree_tensor_ext.dispatch.tensor.store")
def _print_dispatch_tensor(p: Printer, op: Operation, indent: str) -> str:
    store = op.name.endswith("store")
    fixed = op.operands[:2] if store else op.operands[:1]
    dyn = list(base_operands(op)[len(fixed) :])
    sl = ", ".join(f"{k} = {p.static(op, f'static_{k}', dyn)}" for k in ("offsets", "sizes", "strides"))
    dims = p.dims(dim_group(op, 0))
    if store:
        return f" {p.values(fixed)}, {sl} : {p.type(fixed[0].type)} -> {p.type(fixed[1].type)}{dims}"
    return f" {p.values(fixed)}, {sl} : {p.type(fixed[0].type)}{dims} -> {p.type(op.result.type)}"


@prints("util.global")
def _print_global(p: Printer, op: Operation, indent: str) -> str:
    a = op.attributes
    vis = f" {attr(op, 'sym_visibility', StrAttr).value}" if "sym_visibility" in a else ""
    mut = " mutable" if "is_mutable" in a else ""
    extra = p.attr_dict(p.extra_attrs(op, {"sym_visibility", "is_mutable", "sym_name", "type", "initial_value"}))
    typ = attr(op, "type", TypeAttr).type
    init = a.get("initial_value")
    if init is None:
        tail = f" : {p.type(typ)}"
    elif isinstance(init, DenseAttr):
        tail = f" = {p.attr(init)}"
    else:
        tail = f" = {p.attr(init)} : {p.type(typ)}"
    return f"{vis}{mut} {symbol(sym_name(op))}{extra}{tail}"


@prints("util.initializer")
def _print_initializer(p: Printer, op: Operation, indent: str) -> str:
    a = op.attributes
    attrs = f" attributes {p.dict(list(a.items()))}" if a else ""
    return f"{attrs} {p.region(op.regions[0], indent)}"


@prints("util.global.load")
def _print_global_load(p: Printer, op: Operation, indent: str) -> str:
    imm = " immutable" if "is_immutable" in op.attributes else ""
    extra = p.attr_dict(p.extra_attrs(op, {"is_immutable", "global"}))
    return f"{imm} {symbol(attr(op, 'global', SymbolRefAttr).name)}{extra} : {p.type(op.result.type)}"


@prints("util.global.store")
def _print_global_store(p: Printer, op: Operation, indent: str) -> str:
    v = op.operands[0]
    return f" {p.value(v)}, {symbol(attr(op, 'global', SymbolRefAttr).name)} : {p.type(v.type)}"
