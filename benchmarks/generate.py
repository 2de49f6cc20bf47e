"""Transformer-like programs at linalg level, of any depth, for the scale benchmark.

``transformer(layers, ...)`` writes one ``func.func @forward(%x: tensor<SEQxDxf32>) -> tensor<SEQxDxf32>``
with ``layers`` pre-norm encoder layers, in the shape PyTorch exporters (torch-mlir / iree-turbine) give
an ``nn.TransformerEncoderLayer(norm_first=True)`` at linalg level:

* layer norm: mean and variance as ``linalg.generic`` reductions over the feature dim, ``math.rsqrt``;
* Q/K/V from one fused weight constant ``in_proj`` of shape [3d, d] (torch's ``in_proj_weight``) and a
  fused bias [3d]: ``qkv="slices"`` (default) cuts the weight with three tile-aligned row
  ``tensor.extract_slice``s, each the transposed RHS of its own ``linalg.matmul`` (``x @ w_q^T``), as an
  exporter that decomposes ``F.linear`` per projection writes it; ``qkv="fused"`` does one matmul with
  the whole weight and slices the [seq, 3d] *result* into three column blocks;
* a bias-add ``linalg.generic`` per projection, heads split with ``tensor.expand_shape`` +
  ``linalg.transpose``;
* attention as an opaque root: ``iree_linalg_ext.attention`` (default; the evaluator knows it) or
  ``attention="opaque"``, a generic-form ``"mydialect.attention"`` op no stage looks inside (the
  evaluator cannot run it, so ``check`` is not available then);
* output projection, bias and residual add in one consumer generic;
* MLP: ``ff1`` [f, d] matmul, then bias + GELU in one generic (``gelu="tanh"``: the tanh
  approximation with ``math.tanh``; ``gelu="erf"``: exact, ``math.erf``), ``ff2`` [d, f] matmul, bias
  + residual.

Weights are hex ``dense<"0x...">`` literals (as IREE prints large constants), distinct per layer, with
deterministic values: small integers / 64 from a generator seeded by (layer, constant), scaled so
that 64 layers stay finite. Everything is static-shaped f32. Run ``python benchmarks/generate.py LAYERS > out.mlir`` to
look at one.
"""

from __future__ import annotations

import argparse
import sys
from dataclasses import dataclass

import numpy as np

__all__ = ["Config", "transformer"]


@dataclass(frozen=True)
class Config:
    layers: int = 1
    d_model: int = 64
    seq: int = 16
    heads: int = 2
    ff: int = 256
    qkv: str = "slices"
    """``slices``: three row slices of the fused weight feed three matmuls; ``fused``: one matmul, then
    three column slices of its result."""
    attention: str = "iree"
    """``iree``: ``iree_linalg_ext.attention``; ``opaque``: a ``mydialect.attention`` op."""
    gelu: str = "tanh"
    """``tanh`` (approximate, ``math.tanh``) or ``erf`` (exact, ``math.erf``)."""

    def __post_init__(self) -> None:
        if self.d_model % self.heads:
            raise ValueError("d_model must be a multiple of heads")
        if self.qkv not in ("slices", "fused") or self.attention not in ("iree", "opaque"):
            raise ValueError("qkv is 'slices' or 'fused'; attention is 'iree' or 'opaque'")
        if self.gelu not in ("tanh", "erf"):
            raise ValueError("gelu is 'tanh' or 'erf'")


def _values(shape: tuple[int, ...], layer: int, salt: int, scale: float) -> np.ndarray:
    """Integers in [-6, 6] / 64 · scale from a generator seeded by (layer, salt): deterministic, and
    distinct for every layer (real weights never repeat, and equal constants would be shared in the
    e-graph)."""
    raw = np.random.default_rng([layer, salt]).integers(-6, 7, size=shape)
    return (raw / 64.0 * scale).astype(np.float32)


def _hex(a: np.ndarray) -> str:
    return 'dense<"0x' + a.astype("<f4").tobytes().hex().upper() + '">'


def _t(*shape: int) -> str:
    return "tensor<" + "x".join(str(s) for s in shape) + "xf32>"


_MATMUL_T = (
    "indexing_maps = [affine_map<(d0, d1, d2) -> (d0, d2)>, affine_map<(d0, d1, d2) -> (d1, d2)>, "
    "affine_map<(d0, d1, d2) -> (d0, d1)>]"
)
_HEADER = """\
#id = affine_map<(d0, d1) -> (d0, d1)>
#row = affine_map<(d0, d1) -> (d0)>
#col = affine_map<(d0, d1) -> (d1)>
#attn_q = affine_map<(b, m, n, k1, k2) -> (b, m, k1)>
#attn_k = affine_map<(b, m, n, k1, k2) -> (b, k2, k1)>
#attn_v = affine_map<(b, m, n, k1, k2) -> (b, k2, n)>
#attn_s = affine_map<(b, m, n, k1, k2) -> ()>
#attn_o = affine_map<(b, m, n, k1, k2) -> (b, m, n)>
"""


class _Writer:
    def __init__(self, cfg: Config) -> None:
        self.cfg = cfg
        self.lines: list[str] = []
        self.ops = 0

    def op(self, text: str) -> None:
        self.lines.append("  " + text)
        self.ops += 1

    def block(self, text: str) -> None:
        """An op with a region (its body lines are not counted as ops of the function)."""
        self.lines.extend("  " + line for line in text.strip("\n").splitlines())
        self.ops += 1

    # -- building blocks ----------------------------------------------------------------------------

    def matmul_t(self, out: str, lhs: str, rhs: str, m: int, n: int, k: int, acc: str) -> None:
        self.op(
            f"%{out} = linalg.matmul {_MATMUL_T} ins(%{lhs}, %{rhs} : {_t(m, k)}, {_t(n, k)}) "
            f"outs(%{acc} : {_t(m, n)}) -> {_t(m, n)}"
        )

    def elementwise(
        self, out: str, ins: list[tuple[str, str, str]], body: list[str], result: str, shape: tuple[int, int]
    ) -> None:
        """A parallel 2-D generic; ``ins`` is (value, map alias, type); ``body`` uses the block args
        %a0, %a1, ... and must define ``result``."""
        maps = ", ".join([m for _, m, _ in ins] + ["#id"])
        operands = ", ".join(f"%{v}" for v, _, _ in ins)
        types = ", ".join(t for _, _, t in ins)
        args = ", ".join(f"%a{i}: f32" for i in range(len(ins))) + ", %o: f32"
        inner = "\n".join(f"  {line}" for line in body)
        head = f'%{out} = linalg.generic {{indexing_maps = [{maps}], iterator_types = ["parallel", "parallel"]}}'
        self.block(
            f"""
{head} ins({operands} : {types}) outs(%empty_sd_{shape[1]} : {_t(*shape)}) {{
^bb0({args}):
{inner}
  linalg.yield %{result} : f32
}} -> {_t(*shape)}"""
        )

    def row_sum(self, out: str, src: str, square: bool) -> None:
        s, d = self.cfg.seq, self.cfg.d_model
        body = "  %r = arith.addf %in, %acc : f32"
        if square:
            body = "  %sq = arith.mulf %in, %in : f32\n  %r = arith.addf %sq, %acc : f32"
        head = f'%{out} = linalg.generic {{indexing_maps = [#id, #row], iterator_types = ["parallel", "reduction"]}}'
        self.block(
            f"""
{head} ins(%{src} : {_t(s, d)}) outs(%zero_rows : {_t(s)}) {{
^bb0(%in: f32, %acc: f32):
{body}
  linalg.yield %r : f32
}} -> {_t(s)}"""
        )

    def layer_norm(self, out: str, src: str, gamma: str, beta: str) -> None:
        s, d = self.cfg.seq, self.cfg.d_model
        self.row_sum(f"{out}_sum", src, square=False)
        self.elementwise(
            f"{out}_c",
            [(src, "#id", _t(s, d)), (f"{out}_sum", "#row", _t(s))],
            ["%mean = arith.mulf %a1, %inv_d : f32", "%c = arith.subf %a0, %mean : f32"],
            "c",
            (s, d),
        )
        self.row_sum(f"{out}_sq", f"{out}_c", square=True)
        self.elementwise(
            out,
            [
                (f"{out}_c", "#id", _t(s, d)),
                (f"{out}_sq", "#row", _t(s)),
                (gamma, "#col", _t(d)),
                (beta, "#col", _t(d)),
            ],
            [
                "%var = arith.mulf %a1, %inv_d : f32",
                "%ve = arith.addf %var, %eps : f32",
                "%r = math.rsqrt %ve : f32",
                "%n = arith.mulf %a0, %r : f32",
                "%g = arith.mulf %n, %a2 : f32",
                "%y = arith.addf %g, %a3 : f32",
            ],
            "y",
            (s, d),
        )

    def bias(self, out: str, src: str, b: str, n: int, residual: str | None = None) -> None:
        s = self.cfg.seq
        ins = [(src, "#id", _t(s, n)), (b, "#col", _t(n))]
        body = ["%y = arith.addf %a0, %a1 : f32"]
        if residual is not None:
            ins.append((residual, "#id", _t(s, n)))
            body.append("%z = arith.addf %y, %a2 : f32")
        self.elementwise(out, ins, body, "z" if residual else "y", (s, n))

    def gelu(self, out: str, src: str, b: str) -> None:
        s, f = self.cfg.seq, self.cfg.ff
        ins = [(src, "#id", _t(s, f)), (b, "#col", _t(f))]
        if self.cfg.gelu == "tanh":  # 0.5 v (1 + tanh(sqrt(2/pi) (v + 0.044715 v^3)))
            body = [
                "%v = arith.addf %a0, %a1 : f32",
                "%v2 = arith.mulf %v, %v : f32",
                "%v3 = arith.mulf %v2, %v : f32",
                "%c3 = arith.mulf %v3, %gelu_c : f32",
                "%in = arith.addf %v, %c3 : f32",
                "%sc = arith.mulf %in, %sqrt_2_pi : f32",
                "%th = math.tanh %sc : f32",
                "%one_p = arith.addf %th, %one : f32",
                "%hv = arith.mulf %v, %half : f32",
                "%g = arith.mulf %hv, %one_p : f32",
            ]
        else:  # 0.5 v (1 + erf(v / sqrt 2))
            body = [
                "%v = arith.addf %a0, %a1 : f32",
                "%s = arith.mulf %v, %inv_sqrt2 : f32",
                "%e = math.erf %s : f32",
                "%one_p = arith.addf %e, %one : f32",
                "%hv = arith.mulf %v, %half : f32",
                "%g = arith.mulf %hv, %one_p : f32",
            ]
        self.elementwise(out, ins, body, "g", (s, f))

    def attention(self, out: str, q: str, k: str, v: str) -> None:
        c = self.cfg
        s, h, hd = c.seq, c.heads, c.d_model // c.heads
        heads = []
        for name in (q, k, v):
            self.op(
                f"%{name}_3d = tensor.expand_shape %{name} [[0], [1, 2]] output_shape [{s}, {h}, {hd}] "
                f": {_t(s, c.d_model)} into {_t(s, h, hd)}"
            )
            self.op(
                f"%{name}_h = linalg.transpose ins(%{name}_3d : {_t(s, h, hd)}) "
                f"outs(%empty_heads : {_t(h, s, hd)}) permutation = [1, 0, 2]"
            )
            heads.append(f"{name}_h")
        qh, kh, vh = heads
        if c.attention == "iree":
            th = _t(h, s, hd)
            maps = "<indexing_maps = [#attn_q, #attn_k, #attn_v, #attn_s, #attn_o]>"
            operands = f"ins(%{qh}, %{kh}, %{vh}, %scale : {th}, {th}, {th}, f32)"
            self.block(
                f"""
%{out}_h = iree_linalg_ext.attention {maps} {operands} outs(%empty_heads : {th}) {{
^bb0(%score: f32):
  iree_linalg_ext.yield %score : f32
}} -> {th}"""
            )
        else:
            self.op(
                f'%{out}_h = "mydialect.attention"(%{qh}, %{kh}, %{vh}, %scale) '
                f": ({_t(h, s, hd)}, {_t(h, s, hd)}, {_t(h, s, hd)}, f32) -> {_t(h, s, hd)}"
            )
        self.op(
            f"%{out}_t = linalg.transpose ins(%{out}_h : {_t(h, s, hd)}) outs(%empty_back : {_t(s, h, hd)}) "
            "permutation = [1, 0, 2]"
        )
        self.op(f"%{out} = tensor.collapse_shape %{out}_t [[0], [1, 2]] : {_t(s, h, hd)} into {_t(s, c.d_model)}")

    # -- one encoder layer --------------------------------------------------------------------------

    def layer(self, i: int, x: str) -> str:
        c = self.cfg
        s, d, f = c.seq, c.d_model, c.ff
        p = f"l{i}"
        w = 1.0 / np.sqrt(d)
        consts = {
            "ln1_g": (1 + _values((d,), i, 1, 8.0)),
            "ln1_b": _values((d,), i, 2, 2.0),
            "in_proj": _values((3 * d, d), i, 3, 8 * w),
            "in_bias": _values((3 * d,), i, 4, 2.0),
            "out_proj": _values((d, d), i, 5, 8 * w),
            "out_bias": _values((d,), i, 6, 2.0),
            "ln2_g": (1 + _values((d,), i, 7, 8.0)),
            "ln2_b": _values((d,), i, 8, 2.0),
            "ff1": _values((f, d), i, 9, 8 * w),
            "ff1_b": _values((f,), i, 10, 2.0),
            "ff2": _values((d, f), i, 11, 8.0 / np.sqrt(f)),
            "ff2_b": _values((d,), i, 12, 2.0),
        }
        for name, arr in consts.items():
            self.op(f"%{p}_{name} = arith.constant {_hex(arr)} : {_t(*arr.shape)}")

        self.layer_norm(f"{p}_ln1", x, f"{p}_ln1_g", f"{p}_ln1_b")
        names = ("q", "k", "v")
        if c.qkv == "slices":
            for j, n in enumerate(names):
                self.op(
                    f"%{p}_w_{n} = tensor.extract_slice %{p}_in_proj[{j * d}, 0] [{d}, {d}] [1, 1] "
                    f": {_t(3 * d, d)} to {_t(d, d)}"
                )
                self.op(f"%{p}_b_{n} = tensor.extract_slice %{p}_in_bias[{j * d}] [{d}] [1] : {_t(3 * d)} to {_t(d)}")
                self.matmul_t(f"{p}_{n}_mm", f"{p}_ln1", f"{p}_w_{n}", s, d, d, f"acc_{d}")
                self.bias(f"{p}_{n}", f"{p}_{n}_mm", f"{p}_b_{n}", d)
        else:
            self.matmul_t(f"{p}_qkv_mm", f"{p}_ln1", f"{p}_in_proj", s, 3 * d, d, f"acc_{3 * d}")
            self.bias(f"{p}_qkv", f"{p}_qkv_mm", f"{p}_in_bias", 3 * d)
            for j, n in enumerate(names):
                self.op(
                    f"%{p}_{n} = tensor.extract_slice %{p}_qkv[0, {j * d}] [{s}, {d}] [1, 1] "
                    f": {_t(s, 3 * d)} to {_t(s, d)}"
                )
        self.attention(f"{p}_attn", f"{p}_q", f"{p}_k", f"{p}_v")
        self.matmul_t(f"{p}_o_mm", f"{p}_attn", f"{p}_out_proj", s, d, d, f"acc_{d}")
        self.bias(f"{p}_x1", f"{p}_o_mm", f"{p}_out_bias", d, residual=x)

        self.layer_norm(f"{p}_ln2", f"{p}_x1", f"{p}_ln2_g", f"{p}_ln2_b")
        self.matmul_t(f"{p}_ff1_mm", f"{p}_ln2", f"{p}_ff1", s, f, d, f"acc_{f}")
        self.gelu(f"{p}_ff1_act", f"{p}_ff1_mm", f"{p}_ff1_b")
        self.matmul_t(f"{p}_ff2_mm", f"{p}_ff1_act", f"{p}_ff2", s, d, f, f"acc_{d}")
        self.bias(f"{p}_out", f"{p}_ff2_mm", f"{p}_ff2_b", d, residual=f"{p}_x1")
        return f"{p}_out"


def transformer(layers: int, **options: object) -> tuple[str, int]:
    """The MLIR text of a ``layers``-deep encoder and its number of ops (``func.func`` body, not
    counting ops nested in generic bodies). ``options`` are the other fields of :class:`Config`."""
    cfg = Config(layers=layers, **options)  # type: ignore[arg-type]
    s, d, h = cfg.seq, cfg.d_model, cfg.heads
    hd = d // h
    w = _Writer(cfg)
    scalars = {
        "zero": 0.0,
        "one": 1.0,
        "half": 0.5,
        "inv_d": 1.0 / d,
        "eps": 1e-5,
        "scale": 1.0 / np.sqrt(hd),
        "gelu_c": 0.044715,
        "sqrt_2_pi": np.sqrt(2.0 / np.pi),
        "inv_sqrt2": 1.0 / np.sqrt(2.0),
    }
    for name, value in scalars.items():
        w.op(f"%{name} = arith.constant {float(np.float32(value))!r} : f32")
    w.op(f"%empty_rows = tensor.empty() : {_t(s)}")
    w.op(f"%zero_rows = linalg.fill ins(%zero : f32) outs(%empty_rows : {_t(s)}) -> {_t(s)}")
    widths = sorted({d, cfg.ff} | ({3 * d} if cfg.qkv == "fused" else set()))
    for n in widths:
        w.op(f"%empty_sd_{n} = tensor.empty() : {_t(s, n)}")
        w.op(f"%acc_{n} = linalg.fill ins(%zero : f32) outs(%empty_sd_{n} : {_t(s, n)}) -> {_t(s, n)}")
    w.op(f"%empty_heads = tensor.empty() : {_t(h, s, hd)}")
    w.op(f"%empty_back = tensor.empty() : {_t(s, h, hd)}")
    x = "x"
    for i in range(layers):
        x = w.layer(i, x)
    w.op(f"return %{x} : {_t(s, d)}")
    header = (
        f"// generated by benchmarks/generate.py: {layers} pre-norm encoder layer(s), seq {s}, d_model {d}, "
        f"{h} heads, ff {cfg.ff}, qkv={cfg.qkv}, attention={cfg.attention}, gelu={cfg.gelu}\n"
    )
    body = "\n".join(w.lines)
    text = f"{header}{_HEADER}func.func @forward(%x: {_t(s, d)}) -> {_t(s, d)} {{\n{body}\n}}\n"
    return text, w.ops


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description="print a generated transformer-like program")
    p.add_argument("layers", type=int)
    for fld, default in (("d_model", 64), ("seq", 16), ("heads", 2), ("ff", 256)):
        p.add_argument(f"--{fld.replace('_', '-')}", type=int, default=default)
    p.add_argument("--qkv", choices=("slices", "fused"), default="slices")
    p.add_argument("--attention", choices=("iree", "opaque"), default="iree")
    p.add_argument("--gelu", choices=("tanh", "erf"), default="tanh")
    a = p.parse_args(argv)
    text, _ = transformer(
        a.layers, d_model=a.d_model, seq=a.seq, heads=a.heads, ff=a.ff, qkv=a.qkv, attention=a.attention, gelu=a.gelu
    )
    sys.stdout.write(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
