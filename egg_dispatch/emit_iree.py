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

The module is built as IR and printed with our printer, so it also re-parses with ``parse_mlir``.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import cache
from pathlib import Path

import numpy as np

from .mlir.ir import (
    Block,
    DenseAttr,
    DialectAttr,
    DictAttr,
    DispatchTensorType,
    EncodingAttr,
    FloatAttr,
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
from .mlir.ops import CONTRACTION_OPS, DYNAMIC, make_int_list, static_slice
from .mlir.printer import Printer, print_mlir
from .targets import Layout, Target, load_target, packed_shape, swaps_operands

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


class EmitIreeError(ValueError):
    """The plan holds something the post-dispatch-creation form cannot express."""


@dataclass(frozen=True)
class IreeCpu:
    """What IREE's llvm-cpu backend needs to know about a target profile's CPU.

    The strings are what IREE 3.13 itself prints in ``#hal.executable.target`` for ``-cpu=<cpu>``, so the
    emitted module compiles for the same machine as ``iree-compile --iree-llvmcpu-target-cpu=<cpu>``.
    """

    cpu: str
    features: str
    native_vector_size: int
    triple: str
    data_layout: str
    executable_format: str
    resolver: str
    required_host_flags: tuple[str, ...]
    """``/proc/cpuinfo`` flags the host needs to run the code (empty tuple and a foreign triple: never)."""
    compile_flags: tuple[str, ...]
    """Flags selecting this CPU when IREE compiles a linalg-level input itself."""

    @property
    def is_x86(self) -> bool:
        return self.triple.startswith("x86_64")


_X86_LAYOUT = "e-m:e-p270:32:32-p271:32:32-p272:64:64-i64:64-i128:128-f80:128-n8:16:32:64-S128"
_ARM_LAYOUT = "e-m:e-p270:32:32-p271:32:32-p272:64:64-i8:8:32-i16:16:32-i64:64-i128:128-n32:64-S128-Fn32"
_HASWELL = (
    "+avx,+avx2,+bmi,+bmi2,+cmov,+crc32,+cx16,+cx8,+f16c,+fma,+fsgsbase,+fxsr,+invpcid,+lzcnt,+mmx,+movbe,+pclmul,"
    "+popcnt,+rdrnd,+sahf,+sse,+sse2,+sse3,+sse4.1,+sse4.2,+ssse3,+x87,+xsave,+xsaveopt"
)
_CASCADELAKE = (
    "+adx,+aes,+avx,+avx2,+avx512bw,+avx512cd,+avx512dq,+avx512f,+avx512vl,+avx512vnni,+bmi,+bmi2,+clflushopt,+clwb,"
    "+cmov,+crc32,+cx16,+cx8,+f16c,+fma,+fsgsbase,+fxsr,+invpcid,+lzcnt,+mmx,+movbe,+pclmul,+pku,+popcnt,+prfchw,"
    "+rdrnd,+rdseed,+sahf,+sse,+sse2,+sse3,+sse4.1,+sse4.2,+ssse3,+x87,+xsave,+xsavec,+xsaveopt,+xsaves"
)
_CPU_RESOLVER = "#iree_cpu.cpu_encoding_resolver<>"
_IDENTITY_RESOLVER = "#iree_encoding.identity_resolver"

IREE_CPUS: dict[str, IreeCpu] = {
    # The AVX2 profile's tiles were measured with -cpu=haswell (domain.md §3).
    "x86_64-avx2": IreeCpu(
        "haswell", _HASWELL, 32, "x86_64-unknown-unknown-eabi-elf", _X86_LAYOUT, "embedded-elf-x86_64",
        _CPU_RESOLVER, ("avx2", "fma", "f16c", "bmi2"), ("--iree-llvmcpu-target-cpu=haswell",),
    ),
    # "AVX-512F/BW/VNNI but no avx512bf16": exactly cascadelake (its tiles were measured with it).
    "x86_64-avx512": IreeCpu(
        "cascadelake", _CASCADELAKE, 64, "x86_64-unknown-unknown-eabi-elf", _X86_LAYOUT, "embedded-elf-x86_64",
        _CPU_RESOLVER, ("avx512f", "avx512bw", "avx512dq", "avx512vl", "avx512_vnni"),
        ("--iree-llvmcpu-target-cpu=cascadelake",),
    ),
    # No resolver: every encoding is the identity layout. The numbers of 'none' are the AVX2 host's.
    "none": IreeCpu(
        "haswell", _HASWELL, 32, "x86_64-unknown-unknown-eabi-elf", _X86_LAYOUT, "embedded-elf-x86_64",
        _IDENTITY_RESOLVER, ("avx2", "fma", "f16c", "bmi2"), ("--iree-llvmcpu-target-cpu=haswell",),
    ),
    # Cross-compiled only: an x86 host cannot run aarch64 code.
    "aarch64-neon": IreeCpu(
        "", "+neon,+reserve-x18", 16, "aarch64-unknown-unknown-eabi-elf", _ARM_LAYOUT, "embedded-elf-arm_64",
        _CPU_RESOLVER, (), (
            "--iree-llvmcpu-target-triple=aarch64-unknown-unknown-eabi-elf",
            "--iree-llvmcpu-target-cpu=generic",
            "--iree-llvmcpu-target-cpu-features=+neon",
        ),
    ),
}  # fmt: skip


def iree_cpu(target: str | Target) -> IreeCpu:
    """The IREE CPU for a target profile; custom profiles fall back by name (avx512 / neon / avx2)."""
    name = target if isinstance(target, str) else target.name
    if name in IREE_CPUS:
        return IREE_CPUS[name]
    lowered = name.lower()
    if "avx512" in lowered:
        return IREE_CPUS["x86_64-avx512"]
    if "aarch64" in lowered or "neon" in lowered or "arm" in lowered:
        return IREE_CPUS["aarch64-neon"]
    if not isinstance(target, str) and not target.encoding_resolver:
        return IREE_CPUS["none"]
    return IREE_CPUS["x86_64-avx2"]


@cache
def host_cpu_flags() -> frozenset[str]:
    """The ``flags`` of ``/proc/cpuinfo`` (empty when unreadable, e.g. not Linux)."""
    try:
        text = Path("/proc/cpuinfo").read_text()
    except OSError:
        return frozenset()
    m = re.search(r"^flags\s*:\s*(.*)$", text, re.MULTILINE)
    return frozenset(m.group(1).split()) if m else frozenset()


def runnable_here(target: str | Target) -> tuple[bool, str]:
    """Whether code compiled for ``target`` can run on this host, and if not, why (one line)."""
    cpu = iree_cpu(target)
    name = target if isinstance(target, str) else target.name
    if not cpu.is_x86:
        return False, f"{name}: {cpu.triple} code cannot run on this x86-64 host (compiled only)"
    flags = host_cpu_flags()
    if not flags:
        return False, f"{name}: cannot read /proc/cpuinfo to check the CPU features"
    missing = [f for f in cpu.required_host_flags if f not in flags]
    if missing:
        return False, f"{name}: this host lacks {', '.join(missing)} (compiled only)"
    return True, ""


def device_target_text(target: str | Target) -> str:
    """``#hal.device.target<"local", [#hal.executable.target<"llvm-cpu", ...>]>`` as IREE 3.13 prints it."""
    cpu = iree_cpu(target)
    config = (
        f'cpu = "{cpu.cpu}", cpu_features = "{cpu.features}", data_layout = "{cpu.data_layout}", '
        f"iree.encoding.resolver = {cpu.resolver}, max_stack_allocation_size = 32768 : i64, "
        f'native_vector_size = {cpu.native_vector_size} : i64, target_triple = "{cpu.triple}"'
    )
    return f'#hal.device.target<"local", [#hal.executable.target<"llvm-cpu", "{cpu.executable_format}", {{{config}}}>]>'


# ---------------------------------------------------------------------------------------------- conversion

_AFFINITY = DialectAttr("#hal.device.affinity<@__device_0>")
_KEEP_TOP = frozenset(
    {"arith.constant", "util.global.load", "util.global.store", "flow.tensor.encode", "tensor.empty",
     "hal.tensor.import", "hal.tensor.export", "iree_tensor_ext.compute_barrier.start",
     "iree_tensor_ext.compute_barrier.end"}
)  # fmt: skip
_RESHAPES = frozenset({"tensor.expand_shape", "tensor.collapse_shape"})
_PURE_TOP = frozenset(
    {"arith.constant", "tensor.empty", "util.global.load", "flow.tensor.encode", "flow.tensor.reshape"}
)


MATERIALIZED_NOTE = (
    "// egg_dispatch: this plan slices an encoded tensor, which IREE 3.13 cannot lower (an extract_slice or a\n"
    "// partial dispatch.tensor.load of an encoded value fails to legalize, flow.tensor.slice fails to serialize\n"
    "// its encoding), so its encodings are spelled as the target's linalg.pack / linalg.mmt4d / linalg.unpack.\n"
)


def emit_iree(module: Module, target: str | Target, *, materialize: bool | None = None) -> str:
    """The plan ``module`` as MLIR text in IREE's post-dispatch-creation form for ``target``.

    ``materialize`` spells encodings physically (pack / mmt4d / unpack with the target's layouts) instead
    of as ``#iree_encoding`` types; ``None`` does so only when IREE could not compile the encoded form
    (see :func:`needs_materialization`), and then says so in a comment at the top.
    """
    tgt = load_target(target) if isinstance(target, str) else target
    physical = needs_materialization(module, tgt) if materialize is None else materialize
    text = print_mlir(to_iree_module(module, tgt, materialize=physical))
    return (MATERIALIZED_NOTE + text) if physical and materialize is None else text


def to_iree_module(module: Module, target: str | Target, *, materialize: bool = False) -> Module:
    """The plan ``module`` (``flow.dispatch.region`` form) in IREE's post-dispatch-creation form."""
    tgt = load_target(target) if isinstance(target, str) else target
    if materialize:
        module = materialize_encodings(module, tgt)
    return _Converter(module, tgt).run()


def needs_materialization(module: Module, target: Target) -> bool:
    """Whether the plan slices a tensor whose encoding resolves to tiles: IREE 3.13 rejects every spelling
    of that (extract_slice or a partial binding load inside a dispatch, flow.tensor.slice outside)."""
    for op in module.walk():
        if op.name == "tensor.extract_slice":
            t = op.operands[0].type
            if isinstance(t, TensorType) and t.encoding is not None and _layout_of(target, t) is not None:
                return True
    return False


class _Converter:
    def __init__(self, module: Module, target: Target) -> None:
        self.src = module
        self.target = target
        self.out = Module(
            has_module_op=True,
            attributes={"stream.affinity.default": _AFFINITY},
            resources=dict(module.resources),
            file=module.file,
        )
        self.boxed: set[Value] = set()
        """Scalars computed by a dispatch: they travel between dispatches as 0-d tensors."""
        self.late_text: list[Operation] = []
        """``flow.tensor.reshape`` ops (no custom printer of ours): their text is set after renaming."""

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
                self.out.ops.append(self.function(op))
            else:
                raise EmitIreeError(f"cannot emit top-level '{op.name}' for IREE")
        _inline_missing_resources(self.out)
        _rename(self.out)
        for op in self.late_text:
            src, res = op.operands[0], op.result
            op.opaque_text = f"%{src.name} : {_type(src.type)} -> {_type(res.type)}"
        return self.out

    # -------------------------------------------------------------------------------- containers
    def initializer(self, op: Operation) -> Operation:
        body = Builder()
        self.convert_block(op.regions[0].entry.ops, body, {})
        attrs = {"stream.affinity.default": _AFFINITY}
        return Operation("util.initializer", attributes=attrs, regions=[Region([body.finish_dce()])])

    def function(self, func: Operation) -> Operation:
        ft = func.attributes["function_type"].type  # type: ignore[attr-defined]
        assert isinstance(ft, FunctionType)
        name = func.attributes["sym_name"].value  # type: ignore[attr-defined]
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
                new_arg = b.add("hal.tensor.import", [new_arg], [t], {"name": StrAttr(f"input{i}")}).result
            mapping[arg] = new_arg
        term = entry.ops[-1] if entry.ops else None
        if term is None or term.name not in ("func.return", "return", "util.return"):
            raise EmitIreeError(f"@{name} does not end in a return")
        self.convert_block(entry.ops[:-1], b, mapping)
        outs = []
        for i, v in enumerate(term.operands):
            new = mapping[v]
            if v in self.boxed:  # a scalar result computed by a dispatch
                raise EmitIreeError("a function result computed as a scalar by a dispatch")
            if isinstance(new.type, TensorType):
                new = b.add("hal.tensor.export", [new], [view], {"name": StrAttr(f"output{i}")}).result
            outs.append(new)
        b.add("util.return", outs, [])
        decl_in = ", ".join(f"%input{i}: {_type(t)}" for i, t in enumerate(ft.inputs))
        decl_out = ", ".join(f"%output{i}: {_type(t)}" for i, t in enumerate(ft.results))
        decl = f"sync func @{name}({decl_in}) -> ({decl_out})"
        attrs = {
            "sym_visibility": StrAttr("public"),
            "sym_name": StrAttr(name),
            "function_type": TypeAttr(FunctionType(tuple(abi_in), tuple(v.type for v in outs))),
            "iree.abi.stub": UnitAttr(),
            "iree.reflection": DictAttr((("iree.abi.declaration", StrAttr(decl)),)),
        }
        return Operation("util.func", attributes=attrs, regions=[Region([b.finish_dce()])])

    # ------------------------------------------------------------------------------------ bodies
    def convert_block(self, ops: list[Operation], b: Builder, mapping: dict[Value, Value]) -> None:
        """Top-level ops of a function or initializer: everything that computes ends up in a dispatch."""
        for op in ops:
            n = op.name
            if n == "flow.dispatch.region":
                self.bind(op.results, self.workgroups(op.regions[0].entry.ops, op.results, mapping, b), mapping)
            elif n in ("iree_encoding.set_encoding", "iree_encoding.unset_encoding"):
                mapping[op.result] = b.add("flow.tensor.encode", [mapping[op.operands[0]]], [op.result.type]).result
            elif n == "tensor.extract_slice" and (folded := _fold_constant_slice(op)) is not None:
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


def _inline_missing_resources(module: Module) -> None:
    """A ``dense_resource`` whose blob the module lacks (plans are emitted without the input's blobs) is
    written as a hex literal: the values are known, and IREE refuses a resource with no data."""
    for op in module.walk():
        for key in ("value", "initial_value"):
            a = op.attributes.get(key)
            if isinstance(a, DenseAttr) and a.form == "resource" and a.resource_key not in module.resources:
                op.attributes[key] = DenseAttr(a.array, a.type, "hex")


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
    raise EmitIreeError(f"a dispatch result of type {_type(t)}")


class Builder:
    """Appends new ops to one block; ``clone`` copies an op (and its regions) through a value mapping."""

    def __init__(self) -> None:
        self.block = Block()

    def add(
        self,
        name: str,
        operands: list[Value],
        types: list[Type],
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


def _full_slice(t: TensorType) -> dict:
    return {
        "static_offsets": make_int_list([0] * t.rank),
        "static_sizes": make_int_list(t.shape),
        "static_strides": make_int_list([1] * t.rank),
    }


def _fold_constant_slice(op: Operation) -> DenseAttr | None:
    """A static, unit-stride slice of a dense constant, as the smaller constant it folds to."""
    src = op.operands[0].owner
    if not (isinstance(src, Operation) and src.name == "arith.constant"):
        return None
    value = src.attributes.get("value")
    if not isinstance(value, DenseAttr) or len(op.operands) != 1:
        return None
    offs, sizes, strides = static_slice(op)
    if DYNAMIC in offs or DYNAMIC in sizes or any(s != 1 for s in strides):
        return None
    t = op.result.type
    assert isinstance(t, TensorType)
    arr = np.asarray(value.array)
    if arr.ndim != len(offs):
        return None
    sl = arr[tuple(slice(o, o + s) for o, s in zip(offs, sizes, strict=True))].reshape(t.shape)
    return DenseAttr(np.ascontiguousarray(sl), t, "hex" if sl.size > 100 else "list")


def _type(t: Type) -> str:
    return Printer(use_aliases=False).type(t)


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


# ------------------------------------------------------------------------------------------- materialization


def _layout_of(target: Target, t: TensorType) -> Layout | None:
    from .evaluate.encoding import encoding_layout

    return encoding_layout(target, t)


def materialize_encodings(module: Module, target: Target) -> Module:
    """The plan with every encoding resolved for ``target``: ``set_encoding`` -> ``linalg.pack`` (zero
    padding), contractions on packed operands -> ``linalg.(batch_)mmt4d`` (swapped for a narrow-N result),
    ``unset_encoding`` -> ``linalg.unpack``, slices of packed tensors -> slices of whole tiles; identity
    encodings are dropped. The same rewrite IREE's MaterializeDeviceEncoding does inside each dispatch."""
    return _Materializer(target).module(module)


class _Materializer:
    def __init__(self, target: Target) -> None:
        self.target = target

    def type(self, t: Type) -> Type:
        if isinstance(t, TensorType) and t.encoding is not None:
            return TensorType(packed_shape(t.shape, _layout_of(self.target, t)), t.element)
        if isinstance(t, FunctionType):
            return FunctionType(tuple(map(self.type, t.inputs)), tuple(map(self.type, t.results)))
        return t

    def module(self, m: Module) -> Module:
        out = Module(name=m.name, attributes=dict(m.attributes), resources=dict(m.resources), file=m.file,
                     has_module_op=m.has_module_op)  # fmt: skip
        mapping: dict[Value, Value] = {}
        for op in m.ops:
            b = Builder()
            self.rewrite(op, b, mapping)
            out.ops.extend(b.block.ops)
        return out

    def attrs(self, op: Operation) -> dict:
        return {k: (TypeAttr(self.type(v.type)) if isinstance(v, TypeAttr) else v) for k, v in op.attributes.items()}

    def region(self, r: Region, mapping: dict[Value, Value]) -> Region:
        nr = Region()
        for blk in r.blocks:
            nb = Builder()
            nb.block.label = blk.label
            for a in blk.args:
                na = Value(a.name, self.type(a.type), nb.block, a.index)
                mapping[a] = na
                nb.block.args.append(na)
            for o in blk.ops:
                self.rewrite(o, nb, mapping)
            nr.blocks.append(nb.block)
        return nr

    def rewrite(self, op: Operation, b: Builder, mapping: dict[Value, Value]) -> None:
        n = op.name
        ins_ = [mapping.get(v, v) for v in op.operands]
        src_t = op.operands[0].type if op.operands else None
        if n in ("iree_encoding.set_encoding", "iree_encoding.unset_encoding", "flow.tensor.encode"):
            assert isinstance(src_t, TensorType)
            res_t = op.result.type
            assert isinstance(res_t, TensorType)
            v = ins_[0]
            if src_t.encoding is not None and (lay := _layout_of(self.target, src_t)) is not None:
                v = self.unpack(b, v, lay, src_t.without_encoding())
            if res_t.encoding is not None and (lay := _layout_of(self.target, res_t)) is not None:
                v = self.pack(b, v, lay, res_t)
            mapping[op.result] = v
            return
        if n == "tensor.extract_slice" and isinstance(src_t, TensorType) and src_t.encoding is not None:
            lay = _layout_of(self.target, src_t)
            res_t = op.result.type
            assert isinstance(res_t, TensorType)
            if lay is not None:
                if _layout_of(self.target, res_t) != lay or len(op.operands) != 1:
                    raise EmitIreeError("a slice of a packed tensor whose result resolves to another layout")
                offs, sizes, strides = static_slice(op)
                if any(s != 1 for s in strides):
                    raise EmitIreeError("a strided slice of a packed tensor")
                tile = dict(zip(lay.inner_dims_pos, lay.inner_tiles, strict=True))
                outer_o = [o // tile.get(d, 1) for d, o in enumerate(offs)]
                outer_s = [-(-sz // tile.get(d, 1)) for d, sz in enumerate(sizes)]
                perm = lay.outer_dims_perm or tuple(range(len(offs)))
                p_offs = [outer_o[p] for p in perm] + [0] * len(lay.inner_tiles)
                p_sizes = [outer_s[p] for p in perm] + list(lay.inner_tiles)
                attrs = {
                    "static_offsets": make_int_list(p_offs),
                    "static_sizes": make_int_list(p_sizes),
                    "static_strides": make_int_list([1] * len(p_offs)),
                }
                mapping[op.result] = b.add(n, ins_, [self.type(res_t)], attrs).result
                return
        acc_t = op.results[0].type if op.results else None
        if (
            n in CONTRACTION_OPS
            and isinstance(acc_t, TensorType)
            and acc_t.encoding is not None
            and (lay := _layout_of(self.target, acc_t)) is not None
        ):
            self.contraction(op, b, mapping, acc_t)
            return
        touched = [v.type for v in [*op.operands, *op.results]]
        if n not in ("tensor.empty", "linalg.fill", "util.global", "util.global.load", "util.global.store") and any(
            isinstance(t, TensorType) and t.encoding is not None and _layout_of(self.target, t) is not None
            for t in touched
        ):
            raise EmitIreeError(f"cannot spell '{n}' on a packed tensor (only pack, unpack, fill, mmt4d and slices)")
        new = Operation(n, ins_, [], self.attrs(op), [], op.loc, op.opaque_text, op.generic_form)
        new.results = [Value(r.name, self.type(r.type), new, r.index) for r in op.results]
        mapping.update(zip(op.results, new.results, strict=True))
        new.regions = [self.region(r, mapping) for r in op.regions]
        b.block.ops.append(new)

    def pack(self, b: Builder, v: Value, lay: Layout, t: TensorType) -> Value:
        packed = self.type(t)
        empty = b.add("tensor.empty", [], [packed]).result
        zero = b.add("arith.constant", [], [t.element], {"value": _zero(t.element)}).result
        attrs = {
            "inner_dims_pos": make_int_list(lay.inner_dims_pos),
            "inner_tiles": make_int_list(lay.inner_tiles),
            "outer_dims_perm": make_int_list(lay.outer_dims_perm),
            "has_padding": UnitAttr(),
            "operandSegmentSizes": make_int_list((1, 1)),
        }
        return b.add("linalg.pack", [v, empty, zero], [packed], attrs).result

    def unpack(self, b: Builder, v: Value, lay: Layout, plain: TensorType) -> Value:
        empty = b.add("tensor.empty", [], [plain]).result
        attrs = {
            "inner_dims_pos": make_int_list(lay.inner_dims_pos),
            "inner_tiles": make_int_list(lay.inner_tiles),
            "outer_dims_perm": make_int_list(lay.outer_dims_perm),
            "operandSegmentSizes": make_int_list((1, 1)),
        }
        return b.add("linalg.unpack", [v, empty], [plain], attrs).result

    def contraction(self, op: Operation, b: Builder, mapping: dict[Value, Value], acc_t: TensorType) -> None:
        from .evaluate.encoding import encoding_matmul_setup

        lhs, rhs, acc = (mapping.get(v, v) for v in op.operands[:3])
        enc = acc_t.encoding
        assert isinstance(enc, EncodingAttr)
        types, maps, sizes = encoding_matmul_setup(enc)
        for v in op.operands[:2]:
            t = v.type
            if not (isinstance(t, TensorType) and t.encoding is not None and _layout_of(self.target, t) is not None):
                raise EmitIreeError(f"'{op.name}' mixes packed and plain operands")
        a, c = (rhs, lhs) if swaps_operands(self.target, types, maps, sizes) else (lhs, rhs)
        out_t = self.type(acc_t)
        rank = out_t.rank if isinstance(out_t, TensorType) else 0
        if rank not in (4, 5):
            raise EmitIreeError(f"a packed contraction of rank {rank} is neither mmt4d nor batch_mmt4d")
        name = "linalg.mmt4d" if rank == 4 else "linalg.batch_mmt4d"
        attrs = {"operandSegmentSizes": make_int_list((2, 1))}
        mapping[op.results[0]] = b.add(name, [a, c, acc], [out_t], attrs).result


def _zero(t: ScalarType) -> FloatAttr | IntAttr:
    return FloatAttr(0.0, t) if t.is_float else IntAttr(0, t)
