"""The sizes a dynamic program is costed at (``--assume``), and the cost table as their weighted mean.

A plan is chosen once for every size the program allows (the rules are sound for all of them:
``egraph.size_facts``), but what it costs depends on the sizes it runs at. ``size_plan`` says which:

* ``--assume NAME=V`` or ``NAME=V1,V2,...`` (``NAME=V1:W1,V2:W2`` with weights) for a dynamic
  dimension as the report names it (``arg0.d1``, also ``arg0.1`` / ``arg0[1]``; or the symbol PyTorch
  exported, when the input is a torch export with symbolic shapes). Assumed values are also a promise:
  the legality facts hold for them only (so ``--assume seq=128,512`` can prove a tile alignment that an
  unbounded ``seq`` cannot), and a run at another size is an error;
* else the bounds of the dim's ``util.assume.int`` range (``umin`` and ``umax``, equally weighted; the
  smallest multiple of ``udiv``);
* else ``DEFAULT_DYNAMIC_SIZE``.

Several dims combine as every combination of their values, weighted by the product of their weights
(at most ``MAX_SIZE_CONFIGS``). The objective the extractors minimize is then the weighted mean over
those configurations: ``cost_at_sizes`` prices the e-graph at each one (``specialize``: every size code
of a shape fact replaced by its value) and averages the per-node costs, which keeps the objective a sum
over nodes (the exact ILP stays exact). ``SizePlan.describe`` is what the report prints.
"""

from __future__ import annotations

import dataclasses
import itertools
import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

from egg_dispatch.cost.table import CostTable, NodeCost
from egg_dispatch.egraph.data import EGraphData
from egg_dispatch.egraph.imported import ImportedProgram
from egg_dispatch.mlir.symbolic import Domain, parse_symbol

__all__ = [
    "DEFAULT_DYNAMIC_SIZE",
    "MAX_SIZE_CONFIGS",
    "AssumeError",
    "DimSizes",
    "SizePlan",
    "cost_at_sizes",
    "parse_assume",
    "size_plan",
    "specialize",
]

DEFAULT_DYNAMIC_SIZE = 128
"""A dynamic dim nothing bounds is costed at 128: a typical sequence length (or batch x sequence of
token rows) for the transformer blocks these plans are for; large enough that a plan does not pay
per-call launches to save padding that only matters at 1, small enough that load-time work (a
const-evaluated weight) is still weighed against a realistic number of rows."""

MAX_SIZE_CONFIGS = 64
"""Most size combinations the cost is averaged over (each prices the whole e-graph once)."""


class AssumeError(ValueError):
    """A bad ``--assume`` (unknown dimension, a value the program does not allow, malformed)."""


Assumption = tuple[tuple[int, float], ...]
"""(value, weight) pairs of one dim."""


def parse_assume(text: str) -> tuple[str, Assumption]:
    """``NAME=V1[:W1],V2[:W2],...`` -> (NAME, ((V1, W1), ...)); weights default to 1."""
    name, sep, values = text.partition("=")
    name = name.strip()
    if not sep or not name or not values.strip():
        raise AssumeError(f"expected NAME=SIZE or NAME=SIZE1,SIZE2 (optionally SIZE:WEIGHT), got '{text}'")
    out: list[tuple[int, float]] = []
    for part in values.split(","):
        v, _, w = part.strip().partition(":")
        try:
            size = int(v)
            weight = float(w) if w else 1.0
        except ValueError:
            raise AssumeError(
                f"'{part.strip()}' in '{text}': a size is a non-negative integer, a weight a number"
            ) from None
        if size < 0:
            raise AssumeError(f"'{text}': a size must be >= 0, not {size}")
        if not (weight > 0 and math.isfinite(weight)):
            raise AssumeError(f"'{text}': a weight must be positive and finite, not {w}")
        out.append((size, weight))
    if len({v for v, _ in out}) != len(out):
        raise AssumeError(f"'{text}': a size is listed twice")
    return name, tuple(out)


@dataclass(frozen=True)
class DimSizes:
    """The sizes one dynamic dim is costed at, and where they come from."""

    name: str
    values: tuple[int, ...]
    weights: tuple[float, ...]
    source: str
    """``--assume``, ``util.assume.int bounds`` or ``default``."""
    domain: Domain

    def describe(self) -> str:
        vals = ", ".join(
            f"{v}" if len(set(self.weights)) == 1 else f"{v} (weight {w:g})"
            for v, w in zip(self.values, self.weights, strict=True)
        )
        return f"{self.name} = {vals} ({self.source}; allowed: {self.domain.describe()})"


@dataclass(frozen=True)
class SizePlan:
    """Every configuration the cost is averaged over: (sizes of every symbol, weight), weights sum to 1."""

    dims: tuple[DimSizes, ...]
    configs: tuple[tuple[Mapping[str, int], float], ...]
    aliases: Mapping[str, str] = dataclasses.field(default_factory=dict)
    """Other names of the dims (a torch symbol -> ``arg0.d1``)."""

    @property
    def dynamic(self) -> bool:
        return bool(self.dims)

    def describe(self) -> list[str]:
        """The report's lines: each dim with its sizes and the weighting."""
        if not self.dims:
            return []
        lines = [d.describe() for d in self.dims]
        if len(self.configs) > 1:
            lines.append(f"objective: the weighted mean over {len(self.configs)} size configuration(s)")
        return lines


def _default(d: Domain) -> tuple[tuple[int, ...], str]:
    first = -(-max(d.lo, 0) // d.div) * d.div
    if d.hi is not None:
        last = d.hi // d.div * d.div
        vals = tuple(sorted({first, last})) if last >= first else (first,)
        return vals, "util.assume.int bounds"
    v = max(first, -(-DEFAULT_DYNAMIC_SIZE // d.div) * d.div)
    return (v,), "default" if v == DEFAULT_DYNAMIC_SIZE else "default, in its util.assume.int domain"


def size_plan(
    imported: ImportedProgram,
    assume: Mapping[str, Assumption] | Sequence[str] | None = None,
    aliases: Mapping[str, str] | None = None,
) -> SizePlan:
    """The sizes the cost model uses (module docstring); also narrows ``imported.domains`` to the assumed
    values (what the legality facts must hold for), so call it before seeding facts."""
    aliases = dict(aliases or {})
    if assume is not None and not isinstance(assume, Mapping):
        assume = dict(parse_assume(a) for a in assume)
    given: dict[str, Assumption] = {}
    sized = {s for d in imported.dims.values() for s in d.symbols()}
    known = sorted(n for n in imported.arguments if "." in n or n in sized)  # an index argument that is a size
    for raw, values in (assume or {}).items():
        name = aliases.get(raw) or parse_symbol(raw) or raw
        if name not in imported.arguments:
            listed = ", ".join(known) if known else "none: the function has no dynamic dimension"
            raise AssumeError(f"--assume {raw}: no such dynamic dimension (the function's are: {listed})")
        if name in given:
            raise AssumeError(f"--assume {raw}: {name} is assumed twice")
        given[name] = values
    dims: list[DimSizes] = []
    for name in known:
        dom = imported.domains.get(name, Domain())
        if name in given:
            vals = tuple(v for v, _ in given[name])
            bad = [v for v in vals if not dom.allows(v)]
            if bad:
                raise AssumeError(
                    f"--assume {name}={bad[0]}: the program does not allow it (util.assume.int: {dom.describe()})"
                )
            weights = tuple(w for _, w in given[name])
            imported.domains[name] = dom.intersect(Domain(values=vals))
            dims.append(DimSizes(name, vals, weights, "--assume", imported.domains[name]))
        else:
            vals, source = _default(dom)
            dims.append(DimSizes(name, vals, tuple(1.0 for _ in vals), source, dom))
    others = sorted({s for d in imported.dims.values() for s in d.symbols()} - set(known))
    combos = list(itertools.product(*[list(zip(d.values, d.weights, strict=True)) for d in dims]))
    if len(combos) > MAX_SIZE_CONFIGS:
        raise AssumeError(f"{len(combos)} size combinations (more than {MAX_SIZE_CONFIGS}): give fewer --assume values")
    total = sum(math.prod(w for _, w in c) for c in combos) or 1.0
    configs = []
    for combo in combos:
        env = {d.name: v for d, (v, _) in zip(dims, combo, strict=True)}
        env.update({s: DEFAULT_DYNAMIC_SIZE for s in others})  # sizes of opaque ops: the default
        configs.append((env, math.prod(w for _, w in combo) / total))
    return SizePlan(tuple(dims), tuple(configs), aliases)


def specialize(g: EGraphData, imported: ImportedProgram, env: Mapping[str, int]) -> EGraphData:
    """``g`` with every shape fact at the sizes ``env`` (its nodes and choices shared)."""
    facts: dict[str, dict[str, object]] = {}
    for c, f in g.facts.items():
        shape = f.get("shape")
        if isinstance(shape, tuple) and any(isinstance(v, int) and v in imported.dims for v in shape):
            f = dict(f)
            f["shape"] = tuple(imported.dims[v].evaluate(env) if v in imported.dims else v for v in shape)
        facts[c] = f
    return dataclasses.replace(g, facts=facts)


def cost_at_sizes(
    g: EGraphData, imported: ImportedProgram, sizes: SizePlan | None, price: Callable[[EGraphData], CostTable]
) -> CostTable:
    """``price(g)`` for a static program; else the weighted mean of ``price`` at every configuration."""
    if sizes is None or not imported.dynamic:
        return price(g)
    tables = [(price(specialize(g, imported, env)), w) for env, w in sizes.configs]
    first = tables[0][0]
    conflicts = sorted({c for t, _ in tables for c in getattr(t, "conflicts", ())})
    # A conflict at any size is refused; the once charges (a per-call step) do not depend on sizes.
    out = CostTable(exclusive=first.exclusive, conflicts=tuple(conflicts), once=first.once)
    weighted: dict[tuple[str, str], float] = {}  # a pair's price depends on sizes: the weighted mean
    for t, w in tables:
        for sec, gen, unset in getattr(t, "pairs", ()):
            weighted[(gen, unset)] = weighted.get((gen, unset), 0.0) + w * sec
    out.pairs = tuple((sec, gen, unset) for (gen, unset), sec in weighted.items())
    for nid in first:
        run = load = mem = 0.0
        for t, w in tables:
            c = t[nid]
            run += w * c.run_seconds
            load += w * c.load_seconds
            mem += w * c.memory_bytes
        out[nid] = NodeCost(run, load, mem)
    for attr, value in vars(first).items():  # whatever else a table carries (measured prices, ...)
        if attr not in ("exclusive", "conflicts", "once", "pairs") and not hasattr(out, attr):
            setattr(out, attr, value)
    return out
