"""egg_dispatch: explore IREE data-tiling dispatch plans with an egglog e-graph.

    import egg_dispatch
    result = egg_dispatch.explore("model.mlir", target="x86_64-avx512", pareto=True)
    result.best, result.baseline, result.pareto, result.stats, result.check()

One subpackage per stage; data flows one way through them, in the order of ``STAGES``: a module may
import its own stage and the stages before it, never one after (``tests/test_layout.py`` enforces
it, for every import, at module level or inside a function):

``util`` helpers → ``mlir`` text ⇄ IR → ``target`` profiles and IREE's encoding resolver →
``start`` IREE's data-tiling start state → ``egraph`` terms, import, facts, rules, saturation →
``cost`` the cost model → ``extract`` greedy / exact ILP / exhaustive → ``plan`` the plan graph and
IREE's modelled plan → ``emit`` plans as MLIR (``emit.iree``: IREE's post-dispatch-creation form) →
``evaluate`` NumPy semantics, kernels, checks → ``iree`` the installed IREE tools → ``result`` what
``explore()`` returns and its reports → ``pipeline`` ``explore()`` and IREE's own plan costed →
``measure`` plans compiled and timed → ``cli`` one module per command.

The library never imports ``cli``; this package's ``__init__`` and ``__main__`` sit above all stages.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from egg_dispatch.egraph.rules import FAMILIES, Budget
    from egg_dispatch.mlir.parser import parse_file, parse_mlir
    from egg_dispatch.mlir.printer import print_mlir
    from egg_dispatch.pipeline import explore
    from egg_dispatch.result.exploration import Exploration

__all__ = ["FAMILIES", "STAGES", "Budget", "Exploration", "explore", "parse_file", "parse_mlir", "print_mlir"]

__version__ = "0.1.0"

STAGES: tuple[str, ...] = (
    "util",
    "mlir",
    "target",
    "start",
    "egraph",
    "cost",
    "extract",
    "plan",
    "emit",
    "evaluate",
    "iree",
    "result",
    "pipeline",
    "measure",
    "cli",
)
"""The stages in import order (subpackages, and the ``pipeline`` module); see the docstring above."""

_EXPORTS = {
    "FAMILIES": "egg_dispatch.egraph.rules",
    "Budget": "egg_dispatch.egraph.rules",
    "parse_file": "egg_dispatch.mlir.parser",
    "parse_mlir": "egg_dispatch.mlir.parser",
    "print_mlir": "egg_dispatch.mlir.printer",
    "explore": "egg_dispatch.pipeline",
    "Exploration": "egg_dispatch.result.exploration",
}


def __getattr__(name: str) -> Any:
    """The exports, loaded when first used: the command line starts IREE before the e-graph's modules
    load (``cli.early``), and ``import egg_dispatch.cli`` does not load them."""
    if name in _EXPORTS:
        return getattr(importlib.import_module(_EXPORTS[name]), name)
    raise AttributeError(f"module 'egg_dispatch' has no attribute {name!r}")
