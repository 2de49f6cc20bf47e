"""Checking a program against itself or a plan against its input: seeded inputs, tolerances, reports.

``check_module`` is what ``egg-dispatch check`` runs: the function is evaluated twice on the same
seeded inputs, once with encodings ignored (plain semantics) and once with every ``set_encoding`` /
``flow.tensor.encode`` materialized physically for the target (packed with zero padding, contractions
as mmt4d, unpacked by ``unset_encoding``). The two must agree; a wrong layout, a wrong slice of a
packed tensor or a wrong rewrite breaks that.

Inputs sit on a coarse grid so that most contractions are exact in every summation order: floats are
multiples of 1/16 in [-1, 1]; ``i64``/``index`` inputs (usually indices) are integers in [0, 8);
other integers are in [-8, 8]; ``i1`` is a fair coin. An integer input the program uses as an index
(an embedding's token ids, gather indices: ``evaluate.index_ranges``) is drawn in [0, size of the
dimension it indexes), so that the program is defined on it.

Tolerance, per result, on the error relative to the result's magnitude,
``max|plain - physical| / max(max|plain|, tiny)``:

* integer and boolean results must be equal (integer arithmetic is exact and wraps the same way);
* float results: ``rtol = 4 · eps · sqrt(K)``, with ``eps`` the machine epsilon of the result type
  (f16 2^-10, bf16 2^-7, f32 2^-23, f64 2^-52) and ``K`` the total reduction length of the function
  (the sum, over every op with reduction loops, of the product of its reduction-loop sizes; at least
  1). Summation order is the only thing that differs between the two runs, and its rounding error
  grows like ``eps · sqrt(K)`` for random signs; 4 is headroom.

``function_inputs`` (``random_inputs`` with those ranges), ``reduction_length`` and ``tolerance`` are
shared with ``Exploration.check`` and ``bench``, which compare every plan with the input program in
the same way.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import cast

import numpy as np

from egg_dispatch.evaluate import EvaluationError, evaluate, function_input_types, select_function
from egg_dispatch.evaluate.core import type_str
from egg_dispatch.evaluate.index_ranges import index_bounds
from egg_dispatch.evaluate.ops_linalg import NAMED_CONTRACTIONS
from egg_dispatch.evaluate.parameters import Parameters
from egg_dispatch.evaluate.sizes import check_sizes, input_types_at, label, shapes_at
from egg_dispatch.evaluate.structured import loop_sizes, perm_map
from egg_dispatch.mlir.ir import (
    AffineMapAttr,
    ArrayAttr,
    Module,
    Operation,
    ScalarType,
    TensorType,
    Type,
    Value,
    numpy_dtype,
)
from egg_dispatch.mlir.ops import iterator_types, sym_name
from egg_dispatch.mlir.shapes import function_shapes
from egg_dispatch.mlir.symbolic import Domain
from egg_dispatch.target.profile import Target, load_target

__all__ = [
    "CheckReport",
    "ResultCheck",
    "check_module",
    "function_inputs",
    "random_inputs",
    "reduction_length",
    "relative_error",
    "tolerance",
    "type_of_array",
]

_EPS = {"f16": 2.0**-10, "bf16": 2.0**-7, "f32": 2.0**-23, "f64": 2.0**-52}
_ENCODING_OPS = ("iree_encoding.set_encoding", "flow.tensor.encode")


@dataclass(frozen=True)
class ResultCheck:
    """One result: the largest absolute and magnitude-relative difference, and the allowed one."""

    index: int
    type: str
    max_abs_error: float
    max_rel_error: float
    tolerance: float
    sizes: str = ""
    """The dynamic sizes of this run (``arg0.d1=13``; empty for a static function)."""

    @property
    def passed(self) -> bool:
        """Within tolerance."""
        return self.max_rel_error <= self.tolerance


@dataclass(frozen=True)
class CheckReport:
    """Outcome of :func:`check_module`; ``passed`` is what ``check`` exits on."""

    function: str
    target: str
    seed: int
    encodings: int
    """Number of ``set_encoding`` / ``flow.tensor.encode`` ops in the input."""
    reduction_length: int
    results: list[ResultCheck] = field(default_factory=list)

    @property
    def passed(self) -> bool:
        """Every result within tolerance."""
        return all(r.passed for r in self.results)

    def render(self) -> str:
        """The text report ``check`` prints."""
        lines = [f"check @{self.function}: plain vs physical encodings on {self.target}, seed {self.seed}"]
        if self.encodings:
            lines.append(
                f"{self.encodings} encoding op(s) (set_encoding, flow.tensor.encode) materialized physically; "
                f"reduction length K = {self.reduction_length}"
            )
        else:
            lines.append("no set_encoding in the input: the physical run equals the plain one by construction")
        for r in self.results:
            status = "ok" if r.passed else "FAILED"
            at = f" at {r.sizes}" if r.sizes else ""
            lines.append(
                f"result[{r.index}]{at} {r.type}: max abs error {r.max_abs_error:.3g}, max rel error "
                f"{r.max_rel_error:.3g} (tolerance {r.tolerance:.3g}): {status}"
            )
        lines.append("PASS" if self.passed else "FAIL")
        return "\n".join(lines)


def random_inputs(types: list[Type], seed: int, bounds: dict[int, int] | None = None) -> list[np.ndarray]:
    """Seeded inputs on the coarse grid described in the module docstring; ``bounds`` gives integer
    inputs (by position) an exclusive upper bound: they are drawn in ``[0, bound)``."""
    rng = np.random.default_rng(seed)
    out: list[np.ndarray] = []
    bounds = bounds or {}
    for i, t in enumerate(types):
        # inputs are drawn at concrete sizes (a dynamic function's types come from input_types_at)
        shape = cast("tuple[int, ...]", t.shape) if isinstance(t, TensorType) else ()
        elem = t.element if isinstance(t, TensorType) else t
        if not isinstance(elem, ScalarType):
            raise EvaluationError(f"cannot make a random input of type {type_str(t)}")
        dt = numpy_dtype(elem)
        if dt.kind == "f":
            out.append((rng.integers(-16, 17, shape) / 16).astype(dt))
        elif dt == np.bool_:
            out.append(rng.integers(0, 2, shape).astype(np.bool_))
        elif i in bounds:
            out.append(rng.integers(0, max(bounds[i], 1), shape).astype(dt))
        elif dt.itemsize == 8:
            out.append(rng.integers(0, 8, shape).astype(dt))
        else:
            out.append(rng.integers(-8, 9, shape).astype(dt))
    return out


def function_inputs(func: Operation, seed: int, sizes: Mapping[str, int] | None = None) -> list[np.ndarray]:
    """Seeded inputs for ``func``: :func:`random_inputs` with the index ranges its uses imply; ``sizes``
    gives its dynamic dims their values (``arg0.d1``; see ``evaluate.sizes``)."""
    types = function_input_types(func)
    if sizes:
        types = input_types_at(func, types, sizes)
    inputs = random_inputs(types, seed, index_bounds(func))
    for k, t in enumerate(types):  # an integer argument that is a size (``arg2``): the size's value
        if sizes and f"arg{k}" in sizes and isinstance(t, ScalarType):
            inputs[k] = np.asarray(sizes[f"arg{k}"], dtype=numpy_dtype(t))
    return inputs


def _shape(t: Type) -> tuple[int, ...]:
    # a '?' dim stays None: _reduction_length's arithmetic then raises the TypeError reduction_length catches
    return cast("tuple[int, ...]", t.shape) if isinstance(t, TensorType) else ()


def reduction_length(op: Operation, shape_of: Callable[[Value], tuple[int, ...] | None] | None = None) -> int:
    """Product of the sizes of ``op``'s reduction loops (1 when it has none or they are unknown);
    ``shape_of`` gives operand shapes at concrete sizes (``evaluate.sizes.shapes_at``) for dynamic ones."""
    get = (lambda v: shape_of(v) or _shape(v.type)) if shape_of is not None else (lambda v: _shape(v.type))
    try:
        return _reduction_length(op, get)
    except TypeError:  # a dynamic size (None) not given
        return 1


def _reduction_length(op: Operation, _shape_of: Callable[[Value], tuple[int, ...]]) -> int:
    maps_attr = op.attributes.get("indexing_maps")
    maps = [m for m in maps_attr.items if isinstance(m, AffineMapAttr)] if isinstance(maps_attr, ArrayAttr) else []
    if op.name in ("linalg.mmt4d", "linalg.batch_mmt4d"):
        lhs = _shape_of(op.operands[0])
        return lhs[-3] * lhs[-1] if len(lhs) >= 4 else 1
    if not maps and op.name in NAMED_CONTRACTIONS:
        n, dims = NAMED_CONTRACTIONS[op.name]
        maps = [perm_map(n, d) for d in dims]
    if not maps or len(maps) != len(op.operands):
        return 1
    try:
        sizes = loop_sizes(maps, [_shape_of(v) for v in op.operands])
    except EvaluationError:
        return 1
    iters = iterator_types(op)
    if iters:
        red = [d for d, it in enumerate(iters) if it == "reduction"]
    else:  # named ops and attention: loops the output map does not use
        out_dims = set(maps[-1].dim_positions() or ())
        red = [d for d in range(len(sizes)) if d not in out_dims]
    return math.prod(sizes[d] for d in red)


def tolerance(t: Type, k: int) -> float:
    """Allowed magnitude-relative error for a result of type ``t`` after reductions of length ``k``."""
    elem = t.element if isinstance(t, TensorType) else t
    name = elem.name if isinstance(elem, ScalarType) else ""
    if name not in _EPS:
        return 0.0
    return 4.0 * _EPS[name] * math.sqrt(max(k, 1))


def check_module(
    module: Module,
    target: Target | str,
    seed: int = 0,
    function: str | None = None,
    parameters: Parameters | None = None,
    assume: Mapping[str, Domain] | None = None,
) -> CheckReport:
    """Evaluate ``function`` with plain semantics and with physical encodings for ``target``; compare.
    A function with dynamic dims runs at every assignment of ``evaluate.sizes.check_sizes`` (at least
    two sizes per dim; ``assume`` narrows what each dim may be)."""
    tgt = load_target(target) if isinstance(target, str) else target
    func = select_function(module, function)
    fname = sym_name(func)
    shapes = function_shapes(func)
    checks = []
    k = 1
    for env in check_sizes(func, assume, shapes):  # one run per size assignment (one, {}, when static)
        inputs = function_inputs(func, seed, env)
        plain = evaluate(module, inputs, fname, None, parameters)
        physical = evaluate(module, inputs, fname, tgt, parameters)
        at = shapes_at(shapes, env) if env else None
        lengths = [reduction_length(op, at) for op in func.walk() if op is not func]
        k = max(k, sum(n for n in lengths if n > 1))
        result_types = [v.type for v in _returned(func)]
        for i, (a, b) in enumerate(zip(plain, physical, strict=True)):
            t = result_types[i] if i < len(result_types) else None
            if a.shape != b.shape:
                checks.append(ResultCheck(i, f"{a.shape} vs {b.shape}", math.inf, math.inf, 0.0, label(env)))
                continue
            abs_err, rel = _errors(a.astype(np.float64), b.astype(np.float64))
            tol = tolerance(t, sum(n for n in lengths if n > 1)) if t is not None and a.dtype.kind == "f" else 0.0
            checks.append(ResultCheck(i, type_of_array(a), abs_err, rel, tol, label(env)))
    encodings = sum(1 for op in module.walk() if op.name in _ENCODING_OPS)
    return CheckReport(fname, tgt.name, seed, encodings, k, checks)


def _returned(func: Operation) -> list[Value]:
    """Values the function returns (types of the results as the body sees them)."""
    body = func.regions[0].entry
    term = body.ops[-1] if body.ops else None
    if term is None:
        return []
    vals = []
    for v in term.operands:
        owner = v.owner
        if isinstance(owner, Operation) and owner.name == "hal.tensor.export":
            v = owner.operands[0]
        vals.append(v)
    return vals


def relative_error(got: np.ndarray, want: np.ndarray) -> float:
    """``max|got - want| / max|want|`` (the magnitude-relative error of the module docstring); NaN or
    inf in the same places in both is no error, in one only (or another shape) is an infinite one."""
    if got.shape != want.shape:
        return math.inf
    with np.errstate(invalid="ignore"):  # inf - inf where both are inf: masked out by _errors
        return _errors(want.astype(np.float64), got.astype(np.float64))[1]


def _errors(a: np.ndarray, b: np.ndarray) -> tuple[float, float]:
    """(max abs difference, that over max |a|); NaN or inf in one run but not the other is inf."""
    same_special = (np.isnan(a) & np.isnan(b)) | (np.isinf(a) & (a == b))
    finite = np.isfinite(a) & np.isfinite(b)
    if np.any(~finite & ~same_special):
        return math.inf, math.inf
    diff = np.abs(a - b)[finite]
    abs_err = float(np.max(diff, initial=0.0))
    scale = float(np.max(np.abs(a[finite]), initial=0.0))
    return abs_err, abs_err / max(scale, float(np.finfo(np.float64).tiny))


def type_of_array(a: np.ndarray) -> str:
    """``2x2xf32``: an array's shape and MLIR element type, as iree-run-module spells it."""
    names = {"float16": "f16", "float32": "f32", "float64": "f64", "bool": "i1", "int8": "i8", "int16": "i16",
             "int32": "i32", "int64": "i64", "uint8": "ui8", "uint16": "ui16", "uint32": "ui32",
             "uint64": "ui64"}  # fmt: skip
    return "x".join([*map(str, a.shape), names.get(a.dtype.name, a.dtype.name)])
