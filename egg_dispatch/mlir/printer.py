"""Writes IR back as MLIR that re-parses to the same IR and that IREE's tools accept.

Affine maps and ``#iree_encoding.encoding`` attributes are printed through ``#map`` / ``#encoding``
aliases, as IREE itself prints them, so encoded IR stays readable. Opaque ops are written back
verbatim.

Types, attributes, regions and MLIR's generic op form are written here. An op's custom syntax is
written by its dialect's module, next to the code that reads it (``syntax``, ``syntax_iree``,
``syntax_linalg``, ``syntax_tensor``, ``flow_ops``): each registers its printing functions into
``OP_PRINTERS`` (by op name) or ``DIALECT_PRINTERS`` (for the ops of a dialect without one of their
own) with ``prints`` / ``prints_dialect``, and the package ``__init__`` imports them all. This module
imports none of them, so the printer and the dialects never import each other.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping

import numpy as np

from egg_dispatch.mlir.elements import element_bytes
from egg_dispatch.mlir.ir import (
    AffineMapAttr,
    ArrayAttr,
    Attr,
    BoolAttr,
    DenseAttr,
    DialectAttr,
    DictAttr,
    DispatchTensorType,
    EncodingAttr,
    FloatAttr,
    FunctionType,
    IntAttr,
    Module,
    OpaqueType,
    Operation,
    ParameterAttr,
    Region,
    ScalarType,
    StrAttr,
    SymbolRefAttr,
    TensorType,
    Type,
    TypeAttr,
    UnitAttr,
    Value,
)
from egg_dispatch.mlir.literals import float_bits, float_str, string_literal, symbol
from egg_dispatch.mlir.ops import DIM_SEGMENTS, DYNAMIC, WORKLOAD, ins, int_list, outs

__all__ = [
    "DIALECT_PRINTERS",
    "OP_PRINTERS",
    "OpPrinter",
    "Printer",
    "custom_printer",
    "has_custom_printer",
    "print_mlir",
    "prints",
    "prints_dialect",
]

HEX_THRESHOLD = 100
"""Dense literals with more elements are printed as hex, like ``--mlir-print-elementsattrs-with-hex-if-larger``."""

_LAYOUT_KEYS = frozenset({DIM_SEGMENTS, WORKLOAD})
"""Attributes that only say how the operands are grouped: never printed in an attribute dictionary."""

OpPrinter = Callable[["Printer", Operation, str], "str | None"]
"""Writes what follows an op's name in its custom syntax, given the printer and the indent of the op;
None when the op has no custom form after all (the printer then writes the generic form)."""

OP_PRINTERS: dict[str, OpPrinter] = {}
"""Op name -> its custom printer; filled with ``prints`` by the dialect modules."""

DIALECT_PRINTERS: dict[str, OpPrinter] = {}
"""Dialect (``arith``, ``linalg``) -> the printer of its ops that have none in ``OP_PRINTERS``."""


def prints(*names: str) -> Callable[[OpPrinter], OpPrinter]:
    """Register the decorated function as the custom printer of the ops ``names``."""

    def register(fn: OpPrinter) -> OpPrinter:
        for name in names:
            assert name not in OP_PRINTERS, f"two printers for {name}"
            OP_PRINTERS[name] = fn
        return fn

    return register


def prints_dialect(*dialects: str) -> Callable[[OpPrinter], OpPrinter]:
    """Register the decorated function as the printer of the ops of ``dialects`` without their own."""

    def register(fn: OpPrinter) -> OpPrinter:
        for dialect in dialects:
            assert dialect not in DIALECT_PRINTERS, f"two printers for the dialect {dialect}"
            DIALECT_PRINTERS[dialect] = fn
        return fn

    return register


def custom_printer(name: str) -> OpPrinter | None:
    """The printer of op ``name``: its own, else its dialect's; None: only the generic form."""
    return OP_PRINTERS.get(name) or DIALECT_PRINTERS.get(name.partition(".")[0])


def has_custom_printer(name: str) -> bool:
    """Whether op ``name`` is written in a custom syntax (which needs the op's structure)."""
    return name in OP_PRINTERS or name.startswith(tuple(f"{d}." for d in DIALECT_PRINTERS))


class Printer:
    def __init__(self, use_aliases: bool = True) -> None:
        self.use_aliases = use_aliases
        self.aliases: dict[Attr, str] = {}
        self.alias_order: list[tuple[str, str]] = []

    # ------------------------------------------------------------------------------- types
    def type(self, t: Type) -> str:
        if isinstance(t, TensorType):
            dims = "".join("?x" if d is None else f"{d}x" for d in t.shape)
            enc = f", {self.attr(t.encoding)}" if t.encoding is not None else ""
            return f"tensor<{dims}{t.element.name}{enc}>"
        if isinstance(t, ScalarType):
            return t.name
        if isinstance(t, DispatchTensorType):
            return f"!iree_tensor_ext.dispatch.tensor<{t.access}:{self.type(t.tensor)}>"
        if isinstance(t, FunctionType):
            return f"({', '.join(map(self.type, t.inputs))}) -> {self.results(list(t.results))}"
        if isinstance(t, OpaqueType):
            return t.text
        raise TypeError(f"cannot print type {t!r}")

    def results(self, types: list[Type]) -> str:
        if len(types) == 1 and not isinstance(types[0], FunctionType):
            return self.type(types[0])
        return "(" + ", ".join(map(self.type, types)) + ")"

    def types(self, types: list[Type]) -> str:
        return ", ".join(map(self.type, types))

    # --------------------------------------------------------------------------- attributes
    def attr(self, a: Attr) -> str:
        if isinstance(a, AffineMapAttr | EncodingAttr) and self.use_aliases:
            return self._alias(a)
        return self.attr_inline(a)

    def _alias(self, a: AffineMapAttr | EncodingAttr) -> str:
        name = self.aliases.get(a)
        if name is None:
            base = "#map" if isinstance(a, AffineMapAttr) else "#encoding"
            n = sum(1 for k in self.aliases if type(k) is type(a))
            name = base if n == 0 else f"{base}{n}"
            body = self.attr_inline(a)  # may register nested aliases first (maps inside encodings)
            self.aliases[a] = name
            self.alias_order.append((name, body))
        return name

    def attr_inline(self, a: Attr) -> str:
        if isinstance(a, UnitAttr):
            return "unit"
        if isinstance(a, BoolAttr):
            return "true" if a.value else "false"
        if isinstance(a, IntAttr):
            return str(a.value) if a.type is None else f"{a.value} : {self.type(a.type)}"
        if isinstance(a, FloatAttr):
            return _float_attr(a, self)
        if isinstance(a, StrAttr):
            return string_literal(a.value)
        if isinstance(a, SymbolRefAttr):
            return symbol(a.name)
        if isinstance(a, TypeAttr):
            return self.type(a.type)
        if isinstance(a, ArrayAttr):
            return "[" + ", ".join(self.attr(x) for x in a.items) + "]"
        if isinstance(a, DictAttr):
            return self.dict(a.items)
        if isinstance(a, AffineMapAttr):
            dims = ", ".join(f"d{i}" for i in range(a.num_dims))
            syms = f"[{', '.join(f's{i}' for i in range(a.num_symbols))}]" if a.num_symbols else ""
            return f"affine_map<({dims}){syms} -> ({', '.join(_affine(r) for r in a.results)})>"
        if isinstance(a, DenseAttr):
            return self.dense(a)
        if isinstance(a, EncodingAttr):
            parts = [f"operand_index = {a.operand_index} : {a.operand_index_type}", f"op_type = {a.op_type}",
                     f"element_types = [{', '.join(t.name for t in a.element_types)}]"]  # fmt: skip
            if a.original_element_type is not None:
                parts.append(f"original_element_type = {a.original_element_type.name}")
            if a.user_indexing_maps is not None:
                maps = [
                    "[" + ", ".join(self.attr(x) for x in m) + "]" if isinstance(m, tuple) else self.attr(m)
                    for m in a.user_indexing_maps
                ]
                parts.append(f"user_indexing_maps = [{', '.join(maps)}]")
            if a.iteration_sizes is not None:
                sizes = ", ".join("?" if s is None else str(s) for s in a.iteration_sizes)
                parts.append(f"iteration_sizes = [{sizes}]")
            return f"#iree_encoding.encoding<{', '.join(parts)}>"
        if isinstance(a, DialectAttr):
            return a.text
        if isinstance(a, ParameterAttr):
            scope = f"{string_literal(a.scope)}::" if a.scope is not None else ""
            return f"#{a.dialect}.parameter.named<{scope}{string_literal(a.key)}>"
        raise TypeError(f"cannot print attribute {a!r}")

    def dict(self, items: tuple[tuple[str, Attr], ...] | list[tuple[str, Attr]]) -> str:
        parts = [k if isinstance(v, UnitAttr) else f"{_key(k)} = {self.attr(v)}" for k, v in items]
        return "{" + ", ".join(parts) + "}"

    def dense(self, a: DenseAttr) -> str:
        t = self.type(a.type)
        if a.form == "resource":
            return f"dense_resource<{_resource_key(a.resource_key or '')}> : {t}"
        n = a.type.num_elements
        if (n > 1 and a.is_splat) or (n == 1 and a.type.rank == 0):
            return f"dense<{_scalar(a.first(), a.type.element)}> : {t}"
        if a.form == "hex" or n > HEX_THRESHOLD:
            data = a.hex_data
            digits = data.hex() if data is not None and not a.decoded else to_bytes(a).hex().upper()
            return f'dense<"0x{digits}"> : {t}'
        return f"dense<{_nested(a.array, a.type.element)}> : {t}"

    # ------------------------------------------------------------------------------ ops
    def module(self, m: Module) -> str:
        body: list[str] = []
        indent = "  " if m.has_module_op else ""
        for op in m.ops:
            body.append(self.op(op, indent))
        text = "\n".join(body)
        if m.has_module_op:
            head = "module"
            if m.name:
                head += f" {symbol(m.name)}"
            if m.attributes:
                head += f" attributes {self.dict(list(m.attributes.items()))}"
            text = f"{head} {{\n{text}\n}}" if text else f"{head} {{\n}}"
        aliases = "".join(f"{name} = {body}\n" for name, body in self.alias_order)
        if not m.ops and not m.has_module_op:
            text = "module {\n}"  # an empty module still prints as a valid file
        out = aliases + text + "\n"
        used = {r.resource_key for op in m.walk() if (r := _resource(op)) is not None}
        blobs = {k: v for k, v in m.resources.items() if k in used}
        if blobs:
            entries = ",\n".join(f'      {_resource_key(k)}: "0x{v.hex()}"' for k, v in blobs.items())
            out += "\n{-#\n  dialect_resources: {\n    builtin: {\n" + entries + "\n    }\n  }\n#-}\n"
        return out

    def op(self, op: Operation, indent: str) -> str:
        res = ""
        if op.results:
            names = _result_names(op)
            res = ", ".join(names) + " = "
        if op.generic_form and op.opaque_text is not None:
            return f'{indent}{res}"{op.name}"{op.opaque_text}'
        body = self.op_body(op, indent)
        if body is None:
            return f'{indent}{res}"{op.name}"{self.generic(op, indent)}'
        return indent + res + op.name + body

    def op_body(self, op: Operation, indent: str) -> str | None:
        """What follows the op's name: an opaque op's kept text, else its custom printer's (None: the
        op has no custom form, and is written in the generic form)."""
        if op.opaque_text is not None:
            return f" {op.opaque_text}" if op.opaque_text else ""
        printer = custom_printer(op.name)
        return None if printer is None else printer(self, op, indent)

    def generic(self, op: Operation, indent: str) -> str:
        """What follows the quoted name in MLIR's generic form, for ops with neither a custom printer
        nor kept text."""
        regions = ""
        if op.regions:
            regions = " (" + ", ".join(self.region(r, indent, True) for r in op.regions) + ")"
        attrs = f" {self.dict(list(op.attributes.items()))}" if op.attributes else ""
        ft = f"({self.types([v.type for v in op.operands])}) -> {self.results([r.type for r in op.results])}"
        return f"({self.values(op.operands)}){regions}{attrs} : {ft}"

    def region(self, r: Region, indent: str, print_entry_args: bool = False) -> str:
        lines = ["{"]
        for i, block in enumerate(r.blocks):
            if block.label is not None and (i > 0 or print_entry_args or block.args):
                args = ", ".join(f"%{v.name}: {self.type(v.type)}" for v in block.args)
                lines.append(f"{indent}^{block.label}{f'({args})' if block.args else ''}:")
            for o in block.ops:
                lines.append(self.op(o, indent + "  "))
        lines.append(indent + "}")
        return "\n".join(lines)

    def value(self, v: Value) -> str:
        return f"%{v.name}"

    def values(self, vs: list[Value]) -> str:
        return ", ".join(f"%{v.name}" for v in vs)

    def static(self, op: Operation, key: str, dyn: list[Value]) -> str:
        parts = []
        for s in int_list(op.attributes.get(key)):
            parts.append(f"%{dyn.pop(0).name}" if s == DYNAMIC else str(s))
        return "[" + ", ".join(parts) + "]"

    def extra_attrs(self, op: Operation, skip: set[str]) -> Mapping[str, Attr]:
        """The op's attributes that its custom syntax does not spell (``skip``), for its attribute dict."""
        return {k: v for k, v in op.attributes.items() if k not in skip and k not in _LAYOUT_KEYS}

    def attr_dict(self, attrs: Mapping[str, Attr]) -> str:
        """`` {k = v, ...}``, or nothing for no attributes."""
        return f" {self.dict(list(attrs.items()))}" if attrs else ""

    def dims(self, dims: list[Value]) -> str:
        """``{%d0, %d1}``: the dynamic sizes written after a type, or nothing for none."""
        return "{" + self.values(dims) + "}" if dims else ""

    def ins_outs(self, op: Operation) -> str:
        i, o = ins(op), outs(op)
        s = ""
        if i:
            s += f" ins({self.values(i)} : {self.types([v.type for v in i])})"
        if o:
            s += f" outs({self.values(o)} : {self.types([v.type for v in o])})"
        return s


def _result_names(op: Operation) -> list[str]:
    names: list[str] = []
    seen: dict[str, int] = {}
    for v in op.results:
        base, _, _ = v.name.partition("#")
        seen[base] = seen.get(base, 0) + 1
    done: set[str] = set()
    for v in op.results:
        base, _, _ = v.name.partition("#")
        if base in done:
            continue
        done.add(base)
        names.append(f"%{base}" + (f":{seen[base]}" if "#" in v.name else ""))
    return names


def _resource(op: Operation) -> DenseAttr | None:
    v = op.attributes.get("value") or op.attributes.get("initial_value")
    return v if isinstance(v, DenseAttr) and v.form == "resource" else None


def _resource_key(k: str) -> str:
    return k if re.fullmatch(r"[A-Za-z_][A-Za-z0-9_$.\-]*", k) else string_literal(k)


def _key(k: str) -> str:
    return k if re.fullmatch(r"[A-Za-z_][A-Za-z0-9_$.]*", k) else string_literal(k)


def _affine(e: tuple) -> str:
    kind = e[0]
    if kind == "d":
        return f"d{e[1]}"
    if kind == "s":
        return f"s{e[1]}"
    if kind == "c":
        return str(e[1])
    return (
        f"({_affine(e[1])} {kind} {_affine(e[2])})" if kind in ("+", "-") else f"{_affine(e[1])} {kind} {_affine(e[2])}"
    )


def _float_attr(a: FloatAttr, p: Printer) -> str:
    if a.text is not None:
        body = a.text
    elif np.isfinite(a.value):
        body = float_str(a.value)
    else:
        name = a.type.name if isinstance(a.type, ScalarType) else "f64"
        return f"{float_bits(a.value, name)} : {p.type(a.type) if a.type is not None else 'f64'}"
    return body if a.type is None else f"{body} : {p.type(a.type)}"


def _scalar(v: complex | float | np.number | np.bool_, elem: ScalarType) -> str:
    """One element (a Python or NumPy scalar) of a dense attribute of ``elem``."""
    if elem.name == "i1":
        return "true" if bool(v) else "false"
    if elem.is_complex or isinstance(v, complex | np.complexfloating):
        z = complex(v)
        return f"({_scalar(z.real, elem.complex_part)},{_scalar(z.imag, elem.complex_part)})"
    if elem.is_float:
        f = float(v)
        if np.isnan(f) or np.isinf(f):
            return float_bits(f, elem.name)
        return float_str(np.float32(f) if elem.name == "f32" else f)
    return str(int(v))


def _nested(arr: np.ndarray, elem: ScalarType) -> str:
    if arr.ndim == 0:
        return _scalar(arr.item(), elem)
    if arr.ndim == 1:
        return "[" + ", ".join(_scalar(x, elem) for x in arr.tolist()) + "]"
    return "[" + ", ".join(_nested(x, elem) for x in arr) + "]"


def to_bytes(a: DenseAttr) -> bytes:
    return element_bytes(a.array, a.type)


def print_mlir(module: Module, use_aliases: bool = True) -> str:
    """The module as MLIR text."""
    return Printer(use_aliases).module(module)
