"""Random small *models* in IREE's input form, for asking whether IREE's own plan of a whole model is in
the e-graph (issue 51, point 6).

``model(seed_or_params)`` writes one ``func.func @main`` (tensor arguments, linalg on tensors,
``arith.constant dense<"0x...">`` weights) of one to three transformer layers over a ``[seq, hidden]``
activation (hidden 32..64, seq 4..16, 2 or 4 heads), built from these variants:

* input: an f32 activation argument, or token ids (``tensor<Sxi64>``) gathered from an embedding
  constant by a ``linalg.generic`` whose body reads it with ``tensor.extract``;
* norms (pre-attention, pre-MLP, final): RMS norm or layer norm, reductions written as
  ``linalg.generic`` with a ``reduction`` iterator, then an elementwise scale (and shift);
* attention: Q, K and V projected by one fused weight whose result is split by ``tensor.extract_slice``,
  or by three weights; an optional QKV bias; heads split by ``tensor.expand_shape`` and moved first by
  ``linalg.transpose``; RoPE (pairs rotated elementwise against ``cos``/``sin`` constants, the pair
  index read with ``linalg.index``); GQA (fewer K/V heads, ``linalg.broadcast`` then
  ``tensor.collapse_shape``); scores and the weighted sum as ``linalg.batch_matmul`` (K transposed by
  ``linalg.transpose``) or as ``linalg.generic`` contractions; a scale and optional causal mask
  (``linalg.index``) in one elementwise op, then a softmax of max / exp / sum / divide generics; the
  output projection and a residual add;
* MLP: gated (SwiGLU: gate and up fused into one weight and split, or two weights; ``silu(g) * u``) or
  plain (bias, GELU (tanh) or ReLU), a down projection and a residual add;
* weights: ``[in, out]`` (``linalg.matmul``) or ``[out, in]`` (PyTorch's ``Linear``, a matmul with
  transposed ``indexing_maps``); f32 constants, f16 constants extended by an ``extf`` generic, or i8
  constants dequantized by a ``sitofp * scale`` generic with a per-output-channel scale;
* output: the hidden state, or logits from a head: the embedding table transposed (a tied
  embedding) or a head weight of its own.

The choices of one model are a ``Params`` (the top-level switches, and a seed for the rest), so that
``model`` is deterministic for an int seed and a hypothesis strategy (``models()``) can draw and
shrink the top-level choices::

    .venv/bin/python benchmarks/random_models.py 7            # print seed 7's model
    .venv/bin/python benchmarks/random_models.py --check 40   # seeds < 40 through dispatch creation
"""

from __future__ import annotations

import argparse
import random
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from ssa_writer import SsaWriter, Value, affine_map, float_literal, tensor_type

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

__all__ = ["FEATURES", "Params", "compile_to_dispatch_creation", "model", "models", "params_of"]

HIDDEN_HEADS = ((32, 2), (32, 4), (48, 2), (64, 2), (64, 4))
"""(hidden, heads): head dims 16, 8, 24, 32, 16 (all even, for RoPE's pairs)."""
SEQS = (4, 8, 16)
WEIGHTS = ("f32", "f16", "i8")
NORMS = ("rms", "layer")
MLPS = ("gated", "plain")
EMBEDDINGS = ("none", "gather", "tied", "head")
ATTENTIONS = ("batch_matmul", "generic")

FEATURES = ("fused_qkv", "gqa", "rope", "causal", "qkv_bias", "transposed_weights")
"""The boolean switches of ``Params`` (each drawn on its own by ``models()``)."""


@dataclass(frozen=True)
class Params:
    """The top-level choices of one model; ``seed`` decides the rest (sizes, weight values, the
    per-weight layout when ``transposed_weights`` is mixed)."""

    layers: int = 1
    """Transformer layers, 1..3."""
    weights: str = "f32"
    """The projections' weights: f32, f16 (extended to f32) or i8 (dequantized to f32)."""
    norm: str = "rms"
    """rms or layer."""
    mlp: str = "gated"
    """gated (SwiGLU) or plain."""
    embedding: str = "none"
    """none (an f32 activation in, the hidden state out), gather (token ids in), tied (token ids in,
    logits out through the same table), head (an activation in, logits out through a head weight)."""
    attention: str = "batch_matmul"
    """How the scores and the weighted sum are written: batch_matmul or generic contractions."""
    fused_qkv: bool = True
    gqa: bool = False
    rope: bool = True
    causal: bool = True
    qkv_bias: bool = False
    transposed_weights: bool = True
    """Weights stored [out, in] (PyTorch's Linear) rather than [in, out]."""
    seed: int = 0


def params_of(seed: int) -> Params:
    """The ``Params`` of an int seed (what ``model(seed)`` writes)."""
    r = random.Random(seed * 104729 + 7)
    return Params(
        layers=r.choice((1, 1, 2, 2, 3)),
        weights=r.choice(("f32", "f32", "f16", "i8")),
        norm=r.choice(NORMS),
        mlp=r.choice(MLPS),
        embedding=r.choice(EMBEDDINGS),
        attention=r.choice(ATTENTIONS),
        fused_qkv=r.random() < 0.5,
        gqa=r.random() < 0.4,
        rope=r.random() < 0.6,
        causal=r.random() < 0.6,
        qkv_bias=r.random() < 0.3,
        transposed_weights=r.random() < 0.6,
        seed=seed,
    )


# ----------------------------------------------------------------------------------------- values


_ttype = tensor_type
_map = affine_map
_f = float_literal


class Builder(SsaWriter):
    """One function body, a fresh SSA name per value (bodies included)."""

    def scalar(self, v: float, et: str = "f32") -> str:
        name = self.fresh("s")
        self.emit(f"{name} = arith.constant {int(v) if et.startswith('i') else _f(v)} : {et}")
        return name

    def empty(self, shape: list[int], et: str) -> Value:
        name = self.fresh("e")
        self.emit(f"{name} = tensor.empty() : {_ttype(shape, et)}")
        return Value(name, list(shape), et)

    def filled(self, shape: list[int], et: str, value: float) -> Value:
        e = self.empty(shape, et)
        s = self.scalar(value, et)
        name = self.fresh("f")
        self.emit(f"{name} = linalg.fill ins({s} : {et}) outs({e.name} : {e.type}) -> {e.type}")
        return Value(name, list(shape), et)

    def const(self, shape: list[int], et: str, scale: float = 1.0) -> Value:
        """A constant of small random values (hex; a literal list when it is a vector of at most 8)."""
        n = int(np.prod(shape))
        name = self.fresh("w")
        t = _ttype(shape, et)
        if et == "i8":
            vals: np.ndarray = self.np.randint(-8, 9, size=n).astype(np.int8)
        else:
            vals = (self.np.randint(-8, 9, size=n) / 16.0 * scale).astype(np.float16 if et == "f16" else np.float32)
        if n <= 8 and len(shape) == 1:
            lits = [str(int(v)) if et == "i8" else _f(float(v)) for v in vals]
            self.emit(f"{name} = arith.constant dense<[{', '.join(lits)}]> : {t}")
        else:
            self.emit(f'{name} = arith.constant dense<"0x{vals.tobytes().hex().upper()}"> : {t}')
        return Value(name, list(shape), et)

    def table(self, values: np.ndarray) -> Value:
        """A constant of the given f32 values (RoPE's tables)."""
        name = self.fresh("w")
        vals = values.astype(np.float32)
        t = _ttype(list(vals.shape), "f32")
        self.emit(f'{name} = arith.constant dense<"0x{vals.tobytes().hex().upper()}"> : {t}')
        return Value(name, list(vals.shape), "f32")

    def generic(
        self,
        inputs: list[tuple[Value, list[str]]],
        out: Value,
        out_map: list[str],
        iters: list[str],
        body: list[str],
        result: str,
    ) -> Value:
        """A ``linalg.generic`` with ``len(iters)`` loops; each input read through the map results given
        (``d0``... or constants), the init ``out``. ``body`` lines use ``{a0}``... for the inputs'
        block arguments, ``{o}`` for the init's, ``{t0}``... for fresh names."""
        rank = len(iters)
        maps = [_map(rank, m) for _, m in inputs] + [_map(rank, out_map)]
        name = self.fresh("g")
        bargs = {f"a{i}": self.fresh("in") for i in range(len(inputs))}
        bargs["o"] = self.fresh("out")
        temps = {f"t{i}": self.fresh("b") for i in range(16)}
        it = ", ".join(f'"{i}"' for i in iters)
        head = ", ".join([f"{bargs[f'a{i}']}: {v.et}" for i, (v, _) in enumerate(inputs)] + [f"{bargs['o']}: {out.et}"])
        ins = ""
        if inputs:
            ins = f"ins({', '.join(v.name for v, _ in inputs)} : {', '.join(v.type for v, _ in inputs)}) "
        self.emit(
            f"{name} = linalg.generic {{indexing_maps = [{', '.join(maps)}], iterator_types = [{it}]}} "
            f"{ins}outs({out.name} : {out.type}) {{"
        )
        self.lines.append(f"  ^bb0({head}):")
        for line in body:
            self.lines.append("    " + line.format(**bargs, **temps))
        self.lines.append(f"    linalg.yield {result.format(**bargs, **temps)} : {out.et}")
        self.lines.append(f"  }} -> {out.type}")
        return Value(name, list(out.shape), out.et)

    def elementwise(self, inputs: list[tuple[Value, list[int]]], shape: list[int], et: str, body: list[str]) -> Value:
        """An elementwise generic over ``shape``; each input with the loop dims it reads; the last body
        line's result (``{tK}``, the highest temp used) is yielded: ``body``'s last line names it."""
        rank = len(shape)
        out = self.empty(shape, et)
        last = body[-1].split("=")[0].strip()
        return self.generic(
            [(v, [f"d{i}" for i in dims]) for v, dims in inputs],
            out,
            [f"d{i}" for i in range(rank)],
            ["parallel"] * rank,
            body,
            last,
        )

    def reduce(self, x: Value, init: float, body: list[str], et: str = "f32") -> Value:
        """The reduction of ``x``'s last dim: ``body`` combines ``{a0}`` with the running ``{o}``."""
        rank = len(x.shape)
        acc = self.filled(x.shape[:-1], et, init)
        last = body[-1].split("=")[0].strip()
        return self.generic(
            [(x, [f"d{i}" for i in range(rank)])],
            acc,
            [f"d{i}" for i in range(rank - 1)],
            ["parallel"] * (rank - 1) + ["reduction"],
            body,
            last,
        )

    def slice_cols(self, x: Value, start: int, size: int) -> Value:
        rank = len(x.shape)
        offs = ", ".join(["0"] * (rank - 1) + [str(start)])
        sizes = ", ".join([str(d) for d in x.shape[:-1]] + [str(size)])
        shape = [*x.shape[:-1], size]
        name = self.fresh("sl")
        self.emit(
            f"{name} = tensor.extract_slice {x.name}[{offs}] [{sizes}] [{', '.join(['1'] * rank)}] : "
            f"{x.type} to {_ttype(shape, x.et)}"
        )
        return Value(name, shape, x.et)

    def expand(self, x: Value, groups: list[list[int]], shape: list[int]) -> Value:
        name = self.fresh("r")
        g = "[" + ", ".join("[" + ", ".join(map(str, gr)) + "]" for gr in groups) + "]"
        self.emit(
            f"{name} = tensor.expand_shape {x.name} {g} output_shape [{', '.join(map(str, shape))}] : "
            f"{x.type} into {_ttype(shape, x.et)}"
        )
        return Value(name, list(shape), x.et)

    def collapse(self, x: Value, groups: list[list[int]]) -> Value:
        shape = [int(np.prod([x.shape[i] for i in gr])) for gr in groups]
        name = self.fresh("r")
        g = "[" + ", ".join("[" + ", ".join(map(str, gr)) + "]" for gr in groups) + "]"
        self.emit(f"{name} = tensor.collapse_shape {x.name} {g} : {x.type} into {_ttype(shape, x.et)}")
        return Value(name, shape, x.et)

    def transpose(self, x: Value, perm: list[int]) -> Value:
        shape = [x.shape[p] for p in perm]
        e = self.empty(shape, x.et)
        name = self.fresh("t")
        self.emit(
            f"{name} = linalg.transpose ins({x.name} : {x.type}) outs({e.name} : {e.type}) "
            f"permutation = [{', '.join(map(str, perm))}]"
        )
        return Value(name, shape, x.et)

    def broadcast(self, x: Value, shape: list[int], dims: list[int]) -> Value:
        e = self.empty(shape, x.et)
        name = self.fresh("bc")
        self.emit(
            f"{name} = linalg.broadcast ins({x.name} : {x.type}) outs({e.name} : {e.type}) "
            f"dimensions = [{', '.join(map(str, dims))}]"
        )
        return Value(name, list(shape), x.et)


# ------------------------------------------------------------------------------------------ the model


TRANSPOSED_B = "[affine_map<(d0, d1, d2) -> (d0, d2)>, affine_map<(d0, d1, d2) -> (d1, d2)>, " + (
    "affine_map<(d0, d1, d2) -> (d0, d1)>]"
)


class _Gen:
    def __init__(self, p: Params) -> None:
        self.p = p
        self.r = random.Random(p.seed)
        self.b = Builder(self.r)
        self.hidden, self.heads = self.r.choice(HIDDEN_HEADS)
        self.seq = self.r.choice(SEQS)
        self.head_dim = self.hidden // self.heads
        self.kv_heads = self.heads // 2 if p.gqa else self.heads
        self.ffn = self.r.choice((2 * self.hidden, 3 * self.hidden)) if self.hidden < 64 else self.r.choice((64, 128))
        self.vocab = self.r.choice((64, 96, 128))
        self.embedding: Value | None = None

    # weights and projections ----------------------------------------------------------------------

    def weight(self, k: int, n: int) -> tuple[Value, bool]:
        """A [K, N] weight (or [N, K], transposed), f32 as the matmul reads it; and whether transposed."""
        b, p = self.b, self.p
        transposed = p.transposed_weights if self.r.random() < 0.85 else not p.transposed_weights
        shape = [n, k] if transposed else [k, n]
        if p.weights == "f32":
            return b.const(shape, "f32", scale=0.5), transposed
        if p.weights == "f16":
            h = b.const(shape, "f16", scale=0.5)
            return b.elementwise([(h, [0, 1])], shape, "f32", ["{t0} = arith.extf {a0} : f16 to f32"]), transposed
        q = b.const(shape, "i8")
        out_dim = 0 if transposed else 1
        scale = b.const([n], "f32", scale=0.0625)
        return (
            b.elementwise(
                [(q, [0, 1]), (scale, [out_dim])],
                shape,
                "f32",
                ["{t0} = arith.sitofp {a0} : i8 to f32", "{t1} = arith.mulf {t0}, {a1} : f32"],
            ),
            transposed,
        )

    def matmul(self, x: Value, w: Value, transposed: bool) -> Value:
        b = self.b
        n = w.shape[0] if transposed else w.shape[1]
        acc = b.filled([x.shape[0], n], "f32", 0.0)
        name = b.fresh("mm")
        maps = f"indexing_maps = {TRANSPOSED_B} " if transposed else ""
        b.emit(
            f"{name} = linalg.matmul {maps}ins({x.name}, {w.name} : {x.type}, {w.type}) "
            f"outs({acc.name} : {acc.type}) -> {acc.type}"
        )
        return Value(name, [x.shape[0], n], "f32")

    def linear(self, x: Value, n: int, bias: bool = False) -> Value:
        w, transposed = self.weight(x.shape[1], n)
        y = self.matmul(x, w, transposed)
        if bias:
            bv = self.b.const([n], "f32", scale=0.25)
            y = self.b.elementwise([(y, [0, 1]), (bv, [1])], y.shape, "f32", ["{t0} = arith.addf {a0}, {a1} : f32"])
        return y

    # pieces ---------------------------------------------------------------------------------------

    def norm(self, x: Value) -> Value:
        b = self.b
        s, h = x.shape
        gamma = b.const([h], "f32", scale=0.25)
        eps = "1.000000e-05"
        if self.p.norm == "rms":
            ss = b.reduce(x, 0.0, ["{t0} = arith.mulf {a0}, {a0} : f32", "{t1} = arith.addf {o}, {t0} : f32"])
            return b.elementwise(
                [(x, [0, 1]), (ss, [0]), (gamma, [1])],
                x.shape,
                "f32",
                [
                    f"{{t0}} = arith.constant {_f(float(h))} : f32",
                    "{t1} = arith.divf {a1}, {t0} : f32",
                    f"{{t2}} = arith.constant {eps} : f32",
                    "{t3} = arith.addf {t1}, {t2} : f32",
                    "{t4} = math.rsqrt {t3} : f32",
                    "{t5} = arith.mulf {a0}, {t4} : f32",
                    "{t6} = arith.mulf {t5}, {a2} : f32",
                ],
            )
        beta = b.const([h], "f32", scale=0.25)
        total = b.reduce(x, 0.0, ["{t0} = arith.addf {o}, {a0} : f32"])
        mean = b.elementwise(
            [(total, [0])],
            [s],
            "f32",
            [f"{{t0}} = arith.constant {_f(float(h))} : f32", "{t1} = arith.divf {a0}, {t0} : f32"],
        )
        var_sum = b.generic(
            [(x, ["d0", "d1"]), (mean, ["d0"])],
            b.filled([s], "f32", 0.0),
            ["d0"],
            ["parallel", "reduction"],
            [
                "{t0} = arith.subf {a0}, {a1} : f32",
                "{t1} = arith.mulf {t0}, {t0} : f32",
                "{t2} = arith.addf {o}, {t1} : f32",
            ],
            "{t2}",
        )
        return b.elementwise(
            [(x, [0, 1]), (mean, [0]), (var_sum, [0]), (gamma, [1]), (beta, [1])],
            x.shape,
            "f32",
            [
                f"{{t0}} = arith.constant {_f(float(h))} : f32",
                "{t1} = arith.divf {a2}, {t0} : f32",
                f"{{t2}} = arith.constant {eps} : f32",
                "{t3} = arith.addf {t1}, {t2} : f32",
                "{t4} = math.rsqrt {t3} : f32",
                "{t5} = arith.subf {a0}, {a1} : f32",
                "{t6} = arith.mulf {t5}, {t4} : f32",
                "{t7} = arith.mulf {t6}, {a3} : f32",
                "{t8} = arith.addf {t7}, {a4} : f32",
            ],
        )

    def rope(self, x: Value, cos: Value, sin: Value) -> Value:
        """``x`` [S, heads, D] with each pair (2i, 2i+1) of the head dim rotated by the angle of (s, i)."""
        b = self.b
        s, h, d = x.shape
        pairs = b.expand(x, [[0], [1], [2, 3]], [s, h, d // 2, 2])
        out = b.empty(pairs.shape, "f32")
        rotated = b.generic(
            [
                (pairs, ["d0", "d1", "d2", "0"]),
                (pairs, ["d0", "d1", "d2", "1"]),
                (cos, ["d0", "d2"]),
                (sin, ["d0", "d2"]),
            ],
            out,
            ["d0", "d1", "d2", "d3"],
            ["parallel"] * 4,
            [
                "{t0} = linalg.index 3 : index",
                "{t1} = arith.constant 0 : index",
                "{t2} = arith.cmpi eq, {t0}, {t1} : index",
                "{t3} = arith.mulf {a0}, {a2} : f32",
                "{t4} = arith.mulf {a1}, {a3} : f32",
                "{t5} = arith.subf {t3}, {t4} : f32",
                "{t6} = arith.mulf {a1}, {a2} : f32",
                "{t7} = arith.mulf {a0}, {a3} : f32",
                "{t8} = arith.addf {t6}, {t7} : f32",
                "{t9} = arith.select {t2}, {t5}, {t8} : f32",
            ],
            "{t9}",
        )
        return b.collapse(rotated, [[0], [1], [2, 3]])

    def contract(self, lhs: Value, rhs: Value, rhs_transposed: bool) -> Value:
        """[B, M, K] x [B, K, N] (or [B, N, K] when ``rhs_transposed``) -> [B, M, N]."""
        b = self.b
        bsz, m, _ = lhs.shape
        n = rhs.shape[1] if rhs_transposed else rhs.shape[2]
        acc = b.filled([bsz, m, n], "f32", 0.0)
        if self.p.attention == "batch_matmul":
            if rhs_transposed:
                rhs = b.transpose(rhs, [0, 2, 1])
            name = b.fresh("bmm")
            b.emit(
                f"{name} = linalg.batch_matmul ins({lhs.name}, {rhs.name} : {lhs.type}, {rhs.type}) "
                f"outs({acc.name} : {acc.type}) -> {acc.type}"
            )
            return Value(name, acc.shape, "f32")
        return b.generic(
            [(lhs, ["d0", "d1", "d3"]), (rhs, ["d0", "d2", "d3"] if rhs_transposed else ["d0", "d3", "d2"])],
            acc,
            ["d0", "d1", "d2"],
            ["parallel", "parallel", "parallel", "reduction"],
            ["{t0} = arith.mulf {a0}, {a1} : f32", "{t1} = arith.addf {o}, {t0} : f32"],
            "{t1}",
        )

    def softmax(self, x: Value) -> Value:
        b = self.b
        rank = len(x.shape)
        mx = b.reduce(x, -1.0e30, ["{t0} = arith.maximumf {o}, {a0} : f32"])
        lead = list(range(rank - 1))
        ex = b.elementwise(
            [(x, list(range(rank))), (mx, lead)],
            x.shape,
            "f32",
            ["{t0} = arith.subf {a0}, {a1} : f32", "{t1} = math.exp {t0} : f32"],
        )
        total = b.reduce(ex, 0.0, ["{t0} = arith.addf {o}, {a0} : f32"])
        return b.elementwise(
            [(ex, list(range(rank))), (total, lead)], x.shape, "f32", ["{t0} = arith.divf {a0}, {a1} : f32"]
        )

    def attention(self, x: Value, cos: Value | None, sin: Value | None) -> Value:
        b, p = self.b, self.p
        s, h, d = self.seq, self.heads, self.head_dim
        kvh = self.kv_heads
        nq, nkv = h * d, kvh * d
        if p.fused_qkv:
            qkv = self.linear(x, nq + 2 * nkv, bias=p.qkv_bias)
            q, k, v = b.slice_cols(qkv, 0, nq), b.slice_cols(qkv, nq, nkv), b.slice_cols(qkv, nq + nkv, nkv)
        else:
            q = self.linear(x, nq, bias=p.qkv_bias)
            k = self.linear(x, nkv, bias=p.qkv_bias)
            v = self.linear(x, nkv, bias=p.qkv_bias)
        q3 = b.expand(q, [[0], [1, 2]], [s, h, d])
        k3 = b.expand(k, [[0], [1, 2]], [s, kvh, d])
        v3 = b.expand(v, [[0], [1, 2]], [s, kvh, d])
        if cos is not None and sin is not None:
            q3, k3 = self.rope(q3, cos, sin), self.rope(k3, cos, sin)
        qh, kh, vh = (b.transpose(t, [1, 0, 2]) for t in (q3, k3, v3))  # [heads, S, D]
        if kvh != h:  # GQA: each K/V head read by heads // kvh query heads
            g = h // kvh
            kh = b.collapse(b.broadcast(kh, [kvh, g, s, d], [1]), [[0, 1], [2], [3]])
            vh = b.collapse(b.broadcast(vh, [kvh, g, s, d], [1]), [[0, 1], [2], [3]])
        scores = self.contract(qh, kh, rhs_transposed=True)  # [heads, S, S]
        body = [
            f"{{t0}} = arith.constant {_f(1.0 / float(np.sqrt(d)))} : f32",
            "{t1} = arith.mulf {a0}, {t0} : f32",
        ]
        if p.causal:
            body += [
                "{t2} = linalg.index 1 : index",
                "{t3} = linalg.index 2 : index",
                "{t4} = arith.cmpi ugt, {t3}, {t2} : index",
                "{t5} = arith.constant -1.000000e+09 : f32",
                "{t6} = arith.select {t4}, {t5}, {t1} : f32",
            ]
        scaled = b.elementwise([(scores, [0, 1, 2])], scores.shape, "f32", body)
        probs = self.softmax(scaled)
        ctx = self.contract(probs, vh, rhs_transposed=False)  # [heads, S, D]
        merged = b.collapse(b.transpose(ctx, [1, 0, 2]), [[0], [1, 2]])  # [S, heads * D]
        return self.linear(merged, self.hidden)

    def mlp(self, x: Value) -> Value:
        b, f = self.b, self.ffn
        if self.p.mlp == "gated":
            if self.r.random() < 0.5:  # gate and up as one weight, split
                gu = self.linear(x, 2 * f)
                g, u = b.slice_cols(gu, 0, f), b.slice_cols(gu, f, f)
            else:
                g, u = self.linear(x, f), self.linear(x, f)
            act = b.elementwise(
                [(g, [0, 1]), (u, [0, 1])],
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
            )
        else:
            up = self.linear(x, f, bias=True)
            if self.r.random() < 0.5:
                body = ["{t0} = arith.constant 0.000000e+00 : f32", "{t1} = arith.maximumf {a0}, {t0} : f32"]
            else:  # GELU, tanh form
                body = [
                    "{t0} = arith.mulf {a0}, {a0} : f32",
                    "{t1} = arith.mulf {t0}, {a0} : f32",
                    "{t2} = arith.constant 4.471500e-02 : f32",
                    "{t3} = arith.mulf {t1}, {t2} : f32",
                    "{t4} = arith.addf {a0}, {t3} : f32",
                    "{t5} = arith.constant 7.978846e-01 : f32",
                    "{t6} = arith.mulf {t4}, {t5} : f32",
                    "{t7} = math.tanh {t6} : f32",
                    "{t8} = arith.constant 1.000000e+00 : f32",
                    "{t9} = arith.addf {t7}, {t8} : f32",
                    "{t10} = arith.constant 5.000000e-01 : f32",
                    "{t11} = arith.mulf {a0}, {t10} : f32",
                    "{t12} = arith.mulf {t11}, {t9} : f32",
                ]
            act = b.elementwise([(up, [0, 1])], up.shape, "f32", body)
        return self.linear(act, self.hidden, bias=self.p.mlp == "plain")

    def residual(self, x: Value, y: Value) -> Value:
        return self.b.elementwise([(x, [0, 1]), (y, [0, 1])], x.shape, "f32", ["{t0} = arith.addf {a0}, {a1} : f32"])

    def gather(self, ids: Value) -> Value:
        b = self.b
        table = self.embedding
        assert table is not None
        out = b.empty([self.seq, self.hidden], "f32")
        return b.generic(
            [(ids, ["d0"])],
            out,
            ["d0", "d1"],
            ["parallel", "parallel"],
            [
                "{t0} = arith.index_cast {a0} : i64 to index",
                "{t1} = linalg.index 1 : index",
                f"{{t2}} = tensor.extract {table.name}[{{t0}}, {{t1}}] : {table.type}",
            ],
            "{t2}",
        )

    def rope_tables(self) -> tuple[Value, Value]:
        half = self.head_dim // 2
        inv = 1.0 / (10000.0 ** (np.arange(half) * 2.0 / self.head_dim))
        ang = np.arange(self.seq)[:, None] * inv[None, :]
        return self.b.table(np.cos(ang)), self.b.table(np.sin(ang))

    def build(self) -> str:
        p, b = self.p, self.b
        if p.embedding in ("gather", "tied"):
            ids = b.arg([self.seq], "i64")
            self.embedding = b.const([self.vocab, self.hidden], "f32")
            x = self.gather(ids)
        else:
            x = b.arg([self.seq, self.hidden], "f32")
        cos, sin = self.rope_tables() if p.rope else (None, None)
        for _ in range(max(1, min(3, p.layers))):
            x = self.residual(x, self.attention(self.norm(x), cos, sin))
            x = self.residual(x, self.mlp(self.norm(x)))
        x = self.norm(x)
        if p.embedding == "tied":
            assert self.embedding is not None
            x = self.matmul(x, self.embedding, transposed=True)
        elif p.embedding == "head":
            x = self.linear(x, self.vocab)
        args = ", ".join(f"{a.name}: {a.type}" for a in b.args)
        head = f"func.func @main({args}) -> {x.type} {{"
        return "\n".join([f"// random_models.py: {p}", head, *b.lines, f"  return {x.name} : {x.type}", "}", ""])


def model(seed_or_params: int | Params | random.Random) -> str:
    """The model of an int seed, a ``Params``, or a generator (whose next draw is the seed)."""
    if isinstance(seed_or_params, Params):
        p = seed_or_params
    elif isinstance(seed_or_params, random.Random):
        p = params_of(seed_or_params.randrange(2**31))
    else:
        p = params_of(int(seed_or_params))
    return _Gen(p).build()


def models(**fixed: Any) -> Any:
    """A hypothesis strategy of ``Params`` (the top-level choices drawn, and shrunk, by hypothesis);
    a keyword fixes one choice (``models(weights="f32")``) or limits it to a tuple of values
    (``models(embedding=("none", "head"))``). Map it through ``model`` for the text."""
    from hypothesis import strategies as st

    def pick(name: str, default: Any) -> Any:
        if name not in fixed:
            return default
        v = fixed[name]
        return st.sampled_from(v) if isinstance(v, tuple) else st.just(v)

    return st.builds(
        Params,
        layers=pick("layers", st.integers(1, 3)),
        weights=pick("weights", st.sampled_from(WEIGHTS)),
        norm=pick("norm", st.sampled_from(NORMS)),
        mlp=pick("mlp", st.sampled_from(MLPS)),
        embedding=pick("embedding", st.sampled_from(EMBEDDINGS)),
        attention=pick("attention", st.sampled_from(ATTENTIONS)),
        **{f: pick(f, st.booleans()) for f in FEATURES},
        seed=pick("seed", st.integers(0, 2**31 - 1)),
    )


def compile_to_dispatch_creation(text: str, target: str = "x86_64-avx2") -> str | None:
    """None when IREE's dispatch creation with data tiling (the flags ``bench_membership`` runs IREE with,
    ``egg_dispatch.iree.dispatch_creation``) accepts ``text``, else its error's first lines."""
    from egg_dispatch.iree.dispatch_creation import dispatch_creation_text

    with tempfile.TemporaryDirectory() as d:
        path = Path(d) / "m.mlir"
        path.write_text(text)
        try:
            dispatch_creation_text(path, target)
        except Exception as e:  # IreeError, or a tool that did not start
            return str(e).strip() or type(e).__name__
    return None


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("seed", nargs="?", type=int, default=0)
    ap.add_argument("--check", type=int, metavar="N", help="run seeds 0..N-1 through IREE's dispatch creation")
    ap.add_argument("--target", default="x86_64-avx2")
    args = ap.parse_args(argv)
    if args.check is None:
        sys.stdout.write(model(args.seed))
        return 0
    bad = 0
    for seed in range(args.check):
        err = compile_to_dispatch_creation(model(seed), args.target)
        if err is not None:
            bad += 1
            print(f"seed {seed} {params_of(seed)}: {' | '.join(err.splitlines()[:3])[:400]}")
    print(f"{args.check - bad}/{args.check} accepted")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
