"""``egg-dispatch calibrate [-o FILE] [--quick]``: measure this machine's target profile.

Compiles and times micro-programs with IREE (``measure.calibrate`` says what and how), fits the cost
model's kernel costs, and writes a profile that ``--target host`` (the default of every command) then
uses, or ``--target-file FILE`` when written elsewhere with ``-o``. Default ≤ 10 minutes on a 2-core
machine (``--quick`` ≤ 2), with a progress bar on stderr; Ctrl-C leaves the previous profile as it was.
A run on a busy machine is said so: points whose repeats spread over 10% are timed again (at most
two rounds), and what stays noisy, or other load over half the CPUs, is a warning line; the profile
records the spread (overall and per kind of sample) and the load (``provenance.spread``,
``provenance.noise``). A profile with a fit that misses its own samples by more than 2x in the median
(``measure.calibrate.REFUSE_ERROR``) is not written, unless ``--force``.
Exit codes: 0 written, 1 not written: a fit's error on its own samples over the limit (the message
names the worst fit; ``--force`` writes it anyway), 2 bad input (IREE not installed, unknown CPU, bad
flags).
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

from egg_dispatch.cli.args import (
    InputError,
    add_jobs_argument,
    existing_file,
    output_file,
    positive_float,
    require_iree,
)
from egg_dispatch.cli.progress import ProgressBar
from egg_dispatch.emit.iree.module import runnable_here
from egg_dispatch.target.host import calibrated_profile_path, host_cpu, host_isa_target
from egg_dispatch.target.profile import TargetError, builtin_target_names, load_target, write_profile

__all__ = ["register", "run"]

DEFAULT_SECONDS = 600.0
QUICK_SECONDS = 120.0


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "calibrate",
        help="measure this machine's target profile with IREE (for --target host)",
        description="Compile and time micro-programs with iree-compile / iree-benchmark-module on this CPU, fit "
        "the cost model's kernel costs and write a target profile (default: the user's cache directory, which "
        "--target host reads).",
    )
    p.add_argument(
        "-o",
        "--output",
        type=output_file,
        metavar="FILE",
        help="where to write the profile (default: the cache, for --target host)",
    )
    p.add_argument(
        "--quick", action="store_true", help=f"fewer sizes and types (about {QUICK_SECONDS / 60:.0f} minutes)"
    )
    p.add_argument(
        "--base",
        choices=builtin_target_names(),
        metavar="T",
        help="built-in profile whose tiles and limits the measured one keeps (default: this CPU's ISA)",
    )
    p.add_argument(
        "--max-seconds",
        type=positive_float,
        metavar="S",
        help=f"stop measuring after S seconds and fit what was measured (default {DEFAULT_SECONDS:g}, quick "
        f"{QUICK_SECONDS:g})",
    )
    add_jobs_argument(p, "micro-programs")
    p.add_argument(
        "--samples",
        type=output_file,
        metavar="FILE",
        help="also write every measurement (kind, sizes, element types, seconds) and the fits as JSON",
    )
    p.add_argument(
        "--refit",
        type=existing_file,
        metavar="SAMPLES",
        help="measure nothing: fit the measurements a --samples FILE recorded (on whatever machine) again",
    )
    p.add_argument(
        "--force",
        action="store_true",
        help="write the profile even when a fit misses its own samples by more than 2x (exit 1 otherwise)",
    )
    p.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    if args.refit:
        return _refit(args)
    require_iree("calibrate", ("iree-compile", "iree-benchmark-module", "iree-profile"))
    base_name = args.base
    if base_name is None:
        base_name, why = host_isa_target()
        if base_name is None:
            cpu, _ = host_cpu()
            raise InputError(f"error: no built-in profile for this CPU ({cpu}: {why}); pass --base")
    if base_name not in builtin_target_names():
        raise InputError(f"--base: error: not a built-in profile ({', '.join(builtin_target_names())})")
    try:
        base = load_target(base_name)
    except TargetError as e:
        raise InputError(f"--base: error: {e}") from None
    runs, why = runnable_here(base)
    if not runs:  # calibrate times the base's code on this CPU: code it cannot run would crash the benchmark
        raise InputError(f"--base: error: {why}; calibrate measures on this CPU, so pass a profile it runs")
    if args.max_seconds is not None and not args.max_seconds > 0:
        raise InputError(f"--max-seconds: error: must be positive, got {args.max_seconds:g}")
    out = Path(args.output) if args.output else calibrated_profile_path()
    from egg_dispatch.measure.calibrate import calibrate, profile_dict

    budget = args.max_seconds or (QUICK_SECONDS if args.quick else DEFAULT_SECONDS)
    start = time.monotonic()
    bar = ProgressBar("calibrate")
    try:
        cal = calibrate(base, quick=args.quick, progress=bar, deadline=start + budget * 0.9, jobs=args.jobs)
    finally:
        bar.close()
    if not cal.samples:
        raise InputError("error: nothing was measured within the time budget")
    profile = profile_dict(base, cal, quick=args.quick)
    if cal.noise is not None and (warning := cal.noise.warning()):
        print(warning, file=sys.stderr)
    if args.samples:  # the measurements are kept even when the profile is refused: --refit can fit them
        from egg_dispatch.measure.calibrate import samples_dict

        write_profile(samples_dict(cal, profile), Path(args.samples))
    if _refused(profile, out, args.force):
        return 1
    write_profile(profile, out)
    k = cal.kernels
    assert k is not None
    print(
        f"wrote {out} ({time.monotonic() - start:.0f} s; base {base.name}{'; ' + cal.stopped if cal.stopped else ''})"
    )
    _print_residuals(cal.residuals)
    f32 = k.mmt4d.get("f32,f32,f32")
    if f32 is not None:
        print(
            f"  mmt4d f32 {f32.rate_g:.1f} GFLOP/s; launch {k.launch_us:.2f} us; call {k.call_us:.2f} us; "
            f"result {k.output_us:.2f} us; transient step {k.transient_us:.2f} us"
        )
    if k.alloc.measured:
        mib = 1 << 20
        print(f"  a buffer allocated per call: {k.alloc.seconds(mib, mib) * 1e6:.1f} us per MiB at 1 MiB")
    if k.throttle > 0:
        print(
            f"  plain contractions {k.throttle:.0%} slower in a plan with an mmt4d kernel of "
            f"{k.throttle_us:.0f} us or more"
        )
    return 0


def _refit(args: argparse.Namespace) -> int:
    """``calibrate --refit SAMPLES``: the recorded measurements fitted again, with their own provenance."""
    import json

    from egg_dispatch.measure.calibrate import calibration_from_samples, profile_dict

    path = Path(args.refit)
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
        measured = data["provenance"]
        base_name = args.base or measured["base_profile"]
        base = load_target(base_name)
        cal = calibration_from_samples(data, base)
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as e:
        raise InputError(f"{path}: error: not a calibration samples file: {e}") from None
    except (KeyError, TypeError, ValueError) as e:
        raise InputError(f"{path}: error: not a calibration samples file (field {e})") from None
    if not cal.samples:
        raise InputError(f"{path}: error: no measurements in it")
    out = Path(args.output) if args.output else calibrated_profile_path()
    profile = profile_dict(base, cal, quick=False, measured=measured)
    if _refused(profile, out, args.force):
        return 1
    write_profile(profile, out)
    print(f"wrote {out} (refit of {path}: measured on {measured.get('cpu')}, {measured.get('date')})")
    if args.samples:  # the same measurements with the new fits next to them (what the notebook plots)
        from egg_dispatch.measure.calibrate import samples_dict

        write_profile(samples_dict(cal, profile), Path(args.samples))
        print(f"wrote {args.samples}")
    _print_residuals(cal.residuals)
    return 0


def _refused(profile: dict, out: Path, force: bool) -> bool:
    """True (and one line on stderr) when the profile's worst fit is over the limit and not ``force``;
    with ``force`` the profile says it was written past the limit (``provenance.forced``)."""
    worst = profile["provenance"].get("worst_fit")
    if not worst or not worst["over_limit"]:
        return False
    if force:
        profile["provenance"]["forced"] = True
        print(
            f"warning: --force: writing a profile whose fit {worst['fit']} misses its own samples by "
            f"{worst['error']:.2f} (limit {worst['limit']:.2f})",
            file=sys.stderr,
        )
        return False
    print(
        f"error: {out} not written: fit {worst['fit']} misses its own {worst['samples']} samples by "
        f"{worst['error']:.2f} (median |log(model/measured)|; limit {worst['limit']:.2f}): calibrate again on a "
        "quiet machine, or --force to write it anyway",
        file=sys.stderr,
    )
    return True


def _print_residuals(residuals: dict[str, float]) -> None:
    """Each fit's stated residual; a fit's shape residuals (``SHAPE_KEY``) by their leave-one-out mean."""
    from egg_dispatch.measure.kernel_fit import SHAPE_KEY

    for key, r in sorted(residuals.items()):
        if key.endswith(SHAPE_KEY):
            print(f"  fit {key}: leave-one-out mean |log(model/measured)| {r:.2f}")
        else:
            print(f"  fit {key}: median |log(model/measured)| {r:.2f}")
