"""Plans back to MLIR: ``flow.dispatch.region`` form (``emitter``), IREE's post-dispatch-creation form (``iree``).

``choice`` picks the encoding-level or materialized spelling of a plan, ``clone`` copies regions with
renaming, ``signature`` describes a plan in one line.
"""

from egg_dispatch.emit.choice import normalize_choice
from egg_dispatch.emit.emitter import Emitter
from egg_dispatch.emit.signature import plan_signature

__all__ = ["Emitter", "normalize_choice", "plan_signature"]
