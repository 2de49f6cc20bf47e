"""Writes IR back as MLIR that re-parses to the same IR and that IREE's tools accept.

Affine maps and ``#iree_encoding.encoding`` attributes are printed through ``#map`` / ``#encoding``
aliases, as IREE itself prints them, so encoded IR stays readable. Opaque ops are written back
verbatim.
"""

from __future__ import annotations

import re

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
from egg_dispatch.mlir.ops import DYNAMIC, ins, int_list, outs

__all__ = ["Printer", "print_mlir"]

HEX_THRESHOLD = 100
"""Dense literals with more elements are printed as hex, like ``--mlir-print-elementsattrs-with-hex-if-larger``."""

_INHERENT = {
    "func.func": {"sym_name", "function_type", "sym_visibility", "arg_attrs"},
    "arith.constant": {"value"},
}
_STRUCTURED_KEYS = ("indexing_maps", "iterator_types")


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
        from egg_dispatch.mlir.print_ops import GENERIC, print_op_body

        if op.generic_form and op.opaque_text is not None:
            return f'{indent}{res}"{op.name}"{op.opaque_text}'
        body = print_op_body(self, op, indent)
        if body.startswith(GENERIC):
            return f'{indent}{res}"{op.name}"{body[len(GENERIC) :]}'
        return indent + res + op.name + body

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


def _scalar(v: float | np.number | np.bool_, elem: ScalarType) -> str:
    """One element (a Python or NumPy scalar) of a dense attribute of ``elem``."""
    if elem.name == "i1":
        return "true" if bool(v) else "false"
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
