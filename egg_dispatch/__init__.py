"""egg_dispatch: explore IREE data-tiling dispatch plans with an egglog e-graph."""

from __future__ import annotations

__version__ = "0.1.0"
