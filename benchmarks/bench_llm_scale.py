"""Explore against IREE's own dispatch creation on Llama-shaped decoders, layer by layer (issue 53, point 3).

For each layer count (default 1, 2, 4, 8 and the shape's own depth) of one width (``--preset tinyllama``:
TinyLlama-1.1B, hidden 2048, 32/4 heads, SwiGLU 5632, vocabulary 32000; ``--preset llama8b``: hidden
4096, 32/8 heads, SwiGLU 14336, vocabulary 128256), a prefill of ``--seq`` tokens (128), the program is
written by ``benchmarks/llama_shapes.py`` (IREE's input form, weights as external parameters: nothing is
materialised), and in one run, one program at a time, each in a child process of its own:

1. IREE: ``iree-compile --compile-to=dispatch-creation`` with data tiling and the target's CPU
   (``egg_dispatch.iree.dispatch_creation``, the flags explore compares against), the binary run from
   this process (no interpreter start counted for it), its peak RSS from ``wait4``;
2. ours: ``egg-dispatch explore FILE --target T --no-measure --emit json`` (the compile check on unless
   ``--no-compile-check``; a fresh cache directory, a new user's, unless ``--warm-cache``) in a child
   process that times each stage (the pipeline's functions wrapped, time counted exclusive of nested
   stages), sums egglog's own run reports per ruleset (search and apply, rebuild, merge), and reports
   its peak memory: the largest sum of the proportional set sizes (``Pss``, shared pages split between
   the processes that share them) of the process and the child it forks to price IREE's own plan,
   sampled every 250 ms (a sample walks their page tables: every 20 ms it took most of a core), or the
   process's own peak RSS if larger (IREE's subprocesses apart).

Printed: per layer count, IREE's time and explore's (the child's wall time seen from here, interpreter
start and imports included, as a user's command pays them), the ratio, explore's peak memory, terms
imported, e-nodes, time and e-nodes per layer; then explore's time per stage and per ruleset.
The goal (issue 53): explore <= 4x IREE's time and <= 1 GB at the 1.1B and 8B shapes.

    .venv/bin/python benchmarks/bench_llm_scale.py --preset tinyllama --layers 1,2,4,8,22
    .venv/bin/python benchmarks/bench_llm_scale.py --preset llama8b --layers 32 --json out.json
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import tempfile
import textwrap
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(HERE))

from llama_shapes import PRESETS, llama  # noqa: E402

from egg_dispatch.util.table import table_lines  # noqa: E402

GOAL_RATIO = 4.0
GOAL_BYTES = 1 << 30

_EXPLORE_CHILD = textwrap.dedent(
    """
    import functools, json, os, resource, sys, time
    from datetime import timedelta

    # As console_main does: IREE's start state asked for before explore's modules load.
    argv = ["explore", sys.argv[1], "--target", sys.argv[2], "--no-measure", "--emit", "json", "-o", sys.argv[3]]
    argv += sys.argv[4:]
    from egg_dispatch.cli.early import ask_iree_early
    from egg_dispatch.util.background import allow_child_processes
    ask_iree_early(argv)
    allow_child_processes()

    import threading
    peak = [0]
    def pss(pid):
        try:
            with open(f"/proc/{pid}/smaps_rollup") as f:
                return next(int(l.split()[1]) * 1024 for l in f if l.startswith("Pss:"))
        except (OSError, StopIteration):
            return 0
    def ours():  # this process and its descendants but IREE's (forked workers pricing IREE's own plan)
        todo, out = [os.getpid()], []
        while todo:
            pid = todo.pop()
            try:
                comm = open(f"/proc/{pid}/comm").read().strip()
                kids = [int(k) for t in os.listdir(f"/proc/{pid}/task")
                        for k in open(f"/proc/{pid}/task/{t}/children").read().split()]
            except OSError:
                continue
            if not comm.startswith("iree"):
                out.append(pid)
                todo += kids
        return out
    def sample():  # a read of smaps_rollup walks the process's page tables: ~7 ms at 700 MB, so not often
        while True:
            peak[0] = max(peak[0], sum(pss(p) for p in ours()))
            time.sleep(0.25)
    threading.Thread(target=sample, daemon=True).start()

    import egg_dispatch.pipeline as pl
    import egg_dispatch.egraph.rules as rules
    import egg_dispatch.egraph.program as program
    import egg_dispatch.egraph.data as data
    import egg_dispatch.emit.emitter as emitter
    import egg_dispatch.cli.explore as cli_explore
    import egg_dispatch.result.report as report
    from egg_dispatch.cli import main

    stage = {}
    main_stages = [0.0]  # the part of ``stage`` spent on the main thread (other threads overlap it)
    local = threading.local()  # IREE's own plan is priced on a thread of its own: one stack per thread
    def timed(label, f):
        @functools.wraps(f)
        def w(*a, **k):
            stack = local.__dict__.setdefault("stack", [])
            t = time.perf_counter()
            stack.append(0.0)
            try:
                return f(*a, **k)
            finally:
                took = time.perf_counter() - t
                inner = stack.pop()
                stage[label] = stage.get(label, 0.0) + took - inner
                if threading.current_thread() is threading.main_thread():
                    main_stages[0] += took - inner
                if stack:
                    stack[-1] += took
        return w

    def patch(mod, name, label):
        setattr(mod, name, timed(label, getattr(mod, name)))

    for name, label in [
        ("prepare_input", "input: read, lower"), ("start_state", "input: IREE start state (subprocess)"),
        ("parse_mlir", "parse"), ("parse_file", "parse"), ("initial_plan", "start state (initial plan)"),
        ("import_function", "import"), ("size_plan", "import"), ("saturate", "saturation: other"),
        ("cost_at_sizes", "cost table"), ("exact_ilp", "extraction"), ("greedy_dag", "extraction"),
        ("plan_at_sizes", "plan costing"), ("normalize_choice", "emission"), ("build_term", "emission"),
        ("iree_baseline_choice", "modelled baseline + membership"),
        ("choice_membership", "modelled baseline + membership"), ("compile_checked", "compile check"),
        ("known_rejections", "compile check"),
    ]:
        patch(pl, name, label)
    patch(rules, "seed_facts", "saturation: facts (python)")
    program.ProgramGraph.__init__ = timed("saturation: declare e-graph", program.ProgramGraph.__init__)
    program.ProgramGraph.serialized = timed("serialize e-graph", program.ProgramGraph.serialized)
    fs = data.EGraphData.from_serialized.__func__
    data.EGraphData.from_serialized = classmethod(timed("serialize e-graph", fs))
    emitter.Emitter.emit = timed("emission", emitter.Emitter.emit)
    patch(cli_explore, "use_iree_baseline", "IREE's own plan (read, cost)")
    patch(cli_explore, "recommend", "IREE's own plan (read, cost)")
    patch(report, "to_json", "report")
    patch(report, "text", "report")

    rulesets = {}
    def secs(v):
        return v.total_seconds() if isinstance(v, timedelta) else float(v)
    run0 = program.ProgramGraph.run
    def run(self, text):
        out = run0(self, text)
        for o in out:
            rr = getattr(o, "report", None)
            if rr is None:
                continue
            for field, what in (("search_and_apply_time_per_ruleset", "search+apply"),
                                ("rebuild_time_per_ruleset", "rebuild"), ("merge_time_per_ruleset", "merge")):
                for rs, v in getattr(rr, field).items():
                    e = rulesets.setdefault(str(rs), {"search+apply": 0.0, "rebuild": 0.0, "merge": 0.0, "matches": 0})
                    e[what] += secs(v)
            for rule, n in rr.num_matches_per_rule.items():
                pass
        return out
    program.ProgramGraph.run = timed("saturation: egglog runs", run)

    sat = {}
    s0 = pl.saturate
    def saturate(imported, *a, **k):
        graph, rep = s0(imported, *a, **k)
        if not (a[1] if len(a) > 1 else k.get("families", ())):
            return graph, rep  # IREE's own plan, explored with no rule (on a thread of its own): not ours
        sat.update(enodes=rep.enodes, eclasses=rep.eclasses, iterations=rep.iterations, stop=rep.stop_reason,
                   terms=len(imported.lets), seconds=rep.seconds)
        return graph, rep
    pl.saturate = saturate

    t0 = time.perf_counter()
    code = main(argv)
    wall = time.perf_counter() - t0
    out = json.load(open(sys.argv[3])) if code == 0 else {}
    base = out.get("baseline") or {}
    print(json.dumps({
        "code": code, "wall_s": wall, "stages": stage, "main_stages_s": main_stages[0],
        "rulesets": rulesets, "saturation": sat,
        "peak_bytes": max(peak[0], resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024),
        "iree_peak_bytes": resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss * 1024,
        "in_egraph": base.get("in_egraph"),
    }), flush=True)
    os._exit(0)  # as console_main ends a command: no teardown of the interpreter
    """
)


_COMPILED: list[bool] = []


def _compiled_once(env: dict[str, str]) -> None:
    """The package's bytecode written (``__pycache__``, git-ignored) before the first child is timed: with
    ``PYTHONDONTWRITEBYTECODE`` set, as on some machines, each child would compile it from source."""
    if not _COMPILED:
        subprocess.run([sys.executable, "-m", "compileall", "-q", str(ROOT / "egg_dispatch")], env=env, check=True)
        _COMPILED.append(True)


def _child(code: str, *args: str, cache_dir: str | None = None) -> dict:
    """The child's JSON line, with ``process_s``: its wall time from the parent (interpreter start and
    imports included, as a user's command pays them). ``cache_dir``: the child's cache directory (the
    compile check's cache; a fresh one is a new user's cold cache); IREE's output cache is off."""
    # Bytecode as an installed package has it (pip compiles it), though the machine may say not to write it.
    env = {k: v for k, v in os.environ.items() if k not in ("EGG_DISPATCH_IREE_CACHE", "PYTHONDONTWRITEBYTECODE")}
    if cache_dir is not None:
        env["EGG_DISPATCH_CACHE_DIR"] = cache_dir
    _compiled_once(env)
    t0 = time.perf_counter()
    proc = subprocess.run([sys.executable, "-c", code, *args], capture_output=True, text=True, cwd=ROOT, env=env)
    took = time.perf_counter() - t0
    if proc.returncode != 0 or not proc.stdout.strip():
        raise SystemExit(f"child failed ({proc.returncode}):\n{proc.stderr[-3000:]}")
    return {**json.loads(proc.stdout.strip().splitlines()[-1]), "process_s": took}


def iree_dispatch_creation(path: Path, target: str, out: Path) -> dict:
    """``iree-compile --compile-to=dispatch-creation`` of ``path`` with the flags explore compares against
    (data tiling, the target's CPU), run from here: its wall time, peak RSS and plan's counts."""
    from egg_dispatch.iree.dispatch_creation import count_printed, iree_compile_flags
    from egg_dispatch.iree.tools import compile_flags, find_tool

    data_tiling, cpu, others = iree_compile_flags(target)
    flags = compile_flags(
        data_tiling=data_tiling, target_cpu=cpu, extra_flags=[*others, "--compile-to=dispatch-creation"]
    )
    tool = find_tool("iree-compile")
    assert tool is not None, "iree-compile is not installed"
    with open(out.with_suffix(".stderr"), "w+b") as err:
        t0 = time.perf_counter()
        proc = subprocess.Popen([str(tool), str(path), *flags, "-o", str(out)], stderr=err)
        _, status, usage = os.wait4(proc.pid, 0)  # its own rusage: the peak RSS of this one process
        took = time.perf_counter() - t0
        proc.returncode = os.waitstatus_to_exitcode(status)
        if proc.returncode:
            err.seek(0)
            raise SystemExit(f"iree-compile failed: {err.read().decode()[-2000:]}")
    workgroups, encodes, _, globals_ = count_printed(out.read_text())
    return {
        "process_s": took,
        "peak_bytes": usage.ru_maxrss * 1024,
        "dispatches": workgroups,
        "encodes": encodes,
        "globals": globals_,
    }


def measure(
    layers: int, preset: str, seq: int, target: str, compile_check: bool, keep: Path | None, warm: bool, repeat: int = 1
) -> dict:
    shape = PRESETS[preset].with_layers(layers)
    if seq:
        from dataclasses import replace

        shape = replace(shape, seq=seq)
    with tempfile.TemporaryDirectory() as d:
        if keep:
            keep.mkdir(parents=True, exist_ok=True)
        path = (keep or Path(d)) / f"{preset}_{layers}l_s{shape.seq}.mlir"
        path.write_text(llama(shape))
        extra = [] if compile_check else ["--no-compile-check"]
        irees, ourss = [], []
        for i in range(repeat):  # alternately, so that a noisy stretch of the machine hits both
            irees.append(iree_dispatch_creation(path, target, Path(d) / "plan.mlir"))
            cache = None if warm else os.path.join(d, f"cache{i}")
            out = os.path.join(d, "out.json")
            ourss.append(_child(_EXPLORE_CHILD, str(path), target, out, *extra, cache_dir=cache))
    pairs = sorted(o["process_s"] / i["process_s"] for i, o in zip(irees, ourss, strict=True))
    return {
        "layers": layers,
        "bytes": path.stat().st_size if keep else None,
        "iree": _median_run(irees),
        "ours": _median_run(ourss),
        "pair_ratios": pairs,
    }


def _median_run(runs: list[dict]) -> dict:
    """The run of median time (the lower middle one of an even count)."""
    return sorted(runs, key=lambda r: r["process_s"])[(len(runs) - 1) // 2]


def render(results: list[dict], preset: str, target: str, compile_check: bool, warm: bool) -> str:
    mb = 1 << 20
    lines = [
        f"machine: {platform.node()} {platform.processor() or platform.machine()}, {os.cpu_count()} cores; "
        f"preset {preset} {PRESETS[preset]}; target {target}; compile check {'on' if compile_check else 'off'}"
        f" ({'warm' if warm else 'cold'} cache)",
        "",
    ]
    rows = []
    for r in results:
        i, o, s = r["iree"], r["ours"], r["ours"]["saturation"]
        n = r["layers"]
        ratio = o["process_s"] / i["process_s"]
        rows.append(
            [
                n,
                f"{i['process_s']:.1f}",
                f"{o['process_s']:.1f}",
                f"{ratio:.2f}x",
                f"{o['peak_bytes'] / mb:.0f}",
                s.get("terms", "?"),
                s.get("enodes", "?"),
                f"{o['process_s'] / n:.2f}",
                f"{s.get('enodes', 0) / n:.0f}",
                i["dispatches"],
                o.get("in_egraph"),
                f"{r['pair_ratios'][0]:.2f}-{r['pair_ratios'][-1]:.2f}x ({len(r['pair_ratios'])})",
            ]
        )
    lines += table_lines(
        [
            "layers",
            "IREE s",
            "explore s",
            "ratio",
            "peak MB",
            "terms",
            "e-nodes",
            "s/layer",
            "e-nodes/layer",
            "IREE dispatches",
            "IREE plan in e-graph",
            "ratio per run (runs)",
        ],
        rows,
        left=0,
    )
    labels = sorted(
        {k for r in results for k in r["ours"]["stages"]}, key=lambda k: -results[-1]["ours"]["stages"].get(k, 0)
    )
    srows = [[k, *(f"{r['ours']['stages'].get(k, 0.0):.2f}" for r in results)] for k in labels]
    srows.append(
        [
            "other (main thread)",
            *(f"{r['ours']['wall_s'] - r['ours'].get('main_stages_s', 0.0):.2f}" for r in results),
        ]
    )
    srows.append(
        ["interpreter start, imports", *(f"{r['ours']['process_s'] - r['ours']['wall_s']:.2f}" for r in results)]
    )
    lines += ["", "explore's time per stage (s, exclusive of nested stages; other threads' stages overlap the main's):"]
    lines += table_lines(["stage", *(f"{r['layers']} layers" for r in results)], srows, left=1)
    rs = sorted({k for r in results for k in r["ours"]["rulesets"]})
    rrows = []
    for k in rs:
        cells = []
        for r in results:
            e = r["ours"]["rulesets"].get(k)
            cells.append("-" if e is None else f"{e['search+apply']:.2f}/{e['rebuild']:.2f}")
        rrows.append([k, *cells])
    lines += ["", "egglog per ruleset (s, search+apply / rebuild):"]
    lines += table_lines(["ruleset", *(f"{r['layers']} layers" for r in results)], rrows, left=1)
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--preset", choices=sorted(PRESETS), default="tinyllama")
    ap.add_argument("--layers", default="1,2,4,8", help="comma-separated layer counts")
    ap.add_argument("--seq", type=int, default=0, help="prefill tokens (default: the preset's, 128)")
    ap.add_argument("--target", default="x86_64-avx2")
    ap.add_argument("--no-compile-check", action="store_true")
    ap.add_argument(
        "--warm-cache", action="store_true", help="use the user's cache (default: a fresh one per run, as a new user)"
    )
    ap.add_argument("--keep", type=Path, help="write the generated programs here")
    ap.add_argument("--json", type=Path, help="also write the raw measurements here")
    ap.add_argument(
        "--repeat", type=int, default=1, help="runs of each, alternately; the median run is reported (default 1)"
    )
    args = ap.parse_args(argv)
    results = []
    for n in (int(x) for x in args.layers.split(",")):
        results.append(
            measure(
                n, args.preset, args.seq, args.target, not args.no_compile_check, args.keep, args.warm_cache,
                args.repeat,
            )
        )
        print(f"measured {n} layer(s)", file=sys.stderr, flush=True)
    print(render(results, args.preset, args.target, not args.no_compile_check, args.warm_cache))
    if args.json:
        args.json.write_text(json.dumps(results, indent=2))
    worst = results[-1]
    ok = (
        worst["ours"]["process_s"] <= GOAL_RATIO * worst["iree"]["process_s"]
        and worst["ours"]["peak_bytes"] <= GOAL_BYTES
    )
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
