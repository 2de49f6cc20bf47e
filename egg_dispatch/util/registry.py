"""Handlers by op name, filled by a decorator: the one table pattern every stage that treats ops one
name at a time uses (the evaluator, the importer, the shape and index-range walkers, the modelled
baseline), instead of ``if name == ...`` chains."""

from __future__ import annotations

from collections.abc import Callable

__all__ = ["OpTable"]


class OpTable[H: Callable[..., object]](dict[str, H]):
    """Op name -> handler. ``@table.handles("linalg.fill", ...)`` registers a function for those names;
    with ``unique`` a name registered twice is an error (two handlers for one op)."""

    def __init__(self, what: str, *, unique: bool = False):
        super().__init__()
        self.what = what
        self.unique = unique

    def handles(self, *names: str) -> Callable[[H], H]:
        """Decorator: register the decorated function as the handler of ``names``."""

        def register(fn: H) -> H:
            for n in names:
                if self.unique and n in self:
                    raise ValueError(f"two {self.what} for {n}")
                self[n] = fn
            return fn

        return register
