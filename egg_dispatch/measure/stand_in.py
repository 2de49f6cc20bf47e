"""The parameter files IREE's runtime is given when ``bench`` and ``tune`` run a model's plans.

A module with named parameters (``#flow.parameter.named<"scope"::"key">``) cannot be loaded without an
``io_parameters`` module serving them (``iree-run-module --parameters=scope=FILE``): IREE stops with
"required module 'io_parameters' not registered". With ``--parameters`` the files given are passed on.
Without, the evaluator fills every parameter with deterministic stand-in values
(``evaluate.parameters``, one warning); the same values are written here to one ``.irpa`` archive per
scope, so IREE runs the plans on the numbers the evaluator checks them against (plans compared with
each other, not the model's numbers, as ``explore`` says).
"""

from __future__ import annotations

import contextlib
import tempfile
from collections.abc import Iterator
from pathlib import Path

from egg_dispatch.evaluate.parameters import Parameters, declared_parameters
from egg_dispatch.mlir.elements import element_bytes
from egg_dispatch.mlir.ir import Module, TensorType
from egg_dispatch.mlir.resources import elided_fill

__all__ = ["named_parameters", "runtime_parameters"]


def named_parameters(module: Module) -> dict[tuple[str | None, str], TensorType]:
    """(scope, key) -> the tensor type ``module`` declares for every named parameter it reads (a
    ``util.global`` initialized from one, or a ``flow.tensor.constant`` of one), encodings dropped."""
    return {k: d.type for k, d in declared_parameters(module).items()}


@contextlib.contextmanager
def runtime_parameters(module: Module, parameters: Parameters | None) -> Iterator[list[tuple[str | None, str]]]:
    """(scope, file) pairs for IREE's runtime tools: the files of ``parameters``, else stand-in archives
    of ``module``'s named parameters (module docstring), removed when the context ends; none when the
    module reads no parameter."""
    if parameters is not None and parameters.files:
        yield [(p.scope, str(p.path)) for p in parameters.files]
        return
    named = named_parameters(module)
    if not named:
        yield []
        return
    import iree.runtime as rt

    with tempfile.TemporaryDirectory(prefix="egg_dispatch_params_") as tmp:
        out: list[tuple[str | None, str]] = []
        for scope in sorted({s for s, _ in named}, key=lambda s: s or ""):
            index = rt.ParameterIndex()
            for (s, key), typ in sorted(named.items(), key=lambda kv: kv[0][1]):
                if s == scope:
                    index.add_buffer(key, element_bytes(elided_fill(f"{scope or ''}::{key}", typ), typ))
            path = Path(tmp) / f"stand_in_{scope or 'unscoped'}.irpa"
            index.create_archive_file(str(path))
            out.append((scope, str(path)))
        yield out
