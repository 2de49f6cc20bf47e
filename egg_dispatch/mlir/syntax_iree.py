"""Custom syntax of IREE's own ops (encodings, flow, hal, util) and the generic reader for unknown ops."""

from __future__ import annotations

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
    Type,
    TypeAttr,
    UnitAttr,
    Value,
)
from egg_dispatch.mlir.lexer import int_value
from egg_dispatch.mlir.literals import symbol_name
from egg_dispatch.mlir.ops import WORKLOAD, make_int_list, set_dims
from egg_dispatch.mlir.parser_base import ParserBase

__all__ = ["UNARY_DIMS", "UNKNOWN", "IreeSyntax"]

UNARY_DIMS: dict[str, tuple[str, ...]] = {
    "iree_encoding.set_encoding": ("encoding",),
    "iree_encoding.unset_encoding": ("encoding", "result"),
    "flow.tensor.encode": ("source", "result"),
    "flow.tensor.reshape": ("source", "result"),
    "iree_tensor_ext.compute_barrier.start": ("source",),
    "iree_tensor_ext.compute_barrier.end": ("source",),
}
"""The ``{...}`` size lists of each ``op %x : T -> T'`` op, in order (its ``DIM_SEGMENTS``):
``encoding`` (``encoding_dims{...}``), ``source`` (after T), ``result`` (after T')."""

UNKNOWN = OpaqueType("<unknown>")
"""Result type of an opaque op whose syntax does not say it; refined by the first typed use."""


class IreeSyntax(ParserBase):
    # ------------------------------------------------------------------------- encodings, flow
    def _p_unary_typed(self, name: str, start: int) -> Operation:
        """``op %x [encoding_dims{...}] [attr-dict] : T[{%d}] -> T'[{%d}]`` (set/unset_encoding,
        flow.tensor.encode / reshape, compute barriers); which lists an op has: ``UNARY_DIMS``."""
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
        self._opt_attr_dict(attrs)
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
        self._opt_attr_dict(attrs)
        lex.expect(":")
        t = self.parse_type()
        self.check_types([src], [t], start)
        dims = self.parse_dims(t)
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
        self._opt_attr_dict(attrs)
        lex.expect(":")
        return self.make_op(name, [view], [self.parse_type()], attributes=attrs)

    def _p_workload_ordinal(self, name: str, start: int) -> Operation:
        """``iree_tensor_ext.dispatch.workload.ordinal %arg, N : index``: %arg, the N-th workload entry."""
        lex = self.lex
        v = self.operand()
        lex.expect(",")
        attrs: dict[str, Attr] = {"ordinal": IntAttr(int_value(lex, lex.expect_kind("int", "a workload ordinal")))}
        self._opt_attr_dict(attrs)
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
        self._opt_attr_dict(attrs)
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
        self._opt_attr_dict(attrs)
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
        values, types = self._typed_operands(start)
        lex.expect("=")
        lex.expect(">", "after 'join(...) ='")
        fence = self.operand()
        attrs: dict[str, Attr] = {}
        self._opt_attr_dict(attrs)
        lex.expect(":")
        self.check_types([fence], [self.parse_type()], start)
        return self.make_op(name, [*values, fence], types, attributes=attrs)

    def _p_tensor_constant(self, name: str, start: int) -> Operation:
        """``flow.tensor.constant #flow.parameter.named<...> : tensor<..>`` (or a dense literal)."""
        lex = self.lex
        attrs: dict[str, Attr] = {}
        self._opt_attr_dict(attrs)
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
        lex = self.lex
        types: list[Type] = []
        dims: list[list[Value]] = []
        paren = lex.accept("(")
        if not (paren and lex.at(")")):
            while True:
                types.append(self.parse_type())
                dims.append(self.parse_dims(types[-1]))
                if not (paren and lex.accept(",")):
                    break
        if paren:
            lex.expect(")")
        return types, dims

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
        if lex.peek().kind == "value":
            raise lex.error("flow.dispatch.workgroups with tied results ('-> %x') is not supported", start)
        results, res_dims = self._types_with_dims()
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
            static, d = self._static_list()
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
        self._opt_attr_dict(attrs)
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
        self._opt_attr_dict(attrs)
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
    def _p_opaque(self, name: str, start: int, n_results: int) -> Operation:
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
            if depth == 0 and newline_before and tok.text not in ("{", "(", "[", "<", ":", "->", ","):
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
