"""The whole pipeline as one function, and IREE's own plan costed by the same model.

``explore()`` is the Python API notebooks use and the engine behind ``egg-dispatch explore``:

    result = egg_dispatch.explore("model.mlir", target="x86_64-avx512")
    result.best.metrics.objective, result.baseline, result.pareto, result.stats, result.check()

The stages, in the order the data flows through them (each a subpackage; see ``egg_dispatch``):

1. ``mlir``: text -> IR;
2. ``start``: IREE's data-tiling start state (dispatch regions, cloned producers, set_encodings);
3. ``egraph``: IR -> egglog terms, the rule families saturated under a budget, serialized;
4. ``cost``: the per-node cost table for the target;
5. ``extract``: greedy or exact (ILP) extraction of the cheapest plan;
6. ``plan`` and ``emit``: the chosen plan as a graph with metrics and as MLIR; ``plan.baseline`` picks
   IREE 3.13's own decisions from the same e-graph for comparison.

``iree_plan()`` asks real IREE for its plan instead (``iree-compile --compile-to=dispatch-creation``) and
costs it here with no rule families, so that IREE's plan and ours are priced alike.
"""

from __future__ import annotations

import dataclasses
import functools
import os
import re
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import Future, wait
from pathlib import Path
from typing import NamedTuple, cast

from egg_dispatch.cost import (
    Assumption,
    MeasuredTimes,
    SizePlan,
    conflicts_of,
    cost_at_sizes,
    cost_table,
    default_lambda,
    size_plan,
    violated,
)
from egg_dispatch.egraph.data import EGraphData, build_term
from egg_dispatch.egraph.imported import ImportedProgram
from egg_dispatch.egraph.importer import import_function
from egg_dispatch.egraph.membership import NORMALIZATIONS, Membership, choice_membership, plan_membership
from egg_dispatch.egraph.rules import FAMILIES, Budget, SaturationReport, saturate
from egg_dispatch.emit.choice import normalize_choice
from egg_dispatch.emit.dims import UnknownSize
from egg_dispatch.emit.emitter import Emitter, class_shapes
from egg_dispatch.extract import ExtractionResult, exact_ilp, exact_ilp_many, greedy_dag, k_best
from egg_dispatch.iree.compile_check import Ahead, compile_checked, known_rejections, start_ahead
from egg_dispatch.iree.dispatch_creation import (
    IREE_PLAN,
    count_printed,
    dispatch_creation_text,
    first_error_line,
    iree_output_warnings,
)
from egg_dispatch.iree.lowering import (
    START_STATE_MAX_BYTES,
    StartState,
    asks_start_state,
    iree_compiler_available,
    lower,
    lowering_command,
    start_state,
    start_state_file,
)
from egg_dispatch.iree.tools import IreeError
from egg_dispatch.mlir.forms import PAST_GLOBAL_OPTIMIZATION, file_form, input_form
from egg_dispatch.mlir.ir import Loc, Module
from egg_dispatch.mlir.parser import MLIRSyntaxError, parse_file, parse_mlir
from egg_dispatch.mlir.printer import print_mlir
from egg_dispatch.mlir.retired import iree_input_shown, iree_input_text, may_need_respelling
from egg_dispatch.mlir.torch_symbols import torch_aliases
from egg_dispatch.plan.baseline import BaselineError, iree_baseline_choice
from egg_dispatch.plan.graph import Plan, build_plan
from egg_dispatch.plan.sized import plan_at_sizes
from egg_dispatch.result.exploration import Candidate, Exploration, InputInfo, IreePlan
from egg_dispatch.start.initial_plan import initial_plan
from egg_dispatch.start.tensor_to_flow import flow_reshapes
from egg_dispatch.target.profile import Target, load_target
from egg_dispatch.util.background import in_background, in_child
from egg_dispatch.util.deadline import Deadline, StageStop
from egg_dispatch.util.deep import allow_deep_recursion

__all__ = [
    "PARETO_LAMBDAS",
    "START_CHOICES",
    "START_STATE_MAX_BYTES",
    "IreePlan",
    "UnsupportedInput",
    "explore",
    "for_iree",
    "iree_plan",
    "prepare_input",
    "price_iree_own",
]

OWN_PLAN_NICENESS = 10
"""Added to the niceness of the child pricing IREE's own plan: ours, which the command waits for first,
keeps the CPU while both run (on two cores the child took turns with saturation and HiGHS)."""
PARETO_LAMBDAS = (0.0, 1e-12, 1e-11, 1e-10, 1e-9, 1e-8, 1e-7, 1e-6)
"""λ values (seconds per byte) swept for the time/memory frontier: from 'memory is free' to
'1 KiB weighs like 1 ms per call'."""


START_CHOICES = ("auto", "set-encoding", "global-optimization", "input")
"""Where ``explore`` starts (``--from``):

* ``set-encoding``: IREE's own data-tiling start state (its DispatchCreation up to and including
  SetEncoding: IREE's dispatch regions, with encodings set), so that only the decisions the e-graph
  explores differ from IREE's plan;
* ``global-optimization``: IREE's global optimization output, with our model of DispatchCreation's
  dispatch formation and SetEncoding (``start.initial_plan``);
* ``input``: the input as given (torch dialect is still lowered to IREE's input phase, since nothing
  else can read it);
* ``auto`` (default): ``set-encoding`` when IREE is installed and the input is at most
  ``START_STATE_MAX_BYTES`` (IREE prints that state once per function-like op: too much for a model's
  inline weights), else ``global-optimization``, else ``input``; input already past global
  optimization is taken as given."""


class UnsupportedInput(Exception):
    """The input cannot be brought to a form ``explore`` reads (the CLI prints it, exit 2)."""


def _as_path(source: str | Path) -> Path | None:
    if isinstance(source, Path) or ("\n" not in source and source.endswith(".mlir")):
        return Path(source)
    return None


def prepare_input(source: str | Path | Module, target: Target | None, start: str = "auto") -> tuple[Module, InputInfo]:
    """The module to explore, and how it was obtained from ``source`` (see ``START_CHOICES``).

    Torch-dialect input is lowered by IREE (``iree-compile --compile-to=input``, or straight to global
    optimization); without IREE that is an ``UnsupportedInput`` naming the command to run. Other input
    not yet past global optimization goes through IREE's global optimization when IREE is installed
    (``start="auto"``), so that our plan and IREE's start from the same IR; a failure there falls back
    to the input as given, with a note. Input IREE cannot read as written (ops upstream MLIR retired, a
    resource whose blob was elided) is handed to IREE as we read it (``mlir.retired.iree_input_text``),
    so that the same holds for it. ``target`` (its CPU) is needed for global optimization only.

    Memory: a model's file is read once, and not while IREE's output is: a path is lowered by IREE
    reading the file itself (unless IREE gets it as we read it, above), the input's own parse (its
    errors and warnings point into the user's file) is dropped before IREE runs, and torch exports are
    never read whole by us.
    """
    if start not in START_CHOICES:
        raise ValueError(f"start must be one of {', '.join(START_CHOICES)}, not {start!r}")
    if target is None and start != "input":
        raise ValueError("global optimization needs a target")
    parsed, text, path, name = _source_parts(source)
    form = _form(parsed, text, path)
    info = InputInfo(form, form)

    def as_given() -> Module:
        if parsed is not None:
            return parsed
        module = parse_mlir(text, name) if text is not None else parse_file(cast(Path, path))  # no text: a file
        flow_reshapes(module)
        return module

    if form in PAST_GLOBAL_OPTIMIZATION or (start == "input" and form != "torch"):
        if start == "input" and form != "torch":
            info.notes.append("--from input: explored as given (IREE's global optimization not run)")
        return as_given(), info
    shown = str(path) if path is not None else "FILE"
    if not iree_compiler_available():
        _without_iree(form, start, name, shown, info)
        return as_given(), info
    warnings: list[str] = []
    src: str | Path = path if path is not None else cast(str, text)  # no file: the text
    named = name  # the input as the commands shown run it
    # IREE reads the user's file while we parse it (for its warnings): the start state is asked for now
    # and taken below unless IREE must read a respelled text instead (then this run is not waited for).
    early = _early_start_state(path, start, target, name)
    if form != "torch":
        try:
            given = as_given()
        except Exception:  # a syntax error: IREE's run ends too (it reads the same file); not left behind
            if early is not None:
                wait([early])
            raise
        warnings = given.warnings  # a syntax error is reported in the user's own file
        # What IREE cannot read as written (a retired op, an elided blob) it gets as we read it (mlir.retired),
        # and the command shown says so.
        if (respelled := iree_input_text(given)) is not None:
            src, named = respelled, iree_input_shown(given) or name
            shown = named
        del given
    if path is not None:
        parsed = None  # IREE reads the file itself; ours is re-read only if IREE fails
    size = src.stat().st_size if isinstance(src, Path) else len(src or "")
    if start == "set-encoding" or (start == "auto" and size <= START_STATE_MAX_BYTES):
        assert target is not None  # start is not "input": checked above
        # IREE reads the user's own lines (not a respelled text, nor a parsed module printed again)
        own = src is path or (src is text and not isinstance(source, Module))
        try:
            state = early.result() if early is not None and src is path else start_state(src, target, name=named)
        except IreeError as e:
            first = first_error_line(e.stderr) if e.stderr else str(e).splitlines()[0]
            if form == "torch" or start == "set-encoding":
                raise UnsupportedInput(f"{name}: error: IREE cannot compile the input: {first}") from None
            info.notes.append(f"IREE's DispatchCreation failed ({first}); explored as given")
            return as_given(), info
        text = parsed = None
        info.steps.append(state.command)
        info.explored_form = "set-encoding"
        info.iree_plan = state.plan
        if own:  # its locations are in the user's file
            info.locations = {n: Loc(os.path.basename(name), at.line, at.col) for n, at in state.locations.items()}
        file = start_state_file(name)
        read = state.parsed  # read while IREE ran on, when it was
        module = read if read is not None and read.file == file else parse_mlir(state.text, file)
        flow_reshapes(module)  # as IREE converts them after SetEncoding (start.tensor_to_flow)
        module.warnings = [*warnings, *iree_output_warnings(module, f"IREE's start state for {name}")]
        return module, info
    if start == "auto":
        info.notes.append(
            f"the input is {size / 2**20:.0f} MiB, more than IREE's start state is dumped for "
            f"({START_STATE_MAX_BYTES >> 20} MiB): explored from IREE's global optimization, with our model "
            "of its dispatch formation"
        )
    phase = "input" if start == "input" else "global-optimization"
    try:
        lowered = lower(src, phase, target, name=named)
    except IreeError as e:
        first = first_error_line(e.stderr) if e.stderr else str(e).splitlines()[0]
        if form == "torch" or start == "global-optimization":
            command = " ".join(lowering_command(shown, phase, target))
            raise UnsupportedInput(f"{name}: error: IREE cannot lower the input ({command}): {first}") from None
        info.notes.append(f"IREE's global optimization failed ({first}); explored as given")
        return as_given(), info
    text = parsed = None
    info.steps.append(lowered.command)
    info.explored_form = phase  # what IREE just wrote (no need to scan a model-sized text for it)
    module = parse_mlir(lowered.text, f"{name} after IREE's {phase} phase")
    flow_reshapes(module)
    module.warnings = [*warnings, *iree_output_warnings(module, f"IREE's {phase} output for {name}")]
    return module, info


def _early_start_state(path: Path | None, start: str, target: Target | None, name: str) -> Future[StartState] | None:
    """``start_state`` of the user's file, started on a thread (``util.background``), when
    ``prepare_input`` will ask IREE for it (``lowering.asks_start_state``); None when it will not, or may
    not for the file itself."""
    if path is None or target is None or not asks_start_state(path, start):
        return None
    return in_background(lambda: start_state(path, target, name=name), "iree start state")


def _form(parsed: Module | None, text: str | None, path: Path | None) -> str:
    """``mlir.forms``' form of an input as ``_source_parts`` gives it: of its text, else of its file, else
    the one a parsed module was read with (past global optimization, so taken as it is, unprinted)."""
    if text is not None:
        return input_form(text)
    if path is not None:
        return file_form(path)
    return cast(str, cast(Module, parsed).source_form)


def _source_path(source: str | Path | Module) -> Path | None:
    """The file ``source`` is (a path, or a parsed module read from a file that is still there)."""
    if isinstance(source, Module):
        return Path(source.file) if not source.file.startswith("<") and Path(source.file).is_file() else None
    return _as_path(source)


def _source_parts(source: str | Path | Module) -> tuple[Module | None, str | None, Path | None, str]:
    """(the module when given parsed, its text when there is no file, the file, its name) of ``source``; no
    text for a parsed module past global optimization (its ``source_form``), which is explored as given."""
    path = _source_path(source)
    if isinstance(source, Module):
        if path is not None or source.source_form in PAST_GLOBAL_OPTIMIZATION:
            return source, None, path, source.file  # a file, or a module explored as given (``prepare_input``)
        return source, print_mlir(source), path, source.file
    if path is None:
        return None, str(source), None, "<string>"
    return None, None, path, str(path)


def _without_iree(form: str, start: str, name: str, shown: str, info: InputInfo) -> None:
    """What ``prepare_input`` does when IREE is not installed: refuse what needs it (a torch export, ``--from
    global-optimization``), else note that the input is explored as given."""
    if form == "torch":
        command = " ".join(lowering_command(shown, "input"))
        raise UnsupportedInput(
            f"{name}: error: this is torch-dialect MLIR (an iree-turbine export); lower it with IREE first: "
            f"{command} -o FILE.input.mlir (or pip install 'egg-dispatch[iree]' to do it automatically)"
        )
    if start == "global-optimization":
        raise UnsupportedInput(
            f"{name}: error: --from global-optimization needs IREE (pip install 'egg-dispatch[iree]')"
        )
    info.notes.append(
        "IREE is not installed: explored as given, without IREE's global optimization "
        "(pip install 'egg-dispatch[iree]' to start where IREE's own plan starts)"
    )


def explore(
    source: str | Path | Module,
    target: str | Target = "x86_64-avx512",
    *,
    families: Sequence[str] = FAMILIES,
    budget: Budget | None = None,
    lam: float | None = None,
    extractor: str = "exact",
    time_limit: float = 10.0,
    function: str | None = None,
    pareto: bool = False,
    baseline: bool = True,
    progress: Callable[[str], None] | None = None,
    start: str = "auto",
    measured: MeasuredTimes | None = None,
    top_k: int = 0,
    assume: Mapping[str, Assumption] | Sequence[str] | None = None,
    compile_check: bool | None = None,
    iree_own_plan: bool = False,
) -> Exploration:
    """Run the pipeline on MLIR text, a file, or a parsed module; see ``Exploration``.

    ``start`` says where to begin (``START_CHOICES``): by default torch-dialect input is lowered and
    IREE's global optimization runs first when IREE is installed (``prepare_input``). ``measured``:
    kernel times measured on this machine (``cost.measured``), used in place of the model's wherever
    it has one. ``top_k``: also the k best distinct plans by the model (``Exploration.top``; exact
    extractor only), the candidates ``tune`` measures. ``assume``: the sizes of dynamic dimensions
    (``{"arg0.d1": ((128, 1.0),)}`` or ``["arg0.d1=128,512"]``; ``cost.sizes``): what the cost averages
    over, and the only sizes the legality facts must hold for. ``compile_check``: compile the chosen
    plan's new dispatches alone with IREE and extract again without those it rejects
    (``iree.compile_check``; None: when IREE is installed). ``iree_own_plan``: also price IREE's own plan
    (``iree_plan``; ``Exploration.iree_own``) while ours is explored: in a child process where the
    process allows one (``util.background.allow_child_processes``: the command line), else on a thread.

    Every stage runs under ``budget.seconds`` (``util.deadline``): saturation and extraction (the best
    plan, the frontier, the k best) stop there and hand on their best answer; import and emission are
    timed. ``Exploration.stops`` lists the stages that reached it.
    """
    allow_deep_recursion()
    timings: dict[str, float] = {}
    stage_seconds = (budget or Budget()).seconds
    stops: list[StageStop] = []
    say = progress or (lambda _msg: None)
    t0 = time.perf_counter()
    tgt = target if isinstance(target, Target) else load_target(target)
    lam = default_lambda(tgt) if lam is None else lam
    module, input_info = prepare_input(source, tgt, start)
    timings["input"] = time.perf_counter() - t0
    prepared = initial_plan(module, function)
    imported = import_function(prepared, function)
    # IREE's own plan is priced from here to the compile check's end beside ours: in a child process when
    # the command line allows one (``util.background.in_child``), else on a thread, whose Python work
    # fills the waits of ours (HiGHS, IREE compiling our dispatches), which release the GIL.
    def price_own() -> tuple[IreePlan | None, str | None]:
        return price_iree_own(source, module, input_info.iree_plan, tgt, imported.function, assume, measured)

    owning = in_child(price_own, "IREE's own plan", niceness=OWN_PLAN_NICENESS) if iree_own_plan else None
    sizes = size_plan(imported, assume, torch_aliases(source))  # before facts: --assume narrows the domains
    timings["import"] = time.perf_counter() - t0
    if (took := timings["import"] - timings["input"]) > stage_seconds:
        stops.append(StageStop("import", stage_seconds, f"the whole program, in {took:.1f} s (one pass: not cut)"))
    say(f"imported @{imported.function}: {len(imported.lets)} terms")
    graph, report = saturate(imported, tgt, families, budget)
    if report.stop_reason.startswith("time limit"):
        stops.append(StageStop("saturation", stage_seconds, f"the e-graph of iteration {report.iterations}"))
    say(f"saturated: {report.enodes} e-nodes, {report.stop_reason}")
    t1 = time.perf_counter()
    data = EGraphData.from_serialized(graph.serialized(), keep_refused=True)  # the start state is always a plan
    graph.release()  # everything later reads the serialized data
    costs = cost_at_sizes(data, imported, sizes, lambda g: cost_table(g, imported, tgt, measured))
    if imported.dynamic:  # what no allowed size may compile to, not only the priced ones
        costs.conflicts = tuple(sorted({*costs.conflicts, *conflicts_of(data, tgt, imported)}))
    timings["cost_table"] = time.perf_counter() - t1

    def solver_stop(stage: str, results: Sequence[ExtractionResult], clock: Deadline) -> None:
        """A stop when a solve of ``stage`` ended at the budget (not at the user's --time-limit)."""
        if any(r.stats.get("status") == "Time limit reached" for r in results) and clock.expired():
            stops.append(clock.stop(stage, "the best plan found so far (its gap in the report)"))

    def extract(weight: float, solving: Callable[[ExtractionResult], None] | None = None) -> ExtractionResult:
        if extractor == "greedy":
            return greedy_dag(data, costs, weight)
        clock = Deadline(stage_seconds)
        limit = min(time_limit, stage_seconds)
        r = exact_ilp(data, costs, weight, time_limit=limit, solving=solving)  # greedy warm-starts HiGHS
        solver_stop("extraction", [r], clock)
        return r

    candidates = _Candidates(data, imported, sizes, tgt, lam, measured, module.file, stops, stage_seconds)
    candidate = candidates.make

    table_conflicts = costs.conflicts
    known = known_rejections(data, tgt, compile_check)  # what IREE rejected in an earlier check of this e-graph
    if known is not None and known.conflicts:
        costs.conflicts = tuple(sorted({*costs.conflicts, *known.conflicts}))
    def timed_extract(solving: Callable[[ExtractionResult], None]) -> ExtractionResult:
        t2 = time.perf_counter()
        r = extract(lam, solving)
        timings["extract"] = time.perf_counter() - t2
        return r

    modelled = functools.partial(_ModelledBaseline, data, imported, candidates, baseline)
    held: list[tuple[IreePlan, Membership, StageStop | None]] = []  # IREE's plan's membership, found out early
    idle = functools.partial(_own_membership_meanwhile, data, imported, stage_seconds, owning, held)
    early_check = functools.partial(_checked_ahead, data, imported.function, tgt, candidates, compile_check, idle)
    result, modelled_base, early = _extracted(timed_extract, modelled, early_check)
    base, membership, warnings = modelled_base.result()
    best, ahead = _taken(early, result, candidate)
    best, checked = compile_checked(
        data, costs, imported.function, tgt, best, lambda: extract(lam), lambda r: candidate("best", r.choice, r),
        base, stage_seconds, enabled=compile_check, progress=say, known=known, ahead=ahead,
    )  # fmt: skip
    timings["compile_check"] = checked.seconds
    own_plan, own_error = _own_priced(owning, price_own) if owning is not None else (None, None)
    warnings = [*module.warnings, *_kept_warnings(data, best.choice, report, table_conflicts), *warnings]
    front: list[Candidate] = []
    if pareto:
        say("sweeping λ for the time/memory frontier")
        clock = Deadline(stage_seconds)
        swept = (
            [greedy_dag(data, costs, w) for w in PARETO_LAMBDAS]
            if extractor == "greedy"
            else exact_ilp_many(data, costs, PARETO_LAMBDAS, time_limit=time_limit, deadline=clock)
        )
        solver_stop("the frontier sweep", swept, clock)
        front = _frontier(swept, candidate)
    top: list[Candidate] = []
    if top_k > 0 and extractor == "exact":
        say(f"the {top_k} best distinct plans by the model")
        t3 = time.perf_counter()
        clock = Deadline(stage_seconds)
        found = k_best(data, costs, lam, top_k, time_limit=time_limit, deadline=clock)
        if len(found) < top_k and clock.expired():
            stops.append(clock.stop("the k best plans", f"the {len(found)} best found so far"))
        for i, r in enumerate(found):
            top.append(best if r.choice == best.choice else candidate(f"top {i + 1}", r.choice, r))
        timings["top_k"] = time.perf_counter() - t3
    timings["total"] = time.perf_counter() - t0
    return Exploration(
        module=module,
        prepared=prepared,
        imported=imported,
        target=tgt,
        lam=lam,
        saturation=report,
        data=data,
        costs=costs,
        best=best,
        baseline=base,
        pareto=front,
        timings=timings,
        warnings=warnings,
        input=input_info,
        top=top,
        measured_nodes=len(measured.used) if measured is not None else 0,
        measured_source=str(measured.path) if measured is not None and measured.path else None,
        sizes=sizes,
        baseline_membership=membership,
        stage_seconds=stage_seconds,
        stops=stops,
        compile_check=checked,
        iree_own=own_plan,
        iree_own_error=own_error,
        iree_own_membership=(held[0][1], held[0][2]) if held and held[0][0] is own_plan else None,
    )


def price_iree_own(
    source: str | Path | Module,
    module: Module,
    iree_plan_text: str | None,
    target: Target,
    function: str | None = None,
    assume: Mapping[str, Assumption] | Sequence[str] | None = None,
    measured: MeasuredTimes | None = None,
) -> tuple[IreePlan | None, str | None]:
    """IREE's own plan for an exploration's input, priced (``iree_plan``), or why it could not be had (the
    error's first line: IREE rejects the input, e.g. ops 3.13 no longer has). IREE's plan is read from its
    start-state run (``iree_plan_text``, ``InputInfo.iree_plan``), else from the user's file (``source`` a
    path), else from ``module`` (the program explored) printed."""
    own_source = iree_plan_text or _source_path(source) or print_mlir(module)
    try:
        return iree_plan(own_source, target, function, assume, measured), None
    except Exception as e:  # IREE rejects the input: the caller says so and keeps the modelled plan
        return None, str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__


def _own_priced(
    owning: Future[tuple[IreePlan | None, str | None]], price: Callable[[], tuple[IreePlan | None, str | None]]
) -> tuple[IreePlan | None, str | None]:
    """IREE's own plan as priced beside ours; priced here instead when a child process could not hand it
    back (``price_iree_own`` answers IREE's and the model's errors itself: what reaches here is the
    child's, e.g. a plan that does not pickle)."""
    try:
        return owning.result()
    except Exception:
        return price()


def _extracted[B, E](
    extract: Callable[[Callable[[ExtractionResult], None]], ExtractionResult],
    meanwhile: Callable[[], B],
    ahead: Callable[[ExtractionResult, B | None], E],
) -> tuple[ExtractionResult, B, E | None]:
    """``extract`` (which calls its argument with the plan HiGHS starts from, when HiGHS starts) on a
    thread, and ``meanwhile()`` once HiGHS solves: HiGHS releases the GIL, and before it starts the two
    would take turns on it and HiGHS would start later. Then, while HiGHS still solves, ``ahead`` on the
    plan it started from (greedy's, often the answer: HiGHS only proves it optimal), given what
    ``meanwhile`` returned; None when HiGHS was not needed or had finished."""
    solving = threading.Event()
    starts: list[ExtractionResult] = []

    def started(start: ExtractionResult) -> None:
        starts.append(start)
        solving.set()

    def run() -> ExtractionResult:
        try:
            return extract(started)
        finally:
            solving.set()

    extracting = in_background(run, "extraction")
    solving.wait()
    got = meanwhile()
    early = None
    if starts and not extracting.done():
        try:
            early = ahead(starts[0], got)
        except Exception:  # only a head start: the chosen plan is made and checked after, as without it
            early = None
    return extracting.result(), got, early


class _Emitted(NamedTuple):
    """A candidate emitted and not yet priced (``_Candidates.emit``): what the compile check reads of a
    plan (``compile_check._Plan``), and what pricing it needs."""

    label: str
    choice: dict[str, str]
    mlir: Module
    dispatch_order: tuple[tuple[str, str], ...]
    spelled: dict[str, str]
    result: ExtractionResult | None
    seconds: float


class _Candidates:
    """The candidates of one exploration's e-graph: a choice spelled at the encoding level (report and emit
    there, ``normalize_choice``), priced (its plan graph at every size) and emitted; in one go (``make``),
    or emitted first and priced later (``emit``, then ``price``: the round ahead hands the emitted plan to
    IREE in between). A candidate that takes longer than a stage may is a stop (one pass: not cut)."""

    def __init__(
        self,
        data: EGraphData,
        imported: ImportedProgram,
        sizes: SizePlan,
        target: Target,
        lam: float,
        measured: MeasuredTimes | None,
        file: str,
        stops: list[StageStop],
        stage_seconds: float,
    ):
        self._data, self._imported, self._sizes, self._target = data, imported, sizes, target
        self._lam, self._measured, self._file = lam, measured, file
        self._stops, self._stage_seconds = stops, stage_seconds

    def make(self, label: str, choice: dict[str, str], result: ExtractionResult | None = None) -> Candidate:
        started = time.perf_counter()
        spelled = normalize_choice(self._data, choice, False)
        plan = self._plan(spelled)
        mlir, order = self._mlir(spelled)
        self._took(label, time.perf_counter() - started)
        return Candidate(label, choice, plan, mlir, result, order)

    def emit(self, label: str, choice: dict[str, str], result: ExtractionResult | None = None) -> _Emitted:
        started = time.perf_counter()
        spelled = normalize_choice(self._data, choice, False)
        mlir, order = self._mlir(spelled)
        return _Emitted(label, choice, mlir, order, spelled, result, time.perf_counter() - started)

    def price(self, e: _Emitted) -> Candidate:
        started = time.perf_counter()
        plan = self._plan(e.spelled)
        self._took(e.label, e.seconds + time.perf_counter() - started)
        return Candidate(e.label, e.choice, plan, e.mlir, e.result, e.dispatch_order)

    def _plan(self, spelled: dict[str, str]) -> Plan:
        def built(g: EGraphData) -> Plan:
            return build_plan(g, spelled, self._imported, self._target, self._lam, self._measured)

        return plan_at_sizes(self._data, self._imported, self._sizes, built)

    def _mlir(self, spelled: dict[str, str]) -> tuple[Module, tuple[tuple[str, str], ...]]:
        emitter = Emitter(self._imported, shapes=class_shapes(self._data))
        try:
            mlir = emitter.emit(build_term(self._data, spelled))
        except UnknownSize as e:
            raise UnsupportedInput(f"{e.loc or self._file}: error: {e}") from None
        return mlir, tuple(emitter.dispatch_order)

    def _took(self, label: str, took: float) -> None:
        if took > self._stage_seconds:
            self._stops.append(
                StageStop("emission", self._stage_seconds, f"{label}, emitted in {took:.1f} s (one pass: not cut)")
            )


def _checked_ahead(
    data: EGraphData,
    function: str,
    target: Target,
    candidates: _Candidates,
    enabled: bool | None,
    idle: Callable[[], None],
    start: ExtractionResult,
    baseline: _ModelledBaseline | None,
) -> tuple[Candidate, Ahead | None]:
    """The candidate of the plan HiGHS starts from, and the compile check's first round on it
    (``iree.compile_check.start_ahead``, beside ``baseline``'s dispatches): the plan is emitted, its new
    dispatches handed to IREE, and it and the baseline are priced, then ``idle()`` runs, while IREE
    compiles them."""
    emitted = candidates.emit("best", start.choice, start)
    base = baseline.emitted if baseline is not None else None
    finish = start_ahead(data, function, target, emitted, base, enabled=enabled)
    early = candidates.price(emitted)
    if baseline is not None:
        baseline.result()
    if finish is None:
        return early, None
    idle()
    return early, finish()


def _taken(
    early: tuple[Candidate, Ahead | None] | None,
    result: ExtractionResult,
    candidate: Callable[[str, dict[str, str], ExtractionResult], Candidate],
) -> tuple[Candidate, Ahead | None]:
    """The chosen plan's candidate: the one made ahead from the plan HiGHS started from when HiGHS chose
    that plan, else made now; and the compile check's round done ahead."""
    if early is None:
        return candidate("best", result.choice, result), None
    made, ahead = early
    if made.choice == result.choice:
        return dataclasses.replace(made, extraction=result), ahead
    return candidate("best", result.choice, result), ahead


class _ModelledBaseline:
    """IREE's plan as modelled in the e-graph (``plan.baseline``), made in two steps: emitted (what the
    compile check's round ahead reads of it, ``emitted``), then priced with its membership (``result``),
    which the round ahead does while IREE compiles."""

    LABEL = "baseline (IREE 3.13 passes, modelled)"

    def __init__(self, data: EGraphData, imported: ImportedProgram, candidates: _Candidates, wanted: bool):
        self._data, self._imported, self._candidates = data, imported, candidates
        self._done: tuple[Candidate | None, Membership | None, list[str]] | None = None
        self.emitted: _Emitted | None = None
        if not wanted:
            self._done = (None, None, [])
            return
        try:
            choice = iree_baseline_choice(data)
        except BaselineError as e:
            self._done = (None, None, [f"warning: no modelled IREE baseline: {e}"])
            return
        self.emitted = candidates.emit(self.LABEL, choice)

    def result(self) -> tuple[Candidate | None, Membership | None, list[str]]:
        """The baseline's candidate and its membership, or a warning why there is none (nothing when not
        wanted); priced on the first call."""
        if self._done is None:
            base = self._candidates.price(cast(_Emitted, self.emitted))
            # a choice of this e-graph, so in it; legality may refuse a node of it
            self._done = (base, choice_membership(self._data, base.choice, self._imported), [])
        return self._done


def _kept_warnings(
    data: EGraphData, choice: Mapping[str, str], report: SaturationReport, conflicts: Sequence[tuple[str, ...]]
) -> list[str]:
    """Warnings for a plan that keeps what legality refuses, or combinations IREE's codegen rejects,
    because no alternative is in the e-graph."""
    out = []
    if kept := sorted({data.nodes[n].op for n in data.kept_refused if choice.get(data.nodes[n].eclass) == n}):
        why = (
            f"saturation stopped early ({report.stop_reason.partition(' (')[0]}) before an alternative was derived"
            if not report.saturated
            else "the selected rule families derive no alternative"
        )
        out.append(
            f"warning: the plan keeps forms legality refuses ({', '.join(kept)} with a pack fused into its "
            f"dispatch, IREE #21100): {why}"
        )
    if bad := violated(conflicts, choice):
        out.append(
            f"warning: the plan keeps {len(bad)} combination(s) of nodes IREE's codegen rejects (cost/conflicts.py: "
            "a set_encoding after a plain generic of an unset_encoding in one dispatch, over the stack limit, or "
            "of a plain contraction's result, over the vector limit): "
            "the selected rule families derive no alternative"
        )
    return out


def _frontier(
    swept: Sequence[ExtractionResult], candidate: Callable[[str, dict[str, str], ExtractionResult], Candidate]
) -> list[Candidate]:
    """The non-dominated plans of a λ sweep (one result per ``PARETO_LAMBDAS`` weight), each built once."""
    seen: dict[tuple, Candidate] = {}
    built: dict[frozenset, Candidate] = {}  # a plan several weights choose is built once
    for weight, r in zip(PARETO_LAMBDAS, swept, strict=True):
        chosen = frozenset(r.choice.items())
        if chosen in built:
            continue
        c = built[chosen] = candidate(f"λ={weight:g}", r.choice, r)
        key = (round(c.metrics.run_seconds, 15), c.metrics.memory_bytes)
        seen.setdefault(key, c)
    return _non_dominated(list(seen.values()))


def _non_dominated(cands: list[Candidate]) -> list[Candidate]:
    def dominated(a: Candidate, b: Candidate) -> bool:
        ma, mb = a.metrics, b.metrics
        return (
            mb.run_seconds <= ma.run_seconds
            and mb.memory_bytes <= ma.memory_bytes
            and (mb.run_seconds < ma.run_seconds or mb.memory_bytes < ma.memory_bytes)
        )

    front = [a for a in cands if not any(dominated(a, b) for b in cands if b is not a)]
    return sorted(front, key=lambda c: (c.metrics.run_seconds, c.metrics.memory_bytes))


def iree_plan_membership(
    result: Exploration, plan: IreePlan, normalize: frozenset[str] = NORMALIZATIONS
) -> Membership | None:
    """Whether IREE's own plan is one of the plans of ``result``'s e-graph (``egraph.membership``);
    None when the plan was not read. Taken from ``result.iree_own_membership`` when explore found it out
    already for this plan."""
    if plan.explored is None:
        return None
    if result.iree_own_membership is not None and plan is result.iree_own and normalize == NORMALIZATIONS:
        answer, stop = result.iree_own_membership
    else:
        answer, stop = _membership(result.data, result.imported, plan.explored, result.stage_seconds, normalize)
    if stop is not None:
        result.stops.append(stop)
    return answer


def _membership(
    data: EGraphData,
    imported: ImportedProgram,
    own: Exploration,
    stage_seconds: float,
    normalize: frozenset[str] = NORMALIZATIONS,
) -> tuple[Membership, StageStop | None]:
    """``iree_plan_membership``'s test of IREE's plan explored as ``own``, and the stop it reached."""
    clock = Deadline(stage_seconds)
    answer = plan_membership(data, imported, own.data, own.best.choice, own.imported, normalize, clock)
    stop = clock.stop("membership", "no answer (the report says not decided)") if answer.undecided else None
    return answer, stop


def _own_membership_meanwhile(
    data: EGraphData,
    imported: ImportedProgram,
    stage_seconds: float,
    owning: Future[tuple[IreePlan | None, str | None]] | None,
    held: list[tuple[IreePlan, Membership, StageStop | None]],
) -> None:
    """IREE's own plan's membership into ``held``, if the plan is priced already: the round ahead calls
    this while it waits for IREE's compiles, which would otherwise leave this thread idle."""
    if owning is None or held or not owning.done():
        return
    try:
        plan, _ = owning.result()
    except Exception:  # priced again in this process later (``_own_priced``), and tested then
        return
    if plan is not None and plan.explored is not None:
        held.append((plan, *_membership(data, imported, plan.explored, stage_seconds)))


def _naming_iree_plan(warning: str) -> str:
    """``warning: msg`` about IREE's plan as ``warning: in IREE's own plan (...): msg``."""
    return re.sub(r"^(\w+: )?", rf"\g<1>in {IREE_PLAN}: ", warning, count=1)


def _for_iree(source: str | os.PathLike[str], text: str) -> str | os.PathLike[str]:
    """``source`` as IREE can read it: as written, or (a retired op, an elided blob) as we read it."""
    if not may_need_respelling(text):
        return source
    try:
        module = parse_mlir(text, str(source) if isinstance(source, os.PathLike) else "<string>")
    except MLIRSyntaxError:
        return source  # IREE says what is wrong with it
    return iree_input_text(module) or source


def for_iree(source: str | os.PathLike[str]) -> str | os.PathLike[str]:
    """``source`` (MLIR text, or a path) as ``prepare_input`` and ``iree_plan`` hand it to IREE, for
    commands that compile the input with IREE themselves (``tune``, ``bench``: IREE's own plan): as
    written, or, when IREE cannot read it so (a retired op, an elided blob), as we read it
    (``mlir.retired.iree_input_text``). A torch export is IREE's to read (and never read whole here)."""
    path = Path(source) if isinstance(source, os.PathLike) else _as_path(source)
    if path is None:
        return _for_iree(source, str(source))
    if not path.is_file() or file_form(path) == "torch":
        return source
    return _for_iree(path, path.read_text())


def iree_plan(
    module_text_or_path: str | os.PathLike[str],
    target: str | Target,
    function: str | None = None,
    assume: Mapping[str, Assumption] | Sequence[str] | None = None,
    measured: MeasuredTimes | None = None,
) -> IreePlan:
    """IREE's own plan for a linalg-level program (text or path), costed by our model for ``target``
    (a dynamic program at the sizes ``assume`` gives, as ``explore`` costs ours; with the measured times
    ``measured`` holds, as ``explore`` prices ours with them).

    Input already in the post-dispatch-creation form (``flow.dispatch.workgroups`` present) is taken as
    IREE's plan as it is, without running IREE again.
    """
    tgt = load_target(target) if isinstance(target, str) else target
    source: str | os.PathLike[str] = module_text_or_path
    if isinstance(source, os.PathLike) or ("\n" not in str(source) and Path(str(source)).is_file()):
        text_in = Path(source).read_text()
        source = Path(source)
    else:
        text_in = str(source)
    text = text_in if "flow.dispatch.workgroups" in text_in else dispatch_creation_text(_for_iree(source, text_in), tgt)
    own = parse_mlir(text, f"<{IREE_PLAN}>")  # once: a model's plan is megabytes
    dispatches, encodes, slices, n_globals = count_printed(own)
    plan = IreePlan(tgt.name, text, dispatches, encodes, slices, n_globals)
    try:
        own.warnings = iree_output_warnings(own, IREE_PLAN)
        result = explore(
            own, tgt, families=(), baseline=False, function=function, assume=assume, compile_check=False,
            measured=measured,
        )  # fmt: skip
    except (ValueError, KeyError) as e:  # the model rejects a form IREE compiled (e.g. a fused pack it calls illegal)
        plan.error = str(e.args[0] if e.args else e)
        return plan
    plan.candidate = result.best
    plan.explored = result
    plan.warnings = [w if IREE_PLAN in w else _naming_iree_plan(w) for w in result.warnings]
    if not plan.dispatch_count_sane:
        plan.warnings.append(
            f"warning: the model counts {plan.metrics.dispatches} dispatches in {IREE_PLAN}, IREE printed "
            f"{dispatches} workgroups + {encodes} run-time encodes + {slices} run-time slices"
        )
    return plan
