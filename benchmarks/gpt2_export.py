"""Export a GPT-2-small-sized decoder with iree-turbine, for ``bench_models.py`` (needs the ``models`` extra).

12 layers, width 768, 12 heads, MLP 3072, vocabulary 50257, 1024 positions, tied embedding: 124M
parameters, built in code from the fixture generator's GPT-2 block (``scripts/export_fixtures.py``) under
``torch.manual_seed`` (nothing is downloaded). Writes, into OUT:

    gpt2.torch.mlir       inline weights (dense_resource blobs), as ``aot.export(...).save_mlir()`` writes
    gpt2.ext.torch.mlir   weights as #flow.parameter.named<"model"::...>
    gpt2.irpa             the parameters

Run with the interpreter that has torch:  V/bin/python benchmarks/gpt2_export.py OUT [--layers N] [--seq S]
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import torch
from torch import nn

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "scripts"))

import iree.turbine.aot as aot
from export_fixtures import GPT2Block


class GPT2(nn.Module):
    def __init__(self, vocab: int, n_ctx: int, d: int, n_head: int, n_layer: int) -> None:
        super().__init__()
        self.wte = nn.Embedding(vocab, d)
        self.wpe = nn.Embedding(n_ctx, d)
        self.h = nn.ModuleList(GPT2Block(d, n_head) for _ in range(n_layer))
        self.ln_f = nn.LayerNorm(d)
        self.lm_head = nn.Linear(d, vocab, bias=False)
        self.lm_head.weight = self.wte.weight  # tied, as in GPT-2

    def forward(self, idx: torch.Tensor) -> torch.Tensor:
        pos = torch.arange(idx.shape[1], device=idx.device)
        x = self.wte(idx) + self.wpe(pos)
        for block in self.h:
            x = block(x)
        return self.lm_head(self.ln_f(x))


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("out", type=Path)
    ap.add_argument("--layers", type=int, default=12)
    ap.add_argument("--seq", type=int, default=128)
    args = ap.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    torch.manual_seed(0)
    model = GPT2(50257, 1024, 768, 12, args.layers).eval()
    n = sum(p.numel() for p in model.parameters())
    idx = torch.zeros(1, args.seq, dtype=torch.int64)
    t0 = time.perf_counter()
    aot.export(model, args=(idx,)).save_mlir(str(args.out / "gpt2.torch.mlir"))
    t1 = time.perf_counter()
    aot.externalize_module_parameters(model, external_scope="model")
    aot.export(model, args=(idx,)).save_mlir(str(args.out / "gpt2.ext.torch.mlir"))
    aot.save_module_parameters(str(args.out / "gpt2.irpa"), model)
    print(f"{n / 1e6:.1f}M parameters; inline export {t1 - t0:.1f} s, external {time.perf_counter() - t1:.1f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
