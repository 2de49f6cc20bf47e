"""``egg-dispatch explore``: read a program, import it into the e-graph, report what is there.

Until the rule families and the extractor land, explore prints the parsed program's summary
(functions, ops by kind, constants and their bytes) and the e-graph's size after import.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections import Counter
from dataclasses import asdict, dataclass

from .cli import InputError, load_input
from .egraph import ProgramGraph
from .importer import ImportedProgram, ImportError_, import_function
from .mlir.ir import DenseAttr, Module

__all__ = ["ProgramSummary", "add_arguments", "run", "summarize"]


@dataclass(frozen=True)
class ConstantInfo:
    name: str
    type: str
    bytes: int
    source: str
    """``dense``, ``hex``, ``resource`` (with blob) or ``resource-elided`` (filled deterministically)."""


@dataclass(frozen=True)
class ProgramSummary:
    file: str
    functions: list[str]
    function: str
    ops_by_kind: dict[str, int]
    constants: list[ConstantInfo]
    constant_bytes: int
    opaque_ops: list[str]
    imported_terms: dict[str, int]
    egraph_enodes: int
    egraph_eclasses: int
    warnings: list[str]


def summarize(module: Module, imported: ImportedProgram, graph: ProgramGraph) -> ProgramSummary:
    from .mlir.printer import Printer

    kinds = Counter(op.name for op in module.walk())
    consts: list[ConstantInfo] = []
    for key, attr in imported.constants.items():
        assert isinstance(attr, DenseAttr)
        source = attr.form
        if attr.form == "resource" and attr.resource_key not in module.resources:
            source = "resource-elided"
        consts.append(ConstantInfo(key, Printer().type(attr.type), attr.type.nbytes, source))
    size = graph.size()
    opaque = sorted({op.name for op in module.walk() if op.opaque_text is not None})
    return ProgramSummary(
        file=module.file,
        functions=[f.attributes["sym_name"].value for f in module.functions()],  # type: ignore[attr-defined]
        function=imported.function,
        ops_by_kind=dict(sorted(kinds.items())),
        constants=consts,
        constant_bytes=sum(c.bytes for c in consts),
        opaque_ops=opaque,
        imported_terms=imported.counts(),
        egraph_enodes=size.enodes,
        egraph_eclasses=size.eclasses,
        warnings=list(module.warnings) + list(imported.warnings),
    )


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--function", metavar="NAME", help="function to explore (default: the first public one)")
    p.add_argument(
        "--emit",
        choices=("text", "json"),
        default="text",
        help="report format: a readable text report (default) or JSON for scripts",
    )


def run(args: argparse.Namespace) -> int:
    module = load_input(args.file)
    for w in module.warnings:
        print(w, file=sys.stderr)
    try:
        imported = import_function(module, args.function)
    except KeyError as e:
        raise InputError(f"{module.file}: error: {e.args[0]}") from None
    except ImportError_ as e:
        raise InputError(f"{module.file}: error: {e}") from None
    graph = ProgramGraph(imported)
    summary = summarize(module, imported, graph)
    if args.emit == "json":
        data = asdict(summary)
        data["warnings"] = [w for w in data["warnings"]]
        print(json.dumps(data, indent=2, sort_keys=True))
    else:
        print(render_text(summary))
    return 0


def render_text(s: ProgramSummary) -> str:
    lines = [f"file: {s.file}", f"functions: {', '.join('@' + f for f in s.functions)} (exploring @{s.function})"]
    lines.append("ops by kind:")
    width = max((len(k) for k in s.ops_by_kind), default=0)
    lines += [f"  {k:<{width}}  {n}" for k, n in s.ops_by_kind.items()]
    lines.append(f"constants: {len(s.constants)}, {s.constant_bytes} bytes")
    lines += [f"  {c.name}: {c.type}, {c.bytes} B ({c.source})" for c in s.constants]
    if s.opaque_ops:
        lines.append(f"opaque ops (barriers): {', '.join(s.opaque_ops)}")
    terms = ", ".join(f"{k} {n}" for k, n in s.imported_terms.items())
    lines.append(f"imported terms: {terms}")
    lines.append(f"e-graph after import: {s.egraph_enodes} e-nodes, {s.egraph_eclasses} e-classes")
    return "\n".join(lines)
