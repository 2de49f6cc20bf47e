"""Parsing of MLIR types and attributes (the part of the grammar every op shares)."""

from __future__ import annotations

import re

from egg_dispatch.mlir.affine import AffineParser
from egg_dispatch.mlir.dense import DenseParser
from egg_dispatch.mlir.encoding import EncodingParser
from egg_dispatch.mlir.ir import (
    FLOAT_TYPES,
    ArrayAttr,
    Attr,
    BoolAttr,
    DialectAttr,
    DictAttr,
    DispatchTensorType,
    FloatAttr,
    FunctionType,
    IntAttr,
    OpaqueType,
    ParameterAttr,
    ScalarType,
    StrAttr,
    SymbolRefAttr,
    TensorType,
    Type,
    TypeAttr,
    UnitAttr,
    Value,
)
from egg_dispatch.mlir.lexer import Token, describe, int_value
from egg_dispatch.mlir.literals import hex_float, int_in_range, symbol_name, unescape
from egg_dispatch.mlir.printer import Printer

__all__ = ["AttrParser"]

_SHAPE = re.compile(r"((?:(?:[0-9]+|\?)x)*)")
_INTEGER = re.compile(r"[su]?i[0-9]+")
_ALIAS_REF = re.compile(r'"(?:[^"\\\n]|\\.)*"|//[^\n]*|(?P<ref>[#!][A-Za-z_][A-Za-z0-9_$]*)(?![A-Za-z0-9_$.<\-])')
"""An alias reference inside verbatim text; strings and comments are matched only to be skipped."""
_MAX_DIM = 2**63 - 1


class AttrParser(AffineParser, EncodingParser, DenseParser):
    """Mixin with the type and attribute grammar; ``Parser`` supplies ``lex`` and alias tables."""

    _tensor_types: dict[str, TensorType]
    """Tensor types parsed so far, by their exact text (``parse_tensor_type``; made on first use)."""

    # ------------------------------------------------------------------------------------ types
    def parse_type(self) -> Type:
        lex = self.lex
        tok = lex.peek()
        lex.enter("types", tok.pos)
        try:
            return self._parse_type(tok)
        finally:
            lex.leave()

    def _parse_type(self, tok: Token) -> Type:
        lex = self.lex
        if tok.kind == "ident" and tok.text == "tensor":
            return self.parse_tensor_type()
        if tok.kind == "ident" and (tok.text in FLOAT_TYPES or tok.text == "index" or _INTEGER.fullmatch(tok.text)):
            lex.next()
            return ScalarType(tok.text)
        if tok.kind == "ident" and tok.text == "complex":
            return self.parse_complex_type()
        if tok.kind == "ident" and tok.text == "none":
            lex.next()
            return OpaqueType("none")
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
            return OpaqueType(self._bracketed_text(tok, required=False))
        if tok.kind == "punct" and tok.text == "(":
            inputs = self.parse_paren_types()
            lex.expect("->", "in a function type")
            results = self.parse_result_types()
            return FunctionType(tuple(inputs), tuple(results))
        if tok.kind == "ident" and tok.text in ("vector", "memref", "tuple"):
            return OpaqueType(self._bracketed_text(tok, required=True))
        raise lex.error(f"expected a type, found {describe(tok)}")

    def _bracketed_text(self, tok: Token, required: bool) -> str:
        """``name`` or ``name<...>`` kept verbatim (dialect types, vectors, memrefs)."""
        lex = self.lex
        lex.next()
        end = tok.pos + len(tok.text)
        if not lex.text.startswith("<", end):
            if required:
                raise lex.error(f"expected '<' right after '{tok.text}'", end)
            return tok.text
        close = lex.balanced(end)
        lex.restore(close)
        return lex.text[tok.pos : close]

    def parse_complex_type(self) -> ScalarType:
        """``complex<f32>``: an element type, named as written (its part an integer or float type)."""
        lex = self.lex
        start = lex.next().pos
        lex.expect("<")
        part = self.parse_type()
        if not isinstance(part, ScalarType) or part.is_complex or part.name == "index":
            raise lex.error(f"expected an integer or float type in complex<...>, found '{part}'", start)
        lex.expect(">", "to close the complex type")
        return ScalarType(f"complex<{part.name}>")

    def parse_tensor_type(self) -> TensorType:
        """``tensor<...>``; a type spelled as one parsed before is that type again (types are immutable;
        a model's plan spells the same encoded types thousands of times, and parsing them was most of
        reading it)."""
        lex = self.lex
        tok = lex.peek()
        close = lex.balanced(tok.pos + len(tok.text)) if lex.text.startswith("<", tok.pos + len(tok.text)) else -1
        try:
            seen = self._tensor_types
        except AttributeError:
            seen = self._tensor_types = {}
        key = lex.text[tok.pos : close] if close > 0 else ""
        if (known := seen.get(key)) is not None:
            lex.restore(close)
            return known
        typ = self._parse_tensor_type()
        if close > 0 and lex.save() == close:  # cached only when the type ends where its text does
            seen[key] = typ
        return typ

    def _parse_tensor_type(self) -> TensorType:
        lex = self.lex
        start = lex.next().pos
        lex.expect("<")
        m = lex.match_raw(_SHAPE)
        dims_text = m.group(1) if m else ""
        dims = dims_text.split("x")[:-1] if dims_text else []
        shape = tuple(None if d == "?" else int(d) for d in dims)
        if any(d is not None and d > _MAX_DIM for d in shape):
            raise lex.error("tensor dimension too large (more than 2^63 - 1)", start)
        elem = self.parse_type()
        if not isinstance(elem, ScalarType):
            raise lex.error(f"expected a scalar element type in a tensor type, found '{elem}'", start)
        encoding: Attr | None = None
        if lex.accept(","):
            pos = lex.peek().pos
            encoding = self.parse_attribute()
        lex.expect(">", "to close the tensor type")
        typ = TensorType(shape, elem, encoding)
        if encoding is not None:
            self.note_encoding(typ, pos)
        return typ

    def parse_dims(self, typ: Type, what: str = "the type") -> list[Value]:
        """``{%d0, %d1}`` after a type with dynamic dims: one ``index`` value per ``?`` (nothing for a
        static type). A dynamic type without its list is an error naming the type."""
        lex = self.lex
        tensor = typ.tensor if isinstance(typ, DispatchTensorType) else typ
        n = tensor.num_dynamic if isinstance(tensor, TensorType) else 0
        if n == 0:
            return []
        start = lex.peek().pos
        if not lex.at("{"):
            raise lex.error(
                f"{what} {self.type_str(typ)} has {n} dynamic dimension(s): expected their sizes as "
                f"'{{%d, ...}}' right after it",
                start,
            )
        lex.expect("{")
        dims = self.operand_list()
        lex.expect("}", "to close the dynamic dimension list")
        if len(dims) != n:
            raise lex.error(
                f"{self.type_str(typ)} has {n} dynamic dimension(s) but {len(dims)} size(s) are given", start
            )
        self.check_types(dims, [ScalarType("index")] * n, start)
        return dims

    def parse_paren_types(self) -> list[Type]:
        self.lex.expect("(")
        types: list[Type] = []
        if not self.lex.at(")"):
            types.append(self.parse_type())
            while self.lex.accept(","):
                types.append(self.parse_type())
        self.lex.expect(")")
        return types

    def parse_result_types(self) -> list[Type]:
        if self.lex.at("("):
            return self.parse_paren_types()
        return [self.parse_type()]

    def parse_type_list(self) -> list[Type]:
        types = [self.parse_type()]
        while self.lex.accept(","):
            types.append(self.parse_type())
        return types

    # ------------------------------------------------------------------------------- attributes
    def parse_attribute(self, expected: Type | None = None) -> Attr:
        lex = self.lex
        tok = lex.peek()
        lex.enter("attributes", tok.pos)
        try:
            return self._parse_attribute(tok, expected)
        finally:
            lex.leave()

    def _parse_attribute(self, tok: Token, expected: Type | None) -> Attr:
        lex = self.lex
        k = tok.kind
        if k == "string":
            lex.next()
            return StrAttr(unescape(lex, tok))
        if k == "symbol":
            lex.next()
            return SymbolRefAttr(symbol_name(lex, tok))
        if k in ("int", "float"):
            lex.next()
            return self._number(tok, self.parse_type() if lex.accept(":") else expected)
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
                elem = self.parse_type()
                items: list[Attr] = []
                if lex.accept(":"):
                    items.append(self.parse_attribute(elem))
                    while lex.accept(","):
                        items.append(self.parse_attribute(elem))
                lex.expect(">", "to close the array attribute")
                return ArrayAttr(tuple(items))
            return TypeAttr(self.parse_type())
        if k == "punct" and tok.text == "[":
            lex.next()
            items = []
            if not lex.at("]"):
                items.append(self.parse_attribute())
                while lex.accept(","):
                    items.append(self.parse_attribute())
            lex.expect("]", "to close the list")
            return ArrayAttr(tuple(items))
        if k == "punct" and tok.text == "{":
            return self.parse_dict()
        if k == "hash":
            return self.parse_hash_attribute()
        if k == "bang" or (k == "punct" and tok.text == "("):
            return TypeAttr(self.parse_type())
        raise lex.error(f"expected an attribute, found {describe(tok)}")

    def _number(self, tok: Token, typ: Type | None) -> Attr:
        """An integer or float literal with its (written or expected) type."""
        lex = self.lex
        is_float_type = isinstance(typ, ScalarType) and typ.is_float
        if tok.kind == "int" and not is_float_type:
            value = int_value(lex, tok)
            if isinstance(typ, ScalarType) and not int_in_range(value, typ):
                raise lex.error(f"integer {value} does not fit in {typ.name}", tok.pos)
            return IntAttr(value, typ)
        if tok.kind == "float" and isinstance(typ, ScalarType) and not typ.is_float:
            raise lex.error(f"a floating-point literal is not valid for the integer type {typ.name}", tok.pos)
        if tok.kind == "int" and tok.text.lower().startswith(("0x", "-0x")):
            return FloatAttr(hex_float(tok.text, typ), typ, tok.text)
        return FloatAttr(float(tok.text), typ, tok.text)

    def parse_dict(self) -> DictAttr:
        lex = self.lex
        lex.expect("{")
        items: list[tuple[str, Attr]] = []
        while not lex.at("}"):
            key_tok = lex.next()
            if key_tok.kind not in ("ident", "string"):
                raise lex.error(f"expected an attribute name, found {describe(key_tok)}", key_tok.pos)
            key = unescape(lex, key_tok) if key_tok.kind == "string" else key_tok.text
            value: Attr = UnitAttr()
            if lex.accept("="):
                value = self.parse_attribute()
            items.append((key, value))
            if not lex.accept(","):
                break
        lex.expect("}", "to close the attribute dictionary")
        return DictAttr(tuple(items))

    def parse_hash_attribute(self) -> Attr:
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
        if tok.text in ("#flow.parameter.named", "#stream.parameter.named"):
            return self.parse_parameter(tok)
        close = lex.balanced(end)
        lex.restore(close)
        text = self.inline_aliases(lex.text[tok.pos : close], tok.pos)
        if tok.text == "#linalg.iterator_type":
            return StrAttr(text[len(tok.text) + 1 : -1].strip())
        return DialectAttr(text)

    def parse_parameter(self, tok: Token) -> ParameterAttr:
        """``#flow.parameter.named<"scope"::"key">`` or ``<"key">`` (also ``#stream.``)."""
        lex = self.lex
        lex.next()  # '<'
        first = lex.expect_kind("string", "a parameter key (a string)")
        scope, key = None, unescape(lex, first)
        if lex.accept("::"):
            scope, key = key, unescape(lex, lex.expect_kind("string", "a parameter key (a string)"))
        lex.expect(">", "to close the parameter reference")
        return ParameterAttr(key, scope, tok.text[1:].split(".", 1)[0])

    def inline_aliases(self, text: str, pos: int) -> str:
        """Replace alias references in verbatim text (opaque attributes and ops) by their definitions, so
        the text stands alone: the printer names its own aliases and must not capture these."""

        def sub(m: re.Match[str]) -> str:
            name = m.group("ref")
            if name is None:
                return m.group(0)
            printer = Printer(use_aliases=False)
            if name.startswith("!"):
                alias = self.type_aliases.get(name)
                return m.group(0) if alias is None else printer.type(alias)
            value = self.attr_aliases.get(name)
            if value is None:
                raise self.lex.error(f"undefined attribute alias {name}", pos + m.start())
            out = printer.attr(value)
            if name in self.attr_alias_types:
                out += " : " + printer.type(self.attr_alias_types[name])
            return out

        return _ALIAS_REF.sub(sub, text) if ("#" in text or "!" in text) else text
