"""Keys and IR queries the importer builds terms from (maps, encodings, digests, captures), apart from its walk."""

from __future__ import annotations

import hashlib
from collections.abc import Iterable
from typing import cast

from egg_dispatch.egraph.terms import enc
from egg_dispatch.mlir.ir import AffineMapAttr, EncodingAttr, Operation, Value
from egg_dispatch.mlir.printer import Printer

__all__ = ["captured_values", "digest_key", "encoding_key", "is_arith_constant", "maps_key"]


def maps_key(maps: object) -> str:
    """Canonical text of indexing maps: ``(d0,d2);(d1,d2);(d0,d1)``."""
    if maps is None:
        return ""
    items = cast("Iterable[object]", getattr(maps, "items", maps))  # an ArrayAttr's items, or a tuple of maps
    out = []
    for m in items:
        if isinstance(m, tuple):
            out.append("[" + ";".join(maps_key(m).split(";")) + "]")
        elif isinstance(m, AffineMapAttr):
            out.append(Printer(use_aliases=False).attr(m).split("->")[1].strip().rstrip(">").strip())
        else:
            out.append(str(m))
    return ";".join(o.replace(" ", "") for o in out)


def encoding_key(e: EncodingAttr) -> str:
    return enc(
        e.operand_index,
        e.op_type,
        ",".join(t.name for t in e.element_types),
        maps_key(e.user_indexing_maps),
        [s if s is not None else -1 for s in (e.iteration_sizes or ())],
    )


def digest_key(*parts: object) -> str:
    """A short stable digest of ``parts``: keys ops and constants by content."""
    return hashlib.sha1("\x1f".join(map(str, parts)).encode()).hexdigest()[:10]


def captured_values(op: Operation) -> list[Value]:
    """Values an op's regions use but do not define (a body reading a scalar from outside)."""
    inner: set[Value] = set()
    uses: list[Value] = []
    for region in op.regions:
        for block in region.blocks:
            inner.update(block.args)
            for o in block.ops:
                for w in o.walk():
                    inner.update(w.results)
                    for r in w.regions:
                        for b in r.blocks:
                            inner.update(b.args)
                    uses.extend(w.operands)
    out: list[Value] = []
    for v in uses:
        if v not in inner and v not in out:
            out.append(v)
    return out


def is_arith_constant(v: Value) -> bool:
    """v is the result of an ``arith.constant``."""
    return isinstance(v.owner, Operation) and v.owner.name == "arith.constant"
