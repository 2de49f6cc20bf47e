"""Declared e-graphs are reused across programs (``egraph.program``'s pool); nothing a program's
e-graph, plans or report hold may depend on what the process explored before.

The reference is an e-graph egglog builds from nothing (schema, rules, program), never one from the
pool; egglog's pop does not restore its interning of primitives, which is what the renaming in
``canonical_primitives`` is for.
"""

from __future__ import annotations

import contextlib
import io
import json
from pathlib import Path

import pytest
from egglog import bindings

from egg_dispatch.cli import main
from egg_dispatch.egraph import program
from egg_dispatch.egraph.importer import import_function
from egg_dispatch.egraph.rules import FAMILIES, Budget, family_source, saturate
from egg_dispatch.egraph.terms import SCHEMA
from egg_dispatch.mlir.parser import parse_file
from egg_dispatch.start.initial_plan import initial_plan
from egg_dispatch.target.profile import load_target

FIXTURES = Path(__file__).parent / "fixtures"
# Programs with different strings, integers and vectors, so the interning tables differ between them.
PROGRAMS = ("qkv_const.mlir", "i8_matmul.mlir", "unaligned.mlir", "attention_explicit.mlir")
AVX512 = load_target("x86_64-avx512")


def _imported(name: str):
    return import_function(initial_plan(parse_file(FIXTURES / name)))


def _pooled(name: str) -> dict:
    graph, _ = saturate(_imported(name), AVX512)
    data = graph.serialized()
    graph.release()
    return data


def _from_nothing(name: str) -> dict:
    """The same saturation on an e-graph built from nothing, renamed the same way."""
    with program.fresh_bases():
        graph, _ = saturate(_imported(name), AVX512)
        return graph.serialized()


def _shape(data: dict) -> list:
    """The e-graph without names: every node by op, e-class kind and, per child, the ops of its class."""
    nodes = data["nodes"]
    ops: dict[str, list[str]] = {}
    for n in nodes.values():
        ops.setdefault(n["eclass"], []).append(n["op"])
    return sorted(
        (n["op"], n["eclass"].split("-")[0], tuple(tuple(sorted(ops[nodes[c]["eclass"]])) for c in n["children"]))
        for n in nodes.values()
    )


def test_a_pooled_egraph_serializes_as_one_built_from_nothing_after_any_other_program() -> None:
    """The same nodes, classes and primitive names. Not always the same function node numbers: a base that
    carried other programs may hold a table's rows in another order (random program 10 explored three
    times, then attention_explicit: its Contract nodes numbered 28, not 26), which these four programs
    alone do not show but other tests run before them in one process may."""
    reference = {name: _from_nothing(name) for name in PROGRAMS}
    for order in (PROGRAMS, PROGRAMS[::-1], PROGRAMS[1:] + PROGRAMS[:1]):
        for name in order:
            pooled, ref = _pooled(name), reference[name]
            assert _shape(pooled) == _shape(ref), f"{name} after {order}"
            assert pooled["class_data"] == ref["class_data"], f"{name} after {order}"
            primitives = {k: n for k, n in pooled["nodes"].items() if k.startswith("primitive-")}
            assert primitives == {k: n for k, n in ref["nodes"].items() if k.startswith("primitive-")}


def test_the_renaming_keeps_the_egraph_and_is_needed(monkeypatch: pytest.MonkeyPatch) -> None:
    """Renaming changes names only (and which node of a class a child names); and unrenamed, a pooled
    e-graph names primitives by what came before."""
    reference = _from_nothing("qkv_const.mlir")
    monkeypatch.setattr(program, "canonical_primitives", lambda data: data)
    program.drop_bases()
    raw_first = _pooled("qkv_const.mlir")  # on a base of its own
    program.drop_bases()
    _pooled("i8_matmul.mlir")
    raw_after = _pooled("qkv_const.mlir")  # on the base i8_matmul used
    assert raw_after != raw_first, "egglog's pop now restores primitive names: the renaming may go"
    monkeypatch.undo()
    for raw in (raw_first, raw_after):
        renamed = program.canonical_primitives(raw)
        assert renamed == reference
        assert _shape(renamed) == _shape(raw)
        assert len(renamed["nodes"]) == len(raw["nodes"]) and len(renamed["class_data"]) == len(raw["class_data"])
        functions = sorted(n["op"] for k, n in raw["nodes"].items() if k.startswith("function-"))
        assert sorted(n["op"] for k, n in renamed["nodes"].items() if k.startswith("function-")) == functions


def test_release_returns_the_declared_state_after_rollback_snapshots() -> None:
    extra = family_source("analysis") + "\n" + "\n".join(family_source(f) for f in FAMILIES)
    fresh = bindings.EGraph()
    fresh.parse_and_run_program(SCHEMA)
    fresh.parse_and_run_program(extra)
    declared = json.loads(fresh.serialize([]).to_json())
    graph, report = saturate(_imported("qkv_const.mlir"), AVX512, budget=Budget(enodes=400))
    assert report.stop_reason.startswith("e-node limit")  # snapshots were pushed on top of the program
    egraph = graph.egraph
    graph.release()
    assert egraph is not None and json.loads(egraph.serialize([]).to_json()) == declared
    with pytest.raises(RuntimeError, match="released"):
        graph.serialized()


def _explore_json(name: str) -> dict:
    out = io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(io.StringIO()):
        rc = main(["explore", str(FIXTURES / name), "--from", "input", "--baseline", "modelled", "--emit", "json"])
    assert rc == 0
    report = json.loads(out.getvalue())
    # how many of the checked dispatches iree-compile ran, not the cache: the one count a repeat changes
    report["compile_check"].pop("compiled")
    return report


def test_explore_reports_the_same_plan_first_and_after_other_programs() -> None:
    program.drop_bases()
    first = _explore_json("mlp2.mlir")
    for name in PROGRAMS:
        _explore_json(name)
    assert _explore_json("mlp2.mlir") == first

