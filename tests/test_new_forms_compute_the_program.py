"""Every plan the rules hold for a form they newly derive computes the program's numbers: an encode fused
into its producer's dispatch through a reshape (``rules/fuse_encode.egg``), an accumulator's
set_encoding hoisted (``rules/hoist.egg``), a consumer with a scalar argument run on the encoded
accumulator (of a contraction written as a generic too; reading its indices, materialized too), on
whichever input reads it, or writing it transposed (``rules/sink_unset.egg``), a set_encoding bubbled
above a dequantization, a transpose or a broadcast (``rules/propagate_bubble.egg``), a fill, a
dequantization or an empty cloned into the dispatch that reads it, or a slice between dispatches copied
by a dispatch of its own for the reshape that reads it (``rules/clone.egg``) or returned by the function
(``rules/flow_copies.egg``: a slice, rank-reducing or strided, loaded by an insert's copy too), an
encode fused after an attention op through reshapes (``rules/fuse_encode.egg``), a reshape and its
inverse folded to their source or a chain of them between dispatches as one ``flow.tensor.reshape``
(``rules/noop_reshape.egg``), a dispatch of a const-expr generic evaluated at load
(``rules/const_eval.egg``), a slice, reshape or transpose of a constant read as the constant it folds into
(``rules/fold_constants.egg``). Each lit case shows the form is among the plans; here every plan ``opt``
prints for the case is evaluated with the target's packed layouts against the program evaluated as
written, plain.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from egg_dispatch.emit.iree.device import runnable_here
from egg_dispatch.emit.iree.module import emit_iree
from egg_dispatch.evaluate import evaluate, select_function
from egg_dispatch.evaluate.check import function_inputs
from egg_dispatch.iree.tools import compile_module, iree_available, run_module
from egg_dispatch.mlir.ir import Module
from egg_dispatch.mlir.parser import parse_mlir
from tests.test_explore_property import run_cli

RULES = Path(__file__).parent / "rules"
CASES = {
    # (lit file, chunk, families): a plan signature fragment only the new form has
    ("fuse/fuse_encode_through_reshape.mlir", 0, "fuse,hoist"): (
        "iree_encoding.unset_encoding, tensor.expand_shape, iree_encoding.set_encoding}"
    ),
    (
        "hoist/hoist_set_encoding.mlir",
        -1,
        "hoist",
    ): "encode encode encode dispatch{linalg.matmul, iree_encoding.unset_encoding}",
    ("clone/clone_producers.mlir", 0, "clone,hoist"): "dispatch{linalg.fill, linalg.matmul}",
    ("clone/clone_producers.mlir", 1, "clone,hoist,fuse"): "dispatch{linalg.generic, linalg.fill, linalg.matmul}",
    ("clone/clone_producers.mlir", 4, "clone"): "dispatch{linalg.fill, linalg.generic} dispatch{linalg.fill}",
    ("clone/clone_slice_before_reshape.mlir", 0, "clone"): (  # q/k/v copied, each reshaped in the consumer
        "dispatch{tensor.expand_shape, tensor.extract_slice} dispatch{tensor.expand_shape, tensor.extract_slice} "
        "dispatch{tensor.expand_shape, tensor.extract_slice} "
        "dispatch{tensor.expand_shape, tensor.expand_shape, tensor.expand_shape, linalg.generic}"
    ),
    ("clone/clone_slice_before_reshape.mlir", 1, "clone"): (
        "dispatch{tensor.extract_slice} dispatch{tensor.expand_shape, linalg.generic}"
    ),
    ("propagate/bubble_through_elementwise.mlir", 1, "propagate,hoist"): (
        "dispatch{iree_encoding.set_encoding, iree_encoding.set_encoding, linalg.generic, linalg.fill"
    ),
    ("propagate/bubble_through_elementwise.mlir", 3, "propagate,hoist"): "encode encode dispatch{linalg.generic}",
    ("propagate/bubble_through_elementwise.mlir", 4, "propagate,hoist"): "encode dispatch{linalg.generic}",
    ("propagate/bubble_through_elementwise.mlir", 8, "propagate,hoist"): "encode encode dispatch{linalg.generic}",
    ("sink_unset/sink_elementwise.mlir", 4, "sink_unset,fuse"): (
        "linalg.matmul, iree_encoding.set_encoding, linalg.generic, iree_encoding.unset_encoding}"
    ),
    ("sink_unset/sink_encoded_argument_dynamic.mlir", 0, "sink_unset"): (
        "dispatch{linalg.generic, iree_encoding.unset_encoding}"
    ),
    ("sink_unset/sink_elementwise.mlir", 5, "sink_unset,fuse"): (  # the second residual on its own accumulator
        "dispatch{iree_encoding.set_encoding, iree_encoding.set_encoding, iree_encoding.set_encoding, linalg.fill, "
        "linalg.matmul, iree_encoding.set_encoding, linalg.generic, iree_encoding.unset_encoding}"
    ),
    ("sink_unset/sink_elementwise.mlir", 6, "sink_unset"): (  # a transposing consumer on the accumulator
        "linalg.matmul, linalg.generic, iree_encoding.unset_encoding}"
    ),
    ("sink_unset/sink_generic_contraction.mlir", 0, "sink_unset"): (  # after a contraction written as a generic
        "linalg.generic, linalg.generic, iree_encoding.unset_encoding}"
    ),
    ("sink_unset/sink_elementwise.mlir", 7, "sink_unset"): (  # a body reading linalg.index, encoded
        "linalg.matmul, linalg.generic, iree_encoding.unset_encoding}"
    ),
    ("sink_unset/sink_elementwise.mlir", 7, "sink_unset,materialize"): (  # ... and on the tiles
        "linalg.mmt4d, linalg.generic, linalg.unpack}"
    ),
    ("noop/fold_reshape_round_trip.mlir", 0, "noop"): ": dispatch{linalg.generic}",  # the pair folded away
    ("noop/fold_reshape_round_trip.mlir", 4, "noop"): ": dispatch{linalg.generic}",
    # a chain of reshapes between dispatches as the one flow.tensor.reshape IREE folds it into
    (
        "noop/fold_reshape_chain.mlir",
        0,
        "noop",
    ): "dispatch{linalg.generic} flow.tensor.reshape dispatch{linalg.generic}",
    (
        "noop/fold_reshape_chain.mlir",
        1,
        "noop",
    ): "dispatch{linalg.generic} flow.tensor.reshape dispatch{linalg.generic}",
    ("noop/fold_reshape_chain.mlir", 3, "noop"): "dispatch{linalg.generic} flow.tensor.reshape",  # returned
    (  # ... cloned into its reader's dispatch: a collapse to one dim and an expand there
        "noop/fold_reshape_chain.mlir",
        5,
        "noop",
    ): "dispatch{tensor.collapse_shape, tensor.expand_shape, linalg.generic}",
    # ... with a dynamic size, pair by pair, each with its source's sizes (noop_reshape.egg conditions 9-12)
    ("noop/fold_sized_reshape_chain.mlir", 0, "noop"): (
        ": dispatch{linalg.generic} flow.tensor.reshape dispatch{linalg.generic}"
    ),
    ("noop/fold_sized_reshape_chain.mlir", 1, "noop"): (
        ": dispatch{linalg.generic} flow.tensor.reshape dispatch{linalg.generic}"
    ),
    ("noop/fold_sized_reshape_chain.mlir", 2, "noop"): ": dispatch{linalg.generic} dispatch{linalg.generic}",  # source
    ("noop/fold_sized_reshape_chain.mlir", 3, "noop"): (  # two sources of other sizes, each folded with its own
        "flow.tensor.reshape dispatch{tensor.expand_shape, tensor.collapse_shape, linalg.generic} "
        "flow.tensor.reshape dispatch{linalg.generic}"
    ),
    ("noop/fold_reshape_round_trip.mlir", 5, "noop"): (  # a rank-reducing slice expanded back: the slice
        "dispatch{linalg.generic} tensor.extract_slice tensor.extract_slice"
    ),
    ("const_eval/const_eval_dispatch.mlir", 0, "const_eval"): ": init{linalg.generic} dispatch{linalg.generic}",
    ("const_eval/const_eval_dispatch.mlir", 3, "const_eval"): ": init{tensor.collapse_shape, linalg.generic}",
    ("clone/clone_rank_reducing_slice.mlir", 0, "clone"): (  # rank-reducing q/k copied, reshaped in the consumer
        "dispatch{tensor.expand_shape, tensor.extract_slice} dispatch{tensor.expand_shape, tensor.extract_slice} "
        "dispatch{tensor.expand_shape, tensor.expand_shape, linalg.generic}"
    ),
    ("clone/clone_rank_reducing_slice.mlir", 1, "clone"): (
        "dispatch{tensor.extract_slice} dispatch{tensor.expand_shape, linalg.generic}"
    ),
    ("clone/flow_copies.mlir", 0, "clone"): (  # a concatenation: each insert copied, into the previous copy
        "dispatch{tensor.insert_slice} dispatch{tensor.insert_slice}"
    ),
    ("clone/flow_copies.mlir", 1, "clone"): (  # a KV cache: the same, the reshape a view of the copy
        "dispatch{tensor.insert_slice} dispatch{tensor.insert_slice} tensor.collapse_shape"
    ),
    ("clone/flow_copies.mlir", 5, "clone"): (  # an output split in two, each part copied on its own
        "dispatch{linalg.generic} dispatch{tensor.extract_slice} dispatch{tensor.extract_slice}"
    ),
    ("clone/flow_copies.mlir", 7, "clone"): (  # a rank-reducing slice a gather reads, as IREE's load
        "dispatch{tensor.extract_slice, linalg.generic}"
    ),
    ("clone/flow_copies.mlir", 3, "clone"): (  # a strided slice of an argument, loaded by its insert's copy
        "dispatch{tensor.extract_slice, tensor.insert_slice} dispatch{tensor.insert_slice}"
    ),
    ("clone/flow_copies.mlir", 9, "clone"): (  # a rank-reducing slice of a view copied; the copy reshaped twice
        "dispatch{tensor.expand_shape, tensor.extract_slice, tensor.insert_slice} tensor.expand_shape "
        "tensor.collapse_shape"
    ),
    ("fuse/fuse_encode_through_reshape.mlir", 4, "fuse"): (  # an attention's result reshaped and encoded
        "dispatch{iree_linalg_ext.attention, tensor.expand_shape, tensor.collapse_shape, iree_encoding.set_encoding}"
    ),
    ("hoist/hoist_opaque_consumer.mlir", 0, "hoist"): (  # a set_encoding an opaque generic reads, hoisted
        "encode dispatch{linalg.generic, iree_encoding.unset_encoding}"
    ),
    ("clone/clone_into_opaque_ops.mlir", 0, "clone"): "dispatch{linalg.fill, linalg.generic}",  # into an opaque op
    ("clone/clone_into_opaque_ops.mlir", 1, "clone"): "dispatch{tensor.extract, linalg.generic}",
    ("clone/clone_into_opaque_ops.mlir", 2, "clone"): (  # a slice cloned, the fill it slices left in its dispatch
        "dispatch{linalg.fill} dispatch{tensor.extract_slice, linalg.generic}"
    ),
    ("sink_unset/sink_transposed_read.mlir", 0, "sink_unset"): (  # read transposed, a bias with the inverse map
        "linalg.matmul, iree_encoding.set_encoding, linalg.generic, iree_encoding.unset_encoding}"
    ),
    ("sink_unset/sink_transposed_read.mlir", 1, "sink_unset"): (  # on an identity-layout accumulator
        "dispatch{iree_encoding.set_encoding, linalg.generic, iree_encoding.unset_encoding}"
    ),
    ("sink_unset/sink_transposed_write.mlir", 0, "sink_unset"): (  # f32 x f16, written transposed, encoded
        "linalg.matmul, linalg.generic, iree_encoding.unset_encoding}"
    ),
    ("propagate/bubble_through_elementwise.mlir", 9, "propagate"): (  # an identity layout, a 3-cycle output map
        "dispatch{iree_encoding.set_encoding, linalg.generic}"
    ),
    ("clone/encode_copies.mlir", 0, "clone,hoist"): (  # a split's part copied, reshaped, then encoded at top level
        "dispatch{tensor.extract_slice} dispatch{tensor.expand_shape, iree_encoding.set_encoding} dispatch{"
    ),
    ("clone/encode_copies.mlir", 1, "clone"): (  # ... of an argument, encoded in the contraction's dispatch
        "dispatch{tensor.extract_slice} dispatch{tensor.expand_shape, iree_encoding.set_encoding, "
    ),
    ("fuse/fuse_encode_linalg.mlir", 0, "fuse"): (  # an encode fused after a generic contraction's collapse
        "dispatch{linalg.fill, linalg.generic, tensor.collapse_shape, iree_encoding.set_encoding}"
    ),
    # a slice, a reshape, a chain of them, a transpose of a constant read as the constant they fold into
    ("const_eval/fold_constants.mlir", 0, "const_eval"): ": dispatch{linalg.generic}",
    ("const_eval/fold_constants.mlir", 1, "const_eval"): ": dispatch{linalg.generic}",
    ("const_eval/fold_constants.mlir", 2, "const_eval"): ": dispatch{linalg.generic}",
    ("const_eval/fold_constants.mlir", 3, "const_eval"): ": dispatch{linalg.generic}",
}
IDENTITY_CASE = ("fuse/fuse_encode_through_reshape_identity_layout.mlir", 0, "fuse,noop")
"""On target none every layout is the identity: ``noop`` folds the encode fused through the reshape, and
the dispatch that computed the bias add returns it reshaped. The cost model, the plan graph and the
emitter must read that as a dispatch (``cost.is_view_dispatch``), not as a reshape between dispatches."""

SIZES = {
    ("sink_unset/sink_encoded_argument_dynamic.mlir", 0, "sink_unset"): {"arg0.d1": 24, "arg2": 24},
    ("noop/fold_sized_reshape_chain.mlir", 0, "noop"): {"arg0.d1": 5},
    ("noop/fold_sized_reshape_chain.mlir", 1, "noop"): {"arg0.d0": 3},
    ("noop/fold_sized_reshape_chain.mlir", 2, "noop"): {"arg0.d0": 7},
    ("noop/fold_sized_reshape_chain.mlir", 3, "noop"): {"arg0.d0": 3},
}
"""The dynamic sizes a case runs at (``arg2`` is the size argument naming ``arg0.d1``)."""


def test_a_reshape_returned_by_the_dispatch_that_computes_it_computes_the_program(tmp_path: Path) -> None:
    form = "dispatch{linalg.fill, linalg.matmul, linalg.generic, tensor.expand_shape}"
    check_every_plan(IDENTITY_CASE, form, "none", tmp_path)


@pytest.mark.parametrize("target", ["x86_64-avx2", "x86_64-avx512"])
@pytest.mark.parametrize("case", list(CASES), ids=[f"{c[0]}#{c[1]}" for c in CASES])
def test_every_plan_of_a_new_form_computes_the_program(case: tuple[str, int, str], target: str, tmp_path: Path) -> None:
    check_every_plan(case, CASES[case], target, tmp_path)


def check_every_plan(case: tuple[str, int, str], form: str, target: str, tmp_path: Path) -> None:
    """``opt`` on the case's chunk holds a plan with ``form`` in its signature, and every plan it prints
    computes the program's numbers on ``target``."""
    path, chunk, families = case
    text = (RULES / path).read_text().split("\n// -----\n")[chunk]
    source = tmp_path / "case.mlir"
    source.write_text(text)
    rc, out, err = run_cli(["opt", str(source), "--rules", families, "--target", target, "--max-plans", "64"])
    assert rc == 0, err
    plans = out.split("\n// ----- plan ")[1:]
    assert any(form in p.split("\n", 1)[0] for p in plans), "no plan has the new form"
    program = parse_mlir(text, path)
    inputs = function_inputs(select_function(program), seed=3, sizes=SIZES.get(case))
    want = evaluate(program, inputs)
    for plan_text in plans:
        plan = parse_mlir(plan_text.split("\n", 1)[1], "<plan>")
        for got, ref in zip(evaluate(plan, inputs, target=target), want, strict=True):
            np.testing.assert_allclose(got, ref, rtol=1e-5, atol=1e-5)


def the_plan_ending_with(case: tuple[str, int, str], form: str, tmp_path: Path) -> tuple[Module, Module]:
    """The case's program, and the one plan ``opt`` prints for it (x86_64-avx2) whose signature ends with
    ``form``."""
    path, chunk, families = case
    text = (RULES / path).read_text().split("\n// -----\n")[chunk]
    source = tmp_path / "case.mlir"
    source.write_text(text)
    rc, out, err = run_cli(["opt", str(source), "--rules", families, "--target", "x86_64-avx2"])
    assert rc == 0, err
    plans = [p for p in out.split("\n// ----- plan ")[1:] if p.split("\n", 1)[0].endswith(form)]
    assert len(plans) == 1, out
    return parse_mlir(text, path), parse_mlir(plans[0].split("\n", 1)[1], "<plan>")


def compiled_for_avx2(emitted: str) -> bytes:
    return compile_module(emitted, data_tiling=False, target_cpu="haswell", compile_from="dispatch-creation")


def assert_iree_computes_the_program(
    vmfb: bytes, function: str, program: Module, sizes: dict[str, int] | None = None
) -> None:
    """On an x86-64 host with AVX2, IREE's numbers for the compiled plan are the program's (at ``sizes``,
    its dynamic sizes)."""
    inputs = function_inputs(select_function(program), seed=3, sizes=sizes)
    if not runnable_here("x86_64-avx2")[0]:
        pytest.skip("compiled only: this CPU does not run x86-64 AVX2 code")
    for got, ref in zip(run_module(vmfb, function, inputs), evaluate(program, inputs), strict=True):
        np.testing.assert_allclose(np.asarray(got), ref, rtol=1e-6, atol=1e-6)


@pytest.mark.skipif(not iree_available(), reason="IREE not installed")
def test_a_reshape_chain_folded_between_dispatches_compiles_and_runs_on_iree(tmp_path: Path) -> None:
    """The plan spelling a chain of reshapes between dispatches as the one ``flow.tensor.reshape``
    (rules/noop_reshape.egg conditions 7-8) is IREE input: ``--emit iree`` of it compiles, for a CPU any
    x86-64 host runs, and IREE's numbers are the program's."""
    form = ": dispatch{linalg.generic} flow.tensor.reshape dispatch{linalg.generic}"
    program, plan = the_plan_ending_with(("noop/fold_reshape_chain.mlir", 0, "noop"), form, tmp_path)
    vmfb = compiled_for_avx2(emit_iree(plan, "x86_64-avx2"))
    assert_iree_computes_the_program(vmfb, "fold_reshape_chain", program)


@pytest.mark.skipif(not iree_available(), reason="IREE not installed")
def test_a_dynamic_reshape_chain_folded_between_dispatches_compiles_and_runs_on_iree(tmp_path: Path) -> None:
    """The plan spelling a chain of reshapes with a dynamic size as the one ``flow.tensor.reshape``, its size
    operands the source's and the last result's (rules/noop_reshape.egg conditions 9-11), is IREE input:
    ``--emit iree`` of it compiles, and IREE's numbers are the program's."""
    form = ": dispatch{linalg.generic} flow.tensor.reshape dispatch{linalg.generic}"
    case = ("noop/fold_sized_reshape_chain.mlir", 1, "noop")
    program, plan = the_plan_ending_with(case, form, tmp_path)
    vmfb = compiled_for_avx2(emit_iree(plan, "x86_64-avx2"))
    assert_iree_computes_the_program(vmfb, "fold_a_dynamic_chain_of_three", program, SIZES[case])


@pytest.mark.skipif(not iree_available(), reason="IREE not installed")
def test_a_folded_constant_compiles_and_runs_on_iree(tmp_path: Path) -> None:
    """The plan reading the constant a reshape of a slice of a constant folds into (rules/fold_constants.egg)
    is IREE input: ``--emit iree`` of it compiles, and on an x86-64 host with AVX2 IREE's numbers are the
    program's."""
    case = ("const_eval/fold_constants.mlir", 2, "const_eval")
    program, plan = the_plan_ending_with(case, ": dispatch{linalg.generic}", tmp_path)
    vmfb = compiled_for_avx2(emit_iree(plan, "x86_64-avx2"))
    assert_iree_computes_the_program(vmfb, "fold_a_reshape_of_a_slice_of_a_constant", program)


@pytest.mark.skipif(not iree_available(), reason="IREE not installed")
def test_a_dispatch_storing_a_slice_of_its_fill_compiles_and_runs_on_iree(tmp_path: Path) -> None:
    """A dispatch that fills a tensor and stores a slice of it (the start state of clone condition 10's
    case: ``dispatch{linalg.fill, tensor.extract_slice}``) is IREE input once ``--emit iree`` writes the
    slice of the fill as a fill of the slice (MLIR's SwapExtractSliceWithFill, as IREE's own
    canonicalizations do): without it IREE's codegen rejects the dispatch. IREE's numbers are the program's."""
    form = ": dispatch{linalg.fill, tensor.extract_slice} dispatch{linalg.generic}"
    program, plan = the_plan_ending_with(("clone/clone_into_opaque_ops.mlir", 2, "clone"), form, tmp_path)
    emitted = emit_iree(plan, "x86_64-avx2")
    assert "tensor.extract_slice" not in emitted and emitted.count("linalg.fill") == 1
    compiled_for_avx2(emitted)
    # its numbers: the evaluator runs the emitted IREE module (IREE's runtime takes no f32 scalar argument
    # from run_module, which passes every input as a buffer view)
    inputs = function_inputs(select_function(program), seed=3)
    got = evaluate(parse_mlir(emitted, "<emitted>"), inputs)
    for g, ref in zip(got, evaluate(program, inputs), strict=True):
        np.testing.assert_allclose(g, ref, rtol=1e-6, atol=1e-6)
