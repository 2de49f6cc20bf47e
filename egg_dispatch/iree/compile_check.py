"""Every recommended plan compiles: the chosen plan's new dispatches compiled alone by IREE, rejections as conflicts.

The codegen-limit tables (``cost.conflicts``) predict some of IREE's rejections; this asks IREE itself.
After extraction, each dispatch of the chosen plan (a ``flow.dispatch.region``, or an encode outside any
dispatch) that IREE's own plan does not have -- the modelled baseline of the same e-graph, compared by the
text of the dispatch compiled alone -- is compiled on its own for the target: a module holding that one
dispatch, its operands as function arguments (scalar constants and ``tensor.empty`` cloned in, as IREE's
dispatch formation clones them), through ``iree-compile --compile-from=dispatch-creation
--compile-to=executable-targets`` (codegen included; LLVM's serialization, which IREE's limits never reach,
left out: it costs seconds per module). The dispatches of one round go to one ``iree-compile`` with
``--split-input-file``, each a chunk, and IREE's diagnostics name the chunk they belong to.

A rejected dispatch becomes a *conflict* (``CostTable.conflicts``): the set of e-nodes the plan chose to
make it -- its ``Dispatch`` (or encode) node and every node computed inside it, down to the stored values
it reads -- which no plan may choose all of again. The extractor runs again, and so on until every new
dispatch compiles, or the rounds or seconds of the budget run out, or the extractor keeps a rejected
dispatch (no plan without it: the e-graph may hold none), which ``CompileCheck`` says.

The first round may be done ahead (``start_ahead``): explore runs it on the plan HiGHS starts from while
HiGHS solves, and when HiGHS chooses that plan (it often only proves greedy's plan optimal) the check
takes that round's answers, counted as its own.

Results are cached by the dispatch's text (which holds its shapes, encodings and the target's device),
the target and IREE's version, one small file per key under ``<user cache dir>/egg-dispatch/compile-check``
(``EGG_DISPATCH_CACHE_DIR`` overrides the directory, ``target.host.cache_dir``): a model's repeated
layers compile once, and a second run compiles nothing. The conflicts a check found are remembered too,
per e-graph (a digest of its nodes), target and IREE version, under ``compile-check/known`` in the user's
cache directory: a later exploration of the same program imposes them before its first extraction
(``known_rejections``), so it needs no re-extraction for what IREE is known to reject.
"""

from __future__ import annotations

import functools
import hashlib
import itertools
import json
import math
import os
import re
import time
from collections.abc import Callable, Sequence
from concurrent.futures import Future
from dataclasses import dataclass, field, replace
from importlib import metadata
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

from egg_dispatch.egraph.data import EGraphData
from egg_dispatch.egraph.terms import STORED
from egg_dispatch.mlir.ir import (
    Block,
    FunctionType,
    Module,
    Operation,
    Region,
    StrAttr,
    TensorType,
    TypeAttr,
    Value,
)
from egg_dispatch.target.host import cache_dir, usable_cpus
from egg_dispatch.target.profile import Target
from egg_dispatch.util.background import in_background
from egg_dispatch.util.deadline import Deadline
from egg_dispatch.util.files import atomic_write

if TYPE_CHECKING:
    from egg_dispatch.cost import CostTable
    from egg_dispatch.extract.common import ExtractionResult


class _Plan(Protocol):
    """What this module reads of a chosen plan (``result.exploration.Candidate``, of a later stage)."""

    @property
    def choice(self) -> dict[str, str]: ...
    @property
    def mlir(self) -> Module: ...
    @property
    def dispatch_order(self) -> tuple[tuple[str, str], ...]: ...


__all__ = [
    "KNOWN_FOLDER",
    "MAX_ROUNDS",
    "MAX_SPELLINGS",
    "Ahead",
    "CompileCheck",
    "Known",
    "Rejection",
    "Unit",
    "alone_structure",
    "compile_checked",
    "compile_units",
    "dispatch_alone",
    "emitted_alone",
    "known_rejections",
    "plan_units",
    "start_ahead",
]

MIN_PER_PROCESS = 4
"""New dispatches per ``iree-compile`` run before ``compile_units`` splits a round over more runs, one
per CPU: each chunk compiles apart anyway, and a run starts in about a quarter second."""
MAX_ROUNDS = 8
"""Extractions after the first that the check may ask for before it stops (each round excludes what IREE
rejected in the plan before)."""

MAX_SPELLINGS = 64
"""Conflicts one rejected dispatch may become (one per spelling of its encodes at the two levels)."""

TIMED_OUT = "not compiled in time"
"""How an answer begins when ``iree-compile`` ran out of time (counted as rejected, never cached)."""

CACHE_FOLDER = "compile-check"
"""The folder of the cache under the user's cache directory."""

KNOWN_FOLDER = "known"
"""The folder, under ``CACHE_FOLDER`` in the user's cache directory only, of the conflicts each e-graph's
checks found (``known_rejections``)."""

_ENCODES = ("flow.tensor.encode", "iree_encoding.set_encoding", "iree_encoding.unset_encoding")
_CLONED = ("arith.constant", "tensor.empty", "arith.index_cast", "arith.muli", "arith.addi", "arith.divui")
"""Ops a dispatch's captured value is cloned with rather than read as an argument (scalar constants,
``tensor.empty``, index arithmetic on them): IREE's dispatch formation clones them in too."""


class NoAnswer(RuntimeError):
    """``iree-compile`` ended without a diagnostic (not found, or crashed): the plan is not checked."""


@dataclass(frozen=True)
class Unit:
    """One dispatch of a plan, compiled alone."""

    label: str
    """``dispatch N {ops}`` or ``encode N <type>``: how the report names it."""
    nodes: tuple[str, ...]
    """The e-nodes the plan chose to make it (the conflict when IREE rejects it)."""
    text: str
    """The module holding only this dispatch, in IREE's post-dispatch-creation form ("" when it has none)."""
    skipped: str = ""
    """Why the dispatch cannot be compiled alone (a scalar result, which IREE's ABI does not return)."""


@dataclass(frozen=True)
class Rejection:
    """A dispatch IREE rejected, and the conflict it became."""

    label: str
    error: str
    """IREE's first error line."""
    nodes: tuple[str, ...]


@dataclass
class CompileCheck:
    """What the compile check of the chosen plan did (``Exploration.compile_check``)."""

    status: str
    """``compiles`` (every new dispatch of the plan compiled), ``rejected`` (the plan keeps a dispatch IREE
    rejects: the budget ran out, or no plan avoids it), ``not checked`` (IREE not installed, the check
    turned off, or a plan the check cannot split into dispatches)."""
    reason: str = ""
    """Why not checked, or why the plan keeps a rejected dispatch."""
    checked: int = 0
    """Dispatches of the final plan compiled alone (or found in the cache)."""
    shared: int = 0
    """Dispatches of the final plan IREE's own plan has too (not compiled)."""
    skipped: list[str] = field(default_factory=list)
    """Dispatches of the final plan that cannot be compiled alone, and why (not checked)."""
    compiled: int = 0
    """Dispatches ``iree-compile`` compiled in this run (the others came from the cache)."""
    rounds: int = 0
    """Extractions the check asked for after the first."""
    seeded: int = 0
    """Conflicts an earlier check of this e-graph found, imposed before the first extraction (``Known``)."""
    excluded: list[Rejection] = field(default_factory=list)
    """Every dispatch IREE rejected, in the order found (each now a conflict)."""
    kept: list[Rejection] = field(default_factory=list)
    """Rejected dispatches the final plan still has."""
    seconds: float = 0.0

    @property
    def ok(self) -> bool:
        return self.status == "compiles"

    def summary(self) -> str:
        """One line for the text report."""
        if self.status == "not checked":
            return f"compile check: not checked ({self.reason})"
        new = f"{self.checked} new dispatch(es) compiled alone by iree-compile"
        new += f", {self.shared} also in IREE's plan as modelled, not compiled" if self.shared else ""
        new += f", {len(self.skipped)} not compilable alone, not checked" if self.skipped else ""
        if self.status == "compiles":
            head = f"compile check: the plan compiles ({new}"
        else:
            head = f"compile check: the plan keeps {len(self.kept)} dispatch(es) IREE rejects: {self.reason} ({new}"
        rounds = f"; {self.rounds} re-extraction(s)" if self.rounds else ""
        rounds += f"; {self.seeded} known rejection(s) avoided from the start" if self.seeded else ""
        return f"{head}{rounds})"

    def details(self) -> list[str]:
        """A line per excluded dispatch: what it was and IREE's error."""
        out = [f"  excluded: {r.label}: {r.error}" for r in self.excluded]
        out += [f"  not checked: {s}" for s in self.skipped]
        return out + [f"  kept: {r.label}: {r.error}" for r in self.kept]

    def to_json(self) -> dict[str, object]:
        def rej(r: Rejection) -> dict[str, object]:
            return {"dispatch": r.label, "error": r.error, "nodes": len(r.nodes)}

        return {
            "status": self.status,
            "reason": self.reason,
            "checked": self.checked,
            "shared_with_iree": self.shared,
            "not_checked": self.skipped,
            "compiled": self.compiled,
            "rounds": self.rounds,
            "seeded": self.seeded,
            "excluded": [rej(r) for r in self.excluded],
            "kept": [rej(r) for r in self.kept],
        }


# ------------------------------------------------------------------------------------ the dispatches


def plan_units(g: EGraphData, cand: _Plan, function: str, target: Target) -> list[Unit] | str:
    """Each dispatch and encode of ``cand``'s function, alone, with the e-nodes that make it (its encodings
    spelled physically when the plan's are, ``emit.iree.needs_materialization``); or why the plan cannot be
    split so (its ops and ``dispatch_order`` differ)."""
    from egg_dispatch.emit.iree.module import needs_materialization

    physical = needs_materialization(cand.mlir, target)  # as the plan is emitted: pack / mmt4d / unpack
    mismatch = "its dispatches could not be matched with the e-graph's classes"
    func = cand.mlir.function(function)
    ops = func.regions[0].entry.ops
    regions = [op for op in ops if op.name in ("flow.dispatch.region", "flow.dispatch.workgroups")]
    encodes = [op for op in ops if op.name in _ENCODES]
    out: list[Unit] = []
    emitted: dict[tuple, tuple[str, str]] = {}  # alone_structure -> (text, skipped): layers repeat
    n_dispatch = n_encode = 0
    for kind, c in cand.dispatch_order:
        node = g.nodes[cand.choice[c]]
        if kind == "encode" and node.op != "Dispatch" and _of_constant(g, cand.choice, node.id):
            continue  # an encode of a constant: hoisted into an initializer
        if kind == "encode":
            if n_encode >= len(encodes):
                return mismatch
            op = encodes[n_encode]
            n_encode += 1
            label = f"encode {n_encode} to {_type_text(op.results[0])}, encoded"
        elif node.op == "Dispatch":
            if n_dispatch >= len(regions):
                return mismatch
            op = regions[n_dispatch]
            n_dispatch += 1
            if op.name != "flow.dispatch.region":
                continue  # a dispatch IREE formed and the model does not see into: IREE's own
            label = f"dispatch {n_dispatch} {{{', '.join(_region_ops(op))}}}"
        else:
            continue  # a slice between dispatches: a copy
        key = alone_structure(op)
        if key not in emitted:
            emitted[key] = emitted_alone(op, function, target, physical)
        text, skipped = emitted[key]
        out.append(Unit(label, _dispatch_nodes(g, cand.choice, c), text, skipped))
    if n_dispatch != len(regions) or n_encode != len(encodes):
        return mismatch
    return out


def emitted_alone(op: Operation, function: str, target: Target, physical: bool) -> tuple[str, str]:
    """The text of ``op`` alone (``dispatch_alone``) in IREE's form, or "" and why it cannot be emitted."""
    from egg_dispatch.emit.iree.builder import EmitIreeError
    from egg_dispatch.emit.iree.module import emit_iree

    try:
        return emit_iree(dispatch_alone(op, function), target, materialize=physical), ""
    except EmitIreeError as e:
        return "", str(e)
    except (TypeError, ValueError, KeyError, AssertionError) as e:  # an emission our rewrites lack
        return "", f"cannot be emitted alone ({type(e).__name__}: {e})"


def alone_structure(op: Operation) -> tuple:
    """What ``dispatch_alone(op)`` is made of, with values numbered where they first appear instead of
    named: equal for two ops whose modules alone are equal but for SSA names (the layers of a model), so
    one emission serves both. Follows ``dispatch_alone``: a free value is an argument of its type, or (a
    ``_CLONED`` op's result) that op cloned in; then ``op`` itself, attributes and types included."""
    number: dict[Value, int] = {}

    def ref(v: Value) -> object:
        if v in number:
            return number[v]
        owner = v.owner
        if isinstance(owner, Operation) and owner.name in _CLONED and not owner.regions:
            if owner.name != "arith.constant" or not isinstance(v.type, TensorType):
                desc: object = ("clone", v.index, op_structure(owner))
                number[v] = len(number)
                return desc
        number[v] = len(number)
        return ("arg", v.type)

    def define(v: Value) -> object:
        number[v] = len(number)
        return v.type

    def op_structure(o: Operation) -> tuple:
        operands = tuple(ref(v) for v in o.operands)
        regions = tuple(
            tuple((tuple(define(a) for a in b.args), b.label is not None, tuple(op_structure(x) for x in b.ops))
                  for b in r.blocks)
            for r in o.regions
        )  # fmt: skip
        results = tuple(define(v) for v in o.results)
        return (o.name, operands, tuple(o.attributes.items()), results, regions, o.generic_form, o.opaque_text)

    free = tuple(ref(v) for v in _free_values(op))
    return (free, op_structure(op))


def _of_constant(g: EGraphData, choice: dict[str, str], nid: str) -> bool:
    """The encode ``nid`` reads a constant (through slices and reshapes): the plan computes it at load."""
    node = g.nodes[nid]
    for _ in range(16):
        kids = g.term_kids(node.id)
        if not kids or kids[0] not in choice:
            return False
        node = g.nodes[choice[kids[0]]]
        if node.op in STORED:
            return node.op in ("Const", "ConstEval")
    return False


def _type_text(v: Value) -> str:
    """``v``'s type without its encoding (the report's line would be a screen wide with it)."""
    from egg_dispatch.emit.iree.builder import type_text

    t = v.type
    return type_text(replace(t, encoding=None) if isinstance(t, TensorType) else t)


def _region_ops(op: Operation) -> list[str]:
    skip = ("flow.return", "arith.constant", "tensor.empty")
    return [o.name for o in op.regions[0].entry.ops if o.name not in skip]


def _dispatch_nodes(g: EGraphData, choice: dict[str, str], c: str) -> tuple[str, ...]:
    """The chosen node of class ``c`` and every chosen node computed under it, down to stored values
    (arguments, constants, other dispatches and globals: what the dispatch reads)."""
    out = [choice[c]]
    seen = {c}
    todo = list(g.term_kids(choice[c]))
    while todo:
        k = todo.pop()
        if k in seen or k not in choice:
            continue
        seen.add(k)
        node = g.nodes[choice[k]]
        if node.op in STORED:
            continue
        out.append(node.id)
        todo.extend(g.term_kids(node.id))
    return tuple(dict.fromkeys(out))


def dispatch_alone(op: Operation, function: str) -> Module:
    """A module whose function ``function`` runs only ``op`` (a top-level op of a plan's function): what it
    reads from outside as arguments, cheap definitions (``_CLONED``) cloned in, its results returned."""
    from egg_dispatch.start.clone import clone_op

    block = Block()
    mapping: dict[Value, Value] = {}
    args: list[Value] = []

    def provide(v: Value) -> None:
        if v in mapping:
            return
        owner = v.owner
        if isinstance(owner, Operation) and owner.name in _CLONED and not owner.regions:
            if owner.name != "arith.constant" or not isinstance(v.type, TensorType):
                for w in owner.operands:
                    provide(w)
                block.ops.append(clone_op(owner, mapping))
                return
        t = v.type
        if isinstance(t, TensorType) and t.encoding is not None:  # IREE's ABI takes no encoded tensor:
            arg = Value(f"arg{len(args)}", replace(t, encoding=None), block, len(args))  # encoded outside
            mapping[v] = _add(block, "iree_encoding.set_encoding", [arg], t)
        else:
            arg = mapping[v] = Value(f"arg{len(args)}", t, block, len(args))
        args.append(arg)

    for v in _free_values(op):
        provide(v)
    new = clone_op(op, mapping)
    block.ops.append(new)
    results = [
        _add(block, "iree_encoding.unset_encoding", [r], replace(r.type, encoding=None))
        if isinstance(r.type, TensorType) and r.type.encoding is not None
        else r
        for r in new.results
    ]
    block.ops.append(Operation("func.return", results))
    block.args = args
    ft = FunctionType(tuple(a.type for a in args), tuple(r.type for r in results))
    attrs = {"sym_name": StrAttr(function), "function_type": TypeAttr(ft)}
    return Module(ops=[Operation("func.func", attributes=attrs, regions=[Region([block])])], file="<dispatch>")


def _add(block: Block, name: str, operands: list[Value], t: TensorType) -> Value:
    op = Operation(name, operands)
    op.results = [Value(f"v{len(block.ops)}", t, op, 0)]
    block.ops.append(op)
    return op.results[0]


def _free_values(op: Operation) -> list[Value]:
    inner = {v for o in op.walk() for v in o.results}
    inner |= {a for o in op.walk() for r in o.regions for b in r.blocks for a in b.args}
    return list(dict.fromkeys(v for o in op.walk() for v in o.operands if v not in inner))


# ------------------------------------------------------------------------------------ compiling


@functools.cache
def iree_identity() -> str:
    """IREE's version (the compiler package's) and the ``iree-compile`` binary's size and time stamp."""
    from egg_dispatch.iree.tools import find_tool

    try:
        version = metadata.version("iree-base-compiler")
    except metadata.PackageNotFoundError:  # pragma: no cover - IREE installed some other way
        version = "unknown"
    tool = find_tool("iree-compile")
    stat = tool.stat() if tool is not None else None
    return f"{version}:{tool}:{stat.st_size if stat else 0}:{stat.st_mtime_ns if stat else 0}"


def _key(text: str, target: Target) -> str:
    material = "\0".join([text, target.name, iree_identity()]).encode()
    return hashlib.sha256(material).hexdigest()[:40]


def _cache_folders() -> list[Path]:
    """The user's cache, and the folder of kept ``iree-compile`` outputs when one is set
    (``EGG_DISPATCH_IREE_CACHE``: the test suite's, shared by its tests; an answer is a function of
    ``iree-compile``'s input and version, like the outputs kept there)."""
    from egg_dispatch.iree.tools import CACHE_ENV

    shared = os.environ.get(CACHE_ENV)
    return [cache_dir() / CACHE_FOLDER, *([Path(shared) / CACHE_FOLDER] if shared else [])]


def _cached(key: str) -> str | bool | None:
    """The cached answer for ``key``: None (compiles), IREE's error line, or False (not cached)."""
    for folder in _cache_folders():
        try:
            data = json.loads((folder / f"{key}.json").read_text())
        except (OSError, ValueError):
            continue
        if isinstance(data, dict) and "error" in data:
            return data["error"] if isinstance(data["error"], str) else None
    return False


def _store(key: str, error: str | None) -> None:
    for folder in _cache_folders():
        try:
            folder.mkdir(parents=True, exist_ok=True)
            with atomic_write(folder / f"{key}.json") as f:  # a reader never sees half a file
                f.write(json.dumps({"error": error}))
        except OSError:  # a read-only cache directory: the answer is only not kept
            pass


_SPLIT = re.compile(r"^within split at .*?:(\d+) offset :\d+:\d+: error: (.*)$")
_LOCATION = re.compile(r"^\S*:\d+:\d+: (?=error: )")


def compile_units(texts: Sequence[str], target: Target) -> tuple[list[str | None], int]:
    """(per text: None when IREE compiles it alone for ``target``, else IREE's first error line; how many
    were compiled, not found in the cache). Uncached texts go to one ``iree-compile --split-input-file``;
    a run that fails without naming its chunks (a crash) is repeated text by text. With
    ``MIN_PER_PROCESS`` texts or more per CPU, the texts are split over one run per CPU, side by side."""
    key_of = {t: _key(t, target) for t in dict.fromkeys(texts)}  # a model's layers repeat their texts
    keys = [key_of[t] for t in texts]
    answers: dict[str, str | None] = {}
    for k in key_of.values():
        hit = _cached(k)
        if hit is not False:
            answers[k] = hit if isinstance(hit, str) else None
    todo = list(dict.fromkeys((k, t) for k, t in zip(keys, texts, strict=True) if k not in answers))
    if todo:
        pending = [t for _, t in todo]
        parts = min(usable_cpus(), len(pending) // MIN_PER_PROCESS) or 1
        size = -(-len(pending) // parts)  # ceil: the first parts take one more
        chunks = [pending[i : i + size] for i in range(0, len(pending), size)]
        others = [in_background(functools.partial(_compile_part, c, target), "compile check") for c in chunks[1:]]
        errors = [*_compile_part(chunks[0], target), *(e for o in others for e in o.result())]
        for (k, _), err in zip(todo, errors, strict=True):
            answers[k] = err
            if err is None or not err.startswith(TIMED_OUT):  # a slow machine's answer is not kept
                _store(k, err)
    return [answers[k] for k in keys], len(todo)


def _flags(target: Target, extra: Sequence[str]) -> dict[str, object]:
    from egg_dispatch.iree.dispatch_creation import iree_compile_flags

    _, cpu, others = iree_compile_flags(target)
    return {
        "data_tiling": False,
        "target_cpu": cpu,
        "extra_flags": [*others, *extra, "--compile-to=executable-targets"],
        "compile_from": "dispatch-creation",
    }


def _compile_one(text: str, target: Target, first_error_line: Callable[[str], str]) -> str | None:
    from egg_dispatch.iree.tools import IreeError, compile_module

    try:
        compile_module(text, **_flags(target, ()))  # type: ignore[arg-type]
    except IreeError as e:
        if not e.stderr and "timed out" in str(e):
            return f"{TIMED_OUT} ({str(e).splitlines()[0]})"
        if not e.stderr.strip():  # no diagnostic: IREE missing or crashed, not a rejection of the dispatch
            raise NoAnswer(str(e).splitlines()[0]) from None
        return _LOCATION.sub("", first_error_line(e.stderr))
    return None


def _compile_part(texts: Sequence[str], target: Target) -> list[str | None]:
    """``compile_units``' answers for ``texts``: one ``iree-compile --split-input-file``, or text by text
    when that run fails without naming its chunks."""
    from egg_dispatch.iree.dispatch_creation import first_error_line

    errors = _compile_split(texts, target)
    if errors is None:
        errors = [_compile_one(t, target, first_error_line) for t in texts]
    return errors


def _compile_split(texts: Sequence[str], target: Target) -> list[str | None] | None:
    """Every text as a chunk of one ``iree-compile --split-input-file``: per text None or its first error
    line; None when the run failed without naming the chunks that failed."""
    from egg_dispatch.iree.tools import IreeError, compile_module

    starts: list[int] = []
    line = 1
    parts = []
    for i, t in enumerate(texts):
        starts.append(line)  # IREE names a chunk by its first line, the separator's after the first
        if i:
            parts.append("// -----\n")
            line += 1
        body = t if t.endswith("\n") else t + "\n"
        parts.append(body)
        line += body.count("\n")
    try:
        compile_module("".join(parts), **_flags(target, ("--split-input-file",)))  # type: ignore[arg-type]
    except IreeError as e:
        if not e.stderr and "timed out" in str(e):
            return [f"{TIMED_OUT} ({str(e).splitlines()[0]})"] * len(texts)
        found: dict[int, str] = {}
        for err_line in e.stderr.splitlines():
            m = _SPLIT.match(err_line.strip())
            if m is not None:
                found.setdefault(int(m[1]), f"error: {m[2]}")
        if not found or not set(found) <= set(starts):
            return None
        return [found.get(s) for s in starts]
    return [None] * len(texts)


# ------------------------------------------------------------------------------------ the loop


@dataclass(frozen=True)
class Ahead:
    """The check's first round, done on a plan before the extractor has the final answer (``start_ahead``):
    ``compile_checked`` takes it when its plan is the one chosen (and its ``shared`` texts in any case:
    they are the baseline's). Its compiles are counted as the check's own (``CompileCheck.compiled``), as
    if that round had run then."""

    choice: dict[str, str]
    shared: frozenset[str]
    round: _Round


@dataclass(frozen=True)
class _Round:
    """One round's dispatches (or why the plan cannot be split), IREE's answers for the new ones (or
    ``NoAnswer``), and how many of them were compiled (not found in the cache)."""

    units: list[Unit] | str
    errors: list[str | None] | NoAnswer
    compiled: int


def _round(g: EGraphData, cand: _Plan, function: str, target: Target, shared: frozenset[str]) -> _Round:
    """``cand``'s dispatches, and its new ones (not in ``shared``, not skipped) compiled."""
    return _answered(plan_units(g, cand, function, target), shared, target)


def _answered(
    units: list[Unit] | str,
    shared: frozenset[str],
    target: Target,
    compiling: Future[tuple[list[str | None], int]] | None = None,
) -> _Round:
    """The round of ``units``: their new ones compiled now, or the answers of ``compiling`` (the same
    compiles, started earlier)."""
    if isinstance(units, str):
        return _Round(units, [], 0)
    try:
        if compiling is None:
            errors, compiled = compile_units(_new_texts(units, shared), target)
        else:
            errors, compiled = compiling.result()
    except NoAnswer as e:
        return _Round(units, e, 0)
    return _Round(units, errors, compiled)


def start_ahead(
    g: EGraphData, function: str, target: Target, cand: _Plan, baseline: _Plan | None, *, enabled: bool | None = None
) -> Callable[[], Ahead] | None:
    """``compile_checked``'s first round on ``cand``, to overlap with the extraction that may still choose
    it, in two halves: this call splits the plans into dispatches and hands the new ones to IREE (on a
    thread); the call it returns waits for IREE's answers and gives the round (the caller's own work goes
    between the two). None when the check will not run. ``baseline`` is the one ``compile_checked`` will
    be given."""
    if _off(target, enabled) is not None:
        return None
    shared = frozenset(_shared_texts(g, baseline, function, target))
    units = plan_units(g, cand, function, target)
    compiling = None
    if not isinstance(units, str):
        texts = _new_texts(units, shared)
        compiling = in_background(lambda: compile_units(texts, target), "compile check ahead")
    return lambda: Ahead(dict(cand.choice), shared, _answered(units, shared, target, compiling))


def _off(target: Target, enabled: bool | None) -> str | None:
    """Why the check does not run (None: it does)."""
    from egg_dispatch.iree.tools import iree_available

    if enabled is False:
        return "turned off by --no-compile-check"
    if not iree_available():
        return "IREE is not installed"
    return _foreign(target)


def _new_units(units: Sequence[Unit], shared: frozenset[str]) -> list[Unit]:
    return [u for u in units if u.text not in shared and not u.skipped]


def _new_texts(units: Sequence[Unit], shared: frozenset[str]) -> list[str]:
    """The texts a round compiles: its new units' (``_new_units``), in order."""
    return [u.text for u in _new_units(units, shared)]


def compile_checked[Candidate: _Plan](
    g: EGraphData,
    costs: CostTable,
    function: str,
    target: Target,
    best: Candidate,
    extract: Callable[[], ExtractionResult],
    build: Callable[[ExtractionResult], Candidate],
    baseline: Candidate | None,
    seconds: float,
    rounds: int = MAX_ROUNDS,
    *,
    enabled: bool | None = None,
    progress: Callable[[str], None] | None = None,
    known: Known | None = None,
    ahead: Ahead | None = None,
) -> tuple[Candidate, CompileCheck]:
    """The chosen plan ``best``, re-extracted (``extract()``, which reads ``costs``; ``build`` makes the
    candidate) with a conflict for every new dispatch IREE rejects until every one compiles or ``rounds``
    / ``seconds`` end. ``enabled``: False turns the check off; None runs it when IREE is installed.
    ``known``: the conflicts imposed before ``best`` was extracted (``known_rejections``); the ones this
    check adds are remembered with them for the next exploration of this e-graph. ``ahead``: the first
    round done already (``start_ahead``), taken when its plan is ``best``."""
    if (off := _off(target, enabled)) is not None:
        return best, CompileCheck("not checked", reason=off)
    if progress is not None:
        progress("compiling the plan's new dispatches with IREE")
    started = time.perf_counter()
    clock = Deadline(seconds)
    check = CompileCheck("compiles", seeded=len(known.conflicts) if known is not None else 0)
    found: set[tuple[str, ...]] = set()  # the conflicts this check added
    shared = ahead.shared if ahead is not None else frozenset(_shared_texts(g, baseline, function, target))
    done = ahead.round if ahead is not None and ahead.choice == best.choice else None
    seen: set[str] = set()  # texts of the dispatches rejected so far
    cand = best
    while True:
        this, done = done or _round(g, cand, function, target, shared), None
        units, errors = this.units, this.errors
        if isinstance(units, str):
            check.status, check.reason = "not checked", units
            break
        if isinstance(errors, NoAnswer):
            check.status, check.reason = "not checked", f"iree-compile gave no answer: {errors}"
            break
        new = _new_units(units, shared)
        check.compiled += this.compiled
        check.checked, check.skipped = len(new), [f"{u.label}: {u.skipped}" for u in units if u.skipped]
        check.shared = len(units) - len(new) - len(check.skipped)
        rejected = [(u, err) for u, err in zip(new, errors, strict=True) if err is not None]
        bad = [Rejection(u.label, err, u.nodes) for u, err in rejected]
        for (u, _), r in zip(rejected, bad, strict=True):
            if u.text not in seen:  # a model's repeated layers: one dispatch text, several node sets
                seen.add(u.text)
                check.excluded.append(r)
        if not bad:
            check.status, check.kept = "compiles", []
            break
        check.status, check.kept = "rejected", bad
        added = {_ordered(c, baseline) for r in bad for c in _spellings(g, r.nodes)} - set(costs.conflicts)
        if not added:  # conflicts already: the extractor kept them (greedy found no plan without them)
            check.reason = "no plan of the e-graph avoids it"
            break
        if check.rounds >= rounds or clock.expired():
            check.reason = f"the check's budget ended ({check.rounds} re-extractions, {clock.seconds:g} s)"
            break
        costs.conflicts = tuple(sorted({*costs.conflicts, *added}))
        found |= added
        check.rounds += 1
        cand = build(extract())
    if found and known is not None:
        known.remember(found)
    check.seconds = time.perf_counter() - started
    return cand, check


@dataclass(frozen=True)
class Known:
    """The conflicts earlier checks of one e-graph found (IREE's rejections), and where they are kept."""

    path: Path
    conflicts: tuple[tuple[str, ...], ...] = ()

    def remember(self, found: set[tuple[str, ...]]) -> None:
        """Keep ``found`` with the conflicts already known (a read-only cache keeps nothing)."""
        merged = sorted({*self.conflicts, *found})
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            with atomic_write(self.path) as f:
                f.write(json.dumps({"conflicts": [list(c) for c in merged]}))
        except OSError:
            pass


def known_rejections(g: EGraphData, target: Target, enabled: bool | None = None) -> Known | None:
    """The conflicts earlier checks of this e-graph (the same nodes), target and IREE found, to impose
    before the first extraction; None when the check will not run (``enabled`` False, no IREE, a profile
    that is none of IREE's CPUs). Kept in the user's cache directory only (a suite's shared folder of
    ``iree-compile`` outputs would carry one test's fake rejections to another)."""
    from egg_dispatch.iree.tools import iree_available

    if enabled is False or not iree_available() or _foreign(target) is not None:
        return None
    digest = hashlib.sha256("\0".join([target.name, iree_identity(), g.root]).encode())
    for nid in sorted(g.nodes):
        n = g.nodes[nid]
        digest.update(f"{nid}\0{n.op}\0{n.eclass}\0{','.join(n.children)}\0{int(n.subsumed)}\n".encode())
    path = cache_dir() / CACHE_FOLDER / KNOWN_FOLDER / f"{digest.hexdigest()[:40]}.json"
    try:
        data = json.loads(path.read_text())
    except (OSError, ValueError):
        return Known(path)
    rows = data.get("conflicts", []) if isinstance(data, dict) else []
    ok = [tuple(c) for c in rows if isinstance(c, list) and c and all(isinstance(n, str) and n in g.nodes for n in c)]
    return Known(path, tuple(ok))


def _spellings(g: EGraphData, nodes: tuple[str, ...]) -> list[tuple[str, ...]]:
    """The conflicts that forbid the dispatch ``nodes`` make in every spelling of it: each node replaced by
    its twins at the other encoding level (``emit.choice.twins``), which emit the same dispatch. Beyond
    ``MAX_SPELLINGS`` the nodes with twins are left out (a coarser conflict: it forbids more plans)."""
    from egg_dispatch.emit.choice import twins

    options = [(n, *twins(g, n)) for n in nodes]
    if math.prod(len(o) for o in options) > MAX_SPELLINGS:
        kept = tuple(o[0] for o in options if len(o) == 1)
        return [kept] if kept else [nodes]
    return [tuple(combo) for combo in itertools.product(*options)]


def _foreign(target: Target) -> str | None:
    """Why IREE cannot compile plans for ``target`` as priced: a profile that is none of IREE's CPUs (a
    built-in one, or one calibrated from it: ``<name>-host``) has layouts IREE does not choose."""
    from egg_dispatch.emit.iree.device import IREE_CPUS

    if any(target.name == k or target.name.startswith(f"{k}-") for k in IREE_CPUS):
        return None
    return f"the profile {target.name} is none of IREE's CPUs ({', '.join(IREE_CPUS)}) nor calibrated from one"


def _ordered(nodes: tuple[str, ...], baseline: _Plan | None) -> tuple[str, ...]:
    """The conflict's nodes, those IREE's plan does not choose first (greedy's repair bans the first)."""
    ours = set(baseline.choice.values()) if baseline is not None else set()
    return tuple(sorted(nodes, key=lambda n: n in ours))


def _shared_texts(g: EGraphData, baseline: _Plan | None, function: str, target: Target) -> set[str]:
    if baseline is None:
        return set()
    units = plan_units(g, baseline, function, target)
    return {u.text for u in units if u.text} if not isinstance(units, str) else set()
