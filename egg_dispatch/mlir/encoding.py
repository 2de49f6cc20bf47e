"""Parsing of ``#iree_encoding.encoding<...>`` into an ``EncodingAttr``."""

from __future__ import annotations

from typing import cast

from egg_dispatch.mlir.ir import AffineMapAttr, ArrayAttr, EncodingAttr, ScalarType, TypeAttr
from egg_dispatch.mlir.lexer import int_value
from egg_dispatch.mlir.parser_base import ParserBase

__all__ = ["ENCODING_FIELDS", "EncodingParser"]

ENCODING_FIELDS = (
    "operand_index",
    "op_type",
    "element_types",
    "original_element_type",
    "user_indexing_maps",
    "iteration_sizes",
)


class EncodingParser(ParserBase):
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
                fields[key] = tuple(sizes)
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
