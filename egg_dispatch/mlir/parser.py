"""Recursive-descent reader for the MLIR subset of docs/design.md §2.1, written for clear errors.

Every error is an ``MLIRSyntaxError`` carrying ``file:line:col`` and what was expected. Ops with a
known custom syntax are parsed into their structure (``mlir.syntax``); any other op is read
generically -- its results, the SSA values it uses and its result types -- and kept verbatim as an
opaque op, with a warning.
"""

from __future__ import annotations

import gc
import re
from dataclasses import dataclass, field
from pathlib import Path

from egg_dispatch.mlir.attributes import AttrParser, is_scalar_name
from egg_dispatch.mlir.encoding import unpriced_note
from egg_dispatch.mlir.forms import input_form
from egg_dispatch.mlir.ir import (
    Attr,
    Block,
    DenseAttr,
    Loc,
    Module,
    OpaqueType,
    Operation,
    Region,
    ScalarType,
    Type,
    Value,
)
from egg_dispatch.mlir.lexer import MAX_NESTING, Lexer, MLIRSyntaxError, describe, int_value
from egg_dispatch.mlir.literals import symbol_name
from egg_dispatch.mlir.printer import Printer, has_custom_printer
from egg_dispatch.mlir.resources import ELIDED_SEED, ResourceParser
from egg_dispatch.mlir.retired import retired_note
from egg_dispatch.mlir.syntax import OpSyntax
from egg_dispatch.mlir.syntax_iree import UNKNOWN

_BLOCK_ARG = re.compile(r"%([A-Za-z0-9_$.\-]+)\s*:\s*([A-Za-z_][A-Za-z0-9_$.]*)")
"""``%name: word`` (the value and the word each a whole token: what follows is a space, ``:``, ``,`` or ``)``)."""
_PLAIN_BLOCK_ARGS = re.compile(
    r"\s*\(\s*((?:%[A-Za-z0-9_$.\-]+\s*:\s*[A-Za-z_][A-Za-z0-9_$.]*)"
    r"(?:\s*,\s*%[A-Za-z0-9_$.\-]+\s*:\s*[A-Za-z_][A-Za-z0-9_$.]*)*)?\s*\)"
)
"""A block label's argument list, ``(%a: T, ...)``, with one word per type (``_plain_block_args``)."""

__all__ = ["ELIDED_SEED", "MLIRSyntaxError", "parse_bytes", "parse_file", "parse_mlir", "read_text"]


@dataclass
class _Scope:
    values: dict[str, list[Value]] = field(default_factory=dict)
    isolated: bool = False


class Parser(AttrParser, OpSyntax, ResourceParser):
    def __init__(self, text: str, file: str = "<input>") -> None:
        self.lex = Lexer(text, file)
        self.init_reuse()
        self.attr_aliases: dict[str, Attr] = {}
        self.attr_alias_types: dict[str, Type] = {}
        self.type_aliases: dict[str, Type] = {}
        self.pending_resources: list[tuple[DenseAttr, Loc]] = []
        self.retired: list[tuple[str, Loc]] = []
        """Retired named ops read as what they are now (``mlir.retired``), with where each was."""
        self.unpriced: dict[str, Loc] = {}
        """Encodings the cost model does not price, at their first use (``mlir.encoding.unpriced_note``)."""
        self.scopes: list[_Scope] = []
        self.warnings: list[str] = []
        self.use_pos: dict[int, list[int]] = {}
        """Offsets of the uses of each value (by id), so type errors point at the operand."""

    # ------------------------------------------------------------------------------ module level
    def parse_module(self) -> Module:
        lex = self.lex
        module = Module(file=lex.file)
        if lex.peek().kind == "eof":
            raise lex.error("empty input: expected a module or a function", 0)
        self._parse_aliases(module)
        self._literals_on = True
        self.scopes.append(_Scope(isolated=True))
        if lex.at("module"):
            lex.next()
            module.has_module_op = True
            if lex.peek().kind == "symbol":
                module.name = symbol_name(lex, lex.next())
            if lex.accept("attributes"):
                module.attributes = dict(self.parse_dict().items)
            lex.expect("{", "to open the module body")
            while not lex.at("}"):
                if lex.peek().kind == "eof":
                    raise lex.error("expected '}' to close the module (reached the end of the file)")
                module.ops.append(self.parse_op())
            lex.expect("}")
        else:
            while lex.peek().kind != "eof" and not lex.at("{-#"):
                module.ops.append(self.parse_op())
        if lex.at("{-#"):
            module.resources = self.parse_file_resources()
        if lex.peek().kind != "eof":
            raise lex.error(f"expected end of file, found {describe(lex.peek())}")
        self.resolve_resources(module)
        if self.retired:
            module.respelled = [name for name, _ in self.retired]
            self.warnings.append(retired_note(self.retired))
        if self.unpriced:
            self.warnings.append(unpriced_note(self.unpriced))
        module.aliases = {**self.attr_aliases, **self.type_aliases}
        module.warnings = self.warnings
        return module

    def _parse_aliases(self, module: Module) -> None:
        lex = self.lex
        while lex.peek().kind in ("hash", "bang"):
            start = lex.save()
            name = lex.next()
            if not lex.accept("="):
                lex.restore(start)
                return
            if name.text in self.attr_aliases or name.text in self.type_aliases:
                raise lex.error(f"redefinition of alias {name.text}", name.pos)
            if name.kind == "hash":
                value = self.parse_attribute()
                self.attr_aliases[name.text] = value
                if lex.accept(":"):
                    self.attr_alias_types[name.text] = self.parse_type()
            else:
                self.type_aliases[name.text] = self.parse_type()

    # ---------------------------------------------------------------------------------- values
    def push_scope(self, isolated: bool = False) -> None:
        self.scopes.append(_Scope(isolated=isolated))

    def pop_scope(self) -> None:
        self.scopes.pop()

    def define(self, name: str, values: list[Value], pos: int) -> None:
        for scope in reversed(self.scopes):
            if name in scope.values:
                raise self.lex.error(f"redefinition of SSA value %{name}", pos)
            if scope.isolated:
                break
        self.scopes[-1].values[name] = values

    def lookup(self, text: str, pos: int) -> Value:
        name, _, idx = text[1:].partition("#")
        for scope in reversed(self.scopes):
            if name in scope.values:
                group = scope.values[name]
                i = int(idx) if idx else 0
                if i >= len(group):
                    raise self.lex.error(f"%{name} has {len(group)} results, no #{i}", pos)
                return group[i]
            if scope.isolated:
                break
        raise self.lex.error(f"use of undefined SSA value {text}", pos)

    def operand(self) -> Value:
        tok = self.lex.expect_kind("value", "an SSA value")
        value = self.lookup(tok.text, tok.pos)
        self.use_pos.setdefault(id(value), []).append(tok.pos)
        return value

    def operand_list(self, close: str | None = None) -> list[Value]:
        vals: list[Value] = []
        if self.lex.peek().kind != "value":
            return vals
        vals.append(self.operand())
        while self.lex.accept(","):
            vals.append(self.operand())
        return vals

    def check_types(self, values: list[Value], types: list[Type], pos: int) -> None:
        """The types written next to operands must be the operands' own types (a verifier check)."""
        if len(values) != len(types):
            raise self.lex.error(f"{len(values)} operands but {len(types)} types", pos)
        for i, (v, t) in enumerate(zip(values, types, strict=True)):
            if v.type is t:  # the usual case: a type read once and reused (``parse_tensor_type``)
                continue
            if type(v.type) is OpaqueType and v.type == UNKNOWN:
                v.type = t  # an opaque op's result: its uses tell its type
            elif v.type != t and not isinstance(v.type, OpaqueType):
                raise self.lex.error(
                    f"operand %{v.name} has type {self.type_str(v.type)} but the op expects {self.type_str(t)}",
                    self._use_position(values, i, pos),
                )

    def _use_position(self, values: list[Value], i: int, default: int) -> int:
        """Where ``values[i]`` was written: its uses in this op are its latest ones (a value may repeat)."""
        v = values[i]
        n = sum(1 for w in values if w is v)
        k = sum(1 for w in values[:i] if w is v)
        uses = self.use_pos.get(id(v), [])
        return uses[len(uses) - n + k] if len(uses) >= n else default

    def type_str(self, t: Type) -> str:
        return Printer().type(t)

    # ------------------------------------------------------------------------------ operations
    def parse_op(self) -> Operation:
        lex = self.lex
        start = lex.peek().pos
        defs: list[tuple[str, int, int]] = []
        if lex.peek().kind == "value":
            while True:
                tok = lex.expect_kind("value", "a result name")
                if "#" in tok.text:
                    raise lex.error("a result name cannot carry '#N'", tok.pos)
                count = 1
                if lex.accept(":"):
                    count_tok = lex.expect_kind("int", "a result count")
                    count = int_value(lex, count_tok)
                    if not 1 <= count <= 4096:
                        raise lex.error(f"a result count must be between 1 and 4096, not {count}", count_tok.pos)
                defs.append((tok.text[1:], count, tok.pos))
                if not lex.accept(","):
                    break
            lex.expect("=", "after the result names")
        n_results = sum(c for _, c, _ in defs) if defs else 0
        name_tok = lex.next()
        if name_tok.kind == "string":
            op = self.parse_generic_op(name_tok.text[1:-1], start)
        elif name_tok.kind == "ident":
            op = self.parse_custom_op(name_tok.text, start, n_results)
        else:
            raise lex.error(f"expected an operation name, found {describe(name_tok)}", name_tok.pos)
        op.loc = lex.loc(start)
        if len(op.results) != n_results:
            raise lex.error(
                f"'{op.name}' produces {len(op.results)} result(s) but {n_results} name(s) are bound", start
            )
        i = 0
        for name, count, pos in defs:
            group = op.results[i : i + count]
            for j, v in enumerate(group):
                v.name = name if count == 1 else f"{name}#{j}"
            self.define(name, group, pos)
            i += count
        return op

    def make_op(
        self,
        name: str,
        operands: list[Value],
        result_types: list[Type],
        *,
        attributes: dict[str, Attr] | None = None,
        regions: list[Region] | None = None,
    ) -> Operation:
        attrs = attributes if attributes is not None else {}
        op = Operation(name, operands, [], attrs, regions if regions is not None else [])
        op.results = [Value("", t, op, i) for i, t in enumerate(result_types)]
        return op

    def parse_region(self, args: list[tuple[str, Type, int]] | None = None, isolated: bool = False) -> Region:
        """``{ [^bb0(args):] ops }``; ``args`` are entry-block arguments declared by the op itself."""
        lex = self.lex
        open_tok = lex.expect("{", "to open a region")
        lex.enter("regions", open_tok.pos)
        self.push_scope(isolated)
        try:
            region = self._region_body(open_tok.pos, args or [])
        finally:
            self.pop_scope()
            lex.leave()
        return region

    def _region_body(self, open_pos: int, args: list[tuple[str, Type, int]]) -> Region:
        lex = self.lex
        region = Region()
        block = Block()
        region.blocks.append(block)
        for name, typ, pos in args:
            v = Value(name, typ, block, len(block.args))
            block.args.append(v)
            self.define(name, [v], pos)
        first = True
        while not lex.at("}"):
            if lex.peek().kind == "eof":
                opened = lex.loc(open_pos)
                raise lex.error(
                    f"expected '}}' to close the region opened at line {opened.line}, column {opened.col} "
                    "(reached the end of the file)"
                )
            if lex.peek().kind == "label":
                label = lex.next()
                if not (first and not block.ops and not block.args):
                    block = Block()
                    region.blocks.append(block)
                block.label = label.text[1:]
                if self._plain_block_args(block):
                    pass
                elif lex.accept("("):
                    while not lex.at(")"):
                        t = lex.expect_kind("value", "a block argument")
                        lex.expect(":")
                        v = Value(t.text[1:], self.parse_type(), block, len(block.args))
                        block.args.append(v)
                        self.define(v.name, [v], t.pos)
                        if not lex.accept(","):
                            break
                    lex.expect(")")
                lex.expect(":", "after a block label")
            first = False
            block.ops.append(self.parse_op())
        lex.expect("}")
        return region

    def _plain_block_args(self, block: Block) -> bool:
        """``(%a: f32, %b: index)`` after a block label, read at once when every argument has a scalar
        type and nothing else (no comment) is written there; False, having read nothing, otherwise."""
        lex = self.lex
        header = _PLAIN_BLOCK_ARGS.match(lex.text, lex.pos) if lex.depth < MAX_NESTING else None
        if header is None:
            return False
        args = list(_BLOCK_ARG.finditer(lex.text, header.start(1), header.end(1))) if header.group(1) else []
        if not all(is_scalar_name(arg.group(2)) for arg in args):
            return False
        lex.restore(header.end())
        for arg in args:
            v = Value(arg.group(1), ScalarType(arg.group(2)), block, len(block.args))
            block.args.append(v)
            self.define(v.name, [v], arg.start())
        return True

    def parse_generic_op(self, name: str, start: int) -> Operation:
        """MLIR's generic form: ``"d.op"(%a) ({...}) {attrs} : (T) -> (R)``."""
        lex = self.lex
        lex.expect("(")
        operands = self.operand_list()
        lex.expect(")")
        regions: list[Region] = []
        attrs: dict[str, Attr] = {}
        if lex.at("<"):
            lex.next()
            attrs.update(self.parse_dict().items)
            lex.expect(">")
        if lex.accept("("):
            while not lex.at(")"):
                regions.append(self.parse_region())
                if not lex.accept(","):
                    break
            lex.expect(")")
        if lex.at("{"):
            attrs.update(self.parse_dict().items)
        lex.expect(":", "before the generic op's function type")
        ins = self.parse_paren_types()
        self.check_types(operands, ins, start)
        lex.expect("->")
        results = self.parse_result_types()
        op = self.make_op(name, operands, results, attributes=attrs, regions=regions)
        op.generic_form = True
        if has_custom_printer(name):
            # The custom syntax needs structure the generic form spells differently: keep the text.
            after_name = lex.text.index('"', start) + len(name) + 2
            op.opaque_text = self.inline_aliases(lex.text[after_name : lex.pos], after_name).strip()
            op.regions = []
            self.warnings.append(
                f"{lex.loc(start)}: warning: '{name}' in generic form is not modelled; kept as an opaque op "
                "(a barrier for every rule)"
            )
        return op


def parse_mlir(text: str, file: str = "<input>") -> Module:
    """Parse MLIR text into a ``Module``; raises ``MLIRSyntaxError`` with ``file:line:col``."""
    if "\x00" in text:
        i = text.index("\x00")
        raise Lexer(text, file).error("binary data (NUL byte) in the input: expected MLIR text", i)
    parser = Parser(text, file)
    # The reader makes a model's hundreds of thousands of objects and frees almost none while it runs:
    # the cycle collector would walk them all again and again (a quarter of the reading time) for nothing.
    collecting = gc.isenabled()
    gc.disable()
    try:
        module = parser.parse_module()
        module.source_form = input_form(text)
        return module
    except RecursionError:  # a safety net: MAX_NESTING should stop deep input first
        raise parser.lex.error("input nested too deeply", parser.lex.pos) from None
    finally:
        if collecting:
            gc.enable()


def parse_bytes(raw: bytes, file: str = "<input>") -> Module:
    """Parse MLIR given as bytes; bytes that are not UTF-8 are a clean ``MLIRSyntaxError`` too."""
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as e:
        prefix = raw[: e.start].decode("utf-8", "replace")
        line = prefix.count("\n") + 1
        col = len(prefix) - (prefix.rfind("\n") + 1) + 1
        raise MLIRSyntaxError(Loc(file, line, col), "input is not UTF-8 text (binary file?)") from None
    return parse_mlir(text, file)


def read_text(path: str | Path) -> str:
    """A file's text, decoded while read (one copy of a model-sized file in memory); bytes that are not
    UTF-8 are the same positioned ``MLIRSyntaxError`` as ``parse_bytes`` gives."""
    try:
        with open(path, encoding="utf-8") as f:
            return f.read()
    except UnicodeDecodeError:
        parse_bytes(Path(path).read_bytes(), str(path))  # raises the positioned error
        raise


def parse_file(path: str | Path) -> Module:
    """Read and parse a file (see ``read_text``)."""
    return parse_mlir(read_text(path), str(path))
