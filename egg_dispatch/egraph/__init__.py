"""The e-graph: term language, IR -> terms, analysis facts, rule families saturated under a budget.

``terms`` declares the egglog sorts and constructors the rules in ``rules/*.egg`` are written in;
``importer`` turns a function into one ``let`` per SSA value (``import_util``, ``imported``);
``facts`` computes the target-dependent facts (layouts, tile alignment, fused-pack legality);
``rules`` loads the rule families and saturates under a ``Budget``; ``program`` holds the egglog
e-graph; ``data`` reads its serialized form; ``enumerate`` lists every plan it holds (small graphs).
"""

from egg_dispatch.egraph.data import EGraphData, build_term
from egg_dispatch.egraph.enumerate import enumerate_plans
from egg_dispatch.egraph.imported import ImportedProgram
from egg_dispatch.egraph.importer import import_function
from egg_dispatch.egraph.rules import FAMILIES, Budget, SaturationReport, saturate

__all__ = [
    "FAMILIES",
    "Budget",
    "EGraphData",
    "ImportedProgram",
    "SaturationReport",
    "build_term",
    "enumerate_plans",
    "import_function",
    "saturate",
]
