"""``validate()`` of the environments (docs/gym.md, Validation), on tiny
programs: a state linked into its program in place of the module's ``-O0``
object is compared with the program built wholly at ``-O0``; a state that
computes otherwise, crashes or hangs is a finding, a program that does not
run by itself is left out; the inlining and register-allocation
environments check a finished episode's object, the phase-ordering
environment any state the service holds."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path
from typing import Sequence

import gymnasium
import numpy as np
import pytest

import mlbridge.gym  # noqa: F401  (registers the ids)
from mlbridge.gym.corpus_modules import EnvError
from mlbridge.gym.modules import MODULE_FLAGS, OPTIMIZED_MODULE_FLAGS, Module
from mlbridge.gym.state_validation import ProgramReferences
from mlbridge.llvm.versions import tools

LLVM = tools()

#: Prints what it computed; OFFSET, CRASH and HANG change what the object of
#: ``main.c`` does, as a miscompilation would.
MAIN = r"""
#include <stdio.h>
#include <stdlib.h>
#ifndef OFFSET
#define OFFSET 0
#endif
unsigned step(unsigned x);
int main(void) {
  unsigned sum = 0;
  for (unsigned i = 0; i < 1000; ++i) sum += step(i);
#ifdef CRASH
  abort();
#endif
#ifdef HANG
  for (volatile int spin = 1; spin;) {}
#endif
  printf("checksum = %X\n", sum + OFFSET);
  return 0;
}
"""
#: The second source of the two-module program (OFFSET changes it too).
STEP = r"""
#ifndef OFFSET
#define OFFSET 0
#endif
static unsigned twice(unsigned x) { return 2 * x; }
unsigned step(unsigned x) { return twice(x) + x + 1 + OFFSET; }
"""


def _bitcode(tmp_path: Path, name: str, text: str, *extra: str, flags=MODULE_FLAGS) -> Path:
    source = tmp_path / f"{name}.c"
    source.write_text(text)
    out = tmp_path / f"{name}{'-'.join(extra)}.bc"
    subprocess.run([LLVM.clang, *flags, *extra, str(source), "-o", str(out)], check=True)
    return out


def _program(tmp_path: Path, flags=MODULE_FLAGS) -> Sequence[Module]:
    return [
        Module("demo/main.c", _bitcode(tmp_path, "main", MAIN, flags=flags), "demo", "train"),
        Module("demo/step.c", _bitcode(tmp_path, "step", STEP, flags=flags), "demo", "train"),
    ]


def _object(tmp_path: Path, *defines: str, name: str = "main", text: str = MAIN) -> Path:
    """A source (``main.c``) at -Oz with ``defines``: the state of its module."""
    bitcode = _bitcode(tmp_path, name, text, *defines)
    out = bitcode.with_suffix(".o")
    subprocess.run([LLVM.clang, "-Oz", "-c", str(bitcode), "-o", str(out)], check=True)
    return out


@pytest.mark.parametrize(
    "defines,status",
    [
        ((), "same"),
        (("-DOFFSET=1",), "mismatch"),
        (("-DCRASH",), "candidate-crashed"),
        (("-DHANG",), "candidate-timed-out"),
    ],
)
def test_a_state_is_run_inside_its_program(tmp_path, defines, status):
    members = _program(tmp_path)
    references = ProgramReferences(tmp_path / "work", LLVM.clang, LLVM.clangxx, 60.0)
    check = references.check(members[0], members, _object(tmp_path, *defines), 2.0)
    assert check.status == status, check
    assert check.ok == (status == "same") and check.finding == (status != "same")
    assert check.program == "demo/main.c"


def test_a_program_that_does_not_run_by_itself_is_left_out(tmp_path):
    members = _program(tmp_path)[1:]  # step.c alone: no main
    references = ProgramReferences(tmp_path / "work", LLVM.clang, LLVM.clangxx, 60.0)
    state = tmp_path / "step.o"
    subprocess.run([LLVM.clang, "-c", str(members[0].bitcode), "-o", str(state)], check=True)
    check = references.check(members[0], members, state, 2.0)
    assert check.status == "reference-build-failed" and "main" in check.detail
    assert not check.finding and not check.ok


def _finish(env) -> dict:
    done, info = False, {}
    while not done:
        _, _, terminated, truncated, info = env.step(env.baseline_action())
        done = terminated or truncated
    assert "error" not in info, info
    return info


def test_the_inlining_env_validates_a_finished_episode(tmp_path):
    env = gymnasium.make("mlbridge/Inlining-v0", modules=_program(tmp_path)).unwrapped
    try:
        with pytest.raises(EnvError, match="reset"):
            env.validate()
        env.reset(options={"module": "demo/step.c"})
        with pytest.raises(EnvError, match="finished episode"):
            env.validate()
        _finish(env)
        assert env.validate().status == "same"
        # The object the episode made, replaced by one that computes otherwise.
        wrong = _object(tmp_path, "-DOFFSET=7", name="step", text=STEP)
        shutil.copyfile(wrong, env._episode.output)
        assert env.validate().status == "mismatch"
        with pytest.raises(ValueError, match="run_timeout"):
            env.validate(run_timeout=0)
    finally:
        env.close()


def test_the_phase_ordering_env_validates_any_state(tmp_path):
    env = gymnasium.make("mlbridge/PhaseOrdering-v0", modules=_program(tmp_path)).unwrapped
    try:
        with pytest.raises(EnvError, match="reset"):
            env.validate()
        env.reset(options={"module": "demo/step.c"})
        assert env.validate().status == "same"  # as loaded
        for action in (env.default_action, 0, 1):
            env.step(action)
        check = env.validate()
        assert check.status == "same" and check.program == "demo/step.c"
        # The episode goes on after a validation.
        _, _, _, truncated, info = env.step(env.default_action)
        assert "error" not in info
    finally:
        env.close()


#: Sixteen values live across a loop: the allocator has to evict.
PRESSURE = r"""
#include <stdio.h>
__attribute__((noinline)) static unsigned mix(const unsigned *v, int n) {
  unsigned a0 = 1, a1 = 2, a2 = 3, a3 = 4, a4 = 5, a5 = 6, a6 = 7, a7 = 8;
  unsigned b0 = 9, b1 = 10, b2 = 11, b3 = 12, b4 = 13, b5 = 14, b6 = 15, b7 = 16;
  for (int i = 0; i < n; ++i) {
    unsigned x = v[i];
    a0 += x ^ b7; a1 += a0 * x; a2 ^= a1 + b0; a3 += a2 << 1; a4 ^= a3 * b1;
    a5 += a4 ^ b2; a6 += a5 * b3; a7 ^= a6 + b4; b0 += a7 ^ x; b1 ^= b0 * a0;
    b2 += b1 + a1; b3 ^= b2 * a2; b4 += b3 ^ a3; b5 ^= b4 + a4; b6 += b5 * a5;
    b7 ^= b6 + a6;
  }
  return a0 ^ a1 ^ a2 ^ a3 ^ a4 ^ a5 ^ a6 ^ a7 ^ b0 ^ b1 ^ b2 ^ b3 ^ b4 ^ b5 ^ b6 ^ b7;
}
int main(void) {
  unsigned v[64];
  for (int i = 0; i < 64; ++i) v[i] = (unsigned)i * 2654435761u;
  printf("%u\n", mix(v, 64));
  return 0;
}
"""


@pytest.mark.parametrize("per_function", [False, True])
def test_the_regalloc_env_validates_the_allocated_code(tmp_path, per_function):
    bitcode = _bitcode(tmp_path, "pressure", PRESSURE, flags=OPTIMIZED_MODULE_FLAGS)
    env = gymnasium.make(
        "mlbridge/RegallocEviction-v0",
        modules=[bitcode],
        per_function=per_function,
        cache_dir=str(tmp_path / "cache"),
    ).unwrapped
    try:
        name = next(m.name for m in env.modules if not per_function or m.name.endswith("mix"))
        env.reset(options={"module": name})
        rng = np.random.default_rng(0)
        done = False
        while not done:
            action = int(rng.choice(np.flatnonzero(env.action_masks())))
            _, _, terminated, truncated, info = env.step(action)
            done = terminated or truncated
        assert "error" not in info, info
        if per_function:
            with pytest.raises(EnvError, match="one function"):
                env.validate()
        else:
            assert env.validate().status == "same"
            # Allocated code llc cannot read back makes no object: an EnvError.
            env._episode.output.write_text("--- not MIR\n")
            with pytest.raises(EnvError, match="allocated code made no object"):
                env.validate()
    finally:
        env.close()
