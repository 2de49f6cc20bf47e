"""The machine in front of us: its ISA, its built-in profile, and its calibrated profile if there is one.

``--target host`` (the default of every command) means: this CPU's calibrated profile when
``egg-dispatch calibrate`` has written one for it (in the user's cache directory), else the built-in
profile of its ISA (AVX-512, AVX2, NEON) with a one-line warning that its numbers are not measured
here. The calibrated profile is keyed by the CPU's model name and ISA flags, so a profile measured on
one machine is never used on another.
"""

from __future__ import annotations

import hashlib
import os
import platform
from pathlib import Path

__all__ = ["HOST", "cache_dir", "calibrated_profile_path", "host_cpu", "host_isa_target", "usable_cpus"]

HOST = "host"


def usable_cpus() -> int:
    """The CPUs this process may run on (its affinity where the system says, else the CPU count)."""
    try:
        return len(os.sched_getaffinity(0)) or 1
    except (AttributeError, OSError):  # pragma: no cover - platform dependent
        return os.cpu_count() or 1


def _cpuinfo() -> tuple[str, frozenset[str]]:
    name, flags = "", frozenset[str]()
    try:
        with open("/proc/cpuinfo", encoding="utf-8", errors="replace") as f:
            for line in f:
                key, _, value = line.partition(":")
                key = key.strip()
                if key == "model name" and not name:
                    name = value.strip()
                elif key in ("flags", "Features") and not flags:
                    flags = frozenset(value.split())
    except OSError:
        pass
    return name or platform.processor() or platform.machine(), flags


def host_cpu() -> tuple[str, frozenset[str]]:
    """(model name, ISA feature flags) of this CPU, from ``/proc/cpuinfo``."""
    return _cpuinfo()


def host_isa_target() -> tuple[str | None, str]:
    """The built-in profile matching this CPU's ISA (None if none does), and why that one."""
    machine = platform.machine().lower()
    _, flags = _cpuinfo()
    if machine in ("x86_64", "amd64"):
        if {"avx512f", "avx512bw", "avx512dq", "avx512vl"} <= flags:
            return "x86_64-avx512", "AVX-512 (avx512f/bw/dq/vl)"
        if {"avx2", "fma"} <= flags:
            return "x86_64-avx2", "AVX2 + FMA"
        return None, "x86-64 without AVX2"
    if machine in ("aarch64", "arm64"):
        return "aarch64-neon", "AArch64 NEON"
    return None, f"{machine} (no built-in profile)"


def cache_dir() -> Path:
    """The user's cache directory for egg-dispatch (``EGG_DISPATCH_CACHE_DIR`` overrides it): calibrated
    profiles and the measurement cache live here."""
    override = os.environ.get("EGG_DISPATCH_CACHE_DIR")
    if override:
        return Path(override)
    try:
        import platformdirs

        return Path(platformdirs.user_cache_dir("egg-dispatch"))
    except ImportError:  # pragma: no cover - a dependency; kept working without it
        return Path.home() / ".cache" / "egg-dispatch"


def calibrated_profile_path() -> Path:
    """Where ``calibrate`` writes, and ``--target host`` reads, this CPU's profile."""
    name, flags = _cpuinfo()
    isa = sorted(f for f in flags if f.startswith(("avx", "fma", "sse4", "asimd", "sve", "neon", "amx")))
    key = hashlib.sha1(f"{name}|{' '.join(isa)}".encode()).hexdigest()[:12]
    return cache_dir() / "profiles" / f"host-{key}.json"
