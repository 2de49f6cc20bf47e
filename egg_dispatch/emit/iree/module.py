"""A plan in ``flow.dispatch.region`` form -> IREE's post-dispatch-creation form, so real IREE can run it.

``iree-compile --compile-from=dispatch-creation`` resumes right after DispatchCreation, so a module in
that phase's output form (what ``--compile-to=dispatch-creation`` prints, e.g.
``tests/fixtures/seed_dispatch_creation.mlir``) is compiled exactly as we planned it: IREE no longer
decides where encodings go. The conversion mirrors what IREE's own passes would have produced:

* every ``flow.dispatch.region`` becomes ``flow.dispatch.workgroups`` (ConvertDispatchRegionsToWorkgroups):
  captured tensors become operands read through ``readonly`` bindings with
  ``iree_tensor_ext.dispatch.tensor.load``; results are ``writeonly`` bindings written with
  ``iree_tensor_ext.dispatch.tensor.store``; captured scalar constants and ``tensor.empty`` are cloned in;
  the workgroup count comes from ``iree_tensor_ext.dispatch.workgroup_count_from_slice``;
* a ``set_encoding`` / ``unset_encoding`` outside a dispatch is ``flow.tensor.encode`` (ConvertEncodingToFlow);
* a slice of a constant outside a dispatch is folded into a smaller constant (what canonicalization does
  in IREE's initializers); any other computation outside a dispatch gets a dispatch of its own;
* the function gets IREE's ABI: ``util.func public`` on ``!hal.buffer_view`` with
  ``hal.tensor.import`` / ``hal.tensor.export`` and the ``iree.abi.stub`` reflection;
* the module carries the device (``util.global @__device_0 = #hal.device.target<...>`` and
  ``stream.affinity.default``) for the plan's target, so no compile flag chooses the CPU any more;
  ``none`` keeps the llvm-cpu device with ``#iree_encoding.identity_resolver`` (every encoding a no-op).

Two things IREE 3.13 cannot take in this form are rewritten, keeping the plan's dispatches:

* a reshape between dispatches is cloned into the dispatches that read it (``flow.tensor.reshape`` only
  where something else reads it); a scalar result of a dispatch travels as a 0-d tensor;
* a plan that slices an *encoded* tensor (propagation through a tile-aligned slice) is spelled physically:
  ``linalg.pack`` / ``linalg.mmt4d`` / ``linalg.unpack`` with the target's layouts (``materialize_encodings``),
  because IREE rejects every encoded spelling of that slice (an ``extract_slice`` or a partial
  ``dispatch.tensor.load`` of an encoded value "failed to legalize"; ``flow.tensor.slice`` of one "failed to
  convert unserialized encoding to serialized encoding").

The module is built as IR and printed with our printer, so it also re-parses with ``parse_mlir``. This module
orchestrates (device global, ABI wrapper, renaming); the pieces live in ``device`` (the target's
``#hal.device.target``), ``workgroups`` (dispatch bodies), ``rewrite`` (the rewrites above)
and ``builder`` (shared IR building).
"""

from __future__ import annotations

from egg_dispatch.emit.iree.abi import AbiShell, FunctionAbi
from egg_dispatch.emit.iree.builder import Builder, EmitIreeError, type_text
from egg_dispatch.emit.iree.device import (
    IREE_CPUS,
    IreeCpu,
    device_target_text,
    host_cpu_flags,
    iree_cpu,
    runnable_here,
)
from egg_dispatch.emit.iree.rewrite import inline_missing_resources, materialize_encodings, needs_materialization
from egg_dispatch.emit.iree.workgroups import DispatchConverter
from egg_dispatch.mlir.ir import (
    Attr,
    DialectAttr,
    DictAttr,
    FunctionType,
    IntAttr,
    Module,
    OpaqueType,
    Operation,
    Region,
    ScalarType,
    StrAttr,
    TensorType,
    Type,
    TypeAttr,
    UnitAttr,
    Value,
)
from egg_dispatch.mlir.ops import DIM_SEGMENTS, function_type, set_dims, sym_name
from egg_dispatch.mlir.printer import print_mlir
from egg_dispatch.target.profile import Target, load_target

__all__ = [
    "IREE_CPUS",
    "EmitIreeError",
    "IreeCpu",
    "emit_iree",
    "host_cpu_flags",
    "iree_cpu",
    "materialize_encodings",
    "needs_materialization",
    "runnable_here",
    "to_iree_module",
]

_AFFINITY = DialectAttr("#hal.device.affinity<@__device_0>")

MATERIALIZED_NOTE = (
    "// egg_dispatch: this plan slices an encoded tensor, which IREE 3.13 cannot lower (an extract_slice or a\n"
    "// partial dispatch.tensor.load of an encoded value fails to legalize, flow.tensor.slice fails to serialize\n"
    "// its encoding), so its encodings are spelled as the target's linalg.pack / linalg.mmt4d / linalg.unpack.\n"
)


def emit_iree(
    module: Module, target: str | Target, *, materialize: bool | None = None, abi: AbiShell | None = None
) -> str:
    """The plan ``module`` as MLIR text in IREE's post-dispatch-creation form for ``target``.

    ``materialize`` spells encodings physically (pack / mmt4d / unpack with the target's layouts) instead
    of as ``#iree_encoding`` types; ``None`` does so only when IREE could not compile the encoded form
    (see :func:`needs_materialization`), and then says so in a comment at the top. ``abi`` is the input's
    ABI shell (``abi.abi_shell``): the plan is then called exactly as the input was (async ABI, fences,
    the sync wrapper); without it the function gets the sync buffer-view ABI.
    """
    tgt = load_target(target) if isinstance(target, str) else target
    physical = needs_materialization(module, tgt) if materialize is None else materialize
    text = print_mlir(to_iree_module(module, tgt, materialize=physical, abi=abi))
    return (MATERIALIZED_NOTE + text) if physical and materialize is None else text


def to_iree_module(
    module: Module, target: str | Target, *, materialize: bool = False, abi: AbiShell | None = None
) -> Module:
    """The plan ``module`` (``flow.dispatch.region`` form) in IREE's post-dispatch-creation form."""
    tgt = load_target(target) if isinstance(target, str) else target
    if materialize:
        module = materialize_encodings(module, tgt)
    return _Converter(module, tgt, abi).run()


class _Converter:
    """One plan module -> the IREE module: device global, ABI-wrapped functions, initializers."""

    def __init__(self, module: Module, target: Target, abi: AbiShell | None = None) -> None:
        self.src = module
        self.target = target
        self.abi = abi
        self.out = Module(
            has_module_op=True,
            attributes={"stream.affinity.default": _AFFINITY},
            resources=dict(module.resources),
            file=module.file,
        )
        self.dispatches = DispatchConverter()

    def run(self) -> Module:
        device = Operation(
            "util.global",
            attributes={
                "sym_visibility": StrAttr("private"),
                "sym_name": StrAttr("__device_0"),
                "initial_value": DialectAttr(device_target_text(self.target)),
                "type": TypeAttr(OpaqueType("!hal.device")),
            },
        )
        self.out.ops.append(device)
        funcs = self.src.functions()
        if not funcs:
            raise EmitIreeError("the plan has no function")
        for op in self.src.ops:
            if op.name == "util.global":
                attrs = {**op.attributes, "stream.affinity.default": _AFFINITY}
                self.out.ops.append(Operation("util.global", attributes=attrs))
            elif op.name == "util.initializer":
                self.out.ops.append(self.initializer(op))
            elif op.name in ("func.func", "util.func"):
                name = sym_name(op)
                shell = self.abi.function if self.abi is not None and self.abi.function.name == name else None
                self.out.ops.append(self.function(op) if shell is None else self.shell_function(op, shell))
            else:
                raise EmitIreeError(f"cannot emit top-level '{op.name}' for IREE")
        inline_missing_resources(self.out)
        _rename(self.out)
        self.dispatches.finish_reshapes()
        if self.abi is not None:  # the input's wrappers, verbatim (their text names their own values)
            self.out.ops.extend(self.abi.wrappers)
        return self.out

    # -------------------------------------------------------------------------------- containers
    def initializer(self, op: Operation) -> Operation:
        body = Builder()
        self.dispatches.convert_block(op.regions[0].entry.ops, body, {})
        attrs: dict[str, Attr] = {"stream.affinity.default": _AFFINITY}
        return Operation("util.initializer", attributes=attrs, regions=[Region([body.finish_dce()])])

    def function(self, func: Operation) -> Operation:
        ft = function_type(func)
        name = sym_name(func)
        entry = func.regions[0].entry
        if func.name == "util.func" and any(isinstance(t, OpaqueType) for t in ft.inputs):
            raise EmitIreeError("the plan already has IREE's ABI (util.func on !hal.buffer_view)")
        b = Builder()
        view = OpaqueType("!hal.buffer_view")
        mapping: dict[Value, Value] = {}
        abi_in: list[Type] = []
        for i, (arg, t) in enumerate(zip(entry.args, ft.inputs, strict=True)):
            abi_in.append(view if isinstance(t, TensorType) else t)  # scalars cross the ABI as they are
            new_arg = Value(f"arg{i}", abi_in[-1], b.block, i)
            b.block.args.append(new_arg)
            if isinstance(t, TensorType):
                new_arg = self.import_tensor(b, [new_arg], t, {"name": StrAttr(f"input{i}")})
            mapping[arg] = new_arg
        term = entry.ops[-1] if entry.ops else None
        if term is None or term.name not in ("func.return", "return", "util.return"):
            raise EmitIreeError(f"@{name} does not end in a return")
        self.dispatches.convert_block(entry.ops[:-1], b, mapping)
        outs = []
        for i, v in enumerate(term.operands):
            new = mapping[v]
            if v in self.dispatches.boxed:  # a scalar result computed by a dispatch
                raise EmitIreeError("a function result computed as a scalar by a dispatch")
            if isinstance(new.type, TensorType):
                new = self.export_tensor(b, new, {"name": StrAttr(f"output{i}")})
            outs.append(new)
        b.add("util.return", outs, [])
        decl_in = ", ".join(f"%input{i}: {type_text(t)}" for i, t in enumerate(ft.inputs))
        decl_out = ", ".join(f"%output{i}: {type_text(t)}" for i, t in enumerate(ft.results))
        decl = f"sync func @{name}({decl_in}) -> ({decl_out})"
        attrs = {
            "sym_visibility": StrAttr("public"),
            "sym_name": StrAttr(name),
            "function_type": TypeAttr(FunctionType(tuple(abi_in), tuple(v.type for v in outs))),
            "iree.abi.stub": UnitAttr(),
            "iree.reflection": DictAttr((("iree.abi.declaration", StrAttr(decl)),)),
        }
        return Operation("util.func", attributes=attrs, regions=[Region([b.finish_dce()])])

    def shell_function(self, func: Operation, shell: FunctionAbi) -> Operation:
        """``func`` inside the input's own ABI: the same signature and attributes, each argument imported
        as the input imported it (``wait(...)`` on its fence), results joined on their signal fences."""
        entry = func.regions[0].entry
        if len(entry.args) != len(shell.arguments):
            raise EmitIreeError(
                f"the plan's @{shell.name} has {len(entry.args)} arguments, its ABI {len(shell.arguments)}"
            )
        b = Builder()
        abi_args = [Value(f"arg{i}", t, b.block, i) for i, t in enumerate(shell.function_type.inputs)]
        b.block.args.extend(abi_args)
        mapping: dict[Value, Value] = {}
        for arg, a in zip(entry.args, shell.arguments, strict=True):
            new = abi_args[a.index]
            if isinstance(arg.type, TensorType):
                attrs = {k: v for k, v in a.import_attributes.items() if k != DIM_SEGMENTS}
                operands = [new]
                if a.wait is not None:
                    attrs["wait"] = UnitAttr()
                    operands.append(abi_args[a.wait])
                new = self.import_tensor(b, operands, arg.type, attrs)
            mapping[arg] = new
        term = entry.ops[-1] if entry.ops else None
        if term is None or term.name not in ("func.return", "return", "util.return"):
            raise EmitIreeError(f"@{shell.name} does not end in a return")
        if len(term.operands) != len(shell.results):
            raise EmitIreeError(
                f"the plan's @{shell.name} returns {len(term.operands)} values, its ABI {len(shell.results)}"
            )
        self.dispatches.convert_block(entry.ops[:-1], b, mapping)
        outs = [mapping[v] for v in term.operands]
        for signal in sorted({r.signal for r in shell.results if r.signal is not None}):
            joined = [
                i for i, r in enumerate(shell.results) if r.signal == signal and isinstance(outs[i].type, TensorType)
            ]
            barrier = b.add(
                "hal.tensor.barrier", [*(outs[i] for i in joined), abi_args[signal]], [outs[i].type for i in joined]
            )
            for k, i in enumerate(joined):
                outs[i] = barrier.results[k]
        for i, r in enumerate(shell.results):
            if isinstance(outs[i].type, TensorType):
                attrs = {k: v for k, v in r.export_attributes.items() if k != DIM_SEGMENTS}
                outs[i] = self.export_tensor(b, outs[i], attrs)
        b.add("util.return", outs, [])
        attrs = {
            "sym_visibility": StrAttr("public"),
            "sym_name": StrAttr(shell.name),
            "function_type": TypeAttr(shell.function_type),
            **shell.attributes,
        }
        return Operation("util.func", attributes=attrs, regions=[Region([b.finish_dce()])])

    # ------------------------------------------------------------------------------ dynamic sizes
    def import_tensor(self, b: Builder, operands: list[Value], t: TensorType, attrs: dict) -> Value:
        """``hal.tensor.import`` of a buffer view as ``t``; a ``?`` dim's size is the view's
        (``hal.buffer_view.dim``), listed after the type as IREE's input phase writes it."""
        view = operands[0]
        dims = [
            b.add("hal.buffer_view.dim", [view], [ScalarType("index")], {"index": IntAttr(d)}).result
            for d, s in enumerate(t.shape)
            if s is None
        ]
        attrs = dict(attrs)
        new = b.add("hal.tensor.import", [*operands, *set_dims(attrs, [dims])], [t], attrs).result
        self.dispatches.sizes[new] = dims
        return new

    def export_tensor(self, b: Builder, v: Value, attrs: dict) -> Value:
        """``hal.tensor.export`` of ``v`` (with its sizes after a dynamic type)."""
        attrs = dict(attrs)
        dims = set_dims(attrs, [self.dispatches.dims(v, b)])
        return b.add("hal.tensor.export", [v, *dims], [OpaqueType("!hal.buffer_view")], attrs).result


def _rename(module: Module) -> None:
    """Fresh unique SSA names: %argN for the ABI arguments, %x/%y/%z for workgroup counts, %N otherwise."""
    n = 0
    arity = max((len(f.regions[0].entry.args) for f in module.functions() if f.regions), default=0)
    for top in module.ops:
        for op in top.walk():
            for region in op.regions:
                for block in region.blocks:
                    for a in block.args:
                        if op.name != "util.func":
                            a.name = f"arg{arity + n}"
                            n += 1
            if op.name == "iree_tensor_ext.dispatch.workgroup_count_from_slice":
                continue
            for r in op.results:
                r.name = str(n)
                n += 1
