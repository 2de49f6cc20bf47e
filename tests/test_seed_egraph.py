"""The bug's program (IREE #21100) after saturation: the plans the maintainers asked for are there,
and the state IREE got stuck in is not, unless a fused pack is legal."""

from __future__ import annotations

from pathlib import Path

import pytest

from egg_dispatch.egraph.data import EGraphData, build_term
from egg_dispatch.egraph.enumerate import enumerate_plans
from egg_dispatch.egraph.importer import import_function
from egg_dispatch.egraph.rules import saturate
from egg_dispatch.emit.choice import normalize_choice
from egg_dispatch.emit.emitter import Emitter
from egg_dispatch.emit.signature import plan_signature
from egg_dispatch.mlir.ir import Module, Operation, TensorType
from egg_dispatch.mlir.parser import parse_file
from egg_dispatch.start.initial_plan import initial_plan
from egg_dispatch.target.profile import load_target

SEED = Path(__file__).parent / "fixtures" / "seed_iree313.mlir"


def _plans(target: str, limit: int = 5000) -> list[Module]:
    imported = import_function(initial_plan(parse_file(SEED)))
    graph, report = saturate(imported, load_target(target))
    assert report.saturated
    data = EGraphData.from_serialized(graph.serialized())
    return [
        Emitter(imported).emit(build_term(data, normalize_choice(data, c, False)))  # type: ignore[arg-type]
        for c in enumerate_plans(data, limit)
    ]


def _func(plan: Module) -> Operation:
    return next(op for op in plan.ops if op.name == "func.func")


def _initializers(plan: Module) -> list[list[str]]:
    return [[o.name for o in op.regions[0].entry.ops] for op in plan.ops if op.name == "util.initializer"]


@pytest.mark.parametrize("target", ["x86_64-avx2", "x86_64-avx512", "aarch64-neon"])
def test_both_slice_chains_const_evaluated(target: str) -> None:
    """(a) each slice+set_encoding chain evaluated once at load into its own global."""
    found = False
    for plan in _plans(target):
        chains = [i for i in _initializers(plan) if "tensor.extract_slice" in i and "iree_encoding.set_encoding" in i]
        runtime_lhs_packs = [op for op in _func(plan).walk() if op.name == "iree_encoding.set_encoding" and _is_lhs(op)]
        if len(chains) == 2 and not runtime_lhs_packs:
            found = True
            break
    assert found


def _is_lhs(op: Operation) -> bool:
    t = op.result.type
    return isinstance(t, TensorType) and getattr(t.encoding, "operand_index", None) == 0


@pytest.mark.slow
@pytest.mark.parametrize("target", ["x86_64-avx2", "aarch64-neon"])
def test_one_packed_copy_of_the_whole_constant(target: str) -> None:
    """(b) one packed copy of the whole 16x8 constant, and tile-aligned slices of it (8-row tiles)."""
    found = []
    for plan in _plans(target):
        whole = [
            op for op in plan.walk() if op.name == "iree_encoding.set_encoding" and op.operands[0].type.shape == (16, 8)
        ]  # type: ignore[union-attr]
        slices = [
            op
            for op in plan.walk()
            if op.name == "tensor.extract_slice" and getattr(op.operands[0].type, "encoding", None) is not None
        ]
        if len(whole) == 1 and len(slices) == 2:
            found.append(plan_signature(plan))
    assert found, "no plan packs the whole constant once"
    # ... in every placement the rules offer for that one pack: load time, its own dispatch, fused.
    assert any(s.startswith("init{iree_encoding.set_encoding}") for s in found)
    assert any("dispatch{iree_encoding.set_encoding}" in s for s in found)


def test_target_none_has_plans_without_encodings() -> None:
    """(c) with no encoding resolver, plans with no encodings at all."""
    plans = _plans("none")
    plain = [p for p in plans if not any(op.name.startswith("iree_encoding") for op in p.walk())]
    assert plain
    assert all(any(op.name == "linalg.matmul" for op in p.walk()) for p in plain)


@pytest.mark.parametrize("target", ["x86_64-avx2", "x86_64-avx512"])
def test_no_set_encoding_stuck_with_an_in_dispatch_producer_unless_legal(target: str) -> None:
    """IREE #21100's state -- set_encoding in the matmul's dispatch with its producer there too --
    only where the fused-pack condition holds: never on AVX-512 (16-row tiles do not divide 8 rows),
    allowed on AVX2 (8x1 tiles divide 8x8; 256 B fits the stack)."""
    stuck = 0
    for plan in _plans(target):
        for region in (op for op in _func(plan).walk() if op.name == "flow.dispatch.region"):
            body = region.regions[0].entry.ops
            if not any(o.name == "linalg.matmul" for o in body):
                continue
            defined = {r for o in body for r in o.results}
            stuck += sum(1 for o in body if o.name == "iree_encoding.set_encoding" and o.operands[0] in defined)
    if target == "x86_64-avx512":
        assert stuck == 0
    else:
        assert stuck > 0
