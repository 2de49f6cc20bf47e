"""IREE's plan of a whole small model is a plan of the e-graph (issue 51, point 6).

hypothesis draws a model of ``benchmarks/random_models.py`` (one to three transformer layers: fused or
separate Q/K/V projections, RoPE, causal masks, QKV biases, gated or plain MLPs, RMS or layer norms,
residuals, token ids gathered from an embedding table, a tied or separate head; f32, f16 or dequantized
i8 weights), IREE 3.13 runs ``--compile-to=dispatch-creation`` with data tiling on it (target
x86_64-avx2, the flags ``benchmarks/bench_membership.py`` uses), and IREE's own plan must be one of the
e-graph's plans (``baseline.in_egraph``: every node of it an e-node whose operands lie in the e-classes of
IREE's operands; redundant work allowed).

The strategy leaves nothing out. (Until issue 51's seed 14 it left out f16 weights with separate Q/K/V
projections, no RoPE and ``linalg.batch_matmul`` attention: IREE's plan transposes the K projection's
result as one 2-d generic, 16x64 -> 64x16, on the encoded f32 x f16 accumulator, an identity layout on
AVX2, which ``noop`` folded before ``sink_unset`` could sink the unset; rules/sink_unset.egg condition 8
now sinks it folded or not, and tests/fixtures/random_model_14.mlir is that model.)

Counterexamples of the supported space are bugs: each becomes a fixture. Cost: a model is read, run
through IREE and explored in 1-3 s; the ``ci`` profile draws 10 (about 15 s), ``thorough`` 50.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from egg_dispatch.egraph.membership import NORMALIZATIONS
from egg_dispatch.egraph.rules import FAMILIES
from egg_dispatch.iree.tools import find_tool
from egg_dispatch.pipeline import explore, iree_plan, iree_plan_membership
from tests.hypothesis_profiles import examples

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "benchmarks"))
from random_models import Params, model, models, params_of  # noqa: E402

sys.path.remove(str(ROOT / "benchmarks"))

TARGET = "x86_64-avx2"
EXAMPLES = 10
"""Models the ``ci`` profile draws (each 1-3 s)."""

needs_iree = pytest.mark.skipif(find_tool("iree-compile") is None, reason="iree-compile not installed")


def supported_models() -> st.SearchStrategy[Params]:
    """``random_models.models()``: every model it draws (module docstring: nothing is left out)."""
    return models()


def _membership(
    params: Params, families: tuple[str, ...] | None = None, normalize: frozenset[str] = NORMALIZATIONS
) -> tuple[bool, tuple[str, ...]]:
    """Whether IREE's plan of ``params``'s model is in the e-graph (of ``families``' rules; all by default),
    and every decision of it the e-graph lacks."""
    source = model(params)
    families = families or FAMILIES
    result = explore(source, TARGET, baseline=False, extractor="greedy", families=families, compile_check=False)
    assert result.input is not None and result.input.iree_plan, "IREE's plan was not printed"
    plan = iree_plan(result.input.iree_plan, result.target, result.imported.function)
    m = iree_plan_membership(result, plan, normalize)
    assert m is not None, f"IREE's plan was not read: {plan.error}"
    return m.in_egraph, m.all_missing


@needs_iree
@pytest.mark.iree
@pytest.mark.slow
@settings(max_examples=examples(EXAMPLES), deadline=None)
@given(supported_models())
def test_irees_plan_of_a_random_model_is_in_the_egraph(params: Params) -> None:
    in_egraph, missing = _membership(params)
    assert in_egraph, (params, missing)


@needs_iree
@pytest.mark.iree
@pytest.mark.slow
def test_the_property_can_fail() -> None:
    """The property's question has a 'no' answer: a model it draws (seed 29's: GQA, RoPE, attention
    written as generic contractions, f16 weights, a gathered embedding) is in with every rule family,
    and not in without the fuse family, whose encodes fused into their producers' dispatches (through
    the heads' collapse_shape after the attention's contraction, rules/fuse_encode_linalg.egg) IREE's
    plan makes."""
    params = params_of(29)
    assert _membership(params) == (True, ())
    families = tuple(f for f in FAMILIES if f != "fuse")
    in_egraph, missing = _membership(params, families)
    assert not in_egraph and missing


@needs_iree
@pytest.mark.iree
@pytest.mark.slow
def test_an_identity_encode_dispatch_of_a_computed_value_is_the_value() -> None:
    """f16 weights with a fused projection, token ids in: IREE encodes the residual (the gather dispatch's result) as an
    f32 x f16 matmul's accumulator in an encode dispatch of its own (flow.tensor.encode), to a layout AVX2
    resolves to the identity. ``noop`` folds that set_encoding into the residual, so the e-graph has no
    encode dispatch of it; membership's ``load-time-noops`` reads the encode dispatch as the value (as
    for an argument or a constant). Without it the plan is out, and one miss is that encode dispatch."""
    params = Params(
        layers=1, weights="f16", embedding="gather", attention="batch_matmul", fused_qkv=True, rope=False, causal=False
    )
    assert _membership(params) == (True, ())
    in_egraph, missing = _membership(params, normalize=NORMALIZATIONS - {"load-time-noops"})
    assert not in_egraph
    assert any(m.startswith("no e-node Dispatch(SetEncoding(Dispatch, encoding(operand 2)))") for m in missing), missing
