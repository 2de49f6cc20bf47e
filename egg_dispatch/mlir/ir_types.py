"""Types of the in-memory IR (see ``mlir.ir``, which re-exports everything here)."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, cast

import numpy as np

if TYPE_CHECKING:
    from egg_dispatch.mlir.ir import Attr

__all__ = [
    "FLOAT_TYPES",
    "DispatchTensorType",
    "FunctionType",
    "OpaqueType",
    "ScalarType",
    "TensorType",
    "Type",
    "element_bits",
    "element_nbytes",
    "is_known_element",
    "numpy_dtype",
    "static_sizes",
]


class Type:
    """Base of all types."""


@dataclass(frozen=True)
class ScalarType(Type):
    """A builtin scalar: ``f32``, ``f16``, ``bf16``, ``f64``, the small floats (``f8E4M3FN``,
    ``f4E2M1FN``, ... ``FLOAT_TYPES``), ``i1``..``i64``, ``ui8``, ``index``, or ``complex<f32>`` (named
    as written)."""

    name: str

    def __str__(self) -> str:
        return self.name

    @property
    def is_float(self) -> bool:
        return self.name in FLOAT_TYPES

    @property
    def is_int(self) -> bool:
        return self.name == "index" or self.name.startswith(("i", "si", "ui"))

    @property
    def is_complex(self) -> bool:
        return self.name.startswith("complex<")

    @property
    def complex_part(self) -> ScalarType:
        """The type of a ``complex<T>``'s real and imaginary parts (asserted complex)."""
        assert self.is_complex, f"{self.name} is not a complex type"
        return ScalarType(self.name[len("complex<") : -1])


@dataclass(frozen=True)
class TensorType(Type):
    """A ranked tensor, optionally carrying an encoding attribute; a ``None`` dim is dynamic (``?``).

    A dynamic dim's value is an SSA ``index`` the op that has the type lists (``{%d}`` after the type,
    ``tensor.empty(%d)``, ...); ``mlir.shapes`` gives each one a symbolic size."""

    shape: tuple[int | None, ...]
    element: ScalarType
    encoding: Attr | None = None

    @property
    def rank(self) -> int:
        return len(self.shape)

    @property
    def is_static(self) -> bool:
        return None not in self.shape

    @property
    def static_shape(self) -> tuple[int, ...]:
        """``shape`` as the ints it holds, for a type that ``is_static`` (asserted)."""
        assert self.is_static, f"a dynamic shape {self.shape} has no static sizes"
        return cast("tuple[int, ...]", self.shape)  # no None in it: is_static

    @property
    def num_dynamic(self) -> int:
        """How many ``?`` dims (the length of the ``{%d...}`` list the type needs)."""
        return sum(1 for d in self.shape if d is None)

    @property
    def num_elements(self) -> int:
        if None in self.shape:
            dims = "x".join("?" if d is None else str(d) for d in self.shape)
            raise ValueError(f"a dynamic shape ({dims}) has no static element count")
        return math.prod(self.static_shape)

    @property
    def nbytes(self) -> int:
        """Logical size in bytes (encodings may pad; the target layout decides that)."""
        return self.num_elements * element_nbytes(self.element)

    def without_encoding(self) -> TensorType:
        return TensorType(self.shape, self.element, None)


@dataclass(frozen=True)
class DispatchTensorType(Type):
    """``!iree_tensor_ext.dispatch.tensor<readonly:tensor<...>>`` -- a dispatch's binding."""

    access: str
    tensor: TensorType


@dataclass(frozen=True)
class FunctionType(Type):
    inputs: tuple[Type, ...]
    results: tuple[Type, ...]


@dataclass(frozen=True)
class OpaqueType(Type):
    """Any type we do not model (``!hal.buffer_view``, ``!hal.device``, ...), kept as text."""

    text: str

    def __str__(self) -> str:
        return self.text


FLOAT_TYPES = {
    "f16": 16, "bf16": 16, "f32": 32, "f64": 64, "f80": 80, "f128": 128, "tf32": 19,
    "f8E5M2": 8, "f8E4M3": 8, "f8E4M3FN": 8, "f8E5M2FNUZ": 8, "f8E4M3FNUZ": 8, "f8E4M3B11FNUZ": 8,
    "f8E3M4": 8, "f8E8M0FNU": 8, "f6E2M3FN": 6, "f6E3M2FN": 6, "f4E2M1FN": 4,
}  # fmt: skip
"""MLIR's builtin float types and their bit widths (``FloatType::getWidth``)."""

_ELEMENT_BITS = {
    "i1": 1, "i4": 4, "i8": 8, "si8": 8, "ui8": 8, "i16": 16, "ui16": 16, "si16": 16,
    "i32": 32, "si32": 32, "ui32": 32, "i64": 64, "si64": 64, "ui64": 64, "index": 64,
    **FLOAT_TYPES,
}  # fmt: skip

_NUMPY = {
    "i1": np.bool_, "i8": np.int8, "si8": np.int8, "ui8": np.uint8, "i16": np.int16, "si16": np.int16,
    "ui16": np.uint16, "i32": np.int32, "si32": np.int32, "ui32": np.uint32, "i64": np.int64,
    "si64": np.int64, "ui64": np.uint64, "index": np.int64, "f16": np.float16, "f32": np.float32,
    "f64": np.float64, "complex<f32>": np.complex64, "complex<f64>": np.complex128,
}  # fmt: skip


def static_sizes(dims: Sequence[int | None]) -> tuple[int, ...] | None:
    """``dims`` as ints, or None when one of them is dynamic (None)."""
    known = tuple(d for d in dims if d is not None)
    return known if len(known) == len(dims) else None


def element_bits(t: ScalarType) -> int:
    """Bit width of one element (a complex one: both parts)."""
    if t.is_complex:
        return 2 * element_bits(t.complex_part)
    return _ELEMENT_BITS[t.name]


def element_nbytes(t: ScalarType) -> int:
    """Storage bytes of one element, as IREE rounds them: whole bytes, then a power of two (sub-byte
    types take one byte, ``f80`` 16); a complex one holds two of its part."""
    if t.is_complex:
        return 2 * element_nbytes(t.complex_part)
    nbytes = (_ELEMENT_BITS[t.name] + 7) // 8
    return 1 << (nbytes - 1).bit_length()


def numpy_dtype(t: ScalarType) -> np.dtype:
    """The NumPy dtype that holds values of ``t``; bf16 is held as float32 (NumPy has no bf16); the
    small floats (f8, f6, f4), tf32, f80 and f128 have none (a ValueError naming the type)."""
    if t.name == "bf16":
        return np.dtype(np.float32)
    try:
        return np.dtype(_NUMPY[t.name])
    except KeyError:
        raise ValueError(f"no NumPy dtype for element type {t.name}") from None


def is_known_element(name: str) -> bool:
    """Whether ``name`` is an element type whose size is known (complex ones: of a known part)."""
    if name.startswith("complex<") and name.endswith(">"):
        return is_known_element(name[len("complex<") : -1])
    return name in _ELEMENT_BITS
