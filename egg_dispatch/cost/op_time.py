"""Time of one op on tensors (``op_seconds``), not counting the launch of the dispatch it runs in.

Without a calibrated profile the time is the additive roofline, compute plus traffic, which
decomposes over e-nodes (``bw`` the target's memory bandwidth; ``peak`` its GFLOP/s for the
data-tiled mmt4d kernel when every operand is encoded with a tiled layout, for a plain matmul
otherwise):

* contraction: flops on padded sizes / peak + stored operand and result bytes / bw;
* pack, unpack, copy: (logical + stored bytes) / bw, roughly proportional to the bytes moved
  (docs/iree-data-tiling.md §9); fill: stored result bytes / bw;
* elementwise and other generics: stored bytes in and out / bw, plus
  ``ELEMENTWISE_FLOPS_PER_ELEMENT`` per body op and stored element at the plain-matmul peak (a
  generic on encoded operands runs on the padded tiles);
* attention: twice its flops (the softmax between Q·Kᵀ and P·V as much again) at the plain-matmul
  peak.

With a calibrated profile (``target.kernels``, written by ``egg-dispatch calibrate``) the measured fit
of each kind replaces its formula, and a kernel's bytes beyond the fitted cache size cost the
measured streaming rate on top (``KernelCosts.spill_seconds``).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence

from egg_dispatch.cost.contraction import (
    contraction_mnk,
    contraction_rhs,
    contraction_rows,
    contraction_sizes,
    mmt4d_flops,
    mmt4d_mnk,
    packed_rhs,
    parse_maps,
    rhs_is_kn,
)
from egg_dispatch.cost.facts import TensorInfo
from egg_dispatch.target.kernels import ROLES, attention_flops
from egg_dispatch.target.profile import Target

__all__ = ["ELEMENTWISE_FLOPS_PER_ELEMENT", "attention_kind", "body_op_count", "in_dispatch_pack_extra", "op_seconds"]


ELEMENTWISE_FLOPS_PER_ELEMENT = 1.0
"""Each arith/math op in a generic's body is one flop per element of the iteration space."""


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
            flops: float = mmt4d_flops(operands)
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
        flops = mmt4d_flops(operands) if kind == "mmt4d" else contraction_sizes(kind[len("contract:") :], operands)[0]
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


def body_op_count(op: object, weights: Mapping[str, float] | None = None) -> float:
    """The element-ops of a generic's body: its arith and math ops, each by its measured weight
    (``KernelCosts.op_weights``: a ``math.erf`` is a polynomial of tens of instructions), 1 where none
    was measured."""
    regions = getattr(op, "regions", ())
    if not regions:
        return 1
    w = weights or {}
    return max(1.0, sum(w.get(o.name, 1.0) for o in regions[0].entry.ops if o.name.split(".")[0] in ("arith", "math")))
