"""LLVM 16 beside LLVM 19 (docs/llvm-versions.md): choosing a major, what a
major cannot do refused with the reason, and on LLVM 16 (when its clang and
mlbridge's parts for it are installed, as scripts/setup does) the inliner
served through the plugin byte for byte, an inlining episode, a phase-ordering
episode on opt-16's passes and ``mlbridge llvm -- clang-16``."""

from __future__ import annotations

import argparse
import shutil
import subprocess
from pathlib import Path
from typing import List

import pytest

from mlbridge.cli import main
from mlbridge.corpus.defaults import bundled_programs
from mlbridge.llvm import run_compiler
from mlbridge.llvm.outcomes import text_size
from mlbridge.llvm.versions import (
    INTERACTIVE_SINCE,
    LlvmTools,
    LlvmVersionError,
    add_llvm_argument,
    major_of_command,
)
from mlbridge.native import NativeError, find_native
from mlbridge.policies import load_policy
from mlbridge.problems import get_problem
from mlbridge.train.tasks import llvm_choice

DEMO = Path(__file__).resolve().parents[2] / "python" / "mlbridge" / "corpus" / "bundled"


def test_the_major_a_command_names() -> None:
    assert major_of_command("clang-16") == 16
    assert major_of_command("/usr/lib/llvm-16/bin/opt") == 16
    assert major_of_command("/usr/bin/llc-19") == 19
    assert major_of_command("no-such-compiler-anywhere") is None


def test_unsupported_majors_and_missing_features_are_refused() -> None:
    with pytest.raises(LlvmVersionError, match="LLVM 15 is not supported"):
        LlvmTools(15)
    assert LlvmTools(19).interactive and not LlvmTools(16).interactive
    with pytest.raises(LlvmVersionError, match=f"arrived in LLVM {INTERACTIVE_SINCE}"):
        LlvmTools(16).require_interactive("the advisor of regalloc-eviction")
    assert LlvmTools(16).clang == "clang-16" and LlvmTools(19).llvm_size == "llvm-size-19"
    parser = argparse.ArgumentParser()
    add_llvm_argument(parser, "of the compiler")
    assert parser.parse_args(["--llvm", "16"]).llvm == 16
    assert parser.parse_args([]).llvm is None
    with pytest.raises(SystemExit):
        parser.parse_args(["--llvm", "15"])


def test_each_problem_says_which_majors_it_runs_on() -> None:
    inlining, regalloc, gcc = (
        get_problem(n) for n in ("inlining", "regalloc-eviction", "gcc-unroll")
    )
    assert llvm_choice(inlining, 16) == {"llvm": 16} and llvm_choice(inlining, None) == {}
    assert llvm_choice(regalloc, 19) == {}  # one major: nothing to choose
    with pytest.raises(ValueError, match="runs on LLVM 19 only, not 16"):
        llvm_choice(regalloc, 16)
    with pytest.raises(ValueError, match="does not run LLVM"):
        llvm_choice(gcc, 19)
    assert 16 not in get_problem("mlir-tiling").llvm_majors
    assert 16 in get_problem("phase-ordering").llvm_majors


def test_train_and_evaluate_refuse_a_major_the_problem_lacks(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = str(tmp_path / "run")
    assert main(["train", "regalloc-eviction", "--llvm", "16", "--out", out]) == 2
    assert "runs on LLVM 19 only, not 16" in capsys.readouterr().err
    policy = tmp_path / "policy.onnx"
    policy.write_bytes(b"")
    assert main(["evaluate", "gcc-unroll", "--llvm", "19", "--policy", str(policy)]) == 2
    assert "does not run LLVM" in capsys.readouterr().err


def test_regalloc_advisors_are_refused_before_llc_16_runs(tmp_path: Path) -> None:
    with pytest.raises(
        LlvmVersionError, match="the advisor of regalloc-eviction needs LLVM's interactive"
    ):
        run_compiler(
            ["llc-16", str(tmp_path / "m.ll")],
            {"regalloc-eviction": load_policy("default", "regalloc-eviction")},
        )


@pytest.fixture(scope="module")
def llvm16() -> LlvmTools:
    """LLVM 16's tools, with mlbridge's parts for it installed."""
    tools = LlvmTools(16)
    missing = [t for t in (tools.clang, tools.llvm_size) if shutil.which(t) is None]
    if missing:
        pytest.skip(f"not installed: {', '.join(missing)} (scripts/setup installs them)")
    try:
        native = find_native(llvm=16)
        native.require("plugin")
        native.require("phase_service")
    except NativeError as err:
        pytest.skip(f"mlbridge's LLVM 16 parts are not installed: {err}")
    return tools


def _plain(tools: LlvmTools, source: Path, out: Path) -> bytes:
    subprocess.run([tools.clang, "-Oz", "-c", "-w", str(source), "-o", str(out)], check=True)
    return out.read_bytes()


@pytest.mark.slow
def test_default_policy_served_through_the_plugin_is_clang_16_oz(
    llvm16: LlvmTools, tmp_path: Path
) -> None:
    for source in sorted(DEMO.glob("*.c")):
        plain = _plain(llvm16, source, tmp_path / "plain.o")
        served = tmp_path / "served.o"
        result = run_compiler(
            [llvm16.clang, "-Oz", "-c", "-w", str(source), "-o", str(served)],
            {"inlining": load_policy("default", "inlining")},
            timeout=300,
        )
        assert result.ok, result.error
        assert result.command[1].startswith("-fpass-plugin=") and "llvm16" in result.command[1]
        run = result.problems["inlining"]
        assert run.stats.decisions > 0 and run.after_size_stop == 0
        assert served.read_bytes() == plain, source.name


def test_a_policy_changes_clang_16s_decisions(llvm16: LlvmTools, tmp_path: Path) -> None:
    source = DEMO / "hashtable.c"
    _plain(llvm16, source, tmp_path / "plain.o")
    sizes: List[int] = []
    for spec in ("never", "always"):
        out = tmp_path / f"{spec}.o"
        result = run_compiler(
            [llvm16.clang, "-Oz", "-c", "-w", str(source), "-o", str(out)],
            {"inlining": load_policy(spec, "inlining")},
            timeout=300,
        )
        assert result.ok, result.error
        sizes.append(text_size(str(out)))
    plain = text_size(str(tmp_path / "plain.o"))
    assert sizes[0] != sizes[1] and plain != sizes[0]


def test_mlbridge_llvm_on_clang_16(
    llvm16: LlvmTools, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    source = DEMO / "expr.c"
    plain = _plain(llvm16, source, tmp_path / "plain.o")
    out = tmp_path / "served.o"
    command = ["llvm", "--problem", "inlining", "--policy", "default"]
    assert main([*command, "--", llvm16.clang, "-Oz", "-c", str(source), "-o", str(out)]) == 0
    assert out.read_bytes() == plain
    # An unversioned name with --llvm 16 goes through the plugin too.
    clang = shutil.which(llvm16.clang)
    assert clang is not None
    link = tmp_path / "bin" / "cc-under-test"
    link.parent.mkdir()
    link.symlink_to(clang)
    out.unlink()
    args = [*command, "--llvm", "16", "--", str(link), "-Oz", "-c", str(source), "-o", str(out)]
    assert main(args) == 0
    assert out.read_bytes() == plain
    evict = ["--problem", "regalloc-eviction", "--policy", "default"]
    assert main(["llvm", *evict, "--", "llc-16", "x.ll"]) == 2
    assert "LLVM 16 lacks" in capsys.readouterr().err


def test_an_inlining_episode_through_the_plugin(llvm16: LlvmTools, tmp_path: Path) -> None:
    from mlbridge.gym.modules import prepare_modules
    from mlbridge.problems.inlining.environment import InliningEnv

    modules = prepare_modules(bundled_programs(), tmp_path / "modules", clang=llvm16.clang)
    env = InliningEnv(modules, llvm=16)
    try:
        assert env.clang == "clang-16" and env.feature_names[-1] == "inlining_default"
        # LLVM 16's 35 features: not 19's avail-external pair.
        assert len(env.feature_names) == 36
        assert "is_callee_avail_external" not in env.feature_names
        env.reset(seed=0, options={"module": "demo-kernels"})
        steps, done = 0, False
        while not done:
            _, reward, terminated, truncated, info = env.step(env.baseline_action())
            steps, done = steps + 1, terminated or truncated
        assert terminated and not truncated, info.get("error")
        assert steps > 10 and reward == 0.0
        assert info["text_size"] == info["oz_text_size"] == env.oz_text_size("demo-kernels")
    finally:
        env.close()


def test_a_phase_ordering_episode_on_opt_16s_passes(llvm16: LlvmTools, tmp_path: Path) -> None:
    from mlbridge.gym.modules import prepare_modules
    from mlbridge.problems.phase_ordering.environment import PhaseOrderingEnv

    modules = prepare_modules(bundled_programs(), tmp_path / "modules", clang=llvm16.clang)
    env = PhaseOrderingEnv(modules, llvm=16, max_steps=3)
    try:
        assert env.service.endswith("mlbridge-phase-service-llvm16")
        names = [name for name, _ in env.actions]
        env.reset(seed=0, options={"module": "demo-hashtable"})
        total = 0.0
        for name in ("sroa", "instcombine", "seq-loop-mssa"):
            _, reward, terminated, truncated, info = env.step(names.index(name))
            assert "error" not in info, info["error"]
            total += float(reward)
        assert truncated and total > 0
    finally:
        env.close()
