"""``explore --explain``: for every set_encoding, the alternatives the e-graph held, why the others
were refused (the numbered legality condition, as IREE's passes give a reason per failed
condition), and the cost difference that decided between the ones held; then, per contraction,
whether data tiling was kept or dropped (``rules/untile.egg``) and what the other choice costs.

On a dynamic program a size-dependent condition is refused when it is not provable for every size
the program (``util.assume.int``) and ``--assume`` allow; the reason is the one ``egraph.facts``
recorded (``FactReport.refusals``), naming the size and what would make it hold. The objectives are
the weighted means over the assumed sizes, as the extractor minimized."""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

from egg_dispatch.egraph import terms as T
from egg_dispatch.egraph.enumerate import is_acyclic
from egg_dispatch.egraph.facts import (
    CONST_EXPR_MAX_SIZE_INCREASE,
    FactReport,
    encoding_layout,
    fused_pack_legal,
    seed_facts,
    slice_is_flow_mappable,
    tile_aligned,
)
from egg_dispatch.egraph.sink_facts import sink_sites
from egg_dispatch.egraph.size_facts import const_eval_refusal, mappable
from egg_dispatch.egraph.terms import STORED, enc_without_operand, ivec
from egg_dispatch.mlir.ir import TensorType, element_nbytes
from egg_dispatch.plan.graph import PlanMetrics, build_plan
from egg_dispatch.plan.sized import plan_at_sizes
from egg_dispatch.result.report import untiled
from egg_dispatch.target.layout import Layout, packed_nbytes

if TYPE_CHECKING:
    from egg_dispatch.result.exploration import Exploration

__all__ = ["explain"]

_ROLE = {0: "LHS", 1: "RHS"}


def _describe(e: Exploration, let: str) -> str:
    term = e.imported.lets[let]
    if isinstance(term, T.Slice):
        src = _describe(e, term.source)
        return f"extract_slice [{_spaced(term.offsets)}] [{_spaced(term.sizes)}] of {src}"
    t = e.imported.let_types.get(let)
    shape = "x".join("?" if d is None else str(d) for d in t.shape) if isinstance(t, TensorType) else ""
    if isinstance(term, T.Arg):
        return f"argument {term.index}"
    return f"constant {shape}" if isinstance(term, T.Const) else f"{term.head} {shape}".strip()


def _spaced(values: tuple[int, ...]) -> str:
    return " ".join(map(str, values))


def _const_expr_reason(e: Exploration, let: str) -> str | None:
    term = e.imported.lets[let]
    if isinstance(term, T.Arg):
        return f"1. function argument {term.index} feeds the chain (not a const-expr)"
    for ref in term.operands():
        r = _const_expr_reason(e, ref)
        if r:
            return r
    if isinstance(term, T.Op):
        return "1. an op that is not a const-expr feeds the chain"
    return None


def _hoist_reason(e: Exploration, let: str) -> str | None:
    term = e.imported.lets[let]
    head = term.head
    if head in STORED | {"Scalar"}:
        return None
    if isinstance(term, T.Slice):
        src_t = e.imported.let_types.get(term.source)
        offs, sizes, strides = term.offsets, term.sizes, term.strides
        if isinstance(src_t, TensorType) and src_t.is_static:
            flat = slice_is_flow_mappable(src_t.static_shape, offs, sizes, strides)
        else:  # size codes: a whole dim is the same expression as the source's
            sym, whole = e.imported.shape, e.imported.let_dims.get(term.source)
            flat = whole is not None and mappable(sym(whole), sym(offs), sym(sizes), sym(strides))
        if not flat:
            return "2. the extract_slice is not one contiguous range (not structurally Flow-mappable)"
        return _hoist_reason(e, term.source)
    return f"2. its producer ({head}) is computed in the dispatch and is neither ConstantLike nor a slice"


def _sites(e: Exploration) -> list[tuple[str, int, str, str]]:
    """(contraction let, operand index, source let, encoding key) for every encoded operand."""
    out = []
    for let, term in e.imported.lets.items():
        if not isinstance(term, T.Contract):
            continue
        for i, operand in enumerate((term.lhs, term.rhs)):
            s = e.imported.lets.get(operand)
            if isinstance(s, T.SetEncoding):
                out.append((let, i, s.source, s.encoding))
    return out


def _complete(e: Exploration, choice: dict[str, str]) -> dict[str, str]:
    """Fill classes a modified choice newly needs with their cheapest node (tree cost); {} when one of
    them has no node at all."""
    g, costs, lam = e.data, e.costs, e.lam
    memo: dict[str, float] = {}

    def tree(c: str, stack: frozenset[str]) -> float:
        if not g.is_term_class(c):
            return 0.0
        if c in memo:
            return memo[c]
        best = math.inf
        for n in g.choices(c):
            if any(k in stack for k in n.children):
                continue
            cost = costs[n.id].weighted(lam)
            for k in n.children:
                cost += tree(k, stack | {c})
            best = min(best, cost)
        memo[c] = best
        return best

    out = dict(choice)
    todo = [g.root]
    seen = set()
    while todo:
        c = todo.pop()
        if c in seen or not g.is_term_class(c):
            continue
        seen.add(c)
        if c not in out:
            priced = []
            for n in g.choices(c):
                cost = costs[n.id].weighted(lam)
                for k in n.children:
                    cost += tree(k, frozenset({c}))
                priced.append((cost, n.id))
            if not priced:  # a class legality emptied (a refused operand list): no plan this way
                return {}
            out[c] = min(priced)[1]
        todo.extend(g.nodes[out[c]].children)
    return {c: n for c, n in out.items() if c in seen}


def _metrics(e: Exploration, choice: dict[str, str]) -> PlanMetrics:
    """A choice's metrics as the extractor priced it: for a dynamic program, the weighted mean over the
    assumed size configurations (``plan.sized``)."""
    return plan_at_sizes(
        e.data, e.imported, e.sizes, lambda g: build_plan(g, choice, e.imported, e.target, e.lam)
    ).metrics


def _dynamic_refusals(e: Exploration, facts: FactReport, src: str, enc_key: str, layout) -> list[str]:
    """The size-dependent refusals of an encode of a dynamic ``src``, as ``egraph.facts`` recorded them."""
    dims = e.imported.let_dims.get(src)
    key = ivec(dims) if dims is not None else ""
    out: list[str] = []
    if layout is not None and (why := facts.refusals.get(("fused-pack", key, enc_key))):
        out.append(f"fused pack: {why}")
    why = _hoist_reason(e, src)
    if why:
        out.append(f"hoist: {why}")
    why = _const_expr_reason(e, src)
    if why is None and layout is not None:
        why = facts.refusals.get(("const-eval", key, enc_key)) or const_eval_refusal(
            e.imported.shape(dims or ()), None, 0
        )
    if why:
        out.append(f"const_eval: {why}")
    return out


def _kind(g, c: str, choice: dict[str, str]) -> str:
    node = g.nodes[choice[c]]
    if node.op == "EncodedSlice":
        inner = g.nodes[choice[node.children[0]]].op
        return {
            "ConstEval": "propagated (whole tensor packed at load)",
            "Dispatch": "propagated (whole tensor packed by its own dispatch)",
        }.get(inner, "propagated (whole tensor packed in the dispatch)")
    if node.op == "Dispatch" and _encodes_computed(g, node.children[0], choice):
        return "fused into its producer's dispatch (after the producer's ops)"
    return {
        "SetEncoding": "fused into the contraction's dispatch",
        "Pack": "fused into the contraction's dispatch",
        "Dispatch": "hoisted into its own encode dispatch",
        "ConstEval": "const-evaluated into a global",
    }.get(node.op, "removed (identity layout)")


def _encodes_computed(g, c: str, choice: dict[str, str]) -> bool:
    """Class c is chosen as an encode of a value computed in the same dispatch (its producer's ops)."""
    node = g.nodes[choice[c]] if c in choice else None
    if node is None or node.op not in ("SetEncoding", "Pack") or node.children[0] not in choice:
        return False
    return g.nodes[choice[node.children[0]]].op in ("Generic", "Op", "UnsetEncoding", "Unpack", "InsertSlice")


def explain(e: Exploration) -> str:
    """The ``--explain`` text: per set_encoding its refused and held placements, then the untile and
    sink_unset choices when those rule families ran."""
    g = e.data
    let_class = {let: c for c, names in g.lets.items() for let in names.split(", ")}
    best = e.best.choice
    lines = ["", "why each set_encoding went where it went:"]
    number: dict[str, int] = {}
    unset_class = {
        t.source: let_class.get(let) for let, t in e.imported.lets.items() if isinstance(t, T.UnsetEncoding)
    }
    dropped = set(untiled(g, best))
    facts = seed_facts(e.imported, e.target) if e.imported.dynamic else None  # the refusals' reasons
    for contract, index, src, enc_key in _sites(e):
        enc = e.imported.encodings[enc_key]
        layout = encoding_layout(e.target, enc)
        src_t = e.imported.let_types[src]
        assert isinstance(src_t, TensorType)
        contract_t = e.imported.lets[contract]
        assert isinstance(contract_t, T.Contract), contract  # _sites found it as one
        op_name = contract_t.kind.split(":")[0]
        number[op_name] = number.get(op_name, 0) + (index == 0)
        where = (
            "identity" if layout is None else f"tiles {list(layout.inner_tiles)} on dims {list(layout.inner_dims_pos)}"
        )
        lines.append(
            f"- {_ROLE[index]} of {op_name} #{number[op_name]}: set_encoding of {_describe(e, src)}; layout {where}"
        )
        refused = _placement_refusals(e, facts, src, enc_key, layout, src_t)
        refused += _propagate_refusals(e, facts, src, enc_key, layout)
        for r in refused:
            lines.append(f"    refused  {r}")
        if unset_class.get(contract) in dropped:
            lines.append("    chosen   none: data tiling dropped for this contraction (see below)")
            continue
        lines += _chosen_and_held(e, let_class.get(contract), index)
    if "untile" in e.saturation.families:
        lines += _data_tiling(e, let_class, dropped)
    if "sink_unset" in e.saturation.families:
        lines += _sinking(e, let_class)
    return "\n".join(lines)


def _placement_refusals(
    e: Exploration, facts: FactReport | None, src: str, enc_key: str, layout: Layout | None, src_t: TensorType
) -> list[str]:
    """Why a set_encoding of ``src`` is not fused as a pack, hoisted or const-evaluated (the conditions
    that failed; a dynamic source's from ``facts``)."""
    refused: list[str] = []
    eb = element_nbytes(src_t.element)
    if facts is not None and not src_t.is_static:
        refused += _dynamic_refusals(e, facts, src, enc_key, layout)
    elif layout is not None and not fused_pack_legal(e.target, layout, src_t.static_shape, eb):
        divides = all(
            src_t.static_shape[d] % t == 0 for d, t in zip(layout.inner_dims_pos, layout.inner_tiles, strict=True)
        )
        refused.append(
            "fused pack: "
            + ("2. packed buffer exceeds the stack limit" if divides else "1. inner tiles do not divide the shape")
        )
    if facts is None or src_t.is_static:
        why = _hoist_reason(e, src)
        if why:
            refused.append(f"hoist: {why}")
        why = _const_expr_reason(e, src)
        if why is None and layout is not None:
            grow = packed_nbytes(src_t.static_shape, eb, layout) - math.prod(src_t.static_shape) * eb
            if grow > CONST_EXPR_MAX_SIZE_INCREASE:
                why = f"2. the encoded copy grows by {grow} B, over the 1 MiB threshold"
        if why:
            refused.append(f"const_eval: {why}")
    return refused


def _propagate_refusals(
    e: Exploration, facts: FactReport | None, src: str, enc_key: str, layout: Layout | None
) -> list[str]:
    """Why the encoding is not propagated through ``src``'s slice, and why it is no no-op."""
    refused: list[str] = []
    m = e.imported.lets[src]
    if layout is None:
        refused.append("propagate: 4. identity layout")
    elif isinstance(m, T.Slice):
        whole = e.imported.let_types[m.source]
        offs, sizes, strides = m.offsets, m.sizes, m.strides
        if facts is not None and (why := facts.refusals.get(("tile-aligned", src, enc_key))):
            refused.append(f"propagate: {why}")
        elif (
            isinstance(whole, TensorType)
            and whole.is_static
            and min(offs + sizes, default=0) >= 0
            and not tile_aligned(layout, whole.static_shape, offs, sizes, strides)
        ):
            refused.append("propagate: 2./3. offsets or sizes are not multiples of the inner tiles")
    if layout is not None:
        refused.append("noop: the target resolves this encoding to tiles, so it is a real pack")
    return refused


def _chosen_and_held(e: Exploration, c: str | None, index: int) -> list[str]:
    """The placement the best plan chose for operand ``index`` of the contraction in class ``c``, then
    each other placement the e-graph held (with the same other operand), with its cost."""
    g, best = e.data, e.best.choice
    if c is None or c not in best:
        return []
    chosen_node = g.nodes[best[c]]
    operand_class = chosen_node.children[1 + index] if chosen_node.op == "Contract" else None
    if operand_class is None:
        return []
    lines = [f"    chosen   {_kind(g, operand_class, best)}: objective {e.best.metrics.objective:.4e}"]
    seen = {_kind(g, operand_class, best)}
    for alt in g.choices(c):
        if alt.op != "Contract" or alt.children[2 - index] != chosen_node.children[2 - index]:
            continue
        trial = _complete(e, best | {c: alt.id})
        if not trial or not is_acyclic(g, trial):
            continue
        kind = _kind(g, alt.children[1 + index], trial)
        if kind in seen:
            continue
        seen.add(kind)
        metrics = _metrics(e, trial)
        delta = metrics.objective - e.best.metrics.objective
        lines.append(
            f"    held     {kind}: objective {metrics.objective:.4e} ({delta:+.3e} vs chosen; "
            f"run {metrics.run_seconds * 1e6:.2f} µs, memory {metrics.memory_bytes} B)"
        )
    return lines


def _sinking(e: Exploration, let_class: dict[str, str]) -> list[str]:
    """Per elementwise consumer of a contraction: run on the encoded accumulator or after the
    unset_encoding (rules/sink_unset.egg), the other choice's cost, or the condition that refused it."""
    g, best = e.data, e.best.choice
    sites = sink_sites(e.imported)
    if not sites:
        return []
    lines = ["", "elementwise consumers of contractions (sink_unset):"]
    for n, site in enumerate(sites, 1):
        head = f"- linalg.generic #{n} ({_describe(e, site.let)})"
        c = let_class.get(site.let)
        if site.refusal is not None:
            lines.append(f"{head}: after the unset_encoding; refused  sink_unset: {site.refusal}")
            continue
        if c is None:
            continue
        on_encoded = [m for m in g.choices(c) if m.op == "UnsetEncoding" and _has(g, m.children[0], "Generic")]
        plain = [m for m in g.choices(c) if m.op == "Generic"]
        if not on_encoded:
            why = "9. the accumulator's layout is the identity"
            lines.append(f"{head}: after the unset_encoding; refused  sink_unset: {why}")
            continue
        if c not in best:
            if any(m.children[0] in best for m in on_encoded):  # only the encoded result is read
                lines.append(
                    f"{head}: chosen on the encoded accumulator, its unset_encoding cancelled against the next "
                    f"set_encoding (noop): objective {e.best.metrics.objective:.4e}"
                )
            else:
                lines.append(f"{head}: not on the chosen plan")
            continue
        sunk_ = g.nodes[best[c]].op == "UnsetEncoding"
        held = "after the unset_encoding" if sunk_ else "on the encoded accumulator"
        chosen = "on the encoded accumulator" if sunk_ else "after the unset_encoding"
        lines.append(f"{head}: chosen {chosen}: objective {e.best.metrics.objective:.4e}")
        lines += _held_line(e, best, c, plain if sunk_ else on_encoded, held)
    return lines


def _held_line(e: Exploration, best: dict[str, str], c: str, alts: list, held: str) -> list[str]:
    """The first alternative of class c that completes to a plan, priced against the chosen one."""
    for alt in alts:
        trial = _complete(e, best | {c: alt.id})
        if not trial or not is_acyclic(e.data, trial):
            continue
        metrics = _metrics(e, trial)
        delta = metrics.objective - e.best.metrics.objective
        return [
            f"    held     {held}: objective {metrics.objective:.4e} ({delta:+.3e} vs chosen; "
            f"run {metrics.run_seconds * 1e6:.2f} µs, memory {metrics.memory_bytes} B)"
        ]
    return []


def _has(g, c: str, op: str) -> bool:
    return any(n.op == op for n in g.choices(c))


def _encoded_operand(e: Exploration, let: str) -> str | None:
    """The encoding key of an operand that is a set_encoding, fused or placed (untile's conditions 1-3)."""
    term = e.imported.lets.get(let)
    s = e.imported.lets.get(term.value) if isinstance(term, T.Dispatch | T.ConstEval) else term
    return s.encoding if isinstance(s, T.SetEncoding) else None


def _untile_refusal(e: Exploration, contract: str, unset: str) -> str:
    """The first numbered condition of rules/untile.egg the contraction fails."""
    m = e.imported.lets[contract]
    assert isinstance(m, T.Contract)
    lhs, rhs, acc = (_encoded_operand(e, x) for x in (m.lhs, m.rhs, m.acc))
    fill = e.imported.lets.get(m.acc)
    if acc is None and isinstance(fill, T.Fill):
        init = e.imported.lets.get(fill.init)
        empty = isinstance(init, T.SetEncoding) and isinstance(e.imported.lets.get(init.source), T.Empty)
        acc = init.encoding if isinstance(init, T.SetEncoding) and empty else None
    if lhs is None:
        return "1. the LHS is encoded by no set_encoding (no plain LHS to read)"
    if rhs is None:
        return "2. the RHS is encoded by no set_encoding (no plain RHS to read)"
    if acc is None:
        return "3. the accumulator is neither a fill of an encoded tensor.empty nor a set_encoding"
    keys = [enc_without_operand(k) for k in (lhs, rhs, acc)]
    indices = [e.imported.encodings[k].operand_index for k in (lhs, rhs, acc)]
    if len(set(keys)) != 1 or indices != [0, 1, 2]:
        return "4. the operands' encodings are not this contraction's own (operand indices 0, 1, 2 of one encoding)"
    shapes = [getattr(e.imported.let_types.get(x), "shape", None) for x in (contract, unset)]
    if shapes[0] != shapes[1]:
        return "5. the unset_encoding does not return the whole result"
    return "not derived (the saturation budget stopped first)"


def _data_tiling(e: Exploration, let_class: dict[str, str], dropped: set[str]) -> list[str]:
    """Per contraction: data tiling kept or dropped (rules/untile.egg), and the other choice's cost."""
    g, best = e.data, e.best.choice
    lines = ["", "data tiling per contraction (untile):"]
    number: dict[str, int] = {}
    for unset, term in e.imported.lets.items():
        if not isinstance(term, T.UnsetEncoding):
            continue
        m = e.imported.lets.get(term.source)
        c = let_class.get(unset)
        if not isinstance(m, T.Contract) or c is None:
            continue
        op_name = m.kind.split(":")[0]
        number[op_name] = number.get(op_name, 0) + 1
        head = f"- {op_name} #{number[op_name]}"
        plain = [n for n in g.choices(c) if n.op == "Contract"]
        tiled = [n for n in g.choices(c) if n.op in ("UnsetEncoding", "Unpack")]
        if not tiled:
            lines.append(f"{head}: identity layout, the encodings fold away (noop)")
            continue
        if not plain:
            lines.append(f"{head}: data-tiled; refused  untile: {_untile_refusal(e, term.source, unset)}")
            continue
        if c not in best:
            lines.append(f"{head}: not on the chosen plan")
            continue
        if c in dropped:
            chosen, alts, held = "data tiling dropped (plain " + op_name + ")", tiled, "data-tiled (mmt4d)"
        else:
            chosen, alts, held = "data-tiled (mmt4d)", plain, "data tiling dropped (plain " + op_name + ")"
        lines.append(f"{head}: chosen {chosen}: objective {e.best.metrics.objective:.4e}")
        lines += _held_line(e, best, c, alts, held)
    return lines
