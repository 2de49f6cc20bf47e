"""``dense<...>`` and ``dense_resource<...>`` literals: their element data as NumPy arrays."""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

import numpy as np

from egg_dispatch.mlir.elements import HEX_DIGITS, HexData
from egg_dispatch.mlir.ir import DenseAttr, ScalarType, TensorType, element_nbytes, is_known_element, numpy_dtype
from egg_dispatch.mlir.lexer import describe
from egg_dispatch.mlir.literals import hex_float, int_in_range
from egg_dispatch.mlir.parser_base import ParserBase

if TYPE_CHECKING:
    from egg_dispatch.mlir.lexer import Lexer

__all__ = ["MAX_CONSTANT_ELEMENTS", "DenseParser", "check_element_bytes", "hex_span", "round_bf16"]

MAX_CONSTANT_ELEMENTS = 1 << 28
"""Largest constant the reader materializes (a splat or a resource is an array of this many elements)."""

_DENSE_TOKEN = re.compile(r"[\[\](),]|[^\s\[\](),]+")
_FLOAT = re.compile(r"[-+]?(?:0x[0-9a-fA-F]+|nan|inf|[0-9]*\.?[0-9]+(?:[eE][-+]?[0-9]+)?)")
_INT = re.compile(r"[-+]?(?:0x[0-9a-fA-F]+|[0-9]+)")


class DenseParser(ParserBase):
    """Mixin: ``dense<...>`` / ``dense_resource<...>`` attributes."""

    def parse_dense(self) -> DenseAttr:
        lex = self.lex
        kw = lex.next()
        lex.expect("<")
        if kw.text == "dense_resource":
            key_tok = lex.next()
            if key_tok.kind not in ("ident", "string"):
                raise lex.error(f"expected a resource key, found {describe(key_tok)}", key_tok.pos)
            key = key_tok.text.strip('"')
            lex.expect(">", "to close dense_resource")
            lex.expect(":", "before the type of a dense_resource")
            typ = self._dense_type(kw.pos)
            attr = DenseAttr(None, typ, "resource", key, fill=lambda: np.zeros(typ.shape, numpy_dtype(typ.element)))
            self.pending_resources.append((attr, lex.loc(key_tok.pos)))
            return attr
        body_start = lex.save()
        if lex.peek().kind == "string":
            hex_tok = lex.next()
            lex.expect(">", "to close the dense literal")
            lex.expect(":", "before the type of a dense literal")
            typ = self._dense_type(kw.pos)
            data = hex_span(lex.text, hex_tok.pos + 1, hex_tok.pos + len(hex_tok.text) - 1)
            if data is None:
                raise lex.error('a dense hex literal must be "0x" followed by hex digits', hex_tok.pos)
            check_element_bytes(lex, data.nbytes, typ, hex_tok.pos, allow_splat=True)
            return DenseAttr(None, typ, "hex", hex_data=data)
        close = lex.balanced(body_start - 1)
        body = lex.text[body_start : close - 1]
        lex.restore(close)
        lex.expect(":", "before the type of a dense literal")
        typ = self._dense_type(kw.pos)
        return DenseAttr(_array_from_text(lex, body, typ, body_start), typ, "list")

    def _dense_type(self, pos: int) -> TensorType:
        typ = self.parse_type()
        lex = self.lex
        if not isinstance(typ, TensorType):
            raise lex.error(f"a dense literal needs a tensor type, found '{typ}'", pos)
        try:
            if not is_known_element(typ.element.name):
                raise ValueError
            numpy_dtype(typ.element)
        except ValueError:
            raise lex.error(f"unsupported element type {typ.element} in a dense literal", pos) from None
        if typ.num_elements > MAX_CONSTANT_ELEMENTS:
            raise lex.error(
                f"constant of {typ.num_elements} elements is too large (the limit is {MAX_CONSTANT_ELEMENTS})", pos
            )
        return typ


def _element(lex: Lexer, t: str, elem: ScalarType, pos: int) -> complex | float | int:
    """One element of a dense list, checked against the element type (a complex one: ``(re,im)``)."""
    if elem.is_complex:
        re_im = t[1:-1].split(",") if t.startswith("(") and t.endswith(")") else []
        if len(re_im) != 2:
            raise lex.error(f"expected a complex element '(real,imaginary)', found '{t}'", pos)
        part = elem.complex_part
        return complex(_element(lex, re_im[0], part, pos), _element(lex, re_im[1], part, pos))
    if elem.name == "i1" and t in ("true", "false"):
        return int(t == "true")
    if elem.is_float:
        if not _FLOAT.fullmatch(t):
            raise lex.error(f"expected a floating-point element, found '{t}'", pos)
        return hex_float(t, elem) if "0x" in t else float(t)
    if not _INT.fullmatch(t):
        raise lex.error(f"expected an integer element of type {elem.name}, found '{t}'", pos)
    v = int(t, 16) if "0x" in t else int(t)
    if not int_in_range(v, elem):
        raise lex.error(f"element {v} does not fit in {elem.name}", pos)
    bits = 64 if elem.name == "index" else int(elem.name.lstrip("sui"))
    if not elem.name.startswith("ui") and v >= 2 ** (bits - 1) and bits > 1:
        v -= 2**bits  # a signless value written in its unsigned range: same bits
    return v


def _array_from_text(lex: Lexer, body: str, typ: TensorType, pos: int) -> np.ndarray:
    """``[[1.0, 2.0], [3.0, 4.0]]`` (nesting checked against the shape) or a splat scalar."""
    dtype = numpy_dtype(typ.element)
    toks = [(m.group(), pos + m.start()) for m in _DENSE_TOKEN.finditer(body)]
    if typ.element.is_complex:
        toks = _complex_elements(toks)
    if not toks:
        if typ.num_elements:
            raise lex.error(f"empty dense literal for {_fmt(typ)}, which has {typ.num_elements} elements", pos)
        return np.zeros(typ.shape, dtype)
    if toks[0][0] != "[":
        if len(toks) > 1:
            raise lex.error(f"expected '>' after a splat value, found '{toks[1][0]}'", toks[1][1])
        value = _element(lex, toks[0][0], typ.element, toks[0][1])
        with np.errstate(all="ignore"):
            return round_bf16(np.full(typ.shape, value, dtype=dtype), typ.element)
    values: list[complex | float | int] = []
    counts: list[int] = []  # items so far in each open list
    opens: list[int] = []
    expect_item = True
    end = len(toks)
    for i, (t, p) in enumerate(toks):
        if t == "[":
            if not expect_item:
                raise lex.error("expected ',' or ']' in a dense literal", p)
            if len(counts) == typ.rank:
                raise lex.error(f"dense literal is nested deeper than the rank {typ.rank} of {_fmt(typ)}", p)
            counts.append(0)
            opens.append(p)
            expect_item = True
        elif t == "]":
            if expect_item and counts and counts[-1]:
                raise lex.error("expected an element after ',' in a dense literal", p)
            dim = len(counts) - 1
            if counts[-1] != typ.shape[dim]:
                raise lex.error(
                    f"dense literal has {counts[-1]} element(s) in dimension {dim}, but {_fmt(typ)} has "
                    f"{typ.shape[dim]}",
                    opens[-1],
                )
            counts.pop()
            opens.pop()
            expect_item = False
            if not counts:
                end = i + 1
                break
            counts[-1] += 1
        elif t == ",":
            if expect_item:
                raise lex.error("expected an element before ',' in a dense literal", p)
            expect_item = True
        else:
            if not expect_item:
                raise lex.error(f"expected ',' or ']' in a dense literal, found '{t}'", p)
            if len(counts) != typ.rank:
                raise lex.error(f"element '{t}' at nesting depth {len(counts)}, but {_fmt(typ)} has rank {typ.rank}", p)
            values.append(_element(lex, t, typ.element, p))
            counts[-1] += 1
            expect_item = False
    if counts:
        raise lex.error("unclosed '[' in a dense literal", opens[-1])
    if end < len(toks):
        raise lex.error(f"unexpected '{toks[end][0]}' after the dense literal", toks[end][1])
    with np.errstate(all="ignore"):
        return round_bf16(np.array(values, dtype=dtype).reshape(typ.static_shape), typ.element)


def _complex_elements(toks: list[tuple[str, int]]) -> list[tuple[str, int]]:
    """``(``, re, ``,``, im, ``)`` tokens joined into one ``(re,im)`` element token."""
    out: list[tuple[str, int]] = []
    i = 0
    while i < len(toks):
        group = [t for t, _ in toks[i : i + 5]]
        if group[:1] == ["("] and len(group) == 5 and group[2] == "," and group[4] == ")":
            out.append(("".join(group), toks[i][1]))
            i += 5
        else:
            out.append(toks[i])
            i += 1
    return out


def round_bf16(a: np.ndarray, elem: ScalarType) -> np.ndarray:
    """bf16 values are held as float32: round a literal to the nearest bf16 (ties to even), as MLIR does."""
    if elem.name != "bf16":
        return a
    bits = a.astype(np.float32).view(np.uint32).astype(np.uint64)
    rounded = ((bits + 0x7FFF + ((bits >> 16) & 1)) >> 16 << 16).astype(np.uint32)
    quiet_nan = (bits & 0x80000000).astype(np.uint32) | np.uint32(0x7FC00000)
    return np.where(np.isnan(a), quiet_nan, rounded).view(np.float32)


def check_element_bytes(
    lex: Lexer, nbytes: int, typ: TensorType, pos: int, allow_splat: bool, what: str = "constant data"
) -> None:
    """``nbytes`` of element data must hold exactly ``typ``'s elements (or, with ``allow_splat``, one)."""
    size = nbytes // element_nbytes(typ.element)
    if allow_splat and size == 1 and typ.num_elements != 1:
        return
    if size < typ.num_elements:
        raise lex.error(
            f"{what} holds {size} elements ({nbytes} bytes) but {_fmt(typ)} needs {typ.num_elements}",
            pos,
        )
    if size > typ.num_elements:
        raise lex.error(f"{what} holds {size} elements, more than {_fmt(typ)} has", pos)


def hex_span(text: str, start: int, end: int) -> HexData | None:
    """``0x`` + an even number of hex digits in ``text[start:end]`` as a span, or None."""
    if not text.startswith("0x", start) or (end - start) % 2:
        return None
    m = HEX_DIGITS.match(text, start + 2, end)
    if m is None or m.end() != end:
        return None
    return HexData(text, start + 2, end)


def _fmt(t: TensorType) -> str:
    return "tensor<" + "".join(f"{d}x" for d in t.shape) + f"{t.element}>"
