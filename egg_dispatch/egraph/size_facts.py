"""Size-dependent legality conditions, for every size the program allows (issue 12).

The static conditions of ``egraph.facts`` (a slice is one contiguous range; a slice of a packed
tensor is tile-aligned; a fused pack's tiles divide its shape and its buffers fit the stack; a
const-evaluated encode grows memory by at most 1 MiB; a bubbled encode's tiles divide the shape) read
sizes. With dynamic dims each size is a symbolic ``mlir.symbolic.Dim``, and a condition holds only when
it is *provable for every value* the argument-size domains allow (``util.assume.int`` ranges and
divisibility, narrowed by the user's ``--assume``): ``divides`` and ``upper_bound`` decide that,
by enumeration when the domains are small and finite, else symbolically. When a condition cannot be
proved the fact is not asserted (the rule refuses) and the reason says which size and what would
make it hold; ``explore --explain`` prints it.

Each function returns None when the condition holds, else the reason (a numbered condition of the
rule family, as in ``rules/*.egg``). On static sizes they decide exactly as the static versions.
"""

from __future__ import annotations

from collections.abc import Container, Mapping, Sequence

from egg_dispatch.mlir.symbolic import Dim, Domain, as_dim, divides, upper_bound
from egg_dispatch.target.layout import Layout
from egg_dispatch.target.profile import Target

__all__ = [
    "const_eval_refusal",
    "describe",
    "divides_refusal",
    "fused_pack_refusal",
    "is_static",
    "mappable",
    "packed_bytes",
    "tile_alignment_refusal",
]

Shape = Sequence[Dim]


def is_static(shape: Shape) -> bool:
    return all(as_dim(d).is_const for d in shape)


def describe(domains: Mapping[str, Domain], d: Dim) -> str:
    """``arg0.d1`` with what is known of it (``arg0.d1 in 1..1024``)."""
    names = sorted(d.symbols())
    known = [f"{n} in {domains[n].describe()}" for n in names if n in domains]
    return f"{d}" + (f" ({'; '.join(known)})" if known else " (no util.assume.int or --assume bounds it)")


def mappable(src: Shape, offsets: Shape, sizes: Shape, strides: Shape) -> bool:
    """``isStructurallyFlowMappable`` on sizes that may be symbolic: unit strides, no rank drop, and one
    contiguous range for every size -- a dim counts as whole only when its offset is 0 and its size is
    the source's (the same expression), and every dim outside a partial one must be 1."""
    if len(sizes) != len(src) or any(as_dim(s) != Dim.const(1) for s in strides):
        return False
    partial = False
    for d in reversed(range(len(src))):
        if partial and as_dim(sizes[d]) != Dim.const(1):
            return False
        if not (as_dim(offsets[d]) == Dim.const(0) and as_dim(sizes[d]) == as_dim(src[d])):
            partial = True
    return True


def tile_alignment_refusal(
    layout: Layout, src: Shape, offsets: Shape, sizes: Shape, strides: Shape, domains: Mapping[str, Domain]
) -> str | None:
    """propagate's conditions 1-3 (``rules/propagate_slice.egg``) for every allowed size."""
    if len(sizes) != len(src) or any(as_dim(s) != Dim.const(1) for s in strides):
        return "1. a stride is not 1, or the slice drops rank"
    for d, t in zip(layout.inner_dims_pos, layout.inner_tiles, strict=True):
        o, s, whole = as_dim(offsets[d]), as_dim(sizes[d]), as_dim(src[d])
        if not divides(t, o, domains):
            return f"2. the offset {describe(domains, o)} of dim {d} is not a multiple of the tile {t} for every size"
        if not divides(t, s, domains) and o + s != whole:
            return (
                f"3. the size {describe(domains, s)} of dim {d} is not a multiple of the tile {t} for every size, "
                "and the slice does not reach the end"
            )
    return None


def packed_bytes(shape: Shape, elem_bytes: int, layout: Layout | None) -> Dim:
    """Stored bytes of a tensor of ``shape`` packed in ``layout`` (padded to whole tiles), symbolically."""
    tile = dict(zip(layout.inner_dims_pos, layout.inner_tiles, strict=True)) if layout else {}
    total = Dim.const(elem_bytes)
    for d, s in enumerate(shape):
        t = tile.get(d, 1)
        total = total * (as_dim(s).ceildiv(t) * t if t > 1 else as_dim(s))
    return total


def divides_refusal(
    layout: Layout, shape: Shape, domains: Mapping[str, Domain], what: str, only: Container[int] | None = None
) -> str | None:
    """``what`` when an inner tile does not divide its dim for every allowed size, else None; ``only``:
    the tensor dims to check (default all)."""
    for d, t in zip(layout.inner_dims_pos, layout.inner_tiles, strict=True):
        if only is not None and d not in only:
            continue
        if not divides(t, shape[d], domains):
            size = describe(domains, as_dim(shape[d]))
            return f"{what}: dim {d} = {size} is not a multiple of the tile {t} for every size"
    return None


def fused_pack_refusal(
    target: Target,
    layout: Layout,
    shape: Shape,
    elem_bytes: int,
    acc: Dim | None,
    domains: Mapping[str, Domain],
    others: Sequence[Dim] = (),
) -> str | None:
    """fuse's conditions (``rules/analysis.egg`` legality, ``facts.fused_footprint_legal``) for every
    allowed size: the tiles divide the shape, and the largest footprint (these packs, ``others``
    packed with them, and the packed accumulator ``acc``; None: unknown) fits the stack and vector
    limits."""
    why = divides_refusal(layout, shape, domains, "1. the inner tiles do not divide the shape")
    if why:
        return why
    packs = [packed_bytes(shape, elem_bytes, layout), *others]
    total_dim = packs[0]
    for p in packs[1:]:
        total_dim = total_dim + p
    total = upper_bound(total_dim, domains)
    if total is None:
        return (
            f"2. the packed buffer ({total_dim} B) has no upper bound (no util.assume.int umax or --assume bounds it)"
        )
    acc_bytes = 0 if acc is None else upper_bound(acc, domains)
    if acc_bytes is None:
        return f"2. the packed accumulator ({acc} B) has no upper bound (no util.assume.int umax or --assume bounds it)"
    if total + acc_bytes > target.max_stack_allocation_size:
        return (
            f"2. the packed buffers can reach {total + acc_bytes} B, over the "
            f"{target.max_stack_allocation_size} B stack limit"
        )
    if total >= target.max_vector_bytes:
        return f"3. the packs can reach {total} B, over the {target.max_vector_bytes} B vector limit"
    return None


def const_eval_refusal(shape: Shape, grow: int | None, limit: int) -> str | None:
    """const_eval's condition 2: a dynamic shape always counts as too large (HoistIntoGlobals: a global
    has a static type), and a static encode must grow memory by at most ``limit``."""
    if not is_static(shape):
        return "2. the shape is dynamic (HoistIntoGlobals counts dynamic shapes as too large: a global is static)"
    if grow is not None and grow > limit:
        return f"2. the encoded copy grows by {grow} B, over the {limit} B threshold"
    return None
