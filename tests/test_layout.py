"""The package layout: one subpackage per stage, imports flowing one way (``egg_dispatch.STAGES``).

Every import in every module of the package is read with ``ast`` (at module level, inside functions
and under ``if TYPE_CHECKING:`` alike) and resolved to the stage it names. A module may import its own
stage and earlier ones; an import of a later stage, of the top-level package from inside a stage, or
a dynamic import fails the test, so the layout cannot decay silently.

No private name (``_x``) crosses a module: neither ``from M import _x`` nor ``m._x`` on an imported
module, in the package or in its tests. What another module needs is public, in ``__all__``.

Inside a stage, the imports that run when a module is loaded (module level, not inside a function nor
under ``if TYPE_CHECKING:``) form no cycle between modules: a cycle makes the module that loads first
see a half-initialized other, and hides which one is the foundation.
"""

from __future__ import annotations

import ast
import functools
from collections.abc import Iterator, Mapping
from pathlib import Path

import networkx as nx
import pytest

import egg_dispatch

PACKAGE = Path(egg_dispatch.__file__).resolve().parent
TOP = "egg_dispatch"
DATA_PACKAGES = frozenset({"examples"})
"""Subpackages that hold only package data (no imports, no code)."""
ABOVE_STAGES = frozenset({"__init__", "__main__"})
"""Top-level modules that sit above every stage: the public API and ``python -m``."""


@functools.cache
def _parsed(source: str) -> ast.Module:
    """``ast.parse``, once per text: every checker walks all of the package's modules, and the tests that
    show a checker can fail change one module at a time (the trees are only read, never changed)."""
    return ast.parse(source)


def module_name(rel: Path) -> str:
    parts = list(rel.with_suffix("").parts)
    if parts[-1] == "__init__":
        parts = parts[:-1]
    return ".".join([TOP, *parts])


def stage_of(module: str) -> str:
    """The stage of a module name inside the package (``egg_dispatch.cli.explore`` -> ``cli``)."""
    parts = module.split(".")
    assert parts[0] == TOP
    return parts[1] if len(parts) > 1 else "__init__"


def from_target(node: ast.ImportFrom, package: str) -> str:
    """The absolute module ``from X import ...`` reads, in a module of ``package`` (relative levels resolved)."""
    if not node.level:
        return node.module or ""
    base = package.split(".")[: len(package.split(".")) - (node.level - 1)]
    return ".".join(base + ([node.module] if node.module else []))


def imported_modules(source: str, module: str, is_package: bool) -> Iterator[tuple[int, str]]:
    """(line, absolute module) for every import in ``source``; ``from X import name`` yields ``X.name``
    when ``X`` is the top-level package (the name is then a stage, or the package's own API)."""
    package = module if is_package else module.rpartition(".")[0]
    for node in ast.walk(_parsed(source)):
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield node.lineno, alias.name
        elif isinstance(node, ast.ImportFrom):
            target = from_target(node, package)
            if target == TOP:
                for alias in node.names:
                    yield node.lineno, f"{TOP}.{alias.name}"
            else:
                yield node.lineno, target
        elif isinstance(node, ast.Call):
            fn = node.func
            name = fn.attr if isinstance(fn, ast.Attribute) else fn.id if isinstance(fn, ast.Name) else ""
            if name in ("import_module", "__import__"):
                yield node.lineno, "<dynamic import>"


def violations(sources: Mapping[str, str], stages: tuple[str, ...]) -> list[str]:
    """Every import against the stage order in ``sources`` ({path relative to the package: text})."""
    order = {s: i for i, s in enumerate(stages)}
    out: list[str] = []
    for rel, text in sorted(sources.items()):
        path = Path(rel)
        module = module_name(path)
        here = stage_of(module)
        if here in ABOVE_STAGES:
            continue
        for line, target in imported_modules(text, module, path.name == "__init__.py"):
            where = f"{TOP}/{rel}:{line}"
            if target == "<dynamic import>":
                out.append(f"{where}: a dynamic import hides a dependency from this test")
                continue
            if target.split(".")[0] != TOP:
                continue
            there = stage_of(target)
            if here in DATA_PACKAGES:
                out.append(f"{where}: data package '{here}' imports {target}")
            elif there in ABOVE_STAGES or there not in order:
                out.append(f"{where}: stage '{here}' imports {target}, which is not a stage")
            elif order[there] > order[here]:
                out.append(f"{where}: stage '{here}' imports {target} of the later stage '{there}'")
    return out


def package_sources() -> dict[str, str]:
    return {p.relative_to(PACKAGE).as_posix(): p.read_text() for p in sorted(PACKAGE.rglob("*.py"))}


def stage_graph(sources: Mapping[str, str]) -> nx.DiGraph:
    g = nx.DiGraph()
    for rel, text in sources.items():
        module = module_name(Path(rel))
        here = stage_of(module)
        if here in ABOVE_STAGES:
            continue
        for _, target in imported_modules(text, module, rel.endswith("__init__.py")):
            if target.split(".")[0] == TOP and (there := stage_of(target)) != here:
                g.add_edge(here, there)
    return g


def _is_type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def _run_at_import(body: list[ast.stmt]) -> Iterator[ast.stmt]:
    """The statements of ``body`` that run when the module is loaded: into ``if`` (but not the body
    of ``if TYPE_CHECKING:``), ``try``, ``with`` and class bodies; never into a function."""
    for node in body:
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            continue
        if isinstance(node, ast.If):
            if not _is_type_checking(node.test):
                yield from _run_at_import(node.body)
            yield from _run_at_import(node.orelse)
        elif isinstance(node, ast.Try):
            for part in (node.body, *(h.body for h in node.handlers), node.orelse, node.finalbody):
                yield from _run_at_import(part)
        elif isinstance(node, ast.With | ast.ClassDef):
            yield from _run_at_import(node.body)
        else:
            yield node


def module_level_imports(source: str, module: str, is_package: bool, modules: frozenset[str]) -> Iterator[str]:
    """The modules of ``modules`` that ``source`` imports when it is loaded. ``from P import n`` names
    ``P.n`` when that is a module, else ``P`` (its ``__init__``); the parent packages Python
    initializes first are not counted (they are being imported already)."""
    package = module if is_package else module.rpartition(".")[0]
    for node in _run_at_import(_parsed(source).body):
        if isinstance(node, ast.Import):
            yield from (alias.name for alias in node.names if alias.name in modules)
        elif isinstance(node, ast.ImportFrom):
            target = from_target(node, package)
            for alias in node.names:
                if f"{target}.{alias.name}" in modules:
                    yield f"{target}.{alias.name}"
                elif target in modules:
                    yield target


def module_import_graph(sources: Mapping[str, str]) -> nx.DiGraph:
    """Module -> module it imports at load time, over every module of the package."""
    modules = frozenset(module_name(Path(rel)) for rel in sources)
    g = nx.DiGraph()
    g.add_nodes_from(modules)
    for rel, text in sources.items():
        module = module_name(Path(rel))
        for target in module_level_imports(text, module, rel.endswith("__init__.py"), modules):
            if target != module:
                g.add_edge(module, target)
    return g


def module_cycles(sources: Mapping[str, str]) -> list[list[str]]:
    """Every cycle, in import order, each starting at its first module by name."""
    cycles = [c[c.index(min(c)) :] + c[: c.index(min(c))] for c in nx.simple_cycles(module_import_graph(sources))]
    return sorted(cycles)


def test_every_import_follows_the_stage_order() -> None:
    found = violations(package_sources(), egg_dispatch.STAGES)
    assert not found, "imports against the stage order (egg_dispatch.STAGES):\n" + "\n".join(found)


@pytest.mark.slow
def test_no_cycle_between_stages() -> None:
    cycles = list(nx.simple_cycles(stage_graph(package_sources())))
    assert not cycles, f"import cycles between subpackages: {cycles}"


def test_the_library_never_imports_a_command() -> None:
    """No module outside ``cli/`` imports it (``__main__`` is the command line's own entry)."""
    offenders = [
        f"{rel}:{line}"
        for rel, text in package_sources().items()
        if not rel.startswith("cli/") and rel != "__main__.py"
        for line, target in imported_modules(text, module_name(Path(rel)), rel.endswith("__init__.py"))
        if target == f"{TOP}.cli" or target.startswith(f"{TOP}.cli.")
    ]
    assert not offenders


def test_top_level_holds_only_stages_and_the_entry_points() -> None:
    stages = set(egg_dispatch.STAGES)
    entries = {p.name for p in PACKAGE.iterdir() if p.name not in ("__pycache__", "py.typed")}
    modules = {n for n in entries if n.endswith(".py")}
    packages = {n for n in entries if (PACKAGE / n).is_dir()}
    assert modules == {"__init__.py", "__main__.py", "pipeline.py"}
    assert packages == (stages - {"pipeline"}) | DATA_PACKAGES
    assert all((PACKAGE / p / "__init__.py").is_file() for p in packages)


@pytest.mark.slow
@pytest.mark.parametrize(
    ("path", "line", "ok"),
    [
        ("mlir/ir.py", "from egg_dispatch.cli import main", False),
        ("egraph/facts.py", "from egg_dispatch.extract import greedy_dag", False),
        ("cost/model.py", "from egg_dispatch.egraph.importer import ImportedProgram", True),
        ("plan/graph.py", "from ..pipeline import explore", False),
        ("emit/iree/module.py", "from ...evaluate import evaluate", False),
        ("emit/iree/module.py", "from ..clone import clone_region", True),
        ("target/layout.py", "from egg_dispatch import explore", False),
        ("util/table.py", "import importlib; importlib.import_module('egg_dispatch.cli')", False),
        ("cli/explore.py", "from egg_dispatch.pipeline import explore", True),
        ("examples/__init__.py", "from egg_dispatch.mlir import ir", False),
    ],
)
def test_the_checker_finds_a_backwards_import(path: str, line: str, ok: bool) -> None:
    """The check above can fail: a backwards import added by hand to a module is reported."""
    sources = package_sources()
    sources[path] = sources.get(path, '"""x"""\n') + "\n" + line + "\n"
    found = violations(sources, egg_dispatch.STAGES)
    assert (not found) == ok, found


def test_a_backwards_import_makes_a_cycle_between_stages() -> None:
    sources = package_sources()
    sources["mlir/ir.py"] += "\nfrom egg_dispatch.evaluate import evaluate\n"
    assert any("mlir" in c and "evaluate" in c for c in nx.simple_cycles(stage_graph(sources)))


def test_no_module_level_import_cycle_inside_a_package() -> None:
    """E.g. ``evaluate``: the handler modules register into ``registry`` and the package ``__init__``
    imports them; ``core`` (the interpreter) and the handlers never import each other at load."""
    cycles = module_cycles(package_sources())
    assert not cycles, "module-level import cycles:\n" + "\n".join(" -> ".join([*c, c[0]]) for c in cycles)


@pytest.mark.parametrize(
    ("path", "line", "cycle"),
    [
        ("evaluate/registry.py", "from egg_dispatch.evaluate.core import Interpreter", True),
        ("evaluate/registry.py", "if TYPE_CHECKING:\n    from egg_dispatch.evaluate.core import Interpreter", False),
        ("evaluate/registry.py", "def f():\n    from egg_dispatch.evaluate.core import Interpreter", False),
        ("evaluate/registry.py", "try:\n    from . import core\nexcept ImportError:\n    pass", True),
        ("evaluate/dynamic.py", "from egg_dispatch.evaluate import evaluate", True),
        ("evaluate/check.py", "from egg_dispatch.evaluate import evaluate", False),
    ],
)
def test_the_checker_finds_a_module_level_cycle(path: str, line: str, cycle: bool) -> None:
    """An import added by hand that closes a loop at load time is reported; one under
    ``if TYPE_CHECKING:`` or inside a function is not, nor one that closes no loop."""
    sources = package_sources()
    sources[path] += "\n" + line + "\n"
    assert bool(module_cycles(sources)) == cycle, module_cycles(sources)


TESTS = Path(__file__).resolve().parent


def _is_private(name: str) -> bool:
    return name.startswith("_") and not name.startswith("__")


def private_uses(source: str, module: str, is_package: bool, modules: frozenset[str]) -> Iterator[tuple[int, str]]:
    """(line, what) for each private name ``source`` takes from another module of ``modules``:
    ``from M import _x``, and ``m._x`` where ``m`` is bound to a module of ``modules`` by an import."""
    package = module if is_package else module.rpartition(".")[0]
    tree = _parsed(source)
    bound: dict[str, str] = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom):
            target = from_target(node, package)
            for alias in node.names:
                if f"{target}.{alias.name}" in modules:
                    bound[alias.asname or alias.name] = f"{target}.{alias.name}"
                elif target in modules and target != module and _is_private(alias.name):
                    yield node.lineno, f"from {target} import {alias.name}"
        elif isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name in modules and alias.asname:
                    bound[alias.asname] = alias.name  # import a.b as m: m is a.b
                elif alias.name in modules:
                    bound[alias.name.split(".")[0]] = alias.name.split(".")[0]  # import a.b: a is bound
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and _is_private(node.attr):
            parts: list[str] = []
            value: ast.expr = node.value
            while isinstance(value, ast.Attribute):
                parts.insert(0, value.attr)
                value = value.value
            if isinstance(value, ast.Name) and value.id in bound:
                owner = ".".join([bound[value.id], *parts])
                if owner in modules and owner != module:
                    yield node.lineno, f"{owner}.{node.attr}"


def private_violations(sources: Mapping[str, str], tests: Mapping[str, str]) -> list[str]:
    modules = frozenset(module_name(Path(rel)) for rel in sources) | {TOP}
    found = []
    for rel, text in sorted(sources.items()):
        module = module_name(Path(rel))
        for line, what in private_uses(text, module, rel.endswith("__init__.py"), modules):
            found.append(f"{TOP}/{rel}:{line}: {what}")
    for rel, text in sorted(tests.items()):
        for line, what in private_uses(text, f"tests.{Path(rel).stem}", False, modules):
            found.append(f"tests/{rel}:{line}: {what}")
    return found


def test_no_private_name_crosses_a_module() -> None:
    tests = {p.relative_to(TESTS).as_posix(): p.read_text() for p in sorted(TESTS.rglob("*.py"))}
    found = private_violations(package_sources(), tests)
    assert not found, "private names used from another module (make them public):\n" + "\n".join(found)


@pytest.mark.parametrize(
    ("line", "found"),
    [
        ("from egg_dispatch.mlir.dense import _x", True),
        ("from .dense import _x", True),
        ("from egg_dispatch.mlir.dense import x as _x", False),
        ("import egg_dispatch.mlir.dense as d\nd._x", True),
        ("from egg_dispatch.mlir import dense\ndense._x()", True),
        ("import egg_dispatch.mlir.dense\negg_dispatch.mlir.dense._x", True),
        ("from egg_dispatch.mlir import dense\ndense.__name__", False),
        ("class A:\n    def f(self):\n        return self._x", False),
    ],
)
def test_the_checker_finds_a_private_import(line: str, found: bool) -> None:
    modules = frozenset(module_name(Path(rel)) for rel in package_sources()) | {TOP}
    uses = list(private_uses('"""x"""\n' + line + "\n", "egg_dispatch.mlir.ir", False, modules))
    assert bool(uses) == found, uses
