"""Modules whose names would forge their own measurement, in the
environments and the deployment (docs/security.md, "allocated code and
block frequencies" and "object sizes"): a section name no longer writes
rows of the size table (the inlining reward was 1.0 on demand, 5000 digits
raised ValueError out of step()); a function name no longer writes block
frequencies (OverflowError / ValueError out of reset() and of mlbridge
evaluate): such a module is measured truly, or skipped with a note."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest

gym = pytest.importorskip("gymnasium")
if not all(shutil.which(t) for t in ("clang-19", "llc-19", "llvm-as-19", "llvm-readobj-19")):
    pytest.skip("needs clang-19, llc-19, llvm-as-19 and llvm-readobj-19", allow_module_level=True)

import mlbridge.gym  # noqa: E402, F401  (registers the ids)
from mlbridge.gym.modules import OPTIMIZED_MODULE_FLAGS, prepare_modules  # noqa: E402
from mlbridge.problems.inlining.environment import InliningEnv  # noqa: E402
from mlbridge.problems.regalloc_eviction.environment import EnvError, RegallocEvictionEnv  # noqa: E402

PRESSURE = Path(__file__).resolve().parents[1] / "data" / "regalloc_pressure.c"


def _callee_body() -> str:
    """Twelve rounds of arithmetic: -Oz keeps the callee out of line."""
    lines, value = [], "%v0"
    for i in range(1, 13):
        lines += [
            f"  %m{i} = mul i32 {value}, {i + 2}",
            f"  %x{i} = xor i32 %m{i}, {1000 + i}",
            f"  %v{i} = add i32 %x{i}, {value}",
        ]
        value = f"%v{i}"
    return "\n".join(lines) + f"\n  ret i32 {value}"


#: g sits in a section named so that llvm-size -A printed a ".text" row of
#: DIGITS bytes; f calls it three times.
FORGED_SECTION = f"""target triple = "x86_64-pc-linux-gnu"

define internal i32 @g(i32 %v0) section "x\\0A.text DIGITS 0\\0A" {{
{_callee_body()}
}}

define i32 @f(i32 %x) {{
  %a = call i32 @g(i32 %x)
  %b = add i32 %a, 1
  %c = call i32 @g(i32 %b)
  %d = call i32 @g(i32 %c)
  ret i32 %d
}}
"""


def _code_bytes(obj: Path) -> int:
    """The object's executable bytes by llvm-readobj's JSON output."""
    done = subprocess.run(
        ["llvm-readobj-19", "--elf-output-style=JSON", "--section-headers", str(obj)],
        capture_output=True,
        text=True,
        check=True,
    )
    return sum(
        s["Section"]["Size"]
        for s in json.loads(done.stdout)[0]["Sections"]
        if any(f["Name"] == "SHF_EXECINSTR" for f in s["Section"]["Flags"]["Flags"])
    )


@pytest.mark.parametrize("digits", ["999999999", "9" * 5000])
def test_a_section_name_does_not_make_the_inlining_reward(tmp_path, digits):
    module = tmp_path / "forged.ll"
    module.write_text(FORGED_SECTION.replace("DIGITS", digits))
    plain = tmp_path / "plain.o"
    subprocess.run(["clang-19", "-Oz", "-c", "-w", str(module), "-o", str(plain)], check=True)
    oz = _code_bytes(plain)
    env = InliningEnv(modules=[module])
    try:
        obs, info = env.reset(seed=0)
        terminated = truncated = False
        while not (terminated or truncated):  # inline every call: -Oz's g goes
            obs, reward, terminated, truncated, info = env.step(1)
        assert terminated and "error" not in info
        # before: oz_text_size was 999999999 more than the code, the reward
        # 0.9999995; with 5000 digits step() raised ValueError
        assert info["oz_text_size"] == oz < 1000
        assert 0 < info["text_size"] < 10 * oz
        assert reward == pytest.approx((oz - info["text_size"]) / oz)
        assert reward < 0  # three inlined copies are larger than one callee
    finally:
        env.close()


def _ir(function_name: str, slot_name: str = "slot") -> str:
    """A loop calling an external function, its value kept in a stack slot."""
    return f"""target triple = "x86_64-pc-linux-gnu"

declare i32 @g(i32)

define i32 @{function_name}(i32 %n) {{
entry:
  %"{slot_name}" = alloca i32
  store i32 %n, ptr %"{slot_name}"
  br label %loop
loop:
  %i = phi i32 [ 0, %entry ], [ %i1, %loop ]
  %s = phi i32 [ 0, %entry ], [ %s1, %loop ]
  %v = load volatile i32, ptr %"{slot_name}"
  %c = call i32 @g(i32 %v)
  %s1 = add i32 %s, %c
  %i1 = add i32 %i, 1
  %d = icmp slt i32 %i1, %n
  br i1 %d, label %loop, label %exit
exit:
  ret i32 %s1
}}
"""


@pytest.fixture(scope="module")
def regalloc_modules(tmp_path_factory):
    """The register-pressure kernel, a module whose function name forged a
    400-digit block frequency (OverflowError) and one forging 5000 digits
    (ValueError), as bitcode; and a module whose stack slot's name held
    lines of MIR, as textual IR."""
    out = tmp_path_factory.mktemp("hostile")
    from mlbridge.corpus.program import Program

    (pressure,) = prepare_modules(
        [Program("pressure", (PRESSURE,), (), "train")],
        out,
        module_flags=OPTIMIZED_MODULE_FLAGS,
    )
    paths = []
    for tag, digits in (("overflow", 400), ("huge", 5000)):
        rows = f"\\0A - BB0[]: float = 1.0, int = 1\\0A - BB9[]: float = 1.0, int = {'9' * digits}"
        source = out / f"{tag}.ll"
        source.write_text(_ir(f'"f{rows}"'))
        bitcode = out / f"{tag}.bc"
        subprocess.run(["llvm-as-19", str(source), "-o", str(bitcode)], check=True)
        paths.append(bitcode)
    load = "\\0A    $eax = MOV32rm $rip, 1, $noreg, 0, $noreg :: (load (s32))"
    injected = out / "injected.ll"
    injected.write_text(_ir("f", "slot" + load * 10 + "\\0A    ; x"))
    plain = out / "plain.ll"
    plain.write_text(_ir("f"))
    return pressure, paths[0], paths[1], injected, plain


def test_a_function_name_forging_frequencies_skips_its_module(regalloc_modules):
    pressure, overflow, huge, _, _ = regalloc_modules
    env = RegallocEvictionEnv([overflow, huge, pressure])
    try:
        for name in ("overflow", "huge"):
            # before: OverflowError / ValueError out of reset()
            with pytest.raises(EnvError, match="gives no episode"):
                env.reset(seed=0, options={"module": name})
            assert "cannot be scored" in env.skipped[name]
            assert "no block frequency" in env.skipped[name]
        for seed in (0, 1):
            env.reset(seed=seed)
            assert env.module == pressure.name
        rng = np.random.default_rng(0)
        terminated = truncated = False
        while not (terminated or truncated):
            legal = np.flatnonzero(env.action_masks())
            _, _, terminated, truncated, info = env.step(int(rng.choice(legal)))
        assert terminated and "error" not in info
    finally:
        env.close()


def test_a_slot_name_injects_no_code_into_the_reward(regalloc_modules):
    *_, injected, plain = regalloc_modules
    env = RegallocEvictionEnv([injected, plain])
    try:
        # textual IR, assembled for llc; before: the ten loads injected at
        # each use of the slot made the score ten times the plain module's
        assert env.default_score("injected") == env.default_score("plain") > 0
    finally:
        env.close()


def test_evaluate_skips_a_module_that_cannot_be_measured(regalloc_modules, tmp_path):
    torch = pytest.importorskip("torch")
    pytest.importorskip("stable_baselines3")
    pytest.importorskip("onnxruntime")
    from stable_baselines3.common.policies import ActorCriticPolicy

    from mlbridge.gym.modules import Module
    from mlbridge.native import NativeError, find_native, interactive_host_path
    from mlbridge.problems.regalloc_eviction import CANDIDATES, DEPLOY_INPUTS, observation_names
    from mlbridge.problems.regalloc_eviction.deploy import evaluate_regalloc_eviction
    from mlbridge.train.export import export_policy

    try:
        host = interactive_host_path()
        if "onnx" not in find_native().components:
            pytest.skip("the interactive host has no ONNX Runtime")
    except NativeError as err:
        pytest.skip(f"no mlbridge-interactive-host: {err}")
    names = observation_names()
    space = gym.spaces.Box(-np.inf, np.inf, (len(names),), np.float32)
    torch.manual_seed(0)
    net = ActorCriticPolicy(space, gym.spaces.Discrete(CANDIDATES), lambda _: 3e-4)
    inputs, keep = DEPLOY_INPUTS(names, list(range(len(names))))
    policy = tmp_path / "policy.onnx"
    export_policy(net, policy, inputs, "index_to_evict", keep, mask=list(range(CANDIDATES)))

    pressure, overflow, huge, _, _ = regalloc_modules
    modules = [Module(p.stem, p, p.stem, "test") for p in (overflow, huge)] + [pressure]
    # before: OverflowError out of the evaluation
    report = evaluate_regalloc_eviction(policy, modules, tmp_path / "work", host, ("onnx",))
    assert [r["module"] for r in report["modules"]] == [pressure.name]
    assert set(report["skipped"]) == {"overflow", "huge"}
    assert all("cannot be scored" in why for why in report["skipped"].values())
    assert "2 modules skipped" in report["summary"][-1]
