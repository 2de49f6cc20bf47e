"""Tensor encodings: ``#iree_encoding.encoding<...>`` read into an ``EncodingAttr`` (the encoding the
cost model prices: a matmul operand's data-tiling layout), and every other encoding
(``#iree_encoding.testing<>``, ``#iree_encoding.layout<[...]>``, ``#iree_encoding.padding<[...]>``,
...) kept verbatim as a ``DialectAttr``: ``unpriced_encoding`` names it, and ``unpriced_note`` is the
one warning a module that has any gets (the importer keeps the ops on such tensors opaque, but for
their set_encodings and unset_encodings)."""

from __future__ import annotations

from typing import cast

from egg_dispatch.mlir.ir import (
    AffineMapAttr,
    ArrayAttr,
    DispatchTensorType,
    EncodingAttr,
    Loc,
    ScalarType,
    TensorType,
    Type,
    TypeAttr,
)
from egg_dispatch.mlir.lexer import int_value
from egg_dispatch.mlir.parser_base import ParserBase

__all__ = ["ENCODING_FIELDS", "EncodingParser", "is_serialized_layout", "unpriced_encoding", "unpriced_note"]

ENCODING_FIELDS = (
    "operand_index",
    "op_type",
    "element_types",
    "original_element_type",
    "user_indexing_maps",
    "iteration_sizes",
)


def unpriced_encoding(t: Type) -> str | None:
    """The name (``#iree_encoding.testing``) of the encoding of tensor type ``t`` when it is one the
    cost model does not price (anything but ``#iree_encoding.encoding``); None for a priced one or none."""
    if isinstance(t, DispatchTensorType):
        t = t.tensor
    e = t.encoding if isinstance(t, TensorType) else None
    if e is None or isinstance(e, EncodingAttr):
        return None
    text = getattr(e, "text", None)
    return text.split("<", 1)[0] if isinstance(text, str) else type(e).__name__


def _top_level_items(text: str) -> list[str]:
    """The comma-separated items of ``text`` at bracket depth 0."""
    items, depth, start = [], 0, 0
    for i, ch in enumerate(text):
        if ch in "<[({":
            depth += 1
        elif ch in ">])}":
            depth -= 1
        elif ch == "," and depth == 0:
            items.append(text[start:i].strip())
            start = i + 1
    items.append(text[start:].strip())
    return [x for x in items if x]


def _is_serialized(layout: str) -> bool:
    """IREE's ``SerializableAttr::isSerialized`` for one layout of a ``#iree_encoding.layout`` list, for
    the layouts IREE's encoding dialect defines (Encoding/IR/EncodingAttrs.cpp): a testing layout with
    its ``layouts`` parameter, identity and packed storage, a padding with static amounts. Any other
    (a target's own layout) counts as not serialized, so nothing is propagated on its account."""
    if layout.startswith("#iree_encoding.testing<"):
        return "layouts" in layout
    if layout.startswith(("#iree_encoding.identity", "#iree_encoding.packed_storage")):
        return True
    if layout.startswith("#iree_encoding.padding<"):
        return "?" not in layout
    return False


def is_serialized_layout(e: object) -> bool:
    """Whether ``e`` is a ``#iree_encoding.layout<[...]>`` every layout of which is serialized (IREE's
    ``LayoutAttr::isSerialized``): the encodings PropagateEncodings moves above a ``tensor.cast``."""
    text = getattr(e, "text", None)
    prefix = "#iree_encoding.layout<["
    if not isinstance(text, str) or not text.startswith(prefix) or not text.endswith("]>"):
        return False
    return all(_is_serialized(x) for x in _top_level_items(text[len(prefix) : -2]))


def unpriced_note(first_uses: dict[str, Loc]) -> str:
    """The one warning of a module whose tensors carry encodings the cost model does not price, at the
    first of them, naming each (in the order they first occur)."""
    where = next(iter(first_uses.values()))
    names = ", ".join(first_uses)
    return (
        f"{where}: warning: encodings the cost model does not price: {names}; kept as written: their "
        "set_encodings and unset_encodings move as encodes do but have no layout, and the other ops on tensors "
        "that carry them are opaque ops (a barrier for every rule)"
    )


class EncodingParser(ParserBase):
    def note_encoding(self, t: TensorType, pos: int) -> None:
        """Remember where an encoding the cost model does not price first occurs (``unpriced_note``)."""
        name = unpriced_encoding(t)
        if name is not None and name not in self.unpriced:
            self.unpriced[name] = self.lex.loc(pos)

    def parse_iteration_sizes(self) -> tuple[int | None, ...]:
        """An encoding's ``iteration_sizes`` list, ``[4, ?, 8]`` (``?``: dynamic, None)."""
        lex = self.lex
        lex.expect("[")
        sizes: list[int | None] = []
        while not lex.at("]"):
            if lex.accept("?"):
                sizes.append(None)
            else:
                sizes.append(int_value(lex, lex.expect_kind("int", "an iteration size or '?'")))
            if not lex.accept(","):
                break
        lex.expect("]")
        return tuple(sizes)

    def parse_encoding(self) -> EncodingAttr:
        lex = self.lex
        start = lex.expect("<").pos
        fields: dict[str, object] = {}
        index_type = "index"
        while not lex.at(">"):
            key_tok = lex.expect_kind("ident", "an encoding field name")
            key = key_tok.text
            if key not in ENCODING_FIELDS:
                raise lex.error(
                    f"unknown #iree_encoding.encoding field '{key}' (expected one of {', '.join(ENCODING_FIELDS)})",
                    key_tok.pos,
                )
            if key in fields:
                raise lex.error(f"duplicate #iree_encoding.encoding field '{key}'", key_tok.pos)
            lex.expect("=", f"after '{key}'")
            if key == "operand_index":
                fields[key] = int_value(lex, lex.expect_kind("int", "an operand index"))
                if lex.accept(":"):
                    index_type = lex.expect_kind("ident", "an integer type").text
            elif key == "op_type":
                fields[key] = lex.expect_kind("ident", "an op type (matmul, scaled_matmul, conv)").text
            elif key == "iteration_sizes":
                fields[key] = self.parse_iteration_sizes()
            else:  # element_types, original_element_type, user_indexing_maps
                fields[key] = self.parse_attribute()
            if not lex.accept(","):
                break
        lex.expect(">", "to close #iree_encoding.encoding")
        missing = [k for k in ("operand_index", "op_type", "element_types") if k not in fields]
        if missing:
            raise lex.error(f"#iree_encoding.encoding needs {', '.join(missing)}", start)

        def scalar(a: object) -> ScalarType:
            if isinstance(a, TypeAttr) and isinstance(a.type, ScalarType):
                return a.type
            raise lex.error("expected an element type in #iree_encoding.encoding", start)

        et = fields["element_types"]
        if not isinstance(et, ArrayAttr):
            raise lex.error("element_types must be a list of types", start)
        maps = fields.get("user_indexing_maps")
        maps_t = None
        if maps is not None:
            if not isinstance(maps, ArrayAttr):
                raise lex.error("user_indexing_maps must be a list of affine maps", start)
            entries: list[AffineMapAttr | tuple[AffineMapAttr, ...]] = []
            for m in maps.items:
                if isinstance(m, AffineMapAttr):
                    entries.append(m)
                elif isinstance(m, ArrayAttr) and all(isinstance(x, AffineMapAttr) for x in m.items):
                    entries.append(tuple(x for x in m.items if isinstance(x, AffineMapAttr)))  # all of them
                else:
                    raise lex.error("user_indexing_maps entries must be affine maps or lists of them", start)
            maps_t = tuple(entries)
        oet = fields.get("original_element_type")
        return EncodingAttr(
            # the loop above stored an int, a str and a tuple of sizes under these keys
            operand_index=cast(int, fields["operand_index"]),
            op_type=cast(str, fields["op_type"]),
            element_types=tuple(scalar(a) for a in et.items),
            user_indexing_maps=maps_t,
            iteration_sizes=cast("tuple[int | None, ...] | None", fields.get("iteration_sizes")),
            original_element_type=scalar(oet) if oet is not None else None,
            operand_index_type=index_type,
        )
