"""The writer side of ``mlir.syntax``: each op's custom syntax after its name."""

from __future__ import annotations

from typing import TYPE_CHECKING, cast

from egg_dispatch.mlir.flow_ops import FLOW_SLICE, print_flow_slice
from egg_dispatch.mlir.ir import (
    ArrayAttr,
    DenseAttr,
    DictAttr,
    IntAttr,
    Operation,
    Region,
    StrAttr,
    SymbolRefAttr,
    TensorType,
    TypeAttr,
)
from egg_dispatch.mlir.literals import string_literal, symbol
from egg_dispatch.mlir.ops import (
    CAST_OPS,
    CONTRACTION_OPS,
    DIM_SEGMENTS,
    RETURN_OPS,
    TENSOR_RESHAPE_OPS,
    WORKLOAD,
    attr,
    base_operands,
    dim_group,
    dim_groups,
    function_type,
    outs,
    sym_name,
    workgroups_arguments,
    workload,
)

if TYPE_CHECKING:
    from egg_dispatch.mlir.printer import Printer

__all__ = ["GENERIC", "has_custom_printer", "print_op_body"]

GENERIC = "\x00"
"""Prefix of a body in MLIR's generic form: the caller then quotes the op name."""

_CAST = CAST_OPS
_RETURNS = RETURN_OPS


_CUSTOM = {
    "func.func", "util.func", "arith.constant", "tensor.empty", "tensor.extract_slice", "tensor.insert_slice",
    "tensor.collapse_shape", "tensor.expand_shape", "tensor.extract", "tensor.dim", "linalg.index", "linalg.pack",
    "linalg.unpack", "iree_encoding.set_encoding", "iree_encoding.unset_encoding", "flow.tensor.encode",
    "iree_tensor_ext.compute_barrier.start", "iree_tensor_ext.compute_barrier.end", "hal.tensor.import",
    "hal.tensor.export", "hal.tensor.barrier", "flow.tensor.constant",
    "flow.dispatch.region", "flow.dispatch.workgroups", "iree_tensor_ext.dispatch.tensor.load",
    "iree_tensor_ext.dispatch.tensor.store", "util.global", "util.initializer", "util.global.load", "util.global.store",
    "tensor.concat", "tensor.pad", "linalg.softmax", "cf.assert", "flow.tensor.reshape", "flow.tensor.tie_shape",
    "hal.buffer_view.dim", "iree_tensor_ext.dispatch.workload.ordinal", "util.assume.int",
} | _RETURNS  # fmt: skip

_UNARY_DIMS = {
    "iree_encoding.set_encoding": ("encoding",),
    "iree_encoding.unset_encoding": ("encoding", "result"),
    "flow.tensor.encode": ("source", "result"),
    "flow.tensor.reshape": ("source", "result"),
    "iree_tensor_ext.compute_barrier.start": ("source",),
    "iree_tensor_ext.compute_barrier.end": ("source",),
}
"""As ``syntax_iree.UNARY_DIMS`` (the reader's table; the printer cannot import the reader)."""


def has_custom_printer(name: str) -> bool:
    """Whether ``print_op_body`` writes ``name`` in a custom syntax (which needs the op's structure)."""
    return name in _CUSTOM or name == FLOW_SLICE or name.startswith(("arith.", "math.", "linalg.", "iree_linalg_ext."))


def _extra(p: Printer, op: Operation, skip: set[str]) -> dict:
    return {k: v for k, v in op.attributes.items() if k not in skip and k not in _LAYOUT_KEYS}


_LAYOUT_KEYS = frozenset({DIM_SEGMENTS, WORKLOAD})
"""Attributes that only say how the operands are grouped: never printed in an attribute dictionary."""


def _dims(p: Printer, dims: list) -> str:
    return "{" + p.values(dims) + "}" if dims else ""


def _attr_dict(p: Printer, attrs: dict) -> str:
    return f" {p.dict(list(attrs.items()))}" if attrs else ""


def print_op_body(p: Printer, op: Operation, indent: str) -> str:
    n = op.name
    a = op.attributes
    if op.opaque_text is not None:
        return f" {op.opaque_text}" if op.opaque_text else ""
    if n == FLOW_SLICE:
        return print_flow_slice(p, op)
    if n in ("func.func", "util.func"):
        ft = function_type(op)
        vis = f" {attr(op, 'sym_visibility', StrAttr).value}" if "sym_visibility" in a else ""
        entry = op.regions[0].entry if op.regions else None
        # one DictAttr per argument
        arg_attrs = cast("tuple[DictAttr, ...] | None", getattr(a.get("arg_attrs"), "items", None))
        args = []
        for i, t in enumerate(ft.inputs):
            name = f"%{entry.args[i].name}" if entry else f"%arg{i}"
            extra = ""
            if arg_attrs is not None and arg_attrs[i].items:
                extra = " " + p.attr(arg_attrs[i])
            args.append(f"{name}: {p.type(t)}{extra}")
        res = f" -> {p.results(list(ft.results))}" if ft.results else ""
        if len(ft.results) == 1 and isinstance(ft.results[0], TensorType):
            res = f" -> {p.type(ft.results[0])}"
        rest = _extra(p, op, {"sym_name", "function_type", "sym_visibility", "arg_attrs"})
        attrs = f" attributes {p.dict(list(rest.items()))}" if rest else ""
        body = f" {p.region(op.regions[0], indent)}" if op.regions else ""
        return f"{vis} {symbol(sym_name(op))}({', '.join(args)}){res}{attrs}{body}"
    if n in _RETURNS:
        if not op.operands:
            return ""
        return f" {p.values(op.operands)} : {p.types([v.type for v in op.operands])}"
    if n == "arith.constant":
        cst = a["value"]
        extra = _attr_dict(p, _extra(p, op, {"value"}))
        if isinstance(cst, DenseAttr):
            return f"{extra} {p.attr(cst)}"
        return f"{extra} {p.attr(cst)}"
    dialect, _, short = n.partition(".")
    if dialect in ("arith", "math"):
        pred = f" {attr(op, 'predicate', StrAttr).value}," if "predicate" in a else ""
        fm = f" fastmath<{attr(op, 'fastmath', StrAttr).value}>" if "fastmath" in a else ""
        fm += f" overflow<{attr(op, 'overflow', StrAttr).value}>" if "overflow" in a else ""
        extra = _attr_dict(p, _extra(p, op, {"predicate", "fastmath", "overflow"}))
        ops_ = p.values(op.operands)
        if short in _CAST:
            return f" {ops_}{fm}{extra} : {p.type(op.operands[0].type)} to {p.type(op.result.type)}"
        if short in ("cmpf", "cmpi"):
            return f"{pred} {ops_}{fm}{extra} : {p.type(op.operands[0].type)}"
        if short == "select":
            c = op.operands[0].type
            if isinstance(c, TensorType):
                return f" {ops_}{extra} : {p.type(c)}, {p.type(op.result.type)}"
            return f" {ops_}{extra} : {p.type(op.result.type)}"
        if any(v.type != op.result.type for v in op.operands):
            return f" {ops_}{fm}{extra} : {p.types([v.type for v in op.operands])}"
        return f" {ops_}{fm}{extra} : {p.type(op.result.type)}"
    if n == "tensor.empty":
        return f"({p.values(op.operands)}){_attr_dict(p, dict(a))} : {p.type(op.result.type)}"
    if n in ("tensor.extract_slice", "tensor.insert_slice"):
        keys = {"static_offsets", "static_sizes", "static_strides"}
        if n == "tensor.extract_slice":
            src, dyn = op.operands[0], list(op.operands[1:])
            head = f" {p.value(src)}"
        else:
            src, dyn = op.operands[0], list(op.operands[2:])
            head = f" {p.value(src)} into {p.value(op.operands[1])}"
        sl = " ".join(p.static(op, k, dyn) for k in ("static_offsets", "static_sizes", "static_strides"))
        extra = _attr_dict(p, _extra(p, op, keys))
        if n == "tensor.extract_slice":
            return f"{head}{sl}{extra} : {p.type(src.type)} to {p.type(op.result.type)}"
        return f"{head}{sl}{extra} : {p.type(src.type)} into {p.type(op.result.type)}"
    if n in TENSOR_RESHAPE_OPS:
        reassoc = p.attr(a["reassociation"])
        shape = ""
        if n == "tensor.expand_shape":
            shape = f" output_shape {p.static(op, 'static_output_shape', list(op.operands[1:]))}"
        extra = _attr_dict(p, _extra(p, op, {"reassociation", "static_output_shape"}))
        src = op.operands[0]
        return f" {p.value(src)} {reassoc}{shape}{extra} : {p.type(src.type)} into {p.type(op.result.type)}"
    if n == "tensor.extract":
        return f" {p.value(op.operands[0])}[{p.values(op.operands[1:])}] : {p.type(op.operands[0].type)}"
    if n == "tensor.dim":
        return f" {p.values(op.operands)} : {p.type(op.operands[0].type)}"
    if n == "linalg.index":
        return f" {attr(op, 'dim', IntAttr).value} : {p.type(op.result.type)}"
    if n in ("linalg.pack", "linalg.unpack"):
        src, dest = op.operands[0], op.operands[1]
        pad = ""
        if len(op.operands) > 2:
            pv = op.operands[2]
            pad = f" padding_value({p.value(pv)} : {p.type(pv.type)})"
        s = f" {p.value(src)}{pad}"
        if "outer_dims_perm" in a:
            s += f" outer_dims_perm = {p.attr(a['outer_dims_perm'])}"
        s += f" inner_dims_pos = {p.attr(a['inner_dims_pos'])} inner_tiles = {p.attr(a['inner_tiles'])}"
        keys = {"outer_dims_perm", "inner_dims_pos", "inner_tiles", "has_padding", "operandSegmentSizes"}
        extra = _attr_dict(p, _extra(p, op, keys))
        return f"{s} into {p.value(dest)}{extra} : {p.type(src.type)} -> {p.type(op.result.type)}"
    if n in _UNARY_DIMS:
        src = op.operands[0]
        lists = dict(zip(_UNARY_DIMS[n], range(3), strict=False))
        group = lambda key: dim_group(op, lists[key]) if key in lists else []  # noqa: E731
        enc = group("encoding")
        enc_s = f" encoding_dims{{{p.values(enc)}}}" if enc else ""
        src_t = p.type(src.type) + _dims(p, group("source"))
        res_t = p.type(op.result.type) + _dims(p, group("result"))
        return f" {p.value(src)}{enc_s}{_attr_dict(p, _extra(p, op, set()))} : {src_t} -> {res_t}"
    if n in ("hal.tensor.import", "hal.tensor.export"):
        src = op.operands[0]
        wait = f" wait({p.value(op.operands[1])}) =>" if "wait" in a else ""
        name = f' "{attr(op, "name", StrAttr).value}"' if "name" in a else ""
        extra = _attr_dict(p, _extra(p, op, {"name", "wait"}))
        dims = _dims(p, dim_group(op, 0))
        if n == "hal.tensor.import":
            return f"{wait} {p.value(src)}{name}{extra} : {p.type(src.type)} -> {p.type(op.result.type)}{dims}"
        return f"{wait} {p.value(src)}{name}{extra} : {p.type(src.type)}{dims} -> {p.type(op.result.type)}"
    if n == "flow.tensor.tie_shape":
        src = op.operands[0]
        extra = _attr_dict(p, _extra(p, op, set()))
        return f" {p.value(src)}{extra} : {p.type(src.type)}{_dims(p, dim_group(op, 0))}"
    if n == "hal.buffer_view.dim":
        view = op.operands[0]
        extra = _attr_dict(p, _extra(p, op, {"index"}))
        index = attr(op, "index", IntAttr).value
        return f"<{p.value(view)} : {p.type(view.type)}>[{index}]{extra} : {p.type(op.result.type)}"
    if n == "iree_tensor_ext.dispatch.workload.ordinal":
        extra = _attr_dict(p, _extra(p, op, {"ordinal"}))
        return f" {p.value(op.operands[0])}, {attr(op, 'ordinal', IntAttr).value}{extra} : {p.type(op.result.type)}"
    if n == "util.assume.int":
        parts = []
        for v, rows in zip(op.operands, attr(op, "assumptions", ArrayAttr).items, strict=True):
            if isinstance(rows, DictAttr):
                parts.append(p.value(v) + _assumption(rows))
            else:  # one row per call site
                parts.append(p.value(v) + "[" + ", ".join(_assumption(r) for r in cast(ArrayAttr, rows).items) + "]")
        extra = _attr_dict(p, _extra(p, op, {"assumptions"}))
        return f" {', '.join(parts)}{extra} : {p.types([r.type for r in op.results])}"
    if n == "hal.tensor.barrier":
        joined, fence = op.operands[:-1], op.operands[-1]
        extra = _attr_dict(p, dict(a))
        return (
            f" join({p.values(joined)} : {p.types([v.type for v in joined])}) => {p.value(fence)}{extra}"
            f" : {p.type(fence.type)}"
        )
    if n == "flow.tensor.constant":
        extra = _attr_dict(p, _extra(p, op, {"value"}))
        return f"{extra} {p.attr(a['value'])} : {p.type(op.result.type)}"
    if n == "flow.dispatch.region":
        rest = _extra(p, op, set())
        attrs = f" attributes {p.dict(list(rest.items()))}" if rest else ""
        wl = f"[{p.values(workload(op))}]" if WORKLOAD in a else ""
        groups = dim_groups(op) or [[] for _ in op.results]
        results = ", ".join(p.type(r.type) + _dims(p, d) for r, d in zip(op.results, groups, strict=True))
        s = f"{wl} -> ({results}){attrs} {p.region(op.regions[0], indent)}"
        if len(op.regions) > 1:
            s += _count(p, op.regions[1], indent)
        return s
    if n == "flow.dispatch.workgroups":
        captured = workgroups_arguments(op)
        groups = dim_groups(op) or [[] for _ in [*captured, *op.results]]
        ins_t = ", ".join(p.type(v.type) + _dims(p, d) for v, d in zip(captured, groups, strict=False))
        res_ts = [p.type(r.type) + _dims(p, d) for r, d in zip(op.results, groups[len(captured) :], strict=True)]
        res_t = res_ts[0] if len(res_ts) == 1 else "(" + ", ".join(res_ts) + ")"
        entry = op.regions[0].entry
        bindings = ", ".join(f"%{v.name}: {p.type(v.type)}" for v in entry.args)
        rest = _extra(p, op, set())
        attrs = f" attributes {p.dict(list(rest.items()))}" if rest else ""
        wl = f"[{p.values(workload(op))}]" if WORKLOAD in a else ""
        s = (f"{wl}({p.values(captured)}) : ({ins_t}) -> {res_t}{attrs} =\n"
             f"{indent}    ({bindings}) {p.region(op.regions[0], indent)}")  # fmt: skip
        if len(op.regions) > 1:
            s += _count(p, op.regions[1], indent)
        return s
    if n in ("iree_tensor_ext.dispatch.tensor.load", "iree_tensor_ext.dispatch.tensor.store"):
        store = n.endswith("store")
        fixed = op.operands[:2] if store else op.operands[:1]
        dyn = list(base_operands(op)[len(fixed) :])
        sl = ", ".join(f"{k} = {p.static(op, f'static_{k}', dyn)}" for k in ("offsets", "sizes", "strides"))
        dims = _dims(p, dim_group(op, 0))
        if store:
            return f" {p.values(fixed)}, {sl} : {p.type(fixed[0].type)} -> {p.type(fixed[1].type)}{dims}"
        return f" {p.values(fixed)}, {sl} : {p.type(fixed[0].type)}{dims} -> {p.type(op.result.type)}"
    if n == "util.global":
        vis = f" {attr(op, 'sym_visibility', StrAttr).value}" if "sym_visibility" in a else ""
        mut = " mutable" if "is_mutable" in a else ""
        extra = _attr_dict(p, _extra(p, op, {"sym_visibility", "is_mutable", "sym_name", "type", "initial_value"}))
        typ = attr(op, "type", TypeAttr).type
        init = a.get("initial_value")
        if init is None:
            tail = f" : {p.type(typ)}"
        elif isinstance(init, DenseAttr):
            tail = f" = {p.attr(init)}"
        else:
            tail = f" = {p.attr(init)} : {p.type(typ)}"
        return f"{vis}{mut} {symbol(sym_name(op))}{extra}{tail}"
    if n == "util.initializer":
        attrs = f" attributes {p.dict(list(a.items()))}" if a else ""
        return f"{attrs} {p.region(op.regions[0], indent)}"
    if n == "util.global.load":
        imm = " immutable" if "is_immutable" in a else ""
        extra = _attr_dict(p, _extra(p, op, {"is_immutable", "global"}))
        return f"{imm} {symbol(attr(op, 'global', SymbolRefAttr).name)}{extra} : {p.type(op.result.type)}"
    if n == "util.global.store":
        v = op.operands[0]
        return f" {p.value(v)}, {symbol(attr(op, 'global', SymbolRefAttr).name)} : {p.type(v.type)}"
    if n in ("tensor.concat", "tensor.pad", "linalg.softmax", "cf.assert"):
        return _tensor_op(p, op, indent)
    if "operandSegmentSizes" in a and n.startswith(("linalg.", "iree_linalg_ext.")):
        return _structured(p, op, indent)
    return _generic(p, op, indent)


def _tensor_op(p: Printer, op: Operation, indent: str) -> str:
    """``tensor.concat``, ``tensor.pad``, ``linalg.softmax`` and ``cf.assert`` (``mlir.syntax_tensor``)."""
    n, a = op.name, op.attributes
    if n == "tensor.concat":
        extra = _attr_dict(p, _extra(p, op, {"dim"}))
        ts = p.types([v.type for v in op.operands])
        dim = attr(op, "dim", IntAttr).value
        return f" dim({dim}) {p.values(op.operands)}{extra} : ({ts}) -> {p.type(op.result.type)}"
    if n == "tensor.pad":
        src, dyn = op.operands[0], list(op.operands[1:])
        nofold = " nofold" if "nofold" in a else ""
        low, high = p.static(op, "static_low", dyn), p.static(op, "static_high", dyn)
        extra = _attr_dict(p, _extra(p, op, {"static_low", "static_high", "nofold"}))
        region = p.region(op.regions[0], indent, print_entry_args=True)
        types = f"{p.type(src.type)} to {p.type(op.result.type)}"
        return f" {p.value(src)}{nofold} low{low} high{high} {region}{extra} : {types}"
    if n == "linalg.softmax":
        extra = _attr_dict(p, _extra(p, op, {"dimension"}))
        x, init = op.operands[0], op.operands[1]
        return (
            f"{extra} dimension({attr(op, 'dimension', IntAttr).value}) ins({p.value(x)} : {p.type(x.type)}) "
            f"outs({p.value(init)} : {p.type(init.type)}) -> {p.type(op.result.type)}"
        )
    extra = _attr_dict(p, _extra(p, op, {"msg"}))
    return f" {p.value(op.operands[0])}, {string_literal(attr(op, 'msg', StrAttr).value)}{extra}"


def _assumption(row: object) -> str:
    items = getattr(row, "items", ())
    return "<" + ", ".join(f"{k} = {v.value}" for k, v in items) + ">"


def _count(p: Printer, r: Region, indent: str) -> str:
    args = ", ".join(f"%{v.name}: {p.type(v.type)}" for v in r.entry.args)
    return f" count({args}) -> (index, index, index) {p.region(r, indent)}"


def _structured(p: Printer, op: Operation, indent: str) -> str:
    a = op.attributes
    n = op.name
    skip = {"operandSegmentSizes"}
    head = ""
    tail = ""
    if "__properties__" in a:
        keys = [k for k in ("indexing_maps",) if k in a]
        head = " <" + ", ".join(f"{k} = {p.attr(a[k])}" for k in keys) + ">"
        skip |= {*keys, "__properties__"}
    elif n == "linalg.generic" or n.startswith("iree_linalg_ext.attention"):
        keys = [k for k in ("indexing_maps", "iterator_types") if k in a]
        d = {k: a[k] for k in keys}
        if d:
            head = " " + p.dict(list(d.items()))
        skip |= set(keys)
    elif n in CONTRACTION_OPS or n.startswith(("linalg.batch", "linalg.matmul")) or n == "linalg.contract":
        if "indexing_maps" in a:
            head = f" indexing_maps = {p.attr(a['indexing_maps'])}"
            skip.add("indexing_maps")
    for key in ("dimension_map",):
        if key in a:
            head += f" {key} = {p.attr(a[key])}"
            skip.add(key)
    for key in ("permutation", "dimensions"):
        if key in a:
            tail += f" {key} = {p.attr(a[key])}"
            skip.add(key)
    extra = _extra(p, op, skip)
    body = p.ins_outs(op)
    attrs = ""
    if extra:
        attrs = (
            f" attrs = {p.dict(list(extra.items()))}" if n == "linalg.generic" else f" {p.dict(list(extra.items()))}"
        )
    region = ""
    if op.regions:
        region = " " + p.region(op.regions[0], indent, print_entry_args=True)
    res = ""
    if n not in ("linalg.transpose", "linalg.broadcast", "linalg.map", "linalg.reduce") and op.results:
        res = f" -> {p.types([r.type for r in op.results])}"
    if n in ("linalg.transpose", "linalg.broadcast") or not outs(op):
        return f"{body}{tail}{attrs}{region}{res}"
    if n == "linalg.generic":
        return f"{head}{body}{attrs}{region}{res}"
    return f"{head}{body}{tail}{attrs}{region}{res}"


def _generic(p: Printer, op: Operation, indent: str) -> str:
    """MLIR's generic form, for ops with neither a custom printer nor kept text."""
    regions = ""
    if op.regions:
        regions = " (" + ", ".join(p.region(r, indent, True) for r in op.regions) + ")"
    attrs = f" {p.dict(list(op.attributes.items()))}" if op.attributes else ""
    ft = f"({p.types([v.type for v in op.operands])}) -> {p.results([r.type for r in op.results])}"
    return GENERIC + f"({p.values(op.operands)}){regions}{attrs} : {ft}"
