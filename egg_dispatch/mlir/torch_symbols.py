"""The size symbols a PyTorch export names (``torch.symbolic_int``), as aliases of argument sizes.

``aot.export(..., import_symbolic_shape_expressions=True)`` writes, in torch dialect::

    %0 = torch.symbolic_int "s6" {min_val = 1, max_val = 16} : !torch.int
    torch.bind_symbolic_shape %arg0, [%0, %2], affine_map<()[s0, s1] -> (s0, s1 * 8, 32)> : ...

IREE's input phase keeps only ``util.assume.int`` ranges of them, so the names are read here from the
torch text: a dim of a function argument bound to exactly one symbol (``s0`` above: dim 0 of argument
0) makes that symbol's name (``s6``) an alias of ``arg0.d0`` for ``--assume``. A dim bound to an
expression (``s1 * 8``) has no alias; it is named by argument and position.
"""

from __future__ import annotations

import re
from pathlib import Path

from egg_dispatch.mlir.ir import Module
from egg_dispatch.mlir.symbolic import arg_symbol

__all__ = ["torch_aliases", "torch_aliases_of_text"]

_SYMBOLIC = re.compile(r'(%[A-Za-z0-9_$.\-]+)\s*=\s*torch\.symbolic_int\s+"([^"]+)"')
_BIND = re.compile(
    r"torch\.bind_symbolic_shape\s+%arg([0-9]+)\s*,\s*\[([^\]]*)\]\s*,\s*affine_map<\(\)\[([^\]]*)\]\s*->\s*\(([^)]*)\)>"
)


def torch_aliases_of_text(text: str) -> dict[str, str]:
    """Torch symbol name -> argument size name (``arg0.d0``), from torch-dialect text."""
    if "torch.bind_symbolic_shape" not in text:
        return {}
    values = {m.group(1): m.group(2) for m in _SYMBOLIC.finditer(text)}
    out: dict[str, str] = {}
    for m in _BIND.finditer(text):
        arg = int(m.group(1))
        operands = [v.strip() for v in m.group(2).split(",") if v.strip()]
        syms = [s.strip() for s in m.group(3).split(",") if s.strip()]
        bound = dict(zip(syms, operands, strict=False))
        for d, expr in enumerate(e.strip() for e in m.group(4).split(",")):
            if expr in bound and bound[expr] in values:
                out.setdefault(values[bound[expr]], arg_symbol(arg, d))
    return out


def torch_aliases(source: object) -> dict[str, str]:
    """``torch_aliases_of_text`` of a source ``explore`` takes (a path, MLIR text; a parsed module has
    none left: its torch symbols are not ops we keep)."""
    if isinstance(source, Module):
        return {}
    if isinstance(source, Path) or (isinstance(source, str) and "\n" not in source and source.endswith(".mlir")):
        path = Path(source)
        if not path.is_file():
            return {}
        chunks = []
        with open(path, encoding="utf-8", errors="replace") as f:
            for line in f:
                if line.startswith("{-#"):
                    break  # the resource blobs: no symbols there
                chunks.append(line)
        return torch_aliases_of_text("".join(chunks))
    if isinstance(source, str):
        return torch_aliases_of_text(source)
    return {}
