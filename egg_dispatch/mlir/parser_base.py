"""What the reader's mixins share: ``Parser``'s state and the methods one mixin calls on another.

``mlir.parser.Parser`` is assembled from mixins (``AttrParser``, ``OpSyntax``, ``ResourceParser`` and
theirs), each of which calls methods that another one, or ``Parser`` itself, defines. They all derive
from ``ParserBase``, which declares that state and, for the type checker only, those methods: each is
defined once elsewhere, and mypy checks the definition against the declaration here. At run time the
class is empty.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from egg_dispatch.mlir.ir import Attr, DenseAttr, DictAttr, Loc, Operation, Region, Type, Value
    from egg_dispatch.mlir.lexer import Lexer

__all__ = ["ParserBase"]


class ParserBase:
    lex: Lexer
    attr_aliases: dict[str, Attr]
    attr_alias_types: dict[str, Type]
    type_aliases: dict[str, Type]
    pending_resources: list[tuple[DenseAttr, Loc]]
    warnings: list[str]
    retired: list[tuple[str, Loc]]
    unpriced: dict[str, Loc]

    if TYPE_CHECKING:
        # mlir.parser.Parser
        def lookup(self, text: str, pos: int) -> Value: ...
        def operand(self) -> Value: ...
        def operand_list(self, close: str | None = None) -> list[Value]: ...
        def check_types(self, values: list[Value], types: list[Type], pos: int) -> None: ...
        def type_str(self, t: Type) -> str: ...
        def make_op(
            self,
            name: str,
            operands: list[Value],
            result_types: list[Type],
            *,
            attributes: dict[str, Attr] | None = None,
            regions: list[Region] | None = None,
        ) -> Operation: ...
        def parse_region(self, args: list[tuple[str, Type, int]] | None = None, isolated: bool = False) -> Region: ...

        # mlir.attributes.AttrParser
        def parse_type(self) -> Type: ...
        def parse_dims(self, typ: Type, what: str = "the type") -> list[Value]: ...
        def parse_paren_types(self) -> list[Type]: ...
        def parse_result_types(self) -> list[Type]: ...
        def parse_type_list(self) -> list[Type]: ...
        def parse_attribute(self, expected: Type | None = None) -> Attr: ...
        def parse_dict(self) -> DictAttr: ...
        def inline_aliases(self, text: str, pos: int) -> str: ...

        # mlir.syntax.OpSyntax
        def typed_operands(self, start: int) -> tuple[list[Value], list[Type]]: ...
        def opt_attr_dict(self, attrs: dict[str, Attr]) -> None: ...
        def static_list(self, close: str = "]") -> tuple[list[int], list[Value]]: ...
