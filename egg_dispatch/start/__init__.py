"""IREE's data-tiling start state: what DispatchCreation has built when its data-tiling passes begin.

``initial_plan`` forms dispatch regions (FormDispatchRegions), clones cheap producers into them
(CloneProducersIntoDispatchRegions, ``clone.py``) and sets encodings on every contraction (SetEncoding),
so that the e-graph starts from the program IREE's own greedy passes would see.
"""

from egg_dispatch.start.initial_plan import initial_plan

__all__ = ["initial_plan"]
