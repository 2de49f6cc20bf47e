"""The IREE llvm-cpu device of each target profile, kept apart so the IR conversion never touches CPU details."""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import cache
from pathlib import Path

from egg_dispatch.target.profile import Target

__all__ = ["IREE_CPUS", "IreeCpu", "device_target_text", "host_cpu_flags", "iree_cpu", "runnable_here"]


@dataclass(frozen=True)
class IreeCpu:
    """What IREE's llvm-cpu backend needs to know about a target profile's CPU.

    The strings are what IREE 3.13 itself prints in ``#hal.executable.target`` for ``-cpu=<cpu>``, so the
    emitted module compiles for the same machine as ``iree-compile --iree-llvmcpu-target-cpu=<cpu>``.
    """

    cpu: str
    features: str
    native_vector_size: int
    triple: str
    data_layout: str
    executable_format: str
    resolver: str
    required_host_flags: tuple[str, ...]
    """``/proc/cpuinfo`` flags the host needs to run the code (empty tuple and a foreign triple: never)."""
    compile_flags: tuple[str, ...]
    """Flags selecting this CPU when IREE compiles a linalg-level input itself."""

    @property
    def is_x86(self) -> bool:
        return self.triple.startswith("x86_64")


_X86_LAYOUT = "e-m:e-p270:32:32-p271:32:32-p272:64:64-i64:64-i128:128-f80:128-n8:16:32:64-S128"
_ARM_LAYOUT = "e-m:e-p270:32:32-p271:32:32-p272:64:64-i8:8:32-i16:16:32-i64:64-i128:128-n32:64-S128-Fn32"
_HASWELL = (
    "+avx,+avx2,+bmi,+bmi2,+cmov,+crc32,+cx16,+cx8,+f16c,+fma,+fsgsbase,+fxsr,+invpcid,+lzcnt,+mmx,+movbe,+pclmul,"
    "+popcnt,+rdrnd,+sahf,+sse,+sse2,+sse3,+sse4.1,+sse4.2,+ssse3,+x87,+xsave,+xsaveopt"
)
_CASCADELAKE = (
    "+adx,+aes,+avx,+avx2,+avx512bw,+avx512cd,+avx512dq,+avx512f,+avx512vl,+avx512vnni,+bmi,+bmi2,+clflushopt,+clwb,"
    "+cmov,+crc32,+cx16,+cx8,+f16c,+fma,+fsgsbase,+fxsr,+invpcid,+lzcnt,+mmx,+movbe,+pclmul,+pku,+popcnt,+prfchw,"
    "+rdrnd,+rdseed,+sahf,+sse,+sse2,+sse3,+sse4.1,+sse4.2,+ssse3,+x87,+xsave,+xsavec,+xsaveopt,+xsaves"
)
_CPU_RESOLVER = "#iree_cpu.cpu_encoding_resolver<>"
_IDENTITY_RESOLVER = "#iree_encoding.identity_resolver"

IREE_CPUS: dict[str, IreeCpu] = {
    # The AVX2 profile's tiles were measured with -cpu=haswell (docs/iree-data-tiling.md §3).
    "x86_64-avx2": IreeCpu(
        "haswell", _HASWELL, 32, "x86_64-unknown-unknown-eabi-elf", _X86_LAYOUT, "embedded-elf-x86_64",
        _CPU_RESOLVER, ("avx2", "fma", "f16c", "bmi2"), ("--iree-llvmcpu-target-cpu=haswell",),
    ),
    # "AVX-512F/BW/VNNI but no avx512bf16": exactly cascadelake (its tiles were measured with it).
    "x86_64-avx512": IreeCpu(
        "cascadelake", _CASCADELAKE, 64, "x86_64-unknown-unknown-eabi-elf", _X86_LAYOUT, "embedded-elf-x86_64",
        _CPU_RESOLVER, ("avx512f", "avx512bw", "avx512dq", "avx512vl", "avx512_vnni"),
        ("--iree-llvmcpu-target-cpu=cascadelake",),
    ),
    # No resolver: every encoding is the identity layout. The numbers of 'none' are the AVX2 host's.
    "none": IreeCpu(
        "haswell", _HASWELL, 32, "x86_64-unknown-unknown-eabi-elf", _X86_LAYOUT, "embedded-elf-x86_64",
        _IDENTITY_RESOLVER, ("avx2", "fma", "f16c", "bmi2"), ("--iree-llvmcpu-target-cpu=haswell",),
    ),
    # Cross-compiled only: an x86 host cannot run aarch64 code.
    "aarch64-neon": IreeCpu(
        "", "+neon,+reserve-x18", 16, "aarch64-unknown-unknown-eabi-elf", _ARM_LAYOUT, "embedded-elf-arm_64",
        _CPU_RESOLVER, (), (
            "--iree-llvmcpu-target-triple=aarch64-unknown-unknown-eabi-elf",
            "--iree-llvmcpu-target-cpu=generic",
            "--iree-llvmcpu-target-cpu-features=+neon",
        ),
    ),
}  # fmt: skip


def iree_cpu(target: str | Target) -> IreeCpu:
    """The IREE CPU for a target profile; custom profiles fall back by name (avx512 / neon / avx2)."""
    name = target if isinstance(target, str) else target.name
    if name in IREE_CPUS:
        return IREE_CPUS[name]
    lowered = name.lower()
    if "avx512" in lowered:
        return IREE_CPUS["x86_64-avx512"]
    if "aarch64" in lowered or "neon" in lowered or "arm" in lowered:
        return IREE_CPUS["aarch64-neon"]
    if not isinstance(target, str) and not target.encoding_resolver:
        return IREE_CPUS["none"]
    return IREE_CPUS["x86_64-avx2"]


@cache
def host_cpu_flags() -> frozenset[str]:
    """The ``flags`` of ``/proc/cpuinfo`` (empty when unreadable, e.g. not Linux)."""
    try:
        text = Path("/proc/cpuinfo").read_text()
    except OSError:
        return frozenset()
    m = re.search(r"^flags\s*:\s*(.*)$", text, re.MULTILINE)
    return frozenset(m.group(1).split()) if m else frozenset()


def runnable_here(target: str | Target) -> tuple[bool, str]:
    """Whether code compiled for ``target`` can run on this host, and if not, why (one line)."""
    cpu = iree_cpu(target)
    name = target if isinstance(target, str) else target.name
    if not cpu.is_x86:
        return False, f"{name}: {cpu.triple} code cannot run on this x86-64 host (compiled only)"
    flags = host_cpu_flags()
    if not flags:
        return False, f"{name}: cannot read /proc/cpuinfo to check the CPU features"
    missing = [f for f in cpu.required_host_flags if f not in flags]
    if missing:
        return False, f"{name}: this host lacks {', '.join(missing)} (compiled only)"
    return True, ""


def device_target_text(target: str | Target) -> str:
    """``#hal.device.target<"local", [#hal.executable.target<"llvm-cpu", ...>]>`` as IREE 3.13 prints it."""
    cpu = iree_cpu(target)
    config = (
        f'cpu = "{cpu.cpu}", cpu_features = "{cpu.features}", data_layout = "{cpu.data_layout}", '
        f"iree.encoding.resolver = {cpu.resolver}, max_stack_allocation_size = 32768 : i64, "
        f'native_vector_size = {cpu.native_vector_size} : i64, target_triple = "{cpu.triple}"'
    )
    return f'#hal.device.target<"local", [#hal.executable.target<"llvm-cpu", "{cpu.executable_format}", {{{config}}}>]>'
