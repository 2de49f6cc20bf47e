"""Custom syntax of structured ops: linalg named ops, generic, fill, transpose, broadcast, pack/unpack,
linalg.index, and iree_linalg_ext attention / gather (ins/outs style), read (``LinalgSyntax``) and
written (the ``_print_*`` functions at the end, registered into ``printer.OP_PRINTERS``)."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from egg_dispatch.mlir.ir import Attr, IntAttr, Operation, Type, UnitAttr, Value
from egg_dispatch.mlir.lexer import int_value
from egg_dispatch.mlir.ops import CONTRACTION_OPS, attr, make_int_list, outs
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
        """linalg named ops, generic, fill, transpose, broadcast, mmt4d; attention and gather."""
        lex = self.lex
        attrs: dict[str, Attr] = {}
        ins: list[Value] = []
        outs: list[Value] = []
        out_types: list[Type] = []
        regions = []
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
            elif lex.peek().kind == "ident" and lex.peek().text not in ("ins", "outs") and self._is_key(ins + outs):
                key = lex.next().text
                lex.expect("=", f"after '{key}'")
                attrs[key] = self.parse_attribute()
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
        if lex.accept("->"):
            results = self.parse_result_types()
        if not (ins or outs):
            raise lex.error(f"expected 'ins(' or 'outs(' in '{name}'", start)
        attrs["operandSegmentSizes"] = make_int_list((len(ins), len(outs)))
        if name in RETIRED_OPS:  # read as what it is now: the op IREE reads, with its maps spelled out
            if "indexing_maps" in attrs:
                raise lex.error(f"'{name}' takes no indexing_maps (its name implies them)", start)
            self.retired.append((name, lex.loc(lex.text.find(name, start))))  # at its name, as MLIR points
            name, maps = respell(name)
            attrs = {"indexing_maps": maps, **attrs}
        return self.make_op(name, [*ins, *outs], results, attributes=attrs, regions=regions)

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
        while not lex.at("into"):
            key = lex.expect_kind("ident", "'outer_dims_perm', 'inner_dims_pos', 'inner_tiles' or 'into'").text
            lex.expect("=")
            if key == "inner_tiles":
                tiles, dyn = self.static_list()
                if dyn:
                    raise lex.error("dynamic inner_tiles are not supported yet", start)
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
        return self.make_op(name, [src, dest, *pad], [res], attributes=attrs)

    def _p_index(self, name: str, start: int) -> Operation:
        lex = self.lex
        dim = int_value(lex, lex.expect_kind("int", "a loop dimension"))
        lex.expect(":")
        return self.make_op(name, [], [self.parse_type()], attributes={"dim": IntAttr(dim)})


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
    if op.regions:
        region = " " + p.region(op.regions[0], indent, print_entry_args=True)
    res = ""
    if n not in ("linalg.transpose", "linalg.broadcast", "linalg.map", "linalg.reduce") and op.results:
        res = f" -> {p.types([r.type for r in op.results])}"
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
    elif n == "linalg.generic" or n.startswith("iree_linalg_ext.attention"):
        keys = [k for k in ("indexing_maps", "iterator_types") if k in a]
        d = {k: a[k] for k in keys}
        if d:
            head = " " + p.dict(list(d.items()))
        skip |= set(keys)
    elif n in CONTRACTION_OPS or n.startswith(("linalg.batch", "linalg.matmul")) or n == "linalg.contract":
        if "indexing_maps" in a:
            head = f" indexing_maps = {p.attr(a['indexing_maps'])}"
            skip.add("indexing_maps")
    return head + _listed(p, op, ("dimension_map",), skip)


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
    src, dest = op.operands[0], op.operands[1]
    pad = ""
    if len(op.operands) > 2:
        pv = op.operands[2]
        pad = f" padding_value({p.value(pv)} : {p.type(pv.type)})"
    s = f" {p.value(src)}{pad}"
    if "outer_dims_perm" in a:
        s += f" outer_dims_perm = {p.attr(a['outer_dims_perm'])}"
    s += f" inner_dims_pos = {p.attr(a['inner_dims_pos'])} inner_tiles = {p.attr(a['inner_tiles'])}"
    keys = {"outer_dims_perm", "inner_dims_pos", "inner_tiles", "has_padding", "operandSegmentSizes"}
    extra = p.attr_dict(p.extra_attrs(op, keys))
    return f"{s} into {p.value(dest)}{extra} : {p.type(src.type)} -> {p.type(op.result.type)}"


@prints("linalg.index")
def _print_index(p: Printer, op: Operation, indent: str) -> str:
    return f" {attr(op, 'dim', IntAttr).value} : {p.type(op.result.type)}"
