"""In-memory IR for the MLIR subset egg_dispatch reads: modules, operations, values, types, attributes.

The IR is deliberately generic (an op is a name, operands, results, attributes and regions, as in
MLIR's generic form) so that ops we do not model survive a round trip; the ops we *do* model store
their custom-syntax pieces as ordinary attributes with fixed keys (see ``mlir.ops``).
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field

import numpy as np

__all__ = [
    "AffineMapAttr",
    "ArrayAttr",
    "Attr",
    "Block",
    "BoolAttr",
    "DenseAttr",
    "DialectAttr",
    "DictAttr",
    "DispatchTensorType",
    "EncodingAttr",
    "FloatAttr",
    "FunctionType",
    "IntAttr",
    "Loc",
    "Module",
    "OpaqueType",
    "Operation",
    "Region",
    "ScalarType",
    "StrAttr",
    "SymbolRefAttr",
    "TensorType",
    "Type",
    "TypeAttr",
    "UnitAttr",
    "Value",
    "element_nbytes",
    "numpy_dtype",
]


@dataclass(frozen=True)
class Loc:
    """A source position; ``line`` and ``col`` are 1-based, as compilers print them."""

    file: str
    line: int
    col: int

    def __str__(self) -> str:
        return f"{self.file}:{self.line}:{self.col}"


# ----------------------------------------------------------------------------------------------- types


class Type:
    """Base of all types."""


@dataclass(frozen=True)
class ScalarType(Type):
    """A builtin scalar: ``f32``, ``f16``, ``bf16``, ``f64``, ``i1``..``i64``, ``ui8``, ``index``."""

    name: str

    def __str__(self) -> str:
        return self.name

    @property
    def is_float(self) -> bool:
        return self.name in ("f16", "bf16", "f32", "f64")

    @property
    def is_int(self) -> bool:
        return self.name == "index" or self.name.startswith(("i", "si", "ui"))


@dataclass(frozen=True)
class TensorType(Type):
    """A ranked, statically shaped tensor, optionally carrying an encoding attribute."""

    shape: tuple[int, ...]
    element: ScalarType
    encoding: Attr | None = None

    @property
    def rank(self) -> int:
        return len(self.shape)

    @property
    def num_elements(self) -> int:
        return int(np.prod(self.shape, dtype=np.int64)) if self.shape else 1

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


_ELEMENT_BITS = {
    "i1": 1, "i4": 4, "i8": 8, "si8": 8, "ui8": 8, "i16": 16, "ui16": 16, "si16": 16,
    "i32": 32, "si32": 32, "ui32": 32, "i64": 64, "si64": 64, "ui64": 64, "index": 64,
    "f16": 16, "bf16": 16, "f32": 32, "f64": 64,
}  # fmt: skip

_NUMPY = {
    "i1": np.bool_, "i8": np.int8, "si8": np.int8, "ui8": np.uint8, "i16": np.int16, "si16": np.int16,
    "ui16": np.uint16, "i32": np.int32, "si32": np.int32, "ui32": np.uint32, "i64": np.int64,
    "si64": np.int64, "ui64": np.uint64, "index": np.int64, "f16": np.float16, "f32": np.float32,
    "f64": np.float64,
}  # fmt: skip


def element_nbytes(t: ScalarType) -> int:
    """Storage bytes of one element (sub-byte types round up to one byte)."""
    return max(1, _ELEMENT_BITS[t.name] // 8)


def numpy_dtype(t: ScalarType) -> np.dtype:
    """The NumPy dtype that holds values of ``t``; bf16 is held as float32 (NumPy has no bf16)."""
    if t.name == "bf16":
        return np.dtype(np.float32)
    try:
        return np.dtype(_NUMPY[t.name])
    except KeyError:
        raise ValueError(f"no NumPy dtype for element type {t.name}") from None


def is_known_element(name: str) -> bool:
    return name in _ELEMENT_BITS


# ------------------------------------------------------------------------------------------ attributes


class Attr:
    """Base of all attributes."""


@dataclass(frozen=True)
class UnitAttr(Attr):
    pass


@dataclass(frozen=True)
class BoolAttr(Attr):
    value: bool


@dataclass(frozen=True)
class IntAttr(Attr):
    value: int
    type: Type | None = None


@dataclass(frozen=True)
class FloatAttr(Attr):
    value: float
    type: Type | None = None
    text: str | None = field(default=None, compare=False)
    """The literal as written (keeps hex float spellings and printed precision)."""


@dataclass(frozen=True)
class StrAttr(Attr):
    value: str


@dataclass(frozen=True)
class SymbolRefAttr(Attr):
    name: str


@dataclass(frozen=True)
class TypeAttr(Attr):
    type: Type


@dataclass(frozen=True)
class ArrayAttr(Attr):
    items: tuple[Attr, ...]


@dataclass(frozen=True)
class DictAttr(Attr):
    items: tuple[tuple[str, Attr], ...]

    def get(self, key: str) -> Attr | None:
        for k, v in self.items:
            if k == key:
                return v
        return None


@dataclass(frozen=True)
class AffineMapAttr(Attr):
    """``affine_map<(d0, d1)[s0] -> (d1, d0 + 1)>``.

    Results are expression trees: ``("d", i)``, ``("s", i)``, ``("c", value)`` or
    ``(op, lhs, rhs)`` with op in ``+ - * floordiv ceildiv mod``.
    """

    num_dims: int
    num_symbols: int
    results: tuple[tuple, ...]

    def dim_positions(self) -> tuple[int, ...] | None:
        """For a projected permutation (every result a plain dim): the dim of each result."""
        if all(r[0] == "d" for r in self.results):
            return tuple(r[1] for r in self.results)
        return None


class DenseAttr(Attr):
    """``dense<...>`` / ``dense_resource<...>`` elements with their values as a NumPy array.

    ``form`` remembers how it was written (``list``, ``splat``, ``hex`` or ``resource``), so the printer
    can write it back the same way; equality compares the type and the values only.
    """

    __slots__ = ("array", "form", "resource_key", "type")

    def __init__(self, array: np.ndarray, type: TensorType, form: str = "list", resource_key: str | None = None):
        self.array = array
        self.type = type
        self.form = form
        self.resource_key = resource_key

    @property
    def is_splat(self) -> bool:
        flat = self.array.reshape(-1)
        return flat.size > 0 and bool(np.all(flat == flat[0]))

    def __eq__(self, other: object) -> bool:
        return (
            isinstance(other, DenseAttr)
            and self.type == other.type
            and self.array.shape == other.array.shape
            and np.array_equal(self.array, other.array, equal_nan=self.array.dtype.kind == "f")
        )

    def __hash__(self) -> int:
        return hash((self.type, self.array.tobytes()))

    def __repr__(self) -> str:
        return f"DenseAttr({self.form}, {self.type}, shape={self.array.shape})"


@dataclass(frozen=True)
class EncodingAttr(Attr):
    """``#iree_encoding.encoding<operand_index = 0 : index, op_type = matmul, ...>``.

    ``user_indexing_maps`` entries are maps or (after bubbling) tuples of maps; ``iteration_sizes``
    holds ``None`` for ``?``.
    """

    operand_index: int
    op_type: str
    element_types: tuple[ScalarType, ...]
    user_indexing_maps: tuple[AffineMapAttr | tuple[AffineMapAttr, ...], ...] | None = None
    iteration_sizes: tuple[int | None, ...] | None = None
    original_element_type: ScalarType | None = None
    operand_index_type: str = "index"


@dataclass(frozen=True)
class DialectAttr(Attr):
    """Any dialect attribute we do not model (``#hal.device.target<...>``), kept verbatim."""

    text: str


# ------------------------------------------------------------------------------------ values and ops


class Value:
    """An SSA value: an op result or a block argument. Identity is object identity."""

    __slots__ = ("index", "name", "owner", "type")

    def __init__(self, name: str, type: Type, owner: Operation | Block | None = None, index: int = 0):
        self.name = name
        self.type = type
        self.owner = owner
        self.index = index

    def __repr__(self) -> str:
        return f"%{self.name}"


@dataclass(eq=False)
class Block:
    args: list[Value] = field(default_factory=list)
    ops: list[Operation] = field(default_factory=list)
    label: str | None = None


@dataclass(eq=False)
class Region:
    blocks: list[Block] = field(default_factory=list)

    @property
    def entry(self) -> Block:
        return self.blocks[0]


@dataclass(eq=False)
class Operation:
    """One op. ``attributes`` hold both inherent (custom-syntax) and discardable attributes.

    ``opaque_text`` is set for ops we parse generically (an unknown custom syntax): the printer then
    writes that text back verbatim, and the op is an opaque barrier for every later stage.
    """

    name: str
    operands: list[Value] = field(default_factory=list)
    results: list[Value] = field(default_factory=list)
    attributes: dict[str, Attr] = field(default_factory=dict)
    regions: list[Region] = field(default_factory=list)
    loc: Loc | None = None
    opaque_text: str | None = None

    @property
    def result(self) -> Value:
        return self.results[0]

    @property
    def dialect(self) -> str:
        return self.name.split(".", 1)[0]

    def walk(self) -> Iterator[Operation]:
        """Pre-order walk of this op and every op nested in its regions."""
        yield self
        for region in self.regions:
            for block in region.blocks:
                for op in block.ops:
                    yield from op.walk()


@dataclass(eq=False)
class Module:
    """A parsed file: top-level ops (functions, globals, initializers, opaque ops)."""

    ops: list[Operation] = field(default_factory=list)
    name: str | None = None
    attributes: dict[str, Attr] = field(default_factory=dict)
    aliases: dict[str, Attr | Type] = field(default_factory=dict)
    """Attribute/type aliases as declared in the file (already resolved inside the IR)."""
    resources: dict[str, bytes] = field(default_factory=dict)
    """``dialect_resources`` blobs (builtin), raw bytes including the 4-byte alignment header."""
    file: str = "<input>"
    has_module_op: bool = False
    warnings: list[str] = field(default_factory=list)

    def walk(self) -> Iterator[Operation]:
        for op in self.ops:
            yield from op.walk()

    def functions(self) -> list[Operation]:
        return [op for op in self.ops if op.name in ("func.func", "util.func")]

    def function(self, name: str | None = None) -> Operation:
        """The function called ``name``; with no name, the first public one (or the only one)."""
        funcs = self.functions()
        if name is None:
            public = [f for f in funcs if f.attributes.get("sym_visibility") != StrAttr("private")]
            if not (public or funcs):
                raise KeyError("the module has no function")
            return (public or funcs)[0]
        for f in funcs:
            if f.attributes["sym_name"] == StrAttr(name):
                return f
        raise KeyError(f"no function @{name}")

    def globals(self) -> dict[str, Operation]:
        return {
            op.attributes["sym_name"].value: op  # type: ignore[attr-defined]
            for op in self.ops
            if op.name == "util.global"
        }
