"""Which sizes a dynamic program is checked at, and its inputs and reduction lengths at those sizes.

A function with dynamic dims (``tensor<1x?x32xf32>``) is evaluated at concrete sizes. ``check_sizes``
picks them: for every dynamic dimension (``arg0.d1``, named as ``mlir.shapes`` names it) at least two
values the program allows (its ``util.assume.int`` domain, narrowed by ``--assume``), chosen to
exercise what a plan gets wrong first -- the smallest allowed size (1 when allowed: narrow tiles and
all-padding packs), a size that is a multiple of no tile (13: partial tiles everywhere) and a multiple
of every tile (16) -- clamped and rounded into the domain; several dims take their lists side by side
(the i-th run uses the i-th value of each). A static function has one assignment, the empty one.
"""

from __future__ import annotations

from collections.abc import Mapping

from egg_dispatch.mlir.ir import Operation, TensorType, Type
from egg_dispatch.mlir.shapes import FunctionShapes, function_shapes
from egg_dispatch.mlir.symbolic import Domain

__all__ = ["CHECK_SIZES", "check_sizes", "input_dims", "input_types_at", "label", "shapes_at", "sizes_for"]

CHECK_SIZES = (1, 13, 16)
"""What a dynamic dim is checked at by default (then moved into its domain): 1, a multiple of no
tile, a multiple of every CPU tile (docs/iree-data-tiling.md §3: 1, 2, 4, 8, 16)."""


def _into(v: int, d: Domain) -> int | None:
    """The allowed value closest to ``v`` (rounding up to ``d.div`` first), or None if none is."""
    if d.values is not None:
        ok = [x for x in d.values if d.allows(x)]
        return min(ok, key=lambda x: (abs(x - v), x)) if ok else None
    lo = -(-max(d.lo, 0) // d.div) * d.div
    hi = None if d.hi is None else d.hi // d.div * d.div
    if hi is not None and hi < lo:
        return None
    x = -(-v // d.div) * d.div
    x = max(x, lo)
    return min(x, hi) if hi is not None else x


def sizes_for(d: Domain, wanted: tuple[int, ...] = CHECK_SIZES) -> list[int]:
    """At least two distinct allowed values (fewer only when fewer are allowed), ``wanted`` moved into ``d``."""
    if d.values is not None:
        ok = sorted({x for x in d.values if d.allows(x)})
        return ok
    out: list[int] = []
    for v in wanted:
        x = _into(v, d)
        if x is not None and x not in out:
            out.append(x)
    if not any(x > 1 and x % 2 for x in out):  # 13 fell outside: another multiple of no tile, if allowed
        for v in (7, 5, 3):
            if d.allows(v) and v not in out:
                out.append(v)
                break
    if len(out) < 2:  # a narrow domain: its smallest and next values
        first = _into(0, d)
        for x in (first, None if first is None else first + d.div):
            if x is not None and d.allows(x) and x not in out:
                out.append(x)
    return sorted(out)


def check_sizes(
    func: Operation, assume: Mapping[str, Domain] | None = None, shapes: FunctionShapes | None = None
) -> list[dict[str, int]]:
    """Size assignments to check ``func`` at (``[{}]`` for a static function); see the module docstring."""
    shapes = shapes or function_shapes(func)
    sized = {n for dims in shapes.shapes.values() for d in dims for n in d.symbols()}
    names = sorted({n for n in shapes.arguments if "." in n or n in sized} | set(input_dims(func)))
    if not names:
        return [{}]
    lists = {}
    for n in names:
        d = shapes.domains.get(n, Domain(1))
        if assume and n in assume:
            d = d.intersect(assume[n])
        vals = sizes_for(d)
        if not vals:
            raise ValueError(f"no size of {n} is allowed ({d.describe()})")
        lists[n] = vals
    runs = max(len(v) for v in lists.values())
    return [{n: lists[n][i % len(lists[n])] for n in names} for i in range(runs)]


def input_dims(func: Operation) -> list[str]:
    """The names of the dynamic dims of ``func``'s inputs (``arg0.d1``, ...)."""
    from egg_dispatch.evaluate.core import function_input_types

    return [
        f"arg{k}.d{d}"
        for k, t in enumerate(function_input_types(func))
        if isinstance(t, TensorType)
        for d, s in enumerate(t.shape)
        if s is None
    ]


def input_types_at(func: Operation, types: list[Type], env: Mapping[str, int]) -> list[Type]:
    """The function's input types with every argument size of ``env`` filled in."""
    out: list[Type] = []
    for k, t in enumerate(types):
        if isinstance(t, TensorType) and not t.is_static:
            shape = tuple(env[f"arg{k}.d{d}"] if s is None else s for d, s in enumerate(t.shape))
            t = TensorType(shape, t.element, t.encoding)
        out.append(t)
    return out


def shapes_at(shapes: FunctionShapes, env: Mapping[str, int]):
    """A function ``Value -> concrete shape`` (None where a size depends on an unknown)."""

    def shape_of(v) -> tuple[int, ...] | None:
        try:
            return tuple(d.evaluate(env) for d in shapes.shape(v))
        except KeyError:
            return None

    return shape_of


def label(env: Mapping[str, int]) -> str:
    """``arg0.d1=13`` (empty for a static function)."""
    return ", ".join(f"{k}={v}" for k, v in sorted(env.items()))


def assumed_domains(func: Operation, specs: list[str]) -> dict[str, Domain]:
    """``--assume`` values (``cost.sizes.parse_assume`` syntax) as domains of ``func``'s dynamic dims;
    a name that is not one of them is a ValueError listing those it has."""
    from egg_dispatch.cost import AssumeError, parse_assume
    from egg_dispatch.mlir.symbolic import parse_symbol

    known = sorted(set(function_shapes(func).arguments) | set(input_dims(func)))
    out: dict[str, Domain] = {}
    for spec in specs:
        raw, values = parse_assume(spec)
        name = parse_symbol(raw) or raw
        if name not in known:
            listed = ", ".join(known) if known else "none: the function has no dynamic dimension"
            raise AssumeError(f"--assume {raw}: no such dynamic dimension (the function's are: {listed})")
        out[name] = Domain(values=tuple(v for v, _ in values))
    return out


def check_assumed(func: Operation, inputs: list, domains: Mapping[str, Domain]) -> None:
    """Inputs whose sizes contradict an ``--assume``: a ``SizeError`` naming the dim and the value."""
    from egg_dispatch.evaluate.dynamic import SizeError, runtime_shape

    for name, dom in sorted(domains.items()):
        k, d = (int(x) for x in name[3:].split(".d"))
        if k < len(inputs):
            shape = runtime_shape(inputs[k])
            if d < len(shape) and not dom.allows(shape[d]):
                raise SizeError(
                    f"{name} = {shape[d]} contradicts --assume {name}={','.join(map(str, dom.values or ()))}"
                )
