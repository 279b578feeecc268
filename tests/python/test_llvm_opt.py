"""Stock LLVM 19 driven by mlbridge policies (skipped when LLVM 19 is missing)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys

import numpy as np
import pytest

from mlbridge.cli import main
from mlbridge.llvm import call_count, make_inliner_ir, run_compiler, spill_counts, text_size
from mlbridge.policies import EvictDefault, load_policy
from mlbridge.training_log import read_training_log

sys.path.insert(0, os.path.dirname(__file__))
import cgen  # noqa: E402

pytestmark = pytest.mark.skipif(
    any(shutil.which(t) is None for t in ("opt-19", "llc-19", "clang-19", "llvm-size-19")),
    reason="LLVM 19 (opt-19, llc-19, clang-19, llvm-size-19) is not installed",
)

INLINER = "-passes=scc-oz-module-inliner"
DEMO = os.path.join(
    os.path.dirname(__file__), "..", "..", "python", "mlbridge", "corpus", "bundled"
)


@pytest.fixture(scope="module")
def work(tmp_path_factory):
    """A generated ~3300-line C program as inliner IR (pitfall #2) and as -O2 IR."""
    d = tmp_path_factory.mktemp("llvm")
    source = d / "gen.c"
    source.write_text(cgen.generate())
    assert source.read_text().count("\n") > 3000
    make_inliner_ir(str(source), str(d / "gen.ll"))
    subprocess.run(
        ["clang-19", "-O2", "-emit-llvm", "-S", str(source), "-o", str(d / "o2.ll")], check=True
    )
    subprocess.run(
        ["opt-19", INLINER, str(d / "gen.ll"), "-S", "-o", str(d / "ref.ll")], check=True
    )
    return d


def _opt(work, policy, extra=()):
    out = work / f"out-{policy}.ll"
    rc = main(
        [
            "llvm",
            "--problem",
            "inlining",
            "--policy",
            policy,
            *extra,
            "--",
            "opt-19",
            INLINER,
            str(work / "gen.ll"),
            "-S",
            "-o",
            str(out),
        ]
    )
    assert rc == 0
    return out.read_text()


@pytest.mark.slow
def test_default_policy_is_byte_identical(work, tmp_path):
    stats = tmp_path / "stats.json"
    out = _opt(work, "default", ["--stats-json", str(stats), "--log", str(tmp_path / "log")])
    assert out == (work / "ref.ll").read_text()
    import json

    summary = json.loads(stats.read_text())
    assert summary["decisions"] > 500 and summary["compiler_returncode"] == 0
    assert summary["host_seconds_per_decision"] > 0
    with open(tmp_path / "log", "rb") as f:
        records = list(read_training_log(f))
    assert len(records) == summary["decisions"]
    first = records[0].tensors
    assert list(first)[-1] == "inlining_decision"
    # pitfall #1 repaired: inlining_default carries LLVM's decision, which was echoed
    assert all(
        int(r.tensors["inlining_default"][0]) == int(r.tensors["inlining_decision"][0])
        for r in records
    )
    assert {int(r.tensors["inlining_default"][0]) for r in records} == {0, 1}


def _calls(ir):
    """Calls, leaving out those to the recursive walkN functions (inlining a
    recursive function into itself multiplies its recursive calls)."""
    return call_count("\n".join(line for line in ir.splitlines() if "@walk" not in line))


@pytest.mark.slow
def test_never_and_always_change_call_counts(work):
    default_calls = _calls((work / "ref.ll").read_text())
    never_calls = _calls(_opt(work, "never"))
    # pitfall #7: without a higher threshold "always" stops being asked early
    always_calls = _calls(_opt(work, "always", ["--size-increase-threshold", "50"]))
    assert never_calls > default_calls > always_calls


@pytest.mark.slow
def test_eviction_default_gives_legal_answers(work):
    answers = []
    inner = EvictDefault()

    def recording(features):
        choice = inner(features)
        answers.append((choice, features["mask"].reshape(-1).copy()))
        return choice

    out = work / "evict.s"
    result = run_compiler(
        ["llc-19", "-O2", str(work / "o2.ll"), "-o", str(out)],
        {"regalloc-eviction": recording},
        timeout=120,
    )
    assert result.ok, result.error or result.stderr
    assert result.decisions == len(answers) > 100
    assert all(mask[choice] == 1 for choice, mask in answers)
    assert sum(spill_counts(out.read_text())) > 0


@pytest.mark.slow
def test_priority_and_both_advisors_at_once(work):
    result = run_compiler(
        ["llc-19", "-O2", str(work / "o2.ll"), "-o", str(work / "p.s")],
        {"regalloc-priority": load_policy("default", "regalloc-priority")},
        timeout=120,
    )
    assert result.ok and result.decisions > 100
    both = run_compiler(
        ["llc-19", "-O2", str(work / "o2.ll"), "-o", str(work / "b.s")],
        {
            "regalloc-eviction": load_policy("default", "regalloc-eviction"),
            "regalloc-priority": load_policy("default", "regalloc-priority"),
        },
        timeout=120,
    )
    assert both.ok, both.error
    assert all(run.stats.decisions > 0 for run in both.problems.values())
    assert (
        both.problems["regalloc-eviction"].stats.contexts > 10
    )  # one context per machine function


def test_clang_mllvm_path(tmp_path):
    source = os.path.join(DEMO, "kernels.c")
    plain, served = tmp_path / "plain.o", tmp_path / "served.o"
    subprocess.run(["clang-19", "-Oz", "-c", source, "-o", str(plain)], check=True)
    rc = main(
        [
            "llvm",
            "--problem",
            "inlining",
            "--policy",
            "default",
            "--",
            "clang-19",
            "-Oz",
            "-c",
            source,
            "-o",
            str(served),
        ]
    )
    assert rc == 0
    assert text_size(str(served)) == text_size(str(plain)) > 0


def test_compiler_that_never_opens_does_not_hang(work):
    result = run_compiler(
        ["llc-19", "-O0", str(work / "o2.ll"), "-o", str(work / "o0.s")],
        {"regalloc-eviction": load_policy("default", "regalloc-eviction")},
        timeout=60,
    )
    assert result.ok and result.decisions == 0
    assert not result.problems["regalloc-eviction"].opened and not result.timed_out


def test_exit_code_passthrough(tmp_path):
    fake = tmp_path / "fakecc"
    fake.write_text("#!/bin/sh\nexit 7\n")
    fake.chmod(0o755)
    assert main(["llvm", "--problem", "inlining", "--policy", "never", "--", str(fake)]) == 7
    rc = subprocess.run(
        [
            sys.executable,
            "-m",
            "mlbridge",
            "llvm",
            "--problem",
            "inlining",
            "--policy",
            "never",
            "--",
            "opt-19",
            str(tmp_path / "missing.ll"),
        ],
        capture_output=True,
    ).returncode
    assert rc == 1


def test_policy_failure_kills_the_compiler(work):
    calls = []

    def failing(features):
        calls.append(1)
        if len(calls) == 5:
            raise RuntimeError("model crashed")
        return 0

    result = run_compiler(
        ["opt-19", INLINER, str(work / "gen.ll"), "-S", "-o", str(work / "fail.ll")],
        {"inlining": failing},
        timeout=60,
    )
    assert "model crashed" in result.error
    assert result.returncode < 0 and not result.timed_out  # killed (pitfall #3)


def test_illegal_eviction_answer_is_never_sent(work):
    def illegal(features):
        return int(np.flatnonzero(features["mask"].reshape(-1) == 0)[0])

    result = run_compiler(
        ["llc-19", "-O2", str(work / "o2.ll"), "-o", str(work / "x.s")],
        {"regalloc-eviction": illegal},
        timeout=60,
    )
    assert "not a legal candidate" in result.error
    assert result.returncode < 0


SIZE_CAP_SOURCE = os.path.join(os.path.dirname(__file__), "..", "data", "size_cap.c")


def _size_cap_run(tmp_path, name, extra=(), compiler=("opt-19", "-passes=default<O2>")):
    """``mlbridge llvm --policy default`` over tests/data/size_cap.c (whose
    inlining outgrows LLVM's 2x cap); returns (output bytes, inline stats)."""
    import json

    ir = tmp_path / "size_cap.bc"
    if not ir.exists():
        make_inliner_ir(SIZE_CAP_SOURCE, str(ir))
    out, stats = tmp_path / f"{name}.o", tmp_path / f"{name}.json"
    source = str(ir) if compiler[0].startswith("opt") else SIZE_CAP_SOURCE
    rc = main(
        [
            "llvm",
            "--problem",
            "inlining",
            "--policy",
            "default",
            *extra,
            "--stats-json",
            str(stats),
            "--",
            *compiler,
            source,
            "-o",
            str(out),
        ]
    )
    assert rc == 0
    return out.read_bytes(), json.loads(stats.read_text())["problems"]["inlining"]


def test_default_policy_lifts_llvm_size_cap(tmp_path):
    """Issue 11 #6: the default policy is LLVM's default inliner even where
    MLInlineAdvisor's size cap would have stopped it."""
    make_inliner_ir(SIZE_CAP_SOURCE, str(tmp_path / "size_cap.bc"))
    subprocess.run(
        [
            "opt-19",
            "-passes=default<O2>",
            str(tmp_path / "size_cap.bc"),
            "-o",
            str(tmp_path / "plain.o"),
        ],
        check=True,
    )
    lifted, stats = _size_cap_run(tmp_path, "lifted")
    assert lifted == (tmp_path / "plain.o").read_bytes()
    assert stats["size_increase_threshold"] is None and stats["size_stopped"] is False
    capped, stats = _size_cap_run(tmp_path, "capped", ["--size-increase-threshold", "2"])
    assert capped != lifted
    assert stats["size_increase_threshold"] == 2.0 and stats["size_stopped"] is True
    assert stats["after_size_stop"] > 0


def test_size_cap_reported_through_clang(tmp_path):
    _, stats = _size_cap_run(
        tmp_path, "clang", ["--size-increase-threshold", "2"], ("clang-19", "-O2", "-c", "-w")
    )
    assert stats["size_stopped"] is True and stats["after_size_stop"] > 0
    _, stats = _size_cap_run(tmp_path, "clang-lifted", (), ("clang-19", "-O2", "-c", "-w"))
    assert stats["size_stopped"] is False and stats["decisions"] > 0
