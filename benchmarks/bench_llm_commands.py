"""Every command on every transformers fixture (issue 53 point 1): a table of exit codes and first error lines.

For each fixture (``tests/fixtures/models/hf_*``, ``hf_llama_dyn`` with a dynamic sequence length among
them, and the decode step ``llama_decode``), on the file a user has (``torch.mlir``, iree-turbine's export)
with its ``params.irpa`` (``--parameters=model=...``):

- ``explore``: ``explore --check --parameters P --emit iree -o plan.mlir`` (small measurement budget);
- ``emit-iree``: that ``plan.mlir`` compiled with ``iree-compile --compile-from=dispatch-creation`` and
  run with ``iree.runtime`` on the recorded inputs and the parameter file, against ``expected_iree.npz``
  (max |got - want| / max |want| <= 1e-4);
- ``iree-baseline --check --parameters P``, ``bench --parameters P`` and ``tune --parameters P`` (small
  budgets: ``--min-time 0.01``, ``--repeats 1``, ``tune --top-k 2``), ``check --parameters P``;
- ``run --parameters P`` on the recorded inputs, its outputs against ``expected_iree.npz`` (1e-4).

A fixture recorded at several sizes (``inputs_<size>.npz``: ``hf_llama_dyn``, and the dynamic fixtures
``attention_dyn``, ``mlp_dyn``, ``mlp_sym``, no transformers class, weights inline, in the run with
``--dynamic``) has ``emit-iree`` and ``run`` check every recorded size.

Commands run one at a time (the machine this was written on has 2 shared cores). ``--tree DIR`` runs a
copy of the package from DIR (``PYTHONPATH``), e.g. a snapshot taken before a change, for a before/after
table; ``--json FILE`` writes the rows.

    .venv/bin/python benchmarks/bench_llm_commands.py [--fixtures hf_llama,llama_decode]
        [--commands explore,check] [--tree DIR] [--json FILE]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
MODELS = ROOT / "tests" / "fixtures" / "models"
FIXTURES = ("hf_llama", "hf_qwen2", "hf_gpt2", "hf_bert", "hf_phi3", "hf_gemma2", "hf_llama_dyn", "llama_decode")
DYNAMIC = ("attention_dyn", "mlp_dyn", "mlp_sym")
COMMANDS = ("explore", "emit-iree", "iree-baseline", "bench", "tune", "check", "run")
TOLERANCE = 1e-4
"""Max |got - want| / max |want| against IREE's recorded outputs (the f32 fixtures' IREE-vs-torch bound)."""
TIMEOUT = 900.0
TUNE_FLAGS = ["--top-k", "2", "--min-time", "0.01", "--repeats", "2", "--measure-seconds", "5", "--jobs", "1"]
TUNE_FLAGS.append("--no-cache")


@dataclass
class Row:
    fixture: str
    command: str
    code: int
    seconds: float
    first_error: str


def _npz(path: Path, prefix: str) -> list[np.ndarray]:
    with np.load(path) as z:
        return [z[k] for k in sorted(z.files, key=lambda k: int(k[len(prefix) :]))]


def _max_rel(got: list[np.ndarray], want: list[np.ndarray]) -> float:
    if len(got) != len(want):
        return float("inf")
    worst = 0.0
    for g, w in zip(got, want, strict=True):
        if g.shape != w.shape:
            return float("inf")
        w64 = w.astype(np.float64)
        worst = max(worst, float(np.abs(g.astype(np.float64) - w64).max() / max(np.abs(w64).max(), 1e-30)))
    return worst


def _first_error(stderr: str) -> str:
    lines = [ln.strip() for ln in stderr.splitlines() if ln.strip()]
    keys = ("error", "Error", "FAILED", "MISMATCH", "Traceback", "refuse")
    for ln in lines:
        if any(k in ln for k in keys) and not ln.startswith("warning:"):
            return ln[:200]
    return lines[-1][:200] if lines else ""


class Runner:
    def __init__(self, tree: Path | None, work: Path) -> None:
        self.env = dict(os.environ)
        if tree is not None:
            self.env["PYTHONPATH"] = str(tree)
        self.cwd = str(tree) if tree is not None else str(ROOT)
        self.work = work

    def cli(self, argv: list[str]) -> tuple[int, str]:
        try:
            p = subprocess.run(
                [sys.executable, "-m", "egg_dispatch", *argv],
                capture_output=True,
                text=True,
                env=self.env,
                cwd=self.cwd,
                timeout=TIMEOUT,
            )
        except subprocess.TimeoutExpired:
            return 124, f"timed out after {TIMEOUT:g} s"
        return p.returncode, _first_error(p.stderr) if p.returncode else ""

    def python(self, code: str, *args: str) -> tuple[int, str]:
        p = subprocess.run(
            [sys.executable, "-c", code, *args], capture_output=True, text=True, env=self.env, cwd=self.cwd
        )
        return p.returncode, (_first_error(p.stderr) or p.stdout.strip()[-200:]) if p.returncode else ""


_RUN_IREE = """
import sys, numpy as np
from pathlib import Path
from egg_dispatch.iree.tools import compile_module, run_module
plan, folder, out, tags = Path(sys.argv[1]), Path(sys.argv[2]), Path(sys.argv[3]), sys.argv[4].split(",")
vmfb = compile_module(plan, data_tiling=False, target_cpu="host", compile_from="dispatch-creation")
params = [("model", str(folder / "params.irpa"))] if (folder / "params.irpa").is_file() else []
for tag in tags:
    with np.load(folder / f"inputs{tag}.npz") as z:
        inputs = [z[k] for k in sorted(z.files, key=lambda k: int(k[3:]))]
    got = run_module(vmfb, "main", inputs, parameters=params)
    np.savez(out.with_suffix(f".{tag or 'one'}.npz"), **{f"out{i}": g for i, g in enumerate(got)})
"""


def _sizes(folder: Path) -> list[str]:
    """The recorded inputs' suffixes: ``""`` (``inputs.npz``) or each ``_<size>`` of ``inputs_<size>.npz``."""
    if (folder / "inputs.npz").is_file():
        return [""]
    return sorted(p.stem.removeprefix("inputs") for p in folder.glob("inputs_*.npz"))


def _commands(r: Runner, name: str) -> dict[str, Callable[[], tuple[int, str]]]:
    folder = MODELS / name
    torch_mlir = str(folder / "torch.mlir")
    params = [f"--parameters=model={folder / 'params.irpa'}"] if (folder / "params.irpa").is_file() else []
    plan = r.work / f"{name}.plan.mlir"
    sizes = _sizes(folder)
    inputs = {t: _npz(folder / f"inputs{t}.npz", "arg") for t in sizes}
    want = {t: _npz(folder / f"expected_iree{t}.npz", "out") for t in sizes}

    def compare(got: dict[str, list[np.ndarray]]) -> tuple[int, str]:
        worst = {t: _max_rel(got[t], want[t]) for t in sizes}
        bad = {t: rel for t, rel in worst.items() if rel > TOLERANCE}
        if bad:
            return 1, "; ".join(f"{t or 'inputs'}: max rel error {rel:.2e} > {TOLERANCE:g}" for t, rel in bad.items())
        return 0, ""

    def explore() -> tuple[int, str]:
        plan.unlink(missing_ok=True)
        argv = ["explore", torch_mlir, "--check", *params, "--emit", "iree", "-o", str(plan), "--no-cache"]
        return r.cli([*argv, "--measure-budget", "rounds=2,seconds=5"])

    def emit_iree() -> tuple[int, str]:
        if not plan.is_file():
            return -1, "no plan (explore failed)"
        out = r.work / f"{name}.iree_out.npz"
        code, err = r.python(_RUN_IREE, str(plan), str(folder), str(out), ",".join(sizes))
        if code:
            return code, err
        return compare({t: _npz(out.with_suffix(f".{t or 'one'}.npz"), "out") for t in sizes})

    def run() -> tuple[int, str]:
        got = {}
        for t in sizes:
            argv = ["run", torch_mlir, *params]
            for i, x in enumerate(inputs[t]):
                np.save(r.work / f"{name}{t}.arg{i}.npy", x)
                argv.append(f"--input=@{r.work / f'{name}{t}.arg{i}.npy'}")
            outs = [r.work / f"{name}{t}.run{i}.npy" for i in range(len(want[t]))]
            for o in outs:
                o.unlink(missing_ok=True)
            code, err = r.cli([*argv, *(f"--output=@{o}" for o in outs)])
            if code:
                return code, f"{t or 'inputs'}: {err}"
            got[t] = [np.load(o) for o in outs]
        return compare(got)

    return {
        "explore": explore,
        "emit-iree": emit_iree,
        "iree-baseline": lambda: r.cli(["iree-baseline", torch_mlir, "--check", *params]),
        "bench": lambda: r.cli(["bench", torch_mlir, *params, "--min-time", "0.01", "--repeats", "1"]),
        "tune": lambda: r.cli(["tune", torch_mlir, *params, *TUNE_FLAGS]),
        "check": lambda: r.cli(["check", torch_mlir, *params]),
        "run": run,
    }


def table(rows: list[Row], fixtures: list[str], commands: list[str]) -> str:
    codes = {(row.fixture, row.command): row.code for row in rows}
    head = "| command | " + " | ".join(fixtures) + " |"
    lines = [head, "|---" * (len(fixtures) + 1) + "|"]
    for c in commands:
        cells = [str(codes.get((f, c), "")) for f in fixtures]
        lines.append(f"| {c} | " + " | ".join(cells) + " |")
    errors = [f"- {row.fixture} {row.command} ({row.code}): {row.first_error}" for row in rows if row.code]
    return "\n".join([*lines, "", *errors] if errors else lines)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    ap.add_argument("--fixtures", default=",".join(FIXTURES))
    ap.add_argument("--commands", default=",".join(COMMANDS))
    ap.add_argument("--dynamic", action="store_true", help=f"also the dynamic fixtures ({', '.join(DYNAMIC)})")
    ap.add_argument("--tree", type=Path, help="run the package from this directory (PYTHONPATH)")
    ap.add_argument("--json", type=Path, help="write the rows here")
    args = ap.parse_args(argv)
    fixtures, commands = args.fixtures.split(","), args.commands.split(",")
    fixtures += list(DYNAMIC) if args.dynamic else []
    rows: list[Row] = []
    with tempfile.TemporaryDirectory(prefix="bench_llm_commands_") as tmp:
        runner = Runner(args.tree, Path(tmp))
        for name in fixtures:
            steps = _commands(runner, name)
            for c in commands:
                start = time.perf_counter()
                code, err = steps[c]()
                rows.append(Row(name, c, code, time.perf_counter() - start, err))
                print(f"{name:14s} {c:14s} exit {code:3d} {rows[-1].seconds:6.1f} s {err}", file=sys.stderr, flush=True)
    print(table(rows, fixtures, commands))
    if args.json:
        args.json.write_text(json.dumps([asdict(r) for r in rows], indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
