"""The NumPy evaluator against IREE's runtime (issue 3, point 7).

Every linalg-level fixture is compiled for ``llvm-cpu`` (host CPU) with and without
``--iree-dispatch-creation-data-tiling``, run with ``iree.runtime`` on seeded inputs, and compared with
``egg_dispatch.evaluate`` on the same inputs. The IREE-output-form fixtures are evaluated by us and
must give the linalg-level seed's numbers, and ``seed_dispatch_creation.mlir`` compiled by IREE with
``--compile-from=dispatch-creation`` must equal our evaluation of it.

Inputs are multiples of 1/256 in [-0.5, 0.5] (integers in [-8, 8] for i8; indices in [0, 8) for
i64), and the fixtures' weights are multiples of 1/4 .. 1/16. For fixtures made of contractions, bias
adds and relu every partial sum is then exactly representable, so IREE and the evaluator must agree
*exactly*, whatever the summation order, tiling or padding (``EXACT``). Fixtures with exp / erf /
rsqrt / division (softmax, layer norm, GELU) cannot: IREE uses polynomial approximations and its own
reduction order. They must agree within

    max |ours - iree| <= 8 · eps_f32 · sqrt(K) · max |ours|

where K is the function's total reduction length (``evaluate.check.reduction_length`` summed over its
ops): 0.7e-5 to 1.5e-5 of the output magnitude for these fixtures (K = 56 to 240); the measured
errors are at most 3.5e-7.

Compiled modules are cached on disk (``conftest.vmfb_cache``: pytest's cache directory, keyed by
fixture text, flags and the IREE version) and compiled two at a time, so only the first run pays for
iree-compile, and it pays once, not once per xdist worker.
"""

from __future__ import annotations

import math
import os
import platform
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np
import pytest

from egg_dispatch.evaluate import evaluate, function_input_types, select_function
from egg_dispatch.evaluate.check import reduction_length
from egg_dispatch.evaluate.values import dtype_of
from egg_dispatch.iree.tools import IreeError, iree_available, run_module
from egg_dispatch.mlir.parser import parse_file
from egg_dispatch.target.profile import builtin_target_names

pytestmark = [
    pytest.mark.slow,
    pytest.mark.iree,
    pytest.mark.skipif(not iree_available(), reason="IREE not installed (egg-dispatch[iree])"),
]

FIXTURES = Path(__file__).parent / "fixtures"
EXACT = [
    "seed_iree313",
    "seed_resource",
    "qkv_const",
    "qkv_arg",
    "mlp2",
    "matmul_m1",
    "unaligned",
    "col_slices",
    "f16_matmul",
    "i8_matmul",
]
TOLERANT = ["transformer_block", "attention_explicit", "torch_export"]
TOLERANCE_FACTOR = 8.0
Job = tuple[str, bool, str | None]  # fixture, data tiling, --compile-from


@pytest.fixture(scope="session")
def vmfbs(vmfb_cache: Callable[..., bytes]) -> Callable[[str, bool, str | None], bytes]:
    """Compile every job once (two at a time), reusing vmfbs cached on disk (``conftest.vmfb_cache``:
    by earlier runs, other test files and the other xdist worker, which takes the jobs in the opposite
    order so that the two split them instead of waiting on each other)."""

    def compile_cached(job: Job) -> bytes | IreeError:
        name, dt, compile_from = job
        try:
            return vmfb_cache(FIXTURES / f"{name}.mlir", data_tiling=dt, compile_from=compile_from)
        except IreeError as e:
            return e

    jobs: list[Job] = [(n, dt, None) for n in EXACT + TOLERANT for dt in (False, True)]
    jobs.append(("seed_dispatch_creation", False, "dispatch-creation"))
    worker = os.environ.get("PYTEST_XDIST_WORKER", "gw0")
    order = jobs[::-1] if worker[2:].isdigit() and int(worker[2:]) % 2 else jobs
    with ThreadPoolExecutor(max_workers=2) as pool:
        done = dict(zip(order, pool.map(compile_cached, order), strict=True))

    def get(name: str, dt: bool, compile_from: str | None = None) -> bytes:
        out = done[(name, dt, compile_from)]
        if isinstance(out, IreeError):
            pytest.skip(f"iree-compile failed for {name}: {str(out).splitlines()[0]}")
        return out

    return get


def grid_inputs(types: list, seed: int) -> list[np.ndarray]:
    rng = np.random.default_rng(seed)
    out = []
    for t in types:
        dt = dtype_of(t)
        if dt.kind == "f":
            out.append((rng.integers(-128, 129, t.shape) / 256).astype(dt))
        elif dt.itemsize == 8:
            out.append(rng.integers(0, 8, t.shape).astype(dt))
        else:
            out.append(rng.integers(-8, 9, t.shape).astype(dt))
    return out


@pytest.mark.parametrize("data_tiling", [False, True], ids=["no_dt", "dt"])
@pytest.mark.parametrize("name", EXACT + TOLERANT)
def test_evaluator_matches_iree(name: str, data_tiling: bool, vmfbs: Callable[..., bytes]) -> None:
    module = parse_file(FIXTURES / f"{name}.mlir")
    func = select_function(module)
    fname = func.attributes["sym_name"].value  # type: ignore[attr-defined]
    inputs = grid_inputs(function_input_types(func), sum(map(ord, name)))
    theirs = run_module(vmfbs(name, data_tiling), fname, inputs)
    ours = evaluate(module, inputs)
    assert len(ours) == len(theirs)
    k = sum(reduction_length(op) for op in func.walk() if op is not func and reduction_length(op) > 1)
    for i, (o, t) in enumerate(zip(ours, theirs, strict=True)):
        assert o.shape == t.shape and o.dtype == t.dtype, f"result {i}: {o.dtype}{o.shape} vs {t.dtype}{t.shape}"
        if name in EXACT:
            assert np.array_equal(o, t), f"{name} result {i}: max diff {np.max(np.abs(o.astype(float) - t))}"
        else:
            scale = float(np.max(np.abs(o)))
            err = float(np.max(np.abs(o.astype(np.float64) - t)))
            tol = TOLERANCE_FACTOR * float(np.finfo(np.float32).eps) * math.sqrt(k) * scale
            assert err <= tol, f"{name} result {i}: error {err:.3g} > tolerance {tol:.3g} (K = {k})"


def _seed_numbers(inputs: list[np.ndarray]) -> list[np.ndarray]:
    return evaluate(parse_file(FIXTURES / "seed_iree313.mlir"), inputs)


@pytest.mark.parametrize("target", [None, *builtin_target_names()])
@pytest.mark.parametrize("name", ["seed_after_set_encoding", "seed_dispatch_creation"])
def test_iree_output_forms_equal_the_seed(name: str, target: str | None) -> None:
    inputs = grid_inputs(
        [t for t in function_input_types(select_function(parse_file(FIXTURES / "seed_iree313.mlir")))], 5
    )
    ours = evaluate(parse_file(FIXTURES / f"{name}.mlir"), inputs, target=target)
    for a, b in zip(ours, _seed_numbers(inputs), strict=True):
        assert np.array_equal(a, b)


def _host_runs_haswell_code() -> bool:
    """seed_dispatch_creation targets haswell: run its code only on x86-64 with AVX2/FMA/BMI2."""
    if platform.machine().lower() not in ("x86_64", "amd64"):
        return False
    try:
        flags = set(Path("/proc/cpuinfo").read_text().split())
    except OSError:
        return False
    return {"avx2", "fma", "bmi2", "f16c", "movbe"} <= flags


@pytest.mark.parametrize("target", [None, "x86_64-avx2"])
def test_dispatch_creation_form_matches_iree(target: str | None, vmfbs: Callable[..., bytes]) -> None:
    vmfb = vmfbs("seed_dispatch_creation", False, "dispatch-creation")
    if not _host_runs_haswell_code():
        pytest.skip("the fixture targets haswell; this host cannot run that code")
    module = parse_file(FIXTURES / "seed_dispatch_creation.mlir")
    inputs = grid_inputs(function_input_types(select_function(module)), 9)
    theirs = run_module(vmfb, "split_weight_matmuls", inputs)
    ours = evaluate(module, inputs, target=target)
    for a, b in zip(ours, theirs, strict=True):
        assert np.array_equal(a, b)
