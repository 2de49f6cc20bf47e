"""Custom syntax of IREE's own ops (encodings, flow, hal, util) and the generic reader for unknown ops."""

from __future__ import annotations

from typing import TYPE_CHECKING

from egg_dispatch.mlir.attributes import symbol_name
from egg_dispatch.mlir.ir import (
    ABI_SHELL_OPS,
    Attr,
    DenseAttr,
    OpaqueType,
    Operation,
    Region,
    StrAttr,
    SymbolRefAttr,
    Type,
    TypeAttr,
    UnitAttr,
    Value,
)
from egg_dispatch.mlir.ops import make_int_list

if TYPE_CHECKING:
    from egg_dispatch.mlir.parser import Parser

__all__ = ["UNKNOWN", "IreeSyntax"]

UNKNOWN = OpaqueType("<unknown>")
"""Result type of an opaque op whose syntax does not say it; refined by the first typed use."""


class IreeSyntax:
    # ------------------------------------------------------------------------- encodings, flow
    def _p_unary_typed(self: Parser, name: str, start: int) -> Operation:
        """``op %x [attr-dict] : T -> T'`` (set/unset_encoding, flow.tensor.encode, barriers)."""
        lex = self.lex
        src = self.operand()
        if lex.at("encoding_dims"):
            raise lex.error("encoding_dims (dynamic sizes) are not supported yet", start)
        attrs: dict[str, Attr] = {}
        self._opt_attr_dict(attrs)
        lex.expect(":")
        self.check_types([src], [self.parse_type()], start)
        lex.expect("->")
        return self.make_op(name, [src], [self.parse_type()], attributes=attrs)

    def _p_hal_tensor(self: Parser, name: str, start: int) -> Operation:
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
        self.check_types([src], [self.parse_type()], start)
        lex.expect("->")
        return self.make_op(name, [src, *fence], [self.parse_type()], attributes=attrs)

    def _p_hal_barrier(self: Parser, name: str, start: int) -> Operation:
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

    def _p_tensor_constant(self: Parser, name: str, start: int) -> Operation:
        """``flow.tensor.constant #flow.parameter.named<...> : tensor<..>`` (or a dense literal)."""
        lex = self.lex
        attrs: dict[str, Attr] = {}
        self._opt_attr_dict(attrs)
        attrs["value"] = self.parse_attribute()
        lex.expect(":")
        typ = self.parse_type()
        return self.make_op(name, [], [typ], attributes=attrs)

    def _p_dispatch_region(self: Parser, name: str, start: int) -> Operation:
        lex = self.lex
        if lex.at("["):
            raise lex.error("flow.dispatch.region with a workload is not supported yet", start)
        lex.expect("->")
        results = self.parse_paren_types()
        attrs: dict[str, Attr] = {}
        if lex.accept("attributes"):
            attrs.update(self.parse_dict().items)
        regions = [self.parse_region()]
        if lex.accept("count"):
            regions.append(self._count_region(isolated=False))  # IREE's count() uses values from above
        return self.make_op(name, [], results, attributes=attrs, regions=regions)

    def _count_region(self: Parser, isolated: bool = True) -> Region:
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

    def _p_workgroups(self: Parser, name: str, start: int) -> Operation:
        lex = self.lex
        if lex.at("["):
            raise lex.error("flow.dispatch.workgroups with a workload is not supported yet", start)
        lex.expect("(")
        captured = self.operand_list()
        lex.expect(")")
        lex.expect(":")
        in_types = self.parse_paren_types()
        self.check_types(captured, in_types, start)
        lex.expect("->")
        results = self.parse_result_types()
        attrs: dict[str, Attr] = {}
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
        return self.make_op(name, captured, results, attributes=attrs, regions=regions)

    def _p_dispatch_tensor(self: Parser, name: str, start: int) -> Operation:
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
        lex.expect("->")
        t_out = self.parse_type()
        if name.endswith("store"):
            self.check_types(operands, [t_in, t_out], start)
            return self.make_op(name, operands + dyn, [], attributes=attrs)
        self.check_types(operands, [t_in], start)
        return self.make_op(name, operands + dyn, [t_out], attributes=attrs)

    # -------------------------------------------------------------------------------- util
    def _p_global(self: Parser, name: str, start: int) -> Operation:
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

    def _p_initializer(self: Parser, name: str, start: int) -> Operation:
        attrs: dict[str, Attr] = {}
        if self.lex.accept("attributes"):
            attrs.update(self.parse_dict().items)
        return self.make_op(name, [], [], attributes=attrs, regions=[self.parse_region(isolated=True)])

    def _p_global_load(self: Parser, name: str, start: int) -> Operation:
        lex = self.lex
        attrs: dict[str, Attr] = {}
        if lex.accept("immutable"):
            attrs["is_immutable"] = UnitAttr()
        attrs["global"] = SymbolRefAttr(symbol_name(lex, lex.expect_kind("symbol", "a global name")))
        self._opt_attr_dict(attrs)
        lex.expect(":")
        return self.make_op(name, [], [self.parse_type()], attributes=attrs)

    def _p_global_store(self: Parser, name: str, start: int) -> Operation:
        lex = self.lex
        v = self.operand()
        lex.expect(",")
        attrs: dict[str, Attr] = {"global": SymbolRefAttr(symbol_name(lex, lex.expect_kind("symbol", "a global name")))}
        lex.expect(":")
        self.check_types([v], [self.parse_type()], start)
        return self.make_op(name, [v], [], attributes=attrs)

    # ------------------------------------------------------------------------------- opaque
    def _p_opaque(self: Parser, name: str, start: int, n_results: int) -> Operation:
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
