"""Dynamic sizes in an emitted plan: each size code becomes an SSA ``index`` computed from the arguments.

A plan's terms carry shapes as vectors with *size codes* for ``?`` dims (``egraph.terms``); the MLIR a
plan is emitted as needs those sizes as values wherever an op's type has ``?``: ``tensor.empty(%d)``,
a dynamic ``extract_slice``, the ``{%d}`` lists of ``flow.dispatch.region`` and ``flow.tensor.encode``,
``unset_encoding``'s result sizes. ``SizeValues`` computes each one once, at the top of the function
(so every dispatch region reads it from above, as IREE's own regions do): an argument's size is
``tensor.dim %argK, %cD``, followed by ``util.assume.int`` with what the program (or ``--assume``)
allows of it, and any other size is arithmetic on those (``arith.muli``, ``arith.addi``,
``arith.divui`` ... with ``overflow<nsw>`` where IREE writes it).

A size the analysis does not see through (``arith.minsi`` of a size, as torch-mlir clamps a slice's end;
a value read with ``tensor.extract`` from an argument's data) is still a dynamic size: the ops that give it
in the input are cloned into the plan, when what they read is the function's arguments, constants and
scalar arithmetic (``_rebuilt``). Only a size read from a tensor the program computes is refused
(``UnknownSize``).
"""

from __future__ import annotations

from egg_dispatch.egraph.imported import ImportedProgram
from egg_dispatch.emit.clone import EmitError
from egg_dispatch.mlir.ir import (
    ArrayAttr,
    Block,
    DictAttr,
    IntAttr,
    Loc,
    Operation,
    ScalarType,
    StrAttr,
    TensorType,
    Value,
)
from egg_dispatch.mlir.symbolic import Atom, Dim, parse_symbol

__all__ = ["SizeValues", "UnknownSize", "dynamic_type"]

INDEX = ScalarType("index")
_RETURNS = ("util.return", "func.return", "return")
_SCALAR_DIALECTS = ("arith.", "affine.", "math.", "index.")
"""Ops of these dialects without regions and with scalar results are cloned into a plan as they are, when
a size needs them (``SizeValues._rebuilt``); so are the ops of ``_SCALAR_OPS`` (``flow.tensor.load``: a
``tensor.extract`` as IREE's own plan writes it between dispatches)."""
_SCALAR_OPS = ("tensor.extract", "flow.tensor.load", "tensor.dim", "util.assume.int")
_RESHAPES = ("tensor.collapse_shape", "tensor.expand_shape", "flow.tensor.reshape")
"""Reshapes of a tensor a size reads (global optimization collapses a ``tensor<1xi64>`` before the read)."""
_SAME_VALUE = ("iree_tensor_ext.compute_barrier.start", "iree_tensor_ext.compute_barrier.end", "flow.tensor.tie_shape")
"""Ops whose result is their first operand's value (barriers, a shape tie): read through."""


class UnknownSize(EmitError):
    """A plan needs a size that is not an expression of the arguments' sizes (an op the size analysis does
    not see through gives it, e.g. a value read from tensor data): a limit of the model on that input,
    which the command line reports as an error on the input (at ``loc``, that op), not as a bug."""

    def __init__(self, message: str, loc: Loc | None) -> None:
        super().__init__(message)
        self.loc = loc


def dynamic_type(vec: tuple[int, ...] | list[int], element: ScalarType, encoding=None) -> TensorType:
    """A tensor type from a term's shape vector: ``?`` where it holds a size code."""
    return TensorType(tuple(None if v < 0 else v for v in vec), element, encoding)


class SizeValues:
    """The ``index`` value of every size an emitted function needs, built once in its entry block."""

    def __init__(
        self,
        imported: ImportedProgram,
        block: Block,
        args: list[Value],
        where: int | None = None,
        entry_args: dict[int, Value] | None = None,
    ):
        self.imp = imported
        self.block = block
        self.args = args
        """The function's data arguments, in order (data argument k is ``args[k]``)."""
        self.entry_args = entry_args or {}
        """Entry-block argument index of the input's function -> the plan's argument for it (its data
        arguments: tensors, as ``hal.tensor.import`` gives them, and scalars), for ``_rebuilt``."""
        self.rebuilt: dict[Value, Value | None] = {}
        self.cache: dict[Dim, Value] = {}
        self.consts: dict[int, Value] = {}
        self.insert_at = where
        """Where to insert new ops in ``block`` (None: append, before whatever is added next)."""

    def _add(self, name: str, operands: list[Value], attrs: dict | None = None, n: int = 1) -> Operation:
        op = Operation(name, operands, [], dict(attrs or {}))
        op.results = [Value("", INDEX, op, i) for i in range(n)]
        if self.insert_at is None:
            self.block.ops.append(op)
        else:
            self.block.ops.insert(self.insert_at, op)
            self.insert_at += 1
        return op

    def const(self, v: int) -> Value:
        if v not in self.consts:
            self.consts[v] = self._add("arith.constant", [], {"value": IntAttr(v, INDEX)}).result
        return self.consts[v]

    def code(self, v: int) -> Value:
        """The value of a shape-vector entry (a constant, or the size its code names)."""
        return self.value(self.imp.dim(v))

    def operands(self, vec: tuple[int, ...] | list[int]) -> list[Value]:
        """The values of the size codes of a shape vector, in order (what a ``{...}`` list holds)."""
        return [self.code(v) for v in vec if v < 0]

    def value(self, d: Dim) -> Value:
        if d.is_const:
            return self.const(d.value)
        if d in self.cache:
            return self.cache[d]
        total: Value | None = None
        for mono, coeff in sorted(d.terms, key=lambda t: (not t[0], t)):
            term: Value | None = None
            for atom in mono:
                a = self.atom(atom)
                term = a if term is None else self._arith("arith.muli", term, a)
            if term is None:
                term = self.const(abs(coeff))
            elif abs(coeff) != 1:
                term = self._arith("arith.muli", term, self.const(abs(coeff)))
            if total is None:
                total = term if coeff > 0 else self._arith("arith.subi", self.const(0), term)
            else:
                total = self._arith("arith.addi" if coeff > 0 else "arith.subi", total, term)
        assert total is not None
        self.cache[d] = total
        return total

    def _rebuilt(self, v: Value) -> Value | None:
        """``v`` (a value of the input's function) computed in the plan by clones of the ops that give it in
        the input, or None when it reads a tensor the program computes, or an op not cloned: an argument
        (``hal.tensor.import`` of one, ``hal.buffer_view.dim`` of one), a constant, scalar arithmetic
        (``_SCALAR_DIALECTS``), ``tensor.extract`` / ``tensor.dim`` of those, ``util.assume.int``."""
        if v in self.rebuilt:
            return self.rebuilt[v]
        self.rebuilt[v] = None  # a cycle (a loop's block argument) is not rebuilt
        out: Value | None = None
        owner = v.owner
        if isinstance(owner, Block):
            arg = self.entry_args.get(v.index)
            is_entry = bool(owner.ops) and owner.ops[-1].name in _RETURNS
            out = arg if is_entry and arg is not None and arg.type == v.type else None
        elif isinstance(owner, Operation) and not owner.regions:
            name = owner.name
            if name == "hal.tensor.import" and owner.operands:
                view = owner.operands[0]
                arg = self.entry_args.get(view.index) if isinstance(view.owner, Block) else None
                out = arg if arg is not None and isinstance(arg.type, TensorType) else None
            elif name == "hal.buffer_view.dim" and owner.operands and isinstance(owner.operands[0].owner, Block):
                arg = self.entry_args.get(owner.operands[0].index)
                index = owner.attributes.get("index")
                if arg is not None and isinstance(arg.type, TensorType) and isinstance(index, IntAttr):
                    out = self._add("tensor.dim", [arg, self.const(index.value)]).result
            elif name in _SAME_VALUE and owner.operands and v.index == 0:
                out = self._rebuilt(owner.operands[0])
            elif name.startswith(_SCALAR_DIALECTS) or name in _SCALAR_OPS or name in _RESHAPES:
                scalar = all(isinstance(r.type, ScalarType) for r in owner.results)
                ok = scalar or name == "arith.constant" or name in _RESHAPES
                operands = [self._rebuilt(o) for o in owner.operands] if ok else [None]
                if all(o is not None for o in operands):
                    clone = self._clone(owner, [o for o in operands if o is not None])
                    out = clone.results[v.index]
        self.rebuilt[v] = out
        return out

    def _clone(self, op: Operation, operands: list[Value]) -> Operation:
        clone = self._add(op.name, operands, op.attributes, n=len(op.results))
        for r, orig in zip(clone.results, op.results, strict=True):
            r.type = orig.type
        clone.loc = op.loc
        return clone

    def _arith(self, name: str, a: Value, b: Value) -> Value:
        attrs = {"overflow": StrAttr("nsw")}
        return self._add(name, [a, b], attrs if name in ("arith.muli", "arith.addi", "arith.subi") else None).result

    def atom(self, a: Atom) -> Value:
        key = Dim(terms=(((a,), 1),))
        if key in self.cache:
            return self.cache[key]
        if a.kind == "sym":
            v = self._argument_size(a.name)
        else:
            assert a.arg is not None, a  # floordiv / ceildiv / mod of a Dim
            inner = self.value(a.arg)
            op = {"floordiv": "arith.divui", "ceildiv": "arith.ceildivui", "mod": "arith.remui"}[a.kind]
            v = self._arith(op, inner, self.const(a.k))
        self.cache[key] = v
        return v

    def _argument_size(self, name: str) -> Value:
        sym = parse_symbol(name)
        if name in self.imp.size_sources:
            src = self.imp.size_sources[name]
            if src is not None and len(src.results) == 1 and (v := self._rebuilt(src.results[0])) is not None:
                return v if v.type == INDEX else self._add("arith.index_cast", [v]).result
            what = f"a {src.name}" if src is not None else "a region's argument"
            raise UnknownSize(
                f"a plan of @{self.imp.function} needs the size {name.partition('#')[0]}, which {what} gives: the "
                "model cannot compute it from the function's arguments",
                src.loc if src is not None else None,
            )
        if sym is None or name not in self.imp.arguments:
            raise EmitError(f"the plan needs the size {name}, which is not an argument's size")
        k, d = self.imp.arguments[name]
        if k >= len(self.args):
            raise EmitError(f"the plan needs {name}, but the function has no argument {k}")
        arg_t = self.args[k].type
        if d < 0 and arg_t == INDEX:  # an index argument
            dim = self.args[k]
        elif d < 0 and isinstance(arg_t, ScalarType) and arg_t.is_int:  # an i64 argument, read as a size
            dim = self._add("arith.index_cast", [self.args[k]]).result
        elif not isinstance(arg_t, TensorType):
            raise EmitError(f"the plan needs {name}, but argument {k} is not a tensor")
        else:
            dim = self._add("tensor.dim", [self.args[k], self.const(d)]).result
        dom = self.imp.domains.get(name)
        if dom is None:
            return dim
        row = []
        lo = dom.lower
        hi = dom.upper
        if lo:
            row.append(("umin", IntAttr(lo)))
        if hi is not None:
            row.append(("umax", IntAttr(hi)))
        if dom.divisor > 1:
            row.append(("udiv", IntAttr(dom.divisor)))
        if not row:
            return dim
        return self._add("util.assume.int", [dim], {"assumptions": ArrayAttr((DictAttr(tuple(row)),))}).result
