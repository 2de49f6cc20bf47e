"""Tokens for the MLIR reader, with exact positions for ``file:line:col`` errors.

The lexer is pull-based with save/restore, because MLIR's grammar is context dependent (``16x8xf32``
is a shape inside ``tensor<...>`` and a plain identifier elsewhere); the parser asks for a regex
match at the current position in those places.
"""

from __future__ import annotations

import bisect
import re
from typing import NamedTuple

from egg_dispatch.mlir.ir import Loc

__all__ = ["MAX_NESTING", "Lexer", "MLIRSyntaxError", "Token", "int_value"]

MAX_NESTING = 128
"""Deepest nesting of regions, attributes, types and affine expressions the reader accepts; deeper
input is an error rather than a ``RecursionError`` (every level costs a few Python frames)."""


class MLIRSyntaxError(Exception):
    """Bad input: carries the position so the CLI prints ``file:line:col: error: message``."""

    def __init__(self, loc: Loc, message: str) -> None:
        super().__init__(f"{loc}: error: {message}")
        self.loc = loc
        self.message = message


class Token(NamedTuple):
    """One token (a named tuple: a model's text has millions, and a frozen dataclass is slow to make)."""

    kind: str
    """``value`` (%x), ``symbol`` (@x), ``label`` (^bb0), ``hash`` (#x), ``bang`` (!x), ``string``,
    ``int``, ``float``, ``ident``, ``punct`` or ``eof``."""
    text: str
    pos: int


_TOKEN = re.compile(
    r"""
    (?P<value>%[A-Za-z0-9_$.\-]+(?:\#[0-9]+)?)
  | (?P<symbol>@(?:[A-Za-z0-9_$.\-]+|"(?:[^"\\]|\\.)*"))
  | (?P<label>\^[A-Za-z0-9_$.\-]+)
  | (?P<fileres>\{-\#|\#-\})
  | (?P<hash>\#[A-Za-z_][A-Za-z0-9_$.\-]*)
  | (?P<bang>![A-Za-z_][A-Za-z0-9_$.\-]*)
  | (?P<string>"(?:[^"\\\n]|\\.)*")
  | (?P<float>-?(?:[0-9]+\.[0-9]*(?:[eE][+-]?[0-9]+)?|[0-9]+[eE][+-]?[0-9]+))
  | (?P<int>-?(?:0x[0-9a-fA-F]+|[0-9]+))
  | (?P<ident>[A-Za-z_][A-Za-z0-9_$.]*)
  | (?P<punct>->|::|[()\[\]{}<>,:=?*+\-|])
    """,
    re.VERBOSE,
)
_SKIP = re.compile(r"(?:\s+|//[^\n]*)+")


class Lexer:
    def __init__(self, text: str, file: str = "<input>") -> None:
        self.text = text
        self.file = file
        self.pos = 0
        self._line_starts = [0] + [m.end() for m in re.finditer("\n", text)]
        self._peeked: Token | None = None
        self.depth = 0
        """Current nesting depth (see ``enter``)."""

    # -- positions -----------------------------------------------------------------------------
    def loc(self, pos: int | None = None) -> Loc:
        if pos is None:
            pos = self.peek().pos
        line = bisect.bisect_right(self._line_starts, pos)
        return Loc(self.file, line, pos - self._line_starts[line - 1] + 1)

    def error(self, message: str, pos: int | None = None) -> MLIRSyntaxError:
        return MLIRSyntaxError(self.loc(pos), message)

    def pos_of(self, loc: Loc) -> int:
        """The offset of a ``Loc`` made by this lexer."""
        return self._line_starts[loc.line - 1] + loc.col - 1

    def enter(self, what: str, pos: int | None = None) -> None:
        """Go one nesting level deeper; pair with ``leave``. Too deep is an error at ``pos``."""
        if self.depth >= MAX_NESTING:
            raise self.error(f"{what} nested more than {MAX_NESTING} levels deep", pos)
        self.depth += 1

    def leave(self) -> None:
        self.depth -= 1

    def save(self) -> int:
        self._peeked = None
        return self.pos

    def restore(self, pos: int) -> None:
        self.pos = pos
        self._peeked = None

    # -- tokens ----------------------------------------------------------------------------------
    def skip_space(self) -> None:
        m = _SKIP.match(self.text, self.pos)
        if m:
            self.pos = m.end()

    def peek(self) -> Token:
        if self._peeked is not None:
            return self._peeked
        m = _SKIP.match(self.text, self.pos)  # skip_space, inlined: peek is the reader's hottest call
        if m:
            self.pos = m.end()
        if self.pos >= len(self.text):
            tok = Token("eof", "", len(self.text))
        elif self.text[self.pos] == '"':
            tok = Token("string", self.text[self.pos : self._string_end(self.pos)], self.pos)
        else:
            m = _TOKEN.match(self.text, self.pos)
            if m is None:
                ch = self.text[self.pos]
                if ch == '"':
                    raise self.error("unterminated string literal (a string must close on its own line)", self.pos)
                raise self.error(f"unexpected character {ch!r}", self.pos)
            kind = m.lastgroup or "punct"
            if kind == "fileres":
                kind = "punct"
            tok = Token(kind, m.group(), self.pos)
        self._peeked = tok
        return tok

    def _string_end(self, start: int) -> int:
        """End of the string literal at ``start`` (past its closing quote). Scans with ``str.find``
        from quote to quote: resource blobs are single strings of hundreds of megabytes, which a
        regex alternation walks one character at a time (and with memory per character)."""
        text, i = self.text, start + 1
        while True:
            close = text.find('"', i)
            newline = text.find("\n", i, len(text) if close < 0 else close)
            if close < 0 or newline >= 0:
                raise self.error("unterminated string literal (a string must close on its own line)", start)
            escape = text.find("\\", i, close)
            if escape < 0:
                return close + 1
            i = escape + 2  # skip the escaped character (it may be a quote)

    def next(self) -> Token:
        tok = self.peek()
        self._peeked = None
        self.pos = tok.pos + len(tok.text)
        return tok

    def at(self, text: str) -> bool:
        tok = self._peeked
        if tok is None:
            tok = self.peek()
        return tok.text == text and tok.kind in ("punct", "ident")

    def accept(self, text: str) -> bool:
        if self.at(text):
            self.next()
            return True
        return False

    def expect(self, text: str, what: str | None = None) -> Token:
        tok = self.peek()
        if not self.at(text):
            raise self.error(f"expected '{text}'{' ' + what if what else ''}, found {describe(tok)}")
        return self.next()

    def expect_kind(self, kind: str, what: str) -> Token:
        tok = self.peek()
        if tok.kind != kind:
            raise self.error(f"expected {what}, found {describe(tok)}")
        return self.next()

    def match_raw(self, pattern: re.Pattern[str]) -> re.Match[str] | None:
        """Match a regex at the current position (after whitespace); consume it on success."""
        self._peeked = None
        self.skip_space()
        m = pattern.match(self.text, self.pos)
        if m:
            self.pos = m.end()
        return m

    def balanced(self, open_pos: int) -> int:
        """Given the position of an opening ``<``, ``(``, ``[`` or ``{``, return the position just past
        its matching closer, skipping strings and the ``->`` arrow (whose ``>`` closes nothing)."""
        pairs = {"<": ">", "(": ")", "[": "]", "{": "}"}
        stack: list[str] = []
        i, text, n = open_pos, self.text, len(self.text)
        while i < n:
            c = text[i]
            if c == '"':
                j = i + 1
                while j < n and text[j] != '"':
                    j += 2 if text[j] == "\\" else 1
                i = j + 1
                continue
            if c == "-" and i + 1 < n and text[i + 1] == ">":
                i += 2
                continue
            if c in pairs:
                stack.append(pairs[c])
            elif c in ">)]}":
                if not stack or stack[-1] != c:
                    raise self.error(f"unbalanced '{c}'", i)
                stack.pop()
                if not stack:
                    return i + 1
            i += 1
        raise self.error(f"unterminated '{text[open_pos]}' (reached the end of the file)", open_pos)


def int_value(lex: Lexer, tok: Token) -> int:
    """The value of an ``int`` token: decimal (leading zeros allowed, as in MLIR) or ``0x`` hex."""
    text = tok.text
    digits = text.lstrip("-")
    try:
        value = int(digits[2:], 16) if digits[:2] in ("0x", "0X") else int(digits, 10)
    except ValueError:
        raise lex.error(f"expected an integer, found {describe(tok)}", tok.pos) from None
    return -value if text.startswith("-") else value


def describe(tok: Token) -> str:
    if tok.kind == "eof":
        return "end of file"
    text = tok.text if len(tok.text) <= 40 else tok.text[:37] + "..."
    return f"'{text}'"
