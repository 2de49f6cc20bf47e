"""The fused-pack footprint model against what IREE's compiler actually accepts.

``tests/fixtures/probes/fused_pack_legality.json`` records iree-compile 3.13 on single matmul dispatches
with the LHS, the RHS or both packed inside (and the unpack fused or not), for AVX2 and AVX-512 (its
``about`` says how). The model must refuse every combination IREE rejected (it may refuse more: it is
conservative). With IREE installed, a few of those dispatches are compiled again here, so the recorded
table cannot drift from the compiler the tests use.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from egg_dispatch.egraph.facts import fused_footprint_legal
from egg_dispatch.target.layout import packed_nbytes, resolve_layout
from egg_dispatch.target.profile import load_target

PROBES = json.loads((Path(__file__).parent / "fixtures" / "probes" / "fused_pack_legality.json").read_text())
MAPS = ((0, 2), (1, 2), (0, 1))
TYPES = ("f32", "f32", "f32")


def model_says_legal(row: dict) -> bool:
    target = load_target(row["target"])
    sizes = (row["m"], row["n"], row["k"])
    shapes = ((row["m"], row["k"]), (row["n"], row["k"]), (row["m"], row["n"]))
    layouts = [resolve_layout(target, i, TYPES, MAPS, sizes) for i in range(3)]
    nbytes = [packed_nbytes(s, 4, lay) for s, lay in zip(shapes, layouts, strict=True)]
    packed = [nbytes[0]] * row["lhs_packed"] + [nbytes[1]] * row["rhs_packed"]
    return fused_footprint_legal(target, packed, nbytes[2])


@pytest.mark.parametrize("row", [r for r in PROBES["rows"] if r["iree"] != "ok"], ids=str)
def test_every_dispatch_iree_rejects_is_refused(row: dict) -> None:
    assert not model_says_legal(row), f"the model accepts what iree-compile rejected: {row}"


def test_the_model_is_not_vacuous() -> None:
    """It accepts a good part of what IREE compiles (a model refusing everything would pass the test above)."""
    ok = [r for r in PROBES["rows"] if r["iree"] == "ok" and (r["lhs_packed"] or r["rhs_packed"])]
    accepted = sum(model_says_legal(r) for r in ok)
    assert accepted >= len(ok) // 2, f"{accepted} of {len(ok)} compiling dispatches accepted"


def _iree_compile() -> str | None:
    local = Path(sys.executable).parent / "iree-compile"
    return str(local) if local.exists() else shutil.which("iree-compile")


@pytest.mark.skipif(_iree_compile() is None, reason="IREE not installed")
@pytest.mark.parametrize(
    ("target", "m", "n", "k", "lhs", "rhs"),
    [
        ("x86_64-avx512", 16, 128, 64, True, True),
        ("x86_64-avx2", 8, 64, 64, True, True),
        ("x86_64-avx2", 16, 32, 32, True, True),
    ],
)
def test_recorded_outcomes_still_hold(target: str, m: int, n: int, k: int, lhs: bool, rhs: bool) -> None:
    """Recompile three recorded dispatches through the project's own emitter (explore --emit iree of a
    program whose only plan fuses those packs) and compare the outcome with the table."""
    row = next(
        r
        for r in PROBES["rows"]
        if (r["target"], r["m"], r["n"], r["k"], r["lhs_packed"], r["rhs_packed"], r["unpack_fused"])
        == (target, m, n, k, lhs, rhs, True)
    )
    from egg_dispatch.emit.iree.module import emit_iree
    from egg_dispatch.mlir.parser import parse_mlir
    from egg_dispatch.start.initial_plan import initial_plan

    text = f"""func.func @mm(%x: tensor<{m}x{k}xf32>, %w: tensor<{n}x{k}xf32>) -> tensor<{m}x{n}xf32> {{
  %z = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<{m}x{n}xf32>
  %f = linalg.fill ins(%z : f32) outs(%e : tensor<{m}x{n}xf32>) -> tensor<{m}x{n}xf32>
  %r = linalg.matmul indexing_maps = [affine_map<(d0, d1, d2) -> (d0, d2)>, affine_map<(d0, d1, d2) -> (d1, d2)>,
    affine_map<(d0, d1, d2) -> (d0, d1)>] ins(%x, %w : tensor<{m}x{k}xf32>, tensor<{n}x{k}xf32>)
    outs(%f : tensor<{m}x{n}xf32>) -> tensor<{m}x{n}xf32>
  return %r : tensor<{m}x{n}xf32>
}}"""
    plan = initial_plan(parse_mlir(text))  # IREE's start state: both set_encodings inside the dispatch
    proc = subprocess.run(
        [_iree_compile(), "-", "--compile-from=dispatch-creation", "-o", "/dev/null"],
        input=emit_iree(plan, target).encode(),
        capture_output=True,
        timeout=300,
    )
    compiled = proc.returncode == 0
    assert compiled == (row["iree"] == "ok"), proc.stderr.decode()[-2000:]
