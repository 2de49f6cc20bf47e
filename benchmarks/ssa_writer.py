"""What the random program and model generators (``random_programs.py``, ``random_models.py``) share:
MLIR type and map spellings and a writer of SSA lines with fresh names."""

from __future__ import annotations

import random
from dataclasses import dataclass

import numpy as np

Dim = int | str
"""A static size, or the SSA name of a dynamic one."""


def tensor_type(shape: list[Dim], et: str) -> str:
    """``tensor<4x?xf32>`` (a dynamic size, named by its SSA value, prints as ``?``)."""
    return "tensor<" + "".join(f"{d if isinstance(d, int) else '?'}x" for d in shape) + f"{et}>"


def affine_map(n: int, results: list[str]) -> str:
    """``affine_map<(d0, ..., d{n-1}) -> (results)>``."""
    dims = ", ".join(f"d{i}" for i in range(n))
    return f"affine_map<({dims}) -> ({', '.join(results)})>"


def float_literal(v: float) -> str:
    return f"{v:e}"


@dataclass
class Value:
    name: str
    shape: list[Dim]
    et: str

    @property
    def type(self) -> str:
        return tensor_type(self.shape, self.et)


class SsaWriter:
    """One function body's lines, a fresh SSA name per value (bodies included), its arguments, and the
    random sources its choices draw from (``r``; ``np`` for constants' values)."""

    def __init__(self, rng: random.Random) -> None:
        self.r = rng
        self.np = np.random.RandomState(rng.randrange(2**31))
        self.lines: list[str] = []
        self.args: list[Value] = []
        self.n = 0

    def fresh(self, prefix: str = "v") -> str:
        self.n += 1
        return f"%{prefix}{self.n}"

    def emit(self, line: str) -> None:
        self.lines.append("  " + line)

    def arg(self, shape: list[Dim], et: str) -> Value:
        v = Value(f"%arg{len(self.args)}", list(shape), et)
        self.args.append(v)
        return v
