"""Text ⇄ IR for the MLIR subset egg_dispatch reads and writes."""
