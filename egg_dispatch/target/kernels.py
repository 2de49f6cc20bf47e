"""Measured kernel costs of a target profile: what ``egg-dispatch calibrate`` fits on this machine.

A calibrated profile carries, next to the resolver's tiles, one fit per kind of work the cost model
prices (``cost/model.py``), each ``seconds = fixed + work / rate + bytes / bandwidth``:

* ``mmt4d[types]``: a data-tiled contraction dispatch's kernel (operands pre-packed, accumulator
  initialized in it, result unpacked in it), on padded flops and packed bytes;
* ``matmul[types]``: the same contraction without data tiling (plain codegen);
* ``matmul_kn[types]``: the plain contraction with its RHS stored [K, N] (``x . w``: a ``batch_matmul``,
  an un-transposed ``linalg.matmul``) where ``matmul`` is [N, K] (``x . w^T``, PyTorch's linear).
  Plain codegen vectorizes along the contiguous dim, so the two run at different rates; packed (mmt4d)
  operands are the same tiles either way;
* ``mmt4d[types + ":m1"]``, ``matmul[types + ":m1"]``: the same for M = 1 (a matrix-vector product),
  where they were measured. IREE compiles those to other kernels (narrow 1 x N0 tiles for mmt4d, vector
  reductions for the plain matmul), whose rate one fit through both cannot follow. Fitted apart only
  where four M = 1 and four other shapes were measured;
* ``pack``, ``unpack``: an encode / decode dispatch of its own, on elements and logical + packed bytes;
  ``pack_by`` / ``unpack_by`` the same per operand and element type (``"rhs:i8"``): operands of other
  roles and types move other bytes per element at other rates; used where measured;
* ``pack_in_dispatch``: the *extra* time a pack costs when it runs inside the contraction's dispatch
  (IREE re-packs the operand on every call there; measured against the pre-packed contraction);
* ``fused_pack``: the same per operand role as a table over the contraction's shape: (M, N, K,
  seconds per element of the packed operand) where calibrate measured it. One formula on elements
  does not fit, because the cost per element depends on the role and the shape (IREE 3.13 distributes
  these mmt4d dispatches one N tile per workgroup, ``distribution = [16, 1, ...]``, so a fused LHS pack
  runs once per N tile). The model takes the points nearest in log M, N, K (``fused_pack_seconds``);
  the legal fused packs (``egraph.facts.fused_footprint_legal``) span a small range of shapes, which
  the calibration grid covers;
* ``unpack_in_dispatch``: the same for the unpack of the result inside the contraction's dispatch;
* ``consumer_after_unpack``: the *extra* time an elementwise generic (a bias add) costs when it reads
  the unpacked result inside the contraction's dispatch, per element of its result (measured against
  the contraction with the unpack alone). The same generic on the encoded accumulator before the unset
  (``rules/sink_unset.egg``) is an elementwise generic on the tiles and pays no such extra;
* ``producer_pack``: what an elementwise producer of a contraction's operand and the pack of its
  result cost in one dispatch (IREE's FuseEncodingOpsIntoDispatchRegions) beyond the generic and the
  encode dispatch apart, per element of the packed operand, per element type and per form (the
  producer's result packed as it is, or collapsed first: ``":reshape"``, how a linear layer of a
  PyTorch export reads [B, S, D] tokens). The table is signed: the fused form may run slower or faster
  than the two apart. It holds the fused time less what the model prices the generic and the encode at
  (``calibrate.producer_apart_seconds``), not less their measured times, which could price the fused
  form below zero. ``":contraction"``: the encode at the end of a contraction's dispatch, of its unset
  result (IREE's own plans of transformer blocks end contraction dispatches so): the contraction's
  dispatch with it less the same dispatch without, less the model's standalone pack;
* ``elementwise``, ``reduction``: a generic, on element-ops (elements x body ops) and bytes;
  ``op_weights`` says what one body op counts (an add: 1): IREE expands ``math.erf``, ``math.tanh``,
  ``math.exp`` and the like into polynomials, which cost more than the adds and multiplies the fit's
  rate is made of;
* ``softmax``: a ``linalg.softmax`` dispatch, on elements and bytes; ``attention``: an
  ``iree_linalg_ext.attention`` one, on its flops (``attention_flops``) and bytes. Both are opaque to
  the model, and a flops formula at the contraction peak misses them: IREE lowers them to exp, max and
  sum loops;
* ``copy``: a slice copied between dispatches (``flow.tensor.slice``, which IREE runs as a copy
  command or a copy dispatch: the slice cannot stay a view of its source), on elements and the bytes
  read and written; measured as the call-time difference of a slice copied at the top level and the
  same slice loaded inside its consumer's dispatch, less the launch and the transient step the model
  charges apart;
* ``cache_bytes``, ``dram_gbps``: the memory hierarchy. The fits above describe kernels whose bytes
  stay in the core's cache; every byte a kernel moves beyond ``cache_bytes`` streams from farther away
  and costs ``1 / dram_gbps`` more (a contraction takes at least that long: ``contraction_seconds``).
  One fit through both regimes prices the large kernels far too fast. Both numbers are fitted from the
  traffic samples (the knee is chosen by residual among powers of two), not read from the CPU's
  specification;
* ``reread_bytes``, ``reread_pass_gbps``, ``reread_row_gbps`` of a plain contraction fit: an RHS larger
  than ``reread_bytes`` no longer stays in the cache while the kernel sweeps it, so it is read again
  from farther away, once per pass and again for every row of the LHS (``Fit.reread_seconds``): all of
  it, or (``reread_beyond``) the bytes beyond the knee, whichever fits the samples better. A data-tiled
  (mmt4d) fit may carry the same term on its packed RHS, milder. Fitted where it lowers the mean
  |log(model / measured)| of the kind's fit (the knee chosen among powers of two), else absent;
* ``launch_us``: per dispatch, on top of its kernel (host-side scheduling in the command buffer);
* ``alloc_gbps``: the buffer a dispatch writes is allocated (and first touched) on every call: its
  bytes at this rate (0: free); where calibration measured it, ``alloc`` instead: per buffer, by its
  bytes, the call time beyond the kernels of a one-dispatch program less a 4 KiB one's (the pages of a
  buffer freshly mapped on every call, which no kernel time shows);
* ``call_us``: per call of the function, whatever its plan (import, export, submission);
* ``output_us``: per result of the function (its buffer is allocated and exported on every call);
* ``transient_us``: once per call when the plan has any transient buffer (a dispatch result that is
  not a function result: another dispatch reads it). IREE's stream allocates a call's transients
  together (``stream.resource.alloca`` / ``dealloca`` around the command buffer) and orders the
  dependent dispatches with barriers, so this is a step, not a per-dispatch term;
* ``throttle``, ``throttle_us``: a plan that runs a data-tiled contraction (mmt4d) kernel of at least
  ``throttle_us`` makes its plain contractions run ``throttle`` (a fraction) slower than their fits,
  which were measured in programs without one: a core-frequency drop after sustained heavy AVX-512
  work, not code or cache. The mmt4d fits themselves were measured in that state. Both 0: no such
  effect measured (an AMD Zen core keeps its clock under AVX-512).

Any fit may also hold ``points``: measured (work, seconds) pairs. Where the formula misses by more
than 25% (``calibrate.TABLE_RESIDUAL``), the model interpolates the points (log-log, between the
nearest two) instead of the formula inside their range, and beyond the largest scales that point's
time in proportion to the work (the formula, which missed, would extrapolate worse).

A contraction fit may hold ``shape_residuals`` instead: log(measured / formula) at each calibrated
(M, N, K). The formula on flops and bytes misses by shape, and ``Fit.shape_factor`` carries those
misses to the shapes near them: a Gaussian-weighted mean over log2 M, N, K, shrunk towards 1.
Calibration keeps them, with the width and shrinkage, only where leave-one-out over the fit's own
samples predicts better than the formula (``calibrate.SHAPE_GAIN``).

The measurements behind each of these (Intel Xeon, AVX-512, IREE 3.13): docs/built-in-profiles.md §4.
"""

from __future__ import annotations

import bisect
import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

__all__ = ["MATVEC", "ROLES", "Fit", "KernelCosts", "attention_flops", "kernels_from_dict", "kernels_to_dict"]


@dataclass(frozen=True)
class Fit:
    """``seconds = fixed_us·1e-6 + work / (rate_g·1e9) + bytes / (gbps·1e9)``; a rate of 0 drops its term."""

    fixed_us: float = 0.0
    rate_g: float = 0.0
    """Giga units of work per second (GFLOP/s for contractions, giga element-ops/s for generics)."""
    gbps: float = 0.0
    points: tuple[tuple[float, float], ...] = ()
    """Measured (work, seconds), sorted by work; interpolated inside their range (see module doc)."""
    residual: float = 0.0
    """Median |log(model / measured)| of the formula over the calibration points."""
    reread_bytes: float = 0.0
    """A contraction's RHS (per batch; packed for mmt4d) larger than this is read again from beyond the
    cache (module doc); 0: never."""
    reread_pass_gbps: float = 0.0
    """GB/s of that re-read once per kernel (0: no such term)."""
    reread_row_gbps: float = 0.0
    """GB/s of that re-read for every LHS row: it costs M x RHS bytes at this rate (0: no such term)."""
    reread_beyond: bool = False
    """Only the RHS bytes beyond ``reread_bytes`` are read again (the cache keeps the rest), not all."""
    shape_residuals: tuple[tuple[float, float, float, float], ...] = ()
    """A contraction fit's (M, N, K, log(measured / formula)) at the shapes calibration measured: what
    the formula misses there, which ``shape_factor`` carries to the shapes near them (module doc)."""
    shape_width: float = 0.0
    """Width (in log2 M, N, K) of the neighbourhood a shape residual reaches; 0: none applied."""
    shape_prior: float = 0.0
    """Weight of "the formula is right" against the residuals near a shape (shrinks a lone one)."""

    @property
    def measured(self) -> bool:
        """Calibration fitted something here (an unmeasured kind is the all-zero ``Fit()``)."""
        return self.fixed_us > 0 or self.rate_g > 0 or self.gbps > 0 or bool(self.points)

    def interpolates(self, work: float) -> bool:
        """``seconds(work)`` comes from the measured points (which already hold every cache effect):
        inside their range, or beyond the largest, which it scales in proportion to the work."""
        return len(self.points) >= 2 and self.points[0][0] <= work and work > 0

    def seconds(self, work: float = 0.0, nbytes: float = 0.0) -> float:
        if self.interpolates(work):
            last_work, last_seconds = self.points[-1]
            if work > last_work:  # beyond the table: at the largest point's rate, not the formula's
                return last_seconds * work / last_work
            return _interpolate(self.points, work)
        t = self.fixed_us * 1e-6
        if self.rate_g > 0:
            t += work / (self.rate_g * 1e9)
        if self.gbps > 0:
            t += nbytes / (self.gbps * 1e9)
        return t

    def shape_factor(self, m: int, n: int, k: int) -> float:
        """What the formula's time is multiplied by at an M x N x K contraction: the measured residuals
        near it, Gaussian-weighted by distance in log2 M, N, K (width ``shape_width``) and shrunk
        towards none by ``shape_prior``; 1 where none were kept or none lie near."""
        if not self.shape_residuals or self.shape_width <= 0 or min(m, n, k) <= 0:
            return 1.0
        at = (math.log2(m), math.log2(n), math.log2(k))
        total = weight = 0.0
        for pm, pn, pk, r in self.shape_residuals:
            d2 = (at[0] - math.log2(pm)) ** 2 + (at[1] - math.log2(pn)) ** 2 + (at[2] - math.log2(pk)) ** 2
            w = math.exp(-d2 / (2 * self.shape_width**2))
            total += w * r
            weight += w
        return math.exp(total / (weight + self.shape_prior)) if weight + self.shape_prior > 0 else 1.0

    def reread_seconds(self, m: int, rhs_bytes: float) -> float:
        """What re-reading an RHS of ``rhs_bytes`` beyond the cache adds for ``m`` LHS rows (module doc)."""
        if self.reread_bytes <= 0 or rhs_bytes <= self.reread_bytes:
            return 0.0
        if self.reread_beyond:
            rhs_bytes -= self.reread_bytes
        t = rhs_bytes / (self.reread_pass_gbps * 1e9) if self.reread_pass_gbps > 0 else 0.0
        if self.reread_row_gbps > 0:
            t += m * rhs_bytes / (self.reread_row_gbps * 1e9)
        return t


def _interpolate(points: tuple[tuple[float, float], ...], x: float) -> float:
    xs = [p[0] for p in points]
    i = bisect.bisect_left(xs, x)
    if i < len(xs) and xs[i] == x:
        return points[i][1]
    (x0, y0), (x1, y1) = points[max(0, i - 1)], points[min(len(points) - 1, i)]
    if x0 <= 0 or x1 <= 0 or x0 == x1:
        return y0
    f = (math.log(x) - math.log(x0)) / (math.log(x1) - math.log(x0))
    return math.exp(math.log(y0) + f * (math.log(y1) - math.log(y0)))


@dataclass(frozen=True)
class KernelCosts:
    launch_us: float
    call_us: float
    alloc_gbps: float = 0.0
    output_us: float = 0.0
    transient_us: float = 0.0
    throttle: float = 0.0
    """Fraction plain contractions run slower in a plan with an mmt4d kernel of ``throttle_us`` or more."""
    throttle_us: float = 0.0
    cache_bytes: float = 0.0
    """Bytes a kernel moves at its fit's rates; 0: no memory-hierarchy term (see module doc)."""
    dram_gbps: float = 0.0
    """Rate of the bytes beyond ``cache_bytes``, on top of the fit's (0: no such term)."""
    mmt4d: Mapping[str, Fit] = field(default_factory=dict)
    matmul: Mapping[str, Fit] = field(default_factory=dict)
    matmul_kn: Mapping[str, Fit] = field(default_factory=dict)
    pack: Fit = Fit()
    pack_in_dispatch: Fit = Fit()
    unpack: Fit = Fit()
    unpack_in_dispatch: Fit = Fit()
    consumer_after_unpack: Fit = Fit()
    elementwise: Fit = Fit()
    reduction: Fit = Fit()
    softmax: Fit = Fit()
    attention: Fit = Fit()
    copy: Fit = Fit()
    alloc: Fit = Fit()
    """A buffer allocated on every call (a dispatch's result), by its bytes (work = bytes): measured
    beyond the kernels (module doc); takes the place of ``alloc_gbps`` where measured."""
    pack_by: Mapping[str, Fit] = field(default_factory=dict)
    unpack_by: Mapping[str, Fit] = field(default_factory=dict)
    fused_pack: Mapping[str, tuple[tuple[float, float, float, float], ...]] = field(default_factory=dict)
    """Per role (``"lhs"``, ``"rhs"``): measured (M, N, K, seconds per element) of a pack inside the
    contraction's dispatch (module doc)."""
    op_weights: Mapping[str, float] = field(default_factory=dict)
    """Per generic body op (``"math.erf"``): its work in the elementwise fit's element-ops, where an
    add is 1 (module doc); 1 for an op not listed."""
    producer_pack: Mapping[str, tuple[tuple[float, float], ...]] = field(default_factory=dict)
    """Per element type, ``":reshape"`` appended where the producer is collapsed on its way to the
    pack: measured (elements, seconds per element) that an elementwise producer and the pack of its
    result cost in one dispatch over the two apart (module doc); negative where fused was faster.
    ``":contraction"``: the encode at the end of a contraction's dispatch, after its unset (IREE's
    plans of transformer blocks), over the model's price of the standalone pack."""

    def producer_pack_seconds(
        self, element: str, reshaped: bool, elements: float, after_contraction: bool = False
    ) -> float:
        """The ``producer_pack`` extra for a pack of ``elements`` of ``element`` whose elementwise
        producer is in its dispatch: the table of that element type and form (else the other form, else
        f32's), interpolated per element in log2 of the elements, the nearest end's beyond them; 0 where
        nothing was measured. ``after_contraction``: the producer is a contraction's unset result (the
        ``":contraction"`` table, of that element type else f32's; never the elementwise ones)."""
        form = ":reshape" if reshaped else ""
        other = "" if reshaped else ":reshape"
        keys: tuple[str, ...] = (element + form, element + other, "f32" + form, "f32" + other)
        if after_contraction:
            keys = (element + ":contraction", "f32:contraction")
        for key in keys:
            points = self.producer_pack.get(key)
            if points:
                break
        else:
            return 0.0
        if elements <= 0:
            return 0.0
        x = math.log2(elements)
        xs = [math.log2(p[0]) for p in points]
        i = bisect.bisect_left(xs, x)
        if i == 0:
            per_element = points[0][1]
        elif i == len(points):
            per_element = points[-1][1]
        else:
            f = (x - xs[i - 1]) / (xs[i] - xs[i - 1])
            per_element = points[i - 1][1] + f * (points[i][1] - points[i - 1][1])
        return per_element * elements

    def fused_pack_seconds(self, role: str, m: int, n: int, k: int, elements: float) -> float | None:
        """A pack of ``elements`` inside the dispatch of an M x N x K contraction, from the ``fused_pack``
        points of ``role``: inverse-distance weighted over the (up to) three nearest in log2 M, N, K, the
        point itself where one was measured at that shape; None where the role was not measured."""
        points = self.fused_pack.get(role, ())
        if not points or min(m, n, k) <= 0:
            return None
        at = (math.log2(m), math.log2(n), math.log2(k))
        near = sorted((math.dist(at, (math.log2(p[0]), math.log2(p[1]), math.log2(p[2]))), p) for p in points)[:3]
        if near[0][0] < 1e-9:
            return near[0][1][3] * elements
        weights = [1.0 / d**2 for d, _ in near]
        per_element = sum(w * p[3] for w, (_, p) in zip(weights, near, strict=True)) / sum(weights)
        return per_element * elements

    def spill_seconds(self, nbytes: float) -> float:
        """What the bytes of a kernel beyond the cache add to its fitted time (module doc)."""
        if self.cache_bytes <= 0 or self.dram_gbps <= 0 or nbytes <= self.cache_bytes:
            return 0.0
        return (nbytes - self.cache_bytes) / (self.dram_gbps * 1e9)

    def fitted_seconds(self, fit: Fit, work: float, nbytes: float) -> float:
        """``fit``'s time for a kernel of ``work`` moving ``nbytes``, with the bytes beyond the cache."""
        spill = 0.0 if fit.interpolates(work) else self.spill_seconds(nbytes)
        return fit.seconds(work, nbytes) + spill

    def contraction_seconds(
        self,
        fit: Fit,
        flops: float,
        nbytes: float,
        m: int = 0,
        rhs_bytes: float = 0.0,
        batch: int = 1,
        mnk: tuple[int, int, int] | None = None,
    ) -> float:
        """A contraction's time: its fit (with its RHS re-read, ``Fit.reread_seconds``, for ``batch``
        RHS matrices of ``rhs_bytes`` and ``m`` rows each), or streaming its bytes beyond the cache if
        that is longer; times the fit's ``shape_factor`` at ``mnk`` (M, N, K of one batch) where given.
        A contraction overlaps its compute with its loads, so the bytes beyond the cache bound it from
        below (a matvec's weight) rather than add to it (a [512, 1536] x [1536, 1024] mmt4d measured
        within 25% of its in-cache fit although it moves 11 MB)."""
        if fit.interpolates(flops):
            return fit.seconds(flops, nbytes)
        t = fit.seconds(flops, nbytes) + batch * fit.reread_seconds(m, rhs_bytes)
        t = max(t, fit.fixed_us * 1e-6 + self.spill_seconds(nbytes))
        return t * fit.shape_factor(*mnk) if mnk is not None else t

    def traffic(self, kind: str, operand: int | None, element: str) -> Fit:
        """The pack (``kind="pack"``) or unpack fit for operand ``operand`` (0 LHS, 1 RHS, 2 result) of
        ``element``; the overall fit where that pair was not measured."""
        table, overall = (self.pack_by, self.pack) if kind == "pack" else (self.unpack_by, self.unpack)
        key = f"{ROLES.get(operand, '?')}:{element}"
        return table.get(key, overall)

    def contraction(self, types: str, data_tiled: bool, m: int | None = None, rhs_kn: bool = False) -> Fit | None:
        """The fit for a contraction on ``types`` (``"f32,f32,f32"``) of ``m`` rows (the M = 1 fit when
        ``m`` is 1 and one was measured), plain with its RHS [K, N] when ``rhs_kn`` and M > 1
        (``matmul_kn``, where measured: its matvecs' time depends on N and K apart, not on flops, a
        [768, 3072] one ran 2.3x faster per flop than a [1536, 1024] one); its LHS class falls back to
        f32."""
        table = self.mmt4d if data_tiled else self.matmul_kn if rhs_kn and self.matmul_kn and m != 1 else self.matmul
        if m == 1 and types + MATVEC in table:
            return table[types + MATVEC]
        if types in table:
            return table[types]
        lhs = types.split(",")[0]
        for key, fit in table.items():
            if key.split(",")[0] == lhs and not key.endswith(MATVEC):
                return fit
        return table.get("f32,f32,f32")


def attention_flops(rows: int, k1: int, k2: int, n: int) -> int:
    """Flops of an attention over ``rows`` queries (batch x M) of ``k1`` dims against ``k2`` keys with
    ``n``-wide values: Q·Kᵀ and P·V, 2 flops per multiply-add each."""
    return 2 * rows * k2 * (k1 + n)


MATVEC = ":m1"
"""Suffix of the ``mmt4d`` / ``matmul`` keys fitted on M = 1 contractions only."""

ROLES: dict[int | None, str] = {0: "lhs", 1: "rhs", 2: "acc"}
"""Operand names in ``pack_by`` / ``unpack_by`` keys, by the encoding's operand_index."""

_SCALARS = (
    "launch_us",
    "call_us",
    "alloc_gbps",
    "output_us",
    "transient_us",
    "throttle",
    "throttle_us",
    "cache_bytes",
    "dram_gbps",
)
_REREAD_KEYS = ("reread_bytes", "reread_pass_gbps", "reread_row_gbps")
_SHAPE_KEYS = ("shape_width", "shape_prior")
_FIT_KEYS = {"fixed_us", "rate_g", "gbps", "points", "residual", "reread_beyond", "shape_residuals"}
_FIT_KEYS |= {*_REREAD_KEYS, *_SHAPE_KEYS}
_SINGLE = (
    "pack",
    "pack_in_dispatch",
    "unpack",
    "unpack_in_dispatch",
    "consumer_after_unpack",
    "elementwise",
    "reduction",
    "softmax",
    "attention",
    "copy",
    "alloc",
)


def _fit(data: Any, where: str, fail: Any) -> Fit:
    if not isinstance(data, dict):
        raise fail(where, f"expected an object, got {type(data).__name__}")
    unknown = set(data) - _FIT_KEYS
    if unknown:
        raise fail(where, f"unknown keys {sorted(unknown)} (expected {sorted(_FIT_KEYS)})")
    values: dict[str, Any] = {}
    for key in ("fixed_us", "rate_g", "gbps", "residual", *_REREAD_KEYS, *_SHAPE_KEYS):
        v = data.get(key, 0.0)
        if not isinstance(v, int | float) or isinstance(v, bool) or not math.isfinite(v) or v < 0:
            raise fail(f"{where}.{key}", f"must be a finite number >= 0, got {v!r}")
        values[key] = float(v)
    beyond = data.get("reread_beyond", False)
    if not isinstance(beyond, bool):
        raise fail(f"{where}.reread_beyond", f"must be true or false, got {beyond!r}")
    values["reread_beyond"] = beyond
    pts = data.get("points", [])

    def ok(p: Any) -> bool:
        return (
            isinstance(p, list)
            and len(p) == 2
            and all(isinstance(x, int | float) and math.isfinite(x) and x > 0 for x in p)
        )

    if not isinstance(pts, list) or not all(ok(p) for p in pts):
        raise fail(f"{where}.points", "must be a list of [work, seconds] pairs of positive numbers")
    shapes = data.get("shape_residuals", [])
    if not isinstance(shapes, list) or not all(_finite_numbers(p, 4) and min(p[:3]) > 0 for p in shapes):
        raise fail(f"{where}.shape_residuals", "must be a list of [M, N, K, log ratio] (sizes > 0)")
    return Fit(
        points=tuple(sorted((float(a), float(b)) for a, b in pts)),
        shape_residuals=tuple(_four_floats(p) for p in shapes),
        **values,
    )


def kernels_from_dict(data: Any, fail: Any) -> KernelCosts:
    """Validate the ``kernels`` object of a profile; ``fail(field, problem)`` builds the error."""
    if not isinstance(data, dict):
        raise fail("kernels", f"expected an object, got {type(data).__name__}")
    allowed = {
        *_SCALARS,
        "mmt4d",
        "matmul",
        "matmul_kn",
        "pack_by",
        "unpack_by",
        "fused_pack",
        "producer_pack",
        "op_weights",
        *_SINGLE,
    }
    unknown = set(data) - allowed
    if unknown:
        raise fail("kernels", f"unknown keys {sorted(unknown)} (expected {sorted(allowed)})")
    out: dict[str, Any] = {}
    for key in _SCALARS:
        v = data.get(key, None if key in ("launch_us", "call_us") else 0.0)
        if not isinstance(v, int | float) or isinstance(v, bool) or not math.isfinite(v) or v < 0:
            raise fail(f"kernels.{key}", f"must be a finite number >= 0, got {v!r}")
        out[key] = float(v)
    for key in ("mmt4d", "matmul", "matmul_kn", "pack_by", "unpack_by"):
        table = data.get(key, {})
        if not isinstance(table, dict):
            raise fail(f"kernels.{key}", "expected an object of element types -> fit")
        out[key] = {t: _fit(f, f"kernels.{key}.{t}", fail) for t, f in table.items()}
    for key in _SINGLE:
        if key in data:
            out[key] = _fit(data[key], f"kernels.{key}", fail)
    out["fused_pack"] = _fused_pack(data.get("fused_pack", {}), fail)
    out["producer_pack"] = _producer_pack(data.get("producer_pack", {}), fail)
    weights = data.get("op_weights", {})
    if not isinstance(weights, dict):
        raise fail("kernels.op_weights", "expected an object of body ops -> element-ops")
    for op, w in weights.items():
        if not _finite_numbers([w], 1) or w <= 0:
            raise fail(f"kernels.op_weights.{op}", f"must be a finite number > 0, got {w!r}")
    out["op_weights"] = {op: float(w) for op, w in weights.items()}
    return KernelCosts(**out)


def _finite_numbers(p: Any, n: int) -> bool:
    """A list of ``n`` finite numbers (no booleans)."""
    return (
        isinstance(p, list)
        and len(p) == n
        and all(isinstance(x, int | float) and not isinstance(x, bool) and math.isfinite(x) for x in p)
    )


def _producer_pack(data: Any, fail: Any) -> dict[str, tuple[tuple[float, float], ...]]:
    where = "kernels.producer_pack"
    if not isinstance(data, dict):
        raise fail(where, "expected an object of element types -> [elements, seconds per element] points")
    out = {}
    for key, pts in data.items():
        if not isinstance(pts, list) or not pts or not all(_finite_numbers(p, 2) and p[0] > 0 for p in pts):
            raise fail(f"{where}.{key}", "must be a non-empty list of [elements > 0, seconds per element]")
        out[key] = tuple(sorted((float(a), float(b)) for a, b in pts))
    return out


def _four_floats(p: list[Any]) -> tuple[float, float, float, float]:
    """A row ``_finite_numbers(p, 4)`` accepted, as floats."""
    a, b, c, d = (float(x) for x in p)
    return a, b, c, d


def _fused_pack_point(p: Any) -> bool:
    """[M, N, K, seconds per element]: finite numbers, sizes > 0, seconds >= 0."""
    return _finite_numbers(p, 4) and min(p[:3]) > 0 and p[3] >= 0


def _fused_pack(data: Any, fail: Any) -> dict[str, tuple[tuple[float, float, float, float], ...]]:
    if not isinstance(data, dict):
        raise fail("kernels.fused_pack", "expected an object of operand roles -> [M, N, K, seconds per element] points")
    out = {}
    for role, pts in data.items():
        where = f"kernels.fused_pack.{role}"
        if role not in ("lhs", "rhs"):
            raise fail(where, "unknown operand role (expected lhs or rhs)")
        if not isinstance(pts, list) or not all(_fused_pack_point(p) for p in pts):
            raise fail(where, "must be a list of [M, N, K, seconds per element] (sizes > 0, seconds >= 0)")
        out[role] = tuple(sorted(_four_floats(p) for p in pts))
    return out


def _fit_dict(f: Fit) -> dict:
    d: dict[str, Any] = {"fixed_us": f.fixed_us, "rate_g": f.rate_g, "gbps": f.gbps, "residual": f.residual}
    if f.reread_bytes > 0:
        d.update({key: getattr(f, key) for key in (*_REREAD_KEYS, "reread_beyond")})
    if f.points:
        d["points"] = [[a, b] for a, b in f.points]
    if f.shape_residuals and f.shape_width > 0:
        d.update(shape_width=f.shape_width, shape_prior=f.shape_prior)
        d["shape_residuals"] = [list(p) for p in f.shape_residuals]
    return d


def kernels_to_dict(k: KernelCosts) -> dict:
    return {
        "launch_us": k.launch_us,
        "call_us": k.call_us,
        "alloc_gbps": k.alloc_gbps,
        "output_us": k.output_us,
        "transient_us": k.transient_us,
        "throttle": k.throttle,
        "throttle_us": k.throttle_us,
        "cache_bytes": k.cache_bytes,
        "dram_gbps": k.dram_gbps,
        "mmt4d": {t: _fit_dict(f) for t, f in k.mmt4d.items()},
        "matmul": {t: _fit_dict(f) for t, f in k.matmul.items()},
        "matmul_kn": {t: _fit_dict(f) for t, f in k.matmul_kn.items()},
        "pack_by": {t: _fit_dict(f) for t, f in sorted(k.pack_by.items())},
        "unpack_by": {t: _fit_dict(f) for t, f in sorted(k.unpack_by.items())},
        "fused_pack": {role: [list(p) for p in pts] for role, pts in sorted(k.fused_pack.items())},
        "producer_pack": {key: [list(p) for p in pts] for key, pts in sorted(k.producer_pack.items())},
        "op_weights": dict(sorted(k.op_weights.items())),
        **{key: _fit_dict(getattr(k, key)) for key in _SINGLE},
    }
