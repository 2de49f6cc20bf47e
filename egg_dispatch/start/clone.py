"""CloneProducersIntoDispatchRegions and the IR copy / use-list helpers every initial-plan step shares."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Iterable

from egg_dispatch.mlir.ir import (
    Block,
    DenseAttr,
    Operation,
    Region,
    ScalarType,
    TensorType,
    Value,
    element_bits,
    element_nbytes,
)
from egg_dispatch.mlir.ops import ins, iterator_types, outs

__all__ = [
    "CLONE_CONSTANT_MAX_BYTES",
    "UseSites",
    "clone_op",
    "clone_producers",
    "cloneable",
    "erase_dead",
    "is_bit_extend",
    "is_pure_extend",
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
    """``LinalgExt::isBitExtendOp``: an all-parallel ``linalg.generic`` with one init whose widest input
    of the highest rank has a narrower element than its result, and no ``math`` op in its body (a
    dequantization ``extui -> uitofp -> subf -> mulf`` with lower-rank scales, or one ``extf``).
    Cloned into the dispatches that read it, never a root."""
    if op.name != "linalg.generic" or not op.regions or len(outs(op)) != 1 or not op.results:
        return False
    if not all(t == "parallel" for t in iterator_types(op)):
        return False
    ranked = [v.type for v in ins(op) if isinstance(v.type, TensorType)]
    top = max((len(t.shape) for t in ranked), default=0)
    widest = [t.element for t in ranked if len(t.shape) == top]
    result = op.results[0].type
    if top == 0 or not isinstance(result, TensorType):
        return False
    if not all(_int_or_float(e) for e in [*widest, result.element]):
        return False
    if max(element_bits(e) for e in widest) >= element_bits(result.element):
        return False
    return not any(o.dialect == "math" for o in op.regions[0].entry.ops)


def _int_or_float(t: ScalarType) -> bool:
    return t.is_float or (t.is_int and t.name != "index")


def is_pure_extend(op: Operation) -> bool:
    """A generic that only widens its one input (one ``ext*``). IREE 3.13's whole DispatchCreation
    pipeline clones such a generic into the dispatch of its consumer, while a wider bit extend (a
    dequantization with a scale, an ext followed by arithmetic) gets a dispatch of its own from
    FormDispatchRegions before CloneProducersIntoDispatchRegions could clone it (measured:
    docs/iree-data-tiling.md §1.3). The start state follows the pipeline; the clone rules follow the clone pass
    (:func:`is_bit_extend`)."""
    body = op.regions[0].entry if op.name == "linalg.generic" and op.regions else Block()
    return (
        len(ins(op)) == 1 and len(outs(op)) == 1 and all(t == "parallel" for t in iterator_types(op))
        and [o.name in ("arith.extf", "arith.extsi", "arith.extui") for o in body.ops] == [True, False]
        and body.ops[0].operands == body.args[:1] and body.ops[1].operands == body.ops[0].results
    )  # fmt: skip


def cloneable(op: Operation) -> bool:
    """``isClonableIntoDispatchOp`` restricted to the dialects ``getCloneableOps`` considers, for the
    start state (bit extends as :func:`is_pure_extend`)."""
    if op.opaque_text is not None or op.dialect not in _CLONE_DIALECTS:
        return False
    if op.name in _ALWAYS_CLONED or is_pure_extend(op):
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
