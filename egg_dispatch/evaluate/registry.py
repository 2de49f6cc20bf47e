"""The op-handler table: what a handler is, the frame it reads its operands from, and ``handles``.

A handler takes ``(interpreter, op, frame)`` and returns the op's result values. The handler modules
(``ops_tensor``, ``ops_linalg``, ``ops_export``, ``ops_flow``, ``dynamic``) register into
``HANDLERS`` with ``@handles(...)`` when the package ``__init__`` imports them; the interpreter
(``core``) looks ops up here. This module imports no handler module and not the interpreter (only
for types), so handlers and the interpreter never import each other.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from egg_dispatch.evaluate.loop_space import LoopSpace
from egg_dispatch.evaluate.values import EvaluationError
from egg_dispatch.mlir.ir import Operation, Value
from egg_dispatch.util.registry import OpTable

if TYPE_CHECKING:
    from egg_dispatch.evaluate.core import Interpreter

__all__ = ["HANDLERS", "Frame", "Handler", "handles"]


class Frame:
    """SSA values of one region (chained to the enclosing one unless the region is isolated).

    ``space`` is the loop space of the innermost structured op body, for ``linalg.index``.
    """

    __slots__ = ("parent", "space", "values")

    def __init__(self, parent: Frame | None = None, space: LoopSpace | None = None) -> None:
        self.parent = parent
        self.space = space
        self.values: dict[Value, object] = {}

    def get(self, v: Value) -> object:
        """The value bound to ``v`` here or in an enclosing frame."""
        f: Frame | None = self
        while f is not None:
            if v in f.values:
                return f.values[v]
            f = f.parent
        raise EvaluationError(f"%{v.name} has no value here (defined by an op that was not evaluated?)")

    def loop_space(self) -> LoopSpace:
        """The innermost structured op's loop space (for ``linalg.index``)."""
        f: Frame | None = self
        while f is not None:
            if f.space is not None:
                return f.space
            f = f.parent
        raise EvaluationError("linalg.index outside a structured op body")


Handler = Callable[["Interpreter", Operation, Frame], list[object]]
HANDLERS: OpTable[Handler] = OpTable("evaluator handlers")
"""Op name -> handler; filled by the handler modules, which the package ``__init__`` imports."""
handles = HANDLERS.handles
"""Decorator: register a handler for the named ops."""
