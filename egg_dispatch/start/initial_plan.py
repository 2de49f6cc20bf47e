"""IREE's data-tiling start state for a linalg-level function (docs/iree-data-tiling.md §1.1-1.4).

Every later stage starts from what IREE itself has right before HoistEncodingOps: the output of
FormDispatchRegions, CloneProducersIntoDispatchRegions, AnnotateDataTilingHints and SetEncoding.
Reproducing it makes IREE's own plan (and the #21100 failure) one point of the search space.

* **Regions** (``FormDispatchRegions.cpp``, non-aggressive): roots are linalg named ops but fill,
  generics with a reduction loop, ``iree_linalg_ext`` ops but gather, ``linalg.unpack``; tagged
  bottom-up. A root fuses a producer only through its init, then a chain of all-parallel consumers
  while the producer has one use and the outer-parallel loops line up. Leftover linalg ops get a
  region each. A region sits where its last op was (``wrapOpInDispatchRegion``).
* **Cloning** (``RegionOpUtils.cpp``, in ``clone.py``): empty / extract_slice / extract /
  fill / index_cast / gather / bit-extend generics, int or float scalar arith, and constants that
  are scalars, splats or at most 256 B are cloned transitively into every region using them;
  originals left unused are erased; stray generics and gathers then get their own region.
* **Encodings** (``SetEncoding.cpp``): a contraction with a multiply-accumulate body gets
  ``set_encoding`` on lhs and rhs, an encoded empty + fill for a fill init (FoldFillWithSetEncoding)
  or a ``set_encoding`` of another init, the op on encoded types, and an ``unset_encoding``.

Not modelled: aggressive fusion, pad / pack / conv / unpack-producer special cases, the passes
before region formation (elementwise fusion, reshape and transpose propagation). Dynamic shapes: the
sizes new ops need (a region's ``{%d}``, an encoded empty, ``encoding_dims``) are computed at the
function's top (``start.sizes``).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable

from egg_dispatch.mlir.ir import (
    AffineMapAttr,
    ArrayAttr,
    Attr,
    Block,
    EncodingAttr,
    Module,
    Operation,
    Region,
    ScalarType,
    TensorType,
    Type,
    Value,
)
from egg_dispatch.mlir.ops import (
    CONTRACTION_OPS,
    ins,
    int_list,
    iterator_types,
    make_int_list,
    outs,
    set_dims,
    tensor_type,
)
from egg_dispatch.mlir.shapes import function_shapes
from egg_dispatch.start.clone import (
    CLONE_CONSTANT_MAX_BYTES,
    UseSites,
    clone_op,
    clone_producers,
    cloneable,
    erase_dead,
    is_pure_extend,
    replace_operands,
    use_sites,
)
from egg_dispatch.start.sizes import TopSizes

__all__ = ["CLONE_CONSTANT_MAX_BYTES", "initial_plan"]

_PLANNED = {"flow.dispatch.region", "flow.dispatch.workgroups", "flow.tensor.encode",
            "iree_encoding.set_encoding", "iree_encoding.unset_encoding"}  # fmt: skip
_NOT_STRUCTURED = {"linalg.pack", "linalg.unpack", "linalg.index", "linalg.yield"}
_NAMED_MAPS = {  # implicit indexing maps, as dims per operand (lhs, rhs, out)
    "linalg.matmul": ((0, 2), (2, 1), (0, 1)), "linalg.batch_matmul": ((0, 1, 3), (0, 3, 2), (0, 1, 2)),
    "linalg.matvec": ((0, 1), (1,), (0,)), "linalg.vecmat": ((1,), (1, 0), (0,)),
    "linalg.mmt4d": ((0, 2, 3, 5), (1, 2, 4, 5), (0, 1, 3, 4)),
}  # fmt: skip


def initial_plan(module: Module, function: str | None = None) -> Module:
    """A new module whose function ``function`` (default: the first public one) is in IREE's
    post-SetEncoding form. Input that already has dispatch regions or encodings comes back as a copy:
    planning it again would nest regions, which IREE never does."""
    vmap: dict[Value, Value] = {}
    out = dataclasses.replace(
        module, ops=[clone_op(op, vmap) for op in module.ops], attributes=dict(module.attributes),
        aliases=dict(module.aliases), resources=dict(module.resources), warnings=list(module.warnings),
    )  # fmt: skip
    if any(op.name in _PLANNED for op in out.walk()):
        return out
    func = out.function(function)
    if not func.regions or len(func.regions[0].blocks) != 1:
        return out
    block = func.regions[0].entry
    sizes = TopSizes(func, function_shapes(func))  # the sizes of dynamic dims the new ops need
    ops, regions = _wrap(block.ops, _form_groups(block.ops), sizes)
    ops = clone_producers(ops, regions)
    stray = [op for op in ops if op.opaque_text is None and op.name in ("linalg.generic", "iree_linalg_ext.gather")]
    ops, more = _wrap(ops, [[op] for op in stray], sizes)
    ops = clone_producers(ops, more)
    block.ops = [*sizes.created, *ops]
    sizes.shapes = function_shapes(func)  # the cloned producers are new values: their sizes, again
    for region in regions + more:
        _set_encodings(region.regions[0].entry, sizes)
    block.ops = [*sizes.created, *ops]
    _rename(block, set())
    return out


def _make(name: str, operands: list[Value], rtype: Type, rname: str, attrs: dict[str, Attr] | None = None) -> Operation:
    op = Operation(name, list(operands), attributes=dict(attrs or {}))
    op.results = [Value(rname, rtype, op, 0)]
    return op


def _dims(n: int, dims: Iterable[int]) -> AffineMapAttr:
    return AffineMapAttr(n, 0, tuple(("d", d) for d in dims))


def _maps(op: Operation) -> list[AffineMapAttr] | None:
    """The op's indexing maps, one per operand (explicit, or the named op's implicit ones)."""
    a = op.attributes
    explicit = a.get("indexing_maps")
    if isinstance(explicit, ArrayAttr):
        maps = [m for m in explicit.items if isinstance(m, AffineMapAttr)]
        return maps if len(maps) == len(explicit.items) else None
    if op.name in _NAMED_MAPS:
        spec = _NAMED_MAPS[op.name]
        n = 1 + max(max(s) for s in spec)
        return [_dims(n, s) for s in spec]
    if op.name == "linalg.transpose":
        perm = int_list(a.get("permutation"))
        inv = {p: i for i, p in enumerate(perm)}
        return [_dims(len(perm), (inv[j] for j in range(len(perm)))), _dims(len(perm), range(len(perm)))]
    return None


def _loops(op: Operation) -> tuple[list[AffineMapAttr], list[bool]] | None:
    """(maps per operand, parallel flag per loop) for a structured op whose loops we know."""
    structured = op.name.startswith("linalg.") and op.name not in _NOT_STRUCTURED
    if op.opaque_text is not None or not (structured or op.name == "iree_linalg_ext.attention"):
        return None
    maps = _maps(op)
    if maps is None or len(maps) != len(op.operands) or not maps:
        return None
    n = maps[0].num_dims
    if op.name == "linalg.generic":
        return maps, [t == "parallel" for t in iterator_types(op)]
    out_dims = {d for m in maps[len(ins(op)) :] for d in (m.dim_positions() or ())}
    return maps, [d in out_dims for d in range(n)]


def _outer_parallel(parallel: list[bool]) -> list[bool]:
    """IREE's ``getOuterParallelLoops``: the leading run of parallel loops."""
    lead = next((i for i, p in enumerate(parallel) if not p), len(parallel))
    return [i < lead for i in range(len(parallel))]


def _compatible(op: Operation, amap: AffineMapAttr, root: list[bool]) -> bool:
    """``hasCompatibleOuterParallelLoops``: ``amap`` is the identity (with zeros) on the root's outer
    parallel loops, and ``op``'s own loops are at least that parallel."""
    pos, info = amap.dim_positions(), _loops(op)
    if pos is None or len(set(pos)) != len(pos) or info is None:
        return False
    cand = _outer_parallel(info[1])
    if not all(cand):
        if cand != root:
            return False
    else:
        lead = next((i for i, p in enumerate(root) if not p), len(root))
        if lead > len(cand):
            return False
    keep = [i < len(root) and root[i] for i in range(len(cand))]
    kept = [sum(keep[:d]) for d in pos if keep[d]]
    return bool(pos or any(keep)) and kept == list(range(sum(keep)))


def _ops_fusable(producer: Operation, consumer: Operation, root: list[bool]) -> bool:
    """``areOpsFusable``: every use of the producer in the consumer is loop-compatible."""
    pinfo, cinfo = _loops(producer), _loops(consumer)
    if pinfo is None or cinfo is None:
        return False
    n_in = len(ins(producer))
    return all(
        _compatible(producer, pinfo[0][n_in + v.index], root) and _compatible(consumer, cinfo[0][i], root)
        for i, v in enumerate(consumer.operands)
        if v.owner is producer
    )


def _is_root(op: Operation, leftover: bool = False) -> bool:
    """``isRootOp``; with ``leftover``, the second round's test (any remaining linalg op or pack)."""
    n = op.name
    if op.opaque_text is not None or is_pure_extend(op) or n == "linalg.fill":
        return False
    if n.startswith("linalg.") and n not in _NOT_STRUCTURED:
        return leftover or n != "linalg.generic" or not all(t == "parallel" for t in iterator_types(op))
    if leftover:
        return n == "linalg.pack"
    return n in ("linalg.unpack", "iree_encoding.unset_encoding") or (
        n.startswith("iree_linalg_ext.") and n not in ("iree_linalg_ext.gather", "iree_linalg_ext.yield")
    )


def _fusable_use(op: Operation, uses: UseSites) -> tuple[Operation, int] | None:
    """``getFusableUse`` (non-aggressive): the one use of ``op``'s results that is not a tensor.dim."""
    found = [u for v in op.results for u in uses.get(v, []) if u[0].name != "tensor.dim"]
    return found[0] if len(found) == 1 else None


def _form_groups(ops: list[Operation]) -> list[list[Operation]]:
    """``decideFusableLinalgOps``: fusion groups, each in program order; its last op is the anchor."""
    uses, top = use_sites(ops), set(ops)
    group_of: dict[Operation, int] = {}
    groups: list[list[Operation]] = []

    def add(op: Operation, gid: int) -> None:
        group_of[op] = gid
        groups[gid].append(op)

    def root_loops(root: Operation) -> list[bool] | None:
        info = _loops(root)
        return _outer_parallel(info[1]) if info else None

    def fuse_producers(root: Operation, gid: int) -> None:
        loops, work = root_loops(root), [root]
        while work and loops is not None:
            cand = work.pop()
            n_in = len(ins(cand))
            for i, v in enumerate(cand.operands):
                p = v.owner
                if not isinstance(p, Operation) or p not in top or p in group_of or cloneable(p):
                    continue
                if i >= n_in and _fusable_use(p, uses) == (cand, i) and _ops_fusable(p, cand, loops):
                    add(p, gid)
                    work.append(p)

    def fuse_consumers(root: Operation) -> None:
        loops, cur = root_loops(root), root
        while loops is not None and (use := _fusable_use(cur, uses)) is not None:
            consumer = use[0]
            cinfo, pinfo = _loops(consumer), _loops(cur)
            if consumer not in top or consumer in group_of or is_pure_extend(consumer) or not cinfo or not pinfo:
                return
            if not all(cinfo[1]) or len(pinfo[1]) < len(cinfo[1]) or not _ops_fusable(cur, consumer, loops):
                return
            add(consumer, group_of[root])
            cur = consumer

    for leftover in (False, True):
        roots = []
        for op in reversed(ops):
            if op not in group_of and _is_root(op, leftover):
                groups.append([])
                add(op, len(groups) - 1)
                fuse_producers(op, len(groups) - 1)
                roots.append(op)
        for root in reversed(roots):
            fuse_consumers(root)
    order = {op: i for i, op in enumerate(ops)}
    return [sorted(g, key=order.__getitem__) for g in groups]


def _wrap(
    ops: list[Operation], groups: list[list[Operation]], sizes: TopSizes
) -> tuple[list[Operation], list[Operation]]:
    """Move each group into a ``flow.dispatch.region`` placed at its last op; values used outside the
    group flow out through ``flow.return`` and every outside use is redirected to the region result.
    A dynamic result lists its sizes (``{%d}``, computed at the function's top); a group one of whose
    sizes cannot be computed there stays unwrapped."""
    uses = use_sites(ops)
    owner = {o: top for top in ops for o in top.walk()}
    gid = {op: i for i, g in enumerate(groups) for op in g}
    anchor: dict[Operation, Operation] = {}
    redirect: dict[Value, tuple[int, Value]] = {}
    for i, g in enumerate(groups):
        esc = [v for op in g for v in op.results if any(gid.get(owner[u]) != i for u, _ in uses.get(v, []))]
        dims = [d for v in esc if (d := sizes.dims(v)) is not None]
        if len(dims) != len(esc):
            for op in g:
                gid.pop(op, None)
            continue
        body = Block([], [*g, Operation("flow.return", list(esc))], None)
        attrs: dict[str, Attr] = {}
        region = Operation("flow.dispatch.region", set_dims(attrs, dims), attributes=attrs, regions=[Region([body])])
        base = esc[0].name.partition("#")[0] if esc else "dispatch"
        region.results = [Value(base if len(esc) == 1 else f"{base}#{k}", v.type, region, k) for k, v in enumerate(esc)]
        redirect.update((v, (i, r)) for v, r in zip(esc, region.results, strict=True))
        anchor[g[-1]] = region
    new_ops = [anchor.get(op, op) for op in ops if op not in gid or op in anchor]
    region_gid = {region: gid[g] for g, region in anchor.items()}
    for top in new_ops:
        here = region_gid.get(top)
        for o in top.walk():
            o.operands = [v if (r := redirect.get(v)) is None or r[0] == here else r[1] for v in o.operands]
    return new_ops, list(anchor.values())


def _contraction(op: Operation) -> tuple[list[AffineMapAttr], list[int | None], list[ScalarType]] | None:
    """(maps, static loop ranges (None: '?'), element types) of a named contraction AnnotateDataTilingHints
    hints: at most one batch, M, N and K loop, a K and an M or N, no encoded operand."""
    # Named ops only: their body is an implicit multiply-accumulate (a ``cast`` attribute changes that).
    if op.name not in CONTRACTION_OPS or op.opaque_text is not None or "cast" in op.attributes:
        return None
    if len(ins(op)) != 2 or len(outs(op)) != 1 or len(op.operands) != 3 or (maps := _maps(op)) is None:
        return None
    pos = [p for m in maps if (p := m.dim_positions()) is not None]
    types = [v.type for v in op.operands if isinstance(v.type, TensorType) and not v.type.encoding]
    if len(pos) != len(maps) or len(types) != len(op.operands):
        return None
    a, b, c = (set(p) for p in pos)
    batch, m, n, k = a & b & c, (a & c) - b, (b & c) - a, (a & b) - c
    one_each = max(len(batch), len(m), len(n)) <= 1 and len(k) == 1 and bool(m or n)
    if not one_each or batch | m | n | k != set(range(maps[0].num_dims)):
        return None
    elems = [t.element for t in types]
    sizes: dict[int, int | None] = {}
    for t, p in zip(types, pos, strict=True):
        for j, d in enumerate(p):
            sizes.setdefault(d, t.shape[j])
    return maps, [sizes[d] for d in range(maps[0].num_dims)], elems


def _set_encodings(body: Block, top: TopSizes) -> None:
    """SetEncoding on every hinted contraction of a region body, then erase what became dead. A dynamic
    iteration size (``?``) is passed as ``encoding_dims{...}`` (computed at the function's top), as
    IREE's SetEncoding does; a contraction one of whose sizes cannot be computed there stays plain."""
    new_ops: list[Operation] = []
    for op in body.ops:
        info = _contraction(op)
        if info is None:
            new_ops.append(op)
            continue
        maps, sizes, elems = info
        lhs, rhs, init = op.operands
        enc_dims = _iteration_dims(op, maps, sizes, top)
        acc_dims = top.dims(op.result)
        if enc_dims is None or acc_dims is None:
            new_ops.append(op)
            continue
        encs = [EncodingAttr(i, "matmul", tuple(elems), tuple(maps), tuple(sizes)) for i in range(3)]

        def encoded(v: Value, e: EncodingAttr) -> TensorType:
            return dataclasses.replace(tensor_type(v), encoding=e)

        def set_encoding(v: Value, e: EncodingAttr, name: str, dims: list[Value] = enc_dims) -> Operation:
            attrs: dict[str, Attr] = {}
            return _make("iree_encoding.set_encoding", [v, *set_dims(attrs, [dims])], encoded(v, e), name, attrs)

        lhs_e = set_encoding(lhs, encs[0], f"{lhs.name}_enc")
        rhs_e = set_encoding(rhs, encs[1], f"{rhs.name}_enc")
        acc_t = encoded(init, encs[2])
        fill = init.owner if isinstance(init.owner, Operation) and init.owner.name == "linalg.fill" else None
        if fill is not None:  # FoldFillWithSetEncoding
            empty = _make("tensor.empty", list(acc_dims), acc_t, f"{fill.operands[1].name}_enc")
            acc = [empty, _make("linalg.fill", [fill.operands[0], empty.result], acc_t, f"{init.name}_enc",
                                {"operandSegmentSizes": make_int_list((1, 1))})]  # fmt: skip
        else:
            acc = [set_encoding(init, encs[2], f"{init.name}_enc")]
        name = op.result.name.partition("#")[0]
        mm = _make(op.name, [lhs_e.result, rhs_e.result, acc[-1].result], acc_t, f"{name}_enc", op.attributes)
        mm.regions, mm.loc = op.regions, op.loc
        unset_attrs: dict[str, Attr] = {}
        unset_dims = set_dims(unset_attrs, [enc_dims, acc_dims])
        unset = _make("iree_encoding.unset_encoding", [mm.result, *unset_dims], op.result.type, name, unset_attrs)
        new_ops += [lhs_e, rhs_e, *acc, mm, unset]
        replace_operands(body.ops, {op.result: unset.result})
    body.ops = erase_dead(new_ops, lambda o: o.opaque_text is None)


def _iteration_dims(op: Operation, maps: list[AffineMapAttr], sizes: list, top: TopSizes) -> list[Value] | None:
    """The values of a contraction's dynamic iteration sizes, in loop order (``encoding_dims``)."""
    out = []
    for d, s in enumerate(sizes):
        if s is not None:
            continue
        found = None
        for v, m in zip(op.operands, maps, strict=True):
            pos = m.dim_positions() or ()
            if d in pos:
                found = top.value(top.shapes.shape(v)[pos.index(d)])
                break
        if found is None:
            return None
        out.append(found)
    return out


def _pick(name: str, taken: set[str]) -> str:
    """``name``, else ``name_1``, ``name_2``...; a numeric name gets a letter before any suffix
    (``%0_enc`` is not an SSA id, ``%v0_enc`` is)."""
    base = f"v{name}" if not name or (name[0].isdigit() and not name.isdigit()) else name
    cand, k = base, 0
    while cand in taken:
        k += 1
        cand = f"v{base}_{k}" if base.isdigit() else f"{base}_{k}"
    taken.add(cand)
    return cand


def _rename(block: Block, visible: set[str]) -> None:
    """Give every value a name not visible at its definition (MLIR forbids shadowing), keeping the
    original where possible, so the printed text re-parses; sibling regions may reuse names."""
    taken = set(visible)
    for a in block.args:
        a.name = _pick(a.name, taken)
    for op in block.ops:
        if any("#" in r.name for r in op.results):
            base = _pick(op.results[0].name.partition("#")[0], taken)
            for r in op.results:
                r.name = base if len(op.results) == 1 else f"{base}#{r.index}"
        else:
            for r in op.results:
                r.name = _pick(r.name, taken)
        for region in op.regions:
            for b in region.blocks:
                _rename(b, taken)
