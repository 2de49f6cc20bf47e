"""The text report's plan summary and its diff against IREE's plan: a report that scales to a model.

``summary_lines`` counts what the chosen plan and IREE's hold (dispatches and globals by kind, data-tiled
contractions: ``plan_view``) side by side; ``diff_lines`` names each contraction whose data-tiling
decisions differ between the two (``layers 0-21 q_proj (model.mlir:129:11, ...): LHS encode fused into
the rmsnorm dispatch; IREE: an encode dispatch of its own``), one line per decision, grouped over the
layers that repeat it. Contractions are matched between the plans, and with the explored program (whose
ops know where in the user's file they came from), by shape and weight, in program order.

``fit`` keeps every line of the report within ``WIDTH`` characters.
"""

from __future__ import annotations

import os
from collections import Counter
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from egg_dispatch.mlir.ir import Loc
from egg_dispatch.result.per_call import PerCall, per_call
from egg_dispatch.result.plan_view import Contraction, PlanView, contraction_names, view
from egg_dispatch.util.table import table_lines

if TYPE_CHECKING:
    from egg_dispatch.result.exploration import Candidate, Exploration

__all__ = [
    "WIDTH",
    "contraction_lines",
    "contractions_json",
    "data_tiling_verdict",
    "diff_entries",
    "diff_lines",
    "fit",
    "locations",
    "match",
    "summary_lines",
    "views",
]

WIDTH = 160
"""No line of the text report is longer."""

_MAX_LOCS = 3


def fit(line: str, width: int = WIDTH) -> list[str]:
    """``line`` cut at spaces into lines of at most ``width`` characters, continuations indented 4 more
    than the line (a word longer than a line is cut)."""
    if len(line) <= width:
        return [line]
    indent = " " * (len(line) - len(line.lstrip()) + 4)
    out, rest = [], line
    while len(rest) > width:
        cut = rest.rfind(" --", len(indent) + 1, width + 1)  # a command line: between its flags
        if cut <= len(indent):
            cut = rest.rfind(" ", len(indent) + 1, width + 1)
        if cut <= len(indent):
            cut = width
        out.append(rest[:cut].rstrip())
        rest = indent + rest[cut:].lstrip()
    out.append(rest)
    return out


def views(e: Exploration) -> tuple[PlanView, PlanView | None]:
    """The chosen plan's view and IREE's (None without a baseline), computed once per exploration."""
    key = (id(e.best), id(e.baseline))
    cache = getattr(e, "_views", None)
    if cache is None or cache[0] != key:  # the CLI puts IREE's own plan in after exploring
        cache = (key, (view(e.best.mlir), view(e.baseline.mlir) if e.baseline is not None else None))
        e._views = cache  # type: ignore[attr-defined]
    return cache[1]


def per_calls(e: Exploration) -> tuple[list[PerCall | None], list[PerCall | None] | None]:
    """Each contraction's predicted time per call (``result.per_call``) in the chosen plan and in IREE's
    (None without a baseline), computed once per exploration."""
    key = (id(e.best), id(e.baseline))
    cache = getattr(e, "_per_calls", None)
    if cache is None or cache[0] != key:
        ours, theirs = views(e)
        mine = per_call(e.best, ours)
        other = per_call(e.baseline, theirs) if e.baseline is not None and theirs is not None else None
        cache = (key, (mine, other))
        e._per_calls = cache  # type: ignore[attr-defined]
    return cache[1]


def match(a: Sequence[Contraction], b: Sequence[Contraction]) -> list[tuple[int | None, int | None]]:
    """Pairs of indices of the same contraction in ``a`` and ``b``: same shape and weight, in order; then
    the rest by shape alone, in order; then each one left over on its own."""
    pairs: list[tuple[int | None, int | None]] = []
    used_b: set[int] = set()
    matched_a: dict[int, int] = {}
    for key in (lambda c: (c.shape, c.weight), lambda c: (c.shape,)):
        free_b: dict[tuple, list[int]] = {}
        for j, c in enumerate(b):
            if j not in used_b:
                free_b.setdefault(key(c), []).append(j)
        for i, c in enumerate(a):
            if i in matched_a:
                continue
            queue = free_b.get(key(c))
            if queue:
                j = queue.pop(0)
                matched_a[i] = j
                used_b.add(j)
    for i in range(len(a)):
        pairs.append((i, matched_a.get(i)))
    pairs += [(None, j) for j in range(len(b)) if j not in used_b]
    return pairs


def locations(e: Exploration, cs: Sequence[Contraction]) -> list[Loc | None]:
    """Where in the user's file each contraction of a plan comes from: matched with the explored program's
    contractions, whose positions IREE's debug info maps to the user's file (``InputInfo.locations``) or,
    for a program explored as read, are in it already."""
    start = getattr(e, "_start_view", None)
    if start is None:
        start = view(e.module)
        e._start_view = start  # type: ignore[attr-defined]
    info = e.input
    as_read = info is None or not info.steps
    mapped = info.locations if info is not None else {}
    out: list[Loc | None] = [None] * len(cs)
    for i, j in match(cs, start.contractions):
        if i is None or j is None:
            continue
        at = start.contractions[j].op.loc
        if at is None:
            continue
        if mapped:
            out[i] = mapped.get(at.line)
        elif as_read:
            out[i] = Loc(os.path.basename(at.file), at.line, at.col)
    return out


def _kind_rows(ours: Counter[str], theirs: Counter[str] | None) -> list[tuple[str, ...]]:
    other: Counter[str] = theirs or Counter()
    names = sorted(set(ours) | set(other), key=lambda k: (-max(ours[k], other[k]), k))
    if theirs is None:
        return [(k, str(ours[k])) for k in names]
    return [(k, str(ours[k]), str(theirs[k])) for k in names]


def _dispatch_kinds(v: PlanView) -> Counter[str]:
    out: Counter[str] = Counter()
    for d in v.dispatches:
        out["encode" if d.encode_only else d.primary] += 1
    if v.tensor_encodes:
        out["encode"] += v.tensor_encodes
    return out


def summary_lines(e: Exploration, column: str) -> list[str]:
    """Dispatches and globals by kind, and data-tiled contractions: ours, and IREE's in ``column``."""
    ours, theirs = views(e)
    header: tuple[str, ...] = ("ours",) if theirs is None else ("ours", column)
    lines = table_lines(
        ("dispatches by kind", *header),
        _kind_rows(_dispatch_kinds(ours), _dispatch_kinds(theirs) if theirs else None),
        left=1,
    )
    g_ours, g_theirs = ours.global_kinds(), theirs.global_kinds() if theirs else None
    if g_ours or g_theirs:
        lines.append("")
        lines += table_lines(("globals by kind (load time)", *header), _kind_rows(g_ours, g_theirs), left=1)
    lines.append("")

    def tiled(v: PlanView) -> str:
        return f"{sum(c.tiled for c in v.contractions)} of {len(v.contractions)}"

    rows = [("data-tiled contractions", tiled(ours), *((tiled(theirs),) if theirs else ()))]
    lines += table_lines(("contractions", *header), rows, left=1)
    return lines


def _describe(c: Contraction, verbose: bool = False) -> str:
    if not c.tiled:
        return "plain matmul (no data tiling)"
    parts = [f"{r} {c.placements[r]}" for r in ("LHS", "RHS", "ACC") if r in c.placements]
    if "result" in c.placements:
        parts.append(f"result {c.placements['result']}")
    return "data-tiled: " + ", ".join(parts) if verbose else ", ".join(parts)


def _decisions(c: Contraction, other: Contraction | None) -> list[tuple[str, str]]:
    """(what ours does, what IREE does) for each decision of a contraction that differs."""
    if other is None:
        return [("only in ours", "no such contraction")]
    if c.tiled != other.tiled:
        ours = "plain matmul" if not c.tiled else _describe(c)
        return [(ours, _describe(other))]
    if not c.tiled:
        return []
    out = []
    for role in ("LHS", "RHS", "ACC", "result"):
        mine, theirs = c.placements.get(role, "not encoded"), other.placements.get(role, "not encoded")
        if mine != theirs:
            out.append((f"{role} {mine}", theirs))
    return out


def _layers(layers: list[int]) -> str:
    """``layer 3``, ``layers 0-21``, ``layers 0-3, 5``."""
    runs: list[list[int]] = []
    for n in sorted(set(layers)):
        if runs and n == runs[-1][-1] + 1:
            runs[-1].append(n)
        else:
            runs.append([n])
    text = ", ".join(str(r[0]) if len(r) == 1 else f"{r[0]}-{r[-1]}" for r in runs)
    return ("layer " if len(set(layers)) == 1 else "layers ") + text


def _where(locs: list[str | None]) -> str:
    """`` (torch.mlir:129:11, 339:12)``: the first few places, the file named once."""
    known = [at for at in locs if at is not None]
    if not known:
        return ""
    file = known[0].rsplit(":", 2)[0]
    shown = [known[0]] + [at[len(file) + 1 :] if at.startswith(file + ":") else at for at in known[1:_MAX_LOCS]]
    more = ", ..." if len(known) > _MAX_LOCS else ""
    return f" ({', '.join(shown)}{more})"


def _us(seconds: float) -> str:
    return f"{seconds * 1e6:.2f}"


def _signed(seconds: float) -> str:
    return ("+" if seconds >= 0 else "-") + _us(abs(seconds))


_TIE = 0.005e-6
"""Per-call times closer than this (half the report's last digit, in seconds) are a tie."""


def _cost_text(pc: PerCall) -> str:
    """``mmt4d 8.37 + LHS encode 0.11 + decode 0.06 = 8.54 µs``."""
    if not pc.parts:
        return f"{pc.kernel} {_us(pc.seconds)} µs"
    steps = " + ".join(f"{p.what} {_us(p.seconds)}" for p in pc.parts)
    return f"{pc.kernel} {_us(pc.kernel_seconds)} + {steps} = {_us(pc.seconds)} µs"


def data_tiling_verdict(shape: str, mine: PerCall, theirs: PerCall) -> tuple[str, str]:
    """(which plan's contraction is predicted faster per call: ``ours``, ``IREE`` or ``tie``; why, in words)."""
    diff = mine.seconds - theirs.seconds
    faster = "tie" if abs(diff) < _TIE else "ours" if diff < 0 else "IREE"
    dims = shape.split("x")
    m = f" at M={dims[-3]}" if len(dims) >= 3 and dims[-3] != "?" else ""  # a dynamic M: at the sizes priced
    if (mine.kernel == "mmt4d") != (theirs.kernel == "mmt4d"):
        tiled, plain = (theirs, mine) if theirs.kernel == "mmt4d" else (mine, theirs)
        saved = plain.kernel_seconds - tiled.kernel_seconds
        cost = tiled.steps_seconds - plain.steps_seconds
        if faster == "tie":
            return faster, f"a tie{m}: the tiled kernel saves {_us(saved)} µs, its encodes and decodes cost as much"
        gain = plain.seconds - tiled.seconds
        if gain > 0:
            why = f"the tiled kernel saves {_us(saved)}, its encodes and decodes cost {_us(cost)}"
            return faster, f"data tiling pays{m}, by {_us(gain)} µs ({why})"
        if saved <= 0:
            why = f"the tiled kernel alone is {_us(-saved)} slower"
            return faster, f"data tiling does not pay{m}, by {_us(-gain)} µs ({why})"
        why = f"its encodes and decodes cost {_us(cost)}, more than the tiled kernel saves, {_us(saved)}"
        return faster, f"data tiling does not pay{m}, by {_us(-gain)} µs ({why})"
    if faster == "tie":
        return faster, "the same predicted time per call"
    kernel, steps = mine.kernel_seconds - theirs.kernel_seconds, mine.steps_seconds - theirs.steps_seconds
    why = f"kernel {_signed(kernel)}, encodes and decodes {_signed(steps)}"
    who = "ours" if faster == "ours" else "IREE's"
    return faster, f"{who} is faster by {_us(abs(diff))} µs per call (ours' {why})"


def _diff(e: Exploration) -> list[tuple[dict, str]]:
    """``diff_entries``, each with its contraction's per-call line (empty without figures)."""
    ours, theirs = views(e)
    if theirs is None:
        return []
    ours_pc, theirs_pc = per_calls(e)
    names = contraction_names(ours.contractions)
    theirs_names = contraction_names(theirs.contractions)
    locs = locations(e, ours.contractions)
    theirs_locs = locations(e, theirs.contractions)
    groups: dict[tuple[str, str, str, str], tuple[dict[str, Any], str]] = {}
    for i, j in match(ours.contractions, theirs.contractions):
        mine: PerCall | None = None
        other: PerCall | None = None
        if i is None:
            assert j is not None
            (layer, role), at, shape = theirs_names[j], theirs_locs[j], theirs.contractions[j].shape
            decisions = [("no such contraction", "this contraction")]
        else:
            (layer, role), at, shape = names[i], locs[i], ours.contractions[i].shape
            decisions = _decisions(ours.contractions[i], theirs.contractions[j] if j is not None else None)
            if j is not None and theirs_pc is not None:
                mine, other = ours_pc[i], theirs_pc[j]
        faster, verdict, line = None, None, ""
        if mine is not None and other is not None:
            faster, verdict = data_tiling_verdict(shape, mine, other)
            line = f"per call: ours {_cost_text(mine)}; IREE {_cost_text(other)}: {verdict}"
        who = role if role.startswith("#") else f"{role} (matmul {shape})"
        for ours_does, iree in decisions:
            key = (who, ours_does, iree, line) if layer is not None else (f"{who}@{len(groups)}", ours_does, iree, line)
            if key not in groups:
                entry: dict[str, Any] = {
                    "who": who, "layers": [], "locations": [], "ours": ours_does, "iree": iree,
                    "ours_per_call": mine.as_json() if mine is not None else None,
                    "iree_per_call": other.as_json() if other is not None else None,
                    "faster": faster, "verdict": verdict,
                }  # fmt: skip
                groups[key] = (entry, line)
            entry = groups[key][0]
            if layer is not None:
                entry["layers"].append(layer)
            entry["locations"].append(None if at is None else str(at))
    return list(groups.values())


def diff_entries(e: Exploration) -> list[dict]:
    """Each data-tiling decision of a contraction where ours differs from IREE's plan, grouped over the
    layers that repeat it (and predict the same times for it): ``{who, layers, locations, ours, iree,
    ours_per_call, iree_per_call, faster, verdict}`` (``layers`` empty when the contraction is not in a
    layer; ``locations`` ``file:line:col`` in the user's file, where known; ``ours_per_call`` and
    ``iree_per_call`` the contraction's predicted time per call in each plan, ``PerCall.as_json``: seconds,
    kernel, kernel_seconds, encode_decode_seconds, steps, or None where the contraction has no match or the
    plan no figures; ``faster`` ``ours``, ``IREE`` or ``tie`` by those times, ``verdict`` why in words)."""
    return [entry for entry, _ in _diff(e)]


def diff_lines(e: Exploration) -> list[str]:
    """``diff_entries`` as report lines: each decision, then once per contraction (after its last
    decision line) its predicted time per call in both plans and whether data tiling pays."""
    lines = []
    entries = _diff(e)
    mine = theirs = 0.0
    for n, (d, per_call_line) in enumerate(entries):
        prefix = f"{_layers(d['layers'])} {d['who']}" if d["layers"] else d["who"]
        lines += fit(f"  {prefix}{_where(d['locations'])}: {d['ours']}; IREE: {d['iree']}")
        following = entries[n + 1] if n + 1 < len(entries) else None
        same = following is not None and (following[0]["who"], following[0]["layers"], following[1]) == (
            d["who"], d["layers"], per_call_line,
        )  # fmt: skip
        if per_call_line and not same:
            lines += fit(f"    {per_call_line}")
            mine += d["ours_per_call"]["seconds"] * len(d["locations"])
            theirs += d["iree_per_call"]["seconds"] * len(d["locations"])
    if mine or theirs:
        assert e.baseline is not None
        whole = f"{_us(e.best.metrics.run_seconds)} and {_us(e.baseline.metrics.run_seconds)} µs"
        together = f"ours {_us(mine)} µs, IREE {_us(theirs)} µs"
        lines += fit(f"  these contractions together, per call: {together} (the whole plans: {whole})")
    return lines


def contraction_lines(e: Exploration, c: Candidate, v: PlanView) -> list[str]:
    """``--verbose``: every contraction of a plan, its name, place in the user's file, decisions and
    predicted time per call (``result.per_call``)."""
    names = contraction_names(v.contractions)
    locs = locations(e, v.contractions)
    figures = per_calls(e)[0] if c is e.best else per_call(c, v)
    out = []
    for (layer, role), at, k, pc in zip(names, locs, v.contractions, figures, strict=True):
        who = (f"layer {layer} " if layer is not None else "") + role
        where = f" ({at})" if at is not None else ""
        cost = f"; per call: {_cost_text(pc)}" if pc is not None else ""
        out += fit(f"  {who}{where}, dispatch{k.dispatch}: {_describe(k, True)}{cost}")
    return out


def contractions_json(e: Exploration | None, v: PlanView, c: Candidate | None = None) -> list[dict]:
    """Every contraction of a plan for ``--emit json``: name, place in the user's file (with ``e``), decisions,
    and with ``c`` (the plan ``v`` views) its predicted time per call (``per_call``: ``PerCall.as_json``)."""
    out = []
    where = locations(e, v.contractions) if e is not None else [None] * len(v.contractions)
    figures = per_call(c, v) if c is not None else [None] * len(v.contractions)
    for (layer, role), at, k, pc in zip(contraction_names(v.contractions), where, v.contractions, figures, strict=True):
        out.append({
            "layer": layer, "role": role, "shape": k.shape, "weight": k.weight, "data_tiled": k.tiled,
            "placements": dict(k.placements), "dispatch": k.dispatch, "location": None if at is None else str(at),
            "per_call": pc.as_json() if pc is not None else None,
        })  # fmt: skip
    return out
