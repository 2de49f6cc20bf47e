"""Per-dispatch times of a compiled module, measured by IREE's own runtime profiling.

``iree-benchmark-module --device_profiling_mode=host-execution`` records every dispatch's host
execution on the single-threaded ``local-sync`` device while the benchmark loops over the function;
``iree-profile statistics --format=jsonl`` then gives, per executable function (one per dispatch, named
``<func>_dispatch_<N>_<root op>_<shape>_<type>`` or ``_encoding_<N>_encode_<from>_to_<to>``), the number of
samples and their total duration. The mean is the dispatch's kernel time, without the per-dispatch
launch overhead, which ``call_seconds`` (the whole call, benchmarked without profiling) contains.
"""

from __future__ import annotations

import json
import os
import subprocess
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from egg_dispatch.iree.tools import DEFAULT_MIN_TIME, IreeError, benchmark_module, find_tool, parameter_flags

__all__ = ["DispatchTimes", "dispatch_times", "profile_module"]


@dataclass(frozen=True)
class DispatchTimes:
    """Mean kernel seconds per executable function, and how many samples each mean has."""

    def kernel_seconds_per_call(self) -> float:
        """Σ kernel time of one call (a function shared by identical dispatches counts as often as it ran)."""
        if not self.calls:
            return sum(self.seconds.values())
        return sum(self.seconds[k] * self.samples[k] for k in self.seconds) / self.calls

    seconds: dict[str, float]
    samples: dict[str, int]
    calls: int
    """Command-buffer executions profiled (one per call of the function)."""
    call_seconds: float | None = None
    """Median seconds per call of the function, benchmarked without profiling (None: not asked)."""


def _tool(name: str) -> Path:
    tool = find_tool(name)
    if tool is None:
        raise IreeError(f"{name} not found next to the interpreter or on PATH (pip install 'egg-dispatch[iree]')")
    return tool


def dispatch_times(profile: Path) -> tuple[dict[str, float], dict[str, int], int]:
    """(mean seconds, sample count) per executable function of an ``.ireeprof`` bundle, and the number
    of command-buffer executions (calls)."""
    proc = subprocess.run(
        [str(_tool("iree-profile")), "statistics", "--format=jsonl", str(profile)],
        capture_output=True,
        text=True,
        timeout=300,
    )
    if proc.returncode != 0:
        raise IreeError("iree-profile failed", stderr=proc.stderr)
    seconds: dict[str, float] = {}
    samples: dict[str, int] = {}
    calls = 0
    for line in proc.stdout.splitlines():
        row = json.loads(line)
        if row.get("row_type") == "host_execution_queue_operation" and row.get("event_name") == "execute":
            calls = int(row.get("sample_count") or 0)
        if row.get("row_type") != "host_execution_function" or not row.get("function_name"):
            continue
        n = int(row.get("sample_count") or 0)
        if n:
            seconds[row["function_name"]] = float(row["total_duration_ns"]) / n * 1e-9
            samples[row["function_name"]] = n
    return seconds, samples, calls


def profile_module(
    vmfb: bytes | Path,
    function: str,
    inputs: Sequence[np.ndarray],
    *,
    min_time: float = DEFAULT_MIN_TIME,
    call_time: bool = True,
    timeout: float = 600.0,
    parameters: Sequence[tuple[str | None, str | os.PathLike[str]]] = (),
) -> DispatchTimes:
    """Benchmark ``function`` with profiling on (per-dispatch means) and, with ``call_time``, without it
    (the whole call's seconds); ``parameters``: (scope, file) pairs for a module with named parameters."""
    tool = _tool("iree-benchmark-module")
    with tempfile.TemporaryDirectory(prefix="egg_dispatch_profile_") as tmp:
        module = Path(tmp) / "module.vmfb"
        module.write_bytes(vmfb if isinstance(vmfb, bytes) else Path(vmfb).read_bytes())
        paths = []
        for i, x in enumerate(inputs):
            paths.append(Path(tmp) / f"input{i}.npy")
            np.save(paths[-1], x)
        bundle = Path(tmp) / "profile.ireeprof"
        cmd = [
            str(tool),
            f"--module={module}",
            f"--function={function}",
            "--device=local-sync",
            *[f"--input=@{p}" for p in paths],
            *parameter_flags(parameters),
            f"--benchmark_min_time={min_time:g}s",
            "--device_profiling_mode=host-execution",
            f"--device_profiling_output={bundle}",
        ]
        proc = subprocess.run(cmd, capture_output=True, timeout=timeout, check=False)
        if proc.returncode != 0 or not bundle.is_file():
            raise IreeError("iree-benchmark-module (profiling) failed", stderr=proc.stderr.decode(errors="replace"))
        seconds, samples, calls = dispatch_times(bundle)
        call = None
        if call_time:
            call = benchmark_module(module, function, paths, min_time=min_time, parameters=parameters)
    return DispatchTimes(seconds, samples, calls, call)
