"""IREE's own passes as the oracle of the rules: is the plan IREE's pass makes of a program one of the
plans the matching rule families hold for it?

For a case (a program in ``flow.dispatch.region`` form, as IREE's DispatchCreation lit tests write
them) and one of IREE's passes (``PASSES``): ``iree-opt`` runs IREE 3.13's pass on it; the program is
imported as it is (no start state of ours: it is one already) and saturated with the families that
mirror the pass; IREE's output is imported on its own, with no rule, and looked up in that e-graph
(``egraph.membership``). Both are then evaluated on the same seeded inputs, with the target's packed
layouts, so the plan read back from IREE computes what the program does.

The answer (``OracleResult.status``): ``in`` (its ``detail`` says when the numbers could not be checked:
an op the evaluator has no semantics for, or a dynamic program whose inputs it cannot size); ``missing``
(with the first decision of IREE's plan the e-graph lacks); ``iree-rejects`` (IREE's pass refuses the
input: nothing to compare); ``unread`` (our reader or importer refuses the input or IREE's output: a bug
when IREE accepts it); ``numbers`` (IREE's plan, as read, computes other numbers than the program).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from egg_dispatch.egraph.data import EGraphData
from egg_dispatch.egraph.imported import ImportedProgram, ImportError_
from egg_dispatch.egraph.importer import import_function
from egg_dispatch.egraph.membership import Membership, plan_membership
from egg_dispatch.egraph.rules import saturate
from egg_dispatch.evaluate import EvaluationError, evaluate, select_function
from egg_dispatch.evaluate.check import function_inputs, relative_error
from egg_dispatch.evaluate.sizes import check_sizes
from egg_dispatch.iree.dispatch_creation import first_error_line
from egg_dispatch.iree.tools import IreeError, iree_opt_passes
from egg_dispatch.mlir.ir import Module
from egg_dispatch.mlir.ops import sym_name
from egg_dispatch.mlir.parser import MLIRSyntaxError, parse_mlir
from egg_dispatch.target.profile import Target, load_target

__all__ = ["PASSES", "IreePass", "OracleResult", "oracle", "saturated"]


@dataclass(frozen=True)
class IreePass:
    """One of IREE's DispatchCreation passes, as ``iree-opt`` runs it, and the families mirroring it."""

    pipeline: str
    families: tuple[str, ...]
    source: str
    """The IREE source file of the pass (iree-org/iree, ``compiler/src/iree/compiler/DispatchCreation/``)."""


def _on_functions(p: str) -> str:
    """``p`` on every ``util.func`` and ``func.func`` of the module."""
    return f"builtin.module(util.func({p}),func.func({p}))"


PASSES = {
    "hoist": IreePass(
        "builtin.module(iree-dispatch-creation-hoist-encoding-ops,cse)",
        ("hoist", "const_eval", "propagate", "fuse", "sink_unset"),
        "HoistEncodingOps.cpp",
    ),
    "propagate": IreePass(
        _on_functions("iree-dispatch-creation-propagate-encodings"), ("propagate", "hoist"), "PropagateEncodings.cpp"
    ),
    "fuse": IreePass(
        _on_functions("iree-dispatch-creation-fuse-encoding-ops-into-dispatch-regions-pass"),
        ("fuse", "hoist", "propagate"),
        "FuseEncodingOpsIntoDispatchRegions.cpp",
    ),
    "clone": IreePass(
        _on_functions("iree-dispatch-creation-clone-producers-into-dispatch-regions"),
        ("clone", "hoist", "fuse"),
        "CloneProducersIntoDispatchRegions.cpp",
    ),
}
"""The passes the rule families mirror (the families asked are those a plan of the pass can need)."""

TOLERANCE = 1e-5
"""Relative error allowed between the program's and IREE's plan's numbers (f32 reassociation)."""


@dataclass
class OracleResult:
    status: str
    """``in``, ``missing``, ``iree-rejects``, ``unread`` or ``numbers`` (module docstring)."""
    detail: str = ""
    """What is missing, what was refused (the first line of the error), or the numbers' error."""
    membership: Membership | None = None
    iree_text: str = ""
    """IREE's output."""


def saturated(
    module: Module, target: Target, families: Sequence[str], function: str | None = None
) -> tuple[EGraphData, ImportedProgram]:
    """``function`` of ``module`` (default: its first public one) imported as it is and saturated with
    ``families``: its e-graph's data and the import."""
    function = function or sym_name(select_function(module))
    imported = import_function(module, function)
    graph, _ = saturate(imported, target, tuple(families))
    data = EGraphData.from_serialized(graph.serialized())
    graph.release()
    return data, imported


def _only_choice(data: EGraphData) -> dict[str, str]:
    """The one plan of an e-graph no rule ran on: its first node per class that is not a self-loop,
    refused by legality or not (it is the plan as IREE made it)."""
    out = {}
    for c, nids in data.classes.items():
        if data.is_term_class(c):
            loose = [n for n in nids if c not in data.nodes[n].children]
            out[c] = (loose or nids)[0]
    return out


def oracle(
    text: str, iree_pass: str | IreePass, target: str | Target = "x86_64-avx2", *, seed: int = 0
) -> OracleResult:
    """Run IREE's pass (a name of ``PASSES``, or a pipeline with its families) on ``text`` and ask
    whether its plan is one of ours."""
    tgt = load_target(target) if isinstance(target, str) else target
    p = PASSES[iree_pass] if isinstance(iree_pass, str) else iree_pass
    pass_name = iree_pass if isinstance(iree_pass, str) else p.pipeline
    try:
        out = iree_opt_passes(text, p.pipeline)
    except IreeError as e:
        return OracleResult("iree-rejects", first_error_line(e.stderr or str(e)))
    try:
        program = parse_mlir(text, "<case>")
        plan_module = parse_mlir(out, f"<IREE's {pass_name}>")
        ours, imported = saturated(program, tgt, p.families)
        theirs, plan_imported = saturated(plan_module, tgt, ())
    except (MLIRSyntaxError, ImportError_, ValueError, KeyError) as e:
        return OracleResult("unread", first_error_line(str(e.args[0] if e.args else e)), iree_text=out)
    m = plan_membership(ours, imported, theirs, _only_choice(theirs), plan_imported)
    if not m.in_egraph:
        return OracleResult("missing", m.missing or "", m, out)
    try:
        func = select_function(program)
        inputs = function_inputs(func, seed, check_sizes(func)[0])  # a dynamic program at sizes it allows
        want = evaluate(program, inputs, target=tgt)
        got = evaluate(plan_module, inputs, target=tgt)
    except (EvaluationError, TypeError, ValueError) as e:  # an op the evaluator lacks, or sizes it cannot make
        return OracleResult("in", f"numbers not checked ({first_error_line(str(e))})", m, out)
    worst = max((relative_error(np.asarray(a), np.asarray(b)) for a, b in zip(got, want, strict=True)), default=0.0)
    if len(got) != len(want) or worst > TOLERANCE:
        return OracleResult("numbers", f"relative error {worst:.3g}", m, out)
    return OracleResult("in", (m.refused and f"legality refuses {m.refused}") or "", m, out)
