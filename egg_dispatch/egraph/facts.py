"""Analysis facts seeded from Python: what needs arithmetic on shapes, tiles and bytes.

egglog derives the structural analyses itself (``rules/analysis.egg``: boundary, const-expr,
hoistable source, encoding-of, shapes of new terms). What needs vector arithmetic -- the target's
layout of each encoding, tile alignment of a slice, whether a pack can be fused into its consumer's
dispatch, how much a const-evaluated encoding grows -- is computed here, once, for every
(shape, encoding) pair the rules can build, and asserted as facts keyed on those values (not on
terms), so terms that rules create later are covered too.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Sequence
from dataclasses import dataclass

from egg_dispatch.egraph import terms as T
from egg_dispatch.egraph.bubble_facts import BubbleSite, bubble_sites
from egg_dispatch.egraph.import_util import encoding_key
from egg_dispatch.egraph.imported import ImportedProgram
from egg_dispatch.egraph.sink_facts import SinkSite, sink_facts, sink_sites
from egg_dispatch.egraph.size_facts import (
    const_eval_refusal,
    divides_refusal,
    fused_pack_refusal,
    is_static,
    mappable,
    packed_bytes,
    tile_alignment_refusal,
)
from egg_dispatch.egraph.terms import ivec, quote
from egg_dispatch.mlir.ir import AffineMapAttr, EncodingAttr, TensorType, element_nbytes
from egg_dispatch.mlir.ir_types import static_sizes
from egg_dispatch.mlir.ops import RESHAPE_OPS
from egg_dispatch.mlir.symbolic import Dim
from egg_dispatch.start.clone import cloneable, is_bit_extend
from egg_dispatch.target.layout import (
    Layout,
    LayoutError,
    contraction_dims,
    encoded_operand_dims,
    encoding_attr_layout,
    encoding_matmul_setup,
    packed_nbytes,
    swaps_operands,
)
from egg_dispatch.target.profile import Target

__all__ = [
    "CONST_EXPR_MAX_SIZE_INCREASE",
    "FactReport",
    "encoding_layout",
    "encoding_maps",
    "seed_facts",
    "slice_is_flow_mappable",
]

CONST_EXPR_MAX_SIZE_INCREASE = 1 << 20
"""``--iree-opt-const-expr-max-size-increase-threshold`` default (1 MiB, docs/iree-data-tiling.md §0.1 and §1.8)."""


def encoding_maps(e: EncodingAttr) -> tuple[tuple[int, ...], ...] | None:
    """The loop dim of each operand dim, per operand; None for composed (bubbled) or non-dim maps."""
    if e.user_indexing_maps is None:
        return None
    out = []
    for m in e.user_indexing_maps:
        if not isinstance(m, AffineMapAttr):
            return None
        dims = m.dim_positions()
        if dims is None:
            return None
        out.append(dims)
    return tuple(out)


def encoding_layout(target: Target, e: EncodingAttr) -> Layout | None:
    """What the target resolves ``e`` to; None is the identity layout (no tile, no resolver). A bubbled
    encoding (IREE's plan: a bias broadcast into the encoded accumulator) resolves to the dims it has
    (``target.layout.encoding_attr_layout``)."""
    if e.user_indexing_maps is None or e.op_type != "matmul":  # no iteration_sizes: all unknown (IREE)
        return None
    if len(e.user_indexing_maps) != 3 or e.operand_index not in (0, 1, 2):
        return None  # a dynamic iteration size ('?') resolves as IREE's resolver does (target.layout)
    if len(e.element_types) != 3:
        return None
    try:
        return encoding_attr_layout(target, e)
    except LayoutError:  # maps that are not projected permutations: never tiled
        return None


def slice_is_flow_mappable(
    src: Sequence[int], offsets: Sequence[int], sizes: Sequence[int], strides: Sequence[int]
) -> bool:
    """``isStructurallyFlowMappable`` (docs/iree-data-tiling.md §1.5): unit strides, no rank drop, and one
    contiguous range -- from the innermost dim outwards, once a dim is not taken whole every outer
    dim has size 1. Row blocks pass, column blocks fail."""
    if any(s != 1 for s in strides) or len(sizes) != len(src):
        return False
    partial = False
    for d in reversed(range(len(src))):
        if partial and sizes[d] != 1:
            return False
        if not (offsets[d] == 0 and sizes[d] == src[d]):
            partial = True
    return True


def tile_aligned(
    layout: Layout, src: Sequence[int], offsets: Sequence[int], sizes: Sequence[int], strides: Sequence[int]
) -> bool:
    """A slice of a packed tensor is a plain slice of its outer dims only when, on every tiled dim,
    the offset is a multiple of the tile and the size is too (or the slice runs to the end, where
    the padding of both sides agrees)."""
    if any(s != 1 for s in strides) or len(sizes) != len(src):
        return False
    for d, t in zip(layout.inner_dims_pos, layout.inner_tiles, strict=True):
        if offsets[d] % t:
            return False
        if sizes[d] % t and offsets[d] + sizes[d] != src[d]:
            return False
    return True


def fused_footprint_legal(target: Target, packed: Sequence[int], acc_bytes: int) -> bool:
    """Whether IREE's llvm-cpu codegen compiles a contraction dispatch with packs of ``packed`` bytes
    fused into it as producers (and its unpack as consumer), by a conservative footprint model.

    IREE 3.13 allocates every fused pack's packed buffer, and the packed accumulator the fused unpack
    reads, on the stack, and vectorizes each pack; when it does not tile the dispatch (small problems,
    or both operands packed in it) those are whole tensors. Two limits then apply:

    1. stack: packed operands + packed accumulator <= ``max_stack_allocation_size`` ('exceeded stack
       allocation limit of 32768 bytes ... Got 45056 bytes' for 16x64 . 64x128 f32 with both packs);
    2. vectors: packed operands < 512 native vectors (``Target.max_vector_bytes``; 'large vector sizes
       (16384 bytes)' on AVX2 for 8x64 . 64x64 f32 with both packs).

    Sizes are taken whole (what an untiled dispatch allocates), so the model never accepts a dispatch
    IREE rejects (every failure of a 5-shape x 6-combination probe on AVX2 and AVX-512 with iree-compile
    3.13 is refused); it refuses some that IREE tiles and compiles, where a hoisted encode is the plan.
    """
    total = sum(packed)
    return total + acc_bytes <= target.max_stack_allocation_size and total < target.max_vector_bytes


def fused_pack_legal(target: Target, layout: Layout, shape: Sequence[int], elem_bytes: int, acc_bytes: int = 0) -> bool:
    """A pack fused as producer into the mmt4d dispatch compiles only when the inner tiles divide the
    shape (no padding inside the tiled loops; docs/iree-data-tiling.md §5.3, issue #20723) and the dispatch's footprint
    fits (``fused_footprint_legal``, with the accumulator of the contraction it feeds)."""
    divides = all(shape[d] % t == 0 for d, t in zip(layout.inner_dims_pos, layout.inner_tiles, strict=True))
    return divides and fused_footprint_legal(target, [packed_nbytes(shape, elem_bytes, layout)], acc_bytes)


def accumulator_nbytes(target: Target, e: EncodingAttr) -> int:
    """Packed bytes of the accumulator of the contraction that encoding ``e`` belongs to (its result
    tile buffer when the unpack is fused), from ``e``'s iteration sizes and maps."""
    maps = encoding_maps(e)
    sizes = static_sizes(e.iteration_sizes) if e.iteration_sizes is not None else None
    if maps is None or sizes is None or len(maps) != 3:
        return 0
    shape = tuple(sizes[d] for d in maps[2])
    acc = dataclasses.replace(e, operand_index=2)
    layout = encoding_layout(target, acc)
    return packed_nbytes(shape, element_nbytes(e.element_types[2]), layout)


@dataclass(frozen=True)
class FactReport:
    text: str
    layouts: dict[str, Layout | None]
    """Encoding term text -> its layout on the target (None = identity)."""
    refusals: dict[tuple[str, ...], str] = dataclasses.field(default_factory=dict)
    """Why a size-dependent fact was not asserted for a dynamic shape (``egraph.size_facts``):
    ``("tile-aligned", slice let, enc)``, ``("fused-pack", shape, enc)``, ``("const-eval", shape, enc)``,
    ``("bubble", generic key, enc)`` -> the numbered condition that could not be proved."""


def _dims(imported: ImportedProgram, let: str) -> tuple[int, ...] | None:
    """A let's shape as its term vector (size codes for dynamic dims), or None for a non-tensor."""
    if let in imported.let_dims:
        return imported.let_dims[let]
    t = imported.let_types.get(let)
    return t.static_shape if isinstance(t, TensorType) and t.is_static else None


_Source = tuple[tuple[int, ...], str, str]
"""(source shape as a term vector, element type, encoding key) of a set_encoding the rules can build."""


def seed_facts(imported: ImportedProgram, target: Target) -> FactReport:
    """egglog commands asserting the target-dependent facts for this program, one fact family after
    the other (the order of the text is part of the contract: the seeded e-graph is reproducible)."""
    sinks = sink_sites(imported)  # registers the encodings sunk operands get
    sink_lines, sink_refusals = sink_facts(sinks, resolver=target.encoding_resolver)
    bubbles = bubble_sites(imported)  # ... and those bubbled inputs get
    lines: list[str] = list(sink_lines)
    layout_lines, layouts = _layout_facts(imported, target)
    lines += layout_lines
    lines += _encoded_arguments(imported)
    refusals: dict[tuple[str, ...], str] = dict(sink_refusals)
    slice_lines, sources = _slice_facts(imported, layouts, refusals)
    lines += slice_lines
    sources |= _sunk_operand_sources(imported, sinks)
    accs = _accumulators(imported)
    for dims, elem, enc_key, fed in _bubbled_input_sources(imported, bubbles):
        sources.add((dims, elem, enc_key))
        for (_, acc_enc), shapes in list(accs.items()):  # it feeds the contraction its generic fed
            if acc_enc == fed:
                accs.setdefault((dims, enc_key), []).extend(shapes)
    lines += _pack_facts(imported, target, sorted(sources), accs, layouts, refusals)
    lines += _pair_facts(imported, target, layouts)
    lines += _bubble_facts(imported, bubbles, layouts, refusals, resolver=target.encoding_resolver)
    lines += _op_facts(imported)
    lines += _rank_reducing_slice_facts(imported)
    lines += _reshape_chain_facts(imported)
    lines += _constant_fold_facts(imported)
    return FactReport("\n".join(lines), layouts, refusals)


def _layout_facts(imported: ImportedProgram, target: Target) -> tuple[list[str], dict[str, Layout | None]]:
    """``(set (layout-of enc) ...)`` for every encoding, and ``(swapped-result enc)`` /
    ``(plain-result enc)`` for a tiled result encoding; with the layouts (None: identity)."""
    lines: list[str] = []
    layouts: dict[str, Layout | None] = {}
    for key, e in imported.encodings.items():
        layout = encoding_layout(target, e)
        layouts[key] = layout
        if layout is None:
            lines.append(f"(set (layout-of {key}) (IdentityLayout))")
            continue
        lines.append(
            f"(set (layout-of {key}) (Tiled {ivec(layout.inner_dims_pos)} {ivec(layout.inner_tiles)} "
            f"{ivec(layout.outer_dims_perm)}))"
        )
        maps = encoding_maps(e)
        # three element types and iteration sizes: encoding_layout gives a layout only then
        lhs, rhs, res = (t.name for t in e.element_types)
        if (
            e.operand_index == 2
            and maps
            and e.iteration_sizes is not None
            and swaps_operands(target, (lhs, rhs, res), maps, e.iteration_sizes)
        ):
            lines.append(f"(swapped-result {key})")
        elif e.operand_index == 2:
            lines.append(f"(plain-result {key})")
    return lines, layouts


def _slice_facts(
    imported: ImportedProgram, layouts: dict[str, Layout | None], refusals: dict[tuple[str, ...], str]
) -> tuple[list[str], set[_Source]]:
    """``(mappable-slice let)`` and ``(tile-aligned src enc)`` (a refusal in ``refusals`` when a dynamic
    size keeps it from holding), in let order; with the sources a set_encoding can have: the imported
    ones, and (after propagation) their slices' sources."""
    lines: list[str] = []
    sources: set[_Source] = set()
    sym = imported.shape
    for name, term in imported.lets.items():
        if isinstance(term, T.Slice):
            src_dims = _dims(imported, term.source)
            if src_dims is not None and mappable(sym(src_dims), sym(term.offsets), sym(term.sizes), sym(term.strides)):
                lines.append(f"(mappable-slice {name})")
        if not isinstance(term, T.SetEncoding):
            continue
        candidates = _pack_candidates(imported, name)  # the source, and a slice's whole when it is one
        sources.update(candidates)
        sl, layout = imported.lets.get(term.source), layouts.get(term.encoding)
        if len(candidates) == 2 and isinstance(sl, T.Slice) and layout is not None:
            whole_dims = candidates[1][0]
            why = tile_alignment_refusal(
                layout, sym(whole_dims), sym(sl.offsets), sym(sl.sizes), sym(sl.strides), imported.domains
            )
            if why is None:
                lines.append(f"(tile-aligned {term.source} {term.encoding})")
            else:
                refusals[("tile-aligned", term.source, term.encoding)] = why
    return lines, sources


def _pack_facts(
    imported: ImportedProgram,
    target: Target,
    sources: list[_Source],
    accs: dict[tuple[tuple[int, ...], str], list[tuple[int, ...]]],
    layouts: dict[str, Layout | None],
    refusals: dict[tuple[str, ...], str],
) -> list[str]:
    """``(const-eval-size-ok shape enc)`` and ``(fused-pack-illegal shape enc)`` for each set_encoding
    source (``accs``: the accumulators of the contractions it feeds); a dynamic shape's reasons go to
    ``refusals``."""
    lines: list[str] = []
    for dims, elem, enc_key in sources:
        layout = layouts.get(enc_key)
        shape = imported.shape(dims)
        eb = element_nbytes(_scalar(elem))
        if not is_static(shape):
            refusals[("const-eval", ivec(dims), enc_key)] = const_eval_refusal(shape, None, 0) or ""
            if layout is None:
                continue
            fed: Sequence[tuple[int, ...] | None] = accs.get((dims, enc_key)) or [None]
            if worst := _fused_pack_refusal(imported, target, enc_key, layout, shape, eb, fed):
                lines.append(f"(fused-pack-illegal {ivec(dims)} {enc_key})")
                refusals[("fused-pack", ivec(dims), enc_key)] = worst
            continue
        nbytes = math.prod(dims) * eb
        if layout is None:
            lines.append(f"(const-eval-size-ok {ivec(dims)} {enc_key})")
            continue
        packed = packed_nbytes(dims, eb, layout)
        if packed - nbytes <= CONST_EXPR_MAX_SIZE_INCREASE:
            lines.append(f"(const-eval-size-ok {ivec(dims)} {enc_key})")
        enc = imported.encodings[enc_key]
        acc_shapes: list[tuple[int, ...] | None] = [
            a for a in accs.get((dims, enc_key), []) if not all(v >= 0 for v in a)
        ]
        if not acc_shapes and enc.iteration_sizes and None in enc.iteration_sizes:
            acc_shapes = [None]  # a contraction of a dynamic size that no term here shows: unbounded
        if acc_shapes:  # a static pack feeding a contraction with a dynamic accumulator (a weight)
            if worst := _fused_pack_refusal(imported, target, enc_key, layout, shape, eb, acc_shapes):
                lines.append(f"(fused-pack-illegal {ivec(dims)} {enc_key})")
                refusals[("fused-pack", ivec(dims), enc_key)] = worst
            continue
        acc = accumulator_nbytes(target, enc)
        if not fused_pack_legal(target, layout, dims, eb, acc):
            lines.append(f"(fused-pack-illegal {ivec(dims)} {enc_key})")
    return lines


def _fused_pack_refusal(
    imported: ImportedProgram,
    target: Target,
    enc_key: str,
    layout: Layout,
    shape: tuple[Dim, ...],
    eb: int,
    acc_shapes: Sequence[tuple[int, ...] | None],
) -> str | None:
    """Why a fused pack that some allowed size (of the source or of an accumulator it feeds) may not fit
    (the first reason found, for --explain); None when it fits for every size."""
    enc = imported.encodings[enc_key]
    worst = None
    for acc in acc_shapes:
        why = fused_pack_refusal(target, layout, shape, eb, _acc_bytes(target, enc, acc, imported), imported.domains)
        worst = worst or why
    return worst


ENCODE_FUSABLE_OPS = ("iree_linalg_ext.attention", "iree_linalg_ext.online_attention", "iree_linalg_ext.gather")
"""Ops other than linalg ops that FuseEncodingOpsIntoDispatchRegions fuses a set_encoding after, through
reshapes (isFusableWithSetEncoding): ``(encode-fusable-op key)``, rules/fuse_encode.egg condition 3."""


def _op_facts(imported: ImportedProgram) -> list[str]:
    """``(elementwise key)``, ``(bit-extend key)`` and ``(hoistable-size key)`` of generics,
    ``(view-op key)`` of reshapes; ``(cloneable-op key)`` of ops CloneProducersIntoDispatchRegions clones
    (``start.clone.cloneable``: a tensor.extract, an index_cast, scalar arithmetic) and ``(wrappable-op
    key)`` of ops it wraps in a dispatch of their own when outside every dispatch (a linalg.generic, a
    gather: ``wrapOpInDispatchRegion``; rules/clone.egg)."""
    lines: list[str] = []
    for key, op in imported.ops.items():
        if cloneable(op):
            lines.append(f"(cloneable-op {quote(key)})")
        if op.name in ("linalg.generic", "iree_linalg_ext.gather"):
            lines.append(f"(wrappable-op {quote(key)})")
        if op.name in ENCODE_FUSABLE_OPS:
            lines.append(f"(encode-fusable-op {quote(key)})")
        if op.name == "linalg.generic":
            its = op.attributes.get("iterator_types")
            names = [getattr(a, "value", "") for a in getattr(its, "items", ())]
            if names and all(n == "parallel" for n in names):
                lines.append(f"(elementwise {quote(key)})")
            if is_bit_extend(op):
                lines.append(f"(bit-extend {quote(key)})")
            if _global_bytes(op.results[0].type if len(op.results) == 1 else None) <= CONST_EXPR_MAX_SIZE_INCREASE:
                lines.append(f"(hoistable-size {quote(key)})")
        elif op.name in RESHAPE_OPS:
            lines.append(f"(view-op {quote(key)})")
    return lines


def _reshape_chain_facts(imported: ImportedProgram) -> list[str]:
    """``(reshape-chain2 k1 k2 k)`` and ``(reshape-chain3 k1 k2 k3 k)``: the reshapes ``k1`` then ``k2``
    (then ``k3``) are the one ``flow.tensor.reshape`` ``k`` (``ImportedProgram.reshape_chains``;
    rules/noop_reshape.egg conditions 7-8)."""
    lines: list[str] = []
    for keys, composed in imported.reshape_chains:
        lines.append(f"(reshape-chain{len(keys)} {' '.join(quote(k) for k in (*keys, composed))})")
    # with a dynamic size: (sized-reshape-chain k1 k2 k source-shape sizes), (sized-reshape-identity k1 k2
    # source-shape), rules/noop_reshape.egg conditions 9-12
    for k1, k2, composed, shape, sizes in dict.fromkeys(imported.sized_reshape_chains):
        operands = "(TNil)"
        for c in reversed(sizes):
            operands = f"(TCons {T.render(T.Size(c) if c < 0 else T.Scalar(str(c), 'index'))} {operands})"
        lines.append(f"(sized-reshape-chain {quote(k1)} {quote(k2)} {quote(composed)} {ivec(shape)} {operands})")
    for k1, k2, shape in dict.fromkeys(imported.sized_reshape_identities):
        lines.append(f"(sized-reshape-identity {quote(k1)} {quote(k2)} {ivec(shape)})")
    return lines


def _constant_fold_facts(imported: ImportedProgram) -> list[str]:
    """``(const-slice-fold c o s st f)``: the static slice ``o s st`` of the dense constant ``c`` is the
    constant ``f``; ``(const-reshape-fold k c f)`` / ``(const-transpose-fold k c f)``: the reshape or
    ``linalg.transpose`` ``k`` of ``c`` is ``f`` (``ImportedProgram.slice_folds`` / ``op_folds``, computed
    by ``egraph.const_folds``; rules/fold_constants.egg)."""
    lines = [
        f"(const-slice-fold {quote(c)} {ivec(o)} {ivec(s)} {ivec(st)} {quote(f)})"
        for c, o, s, st, f in imported.slice_folds
    ]
    for k, c, f in imported.op_folds:
        kind = "reshape" if imported.ops[k].name in RESHAPE_OPS else "transpose"
        lines.append(f"(const-{kind}-fold {quote(k)} {quote(c)} {quote(f)})")
    return lines


def _global_bytes(t: object) -> float:
    """Bytes of a global holding a value of type ``t``; infinite when not a static tensor (a dynamic
    value is never hoisted: its size is not known at load)."""
    if not isinstance(t, TensorType) or t.encoding is not None or None in t.shape:
        return math.inf
    return t.nbytes


def _sunk_operand_sources(imported: ImportedProgram, sites: list[SinkSite]) -> set[tuple[tuple[int, ...], str, str]]:
    """(shape, element type, encoding) of the set_encodings ``sink_unset`` gives the other operands of a
    generic it runs on an encoded accumulator (a bias): their const-eval and layout facts."""
    return {
        source
        for first in sites
        if first.refusal is None
        for site in first.sites()  # every encoded input's (sink_facts.py: a site's ``also``)
        for source in _operand_sources(imported, site.let, site.operands)
    }


def _operand_sources(
    imported: ImportedProgram, generic: str, operands: dict[int, str]
) -> list[tuple[tuple[int, ...], str, str]]:
    """(shape, element type, encoding) of the inputs ``operands`` gives encodings (input position ->
    encoding key) of the generic ``generic`` (a let)."""
    names = imported.lets[generic].operands()
    out = []
    for i, enc_key in operands.items():
        t, dims = imported.let_types.get(names[i]), _dims(imported, names[i])
        if isinstance(t, TensorType) and dims is not None:
            out.append((dims, t.element.name, enc_key))
    return out


def _encoded_arguments(imported: ImportedProgram) -> list[str]:
    """``(set (encoding-of arg) enc)`` for each argument of an encoded type whose encoding a rule reads
    (sink_unset runs a generic on it)."""
    out = []
    for name, term in imported.lets.items():
        t = imported.let_types.get(name) if isinstance(term, T.Arg) else None
        if isinstance(t, TensorType) and isinstance(t.encoding, EncodingAttr):
            key = encoding_key(t.encoding)
            if key in imported.encodings:
                out.append(f"(set (encoding-of {name}) {key})")
    return out


def _reduction_dims(enc: EncodingAttr) -> frozenset[int]:
    """The loop dims the contraction ``enc`` was set for reduces (its K dims); all dims when the maps
    name no contraction (then every tile must divide)."""
    _, maps, _ = encoding_matmul_setup(enc)
    loops = 1 + max((d for mp in maps for d in mp), default=-1)
    cd = contraction_dims(maps, loops)
    return frozenset(cd.k) if cd is not None else frozenset(range(loops))


def _bubbled_input_sources(
    imported: ImportedProgram, sites: list[BubbleSite]
) -> set[tuple[tuple[int, ...], str, str, str]]:
    """(shape, element type, encoding, the set_encoding's own encoding) of the set_encodings a bubbled
    generic's inputs get: their const-eval, layout and fused-pack facts."""
    return {
        (*source, site.encoding)
        for site in sites
        if site.refusal is None
        for source in _operand_sources(imported, site.generic, site.operands)
    }


def _accumulators(imported: ImportedProgram) -> dict[tuple[tuple[int, ...], str], list[tuple[int, ...]]]:
    """(pack source shape, encoding) -> the shapes of the results of the contractions it feeds (the
    accumulator a fused unpack reads next to the fused pack)."""
    out: dict[tuple[tuple[int, ...], str], list[tuple[int, ...]]] = {}
    for let, term in imported.lets.items():
        res = _dims(imported, let) if isinstance(term, T.Contract) else None
        if not isinstance(term, T.Contract) or res is None:
            continue
        for operand in (term.lhs, term.rhs):
            placed = imported.lets.get(operand)
            if isinstance(placed, T.Dispatch):  # a hoisted encode the fuse family may pull back into this dispatch
                operand = placed.value
            for dims, _elem, enc_key in _pack_candidates(imported, operand):
                out.setdefault((dims, enc_key), [])
                if res not in out[(dims, enc_key)]:
                    out[(dims, enc_key)].append(res)
    return out


def _acc_bytes(target: Target, e: EncodingAttr, acc: tuple[int, ...] | None, imported: ImportedProgram):
    """The packed accumulator's bytes (a symbolic size) of the contraction with result shape ``acc``;
    unknown (no such contraction: an unbounded size) when None."""
    if acc is None:
        if e.iteration_sizes is not None and all(s is not None for s in e.iteration_sizes):
            return Dim.const(accumulator_nbytes(target, e))
        return Dim.sym("%accumulator")  # no domain: unbounded, so a fused pack is refused
    layout = encoding_layout(target, dataclasses.replace(e, operand_index=2))
    return packed_bytes(imported.shape(acc), element_nbytes(e.element_types[2]), layout)


def _pack_candidates(imported: ImportedProgram, let: str) -> list[tuple[tuple[int, ...], str, str]]:
    """(source shape, element type, encoding) of the packs an operand let can be fused as: its own
    set_encoding's source, and (after propagation through a slice) the sliced tensor."""
    term = imported.lets.get(let)
    if not isinstance(term, T.SetEncoding):
        return []
    src, enc_key = term.source, term.encoding
    src_t, src_dims = imported.let_types.get(src), _dims(imported, src)
    if not isinstance(src_t, TensorType) or src_dims is None:
        return []
    out = [(src_dims, src_t.element.name, enc_key)]
    sl = imported.lets.get(src)
    whole_t = imported.let_types.get(sl.source) if isinstance(sl, T.Slice) else None
    whole_dims = _dims(imported, sl.source) if isinstance(sl, T.Slice) else None
    if isinstance(whole_t, TensorType) and whole_dims is not None:
        out.append((whole_dims, whole_t.element.name, enc_key))
    return out


def _pair_facts(imported: ImportedProgram, target: Target, layouts: dict[str, Layout | None]) -> list[str]:
    """``(fused-pair-illegal s1 e1 s2 e2)``: both operands of one contraction packed in its dispatch do not
    fit (``fused_footprint_legal`` with both packs and the accumulator); asserted in both orders (a
    narrow-N mmt4d takes the RHS first)."""
    out: set[str] = set()
    for let, term in imported.lets.items():
        if not isinstance(term, T.Contract):
            continue
        for lhs in _pack_candidates(imported, term.lhs):
            for rhs in _pack_candidates(imported, term.rhs):
                la, lb = layouts.get(lhs[2]), layouts.get(rhs[2])
                if la is None or lb is None:
                    continue
                res = _dims(imported, let)
                if not all(v >= 0 for v in (*lhs[0], *rhs[0], *(res or ()))):  # a dynamic size: for every size
                    enc = imported.encodings[lhs[2]]
                    why = fused_pack_refusal(
                        target,
                        la,
                        imported.shape(lhs[0]),
                        element_nbytes(_scalar(lhs[1])),
                        _acc_bytes(target, enc, res, imported),
                        imported.domains,
                        [packed_bytes(imported.shape(rhs[0]), element_nbytes(_scalar(rhs[1])), lb)],
                    )
                    if why and not why.startswith("1."):  # tiles that do not divide: the single-pack fact
                        a, b = f"{ivec(lhs[0])} {lhs[2]}", f"{ivec(rhs[0])} {rhs[2]}"
                        out.add(f"(fused-pair-illegal {a} {b})")
                        out.add(f"(fused-pair-illegal {b} {a})")
                    continue
                packed = [
                    packed_nbytes(lhs[0], element_nbytes(_scalar(lhs[1])), la),
                    packed_nbytes(rhs[0], element_nbytes(_scalar(rhs[1])), lb),
                ]
                acc = accumulator_nbytes(target, imported.encodings[lhs[2]])
                if not fused_footprint_legal(target, packed, acc):
                    a, b = f"{ivec(lhs[0])} {lhs[2]}", f"{ivec(rhs[0])} {rhs[2]}"
                    out.add(f"(fused-pair-illegal {a} {b})")
                    out.add(f"(fused-pair-illegal {b} {a})")
    return sorted(out)


def _bubble_facts(
    imported: ImportedProgram,
    sites: list[BubbleSite],
    layouts: dict[str, Layout | None],
    refusals: dict[tuple[str, ...], str] | None = None,
    resolver: bool = True,
) -> list[str]:
    """``(bubble-target key enc)``, ``(bubble-encoding key enc i enc_i)`` and ``(bubble-scalar key i)``:
    the set_encoding(enc) of the generic ``key``'s result may move above it, its input i then encoded
    with enc_i (``egraph/bubble_facts.py``; its condition 4, tiles that divide the dims the contraction
    reduces, is checked here, where the layouts are; ``resolver``: the target has an encoding resolver,
    without which an identity layout does not bubble)."""
    out: list[str] = []
    for site in sites:
        why = site.refusal
        layout = layouts.get(site.encoding)
        out_dims = _dims(imported, site.generic)
        if why is None and layout is None and not resolver:
            why = "4. the target has no encoding resolver (IREE without data tiling)"
        # an identity layout (no tiles, no padding) bubbles while `noop` has not folded the set_encoding
        # (rules/propagate_bubble.egg condition 5 checks that in the e-graph)
        if why is None and layout is not None and out_dims is None:
            why = "4. the generic's shape is not known"
        if why is None and layout is not None and out_dims is not None:
            shape = imported.shape(out_dims)
            enc = imported.encodings[site.encoding]
            k_dims = _reduction_dims(enc)
            reduced = {j for j, d in enumerate(encoded_operand_dims(enc)) if d in k_dims}
            why = divides_refusal(
                layout, shape, imported.domains, "4. tiles that do not divide a reduced (K) dim", only=reduced
            )
        if why is not None:
            if refusals is not None:
                refusals[("bubble", site.key, site.encoding)] = why
            continue
        k = quote(site.key)
        out.append(f"(bubble-target {k} {site.encoding})")
        out += [f"(bubble-encoding {k} {site.encoding} {i} {e_i})" for i, e_i in sorted(site.operands.items())]
        out += [f"(bubble-scalar {k} {i})" for i in site.scalars]
    return sorted(set(out))


def _scalar(name: str):  # small helper: element names come from parsed types
    from egg_dispatch.mlir.ir import ScalarType

    return ScalarType(name)


# --- rank-reducing slices between dispatches (rules/clone.egg condition 7) --------------------------------


def _rank_reducing_slice_facts(imported: ImportedProgram) -> list[str]:
    """``(rank-reducing-slice key offsets sizes strides)`` of every rank-reducing ``tensor.extract_slice``
    with static offsets, sizes and strides: the importer keeps it opaque (``Op``), since its result has
    fewer dims than its sizes; ``rules/clone.egg`` reads it as the ``Slice`` IREE's copy dispatch loads
    (sizes with the unit dims it drops kept, the class without them)."""
    from egg_dispatch.mlir.ops import DYNAMIC, static_slice

    lines: list[str] = []
    for key, op in imported.ops.items():
        if op.name != "tensor.extract_slice" or len(op.operands) != 1 or len(op.results) != 1:
            continue
        offs, sizes, strides = static_slice(op)
        result = op.results[0].type
        if not isinstance(result, TensorType) or result.rank >= len(sizes):
            continue
        if any(v == DYNAMIC for v in (*offs, *sizes, *strides)) or any(v <= 0 for v in strides):
            continue
        lines.append(f"(rank-reducing-slice {quote(key)} {ivec(offs)} {ivec(sizes)} {ivec(strides)})")
    return lines
