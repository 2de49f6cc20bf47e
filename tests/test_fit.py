"""``measure.fit``: the calibration's numerics on synthetic numbers, without IREE.

Every expected value is independent of the code under test: the parameters the synthetic timings were
made from, or a least-squares solution worked by hand (in the comments).
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from egg_dispatch.measure.fit import (
    REREAD_KNEES,
    SHAPE_WIDTHS,
    TABLE_RESIDUAL,
    THROTTLE_FLOOR,
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
from egg_dispatch.target.kernels import Fit, KernelCosts

MIB = 1 << 20


# ------------------------------------------------------------------------------------- fit_linear
def test_fit_linear_recovers_the_parameters_exact_timings_were_made_from() -> None:
    fixed, rate, bw = 0.4e-6, 80e9, 25e9
    rng = np.random.default_rng(1)
    work, nbytes = 10 ** rng.uniform(2, 9, 30), 10 ** rng.uniform(2, 7, 30)
    seconds = fixed + work / rate + nbytes / bw
    coef, residual = fit_linear(np.stack([np.ones(30), work, nbytes], 1).tolist(), seconds.tolist())
    assert coef == pytest.approx([fixed, 1 / rate, 1 / bw], rel=1e-9)
    assert residual == pytest.approx(0.0, abs=1e-12)


def test_fit_linear_by_hand_ordinary_least_squares_with_a_scale() -> None:
    # scale 1: plain least squares of y = a + b x through (1, 1), (2, 2), (3, 2): x̄ = 2, ȳ = 5/3,
    # b = Σ(x - x̄)(y - ȳ) / Σ(x - x̄)² = 1 / 2, a = ȳ - b x̄ = 2/3; model 7/6, 5/3, 13/6, so the
    # residual (median |model - y| / scale) is 1/6
    coef, residual = fit_linear([(1, 1), (1, 2), (1, 3)], [1, 2, 2], scale=[1, 1, 1])
    assert coef == pytest.approx([2 / 3, 1 / 2], rel=1e-12)
    assert residual == pytest.approx(1 / 6, rel=1e-12)


def test_fit_linear_by_hand_relative_error() -> None:
    # a constant a for times 1 and 2 on relative error: minimise (a - 1)² + ((a - 2) / 2)², so
    # a - 1 + (a - 2) / 4 = 0, a = 6/5; residual: median of log(6/5) and log(2 / (6/5)) = their mean,
    # log(6/5 x 5/3) / 2 = log(2) / 2
    coef, residual = fit_linear([(1.0,), (1.0,)], [1.0, 2.0])
    assert coef == pytest.approx([1.2], rel=1e-12)
    assert residual == pytest.approx(math.log(2) / 2, rel=1e-12)


def test_fit_linear_drops_a_coefficient_that_would_go_negative_and_refits_the_rest() -> None:
    # y = 2 - x / 2 exactly: unconstrained b = -1/2; dropped, the constant alone is the mean, 1
    coef, residual = fit_linear([(1, 1), (1, 2), (1, 3)], [1.5, 1.0, 0.5], scale=[1, 1, 1])
    assert coef == pytest.approx([1.0, 0.0], abs=1e-12)
    assert residual == pytest.approx(0.5, rel=1e-12)  # |1 - 1.5|, 0, |1 - 0.5|


def test_fit_linear_gives_a_column_the_others_determine_nothing() -> None:
    # bytes = 8 x elements in every sample: the time goes to the elements column, bytes get 0
    elements = [1e3, 1e4, 1e5, 1e6]
    seconds = [1e-6 + e / 1e9 for e in elements]
    coef, residual = fit_linear([(1.0, e, 8 * e) for e in elements], seconds)
    assert coef == pytest.approx([1e-6, 1e-9, 0.0], rel=1e-9, abs=1e-20)
    assert residual == pytest.approx(0.0, abs=1e-12)


def test_fit_linear_degenerate_inputs_give_the_documented_result() -> None:
    # one sample: the first column takes the time, exactly
    coef, residual = fit_linear([(1.0, 5.0, 7.0)], [2.0])
    assert coef == pytest.approx([2.0, 0.0, 0.0]) and residual == pytest.approx(0.0, abs=1e-12)
    # every sample of the same sizes: only the constant is determined; on relative error it is
    # Σ(1/y) / Σ(1/y²) = (1 + 1/2 + 1/4) / (1 + 1/4 + 1/16) = 4/3 (µs), and the residual the median of
    # log(4/3), log(2 / (4/3)), log(4 / (4/3)): log(3/2)
    coef, residual = fit_linear([(1.0, 1e6, 8e6)] * 3, [1e-6, 2e-6, 4e-6])
    assert coef == pytest.approx([4e-6 / 3, 0.0, 0.0], rel=1e-9)
    assert residual == pytest.approx(math.log(1.5), rel=1e-9)
    with pytest.raises(IndexError):  # no rows at all: callers check before fitting
        fit_linear([], [])


def test_fit_linear_residual_is_a_median_one_outlier_moves_little() -> None:
    work = np.geomspace(1e4, 1e9, 12)
    seconds = 0.5e-6 + work / 50e9
    seconds[5] *= 3.0  # one disturbed sample
    coef, residual = fit_linear(np.stack([np.ones(12), work], 1).tolist(), seconds.tolist())
    model = coef[0] + work * coef[1]
    assert abs(math.log(model[5] / seconds[5])) > 0.5  # the outlier is not fitted
    assert residual < 0.1
    assert 1 / coef[1] == pytest.approx(50e9, rel=0.15)


# ------------------------------------------------------------------------------- errors and Fit
def test_log_errors_and_their_median_by_hand() -> None:
    assert log_errors([2.0, 1.0], [1.0, 2.0]) == pytest.approx([math.log(2), math.log(2)])
    assert median_log_error([1.0, 1.0, 1.0], [1.0, math.e, math.exp(-2)]) == pytest.approx(1.0)
    assert log_errors([0.0], [1.0]) == pytest.approx([math.log(1e15)])  # a zero model is floored, not -inf
    with pytest.raises(ValueError):
        log_errors([1.0], [1.0, 2.0])


def test_to_fit_turns_coefficients_into_rates_and_keeps_a_table_only_past_the_residual() -> None:
    fit = to_fit([1e-6, 1 / 50e9, 0.0], 0.1, [(2.0, 1.0), (1.0, 0.5)])
    assert fit.fixed_us == pytest.approx(1.0) and fit.rate_g == pytest.approx(50.0) and fit.gbps == 0.0
    assert fit.points == () and fit.residual == 0.1
    table = to_fit([1e-6, 1 / 50e9, 1 / 20e9], TABLE_RESIDUAL + 0.01, [(2.0, 1.0), (1.0, 0.5)])
    assert table.points == ((1.0, 0.5), (2.0, 1.0)) and table.gbps == pytest.approx(20.0)
    assert to_fit([1e-6, 1e-9], 1.0, [(1.0, 1.0)]).points == ()  # one point is no table
    short = to_fit([3e-6], 0.0, [])  # coefficients beyond the given are 0: no rate
    assert short.fixed_us == pytest.approx(3.0) and short.rate_g == 0.0 and short.gbps == 0.0


# ------------------------------------------------------------------------------ call overheads
def test_call_overheads_recover_the_per_call_result_transient_and_launch_costs() -> None:
    call, output, transient, launch = 1.5e-6, 0.25e-6, 0.9e-6, 0.05e-6
    chains = []
    for n in (1, 2, 4, 16):  # a chain: one result, a transient buffer from two dispatches on
        chains.append((n, 1, 3e-8 * n, 3e-8 * n + call + output + (transient if n > 1 else 0.0) + n * launch))
    for n in (2, 8):  # a fan: n results, no transient
        chains.append((n, n, 3e-8 * n, 3e-8 * n + call + n * (output + launch)))
    got, residual = call_overheads(chains)
    assert got == pytest.approx((call, output, transient, launch), rel=1e-6)
    assert residual == pytest.approx(0.0, abs=1e-9)
    assert call_overheads([]) == ((0.0, 0.0, 0.0, 0.0), 0.0)


# ------------------------------------------------------------------------------------ throttle
def test_throttle_from_slowdowns_by_hand() -> None:
    rows = [(13e-6, 0.01), (27e-6, 0.15), (52e-6, 0.16), (142e-6, 0.14)]
    # the largest slowdown 0.16, half of it 0.08: on from 27 µs (0.15, and the median of 0.15, 0.16,
    # 0.14 above it); the fraction that median, the threshold sqrt(13 x 27) µs
    fraction, us = throttle_from_slowdowns(rows)
    assert fraction == pytest.approx(0.15) and us == pytest.approx(math.sqrt(13 * 27))
    assert throttle_from_slowdowns(rows[::-1]) == (fraction, us)  # in any order
    # already on at the shortest: the threshold is the shortest itself
    assert throttle_from_slowdowns([(13e-6, 0.12), (52e-6, 0.14)]) == pytest.approx((0.13, 13.0))
    assert throttle_from_slowdowns([(52e-6, THROTTLE_FLOOR / 2), (142e-6, -0.01)]) == (0.0, 0.0)  # noise
    assert throttle_from_slowdowns([]) == (0.0, 0.0)


# ------------------------------------------------------------------------------- buffers
def test_buffer_fit_recovers_a_per_byte_rate_beyond_the_smallest_buffer() -> None:
    sizes = [4096, 1 << 16, 1 << 18, 1 << 20, 1 << 22]
    fit = buffer_fit([(b, 2e-6 + b / 40e9) for b in sizes])  # 2 µs every call pays, 40 GB/s beyond
    assert fit.gbps == pytest.approx(40.0, rel=1e-9) and fit.fixed_us == 0.0 and fit.rate_g == 0.0
    assert fit.points == () and fit.residual == pytest.approx(0.0, abs=1e-9)


def test_buffer_fit_points_never_decrease_and_fewer_than_two_sizes_measure_nothing() -> None:
    # beyond the smallest (bytes 0): 1 µs at 1000 bytes, 0.5 at 2000 (raised to 1: a larger buffer never
    # costs less), 1 at 1e6, in any order; one per-byte rate misses that step by far: a table
    fit = buffer_fit([(1_000_000, 1e-6), (0, 0.0), (2000, 0.5e-6), (1000, 1e-6)])
    assert fit.residual > TABLE_RESIDUAL
    assert [b for b, _ in fit.points] == [1000.0, 2000.0, 1e6]
    assert [t for _, t in fit.points] == pytest.approx([1e-6, 1e-6, 1e-6], rel=1e-12)
    # a buffer no slower than the smallest costs 1 ns, not 0 (or less): 1e-9 s over 100 bytes
    assert buffer_fit([(0, 5e-6), (100, 4e-6)]).seconds(100, 100) == pytest.approx(1e-9, rel=1e-9)
    assert not buffer_fit([(4096, 1e-6)]).measured and not buffer_fit([]).measured


# ------------------------------------------------------------------------- memory knee and re-read
def _pack(k: KernelCosts) -> Fit:
    return k.pack


def test_with_spill_recovers_the_dram_rate_beyond_the_knee() -> None:
    fit = Fit(fixed_us=0.1, gbps=20.0)
    kernels = KernelCosts(0.0, 0.0, pack=fit)
    knee, dram = 2 * MIB, 5e9
    rows: list[TrafficRow] = [
        (_pack, 0.0, float(b), fit.seconds(0.0, b) + max(0.0, b - knee) / dram)
        for b in (MIB // 4, MIB, 2 * MIB, 3 * MIB, 6 * MIB, 12 * MIB)
    ]
    spilled = with_spill(kernels, knee, rows)
    assert spilled is not None
    assert spilled.cache_bytes == knee and spilled.dram_gbps == pytest.approx(5.0, rel=1e-9)
    assert traffic_error(spilled, rows) == pytest.approx(0.0, abs=1e-9)  # the model with it prices every row
    assert traffic_error(kernels, rows) > 0.1  # and without it misses the large ones
    assert with_spill(kernels, 4 * MIB, rows) is None  # only 6 and 12 MiB beyond 4: fewer than three
    faster = [(g, w, b, fit.seconds(w, b) * 0.5) for g, w, b, _ in rows]  # faster than the fit beyond it
    assert with_spill(kernels, knee, faster) is None


def test_traffic_error_is_the_mean_log_error() -> None:
    fit = Fit(fixed_us=1.0)
    kernels = KernelCosts(0.0, 0.0, pack=fit)
    rows: list[TrafficRow] = [(_pack, 0.0, 0.0, 2e-6), (_pack, 0.0, 0.0, 1e-6), (_pack, 0.0, 0.0, 0.0)]
    assert traffic_error(kernels, rows) == pytest.approx(math.log(2) / 2)  # the zero time is left out
    assert traffic_error(kernels, []) == 0.0


def _contractions(
    fixed: float, gflops: float, row_gbps: float, knee: float
) -> tuple[list[tuple[float, float, float]], list[float], list[tuple[int, int]]]:
    """Samples of M x N x K contractions at ``gflops`` whose RHS (4 N K bytes) beyond ``knee`` is read
    again for every LHS row at ``row_gbps``."""
    feats, ys, rhs = [], [], []
    for m, n, k in ((16, 64, 96), (32, 128, 192), (64, 256, 384), (16, 512, 256), (64, 256, 768),
                    (32, 1024, 768), (64, 1024, 1024), (16, 2048, 768)):  # fmt: skip
        flops, b = 2.0 * m * n * k, 4 * n * k
        feats.append((1.0, flops, 4.0 * (m * k + n * k + m * n)))
        ys.append(fixed + flops / (gflops * 1e9) + (m * b / (row_gbps * 1e9) if b > knee else 0.0))
        rhs.append((m, b))
    return feats, ys, rhs


def test_with_reread_finds_the_knee_and_rate_of_an_rhs_read_again_per_row() -> None:
    feats, ys, rhs = _contractions(0.5e-6, 100.0, 400.0, 2.5 * MIB)
    coef, r = fit_linear(feats, ys)
    fit = with_reread(to_fit(coef, r, []), feats, ys, rhs, KernelCosts(0.0, 0.0))
    inside = max(b for _, b in rhs if b <= 2.5 * MIB)
    beyond = min(b for _, b in rhs if b > 2.5 * MIB)
    # every knee from the largest RHS within to the smallest beyond splits the samples alike: the middle one
    alike = [k for k in REREAD_KNEES if inside <= k < beyond]
    assert fit.reread_bytes == alike[len(alike) // 2]
    assert not fit.reread_beyond and fit.reread_row_gbps == pytest.approx(400.0, rel=1e-6)
    # the once-per-kernel term is nothing (0, or a rate so high it adds no time)
    for m, b in rhs:
        assert fit.reread_seconds(m, b) == pytest.approx(m * b / 400e9 if b > 2.5 * MIB else 0.0, rel=1e-6)
    assert fit.rate_g == pytest.approx(100.0, rel=1e-6) and fit.fixed_us == pytest.approx(0.5, rel=1e-6)


def test_with_reread_leaves_a_fit_the_formula_already_explains() -> None:
    feats, ys, rhs = _contractions(0.5e-6, 100.0, 400.0, math.inf)  # no re-read anywhere
    coef, r = fit_linear(feats, ys)
    fit = to_fit(coef, r, [])
    assert with_reread(fit, feats, ys, rhs, KernelCosts(0.0, 0.0)) is fit


# ------------------------------------------------------------------------------ shape residuals
GRID = [(m, n, k) for m in (8, 16, 32) for n in (64, 128) for k in (96, 192)]


def test_shape_residuals_that_every_shape_shares_are_kept() -> None:
    base = Fit(fixed_us=0.5, rate_g=100.0)
    resid = [0.3] * len(GRID)  # the formula 26% fast at every shape: neighbours predict each other
    found = shape_residuals_fit(base, GRID, resid)
    assert found is not None
    fit, loo = found
    assert fit.shape_residuals == tuple((float(m), float(n), float(k), 0.3) for m, n, k in GRID)
    assert fit.shape_width in SHAPE_WIDTHS and loo < 0.95 * 0.3
    assert fit.fixed_us == base.fixed_us and fit.rate_g == base.rate_g  # the formula itself unchanged


def test_shape_residuals_are_not_kept_where_they_predict_nothing_or_there_is_nothing_to_carry() -> None:
    base = Fit(fixed_us=0.5, rate_g=100.0)
    assert shape_residuals_fit(base, GRID, [0.01] * len(GRID)) is None  # the formula within 2%
    # shapes 2^8 apart in each of M, N, K: none is near another, so leave-one-out predicts ~nothing
    far = [(1 << (8 * i), 1 << (8 * i), 1 << (8 * i)) for i in range(6)]
    assert shape_residuals_fit(base, far, [0.3, -0.3, 0.3, -0.3, 0.3, -0.3]) is None
