"""Named ops upstream MLIR retired (``mlir.retired``): read as what they are now, one note per program,
handed to IREE in that form; and the README's first run, which shows IREE's own plan beside ours.

``linalg.matmul_transpose_a`` / ``_b`` and ``linalg.batch_matmul_transpose_a`` / ``_b`` are gone from
IREE 3.13's MLIR ("custom op ... is unknown"); the built-in example (IREE issue #21100 as reported) is
written with ``linalg.matmul_transpose_b``. The maps below are written out by hand from upstream's OpDSL
definitions, and the numbers are checked against NumPy's einsum, written independently of the maps.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import numpy as np
import pytest

from egg_dispatch.cli import main
from egg_dispatch.evaluate import evaluate
from egg_dispatch.iree.tools import find_tool, iree_opt_parses
from egg_dispatch.mlir.compare import modules_equal
from egg_dispatch.mlir.ir import ArrayAttr, DenseAttr, Module, Operation
from egg_dispatch.mlir.parser import MLIRSyntaxError, parse_file, parse_mlir
from egg_dispatch.mlir.printer import Printer, print_mlir
from egg_dispatch.mlir.retired import RETIRED_OPS, iree_input_shown, iree_input_text, may_need_respelling
from egg_dispatch.pipeline import explore, iree_plan
from egg_dispatch.start.initial_plan import initial_plan

FIXTURES = Path(__file__).parent / "fixtures"
EXAMPLE = Path(__file__).parents[1] / "egg_dispatch" / "examples" / "seed_reproducer.mlir"
needs_iree = pytest.mark.skipif(find_tool("iree-compile") is None, reason="IREE not installed")
M, N, K, B = 5, 3, 7, 2  # all different, so a wrong map is a wrong shape or wrong numbers

# name: (what it is now, its maps as IREE 3.13 prints them, lhs shape, rhs shape, einsum of lhs, rhs)
CASES = {
    "linalg.matmul_transpose_a": (
        "linalg.matmul",
        ["(d0, d1, d2) -> (d2, d0)", "(d0, d1, d2) -> (d2, d1)", "(d0, d1, d2) -> (d0, d1)"],
        (K, M), (K, N), "km,kn->mn",
    ),
    "linalg.matmul_transpose_b": (
        "linalg.matmul",
        ["(d0, d1, d2) -> (d0, d2)", "(d0, d1, d2) -> (d1, d2)", "(d0, d1, d2) -> (d0, d1)"],
        (M, K), (N, K), "mk,nk->mn",
    ),
    "linalg.batch_matmul_transpose_a": (
        "linalg.batch_matmul",
        ["(d0, d1, d2, d3) -> (d0, d3, d1)", "(d0, d1, d2, d3) -> (d0, d3, d2)", "(d0, d1, d2, d3) -> (d0, d1, d2)"],
        (B, K, M), (B, K, N), "bkm,bkn->bmn",
    ),
    "linalg.batch_matmul_transpose_b": (
        "linalg.batch_matmul",
        ["(d0, d1, d2, d3) -> (d0, d1, d3)", "(d0, d1, d2, d3) -> (d0, d2, d3)", "(d0, d1, d2, d3) -> (d0, d1, d2)"],
        (B, M, K), (B, N, K), "bmk,bnk->bmn",
    ),
}  # fmt: skip


def _t(shape: tuple[int, ...]) -> str:
    return "tensor<" + "".join(f"{d}x" for d in shape) + "f32>"


def _program(op: str, lhs: tuple[int, ...], rhs: tuple[int, ...], out: tuple[int, ...]) -> str:
    return (
        f"func.func @f(%a: {_t(lhs)}, %b: {_t(rhs)}, %c: {_t(out)}) -> {_t(out)} {{\n"
        f"  %y = {op} ins(%a, %b : {_t(lhs)}, {_t(rhs)}) outs(%c : {_t(out)}) -> {_t(out)}\n"
        f"  return %y : {_t(out)}\n"
        "}\n"
    )


def _out_shape(lhs: tuple[int, ...], rhs: tuple[int, ...], spec: str) -> tuple[int, ...]:
    written = zip(spec.split("->")[0].split(","), (lhs, rhs), strict=True)
    sizes = {c: d for s, shape in written for c, d in zip(s, shape, strict=True)}
    return tuple(sizes[c] for c in spec.split("->")[1])


def _contraction(module: Module) -> Operation:
    (op,) = [op for op in module.walk() if op.name.startswith(("linalg.matmul", "linalg.batch_matmul"))]
    return op


def test_the_table_is_the_one_checked_here() -> None:
    assert set(RETIRED_OPS) == set(CASES)


@pytest.mark.parametrize("name", sorted(CASES))
def test_retired_op_reads_as_its_successor_with_its_maps(name: str) -> None:
    now, maps, lhs, rhs, spec = CASES[name]
    out = _out_shape(lhs, rhs, spec)
    module = parse_mlir(_program(name, lhs, rhs, out), "r.mlir")
    op = _contraction(module)
    assert op.name == now and module.respelled == [name]
    attr = op.attributes["indexing_maps"]
    assert isinstance(attr, ArrayAttr)
    assert [Printer(use_aliases=False).attr(m) for m in attr.items] == [f"affine_map<{m}>" for m in maps]
    # The same IR as the spelling IREE 3.13 reads, written out by hand; and printed as that.
    spelled = f"{now} indexing_maps = [{', '.join(f'affine_map<{m}>' for m in maps)}]"
    assert modules_equal(module, parse_mlir(_program(spelled, lhs, rhs, out)))
    printed = print_mlir(module, use_aliases=False)
    assert name not in printed and f"{now} indexing_maps = [affine_map<{maps[0]}>" in printed


@pytest.mark.parametrize("name", sorted(CASES))
def test_retired_op_computes_what_its_name_says(name: str) -> None:
    """The evaluator's numbers for the op as read (plain, and planned with AVX-512's packed layouts)
    against NumPy's einsum of the same random inputs."""
    _, _, lhs, rhs, spec = CASES[name]
    out = _out_shape(lhs, rhs, spec)
    rng = np.random.default_rng(sum(map(ord, name)))
    a, b, c = (rng.standard_normal(s).astype(np.float32) for s in (lhs, rhs, out))
    want = np.einsum(spec, a.astype(np.float64), b.astype(np.float64)) + c
    module = parse_mlir(_program(name, lhs, rhs, out), "r.mlir")
    (plain,) = evaluate(module, [a, b, c])
    np.testing.assert_allclose(plain, want, rtol=1e-5, atol=1e-5)
    planned = initial_plan(module)
    assert any(op.name == "iree_encoding.set_encoding" for op in planned.walk())  # data tiling did apply
    (packed,) = evaluate(planned, [a, b, c], target="x86_64-avx512")
    np.testing.assert_allclose(packed, want, rtol=1e-5, atol=1e-5)


def test_one_note_per_program_at_the_first_retired_op() -> None:
    shapes = [(CASES[n][2], CASES[n][3], _out_shape(*CASES[n][2:4], CASES[n][4])) for n in CASES]
    body = []
    args = []
    for i, (name, (lhs, rhs, out)) in enumerate(zip(CASES, shapes, strict=True)):
        args += [f"%a{i}: {_t(lhs)}", f"%b{i}: {_t(rhs)}", f"%c{i}: {_t(out)}"]
        body.append(f"  %y{i} = {name} ins(%a{i}, %b{i} : {_t(lhs)}, {_t(rhs)}) outs(%c{i} : {_t(out)}) -> {_t(out)}")
    results = ", ".join(_t(out) for _, _, out in shapes)
    # Each op twice (the second copy renamed): eight retired ops, four kinds, one note.
    twice = "\n".join(body) + "\n" + "\n".join(line.replace(f"%y{i} =", f"%z{i} =") for i, line in enumerate(body))
    text = f"func.func @f({', '.join(args)}) -> ({results}) {{\n{twice}\n"
    text += f"  return {', '.join(f'%z{i}' for i in range(len(body)))} : {results}\n}}\n"
    module = parse_mlir(text, "four.mlir")
    assert module.respelled == [*CASES, *CASES]
    (note,) = [w for w in module.warnings if ": note: " in w]
    assert module.warnings == [note]
    assert note == (
        "four.mlir:2:9: note: linalg.matmul_transpose_a, linalg.matmul_transpose_b, linalg.batch_matmul_transpose_a, "
        "linalg.batch_matmul_transpose_b (retired upstream) read as linalg.matmul / linalg.batch_matmul with "
        "indexing_maps"
    )


def test_the_examples_note_and_none_without_retired_ops() -> None:
    module = parse_file(EXAMPLE)
    assert module.respelled == ["linalg.matmul_transpose_b"] * 2
    notes = [w for w in module.warnings if ": note: " in w]
    assert notes == [
        f"{EXAMPLE}:25:14: note: linalg.matmul_transpose_b (retired upstream) read as linalg.matmul with indexing_maps"
    ]
    assert EXAMPLE.read_text().splitlines()[24][13:].startswith("linalg.matmul_transpose_b ins(")  # 25:14
    plain = parse_file(FIXTURES / "seed_iree313.mlir")
    assert plain.respelled == [] and not any(": note: " in w for w in plain.warnings)


def test_retired_op_with_indexing_maps_is_an_error() -> None:
    maps = ", ".join(f"affine_map<{m}>" for m in CASES["linalg.matmul_transpose_b"][1])
    text = _program(f"linalg.matmul_transpose_b indexing_maps = [{maps}]", (M, K), (N, K), (M, N))
    with pytest.raises(MLIRSyntaxError, match="takes no indexing_maps"):
        parse_mlir(text, "r.mlir")


def test_iree_gets_the_program_as_read() -> None:
    """A file IREE reads as written goes to IREE as it is (None); the example (retired op, elided blob)
    as read: the op it is now, and the fill our evaluator uses as a blob, so the numbers match."""
    assert iree_input_text(parse_file(FIXTURES / "seed_iree313.mlir")) is None
    assert iree_input_text(parse_file(FIXTURES / "seed_resource.mlir")) is None  # its blob is there
    assert not may_need_respelling((FIXTURES / "seed_resource.mlir").read_text())  # the cheap look, too
    assert may_need_respelling(EXAMPLE.read_text())
    module = parse_file(EXAMPLE)
    text = iree_input_text(module)
    assert text is not None and "matmul_transpose" not in text
    assert '__auto.constant_16_8_torch.float32: "0x04000000' in text  # a blob, its alignment header first
    again = parse_mlir(text, "as-read.mlir")
    assert modules_equal(again, module) and not again.warnings  # nothing filled, nothing respelled any more
    (fill,) = [op.attributes["value"] for op in module.walk() if isinstance(op.attributes.get("value"), DenseAttr)]
    (blob,) = [op.attributes["value"] for op in again.walk() if isinstance(op.attributes.get("value"), DenseAttr)]
    np.testing.assert_array_equal(blob.array, fill.array)  # type: ignore[union-attr]


def test_the_command_shown_says_what_iree_was_given(monkeypatch: pytest.MonkeyPatch) -> None:
    """The ``input:`` line (and JSON ``input.steps``) names what IREE got: the file as written, or, for
    the example, the program as read (``-``, IREE's stdin) with what differs from the file."""
    import egg_dispatch.pipeline as pipeline
    from egg_dispatch.iree.lowering import lowering_command
    from egg_dispatch.iree.tools import IreeError
    from egg_dispatch.target.profile import load_target

    assert iree_input_shown(parse_file(FIXTURES / "seed_iree313.mlir")) is None
    assert iree_input_shown(parse_file(FIXTURES / "seed_resource.mlir")) is None
    shown = (
        "- (the input as read: linalg.matmul_transpose_b respelled as linalg.matmul, "
        "elided blob __auto.constant_16_8_torch.float32 filled)"
    )
    assert iree_input_shown(parse_file(EXAMPLE)) == shown
    blob_only = "func.func @f() -> tensor<2xf32> {\n  %c = arith.constant dense_resource<w> : tensor<2xf32>\n"
    blob_only += "  return %c : tensor<2xf32>\n}\n"
    assert iree_input_shown(parse_mlir(blob_only)) == "- (the input as read: elided blob w filled)"
    # prepare_input hands IREE that text and names it so in the command it reports (IREE faked here).
    given: list[tuple[object, str | None]] = []

    def start_state(src: object, _target: object, *, name: str | None = None) -> None:
        given.append((src, name))
        raise IreeError("faked")

    monkeypatch.setattr(pipeline, "iree_compiler_available", lambda: True)
    monkeypatch.setattr(pipeline, "start_state", start_state)
    target = load_target("x86_64-avx2")
    pipeline.prepare_input(EXAMPLE, target)
    pipeline.prepare_input(FIXTURES / "seed_iree313.mlir", target)
    (src, name), (plain_src, plain_name) = given
    assert src == iree_input_text(parse_file(EXAMPLE)) and name == shown
    assert " ".join(lowering_command(name, "dispatch-creation", target)).startswith(f"iree-compile {shown} --iree-")
    assert plain_src == FIXTURES / "seed_iree313.mlir" and plain_name == str(plain_src)  # as written


@pytest.mark.slow
@pytest.mark.iree
@pytest.mark.skipif(find_tool("iree-opt") is None, reason="IREE not installed")
@pytest.mark.parametrize("name", sorted(CASES))
def test_iree_reads_the_respelled_op(name: str) -> None:
    _, _, lhs, rhs, spec = CASES[name]
    text = _program(name, lhs, rhs, _out_shape(lhs, rhs, spec))
    ok, err = iree_opt_parses(text)
    assert not ok and f"custom op '{name}' is unknown" in err  # the reason all this exists
    respelled = iree_input_text(parse_mlir(text))
    assert respelled is not None
    ok, err = iree_opt_parses(respelled)
    assert ok, err


# ------------------------------------------------------------------------------- the first run


@pytest.mark.iree
@pytest.mark.slow
@needs_iree
def test_first_run_shows_irees_own_plan(capsys: pytest.CaptureFixture[str]) -> None:
    """``egg-dispatch explore`` on the built-in example, with IREE: explored from IREE's own start state
    of the program as read (so the same numbers), and IREE's own plan priced beside ours."""
    result = explore(EXAMPLE, "x86_64-avx512")
    info = result.input
    assert info is not None and info.explored_form == "set-encoding" and info.iree_plan
    assert not info.notes, info.notes  # no "DispatchCreation failed ...; explored as given"
    # IREE's start state holds the program we read: its numbers are einsum's of the example's fill.
    w = next(op.attributes["value"] for op in parse_file(EXAMPLE).walk() if op.name == "arith.constant")
    assert isinstance(w, DenseAttr) and w.array.shape == (16, 8)
    rng = np.random.default_rng(21100)
    x, y = (rng.standard_normal((8, 8)).astype(np.float32) for _ in range(2))
    top, bottom = evaluate(result.module, [x, y])
    wf = w.array.astype(np.float64)
    np.testing.assert_allclose(top, np.einsum("mk,nk->mn", wf[:8], x), rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(bottom, np.einsum("mk,nk->mn", wf[8:], y), rtol=1e-5, atol=1e-5)
    # IREE's own plan, from the same run, costed by our model and computing the same numbers.
    plan = iree_plan(info.iree_plan, result.target, result.imported.function)
    assert plan.candidate is not None, plan.error
    assert plan.printed_dispatches == 2 and plan.printed_encodes == 2 and plan.dispatch_count_sane
    checks = result.check(extra=[plan.candidate])
    assert len(checks) == 3 and all(r.ok for r in checks), [(r.label, r.max_rel_error, r.error) for r in checks]
    # The file path (iree-baseline, bench) gets the same: IREE compiles the program as read.
    assert iree_plan(EXAMPLE, "x86_64-avx512").candidate is not None
    # The README's command, as a newcomer runs it.
    assert main(["explore"]) == 0
    out, err = capsys.readouterr()
    for bad in ("not installed", "DispatchCreation failed", "unavailable", "is unknown"):
        assert bad not in out and bad not in err, bad
    assert "explored after iree-compile" in out and "IREE's SetEncoding" in out
    # The command shown is the one run: IREE was given the program as read, not the file.
    assert "explored after iree-compile - (the input as read: linalg.matmul_transpose_b respelled as" in out
    assert f"iree-compile {EXAMPLE}" not in out and "iree-compile <builtin" not in out
    # IREE's own plan is named beside ours, in the totals and on its plan line.
    assert re.search(r"^totals +ours +IREE +ours/IREE *$", out, re.M), out
    unwrapped = out.replace("\n    ", " ")  # the report wraps a plan's signature between its parts
    assert re.search(r"^IREE's own plan: .*encode dispatch\{linalg.fill, linalg.matmul", unwrapped, re.M), out
    assert "than IREE's own plan" in out  # the recommendation compares with IREE's own plan
    assert "note: linalg.matmul_transpose_b (retired upstream) read as linalg.matmul with indexing_maps" in out


@pytest.mark.iree
@pytest.mark.slow
@pytest.mark.skipif(
    any(find_tool(t) is None for t in ("iree-compile", "iree-benchmark-module", "iree-profile")),
    reason="IREE not installed",
)
def test_tune_and_bench_measure_irees_own_plan_of_the_example(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """``tune`` and ``bench`` compile IREE's own plan from the program as read, as explore does: on the
    built-in example (a retired op, an elided blob) it compiles, runs, computes the evaluator's numbers
    and is timed."""
    from egg_dispatch.emit.iree.module import runnable_here
    from egg_dispatch.measure.bench import bench

    measured = "x86_64-avx512" if runnable_here("x86_64-avx512")[0] else "x86_64-avx2"  # test_measured_costs.MEASURED
    args = ["tune", "--target", measured, "--top-k", "1", "--max-candidates", "1", "--repeats", "1",
            "--min-time", "0.01", "--cache", str(tmp_path / "m.sqlite"), "--emit", "json"]  # fmt: skip
    assert main(args) == 0
    (own,) = [p for p in json.loads(capsys.readouterr().out)["plans"] if p["is_iree"]]
    assert own["error"] is None and own["max_rel_error"] <= 1e-5 and own["measured_us"] is not None, own
    report = bench(EXAMPLE, measured, repeats=1, min_time=0.01)
    iree = report.plans[0]
    assert iree.kind == "iree" and iree.error is None and not report.notes, (iree.error, report.notes)
    assert iree.max_rel_error is not None and iree.max_rel_error <= 1e-5 and len(iree.measured) == 1
