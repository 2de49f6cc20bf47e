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
    (?:\s+|//[^\n]*)*+  # whitespace and comments before the token (possessive: never given back)
    (?:
      (?P<ident>[A-Za-z_][A-Za-z0-9_$.]*)
    | (?P<punct>::|[()\[\]}<>,:=?*+|])
    | (?P<value>%[A-Za-z0-9_$.\-]+(?:\#[0-9]+)?)
    | (?P<float>-?(?:[0-9]+\.[0-9]*(?:[eE][+-]?[0-9]+)?|[0-9]+[eE][+-]?[0-9]+))
    | (?P<int>-?(?:0x[0-9a-fA-F]+|[0-9]+))
    | (?P<fileres>\{-\#|\#-\})
    | (?P<punct2>->|[{\-])
    | (?P<symbol>@(?:[A-Za-z0-9_$.\-]+|"(?:[^"\\]|\\.)*"))
    | (?P<label>\^[A-Za-z0-9_$.\-]+)
    | (?P<hash>\#[A-Za-z_][A-Za-z0-9_$.\-]*)
    | (?P<bang>![A-Za-z_][A-Za-z0-9_$.\-]*)
    | (?P<string>")
    | (?P<eof>\Z)
    )
    """,
    re.VERBOSE,
)
"""One token after the space before it, by its kind's group. The most frequent kinds come first (a
regex alternation tries its branches in order); only the order of branches that can start with the
same character matters to what is matched: ``{-#`` before ``{``, numbers before ``-`` (``punct2``:
the punctuation that shares a first character with them; ``fileres`` is punctuation too). A string
is matched by its opening quote only: ``Lexer._string_end`` finds its end."""
_SKIP = re.compile(r"(?:\s+|//[^\n]*)+")
_BRACKET = re.compile(r'"[^"\\]*(?:\\[\s\S][^"\\]*)*"?|->|[<>()\[\]{}]')
"""What ``Lexer.balanced`` looks at: a string (to skip; unterminated: to the end), the ``->`` arrow,
a bracket."""
_CLOSER = {"<": ">", "(": ")", "[": "]", "{": "}"}
_CLOSERS = frozenset(_CLOSER.values())
_new_token = tuple.__new__
"""``Token``'s constructor without ``NamedTuple``'s Python-level ``__new__`` (the reader makes one per token)."""


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
        """The next token, without consuming it (``pos`` moves past the space before it)."""
        tok = self._peeked
        if tok is not None:
            return tok
        text = self.text
        m = _TOKEN.match(text, self.pos)
        if m is None:
            raise self._bad_character()
        kind = m.lastgroup or ""  # never empty: every branch of _TOKEN is a named group
        if kind == "string":
            start = self.pos = m.end() - 1
            tok = _new_token(Token, ("string", text[start : self._string_end(start)], start))
        elif kind == "eof":
            self.pos = m.end()
            tok = self._peeked = _new_token(Token, ("eof", "", len(text)))
            return tok
        else:
            start, end = m.span(kind)
            if kind == "punct2" or kind == "fileres":
                kind = "punct"
            tok = _new_token(Token, (kind, text[start:end], start))
        self.pos = start
        self._peeked = tok
        return tok

    def _bad_character(self) -> MLIRSyntaxError:
        self.skip_space()
        return self.error(f"unexpected character {self.text[self.pos]!r}", self.pos)

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
        tok = self._peeked
        if tok is None:
            tok = self.peek()
        self._peeked = None
        self.pos = tok.pos + len(tok.text)
        return tok

    def at(self, text: str) -> bool:
        tok = self._peeked
        if tok is None:
            tok = self.peek()
        return tok.text == text and (tok.kind == "punct" or tok.kind == "ident")

    def accept(self, text: str) -> bool:
        tok = self._peeked
        if tok is None:
            tok = self.peek()
        if tok.text == text and (tok.kind == "punct" or tok.kind == "ident"):
            self._peeked = None
            self.pos = tok.pos + len(text)
            return True
        return False

    def expect(self, text: str, what: str | None = None) -> Token:
        tok = self._peeked
        if tok is None:
            tok = self.peek()
        if self.accept(text):
            return tok
        raise self.error(f"expected '{text}'{' ' + what if what else ''}, found {describe(tok)}")

    def expect_kind(self, kind: str, what: str) -> Token:
        tok = self._peeked
        if tok is None:
            tok = self.peek()
        if tok.kind != kind:
            raise self.error(f"expected {what}, found {describe(tok)}")
        self._peeked = None
        self.pos = tok.pos + len(tok.text)
        return tok

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
        stack: list[str] = []
        for m in _BRACKET.finditer(self.text, open_pos):
            c = m.group()
            closer = _CLOSER.get(c)
            if closer is not None:
                stack.append(closer)
            elif c in _CLOSERS:
                i = m.start()
                if not stack or stack[-1] != c:
                    raise self.error(f"unbalanced '{c}'", i)
                stack.pop()
                if not stack:
                    return i + 1
        raise self.error(f"unterminated '{self.text[open_pos]}' (reached the end of the file)", open_pos)


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
