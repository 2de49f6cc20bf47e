"""The algebra of symbolic sizes: ``Dim``, what a dynamic dimension is at run time, and what may be
proved about it for every value it may take.

A dynamic dim (``?`` in ``tensor<?x64xf32>``) has a value only at run time. ``Dim`` is that value as
a polynomial with integer coefficients over *atoms*: a function argument's size (``arg0.d1``: the
size of dim 1 of argument 0, the function's dynamic dimensions as reports and ``--assume`` name
them; ``arg_symbol`` / ``parse_symbol`` spell them), an exact quotient or remainder of a
sub-expression by a constant, or a value the analysis cannot see through (any other name).

Contract: a ``Dim`` is kept in a canonical form (terms sorted, like terms merged, no zero
coefficient; division by a constant folded when exact), so two dims that are the same expression
are equal as values, and hash alike -- the e-graph and the cost model compare sizes by ``==``.
Arithmetic (``+``, ``-``, ``*``, ``floordiv``, ``ceildiv``, ``mod`` by a positive constant) never
loses exactness; what it cannot fold stays an atom.

What a program allows for each argument size is a ``Domain`` (``util.assume.int`` ranges and
divisibility, narrowed by the user's ``--assume`` values). Legality conditions ask ``divides`` and
``upper_bound``: a fact holds for a dynamic dim only when it holds for every value the domains
allow -- by enumeration when the domains are small and finite, else by reasoning on the polynomial
(each monomial divisible, bounds from the atoms' bounds) -- and is refused otherwise: the answers
are sound, not complete.

This module knows nothing of IR (it imports none): ``mlir.shapes`` builds the ``Dim`` of each value
of a function; the stages after ``mlir`` reason with these.
"""

from __future__ import annotations

import itertools
import math
import re
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass

__all__ = [
    "ENUMERATE_LIMIT",
    "UNBOUNDED",
    "Atom",
    "Dim",
    "Domain",
    "arg_symbol",
    "as_dim",
    "divides",
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
