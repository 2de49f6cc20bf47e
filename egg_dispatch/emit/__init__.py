"""Plans back to MLIR: ``flow.dispatch.region`` form (``emitter``), IREE's post-dispatch-creation form (``iree``).

``choice`` picks the encoding-level or materialized spelling of a plan, ``clone`` copies regions with
renaming, ``signature`` describes a plan in one line.
"""

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from egg_dispatch.emit.choice import normalize_choice
    from egg_dispatch.emit.emitter import Emitter
    from egg_dispatch.emit.signature import plan_signature

__all__ = ["Emitter", "normalize_choice", "plan_signature"]


def __getattr__(name: str) -> Any:
    """The exports, loaded when first used (``emit.iree.device`` is read before the e-graph's modules
    load: ``cli.early``)."""
    from egg_dispatch.emit import choice, emitter, signature

    for module in (choice, emitter, signature):
        if name in __all__ and name in module.__all__:
            return getattr(module, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
