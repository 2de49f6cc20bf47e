"""``egg-dispatch run [FILE|-]``: evaluate a function with the NumPy evaluator, as iree-run-module would.

No FILE runs the built-in example (the bug's reproducer); the parser's warnings go to stderr.

Inputs, one ``--input`` per function argument, in order:

* ``--input=@file.npy``: a NumPy file (one array);
* ``--input="2x2xf32=1 2 3 4"``: shape, element type, then the values (brackets and commas are
  ignored, so ``2x2xf32=[1 2][3 4]`` works too; one value fills the whole tensor);
* ``--input=f32=1.5``: a scalar.

Outputs: one ``--output`` per result, in order: ``@file.npy`` writes it, ``+file.npy`` appends it to
the file, ``-`` prints it. Without ``--output`` every result is printed as iree-run-module prints it
(``result[0]: hal.buffer_view`` then ``2x2xf32=[1 2][3 4]``). ``--target T`` materializes encodings
physically for target T (default: plain semantics). A count, shape or dtype mismatch against the
function's signature, or an op the evaluator cannot run, is reported on one line with exit code 2.
"""

from __future__ import annotations

import argparse
import re
import sys
from pathlib import Path

import numpy as np

from egg_dispatch.cli.args import (
    InputError,
    add_input_arguments,
    as_written,
    function_name,
    non_negative_int,
    parameters_from_args,
    path_kind,
    program,
    refuses,
    target_spec,
    writable_path,
)
from egg_dispatch.cost import AssumeError
from egg_dispatch.evaluate import EvaluationError, evaluate, function_input_types, select_function
from egg_dispatch.evaluate.check import type_of_array
from egg_dispatch.evaluate.core import function_type, type_str
from egg_dispatch.evaluate.dynamic import shape_fits
from egg_dispatch.evaluate.sizes import assumed_domains, check_assumed
from egg_dispatch.mlir.ir import ScalarType, TensorType, Type, is_known_element, numpy_dtype
from egg_dispatch.mlir.ops import sym_name
from egg_dispatch.target.profile import TargetError, load_target
from egg_dispatch.util.files import atomic_write

__all__ = ["evaluation_input_error", "format_buffer_view", "parse_input", "register", "run"]

_SPEC = re.compile(r"^((?:\d+x)*)([a-z]+\d+)$")


def register(sub: argparse._SubParsersAction) -> None:
    """Add the ``run`` subcommand to the CLI."""
    p = sub.add_parser(
        "run",
        help="evaluate a function on given inputs with the NumPy evaluator",
        description="Evaluate a function of FILE on the given inputs (iree-run-module's --input/--output syntax).",
    )
    p.add_argument(
        "file", nargs="?", metavar="FILE|-", help="MLIR input; '-' reads stdin; default: the built-in example"
    )
    p.add_argument(
        "--function", type=function_name, metavar="NAME", help="function to run (default: the first public one)"
    )
    p.add_argument(
        "--input",
        type=input_value,
        action="append",
        default=[],
        metavar="VALUE",
        help="@file.npy, 2x2xf32=1 2 3 4, f32=1.5",
    )
    p.add_argument(
        "--output", type=output_dest, action="append", default=[], metavar="DEST", help="@file.npy, +file.npy or -"
    )
    p.add_argument(
        "--target",
        type=target_spec,
        metavar="T",
        help="materialize encodings physically for target T (name or JSON file)",
    )
    add_input_arguments(p, start=False)
    p.add_argument(
        "--print-max-element-count",
        type=non_negative_int,
        default=1024,
        metavar="N",
        help="elements printed per result",
    )
    from egg_dispatch.cli.assume import add_assume_argument  # cli.assume imports args, which run sits beside

    add_assume_argument(p)
    p.set_defaults(handler=run)


def _parse_values(text: str, shape: tuple[int, ...], elem: str, src: str) -> np.ndarray:
    dtype = numpy_dtype(ScalarType(elem))
    tokens = [t for t in re.split(r"[\s,\[\]]+", text) if t]
    if elem == "i1":
        tokens = [{"true": "1", "false": "0"}.get(t, t) for t in tokens]
    try:
        if dtype.kind == "f":
            flat = np.array([float(t) for t in tokens], dtype=np.float64)
        else:
            flat = np.array([int(t, 0) for t in tokens], dtype=np.int64)
    except ValueError:
        raise InputError(f"--input={src}: error: cannot parse the values as {elem}") from None
    count = int(np.prod(shape, dtype=np.int64))
    if flat.size == 1 and count != 1:
        flat = np.full(count, flat[0])
    if flat.size != count:
        raise InputError(
            f"--input={src}: error: {flat.size} values for a {'x'.join(map(str, shape)) or 'scalar'} {elem}"
        )
    with np.errstate(all="ignore"):
        return flat.astype(dtype).reshape(shape)


def parse_input(src: str) -> np.ndarray:
    """One ``--input`` value as an array (see the module docstring for the accepted forms)."""
    if src.startswith("@"):
        path = Path(src[1:])
        if (kind := path_kind(path)) != "file":
            raise InputError(f"--input={src}: error: {'no such file' if kind == 'missing' else kind}")
        return np.array(_load_npy(path, src))
    spec, eq, values = src.partition("=")
    m = _SPEC.match(spec.strip())
    if not eq or m is None or not is_known_element(m.group(2)):
        raise InputError(f"--input={src}: error: expected @file.npy, SHAPExTYPE=VALUES (2x2xf32=1 2 3 4) or TYPE=VALUE")
    shape = tuple(int(d) for d in m.group(1).split("x") if d)
    return _parse_values(values, shape, m.group(2), src)


def _load_npy(path: Path, src: str) -> np.ndarray:
    """One array from a .npy file (memory-mapped where it can be), or an InputError saying why not."""
    try:
        try:
            a = np.load(path, mmap_mode="r", allow_pickle=False)
        except ValueError:  # e.g. an empty array: no mapping, read it
            a = np.load(path, allow_pickle=False)
    except (OSError, ValueError, EOFError) as e:
        raise InputError(f"--input={src}: error: not a .npy file ({e})") from None
    if not isinstance(a, np.ndarray):  # an .npz archive
        a.close()
        raise InputError(f"--input={src}: error: not a .npy file (an archive of several arrays)")
    return a


@refuses("", "eight", "nan", "-1", "inf", "8x8xf32", "8x8xf32=", "8x8xf99=1", "2x2xf32=1 2 3", "f32=abc",
         "@", "@{missing}", "@{dir}", "@{garbage}")  # fmt: skip
def input_value(text: str) -> str:
    """One ``--input`` value, checked as it is parsed (inline values fully; an ``@file.npy`` must exist).
    The handler reads it again with ``parse_input``, once it knows the function's signature."""
    if text.startswith("@"):
        path = Path(text[1:])
        kind = path_kind(path) if text[1:] else "missing"
        if kind != "file":
            raise argparse.ArgumentTypeError(
                f"{text}: {'is a directory' if kind == 'dir' else 'no such file' if kind == 'missing' else kind}"
            )
        try:
            _load_npy(path, text)
        except InputError as e:
            raise argparse.ArgumentTypeError(str(e).removeprefix(f"--input={text}: error: ")) from None
        return text
    try:
        parse_input(text)
    except InputError as e:
        raise argparse.ArgumentTypeError(str(e).removeprefix(f"--input={text}: error: ")) from None
    return text


@refuses("", "x.npy", "@", "+", "@{dir}", "+{dir}", "@{missing}/x.npy")
def output_dest(text: str) -> str:
    """One ``--output``: ``-``, or ``@file.npy`` / ``+file.npy`` in a directory that exists."""
    if text == "-":
        return text
    if text[:1] not in ("@", "+") or len(text) < 2:
        raise argparse.ArgumentTypeError(f"expected @file.npy, +file.npy or -, got '{text}'")
    writable_path(text[1:])
    return text


def _check_inputs(
    arrays: list[np.ndarray], types: list[Type], srcs: list[str], fname: str, where: str
) -> list[np.ndarray]:
    if len(arrays) != len(types):
        raise InputError(f"{where}: error: @{fname} takes {len(types)} inputs, got {len(arrays)} --input flags")
    out = []
    for i, (a, t, src) in enumerate(zip(arrays, types, srcs, strict=True)):
        want = t.without_encoding() if isinstance(t, TensorType) else t
        elem = want.element if isinstance(want, TensorType) else want
        if not isinstance(elem, ScalarType):
            raise InputError(f"{where}: error: input {i} of @{fname} has type {type_str(t)}, which run cannot pass")
        dtype = numpy_dtype(elem)
        fits = shape_fits(a.shape, want) if isinstance(want, TensorType) else a.shape == ()  # any size for '?'
        if not fits or a.dtype != dtype:
            raise InputError(
                f"{where}: error: input {i} of @{fname}: expected {type_str(want)}, "
                f"got {type_of_array(a)} (from --input={src})"
            )
        out.append(a)
    return out


def _fmt(v: np.number | np.bool_, kind: str) -> str:
    """One element of an array (a NumPy scalar) of dtype kind ``kind``."""
    if kind == "b":
        return "1" if v else "0"
    if kind == "f":
        return f"{float(v):g}"
    return str(int(v))


def format_buffer_view(a: np.ndarray, max_elements: int = 1024) -> str:
    """``2x2xf32=[1 2][3 4]`` as iree-run-module prints a buffer view (``...`` past ``max_elements``)."""
    head = type_of_array(a)
    flat = a.reshape(-1)
    shown = [_fmt(v, a.dtype.kind) for v in flat[:max_elements]]
    if a.ndim == 0:  # a scalar is shown whatever max_elements is
        return f"{head}={_fmt(flat[0], a.dtype.kind)}"
    if a.size > max_elements:
        return f"{head}=" + " ".join(shown) + "..."
    text = " ".join(shown)
    if a.ndim >= 2:

        def nest(vals: list[str], shape: tuple[int, ...]) -> str:
            if len(shape) == 1:
                return "[" + " ".join(vals) + "]"
            step = len(vals) // shape[0]
            return "".join(nest(vals[i * step : (i + 1) * step], shape[1:]) for i in range(shape[0]))

        text = nest(shown, a.shape)
    return f"{head}={text}"


def evaluation_input_error(e: EvaluationError, file: str) -> InputError:
    """An evaluation error as the CLI's one-line input error, naming the file when the op has no location."""
    return InputError(str(e) if e.loc is not None else f"{file}: {e}")


def run(args: argparse.Namespace) -> int:
    """Handler of ``egg-dispatch run``; returns the exit code."""
    module = program(args.file)
    for w in module.warnings:
        print(w, file=sys.stderr)
    parameters = parameters_from_args(args, as_written(args.file, module))
    try:
        target = load_target(args.target) if args.target else None
    except TargetError as e:
        raise InputError(f"--target: error: {e}") from None
    try:
        func = select_function(module, args.function)
        fname = sym_name(func)
        types = function_input_types(func)
    except EvaluationError as e:
        raise evaluation_input_error(e, module.file) from None
    inputs = _check_inputs([parse_input(s) for s in args.input], types, args.input, fname, module.file)
    try:
        check_assumed(func, list(inputs), assumed_domains(func, args.assume))
    except AssumeError as e:
        raise InputError(f"error: {e}") from None
    except EvaluationError as e:
        raise evaluation_input_error(e, module.file) from None
    n_results = len(function_type(func).results)
    if args.output and len(args.output) != n_results:
        raise InputError(
            f"{module.file}: error: @{fname} has {n_results} results but {len(args.output)} --output flags were given"
        )
    for dest in args.output:
        if dest != "-" and (dest[:1] not in ("@", "+") or len(dest) < 2):
            raise InputError(f"--output={dest}: error: expected @file.npy, +file.npy or -")
    try:
        results = evaluate(module, list(inputs), fname, target, parameters)
    except EvaluationError as e:
        raise evaluation_input_error(e, module.file) from None
    for w in parameters.warnings:
        print(w, file=sys.stderr)
    dests = args.output or ["-"] * len(results)
    print(f"EXEC @{fname}")
    for i, (r, dest) in enumerate(zip(results, dests, strict=True)):
        if dest == "-":
            print(f"result[{i}]: hal.buffer_view")
            print(format_buffer_view(r, args.print_max_element_count))
        else:
            try:  # whole or not at all: an interrupt leaves no partial .npy (util/files.py)
                with atomic_write(dest[1:], "ab" if dest[0] == "+" else "wb") as f:
                    np.save(f, r, allow_pickle=False)
            except OSError as e:
                raise InputError(f"--output={dest}: error: cannot write {dest[1:]}: {e.strerror or e}") from None
            print(f"result[{i}]: {type_of_array(r)} written to {dest[1:]}")
    sys.stdout.flush()
    return 0
