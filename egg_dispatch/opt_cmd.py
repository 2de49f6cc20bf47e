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


def _budget(text: str) -> dict[str, float]:
    """``iterations=10,enodes=50000,seconds=5`` (any subset) for --budget."""
    out: dict[str, float] = {}
    for part in text.split(","):
        key, _, value = part.partition("=")
        key = key.strip()
        if key not in ("iterations", "enodes", "seconds"):
            raise argparse.ArgumentTypeError(f"unknown budget limit '{key}' (iterations, enodes, seconds)")
        try:
            out[key] = float(value) if key == "seconds" else int(value)
        except ValueError:
            raise argparse.ArgumentTypeError(f"budget limit {key} needs a number, got '{value}'") from None
    return out


def budget_from_args(args: argparse.Namespace) -> Budget:
    """The saturation budget the flags ask for; a bad one is an InputError (exit 2)."""
    spec = {"iterations": args.max_iterations, "enodes": args.max_enodes, "seconds": args.max_seconds}
    spec.update(args.budget or {})
    try:
        return Budget(int(spec["iterations"]), int(spec["enodes"]), float(spec["seconds"]))
    except ValueError as e:
        raise InputError(f"error: {e}") from None


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
    p.add_argument(
        "--budget",
        type=_budget,
        metavar="SPEC",
        help="all three limits at once, e.g. 'iterations=10,enodes=50000,seconds=5' (overrides --max-*)",
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
        "--split-input-file",
        action="store_true",
        help="treat each '// -----'-separated chunk of FILE as its own module (as mlir-opt does)",
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
    graph, report = saturate(imported, target, families, budget_from_args(args))
    data = EGraphData.from_serialized(graph.serialized())
    materialized = args.materialize or "materialize" in families
    plans: list[Module] = []
    seen: set[str] = set()
    for choice in enumerate_plans(data, 50 * args.max_plans):
        term = build_term(data, normalize_choice(data, choice, materialized))
        plan = Emitter(imported, function).emit(term)  # type: ignore[arg-type]
        text = print_mlir(plan)
        if text in seen:  # choices that differ only in spelling emit the same IR
            continue
        seen.add(text)
        plans.append(plan)
        if len(plans) >= args.max_plans:
            break
    return plans, report


_QUIET = {"arith.constant", "tensor.empty", "flow.return", "util.return", "util.global.store"}


def plan_signature(plan: Module) -> str:
    """One line per plan for FileCheck: what each dispatch, encode and initializer computes.

    ``init{...}`` are load-time initializers, ``dispatch{...}`` run-time dispatches (ops in order,
    constants and empties left out), ``encode`` a ``flow.tensor.encode``.
    """
    parts: list[str] = []
    for top in plan.ops:
        if top.name == "util.initializer":
            inner = [o.name for o in top.regions[0].entry.ops if o.name not in _QUIET]
            parts.append("init{" + ", ".join(inner) + "}")
    func = next(op for op in plan.ops if op.name == "func.func")
    for op in func.regions[0].entry.ops:
        if op.name == "flow.dispatch.region":
            inner = [o.name for o in op.regions[0].entry.ops if o.name not in _QUIET]
            parts.append("dispatch{" + ", ".join(inner) + "}")
        elif op.name == "flow.tensor.encode":
            parts.append("encode")
        elif op.name not in _QUIET | {"func.return", "util.global.load"}:
            parts.append(op.name)
    return " ".join(parts)


def _chunks(args: argparse.Namespace) -> list[Module]:
    if not args.split_input_file or args.file in (None, "-"):
        return [load_input(args.file)]
    from pathlib import Path

    from .mlir.parser import parse_mlir

    text = Path(args.file).read_text()
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
    from .deep import allow_deep_recursion

    allow_deep_recursion()
    families = parse_families(args.rules)
    try:
        load_target(args.target)
    except TargetError as e:
        raise InputError(f"error: {e}") from None
    out = sys.stdout
    for index, module in enumerate(_chunks(args)):
        if index:
            out.write("// -----\n")
        names = [args.function] if args.function else [f.attributes["sym_name"].value for f in module.functions()]  # type: ignore[attr-defined]
        for name in names:
            try:
                prepared = prepare(module, name, not args.no_initial_plan)
                plans, report = plans_for_function(prepared, name, args, families)
            except (KeyError, ImportError_) as e:
                raise InputError(f"{module.file}: error: {e}") from None
            out.write(f"// ===== plans for @{name}: {len(plans)}; {report.render().replace(chr(10), '; ')}\n")
            for i, plan in enumerate(plans):
                out.write(f"// ----- plan {i} of @{name}: {plan_signature(plan)}\n")
                out.write(print_mlir(plan))
    return 0
