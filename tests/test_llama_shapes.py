"""The Llama generator of the scale benchmark (``benchmarks/llama_shapes.py``) computes transformers' Llama.

At the widths of the suite's own export (``tests/fixtures/models/hf_llama``: 2 layers, hidden 64, 4/2
heads, SwiGLU 192, vocabulary 512, 16 tokens), the generated program, evaluated by the NumPy evaluator
with that export's parameter file (the keys the generator names its globals by), gives PyTorch's own
logits (``expected_torch.npz``); and no weight is materialised: every weight is an external parameter.
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np

from egg_dispatch.evaluate import evaluate
from egg_dispatch.evaluate.parameters import ParameterFile, Parameters
from egg_dispatch.mlir.parser import parse_mlir

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "benchmarks"))
from llama_shapes import TINYLLAMA, LlamaShape, llama  # noqa: E402

sys.path.remove(str(ROOT / "benchmarks"))

FIXTURE = ROOT / "tests" / "fixtures" / "models" / "hf_llama"
HF_LLAMA = LlamaShape(layers=2, hidden=64, heads=4, kv_heads=2, intermediate=192, vocab=512, seq=16)


def _npz(path: Path) -> list[np.ndarray]:
    with np.load(path) as z:
        return [z[k] for k in sorted(z.files, key=lambda k: int(k[3:]))]


def test_the_generated_llama_gives_torchs_logits_with_the_exports_parameters() -> None:
    module = parse_mlir(llama(HF_LLAMA), "<llama_shapes>")
    params = Parameters([ParameterFile(FIXTURE / "params.irpa", "model")])
    (got,) = evaluate(module, _npz(FIXTURE / "inputs.npz"), "main", parameters=params)
    (want,) = _npz(FIXTURE / "expected_torch.npz")
    assert got.shape == want.shape == (1, 16, 512)
    assert float(np.max(np.abs(got - want))) <= 1e-4 * float(np.max(np.abs(want)))
    assert not params.warnings  # every global found in the export's file, at its shape


def test_weights_are_external_parameters_at_the_shapes_widths() -> None:
    text = llama(TINYLLAMA.with_layers(2))
    globals_ = [line for line in text.splitlines() if "util.global private" in line]
    assert len(globals_) == 2 * 9 + 3  # per layer 7 projections and 2 norms; embedding, final norm, head
    assert all('#flow.parameter.named<"model"::"model.' in line for line in globals_)
    assert text.count("dense<") == 1 and "%inv_freq = arith.constant dense<" in text  # RoPE's 32 frequencies
    assert "tensor<32000x2048xf32>" in text and "tensor<5632x2048xf32>" in text and "tensor<256x2048xf32>" in text
    assert len(text) < 200_000
