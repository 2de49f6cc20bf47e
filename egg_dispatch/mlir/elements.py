"""Element data of constants: bytes <-> NumPy arrays, and hex spans of the input decoded only on demand.

A model's weights are most of its file: a GPT-2-sized export holds half a gigabyte of hex. The
reader keeps each ``dense<"0x...">`` literal and each ``dialect_resources`` blob as a ``HexData``,
a span of the input text, and decodes it (with NumPy) only when a value is needed: evaluation,
constant folding, or printing a literal in another form. Everything else a plan needs (shape,
element type, byte size, whether it is a splat, a content digest for naming) is read off the span.
"""

from __future__ import annotations

import hashlib
import re

import numpy as np

from egg_dispatch.mlir.ir_types import TensorType, element_nbytes, numpy_dtype

__all__ = ["HEX_DIGITS", "HexData", "decode_elements", "element_bytes", "storage_nbytes"]

HEX_DIGITS = re.compile(r"[0-9a-fA-F]*")
_CHUNK = 1 << 22
"""Hex digits decoded at a time when hashing a span (4 MiB: constant memory for any size)."""


class HexData:
    """Hex digits ``text[start:end]`` of the input (no ``0x``): bytes decoded only when asked for."""

    __slots__ = ("end", "start", "text")

    def __init__(self, text: str, start: int, end: int) -> None:
        self.text = text
        self.start = start
        self.end = end

    def __reduce__(self) -> tuple[type[HexData], tuple[str, int, int]]:
        """Pickled as its own digits, not the whole input they are a span of."""
        return HexData, (self.text[self.start : self.end], 0, self.end - self.start)

    @classmethod
    def of_bytes(cls, data: bytes) -> HexData:
        text = data.hex().upper()
        return cls(text, 0, len(text))

    @property
    def nbytes(self) -> int:
        return (self.end - self.start) // 2

    def hex(self) -> str:
        """The digits as written (upper-cased, as MLIR prints them)."""
        return self.text[self.start : self.end].upper()

    def tobytes(self, skip: int = 0) -> bytes:
        """The bytes, without the first ``skip`` (a resource blob's 4-byte alignment header)."""
        return bytes.fromhex(self.text[self.start + 2 * skip : self.end])

    def byte(self, i: int, n: int = 1) -> bytes:
        """``n`` bytes at byte offset ``i``."""
        return bytes.fromhex(self.text[self.start + 2 * i : self.start + 2 * (i + n)])

    def repeats(self, skip: int, width: int) -> bool:
        """Whether the bytes after ``skip`` are one ``width``-byte group repeated (a splat), read off the
        text: ``n`` non-overlapping occurrences of a ``2·width``-digit group in exactly ``n`` groups of
        digits can only tile them."""
        a, w = self.start + 2 * skip, 2 * width
        n, rest = divmod(self.end - a, w)
        if n == 0 or rest:
            return False
        return self.text.count(self.text[a : a + w], a, self.end) == n

    def sha1(self, skip: int = 0) -> str:
        """SHA-1 (hex) of the bytes after ``skip``, decoded a chunk at a time."""
        h = hashlib.sha1()
        for i in range(self.start + 2 * skip, self.end, _CHUNK):
            h.update(bytes.fromhex(self.text[i : min(i + _CHUNK, self.end)]))
        return h.hexdigest()


def decode_elements(data: bytes, typ: TensorType) -> np.ndarray:
    """Little-endian element bytes (``data`` holds exactly one element, a splat, or all of them) as an
    array of ``typ``'s shape; bf16 is widened to float32 and i1 is one byte per element."""
    dtype = numpy_dtype(typ.element)
    name = typ.element.name
    width = element_nbytes(typ.element)
    data = data[: len(data) // width * width]  # trailing bytes of a partial element are ignored, as MLIR does
    if name == "bf16":
        flat = (np.frombuffer(data, dtype="<u2").astype(np.uint32) << 16).view(np.float32)
    elif name == "i1":
        flat = np.frombuffer(data, dtype=np.uint8).astype(np.bool_)
    else:
        flat = np.frombuffer(data, dtype=dtype.newbyteorder("<"))
    if flat.size == 1 and typ.num_elements != 1:
        return np.full(typ.shape, flat[0], dtype=dtype)
    return flat.astype(dtype).reshape(typ.static_shape)  # static: num_elements above


def element_bytes(arr: np.ndarray, typ: TensorType) -> bytes:
    """The inverse of ``decode_elements``: every element, little-endian, in ``typ``'s storage."""
    name = typ.element.name
    if name == "bf16":
        return (arr.astype(np.float32).view(np.uint32) >> 16).astype("<u2").tobytes()
    if name == "i1":
        return arr.astype(np.uint8).tobytes()
    return arr.astype(arr.dtype.newbyteorder("<")).tobytes()


def storage_nbytes(typ: TensorType) -> int:
    """Bytes of every element of ``typ`` in the file's storage (what a blob or hex literal holds)."""
    return typ.num_elements * element_nbytes(typ.element)
