"""The fused-pack footprint model against what IREE's compiler actually accepts.

``tests/fixtures/probes/fused_pack_legality.json`` records iree-compile 3.13 on single matmul dispatches
with the LHS, the RHS or both packed inside (and the unpack fused or not), for AVX2 and AVX-512 (its
``about`` says how). The model must refuse every combination IREE rejected (it may refuse more: it is
conservative). With IREE installed, a few of those dispatches are compiled again here, so the recorded
table cannot drift from the compiler the tests use.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from egg_dispatch.egraph.facts import fused_footprint_legal
from egg_dispatch.iree.tools import find_tool
from egg_dispatch.target.layout import packed_nbytes, resolve_layout
from egg_dispatch.target.profile import load_target
from tests.hypothesis_profiles import examples

pytestmark = pytest.mark.slow  # IREE builds, explorations at model size or long properties (docs/testing.md)

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
    """The ``iree-compile`` binary (``find_tool``: not pip's wrapper, which starts an interpreter per call)."""
    found = find_tool("iree-compile")
    return str(found) if found is not None else None


TO_CODEGEN = ("--compile-from=dispatch-creation", "--compile-to=executable-targets", "-o", "/dev/null")
"""Through codegen, where the fused-pack rejections are (vector sizes, the stack limit), not serialization."""


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
        [_iree_compile(), "-", *TO_CODEGEN],
        input=emit_iree(plan, target).encode(),
        capture_output=True,
        timeout=300,
    )
    compiled = proc.returncode == 0
    assert compiled == (row["iree"] == "ok"), proc.stderr.decode()[-2000:]


# ----------------------------------------------------------------- every fused-pack plan compiles
FUSED_PLANS_PER_PROGRAM = 2


def _slices_program(m: int, k: int, rows: list[int], const: bool, relu: bool) -> str:
    """x[m, k] times each row slice of W[sum(rows), k] (transposed RHS, F.linear's layout): the
    soundness property's program shape at sizes where the stack and vector limits bite."""
    total = sum(rows)
    maps = (
        "indexing_maps = [affine_map<(d0, d1, d2) -> (d0, d2)>, affine_map<(d0, d1, d2) -> (d1, d2)>, "
        "affine_map<(d0, d1, d2) -> (d0, d1)>]"
    )
    lines = ["  %z = arith.constant 0.0 : f32"]
    if const:
        lines.append(f"  %w = arith.constant dense<0.25> : tensor<{total}x{k}xf32>")
    outs, offset = [], 0
    for i, r in enumerate(rows):
        t = f"tensor<{m}x{r}xf32>"
        lines += [
            f"  %s{i} = tensor.extract_slice %w[{offset}, 0] [{r}, {k}] [1, 1] : tensor<{total}x{k}xf32> to "
            f"tensor<{r}x{k}xf32>",
            f"  %e{i} = tensor.empty() : {t}",
            f"  %f{i} = linalg.fill ins(%z : f32) outs(%e{i} : {t}) -> {t}",
            f"  %m{i} = linalg.matmul {maps} ins(%x, %s{i} : tensor<{m}x{k}xf32>, tensor<{r}x{k}xf32>) "
            f"outs(%f{i} : {t}) -> {t}",
        ]
        out = f"%m{i}"
        if relu:
            ident = "affine_map<(d0, d1) -> (d0, d1)>"
            lines.append(
                f'  %r{i} = linalg.generic {{indexing_maps = [{ident}, {ident}], iterator_types = ["parallel", '
                f'"parallel"]}} ins(%m{i} : {t}) outs(%e{i} : {t}) {{\n  ^bb0(%a: f32, %o: f32):\n'
                f"    %v = arith.maximumf %a, %z : f32\n    linalg.yield %v : f32\n  }} -> {t}"
            )
            out = f"%r{i}"
        outs.append((out, t))
        offset += r
    args = f"%x: tensor<{m}x{k}xf32>" + ("" if const else f", %w: tensor<{total}x{k}xf32>")
    types = ", ".join(t for _, t in outs)
    return (
        f"func.func @prog({args}) -> ({types}) {{\n" + "\n".join(lines)
        + f"\n  return {', '.join(o for o, _ in outs)} : {types}\n}}\n"
    )  # fmt: skip


def _fuses_a_pack(plan: object) -> bool:
    """A dispatch of the plan packs a real tensor inside (a set_encoding whose source is not an empty)."""
    for op in plan.walk():  # type: ignore[attr-defined]
        if op.name != "flow.dispatch.region":
            continue
        for inner in op.walk():
            if inner.name == "iree_encoding.set_encoding":
                src = inner.operands[0].owner
                if getattr(src, "name", "") != "tensor.empty":
                    return True
    return False


@pytest.mark.skipif(_iree_compile() is None, reason="IREE not installed")
@pytest.mark.parametrize("target_name", ["x86_64-avx2", "x86_64-avx512"])
def test_every_fused_pack_plan_the_egraph_holds_compiles(target_name: str) -> None:
    """The soundness property's programs at realistic sizes: every plan with a pack fused into a
    contraction's dispatch that the e-graph holds (legality applied) among the first enumerated ones is
    emitted (--emit iree) and must compile with iree-compile for the target's CPU. Before the footprint
    model, 10 of 12 exported-model plans failed here (stack over 32 KiB, 'large vector sizes' on AVX2)."""
    from hypothesis import HealthCheck, given, settings
    from hypothesis import strategies as st

    from egg_dispatch.egraph.data import EGraphData, build_term
    from egg_dispatch.egraph.enumerate import enumerate_plans
    from egg_dispatch.egraph.importer import import_function
    from egg_dispatch.egraph.rules import saturate
    from egg_dispatch.emit.choice import normalize_choice
    from egg_dispatch.emit.emitter import Emitter
    from egg_dispatch.emit.iree.module import emit_iree, iree_cpu
    from egg_dispatch.mlir.parser import parse_mlir
    from egg_dispatch.start.initial_plan import initial_plan

    target = load_target(target_name)
    cpu = next(f for f in iree_cpu(target).compile_flags if "target-cpu=" in f)
    compiled = []

    @settings(max_examples=examples(4), suppress_health_check=list(HealthCheck))
    @given(
        st.sampled_from([1, 4, 16, 32]),
        st.sampled_from([32, 64, 128]),
        st.lists(st.sampled_from([16, 32, 64, 128]), min_size=1, max_size=3),
        st.booleans(),
        st.booleans(),
    )
    def check(m: int, k: int, rows: list[int], const: bool, relu: bool) -> None:
        module = parse_mlir(_slices_program(m, k, rows, const, relu), "generated.mlir")
        imported = import_function(initial_plan(module))
        graph, _ = saturate(imported, target)
        data = EGraphData.from_serialized(graph.serialized())
        seen: set[str] = set()
        for choice in enumerate_plans(data, 40):
            plan = Emitter(imported).emit(build_term(data, normalize_choice(data, choice, False)))  # type: ignore[arg-type]
            if not _fuses_a_pack(plan):
                continue
            text = emit_iree(plan, target)
            if text in seen:
                continue
            seen.add(text)
            proc = subprocess.run(
                [_iree_compile(), "-", cpu, *TO_CODEGEN],
                input=text.encode(),
                capture_output=True,
                timeout=300,
            )
            assert proc.returncode == 0, f"m={m} k={k} rows={rows}:\n{proc.stderr.decode()[-1500:]}"
            compiled.append((m, k, tuple(rows)))
            if len(seen) >= FUSED_PLANS_PER_PROGRAM:
                break

    check()
    assert compiled, "no fused-pack plan was generated: the test checked nothing"
