"""``egg-dispatch opt``: run selected rule families and print every plan the e-graph holds.

This is the driver of the rule-regression tests (``tests/rules/<family>/*.mlir``): each plan is
printed as MLIR in ``flow.dispatch.region`` form, so FileCheck can assert that an alternative is
(or is not) among them.
"""

from __future__ import annotations

import argparse
import sys

from .cli import InputError, load_input
from .egraph_data import EGraphData, build_term
from .emit import Emitter, normalize_choice
from .enumerate import enumerate_plans
from .importer import ImportError_, import_function
from .mlir.ir import Module
from .mlir.printer import print_mlir
from .rules import FAMILIES, Budget, saturate
from .targets import TargetError, load_target

__all__ = ["add_budget_arguments", "parse_families", "plans_for_function", "register"]


def parse_families(text: str) -> tuple[str, ...]:
    if text == "all":
        return FAMILIES
    names = tuple(n.strip() for n in text.split(",") if n.strip())
    unknown = [n for n in names if n not in FAMILIES]
    if unknown or not names:
        raise InputError(
            f"error: unknown rule family '{','.join(unknown) or text}' (known: {', '.join(FAMILIES)}, all)"
        )
    return names


def add_budget_arguments(p: argparse.ArgumentParser) -> None:
    d = Budget()
    p.add_argument(
        "--rules",
        default="all",
        metavar="LIST",
        help=f"comma-separated rule families to run ({', '.join(FAMILIES)}) or 'all' (default)",
    )
    p.add_argument(
        "--target",
        default="x86_64-avx512",
        metavar="T",
        help="built-in target name or a target JSON file (default: x86_64-avx512)",
    )
    p.add_argument(
        "--max-iterations",
        type=int,
        default=d.iterations,
        metavar="N",
        help=f"saturation budget: iterations (default {d.iterations})",
    )
    p.add_argument(
        "--max-enodes", type=int, default=d.enodes, metavar="N", help=f"saturation budget: e-nodes (default {d.enodes})"
    )
    p.add_argument(
        "--max-seconds",
        type=float,
        default=d.seconds,
        metavar="S",
        help=f"saturation budget: seconds (default {d.seconds:g})",
    )
    p.add_argument("--function", metavar="NAME", help="only this function (default: every function)")


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "opt",
        help="run rule families and print every plan (rule-regression driver)",
        description="Run the selected rule families on FILE and print every plan the e-graph "
        "represents, as MLIR (for FileCheck).",
    )
    p.add_argument("file", nargs="?", metavar="FILE|-", help="MLIR input; '-' reads stdin; default: built-in example")
    add_budget_arguments(p)
    p.add_argument("--max-plans", type=int, default=64, metavar="N", help="print at most N plans per function")
    p.add_argument(
        "--materialize",
        action="store_true",
        help="spell encodings as linalg.pack/mmt4d/unpack (default: when 'materialize' runs)",
    )
    p.add_argument(
        "--no-initial-plan",
        action="store_true",
        help="import the input as it is instead of first forming IREE's data-tiling start state",
    )
    p.set_defaults(handler=run)


def prepare(module: Module, function: str | None, initial: bool) -> Module:
    if not initial:
        return module
    try:
        from .initial_plan import initial_plan
    except ModuleNotFoundError:  # pragma: no cover - partial checkouts
        return module
    return initial_plan(module, function)


def plans_for_function(module: Module, function: str, args: argparse.Namespace, families: tuple[str, ...]):
    target = load_target(args.target)
    imported = import_function(module, function)
    budget = Budget(args.max_iterations, args.max_enodes, args.max_seconds)
    graph, report = saturate(imported, target, families, budget)
    data = EGraphData.from_serialized(graph.serialized())
    materialized = args.materialize or "materialize" in families
    plans = []
    for choice in enumerate_plans(data, args.max_plans):
        term = build_term(data, normalize_choice(data, choice, materialized))
        plans.append(Emitter(imported, function).emit(term))  # type: ignore[arg-type]
    return plans, report


def run(args: argparse.Namespace) -> int:
    families = parse_families(args.rules)
    try:
        load_target(args.target)
    except TargetError as e:
        raise InputError(f"error: {e}") from None
    module = load_input(args.file)
    names = [args.function] if args.function else [f.attributes["sym_name"].value for f in module.functions()]  # type: ignore[attr-defined]
    out = sys.stdout
    for name in names:
        try:
            prepared = prepare(module, name, not args.no_initial_plan)
            plans, report = plans_for_function(prepared, name, args, families)
        except (KeyError, ImportError_) as e:
            raise InputError(f"{module.file}: error: {e}") from None
        out.write(f"// ===== @{name}: {len(plans)} plan(s); {report.render().replace(chr(10), '; ')}\n")
        for i, plan in enumerate(plans):
            out.write(f"// ----- plan {i} of @{name}\n")
            out.write(print_mlir(plan))
    return 0
