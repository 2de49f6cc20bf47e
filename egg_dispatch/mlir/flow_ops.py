"""``flow.tensor.slice``: IREE's copy of a tile of a tensor between dispatches (reader and printer).

IREE's ConvertTensorToFlow turns a hoisted ``tensor.extract_slice`` of a function argument into
``flow.tensor.slice`` (docs/iree-data-tiling.md §1.5), which Stream runs as a copy:

    %s = flow.tensor.slice %x[%c0, %c16 for %c16, %c16] : tensor<48x16xf32> -> tensor<16x16xf32>

The start indices and lengths are ``index`` SSA values (one per dim, in that order after the source);
the op holds them as operands ``[source, *starts, *lengths]`` and ``slice_rank`` says how many of
each. Static shapes only (a dynamic source or result would carry ``{%d}`` sizes after its type).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from egg_dispatch.mlir.ir import Attr, IntAttr, Operation, ScalarType, TensorType, Value
from egg_dispatch.mlir.ops import attr
from egg_dispatch.mlir.printer import prints

if TYPE_CHECKING:
    from egg_dispatch.mlir.parser_base import ParserBase
    from egg_dispatch.mlir.printer import Printer

__all__ = ["FLOW_SLICE", "parse_flow_slice", "print_flow_slice", "slice_operands"]

FLOW_SLICE = "flow.tensor.slice"


def parse_flow_slice(p: ParserBase, name: str, start: int) -> Operation:
    """``flow.tensor.slice %src[%o0, ... for %l0, ...] [attr-dict] : T -> T'``."""
    lex = p.lex
    src = p.operand()
    lex.expect("[")
    starts = p.operand_list()
    lex.expect("for", "between the start indices and the lengths of flow.tensor.slice")
    lengths = p.operand_list()
    lex.expect("]", "to close the indices of flow.tensor.slice")
    attrs: dict[str, Attr] = {}
    p.opt_attr_dict(attrs)
    lex.expect(":")
    src_t = p.parse_type()
    if lex.at("{"):
        raise lex.error("flow.tensor.slice with dynamic sizes is not supported yet", start)
    p.check_types([src], [src_t], start)
    lex.expect("->")
    res_t = p.parse_type()
    if lex.at("{"):
        raise lex.error("flow.tensor.slice with dynamic sizes is not supported yet", start)
    rank = src_t.rank if isinstance(src_t, TensorType) else -1
    if not (isinstance(src_t, TensorType) and isinstance(res_t, TensorType)) or res_t.rank != rank:
        raise lex.error("flow.tensor.slice takes and returns tensors of one rank", start)
    if len(starts) != rank or len(lengths) != rank:
        raise lex.error(
            f"flow.tensor.slice of a rank-{rank} tensor needs {rank} start indices and {rank} lengths, "
            f"found {len(starts)} and {len(lengths)}",
            start,
        )
    p.check_types([*starts, *lengths], [ScalarType("index")] * (2 * rank), start)
    attrs["slice_rank"] = IntAttr(rank)
    return p.make_op(name, [src, *starts, *lengths], [res_t], attributes=attrs)


def slice_operands(op: Operation) -> tuple[Value, list[Value], list[Value]]:
    """(source, start indices, lengths) of a ``flow.tensor.slice``."""
    rank = attr(op, "slice_rank", IntAttr).value
    return op.operands[0], list(op.operands[1 : 1 + rank]), list(op.operands[1 + rank : 1 + 2 * rank])


@prints(FLOW_SLICE)
def print_flow_slice(p: Printer, op: Operation, indent: str = "") -> str:
    """The custom form ``parse_flow_slice`` reads."""
    src, starts, lengths = slice_operands(op)
    extra = {k: v for k, v in op.attributes.items() if k != "slice_rank"}
    attrs = f" {p.dict(list(extra.items()))}" if extra else ""
    return (
        f" {p.value(src)}[{p.values(starts)} for {p.values(lengths)}]{attrs} : "
        f"{p.type(src.type)} -> {p.type(op.result.type)}"
    )
