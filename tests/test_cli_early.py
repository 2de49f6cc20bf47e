"""The command line asks IREE for explore's start state before explore's modules load (``cli.early``).

What is read from the line (FILE right after ``explore``, ``--target`` and ``--from`` in full) and what
is not (abbreviations, ``--target-file``, a missing file: explore then asks IREE itself); the run asked
early is the one explore takes (same output as without it) and only for the same file, target and name;
importing the command line's package loads none of the e-graph's modules, or asking early would gain
nothing.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from egg_dispatch.cli import main
from egg_dispatch.cli.early import ask_iree_early, early_request
from egg_dispatch.iree import lowering
from egg_dispatch.iree.tools import find_tool
from egg_dispatch.target.host import HOST

FIXTURE = Path(__file__).parent / "fixtures" / "mlp2.mlir"


def test_what_is_read_from_the_line() -> None:
    f = str(FIXTURE)
    assert early_request(["explore", f]) == (FIXTURE, HOST, "auto")
    assert early_request(["explore", f, "--target", "x86_64-avx2", "--from=set-encoding"]) == (
        FIXTURE,
        "x86_64-avx2",
        "set-encoding",
    )
    with_emit = ["explore", f, "--emit", "json", "--target=x86_64-avx512"]
    assert early_request(with_emit) == (FIXTURE, "x86_64-avx512", "auto")
    for line in (
        ["explore", f, "--targ", "x86_64-avx2"],  # argparse takes abbreviations: not read here
        ["explore", f, "--fr", "input"],
        ["explore", f, "--target-file", "t.json"],
        ["explore", f, "--target"],  # a flag without its value: argparse's error to give
        ["explore", "--target", "x86_64-avx2", f],  # FILE not right after explore
        ["explore", str(FIXTURE.with_name("missing.mlir"))],
        ["run", f],
        ["explore"],
    ):
        assert early_request(line) is None, line


@pytest.mark.skipif(find_tool("iree-compile") is None, reason="IREE not installed")
def test_the_run_asked_early_is_the_one_explore_takes(capsys: pytest.CaptureFixture[str]) -> None:
    argv = ["explore", str(FIXTURE), "--target", "x86_64-avx2", "--no-measure", "--no-compile-check", "--emit", "json"]
    assert main(argv) == 0
    alone = capsys.readouterr().out
    lowering.forget_asked_early()
    ask_iree_early([*argv[:3], "x86_64-avx512"])  # another target: another run, not taken below
    ask_iree_early(["explore", str(FIXTURE), "--from", "input"])  # explored as given: nothing asked
    ask_iree_early(argv)
    assert len(lowering.asked_early()) == 2
    try:
        assert main(argv) == 0
        assert capsys.readouterr().out == alone
        (left,) = lowering.asked_early()  # the x86_64-avx512 run, still there
        assert left[4] == "cascadelake"  # the CPU IREE is told for x86_64-avx512
    finally:
        lowering.forget_asked_early()


def test_importing_the_command_line_loads_no_e_graph_module() -> None:
    heavy = "('egglog', 'networkx', 'egg_dispatch.pipeline')"
    code = f"import sys, egg_dispatch.cli; print(sorted(m for m in {heavy} if m in sys.modules))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=True).stdout
    assert out.strip() == "[]"
