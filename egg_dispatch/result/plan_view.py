"""A plan read for people: what each dispatch and global holds, and where each contraction's encodings live.

``view(plan)`` reads a plan's MLIR (``flow.dispatch.region`` form, as ``explore`` emits ours and IREE's
own) and names what it holds in the words of the model it came from: ``matmul 16x64x192`` (M x N x K;
a batch B > 1 first: ``matmul 4x16x16x8``), ``attention``, ``gather``, ``softmax``, ``rmsnorm``,
``layernorm``, ``generic(rope)``, ``generic(silu*mul)``, ``transpose``, ``encode(LHS)``..., never the
e-graph's ``Op``. Each contraction gets its weight (the ``#flow.parameter.named`` key or the constant it
is read from, through transposes, reshapes and load-time globals), and where each of its operands is
encoded: in the contraction's own dispatch, fused into the dispatch that produces it
(``in the rmsnorm dispatch``), in an encode dispatch of its own, once at load into a global, or not at
all (data tiling dropped), and where its result is decoded.

``contraction_names`` names the contractions for the report: the layer and role a parameter key gives
(``model.layers.3.self_attn.q_proj.weight``: layer 3, ``q_proj``), else the layer and position the
repeated structure of the contraction shapes gives, with the position in the user's file.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field

from egg_dispatch.mlir.ir import (
    AffineMapAttr,
    DenseAttr,
    Module,
    Operation,
    ParameterAttr,
    SymbolRefAttr,
    TensorType,
    Value,
)
from egg_dispatch.mlir.ops import indexing_maps, ins, iterator_types, outs

__all__ = ["Contraction", "DispatchView", "GlobalView", "PlanView", "contraction_names", "op_key", "view"]

ROLES = ("LHS", "RHS", "ACC")
_RESHAPES = frozenset(
    {"tensor.collapse_shape", "tensor.expand_shape", "flow.tensor.reshape", "tensor.cast", "tensor.reshape"}
)
_SLICES = frozenset({"tensor.extract_slice", "flow.tensor.slice"})
SLICES = _SLICES
"""Slice ops (a slice between dispatches is a copy dispatch once compiled: ``result.per_call``)."""
_QUIET = frozenset(
    {"arith.constant", "tensor.empty", "flow.return", "util.return", "util.global.store", "util.global.load",
     "linalg.fill", "tensor.dim", "util.assume.int", "flow.tensor.constant", "linalg.yield"}
) | _RESHAPES  # fmt: skip
_CONTRACTIONS = frozenset(
    {"linalg.matmul", "linalg.batch_matmul", "linalg.matmul_transpose_b", "linalg.batch_matmul_transpose_b",
     "linalg.matmul_transpose_a", "linalg.batch_matmul_transpose_a", "linalg.matvec", "linalg.vecmat",
     "linalg.batch_matvec", "linalg.contract", "linalg.batch_reduce_matmul"}
)  # fmt: skip
_LAYER = re.compile(r"(?:^|\.)(?:layers|layer|h|blocks|block)\.(\d+)\.(.+)$")


@dataclass
class Contraction:
    op: Operation
    shape: str
    """``MxNxK`` (``BxMxNxK`` with a batch > 1), ``?`` for a dynamic size."""
    weight: str | None
    """The parameter key (or ``constant <digest>``) of the operand that is a weight, when one is."""
    tiled: bool
    """Data-tiled: an operand or the result carries an encoding."""
    placements: dict[str, str]
    """Per operand (``LHS``, ``RHS``, ``ACC`` when the accumulator is encoded): where it is encoded; per
    ``result``: where it is decoded."""
    dispatch: int
    """Index of its dispatch in ``PlanView.dispatches``."""
    steps: dict[str, tuple[Operation, Operation | None]] = field(default_factory=dict)
    """The op that encodes each encoded operand (``LHS``, ``RHS``, ``ACC``: a ``set_encoding`` or a
    ``flow.tensor.encode``), decodes the ``result`` (an ``unset_encoding``), and encodes another input of
    an op between the contraction and that decode (``for generic(add)``: a residual the add reads
    encoded), each with what holds it: a ``flow.dispatch.region``, a ``util.initializer`` (at load), or
    None (an op of the function itself). What ``result.per_call`` prices per call."""

    @property
    def key(self) -> str:
        return f"matmul {self.shape}"


@dataclass
class DispatchView:
    op: Operation
    name: str
    """What it holds: ``rmsnorm + encode(LHS)``, ``matmul 16x64x192 + generic(silu*mul)``."""
    encode_only: bool
    """It only encodes (and reshapes): IREE's hoisted encode dispatch."""
    primary: str
    """Its main computation (the first of contraction, attention, ... in ``name``)."""


@dataclass
class GlobalView:
    name: str
    holds: str
    """What its initializer computes from what: ``encode(RHS) of layers.0.mlp.up_proj.weight``."""
    encoded: bool


@dataclass
class PlanView:
    dispatches: list[DispatchView] = field(default_factory=list)
    tensor_encodes: int = 0
    """``flow.tensor.encode`` ops (run-time encodes outside a dispatch region)."""
    globals: list[GlobalView] = field(default_factory=list)
    contractions: list[Contraction] = field(default_factory=list)

    def kinds(self) -> Counter[str]:
        """Dispatches per call by what they hold (``flow.tensor.encode`` as ``encode``)."""
        out = Counter(d.name for d in self.dispatches)
        if self.tensor_encodes:
            out["encode (flow.tensor.encode)"] += self.tensor_encodes
        return out

    def global_kinds(self) -> Counter[str]:
        return Counter(_without_weight(g.holds) for g in self.globals)


def _without_weight(holds: str) -> str:
    return holds.split(" of ", 1)[0]


# ------------------------------------------------------------------------------------------- naming ops


def _body_ops(op: Operation) -> list[str]:
    if not op.regions or not op.regions[0].blocks:
        return []
    return [o.name for o in op.regions[0].blocks[0].ops if o.name != "linalg.yield"]


def _is_generic_contraction(op: Operation) -> bool:
    if op.name != "linalg.generic" or "reduction" not in iterator_types(op) or len(ins(op)) != 2:
        return False
    body = set(_body_ops(op))
    return bool(body) and body <= {"arith.mulf", "arith.addf", "arith.muli", "arith.addi", "arith.extf", "arith.extsi",
                                   "arith.truncf"} and ("arith.mulf" in body or "arith.muli" in body)  # fmt: skip


def is_contraction(op: Operation) -> bool:
    return op.name in _CONTRACTIONS or _is_generic_contraction(op)


def _dims(t: object) -> tuple[int | None, ...]:
    return tuple(t.shape) if isinstance(t, TensorType) else ()


def _size(d: int | None) -> str:
    return "?" if d is None else str(d)


def contraction_shape(op: Operation) -> str:
    """``MxNxK`` (``BxMxNxK`` with a batch over 1) of a contraction."""
    lhs_v, rhs_v = ins(op)[:2] if len(ins(op)) >= 2 else (None, None)
    out_v = outs(op)[0] if outs(op) else (op.results[0] if op.results else None)
    if lhs_v is None or rhs_v is None or out_v is None:
        return "?"
    lhs, rhs, out = _dims(lhs_v.type), _dims(rhs_v.type), _dims(out_v.type)
    if op.name == "linalg.generic":
        maps = indexing_maps(op)
        its = iterator_types(op)
        if len(maps) == 3:
            size: dict[int, int | None] = {}
            for m, shape in zip(maps, (lhs, rhs, out), strict=True):
                for pos, d in zip(m.dim_positions() or (), shape, strict=False):
                    size.setdefault(pos, d)
            lhs_dims, rhs_dims, out_dims = (set(m.dim_positions() or ()) for m in maps)
            ks = [size.get(i) for i, t in enumerate(its) if t == "reduction"]
            bs = [size.get(i) for i in sorted(lhs_dims & rhs_dims & out_dims)]
            ms = [size.get(i) for i in sorted((lhs_dims & out_dims) - rhs_dims)]
            ns = [size.get(i) for i in sorted((rhs_dims & out_dims) - lhs_dims)]
            return _mnk(bs, ms, ns, ks)
        return "x".join(map(_size, out))
    if not lhs or not out:
        return "x".join(map(_size, out))
    batch = list(out[:-2]) if len(out) > 2 else []
    if op.name.endswith("matvec"):
        return _mnk(batch, [out[-1]], [1], [lhs[-1]])
    if op.name.endswith("vecmat"):
        return _mnk(batch, [1], [out[-1]], [lhs[-1]])
    reduced = lhs[-2] if "transpose_a" in op.name else lhs[-1]
    return _mnk(batch, [out[-2]] if len(out) >= 2 else [1], [out[-1]], [reduced])


def _mnk(b: list[int | None], m: list[int | None], n: list[int | None], k: list[int | None]) -> str:
    def prod(ds: list[int | None]) -> int | None:
        out = 1
        for d in ds:
            if d is None:
                return None
            out *= d
        return out

    parts = [prod(m), prod(n), prod(k)]
    batch = prod(b)
    if b and batch != 1:
        parts.insert(0, batch)
    return "x".join(map(_size, parts))


def _generic_name(op: Operation, maps: list[AffineMapAttr] | None = None) -> str:
    """What a linalg.generic computes, from its body and loops."""
    body = _body_ops(op)
    names = set(body)
    reduction = "reduction" in iterator_types(op)
    if not body:
        maps = maps if maps is not None else indexing_maps(op)
        if not ins(op):
            return "generic(fill)"
        if any(not m.is_identity for m in maps if m.dim_positions() is not None and len(m.results) == m.num_dims):
            return "transpose"
        return "generic(broadcast)" if any(len(m.results) < m.num_dims for m in maps) else "copy"
    if "tensor.extract" in names:
        return "gather"
    if names & {"math.sin", "math.cos"}:
        return "generic(sin/cos)"
    if "math.exp" in names and ("arith.divf" in names or "arith.negf" in names) and "arith.mulf" in names:
        return "generic(silu*mul)" if len(ins(op)) >= 2 else "generic(silu)"
    if "math.exp" in names and "arith.divf" in names:
        return "generic(sigmoid)"
    if "math.erf" in names or ("math.tanh" in names and "arith.addf" in names):
        return "generic(gelu)"
    if "math.tanh" in names:
        return "generic(tanh)"  # e.g. a soft cap: cap * tanh(x / cap)
    if "math.rsqrt" in names or "math.sqrt" in names:
        return "generic(normalize)"
    if reduction:
        if "arith.maximumf" in names or "arith.maxnumf" in names:
            return "generic(max)"
        squares = "arith.mulf" in names or "math.fpowi" in names or "math.powf" in names
        return "generic(sum of squares)" if squares else "generic(sum)"
    if len(ins(op)) >= 3 and "arith.mulf" in names and names & {"arith.addf", "arith.subf"} and "arith.negf" in names:
        return "generic(rope)"
    if len(ins(op)) == 4 and sorted(n for n in body if n != "arith.constant") in (
        ["arith.addf", "arith.mulf", "arith.mulf"],
        ["arith.mulf", "arith.mulf", "arith.subf"],
    ):
        return "generic(rope)"  # x * cos +- rotated(x) * sin, the tables as inputs
    if "math.exp" in names:
        return "generic(exp)"
    if "linalg.index" in names and len(ins(op)) >= 3 and "arith.mulf" in names:
        return "generic(rope)"
    if "linalg.index" in names:
        return "generic(iota)"
    arith = [n.split(".", 1)[1].rstrip("f").rstrip("i") for n in body if n.startswith("arith.")]
    short = [a for a in dict.fromkeys(arith) if a not in ("ext", "trunc", "select", "cmp", "constant", "index_cast")]
    return f"generic({'*'.join(short[:3]) or 'elementwise'})"


def op_name(op: Operation) -> str | None:
    """What one op computes, for people (None: an op that moves no data worth naming)."""
    if op.name in _QUIET:
        return None
    if is_contraction(op):
        return f"matmul {contraction_shape(op)}"
    if op.name == "linalg.generic":
        return _generic_name(op)
    if op.name == "iree_encoding.set_encoding":
        enc = getattr(op.results[0].type, "encoding", None)
        return f"encode({ROLES[enc.operand_index] if enc is not None and enc.operand_index < 3 else '?'})"
    if op.name == "iree_encoding.unset_encoding":
        return "decode"
    if op.name in _SLICES:
        return "slice"
    short = op.name.split(".", 1)[-1]
    for word in ("attention", "gather", "softmax", "scatter", "topk", "sort", "argmax", "transpose", "pack", "unpack",
                 "mmt4d", "conv", "pooling", "concat", "insert_slice", "pad"):  # fmt: skip
        if word in short:
            return word
    return short


_PRIORITY = ("matmul", "attention", "softmax", "rmsnorm", "layernorm", "gather", "generic(rope)", "generic(silu")


def _dispatch_name(ops: list[Operation]) -> tuple[str, str]:
    """(what a dispatch holds, its main computation)."""
    names = [n for o in ops if (n := op_name(o)) is not None]
    # A norm: a sum (of squares) reduction and a normalize (rsqrt) in one dispatch; a layernorm's normalize
    # also adds a bias (a fourth input), and its mean may be taken and subtracted in a dispatch before it.
    if "generic(normalize)" in names and any(n.startswith("generic(sum") for n in names):
        layer = _subtracts(ops) or any(
            o.name == "linalg.generic" and op_name(o) == "generic(normalize)" and len(ins(o)) >= 4 for o in ops
        )
        kind = "layernorm" if layer else "rmsnorm"
        names = [kind if n in ("generic(normalize)",) else n for n in names if not n.startswith("generic(sum")]
    elif "generic(sum)" in names and any(n.startswith("generic(") and "sub" in n for n in names):
        names = ["layernorm(center)"]
    if "generic(max)" in names and "generic(exp)" in names:
        names = ["softmax" if n == "generic(exp)" else n for n in names if n not in ("generic(max)", "generic(sum)")]
    names = list(dict.fromkeys(names)) or ["copy"]
    primary = next((n for p in _PRIORITY for n in names if n.startswith(p)), names[0])
    if len(names) > 4:
        names = [*names[:3], f"{len(names) - 3} more"]
    return " + ".join(names), primary


def _subtracts(ops: list[Operation]) -> bool:
    """A reduction of the dispatch subtracts (a variance: the sum of (x - mean)^2)."""
    return any(
        o.name == "linalg.generic" and "reduction" in iterator_types(o) and "arith.subf" in _body_ops(o) for o in ops
    )


def op_key(op: Operation) -> str | None:
    """What identifies an op across plans of one program: its name and its result's shape."""
    n = op_name(op)
    if n is None or n.startswith(("encode", "decode")):
        return None
    shape = "x".join(map(_size, _dims(op.results[0].type))) if op.results else ""
    return f"{n} {shape}"


# ------------------------------------------------------------------------------------------ the plan


class _Plan:
    """The plan's SSA graph: who contains each op, the value each global holds, each value's users."""

    def __init__(self, module: Module) -> None:
        self.module = module
        self.container: dict[int, Operation | None] = {}
        self.stored: dict[str, Value] = {}
        self.global_ops = module.globals()
        self.func = next((op for op in module.ops if op.name in ("func.func", "util.func") and op.regions), None)
        for top in module.ops:
            if top.name == "util.initializer":
                for o in top.walk():
                    self.container[id(o)] = top
                    if o.name == "util.global.store":
                        ref = o.attributes.get("global")
                        if isinstance(ref, SymbolRefAttr):
                            self.stored[ref.name] = o.operands[0]
        if self.func is not None:
            for o in self.func.regions[0].entry.ops:
                self.container[id(o)] = None
                if o.name == "flow.dispatch.region":
                    for inner in o.walk():
                        if inner is not o:
                            self.container[id(inner)] = o
        self.users: dict[int, list[Operation]] = {}
        for o in module.walk():
            for v in o.operands:
                self.users.setdefault(id(v), []).append(o)

    def top_ops(self) -> list[Operation]:
        return list(self.func.regions[0].entry.ops) if self.func is not None else []

    def source(self, v: Value) -> tuple[Value, Operation | None]:
        """``v`` through region results, global loads, reshapes: the value computed and its op."""
        for _ in range(200):
            owner = v.owner
            if not isinstance(owner, Operation):
                return v, None
            if owner.name == "flow.dispatch.region":
                ret = _terminator(owner)
                if ret is None or v.index >= len(ret.operands):
                    return v, owner
                v = ret.operands[v.index]
            elif owner.name == "util.global.load":
                ref = owner.attributes.get("global")
                name = ref.name if isinstance(ref, SymbolRefAttr) else ""
                if name in self.stored:
                    v = self.stored[name]
                else:
                    return v, owner
            elif owner.name in _RESHAPES and owner.operands:
                v = owner.operands[0]
            else:
                return v, owner
        return v, None

    def weight(self, v: Value) -> str | None:
        """The parameter key (or constant) ``v`` is read from through ops that only move it."""
        for _ in range(200):
            v, owner = self.source(v)
            if owner is None:
                return None
            if owner.name == "flow.tensor.constant" or owner.name == "arith.constant":
                value = owner.attributes.get("value")
                if isinstance(value, ParameterAttr):
                    return value.key
                if isinstance(value, DenseAttr) and not value.is_splat:
                    return f"constant {value.digest()[:10]}"
                return None
            if owner.name == "util.global.load":
                ref = owner.attributes.get("global")
                g = self.global_ops.get(ref.name) if isinstance(ref, SymbolRefAttr) else None
                init = g.attributes.get("initial_value") if g is not None else None
                if isinstance(init, ParameterAttr):
                    return init.key
                if isinstance(init, DenseAttr) and not init.is_splat:
                    return f"constant {init.digest()[:10]}"
                return None
            moves = (
                owner.name in _SLICES
                or owner.name in ("iree_encoding.set_encoding", "flow.tensor.encode")
                or (owner.name == "linalg.generic" and not _body_ops(owner) and len(ins(owner)) == 1)
            )
            if not moves or not owner.operands:
                return None
            v = owner.operands[0]
        return None

    def dispatch_of(self, op: Operation) -> Operation | None:
        return self.container.get(id(op))


def _terminator(region_op: Operation) -> Operation | None:
    ops = region_op.regions[0].entry.ops if region_op.regions and region_op.regions[0].blocks else []
    return ops[-1] if ops and ops[-1].name == "flow.return" else None


def _region_ops(region_op: Operation) -> list[Operation]:
    """The ops a dispatch region or initializer runs (its body's own, not those inside a linalg op's body)."""
    if not region_op.regions or not region_op.regions[0].blocks:
        return []
    return [o for o in region_op.regions[0].entry.ops if o.name not in ("flow.return", "util.return")]


def _is_encode_only(ops: list[Operation]) -> bool:
    named = [n for o in ops if (n := op_name(o)) is not None]
    return (
        bool(named)
        and all(n.startswith("encode") or n == "slice" for n in named)
        and any(n.startswith("encode") for n in named)
    )


def _filled(p: _Plan, v: Value) -> bool:
    """``v`` is a fill (an accumulator's zero start), through region results, loads and reshapes."""
    _, owner = p.source(v)
    while owner is not None and owner.name == "iree_encoding.set_encoding":
        _, owner = p.source(owner.operands[0])
    return owner is not None and owner.name == "linalg.fill"


def _encoded(v: Value) -> bool:
    return getattr(v.type, "encoding", None) is not None


def view(module: Module) -> PlanView:
    """What ``module`` (a plan in ``flow.dispatch.region`` form) holds, named for people."""
    p = _Plan(module)
    out = PlanView()
    index: dict[int, int] = {}
    for top in p.top_ops():
        if top.name == "flow.dispatch.region":
            ops = _region_ops(top)
            name, primary = _dispatch_name(ops)
            index[id(top)] = len(out.dispatches)
            out.dispatches.append(DispatchView(top, name, _is_encode_only(ops), primary))
        elif top.name == "flow.tensor.encode":
            out.tensor_encodes += 1
    for top in module.ops:
        if top.name == "util.initializer":
            ops = _region_ops(top)
            holds = _dispatch_name(ops)[0]
            if holds == "copy" and any(o.name in _RESHAPES for o in ops):
                holds = "reshape"
            for o in top.walk():
                if o.name == "util.global.store" and isinstance(ref := o.attributes.get("global"), SymbolRefAttr):
                    w = p.weight(o.operands[0])
                    what = holds + (f" of {_short_weight(w)}" if w else "")
                    out.globals.append(GlobalView(ref.name, what, _encoded(o.operands[0])))
    for top in p.top_ops():
        if top.name != "flow.dispatch.region":
            continue
        for op in top.walk():
            if op is top or not is_contraction(op):
                continue
            operands = ins(op)[:2]
            result = op.results[0] if op.results else None
            tiled = any(_encoded(v) for v in operands) or (result is not None and _encoded(result))
            steps: dict[str, tuple[Operation, Operation | None]] = {}
            placements = {
                role: _placement(p, v, top, index, out, steps, role) for role, v in zip(ROLES, operands, strict=False)
            }
            acc = outs(op)
            if acc and _encoded(acc[0]) and not _filled(p, acc[0]):
                placements["ACC"] = _placement(p, acc[0], top, index, out, steps, "ACC")
            if result is not None:
                placements["result"] = _decoded(p, result, top, index, out, steps)
            weight = next((w for v in reversed(operands) if (w := p.weight(v)) is not None), None)
            shape = contraction_shape(op)
            out.contractions.append(Contraction(op, shape, weight, tiled, placements, index[id(top)], steps))
    return out


def _encoder(p: _Plan, v: Value) -> tuple[Operation | None, bool]:
    """The op that encodes ``v`` (a ``set_encoding`` or ``flow.tensor.encode``; None: another op, e.g. a
    data-tiled contraction whose result it is) and whether it is sliced on the way."""
    through_slice = False
    for _ in range(200):
        v, owner = p.source(v)
        if owner is None:
            return None, through_slice
        if owner.name in ("iree_encoding.set_encoding", "flow.tensor.encode"):
            return owner, through_slice
        if owner.name in _SLICES and owner.operands:
            through_slice = True
            v = owner.operands[0]
            continue
        return owner, through_slice
    return None, through_slice


def _placement(
    p: _Plan,
    v: Value,
    dispatch: Operation,
    index: dict[int, int],
    out: PlanView,
    steps: dict[str, tuple[Operation, Operation | None]],
    role: str,
) -> str:
    """Where an operand of a contraction in ``dispatch`` is encoded (the op that does it into ``steps``)."""
    if not _encoded(v):
        return "not encoded"
    owner, through_slice = _encoder(p, v)
    if owner is None:
        return "encoded outside the plan's view"
    if owner.name not in ("iree_encoding.set_encoding", "flow.tensor.encode"):
        return f"encoded by {op_name(owner) or owner.name}"
    where = p.dispatch_of(owner)
    steps[role] = (owner, where)
    if owner.name == "flow.tensor.encode":  # of the function, or of an initializer: at load
        return "encoded at load" if where is not None and where.name == "util.initializer" else "in an encode dispatch"
    slice_note = " (then sliced)" if through_slice else ""
    if where is dispatch:
        return "encoded in the matmul's dispatch" + slice_note
    if where is not None and where.name == "util.initializer":
        return "encoded at load" + slice_note
    if where is not None and id(where) in index:
        d = out.dispatches[index[id(where)]]
        if d.encode_only:
            return "in an encode dispatch" + slice_note
        return f"encode fused into the {d.primary} dispatch" + slice_note
    return "encoded outside a dispatch" + slice_note


def _decoded(
    p: _Plan,
    result: Value,
    dispatch: Operation,
    index: dict[int, int],
    out: PlanView,
    steps: dict[str, tuple[Operation, Operation | None]],
) -> str:
    """Where a contraction's encoded result is decoded (the unset, and the encodes of other inputs of the
    ops on the way to it, into ``steps``)."""
    if not _encoded(result):
        return "not encoded"
    todo, seen = [result], set()
    while todo:
        v = todo.pop()
        if id(v) in seen:
            continue
        seen.add(id(v))
        for user in p.users.get(id(v), []):
            if user.name not in ("iree_encoding.unset_encoding", "flow.tensor.encode", "flow.return"):
                for other in user.operands:  # e.g. the residual an add after the contraction reads encoded
                    if other is not v and _encoded(other):
                        enc, _ = _encoder(p, other)
                        if enc is not None and enc.name in ("iree_encoding.set_encoding", "flow.tensor.encode"):
                            steps.setdefault(f"for {op_name(user) or user.name}", (enc, p.dispatch_of(enc)))
            if user.name == "iree_encoding.unset_encoding":
                where = p.dispatch_of(user)
                steps["result"] = (user, where)
                if where is dispatch:
                    after = op_name(v.owner) if isinstance(v.owner, Operation) and v is not result else None
                    return "decoded in its dispatch" + (f", after {after}" if after else "")
                if where is not None and id(where) in index:
                    return f"decoded in the {out.dispatches[index[id(where)]].primary} dispatch"
                return "decoded outside a dispatch"
            if user.name == "flow.tensor.encode":
                steps["result"] = (user, p.dispatch_of(user))
                return "decoded by a flow.tensor.encode"
            if user.name == "flow.return":
                region = p.dispatch_of(user)
                if region is not None and region.name == "flow.dispatch.region":
                    pos = user.operands.index(v)
                    todo.append(region.results[pos])
                continue
            todo += [r for r in user.results if _encoded(r)]
    return "never decoded"


# ------------------------------------------------------------------------------------------ names


def _short_weight(key: str) -> str:
    """``model.model.layers.0.self_attn.q_proj.weight`` -> ``layers.0.self_attn.q_proj``."""
    if key.startswith("constant "):
        return key
    parts = [x for x in key.split(".") if x]
    while parts and parts[-1] in ("weight", "bias"):
        parts.pop()
    while len(parts) > 1 and parts[0] in ("model", "module", "transformer", "base_model"):
        parts.pop(0)
    return ".".join(parts) or key


def _role(rest: str, parts: int = 1) -> str:
    names = [x for x in rest.split(".") if x and x not in ("weight", "bias")]
    return ".".join(names[-parts:]) if names else rest


def contraction_names(cs: list[Contraction]) -> list[tuple[int | None, str]]:
    """(layer, role) of each contraction: from a parameter key when the weight is one (``q_proj``; the last
    two parts of the key, ``attn.c_proj``, where one part names two weights of a layer), else from the
    repeated structure of the contraction shapes (``#2 matmul 16x64x64``: the second of its layer)."""
    keyed: list[tuple[int | None, str] | None] = []
    for c in cs:
        m = _LAYER.search(c.weight or "") if c.weight and not c.weight.startswith("constant ") else None
        if m is not None:
            keyed.append((int(m[1]), m[2]))
        elif c.weight and not c.weight.startswith("constant "):
            keyed.append((None, _short_weight(c.weight)))
        else:
            keyed.append(None)
    rests: dict[tuple[int | None, str], set[str]] = {}
    for k in keyed:
        if k is not None:
            rests.setdefault((k[0], _role(k[1])), set()).add(k[1])
    out: list[tuple[int | None, str] | None] = [
        None if k is None else (k[0], _role(k[1], 1 if len(rests[(k[0], _role(k[1]))]) == 1 else 2)) for k in keyed
    ]
    if all(o is not None for o in out):
        return [o for o in out if o is not None]
    start, period, repeats = _period([c.shape for c in cs])
    filled: list[tuple[int | None, str]] = []
    for i, (o, c) in enumerate(zip(out, cs, strict=True)):
        if o is not None:
            filled.append(o)
        elif period and start <= i < start + period * repeats:
            filled.append(((i - start) // period, f"#{(i - start) % period + 1} {c.key}"))
        else:
            filled.append((None, f"#{i + 1} {c.key}"))
    return filled


def _period(seq: list[str]) -> tuple[int, int, int]:
    """(start, period, repeats) of the longest stretch of ``seq`` that is a block (period >= 2) repeated at
    least twice: where ``seq[i] == seq[i + period]`` holds for a run of ``r`` indices, ``seq`` repeats
    ``(r + period) // period`` times from the run's start."""
    best = (0, 0, 0)
    n = len(seq)
    for period in range(2, n // 2 + 1):
        run = 0
        for i in range(n - period + 1):
            if i < n - period and seq[i] == seq[i + period]:
                run += 1
                continue
            repeats = (run + period) // period
            if repeats >= 2 and period * repeats > best[1] * best[2]:
                best = (i - run, period, repeats)
            run = 0
    return best


def iter_named(module: Module) -> Iterator[tuple[str, Operation]]:
    """(``op_key``, op) of every op of a module's function in order: for matching ops across plans."""
    for op in module.walk():
        if (k := op_key(op)) is not None:
            yield k, op
