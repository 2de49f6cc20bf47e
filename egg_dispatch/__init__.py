"""egg_dispatch: explore IREE data-tiling dispatch plans with an egglog e-graph.

import egg_dispatch
result = egg_dispatch.explore("model.mlir", target="x86_64-avx512", pareto=True)
result.best, result.baseline, result.pareto, result.stats, result.check()
"""

from __future__ import annotations

from .mlir.parser import parse_file, parse_mlir
from .mlir.printer import print_mlir
from .pipeline import Exploration, explore
from .rules import FAMILIES, Budget

__all__ = ["FAMILIES", "Budget", "Exploration", "explore", "parse_file", "parse_mlir", "print_mlir"]

__version__ = "0.1.0"
