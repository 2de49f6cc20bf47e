"""Llama-shaped decoders at any width and depth in IREE's input form, with external parameters (issue 53,
point 3): no weight is materialised, so an 8B-width program is a few hundred kB of text.

``llama(LlamaShape(...))`` writes one ``module`` with a ``util.global private`` per weight, each
``#flow.parameter.named<"model"::"model.model.layers.N....weight">`` (the keys iree-turbine gives a
``transformers`` ``LlamaForCausalLM``), and one ``util.func public @main(%ids: tensor<1xSxi64>) ->
tensor<1xSxVxf32>`` whose body copies, op for op, the forms of the suite's own export
``tests/fixtures/models/hf_llama/input.mlir`` (torch -> linalg by iree-turbine, sdpa attention):

* embedding: a gather ``linalg.generic`` reading the table with ``tensor.extract``;
* RoPE tables: positions x ``inv_freq`` (a small ``dense`` constant), concatenated, ``math.cos`` /
  ``math.sin``; per layer, Q and K rotated as ``x * cos + concat(-x2, x1) * sin``;
* RMSNorm: ``math.fpowi`` x 2, a ``reduction`` sum into ``1xSx1``, ``/ hidden``, ``+ eps``,
  ``math.rsqrt``, a broadcast multiply, then the weight multiply;
* every ``Linear`` (no bias): the ``[out, in]`` weight ``linalg.transpose``d, broadcast to ``1xINxOUT``
  by a ``linalg.generic`` and contracted by ``linalg.batch_matmul`` against a ``linalg.fill``ed
  accumulator;
* attention: heads split by ``tensor.expand_shape`` + ``linalg.transpose``; GQA's K/V repeated by a
  broadcast generic + ``tensor.collapse_shape``; a causal mask (``linalg.index`` compare) broadcast over
  heads; ``iree_linalg_ext.attention`` with scale ``1/sqrt(head_dim)`` and the mask; heads merged by
  ``linalg.transpose`` + ``tensor.collapse_shape``; the output projection and a residual add;
* MLP (SwiGLU): ``silu(gate) * up`` as a sigmoid generic, a multiply, a multiply, then ``down``;
* the final norm and the ``lm_head`` projection to the vocabulary.

Shapes::

    TINYLLAMA = LlamaShape(layers=22, hidden=2048, heads=32, kv_heads=4, intermediate=5632, vocab=32000)
    LLAMA_8B  = LlamaShape(layers=32, hidden=4096, heads=32, kv_heads=8, intermediate=14336, vocab=128256)

with a prefill of ``seq`` tokens (128 by default).

    .venv/bin/python benchmarks/llama_shapes.py --preset tinyllama --layers 2 > /tmp/tl2.mlir
"""

from __future__ import annotations

import argparse
import sys
from dataclasses import dataclass, replace

import numpy as np

__all__ = ["LLAMA_8B", "PRESETS", "TINYLLAMA", "LlamaShape", "llama"]


@dataclass(frozen=True)
class LlamaShape:
    layers: int = 2
    hidden: int = 64
    heads: int = 4
    kv_heads: int = 2
    intermediate: int = 192
    vocab: int = 512
    seq: int = 128
    rope_theta: float = 10000.0
    eps: float = 1e-6

    @property
    def head_dim(self) -> int:
        return self.hidden // self.heads

    def with_layers(self, layers: int) -> LlamaShape:
        return replace(self, layers=layers)


TINYLLAMA = LlamaShape(layers=22, hidden=2048, heads=32, kv_heads=4, intermediate=5632, vocab=32000)
"""TinyLlama-1.1B's widths."""
LLAMA_8B = LlamaShape(layers=32, hidden=4096, heads=32, kv_heads=8, intermediate=14336, vocab=128256)
"""Llama-3-8B's widths."""
PRESETS = {"tinyllama": TINYLLAMA, "llama8b": LLAMA_8B, "tiny": LlamaShape()}


def _t(*dims: int, et: str = "f32") -> str:
    return "tensor<" + "".join(f"{d}x" for d in dims) + f"{et}>"


def _maps(rank: int, *results: str) -> str:
    dims = ", ".join(f"d{i}" for i in range(rank))
    return "[" + ", ".join(f"affine_map<({dims}) -> ({r})>" for r in results) + "]"


def _ident(rank: int) -> str:
    return ", ".join(f"d{i}" for i in range(rank))


def _iters(rank: int, reduction_last: bool = False) -> str:
    its = ['"parallel"'] * rank
    if reduction_last:
        its[-1] = '"reduction"'
    return "[" + ", ".join(its) + "]"


class _Writer:
    def __init__(self, shape: LlamaShape) -> None:
        self.s = shape
        self.lines: list[str] = []
        self.globals: list[str] = []
        self.n = 0

    def fresh(self, prefix: str = "v") -> str:
        self.n += 1
        return f"%{prefix}{self.n}"

    def op(self, line: str) -> None:
        self.lines.append("    " + line)

    def empty(self, *dims: int) -> str:
        name = self.fresh("e")
        self.op(f"{name} = tensor.empty() : {_t(*dims)}")
        return name

    def generic(
        self,
        ins: list[tuple[str, str, str]],
        out: tuple[str, str],
        rank: int,
        maps: list[str],
        body: list[str],
        reduction: bool = False,
    ) -> str:
        """``ins``: (value, type, element type); ``out``: (init, type); ``body`` uses ``{a0}``.., ``{o}``;
        its last line's result is yielded (or ``body`` is one ``yield X`` line)."""
        name = self.fresh("g")
        args = {f"a{i}": f"%in{i}_{self.n}" for i in range(len(ins))}
        args["o"] = f"%out_{self.n}"
        head = ", ".join([f"{args[f'a{i}']}: {et}" for i, (_, _, et) in enumerate(ins)] + [f"{args['o']}: f32"])
        insp = f"ins({', '.join(v for v, _, _ in ins)} : {', '.join(t for _, t, _ in ins)}) " if ins else ""
        self.op(
            f"{name} = linalg.generic {{indexing_maps = {_maps(rank, *maps)}, iterator_types = "
            f"{_iters(rank, reduction)}}} {insp}outs({out[0]} : {out[1]}) {{"
        )
        self.op(f"^bb0({head}):")
        results = []
        for i, line in enumerate(body[:-1]):
            r = f"%b{i}_{self.n}"
            results.append(r)
            self.op("  " + f"{r} = " + line.format(**args, **{f"t{j}": x for j, x in enumerate(results)}))
        last = body[-1].format(**args, **{f"t{j}": x for j, x in enumerate(results)})
        self.op(f"  linalg.yield {last} : f32")
        self.op(f"}} -> {out[1]}")
        return name

    def param(self, key: str, *dims: int) -> str:
        g = "@__auto.model." + key
        self.globals.append(f'  util.global private {g} = #flow.parameter.named<"model"::"model.{key}"> : {_t(*dims)}')
        name = self.fresh("p")
        self.op(f"{name} = util.global.load {g} : {_t(*dims)}")
        return name

    # ------------------------------------------------------------------------------------- pieces

    def rms_norm(self, x: str, key: str) -> str:
        s = self.s
        t3, t1 = _t(1, s.seq, s.hidden), _t(1, s.seq, 1)
        e3, e1 = self.empty(1, s.seq, s.hidden), self.empty(1, s.seq, 1)
        sq = self.generic(
            [(x, t3, "f32")], (e3, t3), 3, [_ident(3)] * 2, ["math.fpowi {a0}, %c2_i64 : f32, i64", "{t0}"]
        )
        acc = self.fresh("f")
        self.op(f"{acc} = linalg.fill ins(%zero : f32) outs({e1} : {t1}) -> {t1}")
        total = self.generic(
            [(sq, t3, "f32")],
            (acc, t1),
            3,
            [_ident(3), "d0, d1, 0"],
            ["arith.addf {a0}, {o} : f32", "{t0}"],
            reduction=True,
        )
        mean = self.generic(
            [(total, t1, "f32")], (e1, t1), 3, [_ident(3)] * 2, ["arith.divf {a0}, %hidden_f : f32", "{t0}"]
        )
        eps = self.generic([(mean, t1, "f32")], (e1, t1), 3, [_ident(3)] * 2, ["arith.addf {a0}, %eps : f32", "{t0}"])
        rs = self.generic([(eps, t1, "f32")], (e1, t1), 3, [_ident(3)] * 2, ["math.rsqrt {a0} : f32", "{t0}"])
        normed = self.generic(
            [(x, t3, "f32"), (rs, t1, "f32")],
            (e3, t3),
            3,
            [_ident(3), "d0, d1, 0", _ident(3)],
            ["arith.mulf {a0}, {a1} : f32", "{t0}"],
        )
        w = self.param(key, s.hidden)
        return self.generic(
            [(w, _t(s.hidden), "f32"), (normed, t3, "f32")],
            (e3, t3),
            3,
            ["d2", _ident(3), _ident(3)],
            ["arith.mulf {a0}, {a1} : f32", "{t0}"],
        )

    def linear(self, x: str, key: str, k: int, n: int) -> str:
        s = self.s
        w = self.param(key, n, k)
        et = self.empty(k, n)
        tr = self.fresh("tr")
        self.op(f"{tr} = linalg.transpose ins({w} : {_t(n, k)}) outs({et} : {_t(k, n)}) permutation = [1, 0]")
        eb = self.empty(1, k, n)
        b = self.generic([(tr, _t(k, n), "f32")], (eb, _t(1, k, n)), 3, ["d1, d2", _ident(3)], ["{a0}"])
        ea = self.empty(1, s.seq, n)
        acc = self.fresh("f")
        self.op(f"{acc} = linalg.fill ins(%zero : f32) outs({ea} : {_t(1, s.seq, n)}) -> {_t(1, s.seq, n)}")
        mm = self.fresh("mm")
        self.op(
            f"{mm} = linalg.batch_matmul ins({x}, {b} : {_t(1, s.seq, k)}, {_t(1, k, n)}) "
            f"outs({acc} : {_t(1, s.seq, n)}) -> {_t(1, s.seq, n)}"
        )
        return mm

    def heads(self, x: str, h: int) -> str:
        """[1, S, h*D] -> [1, h, S, D]."""
        s, d = self.s.seq, self.s.head_dim
        ex = self.fresh("ex")
        self.op(
            f"{ex} = tensor.expand_shape {x} [[0], [1], [2, 3]] output_shape [1, {s}, {h}, {d}] : "
            f"{_t(1, s, h * d)} into {_t(1, s, h, d)}"
        )
        e = self.empty(1, h, s, d)
        tr = self.fresh("tr")
        self.op(
            f"{tr} = linalg.transpose ins({ex} : {_t(1, s, h, d)}) outs({e} : {_t(1, h, s, d)}) "
            "permutation = [0, 2, 1, 3]"
        )
        return tr

    def rope(self, x: str, h: int, cos: str, sin: str) -> str:
        s, d = self.s.seq, self.s.head_dim
        t4, tc, th = _t(1, h, s, d), _t(1, 1, s, d), _t(1, h, s, d // 2)
        e4 = self.empty(1, h, s, d)
        xc = self.generic(
            [(x, t4, "f32"), (cos, tc, "f32")],
            (e4, t4),
            4,
            [_ident(4), "d0, 0, d2, d3", _ident(4)],
            ["arith.mulf {a0}, {a1} : f32", "{t0}"],
        )
        x1, x2 = self.fresh("sl"), self.fresh("sl")
        self.op(f"{x1} = tensor.extract_slice {x}[0, 0, 0, 0] [1, {h}, {s}, {d // 2}] [1, 1, 1, 1] : {t4} to {th}")
        self.op(
            f"{x2} = tensor.extract_slice {x}[0, 0, 0, {d // 2}] [1, {h}, {s}, {d // 2}] [1, 1, 1, 1] : {t4} to {th}"
        )
        eh = self.empty(1, h, s, d // 2)
        neg = self.generic([(x2, th, "f32")], (eh, th), 4, [_ident(4)] * 2, ["arith.negf {a0} : f32", "{t0}"])
        cat = self.fresh("cat")
        self.op(f"{cat} = tensor.concat dim(3) {neg}, {x1} : ({th}, {th}) -> {t4}")
        rs = self.generic(
            [(cat, t4, "f32"), (sin, tc, "f32")],
            (e4, t4),
            4,
            [_ident(4), "d0, 0, d2, d3", _ident(4)],
            ["arith.mulf {a0}, {a1} : f32", "{t0}"],
        )
        return self.generic(
            [(xc, t4, "f32"), (rs, t4, "f32")], (e4, t4), 4, [_ident(4)] * 3, ["arith.addf {a0}, {a1} : f32", "{t0}"]
        )

    def repeat_kv(self, x: str) -> str:
        s, h, kv, d = self.s.seq, self.s.heads, self.s.kv_heads, self.s.head_dim
        g = h // kv
        if g == 1:
            return x
        e5 = self.empty(1, kv, g, s, d)
        b = self.generic(
            [(x, _t(1, kv, s, d), "f32")], (e5, _t(1, kv, g, s, d)), 5, ["d0, d1, d3, d4", _ident(5)], ["{a0}"]
        )
        c = self.fresh("co")
        self.op(f"{c} = tensor.collapse_shape {b} [[0], [1, 2], [3], [4]] : {_t(1, kv, g, s, d)} into {_t(1, h, s, d)}")
        return c

    def attention(self, x: str, i: int, cos: str, sin: str, mask: str) -> str:
        s = self.s
        h, kv, d, seq = s.heads, s.kv_heads, s.head_dim, s.seq
        pre = f"model.layers.{i}.self_attn."
        q = self.rope(self.heads(self.linear(x, pre + "q_proj.weight", s.hidden, h * d), h), h, cos, sin)
        k = self.rope(self.heads(self.linear(x, pre + "k_proj.weight", s.hidden, kv * d), kv), kv, cos, sin)
        v = self.heads(self.linear(x, pre + "v_proj.weight", s.hidden, kv * d), kv)
        k, v = self.repeat_kv(k), self.repeat_kv(v)
        em = self.empty(1, h, seq, seq)
        mh = self.generic(
            [(mask, _t(1, 1, seq, seq), "f32")], (em, _t(1, h, seq, seq)), 4, ["d0, 0, d2, d3", _ident(4)], ["{a0}"]
        )
        flat: list[str] = []
        for val, last in ((q, d), (k, d), (v, d), (mh, seq)):
            c = self.fresh("co")
            self.op(
                f"{c} = tensor.collapse_shape {val} [[0, 1], [2], [3]] : {_t(1, h, seq, last)} into {_t(h, seq, last)}"
            )
            flat.append(c)
        eo = self.empty(h, seq, d)
        at = self.fresh("att")
        amaps = _maps(5, "d0, d1, d3", "d0, d4, d3", "d0, d4, d2", "", "d0, d1, d4", "d0, d1, d2")
        self.op(
            f"{at} = iree_linalg_ext.attention <indexing_maps = {amaps}> ins({', '.join(flat[:3])}, %scale, "
            f"{flat[3]} : {_t(h, seq, d)}, {_t(h, seq, d)}, {_t(h, seq, d)}, f32, {_t(h, seq, seq)}) "
            f"outs({eo} : {_t(h, seq, d)}) {{"
        )
        self.op(f"^bb0(%score_{self.n}: f32):")
        self.op(f"  iree_linalg_ext.yield %score_{self.n} : f32")
        self.op(f"}} -> {_t(h, seq, d)}")
        ex = self.fresh("ex")
        self.op(
            f"{ex} = tensor.expand_shape {at} [[0, 1], [2], [3]] output_shape [1, {h}, {seq}, {d}] : "
            f"{_t(h, seq, d)} into {_t(1, h, seq, d)}"
        )
        et = self.empty(1, seq, h, d)
        tr = self.fresh("tr")
        self.op(
            f"{tr} = linalg.transpose ins({ex} : {_t(1, h, seq, d)}) outs({et} : {_t(1, seq, h, d)}) "
            "permutation = [0, 2, 1, 3]"
        )
        merged = self.fresh("co")
        self.op(
            f"{merged} = tensor.collapse_shape {tr} [[0], [1], [2, 3]] : {_t(1, seq, h, d)} into {_t(1, seq, h * d)}"
        )
        return self.linear(merged, pre + "o_proj.weight", h * d, s.hidden)

    def add(self, a: str, b: str, *dims: int) -> str:
        t = _t(*dims)
        e = self.empty(*dims)
        return self.generic(
            [(a, t, "f32"), (b, t, "f32")],
            (e, t),
            len(dims),
            [_ident(len(dims))] * 3,
            ["arith.addf {a0}, {a1} : f32", "{t0}"],
        )

    def mlp(self, x: str, i: int) -> str:
        s = self.s
        pre = f"model.layers.{i}.mlp."
        t = _t(1, s.seq, s.intermediate)
        gate = self.linear(x, pre + "gate_proj.weight", s.hidden, s.intermediate)
        e = self.empty(1, s.seq, s.intermediate)
        sig = self.generic(
            [(gate, t, "f32")],
            (e, t),
            3,
            [_ident(3)] * 2,
            [
                "arith.negf {a0} : f32",
                "math.exp {t0} : f32",
                "arith.addf {t1}, %one : f32",
                "arith.divf %one, {t2} : f32",
                "{t3}",
            ],
        )
        silu = self.generic(
            [(sig, t, "f32"), (gate, t, "f32")], (e, t), 3, [_ident(3)] * 3, ["arith.mulf {a0}, {a1} : f32", "{t0}"]
        )
        up = self.linear(x, pre + "up_proj.weight", s.hidden, s.intermediate)
        prod = self.generic(
            [(silu, t, "f32"), (up, t, "f32")], (e, t), 3, [_ident(3)] * 3, ["arith.mulf {a0}, {a1} : f32", "{t0}"]
        )
        return self.linear(prod, pre + "down_proj.weight", s.intermediate, s.hidden)

    def build(self) -> str:
        s = self.s
        seq, d = s.seq, s.head_dim
        half = d // 2
        inv = (1.0 / (s.rope_theta ** (np.arange(half) * 2.0 / d))).astype(np.float32)
        self.op("%zero = arith.constant 0.000000e+00 : f32")
        self.op("%one = arith.constant 1.000000e+00 : f32")
        self.op(f"%eps = arith.constant {float(np.float32(s.eps))!r} : f32")
        self.op(f"%hidden_f = arith.constant {float(s.hidden)!r} : f32")
        self.op(f"%scale = arith.constant {float(np.float32(1.0 / np.sqrt(d)))!r} : f32")
        self.op("%ninf = arith.constant 0xFF800000 : f32")
        self.op("%c1_i64 = arith.constant 1 : i64")
        self.op("%c2_i64 = arith.constant 2 : i64")
        self.op(f'%inv_freq = arith.constant dense<"0x{inv.tobytes().hex().upper()}"> : {_t(half)}')
        # causal mask [1, 1, S, S]
        em = self.empty(seq, seq)
        full = self.generic([(em, _t(seq, seq), "f32")], (em, _t(seq, seq)), 2, [_ident(2)] * 2, ["%ninf"])
        causal = self.generic(
            [(full, _t(seq, seq), "f32")],
            (em, _t(seq, seq)),
            2,
            [_ident(2)] * 2,
            [
                "linalg.index 0 : index",
                "arith.index_cast {t0} : index to i64",
                "linalg.index 1 : index",
                "arith.index_cast {t2} : index to i64",
                "arith.addi {t1}, %c1_i64 : i64",
                "arith.cmpi sge, {t3}, {t4} : i64",
                "arith.select {t5}, {a0}, %zero : f32",
                "{t6}",
            ],
        )
        mask = self.fresh("ex")
        self.op(
            f"{mask} = tensor.expand_shape {causal} [[0, 1, 2], [3]] output_shape [1, 1, {seq}, {seq}] : "
            f"{_t(seq, seq)} into {_t(1, 1, seq, seq)}"
        )
        # embedding
        table = self.param("model.embed_tokens.weight", s.vocab, s.hidden)
        eh = self.empty(1, seq, s.hidden)
        x = self.fresh("g")
        self.op(
            f"{x} = linalg.generic {{indexing_maps = {_maps(3, 'd0, d1', _ident(3))}, iterator_types = "
            f"{_iters(3)}}} ins(%ids : {_t(1, seq, et='i64')}) outs({eh} : {_t(1, seq, s.hidden)}) {{"
        )
        self.op("^bb0(%tok: i64, %o_emb: f32):")
        self.op("  %tok_i = arith.index_cast %tok : i64 to index")
        self.op("  %col = linalg.index 2 : index")
        self.op(f"  %row = tensor.extract {table}[%tok_i, %col] : {_t(s.vocab, s.hidden)}")
        self.op("  linalg.yield %row : f32")
        self.op(f"}} -> {_t(1, seq, s.hidden)}")
        # RoPE tables [1, 1, S, D]
        ep = self.empty(seq, 1)
        pos = self.fresh("g")
        self.op(
            f"{pos} = linalg.generic {{indexing_maps = {_maps(2, _ident(2))}, iterator_types = {_iters(2)}}} "
            f"outs({ep} : {_t(seq, 1)}) {{"
        )
        self.op("^bb0(%o_pos: f32):")
        self.op("  %pi = linalg.index 0 : index")
        self.op("  %pi64 = arith.index_cast %pi : index to i64")
        self.op("  %pf = arith.sitofp %pi64 : i64 to f32")
        self.op("  linalg.yield %pf : f32")
        self.op(f"}} -> {_t(seq, 1)}")
        ef = self.empty(seq, half)
        freqs = self.generic(
            [(pos, _t(seq, 1), "f32"), ("%inv_freq", _t(half), "f32")],
            (ef, _t(seq, half)),
            2,
            ["d0, 0", "d1", _ident(2)],
            ["arith.mulf {a0}, {a1} : f32", "{t0}"],
        )
        cat = self.fresh("cat")
        self.op(f"{cat} = tensor.concat dim(1) {freqs}, {freqs} : ({_t(seq, half)}, {_t(seq, half)}) -> {_t(seq, d)}")
        ec = self.empty(seq, d)
        tables = []
        for fn in ("cos", "sin"):
            g = self.generic(
                [(cat, _t(seq, d), "f32")], (ec, _t(seq, d)), 2, [_ident(2)] * 2, [f"math.{fn} {{a0}} : f32", "{t0}"]
            )
            ex = self.fresh("ex")
            self.op(
                f"{ex} = tensor.expand_shape {g} [[0, 1, 2], [3]] output_shape [1, 1, {seq}, {d}] : "
                f"{_t(seq, d)} into {_t(1, 1, seq, d)}"
            )
            tables.append(ex)
        cos, sin = tables
        for i in range(s.layers):
            a = self.attention(self.rms_norm(x, f"model.layers.{i}.input_layernorm.weight"), i, cos, sin, mask)
            x = self.add(x, a, 1, seq, s.hidden)
            m = self.mlp(self.rms_norm(x, f"model.layers.{i}.post_attention_layernorm.weight"), i)
            x = self.add(x, m, 1, seq, s.hidden)
        x = self.rms_norm(x, "model.norm.weight")
        logits = self.linear(x, "lm_head.weight", s.hidden, s.vocab)
        self.op(f"util.return {logits} : {_t(1, seq, s.vocab)}")
        head = (
            f"// benchmarks/llama_shapes.py: {s}\nmodule @module {{\n" + "\n".join(self.globals) + "\n"
            f"  util.func public @main(%ids: {_t(1, seq, et='i64')}) -> {_t(1, seq, s.vocab)} {{\n"
        )
        return head + "\n".join(self.lines) + "\n  }\n}\n"


def llama(shape: LlamaShape) -> str:
    """The MLIR text of a Llama of ``shape`` (weights as external parameters of scope ``model``)."""
    if shape.hidden % shape.heads or shape.heads % shape.kv_heads or shape.head_dim % 2:
        raise ValueError(f"heads {shape.heads}/{shape.kv_heads} do not divide hidden {shape.hidden} evenly")
    return _Writer(shape).build()


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--preset", choices=sorted(PRESETS), default="tiny")
    ap.add_argument("--layers", type=int)
    ap.add_argument("--seq", type=int)
    args = ap.parse_args(argv)
    shape = PRESETS[args.preset]
    if args.layers is not None:
        shape = shape.with_layers(args.layers)
    if args.seq is not None:
        shape = replace(shape, seq=args.seq)
    sys.stdout.write(llama(shape))
    return 0


if __name__ == "__main__":
    sys.exit(main())
