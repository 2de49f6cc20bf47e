"""Facts of the bubbling rule (``rules/propagate_bubble.egg``): which set_encodings may move above the
generic that produces their source, and the encoding each of the generic's inputs then gets.

IREE's ``BubbleUpSetEncodingOp`` (DispatchCreation/HoistEncodingOps.cpp,
``bubbleUpSetEncodingThroughGenericOp``) moves a ``set_encoding`` inside a dispatch above its producer
when the producer is a bit extend (a dequantization) or a broadcast, and gives every input the
set_encoding's encoding with the input's indexing map appended to the operand's ``user_indexing_maps``
entry (``cloneWithNewOperandIndexingMap``; the map is first re-expressed in the output's index space,
composed with the inverse of the output map), identity maps included; the init becomes a
``tensor.empty`` of the original encoding. The conditions (the numbers are the rule's):

1. the producer is a bit extend (``LinalgExt::isBitExtendOp``) or a broadcast
   (``LinalgExt::isBroadcastingOp``: one input read through a projected permutation of lower rank,
   an identity output map, a body that only yields);
2. it is all-parallel, with one init, a ``tensor.empty``, and one result;
3. its output map is a permutation with as many dims as the encoding's last map for the operand has
   results; every input map is a projected permutation (so the composed map is one too);
4. a tiled layout's inner tiles divide every dim the contraction reduces: the generic runs on the
   packed tiles, padding included, and a contraction reads its K padding, which must stay the pack's
   zero (a dequantization does not map 0 to 0); M and N padding is dropped by the unpack. IREE has no
   such condition. An identity layout (element types the target has no tiles for) has no padding: on
   a target with an encoding resolver it bubbles as IREE bubbles it, while ``noop`` has not folded the
   set_encoding into its source (the rule's condition 5, checked in the e-graph: once folded, the
   encodings are gone and bubbling would only re-encode the folded forms); on one without (``none``,
   IREE without data tiling) it does not.

IREE's "the generic has one use" is no condition of the e-graph: a plan that also needs the plain
result keeps the generic for that use, and the cost model charges both.
"""

from __future__ import annotations

import dataclasses

from egg_dispatch.egraph import terms as T
from egg_dispatch.egraph.import_util import encoding_key
from egg_dispatch.egraph.imported import ImportedProgram
from egg_dispatch.mlir.ir import AffineMapAttr, EncodingAttr, Operation, TensorType
from egg_dispatch.mlir.ops import indexing_maps, ins, iterator_types, outs
from egg_dispatch.start.clone import is_bit_extend

__all__ = ["BubbleSite", "bubble_sites", "is_broadcasting"]

@dataclasses.dataclass(frozen=True)
class BubbleSite:
    """A set_encoding of a generic's result that may move above the generic (or why not)."""

    set_encoding: str
    """The set_encoding's let ("" for one a bubble creates on a producer's input)."""
    generic: str
    """The generic's let (its result is what is encoded)."""
    key: str
    encoding: str
    operands: dict[int, str]
    """Input position -> the encoding key it gets."""
    scalars: tuple[int, ...] = ()
    """Input positions that are scalars: read as they are."""
    refusal: str | None = None


def is_broadcasting(op: Operation) -> bool:
    """``LinalgExt::isBroadcastingOp`` for a ``linalg.generic`` (``linalg.broadcast`` is read as one)."""
    if op.name != "linalg.generic" or not op.regions or len(ins(op)) != 1 or len(outs(op)) != 1:
        return False
    if not all(t == "parallel" for t in iterator_types(op)):
        return False
    maps = indexing_maps(op)
    if len(maps) != 2 or maps[0].dim_positions() is None or not maps[1].is_identity:
        return False
    return len(maps[0].results) < len(maps[1].results) and len(op.regions[0].entry.ops) == 1


def _in_output_space(operand_map: AffineMapAttr, output_map: AffineMapAttr) -> AffineMapAttr:
    """``operandMap.compose(inversePermutation(outputMap))`` for projected permutations."""
    out = output_map.dim_positions() or ()
    position = {d: j for j, d in enumerate(out)}  # loop dim -> the output dim that reads it
    dims = operand_map.dim_positions() or ()
    return AffineMapAttr(len(out), 0, tuple(("d", position[d]) for d in dims))


def _last_map(e: EncodingAttr) -> AffineMapAttr | None:
    entry = (e.user_indexing_maps or ())[e.operand_index] if e.user_indexing_maps else None
    last = entry[-1] if isinstance(entry, tuple) else entry
    return last if isinstance(last, AffineMapAttr) else None


def bubble_sites(imported: ImportedProgram) -> list[BubbleSite]:
    """Every set_encoding of a generic's result in the start state, and every set_encoding a bubble
    puts on an input that is itself a generic's result (a chain of producers), with the inputs'
    encodings or the condition it fails (1-3; 4 needs the layouts, ``facts._bubble_facts``).
    Registers the inputs' encodings in ``imported.encodings`` (their layouts and the emitter need
    them)."""
    work: list[tuple[str, str, str]] = []  # (set_encoding let or "", generic let, encoding key)
    for let, term in imported.lets.items():
        if isinstance(term, T.SetEncoding) and isinstance(imported.lets.get(term.source), T.Generic):
            work.append((let, term.source, term.encoding))
    out: list[BubbleSite] = []
    seen: set[tuple[str, str]] = set()
    while work:
        set_let, generic, enc_key = work.pop(0)
        if (generic, enc_key) in seen:
            continue
        seen.add((generic, enc_key))
        site = _site(imported, set_let, generic, enc_key)
        if site is None:
            continue
        out.append(site)
        names = imported.lets[generic].operands()
        for i, e_i in site.operands.items():
            if isinstance(imported.lets.get(names[i]), T.Generic):
                work.append(("", names[i], e_i))
    return out


def _site(imported: ImportedProgram, set_let: str, generic: str, enc_key: str) -> BubbleSite | None:
    g = imported.lets[generic]
    op = imported.ops.get(g.key) if isinstance(g, T.Generic) else None
    enc = imported.encodings.get(enc_key)
    if not isinstance(g, T.Generic) or not isinstance(op, Operation) or not isinstance(enc, EncodingAttr):
        return None
    site = BubbleSite(set_let, generic, g.key, enc_key, {})
    why = _refusal(imported, op, enc, list(g.outs))
    if why is not None:
        return dataclasses.replace(site, refusal=why)
    maps = indexing_maps(op)
    operands: dict[int, str] = {}
    for i, v in enumerate(ins(op)):
        if not isinstance(v.type, TensorType):
            continue
        e_i = enc.with_operand_map(_in_output_space(maps[i], maps[-1]))
        operands[i] = encoding_key(e_i)
        imported.encodings.setdefault(operands[i], e_i)
        if enc_key in imported.encoding_dims:
            imported.encoding_dims.setdefault(operands[i], imported.encoding_dims[enc_key])
    scalars = tuple(i for i, v in enumerate(ins(op)) if not isinstance(v.type, TensorType))
    return dataclasses.replace(site, operands=operands, scalars=scalars)


def _refusal(imported: ImportedProgram, op: Operation, enc: EncodingAttr, inits: list[str]) -> str | None:
    if not (is_bit_extend(op) or is_broadcasting(op)):
        return "1. the producer is neither a bit extend nor a broadcast"
    if (
        not all(t == "parallel" for t in iterator_types(op))
        or len(inits) != 1
        or len(op.results) != 1
        or not isinstance(imported.lets.get(inits[0]), T.Empty)
    ):
        return "2. not all-parallel with one tensor.empty init and one result"
    maps = indexing_maps(op)
    last = _last_map(enc)
    out_dims = maps[-1].dim_positions() if maps else None
    if (
        len(maps) != len(op.operands)
        or out_dims is None
        or sorted(out_dims) != list(range(maps[-1].num_dims))
        or last is None
        or len(last.results) != maps[-1].num_dims
        or any(mp.dim_positions() is None or mp.num_symbols for mp in maps)
    ):
        return "3. the output map is not a permutation of the encoding's dims (or an input map is no projection)"
    return None
