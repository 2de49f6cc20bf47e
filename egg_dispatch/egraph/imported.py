"""The importer's product (``ImportedProgram``) and error, apart from the IR walk so later stages can share them."""

from __future__ import annotations

from dataclasses import dataclass, field

from egg_dispatch.egraph.terms import Expr, render
from egg_dispatch.mlir.ir import Attr, DenseAttr, EncodingAttr, Operation, ParameterAttr, TensorType, Type, Value
from egg_dispatch.mlir.symbolic import Dim, Domain

__all__ = ["SIZE_CODE_BASE", "ImportError_", "ImportedProgram", "Parameter"]

SIZE_CODE_BASE = -1000
"""Size codes are ``SIZE_CODE_BASE - i`` (far from IREE's ``-1`` for ``?`` in encodings)."""


class ImportError_(Exception):
    """The function cannot be imported (e.g. a result type we cannot represent)."""


@dataclass(frozen=True)
class Parameter:
    """A constant whose values live in a parameter file: its reference and its tensor type."""

    attr: ParameterAttr
    type: TensorType


@dataclass
class ImportedProgram:
    """The egglog program for one function plus the side tables the later stages need."""

    function: str
    program: list[str] = field(default_factory=list)
    """egglog commands (lets and analysis facts), in dependency order."""
    results: list[str] = field(default_factory=list)
    """The let name of each function result."""
    lets: dict[str, Expr] = field(default_factory=dict)
    """let name -> the term it binds (typed: ``egraph.terms``)."""
    let_types: dict[str, Type] = field(default_factory=dict)
    constants: dict[str, DenseAttr | Parameter] = field(default_factory=dict)
    """``Const`` name -> its inline values, or the parameter it reads."""
    ops: dict[str, Operation] = field(default_factory=dict)
    """Key of every ``Generic`` / ``Op`` / ``Contract`` term -> the op it stands for."""
    encodings: dict[str, EncodingAttr] = field(default_factory=dict)
    """Encoding term text -> the attribute."""
    unpriced_encodings: dict[str, Attr] = field(default_factory=dict)
    """Encoding term text of an encoding the cost model does not price (``#iree_encoding.testing<>``,
    ``layout``, ``padding``: ``(Enc -1 name text ...)``) -> the attribute as written. The target gives it
    no layout, so no rule that needs one moves it; set/unset_encodings of it and dispatches carry it."""
    captures: dict[str, list[Value]] = field(default_factory=dict)
    """Key of an ``Op`` whose body uses non-constant values from outside -> those values, in the
    order they follow the op's own operands in the term's input list."""
    arg_types: list[Type] = field(default_factory=list)
    result_types: list[Type] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    dims: dict[int, Dim] = field(default_factory=dict)
    """Size code (a negative number in a shape or slice vector) -> the symbolic size it stands for."""
    let_dims: dict[str, tuple[int, ...]] = field(default_factory=dict)
    """Let name -> its shape as the term language writes it (static sizes, size codes for ``?``)."""
    domains: dict[str, Domain] = field(default_factory=dict)
    """Argument size (``arg0.d1``) -> the values the program allows (``util.assume.int``, ``--assume``):
    what the legality facts must hold for."""
    arguments: dict[str, tuple[int, int]] = field(default_factory=dict)
    """The function's dynamic dimensions: name -> (data argument, dim)."""
    encoding_dims: dict[str, tuple[int, ...]] = field(default_factory=dict)
    """Encoding term text -> the sizes of its ``?`` iteration sizes (``encoding_dims{...}`` of the IR's
    set/unset_encoding, as term-vector entries), for emitting them back."""
    op_dims: dict[str, list[tuple[int, ...]]] = field(default_factory=dict)
    """Key of a ``Generic`` / ``Op`` term with a dynamic result -> each result's shape vector."""
    reshape_chains: list[tuple[tuple[str, ...], str]] = field(default_factory=list)
    """Keys of a chain of two or three static reshapes (first applied first) -> the key of the one
    ``flow.tensor.reshape`` it folds into (an op of ``ops`` the program never wrote)."""
    sized_reshape_chains: list[tuple[str, str, str, tuple[int, ...], tuple[int, ...]]] = field(default_factory=list)
    """Reshapes ``k1`` then ``k2``, one with a dynamic size -> the ``flow.tensor.reshape`` they fold into, the
    shape of the source it is composed for and its size operands (term-vector entries: the source's ``?``
    sizes, then the result's; rules/noop_reshape.egg conditions 9-11)."""
    sized_reshape_identities: list[tuple[str, str, tuple[int, ...]]] = field(default_factory=list)
    """Reshapes ``k1`` then ``k2``, one with a dynamic size, that give a source of this shape back with its
    own sizes (rules/noop_reshape.egg condition 12)."""
    slice_folds: list[tuple[str, tuple[int, ...], tuple[int, ...], tuple[int, ...], str]] = field(default_factory=list)
    """A static slice of a dense constant (its ``Const`` key, offsets, sizes, strides) -> the key of the
    constant it folds into (a constant of ``constants`` the program never wrote; rules/fold_constants.egg)."""
    op_folds: list[tuple[str, str, str]] = field(default_factory=list)
    """A static reshape or a ``linalg.transpose`` (its ``Op`` key) of a dense constant (its ``Const`` key)
    -> the key of the constant it folds into (rules/fold_constants.egg)."""
    size_sources: dict[str, Operation | None] = field(default_factory=dict)
    """An unknown size (``%d#0``: given by an op the size analysis does not see through) -> that op (None:
    a block argument), for the error of a plan that would need it."""

    @property
    def dynamic(self) -> bool:
        """Whether any shape has a dynamic size."""
        return bool(self.dims)

    def code(self, d: Dim | int) -> int:
        """The integer a shape vector holds for ``d``: its value when constant, else its size code."""
        if isinstance(d, int):
            return d
        if d.is_const:
            return d.value
        for c, known in self.dims.items():
            if known == d:
                return c
        c = SIZE_CODE_BASE - len(self.dims)
        self.dims[c] = d
        return c

    def dim(self, v: int) -> Dim:
        """The size a shape-vector entry stands for (a constant, or the size a code names)."""
        return self.dims[v] if v in self.dims else Dim.const(v)

    def shape(self, values: tuple[int, ...] | list[int]) -> tuple[Dim, ...]:
        """A shape vector's sizes."""
        return tuple(self.dim(v) for v in values)

    def text(self) -> str:
        return "\n".join(self.program)

    def expand(self, name: str) -> str:
        """The full term a let stands for, with every nested let inlined (for tests and messages)."""
        return render(self.lets[name], lambda n: self.expand(n) if n in self.lets else n)

    def counts(self) -> dict[str, int]:
        """How many lets of each head constructor: a quick summary of what was imported."""
        out: dict[str, int] = {}
        for term in self.lets.values():
            out[term.head] = out.get(term.head, 0) + 1
        return dict(sorted(out.items()))
