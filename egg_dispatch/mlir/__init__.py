"""Text ⇄ IR for the MLIR subset egg_dispatch reads and writes.

Modules, foundations first:

* IR: ``ir`` (modules, operations, values, attributes; re-exports ``ir_types``, the types),
  ``elements`` (constant data as bytes / NumPy arrays), ``ops`` (how each modelled op keeps its
  custom-syntax pieces in the generic IR, and accessors), ``compare`` (structural equality).
* Literals: ``lexer`` (tokens, ``file:line:col``), ``literals`` (strings, ``@symbols``, floats and
  their bit patterns, integer ranges: both the reader's and the printer's half).
* Printer: ``printer`` (types, attributes, regions, the generic op form, and the table of each op's
  custom printer, ``OP_PRINTERS``).
* Reader: ``parser_base`` (the state the reader's mixins share), ``affine``, ``encoding``, ``dense``
  and ``attributes`` (types and attributes), ``resources`` (``dense_resource`` blobs), ``parser``
  (modules, regions, generic ops; ``parse_mlir`` / ``parse_file``).
* Each op's custom syntax, read and written side by side, per dialect: ``syntax`` (functions,
  returns, arith / math, tensor slicing and reshaping; ``OpSyntax`` assembles the readers),
  ``syntax_iree`` (encodings, flow, hal, util; the reader of unknown ops), ``syntax_linalg``
  (structured ops, pack / unpack), ``syntax_tensor`` (concat, pad, softmax, cf.assert), ``flow_ops``
  (``flow.tensor.slice``). ``retired`` reads named ops upstream MLIR retired.
* Symbolic sizes: ``symbolic`` (the algebra: ``Dim``, a size as a polynomial over argument sizes,
  and ``Domain`` / ``divides`` / bounds, what may be proved of it; no IR), ``shapes`` (inference:
  the ``Dim`` of every dimension and index value of a function).
* Analyses of a read program: ``abi`` (the tensors behind IREE's ABI), ``forms`` (where in IREE's
  pipeline an input stands), ``torch_symbols`` (the size symbols of a PyTorch export).
"""

# The dialect modules register their ops' printers into ``printer.OP_PRINTERS`` as they are imported,
# here, where the package is assembled, so that printing works whichever module is imported first;
# the printer imports none of them.
from egg_dispatch.mlir import flow_ops, syntax, syntax_iree, syntax_linalg, syntax_tensor  # noqa: F401
