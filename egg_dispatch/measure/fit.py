"""The calibration's fits as pure numerics: least squares, residuals and the choices made on them.

Contract: every function here takes numbers (sequences of floats, feature rows, (size, seconds)
pairs) and the cost model's value types (``target.kernels.Fit``, ``KernelCosts``: what a fit prices
is their formula), and returns numbers or new values of those types. Nothing here runs IREE, starts a
process, reads or writes a file, or knows an MLIR op or a calibration sample's layout; that is
``measure.kernel_fit`` (samples to rows) and ``measure.calibrate`` (programs, runs, the profile).
Why apart: the numerics are where a fit goes wrong (a term gone negative, a knee chosen on one noisy
point), and here they can be tested on synthetic numbers from known parameters, without IREE or a
machine to time on (``tests/test_fit.py``).

``fit_linear`` is least squares on relative error with non-negative coefficients (an active-set refit
drops a term that would go negative): ``seconds = fixed + work / rate + bytes / bandwidth``. Each fit
states its median |log(model / measured)| (``median_log_error``); past ``TABLE_RESIDUAL`` its points
are kept as a table the model interpolates (``to_fit``). The rest choose among candidate models by
their error: a contraction's RHS re-read (``with_reread``), the memory knee's DRAM rate
(``with_spill``, ``traffic_error``), per-shape residuals by leave-one-out (``shape_residuals_fit``),
the throttle a long mmt4d leaves behind (``throttle_from_slowdowns``), a per-call buffer's cost
(``buffer_fit``) and the per-call overheads of chains and fans (``call_overheads``).
"""

from __future__ import annotations

import dataclasses
import math
import statistics
from collections.abc import Callable, Sequence

import numpy as np

from egg_dispatch.target.kernels import Fit, KernelCosts

__all__ = [
    "KNEES",
    "REREAD_FLOOR",
    "REREAD_GAIN",
    "REREAD_KNEES",
    "SHAPE_FLOOR",
    "SHAPE_GAIN",
    "SHAPE_PRIORS",
    "SHAPE_WIDTHS",
    "TABLE_RESIDUAL",
    "THROTTLE_FLOOR",
    "TrafficRow",
    "buffer_fit",
    "call_overheads",
    "fit_linear",
    "log_errors",
    "median_log_error",
    "shape_residuals_fit",
    "throttle_from_slowdowns",
    "to_fit",
    "traffic_error",
    "with_reread",
    "with_spill",
]

TABLE_RESIDUAL = 0.25
"""A fit whose median |log(model/measured)| exceeds this keeps its points as an interpolation table."""


def fit_linear(
    features: Sequence[Sequence[float]], seconds: Sequence[float], scale: Sequence[float] | None = None
) -> tuple[list[float], float]:
    """Non-negative least squares of ``seconds ≈ features @ coef`` on relative error; returns the
    coefficients and the median |log(model / measured)|.

    With ``scale``, errors are relative to it instead (and the residual is the median |model -
    measured| / scale): for a *difference* of two times (the extra an in-dispatch pack costs), which
    may be near zero or negative by noise, relative to the dispatch it is part of.

    Degenerate inputs: a column the earlier ones already determine gets coefficient 0 (so with one
    sample, or with every sample of the same sizes, the first non-zero column takes all the time); a
    coefficient that would go negative is dropped and the rest refitted, so every coefficient is >= 0.
    No outlier is rejected: calibration's samples are each the fastest of their repeats, and the
    residual is a median, which one point far off moves little. ``features`` needs at least one row."""
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


def log_errors(model: Sequence[float], measured: Sequence[float]) -> list[float]:
    """|log(model / measured)| per sample."""
    return [abs(math.log(max(m, 1e-15) / max(y, 1e-15))) for m, y in zip(model, measured, strict=True)]


def median_log_error(model: Sequence[float], measured: Sequence[float]) -> float:
    """Median |log(model / measured)|: the residual every fit states."""
    return float(np.median(log_errors(model, measured)))


def to_fit(coef: Sequence[float], residual: float, points: list[tuple[float, float]]) -> Fit:
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


REREAD_GAIN = 0.8
"""A contraction's fit takes an RHS re-read term only where it cuts the fit's mean
|log(model / measured)| to this fraction or less: a term for one noisy point is not a regime."""


REREAD_FLOOR = 0.02
"""Nor where the formula alone is already within 2% on average: nothing is left for it to explain."""


KNEES = tuple(1 << p for p in range(18, 27))
"""Candidate cache sizes for the memory knee: 256 KiB to 64 MiB."""


REREAD_KNEES = tuple(sorted({*KNEES, *(3 * k // 2 for k in KNEES)}))
"""Candidate RHS sizes beyond which a contraction re-reads its RHS: ``KNEES`` and 1.5x each. Powers of two
alone put the knee at 2 MiB on the Xeon (its L2), so a 2 MiB f16 [K, N] weight was priced as staying in
the cache: 3.7 ms for a 128 x 2048 x 512 matmul that measured 4.9 (55 GFLOP/s, against 72-81 at 1-1.5 MiB)."""


def with_reread(
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
        return float(np.mean(log_errors(model, ys)))

    plain_error = error(dataclasses.replace(fit, points=()))
    trials: list[tuple[float, Fit]] = []
    for knee in REREAD_KNEES:
        inside = [i for i, (_, b) in enumerate(rhs) if b <= knee]
        beyond = [i for i, (_, b) in enumerate(rhs) if b > knee]
        if len(inside) < 4 or len(beyond) < 2:
            continue
        coef, _ = fit_linear([feats[i] for i in inside], [ys[i] for i in inside])
        formula = to_fit(coef, 0.0, [])
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


TrafficRow = tuple[Callable[[KernelCosts], Fit], float, float, float]
"""(which fit prices it, work, bytes, measured seconds): one traffic sample."""


def with_spill(kernels: KernelCosts, knee: int, rows: list[TrafficRow]) -> KernelCosts | None:
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


def traffic_error(kernels: KernelCosts, rows: list[TrafficRow]) -> float:
    """Mean |log(model / measured)| over the traffic samples, the bytes beyond the knee included."""
    errs = [
        abs(math.log(max(kernels.fitted_seconds(get(kernels), work, nbytes), 1e-15) / t))
        for get, work, nbytes, t in rows
        if t > 0
    ]
    return sum(errs) / len(errs) if errs else 0.0


SHAPE_WIDTHS = (0.35, 0.5, 0.75, 1.0, 1.5)
"""Candidate neighbourhood widths (log2 M, N, K) of a contraction fit's shape residuals."""


SHAPE_PRIORS = (0.25, 1.0)
"""Candidate weights of "no correction" against them."""


SHAPE_GAIN = 0.95
"""Shape residuals are kept where they lower the leave-one-out mean |log(model / measured)| of their
fit to this fraction of the formula's or less,"""


SHAPE_FLOOR = 0.02
"""and where the formula alone misses by more than 2% on average (else there is nothing to carry)."""


THROTTLE_FLOOR = 0.03
"""A slowdown of the plain victims below this, next to every mmt4d measured, is noise: no throttle."""


def call_overheads(
    chains: Sequence[tuple[int, int, float, float]],
) -> tuple[tuple[float, float, float, float], float]:
    """(per call, per result, transient step, per dispatch) seconds from the chains and fans'
    (dispatches, results, kernel seconds, call seconds), and the fit's residual: call - kernels =
    per-call + results x output + [transient] x step + dispatches x launch (a program with more
    dispatches than results has a transient buffer). No chains: all zero."""
    if not chains:
        return (0.0, 0.0, 0.0, 0.0), 0.0
    coef, rr = fit_linear(
        [(1.0, r, float(n > r), n) for n, r, _, _ in chains], [max(c - k, 1e-9) for _, _, k, c in chains]
    )
    call, output, transient, launch = coef
    return (call, output, transient, launch), rr


def _leave_one_out_error(
    base: Fit,
    points: tuple[tuple[float, float, float, float], ...],
    mnk: Sequence[tuple[int, int, int]],
    resid: Sequence[float],
    width: float,
    prior: float,
) -> float:
    """Mean |residual - the shape factor the other points predict there| with this width and prior."""
    loo = []
    for i in range(len(points)):
        others = dataclasses.replace(
            base, shape_residuals=points[:i] + points[i + 1 :], shape_width=width, shape_prior=prior
        )
        loo.append(abs(resid[i] - math.log(others.shape_factor(*mnk[i]))))
    return float(np.mean(loo))


def shape_residuals_fit(
    base: Fit, mnk: Sequence[tuple[int, int, int]], resid: Sequence[float]
) -> tuple[Fit, float] | None:
    """``base`` carrying ``resid`` (log(measured / formula) at the shapes ``mnk``) as its shape residuals
    (``Fit.shape_factor``), and their leave-one-out error, where they predict shapes they did not see
    better than the formula alone; else None. The width (``SHAPE_WIDTHS``) and prior (``SHAPE_PRIORS``)
    are those with the least leave-one-out mean (the first of equals), kept when that is at most
    ``SHAPE_GAIN`` of the formula's mean |resid| and the formula misses by more than ``SHAPE_FLOOR``."""
    points = tuple((float(m), float(n), float(k), e) for (m, n, k), e in zip(mnk, resid, strict=True))
    formula_error = float(np.mean(np.abs(resid)))
    best: tuple[float, float, float] | None = None
    for width in SHAPE_WIDTHS:
        for prior in SHAPE_PRIORS:
            err = _leave_one_out_error(base, points, mnk, resid, width, prior)
            if best is None or err < best[0] - 1e-12:
                best = (err, width, prior)
    assert best is not None
    if formula_error > SHAPE_FLOOR and best[0] <= SHAPE_GAIN * formula_error:
        return dataclasses.replace(base, shape_residuals=points, shape_width=best[1], shape_prior=best[2]), best[0]
    return None


def throttle_from_slowdowns(rows: Sequence[tuple[float, float]]) -> tuple[float, float]:
    """(fraction, µs) of ``KernelCosts.throttle`` / ``throttle_us`` from (mmt4d kernel seconds, the
    plain victims' slowdown next to it: time / time alone - 1) per mmt4d measured. The threshold lies
    between the shortest mmt4d that slowed them by at least half the largest slowdown, with most longer
    ones doing so too, and the next shorter one (their geometric mean; the shortest itself when it is
    the first); the fraction is the median slowdown from there up. (0, 0) where no slowdown reaches
    ``THROTTLE_FLOOR`` (or none was measured)."""
    rows = sorted(rows)
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


def buffer_fit(rows: Sequence[tuple[float, float]]) -> Fit:
    """What a buffer of B bytes costs from (buffer bytes, call seconds beyond the kernel's) samples: each
    sample less the smallest buffer's (what every call pays anyway), made non-decreasing (a larger buffer
    never costs less; at least 1 ns), fitted as a per-byte rate, with the points (bytes beyond the
    smallest, seconds) kept as a table where the rate misses them (``to_fit``). An empty ``Fit`` from
    fewer than two sizes."""
    rows = sorted(rows)
    if len(rows) < 2:
        return Fit()
    base_bytes, base = rows[0]
    points: list[tuple[float, float]] = []
    for nbytes, t in rows[1:]:
        extra = max(t - base, points[-1][1] if points else 1e-9)
        points.append((float(nbytes - base_bytes), extra))
    coef, rr = fit_linear([(0.0, 0.0, b) for b, _ in points], [t for _, t in points])
    return to_fit(coef, rr, points)
