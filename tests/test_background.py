"""Work beside the caller (``util.background``): a call in a forked child hands back its value or its
exception, only where the process allowed children (else on a thread); the command line prices IREE's
own plan in a child and says what a run in one process says."""

from __future__ import annotations

import json
import os
import pickle
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest

from egg_dispatch.egraph.importer import import_function
from egg_dispatch.iree.tools import find_tool
from egg_dispatch.mlir.ir import DenseAttr
from egg_dispatch.mlir.parser import parse_file
from egg_dispatch.pipeline import OWN_PLAN_NICENESS
from egg_dispatch.start.initial_plan import initial_plan
from egg_dispatch.util.background import allow_child_processes, in_child
from tests.cli_process import cli_process

FIXTURE = Path(__file__).parent / "fixtures" / "mlp2.mlir"


@pytest.fixture
def children() -> Iterator[None]:
    allow_child_processes()
    try:
        yield
    finally:
        allow_child_processes(False)


class _Unpicklable(Exception):
    def __reduce__(self):  # type: ignore[override]
        raise TypeError("not this one")


def _raise_unpicklable() -> None:
    raise _Unpicklable("deep inside")


def test_without_leave_the_call_runs_on_a_thread_of_this_process() -> None:
    assert in_child(os.getpid).result(timeout=30) == os.getpid()


@pytest.mark.skipif(not hasattr(os, "fork"), reason="no fork here")
def test_a_child_hands_back_its_value_or_its_exception(children: None) -> None:
    assert in_child(os.getpid).result(timeout=30) != os.getpid()
    assert in_child(lambda: {"plan": [1, 2.5, "x"]}).result(timeout=30) == {"plan": [1, 2.5, "x"]}
    with pytest.raises(KeyError, match="missing"):
        in_child(lambda: {}["missing"]).result(timeout=30)
    with pytest.raises(RuntimeError, match="_Unpicklable: deep inside"):
        in_child(_raise_unpicklable).result(timeout=30)
    with pytest.raises(ChildProcessError, match="ended without an answer"):
        in_child(lambda: os._exit(3), "gone").result(timeout=30)


@pytest.mark.skipif(not hasattr(os, "fork"), reason="no fork here")
def test_a_nicer_child_yields_the_cpu_and_this_process_keeps_its_priority(children: None) -> None:
    """IREE's own plan is priced by a child at ``pipeline.OWN_PLAN_NICENESS``: it runs on what the
    exploration leaves idle; the parent's own niceness is untouched."""
    mine = os.nice(0)
    nicer = in_child(lambda: os.nice(0), niceness=OWN_PLAN_NICENESS).result(timeout=30)
    assert nicer == min(19, mine + OWN_PLAN_NICENESS)
    assert in_child(lambda: os.nice(0)).result(timeout=30) == mine
    assert os.nice(0) == mine


@pytest.mark.skipif(find_tool("iree-compile") is None, reason="IREE not installed")
def test_the_command_prices_iree_own_plan_in_a_child_as_one_process_does() -> None:
    args = ["explore", str(FIXTURE), "--target", "x86_64-avx2", "--no-measure", "--no-compile-check", "--emit", "json"]
    alone = cli_process(*args)  # the library's way: IREE's plan priced on a thread
    assert alone.returncode == 0, alone.stderr
    command = [sys.executable, "-m", "egg_dispatch", *args]  # the same cache directory: the report names it
    forked = subprocess.run(command, capture_output=True, text=True, timeout=300)
    assert forked.returncode == 0, forked.stderr
    report = json.loads(forked.stdout)
    assert "IREE 3.13 iree-compile" in report["baseline"]["label"]  # IREE's own plan came back priced
    assert forked.stdout == alone.stdout


@pytest.mark.skipif(not hasattr(os, "fork"), reason="no fork here")
def test_a_child_does_not_outlive_its_parent(tmp_path: Path) -> None:
    """A parent killed mid-call (not its process group: the child gets no signal) leaves no child behind."""
    pid_file = tmp_path / "child.pid"
    code = (
        "import os, time\n"
        "from egg_dispatch.util.background import allow_child_processes, in_child\n"
        "allow_child_processes()\n"
        f"def work():\n    open({str(pid_file)!r}, 'w').write(str(os.getpid()))\n    time.sleep(60)\n"
        "in_child(work)\n"
        "time.sleep(60)\n"
    )
    parent = subprocess.Popen([sys.executable, "-c", code])
    try:
        for _ in range(600):
            if pid_file.is_file() and pid_file.read_text():
                break
            time.sleep(0.05)
        child = int(pid_file.read_text())
    finally:
        parent.kill()
        parent.wait()
    for _ in range(100):  # the child notices within a second
        try:
            os.kill(child, 0)
        except ProcessLookupError:
            return
        time.sleep(0.05)
    os.kill(child, 9)
    pytest.fail("the child outlived its parent by 5 s")


def test_what_a_child_hands_back_pickles_without_the_whole_input() -> None:
    """An import's constants pickle: a folded one (its values made when first read) as its fold, an
    input's hex literal as its own digits, not the whole text it is a span of."""
    fixtures = Path(__file__).parent / "fixtures"
    imported = import_function(initial_plan(parse_file(fixtures / "qkv_const.mlir")))
    folded = {k: v for k, v in imported.constants.items() if k.startswith("folded_")}
    assert folded and not any(v.decoded for v in folded.values())
    back = pickle.loads(pickle.dumps(imported))
    for key, value in folded.items():
        assert np.array_equal(back.constants[key].array, value.array)  # the fold, run after the trip
    source = (fixtures / "random_model_14.mlir").read_text()
    module = parse_file(fixtures / "random_model_14.mlir")
    attrs = [a for op in module.walk() for a in op.attributes.values()]
    hexes = [a for a in attrs if isinstance(a, DenseAttr) and a.hex_data is not None]
    assert hexes
    for value in hexes:
        assert len(pickle.dumps(value)) < len(value.hex_data.hex()) + 1000 < len(source)
        assert np.array_equal(pickle.loads(pickle.dumps(value)).array, value.array)


class _Unpicklable_Why(str):
    def __reduce__(self):  # type: ignore[override]
        raise TypeError("this answer does not pickle")


@pytest.mark.skipif(not hasattr(os, "fork"), reason="no fork here")
def test_an_answer_the_child_cannot_hand_back_is_priced_here(children: None, monkeypatch: pytest.MonkeyPatch) -> None:
    """IREE's own plan priced in a child that cannot pickle its answer is priced again in this process:
    explore still answers (here the faked pricing's reason, called once in this process)."""
    import egg_dispatch.pipeline as pipeline

    here: list[int] = []

    def price(*args, **kwargs):  # type: ignore[no-untyped-def]
        here.append(os.getpid())
        return None, _Unpicklable_Why("IREE said no")

    monkeypatch.setattr(pipeline, "price_iree_own", price)
    result = pipeline.explore(FIXTURE, "x86_64-avx2", compile_check=False, iree_own_plan=True)
    assert result.iree_own is None and result.iree_own_error == "IREE said no"
    assert here == [os.getpid()]  # the child's call is not seen here; the one made here is
