"""Plans of deep programs (hundreds of layers) are walked recursively: raise Python's limit once.

Python-to-Python calls do not use the C stack on 3.11+, so a high limit is safe for these walks;
recursion through generator expressions (which does) is avoided in them.
"""

from __future__ import annotations

import sys

__all__ = ["RECURSION_LIMIT", "allow_deep_recursion"]

RECURSION_LIMIT = 200_000


def allow_deep_recursion() -> None:
    if sys.getrecursionlimit() < RECURSION_LIMIT:
        sys.setrecursionlimit(RECURSION_LIMIT)
