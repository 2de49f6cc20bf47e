"""Rule families (``rules/*.egg``) and saturation under a budget.

Each family is one ruleset of the same name, in one egglog file per IREE behaviour it mirrors
(``FAMILY_FILES``; most families mirror one and have one file); ``analysis.egg`` (always loaded)
declares the legality relations and the ``analysis`` / ``legality`` rulesets. egglog's ``run`` has no
node or time limit, so the budget is enforced here: one iteration at a time, the e-graph's size checked
after each, and an iteration that overshoots the e-node limit rolled back with push/pop (docs/egglog.md
§1.5, pitfall 7).
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from importlib import resources
from importlib.resources.abc import Traversable

from egg_dispatch.egraph.facts import seed_facts
from egg_dispatch.egraph.imported import ImportedProgram
from egg_dispatch.egraph.program import ProgramGraph
from egg_dispatch.target.profile import Target

__all__ = [
    "FAMILIES",
    "FAMILY_FILES",
    "RULES_DIR",
    "Budget",
    "SaturationReport",
    "family_files",
    "family_source",
    "saturate",
]

RULES_DIR: Traversable = resources.files("egg_dispatch.rules")
"""The rule files, as the package ``egg_dispatch.rules``: the repository's top-level ``rules/`` folder,
which pyproject.toml's ``package-dir`` maps onto that name, so they are found inside a wheel and in an
editable install alike (never through the source tree)."""

SNAPSHOT_FROM = 8
"""Take a rollback snapshot before an iteration that may overshoot the e-node limit: one that would if it
grew the e-graph SNAPSHOT_FROM-fold (the first iteration), or by twice the factor the iteration before it
grew it by (later ones; at most SNAPSHOT_FROM). Iterations grow a saturating e-graph less and less, so
the last factor, not the largest so far, is the one to go by. egglog keeps every snapshot until the run
ends, a copy of the e-graph each (and its push, and the pop or drop at the end, each cost a pass over
it), so taking one before every iteration near the limit multiplied the peak memory (four copies on a
64-layer transformer); an iteration that overshoots without one is kept, and the report says so."""

FAMILIES = ("clone", "hoist", "const_eval", "propagate", "noop", "untile", "sink_unset", "fuse", "materialize")
"""Rule families in schedule order; every one may be selected alone with ``--rules``."""


FAMILY_FILES: dict[str, tuple[str, ...]] = {
    "clone": ("clone", "flow_copies", "encode_copies"),
    "propagate": ("propagate_slice", "propagate_bubble", "propagate_cast"),
    "fuse": ("fuse_pack", "fuse_elementwise", "fuse_encode", "fuse_encode_linalg"),
    "noop": ("noop", "noop_reshape"),
    "const_eval": ("const_eval", "fold_constants"),
}
"""The rule files of a family that mirrors several IREE behaviours, in load order (the first declares
the ruleset); every other family (and ``analysis``) is the one file of its name."""


def family_files(name: str) -> tuple[str, ...]:
    """The stems of the rule files of family ``name`` (``rules/<stem>.egg``), in load order."""
    return FAMILY_FILES.get(name, (name,))


def family_source(name: str) -> str:
    """The egglog text of family ``name``: its rule files, concatenated in load order.

    Read once per process (every saturation asks for the same files: a dozen reads that a small
    program's exploration would make again each time); keyed by the folder too, so pointing
    ``RULES_DIR`` elsewhere reads that folder's files."""
    key = (name, str(RULES_DIR))
    text = _SOURCES.get(key)
    if text is None:
        text = _SOURCES[key] = _read_family(name, RULES_DIR)
    return text


_SOURCES: dict[tuple[str, str], str] = {}
"""(family, rules folder) -> ``family_source``."""


def _read_family(name: str, rules_dir: Traversable) -> str:
    texts = []
    for stem in family_files(name):
        path = rules_dir / f"{stem}.egg"
        if not path.is_file():
            raise FileNotFoundError(f"rule family '{name}' has no file {path}")
        texts.append(path.read_text(encoding="utf-8"))
    return "\n".join(texts)


@dataclass(frozen=True)
class Budget:
    """Limits of one saturation run; whichever is hit first stops it (and the report says which)."""

    iterations: int = 30
    """Rounds of (analysis to saturation, then every selected family once)."""
    enodes: int = 200_000
    """E-node rows after an iteration; an iteration that overshoots is rolled back."""
    seconds: float = 20.0
    """Wall time of the whole run."""

    def __post_init__(self) -> None:
        if self.iterations < 1 or self.enodes < 1 or self.seconds <= 0:
            raise ValueError("budget limits must be positive")


@dataclass
class SaturationReport:
    families: tuple[str, ...]
    iterations: int = 0
    enodes: int = 0
    eclasses: int = 0
    seconds: float = 0.0
    stop_reason: str = "saturated"
    """``saturated``, or ``iteration limit``, ``e-node limit`` (possibly with the size one overshooting
    iteration reached) or ``time limit`` when stopped early."""
    matches: dict[str, int] = field(default_factory=dict)
    """Rule name -> times it matched, over the whole run."""

    @property
    def saturated(self) -> bool:
        return self.stop_reason == "saturated"

    def render(self) -> str:
        fired = ", ".join(f"{k} {v}" for k, v in sorted(self.matches.items()) if v) or "none"
        return (
            f"e-graph: {self.enodes} e-nodes, {self.eclasses} e-classes after {self.iterations} iteration(s) "
            f"in {self.seconds:.2f} s; {self.stop_reason}\nrule matches: {fired}"
        )


def _accumulate(report: SaturationReport, outputs: Sequence[object]) -> bool:
    """Add one run's per-rule match counts; True if anything changed the e-graph."""
    changed = False
    for out in outputs:
        rr = getattr(out, "report", None)
        if rr is None:
            continue
        changed |= bool(rr.updated)
        for name, n in rr.num_matches_per_rule.items():
            report.matches[name] = report.matches.get(name, 0) + n
    return changed


def saturate(
    imported: ImportedProgram,
    target: Target,
    families: Sequence[str] = FAMILIES,
    budget: Budget | None = None,
) -> tuple[ProgramGraph, SaturationReport]:
    """Build the e-graph with the target's facts and run the selected families under ``budget``."""
    budget = budget or Budget()
    unknown = [f for f in families if f not in FAMILIES]
    if unknown:
        raise ValueError(
            f"unknown rule famil{'ies' if len(unknown) > 1 else 'y'}: {', '.join(unknown)} "
            f"(known: {', '.join(FAMILIES)})"
        )
    start = time.perf_counter()
    extra = family_source("analysis") + "\n" + "\n".join(family_source(f) for f in families)
    graph = ProgramGraph(imported, extra=extra)
    graph.run(seed_facts(imported, target).text)
    report = SaturationReport(tuple(families))
    step = "(seq (saturate (run analysis)) " + " ".join(f"(run {f})" for f in families) + ")"
    graph.run("(run-schedule (saturate (run analysis)))")
    enodes = graph.enodes()
    growth = float(SNAPSHOT_FROM)  # what the next iteration may multiply the e-graph by
    while True:
        if report.iterations >= budget.iterations:
            report.stop_reason = "iteration limit"
            break
        if time.perf_counter() - start > budget.seconds:
            report.stop_reason = "time limit"
            break
        # A snapshot to roll an overshooting iteration back to. egglog cannot drop a snapshot, so each
        # one stays in memory: take one only before an iteration that may overshoot (SNAPSHOT_FROM).
        # Without families (IREE's own plan, costed) an iteration runs only the analysis, saturated
        # above: it cannot grow the e-graph, which is as a rollback would leave it, so no copy is taken.
        snapshot = bool(families) and enodes * growth > budget.enodes
        if snapshot:
            graph.push()
        changed = _accumulate(report, graph.run(f"(run-schedule {step})"))
        before, enodes = enodes, graph.enodes()
        seen = 2.0 * enodes / max(before, 1)
        growth = min(float(SNAPSHOT_FROM), seen)
        if enodes > budget.enodes:
            if snapshot:
                graph.pop()
            if snapshot or not families:  # rolled back, or (no families) nothing grew to roll back
                report.stop_reason = "e-node limit"
                if report.iterations == 0 and graph.enodes() > budget.enodes:
                    report.stop_reason += f" (the start state alone has {graph.enodes()} e-nodes)"
            else:
                report.stop_reason = f"e-node limit (one iteration grew it to {enodes}; kept)"
            break
        report.iterations += 1
        if not changed:
            break
    # Legality last: it subsumes illegal forms, which rules must still be able to rewrite before.
    _accumulate(report, graph.run("(run-schedule (saturate (run analysis)) (saturate (run legality)))"))
    size = graph.size()
    report.enodes, report.eclasses = size.enodes, size.eclasses
    report.seconds = time.perf_counter() - start
    return graph, report
