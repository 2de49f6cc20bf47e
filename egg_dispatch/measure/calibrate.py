"""``egg-dispatch calibrate``: a target profile measured on this machine.

Micro-programs (``measure.micro``) cover what the cost model prices: data-tiled contractions with
their operands pre-packed (over a grid of M, N, K, per element-type triple), the same with the unpack
or one operand's pack inside the contraction's dispatch, the unpack followed by a bias + ReLU in that
dispatch (``consumer_after_unpack``: the extra over the unpack alone), an encode inside its producer's
dispatch, after an elementwise generic or at the end of a contraction's (``producer_pack``), plain
(non-data-tiled) contractions, encode and decode dispatches, elementwise and reduction generics (and
elementwise ones with one transcendental body op each, ``micro.MATH_OPS``: ``op_weights``), ``linalg.softmax`` and
``iree_linalg_ext.attention`` dispatches (opaque to the model), slices copied between dispatches (against
the same slice loaded in its consumer: whole-call times), plain contractions timed alone and next to
data-tiled ones of several lengths (``throttle_fit``: the clock drop a long mmt4d kernel leaves behind),
and chains and fans of almost empty dispatches for the per-call overheads. Each is emitted in IREE's
post-dispatch-creation form (``emit.iree``, so the dispatch boundaries are ours), compiled with
``iree-compile`` for the target's CPU (the flags ``bench`` and ``tune`` use), and run by
``iree-benchmark-module`` on the single-threaded ``local-sync`` device with IREE's host-execution
profiling, which gives every dispatch's kernel time; the whole call is also timed without profiling.
Repeats are interleaved across programs and the fastest is kept: other work on the machine only ever
adds time, so the minimum is the estimate least disturbed by it. But the fastest of disturbed repeats
is disturbed too: a program holding a point whose repeats spread over ``noise.SPREAD_LIMIT`` is timed
again (``noise.RETRIES`` rounds at most), and what stays noisy, with the load seen, is reported
(``Calibration.noise``) and recorded in the profile (``provenance.spread``, ``provenance.noise``).

The samples are fitted in ``measure.kernel_fit`` (``fit_kernels``, on the numerics of
``measure.fit``): ``seconds = fixed + work / rate + bytes / bandwidth`` per kind, each with its median
|log(model / measured)|, a table the model interpolates where that exceeds ``fit.TABLE_RESIDUAL``,
the per-call overheads from the chains and fans (call = per-call + results x output + [any
transient] x transient step + dispatches x launch + Σ kernels), then the memory knee and the
per-shape residuals. The profile (``profile_dict``) carries provenance for every number (CPU, flags,
IREE version, date, residual, the worst fit's error on its own samples: ``worst_fit``, which the CLI
refuses past ``REFUSE_ERROR``) and is written by ``target.profile.write_profile``, atomically, so an
interrupted run leaves the previous profile as it was.
"""

from __future__ import annotations

import datetime
import math
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from importlib import metadata

from egg_dispatch.egraph.facts import fused_footprint_legal
from egg_dispatch.emit.iree.module import emit_iree, iree_cpu
from egg_dispatch.iree.profiling import DispatchTimes, profile_module
from egg_dispatch.iree.tools import compile_module
from egg_dispatch.measure.kernel_fit import Calibration, fit_errors, fit_kernels, layout_bytes
from egg_dispatch.measure.micro import (
    MATH_OPS,
    UNPACK_IN_DISPATCH,
    Case,
    MicroProgram,
    buffer,
    chain,
    contractions,
    encode_after_contraction,
    fan,
    generics,
    opaque,
    producer_pack,
    slice_copy,
    throttle,
)
from egg_dispatch.measure.noise import (
    RETRIES,
    LoadReader,
    Noise,
    point_spread,
    read_load,
    spread_summary,
    worst_first,
)
from egg_dispatch.mlir.parser import parse_mlir
from egg_dispatch.target.host import host_cpu
from egg_dispatch.target.kernels import MATVEC, Fit, kernels_to_dict
from egg_dispatch.target.profile import Target

__all__ = [
    "MATH_OP_ELEMENTS",
    "REFUSE_ERROR",
    "Plan",
    "Timer",
    "calibrate",
    "calibration_from_samples",
    "micro_programs",
    "plan_programs",
    "profile_dict",
    "samples_dict",
    "size_classes",
    "unique_encode_groups",
    "worst_fit",
]

MATH_OP_ELEMENTS = (512, 1 << 16)
"""An op's weight is measured on generics of this many elements (below, the fixed cost of the
dispatch hides it; far above, the generic streams from memory and its body's work overlaps that)."""


@dataclass
class Plan:
    """What one calibration run measures (``--quick`` is the smaller one)."""

    types: tuple[str, ...]
    contraction_shapes: tuple[tuple[int, int, int], ...]
    in_dispatch_shapes: tuple[tuple[int, int, int], ...]
    generic_shapes: tuple[tuple[int, int], ...]
    chains: tuple[int, ...]
    repeats: int
    min_time: float
    fans: tuple[int, ...] = ()
    slice_shapes: tuple[tuple[int, int], ...] = ()
    """[rows, cols] f32 slices copied between dispatches (``micro.slice_copy``)."""
    softmax_shapes: tuple[tuple[int, int], ...] = ()
    """[R, C] f32 ``linalg.softmax`` over C (``micro.opaque``)."""
    attention_shapes: tuple[tuple[int, int, int, int, int], ...] = ()
    """(B, M, K1, K2, N) f32 ``iree_linalg_ext.attention`` (``micro.opaque``)."""
    producer_shapes: tuple[tuple[str, tuple[tuple[int, int, int], ...]], ...] = ()
    """(element type, (B, S, K) shapes) of elementwise producers packed in their dispatch and apart
    (``micro.producer_pack``; B = 0: no collapse), a program pair per shape."""
    math_ops: tuple[str, ...] = ()
    """Body ops whose weight against an add is measured (``micro.MATH_OPS``, ``KernelCosts.op_weights``)."""
    buffer_bytes: tuple[int, ...] = ()
    """Sizes of the result buffers whose per-call cost is measured (``micro.buffer``); the smallest is
    the baseline the others are measured against."""
    throttle_shapes: tuple[tuple[int, int, int], ...] = ()
    """(M, N, K) of the f32 mmt4d kernels the plain ``micro.THROTTLE_VICTIMS`` are timed next to (and
    once without one): how long an mmt4d must run to slow them, and by how much (``throttle_fit``)."""
    encode_after_shapes: tuple[tuple[int, int, int], ...] = ()
    """(M, N, K) of f32 contractions whose result's encode is timed inside their dispatch and apart
    (``micro.encode_after_contraction``), a program pair per shape: ``producer_pack["f32:contraction"]``."""


def plan_programs(quick: bool, target: Target) -> Plan:
    types = tuple(t for t in ("f32,f32,f32", "f16,f16,f32", "i8,i8,i32") if target.tile(t) is not None) or (
        "f32,f32,f32",
    )
    # N != K and M not in {N, K}: the LHS [M, K], RHS [N, K] and result [M, N] of a case never share a
    # shape, so IREE's encode names tell them apart (``unique_encode_groups``).
    if quick:
        return Plan(types[:2], ((1, 64, 96), (16, 256, 384), (128, 512, 768)), ((8, 32, 48), (32, 64, 48)),
                    ((16, 256), (256, 1024)), (1, 2, 16), 3, 0.05, fans=(4,),
                    slice_shapes=((64, 256), (768, 768)), softmax_shapes=((128, 16), (64, 64), (1024, 128)),
                    attention_shapes=((4, 16, 8, 16, 8), (8, 16, 8, 16, 8), (12, 64, 64, 64, 64)),
                    buffer_bytes=(4096, 1 << 18, 1 << 22),
                    producer_shapes=(("f32", ((2, 8, 64),)),), math_ops=("math.exp", "math.erf"),
                    throttle_shapes=((64, 16, 768), (64, 64, 768)), encode_after_shapes=((32, 128, 32),))  # fmt: skip
    grid = tuple((m, n, n + n // 2) for m in (1, 8, 32, 128, 512) for n in (64, 256, 1024))
    # a transformer block's small projections (K of 32, N of 48 or 96: heads, MLP width) and a few
    # tiny ones, which the square-ish grid does not reach: there the fits extrapolated, and missed what
    # a block's matmuls measured (docs/measurements.md §3)
    grid += ((16, 48, 32), (16, 96, 32), (16, 32, 96), (64, 128, 32), (64, 32, 128), (4, 64, 32))
    grid += ((8, 16, 32), (2, 32, 16), (8, 32, 16))
    # matvecs of both aspect ratios: M = 1 shapes of one aspect left the :m1 fits exact through their
    # points and far off for a weight of the other aspect (docs/measurements.md §3)
    grid += ((1, 2048, 512), (1, 512, 2048))
    # RHS sizes either side of the L2 (1.5 and 3 MB f32): where a plain contraction's RHS stops staying
    # in the cache, and whether all of it or the part beyond is read again (``with_reread``); the grid's
    # RHS sizes jump from 0.4 MB to 6 MB
    grid += ((64, 512, 768), (64, 1024, 768))
    # and an RHS of exactly 2 MiB (f16 [512, 2048], f32 [512, 1024]): at the L2's own size a plain
    # [K, N] matmul already slows, and without a sample there the re-read knee fell at 2 MiB
    # (docs/measurements.md §3)
    grid += ((128, 2048, 512), (64, 512, 1024))
    small: tuple[tuple[int, int, int], ...] = (
        (1, 32, 48), (4, 64, 32), (16, 64, 32), (16, 32, 64), (32, 48, 64), (8, 64, 48), (32, 64, 48)
    )  # fmt: skip
    # fused packs of the sizes transformer blocks fuse (M of 16-128, N up to 256): their cost per element
    # changes with the shape (``KernelCosts.fused_pack``), and the shapes IREE's codegen takes fused
    # (the footprint model drops the rest) span little more than this grid
    small += ((2, 128, 48), (16, 128, 48), (32, 128, 48), (48, 64, 32), (64, 32, 48), (64, 96, 32),
              (96, 32, 64), (128, 32, 48), (8, 256, 32), (16, 256, 48), (1, 256, 96))  # fmt: skip
    gen = ((1, 64), (8, 64), (1, 512), (16, 256), (4, 1024), (64, 1024), (256, 4096))
    slices = ((16, 256), (64, 256), (64, 768), (128, 768), (256, 768), (768, 768), (1536, 768))
    # the softmax and attention of transformer blocks: opaque to the model, which a flops formula priced
    # several times too fast (docs/measurements.md §3); heads x tokens rows of keys-long softmaxes, and
    # (B, M, K1, K2, N) attentions of the exported blocks and of GPT-2 small
    softmax = ((128, 16), (512, 16), (64, 64), (256, 64), (1024, 128), (768, 512))
    attention = ((4, 16, 8, 16, 8), (8, 16, 8, 16, 8), (4, 32, 16, 32, 16), (8, 64, 32, 64, 32),
                 (12, 64, 64, 64, 64), (8, 128, 64, 128, 64))  # fmt: skip
    # buffers a plan allocates on every call, 4 KiB to 16 MiB: their cost comes beyond the kernels, where
    # no kernel time shows it, and a model without it priced it at 0 (docs/measurements.md §3)
    buffers = (4096, 1 << 16, 1 << 18, 1 << 20, 1 << 22, 1 << 24)
    # an elementwise producer (a bias, an activation, a norm's scale, a cast) and the pack of its result:
    # IREE fuses them into one dispatch, which can run several times the two apart at the sizes of the
    # exported blocks; the [B, S, K] forms are a linear layer of a PyTorch export reading its tokens
    # through a collapse. One shape per program: next to other cases their buffers' first touch
    # (``alloc``) swamped the difference. The fused form's extra changes sign with the size (fused is
    # faster on small tensors, slower on large ones), so the sizes between, a GPT-2 block's MLP
    # activations, are measured rather than interpolated (docs/measurements.md §3)
    producers: tuple[tuple[str, tuple[tuple[int, int, int], ...]], ...]
    producers = (("f32", ((0, 16, 64), (0, 32, 128), (0, 64, 256), (0, 64, 768))),
                 ("f32", ((2, 8, 64), (2, 16, 128), (1, 64, 768))))  # fmt: skip
    if "f16,f16,f32" in types:
        producers += (("f16", ((2, 8, 64), (2, 16, 128), (1, 128, 768))),)
    # mmt4d kernels of several lengths next to plain matmuls, on both sides of the length from which the
    # plain ones run slower (docs/measurements.md §3)
    throttles = ((64, 16, 768), (64, 32, 768), (64, 64, 768), (64, 192, 768))
    # a contraction's dispatch ending with the encode of its result for the next contraction (IREE's own
    # plans of transformer blocks): there the encode costs less than the dispatch of its own that the
    # model charged (docs/measurements.md §3)
    encode_after = ((16, 64, 64), (32, 96, 32), (32, 128, 32), (64, 256, 64), (128, 512, 128))
    return Plan(types, grid, small, gen, (1, 2, 4, 16, 48), 3, 0.1, fans=(2, 8), slice_shapes=slices,
                softmax_shapes=softmax, attention_shapes=attention, buffer_bytes=buffers,
                producer_shapes=producers, math_ops=MATH_OPS, throttle_shapes=throttles,
                encode_after_shapes=encode_after)  # fmt: skip


def unique_encode_groups(
    shapes: Sequence[tuple[int, int, int]], kind: str, types: str
) -> list[list[tuple[int, int, int]]]:
    """Split contraction shapes into groups whose encode / decode dispatches all have distinct shapes.

    IREE names an encode dispatch ``_encoding_<N>_encode_<shape>x<type>_to_<shape>x<type>``: the name
    does not say which encoding (the narrow-M tiles of an M=1 operand differ from an M=512 one of the same
    [N, K] shape), so in one program two encodes of the same shape could not be told apart. First fit,
    in the given order: deterministic."""
    lhs_t, rhs_t, acc_t = types.split(",")
    groups: list[tuple[set[str], list[tuple[int, int, int]]]] = []
    for m, n, k in shapes:
        names = set()
        if kind not in ("matmul", "matmul_kn", "mmt4d+pack_lhs"):
            names.add(f"{m}x{k}x{lhs_t}")
        if kind not in ("matmul", "matmul_kn", "mmt4d+pack_rhs"):
            names.add(f"{n}x{k}x{rhs_t}")
        if kind not in ("matmul", "matmul_kn") and kind not in UNPACK_IN_DISPATCH:
            names.add(f"{m}x{n}x{acc_t}")
        for used, members in groups:
            if not used & names:
                used |= names
                members.append((m, n, k))
                break
        else:
            groups.append((names, [(m, n, k)]))
    return [members for _, members in groups]


def size_classes(shapes: Sequence[tuple[int, int, int]]) -> list[list[tuple[int, int, int]]]:
    """Shapes grouped by the size of their largest operand, within a factor 4 of each other.

    One program runs all its cases in a loop, so a small case sharing a program with a [1024, 1536]
    one is measured with its caches flushed by its neighbour, several times slower than among small
    neighbours (docs/measurements.md §3). Each size class is a program of its own, so every case is
    measured as it runs among dispatches of its own size."""
    by_class: dict[int, list[tuple[int, int, int]]] = {}
    for m, n, k in shapes:
        largest = max(m * k, n * k, m * n)
        by_class.setdefault(int(math.log(max(largest, 1), 4)), []).append((m, n, k))
    return [by_class[c] for c in sorted(by_class)]


def micro_programs(plan: Plan, target: Target) -> list[MicroProgram]:
    """The calibration programs; in-dispatch packs only where IREE's codegen takes them (the fused-pack
    footprint model the e-graph's legality uses, ``egraph.facts.fused_footprint_legal``)."""
    out: list[MicroProgram] = []

    def add(name: str, kind: str, types: str, shapes: Sequence[tuple[int, int, int]]) -> None:
        groups = []
        for size_class in size_classes(shapes):
            plain = kind in ("matmul", "matmul_kn")
            groups += [size_class] if plain else unique_encode_groups(size_class, kind, types)
        for i, group in enumerate(groups):
            out.append(contractions(f"{name}_{i}" if len(groups) > 1 else name, kind, types, group))

    for types in plan.types:
        tag = types.split(",")[0]
        if target.encoding_resolver:
            add(f"mmt4d_{tag}", "mmt4d", types, plan.contraction_shapes)
        add(f"matmul_{tag}", "matmul", types, plan.contraction_shapes)
        add(f"matmul_kn_{tag}", "matmul_kn", types, plan.contraction_shapes)
    f32 = "f32,f32,f32"
    if not target.encoding_resolver:  # IREE without data tiling: plain contractions, generics, overheads
        return out + _generic_programs(plan) + _overhead_programs(plan)
    add("unpack_f32", "mmt4d+unpack", f32, plan.contraction_shapes)
    add("consumer_f32", "mmt4d+unpack+bias", f32, plan.contraction_shapes)
    lhs_ok = [s for s in plan.in_dispatch_shapes if _fused_ok(target, f32, s, 0)]
    rhs_ok = [s for s in plan.in_dispatch_shapes if _fused_ok(target, f32, s, 1)]
    if lhs_ok or rhs_ok:
        add("base_small_f32", "mmt4d", f32, sorted(set(lhs_ok) | set(rhs_ok)))
    if lhs_ok:
        add("pack_lhs_f32", "mmt4d+pack_lhs", f32, lhs_ok)
    if rhs_ok:
        add("pack_rhs_f32", "mmt4d+pack_rhs", f32, rhs_ok)
    for element, shapes in plan.producer_shapes:
        for b, m, k in shapes:
            tag = f"{element}_{b}x{m}x{k}"
            out += [producer_pack(f"producer_{tag}_{form}", element, [(b, m, k)], form == "fused")
                    for form in ("fused", "apart")]  # fmt: skip
    for m, n, k in plan.encode_after_shapes:
        out += [encode_after_contraction(f"encode_after_{m}x{n}x{k}_{form}", (m, n, k), form == "fused")
                for form in ("fused", "apart")]  # fmt: skip
    if plan.throttle_shapes and f32 in plan.types:
        out.append(throttle("throttle_none", None))
        out += [throttle(f"throttle_{m}x{n}x{k}", (m, n, k)) for m, n, k in plan.throttle_shapes]
    return out + _generic_programs(plan) + _overhead_programs(plan)


def _generic_programs(plan: Plan) -> list[MicroProgram]:
    """Elementwise and reduction generics, one program per size class (as ``size_classes`` does for
    contractions): a small generic next to a large one measured several times its time alone, and the
    small generics of a model block run as fast as alone (docs/measurements.md §3)."""
    by_class: dict[int, list[tuple[int, int]]] = {}
    for r, n in plan.generic_shapes:
        by_class.setdefault(int(math.log(max(r * n, 1), 4)), []).append((r, n))
    out: list[MicroProgram] = []
    for i, c in enumerate(sorted(by_class)):
        shapes = by_class[c]
        out.append(generics(f"elementwise1_{i}", "elementwise", shapes, 1))
        out.append(generics(f"elementwise4_{i}", "elementwise", shapes, 4))
        mid = [(r, n) for r, n in shapes if MATH_OP_ELEMENTS[0] <= r * n <= MATH_OP_ELEMENTS[1]]
        if mid and plan.math_ops:
            out.append(generics(f"elementwise_ops_{i}", "elementwise_op", mid, math_ops=plan.math_ops))
        out.append(generics(f"reduction_{i}", "reduction", shapes))
    # small and large apart, as for the generics: a small case right after a large one runs on caches
    # the large one flushed
    for kind, opaque_shapes in (("softmax", plan.softmax_shapes), ("attention", plan.attention_shapes)):
        half = (len(opaque_shapes) + 1) // 2
        for i, part in enumerate((opaque_shapes[:half], opaque_shapes[half:])):
            if part:
                out.append(opaque(f"{kind}_{i}", kind, part))
    return out


def _overhead_programs(plan: Plan) -> list[MicroProgram]:
    out = [chain(f"chain{n}", n) for n in plan.chains] + [fan(f"fan{n}", n) for n in plan.fans]
    for r, c in plan.slice_shapes:
        out += [slice_copy(f"slice_top_{r}x{c}", r, c, True), slice_copy(f"slice_in_{r}x{c}", r, c, False)]
    out += [buffer(f"buffer_{n}", n) for n in plan.buffer_bytes]
    return out


def _fused_ok(target: Target, types: str, sizes: tuple[int, int, int], operand: int) -> bool:
    _, packed = layout_bytes(target, types, sizes, operand)
    _, acc = layout_bytes(target, types, sizes, 2)
    return fused_footprint_legal(target, [packed], acc)


def _lookup(times: DispatchTimes, prog: MicroProgram, case: Case) -> float | None:
    """The kernel time of the dispatch that measures ``case``; None when it did not run or when two
    encodes of one case have the same shape (an LHS and RHS both [32, 32]: IREE's names cannot tell
    them apart, ``unique_encode_groups``)."""
    if case.dispatch is not None:
        prefix = f"{prog.function}_dispatch_{case.dispatch}_"
        return next((s for name, s in times.seconds.items() if name.startswith(prefix)), None)
    pattern = re.compile(rf"_encoding_\d+_{re.escape(case.encode or '')}")
    found = [s for name, s in times.seconds.items() if pattern.fullmatch(name)]
    same = sum(1 for c in prog.cases if c.encode == case.encode)
    return found[0] if len(found) == 1 and same == 1 else None


Timer = Callable[..., DispatchTimes]
"""How one program is timed: ``profile_module(vmfb, function, inputs, min_time=...)`` (tests pass a fake)."""


def calibrate(
    target: Target,
    *,
    quick: bool = False,
    progress: Callable[[str, int, int], None] | None = None,
    deadline: float | None = None,
    clock: Callable[[], float] | None = None,
    jobs: int = 2,
    timer: Timer | None = None,
    compiler: Callable[[MicroProgram], bytes] | None = None,
    load: LoadReader | None = None,
) -> Calibration:
    """Measure the micro-programs for ``target``'s CPU and fit its kernel costs (see module doc).
    ``deadline`` (on ``clock``, default ``time.monotonic``) stops measuring early; what was measured
    is fitted, and ``Calibration.stopped`` says why it stopped. ``jobs`` programs compile at a time
    (compiling is about half of a full run on one core: docs/measurements.md §3); timing is always one
    at a time. A program holding a point whose repeats spread over ``noise.SPREAD_LIMIT`` is timed
    again, at most ``noise.RETRIES`` rounds; ``Calibration.noise`` says what stayed noisy and the load
    seen (``load``: the load-average reader, default ``noise.read_load``). ``timer`` (default
    ``profile_module``) and ``compiler`` (a program to its module; default ``emit_iree`` then
    ``iree-compile``) are for tests."""
    import time
    from concurrent.futures import ThreadPoolExecutor

    now = clock or time.monotonic
    time_program = timer or profile_module
    read = load or read_load
    noise = Noise()
    noise.read(read, during=False)
    plan = plan_programs(quick, target)
    programs = micro_programs(plan, target)
    cpu = iree_cpu(target)
    cpu_flag = next((f.split("=", 1)[1] for f in cpu.compile_flags if "target-cpu=" in f), "generic")
    others = [f for f in cpu.compile_flags if "target-cpu=" not in f]
    compiled: list[tuple[MicroProgram, bytes]] = []
    total = len(programs) * (1 + plan.repeats)
    done = 0
    cal = Calibration(noise=noise)

    def build(prog: MicroProgram) -> bytes | None:
        if deadline is not None and now() > deadline:
            return None
        if compiler is not None:
            return compiler(prog)
        text = emit_iree(parse_mlir(prog.text, f"<calibration {prog.function}>"), target, materialize=False)
        return compile_module(text, data_tiling=False, target_cpu=cpu_flag, extra_flags=others,
                              compile_from="dispatch-creation")  # fmt: skip

    with ThreadPoolExecutor(max_workers=max(1, jobs)) as pool:
        for prog, vmfb in zip(programs, pool.map(build, programs), strict=True):
            if vmfb is None:
                cal.stopped = "time budget reached while compiling"
                continue
            compiled.append((prog, vmfb))
            done += 1
            if progress:
                progress(f"compiled {prog.function}", done, total)
    raw: dict[tuple[str, int], list[float]] = {}
    call_raw: dict[str, list[tuple[float, float]]] = {}

    def time_round(todo: Sequence[tuple[MicroProgram, bytes]], label: str) -> bool:
        """One interleaved round over ``todo``; False when the deadline stopped it."""
        nonlocal done
        for prog, vmfb in todo:
            if deadline is not None and now() > deadline:
                noise.read(read, during=True)
                return False
            times = time_program(vmfb, prog.function, prog.inputs, min_time=plan.min_time)
            _record(times, prog, raw, call_raw)
            done += 1
            if progress:
                progress(f"timed {prog.function} ({label})", done, total)
        noise.read(read, during=True)
        return True

    for r in range(plan.repeats):
        if not time_round(compiled, f"{r + 1}/{plan.repeats}"):
            cal.stopped = cal.stopped or f"time budget reached in repeat {r + 1} of {plan.repeats}"
            break
    programs_run = [p for p, _ in compiled]
    for attempt in range(RETRIES):
        noisy = {name.split(" ")[0] for name, _ in _noisy_points(programs_run, raw, call_raw, plan.repeats)}
        if not noisy or cal.stopped or plan.repeats < 2:
            break
        todo = [(p, v) for p, v in compiled if p.function in noisy]
        noise.rounds, noise.retried = attempt + 1, noise.retried + len(todo)
        total += len(todo)
        if not time_round(todo, f"retry {attempt + 1}/{RETRIES}"):
            cal.stopped = f"time budget reached in retry {attempt + 1} of {RETRIES}"
            break
    noise.noisy = _noisy_points(programs_run, raw, call_raw, plan.repeats)
    _keep_fastest(cal, programs_run, raw, call_raw, plan.repeats)
    cal.kernels, cal.residuals = fit_kernels(cal, target)
    return cal


def _noisy_points(
    programs: Sequence[MicroProgram],
    raw: dict[tuple[str, int], list[float]],
    call_raw: dict[str, list[tuple[float, float]]],
    keep: int,
) -> list[tuple[str, float]]:
    """The points (``"<function> <case kind> <sizes>"``, or ``"<function> call"`` for a chain or fan's
    call beyond its kernels) whose ``keep`` fastest repeats spread over ``SPREAD_LIMIT``, worst first."""
    by_name = {p.function: p for p in programs}
    points = []
    for (fn, i), values in raw.items():
        case = by_name[fn].cases[i]
        points.append((f"{fn} {case.kind} {'x'.join(map(str, case.sizes))}", point_spread(values, keep)))
    for fn, pairs in call_raw.items():
        if _is_overhead(by_name[fn]):
            points.append((f"{fn} call", point_spread([c - k for k, c in pairs], keep)))
    return worst_first(points)


def _is_overhead(prog: MicroProgram) -> bool:
    """A chain or fan: measured by its call time beyond its kernels (``Calibration.chains``)."""
    return bool(prog.cases) and prog.cases[0].kind in ("chain", "fan")


def _case_seconds(times: DispatchTimes, prog: MicroProgram, case: Case) -> float | None:
    """What one profiled run of ``prog`` measured for ``case``: the whole call for a slice copy, the
    call beyond its kernels for a buffer, else the kernel time of its dispatch (``_lookup``)."""
    if case.kind == "slice_copy":
        return times.call_seconds
    if case.kind == "alloc":
        return None if times.call_seconds is None else times.call_seconds - times.kernel_seconds_per_call()
    return _lookup(times, prog, case)


def _record(
    times: DispatchTimes,
    prog: MicroProgram,
    raw: dict[tuple[str, int], list[float]],
    call_raw: dict[str, list[tuple[float, float]]],
) -> None:
    """One profiled run of ``prog``: each case's seconds to ``raw`` (by function and case), the run's
    (kernel seconds per call, call seconds) to ``call_raw``."""
    for i, case in enumerate(prog.cases):
        s = _case_seconds(times, prog, case)
        if s is not None:
            raw.setdefault((prog.function, i), []).append(s)
    if times.call_seconds is not None:
        call_raw.setdefault(prog.function, []).append((times.kernel_seconds_per_call(), times.call_seconds))


def _keep_fastest(
    cal: Calibration,
    programs: Sequence[MicroProgram],
    raw: dict[tuple[str, int], list[float]],
    call_raw: dict[str, list[tuple[float, float]]],
    keep: int = 1,
) -> None:
    """The fastest of each case's repeats into ``cal.samples``, and of each chain or fan program's runs
    (by its call time beyond its kernels) into ``cal.chains``: other work only ever adds time. The
    spread of each one's ``keep`` fastest repeats goes into ``cal.spread`` beside it."""
    by_name = {p.function: p for p in programs}
    for (fn, i), values in raw.items():
        case = by_name[fn].cases[i]
        sizes = case.sizes if case.operand is None else (*case.sizes, case.operand)
        cal.samples.setdefault(case.kind, []).append((sizes, case.types, min(values)))
        cal.spread.setdefault(case.kind, []).append(point_spread(values, keep))
    for fn, pairs in call_raw.items():
        if _is_overhead(by_name[fn]):
            kern, call = min(pairs, key=lambda p: p[1] - p[0])
            cal.chains.append((by_name[fn].dispatch_count, by_name[fn].outputs, kern, call))
            cal.spread.setdefault("launch", []).append(point_spread([c - k for k, c in pairs], keep))


def profile_dict(base: Target, cal: Calibration, *, quick: bool, measured: dict | None = None) -> dict:
    """The calibrated profile as JSON data: ``base``'s tiles and limits, the measured kernels, and the
    analytic fields derived from them (for plans priced without the kernel table), with provenance.
    ``measured``: the provenance of the run the samples come from (``--refit``), instead of this one."""
    assert cal.kernels is not None
    k = cal.kernels
    if measured is not None:
        cpu, isa = str(measured.get("cpu", "unknown")), list(measured.get("isa_flags", []))
        iree_version, when = str(measured.get("iree_compiler", "unknown")), str(measured.get("date", "unknown"))
        quick = bool(measured.get("quick", quick))
    else:
        cpu, flags = host_cpu()
        isa = sorted(f for f in flags if f.startswith(("avx", "fma", "amx", "asimd", "sve")))
        try:
            iree_version = metadata.version("iree-base-compiler")
        except metadata.PackageNotFoundError:  # pragma: no cover - calibrate needs IREE
            iree_version = "unknown"
        when = datetime.date.today().isoformat()
    where = f"measured on {cpu} with iree-compile {iree_version} ({iree_cpu(base).compile_flags[0]}), {when}"

    def peaks(table: dict[str, Fit], fallback: dict[str, float]) -> dict[str, float]:
        out = dict(fallback)
        for types, fit in table.items():
            if fit.rate_g > 0 and not types.endswith(MATVEC):
                out[types.split(",")[0]] = round(fit.rate_g, 3)
        return out

    n = 1 << 18  # a 1 MiB f32 operand: logical + packed bytes moved by its encode (pack fits are per element)
    bw = 8 * n / k.pack.seconds(n, 8 * n) / 1e9 if k.pack.seconds(n, 8 * n) > 0 else base.memory_bandwidth_gbps
    notes = dict(base.notes)
    for key in ("mmt4d_peak_gflops", "matmul_peak_gflops", "memory_bandwidth_gbps", "dispatch_overhead_us"):
        notes[key] = f"Derived from the kernels table, {where}."
    notes["kernels"] = f"Fitted {where}; residuals (median |log model/measured|) in provenance.fits."
    for types in ("bf16,bf16,f32", "f16,f16,f16"):
        if base.tile(types) is not None and types not in k.mmt4d:
            notes[f"kernels.mmt4d.{types}"] = "Not measured (calibrate times f32, f16 and i8): the f32 fit is used."
    data = {
        "name": f"{base.name}-host",
        "description": f"{base.description} Calibrated on this machine: {cpu}.",
        "encoding_resolver": base.encoding_resolver,
        "tiles": {",".join(t): list(v) for t, v in base.tiles.items()},
        "mmt4d_peak_gflops": peaks(dict(k.mmt4d), dict(base.mmt4d_peak_gflops)),
        "matmul_peak_gflops": peaks(dict(k.matmul), dict(base.matmul_peak_gflops)),
        "memory_bandwidth_gbps": round(bw, 3),
        "dispatch_overhead_us": round(k.launch_us, 4),
        "max_stack_allocation_size": base.max_stack_allocation_size,
        "native_vector_size": base.native_vector_size,
        **(
            {"max_plain_result_pack_bytes": base.max_plain_result_pack_bytes}
            if base.max_plain_result_pack_bytes
            else {}
        ),
        "kernels": kernels_to_dict(k),
        "provenance": {
            "cpu": cpu,
            "isa_flags": isa,
            "iree_compiler": iree_version,
            "compile_flags": list(iree_cpu(base).compile_flags),
            "device": "local-sync (1 thread)",
            "date": when,
            "quick": quick,
            "stopped_early": cal.stopped,
            "fits": {key: round(v, 4) for key, v in sorted(cal.residuals.items())},
            "worst_fit": worst_fit(cal, base),
            "samples": {kind: len(rows) for kind, rows in sorted(cal.samples.items())},
            **({"spread": spread} if (spread := spread_summary(_spread_by_fit(cal))) else {}),
            **({"noise": noise} if (noise := _noise_entry(cal, measured)) else {}),
            "base_profile": base.name,
            **({"refit": datetime.date.today().isoformat()} if measured is not None else {}),
        },
        "notes": notes,
    }
    return data


REFUSE_ERROR = round(math.log(2), 4)
"""``calibrate`` writes no profile with a fit whose error on its own samples (``kernel_fit.fit_errors``)
exceeds this, unless ``--force``: a median |log(model / measured)| of log 2 is a fit that misses half
its own samples by more than 2x (for a fit of a difference of two times, by more than 69% of the time
it is part of). Every formula kept as a formula misses by at most ``fit.TABLE_RESIDUAL`` (else it is
kept as a table), so what exceeds it is a fit of overheads or differences, where noise shows first."""


def worst_fit(cal: Calibration, target: Target) -> dict | None:
    """The fit with the largest error on its own samples (``fit_errors``; the first key of equals):
    ``{"fit", "error", "samples", "limit", "over_limit"}``; None where no fit has enough samples to judge."""
    errors = fit_errors(cal, target)
    if not errors:
        return None
    key = min(errors, key=lambda k: (-errors[k][0], k))
    error, n = errors[key]
    over = error > REFUSE_ERROR
    return {"fit": key, "error": round(error, 4), "samples": n, "limit": REFUSE_ERROR, "over_limit": over}


def _spread_by_fit(cal: Calibration) -> dict[str, list[float]]:
    """Each sample's spread under the fit it feeds: ``kind.types`` for contractions (as ``fits`` names
    them, M = 1 with the rest), else its kind; ``launch`` for the chains and fans."""
    out: dict[str, list[float]] = {}
    for kind, spreads in cal.spread.items():
        rows = cal.samples.get(kind, [])
        for i, value in enumerate(spreads):
            contraction = kind in ("mmt4d", "matmul", "matmul_kn") and i < len(rows)
            out.setdefault(f"{kind}.{rows[i][1]}" if contraction else kind, []).append(value)
    return out


def _noise_entry(cal: Calibration, measured: dict | None) -> dict | None:
    """``provenance.noise``: this run's (``Noise.to_dict``), or for a refit the measured run's."""
    if cal.noise is not None:
        return cal.noise.to_dict()
    return dict(measured["noise"]) if measured is not None and isinstance(measured.get("noise"), dict) else None


def samples_dict(cal: Calibration, profile: dict) -> dict:
    """Every measurement of a calibration run, with the profile's provenance and fitted kernels: what
    ``notebooks/02_cost_model_fidelity.ipynb`` plots (calibration points against the fitted curves)."""
    return {
        "provenance": profile["provenance"],
        "kernels": profile["kernels"],
        "samples": {
            kind: [
                {"sizes": list(sizes), "types": types, "seconds": t, **_spread_of(cal, kind, i)}
                for i, (sizes, types, t) in enumerate(rows)
            ]
            for kind, rows in sorted(cal.samples.items())
        },
        "chains": [
            {"dispatches": n, "results": r, "kernel_seconds": k, "call_seconds": c, **_spread_of(cal, "launch", i)}
            for i, (n, r, k, c) in enumerate(cal.chains)
        ],
    }


def _spread_of(cal: Calibration, kind: str, i: int) -> dict[str, float]:
    """``{"spread": ...}`` of sample ``i`` of ``kind`` where recorded, else nothing."""
    spreads = cal.spread.get(kind, [])
    return {"spread": round(spreads[i], 4)} if i < len(spreads) else {}


def calibration_from_samples(data: dict, target: Target) -> Calibration:
    """A ``Calibration`` rebuilt from ``samples_dict`` output and fitted again (``calibrate --refit``): a
    change of the fits needs no new measurement, and a recorded run can be re-fitted anywhere."""
    cal = Calibration()
    for kind, rows in data.get("samples", {}).items():
        cal.samples[kind] = [(tuple(r["sizes"]), r["types"], float(r["seconds"])) for r in rows]
        if rows and all("spread" in r for r in rows):  # files from before the spread was recorded have none
            cal.spread[kind] = [float(r["spread"]) for r in rows]
    chains = data.get("chains", [])
    cal.chains = [  # samples recorded before fans were measured are chains: one result
        (int(c["dispatches"]), int(c.get("results", 1)), float(c["kernel_seconds"]), float(c["call_seconds"]))
        for c in chains
    ]
    if chains and all("spread" in c for c in chains):
        cal.spread["launch"] = [float(c["spread"]) for c in chains]
    cal.stopped = str(data.get("provenance", {}).get("stopped_early", ""))
    cal.kernels, cal.residuals = fit_kernels(cal, target)
    return cal
