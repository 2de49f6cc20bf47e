"""What the report says about a dynamic program's sizes: the dims, the sizes costed, per-size metrics.

``size_lines`` is printed under the report's header, ``sizes_json`` is the JSON report's ``"sizes"``:
each dynamic dimension by the name ``--assume`` takes (``arg0.d1``), the values the cost averages over
and where they come from (``--assume``, ``util.assume.int`` bounds, or the documented default,
``cost.sizes.DEFAULT_DYNAMIC_SIZE``), what the program allows of it (the legality facts hold for all of
that), and the chosen plan's and the baseline's metrics at every size configuration.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from egg_dispatch.evaluate.sizes import label
from egg_dispatch.plan.sized import sizes_of

if TYPE_CHECKING:
    from egg_dispatch.result.exploration import Exploration

__all__ = ["size_lines", "sizes_json"]


def size_lines(e: Exploration) -> list[str]:
    sizes = getattr(e, "sizes", None)
    if sizes is None or not sizes.dynamic:
        return []
    lines = ["  dynamic dims (costed at; --assume NAME=V1,V2 to change):"]
    lines += [f"    {d}" for d in sizes.describe()]
    if sizes.aliases:
        lines.append("    PyTorch's names: " + ", ".join(f"{k} = {v}" for k, v in sorted(sizes.aliases.items())))
    per = sizes_of(e.best.plan)
    base = sizes_of(e.baseline.plan) if e.baseline else []
    if len(per) > 1:
        for i, (env, w, m) in enumerate(per):
            b = f"; baseline {base[i][2].run_seconds * 1e6:.2f} µs" if i < len(base) else ""
            lines.append(
                f"    at {label(env) or 'default'} (weight {w:.3g}): {m.run_seconds * 1e6:.2f} µs, "
                f"{m.memory_bytes} B{b}"
            )
    if per:
        lines.append(
            f"    the dispatch table's bytes and times are at {label(per[0][0])}; totals are the weighted mean"
        )
    return lines


def sizes_json(e: Exploration) -> dict | None:
    sizes = getattr(e, "sizes", None)
    if sizes is None or not sizes.dynamic:
        return None

    def per(c) -> list[dict]:
        return [
            {"sizes": dict(env), "weight": w, "run_seconds": m.run_seconds, "memory_bytes": m.memory_bytes,
             "objective": m.objective}
            for env, w, m in sizes_of(c.plan)
        ]  # fmt: skip

    return {
        "dims": [
            {
                "name": d.name,
                "values": list(d.values),
                "weights": list(d.weights),
                "source": d.source,
                "allowed": d.domain.describe(),
            }
            for d in sizes.dims
        ],
        "aliases": dict(sizes.aliases),
        "configurations": len(sizes.configs),
        "best": per(e.best),
        "baseline": per(e.baseline) if e.baseline else [],
    }
