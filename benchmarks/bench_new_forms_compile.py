"""Every plan of every new form compiles with IREE (issue 51: "every plan of every new form computes the
program and compiles").

``tests/test_new_forms_compute_the_program.py`` lists, per rule that adds a form, a lit case whose plans
hold it (``CASES``), and evaluates every plan ``opt`` prints against the program. Evaluating is cheap;
compiling is not (about a second a plan), so this script does the compiling, outside the suite: for
each case and target, every plan ``opt --max-plans 64`` prints goes through ``--emit iree``'s emitter
(``emit.iree.emit_iree``) and ``iree-compile --compile-from=dispatch-creation`` for the target's CPU
(``iree.dispatch_creation.iree_compile_flags``; compiling needs no CPU that runs the code). It prints one
line per case and target (plans compiled, plans IREE rejected, and the first error of each rejected one)
and the totals; exit 1 when IREE rejects any plan.

    .venv/bin/python benchmarks/bench_new_forms_compile.py [--target x86_64-avx2 ...] [--case SUBSTRING]
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from egg_dispatch.emit.iree.module import emit_iree  # noqa: E402
from egg_dispatch.iree.dispatch_creation import first_error_line, iree_compile_flags  # noqa: E402
from egg_dispatch.iree.tools import IreeError, compile_module  # noqa: E402
from egg_dispatch.mlir.ir import TensorType  # noqa: E402
from egg_dispatch.mlir.ops import function_type  # noqa: E402
from egg_dispatch.mlir.parser import parse_mlir  # noqa: E402
from egg_dispatch.target.profile import load_target  # noqa: E402
from tests.test_explore_property import run_cli  # noqa: E402
from tests.test_new_forms_compute_the_program import CASES, RULES  # noqa: E402


def plans_of(case: tuple[str, int, str], target: str) -> list[tuple[str, str]]:
    """(signature line, plan text) of every plan ``opt`` prints for the case's chunk on ``target``."""
    path, chunk, families = case
    text = (RULES / path).read_text().split("\n// -----\n")[chunk]
    with tempfile.TemporaryDirectory() as tmp:
        source = Path(tmp) / "case.mlir"
        source.write_text(text)
        rc, out, err = run_cli(["opt", str(source), "--rules", families, "--target", target, "--max-plans", "64"])
    if rc != 0:
        raise RuntimeError(f"opt exited {rc}: {err}")
    plans = []
    for chunk_text in out.split("\n// ----- plan ")[1:]:
        head, body = chunk_text.split("\n", 1)
        plans.append((head, body))
    return plans


ENCODED_ABI = "skipped: the function takes or returns encoded tensors, which IREE's ABI does not"


def compiles(plan_text: str, target: str) -> str | None:
    """None when IREE compiles the plan for ``target``, else IREE's first error line (or why it was not
    asked: a lit case's function whose signature holds encoded tensors is no program IREE's ABI takes)."""
    tgt = load_target(target)
    _, cpu, others = iree_compile_flags(tgt)
    module = parse_mlir(plan_text, "<plan>")
    ft = function_type(module.functions()[0])
    if any(isinstance(t, TensorType) and t.encoding is not None for t in (*ft.inputs, *ft.results)):
        return ENCODED_ABI
    try:
        text = emit_iree(module, tgt)
        compile_module(text, data_tiling=False, target_cpu=cpu, extra_flags=others, compile_from="dispatch-creation")
    except IreeError as e:
        return first_error_line(e.stderr)
    return None


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--target", action="append", help="a built-in target (default: x86_64-avx2 and x86_64-avx512)")
    ap.add_argument("--case", default="", help="only the cases whose lit file contains this text")
    args = ap.parse_args(argv)
    targets = args.target or ["x86_64-avx2", "x86_64-avx512"]
    start = time.perf_counter()
    total = rejected = skipped = 0
    for case in CASES:
        if args.case not in case[0]:
            continue
        for target in targets:
            plans = plans_of(case, target)
            answers = [(head, compiles(body, target)) for head, body in plans]
            errors = [(head, why) for head, why in answers if why is not None and why != ENCODED_ABI]
            unasked = sum(why == ENCODED_ABI for _, why in answers)
            total += len(plans) - unasked
            rejected += len(errors)
            skipped += unasked
            line = f"{case[0]}#{case[1]} [{case[2]}] {target}: {len(plans)} plans, {len(errors)} rejected"
            print(line + (f", {unasked} {ENCODED_ABI}" if unasked else ""), flush=True)
            for head, why in errors:
                print(f"    {head.split(':', 1)[0]}: {why}", flush=True)
    seconds = time.perf_counter() - start
    print(f"{total} plans compiled for {', '.join(targets)}: {rejected} rejected; {skipped} skipped ({seconds:.0f} s)")
    return 1 if rejected else 0


if __name__ == "__main__":
    sys.exit(main())
