"""Which integer arguments of a function are indices, and into what: valid ranges for random inputs.

Random inputs (``check``, ``explore --check``, ``bench``) must be inputs the program is defined on.
An integer argument that ends up as an index (token ids of an embedding lookup, gather indices) must
lie within the dimension it indexes, or the program reads out of bounds (undefined behaviour; the
evaluator stops with an error, torch-mlir's ``cf.assert`` bounds checks fail).

:func:`index_bounds` finds them by following each argument through the ops that move or convert its
values without computing new ones:

* integer casts (``arith.index_cast``, ``extsi``, ``extui``, ``trunci``, ...), as ops or in the body of
  an elementwise ``linalg.generic`` that yields them;
* reshapes, slices, copies and layout ops (``collapse_shape``, ``expand_shape``, ``extract_slice``,
  ``insert_slice``, ``concat``, ``linalg.transpose`` / ``broadcast`` / ``copy``), the ABI's imports and
  barriers, and dispatch regions and bindings;
* into a ``linalg.generic`` body, through the block argument of the input it reads;
* out of a tensor by ``tensor.extract`` (an element of an index tensor is an index).

It records a bound wherever such a value is used as an index: ``tensor.extract %t[.., %i, ..]`` (the
size of that dim of ``%t``, also inside a generic body: torch-mlir's embedding lookup) and the indices
operand of ``iree_linalg_ext.gather`` (the smallest gathered source dim), and an SSA offset of
``extract_slice`` / ``insert_slice`` (the offsets that keep the slice in bounds: IREE folds a gather
of one row into one). The bound of an argument is
the smallest of all its uses; values are then drawn in ``[0, bound)``.
"""

from __future__ import annotations

from collections.abc import Callable

from egg_dispatch.evaluate.core import data_arguments
from egg_dispatch.mlir.ir import Block, Operation, TensorType, Value
from egg_dispatch.mlir.ops import DYNAMIC, ins, int_list, outs, static_slice
from egg_dispatch.util.registry import OpTable

__all__ = ["index_bounds"]

_INT_CASTS = frozenset(
    {"arith.index_cast", "arith.index_castui", "arith.extsi", "arith.extui", "arith.trunci", "arith.bitcast"}
)
_MOVES = frozenset(
    {
        "hal.tensor.import",
        "hal.tensor.export",
        "tensor.collapse_shape",
        "tensor.expand_shape",
        "tensor.extract_slice",
        "tensor.insert_slice",
        "tensor.concat",
        "linalg.transpose",
        "linalg.broadcast",
        "linalg.copy",
        "flow.tensor.reshape",
        "iree_tensor_ext.compute_barrier.start",
        "iree_tensor_ext.compute_barrier.end",
        "iree_tensor_ext.dispatch.tensor.load",
        "iree_encoding.set_encoding",
        "iree_encoding.unset_encoding",
        "flow.tensor.encode",
    }
)
"""Ops whose results hold (some of) their operands' values unchanged."""


_Handler = Callable[["_Flow", Operation], bool]
_HANDLERS: OpTable[_Handler] = OpTable("index-range handlers")
"""Op name -> the ``_Flow`` method that carries origins through it and records its bounds; filled by
``_handles`` in the class body. It returns whether it walked the op's bodies itself (if not, ``op``
walks them)."""
_handles = _HANDLERS.handles


class _Flow:
    def __init__(self) -> None:
        self.origin: dict[Value, set[int]] = {}
        """Values holding (converted) elements of the arguments, by argument position."""
        self.bounds: dict[int, int] = {}

    def of(self, vals: list[Value]) -> set[int]:
        out: set[int] = set()
        for v in vals:
            out |= self.origin.get(v, set())
        return out

    def mark(self, v: Value, args: set[int]) -> None:
        if args and _is_integer(v):
            self.origin.setdefault(v, set()).update(args)

    def bound(self, v: Value, size: int | None) -> None:
        """Indices reaching ``v`` stay below ``size``; a dynamic size (``None``, known only at run time)
        keeps them at 0, the one index every non-empty extent has."""
        size = 1 if size is None else size
        for a in self.origin.get(v, ()):
            self.bounds[a] = min(self.bounds.get(a, size), size)

    # ----------------------------------------------------------------------------------- walk
    def slice_offsets(self, op: Operation) -> None:
        """SSA offsets of a slice (a gather of one row, as IREE folds it): within the sliced dim."""
        offs, sizes, strides = static_slice(op)
        sliced = op.operands[0] if op.name == "tensor.extract_slice" else op.operands[1]
        if not isinstance(sliced.type, TensorType):
            return
        dyn = iter(op.operands[1 if op.name == "tensor.extract_slice" else 2 :])
        for d, o in enumerate(offs):
            if o != DYNAMIC:
                continue
            v = next(dyn)
            size, stride = sizes[d], strides[d]
            if DYNAMIC not in (size, stride):
                extent = sliced.type.shape[d]
                self.bound(v, None if extent is None else extent - max(size - 1, 0) * stride)

    def block(self, block: Block) -> list[Value]:
        """Process a block in order; returns its terminator's operands."""
        for op in block.ops:
            if not op.results and op.name.endswith(("yield", "return")):
                return list(op.operands)
            self.op(op)
        return []

    def op(self, op: Operation) -> None:
        """Carry argument origins through ``op`` and record the bounds its index uses set: its handler
        (``_HANDLERS``) if it has one, then, unless the handler walked them, its bodies (their own uses
        count too)."""
        n = op.name
        if n in ("tensor.extract_slice", "tensor.insert_slice"):
            self.slice_offsets(op)
        handler = _HANDLERS.get(n)
        if handler is not None and handler(self, op):
            return
        for region in op.regions:
            for b in region.blocks:
                self.block(b)

    # ------------------------------------------------------------- handlers, by op name
    @_handles(*_INT_CASTS, *_MOVES)
    def move(self, op: Operation) -> bool:
        """Results hold their source's values: the first operand's (a concat's: all of them; an
        insert_slice's: both tensors')."""
        n = op.name
        src = op.operands[:1] if n != "tensor.concat" else op.operands
        if n == "tensor.insert_slice":
            src = op.operands[:2]
        for r in op.results:
            self.mark(r, self.of(src))
        return False

    @_handles("hal.tensor.barrier")
    def barrier(self, op: Operation) -> bool:
        for r, v in zip(op.results, op.operands, strict=False):
            self.mark(r, self.of([v]))
        return False

    @_handles("tensor.extract")
    def extract(self, op: Operation) -> bool:
        table = op.operands[0].type
        if isinstance(table, TensorType):
            for d, v in enumerate(op.operands[1:]):
                self.bound(v, table.shape[d])
        self.mark(op.result, self.of(op.operands[:1]))  # an element of an index tensor is an index
        return False

    @_handles("iree_linalg_ext.gather")
    def gather(self, op: Operation) -> bool:
        """The indices stay below the smallest gathered source dim (unknown if any is dynamic)."""
        if len(ins(op)) != 2:
            return False
        source, indices = ins(op)
        if isinstance(source.type, TensorType):
            dims = int_list(op.attributes.get("dimension_map"))
            if dims:
                extents = [source.type.shape[d] for d in dims]
                static = [e for e in extents if e is not None]
                self.bound(indices, min(static) if len(static) == len(extents) else None)
        return False

    @_handles("linalg.generic")
    def generic(self, op: Operation) -> bool:
        """Into the body through the block arguments, out through what it yields."""
        if not op.regions:
            return False
        body = op.regions[0].entry
        operands = [*ins(op), *outs(op)]
        for arg, v in zip(body.args, operands, strict=False):
            self.mark(arg, self.of([v]))
        yielded = self.block(body)
        for r, y in zip(op.results, yielded, strict=False):
            self.mark(r, self.of([y]))
        return True

    @_handles("flow.dispatch.workgroups")
    def workgroups(self, op: Operation) -> bool:
        """Into the body through the bindings, out through what it stores into the result bindings."""
        if not op.regions:
            return False
        body = op.regions[0].entry
        for arg, v in zip(body.args, op.operands, strict=False):
            self.origin[arg] = set(self.of([v]))
        stored: dict[int, set[int]] = {}
        for inner in body.ops:
            if inner.name == "iree_tensor_ext.dispatch.tensor.store" and inner.operands[1] in body.args:
                stored.setdefault(body.args.index(inner.operands[1]), set()).update(self.of(inner.operands[:1]))
            else:
                self.op(inner)
        for i, r in enumerate(op.results):
            self.mark(r, stored.get(len(op.operands) + i, set()))
        return True

    @_handles("flow.dispatch.region")
    def dispatch_region(self, op: Operation) -> bool:
        if not op.regions:
            return False
        returned = self.block(op.regions[0].entry)
        for r, y in zip(op.results, returned, strict=False):
            self.mark(r, self.of([y]))
        return True


def _is_integer(v: Value) -> bool:
    t = v.type.element if isinstance(v.type, TensorType) else v.type
    name = getattr(t, "name", "")
    return name == "index" or (name.startswith(("i", "si", "ui")) and name != "i1")


def index_bounds(func: Operation) -> dict[int, int]:
    """Exclusive upper bounds of the integer inputs used as indices, by input position (the caller's
    order: ``function_input_types``, which leaves out the async ABI's fences)."""
    flow = _Flow()
    entry = func.regions[0].entry
    positions = data_arguments(func)
    for k, i in enumerate(positions):
        arg = entry.args[i]
        flow.origin[arg] = {k}  # a !hal.buffer_view too: its hal.tensor.import carries it on
    flow.block(entry)
    return flow.bounds
