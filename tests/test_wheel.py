"""The built wheel works on its own: ``pip install .`` (not editable), then the installed commands.

The module fixture builds the wheel offline (``pip wheel --no-build-isolation`` with this venv's
setuptools) from a clean copy of the sources (building in place would write ``build/`` into the
working tree, and a stale ``build/lib`` carries files into the wheel that the configuration no longer
names, which would hide the very bug this guards against: rule files the wheel does not carry). It
installs the wheel into a fresh venv with ``--no-deps --no-index`` and makes the dependencies
importable through a ``.pth`` line naming this venv's site-packages: a ``.pth`` path line does not run
the editable-install finder files in that directory, so ``import egg_dispatch`` there is the wheel's
copy. The installed ``egg-dispatch`` then runs with the source tree off the path: another working
directory, no ``PYTHONPATH``, and this venv's ``bin/`` (IREE's tools) not on ``PATH``, as after a plain
``pip install egg-dispatch``.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import sysconfig
import tomllib
import zipfile
from dataclasses import dataclass
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow  # IREE builds, explorations at model size or long properties (docs/testing.md)

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "egg_dispatch"
RULES = ROOT / "rules"
"""The source folder of the rule files, which the wheel carries as the package ``egg_dispatch.rules``."""
FIXTURE = ROOT / "tests" / "fixtures" / "qkv_arg.mlir"
TIMEOUT = 300
SKIP = shutil.ignore_patterns("__pycache__", "*.pyc", "*.egg-info")


def subpackages_on_disk() -> set[str]:
    """Every folder of ``egg_dispatch/`` holding a module or package data, as a package name."""
    names = set()
    for folder in (PACKAGE, *(p for p in PACKAGE.rglob("*") if p.is_dir() and p.name != "__pycache__")):
        if any(f.is_file() and f.suffix != ".pyc" for f in folder.iterdir()):
            names.add(".".join(("egg_dispatch", *folder.relative_to(PACKAGE).parts)))
    return names


def test_pyproject_lists_every_subpackage() -> None:
    """pyproject.toml lists the packages (discovery cannot see ``egg_dispatch.rules``): a subpackage
    added to ``egg_dispatch/`` and not to that list would be missing from the wheel."""
    setuptools = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]
    listed = set(setuptools["packages"])
    expected = subpackages_on_disk() | {"egg_dispatch.rules"}
    assert listed == expected, (
        f"add to [tool.setuptools] packages: {sorted(expected - listed)}; stale: {sorted(listed - expected)}"
    )
    assert setuptools["package-dir"] == {"egg_dispatch.rules": "rules"}
    assert (RULES / "__init__.py").is_file(), "the editable install finds egg_dispatch.rules only as a regular package"


@dataclass(frozen=True)
class Installed:
    wheel: Path
    build_log: str
    venv: Path
    env: dict[str, str]
    cwd: Path
    """A temporary directory away from the source tree, the working directory of every run."""

    @property
    def python(self) -> Path:
        return self.venv / "bin" / "python"

    def run(self, *args: str | Path) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [str(a) for a in args], cwd=self.cwd, env=self.env, capture_output=True, text=True, timeout=TIMEOUT
        )


def _check(result: subprocess.CompletedProcess[str]) -> str:
    assert result.returncode == 0, f"{result.args} exited {result.returncode}:\n{result.stdout}\n{result.stderr}"
    return result.stdout


@pytest.fixture(scope="module")
def installed(tmp_path_factory: pytest.TempPathFactory) -> Installed:
    src = tmp_path_factory.mktemp("src")
    for name in ("pyproject.toml", "README.md"):
        shutil.copy2(ROOT / name, src / name)
    for folder in ("egg_dispatch", "rules"):
        shutil.copytree(ROOT / folder, src / folder, ignore=SKIP)
    dist = tmp_path_factory.mktemp("dist")
    offline = ["--no-deps", "--no-build-isolation", "--no-index", "--disable-pip-version-check"]
    build = subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "-v", *offline, "-w", str(dist), str(src)],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        timeout=TIMEOUT,
    )
    assert build.returncode == 0, f"building the wheel failed:\n{build.stdout}"
    (wheel,) = dist.glob("egg_dispatch-*.whl")

    venv = tmp_path_factory.mktemp("venv")
    _check(subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], capture_output=True, text=True))
    python = venv / "bin" / "python"
    # pip of this venv, aimed at the new one; before the .pth exists, so it sees no other egg-dispatch.
    install = [sys.executable, "-m", "pip", "--python", str(python), "install", "-q", "--disable-pip-version-check"]
    _check(subprocess.run([*install, "--no-deps", "--no-index", str(wheel)], capture_output=True, text=True))
    site = _check(
        subprocess.run(
            [python, "-c", "import sysconfig; print(sysconfig.get_path('purelib'))"], capture_output=True, text=True
        )
    )
    deps = dict.fromkeys(sysconfig.get_path(k) for k in ("purelib", "platlib"))
    Path(site.strip(), "_egg_dispatch_test_deps.pth").write_text("".join(f"{d}\n" for d in deps))

    dev_bin = Path(sysconfig.get_path("scripts")).resolve()
    path = [p for p in os.environ.get("PATH", "").split(os.pathsep) if p and Path(p).resolve() != dev_bin]
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTHONHOME", "PYTHONSTARTUP")}
    env |= {
        "PATH": os.pathsep.join([str(venv / "bin"), *path]),
        "VIRTUAL_ENV": str(venv),
        "PYTHONNOUSERSITE": "1",
        "EGG_DISPATCH_CACHE_DIR": str(tmp_path_factory.mktemp("cache")),
        "EGG_DISPATCH_MEASURE": "0",  # as conftest sets it for every test: explore times nothing
    }
    return Installed(wheel, build.stdout, venv, env, tmp_path_factory.mktemp("cwd"))


@pytest.mark.slow
def test_wheel_builds_without_deprecation_warnings(installed: Installed) -> None:
    # setuptools' warnings are Python warnings (SetuptoolsDeprecationWarning, BuildBackendWarning, ...),
    # which pip passes on; distutils' lower-case "warning: build_py: byte-compiling is disabled" is not one.
    flagged = [
        line.strip() for line in installed.build_log.splitlines() if re.search(r"\w+Warning\b|deprecat", line, re.I)
    ]
    assert not flagged, "the build printed:\n" + "\n".join(flagged)


@pytest.mark.slow
def test_wheel_carries_the_rule_files(installed: Installed) -> None:
    with zipfile.ZipFile(installed.wheel) as wheel:
        names = set(wheel.namelist())
        metadata = next(wheel.read(n).decode() for n in names if n.endswith(".dist-info/METADATA"))
    rules = sorted(p.name for p in RULES.glob("*.egg"))
    assert rules, f"no rule files in {RULES}"
    missing = [r for r in rules if f"egg_dispatch/rules/{r}" not in names]
    assert not missing, f"the wheel lacks rule files: {missing}"
    data = [*PACKAGE.glob("examples/*.mlir"), *PACKAGE.glob("target/profiles/*.json")]
    missing = [str(p.relative_to(ROOT)) for p in data if str(p.relative_to(ROOT)) not in names]
    assert not missing, f"the wheel lacks package data: {missing}"
    top = {n.split("/", 1)[0] for n in names}
    assert top == {"egg_dispatch", "egg_dispatch-0.1.0.dist-info"}, f"the wheel installs more than the package: {top}"
    assert "License-Expression: Apache-2.0" in metadata


@pytest.mark.slow
def test_installed_package_is_the_wheel(installed: Installed) -> None:
    out = _check(
        installed.run(
            installed.python,
            "-c",
            "import egg_dispatch, egg_dispatch.egraph.rules as r; print(egg_dispatch.__file__); print(r.RULES_DIR)",
        )
    )
    package, rules = (Path(line).resolve() for line in out.split("\n")[:2])
    venv = installed.venv.resolve()
    for path in (package, rules):
        assert path.is_relative_to(venv), f"{path} is not the wheel's copy in {venv}"
        assert not path.is_relative_to(ROOT), f"{path} is the source tree's"
    assert sorted(p.name for p in rules.glob("*.egg")) == sorted(p.name for p in RULES.glob("*.egg"))


@pytest.mark.slow
def test_installed_explore_runs_the_builtin_example(installed: Installed) -> None:
    out = _check(installed.run(installed.venv / "bin" / "egg-dispatch", "explore"))
    assert "egg-dispatch explore: <builtin:seed_reproducer.mlir> @hoist_failure_repro" in out
    assert re.search(r"^chosen plan: dispatch\{", out, re.M), out
    dispatches = re.search(r"^dispatches per call\s+(\d+)\s+(\d+)", out, re.M)
    assert dispatches, out
    assert int(dispatches[1]) >= 1 and int(dispatches[2]) >= 1
    assert re.search(r"^e-graph: \d+ e-nodes, .*; saturated$", out, re.M), out


@pytest.mark.slow
def test_installed_opt_runs_every_rule_family(installed: Installed) -> None:
    exe = installed.venv / "bin" / "egg-dispatch"
    out = _check(installed.run(exe, "opt", "--rules", "all", "--target", "x86_64-avx2", FIXTURE))
    plans = re.search(r"^// ===== plans for @qkv_projection_arg: (\d+);.*; saturated; rule matches: (.*)$", out, re.M)
    assert plans, out[:2000]
    assert int(plans[1]) > 1, "the rules found no other plan than the start state"
    fired = plans[2]
    for rule in ("hoist-set-encoding-rhs", "untile-contraction", "materialize-contraction", "fuse-pack-into"):
        assert rule in fired, f"{rule} did not fire: {fired}"
    assert "flow.dispatch.region" in out
