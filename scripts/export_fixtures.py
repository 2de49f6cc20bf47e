"""Export small real PyTorch models with iree-turbine and write the committed model fixtures.

Writes ``tests/fixtures/models/<name>/`` for every model below, plus ``tests/fixtures/models/README.md``
(one row per model, file sizes, the exact commands, and the distinct op names in each IR form). The
test suite (``tests/test_model_fixtures.py``) only reads these files; it never imports torch.

Setup (torch is not a dependency of the project venv; the ``models`` extra names the versions):

    python3.11 -m venv V && V/bin/pip install torch==2.13.0 iree-turbine==3.9.0 safetensors
    V/bin/python scripts/export_fixtures.py            # rewrites tests/fixtures/models/

On these machines pip takes the CPU wheel of torch 2.13.0 for Python 3.11 from local disk, and iree-turbine
pulls iree-base-compiler/runtime 3.13 (the same as the project's ``iree`` extra). The script calls the
``iree-compile`` next to its Python interpreter (else the one on PATH). Nothing is downloaded: every model
is built in code under ``torch.manual_seed``.

Per static model (gpt2_block, bert_block, llama_block, tiny_lm, int8_mlp, f16_mlp):

    torch.mlir            aot.export(model, args=...).save_mlir(...): torch dialect, weights inline as
                          dense_resource blobs
    input.mlir            iree-compile torch.mlir --compile-to=input   (default async ABI)
    ext.torch.mlir        the same export after aot.externalize_module_parameters(model, external_scope="model"):
                          weights are util.global ... = #flow.parameter.named<"model"::"<key>">
    ext.input.mlir        iree-compile ext.torch.mlir --compile-to=input
    params.irpa           aot.save_module_parameters(...), the values behind the "model" scope
    params.safetensors    (gpt2_block, int8_mlp) the same tensors, same keys, written with safetensors
    global_opt.avx2.mlir  iree-compile input.mlir --iree-hal-target-backends=llvm-cpu
                          --iree-llvmcpu-target-cpu=haswell --iree-dispatch-creation-data-tiling
                          --compile-to=global-optimization
    ext.global_opt.avx2.mlir  the same from ext.input.mlir. Weight-only work (transposes, broadcasts, int8
                          dequantization) is hoisted in both: in global_opt.avx2.mlir it is
                          const-evaluated into __hoisted_tensor_* globals with dense<"0x..."> values, here it
                          stays as util.initializer bodies reading flow.tensor.constant #flow.parameter.named
    inputs.npz            the call's inputs, arg0, arg1, ... in argument order
    expected_torch.npz    PyTorch's outputs out0, out1, ... in return order
    expected_iree.npz     the outputs of torch.mlir compiled for llvm-cpu (target-cpu=host) and run with
                          iree.runtime; ext.torch.mlir run with params.irpa is checked to agree with it
    meta.json             shapes, dtypes, parameter keys, measured torch-vs-IREE differences

Per dynamic model (attention_dyn, mlp_dyn; sequence dimension ``Dim("seq")``): torch.mlir, input.mlir,
``dispatch_creation.avx2.mlir`` (the haswell flags above with ``--compile-to=dispatch-creation``), and
``inputs_s<N>.npz`` / ``expected_torch_s<N>.npz`` / ``expected_iree_s<N>.npz`` for N in 1, 16, 13.

Per model with symbolic shapes (mlp_sym: batch ``Dim("batch", 1..8)`` and seq ``8 * Dim("seq8", 1..64)``,
exported with ``import_symbolic_shape_expressions=True``, so torch.mlir has ``torch.symbolic_int`` /
``torch.bind_symbolic_shape`` and input.mlir IREE's ``util.assume.int`` / ``flow.tensor.tie_shape``): the same
files, with ``inputs_<b>x<s>.npz`` / ``expected_torch_<b>x<s>.npz`` / ``expected_iree_<b>x<s>.npz`` per size.

Deterministic: fixed seeds, .npz written with fixed zip timestamps, and the compiler is run inside the model
folder on relative paths; running the script twice gives byte-identical files.
"""

from __future__ import annotations

import argparse
import io
import json
import math
import re
import shutil
import subprocess
import sys
import tempfile
import time
import zipfile
from collections.abc import Callable
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F
from iree import runtime as ireert
from iree.turbine import aot
from iree.turbine.aot.params import _yield_saveable_tensors

ROOT = Path(__file__).resolve().parent.parent
OUT = ROOT / "tests" / "fixtures" / "models"
SCOPE = "model"

HOST = ["--iree-hal-target-backends=llvm-cpu", "--iree-llvmcpu-target-cpu=host"]
AVX2 = [
    "--iree-hal-target-backends=llvm-cpu",
    "--iree-llvmcpu-target-cpu=haswell",
    "--iree-dispatch-creation-data-tiling",
]
DYN_SIZES = (1, 16, 13)


# ------------------------------------------------------------------------------------ models
# Standard module idioms as users write them (nanoGPT / HF-style), at fixture sizes.


class CausalSelfAttention(nn.Module):
    """GPT-2 attention: one fused c_attn Linear(d, 3d), split into q/k/v, heads, causal SDPA, c_proj."""

    def __init__(self, d: int, n_head: int):
        super().__init__()
        self.n_head = n_head
        self.c_attn = nn.Linear(d, 3 * d)
        self.c_proj = nn.Linear(d, d)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        b, s, d = x.shape
        q, k, v = self.c_attn(x).split(d, dim=2)
        q = q.view(b, s, self.n_head, d // self.n_head).transpose(1, 2)
        k = k.view(b, s, self.n_head, d // self.n_head).transpose(1, 2)
        v = v.view(b, s, self.n_head, d // self.n_head).transpose(1, 2)
        y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        y = y.transpose(1, 2).contiguous().view(b, s, d)
        return self.c_proj(y)


class GPT2MLP(nn.Module):
    def __init__(self, d: int):
        super().__init__()
        self.c_fc = nn.Linear(d, 4 * d)
        self.c_proj = nn.Linear(4 * d, d)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.c_proj(F.gelu(self.c_fc(x), approximate="tanh"))


class GPT2Block(nn.Module):
    """Pre-norm: x + attn(ln_1(x)), then x + mlp(ln_2(x))."""

    def __init__(self, d: int, n_head: int):
        super().__init__()
        self.ln_1 = nn.LayerNorm(d)
        self.attn = CausalSelfAttention(d, n_head)
        self.ln_2 = nn.LayerNorm(d)
        self.mlp = GPT2MLP(d)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x + self.attn(self.ln_1(x))
        x = x + self.mlp(self.ln_2(x))
        return x


class BertLayer(nn.Module):
    """BERT encoder layer (post-norm) with an additive padding mask built from a 0/1 attention mask."""

    def __init__(self, d: int, n_head: int, d_ff: int, eps: float = 1e-12):
        super().__init__()
        self.n_head = n_head
        self.head_dim = d // n_head
        self.query = nn.Linear(d, d)
        self.key = nn.Linear(d, d)
        self.value = nn.Linear(d, d)
        self.attn_out = nn.Linear(d, d)
        self.attn_norm = nn.LayerNorm(d, eps=eps)
        self.intermediate = nn.Linear(d, d_ff)
        self.output = nn.Linear(d_ff, d)
        self.out_norm = nn.LayerNorm(d, eps=eps)

    def _heads(self, t: torch.Tensor) -> torch.Tensor:
        b, s, _ = t.shape
        return t.view(b, s, self.n_head, self.head_dim).permute(0, 2, 1, 3)

    def forward(self, hidden: torch.Tensor, attention_mask: torch.Tensor) -> torch.Tensor:
        b, s, d = hidden.shape
        ext_mask = (1.0 - attention_mask[:, None, None, :]) * -10000.0  # [b, 1, 1, s]
        q = self._heads(self.query(hidden))
        k = self._heads(self.key(hidden))
        v = self._heads(self.value(hidden))
        scores = torch.matmul(q, k.transpose(-1, -2)) / math.sqrt(self.head_dim)
        scores = scores + ext_mask
        probs = F.softmax(scores, dim=-1)
        ctx = torch.matmul(probs, v).permute(0, 2, 1, 3).contiguous().view(b, s, d)
        h = self.attn_norm(self.attn_out(ctx) + hidden)
        return self.out_norm(self.output(F.gelu(self.intermediate(h))) + h)


class RMSNorm(nn.Module):
    def __init__(self, d: int, eps: float = 1e-6):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(d))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.eps) * self.weight


class RotaryEmbedding(nn.Module):
    """cos/sin tables from positions torch.arange(seq) and a non-persistent inv_freq buffer (HF Llama)."""

    def __init__(self, head_dim: int, base: float = 10000.0):
        super().__init__()
        inv_freq = 1.0 / (base ** (torch.arange(0, head_dim, 2, dtype=torch.float32) / head_dim))
        self.register_buffer("inv_freq", inv_freq, persistent=False)

    def forward(self, x: torch.Tensor, seq_len: int) -> tuple[torch.Tensor, torch.Tensor]:
        t = torch.arange(seq_len, device=x.device, dtype=torch.float32)
        freqs = torch.outer(t, self.inv_freq)
        emb = torch.cat((freqs, freqs), dim=-1)
        return emb.cos(), emb.sin()


def rotate_half(x: torch.Tensor) -> torch.Tensor:
    x1 = x[..., : x.shape[-1] // 2]
    x2 = x[..., x.shape[-1] // 2 :]
    return torch.cat((-x2, x1), dim=-1)


def repeat_kv(x: torch.Tensor, n_rep: int) -> torch.Tensor:
    """[b, n_kv, s, hd] -> [b, n_kv * n_rep, s, hd] by expand + reshape (HF Llama's repeat_kv)."""
    b, n_kv, s, hd = x.shape
    return x[:, :, None, :, :].expand(b, n_kv, n_rep, s, hd).reshape(b, n_kv * n_rep, s, hd)


class LlamaAttention(nn.Module):
    def __init__(self, d: int, n_heads: int, n_kv_heads: int):
        super().__init__()
        self.n_heads, self.n_kv_heads, self.head_dim = n_heads, n_kv_heads, d // n_heads
        self.q_proj = nn.Linear(d, n_heads * self.head_dim, bias=False)
        self.k_proj = nn.Linear(d, n_kv_heads * self.head_dim, bias=False)
        self.v_proj = nn.Linear(d, n_kv_heads * self.head_dim, bias=False)
        self.o_proj = nn.Linear(n_heads * self.head_dim, d, bias=False)
        self.rotary = RotaryEmbedding(self.head_dim)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        b, s, d = x.shape
        q = self.q_proj(x).view(b, s, self.n_heads, self.head_dim).transpose(1, 2)
        k = self.k_proj(x).view(b, s, self.n_kv_heads, self.head_dim).transpose(1, 2)
        v = self.v_proj(x).view(b, s, self.n_kv_heads, self.head_dim).transpose(1, 2)
        cos, sin = self.rotary(x, s)
        q = q * cos + rotate_half(q) * sin
        k = k * cos + rotate_half(k) * sin
        k = repeat_kv(k, self.n_heads // self.n_kv_heads)
        v = repeat_kv(v, self.n_heads // self.n_kv_heads)
        y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        return self.o_proj(y.transpose(1, 2).reshape(b, s, d))


class LlamaMLP(nn.Module):
    def __init__(self, d: int, d_ff: int):
        super().__init__()
        self.gate_proj = nn.Linear(d, d_ff, bias=False)
        self.up_proj = nn.Linear(d, d_ff, bias=False)
        self.down_proj = nn.Linear(d_ff, d, bias=False)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.down_proj(F.silu(self.gate_proj(x)) * self.up_proj(x))


class LlamaBlock(nn.Module):
    def __init__(self, d: int, n_heads: int, n_kv_heads: int, d_ff: int):
        super().__init__()
        self.input_layernorm = RMSNorm(d)
        self.self_attn = LlamaAttention(d, n_heads, n_kv_heads)
        self.post_attention_layernorm = RMSNorm(d)
        self.mlp = LlamaMLP(d, d_ff)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x + self.self_attn(self.input_layernorm(x))
        x = x + self.mlp(self.post_attention_layernorm(x))
        return x


class TinyLM(nn.Module):
    """Token + learned positional embedding, one GPT-2 block, final LayerNorm, lm_head tied to wte."""

    def __init__(self, vocab: int, max_pos: int, d: int, n_head: int):
        super().__init__()
        self.wte = nn.Embedding(vocab, d)
        self.wpe = nn.Embedding(max_pos, d)
        self.h = GPT2Block(d, n_head)
        self.ln_f = nn.LayerNorm(d)
        self.lm_head = nn.Linear(d, vocab, bias=False)
        self.lm_head.weight = self.wte.weight  # weight tying

    def forward(self, idx: torch.Tensor) -> torch.Tensor:
        _, s = idx.shape
        pos = torch.arange(s, dtype=torch.long, device=idx.device)
        x = self.wte(idx) + self.wpe(pos)
        return self.lm_head(self.ln_f(self.h(x)))


class Int8Linear(nn.Module):
    """Weight-only int8: int8 weight buffer [out, in] and a per-output-channel f32 scale, dequantized in forward."""

    def __init__(self, linear: nn.Linear):
        super().__init__()
        w = linear.weight.detach()
        scale = w.abs().amax(dim=1, keepdim=True) / 127.0
        self.register_buffer("weight_q", torch.round(w / scale).clamp(-127, 127).to(torch.int8))
        self.register_buffer("weight_scale", scale.to(torch.float32))
        self.bias = nn.Parameter(linear.bias.detach().clone())

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        w = self.weight_q.to(torch.float32) * self.weight_scale
        return F.linear(x, w, self.bias)


class Int8MLP(nn.Module):
    def __init__(self, d: int, d_ff: int):
        super().__init__()
        self.fc1 = Int8Linear(nn.Linear(d, d_ff))
        self.fc2 = Int8Linear(nn.Linear(d_ff, d))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return F.relu(self.fc2(F.relu(self.fc1(x))))


class F16MLP(nn.Module):
    """Half-precision MLP (``model.half()``): the f32 activation is cast to the weight dtype, the result back to f32."""

    def __init__(self, d: int, d_ff: int):
        super().__init__()
        self.fc1 = nn.Linear(d, d_ff)
        self.fc2 = nn.Linear(d_ff, d)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x.to(self.fc1.weight.dtype)
        return self.fc2(F.gelu(self.fc1(x))).float()


def _perturb_norms(model: nn.Module, gen: torch.Generator) -> nn.Module:
    """Give norm weights/biases non-default values (a scale of 1 and shift of 0 would hide bugs)."""
    with torch.no_grad():
        for m in model.modules():
            if isinstance(m, nn.LayerNorm | RMSNorm):
                m.weight.copy_(1.0 + 0.2 * torch.randn(m.weight.shape, generator=gen))
                if getattr(m, "bias", None) is not None:
                    m.bias.copy_(0.1 * torch.randn(m.bias.shape, generator=gen))
    return model


# ------------------------------------------------------------------------------------ specs


@dataclass
class Spec:
    name: str
    what: str
    build: Callable[[], nn.Module]
    inputs: Callable[[torch.Generator], tuple[torch.Tensor, ...]]
    safetensors: bool = False
    dynamic: bool = False  # dim 1 of the first input is Dim("seq")
    dyn_inputs: Callable[[torch.Generator, int], tuple[torch.Tensor, ...]] | None = None


def _seeded(seed: int, make: Callable[[], nn.Module]) -> Callable[[], nn.Module]:
    def build() -> nn.Module:
        torch.manual_seed(seed)
        model = make()
        return _perturb_norms(model, torch.Generator().manual_seed(seed + 1000)).eval()

    return build


def _f16_mlp() -> nn.Module:
    return F16MLP(64, 128).half()


def _bert_inputs(g: torch.Generator) -> tuple[torch.Tensor, ...]:
    hidden = torch.randn(2, 16, 32, generator=g)
    mask = torch.ones(2, 16)
    mask[1, 11:] = 0.0  # second sequence: 11 real tokens, 5 padding
    return hidden, mask


SPECS = [
    Spec(
        "gpt2_block",
        "GPT-2 pre-norm block: LayerNorm, fused QKV Linear(d,3d) + split, 4 heads, causal SDPA, out-proj, "
        "residual, LayerNorm, MLP d->4d->d with tanh GELU, residual",
        _seeded(1, lambda: GPT2Block(32, 4)),
        lambda g: (torch.randn(2, 16, 32, generator=g),),
        safetensors=True,
    ),
    Spec(
        "bert_block",
        "BERT post-norm encoder layer: Q/K/V Linears, 4 heads, additive mask (1-mask)*-1e4 as [b,1,1,s] from "
        "a 0/1 float mask input, softmax(QK^T/sqrt(dh)+mask)V, out-proj + residual + LayerNorm, MLP d->4d->d "
        "with erf GELU + residual + LayerNorm (eps 1e-12)",
        _seeded(2, lambda: BertLayer(32, 4, 128)),
        _bert_inputs,
    ),
    Spec(
        "llama_block",
        "Llama block: RMSNorm, GQA (4 query heads, 2 kv heads, repeat_kv by expand+reshape), rotary "
        "embeddings (arange positions, non-persistent inv_freq buffer, rotate_half with slices + cat), causal "
        "SDPA, o_proj, residual, RMSNorm, SiLU-gated MLP d->96->d, residual; Linears without bias",
        _seeded(3, lambda: LlamaBlock(32, 4, 2, 96)),
        lambda g: (torch.randn(1, 16, 32, generator=g),),
    ),
    Spec(
        "tiny_lm",
        "Tiny LM: int64 token ids, nn.Embedding(128,32) + learned positions nn.Embedding(32,32), one GPT-2 "
        "block, final LayerNorm, lm_head tied to the token embedding (lm_head.weight = wte.weight), logits",
        _seeded(4, lambda: TinyLM(128, 32, 32, 4)),
        lambda g: (torch.randint(0, 128, (1, 16), generator=g, dtype=torch.int64),),
    ),
    Spec(
        "int8_mlp",
        "Weight-only int8 MLP: int8 weight buffers with per-output-channel f32 scales, dequantized in forward "
        "(w_q.to(float32) * scale), F.linear + bias + ReLU, two layers 64->128->64",
        _seeded(5, lambda: Int8MLP(64, 128)),
        lambda g: (torch.randn(2, 8, 64, generator=g),),
        safetensors=True,
    ),
    Spec(
        "f16_mlp",
        "f16 MLP (model.half()): f32 input cast to f16 in forward, Linear 64->128, erf GELU, Linear 128->64 "
        "in f16, output cast back to f32",
        _seeded(6, _f16_mlp),
        lambda g: (torch.randn(2, 8, 64, generator=g),),
    ),
    Spec(
        "attention_dyn",
        "GPT-2 block (as gpt2_block) on [1, seq, 32] with a dynamic sequence length Dim('seq')",
        _seeded(7, lambda: GPT2Block(32, 4)),
        lambda g: (torch.randn(1, 8, 32, generator=g),),
        dynamic=True,
        dyn_inputs=lambda g, s: (torch.randn(1, s, 32, generator=g),),
    ),
    Spec(
        "mlp_dyn",
        "nn.Sequential(Linear 32->128, GELU, Linear 128->32) on [1, seq, 32] with a dynamic sequence length",
        _seeded(8, lambda: nn.Sequential(nn.Linear(32, 128), nn.GELU(), nn.Linear(128, 32))),
        lambda g: (torch.randn(1, 8, 32, generator=g),),
        dynamic=True,
        dyn_inputs=lambda g, s: (torch.randn(1, s, 32, generator=g),),
    ),
]


@dataclass
class SymSpec:
    """A model exported with several dynamic dims and ``import_symbolic_shape_expressions=True``: the torch
    dialect keeps ``torch.symbolic_int`` / ``torch.bind_symbolic_shape``, which IREE's input phase turns
    into ``util.assume.int`` (ranges, divisibility) and ``flow.tensor.tie_shape``."""

    name: str
    what: str
    build: Callable[[], nn.Module]
    example: Callable[[torch.Generator], tuple[torch.Tensor, ...]]
    dynamic_shapes: Callable[[], dict]
    sizes: tuple[tuple[int, ...], ...]
    """The dynamic sizes of each recorded call (inputs_<b>x<s>.npz ...)."""
    inputs: Callable[[torch.Generator, tuple[int, ...]], tuple[torch.Tensor, ...]]
    dims: str
    """How the inputs read in the README (``?x?x32xfloat32``)."""


def _mlp_sym_shapes() -> dict:
    batch = torch.export.Dim("batch", min=1, max=8)
    seq8 = torch.export.Dim("seq8", min=1, max=64)
    return {"x": {0: batch, 1: 8 * seq8}}


SYM_SPECS = [
    SymSpec(
        "mlp_sym",
        "Llama SiLU-gated MLP d=32->96->32 (Linears without bias) + residual on [batch, seq, 32], batch = "
        "Dim('batch', 1..8) and seq = 8 * Dim('seq8', 1..64), exported with symbolic shape expressions",
        _seeded(9, lambda: LlamaMLPResidual(32, 96)),
        lambda g: (torch.randn(2, 16, 32, generator=g),),
        _mlp_sym_shapes,
        ((1, 8), (3, 16), (2, 24)),
        lambda g, bs: (torch.randn(bs[0], bs[1], 32, generator=g),),
        "?x?x32xfloat32",
    ),
]


class LlamaMLPResidual(nn.Module):
    def __init__(self, d: int, d_ff: int):
        super().__init__()
        self.mlp = LlamaMLP(d, d_ff)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x + self.mlp(x)


# ------------------------------------------------------------------------------------ helpers


def save_npz(path: Path, arrays: dict[str, np.ndarray]) -> None:
    """np.savez, but with a fixed zip timestamp so that the file is byte-identical across runs."""
    with zipfile.ZipFile(path, "w", compression=zipfile.ZIP_STORED) as zf:
        for name, arr in arrays.items():
            buf = io.BytesIO()
            np.lib.format.write_array(buf, np.ascontiguousarray(arr), allow_pickle=False)
            info = zipfile.ZipInfo(f"{name}.npy", date_time=(1980, 1, 1, 0, 0, 0))
            info.external_attr = 0o644 << 16
            zf.writestr(info, buf.getvalue())


def iree_compile_tool() -> str:
    local = Path(sys.executable).parent / "iree-compile"
    tool = str(local) if local.exists() else shutil.which("iree-compile")
    if tool is None:
        raise SystemExit("iree-compile not found (pip install iree-base-compiler==3.13.*)")
    return tool


def iree_compile(src: str, out: str, flags: list[str], cwd: Path) -> None:
    cmd = [iree_compile_tool(), src, *flags, "-o", out]
    p = subprocess.run(cmd, cwd=cwd, capture_output=True, text=True)
    if p.returncode != 0:
        raise RuntimeError(f"iree-compile failed in {cwd}: {' '.join(cmd[1:])}\n{p.stderr[-4000:]}")


def run_iree(vmfb: Path, inputs: list[np.ndarray], irpa: Path | None = None) -> list[np.ndarray]:
    """Run @main of a compiled module with iree.runtime (local-sync CPU), optionally with a parameter file."""
    config = ireert.Config("local-sync")
    modules = []
    if irpa is not None:
        index = ireert.ParameterIndex()
        index.load(str(irpa))
        modules.append(ireert.create_io_parameters_module(config.vm_instance, index.create_provider(scope=SCOPE)))
    main = ireert.VmModule.copy_buffer(config.vm_instance, vmfb.read_bytes())
    ctx = ireert.SystemContext(vm_modules=[*modules, main], config=config)
    res = ctx.modules[main.name]["main"](*inputs)
    res = res if isinstance(res, list | tuple) else [res]
    return [np.asarray(r.to_host()) for r in res]


def torch_outputs(model: nn.Module, args: tuple[torch.Tensor, ...]) -> list[np.ndarray]:
    with torch.no_grad():
        res = model(*args)
    res = res if isinstance(res, list | tuple) else [res]
    return [r.detach().numpy() for r in res]


def max_rel(a: list[np.ndarray], b: list[np.ndarray]) -> float:
    """max |a - b| / max |b| over the outputs (relative to each output's magnitude)."""
    worst = 0.0
    for x, y in zip(a, b, strict=True):
        x64, y64 = x.astype(np.float64), y.astype(np.float64)
        worst = max(worst, float(np.abs(x64 - y64).max() / max(np.abs(y64).max(), 1e-30)))
    return worst


def unique_param_count(model: nn.Module) -> int:
    seen: dict[int, int] = {}
    for t in model.state_dict(keep_vars=True).values():
        seen[t.data_ptr()] = t.numel()
    return sum(seen.values())


def export_mlir(model: nn.Module, args: tuple[torch.Tensor, ...], path: Path, dynamic_shapes=None) -> None:
    exported = aot.export(model, args=args, dynamic_shapes=dynamic_shapes)
    exported.save_mlir(str(path))


_OP = re.compile(r'^\s*(?:%[^=]*=\s*)?"?([a-z_][a-z0-9_]*\.[a-z_][a-z0-9_.]*)"?[\s({<:@\[]')


def op_names(path: Path) -> list[str]:
    """Distinct operation names in an MLIR file (before its dialect_resources section)."""
    text = path.read_text().split("{-#", 1)[0]
    return sorted({m.group(1) for line in text.splitlines() if (m := _OP.match(line))})


def export_external(
    step: nn.Module, args: tuple[torch.Tensor, ...], expected: list[np.ndarray], folder: Path, name: str, tol: float
) -> tuple[list[np.ndarray], float]:
    """Write a model with external parameters into ``folder``: ``torch.mlir`` (iree-turbine's export after
    ``externalize_module_parameters``), ``params.irpa``, ``inputs.npz``, ``expected_torch.npz`` (``expected``),
    ``input.mlir`` and ``expected_iree.npz`` (compiled for the host, run with the parameters); exits when
    IREE's outputs differ from torch's by more than ``tol`` (max relative). Returns the inputs and that
    difference (the decode and transformers fixtures' scripts share it)."""
    aot.externalize_module_parameters(step, external_scope=SCOPE)
    aot.export(step, args=args).save_mlir(str(folder / "torch.mlir"))
    aot.save_module_parameters(folder / "params.irpa", step)
    np_inputs = [a.numpy() for a in args]
    save_npz(folder / "inputs.npz", {f"arg{i}": a for i, a in enumerate(np_inputs)})
    save_npz(folder / "expected_torch.npz", {f"out{i}": o for i, o in enumerate(expected)})
    iree_compile("torch.mlir", "input.mlir", ["--compile-to=input"], folder)
    with tempfile.TemporaryDirectory() as tmp:
        vmfb = Path(tmp) / "m.vmfb"
        iree_compile("torch.mlir", str(vmfb), HOST, folder)
        got = run_iree(vmfb, np_inputs, folder / "params.irpa")
    save_npz(folder / "expected_iree.npz", {f"out{i}": o for i, o in enumerate(got)})
    rel = max_rel(got, expected)
    if rel > tol:
        raise SystemExit(f"{name}: IREE vs torch {rel:.2e}")
    return np_inputs, rel


def _describe(t: np.ndarray) -> str:
    return f"{'x'.join(map(str, t.shape))}x{t.dtype}"


# ------------------------------------------------------------------------------------ export


def export_static(spec: Spec, folder: Path, tmp: Path) -> dict:
    model = spec.build()
    args = spec.inputs(torch.Generator().manual_seed(100))
    export_mlir(model, args, folder / "torch.mlir")
    expected = torch_outputs(model, args)
    inputs = [a.numpy() for a in args]
    save_npz(folder / "inputs.npz", {f"arg{i}": a for i, a in enumerate(inputs)})
    save_npz(folder / "expected_torch.npz", {f"out{i}": o for i, o in enumerate(expected)})

    iree_compile("torch.mlir", "input.mlir", ["--compile-to=input"], folder)
    iree_compile("input.mlir", "global_opt.avx2.mlir", [*AVX2, "--compile-to=global-optimization"], folder)
    iree_compile("torch.mlir", str(tmp / f"{spec.name}.vmfb"), HOST, folder)
    got = run_iree(tmp / f"{spec.name}.vmfb", inputs)
    save_npz(folder / "expected_iree.npz", {f"out{i}": o for i, o in enumerate(got)})

    # External parameters: a fresh model (same seed), externalized before export.
    ext_model = spec.build()
    aot.externalize_module_parameters(ext_model, external_scope=SCOPE)
    export_mlir(ext_model, args, folder / "ext.torch.mlir")
    aot.save_module_parameters(folder / "params.irpa", ext_model)
    keys = [e.key for _, e in irpa_items(folder / "params.irpa")]
    if spec.safetensors:
        from safetensors.numpy import save_file

        tensors = {k: t.detach().numpy() for k, t in _yield_saveable_tensors(ext_model)}
        save_file(tensors, str(folder / "params.safetensors"))
    iree_compile("ext.torch.mlir", "ext.input.mlir", ["--compile-to=input"], folder)
    iree_compile("ext.input.mlir", "ext.global_opt.avx2.mlir", [*AVX2, "--compile-to=global-optimization"], folder)
    iree_compile("ext.torch.mlir", str(tmp / f"{spec.name}.ext.vmfb"), HOST, folder)
    got_ext = run_iree(tmp / f"{spec.name}.ext.vmfb", inputs, folder / "params.irpa")
    ext_vs_inline = max_rel(got_ext, got)
    torch_vs_iree = max_rel(got, expected)
    limit = 1e-2 if spec.name == "f16_mlp" else 1e-4
    if torch_vs_iree > limit or ext_vs_inline > 1e-6:
        raise RuntimeError(f"{spec.name}: IREE vs torch {torch_vs_iree:.2e}, ext vs inline {ext_vs_inline:.2e}")
    return {
        "name": spec.name,
        "kind": "static",
        "what": spec.what,
        "inputs": [_describe(a) for a in inputs],
        "outputs": [_describe(o) for o in expected],
        "param_count": unique_param_count(model),
        "param_keys": keys,
        "max_rel_iree_vs_torch": float(f"{torch_vs_iree:.3g}"),
        "max_rel_ext_vs_inline": float(f"{ext_vs_inline:.3g}"),
        "ext_bitwise_equal_inline": all(np.array_equal(a, b) for a, b in zip(got_ext, got, strict=True)),
    }


def irpa_items(path: Path):
    """The (name, entry) items of the parameter file ``path``."""
    index = ireert.ParameterIndex()
    index.load(str(path))
    return index.items()


def folder_sizes(folder: Path) -> str:
    """The files of a fixture folder but its README, each with its size, for the README."""
    files = sorted(p for p in folder.iterdir() if p.name != "README.md")
    return ", ".join(f"`{p.name}` {p.stat().st_size / 1024:.1f} KiB" for p in files)


def export_dynamic(spec: Spec, folder: Path, tmp: Path) -> dict:
    assert spec.dyn_inputs is not None
    model = spec.build()
    args = spec.inputs(torch.Generator().manual_seed(100))
    arg_name = "x" if not isinstance(model, nn.Sequential) else "input"
    seq = torch.export.Dim("seq", min=1, max=1024)
    export_mlir(model, args, folder / "torch.mlir", dynamic_shapes={arg_name: {1: seq}})
    iree_compile("torch.mlir", "input.mlir", ["--compile-to=input"], folder)
    iree_compile("input.mlir", "dispatch_creation.avx2.mlir", [*AVX2, "--compile-to=dispatch-creation"], folder)
    iree_compile("torch.mlir", str(tmp / f"{spec.name}.vmfb"), HOST, folder)
    diffs = {}
    for s in DYN_SIZES:
        dargs = spec.dyn_inputs(torch.Generator().manual_seed(200 + s), s)
        inputs = [a.numpy() for a in dargs]
        expected = torch_outputs(model, dargs)
        got = run_iree(tmp / f"{spec.name}.vmfb", inputs)
        save_npz(folder / f"inputs_s{s}.npz", {f"arg{i}": a for i, a in enumerate(inputs)})
        save_npz(folder / f"expected_torch_s{s}.npz", {f"out{i}": o for i, o in enumerate(expected)})
        save_npz(folder / f"expected_iree_s{s}.npz", {f"out{i}": o for i, o in enumerate(got)})
        diffs[s] = max_rel(got, expected)
        if diffs[s] > 1e-4:
            raise RuntimeError(f"{spec.name} s={s}: IREE vs torch {diffs[s]:.2e}")
    return {
        "name": spec.name,
        "kind": "dynamic",
        "what": spec.what,
        "inputs": ["1x?x32xfloat32"],
        "outputs": ["1x?x32xfloat32"],
        "seq_sizes": list(DYN_SIZES),
        "param_count": unique_param_count(model),
        "max_rel_iree_vs_torch": {f"s{s}": float(f"{d:.3g}") for s, d in diffs.items()},
    }


def export_symbolic(spec: SymSpec, folder: Path, tmp: Path) -> dict:
    model = spec.build()
    args = spec.example(torch.Generator().manual_seed(100))
    exported = aot.export(
        model, args=args, dynamic_shapes=spec.dynamic_shapes(), import_symbolic_shape_expressions=True
    )
    exported.save_mlir(str(folder / "torch.mlir"))
    iree_compile("torch.mlir", "input.mlir", ["--compile-to=input"], folder)
    iree_compile("input.mlir", "dispatch_creation.avx2.mlir", [*AVX2, "--compile-to=dispatch-creation"], folder)
    iree_compile("torch.mlir", str(tmp / f"{spec.name}.vmfb"), HOST, folder)
    diffs = {}
    for k, sizes in enumerate(spec.sizes):
        tag = "x".join(map(str, sizes))
        dargs = spec.inputs(torch.Generator().manual_seed(300 + k), sizes)
        inputs = [a.numpy() for a in dargs]
        expected = torch_outputs(model, dargs)
        got = run_iree(tmp / f"{spec.name}.vmfb", inputs)
        save_npz(folder / f"inputs_{tag}.npz", {f"arg{i}": a for i, a in enumerate(inputs)})
        save_npz(folder / f"expected_torch_{tag}.npz", {f"out{i}": o for i, o in enumerate(expected)})
        save_npz(folder / f"expected_iree_{tag}.npz", {f"out{i}": o for i, o in enumerate(got)})
        diffs[tag] = max_rel(got, expected)
        if diffs[tag] > 1e-4:
            raise RuntimeError(f"{spec.name} {tag}: IREE vs torch {diffs[tag]:.2e}")
    return {
        "name": spec.name,
        "kind": "symbolic",
        "what": spec.what,
        "inputs": [spec.dims],
        "outputs": [spec.dims],
        "sizes": [list(t) for t in spec.sizes],
        "param_count": unique_param_count(model),
        "max_rel_iree_vs_torch": {k: float(f"{d:.3g}") for k, d in diffs.items()},
    }


# ------------------------------------------------------------------------------------ README


COMMANDS_STATIC = """\
# in tests/fixtures/models/<name>/ (iree-compile 3.13 from iree-base-compiler)
# torch.mlir / ext.torch.mlir / params.irpa / params.safetensors / *.npz: written by scripts/export_fixtures.py
iree-compile torch.mlir --compile-to=input -o input.mlir
iree-compile ext.torch.mlir --compile-to=input -o ext.input.mlir
iree-compile input.mlir --iree-hal-target-backends=llvm-cpu --iree-llvmcpu-target-cpu=haswell \\
    --iree-dispatch-creation-data-tiling --compile-to=global-optimization -o global_opt.avx2.mlir
iree-compile ext.input.mlir --iree-hal-target-backends=llvm-cpu --iree-llvmcpu-target-cpu=haswell \\
    --iree-dispatch-creation-data-tiling --compile-to=global-optimization -o ext.global_opt.avx2.mlir
# expected_iree.npz: iree.runtime on
iree-compile torch.mlir --iree-hal-target-backends=llvm-cpu --iree-llvmcpu-target-cpu=host -o m.vmfb
# and the external-parameter variant, run with params.irpa (must agree with m.vmfb), e.g.
iree-compile ext.torch.mlir --iree-hal-target-backends=llvm-cpu --iree-llvmcpu-target-cpu=host -o ext.vmfb
iree-run-module --module=ext.vmfb --parameters=model=params.irpa --function=main --input=@arg0.npy
"""

COMMANDS_DYNAMIC = """\
iree-compile torch.mlir --compile-to=input -o input.mlir
iree-compile input.mlir --iree-hal-target-backends=llvm-cpu --iree-llvmcpu-target-cpu=haswell \\
    --iree-dispatch-creation-data-tiling --compile-to=dispatch-creation -o dispatch_creation.avx2.mlir
iree-compile torch.mlir --iree-hal-target-backends=llvm-cpu --iree-llvmcpu-target-cpu=host -o m.vmfb
"""


def _size(n: int) -> str:
    return f"{n / 1024:.1f} KiB" if n >= 1024 else f"{n} B"


def write_readme(metas: list[dict], notes: dict[str, list[str]]) -> None:
    versions = {p: metadata.version(p) for p in ("torch", "iree-turbine", "iree-base-compiler", "iree-base-runtime")}
    lines = [
        "# PyTorch model fixtures",
        "",
        "Small real PyTorch models exported with iree-turbine, as IREE sees them. **Generated** by",
        "`scripts/export_fixtures.py` (see its docstring for the setup); do not edit by hand. Read by",
        "`tests/test_model_fixtures.py` (no torch needed). Versions: "
        + ", ".join(f"{k} {v}" for k, v in versions.items())
        + ".",
        "",
        "Every model is built in code under `torch.manual_seed`; LayerNorm/RMSNorm weights and biases are",
        "perturbed away from 1/0. Inputs `arg0, arg1, ...` are in argument order, outputs `out0, ...` in return",
        "order. `max rel` is max |IREE − torch| / max |torch| (IREE: llvm-cpu, target-cpu=host, local-sync).",
        "",
        "One more folder is written by its own script: `llama_decode/`, a decode step of transformers'",
        "`LlamaForCausalLM` against a KV cache (`scripts/export_decode_fixture.py`; its `README.md` says what).",
        "The `hf_<name>/` folders (`hf_llama`, `hf_qwen2`, `hf_gpt2`, `hf_bert`, `hf_phi3`, `hf_gemma2`) are written",
        "by `scripts/export_transformers_fixtures.py`: a 16-token prefill of transformers' own model class of each",
        "family (2 layers, hidden 64, vocab 512, random weights), logits as the output, parameters in `params.irpa`;",
        "each folder's `README.md` says what it keeps of the family. `hf_llama_dyn/` is the same Llama exported",
        "with a dynamic sequence length, recorded at 8, 13 and 16 tokens.",
        "",
        "| model | what it models | inputs → outputs | params | forms | max rel IREE vs torch | folder size |",
        "|---|---|---|---|---|---|---|",
    ]
    for m in metas:
        folder = OUT / m["name"]
        files = sorted(p.name for p in folder.iterdir())
        total = sum((folder / f).stat().st_size for f in files)
        if m["kind"] == "static":
            forms = "torch, input, ext.torch + ext.input + irpa" + (
                " + safetensors" if "params.safetensors" in files else ""
            )
            forms += ", global_opt.avx2, ext.global_opt.avx2"
            rel = f"{m['max_rel_iree_vs_torch']:.1e}"
        elif m["kind"] == "symbolic":
            forms = "torch (symbolic shapes), input, dispatch_creation.avx2; sizes = " + ", ".join(
                "x".join(map(str, t)) for t in m["sizes"]
            )
            rel = ", ".join(f"{k}: {v:.1e}" for k, v in m["max_rel_iree_vs_torch"].items())
        else:
            forms = "torch, input, dispatch_creation.avx2; s = " + ", ".join(map(str, m["seq_sizes"]))
            rel = ", ".join(f"{k}: {v:.1e}" for k, v in m["max_rel_iree_vs_torch"].items())
        io_desc = ", ".join(m["inputs"]) + " → " + ", ".join(m["outputs"])
        lines.append(
            f"| `{m['name']}` | {m['what']} | {io_desc} | {m['param_count']} | {forms} | {rel} | {_size(total)} |"
        )
    lines += ["", "## Files and sizes", ""]
    for m in metas:
        folder = OUT / m["name"]
        sizes = ", ".join(f"`{p.name}` {_size(p.stat().st_size)}" for p in sorted(folder.iterdir()))
        lines.append(f"- `{m['name']}`: {sizes}")
    lines += [
        "",
        "## Commands",
        "",
        "Static models:",
        "",
        "```sh",
        COMMANDS_STATIC.rstrip(),
        "```",
        "",
        "Dynamic models (`aot.export(..., dynamic_shapes={'x': {1: Dim('seq', min=1, max=1024)}})`):",
        "",
        "```sh",
        COMMANDS_DYNAMIC.rstrip(),
        "```",
        "",
        "Models with symbolic shapes (`aot.export(..., dynamic_shapes={'x': {0: Dim('batch', min=1, max=8), "
        "1: 8 * Dim('seq8', min=1, max=64)}}, import_symbolic_shape_expressions=True)`): the same commands; "
        "`inputs_<b>x<s>.npz` / `expected_*_<b>x<s>.npz` per recorded size.",
        "",
        "## Notes",
        "",
    ]
    for name, ns in notes.items():
        lines += [f"- {n}" if name == "all" else f"- `{name}`: {n}" for n in ns]
    lines += ["", "## Distinct op names per form", ""]
    for m in metas:
        folder = OUT / m["name"]
        lines.append(f"### {m['name']}")
        lines.append("")
        forms = ["torch.mlir", "input.mlir"]
        forms += (
            ["ext.input.mlir", "global_opt.avx2.mlir", "ext.global_opt.avx2.mlir"]
            if m["kind"] == "static"
            else ["dispatch_creation.avx2.mlir"]
        )
        for f in forms:
            lines.append(f"- `{f}`: " + ", ".join(f"`{o}`" for o in op_names(folder / f)))
        lines.append("")
    (OUT / "README.md").write_text("\n".join(lines).rstrip() + "\n")


NOTES = {
    "all": [
        "`torch.aten.linear` on a 3-D activation lowers (input.mlir) to `linalg.transpose` of the weight, a "
        "broadcasting `linalg.generic` to [b, k, n] and `linalg.batch_matmul`. In global_opt.avx2.mlir, models "
        "with batch 2 (gpt2_block, bert_block, int8_mlp, f16_mlp) get a `linalg.matmul` with transposed-B "
        "`indexing_maps` on [b*s, k] x [n, k]; batch-1 models (llama_block, tiny_lm) keep `linalg.batch_matmul` "
        "on a hoisted [1, k, n] transposed weight (`__hoisted_tensor_1xKxNxf32`).",
        "Weight-only subgraphs are hoisted by global optimization: with inline weights they are const-evaluated "
        'into `__hoisted_tensor_*` globals (`dense<"0x...">`, so int8_mlp/global_opt.avx2.mlir has no i8 left), '
        "with external parameters they become `util.initializer`s over `flow.tensor.constant "
        "#flow.parameter.named<...>` (ext.global_opt.avx2.mlir).",
        "Large weights are `util.global private @__auto.constant_*` + `util.global.load` already in torch.mlir; "
        "small ones (biases, norm weights) are `torch.vtensor.literal(dense_resource<...>)` / `arith.constant`.",
        "Causal SDPA becomes `iree_linalg_ext.attention` with an explicit mask operand built by a "
        "`linalg.generic` (`linalg.index`, `arith.cmpi`, `arith.select` of 0 / -inf); BERT's hand-written "
        "softmax attention stays two `linalg.batch_matmul` and the softmax is raised to `linalg.softmax` in "
        "global_opt.avx2.mlir.",
        "f16 Linears lower to f16 x f16 -> f32 `linalg.batch_matmul`/`linalg.matmul` followed by `arith.truncf`.",
        "`nn.Embedding` lowers to a gather `linalg.generic` with `tensor.extract` and two `cf.assert` bounds "
        "checks; the i64 token ids are used as i64 (no demotion).",
    ],
    "tiny_lm": [
        "`aot.save_module_parameters` walks parameters by name, so the tied weight is stored twice in "
        "params.irpa (`wte.weight` and `lm_head.weight`, same values); ext.torch.mlir references only one "
        "global (the name set last by `externalize_module_parameters`)."
    ],
    "llama_block": [
        "`rotary.inv_freq` is a non-persistent buffer (as in HF Llama): not externalized, it stays inline "
        "in ext.torch.mlir and is not in params.irpa. The cos/sin tables depend only on it and the static "
        "positions, so global optimization const-evaluates them in both forms (no math.cos/math.sin left)."
    ],
    "int8_mlp": ["int8 weights and f32 scales are persistent buffers, so they are externalized like parameters."],
    "f16_mlp": [
        "Weights are f16 (in params.irpa too). Torch and IREE round the f16 intermediates at "
        "different points (IREE: f16 x f16 -> f32 matmul, then `arith.truncf`), so outputs differ at f16 "
        "rounding level (7.4e-4 relative, 1.5x f16 unit roundoff)."
    ],
}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--only", nargs="*", help="models to (re)write (default: all; README lists the written ones)")
    opts = ap.parse_args()
    torch.set_num_threads(1)
    OUT.mkdir(parents=True, exist_ok=True)
    metas = []
    with tempfile.TemporaryDirectory() as tmp:
        for spec in [*SPECS, *SYM_SPECS]:
            folder = OUT / spec.name
            if opts.only and spec.name not in opts.only:
                if (folder / "meta.json").exists():
                    metas.append(json.loads((folder / "meta.json").read_text()))
                continue
            t0 = time.time()
            if folder.exists():
                shutil.rmtree(folder)
            folder.mkdir(parents=True)
            if isinstance(spec, SymSpec):
                meta = export_symbolic(spec, folder, Path(tmp))
            elif spec.dynamic:
                meta = export_dynamic(spec, folder, Path(tmp))
            else:
                meta = export_static(spec, folder, Path(tmp))
            (folder / "meta.json").write_text(json.dumps(meta, indent=2) + "\n")
            metas.append(meta)
            print(f"{spec.name}: {time.time() - t0:.1f}s {json.dumps({k: v for k, v in meta.items() if 'max' in k})}")
    write_readme(metas, NOTES)


if __name__ == "__main__":
    main()
