"""What ``explore`` shows: a text report, Markdown for notebooks, JSON for scripts, DOT for graphs.

JSON schema (``"schema": "egg-dispatch/explore/1"``), stable and deterministic (no timings unless
asked for; ``decision.measurement``, when explore measured its recommendation on this machine, holds
measured intervals: ``--no-measure`` for a report that is a function of its input alone)::

    {schema, file, function, target, lambda,
     input: {form, explored_form, steps: [str], notes: [str]} | null,
     egraph: {enodes, eclasses, iterations, stop_reason, rule_matches: {rule: n}},
     best: PLAN, baseline: PLAN & {in_egraph, missing, missing_all?, refused, redundant?} | null, pareto: [PLAN],
     warnings: [str], stops?: [{stage, seconds, handed_on}] (stages that reached their budget,
     util.deadline), decision?: {keep_iree, reason, basis: "measured" | "model only", not_measured?: str,
       measurement?: {verdict, interval: {mean, lo, hi} | null, rounds, max_rounds, ended, stopped_early,
       matched_by, ours_only, iree_only, call_ratio, cached, recorded, detail}}  (the CLI's recommendation,
       ``result.decision``),
     compile_check?: {status, reason, checked, shared_with_iree, not_checked, compiled, rounds, seeded,
                      excluded: [{dispatch, error, nodes}], kept: [...]}}  (``iree.compile_check``)
    PLAN = {label, signature, objective, run_seconds, load_seconds, persistent_bytes,
            transient_bytes, peak_live_bytes, dispatches: [{name, ops, bytes_in, bytes_out,
            seconds, seconds_max_form, holds}], globals: [{name, bytes, initializer_ops, holds}],
            contractions: [{layer, role, shape, weight, data_tiled, placements, dispatch, location, per_call}],
            extraction: {method, objective, optimal, gap, seconds?} | null, mlir}

and, with a baseline, ``differences_from_iree: [{who, layers, locations, ours, iree, ours_per_call,
iree_per_call, faster, verdict}]`` (``summary.diff_entries``; ``*_per_call``: ``{seconds, kernel,
kernel_seconds, encode_decode_seconds, steps: [{what, seconds, own_dispatch, shared_by}]} | null``, the
contraction's predicted time per call in each plan, ``result.per_call``; ``faster``: ``ours`` | ``IREE`` |
``tie`` | null).
``holds`` names what a dispatch or global holds (``plan_view``: ``rmsnorm + encode(LHS)``), never ``Op``;
the text report (``text``) summarises by it and keeps every line within ``summary.WIDTH`` (docs/report.md).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from egg_dispatch.emit.signature import plan_signature
from egg_dispatch.mlir.printer import print_mlir
from egg_dispatch.result.per_call import emitted_dispatches
from egg_dispatch.result.plan_view import view
from egg_dispatch.result.sizes_report import size_lines, sizes_json
from egg_dispatch.result.summary import (
    WIDTH,
    contraction_lines,
    contractions_json,
    diff_entries,
    diff_lines,
    fit,
    summary_lines,
    views,
)
from egg_dispatch.util.table import table_lines

if TYPE_CHECKING:
    from egg_dispatch.egraph.data import EGraphData
    from egg_dispatch.mlir.ir import Module, Operation
    from egg_dispatch.result.exploration import Candidate, Exploration
    from egg_dispatch.result.plan_view import PlanView

__all__ = ["SCHEMA", "differences", "dot", "markdown", "plan_json", "sunk", "text", "to_json"]

SCHEMA = "egg-dispatch/explore/1"

_FEATURES = {
    "hoist": "set_encoding hoisted into its own encode dispatch",
    "const_eval": "encoded constant evaluated once at load into a global",
    "propagate": "one packed copy serves tile-aligned slices",
    "noop": "set_encoding removed (identity layout)",
    "fuse": "pack fused into the contraction's dispatch",
    "clone": "slice materialized once in its own dispatch",
    "untile": "data tiling dropped: a plain contraction (no pack, no mmt4d)",
    "sink_unset": "elementwise consumer run on the encoded accumulator (unset_encoding sunk below it)",
}


def _names(c: Candidate) -> dict[str, str]:
    return {d.name: f"dispatch{i}" for i, d in enumerate(c.plan.dispatches)} | {
        g[0]: f"global{i}" for i, g in enumerate(c.plan.globals)
    }


def untiled(g: EGraphData, choice: dict[str, str]) -> list[str]:
    """Classes where the plan computes a contraction with its encodings dropped (``rules/untile.egg``):
    the chosen node is a Contract in the class of an unset_encoding. (With the identity layout ``noop``
    merges the two, and the unset_encoding is then a self-loop, not a choice.)"""
    return [
        c
        for c, nid in sorted(choice.items())
        if g.nodes[nid].op == "Contract" and any(n.op == "UnsetEncoding" for n in g.choices(c))
    ]


def sunk(mlir: Module) -> list[Operation]:
    """The generics of a plan that run on an encoded accumulator (``rules/sink_unset.egg``, IREE's
    SinkUnsetEncodingOp): a linalg.generic whose result carries a contraction's RESULT encoding (a
    set_encoding bubbled above a generic gives it an LHS or RHS one)."""
    out = []
    for op in mlir.walk():
        if op.name != "linalg.generic" or not op.results:
            continue
        enc = getattr(op.results[0].type, "encoding", None)
        if enc is not None and getattr(enc, "operand_index", None) == 2:
            out.append(op)
    return out


def features(c: Candidate, g: EGraphData | None = None) -> set[str]:
    """Which rule families' alternatives the plan uses (read off the chosen nodes; ``untile`` only when
    ``g``, the e-graph the plan was chosen from, is given)."""
    out: set[str] = set()
    mlir = c.mlir
    for op in mlir.walk():
        if op.name == "util.initializer" and any(o.name == "iree_encoding.set_encoding" for o in op.walk()):
            out.add("const_eval")
        if op.name == "tensor.extract_slice" and getattr(op.operands[0].type, "encoding", None) is not None:
            out.add("propagate")
    for d in c.plan.dispatches:
        if d.ops and d.ops[-1] in ("SetEncoding", "Pack") and "Contract" not in d.ops:
            out.add("hoist")
        if "Contract" in d.ops and "SetEncoding" in d.ops:
            out.add("fuse")
        if d.ops == ["Slice"] or d.ops == []:
            out.add("clone")
    if g is not None and untiled(g, c.choice):
        out.add("untile")
    if sunk(mlir):
        out.add("sink_unset")
    if "untile" not in out and not any(op.name.startswith("iree_encoding") for op in mlir.walk()):
        out.add("noop")
    return out


def differences(e: Exploration) -> list[str]:
    if e.baseline is None:
        return []
    # The baseline is IREE's plan (data tiling on), possibly chosen from another e-graph: no ``untile``.
    ours, theirs = features(e.best, e.data), features(e.baseline)
    lines = [f"+ {k}: {_FEATURES[k]}" for k in sorted(ours - theirs)]
    lines += [f"- {k}: {_FEATURES[k]} (IREE only)" for k in sorted(theirs - ours)]
    return lines


def _view(c: Candidate, e: Exploration | None) -> PlanView:
    """``view(c.mlir)``, taken from the exploration's own (``summary.views``) when ``c`` is its chosen plan
    or its baseline: a model's plan is read once, not once per section of the report."""
    if e is not None and (c is e.best or c is e.baseline):
        ours, theirs = views(e)
        if c is e.best:
            return ours
        if theirs is not None:
            return theirs
    return view(c.mlir)


def plan_json(c: Candidate, with_timings: bool = False, e: Exploration | None = None) -> dict:
    """A plan for ``--emit json``; with the exploration ``e`` its contractions' ``location`` is filled in."""
    m = c.metrics
    names = _names(c)
    v = _view(c, e)
    holds = _holds(c, v)
    held = [g.holds for g in v.globals]
    ex = c.extraction
    extraction = None
    if ex is not None:
        extraction = {"method": ex.method, "objective": ex.objective, "optimal": ex.optimal, "gap": ex.gap}
        if with_timings:
            extraction["seconds"] = ex.seconds
    return {
        "label": c.label,
        "signature": plan_signature(c.mlir),
        "objective": m.objective,
        "run_seconds": m.run_seconds,
        "load_seconds": m.load_seconds,
        "persistent_bytes": m.persistent_bytes,
        "transient_bytes": m.transient_bytes,
        "peak_live_bytes": m.peak_live_bytes,
        "dispatches": [
            {
                "name": names[d.name],
                "ops": d.ops,
                "bytes_in": d.bytes_in,
                "bytes_out": d.bytes_out,
                "seconds": d.seconds,
                "seconds_max_form": d.seconds_max_form,
                "holds": holds.get(d.name) or _heads(d.ops),
            }
            for d in c.plan.dispatches
        ],
        "globals": [
            {
                "name": names[g],
                "bytes": b,
                "initializer_ops": ops,
                "holds": held[i] if len(held) == len(c.plan.globals) else _heads(ops) or "constant",
            }
            for i, (g, b, ops) in enumerate(c.plan.globals)
        ],
        "contractions": contractions_json(e, v, c),
        "extraction": extraction,
        "mlir": print_mlir(c.mlir),
    }


def _input_json(e: Exploration) -> dict | None:
    if e.input is None:
        return None
    i = e.input
    return {"form": i.form, "explored_form": i.explored_form, "steps": i.steps, "notes": i.notes}


def costs_source(e: Exploration) -> dict:
    """Where the plan's times come from: the target profile (measured here or not) and the measurement cache."""
    prov = e.target.provenance
    return {
        "profile": e.target.name,
        "calibrated": e.target.kernels is not None,
        "measured_on": prov.get("cpu"),
        "warning": prov.get("warning"),
        "measured_nodes": e.measured_nodes,
        "measurement_cache": e.measured_source,
    }


def _costs_line(e: Exploration) -> str:
    c = costs_source(e)
    if c["calibrated"]:
        where = f"profile {c['profile']}, calibrated on {c['measured_on'] or 'this machine'}"
    else:
        where = f"profile {c['profile']}, built-in (not measured on this machine)"
    if c["measured_nodes"]:
        where += (
            f"; {c['measured_nodes']} computations priced by measured times ({c['measurement_cache'] or 'in memory'})"
        )
    return f"  costs: {where}"


def to_json(e: Exploration, with_timings: bool = False) -> dict:
    s = e.saturation
    out = {
        "schema": SCHEMA,
        "file": e.module.file,
        "function": e.imported.function,
        "target": e.target.name,
        "lambda": e.lam,
        "input": _input_json(e),
        "costs": costs_source(e),
        "egraph": {
            "enodes": s.enodes,
            "eclasses": s.eclasses,
            "iterations": s.iterations,
            "stop_reason": s.stop_reason,
            "rule_matches": dict(sorted(s.matches.items())),
        },
        "best": plan_json(e.best, with_timings, e),
        "baseline": _baseline_json(e, with_timings),
        "pareto": [plan_json(c, with_timings, e) for c in e.pareto],
        "warnings": e.warnings,
    }
    if e.baseline is not None:
        out["differences_from_iree"] = diff_entries(e)
    if (sizes := sizes_json(e)) is not None:
        out["sizes"] = sizes
    if e.stops:  # only when a stage reached its budget: the JSON of a run that did not is unchanged
        out["stops"] = [{"stage": s.stage, "seconds": s.seconds, "handed_on": s.handed_on} for s in e.stops]
    if e.decision is not None:
        out["decision"] = e.decision.to_json()
    if e.compile_check is not None:
        out["compile_check"] = e.compile_check.to_json()
    if with_timings:
        out["timings"] = e.timings
    return out


def _baseline_json(e: Exploration, with_timings: bool) -> dict | None:
    """The baseline's plan, and whether it is one of the e-graph's plans (``in_egraph``; where not,
    ``missing``: the first of its decisions the e-graph lacks, and ``missing_all`` every one;
    ``refused``: a node of it legality refuses, so that no extractor returns it; ``redundant``, when
    the plan computes an e-class two ways: where)."""
    if e.baseline is None:
        return None
    out = plan_json(e.baseline, with_timings, e)
    m = e.baseline_membership
    if m is not None:
        out.update(in_egraph=m.in_egraph, missing=m.missing, refused=m.refused)
        if m.all_missing:
            out["missing_all"] = list(m.all_missing)
        if m.redundant:
            out["redundant"] = list(m.redundant)
    return out


def membership_line(e: Exploration) -> str | None:
    """The report's lines on whether the baseline is a plan of the e-graph: the first decision it
    lacks, then each other one (``Membership.all_missing``) on a line of its own."""
    m = e.baseline_membership
    if e.baseline is None or m is None:
        return None
    if not m.in_egraph:
        more = [f"    also lacks: {d}" for d in m.all_missing[1:]]
        return "\n".join([f"  in our e-graph: no (first decision it lacks: {m.missing})", *more])
    extra = f" (with redundant work: {len(m.redundant)} e-class(es) computed twice)" if m.redundant else ""
    if m.refused:
        return f"  in our e-graph: yes{extra}, but legality refuses {m.refused}"
    return f"  in our e-graph: yes{extra}"


def _us(seconds: float) -> str:
    return f"{seconds * 1e6:.2f}"


def _ratio(a: float, b: float) -> str:
    return f"{a / b:.2f}x" if b else "-"


def baseline_names(e: Exploration) -> tuple[str, str]:
    """What the report calls the baseline: its totals column and its plan line. IREE's own plan
    (``iree-compile``'s, which explore's CLI puts there, labelled so) is ``IREE`` / ``IREE's own plan``;
    our model of IREE's passes, picked from our e-graph, says it is modelled."""
    if e.baseline is not None and "iree-compile" in e.baseline.label:
        return "IREE", "IREE's own plan"
    return "IREE (modelled)", "IREE's plan as modelled"


def totals_rows(e: Exploration) -> list[tuple[str, str, str, str]]:
    b = e.baseline.metrics if e.baseline else None
    m = e.best.metrics
    rows = [
        (
            "run time per call (µs)",
            _us(m.run_seconds),
            _us(b.run_seconds) if b else "-",
            _ratio(m.run_seconds, b.run_seconds) if b else "-",
        ),
        ("dispatches per call", str(m.dispatches), str(b.dispatches) if b else "-", ""),
        ("  of which encodes", str(m.encode_dispatches), str(b.encode_dispatches) if b else "-", ""),
        ("globals (load-time)", str(m.globals), str(b.globals) if b else "-", ""),
        (
            "persistent bytes",
            str(m.persistent_bytes),
            str(b.persistent_bytes) if b else "-",
            _ratio(m.persistent_bytes, b.persistent_bytes) if b else "-",
        ),
        ("transient bytes", str(m.transient_bytes), str(b.transient_bytes) if b else "-", ""),
        ("peak live bytes", str(m.peak_live_bytes), str(b.peak_live_bytes) if b else "-", ""),
        ("load time (µs)", _us(m.load_seconds), _us(b.load_seconds) if b else "-", ""),
        (
            f"objective (λ={e.lam:g} s/B)",
            f"{m.objective:.4e}",
            f"{b.objective:.4e}" if b else "-",
            _ratio(m.objective, b.objective) if b else "-",
        ),
    ]
    return rows


def _table(header: tuple[str, ...], rows: Sequence[tuple[str, ...]]) -> list[str]:
    return table_lines(header, rows)


SIGNATURE_MAX_PARTS = 8
"""A plan of at most this many dispatches, encodes and initializers is shown by its signature (wrapped);
a larger one in numbers, its signature with ``--verbose`` (a model's is thousands of characters)."""


def _signature_parts(signature: str) -> list[str]:
    """``init{a, b} encode dispatch{c}`` -> ``["init{a, b}", "encode", "dispatch{c}"]``."""
    parts, depth, current = [], 0, ""
    for ch in signature:
        if ch == " " and depth == 0:
            if current:
                parts.append(current)
            current = ""
            continue
        depth += (ch == "{") - (ch == "}")
        current += ch
    return [*parts, current] if current else parts


def _plan_line(label: str, c: Candidate, v: PlanView, verbose: bool) -> list[str]:
    """``label: <signature>`` wrapped between its parts (never inside a ``dispatch{...}``) for a small plan
    or with ``verbose``; else what the plan holds in numbers."""
    parts = _signature_parts(plan_signature(c.mlir))
    if verbose or len(parts) <= SIGNATURE_MAX_PARTS:
        lines = [f"{label}:"]
        for part in parts:
            if len(lines[-1]) + 1 + len(part) > WIDTH and lines[-1].strip() != f"{label}:":
                lines.append("   ")
            lines[-1] += " " + part
        return [piece for line in lines for piece in fit(line)]
    encodes = sum(d.encode_only for d in v.dispatches) + v.tensor_encodes
    tiled = sum(k.tiled for k in v.contractions)
    return [
        f"{label}: {c.metrics.dispatches} dispatches ({encodes} encode), {c.metrics.globals} load-time globals, "
        f"{tiled} of {len(v.contractions)} contractions data-tiled (--verbose: every dispatch)"
    ]


def _heads(ops: list[str]) -> str:
    """Term heads in words, where the plan's MLIR could not be matched to its graph (``Op`` -> ``op``)."""
    return " + ".join(o.lower() for o in ops)


def _holds(c: Candidate, v: PlanView) -> dict[str, str]:
    """What each dispatch of the plan graph holds (``plan_view``), by plan graph name: the plan's MLIR holds
    its dispatches in ``Candidate.dispatch_order`` (``per_call.emitted_dispatches``)."""
    by_op = {id(d.op): d.name for d in v.dispatches}
    return {d.name: by_op.get(op, "encode") for op, d in emitted_dispatches(c).items()}


def text(e: Exploration, include_mlir: bool = False, verbose: bool = False) -> str:
    """The text report: header, recommendation, the chosen plan summarised beside IREE's (dispatches and
    globals by kind, data-tiled contractions, totals), each contraction's decision that differs from IREE's
    plan, the rule families, the e-graph. ``verbose`` adds every dispatch, global and contraction (and the
    rule matches); ``include_mlir`` the chosen plan as MLIR. No line is longer than ``WIDTH`` (except MLIR)."""
    c = e.best
    ours_view, theirs_view = views(e)
    lines = [f"egg-dispatch explore: {e.module.file} @{e.imported.function} on {e.target.name}"]
    if e.input is not None:
        lines.append(f"  input: {e.input.describe()}")
        lines += [f"  note: {n}" for n in e.input.notes]
    lines.append(_costs_line(e))
    lines += size_lines(e)
    lines += [f"  {w}" for w in e.warnings]
    lines += [f"  budget: {s.message()}" for s in e.stops]
    if e.decision is not None:
        lines.append(f"recommendation: {e.decision.reason}")
        lines.append(f"  {e.decision.basis_line()}")
    lines.append("")
    lines += _plan_line("chosen plan", c, ours_view, verbose)
    if c.extraction is not None:
        ex = c.extraction
        gap = f", gap {ex.gap:.2%}" if ex.gap is not None else ""
        if ex.stats.get("status") == "Time limit reached":  # the ILP's: the best plan found, greedy's at worst
            gap = gap or ", gap unknown (no lower bound yet)"
            gap += f"; stopped by its time limit (plan: {ex.stats.get('source')})"
        lines.append(f"  extractor: {ex.method}{' (optimal)' if ex.optimal else ''}{gap}")
    if e.compile_check is not None:
        lines.append(f"  {e.compile_check.summary()}")
        lines += [f"  {d}" for d in e.compile_check.details()]
    lines.append("")
    column, plan_name = baseline_names(e)
    lines += summary_lines(e, column)
    if verbose:
        names = _names(c)
        holds = _holds(c, ours_view)
        rows = [
            (names[d.name], holds.get(d.name) or _heads(d.ops), str(d.bytes_in), str(d.bytes_out), _us(d.seconds))
            for d in c.plan.dispatches
        ]
        lines.append("")
        lines += _table(("dispatch", "holds", "bytes in", "bytes out", "est. µs"), rows)
        if c.plan.globals:
            lines.append("")
            held = [g.holds for g in ours_view.globals]
            g_rows = [
                (names[g], str(b), held[i] if len(held) == len(c.plan.globals) else _heads(ops) or "constant")
                for i, (g, b, ops) in enumerate(c.plan.globals)
            ]
            lines += _table(("global", "bytes", "initializer"), g_rows)
        lines.append("")
        lines.append("contractions of the chosen plan (M x N x K):")
        lines += contraction_lines(e, c, ours_view)
    lines.append("")
    lines += _table(("totals", "ours", column, "ours/IREE"), totals_rows(e))
    if e.baseline is not None and theirs_view is not None:
        lines += _plan_line(plan_name, e.baseline, theirs_view, verbose)
        if (line := membership_line(e)) is not None:
            lines.append(line)
        diff = diff_lines(e)
        if diff:
            lines.append(f"where ours differs from {plan_name} (per contraction, M x N x K):")
            lines += diff
    families = differences(e)
    if families:
        lines.append("rules that made the difference:")
        lines += [f"  {d}" for d in families]
    lines.append("")
    rendered = e.saturation.render().splitlines()
    lines.append(rendered[0])
    if verbose:
        lines += rendered[1:]
    if e.pareto:
        lines.append("")
        lines.append("time/memory frontier:")
        frontier = _table(
            ("plan", "run µs", "memory bytes", "signature"),
            [
                (p.label, _us(p.metrics.run_seconds), str(p.metrics.memory_bytes), plan_signature(p.mlir))
                for p in e.pareto
            ],
        )
        if max(map(len, frontier)) > WIDTH:  # a model's signatures: their sizes instead
            frontier = _table(
                ("plan", "run µs", "memory bytes", "dispatches", "globals"),
                [
                    (
                        p.label,
                        _us(p.metrics.run_seconds),
                        str(p.metrics.memory_bytes),
                        str(p.metrics.dispatches),
                        str(p.metrics.globals),
                    )
                    for p in e.pareto
                ],
            )
        lines += frontier
    out = [piece for block in lines for line in block.split("\n") for piece in fit(line)]
    if include_mlir:
        out.append("")
        out.append("// chosen plan as MLIR (flow.dispatch.region form)")
        out.append(print_mlir(c.mlir).rstrip())
    return "\n".join(out)


def markdown(e: Exploration) -> str:
    rows = totals_rows(e)
    out = [
        f"**egg-dispatch** `{e.module.file}` @{e.imported.function} on `{e.target.name}`",
        "",
        f"chosen plan: `{plan_signature(e.best.mlir)}`",
        "",
        f"| | ours | {baseline_names(e)[0]} | ratio |",
        "|---|---|---|---|",
    ]
    out += [f"| {a} | {b} | {c} | {d} |" for a, b, c, d in rows]
    out += ["", f"e-graph: {e.saturation.enodes} e-nodes, {e.saturation.stop_reason}"]
    return "\n".join(out)


def dot(c: Candidate) -> str:
    """The plan graph in Graphviz DOT."""
    names = _names(c)
    lines = ["digraph plan {", "  rankdir=LR;"]
    for n, data in sorted(c.plan.graph.nodes(data=True)):
        label = names.get(n, n)
        kind = data.get("kind", "")
        if kind == "dispatch":
            label += "\\n" + " + ".join(data["info"].ops)
        shape = {"dispatch": "box", "global": "cylinder", "constant": "cylinder"}.get(kind, "ellipse")
        lines.append(f'  "{names.get(n, n)}" [label="{label}", shape={shape}];')
    for a, b, data in sorted(c.plan.graph.edges(data=True)):
        lines.append(f'  "{names.get(a, a)}" -> "{names.get(b, b)}" [label="{data.get("bytes", 0)} B"];')
    lines.append("}")
    return "\n".join(lines)
