"""The encode-after-contraction benchmark's two programs compute the same numbers as a plain matmul.

``benchmarks/bench_encode_after_contraction.py`` times an encode fused at the end of a contraction's
dispatch against the same encode apart; a timing of programs that compute different things would
compare nothing. Both forms are evaluated by the NumPy evaluator (with the target's real pack / mmt4d /
unpack) and checked against 2 * relu(a @ b^T) by plain NumPy; no IREE needed.
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest

from egg_dispatch.evaluate import evaluate
from egg_dispatch.mlir.parser import parse_mlir

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "benchmarks"))
import bench_encode_after_contraction as bench  # noqa: E402

sys.path.remove(str(ROOT / "benchmarks"))


@pytest.mark.parametrize("fused", [False, True])
@pytest.mark.parametrize(("m", "n", "k"), [(5, 24, 7), (32, 96, 32)])
def test_both_forms_compute_twice_the_relu_of_the_matmul(m: int, n: int, k: int, fused: bool) -> None:
    rng = np.random.default_rng(1)
    a = rng.standard_normal((m, k)).astype(np.float32)
    b = rng.standard_normal((n, k)).astype(np.float32)
    module = parse_mlir(bench.program(m, n, k, fused), "<encode after>")
    (got,) = evaluate(module, [a, b], function="p", target="x86_64-avx512")
    want = 2 * np.maximum(a.astype(np.float64) @ b.astype(np.float64).T, 0)
    assert got.shape == (m, n)
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4)


def test_only_the_fused_form_encodes_inside_the_contractions_dispatch() -> None:
    text_fused, text_apart = bench.program(8, 16, 8, True), bench.program(8, 16, 8, False)
    region = text_fused.split("flow.dispatch.region")[1].split("flow.return")[0]  # the contraction's
    assert "linalg.matmul" in region and "iree_encoding.set_encoding %u" in region
    region = text_apart.split("flow.dispatch.region")[1].split("flow.return")[0]
    assert "linalg.matmul" in region and "iree_encoding.set_encoding" not in region
    assert "iree_encoding.set_encoding %c" in text_apart
