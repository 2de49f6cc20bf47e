"""The interpreter: running ops through the op-handler table, functions, globals and initializers.

The table, the frame of SSA values and ``handles`` live in ``registry``; the handlers in
``ops_tensor`` (arith/math, tensor, encodings, flow, hal, util), ``ops_linalg`` (linalg and
iree_linalg_ext), ``ops_export``, ``ops_flow`` and ``dynamic`` register there when the package
``__init__`` imports them; of the handler modules this one imports only ``dynamic``, for its size
helpers, and none imports this one but for types. Each handler takes ``(interpreter, op, frame)``
and returns the op's result values. Any error raised while running an op is re-raised as an
:class:`EvaluationError` carrying that op's name and ``file:line:col`` (the innermost op, for errors
inside a region).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from egg_dispatch.evaluate import dynamic
from egg_dispatch.evaluate.encoding import encode, logical
from egg_dispatch.evaluate.parameters import ParameterError, Parameters
from egg_dispatch.evaluate.registry import HANDLERS, Frame, handles
from egg_dispatch.evaluate.structured import LoopSpace
from egg_dispatch.evaluate.values import EvaluationError, PackedTensor, dtype_of, to_type
from egg_dispatch.mlir.abi import declared_input_types
from egg_dispatch.mlir.ir import (
    Block,
    DenseAttr,
    FloatAttr,
    FunctionType,
    IntAttr,
    Module,
    OpaqueType,
    Operation,
    ParameterAttr,
    ScalarType,
    StrAttr,
    TensorType,
    Type,
    TypeAttr,
    Value,
)
from egg_dispatch.mlir.ops import sym_name
from egg_dispatch.mlir.printer import Printer
from egg_dispatch.target.profile import Target

__all__ = ["HANDLERS", "Frame", "Interpreter", "function_input_types", "handles", "type_str"]
# ``HANDLERS``, ``Frame`` and ``handles`` are ``registry``'s, named here too for code that imports them from ``core``.

TERMINATORS = frozenset(
    {"func.return", "return", "util.return", "flow.return", "linalg.yield", "iree_linalg_ext.yield", "tensor.yield"}
)


def type_str(t: Type) -> str:
    """A type as MLIR prints it, for messages."""
    return Printer(use_aliases=False).type(t)


_OP_ERRORS = (ValueError, TypeError, LookupError, ArithmeticError, AttributeError, AssertionError,
              NotImplementedError, StopIteration)  # fmt: skip
"""What a handler raises on an op it cannot run (bad attributes, shapes, indices): re-raised as an
``EvaluationError`` naming the op and its location, never a crash."""


def is_fence(t: Type) -> bool:
    """A ``!hal.fence`` argument of IREE's async ABI: plumbing, not data (bound to None here)."""
    return (isinstance(t, OpaqueType) and str(t) in ("!hal.fence", "<!hal.fence>")) or getattr(
        t, "text", ""
    ) == "!hal.fence"


def data_arguments(func: Operation) -> list[int]:
    """Positions of the arguments a caller passes data for (every one but the async ABI's fences)."""
    return [i for i, a in enumerate(func.regions[0].entry.args) if not is_fence(a.type)]


def function_input_types(func: Operation) -> list[Type]:
    """Argument types as the caller sees them: a ``!hal.buffer_view`` argument takes the tensor type
    of the ``hal.tensor.import`` that reads it (IREE's ABI wrapper functions); the async ABI's
    ``!hal.fence`` arguments are not inputs."""
    block = func.regions[0].entry
    types: list[Type] = []
    for i in data_arguments(func):
        arg = block.args[i]
        t = arg.type
        if isinstance(t, OpaqueType):
            imports = [op for op in func.walk() if op.name == "hal.tensor.import" and op.operands[0] is arg]
            declared = declared_input_types(func).get(len(types))  # never imported: returned as is, or unused
            if imports:
                t = imports[0].result.type
            elif declared is not None:
                t = declared
            else:
                raise EvaluationError(f"argument %{arg.name} of type {t} is not imported as a tensor", func.loc)
        types.append(t)
    return types


class Interpreter:
    """Runs functions of one module; ``target`` None means plain semantics (encodings ignored)."""

    def __init__(self, module: Module, target: Target | None = None, parameters: Parameters | None = None) -> None:
        self.module = module
        self.target = target
        self.parameters = parameters if parameters is not None else Parameters()
        self.globals: dict[str, object] = {}
        self._initialized = False

    # ---------------------------------------------------------------------------- running ops
    def eval_op(self, op: Operation, frame: Frame) -> list[object]:
        """Run one op; every failure becomes an EvaluationError naming the op and its location."""
        if op.opaque_text is not None:
            raise EvaluationError("not modelled (kept as an opaque op), so it cannot be evaluated", op.loc, op.name)
        handler = HANDLERS.get(op.name)
        if handler is None:
            raise EvaluationError("the evaluator has no semantics for this op", op.loc, op.name)
        try:
            results = handler(self, dynamic.specialize(self, op, frame), frame)  # ``?`` sizes of this call
        except EvaluationError as e:
            if e.loc is None:
                raise EvaluationError(e.message, op.loc, op.name) from e
            raise
        except _OP_ERRORS as e:
            raise EvaluationError(str(e) or type(e).__name__, op.loc, op.name) from e
        if len(results) != len(op.results):
            raise EvaluationError(f"produced {len(results)} values for {len(op.results)} results", op.loc, op.name)
        return results

    def exec_ops(self, ops: Sequence[Operation], frame: Frame) -> list[object] | None:
        """Run ops in order; the operands of a terminator, if one is reached."""
        for op in ops:
            if op.name in TERMINATORS:
                return [frame.get(v) for v in op.operands]
            for r, val in zip(op.results, self.eval_op(op, frame), strict=True):
                frame.values[r] = val
        return None

    def run_block(
        self, block: Block, args: Sequence[object], parent: Frame | None, space: LoopSpace | None = None
    ) -> list[object]:
        """Run a block with its arguments bound; returns its terminator's operands."""
        frame = Frame(parent, space)
        if len(args) != len(block.args):
            raise EvaluationError(f"block takes {len(block.args)} arguments, got {len(args)}")
        frame.values.update(zip(block.args, args, strict=True))
        out = self.exec_ops(block.ops, frame)
        if out is None:
            raise EvaluationError("region ends without a terminator")
        return out

    # ------------------------------------------------------------------------- value access
    def array(self, v: Value, frame: Frame) -> np.ndarray:
        """A plain (logical) array; a packed operand here is an error (the op has no packed form)."""
        x = frame.get(v)
        if isinstance(x, PackedTensor):
            raise EvaluationError(f"operand %{v.name} is a packed (encoded) tensor, which this op cannot read")
        if not isinstance(x, np.ndarray):
            raise EvaluationError(f"operand %{v.name} is not a tensor or scalar value")
        return x

    # ------------------------------------------------------------------------ module and calls
    def initialize(self) -> None:
        """Globals with initial values, then ``util.initializer`` bodies, in module order (as at load)."""
        if self._initialized:
            return
        self._initialized = True
        for op in self.module.ops:
            if op.name == "util.global":
                self._init_global(op)
            elif op.name == "util.initializer":
                self.run_block(op.regions[0].entry, [], None)

    def _init_global(self, op: Operation) -> None:
        name = op.attributes["sym_name"]
        typ = op.attributes["type"]
        assert isinstance(name, StrAttr) and isinstance(typ, TypeAttr)
        init = op.attributes.get("initial_value")
        t = typ.type
        if isinstance(init, DenseAttr) and isinstance(t, TensorType):
            self.globals[name.value] = encode(init.array, t, self.target)
        elif isinstance(init, ParameterAttr) and isinstance(t, TensorType):
            self.globals[name.value] = encode(self.parameter(init, t.without_encoding()), t, self.target)
        elif isinstance(init, IntAttr | FloatAttr) and isinstance(t, ScalarType):
            self.globals[name.value] = to_type(init.value, t)

    def parameter(self, attr: ParameterAttr, typ: TensorType) -> np.ndarray:
        try:
            return self.parameters.value(attr, typ)
        except ParameterError as e:
            raise EvaluationError(str(e)) from None

    def call(self, func: Operation, inputs: Sequence[object]) -> list[np.ndarray]:
        """Run ``func`` on ``inputs`` (checked against its signature); returns logical arrays."""
        self.initialize()
        types = function_input_types(func)
        name = sym_name(func)
        if len(inputs) != len(types):
            raise EvaluationError(f"@{name} takes {len(types)} inputs, got {len(inputs)}", func.loc)
        data = [self._check_input(i, x, t, func) for i, (x, t) in enumerate(zip(inputs, types, strict=True))]
        args: list[object] = [None] * len(func.regions[0].entry.args)
        for i, x in zip(data_arguments(func), data, strict=True):
            args[i] = x
        results = self.run_block(func.regions[0].entry, args, None)
        return [np.array(logical(r), copy=True) for r in results]

    def _check_input(self, i: int, x: object, t: Type, func: Operation) -> object:
        if isinstance(t, ScalarType):
            if isinstance(x, bool | int | float):
                return to_type(x, t)
            arr = np.asarray(x)
            if arr.shape != () or arr.dtype != dtype_of(t):
                raise EvaluationError(
                    f"input {i}: expected a scalar {t}, got an array {arr.dtype}{list(arr.shape)}", func.loc
                )
            return arr
        if not isinstance(t, TensorType):
            raise EvaluationError(f"input {i}: cannot pass a value of type {type_str(t)}", func.loc)
        arr = np.asarray(x)
        if not dynamic.shape_fits(arr.shape, t) or arr.dtype != dtype_of(t):
            shape = "x".join(map(str, arr.shape))
            raise EvaluationError(
                f"input {i}: expected {type_str(t.without_encoding())}, "
                f"got an array of shape [{shape}] and dtype {arr.dtype}",
                func.loc,
            )
        return encode(arr, dynamic.concrete_type(t, arr), self.target) if t.encoding is not None else arr


def function_type(func: Operation) -> FunctionType:
    """The declared signature of a ``func.func`` / ``util.func``."""
    t = func.attributes["function_type"]
    assert isinstance(t, TypeAttr) and isinstance(t.type, FunctionType)
    return t.type
