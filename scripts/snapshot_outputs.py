"""Snapshot explore's outputs on every fixture and built-in target, or compare two snapshots.

A refactoring that claims "behaviour unchanged" runs this before and after and compares:

    .venv/bin/python scripts/snapshot_outputs.py write /tmp/before
    ... change the code ...
    .venv/bin/python scripts/snapshot_outputs.py write /tmp/after
    .venv/bin/python scripts/snapshot_outputs.py compare /tmp/before /tmp/after

Each run is the real command line in a subprocess (``python -m egg_dispatch explore FILE --target T
--emit E``), for E in json (without ``--timings``, so deterministic), mlir and iree; stdout, stderr
and the exit code are stored. ``--baseline`` is left at its default, so IREE's own plan is used
where IREE is installed, as a user would see it.
"""

from __future__ import annotations

import argparse
import concurrent.futures
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
    return name, f"exit {p.returncode}\n--- stdout\n{p.stdout}--- stderr\n{p.stderr}"


def write(out: Path, python: str, jobs: int) -> int:
    out.mkdir(parents=True, exist_ok=True)
    runs = [(f, t, e) for f in inputs() for t in TARGETS for e in EMITS]
    with concurrent.futures.ThreadPoolExecutor(jobs) as pool:
        for name, text in pool.map(lambda r: _run(python, *r), runs):
            (out / name).write_text(text)
    print(f"wrote {len(runs)} outputs to {out}")
    return 0


def compare(a: Path, b: Path) -> int:
    names = sorted({p.name for p in a.iterdir()} | {p.name for p in b.iterdir()})
    differ = [
        n
        for n in names
        if not (a / n).is_file() or not (b / n).is_file() or (a / n).read_bytes() != (b / n).read_bytes()
    ]
    for n in differ:
        print(f"differs: {n}")
    print(f"{len(names) - len(differ)} of {len(names)} outputs byte-identical")
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
    args = ap.parse_args()
    if args.cmd == "write":
        return write(args.out, args.python, args.jobs)
    return compare(args.a, args.b)


if __name__ == "__main__":
    sys.exit(main())
