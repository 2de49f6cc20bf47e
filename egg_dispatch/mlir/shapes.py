"""Symbolic sizes: what every dynamic dimension of a function is, and what may be proved about it.

A dynamic dim (``?`` in ``tensor<?x64xf32>``) has a value only at run time. ``Dim`` is that value as
a polynomial with integer coefficients over *atoms*: a function argument's size (``arg0.d1``: the
size of dim 1 of argument 0, the function's dynamic dimensions as reports and ``--assume`` name
them), an exact quotient or remainder of a sub-expression by a constant, or a value the analysis
cannot see through (an opaque op's result). ``function_shapes`` walks a function and gives every
tensor value its dims and every ``index`` value its ``Dim``: sizes flow from arguments through
``tensor.dim``, ``tensor.empty(%d)``, arithmetic, reshapes, slices, structured ops and IREE's ops
(``{%d}`` lists, ``dispatch.workload.ordinal``, ``util.assume.int``), so two dims that are the same
expression are the same size whatever the input.

What a program allows for each argument size is a ``Domain`` (``util.assume.int`` ranges and
divisibility, narrowed by the user's ``--assume`` values). Legality conditions ask ``divides`` and
``upper_bound``: a fact holds for a dynamic dim only when it holds for every value the domains
allow -- by enumeration when the domains are small and finite, else by reasoning on the polynomial
(each monomial divisible, bounds from the atoms' bounds) -- and is refused otherwise.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import cast

from egg_dispatch.mlir.abi import argument_tensor_types
from egg_dispatch.mlir.ir import (
    ArrayAttr,
    Block,
    DictAttr,
    DispatchTensorType,
    IntAttr,
    Operation,
    ScalarType,
    TensorType,
    Type,
    Value,
)
from egg_dispatch.mlir.ops import (
    DYNAMIC,
    attr,
    base_operands,
    dim_group,
    dim_groups,
    int_list,
    outs,
    static_slice,
    tensor_type,
    workgroups_arguments,
    workload,
)

__all__ = [
    "Atom",
    "Dim",
    "Domain",
    "FunctionShapes",
    "arg_symbol",
    "as_dim",
    "divides",
    "function_shapes",
    "lower_bound",
    "parse_symbol",
    "upper_bound",
]

ENUMERATE_LIMIT = 4096
"""Largest number of value combinations a proof enumerates; beyond it, it reasons symbolically."""


# --------------------------------------------------------------------------------------------- Dim
@dataclass(frozen=True, order=True)
class Atom:
    """A factor of a ``Dim`` monomial: ``sym`` (an argument size or an unknown value, by ``name``), or
    ``floordiv`` / ``ceildiv`` / ``mod`` of ``arg`` by the constant ``k``."""

    kind: str
    name: str = ""
    arg: Dim | None = None
    k: int = 0

    @property
    def operand(self) -> Dim:
        """The ``arg`` of a ``floordiv`` / ``ceildiv`` / ``mod`` atom (which always has one)."""
        assert self.arg is not None, f"a {self.kind} atom without an operand"
        return self.arg

    def __str__(self) -> str:
        if self.kind == "sym":
            return self.name
        arg = str(self.arg)
        return f"({'(' + arg + ')' if ' ' in arg else arg} {self.kind} {self.k})"

    def symbols(self) -> set[str]:
        return {self.name} if self.kind == "sym" else self.operand.symbols()


@dataclass(frozen=True, order=True)
class Dim:
    """``Σ coeff · Π atoms``: terms sorted, no zero coefficient; a constant is the term of ``()``."""

    terms: tuple[tuple[tuple[Atom, ...], int], ...] = ()

    # -- construction --------------------------------------------------------------------------
    @staticmethod
    def const(v: int) -> Dim:
        return Dim((((), int(v)),) if v else ())

    @staticmethod
    def sym(name: str) -> Dim:
        return Dim((((Atom("sym", name),), 1),))

    @staticmethod
    def _of(poly: Mapping[tuple[Atom, ...], int]) -> Dim:
        return Dim(tuple(sorted((m, c) for m, c in poly.items() if c)))

    def _poly(self) -> dict[tuple[Atom, ...], int]:
        return dict(self.terms)

    # -- queries -------------------------------------------------------------------------------
    @property
    def is_const(self) -> bool:
        return all(not m for m, _ in self.terms)

    @property
    def value(self) -> int:
        """The constant (raises when not a constant)."""
        if not self.is_const:
            raise ValueError(f"{self} is not a constant")
        return self.terms[0][1] if self.terms else 0

    def symbols(self) -> set[str]:
        return {s for m, _ in self.terms for a in m for s in a.symbols()}

    def atoms(self) -> set[Atom]:
        return {a for m, _ in self.terms for a in m}

    def __str__(self) -> str:
        if not self.terms:
            return "0"
        parts = []
        for m, c in sorted(self.terms, key=lambda t: (not t[0], t)):  # the constant last
            body = "*".join(str(a) for a in m)
            if not m:
                parts.append(str(c))
            elif c == 1:
                parts.append(body)
            elif c == -1:
                parts.append("-" + body)
            else:
                parts.append(f"{c}*{body}")
        return " + ".join(parts).replace("+ -", "- ")

    def evaluate(self, env: Mapping[str, int]) -> int:
        """The value with every symbol given (KeyError names a missing one)."""
        total = 0
        for m, c in self.terms:
            p = c
            for a in m:
                p *= _atom_value(a, env)
            total += p
        return total

    # -- arithmetic ----------------------------------------------------------------------------
    def __add__(self, other: Dim | int) -> Dim:
        o = as_dim(other)
        poly = self._poly()
        for m, c in o.terms:
            poly[m] = poly.get(m, 0) + c
        return Dim._of(poly)

    __radd__ = __add__

    def __neg__(self) -> Dim:
        return Dim(tuple((m, -c) for m, c in self.terms))

    def __sub__(self, other: Dim | int) -> Dim:
        return self + (-as_dim(other))

    def __rsub__(self, other: Dim | int) -> Dim:
        return as_dim(other) - self

    def __mul__(self, other: Dim | int) -> Dim:
        o = as_dim(other)
        poly: dict[tuple[Atom, ...], int] = {}
        for m1, c1 in self.terms:
            for m2, c2 in o.terms:
                m = tuple(sorted(m1 + m2))
                poly[m] = poly.get(m, 0) + c1 * c2
        return Dim._of(poly)

    __rmul__ = __mul__

    def floordiv(self, k: int) -> Dim:
        return self._divide("floordiv", k)

    def ceildiv(self, k: int) -> Dim:
        return self._divide("ceildiv", k)

    def mod(self, k: int) -> Dim:
        if k == 1:
            return Dim.const(0)
        if self.is_const:
            return Dim.const(self.value % k)
        if all(c % k == 0 for _, c in self.terms):
            return Dim.const(0)
        return Dim((((Atom("mod", arg=self, k=k),), 1),))

    def _divide(self, kind: str, k: int) -> Dim:
        if k == 1:
            return self
        if k <= 0:
            raise ZeroDivisionError(f"{kind} by {k}")
        if self.is_const:
            v = self.value
            return Dim.const(v // k if kind == "floordiv" else -(-v // k))
        if all(c % k == 0 for _, c in self.terms):  # exact: divide every coefficient
            return Dim(tuple((m, c // k) for m, c in self.terms))
        return Dim((((Atom(kind, arg=self, k=k),), 1),))


def _atom_value(a: Atom, env: Mapping[str, int]) -> int:
    if a.kind == "sym":
        return env[a.name]
    v = a.operand.evaluate(env)
    if a.kind == "floordiv":
        return v // a.k
    if a.kind == "ceildiv":
        return -(-v // a.k)
    return v % a.k


def as_dim(v: Dim | int) -> Dim:
    return v if isinstance(v, Dim) else Dim.const(int(v))


def arg_symbol(arg: int, dim: int) -> str:
    """The name of dim ``dim`` of function argument ``arg`` (data arguments counted from 0)."""
    return f"arg{arg}.d{dim}"


def parse_symbol(text: str) -> str | None:
    """``arg0.d1``, ``arg0.1`` or ``arg0[1]`` as ``arg0.d1`` (``arg2``: an integer argument); else None."""
    import re

    m = re.fullmatch(r"arg([0-9]+)(?:\.d?([0-9]+)|\[([0-9]+)\])?", text.strip())
    if not m:
        return None
    if m.group(2) is None and m.group(3) is None:
        return f"arg{m.group(1)}"  # an integer argument itself
    return arg_symbol(int(m.group(1)), int(m.group(2) or m.group(3)))


# ------------------------------------------------------------------------------------------ Domain
@dataclass(frozen=True)
class Domain:
    """The values one argument size may take: ``lo <= v <= hi`` (``hi`` None: unbounded) and ``v``
    a multiple of ``div``; ``values``, when set, the only ones (the user's ``--assume``)."""

    lo: int = 0
    hi: int | None = None
    div: int = 1
    values: tuple[int, ...] | None = None

    def allows(self, v: int) -> bool:
        if self.values is not None and v not in self.values:
            return False
        return v >= self.lo and (self.hi is None or v <= self.hi) and v % self.div == 0

    def finite(self) -> tuple[int, ...] | None:
        """Every allowed value, when there are at most ``ENUMERATE_LIMIT`` of them."""
        if self.values is not None:
            return tuple(v for v in self.values if self.allows(v))
        if self.hi is None:
            return None
        first = -(-self.lo // self.div) * self.div
        if first > self.hi:
            return ()
        n = (self.hi - first) // self.div + 1
        if n > ENUMERATE_LIMIT:
            return None
        return tuple(range(first, self.hi + 1, self.div))

    @property
    def upper(self) -> int | None:
        vals = self.values
        if vals is not None:
            ok = [v for v in vals if self.allows(v)]
            return max(ok) if ok else None
        return None if self.hi is None else self.hi // self.div * self.div

    @property
    def lower(self) -> int:
        vals = self.values
        if vals is not None:
            ok = [v for v in vals if self.allows(v)]
            return min(ok) if ok else self.lo
        return -(-self.lo // self.div) * self.div

    @property
    def divisor(self) -> int:
        """A number every allowed value is a multiple of."""
        if self.values is not None:
            ok = [v for v in self.values if self.allows(v)]
            g = 0
            for v in ok:
                g = math.gcd(g, v)
            return math.lcm(self.div, g) if g else self.div
        return self.div

    def intersect(self, other: Domain) -> Domain:
        values = self.values if other.values is None else other.values
        if self.values is not None and other.values is not None:
            values = tuple(v for v in self.values if v in other.values)
        his = [h for h in (self.hi, other.hi) if h is not None]
        return Domain(max(self.lo, other.lo), min(his) if his else None, math.lcm(self.div, other.div), values)

    def describe(self) -> str:
        if self.values is not None:
            return "{" + ", ".join(map(str, self.values)) + "}"
        parts = [f"{self.lo}..{self.hi if self.hi is not None else ''}"]
        if self.div > 1:
            parts.append(f"multiple of {self.div}")
        return ", ".join(parts)


UNBOUNDED = Domain()
"""What nothing says anything about: any size >= 0."""


def _domain(domains: Mapping[str, Domain], name: str) -> Domain:
    return domains.get(name, UNBOUNDED)


def _combinations(expr_symbols: Iterable[str], domains: Mapping[str, Domain]) -> Iterator[dict[str, int]] | None:
    names = sorted(set(expr_symbols))
    lists = []
    total = 1
    for n in names:
        vals = _domain(domains, n).finite()
        if vals is None:
            return None
        total *= max(len(vals), 1)
        if total > ENUMERATE_LIMIT:
            return None
        lists.append(vals)
    return (dict(zip(names, combo, strict=True)) for combo in itertools.product(*lists))


def _atom_divisor(a: Atom, domains: Mapping[str, Domain]) -> int:
    """A number every value of the atom is a multiple of: a symbol's domain divisor; an exact-looking
    ``floordiv`` / ``ceildiv`` by k of an expression every value of which is a multiple of k*m: m."""
    if a.kind == "sym":
        return _domain(domains, a.name).divisor
    if a.kind in ("floordiv", "ceildiv"):
        inner = _divisor(a.operand, domains)
        return inner // a.k if inner % a.k == 0 else 1
    return 1


def _divisor(e: Dim, domains: Mapping[str, Domain]) -> int:
    """The gcd of what each monomial is provably a multiple of (0 for the zero expression)."""
    g = 0
    for m, c in e.terms:
        d = abs(c)
        for a in m:
            d *= _atom_divisor(a, domains)
        g = math.gcd(g, d)
    return g


def divides(k: int, expr: Dim | int, domains: Mapping[str, Domain]) -> bool:
    """Whether ``expr`` is a multiple of ``k`` for every value the domains allow (sound, not complete)."""
    e = as_dim(expr)
    if k == 1:
        return True
    if e.is_const:
        return e.value % k == 0
    combos = _combinations(e.symbols(), domains)
    if combos is not None:
        return all(e.evaluate(env) % k == 0 for env in combos)
    return _divisor(e, domains) % k == 0


def _bound(e: Dim, domains: Mapping[str, Domain], upper: bool) -> int | None:
    total = 0
    for m, c in e.terms:
        want_upper = upper == (c > 0)
        p = c
        for a in m:
            b = _atom_bound(a, domains, want_upper)
            if b is None:
                return None
            p *= b
        total += p
    return total


def _atom_bound(a: Atom, domains: Mapping[str, Domain], upper: bool) -> int | None:
    """Sizes are >= 0, so every atom is; a monomial of them grows with each (its sign is its coefficient's)."""
    if a.kind == "sym":
        d = _domain(domains, a.name)
        return d.upper if upper else max(d.lower, 0)
    if a.kind == "mod":
        return a.k - 1 if upper else 0
    b = _bound(a.operand, domains, upper)
    if b is None:
        return None
    b = max(b, 0)
    return b // a.k if a.kind == "floordiv" else -(-b // a.k)


def upper_bound(expr: Dim | int, domains: Mapping[str, Domain]) -> int | None:
    """The largest value ``expr`` takes over the domains (an upper bound of it), None if unbounded."""
    e = as_dim(expr)
    if e.is_const:
        return e.value
    combos = _combinations(e.symbols(), domains)
    if combos is not None:
        vals = [e.evaluate(env) for env in combos]
        return max(vals) if vals else None
    return _bound(e, domains, upper=True)


def lower_bound(expr: Dim | int, domains: Mapping[str, Domain]) -> int:
    e = as_dim(expr)
    if e.is_const:
        return e.value
    combos = _combinations(e.symbols(), domains)
    if combos is not None:
        vals = [e.evaluate(env) for env in combos]
        return min(vals) if vals else 0
    b = _bound(e, domains, upper=False)
    return 0 if b is None else b


# ------------------------------------------------------------------------------------ inference
Shape = tuple[Dim, ...]


@dataclass
class FunctionShapes:
    """Every tensor value's dims and every index value's size, for one function (and its regions)."""

    shapes: dict[Value, Shape] = field(default_factory=dict)
    scalars: dict[Value, Dim] = field(default_factory=dict)
    domains: dict[str, Domain] = field(default_factory=dict)
    """What ``util.assume.int`` says about each argument size (intersected over its assumptions)."""
    arguments: dict[str, tuple[int, int]] = field(default_factory=dict)
    """Argument size name -> (data argument number, dim): the function's dynamic dimensions (dim -1: an
    integer argument, ``arg2``, is a size of its own)."""
    unknown: dict[str, Value] = field(default_factory=dict)
    """Opaque sizes (an op the analysis does not see through) -> the value they stand for."""

    def shape(self, v: Value) -> Shape:
        """``v``'s dims (static ones as constants); a value never seen gets unknown symbols."""
        if v not in self.shapes:
            self.shapes[v] = self._fresh_shape(v, v.type)
        return self.shapes[v]

    def scalar(self, v: Value) -> Dim:
        if v not in self.scalars:
            self.scalars[v] = self._unknown(v, "")
        return self.scalars[v]

    def is_symbolic(self, d: Dim) -> bool:
        """Whether ``d`` is built from argument sizes and constants only (it can be recomputed)."""
        return not any(s.startswith("%") for s in d.symbols())

    def _unknown(self, v: Value, suffix: str) -> Dim:
        name = f"%{v.name}{suffix}#{id(v) % 100000}"
        self.unknown[name] = v
        return Dim.sym(name)

    def _fresh_shape(self, v: Value, t: Type) -> Shape:
        if isinstance(t, DispatchTensorType):
            t = t.tensor
        if not isinstance(t, TensorType):
            return ()
        return tuple(Dim.const(d) if d is not None else self._unknown(v, f".d{i}") for i, d in enumerate(t.shape))


def _static_or(t: Type, dims: list[Dim]) -> Shape:
    """A type's dims: its static sizes, and ``dims`` in order for its ``?``s (a missing one is unknown)."""
    if isinstance(t, DispatchTensorType):
        t = t.tensor
    if not isinstance(t, TensorType):
        return ()
    it = iter(dims)
    out = []
    for i, d in enumerate(t.shape):
        if d is not None:
            out.append(Dim.const(d))
        else:
            out.append(next(it, None) or Dim.sym(f"%unsized{id(t) % 100000}.d{i}"))
    return tuple(out)


class _Walker:
    def __init__(self, func: Operation, arg_numbers: dict[Value, int]):
        self.func = func
        self.out = FunctionShapes()
        self.arg_numbers = arg_numbers

    def dims_of(self, values: list[Value]) -> list[Dim]:
        return [self.out.scalar(v) for v in values]

    def set_shape(self, v: Value, dims: Shape) -> None:
        t = v.type.tensor if isinstance(v.type, DispatchTensorType) else v.type
        if isinstance(t, TensorType) and len(dims) == t.rank:
            # A static dim of the type wins over whatever was inferred (a cast refines it).
            dims = tuple(Dim.const(s) if s is not None else d for s, d in zip(t.shape, dims, strict=True))
            self.out.shapes[v] = dims
        else:
            self.out.shapes[v] = self.out._fresh_shape(v, v.type)

    def same(self, result: Value, source: Value) -> None:
        self.set_shape(result, self.out.shape(source))

    def block(self, block: Block) -> None:
        for op in block.ops:
            self.op(op)

    def op(self, op: Operation) -> None:
        n = op.name
        out = self.out
        rs = op.results
        if op.opaque_text is not None:
            for r in rs:
                if isinstance(r.type, ScalarType) and r.type.is_int:
                    out.scalars[r] = out._unknown(r, "")
                elif not isinstance(r.type, ScalarType):
                    out.shape(r)
            return
        handler = _SCALAR_OPS.get(n)
        if handler is not None and rs and isinstance(rs[0].type, ScalarType) and rs[0].type.is_int:
            try:
                out.scalars[rs[0]] = handler(self, op)
            except (ZeroDivisionError, ValueError, KeyError, IndexError):
                out.scalars[rs[0]] = out._unknown(rs[0], "")
            return
        if n == "util.assume.int":
            self.assume(op)
            return
        if n == "iree_tensor_ext.dispatch.workload.ordinal":
            out.scalars[rs[0]] = out.scalar(op.operands[0])
            return
        if n == "tensor.empty":
            self.set_shape(rs[0], _static_or(rs[0].type, self.dims_of(op.operands)))
        elif n in ("hal.tensor.import", "flow.tensor.tie_shape"):
            self.set_shape(rs[0], _static_or(rs[0].type, self.dims_of(dim_group(op, 0))))
        elif n in ("flow.tensor.encode", "flow.tensor.reshape"):
            self.set_shape(rs[0], _static_or(rs[0].type, self.dims_of(dim_group(op, 1))))
        elif n == "iree_encoding.unset_encoding" and dim_group(op, 1):
            self.set_shape(rs[0], _static_or(rs[0].type, self.dims_of(dim_group(op, 1))))
        elif n in _SAME_AS_SOURCE:
            for r, v in zip(rs, op.operands, strict=False):
                self.same(r, v)
        elif n == "tensor.extract_slice":
            self.slice(op)
        elif n == "tensor.insert_slice":
            self.same(rs[0], op.operands[1])
        elif n == "tensor.collapse_shape":
            src = out.shape(op.operands[0])
            groups = [int_list(g) for g in attr(op, "reassociation", ArrayAttr).items]
            self.set_shape(rs[0], tuple(_product(src[i] for i in g) for g in groups))
        elif n == "tensor.expand_shape":
            static = int_list(op.attributes.get("static_output_shape"))
            dyn = iter(self.dims_of(op.operands[1:]))
            self.set_shape(rs[0], tuple(next(dyn) if s == DYNAMIC else Dim.const(s) for s in static))
        elif n == "tensor.pad":
            self.pad(op)
        elif n == "tensor.concat":
            dim = attr(op, "dim", IntAttr).value
            shapes = [out.shape(v) for v in op.operands]
            first = list(shapes[0])
            first[dim] = _sum(s[dim] for s in shapes)
            self.set_shape(rs[0], tuple(first))
        elif n == "flow.dispatch.region":
            self.block(op.regions[0].entry)
            for r, dims in zip(rs, dim_groups(op) or [[] for _ in rs], strict=True):
                self.set_shape(r, _static_or(r.type, self.dims_of(dims)))
        elif n == "flow.dispatch.workgroups":
            self.workgroups(op)
        elif n == "iree_tensor_ext.dispatch.tensor.load":
            self.load(op)
        elif op.regions and n in ("util.initializer", "func.func", "util.func"):
            return
        elif n.startswith(("linalg.", "iree_linalg_ext.")) and outs(op) and len(outs(op)) == len(rs):
            for r, init in zip(rs, outs(op), strict=True):
                self.same(r, init)
        elif rs and all(isinstance(r.type, TensorType) for r in rs):
            tensors = [v for v in op.operands if isinstance(v.type, TensorType)]
            for r in rs:
                if tensors and tensor_type(tensors[0]).rank == tensor_type(r).rank:
                    self.same(r, tensors[0])  # elementwise arith/math on tensors
                else:
                    out.shape(r)
        else:
            for r in rs:
                if isinstance(r.type, ScalarType) and r.type.is_int:
                    out.scalars.setdefault(r, out._unknown(r, ""))
                elif not isinstance(r.type, ScalarType):
                    out.shape(r)

    def _slice_sizes(self, op: Operation) -> list[Dim]:
        """The sizes of a slice-like op (extract_slice, dispatch.tensor.load): static ones, and its
        dynamic size operands, which follow the dynamic offsets."""
        offs, sizes, _strides = static_slice(op)
        dyn = iter(self.dims_of(base_operands(op)[1:]))
        for _ in (s for s in offs if s == DYNAMIC):
            next(dyn)
        return [next(dyn) if s == DYNAMIC else Dim.const(s) for s in sizes]

    def slice(self, op: Operation) -> None:
        dims = self._slice_sizes(op)
        r = op.results[0]
        rank = r.type.rank if isinstance(r.type, TensorType) else len(dims)
        i = 0
        while len(dims) > rank and i < len(dims):  # rank-reducing: drop unit sizes, from the left
            if dims[i].is_const and dims[i].value == 1:
                dims.pop(i)
            else:
                i += 1
        self.set_shape(r, tuple(dims))

    def pad(self, op: Operation) -> None:
        src = self.out.shape(op.operands[0])
        dyn = iter(self.dims_of(op.operands[1:]))
        low = [next(dyn) if s == DYNAMIC else Dim.const(s) for s in int_list(op.attributes.get("static_low"))]
        high = [next(dyn) if s == DYNAMIC else Dim.const(s) for s in int_list(op.attributes.get("static_high"))]
        self.set_shape(op.results[0], tuple(s + lo + hi for s, lo, hi in zip(src, low, high, strict=True)))

    def load(self, op: Operation) -> None:
        dims = self._slice_sizes(op)
        r = op.results[0]
        rank = r.type.rank if isinstance(r.type, TensorType) else len(dims)
        dims = [d for d in dims if not (len(dims) > rank and d.is_const and d.value == 1)][-rank:] if rank else []
        self.set_shape(r, tuple(dims))

    def workgroups(self, op: Operation) -> None:
        body = op.regions[0].entry
        args = workgroups_arguments(op)
        groups = dim_groups(op) or [[] for _ in [*args, *op.results]]
        for binding, v in zip(body.args, args, strict=False):
            if isinstance(v.type, ScalarType):
                self.out.scalars[binding] = self.out.scalar(v)
            else:
                self.set_shape(binding, self.out.shape(v))
        for binding, r, dims in zip(body.args[len(args) :], op.results, groups[len(args) :], strict=False):
            self.set_shape(binding, _static_or(r.type, self.dims_of(dims)))
        for w in workload(op):
            self.out.scalar(w)
        self.block(body)
        for r, dims in zip(op.results, groups[len(args) :], strict=True):
            self.set_shape(r, _static_or(r.type, self.dims_of(dims)))

    def assume(self, op: Operation) -> None:
        rows_per = attr(op, "assumptions", ArrayAttr).items
        for v, r, per_operand in zip(op.operands, op.results, rows_per, strict=True):
            d = self.out.scalar(v)
            self.out.scalars[r] = d
            rows = [per_operand] if isinstance(per_operand, DictAttr) else list(cast(ArrayAttr, per_operand).items)
            dom = _union_rows(rows)
            _constrain(self.out.domains, d, dom)


def _union_rows(rows: list) -> Domain:
    """Several rows (one per call site): any of them may hold, so only what all allow is known."""
    lo: int | None = None
    hi: int | None = 0
    div = 0
    for row in rows:
        get = row.get if isinstance(row, DictAttr) else (lambda k: None)
        umin, umax, udiv = (getattr(get(k), "value", None) for k in ("umin", "umax", "udiv"))
        lo = (umin or 0) if lo is None else min(lo, umin or 0)
        hi = None if hi is None or umax is None else max(hi, umax)
        div = math.gcd(div, udiv or 1)
    return Domain(lo or 0, hi, div or 1)


def _constrain(domains: dict[str, Domain], d: Dim, dom: Domain) -> None:
    """What an assumption on ``d`` says about its one symbol (``d = c·s``; other forms say nothing
    here: the evaluator still checks them at run time)."""
    if len(d.terms) != 1:
        return
    ((m, c),) = d.terms
    if len(m) != 1 or m[0].kind != "sym" or c <= 0:
        return
    name = m[0].name
    lo = -(-dom.lo // c)
    hi = dom.hi // c if dom.hi is not None else None
    div = dom.div // math.gcd(dom.div, c)
    new = Domain(lo, hi, div)
    domains[name] = domains[name].intersect(new) if name in domains else new


def _product(dims: Iterable[Dim]) -> Dim:
    out = Dim.const(1)
    for d in dims:
        out = out * d
    return out


def _sum(dims: Iterable[Dim]) -> Dim:
    out = Dim.const(0)
    for d in dims:
        out = out + d
    return out


_SAME_AS_SOURCE = frozenset(
    {
        "hal.tensor.export",
        "hal.tensor.barrier",
        "iree_tensor_ext.compute_barrier.start",
        "iree_tensor_ext.compute_barrier.end",
        "iree_encoding.set_encoding",
        "iree_encoding.unset_encoding",
        "tensor.cast",
        "tensor.bitcast",
        "linalg.softmax",
    }
)


def _binary(fn):
    def handler(w: _Walker, op: Operation) -> Dim:
        a, b = (w.out.scalar(v) for v in op.operands[:2])
        return fn(a, b)

    return handler


def _by_const(kind: str):
    def fn(a: Dim, b: Dim) -> Dim:
        if not b.is_const:
            raise ValueError("division by a symbolic size")
        return getattr(a, kind)(b.value)

    return fn


def _mul(a: Dim, b: Dim) -> Dim:
    return a * b


def _constant(w: _Walker, op: Operation) -> Dim:
    v = op.attributes["value"]
    if isinstance(v, IntAttr) and isinstance(op.results[0].type, ScalarType):
        return Dim.const(v.value)
    raise ValueError("not an integer constant")


def _tensor_dim(w: _Walker, op: Operation) -> Dim:
    shape = w.out.shape(op.operands[0])
    return shape[w.out.scalar(op.operands[1]).value]


def _buffer_view_dim(w: _Walker, op: Operation) -> Dim:
    view = op.operands[0]
    k = w.arg_numbers.get(view)
    if k is None:
        raise KeyError("not a function argument")
    index = attr(op, "index", IntAttr).value
    name = arg_symbol(k, index)
    w.out.arguments[name] = (k, index)
    return Dim.sym(name)


def _cast(w: _Walker, op: Operation) -> Dim:
    return w.out.scalar(op.operands[0])


_SCALAR_OPS = {
    "arith.constant": _constant,
    "tensor.dim": _tensor_dim,
    "hal.buffer_view.dim": _buffer_view_dim,
    "arith.index_cast": _cast,
    "arith.index_castui": _cast,
    "arith.addi": _binary(lambda a, b: a + b),
    "arith.subi": _binary(lambda a, b: a - b),
    "arith.muli": _binary(_mul),
    "arith.divsi": _binary(_by_const("floordiv")),
    "arith.divui": _binary(_by_const("floordiv")),
    "arith.floordivsi": _binary(_by_const("floordiv")),
    "arith.ceildivsi": _binary(_by_const("ceildiv")),
    "arith.ceildivui": _binary(_by_const("ceildiv")),
    "arith.remsi": _binary(_by_const("mod")),
    "arith.remui": _binary(_by_const("mod")),
}
"""Index arithmetic seen through (sizes are >= 0, so signed and unsigned division agree)."""


def function_shapes(func: Operation, module_ops: list[Operation] | None = None) -> FunctionShapes:
    """Dims of every tensor and size of every index value in ``func`` (see the module docstring)."""
    entry = func.regions[0].entry
    numbers: dict[Value, int] = {}
    data_args = argument_tensor_types(func)
    for k, (i, _) in enumerate(data_args):
        numbers[entry.args[i]] = k
    w = _Walker(func, numbers)
    for k, (i, _t) in enumerate(data_args):
        arg = entry.args[i]
        if isinstance(arg.type, TensorType):
            dims = []
            for d, s in enumerate(arg.type.shape):
                if s is None:
                    name = arg_symbol(k, d)
                    w.out.arguments[name] = (k, d)
                    dims.append(Dim.sym(name))
                else:
                    dims.append(Dim.const(s))
            w.out.shapes[arg] = tuple(dims)
        elif isinstance(arg.type, ScalarType) and arg.type.is_int:  # an index argument: a size of its own
            w.out.arguments[f"arg{k}"] = (k, -1)
            w.out.scalars[arg] = Dim.sym(f"arg{k}")
    w.block(entry)
    return w.out
