"""MLGO's regalloc score computed from MIR text and -print-machine-bfi
(mlbridge.problems.regalloc_eviction.score): each kind of instruction, block weights, the
last frequencies printed winning, and refusals; then on real llc-19 output."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from mlbridge.problems.regalloc_eviction.score import (
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
    import mlbridge.problems.regalloc_eviction.score as module

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


# -- names and text of the module's choosing ------------------------------------


def test_text_other_than_frequencies_is_refused():
    # a diagnostic (here dontcall-warn's message) may carry lines of the
    # module's choosing: the last ones printed for a function would win
    forged = BFI + 'warning: call to w marked "dontcall-warn": x\n' + BFI
    with pytest.raises(ScoreError, match="no block frequency: 'warning: call to w"):
        block_frequencies(forged)


@pytest.mark.parametrize("digits", [21, 400, 5000])
def test_numbers_longer_than_llvm_prints_are_refused(digits):
    # 400 digits: OverflowError dividing by the entry; 5000: ValueError in int()
    text = f"block-frequency-info: f\n - BB0[]: float = 1.0, int = {'9' * digits}\n"
    with pytest.raises(ScoreError, match="no block frequency"):
        block_frequencies(text)
    with pytest.raises(ScoreError, match="no block frequency"):
        block_frequencies(f"block-frequency-info: f\n - BB{'1' * digits}[]: float = 1.0, int = 1\n")


def test_profile_counts_and_irreducible_weights_are_read():
    text = (
        "block-frequency-info: f\n"
        " - BB0[]: float = 1.0, int = 8, count = 100\n"
        " - BB1[]: float = 2.0, int = 16, count = 200, irr_loop_header_weight = 3\n"
    )
    assert block_frequencies(text) == {"f": {0: 1.0, 1: 2.0}}


@pytest.mark.parametrize(
    "name",
    ['"f\\n - BB0[]: float = 1.0, int = 1"', '"f\\r"', '"f\\x01"', '"f\\u2028"', '"f\\L"'],
)
def test_a_function_name_that_could_break_a_line_is_refused(name):
    # llc prints it raw after "block-frequency-info: "
    mir = MIR.replace("name:            f\n", f"name:            {name}\n")
    with pytest.raises(ScoreError, match="name is not printable"):
        function_scores(mir, block_frequencies(BFI))


def test_yaml_names_are_decoded_or_refused():
    freqs = {"f'\"\\\u00e9": {0: 1.0, 1: 10.0, 2: 0.5}, "'q": {0: 1.0}}
    for printed in ('"f\'\\"\\\\\\xe9"', '"f\'\\"\\\\\\u00e9"', "'f''\"\\\u00e9'"):
        mir = MIR.replace("name:            f\n", f"name:            {printed}\n")
        assert "f'\"\\\u00e9" in function_scores(mir, freqs)
    with pytest.raises(ScoreError, match="unknown escape"):
        function_scores(MIR.replace("name:            f\n", 'name: "f\\q"\n'), freqs)
    with pytest.raises(ScoreError, match="unknown escape"):
        function_scores(MIR.replace("name:            f\n", 'name: "f\\x4"\n'), freqs)


def test_quoted_names_do_not_change_what_an_instruction_is():
    freqs = block_frequencies(BFI)
    before = function_scores(MIR, freqs)["f"]
    forged = MIR.replace(
        "    renamable $eax = nsw ADD32rr",
        '    CALL64pcrel32 @"g = MOV32r0 :: (load store (s8)) into custom" , csr_64\n'
        "    renamable $eax = nsw ADD32rr",
    )
    assert function_scores(forged, freqs)["f"] == before


def test_a_block_number_longer_than_a_function_holds_is_refused():
    mir = MIR.replace("  bb.2:\n", f"  bb.{'2' * 5000}:\n")
    with pytest.raises(ScoreError, match="block number"):
        function_scores(mir, block_frequencies(BFI))


#: A loop calling g with a stack slot: ENTRY, LOOP, EXIT and SLOT are
#: replaced by names, G by g's name.
TEMPLATE = """target triple = "x86_64-pc-linux-gnu"

declare i32 @G(i32)

define i32 @F(i32 %n) {
"ENTRY":
  %"SLOT" = alloca i32
  store i32 %n, ptr %"SLOT"
  br label %"LOOP"
"LOOP":
  %i = phi i32 [ 0, %"ENTRY" ], [ %i1, %"LOOP" ]
  %s = phi i32 [ 0, %"ENTRY" ], [ %s1, %"LOOP" ]
  %v = load volatile i32, ptr %"SLOT"
  %c = call i32 @G(i32 %v)
  %s1 = add i32 %s, %c
  %i1 = add i32 %i, 1
  %d = icmp slt i32 %i1, %n
  br i1 %d, label %"LOOP", label %"EXIT"
"EXIT":
  ret i32 %s1
}
"""
#: A line of MIR: the allocated code would load once more per name.
LOAD = "\\0A    $eax = MOV32rm $rip, 1, $noreg, 0, $noreg :: (load (s32))"


def _module(tmp_path: Path, name: str, **names: str) -> Path:
    """The template with ``names`` (F, G, ENTRY...; the others plain), as
    bitcode (llvm-as-19) or, with the name ending in .ll, as text."""
    text = TEMPLATE
    for key in ("ENTRY", "LOOP", "EXIT", "SLOT"):
        text = text.replace(f'"{key}"', f'"{names.get(key, key.lower())}"')
    text = text.replace("@F", f"@{names.get('F', 'f')}").replace("@G", f"@{names.get('G', 'g')}")
    source = tmp_path / f"{name}.ll"
    source.write_text(text)
    if name.endswith(".ll"):
        return source
    out = tmp_path / f"{name}.bc"
    subprocess.run(["llvm-as-19", str(source), "-o", str(out)], check=True)
    return out


needs_llc = pytest.mark.skipif(
    shutil.which("llc-19") is None or shutil.which("llvm-as-19") is None,
    reason="needs llc-19 and llvm-as-19",
)


@needs_llc
def test_names_inject_no_code_into_the_allocation(tmp_path):
    from mlbridge.problems.regalloc_eviction.score import default_allocation

    plain = _module(tmp_path, "plain")
    # the slot's name (printed raw in the MIR as %stack.0.NAME) held ten
    # lines of loads (the score grew tenfold); g's quoted name looked like a
    # load and store to the instruction reader
    forged = _module(
        tmp_path,
        "forged",
        SLOT="slot" + LOAD * 10 + "\\0A    ; x",
        G='"g :: (load store (s32))"',
    )
    work = tmp_path / "work"
    work.mkdir()
    expected = default_allocation("llc-19", 2, plain, [], work, 120)
    assert expected.score.loads > 0 and expected.score.stores > 0
    got = default_allocation("llc-19", 2, forged, [], work, 120)
    assert got.score == expected.score and got.frequencies == expected.frequencies


@needs_llc
@pytest.mark.parametrize("digits", [400, 5000])
def test_a_function_name_forging_frequencies_is_no_measurement(tmp_path, digits):
    from mlbridge.problems.regalloc_eviction.score import AllocationError, default_allocation

    # llc prints the name raw: " - BB9" became a block of f with 400 digits
    # (OverflowError) or 5000 (ValueError), out of the environment and evaluate
    name = f'"f\\0A - BB0[]: float = 1.0, int = 1\\0A - BB9[]: float = 1.0, int = {"9" * digits}"'
    module = _module(tmp_path, "forged", F=name)
    with pytest.raises(AllocationError, match="cannot be scored"):
        default_allocation("llc-19", 2, module, [], tmp_path, 120)


@needs_llc
def test_a_diagnostic_forging_frequencies_is_no_measurement(tmp_path):
    from mlbridge.problems.regalloc_eviction.score import AllocationError, default_allocation

    # h's call of w makes llc warn with w's message, printed among the
    # frequencies after f's: they gave f's loop a weight of a million
    source = _module(tmp_path, "warn.ll")
    forged = "block-frequency-info: f\\0A - BB0[]: float = 1.0, int = 1\\0A"
    forged += " - BB1[]: float = 1.0, int = 1000000\\0A - BB2[]: float = 1.0, int = 1\\0A"
    source.write_text(
        source.read_text()
        + f'\ndeclare void @w() "dontcall-warn"="x\\0A{forged}"\n\n'
        + "define void @h() {\n  call void @w()\n  ret void\n}\n"
    )
    bitcode = tmp_path / "warn.bc"
    subprocess.run(["llvm-as-19", str(source), "-o", str(bitcode)], check=True)
    with pytest.raises(AllocationError, match="dontcall-warn"):
        default_allocation("llc-19", 2, bitcode, [], tmp_path, 120)


@needs_llc
def test_textual_ir_is_allocated_as_its_bitcode(tmp_path):
    from mlbridge.problems.regalloc_eviction.score import default_allocation, llc_input

    work = tmp_path / "work"
    work.mkdir()
    text = _module(tmp_path, "text.ll", SLOT="slot" + LOAD)
    bitcode = llc_input("llc-19", text, work, 60)
    assert bitcode.parent == work and bitcode.read_bytes()[:4] == b"BC\xc0\xde"
    assert llc_input("llc-19", bitcode, work, 60) == bitcode  # bitcode as it is
    expected = default_allocation("llc-19", 2, _module(tmp_path, "plain"), [], work, 120)
    assert default_allocation("llc-19", 2, bitcode, [], work, 120).score == expected.score
