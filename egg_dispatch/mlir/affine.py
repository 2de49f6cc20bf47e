"""``affine_map<(d0, d1)[s0] -> (...)>`` attributes: their parsing, and the value of one of their
expressions (``affine_value``) in whatever algebra the caller computes in."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence

from egg_dispatch.mlir.ir import AffineMapAttr
from egg_dispatch.mlir.lexer import describe, int_value
from egg_dispatch.mlir.parser_base import ParserBase

__all__ = ["AffineParser", "affine_value"]

_MUL_OPS = ("*", "floordiv", "ceildiv", "mod")


class AffineParser(ParserBase):
    """Mixin: affine maps. Expressions are trees (see ``AffineMapAttr``); their depth is bounded by
    ``MAX_NESTING`` so a long chain cannot overflow the stack of whoever walks them later."""

    def parse_affine_map(self) -> AffineMapAttr:
        lex = self.lex
        lex.expect("<")
        dims = self._affine_names("(", ")")
        syms = self._affine_names("[", "]") if lex.at("[") else []
        lex.expect("->", "in an affine map")
        names = {n: ("d", i) for i, n in enumerate(dims)} | {n: ("s", i) for i, n in enumerate(syms)}
        lex.expect("(")
        results: list[tuple] = []
        while not lex.at(")"):
            results.append(self._affine_expr(names))
            if not lex.accept(","):
                break
        lex.expect(")", "to close the affine map results")
        lex.expect(">", "to close the affine map")
        return AffineMapAttr(len(dims), len(syms), tuple(results))

    def _affine_names(self, open_: str, close: str) -> list[str]:
        lex = self.lex
        lex.expect(open_)
        names: list[str] = []
        while not lex.at(close):
            tok = lex.expect_kind("ident", "an affine dimension or symbol name")
            if tok.text in names:
                raise lex.error(f"duplicate affine name '{tok.text}'", tok.pos)
            names.append(tok.text)
            if not lex.accept(","):
                break
        lex.expect(close)
        return names

    def _affine_expr(self, names: dict[str, tuple]) -> tuple:
        lex = self.lex
        start = lex.peek().pos
        lhs = self._affine_term(names)
        levels = 0
        try:
            while lex.at("+") or lex.at("-"):
                op = lex.next().text
                lex.enter("affine expressions", start)
                levels += 1
                lhs = (op, lhs, self._affine_term(names))
        finally:
            lex.depth -= levels
        return lhs

    def _affine_term(self, names: dict[str, tuple]) -> tuple:
        lex = self.lex
        start = lex.peek().pos
        lhs = self._affine_atom(names)
        levels = 0
        try:
            while any(lex.at(op) for op in _MUL_OPS):
                op = lex.next().text
                lex.enter("affine expressions", start)
                levels += 1
                lhs = (op, lhs, self._affine_atom(names))
        finally:
            lex.depth -= levels
        return lhs

    def _affine_atom(self, names: dict[str, tuple]) -> tuple:
        lex = self.lex
        tok = lex.next()
        if tok.kind == "int":
            return ("c", int_value(lex, tok))
        if tok.kind == "ident" and tok.text in names:
            return names[tok.text]
        if tok.text in ("(", "-"):
            lex.enter("affine expressions", tok.pos)
            try:
                if tok.text == "-":
                    return ("*", ("c", -1), self._affine_atom(names))
                e = self._affine_expr(names)
                lex.expect(")")
                return e
            finally:
                lex.leave()
        raise lex.error(f"expected an affine expression, found {describe(tok)}", tok.pos)


def affine_value[V](
    expr: tuple,
    dims: Sequence[V],
    symbols: Sequence[V],
    const: Callable[[int], V],
    ops: Mapping[str, Callable[[V, V], V]],
) -> V:
    """The value of one result of an ``AffineMapAttr`` with its dims and symbols bound: ``ops`` gives
    ``+ - * floordiv ceildiv mod`` in the caller's algebra (sizes as ``Dim``, run-time ints)."""
    kind = expr[0]
    if kind == "d":
        return dims[expr[1]]
    if kind == "s":
        return symbols[expr[1]]
    if kind == "c":
        return const(expr[1])
    lhs = affine_value(expr[1], dims, symbols, const, ops)
    return ops[kind](lhs, affine_value(expr[2], dims, symbols, const, ops))
