"""The trailing ``{-# dialect_resources: {builtin: {key: "0x..."}} #-}`` section and the
``dense_resource<key>`` constants that refer to it (decoded, or filled deterministically when elided)."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from egg_dispatch.mlir.dense import check_element_bytes, hex_span, round_bf16
from egg_dispatch.mlir.elements import HexData
from egg_dispatch.mlir.ir import Module, TensorType, numpy_dtype
from egg_dispatch.mlir.lexer import describe
from egg_dispatch.mlir.parser_base import ParserBase

__all__ = ["ELIDED_SEED", "ResourceParser", "elided_fill"]

ELIDED_SEED = 20250616
"""Seed of the deterministic fill for elided resources (the date of IREE issue #21100)."""


def elided_fill(key: str, typ: TensorType) -> np.ndarray:
    """Deterministic stand-in data for a resource without a blob: floats uniform in [-1, 1) (rounded to
    the element type), signed integers in [-7, 7], unsigned in [0, 7], i1 alternating by sign."""
    rng = np.random.default_rng(ELIDED_SEED + sum(map(ord, key)))
    data = rng.uniform(-1.0, 1.0, typ.static_shape)
    dtype = numpy_dtype(typ.element)
    name = typ.element.name
    if typ.element.is_float:
        return round_bf16(data.astype(dtype), typ.element)
    if name == "i1":
        return data > 0
    ints = np.trunc(data * 8)
    return (np.abs(ints) if name.startswith("ui") else ints).astype(dtype)


class ResourceParser(ParserBase):
    def parse_file_resources(self) -> dict[str, HexData]:
        lex = self.lex
        lex.expect("{-#")
        blobs: dict[str, HexData] = {}
        while not lex.at("#-}"):
            section = lex.expect_kind("ident", "'dialect_resources' or 'external_resources'").text
            lex.expect(":")
            lex.expect("{")
            while not lex.at("}"):
                dialect = lex.expect_kind("ident", "a dialect name").text
                lex.expect(":")
                lex.expect("{")
                while not lex.at("}"):
                    key_tok = lex.next()
                    if key_tok.kind not in ("ident", "string"):
                        raise lex.error(f"expected a resource key, found {describe(key_tok)}", key_tok.pos)
                    lex.expect(":")
                    val = lex.expect_kind("string", "a hex resource blob")
                    if section == "dialect_resources" and dialect == "builtin":
                        if not val.text.startswith('"0x'):
                            raise lex.error('a resource blob must start with "0x"', val.pos)
                        span = hex_span(lex.text, val.pos + 1, val.pos + len(val.text) - 1)
                        if span is None:
                            raise lex.error("a resource blob must be hex digits", val.pos)
                        blobs[key_tok.text.strip('"')] = span
                    if not lex.accept(","):
                        break
                lex.expect("}")
                if not lex.accept(","):
                    break
            lex.expect("}")
            if not lex.accept(","):
                break
        lex.expect("#-}", "to close the file resources")
        return blobs

    def resolve_resources(self, module: Module) -> None:
        for attr, loc in self.pending_resources:
            key = attr.resource_key or ""
            blob = module.resources.get(key)
            if blob is None:
                # Elided or missing blob: a deterministic fill, loudly (docs/design.md §2.1).
                why = "is elided" if key == "__elided__" else "has no blob in the file"
                attr.set_source(fill=_fill(key, attr.type))
                self.warnings.append(
                    f"{loc}: warning: resource '{key}' {why}; filled with deterministic pseudo-random "
                    f"values (seed {ELIDED_SEED}), so numbers are not the original model's"
                )
            else:
                pos = self.lex.pos_of(loc)
                if blob.nbytes < 4:
                    raise self.lex.error(f"resource blob '{key}' is shorter than its 4-byte alignment header", pos)
                what = f"resource blob '{key}' (after its 4-byte header)"
                check_element_bytes(self.lex, blob.nbytes - 4, attr.type, pos, allow_splat=False, what=what)
                attr.set_source(hex_data=blob, skip=4)


def _fill(key: str, typ: TensorType) -> Callable[[], np.ndarray]:
    return lambda: elided_fill(key, typ)
