"""Random small programs in IREE's input form, for asking whether IREE's own plan is in the e-graph.

``program(seed_or_params)`` writes one ``func.func @main`` (tensor arguments, linalg on tensors,
``arith.constant dense<...>`` weights) with one to four contractions and the patterns IREE 3.13's
data-tiling passes care about:

* contractions: ``linalg.matmul`` (plain, or with a transposed RHS through ``indexing_maps``),
  ``linalg.batch_matmul``, and ``linalg.generic`` contractions (transposed RHS, 2-d or batched);
* element types: f32; f16 operands (``f16 x f16 -> f32``, or an ``extf`` producer generic);
  ``i8 x i8 -> i32`` with a ``sitofp * scale`` consumer, fed by an i8 argument or by a quantizing
  ``fptosi`` producer;
* weights: function arguments, constants (splat, explicit literals when small, ``dense<"0x...">`` hex
  otherwise), parts of a larger constant (``tensor.extract_slice``), dequantized i8 constants (a
  ``sitofp * scale`` generic with a per-channel scale), f16 constants extended to f32, and constants
  broadcast to a batch (``linalg.broadcast``);
* consumers (elementwise ``linalg.generic``): bias, ReLU, bias + ReLU, a SiLU gate of two matmuls of
  one activation (a shared operand: both weights sliced from one constant, or two arguments), and
  requantization to i8 feeding the next (i8) matmul;
* reshapes: ``tensor.expand_shape`` / ``collapse_shape`` round trips, and a batch collapsed into rows
  for a 2-d matmul and expanded back;
* outputs split in two by ``tensor.extract_slice``; a second matmul reading the same argument;
* a dynamic leading dimension (``tensor<?x64xf32>``) in some programs.

Dims are small (4..128). The choices of one program are a ``Params`` (its size and element type, and a
seed for the rest), so that ``program`` is deterministic for an int seed and a hypothesis strategy
(``programs()``) can draw and shrink the top-level choices::

    .venv/bin/python benchmarks/random_programs.py 7            # print seed 7's program
    .venv/bin/python benchmarks/random_programs.py --check 200  # every seed < 200 through iree-compile
"""

from __future__ import annotations

import argparse
import random
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from ssa_writer import Dim, SsaWriter, Value, affine_map, float_literal, tensor_type

__all__ = ["Params", "params_of", "program", "programs"]

DIMS = (4, 8, 12, 16, 24, 32, 48, 64, 100, 128)
EVEN = (8, 16, 32, 64, 128)
WORLDS = ("f32", "f16", "i8", "quant")


@dataclass(frozen=True)
class Params:
    """The top-level choices of one program; ``seed`` decides the rest."""

    contractions: int = 2
    """Layers of contractions, 1..4 (a SiLU-gated layer has two)."""
    world: str = "f32"
    """The input's element type: f32, f16, i8 (an i8 argument), quant (f32 quantized to i8)."""
    batched: bool = False
    """A 3-d activation (batch matmuls, broadcast weights, collapse/expand around 2-d matmuls)."""
    dynamic: bool = False
    """The leading dimension of the input is dynamic."""
    seed: int = 0


def params_of(seed: int) -> Params:
    """The ``Params`` of an int seed (what ``program(seed)`` writes)."""
    r = random.Random(seed * 7919 + 17)
    return Params(
        contractions=r.choice((1, 1, 2, 2, 3, 4)),
        world=r.choice(("f32", "f32", "f32", "f16", "i8", "quant")),
        batched=r.random() < 0.3,
        dynamic=r.random() < 0.25,
        seed=seed,
    )


_ttype = tensor_type
_float_literal = float_literal


def _map(n: int, results: list[int]) -> str:
    return affine_map(n, [f"d{i}" for i in results])


class Builder(SsaWriter):
    """Writes one function body, with a fresh SSA name per value (bodies included)."""

    def __init__(self, rng: random.Random) -> None:
        super().__init__(rng)
        self.index_consts: dict[int, str] = {}

    def index(self, k: int) -> str:
        if k not in self.index_consts:
            name = self.fresh("c")
            self.emit(f"{name} = arith.constant {k} : index")
            self.index_consts[k] = name
        return self.index_consts[k]

    def dyn_sizes(self, shape: list[Dim]) -> str:
        return ", ".join(d for d in shape if isinstance(d, str))

    def empty(self, shape: list[Dim], et: str) -> Value:
        name = self.fresh("e")
        self.emit(f"{name} = tensor.empty({self.dyn_sizes(shape)}) : {_ttype(shape, et)}")
        return Value(name, shape, et)

    def zero(self, shape: list[Dim], et: str) -> Value:
        e = self.empty(shape, et)
        z = self.fresh("z")
        lit = "0.000000e+00" if et.startswith("f") else "0"
        self.emit(f"{z} = arith.constant {lit} : {et}")
        name = self.fresh("acc")
        self.emit(f"{name} = linalg.fill ins({z} : {et}) outs({e.name} : {e.type}) -> {e.type}")
        return Value(name, shape, et)

    # ------------------------------------------------------------------------------------ constants

    def const(self, shape: list[int], et: str) -> Value:
        """A constant weight: splat, explicit literal (small) or hex (larger)."""
        n = int(np.prod(shape))
        name = self.fresh("w")
        t = _ttype(list(shape), et)
        form = self.r.random()
        if form < 0.12:
            v = self.r.choice((1, 2, -1, 3)) if et.startswith("i") else self.r.choice((0.5, 0.25, -0.125, 1.0))
            lit = str(v) if et.startswith("i") else _float_literal(float(v))
            self.emit(f"{name} = arith.constant dense<{lit}> : {t}")
            return Value(name, list(shape), et)
        if et.startswith("i"):
            vals = self.np.randint(-8, 9, size=n).astype(np.int8 if et == "i8" else np.int32)
        else:
            vals = (self.np.randint(-8, 9, size=n) / 16.0).astype(np.float16 if et == "f16" else np.float32)
        if n <= 16 and form < 0.6:
            arr = vals.reshape(shape)
            self.emit(f"{name} = arith.constant dense<{_nested(arr.tolist(), et)}> : {t}")
        else:
            self.emit(f'{name} = arith.constant dense<"0x{vals.tobytes().hex().upper()}"> : {t}')
        return Value(name, list(shape), et)

    def scalar(self, v: float | int, et: str) -> str:
        name = self.fresh("s")
        lit = str(int(v)) if et.startswith("i") else _float_literal(float(v))
        self.emit(f"{name} = arith.constant {lit} : {et}")
        return name

    # ------------------------------------------------------------------------------------- generics

    def generic(
        self,
        inputs: list[tuple[Value, list[int]]],
        out_shape: list[Dim],
        out_et: str,
        body: list[str],
        result: str,
    ) -> Value:
        """An elementwise ``linalg.generic`` over ``out_shape``; each input with the dims it reads.
        ``body`` lines use ``{a0}``, ``{a1}``... for the block arguments and ``{t0}``... for fresh
        names; ``result`` names the yielded value."""
        rank = len(out_shape)
        e = self.empty(out_shape, out_et)
        maps = [_map(rank, dims) for _, dims in inputs] + [_map(rank, list(range(rank)))]
        iters = ", ".join(['"parallel"'] * rank)
        ins = ", ".join(v.name for v, _ in inputs)
        ins_t = ", ".join(v.type for v, _ in inputs)
        name = self.fresh("g")
        bargs = {f"a{i}": self.fresh("in") for i in range(len(inputs))}
        out_arg = self.fresh("out")
        temps = {f"t{i}": self.fresh("b") for i in range(8)}
        head = ", ".join(f"{bargs[f'a{i}']}: {v.et}" for i, (v, _) in enumerate(inputs))
        self.emit(
            f"{name} = linalg.generic {{indexing_maps = [{', '.join(maps)}], iterator_types = [{iters}]}} "
            f"ins({ins} : {ins_t}) outs({e.name} : {e.type}) {{"
        )
        self.lines.append(f"  ^bb0({head}, {out_arg}: {out_et}):")
        for line in body:
            self.lines.append("    " + line.format(**bargs, **temps))
        self.lines.append(f"    linalg.yield {result.format(**bargs, **temps)} : {out_et}")
        self.lines.append(f"  }} -> {e.type}")
        return Value(name, list(out_shape), out_et)

    def unary(self, x: Value, out_et: str, body: list[str], result: str) -> Value:
        rank = len(x.shape)
        return self.generic([(x, list(range(rank)))], x.shape, out_et, body, result)

    # ------------------------------------------------------------------------------------- reshapes

    def product(self, a: Dim, b: Dim) -> Dim:
        if isinstance(a, int) and isinstance(b, int):
            return a * b
        name = self.fresh("n")
        x = a if isinstance(a, str) else self.index(a)
        y = b if isinstance(b, str) else self.index(b)
        self.emit(f"{name} = arith.muli {x}, {y} : index")
        return name

    def collapse_lead(self, x: Value) -> Value:
        """[B, M, K] -> [B*M, K]."""
        b, m, k = x.shape
        shape = [self.product(b, m), k]
        name = self.fresh("r")
        self.emit(f"{name} = tensor.collapse_shape {x.name} [[0, 1], [2]] : {x.type} into {_ttype(shape, x.et)}")
        return Value(name, shape, x.et)

    def expand_lead(self, x: Value, b: Dim, m: Dim) -> Value:
        """[B*M, N] -> [B, M, N]."""
        shape = [b, m, x.shape[1]]
        name = self.fresh("r")
        out = ", ".join(str(d) for d in shape)
        self.emit(
            f"{name} = tensor.expand_shape {x.name} [[0, 1], [2]] output_shape [{out}] : "
            f"{x.type} into {_ttype(shape, x.et)}"
        )
        return Value(name, shape, x.et)

    def split_last_roundtrip(self, x: Value) -> Value:
        """[..., N] -> [..., N/2, 2] -> [..., N] (N even)."""
        *lead, n = x.shape
        assert isinstance(n, int) and n % 2 == 0
        rank = len(x.shape)
        shape = [*lead, n // 2, 2]
        groups = [[i] for i in range(rank - 1)] + [[rank - 1, rank]]
        gtext = "[" + ", ".join("[" + ", ".join(map(str, g)) + "]" for g in groups) + "]"
        name = self.fresh("r")
        out = ", ".join(str(d) for d in shape)
        self.emit(
            f"{name} = tensor.expand_shape {x.name} {gtext} output_shape [{out}] : {x.type} into {_ttype(shape, x.et)}"
        )
        mid = Value(name, shape, x.et)
        if self.r.random() < 0.5:  # an elementwise op on the expanded form
            mid = self.unary(mid, x.et, _relu_body(x.et), "{t1}") if x.et.startswith("f") else mid
        back = self.fresh("r")
        self.emit(f"{back} = tensor.collapse_shape {mid.name} {gtext} : {mid.type} into {x.type}")
        return Value(back, list(x.shape), x.et)

    def slice_cols(self, x: Value, start: int, size: int) -> Value:
        """``x[..., start:start+size]``."""
        rank = len(x.shape)
        offs = ", ".join(["0"] * (rank - 1) + [str(start)])
        sizes = ", ".join([str(d) for d in x.shape[:-1]] + [str(size)])
        strides = ", ".join(["1"] * rank)
        shape = [*x.shape[:-1], size]
        name = self.fresh("sl")
        self.emit(
            f"{name} = tensor.extract_slice {x.name}[{offs}] [{sizes}] [{strides}] : {x.type} to {_ttype(shape, x.et)}"
        )
        return Value(name, shape, x.et)

    def slice_rows(self, x: Value, start: int, size: int) -> Value:
        """``x[start:start+size, ...]`` of a static 2-d value."""
        shape = [size, *x.shape[1:]]
        name = self.fresh("sl")
        self.emit(
            f"{name} = tensor.extract_slice {x.name}[{start}, 0] [{size}, {x.shape[1]}] [1, 1] : "
            f"{x.type} to {_ttype(shape, x.et)}"
        )
        return Value(name, shape, x.et)


def _nested(values: Any, et: str) -> str:
    if isinstance(values, list):
        return "[" + ", ".join(_nested(v, et) for v in values) + "]"
    return str(int(values)) if et.startswith("i") else _float_literal(float(values))


def _relu_body(et: str) -> list[str]:
    return [f"{{t0}} = arith.constant 0.000000e+00 : {et}", f"{{t1}} = arith.maximumf {{a0}}, {{t0}} : {et}"]


# ----------------------------------------------------------------------------------- the program


class _Gen:
    def __init__(self, p: Params) -> None:
        self.p = p
        self.r = random.Random(p.seed)
        self.b = Builder(self.r)
        self.results: list[Value] = []

    def dim(self, even: bool = False) -> int:
        return self.r.choice(EVEN if even else DIMS)

    # weights ----------------------------------------------------------------------------------

    def weight(self, k: int, n: int, et: str, transposed: bool, batch: Dim | None) -> Value:
        """A [K, N] (or [N, K] when ``transposed``) weight of element type ``et`` (f32, f16 or i8),
        batched to [B, ...] when ``batch`` is given."""
        b, r = self.b, self.r
        shape = [n, k] if transposed else [k, n]
        if batch is not None:
            if r.random() < 0.4 or isinstance(batch, str):
                w = self.weight2d(shape, et)
                e = b.empty([batch, *shape], et)
                name = b.fresh("bc")
                b.emit(f"{name} = linalg.broadcast ins({w.name} : {w.type}) outs({e.name} : {e.type}) dimensions = [0]")
                return Value(name, [batch, *shape], et)
            if r.random() < 0.5:
                return b.arg([batch, *shape], et)
            return b.const([batch, *shape], et)  # type: ignore[list-item]
        return self.weight2d(shape, et)

    def weight2d(self, shape: list[int], et: str) -> Value:
        b, r = self.b, self.r
        kind = r.choice(
            ("arg", "const", "const", "slice", "dequant", "f16") if et == "f32" else ("arg", "const", "slice")
        )
        if kind == "arg":
            return b.arg(list(shape), et)
        if kind == "const":
            return b.const(shape, et)
        if kind == "slice":  # one part of a larger constant
            parts = 2 if max(shape) > 64 else r.choice((2, 3))
            part = r.randrange(parts)
            if shape[0] < shape[1] or (shape[0] == shape[1] and r.random() < 0.5):
                big = b.const([shape[0] * parts, shape[1]], et)
                return b.slice_rows(big, part * shape[0], shape[0])
            big = b.const([shape[0], shape[1] * parts], et)
            return b.slice_cols(big, part * shape[1], shape[1])
        if kind == "dequant":  # i8 constant, per-channel scale along the last dim
            q = b.const(shape, "i8")
            scale = b.const([shape[1]], "f32")
            return b.generic(
                [(q, [0, 1]), (scale, [1])],
                list(shape),
                "f32",
                ["{t0} = arith.sitofp {a0} : i8 to f32", "{t1} = arith.mulf {t0}, {a1} : f32"],
                "{t1}",
            )
        h = b.const(shape, "f16")  # an f16 constant extended
        return b.unary(h, "f32", ["{t0} = arith.extf {a0} : f16 to f32"], "{t0}")

    # contractions -----------------------------------------------------------------------------

    def contract(self, x: Value, w: Value, n: int, transposed: bool, acc_et: str) -> Value:
        """``x @ w`` (``w`` [K, N], or [N, K] when ``transposed``), 2-d or batched."""
        b, r = self.b, self.r
        batched = len(x.shape) == 3
        out_shape = [*x.shape[:-1], n]
        acc = b.zero(out_shape, acc_et)
        name = b.fresh("mm")
        ins = f"ins({x.name}, {w.name} : {x.type}, {w.type}) outs({acc.name} : {acc.type}) -> {acc.type}"
        as_generic = r.random() < 0.3
        if not batched and not as_generic:
            if transposed:
                maps = [_map(3, [0, 2]), _map(3, [1, 2]), _map(3, [0, 1])]
                b.emit(f"{name} = linalg.matmul indexing_maps = [{', '.join(maps)}] {ins}")
            else:
                b.emit(f"{name} = linalg.matmul {ins}")
            return Value(name, out_shape, acc_et)
        if batched and not transposed and not as_generic:
            b.emit(f"{name} = linalg.batch_matmul {ins}")
            return Value(name, out_shape, acc_et)
        # a generic contraction: loops (batch,) m, n, k
        if batched:
            lhs, out = [0, 1, 3], [0, 1, 2]
            rhs = [0, 2, 3] if transposed else [0, 3, 2]
            nd, iters = 4, ['"parallel"'] * 3 + ['"reduction"']
        else:
            lhs, out = [0, 2], [0, 1]
            rhs = [1, 2] if transposed else [2, 1]
            nd, iters = 3, ['"parallel"'] * 2 + ['"reduction"']
        maps = [_map(nd, lhs), _map(nd, rhs), _map(nd, out)]
        a0, a1, o = b.fresh("in"), b.fresh("in"), b.fresh("out")
        t = [b.fresh("b") for _ in range(4)]
        attrs = f"{{indexing_maps = [{', '.join(maps)}], iterator_types = [{', '.join(iters)}]}}"
        b.emit(f"{name} = linalg.generic {attrs} {ins.split(' ->')[0]} {{")
        b.lines.append(f"  ^bb0({a0}: {x.et}, {a1}: {w.et}, {o}: {acc_et}):")
        if acc_et == "i32":
            b.lines += [
                f"    {t[0]} = arith.extsi {a0} : {x.et} to i32",
                f"    {t[1]} = arith.extsi {a1} : {w.et} to i32",
                f"    {t[2]} = arith.muli {t[0]}, {t[1]} : i32",
                f"    {t[3]} = arith.addi {o}, {t[2]} : i32",
            ]
        else:
            lx, lw = a0, a1
            if x.et != acc_et:
                b.lines.append(f"    {t[0]} = arith.extf {a0} : {x.et} to {acc_et}")
                lx = t[0]
            if w.et != acc_et:
                b.lines.append(f"    {t[1]} = arith.extf {a1} : {w.et} to {acc_et}")
                lw = t[1]
            b.lines += [
                f"    {t[2]} = arith.mulf {lx}, {lw} : {acc_et}",
                f"    {t[3]} = arith.addf {o}, {t[2]} : {acc_et}",
            ]
        b.lines.append(f"    linalg.yield {t[3]} : {acc_et}")
        b.lines.append(f"  }} -> {acc.type}")
        return Value(name, out_shape, acc_et)

    # consumers --------------------------------------------------------------------------------

    def dequant_result(self, y: Value) -> Value:
        """i32 -> f32: ``sitofp(y) * scale``."""
        s = self.b.scalar(self.r.choice((0.25, 0.125, 0.0625)), "f32")
        return self.b.unary(
            y, "f32", ["{t0} = arith.sitofp {a0} : i32 to f32", f"{{t1}} = arith.mulf {{t0}}, {s} : f32"], "{t1}"
        )

    def epilogue(self, y: Value, allow_requant: bool) -> Value:
        b, r = self.b, self.r
        rank = len(y.shape)
        kinds = ["none", "bias", "relu", "bias_relu"] + (["requant"] if allow_requant else [])
        kind = r.choice(kinds)
        n = y.shape[-1]
        assert isinstance(n, int)
        if kind in ("bias", "bias_relu"):
            bias = b.const([n], "f32") if r.random() < 0.7 else b.arg([n], "f32")
            body = ["{t0} = arith.addf {a0}, {a1} : f32"]
            res = "{t0}"
            if kind == "bias_relu":
                body += ["{t1} = arith.constant 0.000000e+00 : f32", "{t2} = arith.maximumf {t0}, {t1} : f32"]
                res = "{t2}"
            return b.generic([(y, list(range(rank))), (bias, [rank - 1])], y.shape, "f32", body, res)
        if kind == "relu":
            return b.unary(y, "f32", _relu_body("f32"), "{t1}")
        if kind == "requant":
            return self.quantize(y)
        return y

    def quantize(self, y: Value) -> Value:
        """f32 -> i8: ``fptosi(clamp(round(y * scale)))``."""
        s = self.b.scalar(self.r.choice((4.0, 8.0, 2.0)), "f32")
        return self.b.unary(
            y,
            "i8",
            [
                f"{{t0}} = arith.mulf {{a0}}, {s} : f32",
                "{t1} = math.roundeven {t0} : f32",
                "{t2} = arith.constant -1.280000e+02 : f32",
                "{t3} = arith.constant 1.270000e+02 : f32",
                "{t4} = arith.maximumf {t1}, {t2} : f32",
                "{t5} = arith.minimumf {t4}, {t3} : f32",
                "{t6} = arith.fptosi {t5} : f32 to i8",
            ],
            "{t6}",
        )

    # layers -----------------------------------------------------------------------------------

    def layer(self, x: Value, last: bool) -> Value:
        """One contraction (or a SiLU-gated pair) of ``x`` and its consumers."""
        b, r = self.b, self.r
        k = x.shape[-1]
        assert isinstance(k, int)
        n = self.dim(even=True) if r.random() < 0.5 else self.dim()
        transposed = r.random() < 0.4
        batched = len(x.shape) == 3
        if batched and r.random() < 0.35:  # the batch collapsed into rows for a 2-d matmul
            bdim, mdim = x.shape[0], x.shape[1]
            y2 = self.layer(b.collapse_lead(x), last)
            return b.expand_lead(y2, bdim, mdim)
        batch = x.shape[0] if batched else None
        if x.et == "i8":
            w = self.weight(k, n, "i8", transposed, batch)
            y = self.dequant_result(self.contract(x, w, n, transposed, "i32"))
            return self.epilogue(y, allow_requant=not last)
        if x.et == "f16":
            if r.random() < 0.5:  # an f16 x f16 -> f32 matmul
                w = self.weight(k, n, "f16", transposed, batch)
                return self.epilogue(self.contract(x, w, n, transposed, "f32"), allow_requant=False)
            x = b.unary(x, "f32", ["{t0} = arith.extf {a0} : f16 to f32"], "{t0}")  # an f16 producer
        if r.random() < 0.25 and not batched:  # SiLU gate: two matmuls of x, weights from one constant or two args
            if r.random() < 0.5:
                big = b.const([k, 2 * n], "f32")
                wg, wu = b.slice_cols(big, 0, n), b.slice_cols(big, n, n)
                transposed = False
            else:
                wg = b.arg([n, k] if transposed else [k, n], "f32")
                wu = b.arg([n, k] if transposed else [k, n], "f32")
            g = self.contract(x, wg, n, transposed, "f32")
            u = self.contract(x, wu, n, transposed, "f32")
            rank = len(g.shape)
            return b.generic(
                [(g, list(range(rank))), (u, list(range(rank)))],
                g.shape,
                "f32",
                [
                    "{t0} = arith.negf {a0} : f32",
                    "{t1} = math.exp {t0} : f32",
                    "{t2} = arith.constant 1.000000e+00 : f32",
                    "{t3} = arith.addf {t2}, {t1} : f32",
                    "{t4} = arith.divf {a0}, {t3} : f32",
                    "{t5} = arith.mulf {t4}, {a1} : f32",
                ],
                "{t5}",
            )
        w = self.weight(k, n, "f32", transposed, batch)
        y = self.epilogue(self.contract(x, w, n, transposed, "f32"), allow_requant=not last)
        if y.et == "f32" and x.name.startswith("%arg") and r.random() < 0.3:  # the argument read by another matmul
            n2 = self.dim()
            w2 = self.weight(k, n2, "f32", False, batch)
            self.results.append(self.contract(x, w2, n2, False, "f32"))
        return y

    def build(self) -> str:
        p, b, r = self.p, self.b, self.r
        k = self.dim()
        if p.batched:
            lead: list[Dim] = [r.choice((2, 4, 8)), r.choice((4, 8, 16, 32))]
        else:
            lead = [r.choice((1, 4, 8, 16, 32, 64, 100, 128))]
        if p.dynamic:
            lead[0] = "?"
        in_et = {"f32": "f32", "f16": "f16", "i8": "i8", "quant": "f32"}[p.world]
        x = b.arg([d if isinstance(d, int) else "%dyn" for d in lead] + [k], in_et)
        if p.dynamic:
            c0 = b.index(0)
            b.emit(f"%dyn = tensor.dim {x.name}, {c0} : {x.type}")
        if p.world == "quant":
            x = self.quantize(x)
        for i in range(max(1, min(4, p.contractions))):
            x = self.layer(x, last=i == p.contractions - 1)
            if x.et == "i32":
                x = self.dequant_result(x)
            n = x.shape[-1]
            if x.et == "f32" and isinstance(n, int) and n % 2 == 0 and r.random() < 0.2:
                x = b.split_last_roundtrip(x)
        n = x.shape[-1]
        assert isinstance(n, int)
        if n % 2 == 0 and n >= 8 and r.random() < 0.25:  # the output split in two
            self.results += [b.slice_cols(x, 0, n // 2), b.slice_cols(x, n // 2, n // 2)]
        else:
            self.results.append(x)
        args = ", ".join(f"{a.name}: {a.type}" for a in b.args)
        rets = ", ".join(v.type for v in self.results)
        head = f"func.func @main({args}) -> ({rets}) {{"
        ret = f"  return {', '.join(v.name for v in self.results)} : {rets}"
        return "\n".join([f"// random_programs.py: {p}", head, *b.lines, ret, "}", ""])


def program(seed_or_params: int | Params | random.Random | np.random.RandomState) -> str:
    """The program of an int seed, a ``Params``, or a generator (whose next draw is the seed)."""
    if isinstance(seed_or_params, Params):
        p = seed_or_params
    elif isinstance(seed_or_params, random.Random):
        p = params_of(seed_or_params.randrange(2**31))
    elif isinstance(seed_or_params, np.random.RandomState):
        p = params_of(int(seed_or_params.randint(0, 2**31 - 1)))
    else:
        p = params_of(int(seed_or_params))
    return _Gen(p).build()


def programs() -> Any:
    """A hypothesis strategy of programs (the top-level choices drawn, and shrunk, by hypothesis)."""
    from hypothesis import strategies as st

    return st.builds(
        Params,
        contractions=st.integers(1, 4),
        world=st.sampled_from(WORLDS),
        batched=st.booleans(),
        dynamic=st.booleans(),
        seed=st.integers(0, 2**31 - 1),
    ).map(program)


def iree_accepts(text: str, iree_compile: str = "iree-compile") -> str | None:
    """None when ``iree-compile --iree-input-type=none --compile-to=input`` accepts ``text``, else its
    error output."""
    with tempfile.TemporaryDirectory() as d:
        path = Path(d) / "p.mlir"
        path.write_text(text)
        proc = subprocess.run(
            [iree_compile, str(path), "--iree-input-type=none", "--compile-to=input", "-o", str(Path(d) / "o.mlir")],
            capture_output=True,
            text=True,
            timeout=120,
        )
    return None if proc.returncode == 0 else proc.stderr.strip() or f"exit {proc.returncode}"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("seed", nargs="?", type=int, default=0)
    ap.add_argument("--check", type=int, metavar="N", help="check seeds 0..N-1 with iree-compile")
    ap.add_argument("--iree-compile", default=str(Path(sys.executable).with_name("iree-compile")))
    args = ap.parse_args(argv)
    if args.check is None:
        sys.stdout.write(program(args.seed))
        return 0
    bad = 0
    for seed in range(args.check):
        err = iree_accepts(program(seed), args.iree_compile)
        if err is not None:
            bad += 1
            print(f"seed {seed}: {err.splitlines()[0][:300]}")
    print(f"{args.check - bad}/{args.check} accepted")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
