"""The input's ABI shell, kept around an emitted plan so that the module is called as the input was.

A PyTorch export lowered by IREE's input phase has IREE's default async ABI ("coarse-fences"):
``util.func public @main$async(%arg0: !hal.buffer_view, %arg1: !hal.fence, %arg2: !hal.fence)`` imports
each argument with ``hal.tensor.import wait(%arg1) => %arg0``, joins its results on the signal fence with
``hal.tensor.barrier join(...) => %arg2`` and exports them, and a sync wrapper ``@main`` calls it with
``util.call`` and waits on the fence (``hal.fence.await``). A plan replaces what happens in between;
``AbiShell`` records the rest (signature, attributes, per argument its import, per result its barrier
and export, and the wrapper functions, copied verbatim) so that ``emit_iree`` rebuilds exactly that
interface around the plan's dispatches, and ``iree-run-module --function=main`` runs either module.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from egg_dispatch.mlir.ir import FunctionType, Module, OpaqueType, Operation, Type, TypeAttr, Value
from egg_dispatch.mlir.ops import attr

__all__ = ["AbiShell", "ArgumentAbi", "FunctionAbi", "ResultAbi", "abi_shell"]

_SKIP_ATTRS = {"sym_name", "function_type", "sym_visibility", "arg_attrs"}


@dataclass(frozen=True)
class ArgumentAbi:
    """One data argument: its position in the ABI signature, its import's attributes, its wait fence."""

    index: int
    import_attributes: dict
    wait: int | None
    """Position of the fence argument its ``hal.tensor.import wait(...)`` waits on."""


@dataclass(frozen=True)
class ResultAbi:
    """One result: the export's attributes and the fence argument its barrier signals (if any)."""

    export_attributes: dict
    signal: int | None


@dataclass
class FunctionAbi:
    name: str
    function_type: FunctionType
    attributes: dict
    """The function's own attributes (``iree.abi.model``, ``inlining_policy``, ``iree.abi.stub``, ...)."""
    arguments: list[ArgumentAbi]
    """Per data argument of the plan's function, in order."""
    results: list[ResultAbi]


@dataclass
class AbiShell:
    function: FunctionAbi
    wrappers: list[Operation] = field(default_factory=list)
    """Other public functions of the input that only call the explored one (the sync ``@main``)."""


def _is_view(t: Type) -> bool:
    return isinstance(t, OpaqueType) and t.text == "!hal.buffer_view"


def _is_fence(t: Type) -> bool:
    return isinstance(t, OpaqueType) and t.text == "!hal.fence"


def abi_shell(module: Module, function: str) -> AbiShell | None:
    """The ABI of ``function`` in ``module`` when it has IREE's buffer-view ABI (else None)."""
    try:
        func = module.function(function)
    except KeyError:
        return None
    ft = attr(func, "function_type", TypeAttr).type
    if func.name != "util.func" or not isinstance(ft, FunctionType) or not any(_is_view(t) for t in ft.inputs):
        return None
    entry = func.regions[0].entry
    imports: dict[Value, Operation] = {}
    for op in entry.ops:
        if op.name == "hal.tensor.import" and op.operands[0] in entry.args:
            imports.setdefault(op.operands[0], op)
    arguments = []
    for i, arg in enumerate(entry.args):
        if _is_fence(arg.type):
            continue
        imp = imports.get(arg)
        attrs = {k: v for k, v in imp.attributes.items() if k != "wait"} if imp is not None else {}
        wait = entry.args.index(imp.operands[1]) if imp is not None and "wait" in imp.attributes else None
        arguments.append(ArgumentAbi(i, attrs, wait))
    ret = entry.ops[-1] if entry.ops else None
    if ret is None or ret.name != "util.return":
        return None
    results = []
    for v in ret.operands:
        export_attrs: dict = {}
        signal = None
        owner = v.owner
        if isinstance(owner, Operation) and owner.name == "hal.tensor.export":
            export_attrs = dict(owner.attributes)
            src = owner.operands[0].owner
            if isinstance(src, Operation) and src.name == "hal.tensor.barrier" and src.operands[-1] in entry.args:
                signal = entry.args.index(src.operands[-1])
        results.append(ResultAbi(export_attrs, signal))
    attrs = {k: v for k, v in func.attributes.items() if k not in _SKIP_ATTRS}
    shell = AbiShell(FunctionAbi(function, ft, attrs, arguments, results))
    for other in module.functions():
        vis = other.attributes.get("sym_visibility")
        if other is func or getattr(vis, "value", None) == "private":
            continue
        calls = [op for op in other.walk() if op.name == "util.call"]
        if calls and all(f"@{function}" in (op.opaque_text or "") for op in calls):
            shell.wrappers.append(other)
    return shell
