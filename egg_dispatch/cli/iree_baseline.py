"""``egg-dispatch iree-baseline FILE [--target T]``: IREE's own dispatch plan next to ours, both costed by our model.

The modelled baseline in ``explore`` replays IREE's passes inside the e-graph; this command asks real IREE
instead. It runs ``iree-compile --compile-to=dispatch-creation`` with data tiling on the DispatchCreation
path and the target's CPU, imports what IREE prints (``flow.dispatch.workgroups``, hoisted
``util.global`` + ``util.initializer``, ``flow.tensor.encode``, the ``flow.tensor.slice`` copies of hoisted
argument slices, ``flow.tensor.reshape`` between dispatches, encodings bubbled into elementwise consumers;
every op IREE prints for the programs tests/test_iree_own_plan.py surveys), and costs that one plan with our
model (``explore`` with no rule families and no modelled baseline: the e-graph then holds exactly IREE's
program). The dispatch count the model sees is checked against what IREE launches (workgroups, run-time
encodes, slice copies); warnings about IREE's output say so ("in IREE's own plan ...").

``--check`` evaluates IREE's plan (as imported: physically, for the target), our chosen plan and the
modelled baseline on seeded inputs against the input program's plain evaluation, as ``explore --check``
does (``--parameters`` for external weights).

The reusable part is ``pipeline.iree_plan()`` (``bench`` and ``explore --baseline`` use it too).
Exit codes: 0 ok, 1 our model cannot cost IREE's plan or ``--check`` found a plan that does not compute
the input's numbers, 2 bad input (unknown target, missing file, IREE rejects the input, IREE not installed).
"""

from __future__ import annotations

import argparse
import sys
from dataclasses import dataclass
from typing import TYPE_CHECKING

from egg_dispatch.cli.args import (
    TARGET_HELP,
    InputError,
    add_input_arguments,
    input_path,
    load_target_arg,
    parameters_from_args,
    target_spec,
)
from egg_dispatch.cli.assume import add_assume_argument
from egg_dispatch.cost import AssumeError
from egg_dispatch.iree.dispatch_creation import first_error_line
from egg_dispatch.pipeline import iree_plan
from egg_dispatch.target.host import HOST
from egg_dispatch.util.table import table_lines

if TYPE_CHECKING:
    from egg_dispatch.evaluate.parameters import Parameters
    from egg_dispatch.pipeline import IreePlan
    from egg_dispatch.plan.graph import PlanMetrics
    from egg_dispatch.result.exploration import Exploration

__all__ = [
    "PlanRow",
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


def plan_row(label: str, metrics: PlanMetrics) -> PlanRow:
    m = metrics
    return PlanRow(
        label,
        m.dispatches,
        m.encode_dispatches,
        m.globals,
        m.persistent_bytes,
        m.transient_bytes,
        m.run_seconds,
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
    p.add_argument("--target", type=target_spec, default=HOST, metavar="T", help=TARGET_HELP)
    p.add_argument("--show-iree", action="store_true", help="also print IREE's post-dispatch-creation MLIR")
    add_assume_argument(p)
    p.add_argument(
        "--check",
        action="store_true",
        help="evaluate IREE's plan, ours and the modelled baseline with NumPy on seeded inputs against the input; "
        "exit 1 on a mismatch",
    )
    add_input_arguments(p, start=False)
    p.set_defaults(handler=run)


def _require_iree() -> None:
    from egg_dispatch.iree.tools import find_tool

    if find_tool("iree-compile") is None:
        raise InputError("error: iree-compile not found (install egg-dispatch[iree] or put IREE on PATH)")


def run(args: argparse.Namespace) -> int:
    """Handler of ``egg-dispatch iree-baseline``."""
    from egg_dispatch.iree.tools import IreeError
    from egg_dispatch.pipeline import UnsupportedInput, explore

    target = load_target_arg(args.target)
    path = input_path(args.file)  # missing, or a directory: one line, exit 2
    _require_iree()
    parameters = parameters_from_args(args, path)  # checked before IREE runs
    try:
        iree = iree_plan(path, target, assume=args.assume)
        ours = explore(path, target, assume=args.assume)
    except IreeError as e:
        raise InputError(f"{args.file}: IREE rejected the input: {first_error_line(e.stderr)}") from None
    except AssumeError as e:
        raise InputError(f"error: {e}") from None
    except UnsupportedInput as e:  # a plan the model cannot build (its message names the op and where)
        raise InputError(str(e)) from None
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
    failed = _check(ours, iree, parameters) if args.check else False
    if iree.candidate is None:
        print(f"error: our model cannot cost IREE's plan: {iree.error}", file=sys.stderr)
        return 1
    return 1 if failed else 0


def _check(ours: Exploration, iree: IreePlan, parameters: Parameters) -> bool:
    """``Exploration.check`` with IREE's imported plan among the plans (it is evaluated like them: a plan
    that cannot be evaluated fails); prints one line per plan on stderr, returns whether any failed."""
    import dataclasses

    from egg_dispatch.evaluate.values import EvaluationError

    extra = []
    if iree.candidate is not None:
        extra = [dataclasses.replace(iree.candidate, label="IREE 3.13, real (imported)")]
    try:
        results = ours.check(parameters=parameters, extra=extra)
    except EvaluationError as e:
        raise InputError(str(e)) from None
    for w in parameters.warnings:
        print(w, file=sys.stderr)
    failed = False
    for r in results:
        if r.skipped:
            print(f"check skipped: {r.label}: {r.skipped}", file=sys.stderr)
        elif r.error:
            print(f"check FAILED: {r.label}: the plan cannot be evaluated: {r.error}", file=sys.stderr)
        else:
            status = "ok" if r.ok else "MISMATCH"
            print(
                f"check {status}: {r.label}: max relative error {r.max_rel_error:.2e} (tolerance {r.tolerance:.2e})",
                file=sys.stderr,
            )
        failed |= bool(r.error) or not r.ok
    return failed
