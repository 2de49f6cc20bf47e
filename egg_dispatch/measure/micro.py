"""Micro-programs for calibration: plans whose every dispatch is one kind of work, at chosen sizes.

Each builder writes a function in our plan form (``flow.dispatch.region`` + top-level encodes; the form
``emit.iree`` turns into IREE's post-dispatch-creation form), so that the dispatch boundaries are exactly
the ones the cost model prices, not whatever IREE's own dispatch formation would make. One function
holds many independent cases (each with its own arguments and result), so that one compile and one
profiled benchmark measure them all; ``Case.dispatches`` says which dispatch (by its ordinal among the
function's workgroups, or by its encode signature) measures what.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

__all__ = [
    "MATH_OPS",
    "THROTTLE_VICTIMS",
    "UNPACK_IN_DISPATCH",
    "Case",
    "MicroProgram",
    "buffer",
    "chain",
    "contractions",
    "encode_after_contraction",
    "fan",
    "generics",
    "math_op_helpers",
    "opaque",
    "producer_pack",
    "slice_copy",
    "throttle",
]

UNPACK_IN_DISPATCH = ("mmt4d+unpack", "mmt4d+unpack+bias")
"""Contraction kinds whose result is decoded inside the contraction's dispatch (no decode dispatch)."""

MAPS = (
    "#map = affine_map<(d0, d1, d2) -> (d0, d2)>\n"
    "#map1 = affine_map<(d0, d1, d2) -> (d1, d2)>\n"
    "#map2 = affine_map<(d0, d1, d2) -> (d0, d1)>\n"
    "#map3 = affine_map<(d0, d1, d2) -> (d2, d1)>\n"
)
_BYTES = {"f32": 4, "f16": 2, "bf16": 2, "i8": 1, "i32": 4, "f64": 8}
_NUMPY = {"f32": np.float32, "f16": np.float16, "i8": np.int8, "i32": np.int32, "f64": np.float64}


@dataclass
class Case:
    """One measured thing: its kind, its sizes, and the dispatch whose time it is."""

    kind: str
    """``mmt4d``, ``matmul``, ``pack``, ``unpack``, ``mmt4d+unpack``, ``mmt4d+pack_lhs``, ``mmt4d+pack_rhs``,
    ``elementwise``, ``reduction``, ``softmax``, ``attention``, ``chain``, ``fan``, ``slice_copy`` (a
    whole-call time) or ``alloc`` (the call's time beyond its kernel's)."""
    types: str
    sizes: tuple[int, ...]
    dispatch: int | None = None
    """Ordinal of its workgroups op in the function (IREE names it ``<func>_dispatch_<N>_...``)."""
    encode: str | None = None
    """For an encode dispatch: IREE's name suffix ``encode_<shape>x<type>_to_<shape>x<type>``."""
    operand: int | None = None
    """For a pack or unpack: which operand of the (M, N, K) contraction it encodes (0 LHS, 1 RHS, 2 result)."""


@dataclass
class MicroProgram:
    function: str
    text: str
    inputs: list[np.ndarray]
    cases: list[Case] = field(default_factory=list)
    dispatch_count: int = 0
    """Dispatches one call runs (workgroups and encodes), for the launch-overhead fit."""
    outputs: int = 1
    """Results of the function (each a buffer allocated and exported per call)."""


def _t(shape: Sequence[int], elem: str, enc: str | None = None) -> str:
    dims = "x".join(map(str, shape))
    return f"tensor<{dims}x{elem}{', ' + enc if enc else ''}>"


def _array(shape: Sequence[int], elem: str, rng: np.random.Generator) -> np.ndarray:
    if elem.startswith("i"):
        return rng.integers(-4, 5, size=tuple(shape)).astype(_NUMPY[elem])
    return (rng.integers(-8, 9, size=tuple(shape)) / 16).astype(_NUMPY[elem])


def _encoding(i: int, types: Sequence[str], m: int, n: int, k: int) -> str:
    return (
        f"#iree_encoding.encoding<operand_index = {i} : index, op_type = matmul, element_types = "
        f"[{', '.join(types)}], user_indexing_maps = [#map, #map1, #map2], iteration_sizes = [{m}, {n}, {k}]>"
    )


def contractions(
    name: str, kind: str, types: str, shapes: Sequence[tuple[int, int, int]], seed: int = 0
) -> MicroProgram:
    """``x[M,K] . w[N,K]^T`` for every (M, N, K), one dispatch each, placed as ``kind`` says:

    * ``mmt4d``: operands encoded by dispatches of their own (``pack`` cases), the contraction in a
      dispatch that stores the encoded result, decoded by a dispatch of its own (``unpack`` cases);
    * ``mmt4d+unpack``: the same with the decode in the contraction's dispatch;
    * ``mmt4d+unpack+bias``: that, and a bias add (a broadcast [N] argument) plus ReLU on the decoded
      result, in the same dispatch (the form IREE's plan avoids by adding the bias on the tiles);
    * ``mmt4d+pack_lhs`` / ``mmt4d+pack_rhs``: one operand packed inside the contraction's dispatch;
    * ``matmul``: no encodings at all (plain codegen);
    * ``matmul_kn``: the same with the weight stored [K, N] (``x . w``, as a ``batch_matmul`` or an
      un-transposed ``linalg.matmul`` reads it): plain codegen vectorizes along N there, and the
      block-sized shapes ran 25-30% faster than with [N, K] on the Xeon.
    """
    return _contraction_program(name, [(kind, s) for s in shapes], types, seed)


def _contraction_program(
    name: str, items: Sequence[tuple[str, tuple[int, int, int]]], types: str, seed: int = 0
) -> MicroProgram:
    """The function of ``contractions``, each (kind, (M, N, K)) item placed as its own kind says."""
    lhs_t, rhs_t, acc_t = types.split(",")
    rng = np.random.default_rng(seed)
    args, body, results, rtypes, aliases = [], [], [], [], []
    prog = MicroProgram(name, "", [])
    wg = 0
    for c, (kind, (m, n, k)) in enumerate(items):
        e = [f"#e{c}_{i}" for i in range(3)]
        aliases += [f"{e[i]} = {_encoding(i, (lhs_t, rhs_t, acc_t), m, n, k)}" for i in range(3)]
        a, b = f"%a{c}", f"%b{c}"
        kn = kind == "matmul_kn"
        rhs_shape = (k, n) if kn else (n, k)
        args += [f"{a}: {_t((m, k), lhs_t)}", f"{b}: {_t(rhs_shape, rhs_t)}"]
        prog.inputs += [_array((m, k), lhs_t, rng), _array(rhs_shape, rhs_t, rng)]
        plain = kind in ("matmul", "matmul_kn")
        pack_lhs, pack_rhs = kind == "mmt4d+pack_lhs", kind == "mmt4d+pack_rhs"
        if not plain and not pack_lhs:
            body.append(f"%ae{c} = iree_encoding.set_encoding {a} : {_t((m, k), lhs_t)} -> {_t((m, k), lhs_t, e[0])}")
            prog.cases.append(Case("pack", types, (m, n, k), encode=_encode_name((m, k), lhs_t), operand=0))
            prog.dispatch_count += 1
        if not plain and not pack_rhs:
            body.append(f"%be{c} = iree_encoding.set_encoding {b} : {_t((n, k), rhs_t)} -> {_t((n, k), rhs_t, e[1])}")
            prog.cases.append(Case("pack", types, (m, n, k), encode=_encode_name((n, k), rhs_t), operand=1))
            prog.dispatch_count += 1
        inner = []
        lhs_v, rhs_v = (a, b) if plain else (f"%ae{c}", f"%be{c}")
        if pack_lhs:
            inner.append(f"%ai{c} = iree_encoding.set_encoding {a} : {_t((m, k), lhs_t)} -> {_t((m, k), lhs_t, e[0])}")
            lhs_v = f"%ai{c}"
        if pack_rhs:
            inner.append(f"%bi{c} = iree_encoding.set_encoding {b} : {_t((n, k), rhs_t)} -> {_t((n, k), rhs_t, e[1])}")
            rhs_v = f"%bi{c}"
        enc = None if plain else e
        lt, rt, ot = (
            _t((m, k), lhs_t, enc[0] if enc else None),
            _t(rhs_shape, rhs_t, enc[1] if enc else None),
            _t((m, n), acc_t, enc[2] if enc else None),
        )
        zero = "0" if acc_t.startswith("i") else "0.0"
        inner += [
            f"%z{c} = arith.constant {zero} : {acc_t}",
            f"%e{c} = tensor.empty() : {ot}",
            f"%f{c} = linalg.fill ins(%z{c} : {acc_t}) outs(%e{c} : {ot}) -> {ot}",
            f"%m{c} = linalg.matmul indexing_maps = [#map, {'#map3' if kn else '#map1'}, #map2] "
            f"ins({lhs_v}, {rhs_v} : {lt}, {rt}) "
            f"outs(%f{c} : {ot}) -> {ot}",
        ]
        out_v, out_t = f"%m{c}", ot
        if kind in UNPACK_IN_DISPATCH:
            inner.append(f"%u{c} = iree_encoding.unset_encoding %m{c} : {ot} -> {_t((m, n), acc_t)}")
            out_v, out_t = f"%u{c}", _t((m, n), acc_t)
        if kind == "mmt4d+unpack+bias":
            args.append(f"%bias{c}: {_t((n,), acc_t)}")
            prog.inputs.append(_array((n,), acc_t, rng))
            rt2 = _t((m, n), acc_t)
            inner += [
                f"%be{c}_o = tensor.empty() : {rt2}",
                f"%g{c} = linalg.generic {{indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, "
                f"affine_map<(d0, d1) -> (d1)>, affine_map<(d0, d1) -> (d0, d1)>], "
                f'iterator_types = ["parallel", "parallel"]}} ins(%u{c}, %bias{c} : {rt2}, {_t((n,), acc_t)}) '
                f"outs(%be{c}_o : {rt2}) {{\n      ^bb0(%i: {acc_t}, %j: {acc_t}, %o: {acc_t}):\n"
                f"        %s = arith.addf %i, %j : {acc_t}\n        %q = arith.maximumf %s, %z{c} : {acc_t}\n"
                f"        linalg.yield %q : {acc_t}\n      }} -> {rt2}",
            ]
            out_v = f"%g{c}"
        inner.append(f"flow.return {out_v} : {out_t}")
        body.append(f"%r{c} = flow.dispatch.region -> ({out_t}) {{\n      " + "\n      ".join(inner) + "\n    }")
        measured = {"mmt4d": "mmt4d", "matmul": "matmul"}.get(kind, kind)
        prog.cases.append(Case(measured, types, (m, n, k), dispatch=wg))
        wg += 1
        prog.dispatch_count += 1
        if not plain and kind not in UNPACK_IN_DISPATCH:
            body.append(f"%d{c} = iree_encoding.unset_encoding %r{c} : {ot} -> {_t((m, n), acc_t)}")
            prog.cases.append(Case("unpack", types, (m, n, k), encode=_encode_name((m, n), acc_t), operand=2))
            prog.dispatch_count += 1
            results.append(f"%d{c}")
        else:
            results.append(f"%r{c}")
        rtypes.append(_t((m, n), acc_t))
    prog.text = _function(name, aliases, args, body, results, rtypes)
    return prog


def _encode_name(shape: Sequence[int], elem: str) -> str:
    s = "x".join(map(str, shape)) + f"x{elem}"
    return f"encode_{s}_to_{s}"


THROTTLE_VICTIMS = ((64, 768, 768), (64, 704, 768))
"""The plain f32 contractions ``throttle`` programs time next to an mmt4d (~1.5 ms a call on the Xeon,
within the ~4 ms its clock stayed down after an mmt4d); of two shapes, so that IREE does not merge
their executables into one."""


def throttle(name: str, heavy: tuple[int, int, int] | None, seed: int = 0) -> MicroProgram:
    """The plain f32 ``THROTTLE_VICTIMS`` contractions (``throttle_victim`` cases, sizes: the heavy
    shape, 0s without one, and the victim's index), and with ``heavy`` an f32 mmt4d of that (M, N, K)
    decoded in its dispatch (a ``throttle_heavy`` case): how much slower plain codegen runs in a plan
    that also runs an mmt4d kernel (``KernelCosts.throttle``)."""
    items = [("matmul", s) for s in THROTTLE_VICTIMS] + ([("mmt4d+unpack", heavy)] if heavy else [])
    prog = _contraction_program(name, items, "f32,f32,f32", seed)
    tag = heavy or (0, 0, 0)
    victims = [c for c in prog.cases if c.kind == "matmul"]
    for i, case in enumerate(victims):
        case.kind, case.sizes = "throttle_victim", (*tag, i)
    # the heavy operands' encodes run (and are in ``dispatch_count``) but are not samples of packs
    heavy_cases = [dataclasses.replace(c, kind="throttle_heavy") for c in prog.cases if c.kind == "mmt4d+unpack"]
    prog.cases = victims + heavy_cases
    return prog


MATH_OPS = ("math.exp", "math.tanh", "math.erf", "math.rsqrt", "math.sqrt", "math.log", "math.fpowi", "arith.divf")
"""Body ops whose cost calibrate measures apart (``elementwise_op``): IREE expands the transcendental
ones into polynomials (``math-polynomial-approximation``), many times an add's work per element."""


def math_op_helpers(op: str) -> int:
    """Body ops of an ``elementwise_op`` case besides the leading add and ``op`` itself (a constant, the
    absf and add that keep a square root's input positive): what its measured extra holds beyond the op."""
    return len(_math_op(op)) - 1


def _math_op(op: str) -> list[str]:
    """Body lines computing ``%s1`` from ``%s0`` (and the second input ``%j``) with ``op``."""
    if op == "math.fpowi":
        return ["%p = arith.constant 2 : i32", "%s1 = math.fpowi %s0, %p : f32, i32"]
    if op.startswith("arith."):
        return [f"%s1 = {op} %s0, %j : f32"]
    if op in ("math.rsqrt", "math.sqrt", "math.log"):  # defined on positive inputs
        return ["%a = math.absf %s0 : f32", "%one = arith.constant 1.0 : f32", "%b = arith.addf %a, %one : f32",
                f"%s1 = {op} %b : f32"]  # fmt: skip
    return [f"%s1 = {op} %s0 : f32"]


def generics(
    name: str,
    kind: str,
    shapes: Sequence[tuple[int, int]],
    body_ops: int = 1,
    seed: int = 0,
    math_ops: Sequence[str] = (),
) -> MicroProgram:
    """One dispatch per [R, C] f32 shape: ``elementwise`` (x + y, then ``body_ops - 1`` multiplies),
    ``reduction`` (a sum over C), or per shape and op of ``math_ops`` (of ``MATH_OPS``)
    ``elementwise_op``: x + y, then the op (the case's types name it)."""
    rng = np.random.default_rng(seed)
    args, body, results, rtypes = [], [], [], []
    prog = MicroProgram(name, "", [])
    items = (
        [(r, n, op) for r, n in shapes for op in math_ops] if kind == "elementwise_op" else [(*s, None) for s in shapes]
    )
    for c, (r, n, math_op) in enumerate(items):
        t2, t1 = _t((r, n), "f32"), _t((r,), "f32")
        args += [f"%x{c}: {t2}", f"%y{c}: {t2}"]
        prog.inputs += [_array((r, n), "f32", rng), _array((r, n), "f32", rng)]
        id2 = "affine_map<(d0, d1) -> (d0, d1)>"
        if kind in ("elementwise", "elementwise_op"):
            ops = ["%s0 = arith.addf %i, %j : f32"]
            if kind == "elementwise_op":
                assert math_op is not None
                ops += _math_op(math_op)
                body_ops = 2
            else:
                ops += [f"%s{i} = arith.mulf %s{i - 1}, %i : f32" for i in range(1, body_ops)]
            region = (
                f"%e{c} = tensor.empty() : {t2}\n      %g{c} = linalg.generic {{indexing_maps = [{id2}, {id2}, {id2}], "
                f'iterator_types = ["parallel", "parallel"]}} ins(%x{c}, %y{c} : {t2}, {t2}) outs(%e{c} : {t2}) {{\n'
                f"      ^bb0(%i: f32, %j: f32, %o: f32):\n        "
                + "\n        ".join(ops)
                + f"\n        linalg.yield %s{body_ops - 1} : f32\n      }} -> {t2}\n      flow.return %g{c} : {t2}"
            )
            out_t = t2
        else:
            red = "affine_map<(d0, d1) -> (d0)>"
            region = (
                f"%z{c} = arith.constant 0.0 : f32\n      %e{c} = tensor.empty() : {t1}\n"
                f"      %f{c} = linalg.fill ins(%z{c} : f32) outs(%e{c} : {t1}) -> {t1}\n"
                f"      %g{c} = linalg.generic {{indexing_maps = [{id2}, {red}], "
                f'iterator_types = ["parallel", "reduction"]}} ins(%x{c} : {t2}) outs(%f{c} : {t1}) {{\n'
                f"      ^bb0(%i: f32, %o: f32):\n        %s = arith.addf %i, %o : f32\n        linalg.yield %s : f32\n"
                f"      }} -> {t1}\n      flow.return %g{c} : {t1}"
            )
            out_t = t1
        body.append(f"%r{c} = flow.dispatch.region -> ({out_t}) {{\n      {region}\n    }}")
        types = math_op if kind == "elementwise_op" and math_op else "f32,f32,f32"
        prog.cases.append(Case(kind, types, (r, n, body_ops), dispatch=c))
        prog.dispatch_count += 1
        results.append(f"%r{c}")
        rtypes.append(out_t)
    prog.text = _function(name, [], args, body, results, rtypes)
    return prog


ATTENTION_MAPS = (
    "affine_map<(d0, d1, d2, d3, d4) -> (d0, d1, d3)>",  # Q [B, M, K1]
    "affine_map<(d0, d1, d2, d3, d4) -> (d0, d4, d3)>",  # K [B, K2, K1]
    "affine_map<(d0, d1, d2, d3, d4) -> (d0, d4, d2)>",  # V [B, K2, N]
    "affine_map<(d0, d1, d2, d3, d4) -> ()>",  # scale
    "affine_map<(d0, d1, d2, d3, d4) -> (d0, d1, d2)>",  # O [B, M, N]
)


def opaque(name: str, kind: str, shapes: Sequence[tuple[int, ...]], seed: int = 0) -> MicroProgram:
    """One dispatch per shape of an op the model cannot see into: ``softmax`` (``linalg.softmax`` over
    the last dim of an [R, C] f32 tensor, the form IREE's global optimization raises a decomposed
    softmax to) or ``attention`` (``iree_linalg_ext.attention`` of Q [B, M, K1], K [B, K2, K1],
    V [B, K2, N], the form a PyTorch ``scaled_dot_product_attention`` reaches IREE in)."""
    if kind not in ("softmax", "attention"):
        raise ValueError(f"opaque: kind must be softmax or attention, got {kind!r}")
    rng = np.random.default_rng(seed)
    args, body, results, rtypes = [], [], [], []
    prog = MicroProgram(name, "", [])
    for c, shape in enumerate(shapes):
        if kind == "softmax":
            r, n = shape
            t = _t((r, n), "f32")
            args.append(f"%x{c}: {t}")
            prog.inputs.append(_array((r, n), "f32", rng))
            region = (
                f"%e{c} = tensor.empty() : {t}\n"
                f"      %s{c} = linalg.softmax dimension(1) ins(%x{c} : {t}) outs(%e{c} : {t}) -> {t}\n"
                f"      flow.return %s{c} : {t}"
            )
            out_t = t
        else:
            b, m, k1, k2, n = shape
            tq, tk, tv, out_t = (
                _t((b, m, k1), "f32"),
                _t((b, k2, k1), "f32"),
                _t((b, k2, n), "f32"),
                _t((b, m, n), "f32"),
            )
            args += [f"%q{c}: {tq}", f"%k{c}: {tk}", f"%v{c}: {tv}"]
            prog.inputs += [_array(s, "f32", rng) for s in ((b, m, k1), (b, k2, k1), (b, k2, n))]
            region = (
                f"%c{c} = arith.constant {1.0 / k1**0.5:.6f} : f32\n"
                f"      %e{c} = tensor.empty() : {out_t}\n"
                f"      %a{c} = iree_linalg_ext.attention <indexing_maps = [{', '.join(ATTENTION_MAPS)}]> "
                f"ins(%q{c}, %k{c}, %v{c}, %c{c} : {tq}, {tk}, {tv}, f32) outs(%e{c} : {out_t}) {{\n"
                f"      ^bb0(%w: f32):\n        iree_linalg_ext.yield %w : f32\n      }} -> {out_t}\n"
                f"      flow.return %a{c} : {out_t}"
            )
        body.append(f"%r{c} = flow.dispatch.region -> ({out_t}) {{\n      {region}\n    }}")
        prog.cases.append(Case(kind, "f32,f32,f32", tuple(shape), dispatch=c))
        prog.dispatch_count += 1
        results.append(f"%r{c}")
        rtypes.append(out_t)
    prog.text = _function(name, [], args, body, results, rtypes)
    return prog


def chain(name: str, length: int, width: int = 16) -> MicroProgram:
    """``length`` dependent one-op dispatches on a 1 x ``width`` tensor: almost nothing but launches."""
    t = _t((1, width), "f32")
    body, prev = [], "%x"
    for i in range(length):
        body.append(_elementwise_region(f"%r{i}", prev, t, "%s = arith.addf %i, %i : f32", "%s", str(i)))
        prev = f"%r{i}"
    prog = MicroProgram(name, _function(name, [], [f"%x: {t}"], body, [prev], [t]), [np.ones((1, width), np.float32)])
    prog.cases.append(Case("chain", "f32,f32,f32", (length, width, 0)))
    prog.dispatch_count = length
    return prog


def fan(name: str, width: int, count: int = 16) -> MicroProgram:
    """``width`` independent one-op dispatches on a 1 x ``count`` tensor, each a function result: as
    many launches as a chain of that length, but no transient buffer (``KernelCosts.transient_us``).
    Each scales by its own constant, so that no two dispatches are alike and none is CSE'd away."""
    t = _t((1, count), "f32")
    body = []
    for i in range(width):
        ops = f"%c = arith.constant {i + 2}.0 : f32\n        %s = arith.mulf %i, %c : f32"
        body.append(_elementwise_region(f"%r{i}", "%x", t, ops, "%s", str(i)))
    results = [f"%r{i}" for i in range(width)]
    text = _function(name, [], [f"%x: {t}"], body, results, [t] * width)
    prog = MicroProgram(name, text, [np.ones((1, count), np.float32)])
    prog.cases.append(Case("fan", "f32,f32,f32", (width, count, 0)))
    prog.dispatch_count = width
    prog.outputs = width
    return prog


def producer_pack(
    name: str, element: str, shapes: Sequence[tuple[int, int, int]], fused: bool, seed: int = 0
) -> MicroProgram:
    """An elementwise producer of a contraction's LHS and its pack, per (B, S, K) shape: the generic
    over an f32 [S, K] argument (B = 0) or [B, S, K] one collapsed to [B·S, K] (how a PyTorch linear
    layer reads a batch of tokens), converting to ``element`` (``arith.truncf`` for f16, else a
    multiply), then ``set_encoding`` as LHS of an M x 128 x K matmul. With ``fused`` the generic, the
    collapse and the pack are one dispatch (``producer_pack`` cases, IREE's
    FuseEncodingOpsIntoDispatchRegions), else the generic is one (``producer_generic``) and the pack an
    encode dispatch of its own (``producer_encode``). Each case's encoded result is decoded by a
    dispatch that doubles it, so that neither form's result is a function result. On the Xeon the
    fused form ran 2-4x the two apart ([2, 8, 64] f16: 0.72 µs against 0.08 + 0.11)."""
    rng = np.random.default_rng(seed)
    args, body, results, rtypes, aliases = [], [], [], [], []
    prog = MicroProgram(name, "", [])
    wg = 0
    for c, (b, s, k) in enumerate(shapes):
        m = max(b, 1) * s
        aliases.append(f"#p{c} = {_encoding(0, (element, element, 'f32'), m, 128, k)}")
        src_shape = (b, s, k) if b else (s, k)
        tin, tout = _t(src_shape, "f32"), _t(src_shape, element)
        t2, tenc = _t((m, k), element), _t((m, k), element, f"#p{c}")
        args.append(f"%x{c}: {tin}")
        prog.inputs.append(_array(src_shape, "f32", rng))
        dims = ", ".join(f"d{i}" for i in range(len(src_shape)))
        ident = f"affine_map<({dims}) -> ({dims})>"
        parallel = ", ".join(['"parallel"'] * len(src_shape))
        op = "%v = arith.truncf %i : f32 to f16" if element == "f16" else "%v = arith.mulf %i, %i : f32"
        gen = (
            f"%e{c} = tensor.empty() : {tout}\n      %g{c} = linalg.generic {{indexing_maps = [{ident}, {ident}], "
            f"iterator_types = [{parallel}]}} ins(%x{c} : {tin}) outs(%e{c} : {tout}) {{\n"
            f"      ^bb0(%i: f32, %o: {element}):\n        {op}\n        linalg.yield %v : {element}\n"
            f"      }} -> {tout}"
        )
        collapse = f"tensor.collapse_shape %{{v}} [[0, 1], [2]] : {tout} into {t2}" if b else ""
        types = f"{element},{element},f32"
        sizes = (m, k, int(bool(b)))
        if fused:
            lines = [gen]
            v = f"%g{c}"
            if collapse:
                lines.append(f"%c{c} = " + collapse.format(v=f"g{c}"))
                v = f"%c{c}"
            lines += [f"%s{c} = iree_encoding.set_encoding {v} : {t2} -> {tenc}", f"flow.return %s{c} : {tenc}"]
            body.append(f"%r{c} = flow.dispatch.region -> ({tenc}) {{\n      " + "\n      ".join(lines) + "\n    }")
            prog.cases.append(Case("producer_pack", types, sizes, dispatch=wg))
            wg += 1
        else:
            body.append(
                f"%q{c} = flow.dispatch.region -> ({tout}) {{\n      {gen}\n      flow.return %g{c} : {tout}\n    }}"
            )
            prog.cases.append(Case("producer_generic", types, sizes, dispatch=wg))
            wg += 1
            v = f"%q{c}"
            if collapse:
                body.append(f"%c{c} = " + collapse.format(v=f"q{c}"))
                v = f"%c{c}"
            body.append(f"%r{c} = iree_encoding.set_encoding {v} : {t2} -> {tenc}")
            prog.cases.append(Case("producer_encode", types, sizes, encode=_encode_name((m, k), element)))
        prog.dispatch_count += 2
        decode = (
            f"%u{c} = iree_encoding.unset_encoding %r{c} : {tenc} -> {t2}\n      "
            f"%f{c} = tensor.empty() : {t2}\n      %d{c} = linalg.generic {{indexing_maps = "
            f"[affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, d1)>], "
            f'iterator_types = ["parallel", "parallel"]}} ins(%u{c} : {t2}) outs(%f{c} : {t2}) {{\n'
            f"      ^bb0(%i: {element}, %o: {element}):\n        %w = arith.addf %i, %i : {element}\n"
            f"        linalg.yield %w : {element}\n      }} -> {t2}\n      flow.return %d{c} : {t2}"
        )
        body.append(f"%o{c} = flow.dispatch.region -> ({t2}) {{\n      {decode}\n    }}")
        wg += 1
        prog.dispatch_count += 1
        results.append(f"%o{c}")
        rtypes.append(t2)
    prog.text = _function(name, aliases, args, body, results, rtypes)
    return prog


ENCODE_AFTER_NEXT_N = 128
"""N of the contraction whose LHS an ``encode_after_contraction`` result is encoded for."""


def encode_after_contraction(name: str, shape: tuple[int, int, int], fused: bool, seed: int = 0) -> MicroProgram:
    """An f32 M x N x K contraction of pre-encoded operands, a ReLU on its encoded tiles, the unset, and
    the ``set_encoding`` of its result as the LHS of an M x 128 x N contraction: with ``fused`` all in
    the contraction's dispatch (how IREE's own plans of transformer blocks end a contraction's dispatch:
    FuseEncodingOpsIntoDispatchRegions), else the encode is a dispatch of its own. The encoded result
    is decoded, doubled, by a last dispatch, so neither form returns an encoded tensor. The one case is
    the contraction's dispatch (``encode_after``, sizes (M, N, K, fused)): the fused one less the other
    is what the encode costs inside it. The same with the ReLU after the unset exceeded IREE's 32 KiB
    stack limit at 32 x 128 x 32."""
    m, n, k = shape
    f = "f32"
    rng = np.random.default_rng(seed)
    aliases = [f"#e{i} = {_encoding(i, (f, f, f), m, n, k)}" for i in range(3)]
    aliases.append(f"#next = {_encoding(0, (f, f, f), m, ENCODE_AFTER_NEXT_N, n)}")
    a_t, b_t, out = _t((m, k), f), _t((n, k), f), _t((m, n), f)
    a_e, b_e, acc = _t((m, k), f, "#e0"), _t((n, k), f, "#e1"), _t((m, n), f, "#e2")
    nxt = _t((m, n), f, "#next")
    ident = "affine_map<(d0, d1) -> (d0, d1)>"
    parallel = '["parallel", "parallel"]'
    inner = [
        "%z = arith.constant 0.0 : f32",
        f"%e = tensor.empty() : {acc}",
        f"%fl = linalg.fill ins(%z : f32) outs(%e : {acc}) -> {acc}",
        f"%mm = linalg.matmul indexing_maps = [#map, #map1, #map2] ins(%ae, %be : {a_e}, {b_e}) "
        f"outs(%fl : {acc}) -> {acc}",
        f"%relu = linalg.generic {{indexing_maps = [{ident}, {ident}], iterator_types = {parallel}}} "
        f"ins(%mm : {acc}) outs(%e : {acc}) {{\n      ^bb0(%i: f32, %o: f32):\n"
        f"        %q = arith.maximumf %i, %z : f32\n        linalg.yield %q : f32\n      }} -> {acc}",
        f"%u = iree_encoding.unset_encoding %relu : {acc} -> {out}",
    ]
    body = [
        f"%ae = iree_encoding.set_encoding %a : {a_t} -> {a_e}",
        f"%be = iree_encoding.set_encoding %b : {b_t} -> {b_e}",
    ]
    prog = MicroProgram(name, "", [_array((m, k), f, rng), _array((n, k), f, rng)])
    prog.cases.append(Case("encode_after", f"{f},{f},{f}", (m, n, k, int(fused)), dispatch=0))
    if fused:
        inner += [f"%s = iree_encoding.set_encoding %u : {out} -> {nxt}", f"flow.return %s : {nxt}"]
        body.append(f"%r = flow.dispatch.region -> ({nxt}) {{\n      " + "\n      ".join(inner) + "\n    }")
    else:
        inner.append(f"flow.return %u : {out}")
        body.append(f"%c = flow.dispatch.region -> ({out}) {{\n      " + "\n      ".join(inner) + "\n    }")
        body.append(f"%r = iree_encoding.set_encoding %c : {out} -> {nxt}")
    body.append(
        f"%o = flow.dispatch.region -> ({out}) {{\n      %d = iree_encoding.unset_encoding %r : {nxt} -> {out}\n"
        f"      %f = tensor.empty() : {out}\n      %w = linalg.generic {{indexing_maps = [{ident}, {ident}], "
        f"iterator_types = {parallel}}} ins(%d : {out}) outs(%f : {out}) {{\n      ^bb0(%i: f32, %o2: f32):\n"
        f"        %x = arith.addf %i, %i : f32\n        linalg.yield %x : f32\n      }} -> {out}\n"
        f"      flow.return %w : {out}\n    }}"
    )
    prog.dispatch_count = 5 - int(fused)  # two operand encodes, the contraction, (the encode), the decode
    prog.text = _function(name, aliases, [f"%a: {a_t}", f"%b: {b_t}"], body, ["%o"], [out])
    return prog


BUFFER_COLS = 1024
"""Columns of a ``buffer`` program's [rows, cols] f32 tensor."""


def buffer(name: str, nbytes: int) -> MicroProgram:
    """One elementwise dispatch whose result, a function result of ``nbytes`` (a [rows, 1024] f32),
    is allocated on every call: its call time beyond its kernel time, less a tiny one's, is what a
    buffer of that size costs (``KernelCosts.alloc``). The kernel time does not hold it: on the Xeon a
    4 MiB result took 160 µs more per call than its profiled kernel, a 4 KiB one 2 µs (the per-call
    overheads)."""
    rows = max(1, nbytes // (4 * BUFFER_COLS))
    t = _t((rows, BUFFER_COLS), "f32")
    region = _elementwise_region(
        "%r", "%x", t, "%c = arith.constant 3.0 : f32\n        %s = arith.mulf %i, %c : f32", "%s"
    )
    x = np.ones((rows, BUFFER_COLS), np.float32)
    prog = MicroProgram(name, _function(name, [], [f"%x: {t}"], [region], ["%r"], [t]), [x])
    prog.cases.append(Case("alloc", "f32", (rows * BUFFER_COLS * 4, 0, 0)))
    prog.dispatch_count = 1
    return prog


def slice_copy(name: str, rows: int, cols: int, top_level: bool) -> MicroProgram:
    """Rows ``rows..2·rows`` of a [2·rows, cols] f32 argument doubled by one dispatch; with
    ``top_level`` the slice is taken between dispatches (IREE copies it: ``flow.tensor.slice``), else
    inside the consumer's dispatch (a partial load, no copy). The difference of the two programs' call
    times is what a slice copied between dispatches costs (``KernelCosts.copy``); it is a copy command
    or a copy dispatch, so per-dispatch profiles do not show all of it."""
    src, t = _t((2 * rows, cols), "f32"), _t((rows, cols), "f32")
    sl = f"%s = tensor.extract_slice %x[{rows}, 0] [{rows}, {cols}] [1, 1] : {src} to {t}"
    region = _elementwise_region("%r", "%s", t, "%a = arith.addf %i, %i : f32", "%a", "", "" if top_level else sl)
    body = [sl, region] if top_level else [region]
    x = np.arange(2 * rows * cols, dtype=np.float32).reshape(2 * rows, cols) % 7
    prog = MicroProgram(name, _function(name, [], [f"%x: {src}"], body, ["%r"], [t]), [x])
    prog.cases.append(Case("slice_copy", "f32", (rows, cols, int(top_level))))
    prog.dispatch_count = 1 + int(top_level)
    return prog


def _elementwise_region(
    result: str, operand: str, t: str, ops: str, value: str, tag: str = "", before: str = ""
) -> str:
    """``result = flow.dispatch.region`` of one elementwise generic over the f32 ``operand`` of type
    ``t``: its body ``ops`` (lines of the block, on ``%i``) yield ``value``; ``tag`` suffixes the
    region's own names, ``before`` is a line computed in the region ahead of the generic."""
    id2 = "affine_map<(d0, d1) -> (d0, d1)>"
    return (
        f"{result} = flow.dispatch.region -> ({t}) {{\n      "
        + (before + "\n      " if before else "")
        + f"%e{tag} = tensor.empty() : {t}\n"
        f"      %g{tag} = linalg.generic {{indexing_maps = [{id2}, {id2}], "
        f'iterator_types = ["parallel", "parallel"]}} '
        f"ins({operand} : {t}) outs(%e{tag} : {t}) {{\n      ^bb0(%i: f32, %o: f32):\n"
        f"        {ops}\n        linalg.yield {value} : f32\n      }} -> {t}\n"
        f"      flow.return %g{tag} : {t}\n    }}"
    )


def _function(
    name: str, aliases: list[str], args: list[str], body: list[str], results: list[str], rtypes: list[str]
) -> str:
    head = MAPS + "\n".join(aliases) + ("\n" if aliases else "")
    return (
        f"{head}func.func @{name}({', '.join(args)}) -> ({', '.join(rtypes)}) {{\n    "
        + "\n    ".join(body)
        + f"\n    return {', '.join(results)} : {', '.join(rtypes)}\n}}\n"
    )
