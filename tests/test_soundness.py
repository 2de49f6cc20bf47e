"""Every plan the e-graph represents computes the input program's numbers.

hypothesis writes small programs (slices of constants and arguments, matmuls in both operand
layouts, elementwise consumers, fills); each goes through the initial plan, saturation with every
rule family, and enumeration; every enumerated plan is emitted as MLIR and evaluated by the NumPy
evaluator with physical encodings (pack / mmt4d / unpack) for two targets, against plain NumPy.
Plans that drop data tiling (``rules/untile.egg``) are checked on purpose: enumeration order reaches
them late, so they are enumerated from copies of the e-graph where the plain contraction is the only
choice, in every contraction and in the first one alone (mixed with the others' mmt4d).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from egg_dispatch.egraph.data import EGraphData, build_term
from egg_dispatch.egraph.enumerate import enumerate_plans
from egg_dispatch.egraph.importer import import_function
from egg_dispatch.egraph.rules import saturate
from egg_dispatch.emit.choice import normalize_choice
from egg_dispatch.emit.emitter import Emitter
from egg_dispatch.evaluate import evaluate
from egg_dispatch.mlir.parser import parse_mlir
from egg_dispatch.result.report import untiled
from egg_dispatch.start.initial_plan import initial_plan
from egg_dispatch.target.profile import load_target

TARGETS = [load_target("x86_64-avx2"), load_target("x86_64-avx512")]
PLANS_PER_TARGET = 6
UNTILED_PLANS_PER_VARIANT = 2
TRANSPOSED_B = (
    "indexing_maps = [affine_map<(d0, d1, d2) -> (d0, d2)>, affine_map<(d0, d1, d2) -> (d1, d2)>, "
    "affine_map<(d0, d1, d2) -> (d0, d1)>]"
)


def _dense(values: np.ndarray) -> str:
    rows = ", ".join("[" + ", ".join(f"{v:.4f}" for v in row) + "]" for row in values)
    return f"dense<[{rows}]> : tensor<{values.shape[0]}x{values.shape[1]}xf32>"


@st.composite
def programs(draw: st.DrawFn) -> tuple[str, list[tuple[tuple[int, ...], str]]]:
    """A function: W (constant or argument) cut into row slices, each slice times an argument."""
    k = draw(st.integers(1, 9))
    n = draw(st.integers(1, 12))
    n_slices = draw(st.integers(1, 3))
    rows = [draw(st.sampled_from([1, 2, 4, 5, 8, 16])) for _ in range(n_slices)]
    gap = draw(st.sampled_from([0, 0, 3]))
    total = sum(rows) + gap * (n_slices - 1)
    w_is_const = draw(st.booleans())
    transposed = draw(st.booleans())
    consumer = draw(st.sampled_from(["none", "bias", "relu"]))
    dequant = draw(st.booleans())  # W stored as f16 and widened by an extf generic per slice
    wt = "f16" if dequant else "f32"
    acc_value = draw(st.sampled_from(["0.0", "0.0", "0.5"]))
    rng = np.random.default_rng(draw(st.integers(0, 2**16)))
    args: list[tuple[tuple[int, ...], str]] = [] if w_is_const else [((total, k), wt)]
    rhs_shape = (n, k) if transposed else (k, n)
    args.append((rhs_shape, "f32"))
    if consumer == "bias":
        args.append(((n,), "f32"))
    lines = [f"  %zero = arith.constant {acc_value} : f32", "  %relu0 = arith.constant 0.0 : f32"]
    if w_is_const:
        lines.append(f"  %w = arith.constant {_dense(rng.integers(-8, 8, (total, k)) / 8)}".replace("xf32>", f"x{wt}>"))
    w, rhs, bias = ("%w", "%a0", "%a1") if w_is_const else ("%a0", "%a1", "%a2")
    results = []
    offset = 0
    for i, r in enumerate(rows):
        lines.append(
            f"  %s{i} = tensor.extract_slice {w}[{offset}, 0] [{r}, {k}] [1, 1] : "
            f"tensor<{total}x{k}x{wt}> to tensor<{r}x{k}x{wt}>"
        )
        if dequant:
            lines.append(f"  %h{i}e = tensor.empty() : tensor<{r}x{k}xf32>")
            lines.append(
                f"  %h{i} = linalg.generic {{indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, "
                f'affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]}} '
                f"ins(%s{i} : tensor<{r}x{k}xf16>) outs(%h{i}e : tensor<{r}x{k}xf32>) {{\n"
                f"  ^bb0(%p: f16, %q: f32):\n    %pf = arith.extf %p : f16 to f32\n    linalg.yield %pf : f32\n"
                f"  }} -> tensor<{r}x{k}xf32>"
            )
        lhs = f"%h{i}" if dequant else f"%s{i}"
        offset += r + gap
        lines.append(f"  %e{i} = tensor.empty() : tensor<{r}x{n}xf32>")
        lines.append(f"  %f{i} = linalg.fill ins(%zero : f32) outs(%e{i} : tensor<{r}x{n}xf32>) -> tensor<{r}x{n}xf32>")
        maps = TRANSPOSED_B if transposed else ""
        rhs_t = f"tensor<{rhs_shape[0]}x{rhs_shape[1]}xf32>"
        lines.append(
            f"  %m{i} = linalg.matmul {maps} ins({lhs}, {rhs} : tensor<{r}x{k}xf32>, {rhs_t}) "
            f"outs(%f{i} : tensor<{r}x{n}xf32>) -> tensor<{r}x{n}xf32>"
        )
        out = f"%m{i}"
        if consumer != "none":
            lines.append(f"  %o{i} = tensor.empty() : tensor<{r}x{n}xf32>")
            if consumer == "bias":
                lines.append(
                    f"  %c{i} = linalg.generic {{indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, "
                    f"affine_map<(d0, d1) -> (d1)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = "
                    f'["parallel", "parallel"]}} ins(%m{i}, {bias} : tensor<{r}x{n}xf32>, tensor<{n}xf32>) '
                    f"outs(%o{i} : tensor<{r}x{n}xf32>) {{\n  ^bb0(%x: f32, %b: f32, %y: f32):\n"
                    f"    %v = arith.addf %x, %b : f32\n    linalg.yield %v : f32\n  }} -> tensor<{r}x{n}xf32>"
                )
            else:
                lines.append(
                    f"  %c{i} = linalg.generic {{indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, "
                    f'affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]}} '
                    f"ins(%m{i} : tensor<{r}x{n}xf32>) outs(%o{i} : tensor<{r}x{n}xf32>) {{\n"
                    f"  ^bb0(%x: f32, %y: f32):\n    %v = arith.maximumf %x, %relu0 : f32\n"
                    f"    linalg.yield %v : f32\n  }} -> tensor<{r}x{n}xf32>"
                )
            out = f"%c{i}"
        results.append((out, r))
    sig = ", ".join(f"%a{i}: tensor<{'x'.join(map(str, s))}x{t}>" for i, (s, t) in enumerate(args))
    ret_types = ", ".join(f"tensor<{r}x{n}xf32>" for _, r in results)
    text = (
        f"func.func @prog({sig}) -> ({ret_types}) {{\n"
        + "\n".join(lines)
        + f"\n  return {', '.join(o for o, _ in results)} : {ret_types}\n}}\n"
    )
    return text, args


def untile_variants(g: EGraphData) -> Iterator[EGraphData]:
    """``g`` with untile's plain contraction the only choice of its class: in every such class, then in
    the first one alone (none when no unset_encoding survived ``noop``: identity layouts only)."""
    sites = [
        c for c in g.classes if g.is_term_class(c) and {"Contract", "UnsetEncoding"} <= {n.op for n in g.choices(c)}
    ]
    if not sites:
        return
    for chosen in [sites] + ([sites[:1]] if len(sites) > 1 else []):
        nodes = dict(g.nodes)
        for c in chosen:
            for nid in g.classes[c]:
                if nodes[nid].op != "Contract":
                    nodes[nid] = dataclasses.replace(nodes[nid], subsumed=True)
        yield dataclasses.replace(g, nodes=nodes)


@settings(max_examples=200, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.too_slow])
@given(programs())
def test_every_enumerated_plan_computes_the_input(program: tuple[str, list[tuple[tuple[int, ...], str]]]) -> None:
    text, arg_shapes = program
    module = parse_mlir(text, "generated.mlir")
    rng = np.random.default_rng(7)
    inputs = [(rng.integers(-16, 16, s) / 16).astype(np.float16 if t == "f16" else np.float32) for s, t in arg_shapes]
    reference = evaluate(module, inputs)
    imported = import_function(initial_plan(module))
    for target in TARGETS:
        graph, report = saturate(imported, target)
        assert report.saturated, report.render()
        data = EGraphData.from_serialized(graph.serialized())
        checked = 0
        for choice in enumerate_plans(data, PLANS_PER_TARGET):
            for materialized in (False, True):
                plan = Emitter(imported).emit(build_term(data, normalize_choice(data, choice, materialized)))  # type: ignore[arg-type]
                outputs = evaluate(plan, inputs, target=target)
                for got, want in zip(outputs, reference, strict=True):
                    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)
                checked += 1
        assert checked > 0, f"no plan for {target.name}:\n{text}"
        untiled_checked = 0
        for variant in untile_variants(data):
            for choice in enumerate_plans(variant, UNTILED_PLANS_PER_VARIANT):
                assert untiled(data, choice)
                for materialized in (False, True):
                    term = build_term(variant, normalize_choice(variant, choice, materialized))
                    plan = Emitter(imported).emit(term)  # type: ignore[arg-type]
                    outputs = evaluate(plan, inputs, target=target)
                    for got, want in zip(outputs, reference, strict=True):
                        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)
                    untiled_checked += 1
        tiled = any(n.op == "UnsetEncoding" for c in data.classes if data.is_term_class(c) for n in data.choices(c))
        assert untiled_checked > 0 or not tiled, f"no plan drops data tiling on {target.name}:\n{text}"
