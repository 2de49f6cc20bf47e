"""``egg-dispatch opt``: run selected rule families and print every plan the e-graph holds.

This is the driver of the rule-regression tests (``tests/rules/<family>/*.mlir``): each plan is
printed as MLIR in ``flow.dispatch.region`` form, so FileCheck can assert that an alternative is
(or is not) among them.
"""

from __future__ import annotations

import argparse
import sys

from egg_dispatch.cli.args import (
    InputError,
    add_budget_arguments,
    budget_from_args,
    input_path,
    load_input,
    load_target_arg,
    parse_families,
    positive_int,
)
from egg_dispatch.cli.assume import add_assume_argument
from egg_dispatch.cost import AssumeError, size_plan
from egg_dispatch.egraph.data import EGraphData, build_term
from egg_dispatch.egraph.enumerate import EnumerationBudget, enumerate_plans
from egg_dispatch.egraph.imported import ImportError_
from egg_dispatch.egraph.importer import import_function
from egg_dispatch.egraph.rules import saturate
from egg_dispatch.emit.choice import normalize_choice
from egg_dispatch.emit.dims import UnknownSize
from egg_dispatch.emit.emitter import Emitter, class_shapes
from egg_dispatch.emit.signature import plan_signature
from egg_dispatch.mlir.ir import Module
from egg_dispatch.mlir.ops import sym_name
from egg_dispatch.mlir.printer import print_mlir
from egg_dispatch.target.profile import load_target
from egg_dispatch.util.deadline import Deadline

__all__ = ["plans_for_function", "register", "run"]


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "opt",
        help="run rule families and print every plan (rule-regression driver)",
        description="Run the selected rule families on FILE and print every plan the e-graph "
        "represents, as MLIR (for FileCheck).",
    )
    p.add_argument("file", nargs="?", metavar="FILE|-", help="MLIR input; '-' reads stdin; default: built-in example")
    add_budget_arguments(p)
    p.add_argument("--max-plans", type=positive_int, default=64, metavar="N", help="print at most N plans per function")
    p.add_argument(
        "--materialize",
        action="store_true",
        help="spell encodings as linalg.pack/mmt4d/unpack (default: when 'materialize' runs)",
    )
    p.add_argument(
        "--split-input-file",
        action="store_true",
        help="treat each '// -----'-separated chunk of FILE as its own module (as mlir-opt does)",
    )
    p.add_argument(
        "--no-initial-plan",
        action="store_true",
        help="import the input as it is instead of first forming IREE's data-tiling start state",
    )
    add_assume_argument(p)
    p.set_defaults(handler=run)


def prepare(module: Module, function: str | None, initial: bool) -> Module:
    """IREE's data-tiling start state for ``function`` (or the input as it is)."""
    if not initial:
        return module
    from egg_dispatch.start.initial_plan import initial_plan

    return initial_plan(module, function)


def plans_for_function(module: Module, function: str, args: argparse.Namespace, families: tuple[str, ...]):
    target = load_target(args.target)
    imported = import_function(module, function)
    size_plan(imported, getattr(args, "assume", None) or None)  # --assume: the sizes the facts must hold for
    budget = budget_from_args(args)
    graph, report = saturate(imported, target, families, budget)
    # Saturated, a class legality emptied means "no legal plan" (what rule tests check); stopped early by
    # the budget, the start state's own forms stand in until an alternative is derived.
    data = EGraphData.from_serialized(graph.serialized(), keep_refused=not report.saturated)
    graph.release()
    if data.kept_refused:
        report.stop_reason += "; plans keep forms legality refuses (no alternative derived yet)"
    materialized = args.materialize or "materialize" in families
    plans: list[Module] = []
    seen: set[str] = set()
    clock = Deadline(budget.seconds)  # the enumeration is a stage of its own (util.deadline)
    try:
        for choice in enumerate_plans(data, 50 * args.max_plans, deadline=clock):
            term = build_term(data, normalize_choice(data, choice, materialized))
            plan = Emitter(imported, function, class_shapes(data)).emit(term)
            text = print_mlir(plan)
            if text in seen:  # choices that differ only in spelling emit the same IR
                continue
            seen.add(text)
            plans.append(plan)
            if len(plans) >= args.max_plans:
                break
    except EnumerationBudget as e:
        report.stop_reason += f"; {e}: the plans found so far"
    return plans, report


def _explored_functions(module: Module) -> list[str]:
    """Every function of ``module`` but the ABI wrappers that only call another one (IREE's synchronous
    ``@main`` around ``@main$async``: explore explores the function it calls)."""
    from egg_dispatch.emit.iree.abi import abi_shell

    names = [sym_name(f) for f in module.defined_functions()]
    wrappers = {sym_name(w) for n in names if (shell := abi_shell(module, n)) is not None for w in shell.wrappers}
    return [n for n in names if n not in wrappers]


def _chunks(args: argparse.Namespace) -> list[Module]:
    if not args.split_input_file or args.file in (None, "-"):
        return [load_input(args.file)]

    from egg_dispatch.mlir.parser import parse_mlir, read_text

    text = read_text(input_path(args.file))  # not UTF-8: a positioned syntax error, as for one module
    modules = []
    lines = text.split("\n")
    start = 0
    for i, line in enumerate([*lines, "// -----"]):
        if line.strip() == "// -----":
            # Keep line numbers: pad each chunk with the blank lines before it.
            chunk = "\n" * start + "\n".join(lines[start:i])
            if chunk.strip():
                modules.append(parse_mlir(chunk, args.file))
            start = i + 1
    return modules


def run(args: argparse.Namespace) -> int:
    from egg_dispatch.util.deep import allow_deep_recursion

    allow_deep_recursion()
    families = parse_families(args.rules)
    load_target_arg(args.target)
    out = sys.stdout
    for index, module in enumerate(_chunks(args)):
        if index:
            out.write("// -----\n")
        names = [args.function] if args.function else _explored_functions(module)
        for name in names:
            try:
                prepared = prepare(module, name, not args.no_initial_plan)
                plans, report = plans_for_function(prepared, name, args, families)
            except (KeyError, ImportError_, AssumeError) as e:
                raise InputError(f"{module.file}: error: {e.args[0] if e.args else e}") from None
            except UnknownSize as e:
                raise InputError(f"{e.loc or module.file}: error: {e}") from None
            out.write(f"// ===== plans for @{name}: {len(plans)}; {report.render().replace(chr(10), '; ')}\n")
            for i, plan in enumerate(plans):
                out.write(f"// ----- plan {i} of @{name}: {plan_signature(plan)}\n")
                out.write(print_mlir(plan))
    return 0
