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

__all__ = ["FORMS", "PAST_GLOBAL_OPTIMIZATION", "input_form"]

FORMS = ("torch", "input", "linalg", "global-optimization", "dispatch-creation")
PAST_GLOBAL_OPTIMIZATION = frozenset({"global-optimization", "dispatch-creation"})

_TORCH_MARKERS = ("!torch.vtensor", "!torch.tensor", "torch.aten.", "torch_c.from_builtin_tensor")
_PLANNED_MARKERS = ("flow.dispatch.region", "flow.dispatch.workgroups", "iree_encoding.set_encoding",
                    "flow.tensor.encode", "#iree_encoding.encoding<")  # fmt: skip
_DEVICE_MARKERS = ("#hal.device.target<", "stream.affinity.default")


def input_form(text: str) -> str:
    """One of ``FORMS`` for MLIR ``text``, read with ``str.find`` before the ``{-# dialect_resources #-}``
    section (blobs are most of a model's file; nothing is copied)."""
    end = text.find("{-#")
    end = len(text) if end < 0 else end

    def has(markers: tuple[str, ...]) -> bool:
        return any(text.find(m, 0, end) >= 0 for m in markers)

    if has(_TORCH_MARKERS):
        return "torch"
    if has(_PLANNED_MARKERS):
        return "dispatch-creation"
    if has(_DEVICE_MARKERS):
        return "global-optimization"
    if has(("!hal.buffer_view", "util.func", "util.global")):
        return "input"
    return "linalg"
