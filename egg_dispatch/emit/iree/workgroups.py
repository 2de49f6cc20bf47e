"""``flow.dispatch.region`` bodies -> ``flow.dispatch.workgroups`` (IREE's ConvertDispatchRegionsToWorkgroups)."""

from __future__ import annotations

from egg_dispatch.emit.iree.builder import Builder, EmitIreeError, type_text
from egg_dispatch.emit.iree.rewrite import fold_constant_slice
from egg_dispatch.mlir.ir import (
    ArrayAttr,
    Block,
    DispatchTensorType,
    IntAttr,
    Operation,
    Region,
    ScalarType,
    TensorType,
    Type,
    Value,
)
from egg_dispatch.mlir.ops import (
    DYNAMIC,
    TENSOR_RESHAPE_OPS,
    WORKLOAD,
    attr,
    dim_group,
    dim_groups,
    int_list,
    make_int_list,
    outs,
    set_dims,
    tensor_type,
)

__all__ = ["DispatchConverter"]

_KEEP_TOP = frozenset(
    {"arith.constant", "flow.tensor.constant", "util.global.load", "util.global.store", "flow.tensor.encode",
     "tensor.empty", "hal.tensor.import", "hal.tensor.export", "hal.tensor.barrier",
     "iree_tensor_ext.compute_barrier.start", "iree_tensor_ext.compute_barrier.end", "flow.tensor.reshape"}
)  # fmt: skip
"""Top-level ops kept as they are (``flow.tensor.reshape``: IREE's own reshape between dispatches, in a plan
imported from IREE's output)."""
_SIZE_OPS = frozenset(
    {"tensor.dim", "util.assume.int", "hal.buffer_view.dim", "arith.muli", "arith.addi", "arith.subi",
     "arith.divui", "arith.divsi", "arith.ceildivui", "arith.remui", "arith.remsi", "arith.index_cast"}
)  # fmt: skip
"""Ops that compute dynamic sizes (index results) between dispatches: host code, kept where they are."""
_INDEX = ScalarType("index")


def is_size_op(op: Operation) -> bool:
    """Host code between dispatches: the size ops, and any scalar arithmetic on scalars (``arith.minsi`` of
    a size, as torch-mlir clamps a slice's end; ``arith.index_cast`` of a value read from data)."""
    if not op.results or op.regions:
        return False
    if op.name in _SIZE_OPS and all(r.type == _INDEX for r in op.results):
        return True
    scalars = all(isinstance(v.type, ScalarType) for v in (*op.operands, *op.results))
    return scalars and op.name.startswith(("arith.", "affine.", "index.")) and op.name != "arith.constant"


def _host_scalars(region_op: Operation) -> bool:
    """A dispatch region that only computes scalars from scalars (a clamped size: ``arith.minsi``) or reads
    one from a tensor (``tensor.extract``, through reshapes): host code, as IREE keeps it; a dispatch would
    return them as 0-d tensors, which IREE refuses for ``index``."""
    if not region_op.results or not all(isinstance(r.type, ScalarType) for r in region_op.results):
        return False
    body = region_op.regions[0].entry.ops if region_op.regions and region_op.regions[0].blocks else []
    if not body or body[-1].name != "flow.return":
        return False
    scalar_results = ("arith.constant", "tensor.extract")
    return all(
        is_size_op(o)
        or o.name in TENSOR_RESHAPE_OPS
        or (o.name in scalar_results and all(isinstance(r.type, ScalarType) for r in o.results))
        for o in body[:-1]
    )


class DispatchConverter:
    """Converts the top-level ops of function and initializer bodies, putting every computation in a dispatch."""

    def __init__(self) -> None:
        self.sizes: dict[Value, list[Value]] = {}
        """A top-level tensor value of the new module -> the index values of its ``?`` dims."""
        self.consts: dict[tuple[int, int], Value] = {}
        self.boxed: set[Value] = set()
        """Scalars computed by a dispatch: they travel between dispatches as 0-d tensors."""
        self.late_text: list[Operation] = []
        self.count_text: list[tuple[Operation, list[Value]]] = []
        """``workgroup_count_from_slice`` ops with workload arguments: their text names them after renaming."""
        """``flow.tensor.reshape`` ops (no custom printer of ours): their text is set after renaming."""

    def finish_reshapes(self) -> None:
        """Set the text of the ``flow.tensor.reshape`` ops; call once the module's values have their names."""
        for op in self.late_text:
            src, res = op.operands[0], op.result
            op.opaque_text = f"%{src.name} : {type_text(src.type)} -> {type_text(res.type)}"
        for op, args in self.count_text:
            op.opaque_text = "(" + ", ".join(f"%{a.name}" for a in args) + ")"

    # ------------------------------------------------------------------------------ dynamic sizes
    def index_const(self, b: Builder, v: int) -> Value:
        key = (id(b), v)
        if key not in self.consts:
            self.consts[key] = b.add("arith.constant", [], [_INDEX], {"value": IntAttr(v, _INDEX)}).result
        return self.consts[key]

    def dims(self, v: Value, b: Builder) -> list[Value]:
        """The sizes of the ``?`` dims of a top-level value of the new module: the ``{%d}`` list its op
        has, else ``tensor.dim`` of it (IREE folds those to the producer's sizes)."""
        t = v.type
        if not isinstance(t, TensorType) or t.is_static:
            return []
        if v in self.sizes:
            return self.sizes[v]
        op = v.owner
        out: list[Value] = []
        if isinstance(op, Operation):
            if op.name in ("hal.tensor.import", "flow.tensor.tie_shape"):
                out = dim_group(op, 0)
            elif op.name in ("flow.tensor.encode", "flow.tensor.reshape"):
                out = dim_group(op, 1)
            elif op.name == "flow.dispatch.workgroups":
                groups = dim_groups(op)
                out = groups[len(groups) - len(op.results) + v.index] if groups else []
            elif op.name == "tensor.empty":
                out = list(op.operands)
        if len(out) != t.num_dynamic:
            out = [
                b.add("tensor.dim", [v, self.index_const(b, d)], [_INDEX]).result
                for d, s in enumerate(t.shape)
                if s is None
            ]
        self.sizes[v] = out
        return out

    def result_dims(self, op: Operation, old: Value, mapping: dict[Value, Value], b: Builder) -> list[Value]:
        """The sizes of a dynamic result of a plan op, as values of the new module."""
        t = old.type
        if not isinstance(t, TensorType) or t.is_static:
            return []
        if op.name == "flow.dispatch.region":
            groups = dim_groups(op)
            if groups:
                return [mapping[d] for d in groups[old.index]]
        if op.name == "iree_encoding.unset_encoding" and dim_group(op, 1):
            return [mapping[d] for d in dim_group(op, 1)]
        if op.name == "tensor.expand_shape":
            dyn = iter(op.operands[1:])
            return [mapping[next(dyn)] for s in int_list(op.attributes["static_output_shape"]) if s == DYNAMIC]
        if op.name in ("iree_encoding.set_encoding", "iree_encoding.unset_encoding"):
            return self.dims(mapping[op.operands[0]], b)
        if op.name == "tensor.collapse_shape":
            src = op.operands[0].type
            sizes = iter(self.dims(mapping[op.operands[0]], b))
            assert isinstance(src, TensorType)
            out: list[Value] = []
            for group in attr(op, "reassociation", ArrayAttr).items:
                dims = int_list(group)
                if all(src.shape[i] is not None for i in dims):
                    continue
                value: Value | None = None
                static = 1
                for i in dims:
                    size = src.shape[i]
                    if size is None:
                        d = next(sizes)
                        value = d if value is None else b.add("arith.muli", [value, d], [_INDEX]).result
                    else:
                        static *= size
                assert value is not None  # the group has a '?' dim
                if static != 1:
                    value = b.add("arith.muli", [value, self.index_const(b, static)], [_INDEX]).result
                out.append(value)
            return out
        if op.name == "tensor.extract_slice":  # its dynamic sizes (a rank-reducing one drops static 1s only)
            dyn = iter(op.operands[1:])
            offs = int_list(op.attributes["static_offsets"])
            for _ in (o for o in offs if o == DYNAMIC):
                next(dyn)
            dyn_sizes = [mapping[next(dyn)] for s in int_list(op.attributes["static_sizes"]) if s == DYNAMIC]
            if len(dyn_sizes) == t.num_dynamic:
                return dyn_sizes
        if op.name == "tensor.empty":
            return [mapping[d] for d in op.operands]
        inits = outs(op) if op.name.startswith(("linalg.", "iree_linalg_ext.")) else []
        if len(inits) == len(op.results) and inits:
            return self.dims(mapping[inits[old.index]], b)
        tensors = [v for v in op.operands if isinstance(v.type, TensorType) and v.type.rank == t.rank]
        if tensors and op.name.startswith(("arith.", "math.")):
            return self.dims(mapping[tensors[0]], b)
        raise EmitIreeError(f"the sizes of the dynamic result of '{op.name}' are not known here")

    def convert_block(self, ops: list[Operation], b: Builder, mapping: dict[Value, Value]) -> None:
        """Top-level ops of a function or initializer: everything that computes ends up in a dispatch."""
        for op in ops:
            n = op.name
            if n == "flow.dispatch.region" and _host_scalars(op):  # index values may not cross a dispatch
                body = op.regions[0].entry.ops
                self.convert_block(body[:-1], b, mapping)
                for r, v in zip(op.results, body[-1].operands, strict=True):
                    mapping[r] = mapping.get(v, v)
            elif n == "flow.dispatch.region":
                dims = [self.result_dims(op, r, mapping, b) for r in op.results]
                self.bind(op.results, self.workgroups(op.regions[0].entry.ops, op.results, mapping, b, dims), mapping)
            elif is_size_op(op) and not any(v in self.boxed for v in op.operands):  # host scalars
                b.clone(op, mapping)
            elif n == "flow.tensor.load" and self.host_read(op, mapping):
                b.clone(op, mapping)
            elif n == "tensor.extract" and self.host_read(op, mapping):  # a size read from data: on the host
                src = mapping[op.operands[0]]
                load_attrs: dict = {}
                idx = [mapping.get(v, v) for v in op.operands[1:]]
                operands = [src, *idx, *set_dims(load_attrs, [self.dims(src, b)])]
                mapping[op.result] = b.add("flow.tensor.load", operands, [op.result.type], load_attrs).result
            elif n in ("iree_encoding.set_encoding", "iree_encoding.unset_encoding"):
                src = mapping[op.operands[0]]
                src_dims = self.dims(src, b)
                attrs: dict = {}
                operands = [src, *set_dims(attrs, [src_dims, src_dims])]
                mapping[op.result] = b.add("flow.tensor.encode", operands, [op.result.type], attrs).result
            elif n == "tensor.extract_slice" and (folded := fold_constant_slice(op)) is not None:
                mapping[op.result] = b.add("arith.constant", [], [op.result.type], {"value": folded}).result
            elif n in TENSOR_RESHAPE_OPS:
                self.reshape(op, b, mapping)
            elif n in _KEEP_TOP or n in ("util.return",):
                b.clone(op, mapping)
            elif n in ("func.return", "return"):
                raise EmitIreeError("a return in the middle of a body")
            else:  # a computation between dispatches: give it a dispatch of its own
                ret = Operation("flow.return", list(op.results))
                self.bind(op.results, self.workgroups([op, ret], op.results, mapping, b), mapping)

    def host_read(self, op: Operation, mapping: dict[Value, Value]) -> bool:
        """Whether a top-level ``tensor.extract`` (or ``flow.tensor.load``) reads a tensor of the new module
        (not a scalar a dispatch returned as a 0-d tensor), so that it is ``flow.tensor.load``, IREE's read
        on the host."""
        src = op.operands[0]
        return src in mapping and src not in self.boxed and isinstance(mapping[src].type, TensorType)

    def bind(self, old: list[Value], new: Operation, mapping: dict[Value, Value]) -> None:
        """Map a dispatch's old results to the workgroups op's; scalars come back as 0-d tensors."""
        for v, nv in zip(old, new.results, strict=True):
            mapping[v] = nv
            if not isinstance(v.type, TensorType):
                self.boxed.add(v)

    def workgroups(
        self,
        body_ops: list[Operation],
        results: list[Value],
        mapping: dict[Value, Value],
        b: Builder,
        result_dims: list[list[Value]] | None = None,
    ) -> Operation:
        """One dispatch as ``flow.dispatch.workgroups``: captured tensors in, results out, through bindings.

        Captured ``tensor.empty`` and scalar constants are cloned in (IREE clones them too); a captured
        reshape of a value computed outside is cloned in on top of its source (a reshape is metadata, and
        a reshape outside a dispatch would need ``flow.tensor.reshape``); a scalar crossing dispatches
        travels as a 0-d tensor.
        """
        result_types = [r.type for r in results]
        terminator = body_ops[-1]
        if terminator.name != "flow.return":
            raise EmitIreeError("a dispatch region must end in flow.return")
        prelude, operands = self.split_captures(body_ops, mapping)
        result_dims = result_dims or [[] for _ in results]
        if any(isinstance(t, TensorType) and not t.is_static for t in result_types) and not any(result_dims):
            result_dims = [self.dims_of_result(r, mapping, b) for r in results]
        # Dynamic sizes: every index the body reads (captured sizes, and the sizes of the dynamic tensors it
        # loads and stores) is an operand and a workload entry, read back by dispatch.workload.ordinal
        # (ConvertDispatchRegionsToWorkgroups); bindings and their loads/stores carry those sizes.
        tensors = [v for v in operands if isinstance(mapping[v].type, TensorType)]
        tensor_dims = {v: self.dims(mapping[v], b) for v in tensors}
        index_values = _index_values(operands, mapping, [*tensor_dims.values(), *result_dims])
        scalars = [v for v in operands if not isinstance(mapping[v].type, TensorType) and mapping[v].type != _INDEX]
        body = Builder()
        inner: dict[Value, Value] = {}
        ordinal: dict[Value, Value] = {}  # index value of the new module -> its ordinal inside
        loads: list[tuple[Value, Value]] = []
        args_new: list[Value] = []
        for v in tensors:
            t = tensor_type(mapping[v])
            arg = Value(f"b{len(args_new)}", DispatchTensorType("readonly", t), body.block, len(args_new))
            loads.append((v, arg))
            body.block.args.append(arg)
            args_new.append(mapping[v])
        for v in scalars:
            arg = Value(f"b{len(args_new)}", mapping[v].type, body.block, len(args_new))
            inner[v] = arg
            body.block.args.append(arg)
            args_new.append(mapping[v])
        for k, d in enumerate(index_values):
            arg = Value(f"b{len(args_new)}", _INDEX, body.block, len(args_new))
            body.block.args.append(arg)
            args_new.append(d)
            ordinal[d] = body.add(
                "iree_tensor_ext.dispatch.workload.ordinal", [arg], [_INDEX], {"ordinal": IntAttr(k)}
            ).result
        for v in operands:
            if mapping[v].type == _INDEX:
                inner[v] = ordinal[mapping[v]]
        boxed_results = [not isinstance(t, TensorType) for t in result_types]
        out_types = [_box(t) for t in result_types]
        out_args = []
        for j, t in enumerate(out_types):
            arg = Value(f"o{j}", DispatchTensorType("writeonly", t), body.block, len(args_new) + j)
            body.block.args.append(arg)
            out_args.append(arg)
        for v, arg in loads:
            t = tensor_type(mapping[v])
            inside = [ordinal[d] for d in tensor_dims[v]]
            attrs, dyn = _full_slice_dyn(t, inside)
            loaded = body.add("iree_tensor_ext.dispatch.tensor.load", [arg, *dyn, *inside], [t], attrs).result
            inner[v] = body.add("tensor.extract", [loaded], [v.type]).result if v in self.boxed else loaded
        for o in prelude:
            body.clone(o, inner)
        swapped, dead = _slices_of_fills(body_ops)
        for o in body_ops[:-1]:
            if o in swapped:  # a slice of a fill: a fill of the slice (MLIR's SwapExtractSliceWithFill)
                value = swapped[o]
                empty = body.add("tensor.empty", [], [o.result.type]).result
                segments = {"operandSegmentSizes": make_int_list((1, 1))}
                fill = body.add("linalg.fill", [inner.get(value, value), empty], [o.result.type], segments)
                inner[o.result] = fill.result
            elif o not in dead:
                body.clone(o, inner)
        for v, arg, t, boxed, dims in zip(
            terminator.operands, out_args, out_types, boxed_results, result_dims, strict=True
        ):  # t: arg's tensor
            value = inner.get(v, v)
            if boxed:
                empty = body.add("tensor.empty", [], [t]).result
                fill = body.add("linalg.fill", [value, empty], [t], {"operandSegmentSizes": make_int_list((1, 1))})
                value = fill.result
            inside = [ordinal[d] for d in dims]
            attrs, dyn = _full_slice_dyn(t, inside)
            body.add("iree_tensor_ext.dispatch.tensor.store", [value, arg, *dyn, *inside], [], attrs)
        body.add("flow.return", [], [])
        regions = [Region([body.block]), Region([self.count_block(len(index_values))])]
        attrs = {}
        groups = [tensor_dims[v] for v in tensors] + [[] for _ in scalars] + [[] for _ in index_values] + result_dims
        if index_values:
            attrs[WORKLOAD] = IntAttr(len(index_values))
        dims = set_dims(attrs, groups)
        return b.add(
            "flow.dispatch.workgroups", [*index_values, *args_new, *dims], out_types, attributes=attrs, regions=regions
        )

    def split_captures(
        self, body_ops: list[Operation], mapping: dict[Value, Value]
    ) -> tuple[list[Operation], list[Value]]:
        """The values a dispatch body captures, split into the ops cloned in (``tensor.empty``, scalar
        constants, reshapes of values computed outside; with what they read, in dependency order) and the
        dispatch's operands (defined outside, in first-use order)."""
        prelude: list[Operation] = []  # ops from outside cloned into the body
        operands: list[Value] = []
        pending = list(_captured(body_ops))
        while pending:
            v = pending.pop(0)
            owner = v.owner
            if isinstance(owner, Operation) and (
                owner.name == "tensor.empty"
                or (owner.name == "arith.constant" and not isinstance(v.type, TensorType))
                or (owner.name in TENSOR_RESHAPE_OPS and v not in self.boxed and owner not in body_ops)
            ):
                if owner not in prelude:
                    prelude.insert(0, owner)
                    pending.extend(x for x in owner.operands if x not in pending)
            elif v in mapping:
                if v not in operands:
                    operands.append(v)
            else:
                raise EmitIreeError(f"%{v.name} is used in a dispatch but never defined outside it")
        return _topological(prelude), operands

    def count_block(self, n: int) -> Block:
        """The workgroup count region's block: ``n`` workload arguments into
        ``workgroup_count_from_slice`` (its text set again once values are named: ``finish_reshapes``)."""
        count = Builder()
        count_args = [Value(f"w{k}", _INDEX, count.block, k) for k in range(n)]
        count.block.args.extend(count_args)
        count_op = count.add("iree_tensor_ext.dispatch.workgroup_count_from_slice", [], [ScalarType("index")] * 3)
        count_op.opaque_text = "(" + ", ".join(f"%{a.name}" for a in count_args) + ")" if count_args else "()"
        count_op.operands = list(count_args)
        self.count_text.append((count_op, count_args))
        for v, nm in zip(count_op.results, "xyz", strict=True):
            v.name = nm
        count.add("flow.return", list(count_op.results), [])
        return count.block

    def dims_of_result(self, r: Value, mapping: dict[Value, Value], b: Builder) -> list[Value]:
        """The sizes of a dynamic result of a computation given a dispatch of its own: its op's."""
        op = r.owner
        assert isinstance(op, Operation)
        return self.result_dims(op, r, mapping, b) if op.name != "flow.dispatch.region" else []

    def reshape(self, op: Operation, b: Builder, mapping: dict[Value, Value]) -> None:
        """A reshape between dispatches: ``flow.tensor.reshape`` (dropped again when only dispatches use it,
        since those clone the reshape in)."""
        src = mapping[op.operands[0]]
        if isinstance(src.type, TensorType) and (not src.type.is_static or not tensor_type(op.result).is_static):
            attrs: dict = {}
            dims = set_dims(attrs, [self.dims(src, b), self.result_dims(op, op.result, mapping, b)])
            new = b.add("flow.tensor.reshape", [src, *dims], [op.result.type], attrs)
            self.sizes[new.result] = dim_group(new, 1)
            mapping[op.result] = new.result
            return
        new = b.add("flow.tensor.reshape", [src], [op.result.type])
        self.late_text.append(new)
        mapping[op.result] = new.result


def _captured(body_ops: list[Operation]) -> list[Value]:
    """Values a region's ops use but do not define, in first-use order."""
    inner: set[Value] = set()
    for o in body_ops:
        for w in o.walk():
            inner.update(w.results)
            for r in w.regions:
                for blk in r.blocks:
                    inner.update(blk.args)
    out: list[Value] = []
    for o in body_ops:
        for w in o.walk():
            for v in w.operands:
                if v not in inner and v not in out:
                    out.append(v)
    return out


def _index_values(operands: list[Value], mapping: dict[Value, Value], dim_lists: list[list[Value]]) -> list[Value]:
    """The index values (of the new module) a dispatch reads: its captured index operands, then the
    ``?`` sizes in ``dim_lists``, each once, in that order (its workload)."""
    index_values: list[Value] = []
    for v in operands:
        if not isinstance(mapping[v].type, TensorType) and mapping[v].type == _INDEX:
            index_values.append(mapping[v])
    for ds in dim_lists:
        for d in ds:
            if d not in index_values:
                index_values.append(d)
    return index_values


def _topological(ops: list[Operation]) -> list[Operation]:
    """``ops`` ordered so that each comes after the ops (of the list) defining its operands."""
    done: list[Operation] = []

    def visit(o: Operation) -> None:
        if o in done:
            return
        for v in o.operands:
            if isinstance(v.owner, Operation) and v.owner in ops:
                visit(v.owner)
        done.append(o)

    for o in ops:
        visit(o)
    return done


def _box(t: Type) -> TensorType:
    """A dispatch result's type: tensors as they are, a scalar as a 0-d tensor."""
    if isinstance(t, TensorType):
        return t
    if isinstance(t, ScalarType):
        return TensorType((), t)
    raise EmitIreeError(f"a dispatch result of type {type_text(t)}")


def _full_slice_dyn(t: TensorType, dims: list[Value]) -> tuple[dict, list[Value]]:
    """The whole of a binding: static sizes, and ``dims`` (in order) for its ``?`` sizes."""
    it = iter(dims)
    sizes, dyn = [], []
    for s in t.shape:
        if s is None:
            sizes.append(DYNAMIC)
            dyn.append(next(it))
        else:
            sizes.append(s)
    attrs = {
        "static_offsets": make_int_list([0] * t.rank),
        "static_sizes": make_int_list(sizes),
        "static_strides": make_int_list([1] * t.rank),
    }
    if dims:
        attrs["dim_segments"] = make_int_list([len(dims)])
    return attrs, dyn


def _slices_of_fills(ops: list[Operation]) -> tuple[dict[Operation, Value], set[Operation]]:
    """The static ``tensor.extract_slice`` ops of a dispatch body ``ops`` (its terminator last) that slice
    a ``linalg.fill`` of the body, each with the filled value; and the fills only those slices read.
    IREE's codegen cannot distribute a dispatch that stores a slice of a tensor it fills larger ("write
    affecting operations on global resources are restricted to workgroup distributed contexts"); IREE
    itself never forms one, since its canonicalizations swap the two first (MLIR's
    ``SwapExtractSliceWithFill``, Linalg/Transforms/SwapExtractSliceWithFillPatterns.cpp): the slice of a
    fill is a fill of the slice's shape, the same values."""
    fills = {o for o in ops if o.name == "linalg.fill"}
    swapped: dict[Operation, Value] = {}
    for o in ops:
        src = o.operands[0].owner if o.name == "tensor.extract_slice" and o.operands else None
        t = o.results[0].type if o.results else None
        if src in fills and isinstance(t, TensorType) and t.is_static and t.encoding is None:
            assert isinstance(src, Operation)
            swapped[o] = src.operands[0]
    read = {v for o in ops if o not in swapped for v in o.operands}
    dead = {f for f in fills if f.results[0] not in read and any(s.operands[0] is f.results[0] for s in swapped)}
    return swapped, dead
