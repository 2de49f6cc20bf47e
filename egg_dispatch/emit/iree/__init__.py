"""A plan in IREE's post-dispatch-creation form, which ``iree-compile --compile-from=dispatch-creation`` takes.

``module`` converts regions to ``flow.dispatch.workgroups`` (``workgroups``) on the target's device
(``device``), with the rewrites IREE needs (``rewrite``) built by ``builder``.
"""

from egg_dispatch.emit.iree.module import emit_iree, to_iree_module

__all__ = ["emit_iree", "to_iree_module"]
