"""Is IREE's own plan a plan of the e-graph? Measured on random programs and on the model fixtures.

For each program, ``egg-dispatch explore FILE --baseline iree --emit json`` runs in a child process of
its own (a per-stage budget, ``--stage-seconds``, and a hard wall-clock timeout, ``--timeout``, so that
one slow program cannot stall the run), with IREE 3.13's ``--compile-to=dispatch-creation`` (data
tiling on) as the baseline. Recorded per program: ``baseline.in_egraph``, every missing decision
(``baseline.missing_all``; the first is ``baseline.missing``), and a class for each miss.

Programs: ``--random N --seed S`` (default N=40): ``benchmarks/random_programs.py``'s programs of seeds
S..S+N-1; ``--models-random N --seed S``: ``benchmarks/random_models.py``'s small transformer models of
seeds S..S+N-1 (issue 51, point 6); ``--models``: the fixtures of ``tests/test_membership.py``'s ``IN``
and ``MISSED`` lists.

**Classes of a miss** (keyword rules over the miss text as ``membership`` prints it, ``no e-node
HEAD(...)[, the operands of PARENT(...)]``; the first rule that matches wins; they read the text only,
so a miss is classed by the words it is described with, not by a diagnosis of why it is missing):

(a) *a form IREE's later passes print* (no decision of its own; issue 51's "forms"): the text names
    ``flow.tensor.reshape``, ``flow.tensor.slice``, ``flow.tensor.update`` or another ``flow.tensor.``
    op, a copy (``Copy``/``flow.tensor.clone``), a ``tensor.expand_shape`` / ``collapse_shape``
    (flattened elementwise ops around encodes), a ``Size(`` code (a new dynamic size), a
    ``Dispatch(Slice(`` (a slice of a result as a copy dispatch), a ``Slice(Const(`` (a slice of a
    constant IREE's const-eval folds), or its head is ``Const`` (a constant IREE's const-eval folded,
    from a slice, a transpose or a splat);
(b) *a decision a rule lacks*: otherwise, the text names an encoding decision (``SetEncoding``,
    ``UnsetEncoding``, ``encoding(``), a dispatch (``Dispatch``), a load-time computation
    (``ConstEval``), or says the plan's results are not the e-graph's root; or the miss is a list of
    operands (``, the operands of P``): P, found or not, reads values the e-graph never gives it (an
    op run on other operands: a fusion or propagation decision). Checked by hand on the most frequent
    such miss, ``TCons(Generic(...), TNil), the operands of Generic(...)``: a consumer generic run on
    the still-encoded result of a ``linalg.generic`` contraction in its dispatch (the same program
    with ``linalg.matmul`` is in);
(c) *a start-state difference*: everything else (the miss is a computation, ``Generic``,
    ``Contract``, ``Fill``, ``Arg`` ..., on its own, with no encoding, dispatch or form named: IREE's
    plan computes something the start state we imported does not).

The rules read only the first two levels of the term the miss text prints, so (b) and (c) in
particular are a triage for reading, not a diagnosis.

The first miss's *kind* (for the histogram) is its head constructor after the ``TCons``/``Results``
list plumbing, with the op name for ``Op`` (``Op(flow.tensor.reshape``, ``Generic``, ``Const``,
``Size``) and the head of the first child for the wrappers ``Dispatch``, ``ConstEval``,
``SetEncoding`` and ``UnsetEncoding`` (``Dispatch(Slice``, ``SetEncoding(Arg``), and `` <- operands
of P`` when the miss is a list of operands of ``P``.

Runs that end otherwise are counted apart: **timeout** (the wall-clock limit), **error** (explore
exits non-zero: with a Python traceback an *internal error*, a bug on a valid program, listed with the
traceback's last line; without one a refusal, listed with its message), **no baseline** (IREE's plan
was not read: no ``in_egraph`` in the JSON).

    .venv/bin/python benchmarks/bench_membership.py --random 40 --seed 0
    .venv/bin/python benchmarks/bench_membership.py --models-random 30 --seed 0
    .venv/bin/python benchmarks/bench_membership.py --models [--write-doc docs/conformance.md]
"""

from __future__ import annotations

import argparse
import json
import re
import subprocess
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

from random_models import model as random_model  # noqa: E402
from random_models import params_of as model_params_of  # noqa: E402
from random_programs import params_of, program  # noqa: E402

TARGET = "x86_64-avx2"
BEGIN, END = "<!-- membership:begin -->", "<!-- membership:end -->"
INTRO = (
    "## IREE's plan of the model fixtures\n\n"
    "Whether IREE 3.13's own plan of each model fixture of `tests/test_membership.py` (its `IN` and "
    "`MISSED` lists; `--compile-to=dispatch-creation` with data tiling, target x86_64-avx2) is one of the "
    "e-graph's plans, and every decision of it the e-graph lacks, each classed (a) a form IREE's later "
    "passes print, (b) a decision a rule lacks, (c) a start-state difference, by the keyword rules in "
    "`benchmarks/bench_membership.py`'s docstring. Written by `python benchmarks/bench_membership.py "
    "--models --write-doc docs/conformance.md`; the part between the two `membership` comments is the last "
    "run's output, not edited by hand.\n"
)

FORM_WORDS = (
    "flow.tensor.",
    "Copy",
    "tensor.expand_shape",
    "tensor.collapse_shape",
    "Size(",
    "Dispatch(Slice(",
    "Slice(Const(",
)
DECISION_WORDS = ("SetEncoding", "UnsetEncoding", "encoding(", "Dispatch", "ConstEval", "not the e-graph's root")
PLUMBING = ("TCons", "Results", "TNil")
WRAPPERS = ("Dispatch", "ConstEval", "SetEncoding", "UnsetEncoding")


def classify(miss: str) -> str:
    """The class of one miss (module docstring): 'a' form, 'b' rule, 'c' start state."""
    text = miss.removeprefix("no e-node ")
    if any(w in text for w in FORM_WORDS) or kind(miss).split(" ")[0] == "Const":
        return "a"
    if any(w in text for w in DECISION_WORDS) or ", the operands of " in text:
        return "b"
    return "c"


def kind(miss: str) -> str:
    """The head constructor of a miss after list plumbing (``Op(name`` for an op), and the parent
    whose operands it is."""
    text = miss.removeprefix("no e-node ")
    head, _, parent = text.partition(", the operands of ")
    while True:
        m = re.match(r"(\w+)\(", head)
        if m is None or m.group(1) not in PLUMBING:
            break
        head = head[m.end() :]
    m = re.match(r"(\w+)(\((?:[\w.]+))?", head)
    if m is None:
        out = head[:40]
    elif m.group(2) and (m.group(1) == "Op" or m.group(1) in WRAPPERS):
        out = f"{m.group(1)}{m.group(2)}"
    else:
        out = m.group(1)
    if parent:
        pm = re.match(r"(\w+)(\((?:[\w.]+))?", parent)
        if pm is not None:
            out += f" <- operands of {'Op' + pm.group(2) if pm.group(1) == 'Op' and pm.group(2) else pm.group(1)}"
    return out


@dataclass
class Outcome:
    name: str
    lines: int
    status: str = "ok"
    """ok, timeout, error, internal-error, no-baseline"""
    in_egraph: bool | None = None
    missing: list[str] = field(default_factory=list)
    redundant: list[str] = field(default_factory=list)
    detail: str = ""
    seconds: float = 0.0


def run_one(name: str, path: Path, stage_seconds: float, timeout: float) -> Outcome:
    """``explore`` on ``path`` in a child process, IREE's plan as the baseline."""
    exe = Path(sys.executable).with_name("egg-dispatch")
    cmd = [
        str(exe), "explore", str(path), "--target", TARGET, "--baseline", "iree", "--extractor", "greedy",
        "--no-compile-check", "--no-cache", "--emit", "json", "--budget", f"seconds={stage_seconds}",
    ]  # fmt: skip
    out = Outcome(name, len(path.read_text().splitlines()))
    t0 = time.perf_counter()
    try:
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, cwd=ROOT)
    except subprocess.TimeoutExpired:
        out.status, out.seconds = "timeout", time.perf_counter() - t0
        return out
    out.seconds = time.perf_counter() - t0
    if proc.returncode != 0:
        err = [line for line in proc.stderr.splitlines() if line.strip()]
        out.status = "internal-error" if any(line.startswith("Traceback") for line in err) else "error"
        out.detail = err[-1] if err else f"exit {proc.returncode}"
        return out
    try:
        base = json.loads(proc.stdout).get("baseline") or {}
    except json.JSONDecodeError as e:
        out.status, out.detail = "internal-error", f"JSON: {e}"
        return out
    if "in_egraph" not in base:
        out.status, out.detail = "no-baseline", "IREE's plan not read"
        return out
    out.in_egraph = bool(base["in_egraph"])
    out.missing = list(base.get("missing_all") or ([base["missing"]] if base.get("missing") else []))
    out.redundant = list(base.get("redundant") or [])
    return out


def model_fixtures() -> list[str]:
    from tests.test_membership import IN, MISSED

    return [*IN, *MISSED]


def summarize(results: list[Outcome], examples: dict[str, str] | None = None) -> str:
    done = [r for r in results if r.status == "ok"]
    n_in = sum(1 for r in done if r.in_egraph)
    lines = [
        f"programs: {len(results)}; read: {len(done)}; timeouts: {_count(results, 'timeout')}; "
        f"errors (refusals): {_count(results, 'error')}; internal errors: {_count(results, 'internal-error')}; "
        f"no baseline: {_count(results, 'no-baseline')}",
        f"IREE's plan in the e-graph: {n_in}/{len(done)}" + (f" = {n_in / len(done):.0%}" if done else ""),
    ]
    first = Counter(kind(r.missing[0]) for r in done if not r.in_egraph and r.missing)
    lines += ["", "first missing decision, by kind:"]
    smallest: dict[str, Outcome] = {}
    for r in done:
        if not r.in_egraph and r.missing:
            k = kind(r.missing[0])
            if k not in smallest or r.lines < smallest[k].lines:
                smallest[k] = r
    for k, c in first.most_common():
        ex = smallest[k]
        lines.append(f"  {c:3d}  {k}  [class {classify(ex.missing[0])}; smallest: {ex.name}, {ex.lines} lines]")
    per_class = Counter(classify(m) for r in done for m in r.missing)
    first_class = Counter(classify(r.missing[0]) for r in done if r.missing and not r.in_egraph)
    names = {
        "a": "(a) a form IREE's later passes print",
        "b": "(b) a decision a rule lacks",
        "c": "(c) a start-state difference",
    }
    lines += ["", "misses by class (every miss / first misses):"]
    for cls in "abc":
        lines.append(f"  {names[cls]}: {per_class[cls]} / {first_class[cls]}")
    all_kinds = Counter(kind(m) for r in done for m in r.missing)
    lines += ["", "every missing decision, by kind:"]
    lines += [
        f"  {c:3d}  {k}  [class {classify(next(m for r in done for m in r.missing if kind(m) == k))}]"
        for k, c in all_kinds.most_common()
    ]
    bad = [r for r in results if r.status in ("internal-error", "error", "timeout", "no-baseline")]
    if bad:
        lines += ["", "not read:"]
        lines += [f"  {r.name}: {r.status} ({r.seconds:.0f} s) {r.detail}" for r in bad]
    lines += ["", "per program:"]
    for r in results:
        state = r.status if r.status != "ok" else ("in" if r.in_egraph else "out")
        red = f" (redundant: {len(r.redundant)})" if r.redundant else ""
        lines.append(f"  {r.name} [{r.lines} lines, {r.seconds:.0f} s]: {state}{red}")
        for m in r.missing:
            lines.append(f"      ({classify(m)}) {m}")
    if examples:
        lines += ["", "smallest example of each first-miss kind:"]
        for k, _ in first.most_common():
            ex = smallest[k]
            lines += ["", f"--- {k}: {ex.name} ---", elide(examples[ex.name]).rstrip()]
    return "\n".join(lines) + "\n"


def elide(text: str) -> str:
    """``text`` with each long hex constant cut to its first bytes (the seed regenerates it whole)."""
    return re.sub(r'dense<"0x([0-9A-F]{16})[0-9A-F]{16,}">', r'dense<"0x\1...">', text)


def _count(results: list[Outcome], status: str) -> int:
    return sum(1 for r in results if r.status == status)


def doc_table(results: list[Outcome]) -> str:
    names = {"a": "form", "b": "rule lacks", "c": "start state"}
    rows = [
        "| model | IREE's plan in? | missing decisions (class) |",
        "|---|---|---|",
    ]
    for r in results:
        if r.status != "ok":
            state, misses = r.status, r.detail.replace("|", "\\|")
        else:
            state = "yes" if r.in_egraph else "no"
            if r.in_egraph and r.redundant:
                state += f" (redundant work: {len(r.redundant)})"
            misses = "<br>".join(f"({classify(m)}, {names[classify(m)]}) `{m}`".replace("|", "\\|") for m in r.missing)
        rows.append(f"| {r.name} | {state} | {misses or '-'} |")
    stamp = time.strftime("%Y-%m-%d")
    return f"Written by `bench_membership.py --models --write-doc` on {stamp}, target {TARGET}.\n\n" + "\n".join(rows)


def write_doc(path: Path, table: str) -> None:
    text = path.read_text() if path.exists() else "# Conformance with IREE's own passes\n"
    block = f"{BEGIN}\n{table}\n{END}"
    if BEGIN in text and END in text:
        head, rest = text.split(BEGIN, 1)
        _, tail = rest.split(END, 1)
        text = head + block + tail
    else:
        text = text.rstrip("\n") + "\n\n" + INTRO + "\n" + block + "\n"
    path.write_text(text)


def _progress(name: str, r: Outcome) -> None:
    state = "" if r.in_egraph is None else ("in" if r.in_egraph else "out")
    what = r.missing[0] if r.missing else r.detail
    print(f"{name}: {r.status} {state} ({r.seconds:.0f} s) {what}"[:400], file=sys.stderr, flush=True)


def report(path: Path, doc: Path | None) -> int:
    """The summary (and table) of a run saved with ``--json``, classified by this module's rules."""
    saved = [Outcome(**r) for r in json.loads(path.read_text())]
    randoms = [r for r in saved if r.name.startswith("seed ")]
    random_models = [r for r in saved if r.name.startswith("model seed ")]
    models = [r for r in saved if not r.name.startswith(("seed ", "model seed "))]
    examples = {r.name: program(int(r.name.split()[1])) for r in randoms}
    examples |= {r.name: random_model(int(r.name.split()[2])) for r in random_models}
    if random_models:
        _print_results(f"({len(random_models)})", random_models, examples, [], None, "random models")
    _print_results(f"({len(randoms)})", randoms, examples, models, doc)
    return 0


def _print_results(
    which: str,
    randoms: list[Outcome],
    examples: dict[str, str],
    models: list[Outcome],
    doc: Path | None,
    what: str = "random programs",
) -> None:
    """The random programs' summary, then the model fixtures' and their table (written into ``doc``)."""
    if randoms:
        print(f"== {what} {which}, target {TARGET} ==")
        print(summarize(randoms, examples))
    if models:
        print(f"== model fixtures (tests/test_membership.py IN and MISSED), target {TARGET} ==")
        print(summarize(models))
        table = doc_table(models)
        print(table)
        if doc:
            write_doc(doc, table)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--random", type=int, metavar="N", help="N random programs (default 40 without --models)")
    ap.add_argument("--seed", type=int, default=0, help="first seed of the random programs")
    ap.add_argument("--models", action="store_true", help="the model fixtures of tests/test_membership.py")
    ap.add_argument(
        "--models-random", type=int, metavar="N", help="N random small models (benchmarks/random_models.py)"
    )
    ap.add_argument("--stage-seconds", type=float, default=20.0, help="explore's budget per stage")
    ap.add_argument("--timeout", type=float, default=240.0, help="wall-clock limit per program (s)")
    ap.add_argument("--write-doc", type=Path, metavar="MD", help="write the models table into this page")
    ap.add_argument("--json", type=Path, help="also write every result as JSON")
    ap.add_argument("--from-json", type=Path, metavar="FILE", help="report a --json FILE again; run nothing")
    args = ap.parse_args(argv)
    if args.from_json is not None:
        return report(args.from_json, args.write_doc)
    if args.random is None and not args.models and args.models_random is None:
        args.random = 40
    examples: dict[str, str] = {}

    def generated(count: int, kind: str, write: Callable[[int], str], params: Callable[[int], object]) -> list[Outcome]:
        """Seeds ``args.seed``.. of a generator, each written to a file and explored (its text kept in
        ``examples`` by name, ``<kind>seed N``)."""
        out: list[Outcome] = []
        with tempfile.TemporaryDirectory() as d:
            for seed in range(args.seed, args.seed + count):
                text = write(seed)
                path = Path(d) / f"{kind.replace(' ', '')}seed{seed}.mlir"
                path.write_text(text)
                name = f"{kind}seed {seed}"
                examples[name] = text
                out.append(run_one(name, path, args.stage_seconds, args.timeout))
                _progress(f"{name} {params(seed)}", out[-1])
        return out

    results = generated(args.random or 0, "", program, params_of)
    model_randoms = generated(args.models_random or 0, "model ", random_model, model_params_of)
    model_results: list[Outcome] = []
    if args.models:
        for name in model_fixtures():
            r = run_one(name, ROOT / "tests" / "fixtures" / f"{name}.mlir", args.stage_seconds, args.timeout)
            model_results.append(r)
            _progress(name, r)
    if model_randoms:
        which = f"(seeds {args.seed}..{args.seed + len(model_randoms) - 1})"
        _print_results(which, model_randoms, examples, [], None, "random models")
    which = f"(seeds {args.seed}..{args.seed + len(results) - 1})"
    _print_results(which, results, examples, model_results, args.write_doc)
    if args.json:
        saved = [*results, *model_randoms, *model_results]
        args.json.write_text(json.dumps([r.__dict__ for r in saved], indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
