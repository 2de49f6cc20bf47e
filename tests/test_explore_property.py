"""``explore --check`` on random valid programs: every plan computes the input's numbers, and nothing
ends in an internal error.

hypothesis writes small programs from every op the reader models (elementwise ``arith``/``math`` ops
with selects and casts, on tensors and in generic bodies; generics with permuted, broadcast and
constant-result maps, reductions with keepdim outputs and sequential bodies, ``linalg.index``; the
matmul family with batch and transposed maps, mixed precision and matmul-like generics; fill, empty,
slices, reshapes, transpose, broadcast, copy, concat, pad, softmax; gathers and embedding lookups
with valid indices; attention with and without causal masks; constants and splats; f16 weights
widened by ``extf``) and runs each through the command line::

    egg-dispatch explore FILE --check --baseline modelled --target T --emit json --from input

with ``T`` drawn from the built-in targets. The exit code must be 0: 1 is a plan whose numbers differ
from the input's (a bug in import, rules, extraction, emission or the evaluator), 2 an op the
evaluator or the reader refuses (the generator only writes ops they model), 3 an internal error.
Most programs are explored as given (``--from input``: our reader, e-graph, plans and evaluator on
exactly these ops); a smaller set goes through IREE's own global optimization first (the default
``--from auto``), so that what IREE makes of them is read, explored and checked too.

Shapes are tiny (dims up to 8), so a program takes about 30 ms as given and 0.3 s through IREE. Under
the ``ci`` profile (tests/hypothesis_profiles.py; the counts are the constants below), ``AS_GIVEN``
programs are explored as given, half of them with ``--pareto`` so that every frontier plan is checked
too, and ``AFTER_IREE`` after IREE's global optimization (with IREE installed). For ``EMITTED`` more,
the chosen plan is printed (``--emit mlir``) and ``egg-dispatch check`` must read it back and agree
with itself packed and plain. Another test checks that ``iree-opt`` accepts what the generator writes,
``BATCH`` programs per ``iree-opt`` run: the programs are valid MLIR, so a non-zero exit is ours.
``REGRESSIONS`` keeps, reduced, the programs that found bugs.
"""

from __future__ import annotations

import tempfile
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from egg_dispatch.iree.tools import find_tool, iree_opt_parses_each
from egg_dispatch.target.profile import builtin_target_names
from tests.cli_process import cli_process
from tests.hypothesis_profiles import examples

TARGETS = sorted(builtin_target_names())
FLOATS = ("f32", "f32", "f32", "f16", "bf16")
DIMS = (1, 2, 3, 4, 5, 8)
# Examples per property under the ``ci`` profile (tests/hypothesis_profiles.py scales them).
AS_GIVEN = 600
AFTER_IREE = 60
DYNAMIC = 120
EMITTED = 80
EMITTED_DYNAMIC = 40
VALID_MLIR = 60
VALID_DYNAMIC_MLIR = 40
BATCH = 10
"""Programs per ``iree-opt`` run in the validity tests (one process reads a batch)."""
TMP = Path(tempfile.mkdtemp(prefix="egg_dispatch_property_"))


def ttype(shape: tuple[int, ...], elem: str) -> str:
    return f"tensor<{''.join(f'{d}x' for d in shape)}{elem}>"


def amap(n: int, results: list[str]) -> str:
    return f"affine_map<({', '.join(f'd{i}' for i in range(n))}) -> ({', '.join(results)})>"


def ident(n: int) -> str:
    return amap(n, [f"d{i}" for i in range(n)])


def is_float(elem: str) -> bool:
    return elem in ("f16", "bf16", "f32")


@dataclass
class Val:
    name: str
    shape: tuple[int, ...]
    elem: str
    computed: bool = False
    """Defined by an op (not an argument or a constant)."""

    @property
    def type(self) -> str:
        return ttype(self.shape, self.elem)


@dataclass
class Builder:
    """A function under construction: arguments, top-level ops, and the values they define."""

    draw: st.DrawFn
    args: list[Val] = field(default_factory=list)
    lines: list[str] = field(default_factory=list)
    values: list[Val] = field(default_factory=list)
    n: int = 0

    def fresh(self, prefix: str = "v") -> str:
        self.n += 1
        return f"%{prefix}{self.n}"

    def pick(self, options: list | tuple):
        return self.draw(st.sampled_from(list(options)))

    def flag(self, p: float = 0.5) -> bool:
        return self.draw(st.integers(0, 99)) < p * 100

    def dims(self, rank: int) -> tuple[int, ...]:
        return tuple(self.pick(DIMS) for _ in range(rank))

    def existing(self, ranks: list[int], elems: list[str] | tuple[str, ...], where=None) -> Val | None:
        """Often a value computed so far, most often the latest (so ops consume each other: fusion,
        propagation, shared and sliced weights), else None."""
        have = [v for v in self.values if len(v.shape) in ranks and v.elem in elems and (where is None or where(v))]
        computed = [v for v in have if v.computed]
        if computed and self.flag(0.5):
            return computed[-1]
        if computed and self.flag(0.4):
            return self.pick(computed)
        return self.pick(have) if have and self.flag(0.5) else None

    def shape_like(self, ranks: list[int]) -> tuple[int, ...]:
        """The shape of a value computed so far, or a new one."""
        have = [v.shape for v in self.values if len(v.shape) in ranks]
        return self.pick(have) if have and self.flag(0.7) else self.dims(self.pick(ranks))

    def operand(self, ranks: list[int], elems: list[str] | tuple[str, ...]) -> Val:
        """An existing value (see ``existing``) or a new source of a random shape."""
        return self.existing(ranks, elems) or self.get(self.dims(self.pick(ranks)), self.pick(list(elems)))

    def emit(self, line: str) -> None:
        self.lines.append("  " + line.replace("\n", "\n  "))

    def add(self, name: str, shape: tuple[int, ...], elem: str, computed: bool = True) -> Val:
        v = Val(name, shape, elem, computed)
        self.values.append(v)
        return v

    # -------------------------------------------------------------------------- sources
    def literal(self, elem: str, rng: np.random.Generator) -> str:
        if is_float(elem):
            return repr(float(rng.integers(-16, 17) / 16))
        if elem == "i1":
            return "true" if rng.integers(0, 2) else "false"
        return str(int(rng.integers(-8, 9)))

    def source(self, shape: tuple[int, ...], elem: str, kind: str | None = None) -> Val:
        """A new argument, dense constant or splat of this type."""
        kind = kind or self.pick(["arg", "arg", "const", "splat"])
        if kind == "arg":
            v = Val(f"%a{len(self.args)}", shape, elem)
            self.args.append(v)
            self.values.append(v)
            return v
        rng = np.random.default_rng(self.draw(st.integers(0, 2**16)))
        if kind == "splat" or not shape:
            body = self.literal(elem, rng)
        else:
            flat = [self.literal(elem, rng) for _ in range(int(np.prod(shape)))]

            def nest(items: list[str], dims: tuple[int, ...]) -> str:
                if len(dims) == 1:
                    return "[" + ", ".join(items) + "]"
                step = len(items) // dims[0]
                return "[" + ", ".join(nest(items[i * step : (i + 1) * step], dims[1:]) for i in range(dims[0])) + "]"

            body = nest(flat, shape)
        name = self.fresh("cst")
        self.emit(f"{name} = arith.constant dense<{body}> : {ttype(shape, elem)}")
        return self.add(name, shape, elem, computed=False)

    def get(self, shape: tuple[int, ...], elem: str) -> Val:
        """A value of this type: an existing one or a new source."""
        have = [v for v in self.values if v.shape == shape and v.elem == elem]
        if have and self.flag(0.6):
            return self.pick(have)
        return self.source(shape, elem)

    def scalar(self, elem: str, value: str) -> str:
        name = self.fresh("c")
        typ = "" if elem == "i1" else f" : {elem}"
        self.emit(f"{name} = arith.constant {value}{typ}")
        return name

    def empty(self, shape: tuple[int, ...], elem: str) -> str:
        name = self.fresh("e")
        self.emit(f"{name} = tensor.empty() : {ttype(shape, elem)}")
        return name

    def init(self, shape: tuple[int, ...], elem: str, value: str | None = None) -> str:
        """An init: a fill of ``value`` (or a random constant), or an existing tensor."""
        if value is None and self.flag(0.3):
            return self.get(shape, elem).name
        e = self.empty(shape, elem)
        if value is None:
            value = "0.0" if is_float(elem) else "false" if elem == "i1" else "0"
        c = self.scalar(elem, value)
        name = self.fresh("fill")
        t = ttype(shape, elem)
        self.emit(f"{name} = linalg.fill ins({c} : {elem}) outs({e} : {t}) -> {t}")
        return name

    def text(self, results: list[Val]) -> str:
        sig = ", ".join(f"{a.name}: {a.type}" for a in self.args)
        types = ", ".join(r.type for r in results)
        body = "\n".join(self.lines)
        return (
            f"func.func @main({sig}) -> ({types}) {{\n{body}\n"
            f"  return {', '.join(r.name for r in results)} : {types}\n}}\n"
        )


# ----------------------------------------------------------------------------- scalar bodies


@dataclass
class Body:
    """Scalar SSA code inside a region: names with their element types."""

    b: Builder
    lines: list[str] = field(default_factory=list)
    pool: list[tuple[str, str]] = field(default_factory=list)

    def op(self, text: str, elem: str) -> str:
        name = self.b.fresh("s")
        self.lines.append(f"{name} = {text}")
        self.pool.append((name, elem))
        return name

    def const(self, elem: str, value: str) -> str:
        if self.b.flag(0.5):  # defined in the body, or captured from the function body
            typ = "" if elem == "i1" else f" : {elem}"
            name = self.b.fresh("k")
            self.lines.append(f"{name} = arith.constant {value}{typ}")
            return name
        return self.b.scalar(elem, value)

    def convert(self, x: str, src: str, dst: str) -> str:
        """Cast a scalar between element types, as exports do."""
        if src == dst:
            return x
        fw = {"f16": 16, "bf16": 16, "f32": 32}
        iw = {"i1": 1, "i8": 8, "i32": 32, "i64": 64}
        if is_float(src) and is_float(dst):
            if {src, dst} == {"f16", "bf16"}:
                x = self.op(f"arith.extf {x} : {src} to f32", "f32")
                src = "f32"
                if dst == "f32":
                    return x
            kind = "extf" if fw[dst] > fw[src] else "truncf"
            return self.op(f"arith.{kind} {x} : {src} to {dst}", dst)
        if src in iw and dst in iw:
            kind = "extui" if src == "i1" else "extsi" if iw[dst] > iw[src] else "trunci"
            if dst == "i1":
                zero = self.const(src, "0")
                return self.op(f"arith.cmpi ne, {x}, {zero} : {src}", "i1")
            return self.op(f"arith.{kind} {x} : {src} to {dst}", dst)
        if src in iw:  # int -> float
            kind = "uitofp" if src == "i1" else self.b.pick(["sitofp", "sitofp", "uitofp"]) if src == "i8" else "sitofp"
            if kind == "uitofp" and src != "i1":
                x = self.op(f"math.absi {x} : {src}", src)
            return self.op(f"arith.{kind} {x} : {src} to {dst}", dst)
        # float -> int (values are small: in range of every width)
        if dst == "i1":
            zero = self.const(src, "0.0")
            return self.op(f"arith.cmpf ogt, {x}, {zero} : {src}", "i1")
        return self.op(f"arith.fptosi {x} : {src} to {dst}", dst)

    def float_step(self, elem: str) -> None:
        xs = [n for n, e in self.pool if e == elem]
        x = self.b.pick(xs)
        y = self.b.pick(xs)
        kind = self.b.pick(["bin", "bin", "bin", "unary", "unary", "safe", "select", "pow", "fma"])
        if kind == "bin":
            op = self.b.pick(["addf", "subf", "mulf", "maximumf", "minimumf", "maxnumf", "minnumf"])
            self.op(f"arith.{op} {x}, {y} : {elem}", elem)
        elif kind == "unary":
            op = self.b.pick(
                [
                    "arith.negf",
                    "math.tanh",
                    "math.erf",
                    "math.absf",
                    "math.floor",
                    "math.ceil",
                    "math.round",
                    "math.roundeven",
                    "math.sin",
                    "math.cos",
                    "math.exp",
                    "math.exp2",
                    "math.trunc",
                ]
            )
            self.op(f"{op} {x} : {elem}", elem)
        elif kind == "safe":  # ops defined on positive values, on |x| + 1
            a = self.op(f"math.absf {x} : {elem}", elem)
            one = self.const(elem, "1.0")
            p = self.op(f"arith.addf {a}, {one} : {elem}", elem)
            op = self.b.pick(["math.sqrt", "math.rsqrt", "math.log", "math.log1p", "math.log2", "div"])
            if op == "div":
                self.op(f"arith.divf {y}, {p} : {elem}", elem)
            else:
                self.op(f"{op} {p} : {elem}", elem)
        elif kind == "select":
            pred = self.b.pick(["oeq", "ogt", "oge", "olt", "ole", "one", "ord", "ueq", "ugt", "uge", "ult", "ule",
                                "une", "uno"])  # fmt: skip
            c = self.op(f"arith.cmpf {pred}, {x}, {y} : {elem}", "i1")
            self.op(f"arith.select {c}, {x}, {y} : {elem}", elem)
        elif kind == "pow":
            a = self.op(f"math.absf {x} : {elem}", elem)
            if self.b.flag():
                n = self.const("i32", str(self.b.pick([2, 3, -1])))
                one = self.const(elem, "1.0")
                p = self.op(f"arith.addf {a}, {one} : {elem}", elem)
                self.op(f"math.fpowi {p}, {n} : {elem}, i32", elem)
            else:
                e = self.const(elem, self.b.pick(["0.5", "2.0", "1.5"]))
                self.op(f"math.powf {a}, {e} : {elem}", elem)
        else:
            z = self.b.pick(xs)
            self.op(f"math.fma {x}, {y}, {z} : {elem}", elem)

    def int_step(self, elem: str) -> None:
        xs = [n for n, e in self.pool if e == elem]
        x, y = self.b.pick(xs), self.b.pick(xs)
        kind = self.b.pick(["bin", "bin", "select", "div", "shift"])
        if kind == "bin":
            op = self.b.pick(["addi", "subi", "muli", "maxsi", "minsi", "andi", "ori", "xori", "maxui", "minui"])
            self.op(f"arith.{op} {x}, {y} : {elem}", elem)
        elif kind == "select":
            pred = self.b.pick(["eq", "ne", "slt", "sle", "sgt", "sge", "ult", "ule", "ugt", "uge"])
            c = self.op(f"arith.cmpi {pred}, {x}, {y} : {elem}", "i1")
            self.op(f"arith.select {c}, {x}, {y} : {elem}", elem)
        elif kind == "div":  # by a non-zero constant
            d = self.const(elem, str(self.b.pick([2, 3, -3, 5])))
            op = self.b.pick(["divsi", "remsi", "floordivsi", "ceildivsi"])
            self.op(f"arith.{op} {x}, {d} : {elem}", elem)
        else:
            s = self.const(elem, str(self.b.pick([1, 2, 3])))
            op = self.b.pick(["shli", "shrsi", "shrui"])
            self.op(f"arith.{op} {x}, {s} : {elem}", elem)

    def compute(self, out_elem: str, steps: int, index_dims: int = 0) -> str:
        """Some arithmetic on the pool, ending in a value of ``out_elem``."""
        if index_dims and self.b.flag(0.3):
            d = self.b.pick(range(index_dims))
            i = self.op(f"linalg.index {d} : index", "index")
            w = self.b.pick(["i32", "i64"])
            j = self.op(f"arith.index_cast {i} : index to {w}", w)
            self.convert(j, w, out_elem if out_elem != "i1" else "i32")
        for _ in range(steps):
            elems = sorted({e for _, e in self.pool if e != "index"})
            e = self.b.pick(elems)
            if self.b.flag(0.2):  # change type
                to = self.b.pick([t for t in ("f32", "f16", "i32", "i8") if t != e])
                self.convert(self.b.pick([n for n, t in self.pool if t == e]), e, to)
            elif is_float(e):
                self.float_step(e)
            elif e == "i1":
                xs = [n for n, t in self.pool if t == "i1"]
                op = self.b.pick(["andi", "ori", "xori"])
                self.op(f"arith.{op} {self.b.pick(xs)}, {self.b.pick(xs)} : i1", "i1")
            else:
                self.int_step(e)
        last = self.pool[-1]
        if last[1] == "index":
            last = (self.op(f"arith.index_cast {last[0]} : index to i32", "i32"), "i32")
        return self.convert(last[0], last[1], out_elem)


# ---------------------------------------------------------------------------------- ops


def op_elementwise_generic(b: Builder) -> Val:
    """A parallel generic: inputs through identity, permuted, projected (broadcast) or constant maps."""
    first = b.existing([1, 2, 3], (*FLOATS, "i32", "i8", "i1"))
    shape = first.shape if first else b.shape_like([1, 2, 2, 3])
    rank = len(shape)
    out_elem = b.pick([*FLOATS, "f32", "i32", "i1"])
    ins: list[tuple[Val, str]] = [(first, ident(rank))] if first else []
    for _ in range(b.pick([0, 1, 1, 2]) if first else b.pick([1, 1, 2, 3])):
        elem = b.pick([out_elem, out_elem, "f32", "f16", "i32", "i8", "i1"])
        form = b.pick(["id", "id", "perm", "proj", "const", "scalar"])
        if form == "perm" and rank > 1:
            perm = list(b.draw(st.permutations(range(rank))))
            v = b.get(tuple(shape[p] for p in perm), elem)
            ins.append((v, amap(rank, [f"d{p}" for p in perm])))
        elif form == "proj" and rank > 1:
            kept = sorted(b.draw(st.sets(st.sampled_from(range(rank)), min_size=1, max_size=rank - 1)))
            v = b.get(tuple(shape[d] for d in kept), elem)
            ins.append((v, amap(rank, [f"d{d}" for d in kept])))
        elif form == "const":
            ones = b.draw(st.sets(st.sampled_from(range(rank)), min_size=1, max_size=rank))
            v = b.get(tuple(1 if d in ones else shape[d] for d in range(rank)), elem)
            ins.append((v, amap(rank, ["0" if d in ones else f"d{d}" for d in range(rank)])))
        elif form == "scalar" and is_float(elem):
            name = b.scalar(elem, "0.375")
            ins.append((Val(name, (), elem), amap(rank, [])))
        else:
            ins.append((b.get(shape, elem), ident(rank)))
    init = b.init(shape, out_elem) if b.flag(0.3) else b.empty(shape, out_elem)
    body = Body(b)
    block_args = []
    for v, _ in ins:
        a = b.fresh("in")
        block_args.append(f"{a}: {v.elem}")
        body.pool.append((a, v.elem))
    o = b.fresh("out")
    block_args.append(f"{o}: {out_elem}")
    if b.flag(0.3):
        body.pool.append((o, out_elem))
    y = body.compute(out_elem, b.pick([0, 1, 2, 3]), index_dims=rank)
    maps = ", ".join([m for _, m in ins] + [ident(rank)])
    iters = ", ".join(['"parallel"'] * rank)
    name = b.fresh("g")
    t = ttype(shape, out_elem)
    in_vals = ", ".join(v.name for v, _ in ins)
    in_types = ", ".join(v.type if v.shape or v.name.startswith("%a") else v.elem for v, _ in ins)
    body_text = "\n".join(f"  {line}" for line in body.lines)
    b.emit(
        f"{name} = linalg.generic {{indexing_maps = [{maps}], iterator_types = [{iters}]}} "
        f"ins({in_vals} : {in_types}) outs({init} : {t}) {{\n^bb0({', '.join(block_args)}):\n{body_text}\n"
        f"  linalg.yield {y} : {out_elem}\n}} -> {t}"
    )
    return b.add(name, shape, out_elem)


_IDENTITY = {"addf": "0.0", "maximumf": "-1.0e+4", "minimumf": "1.0e+4", "maxnumf": "-1.0e+4",
             "mulf": "1.0", "addi": "0", "maxsi": "-1000", "minsi": "1000", "ori": "0"}  # fmt: skip
"""Inits of reductions (finite in f16, below every value the programs reach)."""


def op_reduction(b: Builder) -> Val:
    """A reduction generic: projected or keepdim (constant-result) output map, fold or sequential body."""
    first = b.existing([1, 2, 3], ("f32", "f16", "i32"))
    shape = first.shape if first else b.shape_like([1, 2, 2, 3, 3])
    rank = len(shape)
    red = b.draw(st.sets(st.sampled_from(range(rank)), min_size=1, max_size=rank))
    if len(red) == rank and rank > 1 and b.flag(0.5):
        red = set(list(red)[:-1])
    elem = first.elem if first else b.pick(["f32", "f32", "f32", "f16", "i32"])
    x = first or b.get(shape, elem)
    keepdim = b.flag(0.5)
    if keepdim:
        out_shape = tuple(1 if d in red else s for d, s in enumerate(shape))
        out_map = amap(rank, ["0" if d in red else f"d{d}" for d in range(rank)])
    else:
        out_shape = tuple(s for d, s in enumerate(shape) if d not in red)
        out_map = amap(rank, [f"d{d}" for d in range(rank) if d not in red])
    comb = b.pick(["addf", "addf", "maximumf", "minimumf", "maxnumf", "mulf"] if is_float(elem)
                  else ["addi", "maxsi", "minsi", "ori"])  # fmt: skip
    sequential = b.flag(0.15)
    init = b.init(out_shape, elem, None if sequential or b.flag(0.2) else _IDENTITY[comb])
    ins = [(x, ident(rank))]
    if keepdim and b.flag(0.4):  # (x - mean)^2: the keepdim tensor read back through its constant map
        m = b.get(out_shape, elem)
        ins.append((m, out_map))
    body = Body(b)
    args = []
    for v, _ in ins:
        a = b.fresh("in")
        args.append(f"{a}: {v.elem}")
        body.pool.append((a, v.elem))
    o = b.fresh("acc")
    args.append(f"{o}: {elem}")
    contrib = body.compute(elem, b.pick([0, 1, 2]))
    if len(ins) == 2:
        sub = "subf" if is_float(elem) else "subi"
        mul = "mulf" if is_float(elem) else "muli"
        d = body.op(f"arith.{sub} {body.pool[0][0]}, {body.pool[1][0]} : {elem}", elem)
        contrib = body.op(f"arith.{mul} {d}, {d} : {elem}", elem)
    if sequential and is_float(elem):
        half = body.const(elem, "0.5")
        h = body.op(f"arith.mulf {o}, {half} : {elem}", elem)
        y = body.op(f"arith.addf {h}, {contrib} : {elem}", elem)
    else:
        pair = f"{o}, {contrib}" if b.flag() else f"{contrib}, {o}"
        y = body.op(f"arith.{comb} {pair} : {elem}", elem)
    maps = ", ".join([m for _, m in ins] + [out_map])
    iters = ", ".join('"reduction"' if d in red else '"parallel"' for d in range(rank))
    name = b.fresh("r")
    t = ttype(out_shape, elem)
    body_text = "\n".join(f"  {line}" for line in body.lines)
    b.emit(
        f"{name} = linalg.generic {{indexing_maps = [{maps}], iterator_types = [{iters}]}} "
        f"ins({', '.join(v.name for v, _ in ins)} : {', '.join(v.type for v, _ in ins)}) outs({init} : {t}) {{\n"
        f"^bb0({', '.join(args)}):\n{body_text}\n  linalg.yield {y} : {elem}\n}} -> {t}"
    )
    return b.add(name, out_shape, elem)


def op_tensor_elementwise(b: Builder) -> Val:
    """arith / math ops on whole tensors (as exports sometimes leave them), incl. select and casts."""
    first = b.existing([1, 2, 3], ("f32", "f16", "i32"))
    shape = first.shape if first else b.shape_like([1, 2, 3])
    elem = first.elem if first else b.pick(["f32", "f32", "f16", "i32"])
    x = first or b.get(shape, elem)
    y = b.get(shape, elem)
    t = ttype(shape, elem)
    name = b.fresh("t")
    kind = b.pick(["bin", "unary", "select", "cast"])
    if kind == "bin":
        op = b.pick(["arith.addf", "arith.mulf", "arith.subf", "arith.maximumf", "arith.minimumf"]
                    if is_float(elem) else ["arith.addi", "arith.muli", "arith.maxsi", "arith.xori"])  # fmt: skip
        b.emit(f"{name} = {op} {x.name}, {y.name} : {t}")
        return b.add(name, shape, elem)
    if kind == "unary":
        op = b.pick(["math.tanh", "math.exp", "math.absf", "arith.negf", "math.floor"] if is_float(elem)
                    else ["math.absi"])  # fmt: skip
        b.emit(f"{name} = {op} {x.name} : {t}")
        return b.add(name, shape, elem)
    if kind == "select":
        c = b.fresh("cmp")
        pred = b.pick(["olt", "oge", "une"]) if is_float(elem) else b.pick(["slt", "uge", "ne"])
        cmp = "arith.cmpf" if is_float(elem) else "arith.cmpi"
        b.emit(f"{c} = {cmp} {pred}, {x.name}, {y.name} : {t}")
        b.emit(f"{name} = arith.select {c}, {x.name}, {y.name} : {ttype(shape, 'i1')}, {t}")
        return b.add(name, shape, elem)
    to = b.pick({"f32": ["f16", "bf16", "i32"], "f16": ["f32"], "i32": ["f32", "i8", "i64"]}[elem])
    op = {("f32", "f16"): "truncf", ("f32", "bf16"): "truncf", ("f32", "i32"): "fptosi", ("f16", "f32"): "extf",
          ("i32", "f32"): "sitofp", ("i32", "i8"): "trunci", ("i32", "i64"): "extsi"}[(elem, to)]  # fmt: skip
    b.emit(f"{name} = arith.{op} {x.name} : {t} to {ttype(shape, to)}")
    return b.add(name, shape, to)


_MATMUL_MAPS = {
    "nn": ["(d0, d2)", "(d2, d1)"],
    "nt": ["(d0, d2)", "(d1, d2)"],
    "tn": ["(d2, d0)", "(d2, d1)"],
}


def op_contraction(b: Builder) -> Val:
    """matmul / batch_matmul (plain or transposed maps), matvec / vecmat, a matmul-like generic;
    f32, f16 x f16 -> f32 and i8 x i8 -> i32."""
    kind = b.pick(["matmul", "matmul", "batch_matmul", "matvec", "vecmat", "generic"])
    in_e, acc_e = b.pick(
        [("f32", "f32"), ("f32", "f32"), ("f16", "f32"), ("f16", "f16"), ("i8", "i32"), ("bf16", "f32")]
    )
    m, n, k = b.pick(DIMS), b.pick(DIMS), b.pick([1, 2, 3, 4, 8, 16])
    layout = b.pick(sorted(_MATMUL_MAPS))
    prev = b.existing([2], [in_e]) if kind in ("matmul", "generic") else None
    if prev is not None:  # a computed value as the LHS
        m, k = prev.shape[::-1] if layout == "tn" else prev.shape
    if kind == "matvec":
        lhs, rhs, out = (m, k), (k,), (m,)
    elif kind == "vecmat":
        lhs, rhs, out = (k,), (k, n), (n,)
    elif kind == "batch_matmul":
        bt = b.pick([1, 2, 3])
        lhs = (bt, k, m) if layout == "tn" else (bt, m, k)
        rhs = (bt, n, k) if layout == "nt" else (bt, k, n)
        out = (bt, m, n)
    else:
        lhs = (k, m) if layout == "tn" else (m, k)
        rhs = (n, k) if layout == "nt" else (k, n)
        out = (m, n)
    a = prev or b.get(lhs, in_e)
    w = None
    if kind in ("matmul", "generic"):  # a weight computed so far (sliced, transposed, shared): k must agree
        kd = 1 if layout == "nt" else 0
        w = b.existing([2], [in_e], where=lambda v: v.shape[kd] == k and v is not a)
    if w is not None:
        n = w.shape[1 - kd]
        rhs = w.shape
        out = (m, n)
    elif in_e == "f32" and b.flag(0.25):
        w = widened_weight(b, rhs, in_e)
    else:
        w = b.get(rhs, in_e)
    init = b.init(out, acc_e)
    t = ttype(out, acc_e)
    name = b.fresh("mm")
    ins = f"ins({a.name}, {w.name} : {a.type}, {w.type}) outs({init} : {t})"
    if kind == "generic":
        maps = ", ".join(f"affine_map<(d0, d1, d2) -> {r}>" for r in [*_MATMUL_MAPS[layout], "(d0, d1)"])
        mul, add = ("mulf", "addf") if is_float(acc_e) else ("muli", "addi")
        cast_a = cast_b = ""
        x, y = "%p", "%q"
        if in_e != acc_e:
            c = "arith.extf" if is_float(in_e) else "arith.extsi"
            cast_a = f"  %pa = {c} %p : {in_e} to {acc_e}\n"
            cast_b = f"  %qa = {c} %q : {in_e} to {acc_e}\n"
            x, y = "%pa", "%qa"
        b.emit(
            f'{name} = linalg.generic {{indexing_maps = [{maps}], iterator_types = ["parallel", "parallel", '
            f'"reduction"]}} {ins} {{\n^bb0(%p: {in_e}, %q: {in_e}, %o: {acc_e}):\n{cast_a}{cast_b}'
            f"  %pq = arith.{mul} {x}, {y} : {acc_e}\n  %s = arith.{add} %o, %pq : {acc_e}\n"
            f"  linalg.yield %s : {acc_e}\n}} -> {t}"
        )
    elif kind in ("matmul", "batch_matmul") and layout != "nn":
        if kind == "matmul":
            maps = ", ".join(f"affine_map<(d0, d1, d2) -> {r}>" for r in [*_MATMUL_MAPS[layout], "(d0, d1)"])
        else:
            bmaps = {"nt": ["(d0, d1, d3)", "(d0, d2, d3)"], "tn": ["(d0, d3, d1)", "(d0, d3, d2)"]}[layout]
            maps = ", ".join(f"affine_map<(d0, d1, d2, d3) -> {r}>" for r in [*bmaps, "(d0, d1, d2)"])
        b.emit(f"{name} = linalg.{kind} indexing_maps = [{maps}] {ins} -> {t}")
    else:
        b.emit(f"{name} = linalg.{kind} {ins} -> {t}")
    return b.add(name, out, acc_e)


def widened_weight(b: Builder, shape: tuple[int, ...], elem: str) -> Val:
    """An f16 weight (constant or argument) widened to f32 by an extf generic, as f16 models do."""
    w = b.source(shape, "f16", b.pick(["const", "const", "arg"]))
    rank = len(shape)
    t = ttype(shape, elem)
    e = b.empty(shape, elem)
    name = b.fresh("wide")
    iters = ", ".join(['"parallel"'] * rank)
    b.emit(
        f"{name} = linalg.generic {{indexing_maps = [{ident(rank)}, {ident(rank)}], iterator_types = [{iters}]}} "
        f"ins({w.name} : {w.type}) outs({e} : {t}) {{\n^bb0(%h: f16, %o: {elem}):\n"
        f"  %x = arith.extf %h : f16 to {elem}\n  linalg.yield %x : {elem}\n}} -> {t}"
    )
    return b.add(name, shape, elem)


def op_slice(b: Builder) -> Val:
    src = b.operand([1, 2, 3], ["f32", "f32", "i32", "f16"])
    offs, sizes, strides = [], [], []
    for d in src.shape:
        st_ = b.pick([1, 1, 2]) if d > 2 else 1
        o = b.pick(range(d))
        size = b.pick(range(1, (d - 1 - o) // st_ + 2))
        offs.append(o)
        sizes.append(size)
        strides.append(st_)
    name = b.fresh("sl")
    res = tuple(sizes)
    if b.flag(0.2) and 1 in sizes and len(sizes) > 1:  # rank-reducing
        drop = sizes.index(1)
        res = tuple(s for i, s in enumerate(sizes) if i != drop)
    b.emit(f"{name} = tensor.extract_slice {src.name}{offs} {sizes} {strides} : {src.type} to {ttype(res, src.elem)}")
    out = b.add(name, res, src.elem)
    if b.flag(0.4) and res == tuple(sizes):  # put it back somewhere (insert_slice)
        dest = b.get(src.shape, src.elem)
        offs2 = [b.pick(range(d - (s - 1) * st_)) for d, s, st_ in zip(src.shape, sizes, strides, strict=True)]
        ins = b.fresh("ins")
        types = f"{out.type} into {dest.type}"
        b.emit(f"{ins} = tensor.insert_slice {name} into {dest.name}{offs2} {sizes} {strides} : {types}")
        return b.add(ins, src.shape, src.elem)
    return out


def op_reshape(b: Builder) -> Val:
    src = b.operand([2, 3, 3], ["f32", "f32", "i32"])
    rank = len(src.shape)
    cuts = sorted(b.draw(st.sets(st.sampled_from(range(1, rank)), max_size=rank - 1)))
    groups = [list(range(a, c)) for a, c in zip([0, *cuts], [*cuts, rank], strict=True)]
    collapsed = tuple(int(np.prod([src.shape[d] for d in g])) for g in groups)
    name = b.fresh("col")
    reassoc = "[" + ", ".join("[" + ", ".join(map(str, g)) + "]" for g in groups) + "]"
    b.emit(f"{name} = tensor.collapse_shape {src.name} {reassoc} : {src.type} into {ttype(collapsed, src.elem)}")
    v = b.add(name, collapsed, src.elem)
    if b.flag(0.6):  # and expand again, to the original or with a unit dim
        out_shape = src.shape
        if b.flag(0.3):
            groups = [[*g, rank] if i == len(groups) - 1 else g for i, g in enumerate(groups)]
            out_shape = (*src.shape, 1)
        reassoc = "[" + ", ".join("[" + ", ".join(map(str, g)) + "]" for g in groups) + "]"
        e = b.fresh("exp")
        b.emit(
            f"{e} = tensor.expand_shape {name} {reassoc} output_shape {list(out_shape)} : {v.type} "
            f"into {ttype(out_shape, src.elem)}"
        )
        return b.add(e, out_shape, src.elem)
    return v


def op_layout(b: Builder) -> Val:
    """linalg.transpose, linalg.broadcast, linalg.copy."""
    kind = b.pick(["transpose", "broadcast", "copy"])
    src = b.operand([1, 2, 3], ["f32", "f32", "i32", "f16"])
    rank = len(src.shape)
    name = b.fresh("lay")
    if kind == "transpose" and rank > 1:
        perm = list(b.draw(st.permutations(range(rank))))
        shape = tuple(src.shape[p] for p in perm)
        e = b.empty(shape, src.elem)
        b.emit(f"{name} = linalg.transpose ins({src.name} : {src.type}) outs({e} : {ttype(shape, src.elem)}) "
               f"permutation = {perm}")  # fmt: skip
        return b.add(name, shape, src.elem)
    if kind == "broadcast":
        out_rank = rank + b.pick([1, 1, 2])
        count = out_rank - rank
        new = sorted(b.draw(st.sets(st.sampled_from(range(out_rank)), min_size=count, max_size=count)))
        it = iter(src.shape)
        shape = tuple(b.pick(DIMS) if d in new else next(it) for d in range(out_rank))
        e = b.empty(shape, src.elem)
        b.emit(f"{name} = linalg.broadcast ins({src.name} : {src.type}) outs({e} : {ttype(shape, src.elem)}) "
               f"dimensions = {new}")  # fmt: skip
        return b.add(name, shape, src.elem)
    e = b.empty(src.shape, src.elem)
    b.emit(f"{name} = linalg.copy ins({src.name} : {src.type}) outs({e} : {src.type}) -> {src.type}")
    return b.add(name, src.shape, src.elem)


def op_concat(b: Builder) -> Val:
    shape = b.shape_like([1, 2, 3])
    rank = len(shape)
    elem = b.pick(["f32", "f32", "i32"])
    dim = b.pick(range(rank))
    parts = []
    for _ in range(b.pick([2, 2, 3])):
        s = list(shape)
        s[dim] = b.pick(DIMS)
        parts.append(b.get(tuple(s), elem))
    out = list(shape)
    out[dim] = sum(p.shape[dim] for p in parts)
    name = b.fresh("cat")
    t = ttype(tuple(out), elem)
    b.emit(
        f"{name} = tensor.concat dim({dim}) {', '.join(p.name for p in parts)} : "
        f"({', '.join(p.type for p in parts)}) -> {t}"
    )
    return b.add(name, tuple(out), elem)


def op_pad(b: Builder) -> Val:
    src = b.operand([1, 2, 3], ["f32", "f32", "i32"])
    low = [b.pick([0, 0, 1, 2]) for _ in src.shape]
    high = [b.pick([0, 1, 3]) for _ in src.shape]
    shape = tuple(lo + s + hi for lo, s, hi in zip(low, src.shape, high, strict=True))
    value = b.scalar(src.elem, "-0.5" if is_float(src.elem) else "7")
    args = ", ".join(f"{b.fresh('i')}: index" for _ in src.shape)
    name = b.fresh("pad")
    b.emit(
        f"{name} = tensor.pad {src.name} low{low} high{high} {{\n^bb0({args}):\n  tensor.yield {value} : {src.elem}\n"
        f"}} : {src.type} to {ttype(shape, src.elem)}"
    )
    return b.add(name, shape, src.elem)


def op_softmax(b: Builder) -> Val:
    x = b.operand([1, 2, 3], ["f32", "f32", "f16"])
    shape, elem = x.shape, x.elem
    e = b.empty(shape, elem)
    name = b.fresh("sm")
    b.emit(
        f"{name} = linalg.softmax dimension({b.pick(range(len(shape)))}) ins({x.name} : {x.type}) "
        f"outs({e} : {x.type}) -> {x.type}"
    )
    return b.add(name, shape, elem)


def op_gather(b: Builder) -> Val:
    """iree_linalg_ext.gather of rows; indices an argument (index_ranges keeps it valid) or a constant."""
    rows, cols = b.pick([2, 4, 5, 8]), b.pick(DIMS)
    src = b.get((rows, cols), b.pick(["f32", "f32", "f16"]))
    batch = b.pick([1, 2, 3, 4])
    ie = b.pick(["i32", "i64"])
    depth = b.flag()
    ishape = (batch, 1) if depth else (batch,)
    if b.flag(0.6):
        idx = b.source(ishape, ie, "arg")
    else:
        rng = np.random.default_rng(b.draw(st.integers(0, 999)))
        vals = [int(v) for v in rng.integers(0, rows, batch)]
        body = "[" + ", ".join(f"[{v}]" if depth else str(v) for v in vals) + "]"
        name = b.fresh("idx")
        b.emit(f"{name} = arith.constant dense<{body}> : {ttype(ishape, ie)}")
        idx = b.add(name, ishape, ie, computed=False)
    e = b.empty((batch, cols), src.elem)
    name = b.fresh("gat")
    t = ttype((batch, cols), src.elem)
    b.emit(
        f"{name} = iree_linalg_ext.gather dimension_map = [0] ins({src.name}, {idx.name} : {src.type}, {idx.type}) "
        f"outs({e} : {t}) -> {t}"
    )
    return b.add(name, (batch, cols), src.elem)


def op_embedding(b: Builder) -> Val:
    """torch-mlir's nn.Embedding: a generic reading the table with tensor.extract at index_cast ids,
    guarded by cf.assert bounds checks."""
    vocab, dim = b.pick([3, 5, 8, 16]), b.pick(DIMS)
    table = b.source((vocab, dim), "f32", b.pick(["const", "arg"]))
    ids_shape = b.dims(b.pick([1, 2]))
    ids = b.source(ids_shape, "i64", "arg")
    rank = len(ids_shape) + 1
    shape = (*ids_shape, dim)
    e = b.empty(shape, "f32")
    cv = b.scalar("index", str(vocab))
    c0 = b.scalar("i64", "0")
    t = ttype(shape, "f32")
    name = b.fresh("emb")
    iters = ", ".join(['"parallel"'] * rank)
    b.emit(
        f"{name} = linalg.generic {{indexing_maps = [{amap(rank, [f'd{i}' for i in range(rank - 1)])}, {ident(rank)}], "
        f"iterator_types = [{iters}]}} ins({ids.name} : {ids.type}) outs({e} : {t}) {{\n"
        f"^bb0(%id: i64, %o: f32):\n  %ix = arith.index_cast %id : i64 to index\n"
        f"  %j = linalg.index {rank - 1} : index\n  %lt = arith.cmpi slt, %ix, {cv} : index\n"
        f'  cf.assert %lt, "index must be smaller than dim size"\n  %ge = arith.cmpi sge, %id, {c0} : i64\n'
        f'  cf.assert %ge, "index must be larger or equal to 0"\n'
        f"  %x = tensor.extract {table.name}[%ix, %j] : {table.type}\n  linalg.yield %x : f32\n}} -> {t}"
    )
    return b.add(name, shape, "f32")


def op_attention(b: Builder) -> Val:
    """iree_linalg_ext.attention in IREE's form; no mask, a causal i1 mask or an additive f32 mask
    (built with linalg.index, cmpi and select, as torch's causal SDPA lowers)."""
    bt, m, n, k1, k2 = b.pick([1, 2]), b.pick([1, 2, 4]), b.pick([1, 2, 4, 5]), b.pick([2, 4, 8]), b.pick([2, 4])
    elem = b.pick(["f32", "f32", "f16"])
    q, k, v = b.get((bt, m, k1), elem), b.get((bt, n, k1), elem), b.get((bt, n, k2), elem)
    scale = b.scalar(elem, "0.5")
    maps = ["(d0, d1, d3)", "(d0, d4, d3)", "(d0, d4, d2)", "()"]
    operands = [q.name, k.name, v.name, scale]
    types = [q.type, k.type, v.type, elem]
    mask = b.pick(["none", "bool", "additive"])
    if mask != "none":
        me = "i1" if mask == "bool" else elem
        ms = (bt, m, n)
        mt = ttype(ms, me)
        e = b.empty(ms, me)
        name = b.fresh("mask")
        yes, no = ("true", "false") if me == "i1" else ("0.0", "0xFC00" if me == "f16" else "0xFF800000")
        cy, cn = b.scalar(me, yes), b.scalar(me, no)
        b.emit(
            f'{name} = linalg.generic {{indexing_maps = [{ident(3)}], iterator_types = ["parallel", "parallel", '
            f'"parallel"]}} outs({e} : {mt}) {{\n^bb0(%o: {me}):\n  %r = linalg.index 1 : index\n'
            f"  %c = linalg.index 2 : index\n  %ok = arith.cmpi sge, %r, %c : index\n"
            f"  %y = arith.select %ok, {cy}, {cn} : {me}\n  linalg.yield %y : {me}\n}} -> {mt}"
        )
        maps.append("(d0, d1, d4)")
        operands.append(name)
        types.append(mt)
    maps.append("(d0, d1, d2)")
    out = (bt, m, k2)
    t = ttype(out, elem)
    e = b.empty(out, elem)
    name = b.fresh("att")
    map_text = ", ".join(f"affine_map<(d0, d1, d2, d3, d4) -> {r}>" for r in maps)
    b.emit(
        f"{name} = iree_linalg_ext.attention <indexing_maps = [{map_text}]> ins({', '.join(operands)} : "
        f"{', '.join(types)}) outs({e} : {t}) {{\n^bb0(%s: f32):\n  iree_linalg_ext.yield %s : f32\n}} -> {t}"
    )
    return b.add(name, out, elem)


OPS = [
    op_elementwise_generic, op_elementwise_generic, op_reduction, op_reduction, op_tensor_elementwise,
    op_contraction, op_contraction, op_contraction, op_slice, op_reshape, op_layout, op_concat, op_pad,
    op_softmax, op_gather, op_embedding, op_attention,
]  # fmt: skip


@st.composite
def programs(draw: st.DrawFn) -> str:
    """A function of 1-6 ops from ``OPS``, returning 1-3 of the values it computes."""
    b = Builder(draw)
    made = [draw(st.sampled_from(OPS))(b) for _ in range(draw(st.integers(1, 6)))]
    unused = [v for v in made if not any(f"{v.name} " in line or f"{v.name}," in line or f"{v.name})" in line
                                         for line in b.lines)]  # fmt: skip
    results = (unused or made)[-3:]
    return b.text(results)


# ------------------------------------------------------------------------------------ tests


def explore_exit(program: str, target: str, start: str, *extra: str) -> tuple[int, str]:
    """``egg-dispatch explore FILE --check ...`` in this process: (exit code, stderr)."""
    path = TMP / "program.mlir"
    path.write_text(program)
    # Without the compile check (iree.compile_check: an iree-compile run per new plan, +50% here at 600
    # examples); tests/test_compile_check.py's property compiles random programs' plans whole instead.
    argv = ["explore", str(path), "--check", "--baseline", "modelled", "--target", target, "--emit", "json"]
    argv.append("--no-compile-check")
    done = cli_process(*argv, "--from", start, *extra)
    return done.returncode, done.stderr


def check_program(program: str, target: str, start: str = "input", *extra: str) -> None:
    rc, err = explore_exit(program, target, start, *extra)
    if rc != 0:
        kind = {1: "a plan computes other numbers", 2: "refused (unsupported)", 3: "internal error"}.get(rc, "?")
        pytest.fail(f"explore --check exited {rc} ({kind}) on {target}:\n{err}\n{program}")


@pytest.mark.slow
@settings(max_examples=examples(AS_GIVEN))
@given(programs(), st.sampled_from(TARGETS), st.booleans())
def test_explore_check_as_given(program: str, target: str, pareto: bool) -> None:
    check_program(program, target, "input", *(["--pareto"] if pareto else []))


needs_iree = pytest.mark.skipif(find_tool("iree-compile") is None, reason="iree-compile not installed")


@needs_iree
@pytest.mark.slow
@pytest.mark.iree
@settings(max_examples=examples(AFTER_IREE))
@given(programs(), st.sampled_from(TARGETS), st.booleans())
def test_explore_check_after_iree_global_optimization(program: str, target: str, pareto: bool) -> None:
    check_program(program, target, "auto", *(["--pareto"] if pareto else []))


def run_cli(argv: list[str]) -> tuple[int, str, str]:
    """``egg-dispatch ARGV`` in this process (``cli_process``): (exit code, stdout, stderr)."""
    done = cli_process(*argv)
    return done.returncode, done.stdout, done.stderr


@pytest.mark.slow
@settings(max_examples=examples(EMITTED))
@given(programs(), st.sampled_from(TARGETS))
def test_check_of_the_emitted_plan(program: str, target: str) -> None:
    """``explore --emit mlir`` prints the plan (encodings, hoisted globals, initializers, dispatch
    regions); ``check`` reads it back and its plain and physically packed runs agree (exit 0)."""
    src, plan = TMP / "source.mlir", TMP / "plan.mlir"
    src.write_text(program)
    explore = ["explore", str(src), "--baseline", "modelled", "--target", target, "--emit", "mlir", "--from", "input"]
    explore.append("--no-compile-check")  # as explore_exit: the plan's numbers are what is checked here
    rc, out, err = run_cli(explore)
    assert rc == 0, f"{err}\n{program}"
    plan.write_text(out)
    rc, report, err = run_cli(["check", str(plan), "--target", target])
    assert rc == 0, f"check exited {rc} on {target}:\n{err}{report}\n{out}\nfrom\n{program}"


@pytest.mark.slow
@pytest.mark.skipif(find_tool("iree-opt") is None, reason="iree-opt not installed")
@pytest.mark.iree
@settings(max_examples=examples(VALID_MLIR // BATCH))
@given(st.lists(programs(), min_size=BATCH, max_size=BATCH))
def test_generated_programs_are_valid_mlir(batch: list[str]) -> None:
    for program, (ok, err) in zip(batch, iree_opt_parses_each(batch), strict=True):
        assert ok, f"{err}\n{program}"


# ------------------------------------------------------------------------------- regressions

REGRESSIONS = {
    # A matvec / vecmat on packed operands: IREE expands the packed vector to an mmt4d operand.
    "packed_matvec": """
func.func @main(%v: tensor<4xi8>) -> (tensor<5xi32>, tensor<5xi32>) {
  %w = arith.constant dense<[[-8, -1, -1, 7], [-6, 4, 6, -2], [-1, -6, -2, 7], [-6, 6, -8, 0], [-1, 4, -4, 5]]>
      : tensor<5x4xi8>
  %wt = arith.constant dense<3> : tensor<4x5xi8>
  %e = tensor.empty() : tensor<5xi32>
  %c0 = arith.constant 0 : i32
  %z = linalg.fill ins(%c0 : i32) outs(%e : tensor<5xi32>) -> tensor<5xi32>
  %mv = linalg.matvec ins(%w, %v : tensor<5x4xi8>, tensor<4xi8>) outs(%z : tensor<5xi32>) -> tensor<5xi32>
  %vm = linalg.vecmat ins(%v, %wt : tensor<4xi8>, tensor<4x5xi8>) outs(%z : tensor<5xi32>) -> tensor<5xi32>
  return %mv, %vm : tensor<5xi32>, tensor<5xi32>
}""",
    # IREE's ABI after global optimization: an argument returned as is (never imported), one unused,
    # one imported and also returned as is.
    "abi_pass_through": """
util.func public @main(%arg0: !hal.buffer_view, %arg1: !hal.buffer_view, %arg2: !hal.buffer_view)
    -> (!hal.buffer_view, !hal.buffer_view, !hal.buffer_view) attributes {iree.abi.stub, iree.reflection = {
    iree.abi.declaration = "sync func @main(%input0: tensor<3xf32>, %input1: tensor<2x4xf32>, %input2: tensor<4xf32>) \
-> (%output0: tensor<3xf32>, %output1: tensor<2x4xf32>, %output2: tensor<2x4xf32>)"}} {
  %0 = hal.tensor.import %arg1 "input1" : !hal.buffer_view -> tensor<2x4xf32>
  %cst = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<2x4xf32>
  %f = linalg.fill ins(%cst : f32) outs(%e : tensor<2x4xf32>) -> tensor<2x4xf32>
  %w = arith.constant dense<0.25> : tensor<4x4xf32>
  %m = linalg.matmul ins(%0, %w : tensor<2x4xf32>, tensor<4x4xf32>) outs(%f : tensor<2x4xf32>) -> tensor<2x4xf32>
  %1 = hal.tensor.export %m "output1" : tensor<2x4xf32> -> !hal.buffer_view
  util.return %arg0, %1, %arg1 : !hal.buffer_view, !hal.buffer_view, !hal.buffer_view
}""",
    # A gather of one row, as global optimization folds it: a dynamic slice at an index input.
    "dynamic_slice_index": """
func.func @main(%table: tensor<2x3xf32>, %i: tensor<i32>) -> tensor<1x3xf32> {
  %x = tensor.extract %i[] : tensor<i32>
  %j = arith.index_cast %x : i32 to index
  %row = tensor.extract_slice %table[%j, 0] [1, 3] [1, 1] : tensor<2x3xf32> to tensor<3xf32>
  %r = tensor.expand_shape %row [[0, 1]] output_shape [1, 3] : tensor<3xf32> into tensor<1x3xf32>
  return %r : tensor<1x3xf32>
}""",
    # Attention whose unit key dim (k2) and head dim (k1) global optimization folded away.
    "attention_folded_dims": """
func.func @main(%q: tensor<2x4x8xf32>, %k: tensor<2x8xf32>, %v: tensor<2x4xf32>, %m: tensor<2x4xi1>,
                %q1: tensor<2x4xf32>, %k1: tensor<2x5xf32>, %v1: tensor<2x5x3xf32>)
    -> (tensor<2x4x4xf32>, tensor<2x4x3xf32>) {
  %s = arith.constant 0.5 : f32
  %e = tensor.empty() : tensor<2x4x4xf32>
  %o = iree_linalg_ext.attention <indexing_maps = [affine_map<(d0, d1, d2, d3) -> (d0, d1, d3)>,
      affine_map<(d0, d1, d2, d3) -> (d0, d3)>, affine_map<(d0, d1, d2, d3) -> (d0, d2)>,
      affine_map<(d0, d1, d2, d3) -> ()>, affine_map<(d0, d1, d2, d3) -> (d0, d1)>,
      affine_map<(d0, d1, d2, d3) -> (d0, d1, d2)>]>
      ins(%q, %k, %v, %s, %m : tensor<2x4x8xf32>, tensor<2x8xf32>, tensor<2x4xf32>, f32, tensor<2x4xi1>)
      outs(%e : tensor<2x4x4xf32>) {
  ^bb0(%x: f32):
    iree_linalg_ext.yield %x : f32
  } -> tensor<2x4x4xf32>
  %e1 = tensor.empty() : tensor<2x4x3xf32>
  %o1 = iree_linalg_ext.attention <indexing_maps = [affine_map<(d0, d1, d2, d3) -> (d0, d1)>,
      affine_map<(d0, d1, d2, d3) -> (d0, d3)>, affine_map<(d0, d1, d2, d3) -> (d0, d3, d2)>,
      affine_map<(d0, d1, d2, d3) -> ()>, affine_map<(d0, d1, d2, d3) -> (d0, d1, d2)>]>
      ins(%q1, %k1, %v1, %s : tensor<2x4xf32>, tensor<2x5xf32>, tensor<2x5x3xf32>, f32)
      outs(%e1 : tensor<2x4x3xf32>) {
  ^bb0(%x: f32):
    iree_linalg_ext.yield %x : f32
  } -> tensor<2x4x3xf32>
  return %o, %o1 : tensor<2x4x4xf32>, tensor<2x4x3xf32>
}""",
}
"""Programs the property tests found bugs with (reduced), explored as given on every target."""


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("name", sorted(REGRESSIONS))
def test_regressions(name: str, target: str) -> None:
    check_program(REGRESSIONS[name], target)


# ------------------------------------------------------------------------------------ dynamic dims
# Programs with dynamic dims (issue 12): the rows of the first argument are '?', read by tensor.dim and
# maybe bounded by util.assume.int (a range, a multiple of 8 or 16), and flow through elementwise
# generics (broadcast bias along rows or columns), reductions over a static dim with their broadcast
# back, softmax, transposes (the dim becomes a column: a dynamic N of a later matmul), matmuls with a
# dynamic M, N or K (a Gram matrix reduces over it), batch matmuls through expand/collapse_shape,
# column slices of dynamic size and row splits at a dynamic offset (tensor.empty of every dynamic size
# and arith on sizes). explore --check evaluates every plan at several sizes per dim (1, 13, 16 when
# nothing bounds it; values the assumption allows otherwise), so one plan must be right at all of them.

DYN_ASSUMES = (
    ("", 1),
    ("", 1),
    ("<umin = 1, umax = 32>", 1),
    ("<umin = 8, umax = 64, udiv = 8>", 8),
    ("<umin = 16, umax = 128, udiv = 16>", 16),
)


@dataclass
class DynVal:
    name: str
    shape: tuple[int | str, ...]
    """A static size, or the SSA name of an index value (a dynamic size)."""

    @property
    def type(self) -> str:
        return "tensor<" + "".join(f"{'?' if isinstance(d, str) else d}x" for d in self.shape) + "f32>"

    @property
    def dims(self) -> str:
        return ", ".join(d for d in self.shape if isinstance(d, str))


@dataclass
class DynBuilder:
    draw: st.DrawFn
    lines: list[str] = field(default_factory=list)
    values: list[DynVal] = field(default_factory=list)
    args: list[DynVal] = field(default_factory=list)
    umin: int = 1
    n: int = 0

    def fresh(self, p: str = "v") -> str:
        self.n += 1
        return f"%{p}{self.n}"

    def pick(self, options):
        return self.draw(st.sampled_from(list(options)))

    def emit(self, line: str) -> None:
        self.lines.append("  " + line.replace("\n", "\n  "))

    def add(self, shape: tuple[int | str, ...], name: str | None = None) -> DynVal:
        v = DynVal(name or self.fresh(), shape)
        self.values.append(v)
        return v

    def const(self, shape: tuple[int, ...]) -> DynVal:
        rng = np.random.default_rng(self.draw(st.integers(0, 2**16)))
        flat = [f"{v:.4f}" for v in (rng.integers(-8, 9, int(np.prod(shape))) / 8)]

        def nest(items: list[str], dims: tuple[int, ...]) -> str:
            if len(dims) == 1:
                return "[" + ", ".join(items) + "]"
            step = len(items) // dims[0]
            return "[" + ", ".join(nest(items[i * step : (i + 1) * step], dims[1:]) for i in range(dims[0])) + "]"

        body = nest(flat, shape)
        name = self.fresh("w")
        v = DynVal(name, shape)
        self.emit(f"{name} = arith.constant dense<{body}> : {v.type}")
        return v

    def weight(self, shape: tuple[int, ...]) -> DynVal:
        """A constant or a new (static) argument."""
        if self.draw(st.booleans()):
            return self.const(shape)
        v = DynVal(f"%a{len(self.args)}", shape)
        self.args.append(v)
        return v

    def init(self, shape: tuple[int | str, ...], fill: str | None = "0.0") -> str:
        out = DynVal(self.fresh("e"), shape)
        self.emit(f"{out.name} = tensor.empty({out.dims}) : {out.type}")
        if fill is None:
            return out.name
        c = self.fresh("c")
        self.emit(f"{c} = arith.constant {fill} : f32")
        f = self.fresh("fill")
        self.emit(f"{f} = linalg.fill ins({c} : f32) outs({out.name} : {out.type}) -> {out.type}")
        return f

    def generic(self, ins: list[DynVal], maps: list[str], out_shape: tuple[int | str, ...], body: str,
                iterators: list[str] | None = None, init: str | None = None) -> DynVal:  # fmt: skip
        rank = len(maps[-1].split("(")[1].split(","))
        out = DynVal(self.fresh(), out_shape)
        init = init or self.init(out_shape, None)
        its = ", ".join(f'"{i}"' for i in (iterators or ["parallel"] * rank))
        args = ", ".join(f"%in{i}: f32" for i in range(len(ins))) + ", %out: f32"
        self.emit(
            f"{out.name} = linalg.generic {{indexing_maps = [{', '.join(maps)}], iterator_types = [{its}]}} "
            f"ins({', '.join(v.name for v in ins)} : {', '.join(v.type for v in ins)}) outs({init} : {out.type}) {{\n"
            f"^bb0({args}):\n{body}\n}} -> {out.type}"
        )
        self.values.append(out)
        return out

    def dynamic(self, rank: int | None = None) -> DynVal:
        have = [v for v in self.values if any(isinstance(d, str) for d in v.shape) and rank in (None, len(v.shape))]
        return have[-1] if have and self.draw(st.integers(0, 9)) < 7 else self.pick(have or self.values)

    def text(self, results: list[DynVal]) -> str:
        sig = ", ".join(f"{a.name}: {a.type}" for a in self.args)
        rets = ", ".join(v.type for v in results)
        return (
            f"func.func @main({sig}) -> ({rets}) {{\n" + "\n".join(self.lines)
            + f"\n  return {', '.join(v.name for v in results)} : {rets}\n}}\n"
        )  # fmt: skip


def dyn_elementwise(b: DynBuilder) -> DynVal:
    x = b.dynamic(2)
    if len(x.shape) != 2:
        return x
    kind = b.pick(["unary", "bias_cols", "bias_rows", "self"])
    id2, cols, rows = amap(2, ["d0", "d1"]), amap(2, ["d1"]), amap(2, ["d0"])
    if kind == "unary":
        op = b.pick(["math.exp", "math.tanh", "arith.negf", "math.absf"])
        return b.generic([x], [id2, id2], x.shape, f"  %r = {op} %in0 : f32\n  linalg.yield %r : f32")
    if kind == "self":
        return b.generic(
            [x, x], [id2, id2, id2], x.shape, "  %r = arith.mulf %in0, %in1 : f32\n  linalg.yield %r : f32"
        )
    d = 1 if kind == "bias_cols" else 0
    if isinstance(x.shape[d], str):  # a bias along a dynamic dim: broadcast the other way
        d = 1 - d
    if isinstance(x.shape[d], str):
        return x
    bias = b.weight((x.shape[d],))  # type: ignore[arg-type]
    return b.generic([x, bias], [id2, cols if d == 1 else rows, id2], x.shape,
                     "  %r = arith.addf %in0, %in1 : f32\n  linalg.yield %r : f32")  # fmt: skip


def dyn_matmul(b: DynBuilder) -> DynVal:
    x = b.dynamic(2)
    if len(x.shape) != 2:
        return x
    m, k = x.shape
    if isinstance(k, str):  # x is [K, ?]-like: W [N', k-rows] times x
        if isinstance(m, str):
            return x
        w = b.weight((b.pick(DIMS), m))  # type: ignore[arg-type]
        lhs, rhs, shape = w, x, (w.shape[0], k)
        maps = ""
    else:
        n = b.pick(DIMS)
        transposed = b.draw(st.booleans())
        w = b.weight((n, k) if transposed else (k, n))
        lhs, rhs, shape = x, w, (m, n)
        maps = (
            f"indexing_maps = [{amap(3, ['d0', 'd2'])}, {amap(3, ['d1', 'd2'])}, {amap(3, ['d0', 'd1'])}] "
            if transposed
            else ""
        )
    init = b.init(shape)
    out = DynVal(b.fresh("mm"), shape)
    b.emit(f"{out.name} = linalg.matmul {maps}ins({lhs.name}, {rhs.name} : {lhs.type}, {rhs.type}) "
           f"outs({init} : {out.type}) -> {out.type}")  # fmt: skip
    b.values.append(out)
    return out


def dyn_gram(b: DynBuilder) -> DynVal:
    """X^T X: a matmul reducing over the dynamic dim (through a transpose)."""
    x = b.dynamic(2)
    if len(x.shape) != 2 or not isinstance(x.shape[0], str) or isinstance(x.shape[1], str):
        return x
    t = dyn_transpose(b, x)
    init = b.init((x.shape[1], x.shape[1]))
    out = DynVal(b.fresh("gram"), (x.shape[1], x.shape[1]))
    b.emit(f"{out.name} = linalg.matmul ins({t.name}, {x.name} : {t.type}, {x.type}) outs({init} : {out.type}) "
           f"-> {out.type}")  # fmt: skip
    b.values.append(out)
    return out


def dyn_transpose(b: DynBuilder, x: DynVal | None = None) -> DynVal:
    x = x or b.dynamic(2)
    if len(x.shape) != 2:
        return x
    shape = (x.shape[1], x.shape[0])
    init = b.init(shape, None)
    out = DynVal(b.fresh("tr"), shape)
    b.emit(f"{out.name} = linalg.transpose ins({x.name} : {x.type}) outs({init} : {out.type}) permutation = [1, 0]")
    b.values.append(out)
    return out


def dyn_reduce(b: DynBuilder) -> DynVal:
    """Row sums over the static dim, broadcast back and subtracted (a centring)."""
    x = b.dynamic(2)
    if len(x.shape) != 2 or isinstance(x.shape[1], str):
        return x
    init = b.init((x.shape[0],))
    body = "  %r = arith.addf %in0, %out : f32\n  linalg.yield %r : f32"
    s = b.generic([x], [amap(2, ["d0", "d1"]), amap(2, ["d0"])], (x.shape[0],), body, ["parallel", "reduction"], init)
    id2 = amap(2, ["d0", "d1"])
    return b.generic([x, s], [id2, amap(2, ["d0"]), id2], x.shape,
                     "  %r = arith.subf %in0, %in1 : f32\n  linalg.yield %r : f32")  # fmt: skip


def dyn_softmax(b: DynBuilder) -> DynVal:
    x = b.dynamic(2)
    if len(x.shape) != 2:
        return x
    init = b.init(x.shape, None)
    out = DynVal(b.fresh("sm"), x.shape)
    b.emit(f"{out.name} = linalg.softmax dimension(1) ins({x.name} : {x.type}) outs({init} : {out.type}) -> {out.type}")
    b.values.append(out)
    return out


def dyn_batch_matmul(b: DynBuilder) -> DynVal:
    """[?, K] -> [1, ?, K] (expand_shape), a batch matmul with [1, K, N], collapsed back to [?, N]."""
    x = b.dynamic(2)
    if len(x.shape) != 2 or not isinstance(x.shape[0], str) or isinstance(x.shape[1], str):
        return x
    m, k = x.shape
    e = DynVal(b.fresh("ex"), (1, m, k))
    b.emit(f"{e.name} = tensor.expand_shape {x.name} [[0, 1], [2]] output_shape [1, {m}, {k}] : {x.type} into {e.type}")
    n = b.pick(DIMS)
    w = b.const((1, k, n))  # type: ignore[arg-type]
    init = b.init((1, m, n))
    r = DynVal(b.fresh("bmm"), (1, m, n))
    b.emit(f"{r.name} = linalg.batch_matmul ins({e.name}, {w.name} : {e.type}, {w.type}) outs({init} : {r.type}) "
           f"-> {r.type}")  # fmt: skip
    c = b.add((m, n), b.fresh("co"))
    b.emit(f"{c.name} = tensor.collapse_shape {r.name} [[0, 1], [2]] : {r.type} into {c.type}")
    return c


def dyn_slice(b: DynBuilder) -> DynVal:
    """Columns [0, k') of every row (a dynamic size), or rows [h, ?) (a dynamic offset and size)."""
    x = b.dynamic(2)
    if len(x.shape) != 2 or not isinstance(x.shape[0], str) or isinstance(x.shape[1], str):
        return x
    m, k = x.shape
    rows = [h for h in (1, 3, 8) if h < b.umin]
    if rows and b.draw(st.booleans()):
        h = b.pick(rows)
        c, rest = b.fresh("h"), b.fresh("rest")
        b.emit(f"{c} = arith.constant {h} : index")
        b.emit(f"{rest} = arith.subi {m}, {c} : index")
        out = DynVal(b.fresh("sl"), (rest, k))
        b.emit(f"{out.name} = tensor.extract_slice {x.name}[{c}, 0] [{rest}, {k}] [1, 1] : {x.type} to {out.type}")
    else:
        kk = b.draw(st.integers(1, k))  # type: ignore[arg-type]
        out = DynVal(b.fresh("sl"), (m, kk))
        b.emit(f"{out.name} = tensor.extract_slice {x.name}[0, 0] [{m}, {kk}] [1, 1] : {x.type} to {out.type}")
    b.values.append(out)
    return out


DYN_OPS = (dyn_elementwise, dyn_matmul, dyn_matmul, dyn_gram, dyn_transpose, dyn_reduce, dyn_softmax,
           dyn_batch_matmul, dyn_slice)  # fmt: skip


@st.composite
def dynamic_programs(draw: st.DrawFn) -> str:
    """A function whose first argument has dynamic rows, and 1-5 ops from ``DYN_OPS`` on it."""
    b = DynBuilder(draw)
    assume, b.umin = draw(st.sampled_from(DYN_ASSUMES))
    k = draw(st.sampled_from(DIMS))
    x = DynVal("%a0", ("%m", k))
    b.args.append(x)
    b.emit("%i0 = arith.constant 0 : index")
    if assume:
        b.emit(f"%d = tensor.dim %a0, %i0 : {x.type}")
        b.emit(f"%m = util.assume.int %d{assume} : index")
    else:
        b.emit(f"%m = tensor.dim %a0, %i0 : {x.type}")
    b.values.append(x)
    made = [draw(st.sampled_from(DYN_OPS))(b) for _ in range(draw(st.integers(1, 5)))]
    results = [v for v in made if v.name != "%a0"][-2:] or [dyn_elementwise(b)]
    return b.text(list({v.name: v for v in results}.values()))


@pytest.mark.slow
@settings(max_examples=examples(DYNAMIC))
@given(dynamic_programs(), st.sampled_from(TARGETS), st.booleans())
def test_explore_check_dynamic(program: str, target: str, pareto: bool) -> None:
    check_program(program, target, "input", *(["--pareto"] if pareto else []))


@pytest.mark.slow
@settings(max_examples=examples(EMITTED_DYNAMIC))
@given(dynamic_programs(), st.sampled_from(TARGETS))
def test_check_of_the_emitted_dynamic_plan(program: str, target: str) -> None:
    """The printed dynamic plan ({%d} lists, tensor.empty(%d), dynamic slices, util.assume.int) reads back,
    and check runs it plain and packed at several sizes per dim (exit 0)."""
    src, plan = TMP / "dyn_source.mlir", TMP / "dyn_plan.mlir"
    src.write_text(program)
    explore = ["explore", str(src), "--baseline", "modelled", "--target", target, "--emit", "mlir", "--from", "input"]
    explore.append("--no-compile-check")  # as explore_exit: the plan's numbers are what is checked here
    rc, out, err = run_cli(explore)
    assert rc == 0, f"{err}\n{program}"
    plan.write_text(out)
    rc, report, err = run_cli(["check", str(plan), "--target", target])
    assert rc == 0, f"check exited {rc} on {target}:\n{err}{report}\n{out}\nfrom\n{program}"
    assert "at " in report, report  # checked at named sizes


@pytest.mark.skipif(find_tool("iree-opt") is None, reason="iree-opt not installed")
@pytest.mark.iree
@settings(max_examples=examples(VALID_DYNAMIC_MLIR // BATCH))
@given(st.lists(dynamic_programs(), min_size=BATCH, max_size=BATCH))
def test_generated_dynamic_programs_are_valid_mlir(batch: list[str]) -> None:
    for program, (ok, err) in zip(batch, iree_opt_parses_each(batch), strict=True):
        assert ok, f"{err}\n{program}"
