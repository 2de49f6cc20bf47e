"""A plan in IREE's post-dispatch-creation form, which ``iree-compile --compile-from=dispatch-creation`` takes.

``module`` converts regions to ``flow.dispatch.workgroups`` (``workgroups``) on the target's device
(``device``), with the rewrites IREE needs (``rewrite``) built by ``builder``.
"""

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from egg_dispatch.emit.iree.module import emit_iree, to_iree_module

__all__ = ["emit_iree", "to_iree_module"]


def __getattr__(name: str) -> Any:
    """The exports, loaded when first used (``device`` is read before the e-graph's modules load:
    ``cli.early``)."""
    if name in __all__:
        from egg_dispatch.emit.iree import module

        return getattr(module, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
