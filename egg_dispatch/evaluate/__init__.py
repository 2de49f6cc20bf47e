"""NumPy evaluator: reference semantics for every op egg_dispatch models (docs/design.md §2.6).

``evaluate(module, inputs)`` runs one function of a parsed module on NumPy arrays and returns its
results. Without a target, encodings are ignored (plain semantics). With a target, every encoded
tensor whose encoding the target resolves to tiles is held *physically* packed: ``set_encoding``
packs with zero padding, contractions on packed operands run the mmt4d kernel, ``unset_encoding``
unpacks; so a wrong layout, a wrong slice of a packed tensor or a wrong rewrite gives wrong numbers.

Modules: ``values`` (PackedTensor, EvaluationError, casts), ``scalar`` (arith/math), ``structured``
(generic, contractions, attention, gather on arrays), ``encoding`` (layouts, packed ops), ``registry``
(the op-handler table and ``handles``), ``core`` (the interpreter), ``ops_tensor``/``ops_linalg``/
``ops_export``/``ops_flow``/``dynamic`` (op handlers; ``ops_export``: concat, pad, softmax, cf.assert;
``ops_flow``: flow.tensor.slice between dispatches; ``dynamic``: run-time sizes), ``index_ranges``
(which integer inputs are indices, for valid random inputs),
``check`` (seeded inputs, tolerances, plain vs physical).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

# The handler modules register their ops into ``registry.HANDLERS`` as they are imported, here, where
# the package is assembled; neither they nor ``core`` import each other.
from egg_dispatch.evaluate import dynamic, ops_export, ops_flow, ops_linalg, ops_tensor  # noqa: F401
from egg_dispatch.evaluate.core import Interpreter, function_input_types
from egg_dispatch.evaluate.encoding import encoding_layout
from egg_dispatch.evaluate.parameters import Parameters
from egg_dispatch.evaluate.scalar import erf
from egg_dispatch.evaluate.values import EvaluationError, PackedTensor
from egg_dispatch.mlir.ir import Module, Operation
from egg_dispatch.target.profile import Target, load_target

__all__ = [
    "EvaluationError",
    "Interpreter",
    "PackedTensor",
    "encoding_layout",
    "erf",
    "evaluate",
    "function_input_types",
    "select_function",
]


def select_function(module: Module, function: str | None = None) -> Operation:
    """The function ``evaluate`` runs: ``function`` by name, else the first public one."""
    try:
        return module.function(function)
    except KeyError as e:
        raise EvaluationError(str(e).strip("'\"")) from None


def evaluate(
    module: Module,
    inputs: Sequence[np.ndarray | float | int | bool],
    function: str | None = None,
    target: Target | str | None = None,
    parameters: Parameters | None = None,
) -> list[np.ndarray]:
    """Run ``function`` (default: the first public function) on ``inputs``; returns its results.

    Inputs must match the signature exactly (shape and dtype; a ``!hal.buffer_view`` argument takes
    the type of its ``hal.tensor.import``). Module initializers run first. ``target`` (a
    :class:`~egg_dispatch.target.profile.Target` or a built-in name) materializes encodings physically.
    ``parameters`` gives named parameters (``#flow.parameter.named``) their values (default: a
    deterministic fill, with a warning in ``parameters.warnings``).
    Raises :class:`EvaluationError` (with ``file:line:col``) for an op it cannot evaluate.
    """
    if isinstance(target, str):
        target = load_target(target)
    return Interpreter(module, target, parameters).call(select_function(module, function), inputs)
