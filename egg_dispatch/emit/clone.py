"""Copying imported op bodies into the emitted IR and naming its values: the IR plumbing ``emit.Emitter`` relies on."""

from __future__ import annotations

import re

from egg_dispatch.mlir.ir import Block, Module, Operation, Region, Value

__all__ = ["EmitError", "clone_region", "inline_captured_constants", "rename_uses", "rename_values"]


class EmitError(Exception):
    pass


def inline_captured_constants(proto: Operation, op: Operation, mapping: dict[Value, Value]) -> None:
    """A body that uses a value from outside (``%zero`` in a relu) gets its own copy of that
    constant, so the op stays valid wherever the plan puts it."""
    inner = {v for r in proto.regions for b in r.blocks for v in b.args}
    inner |= {v for r in proto.regions for b in r.blocks for o in b.ops for w in o.walk() for v in w.results}
    for region, new_region in zip(proto.regions, op.regions, strict=True):
        block = new_region.blocks[0]
        added: dict[Value, Value] = {}
        for b in region.blocks:
            for o in b.ops:
                for w in o.walk():
                    for v in w.operands:
                        if v in inner or v in added or v in mapping:
                            continue
                        owner = v.owner
                        if not (isinstance(owner, Operation) and owner.name == "arith.constant"):
                            raise EmitError(
                                f"{proto.loc}: '{proto.name}' uses %{v.name} from outside its body; "
                                "only constants can be captured"
                            )
                        const = Operation("arith.constant", [], [], dict(owner.attributes))
                        const.results = [Value(v.name, v.type, const, 0)]
                        added[v] = const.results[0]
                        block.ops.insert(len(added) - 1, const)
        for o in (w for b in new_region.blocks for op_ in b.ops for w in op_.walk()):
            o.operands = [added.get(x, x) for x in o.operands]


def clone_region(r: Region, mapping: dict[Value, Value]) -> Region:
    """A deep copy of region r; ``mapping`` maps old values to new and learns the copied ones."""
    out = Region()
    for b in r.blocks:
        nb = Block(label=b.label)
        for a in b.args:
            na = Value(a.name, a.type, nb, a.index)
            mapping[a] = na
            nb.args.append(na)
        for o in b.ops:
            no = Operation(
                o.name, [mapping.get(x, x) for x in o.operands], [], dict(o.attributes), [], o.loc, o.opaque_text
            )
            no.results = [Value(x.name, x.type, no, x.index) for x in o.results]
            for x, y in zip(o.results, no.results, strict=True):
                mapping[x] = y
            no.regions = [clone_region(rr, mapping) for rr in o.regions]
            nb.ops.append(no)
        out.blocks.append(nb)
    return out


def rename_uses(text: str, old: list[str], new: list[str]) -> str:
    """Rewrite ``%old`` uses in an opaque op's kept text to the operands' new names."""
    table = dict(zip(old, new, strict=True))
    return re.sub(r"%([A-Za-z0-9_$.\-]+)", lambda m: "%" + table.get(m.group(1), m.group(1)), text)


def rename_values(module: Module) -> None:
    """Fresh, unique SSA names: %argN for function arguments, %N for everything else."""
    n = 0
    for top in module.ops:
        for op in top.walk():
            for region in op.regions:
                for block in region.blocks:
                    for a in block.args:
                        if op.name != "func.func":
                            a.name = f"in{n}"
                            n += 1
            for r in op.results:
                r.name = str(n)
                n += 1
