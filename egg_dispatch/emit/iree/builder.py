"""IR building blocks shared by the emit_iree passes (conversion and rewrites), so neither depends on the other."""

from __future__ import annotations

from collections.abc import Sequence

from egg_dispatch.mlir.ir import Block, Operation, Region, Type, Value
from egg_dispatch.mlir.printer import Printer

__all__ = ["Builder", "EmitIreeError", "type_text"]

_PURE_TOP = frozenset(
    {"arith.constant", "tensor.empty", "util.global.load", "flow.tensor.encode", "flow.tensor.reshape"}
)


class EmitIreeError(ValueError):
    """The plan holds something the post-dispatch-creation form cannot express."""


class Builder:
    """Appends new ops to one block; ``clone`` copies an op (and its regions) through a value mapping."""

    def __init__(self) -> None:
        self.block = Block()

    def add(
        self,
        name: str,
        operands: list[Value],
        types: Sequence[Type],
        attributes: dict | None = None,
        regions: list[Region] | None = None,
    ) -> Operation:
        op = Operation(name, list(operands), [], dict(attributes or {}), list(regions or []))
        op.results = [Value("", t, op, i) for i, t in enumerate(types)]
        self.block.ops.append(op)
        return op

    def clone(self, op: Operation, mapping: dict[Value, Value]) -> Operation:
        new = _clone_op(op, mapping)
        self.block.ops.append(new)
        return new

    def finish_dce(self) -> Block:
        """Drop side-effect-free top-level ops nobody uses (what IREE's canonicalizer would do anyway)."""
        changed = True
        while changed:
            used = {v for o in self.block.ops for w in o.walk() for v in w.operands}
            keep = [o for o in self.block.ops if o.name not in _PURE_TOP or any(r in used for r in o.results)]
            changed = len(keep) != len(self.block.ops)
            self.block.ops = keep
        return self.block


def _clone_op(op: Operation, mapping: dict[Value, Value]) -> Operation:
    new = Operation(op.name, [mapping.get(v, v) for v in op.operands], [], dict(op.attributes), [], op.loc,
                    op.opaque_text, op.generic_form)  # fmt: skip
    new.results = [Value(r.name, r.type, new, r.index) for r in op.results]
    mapping.update(zip(op.results, new.results, strict=True))
    for region in op.regions:
        nr = Region()
        for blk in region.blocks:
            nb = Block(label=blk.label)
            for a in blk.args:
                na = Value(a.name, a.type, nb, a.index)
                mapping[a] = na
                nb.args.append(na)
            for o in blk.ops:
                nb.ops.append(_clone_op(o, mapping))
            nr.blocks.append(nb)
        new.regions.append(nr)
    return new


def type_text(t: Type) -> str:
    """``t`` as MLIR text, without aliases."""
    return Printer(use_aliases=False).type(t)
