"""Rank the plans a recorded fidelity run measured by other target profiles, without measuring again.

``bench_fidelity.py`` measures each program's plans once; whether a change to the cost model (a new
fit, another calibration) ranks those same plans better is a question about predictions alone. This
script rebuilds every program's plans as the run did (the same exploration with the profile that ran
it: deterministic, so the same plans under the same labels), prices each plan graph under every
profile given, and reports per program the Spearman of each profile's predictions against the run's
measured medians. The first column re-prices with the run's own profile: it must reproduce the
recorded Spearman (a check that the plans were rebuilt right). Nothing is compiled or timed.

Run: ``python benchmarks/reprice_fidelity.py RUN.json PROFILE_OF_THE_RUN.json OTHER.json ...``
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))

from bench_fidelity import MORE_CANDIDATES, ablation_plans, all_programs, program_file

from egg_dispatch.cost.measured import MeasuredTimes, measurement_context
from egg_dispatch.measure.bench import spearman
from egg_dispatch.measure.tune import our_candidates
from egg_dispatch.pipeline import explore, iree_plan
from egg_dispatch.plan.graph import build_plan
from egg_dispatch.target.profile import Target, load_target


def reprice(
    name: str, source: Path, run: dict, made_by: Target, profiles: list[Target], show: bool = False
) -> list[float | None]:
    """Spearman of each profile's predictions of ``run``'s measured plans (one program) against their
    measured medians; ``show``: print each plan's measured and predicted µs too."""
    measured = MeasuredTimes(measurement_context(made_by))  # in memory and empty, as the run's was
    top_k = run["settings"]["top_k"]
    explorations: dict = {}
    ex = explore(source, made_by, pareto=True, top_k=top_k, measured=measured)
    plans = dict(our_candidates(ex, top_k + MORE_CANDIDATES))  # as bench_fidelity's tune call
    if run["settings"].get("ablations", True):
        plans.update(ablation_plans(source, made_by, measured, explorations)(ex))
    result = next(r for r in run["results"] if r["program"] == name)
    rows = [p for p in result["plans"] if p["measured_us"] and p["predicted_us"]]
    out: list[float | None] = []
    table: dict[str, list[float | None]] = {p["label"]: [] for p in rows}
    for target in profiles:
        pairs = []
        for p in rows:
            if p["is_iree"]:
                text = ex.input.iree_plan if ex.input is not None and ex.input.iree_plan else source
                own = iree_plan(text, target, ex.imported.function)
                seconds = own.candidate.metrics.run_seconds if own.candidate is not None else None
            else:
                c, e = plans[p["label"]], explorations.get(p["label"], ex)
                seconds = build_plan(e.data, c.plan.choice, e.imported, target, e.lam).metrics.run_seconds
            table[p["label"]].append(None if seconds is None else seconds * 1e6)
            if seconds is not None:
                pairs.append((seconds, p["measured_us"]))
        out.append(spearman(*zip(*pairs, strict=True)) if len(pairs) >= 3 else None)  # type: ignore[arg-type]
    if show:
        for p in sorted(rows, key=lambda p: p["measured_us"]):
            preds = " ".join(f"{'-' if x is None else f'{x:.2f}':>12s}" for x in table[p["label"]])
            print(f"    {p['label'][:34]:34s} measured {p['measured_us']:10.2f}  predicted {preds}")
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("run", help="a bench_fidelity.py --json file")
    ap.add_argument("profile", help="the target profile the run was made with")
    ap.add_argument("others", nargs="*", help="profiles to rank the same plans by")
    ap.add_argument("--programs", nargs="*", help="only these programs")
    ap.add_argument("--plans", action="store_true", help="print every plan's measured and predicted µs")
    args = ap.parse_args()
    run = json.loads(Path(args.run).read_text())
    made_by = load_target(args.profile)
    profiles = [made_by, *(load_target(p) for p in args.others)]
    sources = all_programs()
    names = [r["program"] for r in run["results"] if "error" not in r]
    names = [n for n in names if not args.programs or n in args.programs]
    heads = ["recorded", *(Path(p).stem[:22] for p in [args.profile, *args.others])]
    print(f"{'program':26s} " + " ".join(f"{h:>22s}" for h in heads))
    sums: list[list[float]] = [[] for _ in heads]
    with tempfile.TemporaryDirectory(prefix="reprice_") as tmp:
        for name in names:
            path = program_file(name, sources[name], Path(tmp))
            recorded = next(r for r in run["results"] if r["program"] == name)["spearman"]
            rhos = [recorded, *reprice(name, path, run, made_by, profiles, args.plans)]
            for acc, rho in zip(sums, rhos, strict=True):
                if rho is not None:
                    acc.append(rho)
            print(f"{name:26s} " + " ".join(f"{'-' if r is None else f'{r:+.3f}':>22s}" for r in rhos), flush=True)
    print(f"{'mean':26s} " + " ".join(f"{sum(a) / len(a) if a else float('nan'):>+22.3f}" for a in sums))
    return 0


if __name__ == "__main__":
    sys.exit(main())
