"""Every notebook under ``notebooks/`` runs top to bottom without a cell error.

Each ``notebooks/*.ipynb`` is executed with nbclient on a fresh ``python3`` kernel (ipykernel's own
spec: jupyter_client starts it with this interpreter, so it sees the installed package), in a
scratch working directory, with a per-cell timeout. The outputs stored in the file are not compared
(``python tests/test_notebooks.py`` re-executes every notebook and stores its outputs in place); the
notebooks' own ``assert`` cells carry the checks. Notebooks must be self-contained: no network and nothing outside the
repository, which the static test below enforces on their code cells.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

import nbformat
import pytest
from nbclient import NotebookClient

pytestmark = pytest.mark.slow  # IREE builds, explorations at model size or long properties (docs/testing.md)

ROOT = Path(__file__).resolve().parent.parent
NOTEBOOK_DIR = ROOT / "notebooks"
NOTEBOOKS = sorted(NOTEBOOK_DIR.glob("*.ipynb"))
CELL_TIMEOUT = 120
"""Seconds per cell; the notebooks run in a few seconds, this only catches a hang."""

_FORBIDDEN = re.compile(r"https?://|/work/shared|\b(?:urllib|requests|httpx|socket)\b")


def test_notebooks_exist_and_are_indexed() -> None:
    assert NOTEBOOKS, "notebooks/ holds no notebook"
    index = (NOTEBOOK_DIR / "README.md").read_text()
    missing = [p.name for p in NOTEBOOKS if p.name not in index]
    assert not missing, f"notebooks/README.md does not list {missing}"


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.stem)
def test_notebook_is_self_contained(path: Path) -> None:
    nb = nbformat.read(path, as_version=4)
    nbformat.validate(nb)
    for i, cell in enumerate(nb.cells):
        if cell.cell_type == "code":
            hit = _FORBIDDEN.search(cell.source)
            assert hit is None, f"{path.name} cell {i}: {hit.group(0)!r} (network or files outside the repository)"


def execute(path: Path, cwd: Path) -> nbformat.NotebookNode:
    """Run the notebook on a fresh kernel in ``cwd``; return it with its outputs (no timing metadata,
    consecutive stream chunks merged, so a re-run of a deterministic notebook gives the same file).
    Raises ``nbclient.exceptions.CellExecutionError`` (with the cell and its traceback) on any error."""
    nb = nbformat.read(path, as_version=4)
    client = NotebookClient(
        nb, timeout=CELL_TIMEOUT, kernel_name="python3", record_timing=False, resources={"metadata": {"path": str(cwd)}}
    )
    client.execute()
    for cell in nb.cells:
        if cell.cell_type != "code":
            continue
        merged: list[nbformat.NotebookNode] = []
        for out in cell.outputs:
            prev = merged[-1] if merged else None
            if prev is not None and out.output_type == prev.output_type == "stream" and out.name == prev.name:
                prev.text += out.text
            else:
                merged.append(out)
        cell.outputs = merged
    return nb


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.stem)
def test_notebook_executes(path: Path, tmp_path: Path) -> None:
    nb = execute(path, tmp_path)
    errors = [o for c in nb.cells if c.cell_type == "code" for o in c.outputs if o.output_type == "error"]
    assert not errors


def main(argv: list[str]) -> int:
    """Re-execute the given notebooks (default: all) and store their outputs in place."""
    import tempfile

    for path in [Path(a).resolve() for a in argv] or NOTEBOOKS:
        with tempfile.TemporaryDirectory() as cwd:
            nbformat.write(execute(path, Path(cwd)), path)
        print(f"executed {path.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
