"""Write the decode-step fixture: transformers' own ``LlamaForCausalLM``, one token against a KV cache.

Writes ``tests/fixtures/models/llama_decode/``. The model is transformers' ``LlamaForCausalLM`` (2 layers,
hidden 256, 8 query heads and 2 KV heads of 32, SwiGLU 512, vocab 2048, embeddings tied as in Llama 3.2
1B), random weights under ``torch.manual_seed``. One decode step: ids ``1x1`` at position 127, the cache
of 127 positions passed as four ``1x2x127x32`` inputs (keys and values of each layer) and rebuilt as
transformers' own ``DynamicCache`` in ``forward``; outputs: the logits ``1x1x2048`` and the four updated
cache tensors ``1x2x128x32``. Parameters are external (``#flow.parameter.named<"model"::...>``, in
``params.irpa``), as a serving engine loads them.

Files: ``torch.mlir`` (iree-turbine's export), ``input.mlir`` (``iree-compile --compile-to=input``),
``params.irpa``, ``inputs.npz`` (arg0..arg4), ``expected_torch.npz`` and ``expected_iree.npz``
(out0..out4; IREE: llvm-cpu, target-cpu=host, local-sync, with params.irpa), ``meta.json``.

Setup: the ``models`` extra plus transformers, in a Python 3.11 venv (see scripts/export_fixtures.py):

    V/bin/pip install torch==2.13.0 iree-turbine==3.9.0 safetensors transformers
    V/bin/python scripts/export_decode_fixture.py

``--prefill DIR`` writes instead, into DIR (not a fixture), the same model's prefill of ``PAST + 1``
tokens with no cache (``torch.mlir``, ``params.irpa``): what ``benchmarks/bench_decode.py`` compares
explore's time on the decode step with.
"""

from __future__ import annotations

import argparse
import json
import sys
from importlib import metadata
from pathlib import Path

import torch
import torch.nn as nn
from export_fixtures import OUT, SCOPE, export_external, folder_sizes, irpa_items
from iree.turbine import aot
from transformers import DynamicCache, LlamaConfig, LlamaForCausalLM

NAME = "llama_decode"
PAST = 127
CONFIG = dict(
    vocab_size=2048,
    hidden_size=256,
    intermediate_size=512,
    num_hidden_layers=2,
    num_attention_heads=8,
    num_key_value_heads=2,
    head_dim=32,
    max_position_embeddings=256,
    tie_word_embeddings=True,
    attn_implementation="sdpa",
)


class DecodeStep(nn.Module):
    """One token through the model against a cache of ``PAST`` positions, as a serving engine calls it."""

    def __init__(self, model: LlamaForCausalLM):
        super().__init__()
        self.model = model

    def forward(self, ids, k0, v0, k1, v1):  # type: ignore[no-untyped-def]
        cache = DynamicCache()
        cache.update(k0, v0, 0)
        cache.update(k1, v1, 1)
        position = torch.full((1, 1), PAST, dtype=torch.int64)
        out = self.model(
            input_ids=ids,
            past_key_values=cache,
            position_ids=position,
            cache_position=position[0],
            use_cache=True,
        )
        kv = out.past_key_values
        layers = [kv.layers[i] for i in range(2)] if hasattr(kv, "layers") else None
        if layers is not None:
            return out.logits, layers[0].keys, layers[0].values, layers[1].keys, layers[1].values
        return out.logits, kv.key_cache[0], kv.value_cache[0], kv.key_cache[1], kv.value_cache[1]


README = """\
# `llama_decode`: one decode step of transformers' Llama against a KV cache

**Generated** by `scripts/export_decode_fixture.py` (its docstring has the setup); do not edit by hand.

{what}

One token (`input_ids` 1x1) at position {past}, the cache of {past} positions passed as four inputs
(keys and values of layer 0 and layer 1, each `1x2x{past}x32`: batch, KV heads, positions, head dim) and
rebuilt as transformers' `DynamicCache` inside `forward`, as a serving engine calls a decode step. The
contractions are M = 1: the q/k/v/o and MLP projections are matrix-vector products, attention reads the
cache. Parameters are external (`#flow.parameter.named<"model"::...>`, values in `params.irpa`; the tied
embedding is stored under both of its names).

- inputs: {inputs} (`inputs.npz`, arg0..arg4)
- outputs: {outputs} (logits, then the four updated cache tensors; `expected_torch.npz`,
  `expected_iree.npz`: torch.mlir compiled for llvm-cpu, target-cpu=host, run with `params.irpa`)
- max |IREE - torch| / max |torch|: {max_rel_iree_vs_torch:.1e}
- versions: {versions}
- files: {sizes}

```sh
iree-compile torch.mlir --compile-to=input -o input.mlir
egg-dispatch explore torch.mlir --check --parameters model=params.irpa
```
"""


def build() -> DecodeStep:
    torch.manual_seed(11)
    model = LlamaForCausalLM(LlamaConfig(**CONFIG)).eval()
    gen = torch.Generator().manual_seed(12)
    with torch.no_grad():
        for name, p in model.named_parameters():
            if "norm" in name:  # RMSNorm weights away from 1
                p.copy_(1.0 + 0.1 * torch.randn(p.shape, generator=gen))
    return DecodeStep(model).eval()


def inputs() -> tuple[torch.Tensor, ...]:
    g = torch.Generator().manual_seed(100)
    ids = torch.randint(0, CONFIG["vocab_size"], (1, 1), generator=g, dtype=torch.int64)
    cache = tuple(torch.randn(1, 2, PAST, 32, generator=g) for _ in range(4))
    return (ids, *cache)


class Prefill(nn.Module):
    """The same model on a whole prompt, no cache: logits only."""

    def __init__(self, model: LlamaForCausalLM):
        super().__init__()
        self.model = model

    def forward(self, ids):  # type: ignore[no-untyped-def]
        # The causal mask given as the additive 4-d mask transformers takes as it is: its own mask
        # building looks for packed sequences with torch.diff and makes i1 literals, which IREE 3.13's
        # torch input does not lower.
        n = ids.shape[1]
        mask = torch.full((n, n), float("-inf")).triu(1)[None, None]
        return self.model(input_ids=ids, attention_mask=mask, use_cache=False).logits


def export_prefill(folder: Path) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    step = Prefill(build().model).eval()
    ids = torch.randint(0, CONFIG["vocab_size"], (1, PAST + 1), generator=torch.Generator().manual_seed(100))
    aot.externalize_module_parameters(step, external_scope=SCOPE)
    aot.export(step, args=(ids,)).save_mlir(str(folder / "torch.mlir"))
    aot.save_module_parameters(folder / "params.irpa", step)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--prefill", type=Path, metavar="DIR", help="write the same model's prefill into DIR instead")
    opts = ap.parse_args()
    torch.set_num_threads(1)
    if opts.prefill is not None:
        export_prefill(opts.prefill)
        return
    folder = OUT / NAME
    folder.mkdir(parents=True, exist_ok=True)
    step = build()
    args = inputs()
    with torch.no_grad():
        expected = [t.detach().numpy() for t in step(*args)]
    np_inputs, rel = export_external(step, args, expected, folder, NAME, 1e-4)
    meta = {
        "name": NAME,
        "kind": "decode",
        "what": "transformers LlamaForCausalLM decode step: " + json.dumps(CONFIG, sort_keys=True),
        "inputs": [f"{'x'.join(map(str, a.shape))}x{a.dtype}" for a in np_inputs],
        "outputs": [f"{'x'.join(map(str, o.shape))}x{o.dtype}" for o in expected],
        "param_keys": [e.key for _, e in irpa_items(folder / "params.irpa")],
        "max_rel_iree_vs_torch": float(f"{rel:.3g}"),
        "versions": {p: metadata.version(p) for p in ("torch", "transformers", "iree-turbine", "iree-base-compiler")},
    }
    (folder / "meta.json").write_text(json.dumps(meta, indent=2) + "\n")
    (folder / "params.irpa").chmod(0o644)  # written 0640: a fixture every reader of the checkout reads
    shown = {k: ", ".join(f"`{x}`" for x in meta[k]) for k in ("inputs", "outputs")}
    versions = ", ".join(f"{k} {v}" for k, v in meta["versions"].items())
    text = README.format(**{**meta, **shown, "versions": versions}, past=PAST, sizes=folder_sizes(folder))
    (folder / "README.md").write_text(text)
    print(json.dumps(meta, indent=2), file=sys.stderr)


if __name__ == "__main__":
    main()
