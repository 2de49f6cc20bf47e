"""The text report scales to a model (issue 53 point 2), on the suite's Llama block and transformers' Llama.

* no line of the report (summary or ``--verbose``) is over 160 characters; no dispatch row, global or
  contraction is named ``Op`` (the e-graph's word for an op it does not model): they name what they hold;
* the default report summarises the plan (by kind) and lists every dispatch only with ``--verbose``;
* the contractions of IREE's own plan are read as IREE's plan really has them, and the diff names IREE's
  decision so, at the place in the user's file. The expected decisions were read by hand off IREE 3.13's
  ``iree-compile --compile-to=dispatch-creation --mlir-print-debuginfo`` output of each fixture (haswell,
  data tiling on), not produced by the code under test:

  llama_block/torch.mlir (one layer, weights inline; ``%N`` as IREE printed them)
    22:10  q_proj      LHS ``%4 = flow.tensor.encode`` (an encode dispatch); RHS the load-time global
                       ``@__hoisted_tensor_1x32x32xf32__encoded``
    157:11 o_proj      LHS: the attention dispatch ``%24`` returns it with ``operand_index = 0``
    187:11 down_proj   LHS: the up_proj dispatch ``%32`` (matmul 16x96x32 + silu*mul) returns it encoded
  hf_llama/torch.mlir (two layers, parameters named ``model.model.layers.N...``)
    129:11, 339:12  q_proj     LHS ``flow.tensor.encode`` (``%12``, ``%46``)
    263:11, 473:12  o_proj     LHS: the attention dispatch (``%32``, ``%65``) returns it encoded
    301:11, 511:12  up_proj    LHS ``flow.tensor.encode`` (``%38``, ``%71``)
    306:11, 516:12  down_proj  LHS: the up_proj dispatch (``%40``, ``%73``: matmul 16x192x64) returns it
    550:12          lm_head    LHS: the final norm dispatch ``%77`` (fpowi sum, rsqrt, set_encoding)
"""

from __future__ import annotations

import argparse
import re
from pathlib import Path

import pytest

from egg_dispatch.cli.explore import use_iree_baseline
from egg_dispatch.iree.lowering import iree_compiler_available
from egg_dispatch.pipeline import explore
from egg_dispatch.result.exploration import Exploration
from egg_dispatch.result.report import text, to_json

pytestmark = [
    pytest.mark.slow,  # two explorations at model size with IREE's own plan
    pytest.mark.skipif(not iree_compiler_available(), reason="IREE not installed (egg-dispatch[iree])"),
]

MODELS = Path(__file__).parent / "fixtures" / "models"
WIDTH = 160

# (location in the user's file, role, IREE's placement of the LHS): checked by hand, see the docstring.
IREE_LHS = {
    "llama_block": [
        ("torch.mlir:22:10", "in an encode dispatch"),
        ("torch.mlir:157:11", "encode fused into the attention dispatch"),
        ("torch.mlir:187:11", "encode fused into the matmul 16x96x32 dispatch"),
    ],
    "hf_llama": [
        ("torch.mlir:129:11", "in an encode dispatch"),
        ("torch.mlir:339:12", "in an encode dispatch"),
        ("torch.mlir:263:11", "encode fused into the attention dispatch"),
        ("torch.mlir:473:12", "encode fused into the attention dispatch"),
        ("torch.mlir:301:11", "in an encode dispatch"),
        ("torch.mlir:511:12", "in an encode dispatch"),
        ("torch.mlir:306:11", "encode fused into the matmul 16x192x64 dispatch"),
        ("torch.mlir:516:12", "encode fused into the matmul 16x192x64 dispatch"),
        ("torch.mlir:550:12", "encode fused into the rmsnorm dispatch"),
    ],
}
# hf_llama's weights are named parameters: each contraction's layer and role come from the key.
HF_ROLES = {
    "torch.mlir:129:11": (0, "q_proj"),
    "torch.mlir:339:12": (1, "q_proj"),
    "torch.mlir:263:11": (0, "o_proj"),
    "torch.mlir:516:12": (1, "down_proj"),
    "torch.mlir:550:12": (None, "lm_head"),
}


@pytest.fixture(scope="module", params=sorted(IREE_LHS))
def explored(request: pytest.FixtureRequest) -> tuple[str, Exploration]:
    """The fixture explored as ``egg-dispatch explore`` does it: IREE's own plan as the baseline."""
    name = request.param
    path = str(MODELS / name / "torch.mlir")
    result = explore(path, "x86_64-avx2", compile_check=False)
    args = argparse.Namespace(file=path, baseline="iree", assume=None, min_gain=0.05)
    use_iree_baseline(result, result.module, args)
    assert result.baseline is not None and "iree-compile" in result.baseline.label
    return name, result


def test_lines_are_short_and_name_what_they_hold(explored: tuple[str, Exploration]) -> None:
    _, e = explored
    for verbose in (False, True):
        report = text(e, verbose=verbose)
        long = [line for line in report.splitlines() if len(line) > WIDTH]
        assert not long, long
        assert not re.search(r"\bOp\b", report), report  # no dispatch row, global or contraction named Op
    data = to_json(e)
    for plan in (data["best"], data["baseline"]):
        assert all(d["holds"] and not re.search(r"\bOp\b", d["holds"]) for d in plan["dispatches"])
        assert all(g["holds"] and not re.search(r"\bOp\b", g["holds"]) for g in plan["globals"])
    holds = [d["holds"] for d in data["best"]["dispatches"]]
    assert any(h.startswith("attention") for h in holds) and any(h.startswith("rmsnorm") for h in holds), holds


def test_the_summary_lists_every_dispatch_only_when_verbose(explored: tuple[str, Exploration]) -> None:
    _, e = explored
    short, verbose = text(e), text(e, verbose=True)
    assert re.search(r"^dispatches by kind +ours +IREE *$", short, re.M), short
    assert re.search(r"^attention +\d+ +\d+ *$", short, re.M), short
    assert re.search(r"^data-tiled contractions +\d+ of \d+ +\d+ of \d+ *$", short, re.M), short
    assert "dispatch0 " not in short and "// chosen plan as MLIR" not in short
    assert re.search(r"^dispatch0 +\S", verbose, re.M) and "contractions of the chosen plan" in verbose


def test_irees_decisions_are_read_as_iree_made_them(explored: tuple[str, Exploration]) -> None:
    name, e = explored
    data = to_json(e)
    iree = {c["location"]: c for c in data["baseline"]["contractions"]}
    for where, lhs in IREE_LHS[name]:
        assert where in iree, sorted(filter(None, iree))
        assert iree[where]["data_tiled"] and iree[where]["placements"]["LHS"] == lhs, iree[where]
    assert iree[IREE_LHS[name][0][0]]["placements"]["RHS"] == "encoded at load"  # a load-time global
    # Every line of the diff about one of these contractions says what IREE does there.
    for d in data["differences_from_iree"]:
        for where, lhs in IREE_LHS[name]:
            if where in d["locations"] and (d["ours"].startswith("LHS ") or d["ours"] == "plain matmul"):
                assert d["iree"].startswith(lhs) or f"LHS {lhs}" in d["iree"], d
    if name == "hf_llama":
        for where, (layer, role) in HF_ROLES.items():
            c = iree[where]
            assert (c["layer"], c["role"]) == (layer, role), c
        # A decision both layers make is one line, over both layers.
        report = text(e)
        for d in data["differences_from_iree"]:
            if d["who"].startswith("q_proj"):
                assert d["layers"] == [0, 1], d
                line = r"^  layers 0-1 q_proj \(matmul 16x64x64\) \(torch\.mlir:129:11, 339:12\): "
                assert re.search(line, report, re.M), report
