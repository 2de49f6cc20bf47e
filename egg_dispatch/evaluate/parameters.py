"""Values of named parameters (``#flow.parameter.named<"scope"::"key">``) for evaluation.

Large models keep their weights outside the module, in a parameter file the runtime is given
(``iree-run-module --parameters=[scope=]FILE``). ``run``, ``check`` and ``explore --check`` take the
same flag. Files are read with IREE's runtime parameter support (``iree.runtime.ParameterIndex``:
``.irpa``, ``.safetensors``, ``.gguf``); each value is reinterpreted as the tensor type the module
declares for it, after checking its size (and, where the file records them, its dtype and shape).

Scopes follow IREE: a parameter ``"model"::"w"`` is looked up in the files given with scope
``model``; a file given without a scope serves parameters without one. With no file at all, every
parameter gets deterministic stand-in values (as an elided resource does) and one warning says so:
plans can then be compared with each other, but the numbers are not the model's.

``Parameters.validate`` checks, before any work starts, that the files given hold every parameter a module
declares (``util.global`` initialized from one, ``flow.tensor.constant`` of one) with its size, and where
the file records them its element type and shape, so that a wrong file is one error naming file, key and
expected type instead of a failure inside IREE's runtime or halfway through an evaluation.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from egg_dispatch.mlir.elements import decode_elements, storage_nbytes
from egg_dispatch.mlir.ir import Loc, Module, ParameterAttr, TensorType, TypeAttr
from egg_dispatch.mlir.resources import elided_fill

__all__ = ["DeclaredParameter", "ParameterError", "ParameterFile", "Parameters", "declared_parameters"]

_TORCH_DTYPES = {
    "float32": "f32", "float16": "f16", "bfloat16": "bf16", "float64": "f64", "int8": "i8", "int16": "i16",
    "int32": "i32", "int64": "i64", "uint8": "ui8", "bool": "i1",
}  # fmt: skip
"""PyTorch dtype names (iree-turbine writes them in each entry's metadata) -> MLIR element types."""


class ParameterError(ValueError):
    """A parameter the files cannot provide as the module declares it (names file, key and type)."""


@dataclass(frozen=True)
class DeclaredParameter:
    """A named parameter as a module reads it: the tensor type it declares (encoding dropped) and where."""

    attr: ParameterAttr
    type: TensorType
    loc: Loc | None


def declared_parameters(module: Module) -> dict[tuple[str | None, str], DeclaredParameter]:
    """(scope, key) -> the first declaration of every named parameter ``module`` reads: a ``util.global``
    initialized from one, or a ``flow.tensor.constant`` of one (IREE's global optimization writes both)."""
    out: dict[tuple[str | None, str], DeclaredParameter] = {}
    for op in module.walk():
        if op.name == "util.global":
            attr, typ = op.attributes.get("initial_value"), op.attributes.get("type")
            t = typ.type if isinstance(typ, TypeAttr) else None
        elif op.name == "flow.tensor.constant" and op.results:
            attr, t = op.attributes.get("value"), op.results[0].type
        else:
            continue
        if isinstance(attr, ParameterAttr) and isinstance(t, TensorType):
            out.setdefault((attr.scope, attr.key), DeclaredParameter(attr, t.without_encoding(), op.loc))
    return out


@dataclass(frozen=True)
class ParameterFile:
    """One ``--parameters=[scope=]FILE``."""

    path: Path
    scope: str | None = None

    @classmethod
    def parse(cls, spec: str) -> ParameterFile:
        """``[scope=]FILE``, as ``iree-run-module --parameters`` takes it."""
        scope, sep, path = spec.partition("=")
        if not sep:
            scope, path = "", spec
        if not path:
            raise ParameterError(f"--parameters: expected [scope=]FILE, got '{spec}'")
        return cls(Path(path), scope or None)

    def __str__(self) -> str:
        return f"{self.scope}={self.path}" if self.scope else str(self.path)


@dataclass
class Parameters:
    """Where evaluation takes parameter values from; ``warnings`` collects what it had to make up."""

    files: list[ParameterFile] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    _indexes: dict[ParameterFile, dict[str, object]] = field(default_factory=dict, repr=False)
    _filled: int = 0

    def value(self, attr: ParameterAttr, typ: TensorType) -> np.ndarray:
        """The parameter's values as an array of ``typ`` (raises ``ParameterError``)."""
        if not self.files:
            self._filled += 1
            if self._filled == 1:
                self.warnings.append(
                    "warning: no --parameters file given: named parameters are filled with deterministic "
                    "pseudo-random values, so numbers are not the model's"
                )
            return elided_fill(f"{attr.scope or ''}::{attr.key}", typ)
        f, entry = self._entry(attr, typ)
        return _decode(f, attr.key, entry, typ)

    def validate(self, module: Module) -> None:
        """Raise ``ParameterError`` unless the files given hold every parameter ``module`` declares as it
        declares it (key, size, and the element type and shape where the file records them), reading no
        data; the first problem, prefixed with the declaration's location, and how many more there are.
        Nothing to check without files (stand-in values are made to fit)."""
        if not self.files:
            return
        problems: list[str] = []
        for d in declared_parameters(module).values():
            try:
                f, entry = self._entry(d.attr, d.type)
                _check_entry(f, d.attr.key, entry, d.type)
            except ParameterError as e:
                problems.append(f"{d.loc}: error: {e}" if d.loc is not None else f"error: {e}")
        if problems:
            more = f" (and {len(problems) - 1} more)" if len(problems) > 1 else ""
            raise ParameterError(problems[0] + more)

    def _entry(self, attr: ParameterAttr, typ: TensorType) -> tuple[ParameterFile, Any]:
        """The first file of ``attr``'s scope holding its key, and its index entry."""
        scoped = [f for f in self.files if f.scope == attr.scope]
        if not scoped:
            given = ", ".join(str(f) for f in self.files)
            want = f"{attr.scope}=FILE" if attr.scope else "FILE (no scope)"
            raise ParameterError(
                f"no parameter file for scope '{attr.scope or ''}' (key '{attr.key}', {_type(typ)}); given: "
                f"{given}; pass --parameters={want}"
            )
        for f in scoped:
            entry = self._index(f).get(attr.key)
            if entry is not None:
                return f, entry
        files = ", ".join(str(f.path) for f in scoped)
        raise ParameterError(f"{files}: no parameter '{attr.key}' (expected {_type(typ)})")

    def _index(self, f: ParameterFile) -> dict[str, object]:
        if f not in self._indexes:
            if not f.path.is_file():
                raise ParameterError(f"{f.path}: no such parameter file")
            try:
                import iree.runtime as rt
            except ImportError:
                raise ParameterError(
                    f"{f.path}: reading parameter files needs IREE's runtime (pip install 'egg-dispatch[iree]')"
                ) from None
            index = rt.ParameterIndex()
            try:
                index.load(str(f.path))
            except Exception as e:  # not a parameter file, or a format the runtime does not know
                first = str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
                raise ParameterError(f"{f.path}: not a parameter file (.irpa, .safetensors, .gguf): {first}") from None
            self._indexes[f] = dict(index.items())
        return self._indexes[f]


def _type(typ: TensorType) -> str:
    return "tensor<" + "".join(f"{d}x" for d in typ.shape) + f"{typ.element}>"


def _check_entry(f: ParameterFile, key: str, entry: Any, typ: TensorType) -> None:
    """``entry`` (an ``iree.runtime`` parameter index entry) can be read as ``typ``: its element type and
    shape where the file records them (iree-turbine's metadata), and its size in bytes."""
    where = f"{f.path}: parameter '{key}'"
    meta = _torch_metadata(entry)
    if meta is not None:
        dtype, shape = _TORCH_DTYPES.get(str(meta.get("dtype")), meta.get("dtype")), meta.get("shape")
        if dtype is not None and dtype != typ.element.name:
            raise ParameterError(f"{where} has element type {dtype}, the module expects {_type(typ)}")
        if shape is not None and math.prod(int(d) for d in shape) != typ.num_elements:
            # Only the element count must agree: IREE reads a parameter's bytes, and its global
            # optimization folds unit dimensions ([128, 1] in the file, tensor<128xf32> in the module).
            raise ParameterError(f"{where} has shape {list(shape)}, the module expects {_type(typ)}")
    length = int(getattr(entry, "length", storage_nbytes(typ)))
    if length != storage_nbytes(typ):
        raise ParameterError(f"{where} holds {length} bytes, the module's {_type(typ)} needs {storage_nbytes(typ)}")


def _decode(f: ParameterFile, key: str, entry: Any, typ: TensorType) -> np.ndarray:
    """``entry``: an ``iree.runtime`` parameter index entry (IREE's runtime ships no types)."""
    import iree.runtime as rt

    _check_entry(f, key, entry, typ)
    if getattr(entry, "is_splat", False):
        pattern = bytes(entry.splat_pattern)
        data = pattern * (storage_nbytes(typ) // max(1, len(pattern)))
    else:
        data = rt.parameter_index_entry_as_numpy_flat_ndarray(entry).tobytes()
    if len(data) != storage_nbytes(typ):
        where = f"{f.path}: parameter '{key}'"
        raise ParameterError(f"{where} holds {len(data)} bytes, the module's {_type(typ)} needs {storage_nbytes(typ)}")
    return decode_elements(data, typ)


def _torch_metadata(entry: object) -> dict | None:
    """iree-turbine's ``PYTORCH:{"dtype": ..., "shape": [...]}`` entry metadata, when present."""
    raw = bytes(getattr(entry, "metadata", b"") or b"")
    if not raw.startswith(b"PYTORCH:"):
        return None
    try:
        meta = json.loads(raw[len(b"PYTORCH:") :].decode())
    except (ValueError, UnicodeDecodeError):
        return None
    return meta if isinstance(meta, dict) else None
