"""Where in IREE's pipeline an input stands: what a user brings, told apart from the text alone.

Users bring programs in several forms, and each needs different work before IREE's DispatchCreation
(where the data-tiling decisions start) could see it:

* ``torch``: torch-dialect MLIR as ``iree.turbine.aot.export(...).save_mlir()`` or torch-mlir's FX
  importer writes it (``!torch.vtensor``, ``torch.aten.*``); IREE's input phase lowers it;
* ``input``: IREE's input phase output (``iree-compile --compile-to=input``): ``util.func`` with the
  buffer-view ABI (sync or async), ``util.global``s, named parameters, no device yet;
* ``linalg``: plain ``func.func`` on tensors (hand-written programs, tests);
* ``global-optimization``: past IREE's global optimization (the module names its device:
  ``stream.affinity.default`` / ``#hal.device.target``), which is DispatchCreation's own input;
* ``dispatch-creation``: already past dispatch creation or data tiling (dispatch regions or
  workgroups, encodings present): IREE's own plan, or one of ours.

The first three are "before global optimization": running IREE's global optimization on them is what
makes our plan and IREE's start from the same IR (transposes folded into contractions, const-expr
subgraphs evaluated, unit dimensions folded).
"""

from __future__ import annotations

import os

__all__ = ["FORMS", "PAST_GLOBAL_OPTIMIZATION", "file_form", "input_form"]

FORMS = ("torch", "input", "linalg", "global-optimization", "dispatch-creation")
PAST_GLOBAL_OPTIMIZATION = frozenset({"global-optimization", "dispatch-creation"})

_TORCH_MARKERS = ("!torch.vtensor", "!torch.tensor", "torch.aten.", "torch_c.from_builtin_tensor")
_PLANNED_MARKERS = ("flow.dispatch.region", "flow.dispatch.workgroups", "iree_encoding.set_encoding",
                    "flow.tensor.encode", "#iree_encoding.encoding<")  # fmt: skip
_DEVICE_MARKERS = ("#hal.device.target<", "stream.affinity.default")


_INPUT_MARKERS = ("!hal.buffer_view", "util.func", "util.global")
_ALL_MARKERS = (*_TORCH_MARKERS, *_PLANNED_MARKERS, *_DEVICE_MARKERS, *_INPUT_MARKERS)
_CHUNK = 1 << 23


def _form(found: set[str]) -> str:
    if found & set(_TORCH_MARKERS):
        return "torch"
    if found & set(_PLANNED_MARKERS):
        return "dispatch-creation"
    if found & set(_DEVICE_MARKERS):
        return "global-optimization"
    if found & set(_INPUT_MARKERS):
        return "input"
    return "linalg"


def input_form(text: str) -> str:
    """One of ``FORMS`` for MLIR ``text``, read with ``str.find`` before the ``{-# dialect_resources #-}``
    section (blobs are most of a model's file; nothing is copied)."""
    end = text.find("{-#")
    end = len(text) if end < 0 else end
    return _form({m for m in _ALL_MARKERS if text.find(m, 0, end) >= 0})


def file_form(path: str | os.PathLike[str]) -> str:
    """``input_form`` of a file, read a chunk at a time up to its resources: a model's file is never
    held in memory to tell its form (torch exports stop at the first torch type)."""
    found: set[str] = set()
    tail = ""
    keep = max(map(len, _ALL_MARKERS))
    with open(path, encoding="utf-8", errors="replace") as f:
        while chunk := f.read(_CHUNK):
            window = tail + chunk
            end = window.find("{-#")
            scan = window if end < 0 else window[:end]
            found |= {m for m in _ALL_MARKERS if m in scan}
            if end >= 0 or found & set(_TORCH_MARKERS):
                break
            tail = window[-keep:]
    return _form(found)
