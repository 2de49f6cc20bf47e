"""``calibrate`` on a noisy machine and with a bad fit (issue 52, point 5): nothing is timed or compiled
here. A fake compiler, a fake timer (the kernel and call times of each micro-program's cases from a
formula, disturbed where a test says) and a fake load reader stand in for IREE and the machine."""

from __future__ import annotations

import functools
import json
import math
from collections.abc import Callable
from pathlib import Path

import pytest

import egg_dispatch.cli.calibrate as cli_calibrate
import egg_dispatch.measure.calibrate as calibrate_mod
from egg_dispatch.cli import main
from egg_dispatch.iree.profiling import DispatchTimes
from egg_dispatch.measure.calibrate import Plan, calibration_from_samples, micro_programs, worst_fit
from egg_dispatch.measure.micro import Case, MicroProgram
from egg_dispatch.measure.noise import RETRIES, SPREAD_LIMIT, Noise, point_spread, spread_summary
from egg_dispatch.target.profile import Target, load_target

BASE = "x86_64-avx2"


def tiny_plan(quick: bool, target: Target) -> Plan:
    """Two contraction shapes, one generic shape, four chains and a fan: enough for each fit, cheap to fit."""
    return Plan(("f32,f32,f32",), ((8, 64, 64), (32, 128, 64)), (), ((16, 256),), (1, 2, 4, 16), 3, 0.01,
                fans=(2,))  # fmt: skip


def case_seconds(case: Case) -> float:
    """A machine's kernel time for one case: 0.2 µs plus 1 ns per 1000 of its sizes' product."""
    return 0.2e-6 + math.prod(max(s, 1) for s in case.sizes[:3]) * 1e-12


class FakeMachine:
    """``timer`` for ``calibrate``: each program's cases timed by ``case_seconds``, each call with
    ``overhead(program)`` beyond its kernels, the run scaled by ``disturb(function, run index)``."""

    def __init__(
        self,
        programs: list[MicroProgram],
        disturb: Callable[[str, int], float] = lambda fn, run: 1.0,
        overhead: Callable[[MicroProgram], float] = lambda p: (1.0 + 0.1 * p.dispatch_count + 0.2 * p.outputs) * 1e-6,
    ) -> None:
        self.programs = {p.function: p for p in programs}
        self.disturb, self.overhead = disturb, overhead
        self.runs: dict[str, int] = {}

    def __call__(self, vmfb: bytes, function: str, inputs: object, *, min_time: float) -> DispatchTimes:
        prog = self.programs[function]
        run = self.runs.get(function, 0)
        self.runs[function] = run + 1
        scale = self.disturb(function, run)
        seconds: dict[str, float] = {}
        for case in prog.cases:
            name = (
                f"{function}_dispatch_{case.dispatch}_x" if case.dispatch is not None else f"_encoding_0_{case.encode}"
            )
            seconds[name] = seconds.get(name, 0.0) + case_seconds(case) * scale
        kernels = sum(seconds.values())
        return DispatchTimes(seconds, dict.fromkeys(seconds, 1), 1, kernels + self.overhead(prog) * scale)


def run_calibrate(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, machine: Callable[[list[MicroProgram]], FakeMachine],
    load: float, *flags: str,
) -> tuple[int, FakeMachine]:  # fmt: skip
    """``egg-dispatch calibrate -o tmp/host.json FLAGS`` on the tiny plan, timed by ``machine``."""
    target = load_target(BASE)
    fake = machine(micro_programs(tiny_plan(False, target), target))
    monkeypatch.setattr(calibrate_mod, "plan_programs", tiny_plan)
    monkeypatch.setattr(cli_calibrate, "require_iree", lambda *a: None)
    monkeypatch.setattr(cli_calibrate, "runnable_here", lambda t: (True, ""))
    real = calibrate_mod.calibrate
    monkeypatch.setattr(calibrate_mod, "calibrate", functools.partial(
        real, timer=fake, compiler=lambda p: p.function.encode(), load=lambda: load))  # fmt: skip
    return main(["calibrate", "-o", str(tmp_path / "host.json"), "--base", BASE, *flags]), fake


def test_point_spread_is_over_the_fastest_repeats() -> None:
    assert point_spread([1.0, 1.1, 1.0], 3) == pytest.approx(0.1)
    assert point_spread([1.0, 2.0, 1.0, 1.0], 3) == 0.0  # a disturbed repeat replaced by a retry
    assert point_spread([1.0], 3) == 0.0 and point_spread([1.0, 1.5], 1) == pytest.approx(0.4)
    summary = spread_summary({"a": [0.0, 0.2], "b": [0.02]})
    assert summary["noisy_points"] == 1 and summary["max"] == 0.2 and summary["by_kind"]["a"]["median"] == 0.1
    assert spread_summary({}) == {}


def test_load_counts_the_benchmark_itself_as_one_cpu() -> None:
    noise = Noise(cpus=2, load_start=0.3, load_during=[1.8])
    assert noise.other_load() == pytest.approx(0.8) and not noise.busy() and noise.warning() is None
    noise.load_during.append(3.5)
    assert noise.busy() and "other load 2.5 on 2 CPU(s)" in (noise.warning() or "")


def test_a_quiet_run_writes_the_profile_with_its_spread(monkeypatch: pytest.MonkeyPatch, tmp_path: Path,
                                                        capsys: pytest.CaptureFixture[str]) -> None:  # fmt: skip
    code, fake = run_calibrate(monkeypatch, tmp_path, FakeMachine, 0.1, "--samples", str(tmp_path / "s.json"))
    assert code == 0, capsys.readouterr().err
    assert "noisy" not in capsys.readouterr().err
    assert set(fake.runs.values()) == {3}  # nothing retried
    t = load_target(str(tmp_path / "host.json"))
    spread = t.provenance["spread"]
    assert spread["noisy_points"] == 0 and spread["max"] == 0.0 and spread["points"] >= 10
    assert {"mmt4d.f32,f32,f32", "launch", "elementwise"} <= set(spread["by_kind"])
    noise = t.provenance["noise"]
    assert noise["retry_rounds"] == 0 and noise["noisy_after_retries"] == [] and not noise["busy"]
    assert t.provenance["worst_fit"]["over_limit"] is False and "forced" not in t.provenance
    # the samples file keeps each point's spread, and a refit of it still says how noisy the run was
    samples = json.loads((tmp_path / "s.json").read_text())
    assert all("spread" in row for rows in samples["samples"].values() for row in rows)
    assert "spread" in calibrate_mod.profile_dict(load_target(BASE), calibration_from_samples(samples, t),
                                                  quick=True, measured=samples["provenance"])["provenance"]  # fmt: skip


def test_a_disturbed_point_is_retried_and_a_recovered_one_is_not_reported(monkeypatch: pytest.MonkeyPatch) -> None:
    target = load_target(BASE)
    programs = micro_programs(tiny_plan(False, target), target)
    victim = programs[0].function
    fake = FakeMachine(programs, disturb=lambda fn, run: 1.5 if fn == victim and run == 1 else 1.0)
    monkeypatch.setattr(calibrate_mod, "plan_programs", tiny_plan)
    cal = calibrate_mod.calibrate(target, timer=fake, compiler=lambda p: b"", load=lambda: 0.0)
    assert fake.runs[victim] == 4 and all(n == 3 for fn, n in fake.runs.items() if fn != victim)
    assert cal.noise is not None and cal.noise.rounds == 1 and cal.noise.retried == 1 and cal.noise.noisy == []
    assert max(cal.spread["mmt4d"]) == 0.0  # the fastest three agree


def test_a_noisy_run_is_retried_then_reported(monkeypatch: pytest.MonkeyPatch, tmp_path: Path,
                                              capsys: pytest.CaptureFixture[str]) -> None:  # fmt: skip
    def machine(programs: list[MicroProgram]) -> FakeMachine:
        victim = programs[0].function  # every run of it 15% slower than the one before: drifting
        return FakeMachine(programs, disturb=lambda fn, run: 1.0 + 0.15 * run if fn == victim else 1.0)

    code, fake = run_calibrate(monkeypatch, tmp_path, machine, 100.0)
    err = capsys.readouterr().err
    victim = next(iter(fake.programs))
    assert code == 0  # said, not refused: the fits are still good
    assert fake.runs[victim] == 3 + RETRIES
    line = next(x for x in err.splitlines() if x.startswith("warning: noisy machine"))
    assert f"after {RETRIES} retry round(s) (worst {victim} " in line and "other load" in line
    t = load_target(str(tmp_path / "host.json"))
    assert t.provenance["noise"]["busy"] and t.provenance["noise"]["retry_rounds"] == RETRIES
    assert t.provenance["noise"]["noisy_after_retries"][0][0].startswith(victim)
    assert t.provenance["spread"]["noisy_points"] >= 1 and t.provenance["spread"]["max"] > SPREAD_LIMIT


def erratic_overheads(programs: list[MicroProgram]) -> FakeMachine:
    """Chains and fans whose call overhead no per-call + per-result + per-dispatch formula fits."""
    wild = {"chain1": 1e-6, "chain2": 50e-6, "chain4": 0.5e-6, "chain16": 40e-6, "fan2": 0.2e-6}
    return FakeMachine(programs, overhead=lambda p: wild.get(p.function, 1e-6))


def test_a_bad_fit_is_refused_and_force_writes_it(monkeypatch: pytest.MonkeyPatch, tmp_path: Path,
                                                  capsys: pytest.CaptureFixture[str]) -> None:  # fmt: skip
    out = tmp_path / "host.json"
    code, _ = run_calibrate(monkeypatch, tmp_path, erratic_overheads, 0.0)
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 1 and not out.exists()
    assert err[-1].startswith(f"error: {out} not written: fit launch misses its own 5 samples by ")
    assert "--force" in err[-1]
    code, _ = run_calibrate(monkeypatch, tmp_path, erratic_overheads, 0.0, "--force")
    assert code == 0 and "warning: --force" in capsys.readouterr().err
    prov = load_target(str(out)).provenance
    assert prov["forced"] and prov["worst_fit"]["fit"] == "launch" and prov["worst_fit"]["error"] > math.log(2)


def test_a_fit_on_two_samples_is_not_judged() -> None:
    target = load_target(BASE)
    cal = calibrate_mod.Calibration()
    cal.chains = [(1, 1, 1e-8, 5e-6), (8, 1, 1e-5, 1.1e-5)]  # more overhead with one dispatch than eight
    cal.kernels, cal.residuals = calibrate_mod.fit_kernels(cal, target)
    assert cal.residuals["launch"] > math.log(2) and worst_fit(cal, target) is None
