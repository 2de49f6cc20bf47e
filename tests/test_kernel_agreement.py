"""Issue 53 point 4, the measured half: the model's M = 1 kernels tied to IREE's profile by what they compute.

``benchmarks/bench_m1_kernels.py`` profiles the decode step's two plans and compares each kernel the model
priced with the executable IREE ran (``measure.kernel_agreement``). Checked here without measuring:

* executable names as IREE 3.13 printed them for the decode fixture (copied from a profile) give the keys
  read off by hand; other dispatches give none;
* pooling a profile: executions per call from the samples, the mean weighted by them, by hand;
* the model's side on the decode fixture is checked in tests/test_decode_report.py, which explores it;
* the median ratio, weighted by executions, over rows tied like with like (a contraction as many times
  per call), on made-up rows.
"""

from __future__ import annotations

import pytest

from egg_dispatch.iree.profiling import DispatchTimes
from egg_dispatch.measure.kernel_agreement import Predicted, Profiled, Row, median_ratio, profiled, profiled_key

NAMES = {
    "main$async_dispatch_18_batch_matmul_1x1x256x256_f32": ("matmul", "1x256x256"),
    "main$async_dispatch_4_batch_matmul_1x1x64x256_f32": ("matmul", "1x64x256"),
    "main$async_dispatch_48_batch_matmul_1x1x2048x256_f32": ("matmul", "1x2048x256"),
    "main$async_dispatch_7_matmul_like_1x512x256_f32": ("matmul", "1x512x256"),
    "main$async_dispatch_9_batch_matmul_4x1x64x256_f32": ("matmul", "4x1x64x256"),
    "_encoding_5_encode_1x1x256xf32_to_1x1x256xf32": ("encode", "1x1x256xf32"),
    "main$async_dispatch_17_attention_8x32x32x128": None,
    "main$async_dispatch_10_slow_memcpy": None,
    "main$async_dispatch_1_reduction_256_f32": None,
    "main$async_dispatch_14_elementwise_broadcast_2x4x4096_f32": None,
}


@pytest.mark.parametrize("name", sorted(NAMES))
def test_profiled_names_give_the_keys_read_by_hand(name: str) -> None:
    assert profiled_key(name) == NAMES[name]


def test_a_profile_is_pooled_by_key_weighted_by_executions() -> None:
    times = DispatchTimes(
        seconds={
            "main$async_dispatch_3_batch_matmul_1x1x256x256_f32": 4e-6,  # 2 per call
            "main$async_dispatch_18_batch_matmul_1x1x256x256_f32": 1e-6,  # 1 per call
            "_encoding_5_encode_1x1x256xf32_to_1x1x256xf32": 1e-7,  # 4 per call
            "main$async_dispatch_1_reduction_256_f32": 3e-7,
        },
        samples={
            "main$async_dispatch_3_batch_matmul_1x1x256x256_f32": 200,
            "main$async_dispatch_18_batch_matmul_1x1x256x256_f32": 100,
            "_encoding_5_encode_1x1x256xf32_to_1x1x256xf32": 400,
            "main$async_dispatch_1_reduction_256_f32": 300,
        },
        calls=100,
    )
    got = profiled(times)
    assert set(got) == {("matmul", "1x256x256"), ("encode", "1x1x256xf32")}
    mm = got[("matmul", "1x256x256")]
    assert mm.count == 3
    assert mm.seconds == pytest.approx((2 * 4e-6 + 1 * 1e-6) / 3)
    assert got[("encode", "1x1x256xf32")] == Profiled(1e-7, 4, ("_encoding_5_encode_1x1x256xf32_to_1x1x256xf32",))


def test_the_median_ratio_weighs_rows_by_executions() -> None:
    rows = [
        Row(("matmul", "1x2x3"), Predicted(2.0, 1), Profiled(1.0, 1, ())),  # 2.0 once
        Row(("matmul", "1x4x3"), Predicted(1.0, 3), Profiled(2.0, 3, ())),  # 0.5 three times
        Row(("matmul", "1x5x3"), Predicted(1.0, 1), None),  # not measured: left out
        Row(("matmul", "1x6x3"), Predicted(9.0, 2), Profiled(1.0, 1, ())),  # other counts: not tied, left out
        Row(("encode", "1xf32"), Predicted(3.0, 2), Profiled(1.0, 1, ())),  # one kernel: tied at other counts
    ]
    assert [r.tied for r in rows] == [True, True, False, False, True]
    assert median_ratio(rows, "matmul") == 0.5
    assert median_ratio(rows, "encode") == 3.0
    assert median_ratio(rows[2:3], "matmul") is None
