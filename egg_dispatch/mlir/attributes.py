"""Parsing of MLIR types and attributes (the part of the grammar every op shares)."""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

import numpy as np

from .dense import _array_from_bytes, _array_from_text, _hex_bytes, _hex_float
from .ir import (
    AffineMapAttr,
    ArrayAttr,
    Attr,
    BoolAttr,
    DenseAttr,
    DialectAttr,
    DictAttr,
    DispatchTensorType,
    EncodingAttr,
    FloatAttr,
    FunctionType,
    IntAttr,
    OpaqueType,
    ScalarType,
    StrAttr,
    SymbolRefAttr,
    TensorType,
    Type,
    TypeAttr,
    UnitAttr,
    is_known_element,
    numpy_dtype,
)
from .lexer import describe

if TYPE_CHECKING:
    from .parser import Parser

__all__ = ["AttrParser"]

_SHAPE = re.compile(r"((?:(?:[0-9]+|\?)x)*)")
_SCALAR = re.compile(r"(?:[su]?i[0-9]+|bf16|f16|f32|f64|f8E[0-9A-Za-z]+|index)\b")


_ALIAS_REF = re.compile(r"#[A-Za-z_][A-Za-z0-9_$]*(?![A-Za-z0-9_$.<])")


def _unescape(s: str) -> str:
    return bytes(s[1:-1], "utf-8").decode("unicode_escape") if "\\" in s else s[1:-1]


class AttrParser:
    """Mixin with the type and attribute grammar; ``Parser`` supplies ``lex`` and alias tables."""

    lex: object  # Lexer, typed loosely to keep the mixin light

    # ------------------------------------------------------------------------------------ types
    def parse_type(self: Parser) -> Type:
        lex = self.lex
        tok = lex.peek()
        if tok.kind == "ident" and tok.text == "tensor":
            return self.parse_tensor_type()
        if tok.kind == "ident" and _SCALAR.fullmatch(tok.text):
            lex.next()
            return ScalarType(tok.text)
        if tok.kind == "ident" and tok.text in ("none", "i1"):
            lex.next()
            return ScalarType(tok.text) if tok.text == "i1" else OpaqueType("none")
        if tok.kind == "bang":
            if tok.text in self.type_aliases:
                lex.next()
                return self.type_aliases[tok.text]
            if tok.text == "!iree_tensor_ext.dispatch.tensor":
                lex.next()
                lex.expect("<")
                access = lex.expect_kind("ident", "a dispatch tensor access (readonly, writeonly, readwrite)").text
                lex.expect(":")
                tensor = self.parse_type()
                lex.expect(">")
                if not isinstance(tensor, TensorType):
                    raise lex.error("expected a tensor type in a dispatch tensor", tok.pos)
                return DispatchTensorType(access, tensor)
            lex.next()
            end = tok.pos + len(tok.text)
            if lex.text.startswith("<", end):
                close = lex.balanced(end)
                lex.restore(close)
                return OpaqueType(lex.text[tok.pos : close])
            return OpaqueType(tok.text)
        if tok.kind == "punct" and tok.text == "(":
            inputs = self.parse_paren_types()
            lex.expect("->", "in a function type")
            results = self.parse_result_types()
            return FunctionType(tuple(inputs), tuple(results))
        if tok.kind == "ident" and tok.text in ("vector", "memref", "complex", "tuple"):
            lex.next()
            end = tok.pos + len(tok.text)
            close = lex.balanced(lex.text.index("<", end))
            lex.restore(close)
            return OpaqueType(lex.text[tok.pos : close])
        raise lex.error(f"expected a type, found {describe(tok)}")

    def parse_tensor_type(self: Parser) -> TensorType:
        lex = self.lex
        start = lex.next().pos
        lex.expect("<")
        m = lex.match_raw(_SHAPE)
        dims_text = m.group(1) if m else ""
        dims = dims_text.split("x")[:-1] if dims_text else []
        if "?" in dims:
            raise lex.error(
                "dynamic dimensions ('?') are not supported yet: egg_dispatch handles static shapes only",
                start,
            )
        elem = self.parse_type()
        if not isinstance(elem, ScalarType):
            raise lex.error(f"expected a scalar element type in a tensor type, found '{elem}'", start)
        encoding: Attr | None = None
        if lex.accept(","):
            encoding = self.parse_attribute()
        lex.expect(">", "to close the tensor type")
        return TensorType(tuple(int(d) for d in dims), elem, encoding)

    def parse_paren_types(self: Parser) -> list[Type]:
        self.lex.expect("(")
        types: list[Type] = []
        if not self.lex.at(")"):
            types.append(self.parse_type())
            while self.lex.accept(","):
                types.append(self.parse_type())
        self.lex.expect(")")
        return types

    def parse_result_types(self: Parser) -> list[Type]:
        if self.lex.at("("):
            return self.parse_paren_types()
        return [self.parse_type()]

    def parse_type_list(self: Parser) -> list[Type]:
        types = [self.parse_type()]
        while self.lex.accept(","):
            types.append(self.parse_type())
        return types

    # ------------------------------------------------------------------------------- attributes
    def parse_attribute(self: Parser, expected: Type | None = None) -> Attr:
        lex = self.lex
        tok = lex.peek()
        k = tok.kind
        if k == "string":
            lex.next()
            return StrAttr(_unescape(tok.text))
        if k == "symbol":
            lex.next()
            return SymbolRefAttr(tok.text[1:].strip('"'))
        if k in ("int", "float"):
            lex.next()
            typ = self.parse_type() if lex.accept(":") else expected
            if k == "int" and not (isinstance(typ, ScalarType) and typ.is_float):
                return IntAttr(int(tok.text, 0), typ)
            if k == "int" and tok.text.lower().startswith(("0x", "-0x")):
                return FloatAttr(_hex_float(tok.text, typ), typ, tok.text)  # type: ignore[arg-type]
            return FloatAttr(float(tok.text), typ, tok.text)
        if k == "ident":
            if tok.text in ("true", "false"):
                lex.next()
                return BoolAttr(tok.text == "true")
            if tok.text == "unit":
                lex.next()
                return UnitAttr()
            if tok.text == "affine_map":
                lex.next()
                return self.parse_affine_map()
            if tok.text in ("dense", "dense_resource"):
                return self.parse_dense()
            if tok.text == "array":
                lex.next()
                lex.expect("<")
                self.parse_type()
                items: list[Attr] = []
                if lex.accept(":"):
                    items.append(self.parse_attribute())
                    while lex.accept(","):
                        items.append(self.parse_attribute())
                lex.expect(">")
                return ArrayAttr(tuple(items))
            return TypeAttr(self.parse_type())
        if k == "punct" and tok.text == "[":
            lex.next()
            items = []
            if not lex.at("]"):
                items.append(self.parse_attribute())
                while lex.accept(","):
                    items.append(self.parse_attribute())
            lex.expect("]")
            return ArrayAttr(tuple(items))
        if k == "punct" and tok.text == "{":
            return self.parse_dict()
        if k == "hash":
            return self.parse_hash_attribute()
        if k == "bang" or (k == "punct" and tok.text == "("):
            return TypeAttr(self.parse_type())
        raise lex.error(f"expected an attribute, found {describe(tok)}")

    def parse_dict(self: Parser) -> DictAttr:
        lex = self.lex
        lex.expect("{")
        items: list[tuple[str, Attr]] = []
        while not lex.at("}"):
            key_tok = lex.next()
            if key_tok.kind not in ("ident", "string"):
                raise lex.error(f"expected an attribute name, found {describe(key_tok)}", key_tok.pos)
            key = _unescape(key_tok.text) if key_tok.kind == "string" else key_tok.text
            value: Attr = UnitAttr()
            if lex.accept("="):
                value = self.parse_attribute()
            items.append((key, value))
            if not lex.accept(","):
                break
        lex.expect("}", "to close the attribute dictionary")
        return DictAttr(tuple(items))

    def parse_hash_attribute(self: Parser) -> Attr:
        lex = self.lex
        tok = lex.next()
        end = tok.pos + len(tok.text)
        if not lex.text.startswith("<", end):
            if tok.text in self.attr_aliases:
                return self.attr_aliases[tok.text]
            if "." in tok.text:
                return DialectAttr(tok.text)
            raise lex.error(f"undefined attribute alias {tok.text}", tok.pos)
        if tok.text == "#iree_encoding.encoding":
            return self.parse_encoding()
        close = lex.balanced(end)
        lex.restore(close)
        text = _ALIAS_REF.sub(lambda m: self.alias_text(m.group(0)), lex.text[tok.pos : close])
        # Inline aliases inside opaque attributes stay as written; they print back the same way.
        if tok.text == "#linalg.iterator_type":
            return StrAttr(text[len(tok.text) + 1 : -1].strip())
        return DialectAttr(text)

    def alias_text(self: Parser, name: str) -> str:
        """Inline an alias used inside an opaque attribute, so the attribute stands alone."""
        from .printer import Printer

        value = self.attr_aliases.get(name)
        if value is None:
            return name
        text = Printer(use_aliases=False).attr(value)
        if name in self.attr_alias_types:
            text += " : " + Printer(use_aliases=False).type(self.attr_alias_types[name])
        return text

    def parse_encoding(self: Parser) -> EncodingAttr:
        lex = self.lex
        start = lex.expect("<").pos
        fields: dict[str, object] = {}
        index_type = "index"
        while not lex.at(">"):
            key = lex.expect_kind("ident", "an encoding field name").text
            lex.expect("=")
            if key == "operand_index":
                fields[key] = int(lex.expect_kind("int", "an operand index").text)
                if lex.accept(":"):
                    index_type = lex.expect_kind("ident", "an integer type").text
            elif key == "op_type":
                fields[key] = lex.expect_kind("ident", "an op type (matmul, scaled_matmul, conv)").text
            elif key in ("element_types", "original_element_type"):
                t = self.parse_attribute()
                fields[key] = t
            elif key == "user_indexing_maps":
                fields[key] = self.parse_attribute()
            elif key == "iteration_sizes":
                lex.expect("[")
                sizes: list[int | None] = []
                while not lex.at("]"):
                    if lex.accept("?"):
                        sizes.append(None)
                    else:
                        sizes.append(int(lex.expect_kind("int", "an iteration size or '?'").text))
                    if not lex.accept(","):
                        break
                lex.expect("]")
                fields[key] = tuple(sizes)
            else:
                raise lex.error(f"unknown #iree_encoding.encoding field '{key}'")
            if not lex.accept(","):
                break
        lex.expect(">", "to close #iree_encoding.encoding")
        if "operand_index" not in fields or "op_type" not in fields or "element_types" not in fields:
            raise lex.error("#iree_encoding.encoding needs operand_index, op_type and element_types", start)

        def scalar(a: object) -> ScalarType:
            if isinstance(a, TypeAttr) and isinstance(a.type, ScalarType):
                return a.type
            raise lex.error("expected an element type in #iree_encoding.encoding", start)

        et = fields["element_types"]
        if not isinstance(et, ArrayAttr):
            raise lex.error("element_types must be a list of types", start)
        maps = fields.get("user_indexing_maps")
        maps_t = None
        if maps is not None:
            if not isinstance(maps, ArrayAttr):
                raise lex.error("user_indexing_maps must be a list of affine maps", start)
            entries: list[AffineMapAttr | tuple[AffineMapAttr, ...]] = []
            for m in maps.items:
                if isinstance(m, AffineMapAttr):
                    entries.append(m)
                elif isinstance(m, ArrayAttr) and all(isinstance(x, AffineMapAttr) for x in m.items):
                    entries.append(tuple(m.items))  # type: ignore[arg-type]
                else:
                    raise lex.error("user_indexing_maps entries must be affine maps or lists of them", start)
            maps_t = tuple(entries)
        oet = fields.get("original_element_type")
        return EncodingAttr(
            operand_index=fields["operand_index"],  # type: ignore[arg-type]
            op_type=fields["op_type"],  # type: ignore[arg-type]
            element_types=tuple(scalar(a) for a in et.items),
            user_indexing_maps=maps_t,
            iteration_sizes=fields.get("iteration_sizes"),  # type: ignore[arg-type]
            original_element_type=scalar(oet) if oet is not None else None,
            operand_index_type=index_type,
        )

    def parse_affine_map(self: Parser) -> AffineMapAttr:
        lex = self.lex
        lex.expect("<")
        dims = self._affine_names("(", ")")
        syms = self._affine_names("[", "]") if lex.at("[") else []
        lex.expect("->", "in an affine map")
        names = {n: ("d", i) for i, n in enumerate(dims)} | {n: ("s", i) for i, n in enumerate(syms)}
        lex.expect("(")
        results: list[tuple] = []
        while not lex.at(")"):
            results.append(self._affine_expr(names))
            if not lex.accept(","):
                break
        lex.expect(")")
        lex.expect(">", "to close the affine map")
        return AffineMapAttr(len(dims), len(syms), tuple(results))

    def _affine_names(self: Parser, open_: str, close: str) -> list[str]:
        lex = self.lex
        lex.expect(open_)
        names: list[str] = []
        while not lex.at(close):
            names.append(lex.expect_kind("ident", "an affine dimension or symbol name").text)
            if not lex.accept(","):
                break
        lex.expect(close)
        return names

    def _affine_expr(self: Parser, names: dict[str, tuple]) -> tuple:
        lhs = self._affine_term(names)
        while self.lex.at("+") or self.lex.at("-"):
            op = self.lex.next().text
            lhs = (op, lhs, self._affine_term(names))
        return lhs

    def _affine_term(self: Parser, names: dict[str, tuple]) -> tuple:
        lhs = self._affine_atom(names)
        while self.lex.at("*") or self.lex.at("floordiv") or self.lex.at("ceildiv") or self.lex.at("mod"):
            op = self.lex.next().text
            lhs = (op, lhs, self._affine_atom(names))
        return lhs

    def _affine_atom(self: Parser, names: dict[str, tuple]) -> tuple:
        lex = self.lex
        tok = lex.next()
        if tok.kind == "int":
            return ("c", int(tok.text, 0))
        if tok.kind == "ident" and tok.text in names:
            return names[tok.text]
        if tok.text == "(":
            e = self._affine_expr(names)
            lex.expect(")")
            return e
        if tok.text == "-":
            return ("*", ("c", -1), self._affine_atom(names))
        raise lex.error(f"expected an affine expression, found {describe(tok)}", tok.pos)

    def parse_dense(self: Parser) -> DenseAttr:
        lex = self.lex
        kw = lex.next()
        lex.expect("<")
        if kw.text == "dense_resource":
            key_tok = lex.next()
            if key_tok.kind not in ("ident", "string"):
                raise lex.error(f"expected a resource key, found {describe(key_tok)}", key_tok.pos)
            key = key_tok.text.strip('"')
            lex.expect(">")
            lex.expect(":", "before the type of a dense_resource")
            typ = self._dense_type(kw.pos)
            attr = DenseAttr(np.zeros(typ.shape, numpy_dtype(typ.element)), typ, "resource", key)
            self.pending_resources.append((attr, self.lex.loc(key_tok.pos)))
            return attr
        body_start = lex.save()
        if lex.peek().kind == "string":
            hex_tok = lex.next()
            lex.expect(">")
            lex.expect(":", "before the type of a dense literal")
            typ = self._dense_type(kw.pos)
            data = _hex_bytes(hex_tok.text[1:-1])
            if data is None:
                raise lex.error('a dense hex literal must be "0x" followed by hex digits', hex_tok.pos)
            return DenseAttr(_array_from_bytes(self, data, typ, hex_tok.pos, allow_splat=True), typ, "hex")
        close = lex.balanced(body_start - 1)
        body = lex.text[body_start : close - 1]
        lex.restore(close)
        lex.expect(":", "before the type of a dense literal")
        typ = self._dense_type(kw.pos)
        return DenseAttr(_array_from_text(self, body, typ, body_start), typ, "list")

    def _dense_type(self: Parser, pos: int) -> TensorType:
        typ = self.parse_type()
        if not isinstance(typ, TensorType):
            raise self.lex.error(f"a dense literal needs a tensor type, found '{typ}'", pos)
        if not is_known_element(typ.element.name):
            raise self.lex.error(f"unsupported element type {typ.element} in a dense literal", pos)
        return typ
