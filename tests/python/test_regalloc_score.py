"""MLGO's regalloc score computed from MIR text and -print-machine-bfi
(mlbridge.llvm.regalloc_score): each kind of instruction, block weights, the
last frequencies printed winning, and refusals; then on real llc-19 output."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from mlbridge.llvm.regalloc_score import (
    RegallocScore,
    ScoreError,
    ScoreWeights,
    block_frequencies,
    function_scores,
    module_score,
    read_text,
)

BFI = """\
block-frequency-info: f
 - BB0[entry]: float = 1.0, int = 100
 - BB1[]: float = 1.0, int = 100

some diagnostic line
block-frequency-info: f
 - BB0[entry]: float = 1.0, int = 8
 - BB1[loop]: float = 10.0, int = 80
 - BB2: float = 0.5, int = 4

block-frequency-info: 'q
 - BB0[]: float = 1.0, int = 3
"""

MIR = """\
--- |
  ; ModuleID = 'x'
  define i32 @f() {
    body: not a machine function
  }
...
---
name:            f
stack:
  - { id: 0, name: '', type: spill-slot, offset: 0, size: 8, alignment: 8 }
body:             |
  bb.0.entry:
    successors: %bb.1(0x80000000)
    liveins: $edi

    $eax = COPY $edi
    MOV64mr %stack.0, 1, $noreg, 0, $noreg, killed renamable $rax :: (store (s64) into %stack.0)
    DBG_VALUE $eax, $noreg, !12, !DIExpression()
    KILL $eax
    INLINEASM &"nop", 1 /* sideeffect attdialect */

  bb.1.loop:
    successors: %bb.1(0x7c000000), %bb.2(0x04000000)

    renamable $rcx = MOV64rm %stack.0, 1, $noreg, 0, $noreg :: (load (s64) from %stack.0)
    renamable $eax = MOV32r0 implicit-def dead $eflags
    renamable $rdx = LEA64r $rip, 1, $noreg, @table, $noreg
    renamable $rsi = LEA64r renamable $rdi, 1, renamable $rcx, 0, $noreg
    renamable $rdx = MOV64rm $rip, 1, $noreg, @g, $noreg :: (load (s64) from got)
    $xmm0 = MOVSSrm_alt $rip, 1, $noreg, %const.0, $noreg :: (load (s32) from constant-pool)
    ADD32mr $rdi, 1, $noreg, 0, $noreg, $eax, implicit-def $eflags :: (load store (s32) on %ir.p)
    renamable $eax = nsw ADD32rr killed renamable $eax, renamable $ecx, implicit-def dead $eflags
    JCC_1 %bb.1, 5, implicit $eflags

  bb.2:
    BUNDLE implicit-def $eax {
      $eax = COPY $ecx
    }
    RET 0, $eax
...
---
name:            '''q'
body:             |
  bb.0:
    $eax = COPY $edi
    RET 0, $eax
...
"""


def test_block_frequencies_take_the_last_print_relative_to_the_entry():
    freqs = block_frequencies(BFI)
    assert freqs["f"] == {0: 1.0, 1: 10.0, 2: 0.5}
    assert freqs["'q"] == {0: 1.0}


def test_each_kind_of_instruction_is_weighted_by_its_block():
    scores = function_scores(MIR, block_frequencies(BFI))
    assert set(scores) == {"f", "'q"}  # the IR module is no machine function
    f = scores["f"]
    assert f.copies == 1.0  # bb.0's COPY; the bundle counts as one BUNDLE, no copy
    assert f.stores == 1.0 and f.loads == 10.0  # the spill, then the reload in the loop
    assert f.cheap_remats == 20.0  # MOV32r0 and the LEA of a symbol, not the indexed LEA
    assert f.expensive_remats == 20.0  # the GOT load and the constant-pool load
    assert f.load_stores == 10.0
    weights = ScoreWeights()
    assert f.score() == pytest.approx(0.2 * 1 + 1 * 1 + 4 * 10 + 0.2 * 20 + 1 * 20 + (4 + 1) * 10)
    assert f.score(ScoreWeights(copy=1.0)) - f.score(weights) == pytest.approx(0.8)
    assert scores["'q"].copies == 1.0
    total = module_score(MIR, block_frequencies(BFI))
    assert total.score() == pytest.approx(f.score() + 0.2)
    assert total.to_dict()["score"] == total.score()


def test_an_lea_with_an_index_is_no_remat():
    mir = MIR.replace("LEA64r $rip, 1, $noreg, @table", "LEA64r $rip, 1, $rcx, @table")
    assert function_scores(mir, block_frequencies(BFI))["f"].cheap_remats == 10.0
    mir = MIR.replace("LEA64r $rip, 1, $noreg, @table", "LEA64r %stack.0, 1, $noreg, 0")
    assert function_scores(mir, block_frequencies(BFI))["f"].cheap_remats == 20.0


def test_frequencies_of_other_code_are_refused():
    freqs = block_frequencies(BFI)
    del freqs["f"][2]
    with pytest.raises(ScoreError, match=r"f: no block frequency for bb\.2"):
        function_scores(MIR, freqs)
    with pytest.raises(ScoreError, match="no block frequency"):
        function_scores(MIR, {})


def test_a_zero_entry_frequency_is_refused():
    with pytest.raises(ScoreError, match="entry block"):
        block_frequencies("block-frequency-info: f\n - BB0[]: float = 0.0, int = 0\n")


def test_read_text_checks_the_size_first(tmp_path, monkeypatch):
    import mlbridge.llvm.regalloc_score as module

    path = tmp_path / "big.mir"
    path.write_text("x" * 100)
    monkeypatch.setattr(module, "MAX_TEXT_BYTES", 10)
    with pytest.raises(ScoreError, match="limit 10"):
        read_text(path, "the allocated code")
    with pytest.raises(ScoreError, match="cannot read"):
        read_text(tmp_path / "missing", "the allocated code")


def test_scores_add_up():
    a = RegallocScore(copies=1.0, loads=2.0)
    a += RegallocScore(loads=1.0, stores=3.0)
    assert (a.copies, a.loads, a.stores) == (1.0, 3.0, 3.0)


PRESSURE = Path(__file__).resolve().parents[1] / "data" / "regalloc_pressure.c"


@pytest.mark.skipif(shutil.which("llc-19") is None, reason="needs llc-19")
def test_real_allocated_code_scores_its_spills(tmp_path):
    bitcode = tmp_path / "p.bc"
    subprocess.run(
        ["clang-19", "-O2", "-emit-llvm", "-c", str(PRESSURE), "-o", str(bitcode)], check=True
    )
    mir = tmp_path / "p.mir"
    done = subprocess.run(
        ["llc-19", "-O2", "-stop-after=virtregrewriter", "-print-machine-bfi", str(bitcode)]
        + ["-o", str(mir)],
        check=True,
        capture_output=True,
        text=True,
    )
    freqs = block_frequencies(done.stderr)
    text = mir.read_text()
    scores = function_scores(text, freqs)
    assert set(scores) == {"pressure"}
    score = scores["pressure"]
    # 15 sums live across two calls in a loop: spilled, reloaded in the loop
    assert score.stores >= 1 and score.loads > score.stores and score.copies > 0
    assert max(freqs["pressure"].values()) > 1.0  # the loop's blocks
    assert "spill-slot" in text
