"""The tensor types behind IREE's ABI: what a ``!hal.buffer_view`` argument holds.

IREE's input phase turns ``func.func @main(%x: tensor<..>)`` into ``util.func @main(%arg0:
!hal.buffer_view)`` whose body reads ``hal.tensor.import %arg0 : !hal.buffer_view -> tensor<..>``.
An argument the body never imports (unused, or returned as is: global optimization folds
``return %x`` into ``util.return %arg0``) still has a tensor type: the one the function's
``iree.reflection = {iree.abi.declaration = "sync func @main(%input0: tensor<..>, ...) -> (...)"}``
states. :func:`argument_tensor_types` gives every data argument's type, so that the evaluator can
take an input for it and a plan keeps it in its signature.
"""

from __future__ import annotations

import re

from egg_dispatch.mlir.ir import DictAttr, OpaqueType, Operation, StrAttr, Type

__all__ = ["argument_tensor_types", "declared_input_types", "is_fence"]

_INPUT = re.compile(r"%input(\d+)\s*:\s*")


def is_fence(t: Type) -> bool:
    """A ``!hal.fence`` argument of IREE's async ABI: plumbing, not data."""
    return (isinstance(t, OpaqueType) and str(t) in ("!hal.fence", "<!hal.fence>")) or getattr(
        t, "text", ""
    ) == "!hal.fence"


def declared_input_types(func: Operation) -> dict[int, Type]:
    """Input types of ``iree.abi.declaration`` by input number (data arguments, fences not counted);
    empty when the function has no declaration or it cannot be read."""
    from egg_dispatch.mlir.lexer import MLIRSyntaxError
    from egg_dispatch.mlir.parser import Parser

    refl = func.attributes.get("iree.reflection")
    decl = refl.get("iree.abi.declaration") if isinstance(refl, DictAttr) else None
    if not isinstance(decl, StrAttr):
        return {}
    text = decl.value
    head = text.split(") -> ", 1)[0]
    out: dict[int, Type] = {}
    for m in _INPUT.finditer(head):
        parser = Parser(head[m.end() :], "<iree.abi.declaration>")
        try:
            out[int(m.group(1))] = parser.parse_type()
        except (MLIRSyntaxError, ValueError):
            return {}
    return out


def argument_tensor_types(func: Operation) -> list[tuple[int, Type | None]]:
    """(entry-block index, type the caller passes) of every data argument, in order: a tensor or
    scalar argument's own type, a buffer view's imported tensor type, else its declared one (None
    when neither says)."""
    entry = func.regions[0].entry
    declared = declared_input_types(func)
    imports = {op.operands[0]: op.result.type for op in func.walk() if op.name == "hal.tensor.import" and op.operands}
    out: list[tuple[int, Type | None]] = []
    k = 0
    for i, arg in enumerate(entry.args):
        if is_fence(arg.type):
            continue
        t: Type | None = arg.type
        if isinstance(t, OpaqueType):
            t = imports.get(arg, declared.get(k))
        out.append((i, t))
        k += 1
    return out
