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
4. its map is the identity (IREE: a permutation; PR #24171: never a broadcast *of* the encoded
   tensor) -- a transposing map is IREE's, not modelled here;
5. the output map is the identity (IREE appends the inverse of the operand's permutation to the result's
   encoding; with the identity the result is encoded exactly as the accumulator), one init, one result;
6. the body reads no ``linalg.index`` (IREE rewrites it to ``outer * tile + inner``; not modelled);
7. the encoded value is the whole of a value in a matmul accumulator's encoding (an
   ``unset_encoding`` of a contraction's result or of an encoded argument), or of a generic this
   family sinks through already (a chain of elementwise ops).

The tiled-layout condition is the rule's own (``layout-of``). IREE's "the unset_encoding has one use" is
no condition of the e-graph (a plan that also needs the plain result keeps the unset for that use, and
the cost model charges both); the modelled baseline applies it (``plan/baseline.py``).
"""

from __future__ import annotations

import dataclasses
import re

from egg_dispatch.egraph.import_util import encoding_key
from egg_dispatch.egraph.imported import ImportedProgram
from egg_dispatch.egraph.terms import quote
from egg_dispatch.mlir.ir import AffineMapAttr, EncodingAttr, Operation, TensorType
from egg_dispatch.mlir.ops import ins

__all__ = ["SinkSite", "sink_facts", "sink_sites", "sunk_encoding"]

_GENERIC = re.compile(r'^\(Generic "([^"]+)" (.*)\)$')
_LET = re.compile(r"\$v[0-9]+")
_UNSET = re.compile(r"^\(UnsetEncoding (\$v[0-9]+) ")
_DISPATCH = re.compile(r"^\(Dispatch (\$v[0-9]+)\)$")


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


def sunk_encoding(e: EncodingAttr, operand_map: AffineMapAttr) -> EncodingAttr:
    """``generateSinkingEncodings`` for an operand read through ``operand_map`` when the encoded input's
    map is the identity: the accumulator's encoding, with the map appended to its own entry unless it is
    the identity (``cloneWithNewOperandIndexingMap``)."""
    return e if operand_map.is_identity else e.with_operand_map(operand_map)


def _source_encoding(imported: ImportedProgram, let: str, sunk: dict[str, str]) -> tuple[str | None, str | None]:
    """(encoding key of the encoded value an input reads, refusal): an unset_encoding of an encoded
    contraction (condition 7), or a generic the family already sinks through; a dispatch result of one
    counts too (the fuse family fuses the consumer into that dispatch)."""
    term = imported.lets.get(let, "")
    placed = _DISPATCH.match(term)
    if placed:
        let, term = placed.group(1), imported.lets.get(placed.group(1), "")
    if let in sunk:
        return sunk[let], None
    m = _UNSET.match(term)
    if not m:
        return None, None
    src_t = imported.let_types.get(m.group(1))
    enc = src_t.encoding if isinstance(src_t, TensorType) else None
    if (
        not isinstance(src_t, TensorType)
        or not isinstance(enc, EncodingAttr)
        or enc.op_type != "matmul"
        or enc.operand_index != 2
    ):
        return None, "7. the unset_encoding's source is not a matmul-encoded contraction result"
    out_t = imported.let_types.get(let)
    if not isinstance(out_t, TensorType) or out_t.shape != src_t.shape:
        return None, "7. the unset_encoding does not return the whole result"
    key = encoding_key(enc)
    imported.encodings.setdefault(key, enc)  # an encoded function argument's: no set_encoding named it
    return key, None


def _site(imported: ImportedProgram, let: str, sunk: dict[str, str]) -> SinkSite | None:
    m = _GENERIC.match(imported.lets[let])
    if m is None:
        return None
    key = m.group(1)
    op = imported.ops.get(key)
    if not isinstance(op, Operation):
        return None
    n_in = len(ins(op))
    names = _LET.findall(m.group(2))
    inputs, inits = names[:n_in], names[n_in:]
    found = [(i, *_source_encoding(imported, x, sunk)) for i, x in enumerate(inputs)]
    found += [(n_in + j, *_source_encoding(imported, x, sunk)) for j, x in enumerate(inits)]
    candidates = [(i, e, why) for i, e, why in found if e is not None or why is not None]
    if not candidates:
        return None
    position, enc_key, why = candidates[0]
    site = SinkSite(let, key, position, enc_key, {})
    if why is not None:
        return dataclasses.replace(site, refusal=why)
    its = [getattr(a, "value", "") for a in getattr(op.attributes.get("iterator_types"), "items", ())]
    maps = list(getattr(op.attributes.get("indexing_maps"), "items", ()))
    if not its or any(i != "parallel" for i in its):
        return dataclasses.replace(site, refusal="1. the generic has a reduction loop")
    if len(maps) != len(op.operands) or not all(
        isinstance(mp, AffineMapAttr) and mp.num_symbols == 0 and mp.dim_positions() is not None for mp in maps
    ):
        return dataclasses.replace(site, refusal="2. an indexing map is not a projected permutation")
    if position >= n_in:
        return dataclasses.replace(site, refusal="3. the encoded value is the generic's init, not an input")
    if not maps[position].is_identity:
        broadcast = len(maps[position].results) < maps[position].num_dims
        how = "a broadcast of the encoded tensor" if broadcast else "a transpose"
        return dataclasses.replace(site, refusal=f"4. the encoded input's map is not the identity ({how})")
    if len(op.results) != 1 or len(inits) != 1 or not maps[-1].is_identity:
        return dataclasses.replace(site, refusal="5. the output map is not the identity (or not one init)")
    enc = imported.encodings.get(enc_key) if enc_key else None
    if enc is None:
        return None
    types = [v.type for v in ins(op)]
    body = op.regions[0].entry.ops if op.regions else []
    if any(o.name == "linalg.index" for inner in body for o in inner.walk()):
        return dataclasses.replace(site, refusal="6. the body reads linalg.index (not modelled)")
    operands: dict[int, str] = {}
    scalars = tuple(i for i, t in enumerate(types) if i != position and not isinstance(t, TensorType))
    for i, t in enumerate(types):
        if i == position or not isinstance(t, TensorType):
            continue  # the encoded input itself, or a scalar (read as it is)
        e_i = sunk_encoding(enc, maps[i])
        operands[i] = encoding_key(e_i)
        imported.encodings.setdefault(operands[i], e_i)
        if enc_key in imported.encoding_dims:  # the same iteration sizes: the same encoding_dims
            imported.encoding_dims.setdefault(operands[i], imported.encoding_dims[enc_key])
    return dataclasses.replace(site, operands=operands, scalars=scalars)


def sink_sites(imported: ImportedProgram) -> list[SinkSite]:
    """Every generic of the start state reading an encoded contraction's result (directly or through
    generics the family sinks through), with its operands' encodings or the condition it fails.
    Registers the operands' encodings in ``imported.encodings`` (the emitter prints them)."""
    sunk: dict[str, str] = {}
    out: list[SinkSite] = []
    for let, term in imported.lets.items():
        if not term.startswith("(Generic "):
            continue
        site = _site(imported, let, sunk)
        if site is None:
            continue
        out.append(site)
        if site.refusal is None and site.encoding is not None:
            sunk[let] = site.encoding  # identity output map: the result is encoded as the accumulator
    return out


def sink_facts(sites: list[SinkSite]) -> tuple[list[str], dict[tuple[str, ...], str]]:
    """egglog facts ``(sink-target key position enc)``, ``(sink-encoding key enc i enc_i)`` and
    ``(sink-scalar key i)`` for every legal site of ``sites`` (:func:`sink_sites`), and the refusals of
    the others (keyed ``("sink", generic let)``, for ``--explain``)."""
    lines: list[str] = []
    refusals: dict[tuple[str, ...], str] = {}
    for site in sites:
        if site.refusal is not None or site.encoding is None:
            refusals[("sink", site.let)] = site.refusal or ""
            continue
        k = quote(site.key)
        lines.append(f"(sink-target {k} {site.position} {site.encoding})")
        for i, e_i in sorted(site.operands.items()):
            lines.append(f"(sink-encoding {k} {site.encoding} {i} {e_i})")
        lines += [f"(sink-scalar {k} {i})" for i in site.scalars]
    return sorted(set(lines)), refusals
