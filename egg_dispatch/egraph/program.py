"""The egglog e-graph of one imported function: build it, measure it, serialize it.

Uses egglog's low-level bindings and sends text (one program per import): egglog 14 parses a whole
program at once without the memory blow-up of 13.x (docs/egglog.md §1.4-1.5).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass

from egglog import bindings

from egg_dispatch.egraph.imported import ImportedProgram
from egg_dispatch.egraph.terms import SCHEMA

__all__ = ["EGraphSize", "ProgramGraph"]


@dataclass(frozen=True)
class EGraphSize:
    enodes: int
    """Rows of every constructor and function table: the practical e-node count (docs/egglog.md §1.3)."""
    eclasses: int
    by_function: tuple[tuple[str, int], ...]


class ProgramGraph:
    """An e-graph holding the schema and one imported function (its roots are ``$root``)."""

    def __init__(self, imported: ImportedProgram, extra: str = ""):
        self.imported = imported
        self.egraph = bindings.EGraph()
        self.egraph.parse_and_run_program(SCHEMA)
        if extra:
            self.egraph.parse_and_run_program(extra)
        self.egraph.parse_and_run_program(imported.text())

    def run(self, program: str) -> Sequence[object]:
        return self.egraph.parse_and_run_program(program)

    def _print_size(self) -> list[tuple[str, int]]:
        """Rows per function table, as egglog's ``(print-size)`` gives them."""
        out = self.run("(print-size)")[-1]
        assert isinstance(out, bindings.PrintAllFunctionsSize), out
        return out.sizes

    def serialized(self) -> dict:
        """egraph-serialize JSON (node ids are byte-identical across processes in egglog 14)."""
        return json.loads(self.egraph.serialize([]).to_json())

    def enodes(self) -> int:
        """E-node rows only (cheap: no serialization); what the saturation budget checks."""
        return sum(n for _, n in self._print_size())

    def size(self) -> EGraphSize:
        sizes = tuple(sorted(self._print_size()))
        data = self.serialized()
        classes = {n["eclass"] for n in data["nodes"].values()}
        return EGraphSize(sum(n for _, n in sizes), len(classes), sizes)
