"""Facts of the ``sink_unset`` family (``rules/sink_unset.egg``): which elementwise generics may run on
the encoded accumulator of the contraction they consume, and the encoding each of their other operands
then gets.

IREE's ``SinkUnsetEncodingOp`` (DispatchCreation/HoistEncodingOps.cpp, PR #21426) moves an
``unset_encoding`` below its consumer generic when ``EncodingAttr``'s propagation interface says the
operand is "propagable down" (ExternalInterfaces/EncodingExternalModels.cpp, ``isPropagableDown``), and
``generateSinkingEncodings`` gives every other operand the accumulator's encoding with its own indexing
map appended (``cloneWithNewOperandIndexingMap``): a bias ``[N]`` read through ``(d0, d1) -> (d1)`` is
encoded ``[..., [(d0, d1, d2) -> (d0, d1), (d0, d1) -> (d1)]]``, whose layout is the accumulator's tiles
on the dims the bias has (``target.layout.encoding_attr_layout``). The conditions are computed here,
on the start state's generics, because they read indexing maps (the terms only name a generic by key):

1. the generic is all-parallel (``getNumReductionLoops() == 0``);
2. every indexing map is a projected permutation (no ``d0 + d1``, no constant);
3. the encoded value is an input, not the init;
4. its map is a permutation (PR #24171: never a broadcast *of* the encoded tensor); a transposing map
   T gives every other operand, and the init, the accumulator's encoding with ``inversePermutation(T)``
   appended before its own map (``createNewEncoding``: each of the two only when it is not the identity);
5. the output map is a permutation, one init, one result: the init, and the result, get the
   accumulator's encoding with the output map appended (``createNewEncoding`` on the init: a transpose
   of the encoded result, ``(d0, d1, d2) -> (d1, d0, d2)``, is the accumulator's tiles on the permuted
   dims); with the identity it is the accumulator's encoding itself;
6. a body that reads ``linalg.index`` reads the logical index (not a refusal: on the tiles IREE's
   codegen rewrites it to ``outer * tile + inner``, as ``emit.packed.packed_loop_indices`` and the
   evaluator do; a causal mask after ``Q K^T`` reads its indices);
7. the encoded value is the whole of a value in a matmul accumulator's encoding (an
   ``unset_encoding`` of a contraction's result or of an encoded argument), or of a generic this
   family sinks through already (a chain of elementwise ops).

Every input that reads such a value is a site of its own (IREE's ``SinkUnsetEncodingOp`` is rooted
at the unset_encoding, whichever operand of the consumer it is): a residual add reading the result of
an earlier sunk generic (another dispatch's) and the unset_encoding of its own dispatch's contraction
runs on either accumulator, the other input encoded to match. IREE's own, the unset_encoding in the
generic's dispatch, is the first site (``SinkSite``; the others are its ``also``), and its result's
encoding is what a chain continues with.

Condition 8 (the accumulator's layout tiled, or the identity on a target with an encoding resolver,
whether or not ``noop`` has folded the unset_encoding: IREE sinks without asking the layout) is the
rule's own (``layout-of``), but for the resolver, checked here (``sink_facts``). IREE's "the
unset_encoding has one use" is no condition of the e-graph (a plan that also needs the plain result
keeps the unset for that use, and the cost model charges both); the modelled baseline applies it
(``plan/baseline.py``).
"""

from __future__ import annotations

import dataclasses

from egg_dispatch.egraph import terms as T
from egg_dispatch.egraph.import_util import encoding_key
from egg_dispatch.egraph.imported import ImportedProgram
from egg_dispatch.egraph.terms import quote
from egg_dispatch.mlir.ir import AffineMapAttr, EncodingAttr, Operation, TensorType
from egg_dispatch.mlir.ops import indexing_maps, ins, iterator_types

__all__ = ["SinkSite", "sink_facts", "sink_sites", "sunk_encoding"]


@dataclasses.dataclass(frozen=True)
class SinkSite:
    """A generic the family may run on an encoded input (or why not)."""

    let: str
    key: str
    position: int
    """Which input reads the contraction's result."""
    encoding: str | None
    """The encoding key of that result (the accumulator's), when known."""
    operands: dict[int, str]
    """Input position -> the encoding key it gets (tensor operands other than ``position``)."""
    refusal: str | None = None
    """The first numbered condition (module docstring) it fails; None when legal."""
    scalars: tuple[int, ...] = ()
    """Input positions that are scalars (a function's f32 argument, a constant): read as they are."""
    init: int = -1
    """The init's operand position (the number of inputs)."""
    result: str | None = None
    """The encoding key the init, and the result, get (condition 5)."""
    also: tuple[SinkSite, ...] = ()
    """The legal sites of the same generic on its other encoded inputs (module docstring)."""

    def sites(self) -> tuple[SinkSite, ...]:
        """This site and its ``also``."""
        return (self, *self.also)


def sunk_encoding(e: EncodingAttr, operand_map: AffineMapAttr, target_map: AffineMapAttr | None = None) -> EncodingAttr:
    """``generateSinkingEncodings``' ``createNewEncoding`` for an operand read through ``operand_map``,
    the encoded input read through the permutation ``target_map`` (default: the identity): the
    accumulator's encoding with ``inversePermutation(target_map)`` appended to its own entry, then
    ``operand_map``, each unless it is the identity (``cloneWithNewOperandIndexingMap``)."""
    if target_map is not None and not target_map.is_identity:
        e = e.with_operand_map(_inverse_permutation(target_map))
    return e if operand_map.is_identity else e.with_operand_map(operand_map)


def _inverse_permutation(m: AffineMapAttr) -> AffineMapAttr:
    """MLIR's ``inversePermutation`` of a permutation map: result d of it is the position that reads d."""
    dims = m.dim_positions() or ()
    position = {d: j for j, d in enumerate(dims)}
    return AffineMapAttr(len(dims), 0, tuple(("d", position[d]) for d in range(len(dims))))


@dataclasses.dataclass(frozen=True)
class _Source:
    """What an input of a generic reads, when it is an encoded value (condition 7)."""

    encoding: str | None
    refusal: str | None
    placed: bool
    """A dispatch result (not IREE's: an unset_encoding in another dispatch than the generic)."""


def _source_encoding(imported: ImportedProgram, let: str, sunk: dict[str, str]) -> _Source | None:
    """The encoded value an input reads: an unset_encoding of an encoded contraction (condition 7), or a
    generic the family already sinks through; a dispatch result of one counts too (the fuse family
    fuses the consumer into that dispatch). None when the input reads no encoded value."""
    term = imported.lets.get(let)
    placed = isinstance(term, T.Dispatch)
    if isinstance(term, T.Dispatch):
        let, term = term.value, imported.lets.get(term.value)
    if let in sunk:
        return _Source(sunk[let], None, placed)
    if not isinstance(term, T.UnsetEncoding):
        return None
    src_t = imported.let_types.get(term.source)
    enc = src_t.encoding if isinstance(src_t, TensorType) else None
    if (
        not isinstance(src_t, TensorType)
        or not isinstance(enc, EncodingAttr)
        or enc.op_type != "matmul"
        or enc.operand_index != 2
    ):
        return _Source(None, "7. the unset_encoding's source is not a matmul-encoded contraction result", placed)
    out_t = imported.let_types.get(let)
    if not isinstance(out_t, TensorType) or out_t.shape != src_t.shape:
        return _Source(None, "7. the unset_encoding does not return the whole result", placed)
    key = encoding_key(enc)
    imported.encodings.setdefault(key, enc)  # an encoded function argument's: no set_encoding named it
    return _Source(key, None, placed)


def _generic_refusal(op: Operation, n_init: int) -> str | None:
    """The first of conditions 1, 2, 5 and 6 (those of the generic, whichever input is encoded) it fails."""
    its = iterator_types(op)
    maps = indexing_maps(op)
    if not its or any(i != "parallel" for i in its):
        return "1. the generic has a reduction loop"
    if len(maps) != len(op.operands) or not all(mp.num_symbols == 0 and mp.dim_positions() is not None for mp in maps):
        return "2. an indexing map is not a projected permutation"
    out = maps[-1].dim_positions() or ()
    if len(op.results) != 1 or n_init != 1 or sorted(out) != list(range(maps[-1].num_dims)):
        return "5. the output map is not a permutation (or not one init)"
    return None


def _position_refusal(op: Operation, position: int, n_in: int) -> str | None:
    """Conditions 3 and 4: those of the encoded input itself."""
    if position >= n_in:
        return "3. the encoded value is the generic's init, not an input"
    mp = indexing_maps(op)[position]
    dims = mp.dim_positions()
    if dims is None or sorted(dims) != list(range(mp.num_dims)):
        return "4. the encoded input's map is not a permutation (a broadcast of the encoded tensor)"
    return None


def _legal_site(imported: ImportedProgram, op: Operation, site: SinkSite) -> SinkSite | None:
    """``site`` with the encodings of its other operands (``generateSinkingEncodings``), registered in
    ``imported.encodings``; None when the accumulator's encoding is unknown."""
    enc = imported.encodings.get(site.encoding) if site.encoding else None
    if enc is None:
        return None
    maps = indexing_maps(op)
    types = [v.type for v in ins(op)]
    keys: dict[int, str] = {}
    scalars = tuple(i for i, t in enumerate(types) if i != site.position and not isinstance(t, TensorType))
    tensors = [i for i, t in enumerate(types) if i != site.position and isinstance(t, TensorType)]
    for i in [*tensors, len(types)]:  # the other tensor inputs, then the init (the result's encoding)
        e_i = sunk_encoding(enc, maps[i], maps[site.position])
        keys[i] = encoding_key(e_i)
        imported.encodings.setdefault(keys[i], e_i)
        if site.encoding in imported.encoding_dims:  # the same iteration sizes: the same encoding_dims
            imported.encoding_dims.setdefault(keys[i], imported.encoding_dims[site.encoding])
    result = keys.pop(len(types))
    return dataclasses.replace(site, operands=keys, scalars=scalars, init=len(types), result=result)


def _site(imported: ImportedProgram, let: str, sunk: dict[str, str]) -> SinkSite | None:
    term = imported.lets[let]
    if not isinstance(term, T.Generic):
        return None
    key = term.key
    op = imported.ops.get(key)
    if not isinstance(op, Operation):
        return None
    n_in = len(ins(op))
    names = term.operands()
    found = [(i, _source_encoding(imported, x, sunk)) for i, x in enumerate(names)]
    # IREE's own first: an unset_encoding in the generic's dispatch, then a dispatch result (ours)
    candidates = sorted(((i, s) for i, s in found if s is not None), key=lambda c: (c[1].placed, c[0]))
    if not candidates:
        return None
    sites = [SinkSite(let, key, i, s.encoding, {}, s.refusal) for i, s in candidates]
    why = _generic_refusal(op, len(names) - n_in)
    if why is not None:  # condition 7 of the first input first, then the generic's own
        return sites[0] if sites[0].refusal else dataclasses.replace(sites[0], refusal=why)
    sites = [s if s.refusal else dataclasses.replace(s, refusal=_position_refusal(op, s.position, n_in)) for s in sites]
    legal = [x for x in (_legal_site(imported, op, s) for s in sites if s.refusal is None) if x is not None]
    if not legal:
        return sites[0] if sites[0].refusal is not None else None
    return dataclasses.replace(legal[0], also=tuple(legal[1:]))


def sink_sites(imported: ImportedProgram) -> list[SinkSite]:
    """Every generic of the start state reading an encoded contraction's result (directly or through
    generics the family sinks through), with its operands' encodings or the condition it fails; one
    per generic, its other legal sites in ``also``. Registers the operands' encodings in
    ``imported.encodings`` (the emitter prints them)."""
    sunk: dict[str, str] = {}
    out: list[SinkSite] = []
    for let, term in imported.lets.items():
        if not isinstance(term, T.Generic):
            continue
        site = _site(imported, let, sunk)
        if site is None:
            continue
        out.append(site)
        if site.refusal is None and site.result is not None:
            sunk[let] = site.result  # the result is encoded as the init (condition 5)
    return out


def sink_facts(sites: list[SinkSite], resolver: bool = True) -> tuple[list[str], dict[tuple[str, ...], str]]:
    """egglog facts ``(sink-target key position enc)``, ``(sink-encoding key enc i enc_i)`` (the init's
    too: i = the number of inputs) and ``(sink-scalar key i)`` for every legal site of ``sites``
    (:func:`sink_sites`) and its ``also``, and the refusals of the others (keyed ``("sink", generic
    let)``, for ``--explain``). ``resolver``: the target has an encoding resolver; without one (target
    ``none``, IREE without data tiling) every site is refused (condition 8)."""
    lines: list[str] = []
    refusals: dict[tuple[str, ...], str] = {}
    for first in sites:
        if first.refusal is None and first.encoding is not None and not resolver:
            refusals[("sink", first.let)] = "8. the target has no encoding resolver (IREE without data tiling)"
            continue
        if first.refusal is not None or first.encoding is None:
            refusals[("sink", first.let)] = first.refusal or ""
            continue
        for site in first.sites():
            k = quote(site.key)
            lines.append(f"(sink-target {k} {site.position} {site.encoding})")
            for i, e_i in sorted({**site.operands, site.init: site.result}.items()):
                lines.append(f"(sink-encoding {k} {site.encoding} {i} {e_i})")
            lines += [f"(sink-scalar {k} {i})" for i in site.scalars]
    return sorted(set(lines)), refusals
