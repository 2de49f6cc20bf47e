"""Explore's recommended plan compiles for x86_64-avx2 and x86_64-avx512 (issue 52, Done-when).

What a user gets from ``egg-dispatch explore FILE --target T --emit iree`` (the recommended plan: ours,
or IREE's own where the decision keeps it or ours cannot be written) is compiled by ``iree-compile
--compile-from=dispatch-creation --compile-to=executable-targets``: codegen included, where IREE's
rejections come from (vector sizes, stack limits, what it cannot legalize), serialization to a binary
not. All sources of one target go to one ``--split-input-file`` run
(``iree.compile_check.compile_units``: each module compiled alone, answered per module). The suite
turns measurement off (``EGG_DISPATCH_MEASURE=0``): the recommendation here is the model's.

Which pairs run where (an exploration of a model fixture takes 1-4 s, its compile about 1 s: every
model on both targets would add a minute of CPU to the suite):

* here: every linalg-level and IREE-phase fixture and every dynamic one (fixtures and model fixtures) on
  both targets, but for the pairs below;
* ``test_iree_plans.py`` compiles and runs the best plan of its ``CORPUS`` on both targets;
  ``test_model_explore.py`` the plan of each static model fixture's export on x86_64-avx2;
* ``benchmarks/bench_recommended_compile.py``: every pair of ``all_sources()``, models included (its
  last run in docs/measurements.md).

``tests/fixtures/dynamic/forms.mlir`` is a reader fixture, not a program: it holds every dynamic form
the reader models, ``flow.dispatch.region`` beside ``flow.dispatch.workgroups`` as no IREE phase prints
them, and IREE rejects it as given (checked here, so the exclusion stays true).
"""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from egg_dispatch.iree.compile_check import compile_units
from egg_dispatch.iree.dispatch_creation import iree_compile_flags
from egg_dispatch.iree.tools import find_tool, iree_available
from egg_dispatch.target.profile import load_target
from tests.cli_process import cli_process
from tests.test_iree_plans import CORPUS
from tests.test_model_explore import STATIC
from tests.test_model_explore import TARGET as MODEL_EXPLORE_TARGET

ROOT = Path(__file__).parent.parent
FIXTURES = ROOT / "tests" / "fixtures"
MODELS = FIXTURES / "models"
TARGETS = ("x86_64-avx2", "x86_64-avx512")
NOT_A_PROGRAM = FIXTURES / "dynamic" / "forms.mlir"
DYNAMIC_MODELS = ("attention_dyn", "mlp_dyn", "mlp_sym")

needs_iree = pytest.mark.skipif(not iree_available(), reason="IREE not installed (egg-dispatch[iree])")


def all_sources() -> list[Path]:
    """Every program among the fixtures a user could hand to explore: the linalg-level and IREE-phase
    fixtures, the dynamic ones, and each model fixture's export (``torch.mlir``, as a user exports it)."""
    return [
        *sorted(FIXTURES.glob("*.mlir")),
        *sorted(p for p in (FIXTURES / "dynamic").glob("*.mlir") if p != NOT_A_PROGRAM),
        *sorted(MODELS.glob("*/torch.mlir")),
    ]


def compiled_elsewhere() -> set[tuple[Path, str]]:
    """(source, target) pairs whose recommended plan another test of the suite compiles whole."""
    corpus = {(FIXTURES / f"{name}.mlir", t) for name in CORPUS for t in TARGETS}
    models = {(MODELS / name / "torch.mlir", MODEL_EXPLORE_TARGET) for name in STATIC}
    return corpus | models


def suite_pairs(target: str) -> list[Path]:
    """The sources this file compiles for ``target``: the fixtures and the dynamic models."""
    cheap = [s for s in all_sources() if s.parent.parent != MODELS or s.parent.name in DYNAMIC_MODELS]
    return [s for s in cheap if (s, target) not in compiled_elsewhere()]


def recommended_plans(sources: list[Path], target: str) -> list[str]:
    """``explore SOURCE --target TARGET --emit iree`` of each source (exit 0 asserted)."""
    texts = []
    for src in sources:
        done = cli_process("explore", str(src), "--target", target, "--emit", "iree")
        assert done.returncode == 0, f"{src.relative_to(ROOT)}: explore exited {done.returncode}\n{done.stderr}"
        assert "// -----" not in done.stdout  # one module per chunk of the split run
        texts.append(done.stdout)
    return texts


def test_every_fixture_is_compiled_somewhere() -> None:
    every = {(s, t) for s in all_sources() for t in TARGETS}
    assert len(all_sources()) >= 30, "the fixtures were not found"
    assert compiled_elsewhere() <= every, "a pair another test compiles is no fixture"
    here = {(s, t) for t in TARGETS for s in suite_pairs(t)}
    assert here.isdisjoint(compiled_elsewhere())
    models_left = every - here - compiled_elsewhere()
    assert all(s.parent.parent == MODELS for s, _ in models_left)  # only the benchmark's model pairs


@needs_iree
def test_the_reader_fixture_is_no_program_iree_compiles() -> None:
    _, cpu, others = iree_compile_flags("x86_64-avx2")
    tool = find_tool("iree-compile")
    assert tool is not None
    argv = [str(tool), str(NOT_A_PROGRAM), f"--iree-llvmcpu-target-cpu={cpu}", "--iree-hal-target-backends=llvm-cpu"]
    done = subprocess.run(
        [*argv, *others, "--compile-from=dispatch-creation", "--compile-to=executable-targets", "-o", "/dev/null"],
        capture_output=True, text=True, check=False,
    )  # fmt: skip
    assert done.returncode != 0 and "failed to legalize operation 'flow.dispatch.region'" in done.stderr


@pytest.mark.slow  # an exploration per source (1-2 s for a dynamic model), one iree-compile per target
@pytest.mark.iree
@needs_iree
@pytest.mark.parametrize("target", TARGETS)
def test_recommended_plans_compile(target: str) -> None:
    todo = suite_pairs(target)
    errors, _ = compile_units(recommended_plans(todo, target), load_target(target))
    rejected = [f"{s.relative_to(ROOT)}: {e}" for s, e in zip(todo, errors, strict=True) if e is not None]
    assert not rejected, f"IREE rejects the recommended plan on {target}:\n" + "\n".join(rejected)
