"""How MLIR spells its literals, both ways: strings, ``@symbols``, floats (also as bit patterns) and
integers that must fit their type.

The reader (``attributes``, ``dense``, ``syntax*``) and the printer (``printer`` and the dialects'
printing functions) each need the other's half of these: a string the printer escapes is one
``unescape`` reads back, a NaN ``float_bits`` writes is one ``hex_float`` reads. They are kept in one
module, which imports neither side, so that neither side imports the other for them.
"""

from __future__ import annotations

import re
import struct

import numpy as np

from egg_dispatch.mlir.ir import ScalarType, Type
from egg_dispatch.mlir.lexer import Lexer, Token

__all__ = [
    "float_bits",
    "float_str",
    "hex_float",
    "int_in_range",
    "string_literal",
    "symbol",
    "symbol_name",
    "unescape",
]

_ESCAPE = re.compile(r"\\(?:([\\\"])|([nt])|([0-9a-fA-F]{2}))|\\")


# ------------------------------------------------------------------------------------- strings
def string_literal(s: str) -> str:
    """A quoted MLIR string: quotes, backslashes and unprintable bytes escaped (``\\XX``), as MLIR does."""
    if s.isprintable() and '"' not in s and "\\" not in s:  # nothing to escape (every escape below is
        return '"' + s + '"'  # of a quote, a backslash or a character Python calls unprintable)
    out: list[str] = []
    for ch in s:
        if ch in ('"', "\\"):
            out.append("\\" + ch)
        elif ch == "\n":
            out.append("\\n")
        elif ch == "\t":
            out.append("\\t")
        elif ord(ch) < 0x20 or ord(ch) == 0x7F:
            out.append(f"\\{ord(ch):02X}")
        elif 0xDC80 <= ord(ch) <= 0xDCFF:  # a byte that is not UTF-8, kept by the reader as a surrogate escape
            out.append(f"\\{ord(ch) - 0xDC00:02X}")
        else:
            out.append(ch)
    return '"' + "".join(out) + '"'


def unescape(lex: Lexer, tok: Token) -> str:
    """The value of a string token: MLIR escapes are ``\\\\``, ``\\"``, ``\\n``, ``\\t`` and ``\\XX`` (a hex byte)."""
    body = tok.text[1:-1]
    if "\\" not in body:
        return body
    out = bytearray()
    i = 0
    for m in _ESCAPE.finditer(body):
        out += body[i : m.start()].encode("utf-8", "surrogateescape")
        if m.group(1):
            out += m.group(1).encode()
        elif m.group(2):
            out += b"\n" if m.group(2) == "n" else b"\t"
        elif m.group(3):
            out.append(int(m.group(3), 16))
        else:
            where = tok.pos + 1 + m.start()
            raise lex.error('bad escape in a string: expected \\\\, \\", \\n, \\t or two hex digits', where)
        i = m.end()
    out += body[i:].encode("utf-8", "surrogateescape")
    return out.decode("utf-8", "surrogateescape")


# ------------------------------------------------------------------------------------- symbols
def symbol(name: str) -> str:
    """``@name``, quoted when the name is not a bare identifier."""
    return f"@{name}" if re.fullmatch(r"[A-Za-z0-9_$.\-]+", name) else "@" + string_literal(name)


def symbol_name(lex: Lexer, tok: Token) -> str:
    """The name of a ``@symbol`` token (quoted names unescaped)."""
    if tok.text.startswith('@"'):
        return unescape(lex, Token("string", tok.text[1:], tok.pos + 1))
    return tok.text[1:]


# -------------------------------------------------------------------------------------- floats
def float_str(v: float | np.floating) -> str:
    """A finite float as MLIR writes it (``1.250000e+00`` style, shortest exact digits)."""
    if np.isnan(v) or np.isinf(v):
        return repr(float(v))
    s = np.format_float_scientific(v, unique=True, exp_digits=2)
    return s.replace(".e", ".0e")


def float_bits(v: float, name: str) -> str:
    """A float as its bit pattern in type ``name`` -- how MLIR spells NaN and infinities."""
    if name == "f16":
        return f"0x{int(np.array([v], dtype=np.float16).view(np.uint16)[0]):04X}"
    if name == "bf16":
        return f"0x{int(np.array([v], dtype=np.float32).view(np.uint32)[0]) >> 16:04X}"
    if name == "f32":
        return f"0x{int(np.array([v], dtype=np.float32).view(np.uint32)[0]):08X}"
    return f"0x{int(np.array([v], dtype=np.float64).view(np.uint64)[0]):016X}"


def hex_float(text: str, typ: Type | None) -> float:
    """The float a bit pattern (``0x7FC00000``) spells in ``typ`` (f32 when untyped): the inverse of
    ``float_bits``, how MLIR writes special floats."""
    neg = text.startswith("-")
    bits = int(text.lstrip("-+"), 16)
    name = typ.name if isinstance(typ, ScalarType) else "f32"
    if name == "f64":
        v = struct.unpack("<d", struct.pack("<Q", bits & (2**64 - 1)))[0]
    elif name == "f16":
        v = float(np.array([bits & 0xFFFF], dtype=np.uint16).view(np.float16)[0])
    elif name == "bf16":
        v = struct.unpack("<f", struct.pack("<I", (bits & 0xFFFF) << 16))[0]
    else:
        v = struct.unpack("<f", struct.pack("<I", bits & 0xFFFFFFFF))[0]
    return -v if neg else v


# ------------------------------------------------------------------------------------ integers
def int_in_range(value: int, typ: ScalarType) -> bool:
    """Whether ``value`` fits ``typ``: signless ints take either the signed or the unsigned range."""
    name = typ.name
    bits = 64 if name == "index" else int(name.lstrip("sui") or 0)
    if name.startswith("ui"):
        return 0 <= value < 2**bits
    if name.startswith("si"):
        return -(2 ** (bits - 1)) <= value < 2 ** (bits - 1)
    return -(2 ** (bits - 1)) <= value < 2**bits
