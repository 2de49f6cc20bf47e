"""Fixed-width text tables for reports and benchmarks: one renderer instead of one per command."""

from __future__ import annotations

from collections.abc import Sequence

__all__ = ["table_lines"]


def table_lines(header: Sequence[object], rows: Sequence[Sequence[object]], left: int | None = None) -> list[str]:
    """Header, a dashed rule, then the rows; the first ``left`` columns are left-aligned (all of them
    when ``left`` is None), the rest right-aligned, columns joined by two spaces."""
    cells = [[str(x) for x in row] for row in [header, *rows]]
    n = len(cells[0])
    left = n if left is None else left
    widths = [max(len(r[i]) for r in cells) for i in range(n)]
    fmt = [f"{{:<{w}}}" if i < left else f"{{:>{w}}}" for i, w in enumerate(widths)]
    lines = ["  ".join(f.format(x) for f, x in zip(fmt, r, strict=True)) for r in cells]
    lines.insert(1, "  ".join("-" * w for w in widths))
    return lines
