"""Rule-regression tests in MLIR lit style: ``tests/rules/<family>/*.mlir`` through FileCheck.

Each file has one ``// RUN: egg-dispatch opt ... %s | filecheck %s`` line; the command runs
in-process (so coverage and the venv are the test's own) and its output goes to the ``filecheck``
package. A meta-test keeps families and test folders in step, in both directions.
"""

from __future__ import annotations

import contextlib
import io
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

from egg_dispatch.cli import main
from egg_dispatch.egraph.rules import FAMILIES

RULE_TESTS = Path(__file__).parent / "rules"
CASES = sorted(RULE_TESTS.glob("*/*.mlir"))


def _run_line(path: Path) -> list[str]:
    runs = [line.split("RUN:", 1)[1].strip() for line in path.read_text().splitlines() if line.startswith("// RUN:")]
    assert len(runs) == 1, f"{path}: expected exactly one RUN line"
    cmd, _, check = runs[0].partition("|")
    assert check.strip() == "filecheck %s", f"{path}: the RUN line must pipe into 'filecheck %s'"
    words = shlex.split(cmd.replace("%s", str(path)).replace("%S", str(path.parent)))
    assert words[:2] == ["egg-dispatch", "opt"], f"{path}: the RUN line must run 'egg-dispatch opt'"
    return words[1:]


@pytest.mark.slow
@pytest.mark.parametrize("path", CASES, ids=[f"{p.parent.name}/{p.name}" for p in CASES])
def test_rule_regression(path: Path) -> None:
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        rc = main(_run_line(path))
    assert rc == 0
    result = subprocess.run(
        [sys.executable, "-m", "filecheck", str(path)], input=out.getvalue(), capture_output=True, text=True
    )
    assert result.returncode == 0, f"FileCheck failed:\n{result.stdout}{result.stderr}"


def test_every_family_has_tests_and_every_test_names_a_family() -> None:
    folders = {p.name for p in RULE_TESTS.iterdir() if p.is_dir()}
    assert folders == set(FAMILIES), f"missing: {set(FAMILIES) - folders}; unknown: {folders - set(FAMILIES)}"
    for path in CASES:
        args = _run_line(path)
        rules = args[args.index("--rules") + 1].split(",")
        assert rules == [path.parent.name], f"{path} must run only its own family '{path.parent.name}'"
    for family in FAMILIES:
        text = "".join(p.read_text() for p in (RULE_TESTS / family).glob("*.mlir"))
        assert "@dont_" in text, f"family {family} has no @dont_* (refused) case"
