"""IREE's start state of an ``explore FILE`` command line, asked for before the command's modules load.

Loading explore's modules (egglog, NumPy, networkx, the pipeline) takes about as long as a stage of a
model's exploration, and IREE's start-state run (``iree.lowering.start_state``), the first thing explore
needs, depends on nothing they compute. ``console_main`` calls ``ask_iree_early`` with the command line
before anything else: when the line is plainly ``explore FILE ...`` whose start state IREE will be asked
for, the run starts on a thread (``lowering.start_state_soon``) and the pipeline's own request takes its
result. The line is read here by a small look at its words, not by the command's parser (which loads
the modules): ``FILE`` must be the word after ``explore``, ``--target`` (or its default) and ``--from``
written in full; anything else (``--target-file``, an abbreviated flag, a missing file) asks nothing,
and explore then runs IREE itself as before. This module imports only what that needs.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

__all__ = ["ask_iree_early", "early_request"]

_VALUED = ("--target", "--from")
"""The flags read here, each written ``--flag VALUE`` or ``--flag=VALUE``."""


def early_request(argv: Sequence[str]) -> tuple[Path, str, str] | None:
    """(FILE, target, start) of an ``explore`` line read as above; None when it is not plainly one."""
    if len(argv) < 2 or argv[0] != "explore" or argv[1].startswith("-"):
        return None
    values: dict[str, str] = {}
    words = list(argv[2:])
    while words:
        word = words.pop(0)
        flag, eq, value = word.partition("=")
        if flag in _VALUED:
            if not eq:
                if not words:
                    return None
                value = words.pop(0)
            values[flag] = value
        elif any(full.startswith(flag) for full in (*_VALUED, "--target-file")) and flag.startswith("--"):
            return None  # an abbreviation of one of them, or --target-file: not read here
    path = Path(argv[1])
    if not path.is_file():
        return None
    from egg_dispatch.target.host import HOST

    return path, values.get("--target", HOST), values.get("--from", "auto")


def ask_iree_early(argv: Sequence[str]) -> None:
    """Start IREE's start state of the ``explore`` line ``argv`` when explore will ask for it (see the
    module docstring); any doubt (a target that does not load, IREE missing) asks nothing."""
    request = early_request(argv)
    if request is None:
        return
    path, spec, start = request
    try:
        from egg_dispatch.iree.lowering import asks_start_state, iree_compiler_available, start_state_soon
        from egg_dispatch.target.profile import load_target

        if not iree_compiler_available() or not asks_start_state(path, start):
            return
        start_state_soon(path, load_target(spec), name=str(path))
    except Exception:  # explore itself reports whatever is wrong, as it always did
        return
