"""Parsing of MLIR types and attributes (the part of the grammar every op shares)."""

from __future__ import annotations

import re
from collections.abc import Callable

from egg_dispatch.mlir.affine import AffineParser
from egg_dispatch.mlir.dense import DenseParser
from egg_dispatch.mlir.encoding import EncodingParser
from egg_dispatch.mlir.ir import (
    FLOAT_TYPES,
    AffineMapAttr,
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
from egg_dispatch.mlir.lexer import MAX_NESTING, Token, describe, int_value
from egg_dispatch.mlir.literals import hex_float, int_in_range, symbol_name, unescape
from egg_dispatch.mlir.printer import Printer

__all__ = ["AttrParser", "is_scalar_name"]

_SHAPE = re.compile(r"((?:(?:[0-9]+|\?)x)*)")
_INTEGER = re.compile(r"[su]?i[0-9]+")
_ALIAS_REF = re.compile(r'"(?:[^"\\\n]|\\.)*"|//[^\n]*|(?P<ref>[#!][A-Za-z_][A-Za-z0-9_$]*)(?![A-Za-z0-9_$.<\-])')
"""An alias reference inside verbatim text; strings and comments are matched only to be skipped."""
_MAX_DIM = 2**63 - 1
_PLAIN_BRACKETS = re.compile(r'<[^<>()\[\]{}"\-]*>')
"""``<...>`` with no bracket, string or arrow inside: ``Lexer.balanced`` would close it at its ``>``."""
_SPELLING_PREFIX = 64
"""How many characters of a long tensor type's text ``_tensor_spellings`` files it under."""
_PLAIN_DISPATCH = re.compile(r'!iree_tensor_ext\.dispatch\.tensor<[a-z]+:tensor<[^<>()\[\]{}"\-]*>>')
"""A dispatch tensor type with a bracket-free tensor type and no space (``_dispatch_tensor_type``)."""
_AFFINE_SPAN = re.compile(r'affine_map<(?:[^<>"\-]|->?)*+>')
"""The text an ``affine_map<...>`` attribute may span: up to the first ``>`` that is not an arrow's."""
_LITERAL_RUN = re.compile(r'(?:[\s\[\]{},=0-9\-]|"[^"\\\n]*"|\#[A-Za-z_][A-Za-z0-9_$.\-]*|[A-Za-z_][A-Za-z0-9_$.]*)*+')
"""Text made of literals only (``_literal_span``): brackets, numbers, words, strings without escapes,
``#alias`` references."""
_LITERAL_BRACKET = re.compile(r'"[^"\\\n]*"|[\[\]{}]')
"""What ``_literal_span`` looks at in such text: a string (to skip) or a bracket."""


def is_scalar_name(word: str) -> bool:
    """Whether ``parse_type`` reads the word ``word`` as a ``ScalarType`` of that name."""
    return word in FLOAT_TYPES or word == "index" or _INTEGER.fullmatch(word) is not None


class AttrParser(AffineParser, EncodingParser, DenseParser):
    """Mixin with the type and attribute grammar; ``Parser`` supplies ``lex`` and alias tables."""

    # What was read before, by its exact text, and reused where the same text is read again: a model's
    # texts spell the same few types, maps and attribute lists thousands of times. Each is reused only
    # where reading its text again would give the same (immutable) value and nothing else: no effect,
    # no error, and the same position after it.
    _tensor_types: dict[str, TensorType]
    """Tensor types (``parse_tensor_type``)."""
    _tensor_spellings: dict[str, list[str]]
    """The texts of ``_tensor_types`` longer than ``_SPELLING_PREFIX``, by their first characters."""
    _dispatch_types: dict[str, DispatchTensorType]
    """``!iree_tensor_ext.dispatch.tensor<access:tensor<...>>`` with a bracket-free tensor type."""
    _affine_maps: dict[str, AffineMapAttr]
    """Affine maps (``_affine_map``)."""
    _literal_arrays: dict[str, ArrayAttr]
    _literal_dicts: dict[str, DictAttr]
    """Lists and dictionaries of literals (``_literal_span``), once ``_literals_on``."""
    _literals_on: bool
    """Whether lists and dictionaries of literals are reused: set once the aliases are read."""

    def init_reuse(self) -> None:
        """Start with nothing read before (``Parser.__init__`` calls it)."""
        self._tensor_types, self._tensor_spellings, self._dispatch_types = {}, {}, {}
        self._affine_maps, self._literal_arrays, self._literal_dicts = {}, {}, {}
        self._literals_on = False

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
                return self._dispatch_tensor_type(tok)
            return OpaqueType(self._bracketed_text(tok, required=False))
        if tok.kind == "punct" and tok.text == "(":
            inputs = self.parse_paren_types()
            lex.expect("->", "in a function type")
            results = self.parse_result_types()
            return FunctionType(tuple(inputs), tuple(results))
        if tok.kind == "ident" and tok.text in ("vector", "memref", "tuple"):
            return OpaqueType(self._bracketed_text(tok, required=True))
        raise lex.error(f"expected a type, found {describe(tok)}")

    def _dispatch_tensor_type(self, tok: Token) -> DispatchTensorType:
        """``!iree_tensor_ext.dispatch.tensor<readonly:tensor<...>>``. One with a bracket-free tensor type
        and spelled as one read before is that type again: its tensor type was kept by
        ``parse_tensor_type`` when it was read, so reading it again would give that same tensor type,
        with no effect and no deeper nesting (where the tensor type's own ``parse_type`` would be too
        deep, it is read again to say so)."""
        lex = self.lex
        span = _PLAIN_DISPATCH.match(lex.text, tok.pos)
        key = span.group() if span is not None and lex.depth < MAX_NESTING else None
        if key is not None and (known := self._dispatch_types.get(key)) is not None:
            lex.restore(tok.pos + len(key))
            return known
        lex.next()
        lex.expect("<")
        access = lex.expect_kind("ident", "a dispatch tensor access (readonly, writeonly, readwrite)").text
        lex.expect(":")
        tensor = self.parse_type()
        lex.expect(">")
        if not isinstance(tensor, TensorType):
            raise lex.error("expected a tensor type in a dispatch tensor", tok.pos)
        typ = DispatchTensorType(access, tensor)
        if key is not None and lex.save() == tok.pos + len(key):
            self._dispatch_types[key] = typ
        return typ

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
        text = lex.text
        open_pos = tok.pos + len(tok.text)
        seen, spelled = self._tensor_types, self._tensor_spellings
        close = self._tensor_type_end(text, tok.pos, open_pos, spelled)
        key = text[tok.pos : close] if close > 0 else ""
        if (known := seen.get(key)) is not None:
            lex.restore(close)
            return known
        typ = self._parse_tensor_type()
        if close > 0 and lex.save() == close:  # cached only when the type ends where its text does
            seen[key] = typ
            if close - tok.pos > _SPELLING_PREFIX:
                spelled.setdefault(text[tok.pos : tok.pos + _SPELLING_PREFIX], []).append(key)
        return typ

    def _tensor_type_end(self, text: str, start: int, open_pos: int, spelled: dict[str, list[str]]) -> int:
        """Where the ``tensor<...>`` at ``start`` ends (``lex.balanced``; -1 without ``<``), found without
        scanning when it is bracket-free or spelled as a (long) type read before: ``balanced`` only
        looks at the text up to the closer it returns, so a text that starts with one it closed ends
        where that did."""
        m = _PLAIN_BRACKETS.match(text, open_pos)
        if m is not None:
            return m.end()
        if not text.startswith("<", open_pos):
            return -1
        for key in spelled.get(text[start : start + _SPELLING_PREFIX], ()):
            if text.startswith(key, start):
                return start + len(key)
        return self.lex.balanced(open_pos)

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
                return self._affine_map(tok)
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
            return self._reused(tok.pos, self._literal_arrays, self._parse_array)
        if k == "punct" and tok.text == "{":
            return self.parse_dict()
        if k == "hash":
            return self.parse_hash_attribute()
        if k == "bang" or (k == "punct" and tok.text == "("):
            return TypeAttr(self.parse_type())
        raise lex.error(f"expected an attribute, found {describe(tok)}")

    def _parse_array(self) -> ArrayAttr:
        """``[a, b, ...]``."""
        lex = self.lex
        lex.next()
        items: list[Attr] = []
        if not lex.at("]"):
            items.append(self.parse_attribute())
            while lex.accept(","):
                items.append(self.parse_attribute())
        lex.expect("]", "to close the list")
        return ArrayAttr(tuple(items))

    def _literal_span(self, open_pos: int) -> str | None:
        """The text of the list or dictionary opened at ``open_pos`` when it holds only literals: numbers,
        words, strings without escapes, ``#alias`` references, nested lists and dictionaries (no ``<``,
        so no dense data, encoding or other attribute whose reading has effects or makes a mutable
        value); None otherwise, and while aliases are being defined (an alias used before its
        definition reads differently after it). Reading such a text depends on it alone -- its last
        token is its one-character closer -- and on the nesting depth, which each character raises at
        most once: None too where even that depth would exceed ``MAX_NESTING``."""
        if not self._literals_on:
            return None
        text = self.lex.text
        run = _LITERAL_RUN.match(text, open_pos)
        end = run.end() if run is not None else open_pos
        closers: list[str] = []
        for m in _LITERAL_BRACKET.finditer(text, open_pos, end):
            c = m.group()
            if c == "[" or c == "{":
                closers.append("]" if c == "[" else "}")
            elif c == "]" or c == "}":
                if not closers or closers.pop() != c:
                    return None
                if not closers:
                    close = m.end()
                    if self.lex.depth + close - open_pos >= MAX_NESTING:
                        return None
                    return text[open_pos:close]
        return None

    def _affine_map(self, tok: Token) -> AffineMapAttr:
        """``affine_map<...>``; one spelled as one read before is that map again (maps are immutable; a
        model spells a few maps thousands of times). Its reading depends on its text alone (its last
        token is the one-character ``>``), and on the nesting depth, which each character raises at
        most once: the map is reused only where even that depth is within ``MAX_NESTING``."""
        lex = self.lex
        span = _AFFINE_SPAN.match(lex.text, tok.pos)
        key = span.group() if span is not None and lex.depth + span.end() - tok.pos < MAX_NESTING else None
        seen = self._affine_maps
        if key is not None and (known := seen.get(key)) is not None:
            lex.restore(tok.pos + len(key))
            return known
        lex.next()
        amap = self.parse_affine_map()
        if key is not None and lex.save() == tok.pos + len(key):
            seen[key] = amap
        return amap

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
        tok = self.lex.peek()
        if tok.text == "{" and tok.kind == "punct":
            return self._reused(tok.pos, self._literal_dicts, self._parse_dict)
        return self._parse_dict()

    def _reused[A](self, start: int, table: dict[str, A], parse: Callable[[], A]) -> A:
        """``parse()`` of the list or dict that opens at ``start``, or the value already parsed from the
        same literal text (``_literal_span``; kept only when the parse ended where that text does)."""
        literal = self._literal_span(start)
        if literal is not None and (seen := table.get(literal)) is not None:
            self.lex.restore(start + len(literal))
            return seen
        value = parse()
        if literal is not None and self.lex.save() == start + len(literal):
            table[literal] = value
        return value

    def _parse_dict(self) -> DictAttr:
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
