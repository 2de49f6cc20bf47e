"""Snapshot explore's outputs on every fixture and built-in target, or compare two snapshots.

A refactoring that claims "behaviour unchanged" runs this before and after and compares:

    .venv/bin/python scripts/snapshot_outputs.py write /tmp/before
    ... change the code ...
    .venv/bin/python scripts/snapshot_outputs.py write /tmp/after
    .venv/bin/python scripts/snapshot_outputs.py compare /tmp/before /tmp/after

Each run is the real command line in a subprocess (``python -m egg_dispatch explore FILE --target T
--emit E``), for E in json (without ``--timings``, so deterministic), mlir and iree; stdout, stderr
and the exit code are stored, with the checkout's path spelled ``<checkout>`` (file names in
warnings), so snapshots taken in two worktrees compare. ``--baseline`` is left at its default, so
IREE's own plan is used where IREE is installed, as a user would see it.

A change that renames a rule on purpose says so: ``compare --rename OLD=NEW`` maps the name in the
first snapshot before comparing (in JSON outputs, as a key or a value, with keys sorted again), and
reports how many outputs are identical only through the renaming.
"""

from __future__ import annotations

import argparse
import concurrent.futures
import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
TARGETS = ("x86_64-avx2", "x86_64-avx512", "aarch64-neon", "none")
EMITS = ("json", "mlir", "iree")


def inputs() -> list[Path | None]:
    """Every fixture program, plus None for the built-in example."""
    return [None, *sorted((ROOT / "tests" / "fixtures").glob("*.mlir"))]


def _run(python: str, fixture: Path | None, target: str, emit: str) -> tuple[str, str]:
    cmd = [python, "-m", "egg_dispatch", "explore"]
    if fixture is not None:
        cmd.append(str(fixture))
    cmd += ["--target", target, "--emit", emit]
    p = subprocess.run(cmd, capture_output=True, text=True, cwd=ROOT)
    name = f"{fixture.stem if fixture else 'builtin'}.{target}.{emit}"
    text = f"exit {p.returncode}\n--- stdout\n{p.stdout}--- stderr\n{p.stderr}"
    return name, text.replace(str(ROOT), "<checkout>")


def write(out: Path, python: str, jobs: int) -> int:
    out.mkdir(parents=True, exist_ok=True)
    runs = [(f, t, e) for f in inputs() for t in TARGETS for e in EMITS]
    with concurrent.futures.ThreadPoolExecutor(jobs) as pool:
        for name, text in pool.map(lambda r: _run(python, *r), runs):
            (out / name).write_text(text)
    print(f"wrote {len(runs)} outputs to {out}")
    return 0


def _renamed(value: object, renames: dict[str, str]) -> object:
    if isinstance(value, dict):
        return {renames.get(k, k): _renamed(v, renames) for k, v in value.items()}
    if isinstance(value, list):
        return [_renamed(v, renames) for v in value]
    return renames.get(value, value) if isinstance(value, str) else value


def _normalized(name: str, text: str, renames: dict[str, str]) -> str:
    """``text`` with the renamed rules spelled as now: JSON stdout re-dumped with sorted keys."""
    head, _, rest = text.partition("--- stdout\n")
    out, sep, err = rest.partition("--- stderr")
    if name.endswith(".json") and out.strip():
        try:
            out = json.dumps(_renamed(json.loads(out), renames), sort_keys=True, indent=2) + "\n"
        except json.JSONDecodeError:
            pass
    for old, new in renames.items():
        err = err.replace(old, new)
        if not name.endswith(".json"):
            out = out.replace(old, new)
    return head + out + sep + err


def compare(a: Path, b: Path, renames: dict[str, str] | None = None) -> int:
    names = sorted({p.name for p in a.iterdir()} | {p.name for p in b.iterdir()})
    differ, through_renames = [], 0
    for n in names:
        if not (a / n).is_file() or not (b / n).is_file():
            differ.append(n)
            continue
        x, y = (a / n).read_text(), (b / n).read_text()
        if x == y:
            continue
        if renames and _normalized(n, x, renames) == _normalized(n, y, {}):
            through_renames += 1
            continue
        differ.append(n)
    for n in differ:
        print(f"differs: {n}")
    same = len(names) - len(differ) - through_renames
    print(f"{same} of {len(names)} outputs byte-identical", end="")
    print(f", {through_renames} identical once the renamed rules are mapped" if renames else "")
    return 1 if differ else 0


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="cmd", required=True)
    w = sub.add_parser("write")
    w.add_argument("out", type=Path)
    w.add_argument("--python", default=sys.executable)
    w.add_argument("--jobs", type=int, default=2)
    c = sub.add_parser("compare")
    c.add_argument("a", type=Path)
    c.add_argument("b", type=Path)
    c.add_argument("--rename", action="append", default=[], metavar="OLD=NEW", help="a rule renamed on purpose")
    args = ap.parse_args()
    if args.cmd == "write":
        return write(args.out, args.python, args.jobs)
    renames = dict(r.split("=", 1) for r in args.rename)
    return compare(args.a, args.b, renames)


if __name__ == "__main__":
    sys.exit(main())
