"""Element data of ``dense<...>`` and ``dense_resource`` literals as NumPy arrays."""

from __future__ import annotations

import re
import struct
from typing import TYPE_CHECKING

import numpy as np

from .ir import ScalarType, TensorType, Type, numpy_dtype

if TYPE_CHECKING:
    from .parser import Parser

_NUM = re.compile(r"[-+]?(?:0x[0-9a-fA-F]+|nan|inf|[0-9]*\.?[0-9]+(?:[eE][-+]?[0-9]+)?)|true|false")
_JUNK = re.compile(r"[\s\[\](),]+")


def _array_from_text(p: Parser, body: str, typ: TensorType, pos: int) -> np.ndarray:
    dtype = numpy_dtype(typ.element)
    stripped = _JUNK.sub(" ", body).strip()
    tokens = stripped.split() if stripped else []
    values: list[float | int] = []
    for t in tokens:
        if not _NUM.fullmatch(t):
            raise p.lex.error(f"bad element '{t}' in a dense literal", pos)
        if t in ("true", "false"):
            values.append(1 if t == "true" else 0)
        elif t.lower().startswith(("0x", "-0x")):
            values.append(_hex_float(t, typ.element) if typ.element.is_float else int(t, 16))
        else:
            values.append(float(t) if typ.element.is_float else int(float(t)))
    if "[" in body:
        depth = body.lstrip().index(next(c for c in body.lstrip() if c != "["))
        if depth != typ.rank and not (len(values) == 1):
            raise p.lex.error(f"dense literal nesting depth {depth} does not match tensor rank {typ.rank}", pos)
    if len(values) == 1:
        return np.full(typ.shape, values[0], dtype=dtype)
    if len(values) != typ.num_elements:
        raise p.lex.error(f"dense literal has {len(values)} elements but {_fmt(typ)} needs {typ.num_elements}", pos)
    return np.array(values, dtype=dtype).reshape(typ.shape)


def _array_from_bytes(p: Parser, data: bytes, typ: TensorType, pos: int, allow_splat: bool) -> np.ndarray:
    dtype = numpy_dtype(typ.element)
    if typ.element.name == "bf16":
        raw = np.frombuffer(data[: len(data) // 2 * 2], dtype="<u2").astype(np.uint32) << 16
        flat = raw.view(np.float32)
    elif typ.element.name == "i1":
        flat = np.frombuffer(data, dtype=np.uint8).astype(np.bool_)
    else:
        flat = np.frombuffer(data[: len(data) // dtype.itemsize * dtype.itemsize], dtype=dtype.newbyteorder("<"))
    if allow_splat and flat.size == 1 and typ.num_elements != 1:
        return np.full(typ.shape, flat[0], dtype=dtype)
    if flat.size < typ.num_elements:
        raise p.lex.error(
            f"constant data holds {flat.size} elements ({len(data)} bytes) but {_fmt(typ)} needs {typ.num_elements}",
            pos,
        )
    if flat.size > typ.num_elements:
        raise p.lex.error(f"constant data holds {flat.size} elements, more than {_fmt(typ)} has", pos)
    return flat.astype(dtype).reshape(typ.shape)


def _fmt(t: TensorType) -> str:
    return "tensor<" + "".join(f"{d}x" for d in t.shape) + f"{t.element}>"


def _hex_bytes(s: str) -> bytes | None:
    if not s.startswith("0x") or len(s) % 2:
        return None
    try:
        return bytes.fromhex(s[2:])
    except ValueError:
        return None


def _hex_float(text: str, typ: Type | None) -> float:
    """MLIR writes special floats as their bit pattern (``0x7FC00000``)."""
    neg = text.startswith("-")
    bits = int(text.lstrip("-"), 16)
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


def resource_array(p: Parser, blob: bytes, typ: TensorType, pos: int) -> np.ndarray:
    """Decode a ``dialect_resources`` blob: a 4-byte little-endian alignment, then the raw elements."""
    if len(blob) < 4:
        raise p.lex.error("resource blob is shorter than its 4-byte alignment header", pos)
    return _array_from_bytes(p, blob[4:], typ, pos, allow_splat=False)
