"""``egg-dispatch iree-baseline FILE [--target T]``: IREE's own dispatch plan next to ours, both costed by our model.

The modelled baseline in ``explore`` replays IREE's passes inside the e-graph; this command asks real IREE
instead. It runs ``iree-compile --compile-to=dispatch-creation`` with data tiling on the DispatchCreation
path and the target's CPU, imports what IREE prints (``flow.dispatch.workgroups``, hoisted
``util.global`` + ``util.initializer``, ``flow.tensor.encode``; the importer reads that form), and costs
that one plan with our model (``explore`` with no rule families and no modelled baseline: the e-graph then
holds exactly IREE's program). The dispatch count the model sees is checked against the ops IREE printed.

``iree_plan()`` is the reusable part (``bench`` uses it too). Exit codes: 0 ok, 1 our model cannot cost
IREE's plan, 2 bad input (unknown target, missing file, IREE rejects the input, IREE not installed).
"""

from __future__ import annotations

import argparse
import os
import sys
from dataclasses import dataclass, field
from pathlib import Path

from .cli import InputError
from .table import table_lines
from .targets import Target, TargetError, load_target

__all__ = [
    "IreePlan",
    "PlanRow",
    "dispatch_creation_text",
    "iree_compile_flags",
    "iree_plan",
    "plan_row",
    "register",
    "render_table",
    "run",
]


@dataclass(frozen=True)
class PlanRow:
    """One line of the comparison table: a plan's counts and our model's numbers for it."""

    label: str
    dispatches: int
    encode_dispatches: int
    globals: int
    persistent_bytes: int
    transient_bytes: int
    run_seconds: float


@dataclass
class IreePlan:
    """IREE's own plan for a program: the text IREE printed, what it holds, and our model's metrics."""

    target: str
    text: str
    """``iree-compile --compile-to=dispatch-creation`` output (post-dispatch-creation form)."""
    printed_dispatches: int
    """``flow.dispatch.workgroups`` in the function, as IREE printed them."""
    printed_encodes: int
    """Run-time ``flow.tensor.encode`` in the function (each a dispatch once Stream materializes it)."""
    printed_slices: int
    """Run-time ``flow.tensor.slice`` in the function (a copy each)."""
    printed_globals: int
    """``util.global``s other than the device."""
    candidate: object | None = None
    """The ``pipeline.Candidate`` our model built from IREE's plan (None when it could not cost it)."""
    error: str | None = None
    """Why our model could not cost the plan."""
    warnings: list[str] = field(default_factory=list)

    @property
    def metrics(self):
        """Our model's ``PlanMetrics`` for IREE's plan (raises when it could not be costed)."""
        if self.candidate is None:
            raise ValueError(f"our model could not cost IREE's plan: {self.error}")
        return self.candidate.metrics  # type: ignore[attr-defined]

    @property
    def dispatch_count_sane(self) -> bool:
        """The model counts what becomes a dispatch in IREE: each workgroups op and each run-time encode
        (Stream materializes it as an encoding dispatch); a ``flow.tensor.slice`` is a copy, not a dispatch."""
        if self.candidate is None:
            return False
        return self.metrics.dispatches == self.printed_dispatches + self.printed_encodes


def iree_compile_flags(target: str | Target) -> tuple[bool, str, list[str]]:
    """(data tiling?, ``--iree-llvmcpu-target-cpu`` value, other flags) for IREE compiling for ``target``.

    Data tiling is on except for ``none`` (a target without an encoding resolver: IREE without data tiling
    is what that target gets)."""
    from .emit_iree import iree_cpu

    tgt = load_target(target) if isinstance(target, str) else target
    cpu = iree_cpu(tgt)
    flags = list(cpu.compile_flags)
    name = next((f.split("=", 1)[1] for f in flags if f.startswith("--iree-llvmcpu-target-cpu=")), "generic")
    others = [f for f in flags if not f.startswith("--iree-llvmcpu-target-cpu=")]
    return tgt.encoding_resolver, name, others


def dispatch_creation_text(source: str | os.PathLike[str], target: str | Target) -> str:
    """IREE's program at the end of dispatch creation for ``target`` (raises ``IreeError`` on failure)."""
    from .iree_tools import compile_module

    data_tiling, cpu, others = iree_compile_flags(target)
    out = compile_module(
        source, data_tiling=data_tiling, target_cpu=cpu, extra_flags=[*others, "--compile-to=dispatch-creation"]
    )
    return out.decode()


def _count_printed(text: str) -> tuple[int, int, int, int]:
    from .mlir.parser import parse_mlir

    module = parse_mlir(text, "<iree dispatch-creation>")
    func = module.function()
    top = [op.name for op in func.regions[0].entry.ops]
    n_globals = sum(1 for op in module.ops if op.name == "util.global") - ("__device_0" in module.globals())
    return (
        top.count("flow.dispatch.workgroups"),
        top.count("flow.tensor.encode"),
        top.count("flow.tensor.slice"),
        n_globals,
    )


def iree_plan(
    module_text_or_path: str | os.PathLike[str], target: str | Target, function: str | None = None
) -> IreePlan:
    """IREE's own plan for a linalg-level program (text or path), costed by our model for ``target``.

    Input already in the post-dispatch-creation form (``flow.dispatch.workgroups`` present) is taken as
    IREE's plan as it is, without running IREE again.
    """
    from .pipeline import explore

    tgt = load_target(target) if isinstance(target, str) else target
    source: str | os.PathLike[str] = module_text_or_path
    if isinstance(source, os.PathLike) or ("\n" not in str(source) and Path(str(source)).is_file()):
        text_in = Path(source).read_text()
        source = Path(source)
    else:
        text_in = str(source)
    text = text_in if "flow.dispatch.workgroups" in text_in else dispatch_creation_text(source, tgt)
    dispatches, encodes, slices, n_globals = _count_printed(text)
    plan = IreePlan(tgt.name, text, dispatches, encodes, slices, n_globals)
    try:
        result = explore(text, tgt, families=(), baseline=False, function=function)
    except (ValueError, KeyError) as e:  # the model rejects a form IREE compiled (e.g. a fused pack it calls illegal)
        plan.error = str(e.args[0] if e.args else e)
        return plan
    plan.candidate = result.best
    plan.warnings = [w for w in result.warnings if "workgroup_count_from_slice" not in w]
    if not plan.dispatch_count_sane:
        plan.warnings.append(
            f"warning: the model counts {plan.metrics.dispatches} dispatches in IREE's plan, IREE printed "
            f"{dispatches} workgroups + {encodes} run-time encodes"
        )
    return plan


def plan_row(label: str, metrics: object) -> PlanRow:
    m = metrics
    return PlanRow(
        label,
        m.dispatches,  # type: ignore[attr-defined]
        m.encode_dispatches,  # type: ignore[attr-defined]
        m.globals,  # type: ignore[attr-defined]
        m.persistent_bytes,  # type: ignore[attr-defined]
        m.transient_bytes,  # type: ignore[attr-defined]
        m.run_seconds,  # type: ignore[attr-defined]
    )


def render_table(rows: list[PlanRow]) -> str:
    """A small fixed-width table (one line per plan)."""
    head = ("plan", "dispatches", "encodes", "globals", "persistent B", "transient B", "est. time")
    body = [
        (
            r.label,
            str(r.dispatches),
            str(r.encode_dispatches),
            str(r.globals),
            str(r.persistent_bytes),
            str(r.transient_bytes),
            f"{r.run_seconds * 1e6:.2f} us",
        )
        for r in rows
    ]
    return "\n".join(table_lines(head, body, left=1))


def register(sub: argparse._SubParsersAction) -> None:
    """Add the ``iree-baseline`` subcommand to the CLI."""
    p = sub.add_parser(
        "iree-baseline",
        help="IREE's own dispatch plan (iree-compile --compile-to=dispatch-creation) next to ours",
        description="Compile FILE with real IREE up to the end of dispatch creation (data tiling on, the target's "
        "CPU), import IREE's plan, cost it with our model and print it next to the plan explore chooses.",
    )
    p.add_argument("file", metavar="FILE", help="linalg-level MLIR input")
    p.add_argument("--target", default="x86_64-avx2", metavar="T", help="target profile (default x86_64-avx2)")
    p.add_argument("--show-iree", action="store_true", help="also print IREE's post-dispatch-creation MLIR")
    p.set_defaults(handler=run)


def _require_iree() -> None:
    from .iree_tools import find_tool

    if find_tool("iree-compile") is None:
        raise InputError("error: iree-compile not found (install egg-dispatch[iree] or put IREE on PATH)")


def first_error_line(stderr: str) -> str:
    """IREE's first ``error:`` line (its diagnostics are long; the CLI reports one line)."""
    for line in stderr.splitlines():
        if "error:" in line:
            return line.strip()
    return (stderr.strip().splitlines() or ["(no message)"])[0]


def run(args: argparse.Namespace) -> int:
    """Handler of ``egg-dispatch iree-baseline``."""
    from .iree_tools import IreeError
    from .pipeline import explore

    try:
        target = load_target(args.target)
    except TargetError as e:
        raise InputError(f"--target: error: {e}") from None
    path = Path(args.file)
    if not path.is_file():
        raise InputError(f"{args.file}: error: no such file")
    _require_iree()
    try:
        iree = iree_plan(path, target)
    except IreeError as e:
        raise InputError(f"{args.file}: IREE rejected the input: {first_error_line(e.stderr)}") from None
    ours = explore(path, target)
    for w in iree.warnings:
        print(w, file=sys.stderr)
    rows = [plan_row("ours (egg_dispatch best)", ours.best.metrics)]
    if ours.baseline is not None:
        rows.append(plan_row("IREE 3.13 passes, modelled", ours.baseline.metrics))
    if iree.candidate is not None:
        rows.append(plan_row("IREE 3.13, real (imported)", iree.metrics))
    print(f"@{ours.imported.function} on {target.name}: IREE's dispatch-creation output, costed by our model")
    print(render_table(rows))
    print(
        f"IREE printed {iree.printed_dispatches} flow.dispatch.workgroups, {iree.printed_encodes} run-time "
        f"flow.tensor.encode, {iree.printed_slices} flow.tensor.slice, {iree.printed_globals} hoisted globals"
    )
    if args.show_iree:
        print(iree.text.rstrip())
    if iree.candidate is None:
        print(f"error: our model cannot cost IREE's plan: {iree.error}", file=sys.stderr)
        return 1
    return 0
