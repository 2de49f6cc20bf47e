"""Custom syntax of structured ops: linalg named ops, generic, fill, transpose, broadcast, pack/unpack,
linalg.index, and iree_linalg_ext attention / gather (ins/outs style), read (``LinalgSyntax``) and
written (the ``_print_*`` functions at the end, registered into ``printer.OP_PRINTERS``)."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import TYPE_CHECKING, cast

from egg_dispatch.mlir.ir import (
    Attr,
    Block,
    IntAttr,
    Operation,
    Region,
    ScalarType,
    TensorType,
    Type,
    UnitAttr,
    Value,
)
from egg_dispatch.mlir.lexer import int_value
from egg_dispatch.mlir.ops import (
    CONTRACTION_OPS,
    DIM_SEGMENTS,
    attr,
    base_operands,
    dim_group,
    make_int_list,
    outs,
    set_dims,
)
from egg_dispatch.mlir.parser_base import ParserBase
from egg_dispatch.mlir.printer import prints, prints_dialect
from egg_dispatch.mlir.retired import RETIRED_OPS, respell

if TYPE_CHECKING:
    from egg_dispatch.mlir.printer import Printer

__all__ = ["LINALG_READERS", "LinalgSyntax"]


class LinalgSyntax(ParserBase):
    def looks_structured(self) -> bool:
        """A linalg-style op: optional attr dict / ``key = value`` pairs, then ``ins(`` or ``outs(``."""
        lex = self.lex
        save = lex.save()
        n_pending = len(self.pending_resources)
        try:
            while True:
                if lex.at("ins") or lex.at("outs"):
                    return True
                if lex.at("{"):
                    lex.restore(lex.balanced(lex.peek().pos))
                    continue
                if lex.at("<"):
                    lex.restore(lex.balanced(lex.peek().pos))
                    continue
                if lex.peek().kind == "ident":
                    lex.next()
                    if lex.accept("="):
                        self.parse_attribute()
                        continue
                    if lex.at("("):  # ``unique_indices(true)``
                        lex.restore(lex.balanced(lex.peek().pos))
                        continue
                return False
        except Exception:
            return False
        finally:
            lex.restore(save)
            del self.pending_resources[n_pending:]  # the lookahead's attributes are parsed again

    def _is_key(self, operands_so_far: list[Value]) -> bool:
        """Whether an attribute ``key = value`` comes next. After ``outs(...)`` the identifier may instead
        be the next op (``flow.return %t`` after a transpose, whose syntax ends in ``permutation = [..]``)."""
        if not operands_so_far:
            return True
        lex = self.lex
        save = lex.save()
        lex.next()
        is_key = lex.at("=")
        lex.restore(save)
        return is_key

    # ------------------------------------------------------------------------------ structured
    def parse_structured(self, name: str, start: int) -> Operation:
        """linalg named ops, generic, fill, transpose, broadcast, map, reduce, mmt4d; attention and gather."""
        lex = self.lex
        attrs: dict[str, Attr] = {}
        ins: list[Value] = []
        outs: list[Value] = []
        out_types: list[Type] = []
        regions = []
        short_body = self._short_body() if name in _SIGNATURE_BODIES else None
        while True:
            if lex.at("ins"):
                lex.next()
                ins, _ = self.typed_operands(start)
            elif lex.at("outs"):
                lex.next()
                outs, out_types = self.typed_operands(start)
            elif lex.at("{") and not (ins or outs):
                attrs.update(self.parse_dict().items)
            elif lex.at("<"):
                # Properties: ``<{k = v}>`` (generic) or ``<k = v, ...>`` (attention's custom form).
                lex.next()
                if lex.at("{"):
                    attrs.update(self.parse_dict().items)
                else:
                    while not lex.at(">"):
                        key = lex.expect_kind("ident", "a property name").text
                        lex.expect("=")
                        attrs[key] = self.parse_attribute()
                        if not lex.accept(","):
                            break
                    attrs["__properties__"] = UnitAttr()
                lex.expect(">")
            elif lex.at("attrs"):
                lex.next()
                lex.expect("=")
                attrs.update(self.parse_dict().items)
            elif lex.peek().text in _PAREN_KEYS and not (ins or outs):
                key = lex.next().text
                lex.expect("(")
                attrs[key] = self.parse_attribute()
                lex.expect(")", f"to close '{key}('")
            elif lex.peek().kind == "ident" and lex.peek().text not in ("ins", "outs") and self._is_key(ins + outs):
                key = lex.next().text
                lex.expect("=", f"after '{key}'")
                attrs[key] = self.parse_attribute()
            elif lex.at("(") and name in _SIGNATURE_BODIES and (ins or outs):
                regions.append(self._signature_body())
            elif lex.at("{") and (ins or outs):
                # A dictionary after outs is an attribute dict when it starts with a key; else a region.
                save = lex.save()
                lex.next()
                first = lex.next()
                second = lex.peek()
                lex.restore(save)
                is_dict = first.text == "}" or (first.kind in ("ident", "string") and second.text in ("=", ",", "}"))
                if is_dict:
                    attrs.update(self.parse_dict().items)
                else:
                    regions.append(self.parse_region())
            else:
                break
        results = out_types
        if lex.accept("->"):  # ``-> (T1, T2)``, or ``-> T1, T2`` as online_attention's results are printed
            results = self.parse_paren_types() if lex.at("(") else self.parse_type_list()
        if not (ins or outs):
            raise lex.error(f"expected 'ins(' or 'outs(' in '{name}'", start)
        if short_body is not None:
            regions.append(self._short_region(name, short_body, ins, outs, start))
        attrs["operandSegmentSizes"] = make_int_list((len(ins), len(outs)))
        if name in RETIRED_OPS:  # read as what it is now: the op IREE reads, with its maps spelled out
            if "indexing_maps" in attrs:
                raise lex.error(f"'{name}' takes no indexing_maps (its name implies them)", start)
            self.retired.append((name, lex.loc(lex.text.find(name, start))))  # at its name, as MLIR points
            name, maps = respell(name)
            attrs = {"indexing_maps": maps, **attrs}
        return self.make_op(name, [*ins, *outs], results, attributes=attrs, regions=regions)

    def _signature_body(self) -> Region:
        """``(%in: f32, %init: f32) { ... }``: the body of ``linalg.map`` / ``linalg.reduce``, its block
        arguments written before the region."""
        lex = self.lex
        lex.expect("(")
        args: list[tuple[str, Type, int]] = []
        while not lex.at(")"):
            tok = lex.expect_kind("value", "a block argument (%name: type)")
            lex.expect(":")
            args.append((tok.text[1:], self.parse_type(), tok.pos))
            if not lex.accept(","):
                break
        lex.expect(")")
        return self.parse_region(args)

    def _short_body(self) -> tuple[str, int] | None:
        """``{ arith.addf }`` before ``ins``: the one op of a map / reduce body, by name (and where)."""
        lex = self.lex
        if not lex.at("{"):
            return None
        save = lex.save()
        lex.next()
        tok = lex.next()
        if tok.kind == "ident" and "." in tok.text and lex.accept("}"):
            return tok.text, tok.pos
        lex.restore(save)
        return None

    def _short_region(
        self, name: str, body: tuple[str, int], ins: list[Value], outs: list[Value], start: int
    ) -> Region:
        """The region ``{ op }`` stands for, as MLIR's printer abbreviates it: a block argument per element
        of each input and init, ``op`` on them (map: on the inputs' only), yielded."""
        elems = [v.type.element if isinstance(v.type, TensorType) else v.type for v in [*ins, *outs]]
        if not ins or not isinstance(outs[0].type if outs else None, TensorType):
            raise self.lex.error(f"'{name}' with a one-op body needs tensor inputs and an init", start)
        block = Block()
        # Named after where the op is (unique in the file): the printed long form must not redefine a name.
        block.args = [Value(f"in{start}_{i}", t, block, i) for i, t in enumerate(elems)]
        result_t = cast(TensorType, outs[0].type).element
        operands = block.args[: len(ins)] if name == "linalg.map" else list(block.args)
        inner = self.make_op(body[0], operands, [result_t])
        inner.loc = self.lex.loc(body[1])
        inner.results[0].name = f"out{start}"
        block.ops = [inner, self.make_op("linalg.yield", [inner.result], [])]
        return Region([block])

    def _p_relayout(self, name: str, start: int) -> Operation:
        """``linalg.pack %src [padding_value(%p : T)] [outer_dims_perm = ..] inner_dims_pos = ..
        inner_tiles = .. into %dest : T -> T'`` and ``linalg.unpack`` (no padding)."""
        lex = self.lex
        src = self.operand()
        attrs: dict[str, Attr] = {}
        pad: list[Value] = []
        if lex.accept("padding_value"):
            lex.expect("(")
            pad = [self.operand()]
            lex.expect(":")
            self.check_types(pad, [self.parse_type()], start)
            lex.expect(")")
            attrs["has_padding"] = UnitAttr()
        dyn: list[Value] = []
        while not lex.at("into"):
            key = lex.expect_kind("ident", "'outer_dims_perm', 'inner_dims_pos', 'inner_tiles' or 'into'").text
            lex.expect("=")
            if key == "inner_tiles":
                tiles, dyn = self.static_list()
                self.check_types(dyn, [ScalarType("index")] * len(dyn), start)
                attrs[key] = make_int_list(tiles)
            else:
                attrs[key] = self.parse_attribute()
        lex.expect("into")
        dest = self.operand()
        self.opt_attr_dict(attrs)
        lex.expect(":")
        self.check_types([src], [self.parse_type()], start)
        lex.expect("->")
        res = self.parse_type()
        self.check_types([dest], [res], start)
        attrs["operandSegmentSizes"] = make_int_list((1, 1))
        return self.make_op(name, [src, dest, *pad, *set_dims(attrs, [dyn])], [res], attributes=attrs)

    def _p_index(self, name: str, start: int) -> Operation:
        lex = self.lex
        dim = int_value(lex, lex.expect_kind("int", "a loop dimension"))
        lex.expect(":")
        return self.make_op(name, [], [self.parse_type()], attributes={"dim": IntAttr(dim)})


_PAREN_KEYS = ("unique_indices",)
"""Attributes a structured op spells ``key(value)`` before its operands (``iree_linalg_ext.scatter``)."""

_SIGNATURE_BODIES = frozenset({"linalg.map", "linalg.reduce"})
"""Structured ops whose body is written ``(%a: T, ...) { ... }`` after the operands (or ``{ op }`` before)."""

LINALG_READERS: dict[str, Callable[[LinalgSyntax, str, int], Operation]] = {
    "linalg.pack": LinalgSyntax._p_relayout,
    "linalg.unpack": LinalgSyntax._p_relayout,
    "linalg.index": LinalgSyntax._p_index,
}
"""Op name -> the method of ``LinalgSyntax`` that reads it (``syntax.OpSyntax`` dispatches through it)."""


# ------------------------------------------------------------------------------------ printing
# The writer side of the readers above: each function writes what follows the op name.
@prints_dialect("linalg", "iree_linalg_ext")
def _print_structured(p: Printer, op: Operation, indent: str) -> str | None:
    """``[head] ins(..) outs(..) [tail] [attrs] [{ region }] [-> T]``; an op read in the generic form
    (no ``operandSegmentSizes``) has no custom form (None)."""
    n = op.name
    if "operandSegmentSizes" not in op.attributes or "." not in n:  # a structured op's name has its dialect
        return None
    skip = {"operandSegmentSizes"}
    head = _structured_head(p, op, skip)
    tail = _listed(p, op, ("permutation", "dimensions"), skip)
    extra = p.extra_attrs(op, skip)
    body = p.ins_outs(op)
    attrs = ""
    if extra:
        attrs = (
            f" attrs = {p.dict(list(extra.items()))}" if n == "linalg.generic" else f" {p.dict(list(extra.items()))}"
        )
    region = ""
    if op.regions and n in _SIGNATURE_BODIES:
        entry = op.regions[0].entry
        signature = ", ".join(f"%{v.name}: {p.type(v.type)}" for v in entry.args)
        unlabelled = dataclasses.replace(op.regions[0], blocks=[dataclasses.replace(entry, label=None)])
        region = f"\n{indent}  ({signature}) {p.region(unlabelled, indent + '  ')}"
    elif op.regions:
        region = " " + p.region(op.regions[0], indent, print_entry_args=True)
    res = ""
    if n not in ("linalg.transpose", "linalg.broadcast", "linalg.map", "linalg.reduce") and op.results:
        res = p.types([r.type for r in op.results])
        # linalg writes several result types in parentheses, iree_linalg_ext as a bare list
        res = f" -> ({res})" if len(op.results) > 1 and op.dialect == "linalg" else f" -> {res}"
    if n in ("linalg.transpose", "linalg.broadcast") or not outs(op):
        return f"{body}{tail}{attrs}{region}{res}"
    if n == "linalg.generic":
        return f"{head}{body}{attrs}{region}{res}"
    return f"{head}{body}{tail}{attrs}{region}{res}"


def _structured_head(p: Printer, op: Operation, skip: set[str]) -> str:
    """What comes before ``ins``: properties ``<..>``, generic's ``{indexing_maps, iterator_types}``, a
    contraction's ``indexing_maps = ..``, then ``dimension_map = ..``; the keys written join ``skip``."""
    a = op.attributes
    n = op.name
    head = ""
    if "__properties__" in a:
        keys = [k for k in ("indexing_maps",) if k in a]
        head = " <" + ", ".join(f"{k} = {p.attr(a[k])}" for k in keys) + ">"
        skip |= {*keys, "__properties__"}
    elif n in ("linalg.generic", "iree_linalg_ext.custom_op") or n.startswith("iree_linalg_ext.attention"):
        keys = [k for k in ("indexing_maps", "iterator_types") if k in a]
        d = {k: a[k] for k in keys}
        if d:
            head = " " + p.dict(list(d.items()))
        skip |= set(keys)
    elif n in CONTRACTION_OPS or n.startswith(("linalg.batch", "linalg.matmul")) or n == "linalg.contract":
        if "indexing_maps" in a:
            head = f" indexing_maps = {p.attr(a['indexing_maps'])}"
            skip.add("indexing_maps")
    head += _listed(p, op, ("dimension_map",), skip)
    for key in _PAREN_KEYS:
        if key in a:
            head += f" {key}({p.attr(a[key])})"
            skip.add(key)
    return head


def _listed(p: Printer, op: Operation, keys: tuple[str, ...], skip: set[str]) -> str:
    """`` key = value`` for each of ``keys`` the op has (added to ``skip``)."""
    out = ""
    for key in keys:
        if key in op.attributes:
            out += f" {key} = {p.attr(op.attributes[key])}"
            skip.add(key)
    return out


@prints("linalg.pack", "linalg.unpack")
def _print_relayout(p: Printer, op: Operation, indent: str) -> str:
    """``%src [padding_value(%p : T)] [outer_dims_perm = ..] inner_dims_pos = .. inner_tiles = ..
    into %dest [{attrs}] : T -> T'``."""
    a = op.attributes
    base = base_operands(op)
    src, dest = base[0], base[1]
    pad = ""
    if len(base) > 2:
        pv = base[2]
        pad = f" padding_value({p.value(pv)} : {p.type(pv.type)})"
    s = f" {p.value(src)}{pad}"
    if "outer_dims_perm" in a:
        s += f" outer_dims_perm = {p.attr(a['outer_dims_perm'])}"
    tiles = p.static(op, "inner_tiles", list(dim_group(op, 0)))
    s += f" inner_dims_pos = {p.attr(a['inner_dims_pos'])} inner_tiles = {tiles}"
    keys = {"outer_dims_perm", "inner_dims_pos", "inner_tiles", "has_padding", "operandSegmentSizes", DIM_SEGMENTS}
    extra = p.attr_dict(p.extra_attrs(op, keys))
    return f"{s} into {p.value(dest)}{extra} : {p.type(src.type)} -> {p.type(op.result.type)}"


@prints("linalg.index")
def _print_index(p: Printer, op: Operation, indent: str) -> str:
    return f" {attr(op, 'dim', IntAttr).value} : {p.type(op.result.type)}"
