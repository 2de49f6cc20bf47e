"""The egglog e-graph of one imported function: build it, measure it, serialize it.

Uses egglog's low-level bindings and sends text (one program per import): egglog 14 parses a whole
program at once without the memory blow-up of 13.x (docs/egglog.md §1.4-1.5).

Declaring the schema and the rule files costs more than importing a small program, and it is the same
for every program with the same rules. So a process keeps declared e-graphs (bases) in a pool: a
``ProgramGraph`` takes one, ``push``-es, adds its program, and ``release`` pops back to the declared
state and returns the base. A pop restores the e-graph's tables and e-class ids, but not egglog's
interning of primitive values (strings, vectors, large integers), so ``serialized`` renames primitive
leaves by their content: the JSON is the same whatever the process explored before (docs/testing.md).
"""

from __future__ import annotations

import contextlib
import json
import threading
from collections.abc import Iterator, Sequence
from dataclasses import dataclass

from egglog import bindings

from egg_dispatch.egraph.data import gc_paused
from egg_dispatch.egraph.imported import ImportedProgram
from egg_dispatch.egraph.terms import SCHEMA

__all__ = ["EGraphSize", "ProgramGraph", "canonical_primitives", "drop_bases", "fresh_bases"]

POOL_KEYS = 8
"""Distinct rule texts whose declared bases the pool keeps (most recently used first)."""
POOL_PER_KEY = 2
"""Idle bases kept per rule text: enough for the graphs a caller holds at once (tests compare two)."""
POOL_USES = 16
"""Programs a base carries before it is dropped: egglog keeps every run's report across a pop, so a
base's push and pop grow slower with each program it has carried (docs/testing.md)."""

_pool: dict[str, list[tuple[bindings.EGraph, int]]] = {}
"""Rule text -> idle bases, each with the number of programs it has carried."""
_pool_lock = threading.Lock()
_reuse = True


def drop_bases() -> None:
    """Forget every idle base: the next graph declares its own, and then reuses that one."""
    with _pool_lock:
        _pool.clear()


@contextlib.contextmanager
def fresh_bases() -> Iterator[None]:
    """Within, every graph declares a base of its own and drops it (the pool is set aside, not
    emptied): the reference the pool is tested and benchmarked against."""
    global _reuse
    with _pool_lock:
        saved, _reuse = _reuse, False
    try:
        yield
    finally:
        with _pool_lock:
            _reuse = saved


def _declared(extra: str) -> tuple[bindings.EGraph, int]:
    """A base with the schema and ``extra`` declared, and the programs it has carried: from the pool,
    or built."""
    with _pool_lock:
        idle = _pool.get(extra) if _reuse else None
        if idle:
            return idle.pop()
    egraph = bindings.EGraph()
    egraph.parse_and_run_program(SCHEMA)
    if extra:
        egraph.parse_and_run_program(extra)
    return egraph, 0


def _return(extra: str, egraph: bindings.EGraph, uses: int) -> None:
    with _pool_lock:
        if not _reuse or uses >= POOL_USES:
            return
        idle = _pool.pop(extra, [])
        if len(idle) < POOL_PER_KEY:
            idle.append((egraph, uses))
        _pool[extra] = idle  # most recently used last
        while len(_pool) > POOL_KEYS:
            del _pool[next(iter(_pool))]


@dataclass(frozen=True)
class EGraphSize:
    enodes: int
    """Rows of every constructor and function table: the practical e-node count (docs/egglog.md §1.3)."""
    eclasses: int
    by_function: tuple[tuple[str, int], ...]


class ProgramGraph:
    """An e-graph holding the schema, the rules ``extra`` declares and one imported function (its roots
    are ``$root``). ``release`` hands the declared base back to the pool; a graph never released keeps
    it, which is always safe."""

    def __init__(self, imported: ImportedProgram, extra: str = ""):
        self.imported = imported
        self._extra = extra
        egraph, self._uses = _declared(extra)
        self.egraph: bindings.EGraph | None = egraph
        self._depth = 0
        self._handoff: dict | None = None
        """What ``size`` serialized, handed to the next ``serialized`` (once) unless a command ran since."""
        self.push()
        self.run(imported.text())

    def run(self, program: str) -> Sequence[object]:
        if self.egraph is None:
            raise RuntimeError("this e-graph was released")
        self._handoff = None
        return self.egraph.parse_and_run_program(program)

    def push(self) -> None:
        """Snapshot the e-graph (egglog's ``push``); ``pop`` returns to it."""
        self.run("(push)")
        self._depth += 1

    def pop(self) -> None:
        if self._depth <= 1:
            raise RuntimeError("pop without a matching push")
        self.run("(pop)")
        self._depth -= 1

    def release(self) -> None:
        """Pop back to the declared base and return it to the pool; the graph is unusable after."""
        if self.egraph is None:
            return
        egraph, self.egraph = self.egraph, None
        self._handoff = None
        egraph.parse_and_run_program("(pop)\n" * self._depth)
        self._depth = 0
        _return(self._extra, egraph, self._uses + 1)

    def _print_size(self) -> list[tuple[str, int]]:
        """Rows per function table, as egglog's ``(print-size)`` gives them."""
        out = self.run("(print-size)")[-1]
        assert isinstance(out, bindings.PrintAllFunctionsSize), out
        return out.sizes

    def serialized(self) -> dict:
        """egraph-serialize JSON, with primitive leaves named by content (``canonical_primitives``):
        the same for the same program in any process, after any other program.

        ``saturate`` ends with ``size``, which serializes to count e-classes, right before ``explore``
        asks for the data: the first call after ``size`` (with no command run between) returns what
        ``size`` read, a dict no one else holds, instead of egglog's JSON written, parsed and renamed again."""
        if self.egraph is None:
            raise RuntimeError("this e-graph was released")
        data, self._handoff = self._handoff, None
        if data is not None:
            return data
        with gc_paused():  # a model's e-graph is a few hundred thousand dicts and lists, none garbage
            return canonical_primitives(json.loads(self.egraph.serialize([]).to_json()))

    def enodes(self) -> int:
        """E-node rows only (cheap: no serialization); what the saturation budget checks."""
        return sum(n for _, n in self._print_size())

    def size(self) -> EGraphSize:
        sizes = tuple(sorted(self._print_size()))
        data = self.serialized()
        classes = {n["eclass"] for n in data["nodes"].values()}
        self._handoff = data  # read only here: the next ``serialized`` may hand it on
        return EGraphSize(sum(n for _, n in sizes), len(classes), sizes)


def canonical_primitives(data: dict) -> dict:
    """Rename primitive nodes (``primitive-String-7``) and their e-classes (``String-7``) by content.

    egglog numbers a primitive by where it sits in its interning tables, which depends on every value
    the process interned before. Here each sort's primitives are numbered in the order of their content
    (the literal, then the children's new names), so the names depend on the e-graph alone.
    Function nodes and their e-classes are untouched.
    """
    nodes: dict[str, dict] = data["nodes"]
    class_data: dict[str, dict] = data.get("class_data", {})
    prims = {nid: n for nid, n in nodes.items() if nid.startswith("primitive-")}
    if not prims:
        return data
    key: dict[str, tuple] = {}

    def content(nid: str) -> tuple:
        if nid not in key:
            n = prims[nid]
            key[nid] = (n["op"], tuple(content(c) if c in prims else (c,) for c in n["children"]))
        return key[nid]

    by_sort: dict[str, list[str]] = {}
    for nid, n in prims.items():
        sort = class_data.get(n["eclass"], {}).get("type") or n["eclass"].rsplit("-", 1)[0]
        by_sort.setdefault(sort, []).append(nid)
    node_name: dict[str, str] = {}
    class_name: dict[str, str] = {}
    for sort, ids in by_sort.items():
        for i, nid in enumerate(sorted(ids, key=content)):
            node_name[nid] = f"primitive-{sort}-{i}"
            class_name[prims[nid]["eclass"]] = f"{sort}-{i}"

    def cls(c: str) -> str:
        return class_name.get(c, c)

    # A node whose id, class and children keep their names is shared with ``data`` as it is (most
    # of a model's nodes: copying each one cost more than the renaming).
    out_nodes = {}
    for nid, n in nodes.items():
        kids = n["children"]
        if nid in node_name or n["eclass"] in class_name or any(c in node_name for c in kids):
            m = dict(n)
            m["eclass"] = cls(n["eclass"])
            m["children"] = [node_name.get(c, c) for c in kids]
            n = m
        out_nodes[node_name.get(nid, nid)] = n
    out = dict(data)
    out["nodes"] = out_nodes
    out["class_data"] = {cls(c): d for c, d in class_data.items()}
    if "root_eclasses" in data:
        out["root_eclasses"] = [cls(c) for c in data["root_eclasses"]]
    return out
