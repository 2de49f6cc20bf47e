"""IREE's start state read while IREE runs on (``iree.lowering``): IREE prints the module after SetEncoding,
then runs the rest of DispatchCreation; ``start_state`` parses the printed module meanwhile and keeps
that reading only if it is the dump IREE left at its exit.

``finished_dump`` tells a finished dump from one IREE is still printing (checked here on cuts of a real
dump, made by hand: every cut before its end is unfinished); ``start_state`` without IREE's output cache
(the suite's, ``EGG_DISPATCH_IREE_CACHE``) reads the dump early, and that reading is the module the text
gives when read after IREE's exit.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from egg_dispatch.iree.lowering import HOIST_ENCODING_PASS, finished_dump, start_state, start_state_file
from egg_dispatch.iree.tools import CACHE_ENV, IreeError, compile_text_and_stderr, find_tool
from egg_dispatch.mlir.parser import parse_mlir
from egg_dispatch.mlir.printer import print_mlir
from egg_dispatch.target.profile import load_target

needs_iree = pytest.mark.skipif(find_tool("iree-compile") is None, reason="iree-compile not installed")
FIXTURES = Path(__file__).parent / "fixtures"

HEADER = "// -----// IR Dump Before HoistEncodingOpsPass: iree-dispatch-creation-hoist-encoding-ops //----- //\n"
MODULE = """module {
  util.func public @main(%arg0: tensor<4xf32> loc("m.mlir":2:3)) -> tensor<4xf32> {
    %0 = arith.addf %arg0, %arg0 : tensor<4xf32> loc(#loc2)

    util.return %0 : tensor<4xf32> loc(#loc3)
  } loc(#loc1)
} loc(#loc)
#loc = loc("m.mlir":1:1)
#loc1 = loc("m.mlir":2:3)
#loc2 = loc(callsite(#loc4 at #loc1))
#loc3 = loc("m.mlir":5:5)
#loc4 = loc("m.mlir":3:10)
"""


def test_only_a_dump_printed_to_its_end_is_finished() -> None:
    stderr = "warning: something before\n" + HEADER + MODULE + "\n\n"
    assert finished_dump(stderr) == MODULE + "\n\n"
    # Every cut at a line end before the last alias: an alias named and not yet defined, or no blank line.
    ends = [i + 1 for i, c in enumerate(stderr) if c == "\n" and i + 1 < len(stderr) - 2]
    assert len(ends) > 10
    for end in ends:
        assert finished_dump(stderr[:end]) is None, stderr[:end]
        assert finished_dump(stderr[:end] + "\n") is None, stderr[:end]  # a blank line inside the body
    assert finished_dump(MODULE + "\n\n") is None  # no dump at all
    # A later alias named only by an earlier alias's definition must be there too (#loc4 via #loc2).
    cut = stderr.index("#loc4 = ")
    assert finished_dump(stderr[:cut] + "\n") is None


@needs_iree
@pytest.mark.parametrize("fixture", ["models/llama_block/input.mlir", "transformer_block.mlir"])
def test_the_start_state_read_while_iree_runs_is_the_one_read_after(
    fixture: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv(CACHE_ENV, raising=False)  # a cached run has no IREE running to overlap
    path = FIXTURES / fixture
    state = start_state(path, load_target("x86_64-avx2"), name=str(path))
    assert state.parsed is not None
    assert state.parsed.file == start_state_file(str(path))
    assert print_mlir(state.parsed) == print_mlir(parse_mlir(state.text, state.parsed.file))


@needs_iree
def test_a_watched_compile_still_fails_and_times_out_as_iree_does(tmp_path: Path) -> None:
    """The watch (``compile_text_and_stderr(watch=...)``) changes how IREE is waited for, not its answer:
    a rejected input is an ``IreeError`` with IREE's diagnostic, and the time limit kills the run."""
    watched: list[Path] = []

    def watch(stderr: Path, running) -> None:  # type: ignore[no-untyped-def]
        watched.append(stderr)
        while running():
            pass

    bad = tmp_path / "bad.mlir"
    bad.write_text("func.func @f() {\n  %0 = arith.constant 1 : i32\n  return %1 : i32\n}\n")
    with pytest.raises(IreeError) as failed:
        compile_text_and_stderr(bad, data_tiling=False, target_cpu="generic", watch=watch)
    assert "use of undeclared SSA value" in (failed.value.stderr or "")
    assert watched
    dump = [f"--mlir-print-ir-before={HOIST_ENCODING_PASS}", "--compile-to=dispatch-creation"]
    with pytest.raises(IreeError, match="timed out"):
        compile_text_and_stderr(
            FIXTURES / "models/llama_block/input.mlir",
            data_tiling=True,
            target_cpu="haswell",
            extra_flags=dump,
            timeout=0.05,
            watch=watch,
        )
