"""Issue 53 point 4, the report: on a decode step, per contraction, whether data tiling pays and why.

On ``tests/fixtures/models/llama_decode`` (M = 1 contractions against a KV cache) with ``x86_64-avx2``,
``explore`` keeps contractions plain that IREE's own plan data-tiles. The diff against IREE's plan gives,
after each differing contraction's decision lines, its predicted time per call in both plans (kernel,
per-call encodes and decodes) and a verdict; ``--emit json`` has the same figures as typed fields.
Checked here:

* every differing M = 1 contraction's lines carry both times and a verdict, and no line is over 160;
* the figures, recomputed by another route: from the plan graph alone (no MLIR, no ``dispatch_order``),
  ``q_proj``'s dispatches are the ones whose contraction is 256x256 with no add fused after it; its time
  per call is that dispatch's predicted seconds less its accumulator fill, plus, in IREE's plan, the
  encode dispatch that feeds it (its predicted seconds over the dispatches it feeds);
* the verdict agrees with the sign of the difference of the two times, in JSON and in the text;
* the verdict's words on made-up figures (tiling pays, does not, a tie);
* the kernels ``benchmarks/bench_m1_kernels.py`` compares with IREE's profile (``measure.kernel_agreement``):
  per M x N x K, the contraction dispatches counted by hand from the model's config (2 layers; q/o
  256x256, k/v 64x256, gate/up 512x256, down 256x512, the tied LM head 2048x256), their total what the
  plan graph alone gives (its dispatches holding a contraction, compute and traffic without the launch).
"""

from __future__ import annotations

import argparse
import functools
import re
from pathlib import Path

import pytest

from egg_dispatch.cli.explore import use_iree_baseline
from egg_dispatch.iree.lowering import iree_compiler_available
from egg_dispatch.measure.kernel_agreement import predicted
from egg_dispatch.pipeline import explore
from egg_dispatch.plan.graph import DispatchInfo, Plan
from egg_dispatch.result.exploration import Exploration
from egg_dispatch.result.per_call import Part, PerCall
from egg_dispatch.result.plan_view import view
from egg_dispatch.result.report import text, to_json
from egg_dispatch.result.summary import data_tiling_verdict

DECODE = Path(__file__).parent / "fixtures" / "models" / "llama_decode" / "torch.mlir"
WIDTH = 160

needs_iree = pytest.mark.skipif(not iree_compiler_available(), reason="IREE not installed (egg-dispatch[iree])")


@functools.cache
def explored() -> Exploration:
    """The decode fixture explored as ``egg-dispatch explore`` does it: IREE's own plan as the baseline."""
    result = explore(str(DECODE), "x86_64-avx2", compile_check=False)
    args = argparse.Namespace(file=str(DECODE), baseline="iree", assume=None, min_gain=0.05)
    use_iree_baseline(result, result.module, args)
    assert result.baseline is not None and "iree-compile" in result.baseline.label
    return result


def _diff_section(report: str) -> list[tuple[str, str]]:
    """The diff's lines, unwrapped: (``decision`` | ``per call`` | ``together``, text)."""
    lines = report.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith("where ours differs from"))
    out: list[tuple[str, str]] = []
    for line in lines[start + 1 :]:
        if not line.startswith("  "):
            break
        indent = len(line) - len(line.lstrip())
        if indent == 2:
            kind = "together" if line.startswith("  these contractions together") else "decision"
            out.append((kind, line.strip()))
        elif indent == 4 and line.startswith("    per call: "):
            out.append(("per call", line.strip()))
        else:  # a continuation of the line before (summary.fit)
            out[-1] = (out[-1][0], out[-1][1] + " " + line.strip())
    return out


_PER_CALL = re.compile(
    r"^per call: ours (matmul|mmt4d) .*?([\d.]+) µs; IREE (matmul|mmt4d) .*?([\d.]+) µs: "
    r"(data tiling pays at M=1, by ([\d.]+) µs|data tiling does not pay at M=1, by ([\d.]+) µs|a tie at M=1"
    r"|ours is faster by ([\d.]+) µs|IREE's is faster by ([\d.]+) µs|the same predicted time)"
)


@needs_iree
def test_every_differing_decode_contraction_says_whether_tiling_pays() -> None:
    e = explored()
    report = text(e)
    assert not [line for line in report.splitlines() if len(line) > WIDTH]
    assert not [line for line in text(e, verbose=True).splitlines() if len(line) > WIDTH]
    section = _diff_section(report)
    decisions = [t for kind, t in section if kind == "decision"]
    # Every contraction of the decode step is M = 1; explore keeps some plain that IREE tiles.
    assert sum("(matmul 1x" in t and ": plain matmul; IREE: " in t for t in decisions) >= 4, decisions
    for n, (kind, line) in enumerate(section):
        if kind != "decision" or "(matmul 1x" not in line:
            continue
        # its figures follow its (last) decision line
        after = next((t for k, t in section[n + 1 :] if k != "decision"), "")
        m = _PER_CALL.match(after)
        assert m, (line, after)
        if ": plain matmul; IREE: " in line:
            assert m[1] == "matmul" and m[3] == "mmt4d" and "M=1" in m[5], after
    assert section[-1][0] == "together", section[-1]


def _fill_seconds(d: DispatchInfo) -> float:
    return sum(t for sig, t in d.nodes if sig is not None and sig.startswith("Fill |"))


def _q_proj_per_call(plan: Plan) -> list[float]:
    """Per-call seconds of each q_proj of a plan, from its graph alone: the dispatches with a 256x256
    contraction and no generic fused (o_proj, the other 256x256, adds the residual), less the fill, plus
    each encode-only dispatch feeding it, shared among the dispatches it feeds."""
    g = plan.graph
    out = []
    for d in plan.dispatches:
        contraction = [sig for sig, _ in d.nodes if sig and sig.split(" | ")[0] in ("Contract", "Mmt4d")]
        if "Generic" in d.ops or not any("| 1x256x256xf32" in sig for sig in contraction):
            continue
        seconds = d.seconds - _fill_seconds(d)
        for p in g.predecessors(d.name):
            info = g.nodes[p].get("info")
            if g.nodes[p].get("kind") == "dispatch" and info is not None and info.ops == ["SetEncoding"]:
                fed = [s for s in g.successors(p) if g.nodes[s].get("kind") == "dispatch"]
                seconds += info.seconds / len(fed)
        out.append(seconds)
    return out


@needs_iree
def test_the_figures_are_the_plans_own_by_another_route() -> None:
    e = explored()
    assert e.baseline is not None
    entries = [d for d in to_json(e)["differences_from_iree"] if d["who"].startswith("q_proj ")]
    assert len(entries) == 1 and entries[0]["layers"] == [0, 1], entries
    d = entries[0]
    for plan, figures in ((e.best.plan, d["ours_per_call"]), (e.baseline.plan, d["iree_per_call"])):
        expected = _q_proj_per_call(plan)
        assert len(expected) == 2, expected  # one per layer
        # the layers are one line: the same figure at the report's precision; the first layer's exactly
        assert any(x == pytest.approx(figures["seconds"], rel=1e-9, abs=1e-15) for x in expected), (expected, figures)
        assert all(abs(x - figures["seconds"]) < 0.005e-6 for x in expected), (expected, figures)
        assert figures["seconds"] == pytest.approx(figures["kernel_seconds"] + figures["encode_decode_seconds"])
    ours, iree = d["ours_per_call"], d["iree_per_call"]
    # each plan's contractions in JSON carry the same figures
    data = to_json(e)
    for plan, figures in (("best", ours), ("baseline", iree)):
        q = [k["per_call"] for k in data[plan]["contractions"] if k["role"] == "q_proj"]
        assert len(q) == 2 and all(abs(x["seconds"] - figures["seconds"]) < 0.005e-6 for x in q), (q, figures)
    assert (ours["kernel"], ours["steps"]) == ("matmul", [])  # plain: nothing encoded per call
    assert iree["kernel"] == "mmt4d" and [s["what"] for s in iree["steps"]] == ["LHS encode", "decode"]
    assert iree["steps"][0]["own_dispatch"] and not iree["steps"][1]["own_dispatch"]


@needs_iree
def test_the_verdict_agrees_with_the_sign_of_the_difference() -> None:
    e = explored()
    entries = [d for d in to_json(e)["differences_from_iree"] if d["ours_per_call"] is not None]
    assert len(entries) >= 5, entries
    for d in entries:
        ours, iree = d["ours_per_call"], d["iree_per_call"]
        diff = ours["seconds"] - iree["seconds"]
        if abs(diff) < 0.005e-6:
            assert d["faster"] == "tie", d
            continue
        assert d["faster"] == ("ours" if diff < 0 else "IREE"), d
        by = f"by {abs(diff) * 1e6:.2f} µs"
        assert by in d["verdict"], d
        if ours["kernel"] == "matmul" and iree["kernel"] == "mmt4d":
            assert d["verdict"].startswith("data tiling pays" if diff > 0 else "data tiling does not pay"), d
    # and the text says the same, with the same totals
    per_call = [t for kind, t in _diff_section(text(e)) if kind == "per call"]
    verdicts = {d["verdict"] for d in entries}
    assert per_call and all(any(t.endswith(": " + v) for v in verdicts) for t in per_call), per_call


def _pc(kernel: str, kernel_us: float, *steps_us: float) -> PerCall:
    return PerCall(kernel, kernel_us * 1e-6, tuple(Part("LHS encode", s * 1e-6, True, 1) for s in steps_us))


def test_the_verdicts_words() -> None:
    pays = data_tiling_verdict("1x256x256", _pc("matmul", 10.0), _pc("mmt4d", 8.0, 1.0))
    assert pays == (
        "IREE",
        "data tiling pays at M=1, by 1.00 µs (the tiled kernel saves 2.00, its encodes and decodes cost 1.00)",
    )
    not_pays = data_tiling_verdict("1x256x256", _pc("matmul", 10.0), _pc("mmt4d", 9.5, 1.0))
    assert not_pays[0] == "ours" and not_pays[1].startswith("data tiling does not pay at M=1, by 0.50 µs (its encodes")
    slower = data_tiling_verdict("4x16x256x256", _pc("mmt4d", 12.0, 0.5), _pc("matmul", 11.0))
    assert slower == ("IREE", "data tiling does not pay at M=16, by 1.50 µs (the tiled kernel alone is 1.00 slower)")
    assert data_tiling_verdict("1x8x8", _pc("matmul", 3.0), _pc("mmt4d", 2.0, 1.0))[0] == "tie"
    both = data_tiling_verdict("1x8x8", _pc("mmt4d", 3.0, 0.25), _pc("mmt4d", 3.0, 0.5))
    assert both == ("ours", "ours is faster by 0.25 µs per call (ours' kernel +0.00, encodes and decodes -0.25)")


@needs_iree
def test_the_models_kernels_of_the_decode_step_are_the_ones_counted_by_hand() -> None:
    e = explored()
    for c in (e.best, e.baseline):
        assert c is not None
        got = predicted(c, view(c.mlir))
        counts = {k: p.count for k, p in got.items() if k[0] == "matmul"}
        assert counts == {
            ("matmul", "1x256x256"): 4,
            ("matmul", "1x64x256"): 4,
            ("matmul", "1x512x256"): 4,
            ("matmul", "1x256x512"): 2,
            ("matmul", "1x2048x256"): 1,
        }, c.label
        # Another route, the plan graph alone: its dispatches holding a contraction, without the launch.
        holding = [d for d in c.plan.dispatches if {"Contract", "Mmt4d"} & set(d.ops)]
        assert len(holding) == 15
        total = sum(p.seconds * p.count for k, p in got.items() if k[0] == "matmul")
        assert total == pytest.approx(sum(d.flops_seconds for d in holding), rel=1e-12)
        assert total < sum(d.seconds for d in holding)  # the launches are left out
    # IREE's plan encodes the M = 1 activations per call (1x1x256 in IREE's 3-d form): the model has them
    assert e.baseline is not None
    encodes = {k: p for k, p in predicted(e.baseline, view(e.baseline.mlir)).items() if k[0] == "encode"}
    assert encodes and all(p.seconds > 0 for p in encodes.values())
