"""A calibration's samples fitted as the cost model's ``KernelCosts`` (``fit_kernels``).

``measure.calibrate`` measures (``Calibration``: every sample of a run); this module turns those
samples into the rows each fit is made on (the bytes and flops of a contraction as its kernel sees
them: packed and padded to the target's tiles, ``layout_bytes``, ``padded_flops``) and makes the fits
with the numerics of ``measure.fit``: each contraction kind per element types (M = 1 apart where
measured enough), packs and unpacks (and per role and element), their extra inside a contraction's
dispatch, generics, ``softmax`` and ``attention``, slice copies, per-call buffers, the per-call
overheads of chains and fans, the throttle, body-op weights and the producer-pack table.

The memory hierarchy (``KernelCosts.cache_bytes``, ``dram_gbps``) is fitted last: for each candidate
knee (``fit.KNEES``, powers of two from 256 KiB to 64 MiB, or none) every fit is made on the samples
that move at most that many bytes, the bytes beyond it are priced by the median rate the larger
traffic samples (packs, unpacks, generics, copies) show on top of their fit, and the knee with the
least mean |log| error over all traffic samples wins. Then each contraction fit keeps its per-shape
residuals where leave-one-out says they generalize (``fit.shape_residuals_fit``). No IREE here either:
the target's layouts are computed (``target.layout``), not compiled.
"""

from __future__ import annotations

import dataclasses
import functools
import math
import operator
import statistics
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np

from egg_dispatch.measure.fit import (
    KNEES,
    TABLE_RESIDUAL,
    TrafficRow,
    buffer_fit,
    call_overheads,
    fit_linear,
    log_errors,
    median_log_error,
    shape_residuals_fit,
    throttle_from_slowdowns,
    to_fit,
    traffic_error,
    with_reread,
    with_spill,
)
from egg_dispatch.measure.micro import ENCODE_AFTER_NEXT_N, math_op_helpers
from egg_dispatch.measure.noise import Noise
from egg_dispatch.target.kernels import MATVEC, ROLES, Fit, KernelCosts, attention_flops
from egg_dispatch.target.layout import packed_nbytes, resolve_layout
from egg_dispatch.target.profile import Target

__all__ = [
    "JUDGED_MIN_SAMPLES",
    "SHAPE_KEY",
    "Calibration",
    "alloc_fit",
    "copy_rows",
    "fit_errors",
    "fit_kernels",
    "layout_bytes",
    "op_weights",
    "padded_flops",
    "producer_apart_seconds",
    "producer_pack_table",
    "throttle_fit",
]

_MAPS = ((0, 2), (1, 2), (0, 1))


_BYTES = {"f32": 4, "f16": 2, "bf16": 2, "i8": 1, "i32": 4, "f64": 8}


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
    spread: dict[str, list[float]] = field(default_factory=dict)
    """kind -> the spread of each sample's repeats (``measure.noise.point_spread``), in the order of
    ``samples[kind]``; ``"launch"``: of each chain or fan in ``chains`` (their call time beyond their
    kernels). Empty where not recorded (samples from before it was)."""
    noise: Noise | None = None
    """The load and retries the run saw (None: not measured here, e.g. ``--refit``)."""


def layout_bytes(target: Target, types: str, sizes: tuple[int, ...], operand: int) -> tuple[int, int]:
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


def padded_flops(target: Target, types: str, sizes: tuple[int, int, int]) -> int:
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
                flops=padded_flops(target, types, size3) if packed else 2 * math.prod(size3),
                moved=sum(layout_bytes(target, types, size3, i)[1 if packed else 0] for i in range(3)),
                rhs_bytes=layout_bytes(target, types, size3, 1)[1 if packed else 0],
                seconds=t,
            )
        )
    return out


def fit_kernels(cal: Calibration, target: Target) -> tuple[KernelCosts, dict[str, float]]:
    """Fit every kind measured in ``cal`` (see the module doc); returns the costs and residuals.

    The memory knee is chosen here: for each candidate (and for none) the fits are made on the samples
    within it, the bytes beyond it priced from the larger traffic samples (``with_spill``), and the
    candidate whose mean |log(model / measured)| over every traffic sample is least wins. Then every fit
    is made again on all its samples, each less what its bytes beyond the knee cost."""
    best: tuple[float, KernelCosts, dict[str, float]] | None = None
    rows = _traffic_rows(cal, target)
    for knee in (None, *KNEES):
        kernels, res = _fit_within(cal, target, knee)
        if knee is not None:
            spilled = with_spill(kernels, knee, rows)
            if spilled is None:
                continue
            kernels = spilled
        err = traffic_error(kernels, rows)
        if best is None or err < best[0] - 1e-9:
            best = (err, kernels, res)
    assert best is not None
    err, kernels, res = best
    if kernels.dram_gbps > 0:  # every fit again on every sample, its bytes beyond the knee taken off
        refit, res = _fit_within(cal, target, int(kernels.cache_bytes), kernels.dram_gbps)
        kernels = dataclasses.replace(refit, cache_bytes=kernels.cache_bytes, dram_gbps=kernels.dram_gbps)
        err = traffic_error(kernels, rows)
    res["memory"] = err
    kernels = _with_shape_residuals(kernels, cal, target, res)
    kernels = dataclasses.replace(kernels, producer_pack=producer_pack_table(cal, target, kernels))
    return kernels, res


SHAPE_KEY = " by shape"
"""Suffix of a fit's key in the residuals where its shape residuals were kept (their leave-one-out mean)."""


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
            found = shape_residuals_fit(base, [r.mnk for r in rows], resid)
            if found is not None:
                table[key], res[f"{kind}.{key}{SHAPE_KEY}"] = found
        tables[kind] = table
    return dataclasses.replace(kernels, mmt4d=tables["mmt4d"], matmul=tables["matmul"], matmul_kn=tables["matmul_kn"])


JUDGED_MIN_SAMPLES = 3
"""A fit made on fewer samples states no error of its own: two points determine a formula of two or
more terms (what it misses there is the points disagreeing with its constraints, not the formula)."""


def _written_fit(kernels: KernelCosts, key: str) -> Fit | None:
    """The ``Fit`` the profile writes for a residual's ``key`` (None: ``launch``, ``memory``)."""
    kind, _, rest = key.partition(".")
    if kind in ("mmt4d", "matmul", "matmul_kn"):
        return getattr(kernels, kind).get(rest)
    if kind in ("pack", "unpack") and rest:
        return (kernels.pack_by if kind == "pack" else kernels.unpack_by).get(rest)
    fit = getattr(kernels, key, None)
    return fit if isinstance(fit, Fit) else None


def fit_errors(cal: Calibration, target: Target) -> dict[str, tuple[float, int]]:
    """Per fit of ``cal`` (its key in ``cal.residuals``): (the error of what the profile prices by it on
    its own samples, how many samples) for the fits made on ``JUDGED_MIN_SAMPLES`` or more. The error is
    the fit's stated residual (median |log(model / measured)|; for a difference of two times, ``*_in_
    dispatch``, ``consumer_after_unpack``, ``copy``: its median miss relative to the time it is part of;
    ``memory``: the mean over every traffic sample), except that a fit kept as a table interpolates its
    own points (error 0) and a contraction fit with shape residuals states their leave-one-out mean
    (``... by shape``) instead of its formula's."""
    assert cal.kernels is not None
    counts: dict[str, int] = {}
    _fit_within(cal, target, None, counts=counts)
    counts["memory"] = len(_traffic_rows(cal, target))
    out: dict[str, tuple[float, int]] = {}
    for key, r in sorted(cal.residuals.items()):
        base = key.removesuffix(SHAPE_KEY)
        n = counts.get(base, 0)
        if n < JUDGED_MIN_SAMPLES or (key == base and base + SHAPE_KEY in cal.residuals):
            continue
        fit = _written_fit(cal.kernels, base)
        out[key] = (0.0 if key == base and fit is not None and fit.points else r, n)
    return out


def _traffic_rows(cal: Calibration, target: Target) -> list[TrafficRow]:
    """Every sample of a kernel that mostly moves bytes: packs, unpacks, generics, slice copies."""
    out: list[TrafficRow] = []
    for kind in ("pack", "unpack"):
        for (m, n, k, operand), types, t in cal.samples.get(kind, []):
            logical, packed = layout_bytes(target, types, (m, n, k), operand)
            element = types.split(",")[operand]
            get = functools.partial(KernelCosts.traffic, kind=kind, operand=operand, element=element)
            out.append((get, float(logical // _BYTES[element]), float(logical + packed), t))
    for kind in ("elementwise", "reduction"):
        for (r, n, ops), _, t in cal.samples.get(kind, []):
            work = r * n * (1 if kind == "reduction" else ops)
            out.append((operator.attrgetter(kind), float(work), float(_generic_bytes(kind, r, n)), t))
    (_, _, transient, launch), _ = call_overheads(cal.chains)
    for elements, nbytes, delta, _ in copy_rows(cal, transient + launch, alloc_fit(cal)):
        if delta > 0:
            out.append((operator.attrgetter("copy"), elements, nbytes, delta))
    return out


def _generic_bytes(kind: str, r: int, n: int) -> int:
    """Bytes a calibration generic moves: an elementwise add reads two [r, n] f32 and writes one; a
    reduction reads one and writes [r]."""
    return (3 if kind == "elementwise" else 1) * r * n * 4 + (r * 4 if kind == "reduction" else 0)


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
        logical, packed = layout_bytes(target, "f32,f32,f32", (m, ENCODE_AFTER_NEXT_N, n), 0)
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
    logical, packed = layout_bytes(target, f"{element},{element},f32", (m, 128, k), 0)
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
    return buffer_fit([(sz[0], t) for sz, _, t in cal.samples.get("alloc", [])])


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
    return throttle_from_slowdowns(rows)


def copy_rows(
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


_TrafficSample = tuple[float, float, float, float]
"""(elements, bytes, seconds, scale) of one traffic fit's sample; ``scale``: what a difference of two
times (an ``_in_dispatch`` extra) is relative to, else the time itself."""


@dataclass
class _WithinKnee:
    """The fits of one candidate knee (``_fit_within``), and the residual each states."""

    samples: dict[str, list[tuple[tuple[int, ...], str, float]]]
    target: Target
    knee: int | None
    spilled: KernelCosts | None
    """The memory term alone, once the knee is fitted: what the model adds to (or bounds) each fit by."""
    res: dict[str, float] = field(default_factory=dict)
    counts: dict[str, int] = field(default_factory=dict)
    """How many samples each fit in ``res`` was made on (``fit_sample_counts``)."""

    def within(self, ys: Sequence[float], nbytes: Sequence[float]) -> tuple[list[int], list[float]]:
        """Which samples a fit takes, and their times less the bytes beyond the knee."""
        spilled, knee = self.spilled, self.knee
        if spilled is not None:
            return list(range(len(ys))), [
                max(y - spilled.spill_seconds(b), y / 10) for y, b in zip(ys, nbytes, strict=True)
            ]
        kept = [i for i, b in enumerate(nbytes) if knee is None or b <= knee]
        return (kept if len(kept) >= 3 else list(range(len(ys)))), list(ys)

    def stated(self, coef: Sequence[float], feats: Sequence[Sequence[float]], ys: Sequence[float], r: float) -> float:
        """The residual a fit states: of the model (formula + the bytes beyond the knee) against the
        measured times, once the knee is fitted; else ``fit_linear``'s own."""
        spilled = self.spilled
        if spilled is None:
            return r
        return median_log_error([float(np.dot(coef, f)) + spilled.spill_seconds(f[2]) for f in feats], ys)

    def contraction_fit(self, kind: str, types: str) -> Fit | None:
        """The fit of ``types`` (``MATVEC`` appended: M = 1 alone) on its samples (``_contraction_rows``)."""
        narrow = types.endswith(MATVEC)
        rows = _contraction_rows(self.samples, self.target, kind, types)
        if not rows:
            return None
        types = types.removesuffix(MATVEC)
        feats = [(1.0, float(r.flops), float(r.moved)) for r in rows]
        ys = [r.seconds for r in rows]
        pts = [(float(r.flops), r.seconds) for r in rows]
        # on every sample as measured: the model bounds a contraction by its streaming, it adds none
        coef, r = fit_linear(feats, ys)
        fit = to_fit(coef, r, pts)
        # (M, RHS bytes as the kernel reads them: packed, padded tiles for mmt4d)
        rhs = [(row.sizes[0], row.rhs_bytes) for row in rows]
        memory = self.spilled if self.spilled is not None else KernelCosts(0.0, 0.0)
        if not narrow:
            fit = with_reread(fit, feats, ys, rhs, memory)
        if self.spilled is not None or fit.reread_bytes > 0:  # the formula's residual (a table's points are exact)
            formula = dataclasses.replace(fit, points=())
            r = median_log_error(
                [memory.contraction_seconds(formula, f[1], f[2], m, b) for f, (m, b) in zip(feats, rhs, strict=True)],
                ys,
            )
            fit = dataclasses.replace(fit, residual=r)
        self.res[f"{kind}.{types}{MATVEC if narrow else ''}"] = r
        self.counts[f"{kind}.{types}{MATVEC if narrow else ''}"] = len(rows)
        return fit

    def contraction_table(self, kind: str) -> dict[str, Fit]:
        measured = sorted({ts for _, ts, _ in self.samples.get(kind, [])})
        # matmul_kn's matvecs are not fitted apart: the model prices every matvec by matmul's :m1 fit
        keys = [key for ts in measured for key in ((ts,) if kind == "matmul_kn" else (ts, ts + MATVEC))]
        return {key: f for key in keys if (f := self.contraction_fit(kind, key))}

    def traffic_fit(self, key: str, rows: list[_TrafficSample], delta: bool = False, spills: bool = True) -> Fit:
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
            keep, adj = self.within(measured, [b for _, b, _, _ in rows])
            measured = [measured[i] for i in keep]
            rows = [(rows[i][0], rows[i][1], adj[i], rows[i][3]) for i in keep]
        relative_to = [sc for *_, sc in rows] if delta or key.endswith("_in_dispatch") else None
        feats = [(1.0, e, b) for e, b, _, _ in rows]
        coef, r = fit_linear(feats, [t for _, _, t, _ in rows], relative_to)
        if spills and relative_to is None:
            r = self.stated(coef, feats, measured, r)
        self.res[key] = r
        self.counts[key] = len(rows)
        fit = to_fit(coef, r, [])
        if r > TABLE_RESIDUAL and len(pts) >= 2 and relative_to is None:
            fit = dataclasses.replace(fit, points=tuple(pts))
        return fit

    def traffic_by_role(self, kind: str, by_role: dict[tuple[str, str], list[_TrafficSample]]) -> dict[str, Fit]:
        """A ``kind`` fit per ``role:element`` (``KernelCosts.pack_by``) measured at four shapes or more."""
        return {key: self.traffic_fit(f"{kind}.{key}", rows) for (k, key), rows in sorted(by_role.items())
                if k == kind and len(rows) >= 4}  # fmt: skip

    def generic_fit(self, kind: str) -> Fit:
        rows = self.samples.get(kind, [])
        if not rows:
            return Fit()
        feats, ys, pts = [], [], []
        for (r, n, ops), _, t in rows:
            elements = r * n
            feats.append((1.0, elements * ops, _generic_bytes(kind, r, n)))
            ys.append(t)
            pts.append((float(elements * ops), t))
        keep, adj = self.within(ys, [f[2] for f in feats])
        coef, rr = fit_linear([feats[i] for i in keep], [adj[i] for i in keep])
        rr = self.stated(coef, [feats[i] for i in keep], [ys[i] for i in keep], rr)
        self.res[kind] = rr
        self.counts[kind] = len(keep)
        return to_fit(coef, rr, pts)

    def opaque_fit(self, kind: str) -> Fit:
        """``softmax`` on elements, ``attention`` on flops (``attention_flops``), both on the bytes they
        read and write; a table where the formula misses: by ``TABLE_RESIDUAL`` in the median, or any
        point by more than 2x (IREE's attention with 64-wide heads ran at 2.5 GFLOP/s, 10x below the
        rate of the smaller heads the other points fit)."""
        rows = self.samples.get(kind, [])
        if len(rows) < 3:
            return Fit()
        feats, ys, pts = [], [], []
        for sz, _, t in rows:
            work, nbytes = _opaque_work(kind, sz)
            feats.append((1.0, work, nbytes))
            ys.append(t)
            pts.append((work, t))
        coef, rr = fit_linear(feats, ys)
        self.res[kind] = rr
        self.counts[kind] = len(rows)
        fit = to_fit(coef, rr, pts)
        if not fit.points and max(log_errors([float(np.dot(coef, f)) for f in feats], ys)) > math.log(2):
            fit = dataclasses.replace(fit, points=tuple(sorted(pts)))
        return fit


def _opaque_work(kind: str, sz: tuple[int, ...]) -> tuple[float, float]:
    """(work, bytes) of a ``softmax`` [R, C] (elements) or ``attention`` (B, M, K1, K2, N) (flops) sample."""
    if kind == "softmax":
        return float(sz[0] * sz[1]), 8.0 * sz[0] * sz[1]
    b, m, k1, k2, n = sz
    work = float(attention_flops(b * m, k1, k2, n))
    return work, 4.0 * b * (m * k1 + k2 * k1 + k2 * n + m * n)


def _encode_rows(
    samples: Mapping[str, list[tuple[tuple[int, ...], str, float]]], target: Target
) -> tuple[list[_TrafficSample], list[_TrafficSample], dict[tuple[str, str], list[_TrafficSample]]]:
    """The pack and unpack dispatches' samples (elements, logical + packed bytes, seconds, seconds), all
    of each kind and by (kind, ``role:element``)."""
    pack_rows: list[_TrafficSample] = []
    unpack_rows: list[_TrafficSample] = []
    by_role: dict[tuple[str, str], list[_TrafficSample]] = {}
    for kind, rows in (("pack", pack_rows), ("unpack", unpack_rows)):
        for (m, n, k, operand), types, t in samples.get(kind, []):
            logical, packed = layout_bytes(target, types, (m, n, k), operand)
            element = types.split(",")[operand]
            row = (float(logical // _BYTES[element]), float(logical + packed), t, t)
            rows.append(row)
            by_role.setdefault((kind, f"{ROLES[operand]}:{element}"), []).append(row)
    return pack_rows, unpack_rows, by_role


def _in_dispatch_rows(
    samples: Mapping[str, list[tuple[tuple[int, ...], str, float]]], target: Target
) -> tuple[list[_TrafficSample], list[_TrafficSample], dict[str, tuple[tuple[float, float, float, float], ...]]]:
    """The extra an unpack, and an operand's pack, costs inside the contraction's dispatch over the
    same mmt4d alone (elements, bytes, extra seconds, the mmt4d's seconds), and ``KernelCosts.fused_pack``."""
    base = {(sz, ts): t for sz, ts, t in samples.get("mmt4d", [])}
    delta_unpack: list[_TrafficSample] = []
    delta_pack: list[_TrafficSample] = []
    fused: dict[str, list[tuple[float, float, float, float]]] = {}
    for kind, operand, rows in (
        ("mmt4d+unpack", 2, delta_unpack),
        ("mmt4d+pack_lhs", 0, delta_pack),
        ("mmt4d+pack_rhs", 1, delta_pack),
    ):
        for sz, ts, t in samples.get(kind, []):
            if (sz, ts) in base:
                logical, packed = layout_bytes(target, ts, sz, operand)
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
    return delta_unpack, delta_pack, {role: tuple(sorted(points)) for role, points in fused.items()}


def _consumer_rows(samples: Mapping[str, list[tuple[tuple[int, ...], str, float]]]) -> list[_TrafficSample]:
    """A bias add after the unpack in the contraction's dispatch, against the same dispatch without it."""
    with_unpack = {(sz, ts): t for sz, ts, t in samples.get("mmt4d+unpack", [])}
    return [
        (float(sz[0] * sz[1]), 0.0, t - with_unpack[(sz, ts)], with_unpack[(sz, ts)])
        for sz, ts, t in samples.get("mmt4d+unpack+bias", [])
        if (sz, ts) in with_unpack
    ]


def _fit_within(
    cal: Calibration,
    target: Target,
    knee: int | None,
    dram_gbps: float = 0.0,
    counts: dict[str, int] | None = None,
) -> tuple[KernelCosts, dict[str, float]]:
    """Every fit on the samples that move at most ``knee`` bytes (all of them for None, or where
    fewer than three would be left); with ``dram_gbps``, on every sample, each with what its bytes
    beyond the knee cost at that rate taken off (at most 90% of its time)."""
    s = cal.samples
    spilled = (
        KernelCosts(0.0, 0.0, cache_bytes=float(knee), dram_gbps=dram_gbps)
        if knee is not None and dram_gbps > 0
        else None
    )
    w = _WithinKnee(s, target, knee, spilled)
    mmt4d, matmul = w.contraction_table("mmt4d"), w.contraction_table("matmul")
    matmul_kn = w.contraction_table("matmul_kn")
    pack_rows, unpack_rows, by_role = _encode_rows(s, target)
    pack_by, unpack_by = w.traffic_by_role("pack", by_role), w.traffic_by_role("unpack", by_role)
    delta_unpack, delta_pack, fused_pack = _in_dispatch_rows(s, target)
    delta_consumer = _consumer_rows(s)
    elementwise = w.generic_fit("elementwise")
    (call, output, transient, launch), rr = call_overheads(cal.chains)
    if cal.chains:
        w.res["launch"] = rr
        w.counts["launch"] = len(cal.chains)
    alloc = alloc_fit(cal)
    if alloc.measured:
        w.res["alloc"] = alloc.residual
        w.counts["alloc"] = len(cal.samples.get("alloc", [])) - 1  # each size against the smallest
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
        pack=w.traffic_fit("pack", pack_rows),
        pack_in_dispatch=w.traffic_fit("pack_in_dispatch", delta_pack, spills=False),
        unpack=w.traffic_fit("unpack", unpack_rows),
        unpack_in_dispatch=w.traffic_fit("unpack_in_dispatch", delta_unpack, spills=False),
        consumer_after_unpack=w.traffic_fit("consumer_after_unpack", delta_consumer, delta=True, spills=False),
        elementwise=elementwise,
        reduction=w.generic_fit("reduction"),
        softmax=w.opaque_fit("softmax"),
        attention=w.opaque_fit("attention"),
        copy=w.traffic_fit("copy", copy_rows(cal, transient + launch, alloc), delta=True),
        alloc=alloc,
        op_weights=op_weights(cal, elementwise),
        pack_by=pack_by,
        unpack_by=unpack_by,
        fused_pack=fused_pack,
    )
    if counts is not None:
        counts.update(w.counts)
    return kernels, w.res
