"""Elementwise consumers on the encoded accumulator (``rules/sink_unset.egg``), end to end.

A bias / ReLU generic reading a contraction's result may run on the encoded (packed) result before the
``unset_encoding``, its bias encoded to match, and the next contraction's ``set_encoding`` then fused
after the unset in the same dispatch (``rules/fuse_elementwise.egg``) or cancelled against it (``rules/noop.egg``):
IREE's own MLP plan. Here: the numbered refusals of the lit tests' ``@dont_`` cases are the conditions
their comments name; the modelled IREE baseline has IREE 3.13's own plan's dispatches and globals on
MLPs (``iree-compile --compile-to=dispatch-creation``); explore chooses the form where the model says
it is cheaper (square tiles: no unpack + pack between the layers) and names it in the report and
``--explain``; every plan running a consumer on the encoded accumulator, in two MLP layers with shapes
that are no tile multiple, computes the input's numbers on AVX2 and AVX-512 (NumPy, physical
encodings, both spellings); and such plans, emitted with ``--emit iree``, compile with
``iree-compile --compile-from=dispatch-creation`` and reproduce IREE's own module's outputs.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest

from egg_dispatch.egraph.data import EGraphData, build_term
from egg_dispatch.egraph.enumerate import enumerate_plans
from egg_dispatch.egraph.importer import import_function
from egg_dispatch.egraph.rules import FAMILIES, saturate
from egg_dispatch.egraph.sink_facts import sink_sites
from egg_dispatch.emit.choice import normalize_choice
from egg_dispatch.emit.emitter import Emitter
from egg_dispatch.emit.iree.module import emit_iree, iree_cpu, runnable_here
from egg_dispatch.evaluate import evaluate
from egg_dispatch.iree.tools import compile_module, iree_available, run_module
from egg_dispatch.mlir.ir import Module
from egg_dispatch.mlir.parser import parse_mlir
from egg_dispatch.mlir.printer import print_mlir
from egg_dispatch.pipeline import explore, iree_plan
from egg_dispatch.result.explain import explain
from egg_dispatch.result.exploration import Exploration
from egg_dispatch.result.report import differences, features, sunk, text, to_json
from egg_dispatch.start.initial_plan import initial_plan
from egg_dispatch.target.profile import load_target

pytestmark = pytest.mark.slow  # IREE builds, explorations at model size or long properties (docs/testing.md)

HERE = Path(__file__).parent
LIT = HERE / "rules" / "sink_unset"
MLP2 = HERE / "fixtures" / "mlp2.mlir"
SQUARE = load_target(str(HERE / "rules" / "noop" / "square_tiles.json"))
TARGETS = ["x86_64-avx2", "x86_64-avx512"]
NEEDS_IREE = pytest.mark.skipif(not iree_available(), reason="IREE not installed (egg-dispatch[iree])")


def mlp(m: int, k: int, h: int, *, const_weights: bool = False, seed: int = 0) -> str:
    """relu(relu(x @ w1 + b1) @ w2 + b2), x [m, k], hidden h; the biases constants, the weights
    arguments (or constants)."""
    rng = np.random.default_rng(seed)

    def dense(a: np.ndarray) -> str:
        return "dense<[" + ", ".join(f"{v:.4f}" for v in a.ravel()) + "]>"

    def dense2(a: np.ndarray) -> str:
        return "dense<[" + ", ".join("[" + ", ".join(f"{v:.4f}" for v in r) + "]" for r in a) + "]>"

    b1, b2 = (rng.integers(-8, 8, n) / 8 for n in (h, k))
    sig = f"%x: tensor<{m}x{k}xf32>"
    pre = ""
    if const_weights:
        w1, w2 = (rng.integers(-8, 8, s) / 16 for s in ((k, h), (h, k)))
        pre = (
            f"  %w1 = arith.constant {dense2(w1)} : tensor<{k}x{h}xf32>\n"
            f"  %w2 = arith.constant {dense2(w2)} : tensor<{h}x{k}xf32>\n"
        )
    else:
        sig += f", %w1: tensor<{k}x{h}xf32>, %w2: tensor<{h}x{k}xf32>"
    maps = (
        "indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d1)>, "
        'affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]'
    )
    layer = (
        "  %e{i} = tensor.empty() : tensor<{m}x{n}xf32>\n"
        "  %f{i} = linalg.fill ins(%zero : f32) outs(%e{i} : tensor<{m}x{n}xf32>) -> tensor<{m}x{n}xf32>\n"
        "  %m{i} = linalg.matmul ins({a}, %w{i} : tensor<{m}x{kk}xf32>, tensor<{kk}x{n}xf32>)\n"
        "      outs(%f{i} : tensor<{m}x{n}xf32>) -> tensor<{m}x{n}xf32>\n"
        "  %h{i} = linalg.generic {{" + maps + "}} ins(%m{i}, %b{i} : tensor<{m}x{n}xf32>, tensor<{n}xf32>)\n"
        "      outs(%e{i} : tensor<{m}x{n}xf32>) {{\n"
        "  ^bb0(%p: f32, %q: f32, %o: f32):\n"
        "    %s = arith.addf %p, %q : f32\n"
        "    %r = arith.maximumf %s, %zero : f32\n"
        "    linalg.yield %r : f32\n"
        "  }} -> tensor<{m}x{n}xf32>\n"
    )
    return (
        f"func.func @mlp({sig}) -> tensor<{m}x{k}xf32> {{\n{pre}"
        f"  %b1 = arith.constant {dense(b1)} : tensor<{h}xf32>\n"
        f"  %b2 = arith.constant {dense(b2)} : tensor<{k}xf32>\n"
        "  %zero = arith.constant 0.0 : f32\n"
        + layer.format(i=1, m=m, n=h, kk=k, a="%x")
        + layer.format(i=2, m=m, n=k, kk=h, a="%h1")
        + f"  return %h2 : tensor<{m}x{k}xf32>\n}}\n"
    )


def inputs_for(module: Module, seed: int = 5) -> list[np.ndarray]:
    rng = np.random.default_rng(seed)
    args = module.functions()[0].regions[0].entry.args
    return [(rng.integers(-8, 8, a.type.shape) / 8).astype(np.float32) for a in args]  # type: ignore[attr-defined]


def sink_variants(g: EGraphData) -> Iterator[EGraphData]:
    """``g`` with the generic on the encoded accumulator the only choice of its class, in every such
    class and in the first one alone."""

    def on_encoded(n) -> bool:
        return n.op in ("UnsetEncoding", "Unpack") and any(m.op == "Generic" for m in g.choices(n.children[0]))

    sites = [c for c in g.classes if g.is_term_class(c) and any(on_encoded(n) for n in g.choices(c))]
    for chosen in ([sites] + ([sites[:1]] if len(sites) > 1 else [])) if sites else []:
        nodes = dict(g.nodes)
        for c in chosen:
            for nid in g.classes[c]:
                if not on_encoded(nodes[nid]):
                    nodes[nid] = dataclasses.replace(nodes[nid], subsumed=True)
        yield dataclasses.replace(g, nodes=nodes)


# ----------------------------------------------------------------------------- the legality conditions
def _dont_cases() -> list[tuple[str, str, str]]:
    """(file, function, condition number) of every @dont_ case of the lit tests, from its comment."""
    out = []
    for path in sorted(LIT.glob("*.mlir")):
        for chunk in path.read_text().split("// -----\n"):
            cond = re.search(r"// Condition (\d+)", chunk)
            for name in re.findall(r"func\.func @(dont_\w+)", chunk):
                assert cond is not None, f"{path.name}: @{name} names no condition"
                out.append((path.name, name, cond.group(1)))
    return out


@pytest.mark.parametrize(("path", "name", "cond"), _dont_cases(), ids=lambda x: str(x))
def test_each_refused_case_fails_the_condition_it_names(path: str, name: str, cond: str) -> None:
    chunk = next(c for c in (LIT / path).read_text().split("// -----\n") if f"@{name}(" in c)
    module = parse_mlir(chunk, path)
    if "--no-initial-plan" not in (LIT / path).read_text().splitlines()[0]:
        module = initial_plan(module)
    sites = sink_sites(import_function(module, name))
    if cond == "8":  # the layout is the rule's own condition: the site itself is legal
        assert sites and all(s.refusal is None for s in sites)
        return
    assert sites, f"@{name}: no consumer of an encoded accumulator found"
    assert sites[0].refusal is not None and sites[0].refusal.startswith(f"{cond}."), sites[0]


def test_dont_cases_cover_every_condition() -> None:
    """Every refusing condition has a @dont_ case; 6 (a body reading linalg.index) refuses nothing: it
    sinks, reading logical indices (``sink_elementwise.mlir``, ``sink_unset_dynamic.mlir``)."""
    assert {c for _, _, c in _dont_cases()} == {str(i) for i in range(1, 9)} - {"6"}


# ------------------------------------------------------------------------- IREE's own plan, modelled
BASELINE_PROGRAMS = {
    "mlp2": MLP2.read_text(),
    "mlp_64x512x2048": mlp(64, 512, 2048),
    "mlp_padded_5x7x20": mlp(5, 7, 20),
}


@NEEDS_IREE
@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("program", sorted(BASELINE_PROGRAMS))
def test_modelled_baseline_is_iree_own_plan(program: str, target: str) -> None:
    """The modelled IREE baseline, picked from our e-graph, has the dispatches (in order, with their ops)
    and the globals of IREE 3.13's own plan: each bias add + ReLU on the encoded accumulator, each bias a
    const-evaluated encoded global, the next layer's encode fused after the unset in the same dispatch."""
    src = BASELINE_PROGRAMS[program]
    e = explore(src, target)
    own = iree_plan(src, target)
    assert e.baseline is not None and own.candidate is not None
    ours = [d.ops for d in e.baseline.plan.dispatches]
    theirs = [d.ops for d in own.candidate.plan.dispatches]
    assert ours == theirs
    assert len(e.baseline.plan.globals) == len(own.candidate.plan.globals)
    assert len(sunk(e.baseline.mlir)) == 2 == len(sunk(own.candidate.mlir))
    assert ["Fill", "Contract", "Generic", "UnsetEncoding", "SetEncoding"] in ours
    assert e.saturation.matches.get("sink-unset-through-elementwise", 0) == 2
    assert e.saturation.matches.get("fuse-encode-into-producer-dispatch-lhs", 0) >= 1


def test_baseline_keeps_a_multi_use_result_unsunk() -> None:
    """IREE sinks only a single-use unset_encoding: with the first matmul's result also returned, the
    modelled baseline keeps that consumer after its unset (IREE 3.13 puts it in a dispatch of its own)."""
    src = mlp(8, 16, 32).replace("-> tensor<8x16xf32> {", "-> (tensor<8x16xf32>, tensor<8x32xf32>) {")
    src = src.replace("  return %h2 : tensor<8x16xf32>", "  return %h2, %m1 : tensor<8x16xf32>, tensor<8x32xf32>")
    e = explore(src, "x86_64-avx2", start="input")
    assert e.baseline is not None
    assert len(sunk(e.baseline.mlir)) == 1  # the second layer's, not the first


# ----------------------------------------------------------------------------- chosen by cost, reported
@pytest.fixture(scope="module")
def square() -> Exploration:
    """Square 8x8x8 tiles: the result layout is the next LHS layout, so with the consumer on the encoded
    accumulator the unset + set between the layers cancel (no unpack, no pack). untile is left out: at
    this size dropping data tiling would win on this profile's peaks, and that is another decision."""
    families = tuple(f for f in FAMILIES if f != "untile")
    return explore(mlp(64, 128, 256), SQUARE, start="input", families=families)


def test_explore_chooses_the_encoded_consumer_when_it_is_cheaper(square: Exploration) -> None:
    assert len(sunk(square.best.mlir)) >= 1
    first = square.best.plan.dispatches
    assert any(d.ops[:3] == ["Fill", "Contract", "Generic"] and "UnsetEncoding" not in d.ops for d in first)
    assert "sink_unset" in features(square.best)
    assert all(r.ok for r in square.check())


def test_explain_and_report_name_the_decision(square: Exploration) -> None:
    why = explain(square)
    assert "elementwise consumers of contractions (sink_unset):" in why
    assert re.search(
        r"- linalg.generic #1 \(Generic 64x256\): chosen on the encoded accumulator, its unset_encoding cancelled",
        why,
    )
    assert to_json(square)["egraph"]["rule_matches"]["sink-unset-through-elementwise"] == 2
    e = explore(MLP2, "x86_64-avx2", start="input")  # IREE sinks both consumers; at 4x16 ours does not
    assert not sunk(e.best.mlir)
    assert e.baseline is not None and len(sunk(e.baseline.mlir)) == 2
    line = "- sink_unset: elementwise consumer run on the encoded accumulator (unset_encoding sunk below it)"
    assert line + " (IREE only)" in differences(e)
    assert line in text(e)
    why = explain(e)
    assert "- linalg.generic #1 (Generic 4x32): chosen after the unset_encoding" in why
    assert "held     on the encoded accumulator" in why


def test_explain_gives_the_refused_condition() -> None:
    chunk = next(
        c for c in (LIT / "dont_sink.mlir").read_text().split("// -----\n") if "@dont_sink_with_constant_map(" in c
    )
    why = explain(explore(chunk, "x86_64-avx2", start="input"))
    assert "after the unset_encoding; refused  sink_unset: 2. an indexing map is not a projected permutation" in why


# ------------------------------------------------------------------------------------------ soundness
SOUNDNESS_PROGRAMS = {
    "padded_args": mlp(5, 7, 20),
    "padded_const": mlp(3, 9, 12, const_weights=True, seed=1),
    "tile_multiple": mlp(8, 16, 32, seed=2),
}


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("program", sorted(SOUNDNESS_PROGRAMS))
def test_every_plan_with_an_encoded_consumer_computes_the_input(program: str, target: str) -> None:
    """Two layers; the consumer on the encoded accumulator in both or in the first alone, with every
    placement of the bias's encode and of the next layer's encode the e-graph holds (enumerated), at the
    encoding level and materialized (pack / mmt4d / generic on the tiles / unpack), against plain NumPy."""
    module = parse_mlir(SOUNDNESS_PROGRAMS[program], f"{program}.mlir")
    inputs = inputs_for(module)
    reference = evaluate(module, inputs)
    tgt = load_target(target)
    imported = import_function(initial_plan(module))
    graph, report = saturate(imported, tgt)
    assert report.saturated
    data = EGraphData.from_serialized(graph.serialized())
    checked = 0
    forms: set[tuple[str, ...]] = set()
    for variant in sink_variants(data):
        for choice in enumerate_plans(variant, 12):
            for materialized in (False, True):
                plan = Emitter(imported).emit(build_term(variant, normalize_choice(variant, choice, materialized)))  # type: ignore[arg-type]
                if not materialized:
                    assert sunk(plan)
                    forms.add(tuple(sorted(op.name for op in plan.walk() if op.name.startswith(("util.init", "flow")))))
                for got, want in zip(evaluate(plan, inputs, target=tgt), reference, strict=True):
                    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)
                checked += 1
    assert checked >= 8 and len(forms) >= 2


def test_cancelled_unset_and_set_compute_the_input(square: Exploration) -> None:
    """With square tiles the chosen plan feeds the encoded consumer's result straight to the next matmul
    (noop's cancel): its numbers, physically packed, are the input's."""
    assert not any(
        op.name == "iree_encoding.set_encoding"
        and op.operands[0].owner is not None
        and getattr(op.operands[0].owner, "name", "") == "linalg.generic"
        for op in square.best.mlir.walk()
    )
    module = parse_mlir(mlp(64, 128, 256), "square.mlir")
    inputs = inputs_for(module)
    for got, want in zip(evaluate(square.best.mlir, inputs, target=SQUARE), evaluate(module, inputs), strict=True):
        np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4)


# ---------------------------------------------------------------------------------------- real IREE
def _iree_plans(src: str, target: str) -> list[tuple[str, Module]]:
    """Plans with the consumer on the encoded accumulator: the modelled baseline (IREE's own shape), and
    one with the bias packed inside the matmul's dispatch (an alternative IREE does not make)."""
    e = explore(src, target, start="input")
    assert e.baseline is not None and sunk(e.baseline.mlir)
    out = [("baseline", e.baseline.mlir)]
    imported = e.imported
    for variant in sink_variants(e.data):
        for choice in enumerate_plans(variant, 40):
            plan = Emitter(imported).emit(build_term(variant, normalize_choice(variant, choice, False)))  # type: ignore[arg-type]
            in_dispatch = [
                op
                for region in plan.walk()
                if region.name == "flow.dispatch.region"
                for op in region.walk()
                if op.name == "iree_encoding.set_encoding" and getattr(op.operands[0].type, "rank", 0) == 1
            ]
            if in_dispatch:
                return [*out, ("bias packed in the dispatch", plan)]
    return out


@NEEDS_IREE
@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("program", ["mlp2", "padded"])
def test_iree_compiles_and_runs_the_encoded_consumer(program: str, target: str) -> None:
    """The --emit iree form (and its materialized spelling: the generic on the packed tiles) of plans with
    the consumer on the encoded accumulator compiles with iree-compile --compile-from=dispatch-creation and
    computes what IREE's own module computes."""
    src = MLP2.read_text() if program == "mlp2" else mlp(5, 7, 20)
    module = parse_mlir(src, f"{program}.mlir")
    inputs = inputs_for(module)
    cpu = iree_cpu(target).cpu
    run = runnable_here(target)[0]
    want = (
        run_module(
            compile_module(src, data_tiling=True, target_cpu=cpu), "mlp" if program != "mlp2" else "mlp2", inputs
        )
        if run
        else None
    )
    plans = _iree_plans(src, target)
    assert len(plans) == 2, [label for label, _ in plans]
    for label, plan in plans:
        for materialize in (False, True):
            text_ = emit_iree(plan, target, materialize=materialize)
            assert materialize or "iree_encoding.unset_encoding" in text_
            vmfb = compile_module(text_, data_tiling=False, target_cpu=cpu, compile_from="dispatch-creation")
            if want is None:
                continue
            got = run_module(vmfb, "mlp" if program != "mlp2" else "mlp2", inputs)
            for a, b in zip(got, want, strict=True):
                np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-5, err_msg=f"{label}, materialize={materialize}")
    assert print_mlir(plans[0][1])  # printable (the report shows it)
