"""The term language: egglog sorts and constructors every rule family reads and writes.

Declared once, in egglog's own language (``SCHEMA``), so rules in ``rules/*.egg`` can match and
build these terms directly; Python builds terms as egglog text through the small helpers below
(sending text is ~10x faster than egglog-python's typed front end; docs/egglog.md §1.4).

This module is the one boundary between typed terms and egglog's text: the importer builds the
typed constructors below (``Slice``, ``SetEncoding``, ...: one frozen dataclass per ``Tensor``
constructor it writes, plus ``Results``), every later stage reads their attributes, and
``render`` turns one into egglog text, here and nowhere else. Encodings travel as their rendered
``Enc`` text (``enc``): a key that ``ImportedProgram.encodings`` maps to the attribute.

Sorts (names are stable: rules, tests and the extractor depend on them):

``Tensor`` -- a value in the program (scalars are rank-0 tensors):
  ``(Arg i)``                       i-th function argument
  ``(Const key)``                   a constant; its data lives in the import's constant table
  ``(Scalar literal type)``         a scalar ``arith.constant``
  ``(Size code)``                   a dynamic size (an ``index`` the function computes from its
                                    arguments' sizes; ``code`` keys ``ImportedProgram.dims``): a dispatch
                                    input like an argument, never a const-expr
  ``(Empty shape type)``            ``tensor.empty``
  ``(Fill value init)``             ``linalg.fill``
  ``(Slice src offsets sizes strides)``           ``tensor.extract_slice``
  ``(InsertSlice src dest offsets sizes strides)`` ``tensor.insert_slice``
  ``(Contract kind lhs rhs acc)``   matmul family; ``kind`` is the op name plus its loop maps
  ``(Generic key ins outs)``        ``linalg.generic``; ``key`` names its maps/iterators/body
  ``(SetEncoding t enc)`` / ``(UnsetEncoding t shape)``  ``iree_encoding`` ops
  ``(Pack t layout)`` / ``(Unpack t shape layout)`` / ``(Mmt4d lhs rhs acc)``  materialized forms
  ``(EncodedSlice t offsets sizes)`` a tile-aligned slice of an encoded (packed) tensor
  ``(Op key inputs result)``        any other op (reshape, transpose, attention, opaque ops, ...)
  ``(Dispatch t)``                  placement: t is computed by its own dispatch and stored
  ``(ConstEval t)``                 placement: t is computed once at module load into a global
``TList`` -- operand lists: ``(TNil)``, ``(TCons t rest)``
``Encoding`` -- ``(Enc operand_index op_type element_types maps iteration_sizes)`` mirrors
  ``#iree_encoding.encoding`` (element types and maps as canonical strings)
``Layout`` -- a target's resolution of an encoding: ``(Tiled inner_dims_pos inner_tiles
  outer_dims_perm)`` or ``(IdentityLayout)``
``Root`` -- ``(Results tlist)``: the function's results, the one root extraction starts from.

Analyses (functions the importer seeds and ``rules/analysis.egg`` extends): ``(shape t)``,
``(dtype t)``, ``(layout-of enc)``.

Dynamic sizes: a ``?`` dim of a shape (and a dynamic slice offset or size) is a negative *size code*
(``ImportedProgram.dims`` maps it to its symbolic ``mlir.symbolic.Dim``), so two tensors are the same
shape exactly when their sizes are the same expression of the arguments' sizes; encodings keep IREE's
``-1`` for ``?`` in their iteration sizes.

Never ``union`` t with ``(Dispatch t)``: the marker would become a self-loop and extraction would
drop it (docs/egglog.md §1.5, pitfall 4). A placement choice is a union at the consumer instead.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import ClassVar

__all__ = [
    "BOUNDARY",
    "COMPUTING",
    "CONSTRUCTORS",
    "PLACEMENTS",
    "SCHEMA",
    "STORED",
    "Arg",
    "Const",
    "ConstEval",
    "Contract",
    "Dispatch",
    "Empty",
    "Expr",
    "Fill",
    "Generic",
    "InsertSlice",
    "Mmt4d",
    "Op",
    "Results",
    "Scalar",
    "SetEncoding",
    "Size",
    "Slice",
    "UnsetEncoding",
    "enc",
    "enc_without_operand",
    "ivec",
    "quote",
    "render",
    "tlist",
]

SCHEMA = """
(sort IVec (Vec i64))
(sort Tensor)
(sort TList)
(datatype Encoding (Enc i64 String String String IVec))
(datatype Layout (Tiled IVec IVec IVec) (IdentityLayout))
(datatype Root (Results TList))
(constructor TNil () TList)
(constructor TCons (Tensor TList) TList)
(constructor Arg (i64) Tensor)
(constructor Const (String) Tensor)
(constructor Scalar (String String) Tensor)
(constructor Empty (IVec String) Tensor)
(constructor Fill (Tensor Tensor) Tensor)
(constructor Slice (Tensor IVec IVec IVec) Tensor)
(constructor InsertSlice (Tensor Tensor IVec IVec IVec) Tensor)
(constructor Contract (String Tensor Tensor Tensor) Tensor)
(constructor Generic (String TList TList) Tensor)
(constructor SetEncoding (Tensor Encoding) Tensor)
(constructor UnsetEncoding (Tensor IVec) Tensor)
(constructor Pack (Tensor Layout) Tensor)
(constructor Unpack (Tensor IVec Layout) Tensor)
(constructor Mmt4d (Tensor Tensor Tensor) Tensor)
(constructor EncodedSlice (Tensor IVec IVec) Tensor)
(constructor Op (String TList i64) Tensor)
(constructor Dispatch (Tensor) Tensor)
(constructor ConstEval (Tensor) Tensor)
(constructor Size (i64) Tensor)
(function shape (Tensor) IVec :merge old)
(function dtype (Tensor) String :merge old)
(function layout-of (Encoding) Layout :merge old)
"""

CONSTRUCTORS = (
    "Arg", "Const", "Scalar", "Empty", "Fill", "Slice", "InsertSlice", "Contract", "Generic",
    "SetEncoding", "UnsetEncoding", "Pack", "Unpack", "Mmt4d", "EncodedSlice", "Op", "Dispatch", "ConstEval",
    "Size",
)  # fmt: skip
"""Every ``Tensor`` constructor, in declaration order."""

PLACEMENTS = frozenset({"Dispatch", "ConstEval"})
"""Placement heads: the value is computed by a dispatch of its own (``Dispatch``) or once at module
load into a global (``ConstEval``), and stored."""

STORED = frozenset({"Arg", "Const"}) | PLACEMENTS
"""Heads whose value a dispatch reads from a buffer: arguments, constants and placed values."""

BOUNDARY = STORED | {"Scalar", "Size"}
"""Heads a dispatch reads as inputs, ``rules/analysis.egg``'s ``boundary`` relation: stored values,
scalars and dynamic sizes. Everything else is computed inside the dispatch that consumes it."""

COMPUTING = frozenset({"Generic", "Contract", "Mmt4d", "UnsetEncoding", "Unpack", "InsertSlice", "Fill", "Op"})
"""Heads of nodes that compute a value in the dispatch that holds them (an ``Op`` unless a reshape): a
reshape of one, under a ``Dispatch``, is a dispatch computing it, not a view between dispatches."""


def quote(s: str) -> str:
    """An egglog string literal."""
    return '"' + s.replace("\\", "\\\\").replace('"', '\\"') + '"'


def ivec(values: Iterable[int]) -> str:
    vals = " ".join(str(int(v)) for v in values)
    return f"(vec-of {vals})" if vals else "(vec-empty)"


def tlist(items: Sequence[str]) -> str:
    out = "(TNil)"
    for item in reversed(items):
        out = f"(TCons {item} {out})"
    return out


def enc(operand_index: int, op_type: str, element_types: str, maps: str, iteration_sizes: Sequence[int]) -> str:
    return f"(Enc {operand_index} {quote(op_type)} {quote(element_types)} {quote(maps)} {ivec(iteration_sizes)})"


def enc_without_operand(key: str) -> str:
    """An encoding key with its operand index left out: the rest of what the encoding says (the
    operation, element types, maps and iteration sizes), equal for the operands of one contraction."""
    return key.split(" ", 2)[2]


# -- typed terms: what the importer builds and later stages read --------------------------------------
LetName = str
"""A let's name (``$v12``): how a term refers to another (terms stay shallow, sharing explicit)."""


@dataclass(frozen=True)
class Expr:
    """A term of the start state, one let's worth: a constructor and its arguments, operands as let
    names. ``SORTS`` gives each field's egglog sort, which says how ``render`` writes it."""

    SORTS: ClassVar[tuple[str, ...]] = ()

    @property
    def head(self) -> str:
        """The constructor's name (``Slice``)."""
        return type(self).__name__

    def operands(self) -> tuple[LetName, ...]:
        """The lets it reads, in argument order (list arguments flattened)."""
        out: list[LetName] = []
        for sort, value in zip(self.SORTS, _values(self), strict=True):
            if sort == "Tensor":
                out.append(value)
            elif sort == "TList":
                out.extend(value)
        return tuple(out)


def _values(x: Expr) -> tuple:
    return tuple(getattr(x, f.name) for f in dataclasses.fields(x))


def render(x: Expr, let: Callable[[LetName], str] | None = None) -> str:
    """``x`` as egglog text; ``let`` writes each operand (default: its let name; ``ImportedProgram.expand``
    inlines the term instead)."""
    name = let or (lambda n: n)
    parts = [x.head]
    for sort, value in zip(x.SORTS, _values(x), strict=True):
        if sort == "Tensor":
            parts.append(name(value))
        elif sort == "TList":
            parts.append(tlist([name(v) for v in value]))
        elif sort == "IVec":
            parts.append(ivec(value))
        elif sort == "String":
            parts.append(quote(value))
        elif sort == "i64":
            parts.append(str(int(value)))
        else:  # Encoding: its key is its text
            parts.append(value)
    return "(" + " ".join(parts) + ")"


@dataclass(frozen=True)
class Arg(Expr):
    SORTS = ("i64",)
    index: int


@dataclass(frozen=True)
class Const(Expr):
    SORTS = ("String",)
    key: str


@dataclass(frozen=True)
class Scalar(Expr):
    SORTS = ("String", "String")
    literal: str
    type: str


@dataclass(frozen=True)
class Size(Expr):
    SORTS = ("i64",)
    code: int


@dataclass(frozen=True)
class Empty(Expr):
    SORTS = ("IVec", "String")
    shape: tuple[int, ...]
    element: str


@dataclass(frozen=True)
class Fill(Expr):
    SORTS = ("Tensor", "Tensor")
    value: LetName
    init: LetName


@dataclass(frozen=True)
class Slice(Expr):
    SORTS = ("Tensor", "IVec", "IVec", "IVec")
    source: LetName
    offsets: tuple[int, ...]
    sizes: tuple[int, ...]
    strides: tuple[int, ...]


@dataclass(frozen=True)
class InsertSlice(Expr):
    SORTS = ("Tensor", "Tensor", "IVec", "IVec", "IVec")
    source: LetName
    dest: LetName
    offsets: tuple[int, ...]
    sizes: tuple[int, ...]
    strides: tuple[int, ...]


@dataclass(frozen=True)
class Contract(Expr):
    SORTS = ("String", "Tensor", "Tensor", "Tensor")
    kind: str
    lhs: LetName
    rhs: LetName
    acc: LetName


@dataclass(frozen=True)
class Mmt4d(Expr):
    SORTS = ("Tensor", "Tensor", "Tensor")
    lhs: LetName
    rhs: LetName
    acc: LetName


@dataclass(frozen=True)
class Generic(Expr):
    SORTS = ("String", "TList", "TList")
    key: str
    ins: tuple[LetName, ...]
    outs: tuple[LetName, ...]


@dataclass(frozen=True)
class SetEncoding(Expr):
    SORTS = ("Tensor", "Encoding")
    source: LetName
    encoding: str
    """The encoding's key (its ``Enc`` text)."""


@dataclass(frozen=True)
class UnsetEncoding(Expr):
    SORTS = ("Tensor", "IVec")
    source: LetName
    shape: tuple[int, ...]


@dataclass(frozen=True)
class Op(Expr):
    SORTS = ("String", "TList", "i64")
    key: str
    inputs: tuple[LetName, ...]
    result: int


@dataclass(frozen=True)
class Dispatch(Expr):
    SORTS = ("Tensor",)
    value: LetName


@dataclass(frozen=True)
class ConstEval(Expr):
    SORTS = ("Tensor",)
    value: LetName


@dataclass(frozen=True)
class Results(Expr):
    """The root: the function's results."""

    SORTS = ("TList",)
    values: tuple[LetName, ...]
