"""Cost model: per-node costs for the extractors, from the e-graph's shape and layout facts.

Formulas (all times in seconds, sizes in bytes; ``bw`` = target memory bandwidth, ``peak`` = the
target's GFLOP/s for the data-tiled mmt4d kernel when the contraction's operands are encoded with a
tiled layout, for a plain matmul otherwise):

* stored(t)  = Π alignTo(dim, tile) × element bytes when t is encoded with a tiled layout
  (``calculatePackedStorageSizeInBytesImpl``), the logical size otherwise;
* contraction: flops = 2·B·M·N·K on **padded** sizes (docs/iree-data-tiling.md §3: cost scales with padded
  M·N·K), time = flops / peak + (stored(lhs) + stored(rhs) + 2·stored(acc)) / bw;
* pack (set_encoding) / unpack (unset_encoding): (logical + stored bytes) / bw, "roughly
  proportional to bytes moved" (docs/iree-data-tiling.md §9);
* fill: stored(result) / bw; elementwise / other ops: stored bytes in + out over bw, plus
  ``ELEMENTWISE_FLOPS_PER_ELEMENT``·stored elements per body op at the plain-matmul peak (a generic on
  encoded operands, ``rules/sink_unset.egg``, runs on the padded tiles);
  attention: twice its flops (``attention_flops``: the softmax between Q·Kᵀ and P·V as much again)
  at the plain-matmul peak, or the calibrated ``KernelCosts.attention`` fit where measured;
* a dispatch (``Dispatch``): launch overhead; its result buffer is transient memory; a dispatch
  of nothing but a slice (``flow.tensor.slice`` between dispatches, or a slice hoisted out of its
  consumer) is a copy of the slice's bytes, in and out: IREE runs it as a copy command or a copy
  dispatch (a 2.36 MB row slice of an argument cost 250 µs per call on the Xeon), never as a view;
* a global (``ConstEval``): no run time; its stored bytes are persistent memory, and what it
  computes is load-time work (reported, not optimized);
* a constant: its bytes are persistent memory (IREE's DispatchCreation path keeps the original
  constant next to any encoded copy, #22371);
* kernel time of a plan = Σ dispatches (launch + Σ of their ops' times): the additive roofline
  (compute plus traffic), an upper bound of the max(flops/peak, bytes/bw) form that decomposes
  over e-nodes, so the exact extractor optimizes what the report shows; the per-dispatch max()
  form is reported next to it (``plan/graph.py``).

With a calibrated profile (``target.kernels``, written by ``egg-dispatch calibrate``) the measured
fits replace those formulas: a data-tiled or plain contraction, a pack or unpack in a dispatch of its
own or inside the contraction's dispatch (priced on the contraction node, whose operands say which),
an elementwise or a reduction generic, a slice copy; every kernel's bytes beyond the fitted cache
size cost the measured streaming rate on top (``KernelCosts.spill_seconds``; a contraction, which
overlaps its loads with its compute, takes at least that long instead); a dispatch costs its
measured launch plus the allocation of the buffer it writes, and a call its fixed overhead plus one
per result (on the root). A plan with any transient buffer (a run-time dispatch whose result is not a
function result) pays the measured transient step once per call: a ``once`` charge over
``transient_dispatches`` (``cost/table.py``). An elementwise generic that reads an ``unset_encoding``
in its dispatch pays the measured ``consumer_after_unpack`` extra when both are chosen: a ``pairs``
charge (``consumer_pairs``). A pack whose source is an elementwise generic computed in its dispatch
(directly or through a collapse) pays the measured ``producer_pack`` extra on its own node: the
source class says so, whatever else the plan chooses. The buffer a dispatch writes costs its
measured allocation (``KernelCosts.alloc``) by its bytes. A plain contraction runs the measured
``KernelCosts.throttle`` slower in a plan that also runs a data-tiled one of ``throttle_us`` or more
(the core's clock drops after a long mmt4d kernel): a ``gated`` charge (``throttle_charges``).

objective = run time + λ · (persistent + transient bytes).
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import cast

from egg_dispatch.cost.conflicts import codegen_conflicts
from egg_dispatch.cost.measured import MeasuredTimes
from egg_dispatch.cost.table import CostTable, NodeCost
from egg_dispatch.egraph.data import EGraphData, Node, Term
from egg_dispatch.egraph.imported import ImportedProgram, Parameter
from egg_dispatch.egraph.terms import BOUNDARY
from egg_dispatch.mlir.ir import Operation, ScalarType, element_nbytes
from egg_dispatch.mlir.ops import RESHAPE_OPS
from egg_dispatch.target.kernels import ROLES, KernelCosts, attention_flops
from egg_dispatch.target.layout import Layout
from egg_dispatch.target.profile import Target

__all__ = [
    "ELEMENTWISE_FLOPS_PER_ELEMENT",
    "LAMBDA_PACK_FRACTION",
    "TensorInfo",
    "alloc_seconds",
    "call_seconds",
    "consumer_pairs",
    "contraction_rhs",
    "contraction_rows",
    "contraction_sizes",
    "contraction_tiled",
    "copied_slice",
    "copy_dispatch_seconds",
    "cost_table",
    "default_lambda",
    "exclusive_nodes",
    "launch_seconds",
    "node_seconds",
    "node_signature",
    "op_seconds",
    "output_classes",
    "output_seconds",
    "rhs_is_kn",
    "slice_copy_seconds",
    "throttle_charges",
    "throttles",
    "transient_dispatches",
    "transient_seconds",
]

LAMBDA_PACK_FRACTION = 0.01
"""The default λ: a byte of footprint weighs this fraction of the time the target takes to pack it once.

λ converts bytes of memory into seconds per call. Any λ at or above a pack's time per byte makes the
extractor re-pack a constant weight inside its matmul dispatch on every call to save the global
holding it packed: the old default (1e-10 s/B, 1 KiB = 0.1 µs) did exactly that on an MLP, and the
plan measured 2x slower than IREE's. At 1% of the pack's cost a plan must save a hundred calls' worth
of packing per byte before memory decides: memory breaks ties and vetoes plans that hold many packed
copies for nothing, it never buys kilobytes with per-call work. ``default_lambda`` reads the pack
rate from the calibrated profile (the fitted pack of a 1 MiB f32 tensor), else the profile's
bandwidth (read + write)."""


def default_lambda(target: Target) -> float:
    """λ for ``target`` when the user gives none (seconds per byte; see ``LAMBDA_PACK_FRACTION``)."""
    k = target.kernels
    n = 1 << 18  # 1 MiB of f32: big enough that the pack's fixed cost does not count
    if k is not None and (k.pack.rate_g > 0 or k.pack.gbps > 0 or k.pack.points):
        per_byte = k.pack.seconds(n, 8 * n) / (4 * n)
    else:
        per_byte = 2.0 / (target.memory_bandwidth_gbps * 1e9)
    return LAMBDA_PACK_FRACTION * per_byte


ELEMENTWISE_FLOPS_PER_ELEMENT = 1.0
"""Each arith/math op in a generic's body is one flop per element of the iteration space."""

DEFAULT_MAPS = {
    "linalg.matmul": ((0, 2), (2, 1), (0, 1)),
    "linalg.batch_matmul": ((0, 1, 3), (0, 3, 2), (0, 1, 2)),
    "linalg.matvec": ((0, 1), (1,), (0,)),
    "linalg.vecmat": ((0,), (0, 1), (1,)),
}
"""Loop dims of each operand of the named matmul ops (printed maps override these)."""


@dataclass(frozen=True)
class TensorInfo:
    shape: tuple[int, ...]
    element: str
    layout: Layout | None = None
    """The tiled layout the tensor is stored in, or None (plain or identity-encoded)."""

    @property
    def elem_bytes(self) -> int:
        return element_nbytes(ScalarType(self.element))

    @property
    def numel(self) -> int:
        return math.prod(self.shape)

    @property
    def logical_bytes(self) -> int:
        return self.numel * self.elem_bytes

    @property
    def stored_numel(self) -> int:
        """Elements as stored: padded to whole tiles when encoded with a tiled layout."""
        if self.layout is None:
            return self.numel
        tile = dict(zip(self.layout.inner_dims_pos, self.layout.inner_tiles, strict=True))
        return math.prod(-(-s // tile.get(d, 1)) * tile.get(d, 1) for d, s in enumerate(self.shape))

    @property
    def stored_bytes(self) -> int:
        return self.stored_numel * self.elem_bytes

    def padded_dim(self, d: int) -> int:
        if self.layout is None:
            return self.shape[d]
        tile = dict(zip(self.layout.inner_dims_pos, self.layout.inner_tiles, strict=True)).get(d, 1)
        return -(-self.shape[d] // tile) * tile


def parse_maps(kind: str) -> tuple[tuple[int, ...], ...]:
    """Loop dims per operand from a Contract kind ``name:(d0,d2);(d1,d2);(d0,d1)``."""
    name, _, maps = kind.partition(":")
    if not maps:
        return DEFAULT_MAPS.get(name, DEFAULT_MAPS["linalg.matmul"])
    out = []
    for m in maps.split(";"):
        inner = m.strip("()")
        out.append(tuple(int(x[1:]) for x in inner.split(",") if x))
    return tuple(out)


def contraction_sizes(kind: str, operands: Sequence[TensorInfo]) -> tuple[int, int]:
    """(flops on padded sizes, loop count) of a matmul-family contraction."""
    maps = parse_maps(kind)
    loops: dict[int, int] = {}
    for info, dims in zip(operands, maps, strict=True):
        for axis, d in enumerate(dims):
            loops[d] = max(loops.get(d, 0), info.padded_dim(axis))
    return 2 * math.prod(loops.values()), len(loops)


def contraction_rows(kind: str, operands: Sequence[TensorInfo]) -> int:
    """M of a contraction (``contract:<maps>`` or ``mmt4d`` on packed operands): the logical size of the
    loops the LHS and the result share and the RHS does not."""
    lhs = operands[0].shape
    if kind == "mmt4d":  # [M1, K1, M0, K0], batch_mmt4d [B, M1, K1, M0, K0]
        return lhs[0] * lhs[2] if len(lhs) == 4 else lhs[1] * lhs[3] if len(lhs) == 5 else 0
    maps = parse_maps(kind[len("contract:") :])
    if len(maps) < 3 or len(maps[0]) != len(lhs):
        return 0
    return math.prod(lhs[maps[0].index(d)] for d in maps[2] if d in maps[0] and d not in maps[1])


def contraction_mnk(kind: str, operands: Sequence[TensorInfo]) -> tuple[int, int, int] | None:
    """(M, N, K) of a ``contract:<maps>`` kind on its logical operand shapes, batch dims left out; None
    when the maps do not match the operands."""
    maps = parse_maps(kind[len("contract:") :])
    if len(maps) < 3 or any(len(m) != len(o.shape) for m, o in zip(maps, operands[:3], strict=False)):
        return None
    size = {d: o.shape[i] for m, o in zip(maps, operands[:3], strict=False) for i, d in enumerate(m)}
    lhs, rhs, out = (set(m) for m in maps[:3])
    m = math.prod(size[d] for d in lhs & out - rhs)
    n = math.prod(size[d] for d in rhs & out - lhs)
    k = math.prod(size[d] for d in lhs & rhs - out)
    return m, n, k


def contraction_rhs(kind: str, operands: Sequence[TensorInfo]) -> tuple[float, int]:
    """(bytes of one RHS matrix, how many: the batch) of a ``contract:<maps>`` kind: what a plain
    contraction re-reads when its RHS outgrows the cache (``Fit.reread_seconds``)."""
    maps = parse_maps(kind[len("contract:") :])
    rhs = operands[1]
    if len(maps) < 3 or len(maps[1]) != len(rhs.shape):
        return float(rhs.stored_bytes), 1
    batch = math.prod(rhs.shape[i] for i, d in enumerate(maps[1]) if d in maps[0] and d in maps[2])
    return rhs.stored_bytes / max(batch, 1), max(batch, 1)


def mmt4d_mnk(operands: Sequence[TensorInfo]) -> tuple[int, int, int] | None:
    """(M, N, K) of an ``mmt4d`` (or ``batch_mmt4d``, per batch) on its packed operands: the padded
    sizes, tiles included."""
    lhs, rhs = operands[0].shape, operands[1].shape
    if len(lhs) != len(rhs) or len(lhs) not in (4, 5):
        return None
    b = len(lhs) - 4
    return lhs[b] * lhs[b + 2], rhs[b] * rhs[b + 2], lhs[b + 1] * lhs[b + 3]


def packed_rhs(rhs: TensorInfo) -> tuple[float, int]:
    """(bytes of one packed RHS, how many) of an ``mmt4d`` ([N1, K1, N0, K0]) or ``batch_mmt4d``
    ([B, N1, K1, N0, K0])."""
    batch = rhs.shape[0] if len(rhs.shape) == 5 else 1
    return rhs.stored_bytes / max(batch, 1), max(batch, 1)


def rhs_is_kn(kind: str) -> bool:
    """The RHS of a Contract kind is stored [K, N]: its last reduction loop comes before its last
    parallel (N) loop (``linalg.matmul``'s and ``batch_matmul``'s default maps; PyTorch's linear,
    ``x . w^T``, is [N, K])."""
    maps = parse_maps(kind)
    if len(maps) < 3:
        return False
    lhs, rhs, acc = maps[0], maps[1], maps[2]
    k_pos = [i for i, d in enumerate(rhs) if d in lhs and d not in acc]
    n_pos = [i for i, d in enumerate(rhs) if d in acc and d not in lhs]
    return bool(k_pos and n_pos) and max(k_pos) < max(n_pos)


def launch_seconds(target: Target) -> float:
    """Per-dispatch overhead on top of its kernel: measured when the profile is calibrated."""
    return (target.kernels.launch_us if target.kernels else target.dispatch_overhead_us) * 1e-6


def call_seconds(target: Target) -> float:
    """Per-call overhead whatever the plan (import, export, submission); measured, else 0."""
    return target.kernels.call_us * 1e-6 if target.kernels else 0.0


def output_seconds(target: Target) -> float:
    """Per function result and call (its buffer is allocated and exported): measured, else 0."""
    return target.kernels.output_us * 1e-6 if target.kernels else 0.0


def transient_seconds(target: Target) -> float:
    """Once per call when the plan has a transient buffer (``KernelCosts.transient_us``): measured, else 0."""
    return target.kernels.transient_us * 1e-6 if target.kernels else 0.0


def slice_copy_seconds(g: EGraphData, c: str, facts: _Facts, target: Target) -> float:
    """The copy a dispatch of class ``c`` is when ``c`` is nothing but a slice (every node of it a
    ``Slice`` or ``EncodedSlice``): its result's bytes read and written; 0 for any other dispatch."""
    nodes = g.choices(c)
    if not nodes or any(n.op not in ("Slice", "EncodedSlice") for n in nodes):
        return 0.0
    out = facts.info(c)
    return op_seconds("copy", [out], out, target)


def copied_slice(g: EGraphData, imported: ImportedProgram, c: str) -> str | None:
    """The slice class that a value used between dispatches (class ``c``, through reshapes) is, when
    that slice is a copy at run time; else None.

    A slice between dispatches is not a view at run time: ``emit.iree`` gives it a dispatch of its own
    (IREE's dispatch creation does the same with a non-contiguous one, its ``slow_memcpy`` dispatches)
    that copies the slice into a new buffer for its consumer. On the GPT-2 block the three Q/K/V slices
    of the attention's operands ran as three such dispatches, 0.3 µs each with their launches, which the
    model priced as free. A slice of a dense constant is folded into a smaller constant and stays free."""
    seen: set[str] = set()
    while c not in seen:
        seen.add(c)
        nodes = g.choices(c)
        if not nodes:
            return None
        if is_reshape(g, imported, c):
            sources = {tuple(_list_classes(g, n.children[1])[:1]) for n in nodes}
            if len(sources) != 1 or not (source := next(iter(sources))):
                return None
            c = source[0]
            continue
        folds = any(
            m.op == "Const" and not isinstance(imported.constants.get(str(g.leaf_value(m.children[0]))), Parameter)
            for n in nodes
            for m in g.choices(n.children[0])
        )
        return c if all(n.op in ("Slice", "EncodedSlice") for n in nodes) and not folds else None
    return None


def copy_dispatch_seconds(g: EGraphData, c: str, facts: _Facts, target: Target) -> float:
    """A dispatch of its own for the slice class ``c`` (``copied_slice``): launch, result buffer, copy."""
    return (
        launch_seconds(target)
        + alloc_seconds(target, facts.info(c).stored_bytes)
        + slice_copy_seconds(g, c, facts, target)
    )


def alloc_seconds(target: Target, nbytes: float) -> float:
    """A dispatch's result buffer is allocated and first touched on every call: the measured
    ``KernelCosts.alloc`` by its bytes, else the profile's flat ``alloc_gbps``, else free."""
    k = target.kernels
    if k is None or nbytes <= 0:
        return 0.0
    if k.alloc.measured:
        return k.alloc.seconds(nbytes, nbytes)
    return nbytes / (k.alloc_gbps * 1e9) if k.alloc_gbps > 0 else 0.0


def op_seconds(
    kind: str,
    operands: Sequence[TensorInfo],
    result: TensorInfo,
    target: Target,
    body_ops: float = 1,
    reduction: bool = False,
    operand: int | None = None,
) -> float:
    """Time of one op (not counting its dispatch's launch); ``operand``: for a pack or unpack, which
    operand of its contraction the encoding is for (0 LHS, 1 RHS, 2 result), when known."""
    if target.kernels is not None and (not kind.startswith("attention") or target.kernels.attention.measured):
        return _measured_seconds(kind, operands, result, target, body_ops, reduction, operand)
    bw = target.memory_bandwidth_gbps * 1e9
    moved = sum(o.stored_bytes for o in operands) + result.stored_bytes
    if kind.startswith("contract:") or kind == "mmt4d":
        encoded = all(o.layout is not None for o in operands)
        peak = target.peak_gflops(",".join(o.element for o in operands), data_tiled=encoded) * 1e9
        if kind == "mmt4d":  # operands already packed: their shapes are the padded tiles
            flops: float = _mmt4d_flops(operands)
        else:
            flops, _ = contraction_sizes(kind[len("contract:") :], operands)
        return flops / peak + moved / bw
    if kind in ("pack", "unpack", "fill", "copy"):
        if kind == "fill":
            return result.stored_bytes / bw
        return moved / bw
    if kind.startswith("attention"):
        flops = 2 * _attention_flops(operands, kind)  # the softmax between the two products as much again
        return flops / (target.peak_gflops("f32,f32,f32", data_tiled=False) * 1e9) + moved / bw
    domain = max([o.stored_numel for o in operands] + [result.stored_numel])  # encoded: the padded tiles too
    flops = domain * body_ops * ELEMENTWISE_FLOPS_PER_ELEMENT
    return flops / (target.peak_gflops("f32,f32,f32", data_tiled=False) * 1e9) + moved / bw


def attention_kind(proto: object) -> str:
    """``attention:<maps>`` of an ``iree_linalg_ext.attention``: its indexing maps (Q, K, V, scale, [mask,]
    output) as ``parse_maps`` reads them, or plain ``attention`` where one is not a projected
    permutation."""
    maps = getattr(getattr(proto, "attributes", {}).get("indexing_maps"), "items", ())
    dims = [m.dim_positions() if hasattr(m, "dim_positions") else None for m in maps]
    if len(dims) < 5 or any(d is None for d in dims):
        return "attention"
    return "attention:" + ";".join("(" + ",".join(f"d{d}" for d in ds) + ")" for ds in dims if ds is not None)


def _attention_flops(operands: Sequence[TensorInfo], kind: str = "attention") -> int:
    """``attention_flops`` of an ``iree_linalg_ext.attention`` from its Q, K and V: by its indexing maps
    where ``kind`` has them (``attention_kind``; an exported block's Q may be [B, S, H, D], heads after
    the tokens, which the maps permute), else by the [..., rows, dims] layout."""
    maps = parse_maps(kind) if ":" in kind else ()
    if len(maps) >= 5 and len(operands) >= 3:
        size: dict[int, int] = {}
        for m, o in zip(maps, operands, strict=False):
            if len(m) == len(o.shape):
                size.update({d: o.shape[i] for i, d in enumerate(m)})
        q_dims, k_dims, v_dims, out_dims = set(maps[0]), set(maps[1]), set(maps[2]), set(maps[-1])
        if all(d in size for d in q_dims | k_dims | v_dims | out_dims):
            qk = math.prod(size[d] for d in q_dims | k_dims)
            pv = math.prod(size[d] for d in out_dims | v_dims)
            return 2 * (qk + pv)
    q, k, v = operands[0], operands[1], operands[2]
    rows = q.numel // q.shape[-1] if q.shape else 1
    keys = k.shape[-2] if len(k.shape) >= 2 else 1  # global optimization folds a unit key dim away
    return attention_flops(rows, q.shape[-1] if q.shape else 1, keys, v.shape[-1] if v.shape else 1)


def _measured_seconds(
    kind: str,
    operands: Sequence[TensorInfo],
    result: TensorInfo,
    target: Target,
    body_ops: float,
    reduction: bool,
    operand: int | None = None,
) -> float:
    """``op_seconds`` from a calibrated profile's fits (``target.kernels``)."""
    k = target.kernels
    assert k is not None
    moved = sum(o.stored_bytes for o in operands) + result.stored_bytes
    if kind.startswith("contract:") or kind == "mmt4d":
        encoded = all(o.layout is not None for o in operands)
        flops = _mmt4d_flops(operands) if kind == "mmt4d" else contraction_sizes(kind[len("contract:") :], operands)[0]
        m = contraction_rows(kind, operands)
        types = ",".join([o.element for o in operands[:2]] + [result.element])
        fit = k.contraction(types, encoded, m, rhs_kn=kind != "mmt4d" and rhs_is_kn(kind[len("contract:") :]))
        if fit is not None:
            rhs_bytes, batch = packed_rhs(operands[1]) if kind == "mmt4d" else contraction_rhs(kind, operands)
            mnk = mmt4d_mnk(operands) if kind == "mmt4d" else contraction_mnk(kind, operands)
            return k.contraction_seconds(fit, flops, moved, m, rhs_bytes, batch, mnk)
    if kind == "pack":  # fitted on elements and logical + packed bytes, per operand and element type
        src = operands[0]
        nbytes = src.logical_bytes + result.stored_bytes
        return k.fitted_seconds(k.traffic("pack", operand, src.element), src.numel, nbytes)
    if kind == "unpack":
        src = operands[0]
        nbytes = src.stored_bytes + result.logical_bytes
        return k.fitted_seconds(k.traffic("unpack", operand, result.element), result.numel, nbytes)
    if kind == "fill":
        return 0.0  # the accumulator's fill runs inside the measured contraction kernel
    if kind == "generic":
        domain = max([o.stored_numel for o in operands] + [result.stored_numel])
        fit = k.reduction if reduction else k.elementwise
        return k.fitted_seconds(fit, domain * (1 if reduction else body_ops), moved)
    if kind.startswith("attention"):  # measured (op_seconds prices an unmeasured one by its formula)
        return k.fitted_seconds(k.attention, _attention_flops(operands, kind), moved)
    if kind == "softmax":
        return k.fitted_seconds(k.softmax, result.numel, moved)
    if kind == "copy" and k.copy.measured:
        return k.fitted_seconds(k.copy, result.numel, moved)
    bw = target.memory_bandwidth_gbps * 1e9
    return moved / bw + k.spill_seconds(moved)  # copies, and a contraction on element types never measured


def in_dispatch_pack_extra(
    target: Target,
    src: TensorInfo,
    packed: TensorInfo,
    operand: int | None,
    mnk: tuple[int, int, int] | None = None,
) -> float:
    """What a pack inside the dispatch of an M x N x K (``mnk``) contraction costs beyond the standalone
    pack its node is charged: the measured table of its role where there is one
    (``KernelCosts.fused_pack_seconds``), else the fit over both roles (the analytic model prices
    both the same)."""
    k = target.kernels
    if k is None:
        return 0.0
    nbytes = src.logical_bytes + packed.stored_bytes
    standalone = k.traffic("pack", operand, src.element).seconds(src.numel, nbytes)
    fused = None
    if mnk is not None and operand in (0, 1):
        fused = k.fused_pack_seconds(ROLES[operand], *mnk, src.numel)
    return (k.pack_in_dispatch.seconds(src.numel, nbytes) if fused is None else fused) - standalone


def _mmt4d_flops(operands: Sequence[TensorInfo]) -> int:
    lhs, rhs = operands[0].shape, operands[1].shape
    if len(lhs) == 5:  # batch_mmt4d
        return 2 * lhs[0] * lhs[1] * lhs[3] * rhs[1] * rhs[3] * lhs[2] * lhs[4]
    return 2 * lhs[0] * lhs[2] * rhs[0] * rhs[2] * lhs[1] * lhs[3]


def _is_boundary(g: EGraphData, c: str) -> bool:
    """Class c is read from outside the dispatch (every node of it a boundary)."""
    nodes = g.choices(c)
    return bool(nodes) and all(n.op in BOUNDARY for n in nodes)


def _fused_pack(g: EGraphData, c: str, facts: _Facts) -> tuple[TensorInfo, TensorInfo, int | None] | None:
    """(source, packed tensor, operand index) of the pack an operand class runs inside its consumer's
    dispatch, if it is one (a set_encoding, or a slice of one: then the whole packed tensor)."""
    for n in g.choices(c):
        if n.op == "EncodedSlice":
            return _fused_pack(g, n.children[0], facts)
        if n.op in ("SetEncoding", "Pack") and not any(m.op == "Empty" for m in g.choices(n.children[0])):
            return facts.info(n.children[0], packed=False), facts.info(c), facts.operand_index(c)
    return None


def _producer_in_dispatch(g: EGraphData, c: str, imported: ImportedProgram) -> str | None:
    """How the source class ``c`` of a pack is computed inside the pack's dispatch: ``"elementwise"``
    for an elementwise generic, ``"reshape"`` for a reshape of one (collapsed on its way to the pack, as
    a PyTorch linear layer reads [B, S, D] tokens), ``"contraction"`` for a contraction's result unset
    in the dispatch (with elementwise ops on its tiles or after the unset: a class holding an unset of
    an in-dispatch value and nothing read from outside), None for anything else (a dispatch input, a
    copy): ``KernelCosts.producer_pack`` prices the first three."""

    def elementwise(d: str) -> bool:
        nodes = g.choices(d)
        return bool(nodes) and all(n.op == "Generic" and _elementwise_proto(g, n, imported) for n in nodes)

    if elementwise(c):
        return "elementwise"
    if is_reshape(g, imported, c):
        sources = {d for n in g.choices(c) for d in _list_classes(g, n.children[1])[:1]}
        if sources and all(elementwise(d) for d in sources):
            return "reshape"
    nodes = g.choices(c)
    unsets = [n for n in nodes if n.op in ("UnsetEncoding", "Unpack")]
    if unsets and not any(n.op in BOUNDARY for n in nodes) and not any(_is_boundary(g, n.children[0]) for n in unsets):
        return "contraction"
    return None


def _elementwise_proto(g: EGraphData, n: Node, imported: ImportedProgram) -> bool:
    """A Generic node of an all-parallel generic that is no contraction."""
    proto = imported.ops.get(str(g.leaf_value(n.children[0])))
    return not _has_reduction(proto) and generic_contraction_kind(proto) is None


def _has_reduction(op: Operation | None) -> bool:
    its = getattr(getattr(op, "attributes", {}).get("iterator_types"), "items", ())
    return any(getattr(a, "value", "") == "reduction" for a in its)


_MULS = frozenset({"arith.mulf", "arith.muli"})
_ADDS = frozenset({"arith.addf", "arith.addi"})


def generic_contraction_kind(op: Operation | None) -> str | None:
    """A ``linalg.generic`` that is a contraction (two inputs, one init, projected-permutation maps, a
    reduction loop, a multiply-accumulate body, e.g. f16 x f16 -> f32 with ``arith.extf``): the
    ``contract:`` kind its maps give (``linalg.generic:(d0,d2);(d2,d1);(d0,d1)``), priced like a
    named contraction (flops at the contraction peak, data-tiled when encoded); else None."""
    if op is None or op.name != "linalg.generic" or not _has_reduction(op):
        return None
    maps = getattr(op.attributes.get("indexing_maps"), "items", ())
    if len(maps) != 3 or len(getattr(op, "results", ())) != 1:
        return None
    dims = [m.dim_positions() if hasattr(m, "dim_positions") else None for m in maps]
    if any(d is None for d in dims):
        return None
    body = {o.name for o in op.regions[0].entry.ops} if getattr(op, "regions", ()) else set()
    if not (body & _MULS and body & _ADDS):
        return None
    return "linalg.generic:" + ";".join("(" + ",".join(f"d{i}" for i in d) + ")" for d in dims if d is not None)


def body_op_count(op: object, weights: Mapping[str, float] | None = None) -> float:
    """The element-ops of a generic's body: its arith and math ops, each by its measured weight
    (``KernelCosts.op_weights``: a ``math.erf`` is a polynomial of tens of instructions), 1 where none
    was measured."""
    regions = getattr(op, "regions", ())
    if not regions:
        return 1
    w = weights or {}
    return max(1.0, sum(w.get(o.name, 1.0) for o in regions[0].entry.ops if o.name.split(".")[0] in ("arith", "math")))


# ------------------------------------------------------------------------------- the node table
def layout_of_term(t: object) -> Layout | None:
    if isinstance(t, Term) and t.op == "Tiled":
        return Layout(tuple(t.args[0]), tuple(t.args[1]), tuple(t.args[2]))
    return None


class _Facts:
    """Shape / element type / stored layout of an e-class, from the analysis facts."""

    def __init__(self, g: EGraphData):
        self.g = g
        # encoding-of values are Terms (decoded leaves): map them to layouts via their class.
        self.term_layout: dict[Term, Layout | None] = {}
        for c in g.classes:
            if g.class_type.get(c) == "Encoding":
                # info() looks encoding-of values up without their class; an Encoding class decodes to a Term
                t = _strip_class(cast(Term, g.leaf_value(c)))
                self.term_layout[t] = layout_of_term(g.facts.get(c, {}).get("layout-of"))

    def operand_index(self, c: str) -> int | None:
        """Which operand of its contraction class c is encoded for (the encoding's operand_index)."""
        enc = self.g.facts.get(c, {}).get("encoding-of")
        if isinstance(enc, Term) and enc.args and isinstance(enc.args[0], int):
            return enc.args[0]
        return None

    def info(self, c: str, *, packed: bool | None = None) -> TensorInfo:
        f = self.g.facts.get(c, {})
        shape = tuple(cast("Iterable[int]", f.get("shape", ())))  # the shape fact: the class's dims
        elem = str(f.get("dtype", "f32"))
        enc = f.get("encoding-of")
        layout = None
        if packed is not False and isinstance(enc, Term):
            layout = self.term_layout.get(_strip_class(enc))
        return TensorInfo(shape, elem, layout)


def _strip_class(t: Term) -> Term:
    return Term(t.op, t.args, "")


def cost_table(
    g: EGraphData, imported: ImportedProgram, target: Target, measured: MeasuredTimes | None = None
) -> CostTable:
    """``NodeCost`` of every extractable node in the root's cone (see ``table.py``); a node whose
    signature ``measured`` holds is priced by that measurement instead of the formulas."""
    facts = _Facts(g)
    launch = launch_seconds(target)
    step = transient_seconds(target)
    once = ((step, transient_dispatches(g, imported)),) if step > 0 else ()
    table = CostTable(
        exclusive=exclusive_nodes(g),
        conflicts=_conflicts(g, target, facts, imported),
        once=once,
        pairs=consumer_pairs(g, imported, target, facts),
    )
    for c in g.classes:
        if not g.is_term_class(c):
            continue
        out = facts.info(c)
        for node in g.choices(c):
            table[node.id] = _node_cost(c, node.op, node.children, out, facts, imported, target, launch, g, measured)
    run = {n: cost.run_seconds for n, cost in table.items()}
    table.gated, table.gate = throttle_charges(g, imported, target, facts, run)
    return table


def conflicts_of(g: EGraphData, target: Target, imported: ImportedProgram) -> tuple[tuple[str, ...], ...]:
    """``cost.conflicts`` of the e-graph for the target (a '?' dim as unbounded)."""
    return _conflicts(g, target, _Facts(g), imported)


def contraction_node_mnk(
    g: EGraphData, node: Node, facts: _Facts, imported: ImportedProgram
) -> tuple[int, int, int] | None:
    """(M, N, K) of a contraction node (a named one, or a generic that is one), else None."""
    if node.op == "Contract":
        kind = "contract:" + str(g.leaf_value(node.children[0]))
        return contraction_mnk(kind, [facts.info(k) for k in node.children[1:4]])
    if node.op == "Generic":
        generic_kind = generic_contraction_kind(imported.ops.get(str(g.leaf_value(node.children[0]))))
        inputs = _list_classes(g, node.children[1]) + _list_classes(g, node.children[2])
        if generic_kind is not None and len(inputs) == 3:
            return contraction_mnk("contract:" + generic_kind, [facts.info(k) for k in inputs])
    return None


def _conflicts(g: EGraphData, target: Target, facts: _Facts, imported: ImportedProgram) -> tuple[tuple[str, ...], ...]:
    if not target.encoding_resolver:
        return ()  # nothing is ever packed
    return codegen_conflicts(
        g,
        target.max_stack_allocation_size,
        facts.info,
        target.plain_result_pack_bytes,
        lambda node: contraction_node_mnk(g, node, facts, imported),
    )


_TIMELESS = frozenset(
    {
        "Arg",
        "Const",
        "Scalar",
        "Size",
        "Empty",
        "Slice",
        "EncodedSlice",
        "Results",
        "TCons",
        "TNil",
        "Dispatch",
        "ConstEval",
    }
)
_SSA = re.compile(r"%[A-Za-z0-9_$.#-]+|\^[A-Za-z0-9_$.-]+")


def _tensor_key(t: TensorInfo) -> str:
    dims = "x".join(map(str, t.shape)) or "scalar"
    if t.layout is None:
        return f"{dims}x{t.element}"
    lay = t.layout
    return f"{dims}x{t.element}@{list(lay.inner_dims_pos)}:{list(lay.inner_tiles)}:{list(lay.outer_dims_perm)}"


def _op_key(proto: Operation | None) -> str:
    """An imported op, printed without its SSA names (the same computation in any program)."""
    if proto is None:
        return "?"
    from egg_dispatch.mlir.printer import Printer

    try:
        text = Printer(use_aliases=False).op(proto, "")
    except Exception:
        return f"{getattr(proto, 'name', '?')}#unprintable"
    return " ".join(_SSA.sub("%", text).split())


def node_signature(
    g: EGraphData, c: str, op: str, kids: tuple[str, ...], facts: _Facts, imported: ImportedProgram
) -> str | None:
    """What a node computes, in terms that do not depend on the program it is in: the op, its kind or
    printed body, its operands' and result's shapes, element types and layouts, and what shapes its
    cost inside a dispatch (operands packed in the dispatch, a decode of a dispatch's own result).
    The key of the measurement cache (``cost.measured``); None for nodes that take no time."""
    if op in _TIMELESS:
        return None
    info = facts.info
    if op in ("SetEncoding", "Pack") and any(n.op == "Empty" for n in g.choices(kids[0])):
        return None
    parts = [op]
    if op in ("Contract", "Mmt4d"):
        kind_class, operand_classes = (kids[0], kids[1:]) if op == "Contract" else _contract_twin(g, c, kids)
        parts.append(str(g.leaf_value(kind_class)))
        for k in operand_classes:
            packed_here = k in operand_classes[:2] and _fused_pack(g, k, facts) is not None
            parts.append(_tensor_key(info(k)) + ("+pack-in-dispatch" if packed_here else ""))
    elif op in ("SetEncoding", "Pack"):
        parts.append(_tensor_key(info(kids[0], packed=False)))
    elif op in ("UnsetEncoding", "Unpack"):
        parts.append(_tensor_key(info(kids[0])) + ("" if _is_boundary(g, kids[0]) else "+in-dispatch"))
    elif op in ("Generic", "Op"):
        if op == "Op" and is_reshape(g, imported, c):
            return None
        parts.append(_op_key(imported.ops.get(str(g.leaf_value(kids[0])))))
        inputs = _list_classes(g, kids[1]) + (_list_classes(g, kids[2]) if op == "Generic" else [])
        parts += [_tensor_key(info(k)) for k in inputs]
    else:
        parts += [_tensor_key(info(k)) for k in kids if g.is_term_class(k)]
    parts.append("-> " + _tensor_key(info(c)))
    return " | ".join(parts)


def node_seconds(
    g: EGraphData,
    c: str,
    op: str,
    kids: tuple[str, ...],
    facts: _Facts,
    imported: ImportedProgram,
    target: Target,
    measured: MeasuredTimes | None = None,
) -> float:
    """Time of the computation a node stands for (0 for views, boundaries and placements); shared by
    the cost table and the plan graph so both price a node the same way. A measured time of its
    signature, when ``measured`` has one, replaces the model's."""
    if measured is not None and len(measured):
        seconds = measured.seconds(node_signature(g, c, op, kids, facts, imported))
        if seconds is not None:
            return seconds
    return _model_seconds(g, c, op, kids, facts, imported, target)


def _model_seconds(
    g: EGraphData, c: str, op: str, kids: tuple[str, ...], facts: _Facts, imported: ImportedProgram, target: Target
) -> float:
    info = facts.info
    out = info(c)
    if op in ("SetEncoding", "Pack") and any(n.op == "Empty" for n in g.choices(kids[0])):
        return 0.0  # an encoded tensor.empty: an allocation, no data to pack
    if op == "Fill":
        return op_seconds("fill", [], out, target)
    if op in ("SetEncoding", "Pack"):
        src = info(kids[0], packed=False)
        seconds = op_seconds("pack", [src], out, target, operand=facts.operand_index(c))
        k = target.kernels
        if k is not None and (form := _producer_in_dispatch(g, kids[0], imported)) is not None:
            # fused: more than the two apart (an elementwise producer), less (a contraction's result)
            seconds += k.producer_pack_seconds(src.element, form == "reshape", src.numel, form == "contraction")
        return max(seconds, 0.0)
    if op in ("UnsetEncoding", "Unpack"):
        src = info(kids[0])
        plain = TensorInfo(out.shape, out.element)
        if target.kernels is not None and not _is_boundary(g, kids[0]):
            return target.kernels.unpack_in_dispatch.seconds(plain.numel, src.stored_bytes + plain.logical_bytes)
        return op_seconds("unpack", [src], plain, target, operand=facts.operand_index(kids[0]))
    if op in ("Contract", "Mmt4d"):
        kind_class, operands_classes = (kids[0], kids[1:]) if op == "Contract" else _contract_twin(g, c, kids)
        kind = "contract:" + str(g.leaf_value(kind_class))
        operands = [info(k) for k in operands_classes]
        seconds = op_seconds(kind, operands, out, target)
        if target.kernels is not None:  # operands packed in this dispatch cost more than standalone packs
            for operand_class in operands_classes[:2]:
                fused = _fused_pack(g, operand_class, facts)
                if fused is not None:
                    seconds += in_dispatch_pack_extra(target, *fused, contraction_mnk(kind, operands))
        return max(seconds, 0.0)
    if op == "InsertSlice":
        return op_seconds("copy", [info(kids[0])], out, target)
    if op in ("Generic", "Op"):
        if op == "Op" and is_reshape(g, imported, c):
            return 0.0
        proto = imported.ops.get(str(g.leaf_value(kids[0])))
        inputs = [info(k) for k in _list_classes(g, kids[1])]
        if op == "Generic":
            inputs += [info(k) for k in _list_classes(g, kids[2])]
        name = getattr(proto, "name", "")
        kind = attention_kind(proto) if name == "iree_linalg_ext.attention" else "generic"
        if name == "linalg.softmax" and target.kernels is not None and target.kernels.softmax.measured:
            kind = "softmax"  # else priced as the generic it decomposes to, as before softmax was measured
        contraction = generic_contraction_kind(proto) if op == "Generic" else None
        if contraction is not None and len(inputs) == 3:  # lhs, rhs, init
            return op_seconds("contract:" + contraction, inputs, out, target)
        weights = target.kernels.op_weights if target.kernels else None
        return op_seconds(kind, inputs, out, target, body_op_count(proto, weights), _has_reduction(proto))
    if op in _TIMELESS:
        return 0.0
    return op_seconds("copy", [info(k) for k in kids if g.is_term_class(k)], out, target)


def _node_cost(
    c: str,
    op: str,
    kids: tuple[str, ...],
    out: TensorInfo,
    facts: _Facts,
    imported: ImportedProgram,
    target: Target,
    launch: float,
    g: EGraphData,
    measured: MeasuredTimes | None = None,
) -> NodeCost:
    if op == "Const":
        return NodeCost(memory_bytes=out.logical_bytes)
    if op == "Dispatch" and is_reshape(g, imported, kids[0]):
        # a reshape between dispatches is metadata (flow.tensor.reshape), not a dispatch; a slice under
        # it is a copy dispatch of its own (copied_slice)
        sliced = copied_slice(g, imported, kids[0])
        if sliced is None:
            return NodeCost()
        seconds = copy_dispatch_seconds(g, sliced, facts, target)
        return NodeCost(run_seconds=seconds, memory_bytes=facts.info(sliced).stored_bytes)
    if op == "Dispatch":
        seconds = launch + alloc_seconds(target, out.stored_bytes) + slice_copy_seconds(g, kids[0], facts, target)
        return NodeCost(run_seconds=seconds, memory_bytes=out.stored_bytes)
    if op == "Results":
        results = _list_classes(g, kids[0])
        seconds = call_seconds(target) + output_seconds(target) * len(results)
        slices = [s for s in dict.fromkeys(copied_slice(g, imported, r) for r in results) if s is not None]
        seconds += sum(copy_dispatch_seconds(g, s, facts, target) for s in slices)
        return NodeCost(run_seconds=seconds, memory_bytes=sum(facts.info(s).stored_bytes for s in slices))
    if op == "ConstEval":
        return NodeCost(memory_bytes=out.stored_bytes)
    seconds = node_seconds(g, c, op, kids, facts, imported, target, measured)
    return NodeCost(run_seconds=seconds, load_seconds=seconds)


def is_reshape(g: EGraphData, imported: ImportedProgram, c: str) -> bool:
    """Class c is a reshape (a view of its input's bytes): every node an Op over a reshape."""
    nodes = g.choices(c)
    return bool(nodes) and all(
        n.op == "Op" and getattr(imported.ops.get(str(g.leaf_value(n.children[0]))), "name", "") in RESHAPE_OPS
        for n in nodes
    )


def output_classes(g: EGraphData, imported: ImportedProgram) -> frozenset[str]:
    """Classes whose buffer is a function result: the root's results, and what a reshape of one views."""
    todo = [d for n in g.choices(g.root) if n.op == "Results" for d in _list_classes(g, n.children[0])]
    out: set[str] = set()
    while todo:
        c = todo.pop()
        if c in out:
            continue
        out.add(c)
        for n in g.choices(c):
            if n.op == "Dispatch" and is_reshape(g, imported, n.children[0]):
                todo.extend(d for body in g.choices(n.children[0]) for d in _list_classes(g, body.children[1]))
    return frozenset(out)


def consumer_pairs(
    g: EGraphData, imported: ImportedProgram, target: Target, facts: _Facts | None = None
) -> tuple[tuple[float, str, str], ...]:
    """(seconds, generic node, unset node): an elementwise generic reading the result of an
    ``unset_encoding`` (or unpack) inside its dispatch pays ``KernelCosts.consumer_after_unpack`` per
    element of its result when a plan chooses both (on the Xeon a bias + ReLU after the unpack of a
    32 x 96 contraction cost 1.6 µs more than the contraction with the unpack alone; the same generic on
    the encoded accumulator, ``rules/sink_unset.egg``, pays nothing extra). Empty without that fit."""
    k = target.kernels
    if k is None or not k.consumer_after_unpack.measured:
        return ()
    facts = facts or _Facts(g)
    out: list[tuple[float, str, str]] = []
    for c in g.classes:
        for p in g.choices(c):
            if p.op != "Generic" or not _elementwise_proto(g, p, imported):
                continue
            seconds = k.consumer_after_unpack.seconds(facts.info(c).numel, 0.0)
            if seconds <= 0:
                continue
            for d in dict.fromkeys(_list_classes(g, p.children[1])):
                out += [(seconds, p.id, n.id) for n in g.choices(d) if n.op in ("UnsetEncoding", "Unpack")]
    return tuple(out)


def contraction_tiled(g: EGraphData, node: Node, facts: _Facts, imported: ImportedProgram) -> bool | None:
    """Whether a node is a data-tiled contraction (an operand encoded with a tiled layout: an mmt4d
    kernel), a plain one (False), or no contraction (None)."""
    if node.op in ("Contract", "Mmt4d"):
        kids = node.children
        operands = kids[1:3] if node.op == "Contract" else _contract_twin(g, node.eclass, kids)[1][:2]
    elif node.op == "Generic" and generic_contraction_kind(imported.ops.get(str(g.leaf_value(node.children[0])))):
        operands = tuple(_list_classes(g, node.children[1])[:2])
    else:
        return None
    return any(facts.info(k).layout is not None for k in operands)


def throttles(kernels: KernelCosts, tiled: bool | None, seconds: float) -> bool:
    """Whether a contraction (``contraction_tiled``) of ``seconds`` slows a plan's plain ones: a data-tiled
    one of at least ``KernelCosts.throttle_us`` (the gate of ``throttle_charges``)."""
    return bool(tiled) and kernels.throttle > 0 and seconds >= kernels.throttle_us * 1e-6


def throttle_charges(
    g: EGraphData, imported: ImportedProgram, target: Target, facts: _Facts, seconds: Mapping[str, float]
) -> tuple[tuple[tuple[float, str], ...], frozenset[str]]:
    """(``gated`` charges, ``gate``) of ``KernelCosts.throttle``: every plain contraction node pays that
    fraction of its time (``seconds``, by node id) more when the plan also runs a data-tiled one whose
    time reaches ``throttle_us`` (the gate). On the Xeon two plain 64 x 768 x 768 matmuls ran 11-14%
    slower in a module whose third projection was data-tiled (a 580 µs mmt4d), which a model that
    priced each kernel as measured alone ranked as fast as three plain ones. Empty without the fit."""
    k = target.kernels
    if k is None or k.throttle <= 0:
        return (), frozenset()
    gate: set[str] = set()
    gated: list[tuple[float, str]] = []
    for c in g.classes:
        if not g.is_term_class(c):
            continue
        for n in g.choices(c):
            tiled = contraction_tiled(g, n, facts, imported)
            if tiled is None:
                continue
            if throttles(k, tiled, seconds.get(n.id, 0.0)):
                gate.add(n.id)
            elif not tiled and seconds.get(n.id, 0.0) > 0:
                gated.append((k.throttle * seconds[n.id], n.id))
    return (tuple(gated), frozenset(gate)) if gate and gated else ((), frozenset())


def transient_dispatches(g: EGraphData, imported: ImportedProgram) -> frozenset[str]:
    """Dispatch nodes whose result, at run time, is a transient buffer: not a function result (so
    another dispatch reads it), and not a reshape (a view of its operand's buffer)."""
    outputs = output_classes(g, imported)
    return frozenset(
        n.id
        for c in g.classes
        if c not in outputs and g.is_term_class(c)
        for n in g.choices(c)
        if n.op == "Dispatch" and not is_reshape(g, imported, n.children[0])
    )


_EXCLUSIVE_OPS = frozenset(
    {"SetEncoding", "Pack", "UnsetEncoding", "Unpack", "Contract", "Mmt4d", "Generic", "Op", "InsertSlice"}
)


def exclusive_nodes(g: EGraphData) -> frozenset[str]:
    """Computations a plan must not share between two consumers for free: fused into two dispatches
    they run twice (IREE clones the producer into each), while the DAG objective charges them once.
    Views, fills and encoded empties are cloned at no real cost and stay shareable."""
    below: set[str] = set()  # classes some ConstEval may evaluate at load: charged once, as usual
    todo = [k for c in g.classes for n in g.choices(c) if n.op == "ConstEval" for k in n.children]
    while todo:
        c = todo.pop()
        if c in below or not g.is_term_class(c):
            continue
        below.add(c)
        todo.extend(k for n in g.choices(c) for k in n.children)
    out = set()
    for c in g.classes:
        if c in below:
            continue
        for n in g.choices(c):
            if n.op not in _EXCLUSIVE_OPS:
                continue
            if n.op in ("SetEncoding", "Pack") and any(k.op == "Empty" for k in g.choices(n.children[0])):
                continue
            out.add(n.id)
    return frozenset(out)


def _contract_twin(g: EGraphData, c: str, kids: tuple[str, ...]) -> tuple[str, tuple[str, ...]]:
    """The Contract an Mmt4d was materialized from (same class, same operands; maybe swapped)."""
    for node in g.choices(c):
        if node.op == "Contract" and node.children[3] == kids[2] and set(node.children[1:3]) == set(kids[:2]):
            return node.children[0], node.children[1:]
    raise ValueError("mmt4d without the contraction it materializes")


def _list_classes(g: EGraphData, c: str) -> list[str]:
    """The element classes of a TList class (following its first extractable node)."""
    out: list[str] = []
    seen = set()
    while c not in seen:
        seen.add(c)
        nodes = g.choices(c)
        if not nodes or nodes[0].op != "TCons":
            break
        out.append(nodes[0].children[0])
        c = nodes[0].children[1]
    return out
