"""The evaluator on dynamic programs: any concrete size, against IREE's own runtime at several sizes.

Ground truth: ``expected_iree_*.npz`` of the dynamic model fixtures, IREE's compiled module run with
``iree.runtime`` at three sizes each (attention_dyn and mlp_dyn: seq 1, 13 and 16; mlp_sym: batch x seq
1x8, 3x16 and 2x24, since its export promises seq a multiple of 8). ``evaluate`` must reproduce them
from IREE's input phase and from IREE's own dispatch-creation output (with encodings ignored, and
materialized physically for AVX2: packs of partial tiles at 1 and 13), within 1e-5 of the output's
magnitude (measured: 4e-7 at most; the sum order is all that differs).

Bad input: a size that contradicts the program's ``util.assume.int`` is an error naming the dimension
and the value (exit 2 from ``run`` / ``check``).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from egg_dispatch.cli import main
from egg_dispatch.evaluate import EvaluationError, evaluate
from egg_dispatch.evaluate.check import check_module
from egg_dispatch.evaluate.dynamic import SizeError
from egg_dispatch.evaluate.sizes import check_sizes, sizes_for
from egg_dispatch.mlir.parser import parse_file, parse_mlir
from egg_dispatch.mlir.symbolic import Domain
from tests.cli_process import cli_process

MODELS = Path(__file__).parent / "fixtures" / "models"
CASES = [
    *((m, f"s{s}") for m in ("attention_dyn", "mlp_dyn") for s in (1, 13, 16)),
    *(("mlp_sym", t) for t in ("1x8", "3x16", "2x24")),
]
FORMS = ("input.mlir", "dispatch_creation.avx2.mlir")
_parsed: dict[Path, object] = {}


def load_npz(path: Path) -> list[np.ndarray]:
    with np.load(path) as z:
        return [z[k] for k in sorted(z.files, key=lambda k: int(k[3:]))]


def module(path: Path):
    if path not in _parsed:
        _parsed[path] = parse_file(path)
    return _parsed[path]


@pytest.mark.parametrize("form", FORMS)
@pytest.mark.parametrize(("model", "size"), CASES)
@pytest.mark.parametrize("target", [None, "x86_64-avx2"], ids=["plain", "avx2"])
def test_matches_iree_runtime(model: str, size: str, form: str, target: str | None) -> None:
    folder = MODELS / model
    inputs = load_npz(folder / f"inputs_{size}.npz")
    want = load_npz(folder / f"expected_iree_{size}.npz")
    got = evaluate(module(folder / form), inputs, "main$async", target)
    for g, w in zip(got, want, strict=True):
        assert g.shape == w.shape
        assert float(np.max(np.abs(g - w))) <= 1e-5 * float(np.max(np.abs(w)))


@pytest.mark.slow
def test_run_takes_any_size(tmp_path: Path) -> None:
    path = MODELS / "mlp_dyn" / "input.mlir"
    for s in (2, 7):
        x = np.full((1, s, 32), 0.5, np.float32)
        np.save(tmp_path / "x.npy", x)
        proc = cli_process("run", str(path), f"--input=@{tmp_path / 'x.npy'}", f"--output=@{tmp_path / 'y.npy'}")
        assert proc.returncode == 0, proc.stderr
        assert np.load(tmp_path / "y.npy").shape == (1, s, 32)


@pytest.mark.slow
@pytest.mark.parametrize(
    ("shape", "fragment"),
    [
        ((2, 12, 32), "arg0.d1 = 12 contradicts util.assume.int (udiv = 8: not a multiple)"),
        ((9, 8, 32), "arg0.d0 = 9 contradicts util.assume.int (umax = 8)"),
        ((1, 520, 32), "arg0.d1 = 520 contradicts util.assume.int (umax = 512)"),
    ],
)
def test_size_contradicting_assume_int(tmp_path: Path, shape: tuple[int, ...], fragment: str) -> None:
    path = MODELS / "mlp_sym" / "input.mlir"
    x = np.zeros(shape, np.float32)
    with pytest.raises(SizeError, match=fragment.replace("(", r"\(").replace(")", r"\)")):
        evaluate(module(path), [x], "main$async")
    np.save(tmp_path / "x.npy", x)
    proc = cli_process("run", str(path), f"--input=@{tmp_path / 'x.npy'}")
    assert proc.returncode == 2
    assert fragment in proc.stderr and "Traceback" not in proc.stderr


def test_tie_shape_and_import_sizes_are_checked() -> None:
    text = """
    func.func @f(%a: tensor<?x4xf32>, %n: index) -> tensor<?x4xf32> {
      %b = flow.tensor.tie_shape %a : tensor<?x4xf32>{%n}
      return %b : tensor<?x4xf32>
    }
    """
    m = parse_mlir(text)
    x = np.ones((3, 4), np.float32)
    assert evaluate(m, [x, 3])[0].shape == (3, 4)
    with pytest.raises(EvaluationError, match=r"shape \[3, 4\], its tied sizes say \[5, 4\]"):
        evaluate(m, [x, 5])
    with pytest.raises(EvaluationError, match="expected tensor<\\?x4xf32>"):
        evaluate(m, [np.ones((3, 5), np.float32), 3])


def test_check_sizes_per_dim() -> None:
    # Nothing known: 1, a multiple of no tile, a multiple of every tile.
    assert sizes_for(Domain(1)) == [1, 13, 16]
    # util.assume.int's umin 8, udiv 8, umax 512: the nearest allowed values, at least two.
    assert sizes_for(Domain(8, 512, 8)) == [8, 16]
    assert sizes_for(Domain(1, 8)) == [1, 7, 8]
    assert sizes_for(Domain(values=(128,))) == [128]
    func = module(MODELS / "mlp_sym" / "input.mlir").function("main$async")
    runs = check_sizes(func)
    assert len(runs) == 3 and {r["arg0.d0"] for r in runs} == {1, 7, 8} and {r["arg0.d1"] for r in runs} == {8, 16}
    assert check_sizes(func, {"arg0.d1": Domain(values=(64, 128))})[0]["arg0.d1"] == 64


def test_check_runs_every_size() -> None:
    report = check_module(module(MODELS / "attention_dyn" / "dispatch_creation.avx2.mlir"), "x86_64-avx2")
    assert report.passed
    assert [r.sizes for r in report.results] == ["arg0.d1=1", "arg0.d1=13", "arg0.d1=16"]
    assert report.encodings > 0 and "at arg0.d1=13" in report.render()


def test_slices_are_bounds_checked_at_the_run_size() -> None:
    """A slice of a '?' dim in bounds at one size and not at another: NumPy would clip it silently."""
    m = parse_mlir("""
    func.func @f(%a: tensor<?x4xf32>, %o: index) -> tensor<2x3xf32> {
      %s = tensor.extract_slice %a[%o, 1] [2, 3] [1, 1] : tensor<?x4xf32> to tensor<2x3xf32>
      return %s : tensor<2x3xf32>
    }""")
    x = np.arange(32, dtype=np.float32).reshape(8, 4)
    got = evaluate(m, [x, np.asarray(5)])[0]
    assert np.array_equal(got, x[5:7, 1:4])
    with pytest.raises(
        EvaluationError, match="slice out of bounds in dim 0: offset 5, size 2, stride 1 on a dimension of 6"
    ):
        evaluate(m, [x[:6], np.asarray(5)])


def test_indices_into_a_dynamic_extent_are_seeded_inside_it(capsys: pytest.CaptureFixture[str]) -> None:
    """``explore --check`` on a gather from a table of '?' rows: its index input is seeded inside every
    size the check runs at, and every plan computes the input's numbers (exit 0, no internal error)."""

    path = Path(__file__).parent / "fixtures" / "dynamic" / "gather_dynamic_table.mlir"
    argv = ["explore", str(path), "--from", "input", "--baseline", "modelled", "--check", "--target", "x86_64-avx2"]
    assert main(argv) == 0
    captured = capsys.readouterr()
    report = captured.out + captured.err
    assert report.count("check ok") == 2 and "internal error" not in report, report
