"""In-memory IR for the MLIR subset egg_dispatch reads: modules, operations, values, types, attributes.

The IR is deliberately generic (an op is a name, operands, results, attributes and regions, as in
MLIR's generic form) so that ops we do not model survive a round trip; the ops we *do* model store
their custom-syntax pieces as ordinary attributes with fixed keys (see ``mlir.ops``).
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field, replace
from typing import cast

import numpy as np

from egg_dispatch.mlir.elements import HexData, decode_elements, element_bytes, storage_nbytes
from egg_dispatch.mlir.ir_types import (
    FLOAT_TYPES,
    DispatchTensorType,
    FunctionType,
    OpaqueType,
    ScalarType,
    TensorType,
    Type,
    element_bits,
    element_nbytes,
    is_known_element,
    numpy_dtype,
)

__all__ = [
    "ABI_SHELL_OPS",
    "FLOAT_TYPES",
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
    "ParameterAttr",
    "Region",
    "ScalarType",
    "StrAttr",
    "SymbolRefAttr",
    "TensorType",
    "Type",
    "TypeAttr",
    "UnitAttr",
    "Value",
    "element_bits",
    "element_nbytes",
    "is_known_element",
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

    @property
    def is_identity(self) -> bool:
        """``(d0, ..., dn) -> (d0, ..., dn)``, no symbols."""
        return self.num_symbols == 0 and self.dim_positions() == tuple(range(self.num_dims))


class DenseAttr(Attr):
    """``dense<...>`` / ``dense_resource<...>`` elements; ``array`` gives their values as a NumPy array.

    The values are decoded on first use from where the input wrote them (``hex_data``: a span of the
    input, see ``mlir.elements``), or produced by ``fill`` (an elided resource), so that a model's
    weights cost nothing until something evaluates them. ``form`` remembers how the literal was
    written (``list``, ``splat``, ``hex`` or ``resource``), so the printer can write it back the same
    way; equality compares the type and the values only.
    """

    __slots__ = ("_array", "_fill", "_hex", "_skip", "form", "resource_key", "type")

    def __init__(
        self,
        array: np.ndarray | None,
        type: TensorType,
        form: str = "list",
        resource_key: str | None = None,
        *,
        hex_data: HexData | None = None,
        skip: int = 0,
        fill: Callable[[], np.ndarray] | None = None,
    ) -> None:
        if array is None and hex_data is None and fill is None:
            raise ValueError("a DenseAttr needs an array, hex data or a fill")
        self._array = array
        self._hex = hex_data
        self._skip = skip
        """Bytes of ``hex_data`` before the elements (a resource blob's 4-byte alignment header)."""
        self._fill = fill
        self.type = type
        self.form = form
        self.resource_key = resource_key

    @property
    def array(self) -> np.ndarray:
        if self._array is None:
            if self._hex is not None:
                self._array = decode_elements(self._hex.tobytes(self._skip), self.type)
            else:
                assert self._fill is not None
                self._array = self._fill()
        return self._array

    @array.setter
    def array(self, value: np.ndarray) -> None:
        self._array, self._hex, self._fill = value, None, None

    def set_source(
        self, hex_data: HexData | None = None, skip: int = 0, fill: Callable[[], np.ndarray] | None = None
    ) -> None:
        """Where the values come from (the reader resolves a ``dense_resource`` once its blob is read)."""
        self._array, self._hex, self._skip, self._fill = None, hex_data, skip, fill

    @property
    def decoded(self) -> bool:
        """Whether the values have been materialized (tests check that exploring does not)."""
        return self._array is not None

    @property
    def hex_data(self) -> HexData | None:
        """The input's hex digits holding every element, while the values are the input's own."""
        if self._hex is not None and self._hex.nbytes - self._skip == storage_nbytes(self.type):
            return self._hex
        return None

    @property
    def is_splat(self) -> bool:
        if self._array is None and self._hex is not None:
            width = element_nbytes(self.type.element)
            count = (self._hex.nbytes - self._skip) // width
            if count == 1:
                return self.type.num_elements > 0
            return self._hex.repeats(self._skip, width)
        flat = self.array.reshape(-1)
        return flat.size > 0 and bool(np.all(flat == flat[0]))

    def first(self) -> np.number | np.bool_:
        """The first element (of a splat: its value) without decoding the others."""
        if self._array is None and self._hex is not None:
            width = element_nbytes(self.type.element)
            one = decode_elements(self._hex.byte(self._skip, width), TensorType((1,), self.type.element))
            return one.reshape(-1)[0]
        return self.array.reshape(-1)[0]

    def digest(self) -> str:
        """SHA-1 of the elements' bytes (read off the input's hex where the values are still the input's)."""
        data = self.hex_data
        if data is not None and self._array is None:
            return data.sha1(self._skip)
        return hashlib.sha1(element_bytes(self.array, self.type)).hexdigest()

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, DenseAttr) or self.type != other.type:
            return False
        a, b = self.hex_data, other.hex_data
        if a is not None and b is not None and self._array is None and other._array is None:
            return a.text[a.start + 2 * self._skip : a.end] == b.text[b.start + 2 * other._skip : b.end]
        return self.array.shape == other.array.shape and np.array_equal(
            self.array, other.array, equal_nan=self.array.dtype.kind == "f"
        )

    def __hash__(self) -> int:
        return hash((self.type, self.digest()))

    def __repr__(self) -> str:
        return f"DenseAttr({self.form}, {self.type})"


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

    def with_operand_map(self, operand_map: AffineMapAttr) -> EncodingAttr:
        """IREE's ``cloneWithNewOperandIndexingMap``: this encoding with ``operand_map`` appended to the
        maps of its own operand (the entry becomes a list), as bubbling and sinking encodings do."""
        maps = list(self.user_indexing_maps or ())
        entry = maps[self.operand_index]
        maps[self.operand_index] = (*(entry if isinstance(entry, tuple) else (entry,)), operand_map)
        return replace(self, user_indexing_maps=tuple(maps))


@dataclass(frozen=True)
class DialectAttr(Attr):
    """Any dialect attribute we do not model (``#hal.device.target<...>``), kept verbatim."""

    text: str


@dataclass(frozen=True)
class ParameterAttr(Attr):
    """``#flow.parameter.named<"scope"::"key">``: a tensor whose values live in a parameter file
    (``.irpa``, ``.safetensors``, ``.gguf``) that the runtime is given, not in the module. Its shape and
    element type come from where it is used (a ``util.global`` or ``flow.tensor.constant``)."""

    key: str
    scope: str | None = None
    dialect: str = "flow"
    """``flow`` or ``stream`` (both spellings occur in IREE's output)."""


ABI_SHELL_OPS = frozenset(
    {"util.null", "util.call", "hal.devices.get", "hal.fence.create", "hal.fence.await", "hal.fence.join"}
)
"""Ops of IREE's ABI wrappers (the sync ``@main`` that calls ``@main$async`` and waits on its fence):
kept verbatim as opaque ops without a warning, since no plan ever looks inside them."""

# ------------------------------------------------------------------------------------ values and ops


class Value:
    """An SSA value: an op result or a block argument. Identity is object identity."""

    __slots__ = ("index", "name", "owner", "type")

    def __init__(self, name: str, type: Type, owner: Operation | Block | None = None, index: int = 0) -> None:
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
    generic_form: bool = False
    """Read from MLIR's generic form (``"d.op"(...) : (...) -> ...``). Such an op whose name has a custom
    syntax is kept opaque, with ``opaque_text`` the generic text after the quoted name."""

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
    resources: dict[str, HexData] = field(default_factory=dict)
    """``dialect_resources`` blobs (builtin) as spans of the input, including the 4-byte alignment header."""
    file: str = "<input>"
    has_module_op: bool = False
    warnings: list[str] = field(default_factory=list)
    respelled: list[str] = field(default_factory=list)
    """Retired named ops the reader read as what they are now (``mlir.retired``), one entry per op: the
    file as written is not what IREE reads."""
    source_form: str | None = None
    """Where the text it was read from stands in IREE's pipeline (``mlir.forms.input_form``; None: built
    in memory). ``pipeline.prepare_input`` takes a module past global optimization as it is, without
    printing it to tell (IREE's own plan of a model is megabytes)."""

    def walk(self) -> Iterator[Operation]:
        for op in self.ops:
            yield from op.walk()

    def functions(self) -> list[Operation]:
        """Every function, declarations (no body: ``func.func private @f(tensor<4xf32>)``) too."""
        return [op for op in self.ops if op.name in ("func.func", "util.func")]

    def defined_functions(self) -> list[Operation]:
        """The functions with a body (the ones there is a program in)."""
        return [op for op in self.functions() if op.regions]

    def function(self, name: str | None = None) -> Operation:
        """The function called ``name``; with no name, the first public one (or the only one) with a body."""
        funcs = self.functions()
        if name is None:
            funcs = self.defined_functions()
            public = [f for f in funcs if f.attributes.get("sym_visibility") != StrAttr("private")]
            if not (public or funcs):
                raise KeyError("the module has no function" + (" with a body" if self.functions() else ""))
            computing = [f for f in public if not _is_abi_wrapper(f)]
            return (computing or public or funcs)[0]
        for f in funcs:
            if f.attributes["sym_name"] == StrAttr(name):
                return f
        raise KeyError(f"no function @{name}")

    def globals(self) -> dict[str, Operation]:
        return {
            cast(StrAttr, op.attributes["sym_name"]).value: op  # a global's sym_name is a StrAttr
            for op in self.ops
            if op.name == "util.global"
        }


def _is_abi_wrapper(func: Operation) -> bool:
    """IREE's sync wrapper of an async entry point: it only calls the other function and waits."""
    ops = [op for op in func.walk() if op is not func]
    return any(op.name == "util.call" for op in ops) and all(
        op.name in ABI_SHELL_OPS or op.name in ("arith.constant", "util.return") for op in ops
    )
