"""Write the model fixtures built from transformers' own model classes: ``tests/fixtures/models/hf_<name>/``.

One folder per family: a prefill forward (batch 1, ``SEQ`` = 16 tokens, logits as the output) of
transformers' own ``...ForCausalLM`` / ``GPT2LMHeadModel`` / ``BertForMaskedLM``, built from a small config
(2 layers, hidden 64, vocab 512) with random weights under ``torch.manual_seed``. Every structural feature
of the family is kept (GQA, SwiGLU/GeGLU, RMSNorm, RoPE, q/k/v biases, GPT-2's fused ``c_attn`` Conv1D split
into q/k/v, learned positions, tied embeddings, Phi-3's fused ``qkv_proj`` / ``gate_up_proj``, Gemma 2's
soft-capping and alternating sliding-window layers, BERT's padding mask). Norm weights and biases and every
bias are perturbed away from their 1/0 init. Parameters are external
(``#flow.parameter.named<"model"::...>``, values in ``params.irpa``), as a serving engine loads them.

The causal models get their mask as the additive 4-d float mask transformers takes as it is (``[1,1,S,S]``,
0 on and below the diagonal, -inf above; for sliding-window layers also -inf at distance >= the window):
transformers' own mask building looks for packed sequences with ``torch.diff`` and makes i1 literals, which
IREE 3.13's torch input does not lower. BERT gets its 0/1 padding mask ``1xS`` as an input and builds the
additive mask itself.

``hf_llama_dyn`` is the Llama prefill exported with a dynamic sequence length (``Dim("seq")`` of the
export, 2..128; the wrapper's mask is ``[1,1,S,S]`` of that length too): the same files but, in place of
``inputs.npz`` / ``expected_*.npz``, ``inputs_s<N>.npz``, ``expected_torch_s<N>.npz`` and
``expected_iree_s<N>.npz`` for N in ``DYN_SIZES`` (IREE compiled once, run at each length).

Files per folder: ``torch.mlir`` (iree-turbine's export), ``input.mlir`` (``iree-compile --compile-to=input``),
``params.irpa``, ``inputs.npz`` (arg0, ...), ``expected_torch.npz`` and ``expected_iree.npz`` (out0; IREE:
llvm-cpu, target-cpu=host, local-sync, with params.irpa; max |IREE - torch| / max |torch| <= 1e-4 is checked),
``meta.json``, ``README.md``.

Setup: the ``models`` extra plus transformers, in a Python 3.11 venv (see scripts/export_fixtures.py):

    V/bin/pip install torch==2.13.0 iree-turbine==3.9.0 safetensors transformers
    V/bin/python scripts/export_transformers_fixtures.py            # all families
    V/bin/python scripts/export_transformers_fixtures.py gpt2 bert  # some
    V/bin/python scripts/export_transformers_fixtures.py llama_dyn  # the dynamic Llama

Deterministic: fixed seeds, fixed-timestamp .npz, the compiler run inside the folder on relative paths;
a rerun on the same host gives byte-identical files (``expected_iree*.npz`` is target-cpu=host code's: on
another CPU its last bits may differ, as ``hf_llama``'s do on the AMD EPYC host ``hf_llama_dyn`` was
written on, within the 1e-4 bound).
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import textwrap
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path

import torch
import torch.nn as nn
import transformers
from export_fixtures import (
    HOST,
    OUT,
    SCOPE,
    export_external,
    folder_sizes,
    iree_compile,
    irpa_items,
    max_rel,
    run_iree,
    save_npz,
    torch_outputs,
)
from iree.turbine import aot

SEQ = 16
DYN_SIZES = (8, 13, 16)
"""The sequence lengths a dynamic fixture records (the export's example is ``SEQ``)."""
DYNAMIC = {"llama_dyn": "llama"}
"""Dynamic fixtures (``hf_<key>``): the family exported with a dynamic sequence length."""
VOCAB = 512
TOL = 1e-4


@dataclass(frozen=True)
class Family:
    name: str  # folder: hf_<name>
    model_class: str  # transformers class names
    config_class: str
    config: dict
    seed: int
    features: str  # what of the family the fixture keeps
    kind: str = "causal"  # causal | masked
    window_layers: bool = False  # the model takes a {"full_attention", "sliding_attention"} mask dict


FAMILIES = [
    Family(
        "llama",
        "LlamaForCausalLM",
        "LlamaConfig",
        dict(
            vocab_size=VOCAB,
            hidden_size=64,
            intermediate_size=192,
            num_hidden_layers=2,
            num_attention_heads=4,
            num_key_value_heads=2,
            head_dim=16,
            max_position_embeddings=128,
            tie_word_embeddings=False,
            attn_implementation="sdpa",
        ),
        21,
        "GQA (4 query heads, 2 KV heads of 16), RoPE, RMSNorm, SwiGLU MLP 64->192->64, Linears without bias, "
        "separate lm_head",
    ),
    Family(
        "qwen2",
        "Qwen2ForCausalLM",
        "Qwen2Config",
        dict(
            vocab_size=VOCAB,
            hidden_size=64,
            intermediate_size=192,
            num_hidden_layers=2,
            num_attention_heads=4,
            num_key_value_heads=2,
            max_position_embeddings=128,
            tie_word_embeddings=True,
            attn_implementation="sdpa",
        ),
        22,
        "q/k/v projections with biases (o_proj without), GQA (4 query heads, 2 KV heads of 16), RoPE, RMSNorm, "
        "SwiGLU MLP 64->192->64, lm_head tied to the embedding (as Qwen2.5 0.5B)",
    ),
    Family(
        "gpt2",
        "GPT2LMHeadModel",
        "GPT2Config",
        dict(
            vocab_size=VOCAB,
            n_embd=64,
            n_layer=2,
            n_head=4,
            n_positions=64,
            bos_token_id=0,
            eos_token_id=0,
            attn_implementation="sdpa",
        ),
        23,
        "fused c_attn Conv1D (x @ W[64, 192] + b) split into q/k/v (the pattern of IREE issue #21100), "
        "4 heads, learned positions (wpe), pre-LayerNorm, MLP Conv1D 64->256->64 with tanh GELU, "
        "lm_head tied to wte",
    ),
    Family(
        "bert",
        "BertForMaskedLM",
        "BertConfig",
        dict(
            vocab_size=VOCAB,
            hidden_size=64,
            num_hidden_layers=2,
            num_attention_heads=4,
            intermediate_size=256,
            max_position_embeddings=64,
            type_vocab_size=2,
            attn_implementation="sdpa",
        ),
        24,
        "bidirectional encoder with a 0/1 padding mask input (last 3 tokens padding), word + learned position "
        "+ token-type embeddings, post-LayerNorm, separate Q/K/V Linears with biases, 4 heads, erf GELU MLP "
        "64->256->64, MLM head (dense + GELU + LayerNorm, decoder tied to the word embedding, own bias)",
        kind="masked",
    ),
    Family(
        "phi3",
        "Phi3ForCausalLM",
        "Phi3Config",
        dict(
            vocab_size=VOCAB,
            hidden_size=64,
            intermediate_size=128,
            num_hidden_layers=2,
            num_attention_heads=4,
            num_key_value_heads=2,
            max_position_embeddings=128,
            partial_rotary_factor=0.75,
            tie_word_embeddings=True,
            pad_token_id=0,
            bos_token_id=1,
            eos_token_id=2,
            attn_implementation="sdpa",
        ),
        25,
        "fused qkv_proj Linear(64, 128) sliced into q/k/v, fused gate_up_proj Linear(64, 256) chunked into "
        "gate/up (SwiGLU), GQA (4 query heads, 2 KV heads of 16), partial RoPE (0.75 of the head), RMSNorm, "
        "tied embeddings (as Phi-4-mini)",
    ),
    Family(
        "gemma2",
        "Gemma2ForCausalLM",
        "Gemma2Config",
        dict(
            vocab_size=VOCAB,
            hidden_size=64,
            intermediate_size=128,
            num_hidden_layers=2,
            num_attention_heads=4,
            num_key_value_heads=2,
            head_dim=16,
            query_pre_attn_scalar=16,
            sliding_window=8,
            max_position_embeddings=128,
            pad_token_id=0,
            bos_token_id=2,
            eos_token_id=1,
            attn_implementation="eager",
        ),
        26,
        "layer 0 sliding-window attention (window 8), layer 1 full, attention-logit soft-capping "
        "(tanh, 50) in eager attention, final-logit soft-capping (tanh, 30), embedding scaled by sqrt(64), "
        "RMSNorm (1 + w) before and after attention and MLP, GeGLU MLP 64->128->64 (tanh GELU), "
        "GQA (4 query heads, 2 KV heads of 16), RoPE, tied embeddings",
        window_layers=True,
    ),
]
BY_NAME = {f.name: f for f in FAMILIES}


def _causal_mask(n: int, window: int | None = None) -> torch.Tensor:
    """Additive ``[1, 1, n, n]`` mask: 0 where key <= query (and query - key < window), -inf elsewhere."""
    mask = torch.full((n, n), float("-inf")).triu(1)
    if window is not None:
        mask = mask + torch.full((n, n), float("-inf")).tril(-window)
    return mask[None, None]


class CausalLogits(nn.Module):
    """A causal LM's prefill of a whole prompt, no cache: logits only; the mask passed as a 4-d float mask."""

    def __init__(self, model: nn.Module, window: int | None):
        super().__init__()
        self.model = model
        self.window = window

    def forward(self, ids):  # type: ignore[no-untyped-def]
        n = ids.shape[1]
        mask = _causal_mask(n)
        if self.window is not None:
            mask = {"full_attention": mask, "sliding_attention": _causal_mask(n, self.window)}
        return self.model(input_ids=ids, attention_mask=mask, use_cache=False).logits


class MaskedLogits(nn.Module):
    """An encoder's MLM logits for token ids and a 0/1 float padding mask ``[1, S]``."""

    def __init__(self, model: nn.Module):
        super().__init__()
        self.model = model

    def forward(self, ids, attention_mask):  # type: ignore[no-untyped-def]
        # As BERT's own get_extended_attention_mask: (1 - mask) * finfo.min, as [b, 1, 1, s].
        additive = (1.0 - attention_mask)[:, None, None, :] * torch.finfo(torch.float32).min
        return self.model(input_ids=ids, attention_mask=additive).logits


def build(fam: Family) -> nn.Module:
    torch.manual_seed(fam.seed)
    config = getattr(transformers, fam.config_class)(**fam.config)
    model = getattr(transformers, fam.model_class)(config).eval()
    gen = torch.Generator().manual_seed(fam.seed + 1000)
    with torch.no_grad():
        for mod in model.modules():
            is_norm = "norm" in type(mod).__name__.lower()
            for pname, p in mod.named_parameters(recurse=False):
                if is_norm or pname == "bias":  # norms away from 1/0 (Gemma's (1 + w) from 0), biases from 0
                    p.add_(0.1 * torch.randn(p.shape, generator=gen))
    if fam.kind == "masked":
        return MaskedLogits(model).eval()
    window = config.sliding_window if fam.window_layers else None
    return CausalLogits(model, window).eval()


def inputs(fam: Family) -> tuple[torch.Tensor, ...]:
    g = torch.Generator().manual_seed(100)
    ids = torch.randint(0, VOCAB, (1, SEQ), generator=g, dtype=torch.int64)
    if fam.kind == "masked":
        mask = torch.ones(1, SEQ, dtype=torch.float32)
        mask[:, SEQ - 3 :] = 0.0
        return ids, mask
    return (ids,)


README = """\
# `hf_{name}`: transformers' `{model_class}`, prefill of {seq} tokens

**Generated** by `scripts/export_transformers_fixtures.py` (its docstring has the setup); do not edit by hand.

{intro}

config: `{config_json}`

{mask_text}

Parameters are external (`#flow.parameter.named<"model"::...>`, values in `params.irpa`; a tied weight is
stored under each of its names).

- inputs: {inputs} (`inputs.npz`, arg0..)
- outputs: {outputs} (`expected_torch.npz`, `expected_iree.npz`: torch.mlir compiled for llvm-cpu,
  target-cpu=host, run with `params.irpa`)
- max |IREE - torch| / max |torch|: {max_rel_iree_vs_torch:.1e}
- versions: {versions}
- files: {sizes}

```sh
iree-compile torch.mlir --compile-to=input -o input.mlir
egg-dispatch explore torch.mlir --check --parameters model=params.irpa
```
"""

MASK_TEXT = {
    "causal": "The causal mask is built in the wrapper's `forward` as the additive 4-d float mask transformers "
    "takes as it is (`[1,1,S,S]`, 0 on and below the diagonal, -inf above): transformers' own mask building "
    "emits `torch.aten.diff` (packed-sequence detection) and i1 literals that IREE 3.13's torch input does "
    "not lower.",
    "window": "The masks are built in the wrapper's `forward` as transformers' mask dict of additive 4-d float "
    "masks (`full_attention`: 0 on and below the diagonal, -inf above; `sliding_attention`: also -inf where "
    "query - key >= {window}), which transformers takes as they are: its own mask building emits "
    "`torch.aten.diff` and i1 literals that IREE 3.13's torch input does not lower.",
    "masked": "The second input is the 0/1 float padding mask `1x{seq}` (the last 3 tokens are padding); the "
    "wrapper turns it into BERT's additive `[1,1,1,S]` mask `(1 - mask) * finfo(float32).min`, which "
    "transformers takes as it is.",
}


def _paragraph(text: str) -> str:
    """A README paragraph: wrapped at 110 columns, never inside a hyphenated word."""
    return textwrap.fill(text, width=110, break_on_hyphens=False)


def _shape(a) -> str:  # type: ignore[no-untyped-def]
    return f"{'x'.join(map(str, a.shape))}x{a.dtype}"


def export(fam: Family) -> dict:
    folder = OUT / f"hf_{fam.name}"
    folder.mkdir(parents=True, exist_ok=True)
    step = build(fam)
    args = inputs(fam)
    with torch.no_grad():
        out = step(*args)
    expected = [out.detach().numpy()]
    np_inputs, rel = export_external(step, args, expected, folder, f"hf_{fam.name}", TOL)
    meta = {
        "name": f"hf_{fam.name}",
        "kind": "prefill",
        "model_class": fam.model_class,
        "config_class": fam.config_class,
        "config": fam.config,
        "seed": fam.seed,
        "what": f"transformers {fam.model_class} prefill of {SEQ} tokens: {fam.features}",
        "inputs": [_shape(a) for a in np_inputs],
        "outputs": [_shape(o) for o in expected],
        "param_keys": [e.key for _, e in irpa_items(folder / "params.irpa")],
        "max_rel_iree_vs_torch": float(f"{rel:.3g}"),
        "versions": {p: metadata.version(p) for p in ("torch", "transformers", "iree-turbine", "iree-base-compiler")},
    }
    (folder / "meta.json").write_text(json.dumps(meta, indent=2) + "\n")
    (folder / "params.irpa").chmod(0o644)  # written 0640: a fixture every reader of the checkout reads
    mask_key = "masked" if fam.kind == "masked" else ("window" if fam.window_layers else "causal")
    text = README.format(
        **{k: v for k, v in meta.items() if k not in ("inputs", "outputs", "versions", "name")},
        name=fam.name,
        seq=SEQ,
        intro=_paragraph(
            f"transformers' own `{fam.model_class}` built from `{fam.config_class}(**config)` with random weights "
            f"under `torch.manual_seed({fam.seed})` (norm weights and biases, and every bias, perturbed away from "
            f"1/0): {fam.features}."
        ),
        config_json=json.dumps(fam.config, sort_keys=True),
        mask_text=_paragraph(
            f"The forward is a prefill: batch 1, {SEQ} tokens, no cache, the logits as the output. "
            + MASK_TEXT[mask_key].format(seq=SEQ, window=fam.config.get("sliding_window"))
        ),
        inputs=", ".join(f"`{x}`" for x in meta["inputs"]),
        outputs=", ".join(f"`{x}`" for x in meta["outputs"]),
        versions=", ".join(f"{k} {v}" for k, v in meta["versions"].items()),
        sizes=folder_sizes(folder),
    )
    (folder / "README.md").write_text(text)
    return meta


README_DYN = """\
# `{name}`: transformers' `{model_class}`, prefill of a dynamic number of tokens

**Generated** by `scripts/export_transformers_fixtures.py` (its docstring has the setup); do not edit by hand.

{intro}

config: `{config_json}`

{mask_text}

Parameters are external (`#flow.parameter.named<"model"::...>`, values in `params.irpa`).

- inputs: {inputs} (`inputs_s<N>.npz`, arg0, for N in {sizes_list})
- outputs: {outputs} (`expected_torch_s<N>.npz`, `expected_iree_s<N>.npz`: torch.mlir compiled once for
  llvm-cpu, target-cpu=host, run with `params.irpa` at each length)
- max |IREE - torch| / max |torch|: {rels}
- versions: {versions}
- files: {sizes}

```sh
iree-compile torch.mlir --compile-to=input -o input.mlir
egg-dispatch explore torch.mlir --check --parameters model=params.irpa
```
"""


def dyn_inputs(s: int) -> tuple[torch.Tensor, ...]:
    g = torch.Generator().manual_seed(200 + s)
    return (torch.randint(0, VOCAB, (1, s), generator=g, dtype=torch.int64),)


def export_dynamic(key: str) -> dict:
    """``hf_<key>``: the causal family ``DYNAMIC[key]`` exported with ``Dim("seq")`` as its sequence length,
    recorded at each of ``DYN_SIZES``."""
    fam = BY_NAME[DYNAMIC[key]]
    assert fam.kind == "causal" and not fam.window_layers
    name = f"hf_{key}"
    folder = OUT / name
    folder.mkdir(parents=True, exist_ok=True)
    step = build(fam)
    runs = {s: dyn_inputs(s) for s in DYN_SIZES}
    expected = {s: torch_outputs(step, args) for s, args in runs.items()}  # before externalizing
    seq = torch.export.Dim("seq", min=2, max=fam.config["max_position_embeddings"])
    aot.externalize_module_parameters(step, external_scope=SCOPE)
    aot.export(step, args=runs[SEQ], dynamic_shapes={"ids": {1: seq}}).save_mlir(str(folder / "torch.mlir"))
    aot.save_module_parameters(folder / "params.irpa", step)
    (folder / "params.irpa").chmod(0o644)
    iree_compile("torch.mlir", "input.mlir", ["--compile-to=input"], folder)
    rels = {}
    with tempfile.TemporaryDirectory() as tmp:
        vmfb = Path(tmp) / "m.vmfb"
        iree_compile("torch.mlir", str(vmfb), HOST, folder)
        for s, args in runs.items():
            inputs = [a.numpy() for a in args]
            got = run_iree(vmfb, inputs, folder / "params.irpa")
            save_npz(folder / f"inputs_s{s}.npz", {f"arg{i}": a for i, a in enumerate(inputs)})
            save_npz(folder / f"expected_torch_s{s}.npz", {f"out{i}": o for i, o in enumerate(expected[s])})
            save_npz(folder / f"expected_iree_s{s}.npz", {f"out{i}": o for i, o in enumerate(got)})
            rels[f"s{s}"] = max_rel(got, expected[s])
            if rels[f"s{s}"] > TOL:
                raise SystemExit(f"{name} s={s}: IREE vs torch {rels[f's{s}']:.2e}")
    meta = {
        "name": name,
        "kind": "dynamic",
        "model_class": fam.model_class,
        "config_class": fam.config_class,
        "config": fam.config,
        "seed": fam.seed,
        "what": f"transformers {fam.model_class} prefill of a dynamic number of tokens: {fam.features}",
        "inputs": ["1x?xint64"],
        "outputs": [f"1x?x{VOCAB}xfloat32"],
        "seq_sizes": list(DYN_SIZES),
        "param_keys": [e.key for _, e in irpa_items(folder / "params.irpa")],
        "max_rel_iree_vs_torch": {k: float(f"{v:.3g}") for k, v in rels.items()},
        "versions": {p: metadata.version(p) for p in ("torch", "transformers", "iree-turbine", "iree-base-compiler")},
    }
    (folder / "meta.json").write_text(json.dumps(meta, indent=2) + "\n")
    text = README_DYN.format(
        name=name,
        model_class=fam.model_class,
        intro=_paragraph(
            f"transformers' own `{fam.model_class}` built from `{fam.config_class}(**config)` with random weights "
            f"under `torch.manual_seed({fam.seed})` (norm weights perturbed away from 1), the same model as "
            f"`hf_{fam.name}`: {fam.features}."
        ),
        config_json=json.dumps(fam.config, sort_keys=True),
        mask_text=_paragraph(
            'The forward is a prefill: batch 1, a dynamic number S of tokens (the export\'s `Dim("seq")`, '
            f"2..{fam.config['max_position_embeddings']}, traced at {SEQ}), no cache, the logits as the output. "
            + MASK_TEXT["causal"]
        ),
        inputs=", ".join(f"`{x}`" for x in meta["inputs"]),
        outputs=", ".join(f"`{x}`" for x in meta["outputs"]),
        sizes_list=", ".join(map(str, DYN_SIZES)),
        rels=", ".join(f"{k} {v:.1e}" for k, v in rels.items()),
        versions=", ".join(f"{k} {v}" for k, v in meta["versions"].items()),
        sizes=folder_sizes(folder),
    )
    (folder / "README.md").write_text(text)
    return meta


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    known = [*BY_NAME, *DYNAMIC]
    ap.add_argument("names", nargs="*", metavar="NAME", help=f"fixtures to write: {', '.join(known)} (default: all)")
    opts = ap.parse_args()
    if unknown := sorted(set(opts.names) - set(known)):
        ap.error(f"unknown family {', '.join(unknown)}; known: {', '.join(known)}")
    torch.set_num_threads(1)
    for name in opts.names or known:
        meta = export_dynamic(name) if name in DYNAMIC else export(BY_NAME[name])
        print(f"{meta['name']}: max rel {meta['max_rel_iree_vs_torch']}", file=sys.stderr)


if __name__ == "__main__":
    main()
