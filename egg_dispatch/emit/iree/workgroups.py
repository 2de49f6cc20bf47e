"""``flow.dispatch.region`` bodies -> ``flow.dispatch.workgroups`` (IREE's ConvertDispatchRegionsToWorkgroups)."""

from __future__ import annotations

from egg_dispatch.emit.iree.builder import Builder, EmitIreeError, type_text
from egg_dispatch.emit.iree.rewrite import fold_constant_slice
from egg_dispatch.mlir.ir import DispatchTensorType, Operation, Region, ScalarType, TensorType, Type, Value
from egg_dispatch.mlir.ops import make_int_list

__all__ = ["DispatchConverter"]

_KEEP_TOP = frozenset(
    {"arith.constant", "flow.tensor.constant", "util.global.load", "util.global.store", "flow.tensor.encode",
     "tensor.empty", "hal.tensor.import", "hal.tensor.export", "hal.tensor.barrier",
     "iree_tensor_ext.compute_barrier.start", "iree_tensor_ext.compute_barrier.end", "flow.tensor.reshape"}
)  # fmt: skip
"""Top-level ops kept as they are (``flow.tensor.reshape``: IREE's own reshape between dispatches, in a plan
imported from IREE's output)."""
_RESHAPES = frozenset({"tensor.expand_shape", "tensor.collapse_shape"})


class DispatchConverter:
    """Converts the top-level ops of function and initializer bodies, putting every computation in a dispatch."""

    def __init__(self) -> None:
        self.boxed: set[Value] = set()
        """Scalars computed by a dispatch: they travel between dispatches as 0-d tensors."""
        self.late_text: list[Operation] = []
        """``flow.tensor.reshape`` ops (no custom printer of ours): their text is set after renaming."""

    def finish_reshapes(self) -> None:
        """Set the text of the ``flow.tensor.reshape`` ops; call once the module's values have their names."""
        for op in self.late_text:
            src, res = op.operands[0], op.result
            op.opaque_text = f"%{src.name} : {type_text(src.type)} -> {type_text(res.type)}"

    def convert_block(self, ops: list[Operation], b: Builder, mapping: dict[Value, Value]) -> None:
        """Top-level ops of a function or initializer: everything that computes ends up in a dispatch."""
        for op in ops:
            n = op.name
            if n == "flow.dispatch.region":
                self.bind(op.results, self.workgroups(op.regions[0].entry.ops, op.results, mapping, b), mapping)
            elif n in ("iree_encoding.set_encoding", "iree_encoding.unset_encoding"):
                mapping[op.result] = b.add("flow.tensor.encode", [mapping[op.operands[0]]], [op.result.type]).result
            elif n == "tensor.extract_slice" and (folded := fold_constant_slice(op)) is not None:
                mapping[op.result] = b.add("arith.constant", [], [op.result.type], {"value": folded}).result
            elif n in _RESHAPES:
                self.reshape(op, b, mapping)
            elif n in _KEEP_TOP or n in ("util.return",):
                b.clone(op, mapping)
            elif n in ("func.return", "return"):
                raise EmitIreeError("a return in the middle of a body")
            else:  # a computation between dispatches: give it a dispatch of its own
                ret = Operation("flow.return", list(op.results))
                self.bind(op.results, self.workgroups([op, ret], op.results, mapping, b), mapping)

    def bind(self, old: list[Value], new: Operation, mapping: dict[Value, Value]) -> None:
        """Map a dispatch's old results to the workgroups op's; scalars come back as 0-d tensors."""
        for v, nv in zip(old, new.results, strict=True):
            mapping[v] = nv
            if not isinstance(v.type, TensorType):
                self.boxed.add(v)

    def workgroups(
        self, body_ops: list[Operation], results: list[Value], mapping: dict[Value, Value], b: Builder
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
        captured = _captured(body_ops)
        prelude: list[Operation] = []  # ops from outside cloned into the body, in dependency order
        operands: list[Value] = []
        pending = list(captured)
        while pending:
            v = pending.pop(0)
            owner = v.owner
            if isinstance(owner, Operation) and (
                owner.name == "tensor.empty"
                or (owner.name == "arith.constant" and not isinstance(v.type, TensorType))
                or (owner.name in _RESHAPES and v not in self.boxed and owner not in body_ops)
            ):
                if owner not in prelude:
                    prelude.insert(0, owner)
                    pending.extend(x for x in owner.operands if x not in pending)
            elif v in mapping:
                if v not in operands:
                    operands.append(v)
            else:
                raise EmitIreeError(f"%{v.name} is used in a dispatch but never defined outside it")
        prelude = _topological(prelude)
        body = Builder()
        inner: dict[Value, Value] = {}
        loads: list[tuple[Value, Value]] = []
        for i, v in enumerate(operands):
            t = mapping[v].type
            if isinstance(t, TensorType):
                arg = Value(f"b{i}", DispatchTensorType("readonly", t), body.block, i)
                loads.append((v, arg))
            else:
                arg = Value(f"b{i}", t, body.block, i)
                inner[v] = arg
            body.block.args.append(arg)
        boxed_results = [not isinstance(t, TensorType) for t in result_types]
        out_types = [_box(t) for t in result_types]
        out_args = []
        for j, t in enumerate(out_types):
            arg = Value(f"o{j}", DispatchTensorType("writeonly", t), body.block, len(operands) + j)
            body.block.args.append(arg)
            out_args.append(arg)
        for v, arg in loads:
            t = mapping[v].type
            assert isinstance(t, TensorType)
            loaded = body.add("iree_tensor_ext.dispatch.tensor.load", [arg], [t], _full_slice(t)).result
            inner[v] = body.add("tensor.extract", [loaded], [v.type]).result if v in self.boxed else loaded
        for o in prelude:
            body.clone(o, inner)
        for o in body_ops[:-1]:
            body.clone(o, inner)
        for v, arg, boxed in zip(terminator.operands, out_args, boxed_results, strict=True):
            t = arg.type.tensor  # type: ignore[attr-defined]
            value = inner.get(v, v)
            if boxed:
                empty = body.add("tensor.empty", [], [t]).result
                value = body.add("linalg.fill", [value, empty], [t], {"operandSegmentSizes": make_int_list((1, 1))})
                value = value.result
            body.add("iree_tensor_ext.dispatch.tensor.store", [value, arg], [], _full_slice(t))
        body.add("flow.return", [], [])
        count = Builder()
        count_op = count.add("iree_tensor_ext.dispatch.workgroup_count_from_slice", [], [ScalarType("index")] * 3)
        count_op.opaque_text = "()"
        for v, nm in zip(count_op.results, "xyz", strict=True):
            v.name = nm
        count.add("flow.return", list(count_op.results), [])
        regions = [Region([body.block]), Region([count.block])]
        return b.add("flow.dispatch.workgroups", [mapping[v] for v in operands], out_types, regions=regions)

    def reshape(self, op: Operation, b: Builder, mapping: dict[Value, Value]) -> None:
        """A reshape between dispatches: ``flow.tensor.reshape`` (dropped again when only dispatches use it,
        since those clone the reshape in)."""
        src = mapping[op.operands[0]]
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


def _full_slice(t: TensorType) -> dict:
    return {
        "static_offsets": make_int_list([0] * t.rank),
        "static_sizes": make_int_list(t.shape),
        "static_strides": make_int_list([1] * t.rank),
    }
