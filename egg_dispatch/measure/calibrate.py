"""``egg-dispatch calibrate``: a target profile measured on this machine.

Micro-programs (``measure.micro``) cover what the cost model prices: data-tiled contractions with
their operands pre-packed (over a grid of M, N, K, per element-type triple), the same with the unpack
or one operand's pack inside the contraction's dispatch, the unpack followed by a bias + ReLU in that
dispatch (``consumer_after_unpack``: the extra over the unpack alone), an encode inside its producer's
dispatch, after an elementwise generic or at the end of a contraction's (``producer_pack``), plain
(non-data-tiled) contractions, encode and decode dispatches, elementwise and reduction generics (and
elementwise ones with one transcendental body op each, ``micro.MATH_OPS``: ``op_weights``), ``linalg.softmax`` and
``iree_linalg_ext.attention`` dispatches (opaque to the model), slices copied between dispatches (against
the same slice loaded in its consumer: whole-call times), plain contractions timed alone and next to
data-tiled ones of several lengths (``throttle_fit``: the clock drop a long mmt4d kernel leaves behind),
and chains and fans of almost empty dispatches for the per-call overheads. Each is emitted in IREE's
post-dispatch-creation form (``emit.iree``, so the dispatch boundaries are ours), compiled with
``iree-compile`` for the target's CPU (the flags ``bench`` and ``tune`` use), and run by
``iree-benchmark-module`` on the single-threaded ``local-sync`` device with IREE's host-execution
profiling, which gives every dispatch's kernel time; the whole call is also timed without profiling.
Repeats are interleaved across programs and the fastest is kept: other work on the machine only ever
adds time, so the minimum is the estimate least disturbed by it.

Fits (``fit_linear``) are least squares on relative error with non-negative coefficients (an
active-set refit drops a term that would go negative): ``seconds = fixed + work / rate + bytes /
bandwidth``. Each fit records its median |log(model / measured)|; where that exceeds
``TABLE_RESIDUAL`` the measured points are kept as a table the model interpolates (``target.kernels``).
Per-call overheads are fitted on the whole-call times of chains (each dispatch reads the one before:
one result, and a transient buffer once there are two) and fans (independent dispatches, each a
result: no transient) of almost empty dispatches: call = per-call + results x output + [any
transient] x transient step + dispatches x launch + Σ kernels (on the programs with big kernels the
difference is within their noise). The memory hierarchy (``KernelCosts.cache_bytes``, ``dram_gbps``)
is fitted last: for each candidate knee (powers of two from 256 KiB to 64 MiB, or none) every fit is
made on the samples that move at most that many bytes, the bytes beyond it are priced by the median
rate the larger traffic samples (packs, unpacks, generics, copies) show on top of their fit, and the
knee with the least mean |log| error over all traffic samples wins. Then each contraction fit keeps
its per-shape residuals where leave-one-out says they generalize (``_with_shape_residuals``). The
profile is written with
provenance for every number (CPU, flags, IREE version, date, residual), atomically, so an interrupted
run leaves the previous profile as it was.
"""

from __future__ import annotations

import dataclasses
import datetime
import functools
import math
import operator
import re
import statistics
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from importlib import metadata

import numpy as np

from egg_dispatch.egraph.facts import fused_footprint_legal
from egg_dispatch.emit.iree.module import emit_iree, iree_cpu
from egg_dispatch.iree.profiling import DispatchTimes, profile_module
from egg_dispatch.iree.tools import compile_module
from egg_dispatch.measure.micro import (
    ENCODE_AFTER_NEXT_N,
    MATH_OPS,
    UNPACK_IN_DISPATCH,
    Case,
    MicroProgram,
    buffer,
    chain,
    contractions,
    encode_after_contraction,
    fan,
    generics,
    math_op_helpers,
    opaque,
    producer_pack,
    slice_copy,
    throttle,
)
from egg_dispatch.mlir.parser import parse_mlir
from egg_dispatch.target.host import host_cpu
from egg_dispatch.target.kernels import MATVEC, ROLES, Fit, KernelCosts, attention_flops, kernels_to_dict
from egg_dispatch.target.layout import packed_nbytes, resolve_layout
from egg_dispatch.target.profile import Target

__all__ = [
    "TABLE_RESIDUAL",
    "Calibration",
    "Plan",
    "calibrate",
    "calibration_from_samples",
    "fit_linear",
    "plan_programs",
    "producer_apart_seconds",
    "producer_pack_table",
    "profile_dict",
    "samples_dict",
    "unique_encode_groups",
]

MATH_OP_ELEMENTS = (512, 1 << 16)
"""An op's weight is measured on generics of this many elements (below, the fixed cost of the
dispatch hides it; far above, the generic streams from memory and its body's work overlaps that)."""

TABLE_RESIDUAL = 0.25
"""A fit whose median |log(model/measured)| exceeds this keeps its points as an interpolation table."""

_MAPS = ((0, 2), (1, 2), (0, 1))
_BYTES = {"f32": 4, "f16": 2, "bf16": 2, "i8": 1, "i32": 4, "f64": 8}


@dataclass
class Plan:
    """What one calibration run measures (``--quick`` is the smaller one)."""

    types: tuple[str, ...]
    contraction_shapes: tuple[tuple[int, int, int], ...]
    in_dispatch_shapes: tuple[tuple[int, int, int], ...]
    generic_shapes: tuple[tuple[int, int], ...]
    chains: tuple[int, ...]
    repeats: int
    min_time: float
    fans: tuple[int, ...] = ()
    slice_shapes: tuple[tuple[int, int], ...] = ()
    """[rows, cols] f32 slices copied between dispatches (``micro.slice_copy``)."""
    softmax_shapes: tuple[tuple[int, int], ...] = ()
    """[R, C] f32 ``linalg.softmax`` over C (``micro.opaque``)."""
    attention_shapes: tuple[tuple[int, int, int, int, int], ...] = ()
    """(B, M, K1, K2, N) f32 ``iree_linalg_ext.attention`` (``micro.opaque``)."""
    producer_shapes: tuple[tuple[str, tuple[tuple[int, int, int], ...]], ...] = ()
    """(element type, (B, S, K) shapes) of elementwise producers packed in their dispatch and apart
    (``micro.producer_pack``; B = 0: no collapse), a program pair per shape."""
    math_ops: tuple[str, ...] = ()
    """Body ops whose weight against an add is measured (``micro.MATH_OPS``, ``KernelCosts.op_weights``)."""
    buffer_bytes: tuple[int, ...] = ()
    """Sizes of the result buffers whose per-call cost is measured (``micro.buffer``); the smallest is
    the baseline the others are measured against."""
    throttle_shapes: tuple[tuple[int, int, int], ...] = ()
    """(M, N, K) of the f32 mmt4d kernels the plain ``micro.THROTTLE_VICTIMS`` are timed next to (and
    once without one): how long an mmt4d must run to slow them, and by how much (``throttle_fit``)."""
    encode_after_shapes: tuple[tuple[int, int, int], ...] = ()
    """(M, N, K) of f32 contractions whose result's encode is timed inside their dispatch and apart
    (``micro.encode_after_contraction``), a program pair per shape: ``producer_pack["f32:contraction"]``."""


def plan_programs(quick: bool, target: Target) -> Plan:
    types = tuple(t for t in ("f32,f32,f32", "f16,f16,f32", "i8,i8,i32") if target.tile(t) is not None) or (
        "f32,f32,f32",
    )
    # N != K and M not in {N, K}: the LHS [M, K], RHS [N, K] and result [M, N] of a case never share a
    # shape, so IREE's encode names tell them apart (``unique_encode_groups``).
    if quick:
        return Plan(types[:2], ((1, 64, 96), (16, 256, 384), (128, 512, 768)), ((8, 32, 48), (32, 64, 48)),
                    ((16, 256), (256, 1024)), (1, 2, 16), 3, 0.05, fans=(4,),
                    slice_shapes=((64, 256), (768, 768)), softmax_shapes=((128, 16), (64, 64), (1024, 128)),
                    attention_shapes=((4, 16, 8, 16, 8), (8, 16, 8, 16, 8), (12, 64, 64, 64, 64)),
                    buffer_bytes=(4096, 1 << 18, 1 << 22),
                    producer_shapes=(("f32", ((2, 8, 64),)),), math_ops=("math.exp", "math.erf"),
                    throttle_shapes=((64, 16, 768), (64, 64, 768)), encode_after_shapes=((32, 128, 32),))  # fmt: skip
    grid = tuple((m, n, n + n // 2) for m in (1, 8, 32, 128, 512) for n in (64, 256, 1024))
    # a transformer block's small projections (K of 32, N of 48 or 96: heads, MLP width) and a few
    # tiny ones, which the square-ish grid does not reach: there the fits extrapolated (plain matmuls
    # in a block ran 1.6x faster than the grid's fit said; a tiny mmt4d's fixed cost was a guess)
    grid += ((16, 48, 32), (16, 96, 32), (16, 32, 96), (64, 128, 32), (64, 32, 128), (4, 64, 32))
    grid += ((8, 16, 32), (2, 32, 16), (8, 32, 16))
    # matvecs of both aspect ratios: three M = 1 shapes of one aspect left the :m1 fits exact through
    # their points and 3x off for a [768, 3072] weight
    grid += ((1, 2048, 512), (1, 512, 2048))
    # RHS sizes either side of the L2 (1.5 and 3 MB f32): where a plain contraction's RHS stops staying
    # in the cache, and whether all of it or the part beyond is read again (``_with_reread``); the grid's
    # RHS sizes jump from 0.4 MB to 6 MB
    grid += ((64, 512, 768), (64, 1024, 768))
    # and an RHS of exactly 2 MiB (f16 [512, 2048], f32 [512, 1024]): at the L2's own size a plain f16
    # [K, N] matmul ran at 55 GFLOP/s, and without a sample there the re-read knee fell at 2 MiB
    grid += ((128, 2048, 512), (64, 512, 1024))
    small: tuple[tuple[int, int, int], ...] = (
        (1, 32, 48), (4, 64, 32), (16, 64, 32), (16, 32, 64), (32, 48, 64), (8, 64, 48), (32, 64, 48)
    )  # fmt: skip
    # fused packs of the sizes transformer blocks fuse (M of 16-128, N up to 256): their cost per element
    # changes with the shape (``KernelCosts.fused_pack``), and the shapes IREE's codegen takes fused
    # (the footprint model drops the rest) span little more than this grid
    small += ((2, 128, 48), (16, 128, 48), (32, 128, 48), (48, 64, 32), (64, 32, 48), (64, 96, 32),
              (96, 32, 64), (128, 32, 48), (8, 256, 32), (16, 256, 48), (1, 256, 96))  # fmt: skip
    gen = ((1, 64), (8, 64), (1, 512), (16, 256), (4, 1024), (64, 1024), (256, 4096))
    slices = ((16, 256), (64, 256), (64, 768), (128, 768), (256, 768), (768, 768), (1536, 768))
    # the softmax and attention of transformer blocks: opaque to the model, priced by a formula they
    # missed 4-15x (a [128, 16] softmax of the BERT block ran 3.3 µs, 0.2 predicted); heads x tokens rows
    # of keys-long softmaxes, and (B, M, K1, K2, N) attentions of the exported blocks and of GPT-2 small
    softmax = ((128, 16), (512, 16), (64, 64), (256, 64), (1024, 128), (768, 512))
    attention = ((4, 16, 8, 16, 8), (8, 16, 8, 16, 8), (4, 32, 16, 32, 16), (8, 64, 32, 64, 32),
                 (12, 64, 64, 64, 64), (8, 128, 64, 128, 64))  # fmt: skip
    # buffers a plan allocates on every call, 4 KiB to 16 MiB: a per-call packed [768, 768] f32 weight
    # (2.4 MB) cost ~80 µs beyond its kernels on the Xeon, which a model without it priced at 0
    buffers = (4096, 1 << 16, 1 << 18, 1 << 20, 1 << 22, 1 << 24)
    # an elementwise producer (a bias, an activation, a norm's scale, a cast) and the pack of its result:
    # IREE fuses them into one dispatch, which ran 2-4x the two apart on the Xeon at the sizes of the
    # exported blocks; the [B, S, K] forms are a linear layer of a PyTorch export reading its tokens
    # through a collapse. One shape per program: next to other cases a [64, 768] f32 generic and encode
    # ran 37 and 51 µs, alone 6 and 5 (their buffers' first touch, ``alloc``, swamped the difference)
    # The fused form's extra changes sign between 1 K elements (fused faster) and 48 K (slower): the
    # [32, 128] and [64, 256] ones between (a GPT-2 block's MLP activations) were an interpolation's
    # guess, and its fused packs measured 0.1 µs where the guess priced 0.5
    producers: tuple[tuple[str, tuple[tuple[int, int, int], ...]], ...]
    producers = (("f32", ((0, 16, 64), (0, 32, 128), (0, 64, 256), (0, 64, 768))),
                 ("f32", ((2, 8, 64), (2, 16, 128), (1, 64, 768))))  # fmt: skip
    if "f16,f16,f32" in types:
        producers += (("f16", ((2, 8, 64), (2, 16, 128), (1, 128, 768))),)
    # mmt4d kernels of ~13, 27, 52 and 140 µs next to plain matmuls: on the Xeon those ran 11-17% slower
    # next to one of 27 µs or more and not measurably slower next to one of 15 µs or less
    throttles = ((64, 16, 768), (64, 32, 768), (64, 64, 768), (64, 192, 768))
    # a contraction's dispatch ending with the encode of its result for the next contraction (IREE's own
    # plans of transformer blocks): there the encode added 0.10-0.14 µs to a 32 x 96 x 32 or 32 x 128 x 32
    # contraction on the Xeon against 0.26-0.33 µs for its own dispatch apart, which the model charged
    encode_after = ((16, 64, 64), (32, 96, 32), (32, 128, 32), (64, 256, 64), (128, 512, 128))
    return Plan(types, grid, small, gen, (1, 2, 4, 16, 48), 3, 0.1, fans=(2, 8), slice_shapes=slices,
                softmax_shapes=softmax, attention_shapes=attention, buffer_bytes=buffers,
                producer_shapes=producers, math_ops=MATH_OPS, throttle_shapes=throttles,
                encode_after_shapes=encode_after)  # fmt: skip


@dataclass
class Calibration:
    """Every measurement of a run and the fitted costs."""

    samples: dict[str, list[tuple[tuple[int, ...], str, float]]] = field(default_factory=dict)
    """kind -> [(sizes, element types, median seconds)]; packs and unpacks: sizes (M, N, K, operand)."""
    chains: list[tuple[int, int, float, float]] = field(default_factory=list)
    """The chain and fan programs' (dispatches, results, kernel seconds per call, call seconds); a
    program with more dispatches than results has a transient buffer."""
    kernels: KernelCosts | None = None
    residuals: dict[str, float] = field(default_factory=dict)
    stopped: str = ""
    """Why the run stopped before measuring everything (empty: it did not)."""


def fit_linear(
    features: Sequence[Sequence[float]], seconds: Sequence[float], scale: Sequence[float] | None = None
) -> tuple[list[float], float]:
    """Non-negative least squares of ``seconds ≈ features @ coef`` on relative error; returns the
    coefficients and the median |log(model / measured)|.

    With ``scale``, errors are relative to it instead (and the residual is the median |model -
    measured| / scale): for a *difference* of two times (the extra an in-dispatch pack costs), which
    may be near zero or negative by noise, relative to the dispatch it is part of."""
    x = np.asarray(features, dtype=np.float64)
    y = np.asarray(seconds, dtype=np.float64)
    w = 1.0 / np.maximum(np.asarray(scale if scale is not None else y, dtype=np.float64), 1e-12)
    # A column the earlier ones already determine (bytes = 8 x elements when every sample is unpadded f32)
    # is dropped: least squares would split the time between them arbitrarily.
    active: list[int] = []
    for j in range(x.shape[1]):
        trial = [*active, j]
        cols = x[:, trial] * w[:, None]
        cols = cols / np.maximum(np.abs(cols).max(axis=0), 1e-300)
        if np.linalg.matrix_rank(cols, tol=1e-9) == len(trial):
            active = trial
    coef = np.zeros(x.shape[1])
    while active:
        sol, *_ = np.linalg.lstsq(x[:, active] * w[:, None], y * w, rcond=None)
        if (sol >= 0).all():
            coef[:] = 0
            coef[active] = sol
            break
        active.pop(int(np.argmin(sol)))
    model = x @ coef
    if scale is not None:
        ratios = np.abs(model - y) * w
    else:
        ratios = np.abs(np.log(np.maximum(model, 1e-15) / np.maximum(y, 1e-15)))
    return coef.tolist(), float(np.median(ratios)) if len(ratios) else 0.0


def _to_fit(coef: Sequence[float], residual: float, points: list[tuple[float, float]]) -> Fit:
    """(fixed, per-work, per-byte) coefficients as a ``Fit``; rates are their inverses."""
    fixed, per_work, per_byte = [*coef, 0.0, 0.0][:3]
    keep = tuple(sorted(points)) if residual > TABLE_RESIDUAL and len(points) >= 2 else ()
    return Fit(
        fixed_us=fixed * 1e6,
        rate_g=(1.0 / per_work / 1e9) if per_work > 0 else 0.0,
        gbps=(1.0 / per_byte / 1e9) if per_byte > 0 else 0.0,
        points=keep,
        residual=residual,
    )


def _layout_bytes(target: Target, types: str, sizes: tuple[int, ...], operand: int) -> tuple[int, int]:
    """(logical, packed) bytes of operand ``operand`` (0 lhs [M,K], 1 rhs [N,K], 2 acc [M,N])."""
    m, n, k = sizes
    lhs_t, rhs_t, acc_t = types.split(",")
    ts = (lhs_t, rhs_t, acc_t)
    shape = ((m, k), (n, k), (m, n))[operand]
    elem = _BYTES[ts[operand]]
    layout = resolve_layout(target, operand, ts, _MAPS, (m, n, k))
    return math.prod(shape) * elem, packed_nbytes(shape, elem, layout)


def _padded_sizes(target: Target, types: str, sizes: tuple[int, int, int]) -> tuple[int, int, int]:
    """(M, N, K) padded to the target's tiles, as an mmt4d's packed operands hold them."""
    m, n, k = sizes
    lhs_t, rhs_t, acc_t = types.split(",")
    ts = (lhs_t, rhs_t, acc_t)
    lay = [resolve_layout(target, i, ts, _MAPS, sizes) for i in range(3)]

    def pad(size: int, i: int, axis: int) -> int:
        layout = lay[i]
        if layout is None:
            return size
        tiles = dict(zip(layout.inner_dims_pos, layout.inner_tiles, strict=True))
        t = tiles.get(axis, 1)
        return -(-size // t) * t

    return pad(m, 0, 0), pad(n, 1, 0), pad(k, 0, 1)


def _padded_flops(target: Target, types: str, sizes: tuple[int, int, int]) -> int:
    return 2 * math.prod(_padded_sizes(target, types, sizes))


@dataclass(frozen=True)
class _ContractionRow:
    """One contraction sample as its fit reads it."""

    sizes: tuple[int, int, int]
    """Logical (M, N, K)."""
    mnk: tuple[int, int, int]
    """(M, N, K) as the model sees the kernel: padded for mmt4d (``cost.model.mmt4d_mnk``)."""
    flops: int
    moved: int
    rhs_bytes: int
    seconds: float


def _contraction_rows(
    samples: dict[str, list[tuple[tuple[int, ...], str, float]]], target: Target, kind: str, key: str
) -> list[_ContractionRow]:
    """The samples the ``kind`` fit of ``key`` (element types, ``MATVEC`` appended for M = 1 alone) is
    made on: M = 1 and the rest apart where at least four of each were measured (three would fit the
    three coefficients exactly, whatever the shapes between them do), else every M under ``key``
    without the suffix and none under it."""
    narrow = key.endswith(MATVEC)
    types = key.removesuffix(MATVEC)
    rows = [(tuple(sz), t) for sz, ts, t in samples.get(kind, []) if ts == types]
    split = sum(sz[0] == 1 for sz, _ in rows) >= 4 and sum(sz[0] != 1 for sz, _ in rows) >= 4
    if split or narrow:
        rows = [(sz, t) for sz, t in rows if (sz[0] == 1) == narrow] if split else []
    packed = kind == "mmt4d"
    out = []
    for sz, t in rows:
        size3 = (int(sz[0]), int(sz[1]), int(sz[2]))
        out.append(
            _ContractionRow(
                sizes=size3,
                mnk=_padded_sizes(target, types, size3) if packed else size3,
                flops=_padded_flops(target, types, size3) if packed else 2 * math.prod(size3),
                moved=sum(_layout_bytes(target, types, size3, i)[1 if packed else 0] for i in range(3)),
                rhs_bytes=_layout_bytes(target, types, size3, 1)[1 if packed else 0],
                seconds=t,
            )
        )
    return out


def unique_encode_groups(
    shapes: Sequence[tuple[int, int, int]], kind: str, types: str
) -> list[list[tuple[int, int, int]]]:
    """Split contraction shapes into groups whose encode / decode dispatches all have distinct shapes.

    IREE names an encode dispatch ``_encoding_<N>_encode_<shape>x<type>_to_<shape>x<type>``: the name
    does not say which encoding (the narrow-M tiles of an M=1 operand differ from an M=512 one of the same
    [N, K] shape), so in one program two encodes of the same shape could not be told apart. First fit,
    in the given order: deterministic."""
    lhs_t, rhs_t, acc_t = types.split(",")
    groups: list[tuple[set[str], list[tuple[int, int, int]]]] = []
    for m, n, k in shapes:
        names = set()
        if kind not in ("matmul", "matmul_kn", "mmt4d+pack_lhs"):
            names.add(f"{m}x{k}x{lhs_t}")
        if kind not in ("matmul", "matmul_kn", "mmt4d+pack_rhs"):
            names.add(f"{n}x{k}x{rhs_t}")
        if kind not in ("matmul", "matmul_kn") and kind not in UNPACK_IN_DISPATCH:
            names.add(f"{m}x{n}x{acc_t}")
        for used, members in groups:
            if not used & names:
                used |= names
                members.append((m, n, k))
                break
        else:
            groups.append((names, [(m, n, k)]))
    return [members for _, members in groups]


def size_classes(shapes: Sequence[tuple[int, int, int]]) -> list[list[tuple[int, int, int]]]:
    """Shapes grouped by the size of their largest operand, within a factor 4 of each other.

    One program runs all its cases in a loop, so a small case sharing a program with a [1024, 1536]
    one is measured with its caches flushed by its neighbour: a 6 K-element pack took 1.7 µs there and
    0.24 µs for 3 K elements among small neighbours. Each size class is a program of its own, so every
    case is measured as it runs among dispatches of its own size."""
    by_class: dict[int, list[tuple[int, int, int]]] = {}
    for m, n, k in shapes:
        largest = max(m * k, n * k, m * n)
        by_class.setdefault(int(math.log(max(largest, 1), 4)), []).append((m, n, k))
    return [by_class[c] for c in sorted(by_class)]


def _programs(plan: Plan, target: Target) -> list[MicroProgram]:
    """The calibration programs; in-dispatch packs only where IREE's codegen takes them (the fused-pack
    footprint model the e-graph's legality uses, ``egraph.facts.fused_footprint_legal``)."""
    out: list[MicroProgram] = []

    def add(name: str, kind: str, types: str, shapes: Sequence[tuple[int, int, int]]) -> None:
        groups = []
        for size_class in size_classes(shapes):
            plain = kind in ("matmul", "matmul_kn")
            groups += [size_class] if plain else unique_encode_groups(size_class, kind, types)
        for i, group in enumerate(groups):
            out.append(contractions(f"{name}_{i}" if len(groups) > 1 else name, kind, types, group))

    for types in plan.types:
        tag = types.split(",")[0]
        if target.encoding_resolver:
            add(f"mmt4d_{tag}", "mmt4d", types, plan.contraction_shapes)
        add(f"matmul_{tag}", "matmul", types, plan.contraction_shapes)
        add(f"matmul_kn_{tag}", "matmul_kn", types, plan.contraction_shapes)
    f32 = "f32,f32,f32"
    if not target.encoding_resolver:  # IREE without data tiling: plain contractions, generics, overheads
        return out + _generic_programs(plan) + _overhead_programs(plan)
    add("unpack_f32", "mmt4d+unpack", f32, plan.contraction_shapes)
    add("consumer_f32", "mmt4d+unpack+bias", f32, plan.contraction_shapes)
    lhs_ok = [s for s in plan.in_dispatch_shapes if _fused_ok(target, f32, s, 0)]
    rhs_ok = [s for s in plan.in_dispatch_shapes if _fused_ok(target, f32, s, 1)]
    if lhs_ok or rhs_ok:
        add("base_small_f32", "mmt4d", f32, sorted(set(lhs_ok) | set(rhs_ok)))
    if lhs_ok:
        add("pack_lhs_f32", "mmt4d+pack_lhs", f32, lhs_ok)
    if rhs_ok:
        add("pack_rhs_f32", "mmt4d+pack_rhs", f32, rhs_ok)
    for element, shapes in plan.producer_shapes:
        for b, m, k in shapes:
            tag = f"{element}_{b}x{m}x{k}"
            out += [producer_pack(f"producer_{tag}_{form}", element, [(b, m, k)], form == "fused")
                    for form in ("fused", "apart")]  # fmt: skip
    for m, n, k in plan.encode_after_shapes:
        out += [encode_after_contraction(f"encode_after_{m}x{n}x{k}_{form}", (m, n, k), form == "fused")
                for form in ("fused", "apart")]  # fmt: skip
    if plan.throttle_shapes and f32 in plan.types:
        out.append(throttle("throttle_none", None))
        out += [throttle(f"throttle_{m}x{n}x{k}", (m, n, k)) for m, n, k in plan.throttle_shapes]
    return out + _generic_programs(plan) + _overhead_programs(plan)


def _generic_programs(plan: Plan) -> list[MicroProgram]:
    """Elementwise and reduction generics, one program per size class (as ``size_classes`` does for
    contractions): among a [256, 4096] neighbour, a [16, 256] add measured 1.7 µs, alone 0.38 µs, and
    the small generics of a model block run as fast as the latter (profiled in tune)."""
    by_class: dict[int, list[tuple[int, int]]] = {}
    for r, n in plan.generic_shapes:
        by_class.setdefault(int(math.log(max(r * n, 1), 4)), []).append((r, n))
    out: list[MicroProgram] = []
    for i, c in enumerate(sorted(by_class)):
        shapes = by_class[c]
        out.append(generics(f"elementwise1_{i}", "elementwise", shapes, 1))
        out.append(generics(f"elementwise4_{i}", "elementwise", shapes, 4))
        mid = [(r, n) for r, n in shapes if MATH_OP_ELEMENTS[0] <= r * n <= MATH_OP_ELEMENTS[1]]
        if mid and plan.math_ops:
            out.append(generics(f"elementwise_ops_{i}", "elementwise_op", mid, math_ops=plan.math_ops))
        out.append(generics(f"reduction_{i}", "reduction", shapes))
    # small and large apart, as for the generics: a small case right after a large one runs on caches
    # the large one flushed
    for kind, opaque_shapes in (("softmax", plan.softmax_shapes), ("attention", plan.attention_shapes)):
        half = (len(opaque_shapes) + 1) // 2
        for i, part in enumerate((opaque_shapes[:half], opaque_shapes[half:])):
            if part:
                out.append(opaque(f"{kind}_{i}", kind, part))
    return out


def _overhead_programs(plan: Plan) -> list[MicroProgram]:
    out = [chain(f"chain{n}", n) for n in plan.chains] + [fan(f"fan{n}", n) for n in plan.fans]
    for r, c in plan.slice_shapes:
        out += [slice_copy(f"slice_top_{r}x{c}", r, c, True), slice_copy(f"slice_in_{r}x{c}", r, c, False)]
    out += [buffer(f"buffer_{n}", n) for n in plan.buffer_bytes]
    return out


def _fused_ok(target: Target, types: str, sizes: tuple[int, int, int], operand: int) -> bool:
    _, packed = _layout_bytes(target, types, sizes, operand)
    _, acc = _layout_bytes(target, types, sizes, 2)
    return fused_footprint_legal(target, [packed], acc)


def _lookup(times: DispatchTimes, prog: MicroProgram, case: Case) -> float | None:
    """The kernel time of the dispatch that measures ``case``; None when it did not run or when two
    encodes of one case have the same shape (an LHS and RHS both [32, 32]: IREE's names cannot tell
    them apart, ``unique_encode_groups``)."""
    if case.dispatch is not None:
        prefix = f"{prog.function}_dispatch_{case.dispatch}_"
        return next((s for name, s in times.seconds.items() if name.startswith(prefix)), None)
    pattern = re.compile(rf"_encoding_\d+_{re.escape(case.encode or '')}")
    found = [s for name, s in times.seconds.items() if pattern.fullmatch(name)]
    same = sum(1 for c in prog.cases if c.encode == case.encode)
    return found[0] if len(found) == 1 and same == 1 else None


def calibrate(
    target: Target,
    *,
    quick: bool = False,
    progress: Callable[[str, int, int], None] | None = None,
    deadline: float | None = None,
    clock: Callable[[], float] | None = None,
    jobs: int = 2,
) -> Calibration:
    """Measure the micro-programs for ``target``'s CPU and fit its kernel costs (see module doc).
    ``deadline`` (on ``clock``, default ``time.monotonic``) stops measuring early; what was measured
    is fitted, and ``Calibration.stopped`` says why it stopped. ``jobs`` programs compile at a time
    (compiling took half of a full run on one core); timing is always one at a time."""
    import time
    from concurrent.futures import ThreadPoolExecutor

    now = clock or time.monotonic
    plan = plan_programs(quick, target)
    programs = _programs(plan, target)
    cpu = iree_cpu(target)
    cpu_flag = next((f.split("=", 1)[1] for f in cpu.compile_flags if "target-cpu=" in f), "generic")
    others = [f for f in cpu.compile_flags if "target-cpu=" not in f]
    compiled: list[tuple[MicroProgram, bytes]] = []
    total = len(programs) * (1 + plan.repeats)
    done = 0
    cal = Calibration()

    def build(prog: MicroProgram) -> bytes | None:
        if deadline is not None and now() > deadline:
            return None
        text = emit_iree(parse_mlir(prog.text, f"<calibration {prog.function}>"), target, materialize=False)
        return compile_module(text, data_tiling=False, target_cpu=cpu_flag, extra_flags=others,
                              compile_from="dispatch-creation")  # fmt: skip

    with ThreadPoolExecutor(max_workers=max(1, jobs)) as pool:
        for prog, vmfb in zip(programs, pool.map(build, programs), strict=True):
            if vmfb is None:
                cal.stopped = "time budget reached while compiling"
                continue
            compiled.append((prog, vmfb))
            done += 1
            if progress:
                progress(f"compiled {prog.function}", done, total)
    raw: dict[tuple[str, int], list[float]] = {}
    call_raw: dict[str, list[tuple[float, float]]] = {}
    for r in range(plan.repeats):
        for prog, vmfb in compiled:
            if deadline is not None and now() > deadline:
                cal.stopped = cal.stopped or f"time budget reached in repeat {r + 1} of {plan.repeats}"
                break
            times = profile_module(vmfb, prog.function, prog.inputs, min_time=plan.min_time)
            for i, case in enumerate(prog.cases):
                if case.kind == "slice_copy":
                    s = times.call_seconds
                elif case.kind == "alloc":
                    s = None if times.call_seconds is None else times.call_seconds - times.kernel_seconds_per_call()
                else:
                    s = _lookup(times, prog, case)
                if s is not None:
                    raw.setdefault((prog.function, i), []).append(s)
            if times.call_seconds is not None:
                call_raw.setdefault(prog.function, []).append((times.kernel_seconds_per_call(), times.call_seconds))
            done += 1
            if progress:
                progress(f"timed {prog.function} ({r + 1}/{plan.repeats})", done, total)
        else:
            continue
        break
    by_name = {p.function: p for p, _ in compiled}
    for (fn, i), values in raw.items():
        case = by_name[fn].cases[i]
        sizes = case.sizes if case.operand is None else (*case.sizes, case.operand)
        cal.samples.setdefault(case.kind, []).append((sizes, case.types, min(values)))
    for fn, pairs in call_raw.items():
        if by_name[fn].cases and by_name[fn].cases[0].kind in ("chain", "fan"):
            kern, call = min(pairs, key=lambda p: p[1] - p[0])
            cal.chains.append((by_name[fn].dispatch_count, by_name[fn].outputs, kern, call))
    cal.kernels, cal.residuals = fit_kernels(cal, target)
    return cal


def fit_kernels(cal: Calibration, target: Target) -> tuple[KernelCosts, dict[str, float]]:
    """Fit every kind measured in ``cal`` (see the module doc); returns the costs and residuals.

    The memory knee is chosen here: for each candidate (and for none) the fits are made on the samples
    within it, the bytes beyond it priced from the larger traffic samples (``_with_spill``), and the
    candidate whose mean |log(model / measured)| over every traffic sample is least wins. Then every fit
    is made again on all its samples, each less what its bytes beyond the knee cost."""
    best: tuple[float, KernelCosts, dict[str, float]] | None = None
    rows = _traffic_rows(cal, target)
    for knee in (None, *KNEES):
        kernels, res = _fit_within(cal, target, knee)
        if knee is not None:
            spilled = _with_spill(kernels, knee, rows)
            if spilled is None:
                continue
            kernels = spilled
        err = _traffic_error(kernels, rows)
        if best is None or err < best[0] - 1e-9:
            best = (err, kernels, res)
    assert best is not None
    err, kernels, res = best
    if kernels.dram_gbps > 0:  # every fit again on every sample, its bytes beyond the knee taken off
        refit, res = _fit_within(cal, target, int(kernels.cache_bytes), kernels.dram_gbps)
        kernels = dataclasses.replace(refit, cache_bytes=kernels.cache_bytes, dram_gbps=kernels.dram_gbps)
        err = _traffic_error(kernels, rows)
    res["memory"] = err
    kernels = _with_shape_residuals(kernels, cal, target, res)
    kernels = dataclasses.replace(kernels, producer_pack=producer_pack_table(cal, target, kernels))
    return kernels, res


SHAPE_WIDTHS = (0.35, 0.5, 0.75, 1.0, 1.5)
"""Candidate neighbourhood widths (log2 M, N, K) of a contraction fit's shape residuals."""
SHAPE_PRIORS = (0.25, 1.0)
"""Candidate weights of "no correction" against them."""
SHAPE_KEY = " by shape"
"""Suffix of a fit's key in the residuals where its shape residuals were kept (their leave-one-out mean)."""
SHAPE_GAIN = 0.95
"""Shape residuals are kept where they lower the leave-one-out mean |log(model / measured)| of their
fit to this fraction of the formula's or less,"""
SHAPE_FLOOR = 0.02
"""and where the formula alone misses by more than 2% on average (else there is nothing to carry)."""


def _with_shape_residuals(kernels: KernelCosts, cal: Calibration, target: Target, res: dict[str, float]) -> KernelCosts:
    """Every contraction fit with what its formula misses at the measured shapes (``Fit.shape_factor``)
    where that predicts the shapes it did not see better than the formula: the width and prior are
    chosen by leave-one-out over the fit's samples (each predicted from the others' residuals alone),
    and kept when that lowers the mean |log(model / measured)| by ``SHAPE_GAIN`` (``SHAPE_FLOOR``). One formula on flops
    and bytes misses by shape: on the Xeon plain f32 [N, K] matmuls ran at 86-90 GFLOP/s at 64 x 512
    x 768 and 64 x 1024 x 768, 64 at 32 x 1024 x 1536, 102 at 512 x 64 x 96, so a 64 x 768 x 768 one
    was priced 13% over its time."""
    tables: dict[str, Mapping[str, Fit]] = {}
    for kind in ("mmt4d", "matmul", "matmul_kn"):
        table = dict(getattr(kernels, kind))
        for key, fit in table.items():
            rows = _contraction_rows(cal.samples, target, kind, key)
            if len(rows) < 6 or fit.points:  # a table interpolates its points: no formula to correct
                continue
            base = dataclasses.replace(fit, shape_residuals=(), shape_width=0.0, shape_prior=0.0)
            model = [kernels.contraction_seconds(base, r.flops, r.moved, r.sizes[0], r.rhs_bytes) for r in rows]
            resid = [math.log(max(r.seconds, 1e-15) / max(t, 1e-15)) for r, t in zip(rows, model, strict=True)]
            points = tuple((*map(float, r.mnk), e) for r, e in zip(rows, resid, strict=True))
            formula_error = float(np.mean(np.abs(resid)))
            best: tuple[float, float, float] | None = None
            for width in SHAPE_WIDTHS:
                for prior in SHAPE_PRIORS:
                    loo = []
                    for i in range(len(points)):
                        others = dataclasses.replace(
                            base, shape_residuals=points[:i] + points[i + 1 :], shape_width=width, shape_prior=prior
                        )
                        loo.append(abs(resid[i] - math.log(others.shape_factor(*rows[i].mnk))))
                    err = float(np.mean(loo))
                    if best is None or err < best[0] - 1e-12:
                        best = (err, width, prior)
            assert best is not None
            if formula_error > SHAPE_FLOOR and best[0] <= SHAPE_GAIN * formula_error:
                table[key] = dataclasses.replace(base, shape_residuals=points, shape_width=best[1], shape_prior=best[2])
                res[f"{kind}.{key}{SHAPE_KEY}"] = best[0]
        tables[kind] = table
    return dataclasses.replace(kernels, mmt4d=tables["mmt4d"], matmul=tables["matmul"], matmul_kn=tables["matmul_kn"])


KNEES = tuple(1 << p for p in range(18, 27))
"""Candidate cache sizes for the memory knee: 256 KiB to 64 MiB."""

REREAD_KNEES = tuple(sorted({*KNEES, *(3 * k // 2 for k in KNEES)}))
"""Candidate RHS sizes beyond which a contraction re-reads its RHS: ``KNEES`` and 1.5x each. Powers of two
alone put the knee at 2 MiB on the Xeon (its L2), so a 2 MiB f16 [K, N] weight was priced as staying in
the cache: 3.7 ms for a 128 x 2048 x 512 matmul that measured 4.9 (55 GFLOP/s, against 72-81 at 1-1.5 MiB)."""

_Row = tuple[Callable[[KernelCosts], Fit], float, float, float]
"""(which fit prices it, work, bytes, measured seconds): one traffic sample."""


def _traffic_rows(cal: Calibration, target: Target) -> list[_Row]:
    """Every sample of a kernel that mostly moves bytes: packs, unpacks, generics, slice copies."""
    out: list[_Row] = []
    for kind in ("pack", "unpack"):
        for (m, n, k, operand), types, t in cal.samples.get(kind, []):
            logical, packed = _layout_bytes(target, types, (m, n, k), operand)
            element = types.split(",")[operand]
            get = functools.partial(KernelCosts.traffic, kind=kind, operand=operand, element=element)
            out.append((get, float(logical // _BYTES[element]), float(logical + packed), t))
    for kind in ("elementwise", "reduction"):
        for (r, n, ops), _, t in cal.samples.get(kind, []):
            work = r * n * (1 if kind == "reduction" else ops)
            out.append((operator.attrgetter(kind), float(work), float(_generic_bytes(kind, r, n)), t))
    (_, _, transient, launch), _ = _call_overheads(cal)
    for elements, nbytes, delta, _ in _copy_rows(cal, transient + launch, alloc_fit(cal)):
        if delta > 0:
            out.append((operator.attrgetter("copy"), elements, nbytes, delta))
    return out


def _generic_bytes(kind: str, r: int, n: int) -> int:
    """Bytes a calibration generic moves: an elementwise add reads two [r, n] f32 and writes one; a
    reduction reads one and writes [r]."""
    return (3 if kind == "elementwise" else 1) * r * n * 4 + (r * 4 if kind == "reduction" else 0)


def _call_overheads(cal: Calibration) -> tuple[tuple[float, float, float, float], float]:
    """(per call, per result, transient step, per dispatch) seconds from the chains and fans, and the
    fit's residual: call - kernels = per-call + results x output + [transient] x step + dispatches x launch."""
    if not cal.chains:
        return (0.0, 0.0, 0.0, 0.0), 0.0
    coef, rr = fit_linear(
        [(1.0, r, float(n > r), n) for n, r, _, _ in cal.chains], [max(c - k, 1e-9) for _, _, k, c in cal.chains]
    )
    call, output, transient, launch = coef
    return (call, output, transient, launch), rr


def producer_pack_table(
    cal: Calibration, target: Target, kernels: KernelCosts
) -> dict[str, tuple[tuple[float, float], ...]]:
    """``KernelCosts.producer_pack``: per element type and form, (elements, seconds per element) of
    each measured shape's fused dispatch less what ``kernels`` price its generic and its encode at
    (``producer_apart_seconds``; signed), so that the model's price of the fused dispatch is its
    measured time. Against the model's prices, not the two dispatches measured apart: the standalone
    encode of a [64, 256] f32 LHS ran 12 µs on the Xeon (its pack fit, and a [128, 256] one, 2-3),
    which as the baseline gave the fused form a price below zero."""
    s = cal.samples
    by_key: dict[str, dict[float, list[float]]] = {}
    for sz, ts, t in sorted(s.get("producer_pack", [])):
        m, k, reshaped = sz
        key = ts.split(",")[0] + (":reshape" if reshaped else "")
        extra = t - sum(producer_apart_seconds(target, kernels, (m, k), ts.split(",")[0]))
        by_key.setdefault(key, {}).setdefault(float(m * k), []).append(extra / (m * k))
    # an encode inside a contraction's dispatch (``micro.encode_after_contraction``): the fused dispatch
    # less the same contraction's dispatch without it is what the encode costs there, less the model's
    # price of the standalone pack the model starts from (``cost.model`` adds this extra to it)
    after = {(tuple(sz[:3]), sz[3]): t for sz, _, t in s.get("encode_after", [])}
    for (mnk, fused), t in sorted(after.items()):
        apart = after.get((mnk, 0))
        if not fused or apart is None:
            continue
        m, n, _ = mnk
        logical, packed = _layout_bytes(target, "f32,f32,f32", (m, ENCODE_AFTER_NEXT_N, n), 0)
        pack = kernels.fitted_seconds(kernels.traffic("pack", 0, "f32"), m * n, logical + packed)
        by_key.setdefault("f32:contraction", {}).setdefault(float(m * n), []).append((t - apart - pack) / (m * n))
    return {
        key: tuple((e, statistics.mean(v)) for e, v in sorted(points.items())) for key, points in sorted(by_key.items())
    }


def producer_apart_seconds(
    target: Target, kernels: KernelCosts, shape: tuple[int, int], element: str
) -> tuple[float, float]:
    """What the model prices a ``micro.producer_pack`` case's two kernels at: the elementwise generic
    (one body op; the bytes of its f32 [M, K] input, its ``element`` init and its result, as
    ``cost.model`` counts a generic's operands) and the pack of its result as the LHS of an M x 128 x K
    contraction (its logical and packed bytes)."""
    m, k = shape
    elements = m * k
    generic = kernels.fitted_seconds(kernels.elementwise, elements, elements * (4 + 2 * _BYTES[element]))
    logical, packed = _layout_bytes(target, f"{element},{element},f32", (m, 128, k), 0)
    pack = kernels.fitted_seconds(kernels.traffic("pack", 0, element), elements, logical + packed)
    return generic, pack


def op_weights(cal: Calibration, elementwise: Fit) -> dict[str, float]:
    """Per body op measured (``elementwise_op``): what it costs in the elementwise fit's element-ops
    (an add is 1), the median over its shapes of its generic's time beyond the plain add's at the same
    shape (``elementwise`` with one body op) at the fit's rate per element-op, less the helper ops its
    case adds (``micro.math_op_helpers``); at least 1. On the Xeon a GELU's ``math.erf`` after a
    [32, 128] contraction ran 1-1.7 µs beyond the add-priced model: IREE expands it to a polynomial
    with a division, tens of vector instructions per element. Where the fit put no time on element-ops
    (``rate_g`` 0: a calibration with too few generic shapes to tell work from bytes), one element-op
    is the plain add's own time per element at that shape, an upper bound, so the weight is a lower
    bound, instead of no weights at all."""
    base = {(sz[0], sz[1]): t for sz, _, t in cal.samples.get("elementwise", []) if sz[2] == 1}
    per_op: dict[str, list[float]] = {}
    for (r, n, _), op, t in cal.samples.get("elementwise_op", []):
        if (r, n) in base:
            op_seconds = 1 / (elementwise.rate_g * 1e9) if elementwise.rate_g > 0 else base[(r, n)] / (r * n)
            extra_ops = (t - base[(r, n)]) / op_seconds / (r * n)
            per_op.setdefault(op, []).append(extra_ops - math_op_helpers(op))
    return {op: max(1.0, float(np.median(ws))) for op, ws in sorted(per_op.items())}


def alloc_fit(cal: Calibration) -> Fit:
    """What a buffer of B bytes allocated on every call costs beyond the kernels: each ``alloc``
    sample's call time less its kernel's, less the smallest buffer's (the per-call, result and launch
    overheads are in both). A per-byte rate, and the points (made non-decreasing: a larger buffer never
    costs less) kept as a table where the rate misses them; an empty ``Fit`` without two sizes."""
    rows = sorted((sz[0], t) for sz, _, t in cal.samples.get("alloc", []))
    if len(rows) < 2:
        return Fit()
    base_bytes, base = rows[0]
    points: list[tuple[float, float]] = []
    for nbytes, t in rows[1:]:
        extra = max(t - base, points[-1][1] if points else 1e-9)
        points.append((float(nbytes - base_bytes), extra))
    coef, rr = fit_linear([(0.0, 0.0, b) for b, _ in points], [t for _, t in points])
    return _to_fit(coef, rr, points)


THROTTLE_FLOOR = 0.03
"""A slowdown of the plain victims below this, next to every mmt4d measured, is noise: no throttle."""


def throttle_fit(cal: Calibration) -> tuple[float, float]:
    """(fraction, µs) of ``KernelCosts.throttle`` / ``throttle_us`` from the ``throttle`` programs: the
    plain victims' summed kernel time next to each mmt4d over their time without one, against that
    mmt4d's kernel time. The threshold lies between the shortest mmt4d that slowed them by at least half
    the largest slowdown, with most longer ones doing so too, and the next shorter one (their geometric
    mean; the shortest itself when it is the first); the fraction is the median slowdown from there up.
    (0, 0) where no set slowed by ``THROTTLE_FLOOR`` or the programs were not measured."""
    victims: dict[tuple[int, ...], list[float]] = {}
    for sizes, _, t in cal.samples.get("throttle_victim", []):
        victims.setdefault(tuple(sizes[:3]), []).append(t)
    complete = max((len(v) for v in victims.values()), default=0)
    base = victims.get((0, 0, 0))
    if not base or len(base) < complete:
        return 0.0, 0.0
    rows = sorted(
        (t, sum(victims[key]) / sum(base) - 1.0)
        for sizes, _, t in cal.samples.get("throttle_heavy", [])
        if len(victims.get(key := tuple(sizes[:3]), ())) == complete
    )
    top = max((r for _, r in rows), default=0.0)
    if top < THROTTLE_FLOOR:
        return 0.0, 0.0
    # on from the shortest mmt4d that slowed them by half the most, if most longer ones did too (one
    # noisy set, short or long, neither switches it on early nor off)
    starts = [
        i for i, (_, r) in enumerate(rows) if r >= top / 2 and statistics.median(x for _, x in rows[i:]) >= top / 2
    ]
    i = starts[0] if starts else max(range(len(rows)), key=lambda j: rows[j][1])
    fraction = float(statistics.median(r for _, r in rows[i:]))
    if fraction < THROTTLE_FLOOR:
        return 0.0, 0.0
    threshold = rows[i][0] if i == 0 else math.sqrt(rows[i - 1][0] * rows[i][0])
    return fraction, threshold * 1e6


def _copy_rows(
    cal: Calibration, overhead: float = 0.0, alloc: Fit | None = None
) -> list[tuple[float, float, float, float]]:
    """(elements, bytes read + written, call time with the slice copied - with it loaded in its
    dispatch - ``overhead``, the latter) per measured slice shape. ``overhead``: what the model charges
    the copied program apart from the copy (a launch, and the transient step: the copied slice is the
    call's only transient buffer); ``alloc``: what its buffer costs, by its bytes."""
    calls = {(r, c, top): t for (r, c, top), _, t in cal.samples.get("slice_copy", [])}

    def buffer_seconds(nbytes: float) -> float:
        return alloc.seconds(nbytes, nbytes) if alloc is not None else 0.0

    return [
        (
            float(r * c),
            float(2 * r * c * 4),
            t - calls[(r, c, 0)] - overhead - buffer_seconds(4.0 * r * c),
            calls[(r, c, 0)],
        )
        for (r, c, top), t in sorted(calls.items())
        if top and (r, c, 0) in calls
    ]


REREAD_GAIN = 0.8
"""A contraction's fit takes an RHS re-read term only where it cuts the fit's mean
|log(model / measured)| to this fraction or less: a term for one noisy point is not a regime."""
REREAD_FLOOR = 0.02
"""Nor where the formula alone is already within 2% on average: nothing is left for it to explain."""


def _with_reread(
    fit: Fit,
    feats: Sequence[tuple[float, float, float]],
    ys: Sequence[float],
    rhs: Sequence[tuple[int, int]],
    memory: KernelCosts,
) -> Fit:
    """``fit`` with the RHS re-read of a contraction (``Fit.reread_seconds``) where it fits the
    samples better: for each knee among ``REREAD_KNEES``, the formula on the samples whose RHS is within it
    (at least four), the re-read on the extra time of the rest (at least two); the knee with the
    least mean |log(model / measured)| over every sample wins when it beats the plain fit's by
    ``REREAD_GAIN`` (of knees that fit alike, the middle one). A mean, not a median: the regime is a
    minority of the grid's shapes, and a median over all of them would not see it (a 5-8x miss on
    three of eleven f32 [K, N] shapes). ``memory``: the memory-hierarchy terms the model adds (none
    before the knee is fitted)."""

    def error(f: Fit) -> float:
        model = [memory.contraction_seconds(f, x[1], x[2], m, b) for x, (m, b) in zip(feats, rhs, strict=True)]
        return float(np.mean(_log_errors(model, ys)))

    plain_error = error(dataclasses.replace(fit, points=()))
    trials: list[tuple[float, Fit]] = []
    for knee in REREAD_KNEES:
        inside = [i for i, (_, b) in enumerate(rhs) if b <= knee]
        beyond = [i for i, (_, b) in enumerate(rhs) if b > knee]
        if len(inside) < 4 or len(beyond) < 2:
            continue
        coef, _ = fit_linear([feats[i] for i in inside], [ys[i] for i in inside])
        formula = _to_fit(coef, 0.0, [])
        extra = [ys[i] - formula.seconds(feats[i][1], feats[i][2]) for i in beyond]
        for part in (False, True):  # every RHS byte read again, or those beyond the knee
            reread = [rhs[i][1] - (knee if part else 0) for i in beyond]
            c, _ = fit_linear(
                [(b, rhs[i][0] * b) for i, b in zip(beyond, reread, strict=True)], extra, [ys[i] for i in beyond]
            )
            if not any(x > 0 for x in c):
                continue
            trial = dataclasses.replace(
                formula,
                reread_bytes=float(knee),
                reread_pass_gbps=1.0 / c[0] / 1e9 if c[0] > 0 else 0.0,
                reread_row_gbps=1.0 / c[1] / 1e9 if c[1] > 0 else 0.0,
                reread_beyond=part,
            )
            trials.append((error(trial), trial))
    if not trials or plain_error < REREAD_FLOOR or (least := min(e for e, _ in trials)) > REREAD_GAIN * plain_error:
        return fit
    # knees no sample tells apart (no RHS between them) fit alike: the middle one, not an end of the range
    tied = [t for e, t in trials if e <= least * (1 + 1e-9)]
    return tied[len(tied) // 2]


def _with_spill(kernels: KernelCosts, knee: int, rows: list[_Row]) -> KernelCosts | None:
    """``kernels`` with the bytes beyond ``knee`` priced at the median rate the traffic samples beyond it
    show on top of their fits; None when fewer than three samples lie beyond it or they show none."""
    rates = []
    for get, work, nbytes, t in rows:
        fit = get(kernels)
        if nbytes > knee and not fit.interpolates(work):
            rates.append((t - fit.seconds(work, nbytes)) / (nbytes - knee))
    if len(rates) < 3 or statistics.median(rates) <= 0:
        return None
    return dataclasses.replace(kernels, cache_bytes=float(knee), dram_gbps=1.0 / statistics.median(rates) / 1e9)


def _traffic_error(kernels: KernelCosts, rows: list[_Row]) -> float:
    """Mean |log(model / measured)| over the traffic samples, the bytes beyond the knee included."""
    errs = [
        abs(math.log(max(kernels.fitted_seconds(get(kernels), work, nbytes), 1e-15) / t))
        for get, work, nbytes, t in rows
        if t > 0
    ]
    return sum(errs) / len(errs) if errs else 0.0


def _log_errors(model: Sequence[float], measured: Sequence[float]) -> list[float]:
    """|log(model / measured)| per sample."""
    return [abs(math.log(max(m, 1e-15) / max(y, 1e-15))) for m, y in zip(model, measured, strict=True)]


def _median_log_error(model: Sequence[float], measured: Sequence[float]) -> float:
    """Median |log(model / measured)|: the residual every fit states."""
    return float(np.median(_log_errors(model, measured)))


def _fit_within(
    cal: Calibration, target: Target, knee: int | None, dram_gbps: float = 0.0
) -> tuple[KernelCosts, dict[str, float]]:
    """Every fit on the samples that move at most ``knee`` bytes (all of them for None, or where
    fewer than three would be left); with ``dram_gbps``, on every sample, each with what its bytes
    beyond the knee cost at that rate taken off (at most 90% of its time)."""
    res: dict[str, float] = {}
    s = cal.samples
    # the memory term alone, once the knee is fitted: what the model adds to (or bounds) each fit by
    spilled = (
        KernelCosts(0.0, 0.0, cache_bytes=float(knee), dram_gbps=dram_gbps)
        if knee is not None and dram_gbps > 0
        else None
    )

    def within(ys: Sequence[float], nbytes: Sequence[float]) -> tuple[list[int], list[float]]:
        """Which samples a fit takes, and their times less the bytes beyond the knee."""
        if spilled is not None:
            return list(range(len(ys))), [
                max(y - spilled.spill_seconds(b), y / 10) for y, b in zip(ys, nbytes, strict=True)
            ]
        kept = [i for i, b in enumerate(nbytes) if knee is None or b <= knee]
        return (kept if len(kept) >= 3 else list(range(len(ys)))), list(ys)

    def stated(coef: Sequence[float], feats: Sequence[Sequence[float]], ys: Sequence[float], r: float) -> float:
        """The residual a fit states: of the model (formula + the bytes beyond the knee) against the
        measured times, once the knee is fitted; else ``fit_linear``'s own."""
        if spilled is None:
            return r
        return _median_log_error([float(np.dot(coef, f)) + spilled.spill_seconds(f[2]) for f in feats], ys)

    def contraction_fit(kind: str, types: str) -> Fit | None:
        """The fit of ``types`` (``MATVEC`` appended: M = 1 alone) on its samples (``_contraction_rows``)."""
        narrow = types.endswith(MATVEC)
        rows = _contraction_rows(s, target, kind, types)
        if not rows:
            return None
        types = types.removesuffix(MATVEC)
        feats = [(1.0, float(r.flops), float(r.moved)) for r in rows]
        ys = [r.seconds for r in rows]
        pts = [(float(r.flops), r.seconds) for r in rows]
        # on every sample as measured: the model bounds a contraction by its streaming, it adds none
        coef, r = fit_linear(feats, ys)
        fit = _to_fit(coef, r, pts)
        # (M, RHS bytes as the kernel reads them: packed, padded tiles for mmt4d)
        rhs = [(row.sizes[0], row.rhs_bytes) for row in rows]
        memory = spilled if spilled is not None else KernelCosts(0.0, 0.0)
        if not narrow:
            fit = _with_reread(fit, feats, ys, rhs, memory)
        if spilled is not None or fit.reread_bytes > 0:  # the formula's residual (a table's points are exact)
            formula = dataclasses.replace(fit, points=())
            r = _median_log_error(
                [memory.contraction_seconds(formula, f[1], f[2], m, b) for f, (m, b) in zip(feats, rhs, strict=True)],
                ys,
            )
            fit = dataclasses.replace(fit, residual=r)
        res[f"{kind}.{types}{MATVEC if narrow else ''}"] = r
        return fit

    def traffic_fit(
        key: str, rows: list[tuple[float, float, float, float]], delta: bool = False, spills: bool = True
    ) -> Fit:
        """(elements, bytes, seconds, scale) rows: ``seconds = fixed + elements / rate + bytes / gbps``;
        packs of narrow types cost per element more than per byte (i8: a third of f32's GB/s). A
        ``delta`` (an ``_in_dispatch`` key too) is a difference of two times, fitted relative to scale.
        ``spills``: the model adds the bytes beyond the knee to this fit's time (an extra on top of
        another kernel does not)."""
        if not rows:
            return Fit()
        pts = sorted((e, t) for e, _, t, _ in rows if t > 0)
        measured = [t for _, _, t, _ in rows]
        if spills:
            keep, adj = within(measured, [b for _, b, _, _ in rows])
            measured = [measured[i] for i in keep]
            rows = [(rows[i][0], rows[i][1], adj[i], rows[i][3]) for i in keep]
        relative_to = [sc for *_, sc in rows] if delta or key.endswith("_in_dispatch") else None
        feats = [(1.0, e, b) for e, b, _, _ in rows]
        coef, r = fit_linear(feats, [t for _, _, t, _ in rows], relative_to)
        if spills and relative_to is None:
            r = stated(coef, feats, measured, r)
        res[key] = r
        fit = _to_fit(coef, r, [])
        if r > TABLE_RESIDUAL and len(pts) >= 2 and relative_to is None:
            fit = dataclasses.replace(fit, points=tuple(pts))
        return fit

    def contraction_table(kind: str) -> dict[str, Fit]:
        measured = sorted({ts for _, ts, _ in s.get(kind, [])})
        # matmul_kn's matvecs are not fitted apart: the model prices every matvec by matmul's :m1 fit
        keys = [key for ts in measured for key in ((ts,) if kind == "matmul_kn" else (ts, ts + MATVEC))]
        return {key: f for key in keys if (f := contraction_fit(kind, key))}

    mmt4d, matmul = contraction_table("mmt4d"), contraction_table("matmul")
    matmul_kn = contraction_table("matmul_kn")
    pack_rows: list[tuple[float, float, float, float]] = []
    unpack_rows: list[tuple[float, float, float, float]] = []
    by_role: dict[tuple[str, str], list[tuple[float, float, float, float]]] = {}
    for kind, rows in (("pack", pack_rows), ("unpack", unpack_rows)):
        for (m, n, k, operand), types, t in s.get(kind, []):
            logical, packed = _layout_bytes(target, types, (m, n, k), operand)
            element = types.split(",")[operand]
            row = (float(logical // _BYTES[element]), float(logical + packed), t, t)
            rows.append(row)
            by_role.setdefault((kind, f"{ROLES[operand]}:{element}"), []).append(row)
    pack_by = {key: traffic_fit(f"pack.{key}", rows) for (kind, key), rows in sorted(by_role.items())
               if kind == "pack" and len(rows) >= 4}  # fmt: skip
    unpack_by = {key: traffic_fit(f"unpack.{key}", rows) for (kind, key), rows in sorted(by_role.items())
                 if kind == "unpack" and len(rows) >= 4}  # fmt: skip
    base = {(sz, ts): t for sz, ts, t in s.get("mmt4d", [])}
    delta_unpack: list[tuple[float, float, float, float]] = []
    delta_pack: list[tuple[float, float, float, float]] = []
    fused: dict[str, list[tuple[float, float, float, float]]] = {}
    for kind, operand, rows in (
        ("mmt4d+unpack", 2, delta_unpack),
        ("mmt4d+pack_lhs", 0, delta_pack),
        ("mmt4d+pack_rhs", 1, delta_pack),
    ):
        for sz, ts, t in s.get(kind, []):
            if (sz, ts) in base:
                logical, packed = _layout_bytes(target, ts, sz, operand)
                elements = logical // _BYTES[ts.split(",")[operand]]
                delta = t - base[(sz, ts)]
                rows.append((float(elements), float(logical + packed), delta, base[(sz, ts)]))
                if operand != 2 and ts == "f32,f32,f32":
                    # KernelCosts.fused_pack: per role and shape, per element of the packed operand
                    # (clipped at 0: a difference within the noise of the two times)
                    fm, fn, fk = sz
                    fused.setdefault(ROLES[operand], []).append(
                        (float(fm), float(fn), float(fk), max(delta, 0.0) / elements)
                    )
    fused_pack = {role: tuple(sorted(points)) for role, points in fused.items()}
    # a bias add after the unpack in the contraction's dispatch, against the same dispatch without it
    with_unpack = {(sz, ts): t for sz, ts, t in s.get("mmt4d+unpack", [])}
    delta_consumer = [
        (float(sz[0] * sz[1]), 0.0, t - with_unpack[(sz, ts)], with_unpack[(sz, ts)])
        for sz, ts, t in s.get("mmt4d+unpack+bias", [])
        if (sz, ts) in with_unpack
    ]

    def generic_fit(kind: str) -> Fit:
        rows = s.get(kind, [])
        if not rows:
            return Fit()
        feats, ys, pts = [], [], []
        for (r, n, ops), _, t in rows:
            elements = r * n
            feats.append((1.0, elements * ops, _generic_bytes(kind, r, n)))
            ys.append(t)
            pts.append((float(elements * ops), t))
        keep, adj = within(ys, [f[2] for f in feats])
        coef, rr = fit_linear([feats[i] for i in keep], [adj[i] for i in keep])
        rr = stated(coef, [feats[i] for i in keep], [ys[i] for i in keep], rr)
        res[kind] = rr
        return _to_fit(coef, rr, pts)

    def opaque_fit(kind: str) -> Fit:
        """``softmax`` on elements, ``attention`` on flops (``attention_flops``), both on the bytes they
        read and write; a table where the formula misses: by ``TABLE_RESIDUAL`` in the median, or any
        point by more than 2x (IREE's attention with 64-wide heads ran at 2.5 GFLOP/s, 10x below the
        rate of the smaller heads the other points fit)."""
        rows = s.get(kind, [])
        if len(rows) < 3:
            return Fit()
        feats, ys, pts = [], [], []
        for sz, _, t in rows:
            if kind == "softmax":
                work, nbytes = float(sz[0] * sz[1]), 8.0 * sz[0] * sz[1]
            else:
                b, m, k1, k2, n = sz
                work = float(attention_flops(b * m, k1, k2, n))
                nbytes = 4.0 * b * (m * k1 + k2 * k1 + k2 * n + m * n)
            feats.append((1.0, work, nbytes))
            ys.append(t)
            pts.append((work, t))
        coef, rr = fit_linear(feats, ys)
        res[kind] = rr
        fit = _to_fit(coef, rr, pts)
        if not fit.points and max(_log_errors([float(np.dot(coef, f)) for f in feats], ys)) > math.log(2):
            fit = dataclasses.replace(fit, points=tuple(sorted(pts)))
        return fit

    elementwise = generic_fit("elementwise")
    (call, output, transient, launch), rr = _call_overheads(cal)
    if cal.chains:
        res["launch"] = rr
    alloc = alloc_fit(cal)
    if alloc.measured:
        res["alloc"] = alloc.residual
    throttle_fraction, throttle_us = throttle_fit(cal)
    kernels = KernelCosts(
        launch_us=launch * 1e6,
        call_us=call * 1e6,
        output_us=output * 1e6,
        transient_us=transient * 1e6,
        throttle=throttle_fraction,
        throttle_us=throttle_us,
        mmt4d=mmt4d,
        matmul=matmul,
        matmul_kn=matmul_kn,
        pack=traffic_fit("pack", pack_rows),
        pack_in_dispatch=traffic_fit("pack_in_dispatch", delta_pack, spills=False),
        unpack=traffic_fit("unpack", unpack_rows),
        unpack_in_dispatch=traffic_fit("unpack_in_dispatch", delta_unpack, spills=False),
        consumer_after_unpack=traffic_fit("consumer_after_unpack", delta_consumer, delta=True, spills=False),
        elementwise=elementwise,
        reduction=generic_fit("reduction"),
        softmax=opaque_fit("softmax"),
        attention=opaque_fit("attention"),
        copy=traffic_fit("copy", _copy_rows(cal, transient + launch, alloc), delta=True),
        alloc=alloc,
        op_weights=op_weights(cal, elementwise),
        pack_by=pack_by,
        unpack_by=unpack_by,
        fused_pack=fused_pack,
    )
    return kernels, res


def profile_dict(base: Target, cal: Calibration, *, quick: bool, measured: dict | None = None) -> dict:
    """The calibrated profile as JSON data: ``base``'s tiles and limits, the measured kernels, and the
    analytic fields derived from them (for plans priced without the kernel table), with provenance.
    ``measured``: the provenance of the run the samples come from (``--refit``), instead of this one."""
    assert cal.kernels is not None
    k = cal.kernels
    if measured is not None:
        cpu, isa = str(measured.get("cpu", "unknown")), list(measured.get("isa_flags", []))
        iree_version, when = str(measured.get("iree_compiler", "unknown")), str(measured.get("date", "unknown"))
        quick = bool(measured.get("quick", quick))
    else:
        cpu, flags = host_cpu()
        isa = sorted(f for f in flags if f.startswith(("avx", "fma", "amx", "asimd", "sve")))
        try:
            iree_version = metadata.version("iree-base-compiler")
        except metadata.PackageNotFoundError:  # pragma: no cover - calibrate needs IREE
            iree_version = "unknown"
        when = datetime.date.today().isoformat()
    where = f"measured on {cpu} with iree-compile {iree_version} ({iree_cpu(base).compile_flags[0]}), {when}"

    def peaks(table: dict[str, Fit], fallback: dict[str, float]) -> dict[str, float]:
        out = dict(fallback)
        for types, fit in table.items():
            if fit.rate_g > 0 and not types.endswith(MATVEC):
                out[types.split(",")[0]] = round(fit.rate_g, 3)
        return out

    n = 1 << 18  # a 1 MiB f32 operand: logical + packed bytes moved by its encode (pack fits are per element)
    bw = 8 * n / k.pack.seconds(n, 8 * n) / 1e9 if k.pack.seconds(n, 8 * n) > 0 else base.memory_bandwidth_gbps
    notes = dict(base.notes)
    for key in ("mmt4d_peak_gflops", "matmul_peak_gflops", "memory_bandwidth_gbps", "dispatch_overhead_us"):
        notes[key] = f"Derived from the kernels table, {where}."
    notes["kernels"] = f"Fitted {where}; residuals (median |log model/measured|) in provenance.fits."
    for types in ("bf16,bf16,f32", "f16,f16,f16"):
        if base.tile(types) is not None and types not in k.mmt4d:
            notes[f"kernels.mmt4d.{types}"] = "Not measured (calibrate times f32, f16 and i8): the f32 fit is used."
    data = {
        "name": f"{base.name}-host",
        "description": f"{base.description} Calibrated on this machine: {cpu}.",
        "encoding_resolver": base.encoding_resolver,
        "tiles": {",".join(t): list(v) for t, v in base.tiles.items()},
        "mmt4d_peak_gflops": peaks(dict(k.mmt4d), dict(base.mmt4d_peak_gflops)),
        "matmul_peak_gflops": peaks(dict(k.matmul), dict(base.matmul_peak_gflops)),
        "memory_bandwidth_gbps": round(bw, 3),
        "dispatch_overhead_us": round(k.launch_us, 4),
        "max_stack_allocation_size": base.max_stack_allocation_size,
        "native_vector_size": base.native_vector_size,
        **(
            {"max_plain_result_pack_bytes": base.max_plain_result_pack_bytes}
            if base.max_plain_result_pack_bytes
            else {}
        ),
        "kernels": kernels_to_dict(k),
        "provenance": {
            "cpu": cpu,
            "isa_flags": isa,
            "iree_compiler": iree_version,
            "compile_flags": list(iree_cpu(base).compile_flags),
            "device": "local-sync (1 thread)",
            "date": when,
            "quick": quick,
            "stopped_early": cal.stopped,
            "fits": {key: round(v, 4) for key, v in sorted(cal.residuals.items())},
            "samples": {kind: len(rows) for kind, rows in sorted(cal.samples.items())},
            "base_profile": base.name,
            **({"refit": datetime.date.today().isoformat()} if measured is not None else {}),
        },
        "notes": notes,
    }
    return data


def samples_dict(cal: Calibration, profile: dict) -> dict:
    """Every measurement of a calibration run, with the profile's provenance and fitted kernels: what
    ``notebooks/02_cost_model_fidelity.ipynb`` plots (calibration points against the fitted curves)."""
    return {
        "provenance": profile["provenance"],
        "kernels": profile["kernels"],
        "samples": {
            kind: [{"sizes": list(sizes), "types": types, "seconds": t} for sizes, types, t in rows]
            for kind, rows in sorted(cal.samples.items())
        },
        "chains": [
            {"dispatches": n, "results": r, "kernel_seconds": k, "call_seconds": c} for n, r, k, c in cal.chains
        ],
    }


def calibration_from_samples(data: dict, target: Target) -> Calibration:
    """A ``Calibration`` rebuilt from ``samples_dict`` output and fitted again (``calibrate --refit``): a
    change of the fits needs no new measurement, and a recorded run can be re-fitted anywhere."""
    cal = Calibration()
    for kind, rows in data.get("samples", {}).items():
        cal.samples[kind] = [(tuple(r["sizes"]), r["types"], float(r["seconds"])) for r in rows]
    cal.chains = [  # samples recorded before fans were measured are chains: one result
        (int(c["dispatches"]), int(c.get("results", 1)), float(c["kernel_seconds"]), float(c["call_seconds"]))
        for c in data.get("chains", [])
    ]
    cal.stopped = str(data.get("provenance", {}).get("stopped_early", ""))
    cal.kernels, cal.residuals = fit_kernels(cal, target)
    return cal
