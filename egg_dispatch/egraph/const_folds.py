"""The constants IREE folds a slice, a reshape or a transpose of a constant into (rules/fold_constants.egg).

IREE's plan holds a static ``tensor.extract_slice``, ``expand_shape`` / ``collapse_shape`` or
``linalg.transpose`` of a dense constant (and a chain of them) as a constant of its own: MLIR's reshape
folders fold a reshape of a dense constant, and IREE's const-expr hoisting (HoistIntoGlobals) with its JIT
const-eval (ConstEval's JitGlobals) evaluates a slice or a transpose of one into a global's initial value.
``fold_constants`` computes each such constant ahead of time (NumPy, lazily: the values are sliced only
when something reads them), registers it in ``ImportedProgram.constants`` under a key derived from its
source's key and the op (reproducible), and records the fold (``slice_folds``, ``op_folds``); the seeded
facts name each fold and the rules union the form with the constant.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import partial

import numpy as np

from egg_dispatch.egraph import terms as T
from egg_dispatch.egraph.import_util import digest_key
from egg_dispatch.egraph.imported import ImportedProgram
from egg_dispatch.mlir.ir import DenseAttr, TensorType
from egg_dispatch.mlir.ir_types import element_bits, numpy_dtype
from egg_dispatch.mlir.ops import RESHAPE_OPS, int_list

__all__ = ["fold_constants"]

TRANSPOSE = "linalg.transpose"


def fold_constants(imported: ImportedProgram) -> None:
    """Fill ``imported.slice_folds`` and ``op_folds`` (module docstring), in program order: a slice or a
    reshape of what an earlier fold gave folds again (a reshape of a slice of a constant). Only dense
    constants (not a ``Parameter``: IREE reads those from a file at run time and const-evaluates nothing of
    them) of static shape and an element type of whole bytes NumPy holds; only slices whose offsets, sizes
    and strides are all static."""
    folded: dict[str, str] = {}  # let -> the Const key its value folds into

    def dense(let: str) -> tuple[str, DenseAttr] | None:
        term = imported.lets.get(let)
        key = term.key if isinstance(term, T.Const) else folded.get(let)
        value = imported.constants.get(key) if key is not None else None
        if key is None or not isinstance(value, DenseAttr) or not _foldable(value.type):
            return None
        return key, value

    for let, term in imported.lets.items():
        if isinstance(term, T.Slice):
            src = dense(term.source)
            if src is None or not _static_slice(src[1].type, term.offsets, term.sizes, term.strides):
                continue
            index = tuple(
                slice(o, o + (n - 1) * s + 1, s) for o, n, s in zip(term.offsets, term.sizes, term.strides, strict=True)
            )
            typ = TensorType(term.sizes, src[1].type.element)
            what = ("slice", term.offsets, term.sizes, term.strides)
            key = _register(imported, src, what, typ, partial(_sliced, index=index))
            imported.slice_folds.append((src[0], term.offsets, term.sizes, term.strides, key))
            folded[let] = key
        elif isinstance(term, T.Op) and term.result == 0 and term.inputs:
            op = imported.ops.get(term.key)
            src = dense(term.inputs[0])
            if op is None or src is None or len(op.results) != 1:
                continue
            result = op.results[0].type
            if not isinstance(result, TensorType) or not _foldable(result):
                continue
            typ = result
            fold: Callable[[np.ndarray], np.ndarray]
            if op.name in RESHAPE_OPS and len(term.inputs) == 1:
                fold = partial(_reshaped, shape=typ.static_shape)
            elif op.name == TRANSPOSE and len(term.inputs) == 2:
                perm = int_list(op.attributes.get("permutation"))
                if sorted(perm) != list(range(src[1].type.rank)):
                    continue
                fold = partial(_transposed, perm=perm)
            else:
                continue
            key = _register(imported, src, ("op", term.key), typ, fold)
            imported.op_folds.append((term.key, src[0], key))
            folded[let] = key


def _folded(fold: Callable[[np.ndarray], np.ndarray], source: DenseAttr, shape: tuple[int, ...]) -> np.ndarray:
    """The folded constant's values (a ``DenseAttr`` fill: a module-level function, so it pickles)."""
    return np.ascontiguousarray(fold(source.array)).reshape(shape)


def _sliced(a: np.ndarray, index: tuple[slice, ...]) -> np.ndarray:
    return a[index]


def _reshaped(a: np.ndarray, shape: tuple[int, ...]) -> np.ndarray:
    return a.reshape(shape)  # row-major, as MLIR reshapes


def _transposed(a: np.ndarray, perm: tuple[int, ...]) -> np.ndarray:
    return a.transpose(perm)


def _foldable(t: TensorType) -> bool:
    """A static tensor of an element type of whole bytes NumPy holds (IREE never hoists a sub-byte value:
    isHoistableConstExprLeaf, Util/Analysis/Constant/OpOracle.cpp)."""
    if not t.is_static or t.encoding is not None or element_bits(t.element) % 8:
        return False
    try:
        numpy_dtype(t.element)
    except ValueError:
        return False
    return True


def _static_slice(t: TensorType, offsets: tuple[int, ...], sizes: tuple[int, ...], strides: tuple[int, ...]) -> bool:
    """Offsets, sizes and strides all constants (a size code is negative), one per dim, in bounds."""
    if not (len(offsets) == len(sizes) == len(strides) == t.rank):
        return False
    return all(
        o >= 0 and n >= 1 and s >= 1 and o + (n - 1) * s < d
        for o, n, s, d in zip(offsets, sizes, strides, t.static_shape, strict=True)
    )


def _register(
    imported: ImportedProgram,
    src: tuple[str, DenseAttr],
    op: tuple[object, ...],
    typ: TensorType,
    fold: Callable[[np.ndarray], np.ndarray],
) -> str:
    """The key of the constant ``fold`` gives of ``src`` (registered once): derived from the source's key
    and the op, so that two runs name it alike; its values computed when first read."""
    key = f"folded_{'x'.join(map(str, typ.static_shape))}x{typ.element}_{digest_key(src[0], *op)}"
    if key not in imported.constants:
        value = src[1]
        form = "hex" if value.form in ("hex", "resource") else "list"
        imported.constants[key] = DenseAttr(None, typ, form, fill=partial(_folded, fold, value, typ.static_shape))
    return key
