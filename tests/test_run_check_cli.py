"""``egg-dispatch run`` and ``egg-dispatch check``: inputs and outputs, errors, and a check that fails."""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest

from egg_dispatch.cli import main
from egg_dispatch.evaluate import encoding as encoding_mod
from egg_dispatch.evaluate.check import check_module, tolerance
from egg_dispatch.mlir.ir import ScalarType
from egg_dispatch.mlir.parser import parse_file
from egg_dispatch.target.profile import builtin_target_names

FIXTURES = Path(__file__).parent / "fixtures"
SEED = str(FIXTURES / "seed_iree313.mlir")
SEED_ENCODED = FIXTURES / "seed_after_set_encoding.mlir"


def _weight() -> np.ndarray:
    """The seed's weight from its documented formula: ((5i + 3j) mod 11 - 5) / 4."""
    i, j = np.meshgrid(np.arange(16), np.arange(8), indexing="ij")
    return (((5 * i + 3 * j) % 11 - 5) / 4).astype(np.float32)


def _values(line: str) -> np.ndarray:
    """Numbers of a printed buffer view ``8x8xf32=[1 2][3 4]``."""
    return np.array([float(t) for t in re.split(r"[\s\[\]]+", line.split("=", 1)[1]) if t])


def test_run_npy_in_and_out(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    rng = np.random.default_rng(0)
    a, b = ((rng.integers(-8, 9, (8, 8)) / 8).astype(np.float32) for _ in range(2))
    np.save(tmp_path / "a.npy", a)
    np.save(tmp_path / "b.npy", b)
    out0, out1 = tmp_path / "o0.npy", tmp_path / "o1.npy"
    argv = ["run", SEED, f"--input=@{tmp_path / 'a.npy'}", f"--input=@{tmp_path / 'b.npy'}"]
    assert main([*argv, f"--output=@{out0}", f"--output=@{out1}"]) == 0
    w = _weight()
    np.testing.assert_array_equal(np.load(out0), w[0:8] @ a.T)
    np.testing.assert_array_equal(np.load(out1), w[8:16] @ b.T)
    assert "written to" in capsys.readouterr().out


def test_run_inline_inputs_print_like_iree(capsys: pytest.CaptureFixture[str]) -> None:
    ones = "8x8xf32=" + " ".join(["1"] * 64)
    assert main(["run", SEED, f"--input={ones}", "--input=8x8xf32=0.5", "--target=x86_64-avx512"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0] == "EXEC @split_weight_matmuls"
    assert lines[1] == "result[0]: hal.buffer_view" and lines[3] == "result[1]: hal.buffer_view"
    assert lines[2].startswith("8x8xf32=[") and lines[2].count("[") == 8
    w = _weight()
    np.testing.assert_array_equal(_values(lines[2]).reshape(8, 8), w[0:8] @ np.ones((8, 8)).T)
    np.testing.assert_array_equal(_values(lines[4]).reshape(8, 8), w[8:16] @ np.full((8, 8), 0.5).T)


def test_run_scalar_and_bracketed_inputs(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    src = tmp_path / "axpy.mlir"
    src.write_text(
        "func.func @axpy(%s: f32, %x: tensor<2x2xf32>) -> tensor<2x2xf32> {\n"
        "  %e = tensor.empty() : tensor<2x2xf32>\n"
        "  %f = linalg.fill ins(%s : f32) outs(%e : tensor<2x2xf32>) -> tensor<2x2xf32>\n"
        "  %y = arith.addf %f, %x : tensor<2x2xf32>\n"
        "  return %y : tensor<2x2xf32>\n}\n"
    )
    assert main(["run", str(src), "--input=f32=1.5", "--input=2x2xf32=[1 2][3 4]"]) == 0
    assert capsys.readouterr().out.splitlines()[2] == "2x2xf32=[2.5 3.5][4.5 5.5]"


@pytest.mark.parametrize(
    ("inputs", "message"),
    [
        (["--input=2x2xf32=1 2 3 4", "--input=8x8xf32=0"],
         "input 0 of @split_weight_matmuls: expected tensor<8x8xf32>, got 2x2xf32"),
        (["--input=8x8xf16=1", "--input=8x8xf32=0"], "expected tensor<8x8xf32>, got 8x8xf16"),
        (["--input=8x8xf32=1"], "takes 2 inputs, got 1"),
        (["--input=8x8xf32=1 2", "--input=8x8xf32=0"], "2 values for a 8x8 f32"),
        (["--input=eight", "--input=8x8xf32=0"], "expected @file.npy"),
        (["--input=@missing.npy", "--input=8x8xf32=0"], "no such file"),
    ],
)  # fmt: skip
def test_run_bad_inputs_exit_2(inputs: list[str], message: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["run", SEED, *inputs]) == 2
    err = capsys.readouterr().err.strip()
    assert message in err and "\n" not in err


def test_run_unsupported_op_exit_2(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    src = tmp_path / "bad.mlir"
    src.write_text(
        "func.func @f(%x: tensor<2xf32>) -> tensor<2xf32> {\n"
        '  %y = "foo.bar"(%x) : (tensor<2xf32>) -> tensor<2xf32>\n'
        "  return %y : tensor<2xf32>\n}\n"
    )
    assert main(["run", str(src), "--input=2xf32=1 2"]) == 2
    assert capsys.readouterr().err.strip() == f"{src}:2:3: error: 'foo.bar': the evaluator has no semantics for this op"


@pytest.mark.parametrize("target", builtin_target_names())
def test_check_passes_on_seed_after_set_encoding(target: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["check", str(SEED_ENCODED), f"--target={target}", "--seed=3"]) == 0
    out = capsys.readouterr().out
    assert (
        "4 encoding op(s) (set_encoding, flow.tensor.encode) materialized physically" in out
        and out.rstrip().endswith("PASS")
    )


def test_check_reports_inputs_without_encodings(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["check", SEED]) == 0
    assert "no set_encoding in the input" in capsys.readouterr().out


def _drop_last_row(real: Callable[..., np.ndarray]) -> Callable[..., np.ndarray]:
    """kernels.pack, but the source's last row is zeroed first: a pack that loses data."""

    def broken(src: np.ndarray, *args: object, **kw: object) -> np.ndarray:
        src = src.copy()
        src[-1] = 0
        return real(src, *args, **kw)

    return broken


def test_check_fails_when_pack_drops_a_row(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    module = parse_file(SEED_ENCODED)
    assert check_module(module, "x86_64-avx2", seed=1).passed
    monkeypatch.setattr(encoding_mod, "pack", _drop_last_row(encoding_mod.pack))
    report = check_module(module, "x86_64-avx2", seed=1)
    assert not report.passed
    assert all(r.max_abs_error > 0 for r in report.results)
    assert main(["check", str(SEED_ENCODED), "--target=x86_64-avx2", "--seed=1"]) == 1
    assert "FAILED" in capsys.readouterr().out


def test_tolerance_scales_with_dtype_and_reduction() -> None:
    f32, f16, i32 = ScalarType("f32"), ScalarType("f16"), ScalarType("i32")
    assert tolerance(f32, 64) == pytest.approx(4 * 2.0**-23 * 8)
    assert tolerance(f16, 1) == pytest.approx(4 * 2.0**-10)
    assert tolerance(i32, 1024) == 0.0
