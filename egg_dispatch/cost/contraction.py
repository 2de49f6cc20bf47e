"""Contraction geometry: the loops, flops, M, N, K and RHS bytes of a matmul-family op, from its kind.

A contraction's kind is ``contract:<maps>``, its loop dims per operand (``parse_maps``; a named
matmul without printed maps has its default ones), or ``mmt4d`` on operands already packed into
tiles. Flops count the padded sizes, since the mmt4d kernel runs on whole tiles
(docs/iree-data-tiling.md §3); M, N and K are the sizes the measured contraction fits are indexed
by. A ``linalg.generic`` that is a multiply-accumulate over projected permutations is a contraction
too (``generic_contraction_kind``), priced as the named one its maps spell.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from egg_dispatch.cost.facts import TensorInfo
from egg_dispatch.mlir.ir import Operation
from egg_dispatch.mlir.ops import DEFAULT_MAPS

__all__ = [
    "contraction_mnk",
    "contraction_rhs",
    "contraction_rows",
    "contraction_sizes",
    "generic_contraction_kind",
    "has_reduction",
    "mmt4d_flops",
    "mmt4d_mnk",
    "packed_rhs",
    "parse_maps",
    "rhs_is_kn",
]


def parse_maps(kind: str) -> tuple[tuple[int, ...], ...]:
    """Loop dims per operand from a Contract kind ``name:(d0,d2);(d1,d2);(d0,d1)``."""
    name, _, maps = kind.partition(":")
    if not maps:
        return DEFAULT_MAPS.get(name, DEFAULT_MAPS["linalg.matmul"])
    out = []
    for m in maps.split(";"):
        inner = m.strip("()")
        out.append(tuple(int(x[1:]) for x in inner.split(",") if x))
    return tuple(out)


def contraction_sizes(kind: str, operands: Sequence[TensorInfo]) -> tuple[int, int]:
    """(flops on padded sizes, loop count) of a matmul-family contraction."""
    maps = parse_maps(kind)
    loops: dict[int, int] = {}
    for info, dims in zip(operands, maps, strict=True):
        for axis, d in enumerate(dims):
            loops[d] = max(loops.get(d, 0), info.padded_dim(axis))
    return 2 * math.prod(loops.values()), len(loops)


def contraction_rows(kind: str, operands: Sequence[TensorInfo]) -> int:
    """M of a contraction (``contract:<maps>`` or ``mmt4d`` on packed operands): the logical size of the
    loops the LHS and the result share and the RHS does not."""
    lhs = operands[0].shape
    if kind == "mmt4d":  # [M1, K1, M0, K0], batch_mmt4d [B, M1, K1, M0, K0]
        return lhs[0] * lhs[2] if len(lhs) == 4 else lhs[1] * lhs[3] if len(lhs) == 5 else 0
    maps = parse_maps(kind[len("contract:") :])
    if len(maps) < 3 or len(maps[0]) != len(lhs):
        return 0
    return math.prod(lhs[maps[0].index(d)] for d in maps[2] if d in maps[0] and d not in maps[1])


def contraction_mnk(kind: str, operands: Sequence[TensorInfo]) -> tuple[int, int, int] | None:
    """(M, N, K) of a ``contract:<maps>`` kind on its logical operand shapes, batch dims left out; None
    when the maps do not match the operands."""
    maps = parse_maps(kind[len("contract:") :])
    if len(maps) < 3 or any(len(m) != len(o.shape) for m, o in zip(maps, operands[:3], strict=False)):
        return None
    size = {d: o.shape[i] for m, o in zip(maps, operands[:3], strict=False) for i, d in enumerate(m)}
    lhs, rhs, out = (set(m) for m in maps[:3])
    m = math.prod(size[d] for d in lhs & out - rhs)
    n = math.prod(size[d] for d in rhs & out - lhs)
    k = math.prod(size[d] for d in lhs & rhs - out)
    return m, n, k


def contraction_rhs(kind: str, operands: Sequence[TensorInfo]) -> tuple[float, int]:
    """(bytes of one RHS matrix, how many: the batch) of a ``contract:<maps>`` kind: what a plain
    contraction re-reads when its RHS outgrows the cache (``Fit.reread_seconds``)."""
    maps = parse_maps(kind[len("contract:") :])
    rhs = operands[1]
    if len(maps) < 3 or len(maps[1]) != len(rhs.shape):
        return float(rhs.stored_bytes), 1
    batch = math.prod(rhs.shape[i] for i, d in enumerate(maps[1]) if d in maps[0] and d in maps[2])
    return rhs.stored_bytes / max(batch, 1), max(batch, 1)


def mmt4d_mnk(operands: Sequence[TensorInfo]) -> tuple[int, int, int] | None:
    """(M, N, K) of an ``mmt4d`` (or ``batch_mmt4d``, per batch) on its packed operands: the padded
    sizes, tiles included."""
    lhs, rhs = operands[0].shape, operands[1].shape
    if len(lhs) != len(rhs) or len(lhs) not in (4, 5):
        return None
    b = len(lhs) - 4
    return lhs[b] * lhs[b + 2], rhs[b] * rhs[b + 2], lhs[b + 1] * lhs[b + 3]


def packed_rhs(rhs: TensorInfo) -> tuple[float, int]:
    """(bytes of one packed RHS, how many) of an ``mmt4d`` ([N1, K1, N0, K0]) or ``batch_mmt4d``
    ([B, N1, K1, N0, K0])."""
    batch = rhs.shape[0] if len(rhs.shape) == 5 else 1
    return rhs.stored_bytes / max(batch, 1), max(batch, 1)


def rhs_is_kn(kind: str) -> bool:
    """The RHS of a Contract kind is stored [K, N]: its last reduction loop comes before its last
    parallel (N) loop (``linalg.matmul``'s and ``batch_matmul``'s default maps; PyTorch's linear,
    ``x . w^T``, is [N, K])."""
    maps = parse_maps(kind)
    if len(maps) < 3:
        return False
    lhs, rhs, acc = maps[0], maps[1], maps[2]
    k_pos = [i for i, d in enumerate(rhs) if d in lhs and d not in acc]
    n_pos = [i for i, d in enumerate(rhs) if d in acc and d not in lhs]
    return bool(k_pos and n_pos) and max(k_pos) < max(n_pos)


def mmt4d_flops(operands: Sequence[TensorInfo]) -> int:
    lhs, rhs = operands[0].shape, operands[1].shape
    if len(lhs) == 5:  # batch_mmt4d
        return 2 * lhs[0] * lhs[1] * lhs[3] * rhs[1] * rhs[3] * lhs[2] * lhs[4]
    return 2 * lhs[0] * lhs[2] * rhs[0] * rhs[2] * lhs[1] * lhs[3]


def has_reduction(op: Operation | None) -> bool:
    its = getattr(getattr(op, "attributes", {}).get("iterator_types"), "items", ())
    return any(getattr(a, "value", "") == "reduction" for a in its)


_MULS = frozenset({"arith.mulf", "arith.muli"})


_ADDS = frozenset({"arith.addf", "arith.addi"})


def generic_contraction_kind(op: Operation | None) -> str | None:
    """A ``linalg.generic`` that is a contraction (two inputs, one init, projected-permutation maps, a
    reduction loop, a multiply-accumulate body, e.g. f16 x f16 -> f32 with ``arith.extf``): the
    ``contract:`` kind its maps give (``linalg.generic:(d0,d2);(d2,d1);(d0,d1)``), priced like a
    named contraction (flops at the contraction peak, data-tiled when encoded); else None."""
    if op is None or op.name != "linalg.generic" or not has_reduction(op):
        return None
    maps = getattr(op.attributes.get("indexing_maps"), "items", ())
    if len(maps) != 3 or len(getattr(op, "results", ())) != 1:
        return None
    dims = [m.dim_positions() if hasattr(m, "dim_positions") else None for m in maps]
    if any(d is None for d in dims):
        return None
    body = {o.name for o in op.regions[0].entry.ops} if getattr(op, "regions", ()) else set()
    if not (body & _MULS and body & _ADDS):
        return None
    return "linalg.generic:" + ";".join("(" + ",".join(f"d{i}" for i in d) + ")" for d in dims if d is not None)
