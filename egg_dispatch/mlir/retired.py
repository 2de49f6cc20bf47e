"""Named ops upstream MLIR retired, read as what they mean; and the program as IREE can read it.

Upstream MLIR retired ``linalg.matmul_transpose_a`` / ``_b`` and ``linalg.batch_matmul_transpose_a`` /
``_b``: they are ``linalg.matmul`` / ``linalg.batch_matmul`` with ``indexing_maps`` now, the only spelling
IREE 3.13 reads (``custom op 'linalg.matmul_transpose_b' is unknown``), and the one it prints. The reader
reads the old names as that (``respell``; one note per program says so: ``retired_note``), so every stage
sees one form of each contraction. A program IREE cannot read as written (a retired op, or a
``dense_resource`` whose blob was elided: "resource data missing") is handed to IREE as read here
(``iree_input_text``), so that IREE's plan and ours start from the same program, numbers included.
"""

from __future__ import annotations

import dataclasses
import re

from egg_dispatch.mlir.elements import HexData, element_bytes
from egg_dispatch.mlir.ir import AffineMapAttr, ArrayAttr, DenseAttr, Loc, Module
from egg_dispatch.mlir.ir_types import element_nbytes
from egg_dispatch.mlir.printer import print_mlir

__all__ = ["RETIRED_OPS", "iree_input_shown", "iree_input_text", "may_need_respelling", "respell", "retired_note"]

RETIRED_OPS: dict[str, tuple[str, tuple[tuple[int, ...], ...]]] = {
    "linalg.matmul_transpose_a": ("linalg.matmul", ((2, 0), (2, 1), (0, 1))),
    "linalg.matmul_transpose_b": ("linalg.matmul", ((0, 2), (1, 2), (0, 1))),
    "linalg.batch_matmul_transpose_a": ("linalg.batch_matmul", ((0, 3, 1), (0, 3, 2), (0, 1, 2))),
    "linalg.batch_matmul_transpose_b": ("linalg.batch_matmul", ((0, 1, 3), (0, 2, 3), (0, 1, 2))),
}
"""Each retired op: the op it is now, and the loop dims of its (lhs, rhs, acc) indexing maps
(matmul: d0 = M, d1 = N, d2 = K; batch_matmul: d0 = batch, d1 = M, d2 = N, d3 = K). So
``matmul_transpose_a`` is ``C[m, n] += A[k, m] * B[k, n]`` and ``matmul_transpose_b`` is
``C[m, n] += A[m, k] * B[n, k]``, as upstream's OpDSL defined them."""

_MAY_NEED = re.compile(r"linalg\.(?:batch_)?matmul_transpose_[ab]\b")


def respell(name: str) -> tuple[str, ArrayAttr]:
    """The op a retired ``name`` is now, and its ``indexing_maps``."""
    new, dims = RETIRED_OPS[name]
    n = 1 + max(max(d) for d in dims)
    return new, ArrayAttr(tuple(AffineMapAttr(n, 0, tuple(("d", d) for d in ds)) for ds in dims))


def retired_note(found: list[tuple[str, Loc]]) -> str:
    """The one note of a program that used retired ops (``found``: each one's name and location, in
    order), at the first one: ``f.mlir:25:15: note: linalg.matmul_transpose_b (retired upstream) read as
    linalg.matmul with indexing_maps``."""
    names = list(dict.fromkeys(name for name, _ in found))
    now = list(dict.fromkeys(RETIRED_OPS[name][0] for name in names))
    return f"{found[0][1]}: note: {', '.join(names)} (retired upstream) read as {' / '.join(now)} with indexing_maps"


def may_need_respelling(text: str) -> bool:
    """Whether MLIR ``text`` may be a program IREE cannot read as written (a cheap look at the text:
    a retired op's name, or ``dense_resource`` with no resource section); see ``iree_input_text``."""
    return bool(_MAY_NEED.search(text)) or ("dense_resource<" in text and "dialect_resources" not in text)


def _blobless(module: Module) -> dict[str, DenseAttr]:
    """The ``dense_resource``s of ``module`` whose blob the file did not hold (the reader filled them),
    by resource key, each with the first attribute naming it."""
    found: dict[str, DenseAttr] = {}
    for op in module.walk():
        attr = op.attributes.get("value") or op.attributes.get("initial_value")  # what the printer writes blobs of
        if isinstance(attr, DenseAttr) and attr.form == "resource":
            key = attr.resource_key or ""
            if key not in module.resources:
                found.setdefault(key, attr)
    return found


def iree_input_text(module: Module) -> str | None:
    """The program as read here, printed for IREE, when IREE cannot read the file as written: it held
    retired ops (``module.respelled``: printed as what they are now) or ``dense_resource``s without a
    blob (IREE: "resource data missing"; given the deterministic fill the reader put in their place, the
    values our evaluator uses, with a 4-byte alignment header of the element size). None when IREE reads
    the file as written, which it is then given, as it is."""
    filled: dict[str, HexData] = {}
    for key, attr in _blobless(module).items():
        align = element_nbytes(attr.type.element).to_bytes(4, "little")
        filled[key] = HexData.of_bytes(align + element_bytes(attr.array, attr.type))
    if not module.respelled and not filled:
        return None
    return print_mlir(dataclasses.replace(module, resources={**module.resources, **filled}))


def iree_input_shown(module: Module) -> str | None:
    """How a command line shows ``iree_input_text(module)`` given to IREE (on its stdin, ``-``), saying
    what differs from the file: ``- (the input as read: linalg.matmul_transpose_b respelled as
    linalg.matmul, elided blob __auto.constant_16_8_torch.float32 filled)``. None when IREE is given
    the file as written."""
    parts = [f"{name} respelled as {RETIRED_OPS[name][0]}" for name in dict.fromkeys(module.respelled)]
    if blobs := list(_blobless(module)):
        if len(blobs) > 3:
            parts.append(f"{len(blobs)} elided blobs filled")
        else:
            parts.append(f"elided blob{'s' if len(blobs) > 1 else ''} {', '.join(blobs)} filled")
    return f"- (the input as read: {', '.join(parts)})" if parts else None
