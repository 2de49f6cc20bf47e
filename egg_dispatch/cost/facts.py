"""What an e-class is as a tensor: its shape, element type and the tiled layout it is stored in.

Every price in the cost model starts from these facts: ``Facts.info`` reads them from the e-graph's
analysis facts (``shape``, ``dtype``, ``encoding-of`` and the layout its encoding resolves to), and
``TensorInfo`` turns them into bytes. A tensor encoded with a tiled layout is stored padded to whole
tiles (IREE's ``calculatePackedStorageSizeInBytesImpl``), so its storage and its traffic are counted
on the padded size, its logical size beside it.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass
from typing import cast

from egg_dispatch.egraph.data import EGraphData, Term
from egg_dispatch.mlir.ir import ScalarType, element_nbytes
from egg_dispatch.target.layout import Layout

__all__ = ["Facts", "TensorInfo", "layout_of_term"]


@dataclass(frozen=True)
class TensorInfo:
    shape: tuple[int, ...]
    element: str
    layout: Layout | None = None
    """The tiled layout the tensor is stored in, or None (plain or identity-encoded)."""

    @property
    def elem_bytes(self) -> int:
        return element_nbytes(ScalarType(self.element))

    @property
    def numel(self) -> int:
        return math.prod(self.shape)

    @property
    def logical_bytes(self) -> int:
        return self.numel * self.elem_bytes

    @property
    def stored_numel(self) -> int:
        """Elements as stored: padded to whole tiles when encoded with a tiled layout."""
        if self.layout is None:
            return self.numel
        tile = dict(zip(self.layout.inner_dims_pos, self.layout.inner_tiles, strict=True))
        return math.prod(-(-s // tile.get(d, 1)) * tile.get(d, 1) for d, s in enumerate(self.shape))

    @property
    def stored_bytes(self) -> int:
        return self.stored_numel * self.elem_bytes

    def padded_dim(self, d: int) -> int:
        if self.layout is None:
            return self.shape[d]
        tile = dict(zip(self.layout.inner_dims_pos, self.layout.inner_tiles, strict=True)).get(d, 1)
        return -(-self.shape[d] // tile) * tile


def layout_of_term(t: object) -> Layout | None:
    if isinstance(t, Term) and t.op == "Tiled":
        return Layout(tuple(t.args[0]), tuple(t.args[1]), tuple(t.args[2]))
    return None


class Facts:
    """Shape / element type / stored layout of an e-class, from the analysis facts."""

    def __init__(self, g: EGraphData):
        self.g = g
        # encoding-of values are Terms (decoded leaves): map them to layouts via their class.
        self.term_layout: dict[Term, Layout | None] = {}
        for c in g.classes:
            if g.class_type.get(c) == "Encoding":
                # info() looks encoding-of values up without their class; an Encoding class decodes to a Term
                t = _strip_class(cast(Term, g.leaf_value(c)))
                self.term_layout[t] = layout_of_term(g.facts.get(c, {}).get("layout-of"))

    def operand_index(self, c: str) -> int | None:
        """Which operand of its contraction class c is encoded for (the encoding's operand_index)."""
        enc = self.g.facts.get(c, {}).get("encoding-of")
        if isinstance(enc, Term) and enc.args and isinstance(enc.args[0], int):
            return enc.args[0]
        return None

    def info(self, c: str, *, packed: bool | None = None) -> TensorInfo:
        f = self.g.facts.get(c, {})
        shape = tuple(cast("Iterable[int]", f.get("shape", ())))  # the shape fact: the class's dims
        elem = str(f.get("dtype", "f32"))
        enc = f.get("encoding-of")
        layout = None
        if packed is not False and isinstance(enc, Term):
            layout = self.term_layout.get(_strip_class(enc))
        return TensorInfo(shape, elem, layout)


def _strip_class(t: Term) -> Term:
    return Term(t.op, t.args, "")
