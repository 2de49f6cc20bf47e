"""CloneProducersIntoDispatchRegions and the IR copy / use-list helpers every initial-plan step shares."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Iterable

from egg_dispatch.mlir.ir import Block, DenseAttr, Operation, Region, ScalarType, Value, element_nbytes
from egg_dispatch.mlir.ops import ins, iterator_types, outs

__all__ = [
    "CLONE_CONSTANT_MAX_BYTES",
    "UseSites",
    "clone_op",
    "clone_producers",
    "cloneable",
    "erase_dead",
    "is_bit_extend",
    "replace_operands",
    "use_sites",
]

CLONE_CONSTANT_MAX_BYTES = 256
"""``--iree-flow-inline-constants-max-byte-length``: bigger non-splat constants stay dispatch inputs."""
_ALWAYS_CLONED = {"affine.apply", "arith.index_cast", "linalg.fill", "tensor.empty", "tensor.cast", "tensor.extract",
                  "tensor.extract_slice", "complex.create", "iree_encoding.unset_encoding",
                  "iree_linalg_ext.gather"}  # fmt: skip
_CLONE_DIALECTS = {"affine", "arith", "complex", "iree_encoding", "iree_linalg_ext", "linalg", "tensor"}
UseSites = dict[Value, list[tuple[Operation, int]]]


def clone_op(op: Operation, vmap: dict[Value, Value]) -> Operation:
    """A deep copy of ``op``; operands are looked up in ``vmap``, which learns the new results."""
    new = Operation(op.name, [vmap.get(v, v) for v in op.operands], [], dict(op.attributes), [], op.loc, op.opaque_text)
    for region in op.regions:
        blocks = [Block([Value(a.name, a.type, None, a.index) for a in b.args], [], b.label) for b in region.blocks]
        for b, nb in zip(region.blocks, blocks, strict=True):
            for a, na in zip(b.args, nb.args, strict=True):
                na.owner, vmap[a] = nb, na
        for b, nb in zip(region.blocks, blocks, strict=True):
            nb.ops = [clone_op(o, vmap) for o in b.ops]
        new.regions.append(Region(blocks))
    new.results = [Value(v.name, v.type, new, v.index) for v in op.results]
    vmap.update(zip(op.results, new.results, strict=True))
    return new


def _walk(ops: Iterable[Operation]) -> Iterable[Operation]:
    for op in ops:
        yield from op.walk()


def use_sites(ops: Iterable[Operation]) -> UseSites:
    """Value -> (op, operand index) of every use among ``ops`` and their nested ops."""
    uses: UseSites = defaultdict(list)
    for o in _walk(ops):
        for i, v in enumerate(o.operands):
            uses[v].append((o, i))
    return uses


def replace_operands(ops: Iterable[Operation], mapping: dict[Value, Value]) -> None:
    """Every operand of ``ops`` (nested too) in ``mapping`` replaced by its image."""
    for o in _walk(ops):
        o.operands = [mapping.get(v, v) for v in o.operands]


def _free_values(ops: list[Operation]) -> list[Value]:
    """Values used by ``ops`` (and the ops nested in them) but defined elsewhere, in first-use order."""
    inner = {v for o in _walk(ops) for v in o.results}
    inner |= {a for o in _walk(ops) for r in o.regions for b in r.blocks for a in b.args}
    return list(dict.fromkeys(v for o in _walk(ops) for v in o.operands if v not in inner))


def is_bit_extend(op: Operation) -> bool:
    """A dequantization-like generic (one ``ext*`` of its input): cloned, never a root."""
    body = op.regions[0].entry if op.name == "linalg.generic" and op.regions else Block()
    return (
        len(ins(op)) == 1 and len(outs(op)) == 1 and all(t == "parallel" for t in iterator_types(op))
        and [o.name in ("arith.extf", "arith.extsi", "arith.extui") for o in body.ops] == [True, False]
        and body.ops[0].operands == body.args[:1] and body.ops[1].operands == body.ops[0].results
    )  # fmt: skip


def cloneable(op: Operation) -> bool:
    """``isClonableIntoDispatchOp`` restricted to the dialects ``getCloneableOps`` considers."""
    if op.opaque_text is not None or op.dialect not in _CLONE_DIALECTS:
        return False
    if op.name in _ALWAYS_CLONED or is_bit_extend(op):
        return True
    if op.name in ("arith.constant", "complex.constant"):
        v = op.attributes.get("value")
        if not isinstance(v, DenseAttr):
            return True
        bits = {"i1": 1, "i4": 4}.get(v.type.element.name, 8 * element_nbytes(v.type.element))
        return v.is_splat or v.type.num_elements * bits <= 8 * CLONE_CONSTANT_MAX_BYTES
    types = [v.type for v in op.operands + op.results]
    return bool(types) and all(isinstance(t, ScalarType) and t.name != "index" for t in types)


def clone_producers(ops: list[Operation], regions: list[Operation]) -> list[Operation]:
    """CloneProducersIntoDispatchRegions: pull cheap producers into each region (transitively), then
    erase the originals that no longer have a use."""
    order = {op: i for i, op in enumerate(ops)}
    cloned: set[Operation] = set()
    for region in regions:
        body = region.regions[0].entry
        insert_dests = {o.operands[1] for o in _walk(body.ops) if o.name == "tensor.insert_slice"}
        chosen: set[Operation] = set()
        work = _free_values(body.ops)
        while work:
            v = work.pop()
            d = v.owner
            if isinstance(d, Operation) and d in order and d not in chosen and cloneable(d) and v not in insert_dests:
                chosen.add(d)
                work.extend(_free_values([d]))
        vmap: dict[Value, Value] = {}
        clones = [clone_op(d, vmap) for d in sorted(chosen, key=order.__getitem__)]
        replace_operands(body.ops, vmap)
        body.ops[:0] = clones
        cloned |= chosen
    return erase_dead(ops, lambda op: op in cloned)


def erase_dead(ops: list[Operation], erasable: Callable[[Operation], bool]) -> list[Operation]:
    """Drop erasable ops whose results have no use, to a fixpoint (a dead fill frees its empty)."""
    while True:
        used = use_sites(ops).keys()
        dead = {op for op in ops if op.results and erasable(op) and not used & set(op.results)}
        if not dead:
            return ops
        ops = [op for op in ops if op not in dead]
