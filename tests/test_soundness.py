"""Every plan the e-graph represents computes the input program's numbers.

hypothesis writes small programs (slices of constants and arguments, matmuls in both operand
layouts, elementwise consumers, fills); each goes through the initial plan, saturation with every
rule family, and enumeration; every enumerated plan is emitted as MLIR and evaluated by the NumPy
evaluator with physical encodings (pack / mmt4d / unpack) for two targets, against plain NumPy.
Plans that drop data tiling (``rules/untile.egg``) are checked on purpose: enumeration order reaches
them late, so they are enumerated from copies of the e-graph where the plain contraction is the only
choice, in every contraction and in the first one alone (mixed with the others' mmt4d). Plans that run
an elementwise consumer on the encoded accumulator (``rules/sink_unset.egg``: a bias broadcast along
rows, a ReLU) likewise, from copies where that is the only choice of the consumer's class, in every
consumer and in the first alone; the programs' sizes (M in 1..16, N in 1..12) pad the tiles.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterator

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from egg_dispatch.egraph.data import EGraphData, build_term
from egg_dispatch.egraph.enumerate import enumerate_plans
from egg_dispatch.egraph.imported import ImportedProgram
from egg_dispatch.egraph.importer import import_function
from egg_dispatch.egraph.rules import saturate
from egg_dispatch.emit.choice import normalize_choice
from egg_dispatch.emit.emitter import Emitter
from egg_dispatch.evaluate import evaluate
from egg_dispatch.mlir.ir import Module
from egg_dispatch.mlir.parser import parse_mlir
from egg_dispatch.result.report import sunk, untiled
from egg_dispatch.start.initial_plan import initial_plan
from egg_dispatch.target.profile import Target, load_target
from tests.hypothesis_profiles import examples
from tests.test_sink_unset import sink_variants

pytestmark = pytest.mark.slow  # IREE builds, explorations at model size or long properties (docs/testing.md)

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


_VERIFIED: set[str] = set()
"""Programs (``repr`` of what the strategy drew) whose every plan already computed the reference.

The inputs are a function of the drawn program (a fixed seed), so a program drawn again (hypothesis
reaches the same one from other choices, e.g. a seed that only constants read when W is an argument)
would repeat the same saturations, plans and comparisons; it is checked once. A failure is never
recorded, so hypothesis' replay and shrinking see it again."""


class _Plans:
    """The plans of one e-graph (one program and target), each emitted and checked once.

    A plan is identified by its selection: the chosen node of every class reachable from the root,
    which fixes the term (op, arguments and e-class of every sub-term) and so the emitted function.
    Different choices often select the same plan (the materialized spelling of a plan with no encoding
    op; a variant's plan that enumeration of the whole e-graph reached too); ``check`` runs on the
    first emission of each, and ``emit`` returns that same function for the later ones.
    """

    def __init__(self, imported: ImportedProgram, check: Callable[[Module], None]):
        self.imported = imported
        self.check = check
        self._emitted: dict[frozenset[tuple[str, str]], Module] = {}

    def emit(self, g: EGraphData, choice: dict[str, str], materialized: bool) -> Module:
        """The plan ``choice`` spells at one level (``normalize_choice``), checked."""
        normalized = normalize_choice(g, choice, materialized)
        reached: dict = {}
        term = build_term(g, normalized, memo=reached)
        key = frozenset((c, normalized[c]) for c in reached if c in normalized)
        plan = self._emitted.get(key)
        if plan is None:
            plan = Emitter(self.imported).emit(term)  # type: ignore[arg-type]
            self.check(plan)
            self._emitted[key] = plan
        return plan


def _saturated(imported: ImportedProgram, target: Target) -> EGraphData:
    """The saturated e-graph's data; the egglog e-graph goes back to the pool (``ProgramGraph.release``)
    so the next program reuses its declared rules instead of declaring them again."""
    graph, report = saturate(imported, target)
    assert report.saturated, report.render()
    data = EGraphData.from_serialized(graph.serialized())
    graph.release()
    return data


@settings(max_examples=examples(80))
@given(programs())
def test_every_enumerated_plan_computes_the_input(program: tuple[str, list[tuple[tuple[int, ...], str]]]) -> None:
    text, arg_shapes = program
    if repr(program) in _VERIFIED:
        return
    module = parse_mlir(text, "generated.mlir")
    rng = np.random.default_rng(7)
    inputs = [(rng.integers(-16, 16, s) / 16).astype(np.float16 if t == "f16" else np.float32) for s, t in arg_shapes]
    reference = evaluate(module, inputs)
    imported = import_function(initial_plan(module))
    for target in TARGETS:
        data = _saturated(imported, target)

        def computes_the_input(plan: Module, target: Target = target) -> None:
            outputs = evaluate(plan, inputs, target=target)
            for got, want in zip(outputs, reference, strict=True):
                np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)

        plans = _Plans(imported, computes_the_input)
        checked = 0
        for choice in enumerate_plans(data, PLANS_PER_TARGET):
            for materialized in (False, True):
                plans.emit(data, choice, materialized)
                checked += 1
        assert checked > 0, f"no plan for {target.name}:\n{text}"
        untiled_checked = 0
        for variant in untile_variants(data):
            for choice in enumerate_plans(variant, UNTILED_PLANS_PER_VARIANT):
                assert untiled(data, choice)
                for materialized in (False, True):
                    plans.emit(variant, choice, materialized)
                    untiled_checked += 1
        tiled = any(n.op == "UnsetEncoding" for c in data.classes if data.is_term_class(c) for n in data.choices(c))
        assert untiled_checked > 0 or not tiled, f"no plan drops data tiling on {target.name}:\n{text}"
        sunk_checked = 0
        for variant in sink_variants(data):
            for choice in enumerate_plans(variant, UNTILED_PLANS_PER_VARIANT):
                for materialized in (False, True):
                    plan = plans.emit(variant, choice, materialized)
                    assert materialized or sunk(plan), "the variant's plan runs no generic on an encoded accumulator"
                    sunk_checked += 1
        sinkable = "linalg.generic" in text and tiled and "%c0 = " in text
        assert sunk_checked > 0 or not sinkable, (
            f"no plan runs a consumer on the encoded result on {target.name}:\n{text}"
        )
    _VERIFIED.add(repr(program))


# ------------------------------------------------------------------------------------- dynamic dims
# The same property for programs with dynamic dims (issue 12): one plan is chosen for every size, so
# every enumerated plan (also dropping data tiling) must compute the program's numbers at every size
# the program allows -- 1, sizes that are not multiples of either target's tiles (AVX2: 8 rows;
# AVX-512: 16), multiples -- and, when a util.assume.int bounds the dim or says it is a multiple of 8
# or 16 (what lets the rules prove tile alignment or a bounded fused-pack footprint), at sizes it
# allows. The dynamic dim is the rows of the LHS (an argument [?, K], its columns maybe sliced) or the
# columns of the RHS (an argument [K, ?] times row slices of W).

DYNAMIC_ASSUMES = {
    "none": ("", (1, 5, 13, 16)),
    "udiv8": ("<umin = 8, umax = 64, udiv = 8>", (8, 24, 40)),
    "udiv16": ("<umin = 16, umax = 256, udiv = 16>", (16, 48)),
    "umax12": ("<umin = 1, umax = 12>", (1, 7, 12)),
}


@st.composite
def dynamic_programs(draw: st.DrawFn) -> tuple[str, list[tuple[tuple[int | None, ...], str]], tuple[int, ...]]:
    """A function with one dynamic dim, the argument shapes (None: that dim) and the sizes to run at."""
    k = draw(st.integers(1, 9))
    n = draw(st.integers(1, 12))
    where = draw(st.sampled_from(["lhs", "rhs"]))
    assume, sizes = DYNAMIC_ASSUMES[draw(st.sampled_from(sorted(DYNAMIC_ASSUMES)))]
    consumer = draw(st.sampled_from(["none", "bias", "relu"]))
    w_is_const = draw(st.booleans())
    transposed = draw(st.booleans()) and where == "lhs"
    rng = np.random.default_rng(draw(st.integers(0, 2**16)))
    lines = ["  %zero = arith.constant 0.0 : f32", "  %relu0 = arith.constant 0.0 : f32"]
    args: list[tuple[tuple[int | None, ...], str]] = []
    # (ins, result type, tensor.empty's dims) of every matmul
    contraction: list[tuple[str, str, str]] = []

    def size_of(tensor: str, dim: int, t: str) -> str:
        lines.append(f"  %i{dim} = arith.constant {dim} : index")
        lines.append(f"  %d = tensor.dim {tensor}, %i{dim} : {t}")
        if not assume:
            return "%d"
        lines.append(f"  %m = util.assume.int %d{assume} : index")  # what the sizes read, as IREE writes it
        return "%m"

    if where == "lhs":  # X [?, K] (its columns maybe sliced, its rows maybe split) times W: the dim is M
        kk = draw(st.integers(1, k))  # the columns of X the matmul reads (kk < k: a strided slice)
        split = draw(st.sampled_from([0, 0, 1, 3, 8]))  # rows [0, h) and [h, ?): a dynamic offset-h slice
        sizes = tuple(v for v in sizes if v > split) or (split + 1,)
        args.append(((None, k), "f32"))
        m = size_of("%a0", 0, f"tensor<?x{k}xf32>")
        w_shape = (n, kk) if transposed else (kk, n)
        if w_is_const:
            lines.append(f"  %w = arith.constant {_dense(rng.integers(-8, 8, w_shape) / 8)}")
            w = "%w"
        else:
            args.append((w_shape, "f32"))
            w = "%a1"
        w_t = f"tensor<{w_shape[0]}x{w_shape[1]}xf32>"
        parts = []
        if split:
            lines.append(f"  %h = arith.constant {split} : index")
            lines.append(f"  %rest = arith.subi {m}, %h : index")
            parts = [("0", str(split), str(split), ""), ("%h", "%rest", "?", "%rest")]
        elif kk < k:
            parts = [("0", m, "?", m)]
        for p, (off, size, shown, dims) in enumerate(parts):
            lines.append(
                f"  %x{p} = tensor.extract_slice %a0[{off}, 0] [{size}, {kk}] [1, 1] : "
                f"tensor<?x{k}xf32> to tensor<{shown}x{kk}xf32>"
            )
            ins = f"ins(%x{p}, {w} : tensor<{shown}x{kk}xf32>, {w_t})"
            contraction.append((ins, f"tensor<{shown}x{n}xf32>", dims))
        if not parts:
            contraction.append((f"ins(%a0, {w} : tensor<?x{k}xf32>, {w_t})", f"tensor<?x{n}xf32>", m))
        maps = TRANSPOSED_B if transposed else ""
        bias_map = "affine_map<(d0, d1) -> (d1)>"
    else:  # row slices of W (constant or argument) times Y [K, ?]: the dim is N
        rows = [draw(st.sampled_from([1, 2, 4, 5, 8, 16])) for _ in range(draw(st.integers(1, 2)))]
        total = sum(rows)
        if w_is_const:
            lines.append(f"  %w = arith.constant {_dense(rng.integers(-8, 8, (total, k)) / 8)}")
        else:
            args.append(((total, k), "f32"))
        w, y = ("%w", "%a0") if w_is_const else ("%a0", "%a1")
        args.append(((k, None), "f32"))
        m = size_of(y, 1, f"tensor<{k}x?xf32>")
        offset = 0
        for p, r in enumerate(rows):
            lines.append(
                f"  %x{p} = tensor.extract_slice {w}[{offset}, 0] [{r}, {k}] [1, 1] : "
                f"tensor<{total}x{k}xf32> to tensor<{r}x{k}xf32>"
            )
            offset += r
            contraction.append((f"ins(%x{p}, {y} : tensor<{r}x{k}xf32>, tensor<{k}x?xf32>)", f"tensor<{r}x?xf32>", m))
        maps = ""
        bias_map = "affine_map<(d0, d1) -> (d0)>"
    results = []
    for i, (ins, t, dims) in enumerate(contraction):
        lines.append(f"  %e{i} = tensor.empty({dims}) : {t}")
        lines.append(f"  %f{i} = linalg.fill ins(%zero : f32) outs(%e{i} : {t}) -> {t}")
        lines.append(f"  %r{i} = linalg.matmul {maps} {ins} outs(%f{i} : {t}) -> {t}")
        out = f"%r{i}"
        if consumer == "bias":
            length = n if where == "lhs" else int(t.split("<")[1].split("x")[0])
            lines.append(f"  %b{i} = arith.constant {_dense1(rng.integers(-8, 8, length) / 8)}")
            lines.append(f"  %o{i} = tensor.empty({dims}) : {t}")
            lines.append(
                f"  %c{i} = linalg.generic {{indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, {bias_map}, "
                f'affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]}} '
                f"ins(%r{i}, %b{i} : {t}, tensor<{length}xf32>) outs(%o{i} : {t}) {{\n"
                f"  ^bb0(%p: f32, %q: f32, %y: f32):\n    %v = arith.addf %p, %q : f32\n    linalg.yield %v : f32\n"
                f"  }} -> {t}"
            )
            out = f"%c{i}"
        elif consumer == "relu":
            lines.append(f"  %o{i} = tensor.empty({dims}) : {t}")
            lines.append(
                f"  %c{i} = linalg.generic {{indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, "
                f'affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]}} '
                f"ins(%r{i} : {t}) outs(%o{i} : {t}) {{\n  ^bb0(%p: f32, %y: f32):\n"
                f"    %v = arith.maximumf %p, %relu0 : f32\n    linalg.yield %v : f32\n  }} -> {t}"
            )
            out = f"%c{i}"
        results.append((out, t))
    sig = ", ".join(
        f"%a{i}: tensor<{'x'.join('?' if d is None else str(d) for d in s)}x{e}>" for i, (s, e) in enumerate(args)
    )
    ret_types = ", ".join(t for _, t in results)
    text = (
        f"func.func @prog({sig}) -> ({ret_types}) {{\n"
        + "\n".join(lines)
        + f"\n  return {', '.join(o for o, _ in results)} : {ret_types}\n}}\n"
    )
    return text, args, sizes


def _dense1(values: np.ndarray) -> str:
    return f"dense<[{', '.join(f'{v:.4f}' for v in values)}]> : tensor<{values.shape[0]}xf32>"


def _enumerated(data: EGraphData) -> Iterator[tuple[EGraphData, dict[str, str]]]:
    for choice in enumerate_plans(data, PLANS_PER_TARGET):
        yield data, choice
    for variant in untile_variants(data):
        for choice in enumerate_plans(variant, UNTILED_PLANS_PER_VARIANT):
            yield variant, choice


@settings(max_examples=examples(30))
@given(dynamic_programs())
def test_every_enumerated_plan_computes_the_input_at_every_size(
    program: tuple[str, list[tuple[tuple[int | None, ...], str]], tuple[int, ...]],
) -> None:
    text, arg_shapes, sizes = program
    if repr(program) in _VERIFIED:
        return
    module = parse_mlir(text, "generated.mlir")
    rng = np.random.default_rng(7)
    runs = []
    for size in sizes:
        inputs = [
            (rng.integers(-16, 16, tuple(size if d is None else d for d in s)) / 16).astype(np.float32)
            for s, _ in arg_shapes
        ]
        runs.append((size, inputs, evaluate(module, inputs)))
    imported = import_function(initial_plan(module))
    assert imported.dynamic, text
    for target in TARGETS:
        data = _saturated(imported, target)

        def computes_the_input(plan: Module, target: Target = target) -> None:
            for size, inputs, reference in runs:
                outputs = evaluate(plan, inputs, target=target)
                for got, want in zip(outputs, reference, strict=True):
                    assert got.shape == want.shape, (size, text)
                    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5, err_msg=f"size {size}\n{text}")

        plans = _Plans(imported, computes_the_input)
        checked = 0
        for g, choice in _enumerated(data):
            for materialized in (False, True):
                plans.emit(g, choice, materialized)
                checked += 1
        assert checked > 0, f"no plan for {target.name}:\n{text}"
    _VERIFIED.add(repr(program))
