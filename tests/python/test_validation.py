"""Proof that optimised programs still work (mlbridge.validation,
mlbridge.corpus.generated, ``mlbridge validate``, ``mlbridge corpus
generate``), on tiny inputs: generated corpora are the same for a seed and
resume; the differential check tells a candidate that builds the same
program from one that miscompiles, crashes, hangs or does not build, and
leaves out programs that are at fault themselves; the inlining policy
deployed through the plugin is checked to have decided (a plugin that fell
back is a finding); every finding leaves a reproducer."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from compiler_plugins import installed_inline_plugin

from mlbridge.corpus.generated import (
    CSMITH_INCLUDE,
    GENERATORS,
    generate_corpus,
    program_seed,
    read_manifest,
)
from mlbridge.corpus.load import load_corpus
from mlbridge.corpus.program import Program
from mlbridge.errors import CorpusError
from mlbridge.llvm.versions import tools
from mlbridge.validation import FINDINGS, SKIPS, Build, check_program, check_programs

CLANG = tools().clang

#: A program that prints what it computed: OFFSET, CRASH, HANG and BROKEN
#: change it, as a miscompilation would, in the candidate builds below.
PROGRAM = r"""
#include <stdio.h>
#include <stdlib.h>
#ifndef OFFSET
#define OFFSET 0
#endif
static int step(int x) { return x * 3 + 1; }
int main(void) {
  unsigned sum = 0;
  for (int i = 0; i < 1000; ++i) sum += (unsigned)step(i);
#ifdef CRASH
  abort();
#endif
#ifdef HANG
  for (volatile int spin = 1; spin;) {}
#endif
#ifdef BROKEN
  syntax error
#endif
  printf("checksum = %X\n", sum + OFFSET);
  return 0;
}
"""


def _program(tmp_path: Path, name: str, text: str = PROGRAM) -> Program:
    source = tmp_path / f"{name}.c"
    source.write_text(text)
    return Program(name, (source,), (), "train")


def _check(tmp_path: Path, program: Program, candidate: Build, **kwargs):
    reference = Build("-O0", (CLANG, "-O0"))
    work = tmp_path / "work"
    work.mkdir(exist_ok=True)
    return check_program(
        program, reference, candidate, work, findings=tmp_path / "findings", **kwargs
    )


def test_a_candidate_that_builds_the_same_program_passes(tmp_path):
    check = _check(tmp_path, _program(tmp_path, "p"), Build("-Oz", (CLANG, "-Oz")))
    assert (check.status, check.finding, check.decisions) == ("same", False, None)
    assert not (tmp_path / "findings").exists()


def test_a_relative_work_directory_runs_the_programs_built_there(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    Path("work").mkdir()
    program = _program(tmp_path, "p")
    check = check_program(
        program, Build("-O0", (CLANG, "-O0")), Build("-Oz", (CLANG, "-Oz")), Path("work")
    )
    assert check.status == "same", check


@pytest.mark.parametrize(
    "define, status",
    [
        ("-DOFFSET=1", "mismatch"),
        ("-DCRASH", "candidate-crashed"),
        ("-DHANG", "candidate-timed-out"),
        ("-DBROKEN", "candidate-build-failed"),
    ],
)
def test_a_broken_candidate_is_a_finding_with_a_reproducer(tmp_path, define, status):
    """A candidate that changes what the program computes (as a
    miscompilation would), crashes it, hangs it or cannot build it."""
    program = _program(tmp_path, "p")
    check = _check(tmp_path, program, Build("sabotaged", (CLANG, "-O2", define)), run_timeout=2)
    assert check.status == status and check.finding
    kept = tmp_path / "findings" / "p"
    assert (kept / "p.c").read_text() == PROGRAM
    record = json.loads((kept / "finding.json").read_text())
    assert record["status"] == status
    assert define in record["candidate"]["argv"]
    assert record["reference"]["stdout"].startswith("checksum = ")
    if status == "mismatch":
        assert record["candidate"]["stdout"] != record["reference"]["stdout"]


@pytest.mark.parametrize(
    "text, status",
    [
        ("int main(void) { return 3; }\n", "reference-failed"),
        ("int main(void) { for (volatile int s = 1; s;) {} }\n", "reference-timed-out"),
        ("int main(void) { syntax error }\n", "reference-build-failed"),
    ],
)
def test_a_program_at_fault_itself_is_left_out(tmp_path, text, status):
    check = _check(
        tmp_path, _program(tmp_path, "q", text), Build("-O2", (CLANG, "-O2")), run_timeout=1
    )
    assert check.status == status and status in SKIPS and not check.finding
    assert not (tmp_path / "findings").exists()


def test_check_programs_counts_every_status(tmp_path):
    programs = [_program(tmp_path, "a"), _program(tmp_path, "b", "int main(void) { return 1; }\n")]
    report = check_programs(
        programs,
        Build("-O0", (CLANG, "-O0")),
        Build("bad", (CLANG, "-O1", "-DOFFSET=7")),
        tmp_path / "work",
        findings=tmp_path / "findings",
        run_timeout=2,
    )
    assert report["counts"] == {"mismatch": 1, "reference-failed": 1}
    assert report["compared"] == 1 and [f["program"] for f in report["findings"]] == ["a"]
    assert set(FINDINGS).isdisjoint(SKIPS)
    with pytest.raises(ValueError, match="jobs"):
        check_programs(programs, Build("x", (CLANG,)), Build("y", (CLANG,)), tmp_path, jobs=0)


def test_the_shipped_inlining_model_builds_the_same_programs(tmp_path):
    """The shipped model deployed through the plugin (its statistics read:
    it decided at every call site, never fell back)."""
    from mlbridge.models import model_path
    from mlbridge.problems.inlining.deploy import deployed_build

    build = deployed_build(model_path("inlining-size"), installed_inline_plugin())
    check = _check(tmp_path, _program(tmp_path, "p"), build)
    assert check.status == "same"
    assert check.decisions is not None and check.decisions > 0


def test_a_policy_the_plugin_cannot_load_is_a_finding(tmp_path):
    """A plugin that falls back to LLVM's heuristic built the program
    without the policy: a finding, however alike the outputs."""
    from mlbridge.problems.inlining.deploy import deployed_build

    bogus = tmp_path / "bogus.onnx"
    bogus.write_bytes(b"not a model")
    check = _check(
        tmp_path, _program(tmp_path, "p"), deployed_build(bogus, installed_inline_plugin())
    )
    assert check.status == "fallback" and check.finding
    assert "fell back" in check.detail or "no statistics" in check.detail


def test_an_eviction_policy_is_deployed_through_the_interactive_host(tmp_path):
    """regalloc-eviction's deployed build: clang under the interactive host,
    every eviction answered by the policy (its records read: it decided)."""
    from eviction_policy import untrained_eviction_policy

    from mlbridge.native import NativeError
    from mlbridge.problems.regalloc_eviction.deploy import deployed_build

    policy = untrained_eviction_policy(tmp_path / "policy.onnx")
    try:
        build = deployed_build(policy)
    except NativeError as err:
        pytest.skip(f"no interactive host with ONNX Runtime: {err}")
    pressure = Path(__file__).resolve().parents[1] / "data" / "regalloc_pressure.c"
    text = pressure.read_text() + (
        "#include <stdio.h>\nint g(int x) { return x * 7 + 1; }\n"
        "int main(void) {\n  int a[80];\n  for (int i = 0; i < 80; ++i) a[i] = i * i;\n"
        '  printf("%d\\n", pressure(a, 64));\n  return 0;\n}\n'
    )
    check = _check(tmp_path, _program(tmp_path, "p", text), build)
    assert check.status == "same", check
    assert check.decisions is not None and check.decisions > 0
    assert build.at_level(Build("-Oz", (CLANG, "-Oz"))).name.startswith(f"{CLANG} -Oz, eviction")


def _needs(generator: str) -> None:
    missing = GENERATORS[generator].missing()
    if missing is not None:
        pytest.skip(f"{missing}; scripts/setup installs it")


@pytest.mark.parametrize("generator", sorted(GENERATORS))
def test_a_generated_corpus_is_the_same_for_a_seed_and_resumes(tmp_path, generator):
    _needs(generator)
    first = generate_corpus(generator, tmp_path / "a", 3, 7)
    second = generate_corpus(generator, tmp_path / "b", 3, 7)
    assert first == second == read_manifest(tmp_path / "a")
    assert [e["seed"] for e in first["programs"]] == [program_seed(7, i) for i in range(3)]
    names = [e["file"] for e in first["programs"]]
    for name in names:
        assert (tmp_path / "a" / name).read_bytes() == (tmp_path / "b" / name).read_bytes()
    (tmp_path / "a" / names[1]).unlink()
    again = generate_corpus(generator, tmp_path / "a", 3, 7)
    assert again == first
    assert (tmp_path / "a" / names[1]).read_bytes() == (tmp_path / "b" / names[1]).read_bytes()
    assert generate_corpus(generator, tmp_path / "c", 3, 8)["programs"] != first["programs"]
    with pytest.raises(CorpusError, match="give another directory"):
        generate_corpus(generator, tmp_path / "a", 3, 8)
    programs = load_corpus(tmp_path / "a")
    assert sorted(p.sources[0].name for p in programs) == sorted(names)


def test_csmith_programs_are_read_with_their_header_and_checked(tmp_path, monkeypatch):
    _needs("csmith")
    monkeypatch.chdir(tmp_path)
    generate_corpus("csmith", Path("gen"), 2, 3)  # a relative directory
    programs = load_corpus(Path("gen"))
    assert all(f"-I{CSMITH_INCLUDE}" in p.flags for p in programs)
    report = check_programs(
        programs,
        Build("-O0", (CLANG, "-O0")),
        Build("-O2", (CLANG, "-O2")),
        tmp_path / "work",
        run_timeout=5,
    )
    assert report["programs"] == 2 and not report["findings"], report


@pytest.mark.parametrize(
    "args, message",
    [
        (["--count", "0"], "--count must be at least 1"),
        (["--count", "2", "--seed", "-1"], "--seed"),
    ],
)
def test_corpus_generate_refuses_bad_arguments(tmp_path, args, message):
    done = subprocess.run(
        [sys.executable, "-m", "mlbridge", "corpus", "generate", "csmith", "--out", str(tmp_path)]
        + args,
        capture_output=True,
        text=True,
    )
    assert done.returncode == 2 and message in done.stderr


def test_the_cli_validates_and_fails_on_a_finding(tmp_path):
    from mlbridge.models import model_path

    installed_inline_plugin()
    corpus = tmp_path / "programs"
    corpus.mkdir()
    (corpus / "p.c").write_text(PROGRAM)
    command = [sys.executable, "-m", "mlbridge", "validate", "inlining", "--corpus", str(corpus)]
    done = subprocess.run(
        command + ["--policy", str(model_path("inlining-size")), "--out", str(tmp_path / "ok")],
        capture_output=True,
        text=True,
    )
    assert done.returncode == 0, done.stderr
    assert "1 compared, 0 findings" in done.stdout
    report = json.loads((tmp_path / "ok" / "validate.json").read_text())
    assert report["counts"] == {"same": 1} and report["decisions"] > 0
    bogus = tmp_path / "bogus.onnx"
    bogus.write_bytes(b"not a model")
    done = subprocess.run(
        command + ["--policy", str(bogus), "--out", str(tmp_path / "bad")],
        capture_output=True,
        text=True,
    )
    assert done.returncode == 1 and "1 findings" in done.stderr
    assert (tmp_path / "bad" / "findings" / "p.c" / "finding.json").is_file()


def test_the_cli_validates_a_constant_configuration(tmp_path):
    """--flags: clang -Oz with the options is the candidate; options that
    change what the program computes are a finding, ones clang refuses are
    a candidate that does not build."""
    corpus = tmp_path / "programs"
    corpus.mkdir()
    (corpus / "p.c").write_text(PROGRAM)
    command = [sys.executable, "-m", "mlbridge", "validate", "phase-ordering"]
    command += ["--corpus", str(corpus), "--no-progress"]
    best = "-mllvm -inline-threshold=10 -Xclang -fmerge-functions"
    done = subprocess.run(
        command + [f"--flags={best}", "--out", str(tmp_path / "ok")], capture_output=True, text=True
    )
    assert done.returncode == 0, done.stderr
    assert "1 compared, 0 findings" in done.stdout and "decisions" not in done.stdout
    report = json.loads((tmp_path / "ok" / "validate.json").read_text())
    assert report["counts"] == {"same": 1}
    for flags, status in (
        ("-DOFFSET=1", "mismatch"),
        ("-mno-such-option", "candidate-build-failed"),
    ):
        out = tmp_path / status
        done = subprocess.run(
            command + [f"--flags={flags}", "--out", str(out)], capture_output=True, text=True
        )
        assert done.returncode == 1, done.stderr
        assert json.loads((out / "validate.json").read_text())["counts"] == {status: 1}
    for bad, message in (
        ([f"--flags={best}", "--policy", str(tmp_path)], "give one of --policy and --flags"),
        (["--flags=''"], "--flags: flags must be non-empty words"),
    ):
        done = subprocess.run(command + bad, capture_output=True, text=True)
        assert done.returncode == 2 and message in done.stderr, done.stderr


def test_the_command_offers_every_generator():
    """The parser names the generators without importing them (a test,
    not an import, keeps the two lists one)."""
    from mlbridge.cli import _parser

    parser = _parser()
    for name in GENERATORS:
        args = parser.parse_args(["corpus", "generate", name, "--count", "1", "--out", "x"])
        assert args.generator == name
    with pytest.raises(SystemExit):
        parser.parse_args(["corpus", "generate", "yarpgen", "--count", "1", "--out", "x"])


# -- robustness: one episode per module --------------------------------------


class _FakeEnv:
    """An environment whose episodes misbehave on purpose: ``behaviour``
    per module name (``ok``, ``raise``, ``slow``, ``orphan``)."""

    step_timeout = 0.1
    episode_timeout = 0.2
    compiler_pid = None

    def __init__(self, behaviour):
        self.behaviour = behaviour
        self.children = []
        self.closed = False
        self.name = None

    def reset(self, options):
        self.name = options["module"]
        if self.behaviour[self.name] == "orphan":  # never reaped: outlives its episode
            self.children.append(subprocess.Popen(["sleep", "30"]))
        return None, {}

    def baseline_action(self):
        return 0

    def step(self, action):
        kind = self.behaviour[self.name]
        if kind == "raise":
            raise RuntimeError("a bug")
        if kind == "slow":
            import time

            time.sleep(0.4)
        return None, 0.0, True, False, {"error": "refused"} if kind == "error" else {}

    def _end_episode(self):
        pass

    def close(self):
        self.closed = True


def test_episodes_that_raise_overrun_or_orphan_are_findings():
    from mlbridge.validation.episodes import EPISODE_FINDINGS, run_episodes

    env = _FakeEnv({"a": "ok", "b": "raise", "c": "slow", "d": "orphan", "e": "error"})
    try:
        report = run_episodes(env, ["a", "b", "c", "d", "e"], margin=0.05)
    finally:
        for child in env.children:
            child.kill()
            child.wait()
    statuses = {c["module"]: c["status"] for c in report["checks"]}
    assert statuses == {
        "a": "done",
        "b": "raised",
        "c": "overran",
        "d": "orphaned",
        "e": "error",
        "(close)": "orphaned",  # the same sleep, still there when the env closed
    }
    assert {f["status"] for f in report["findings"]} <= set(EPISODE_FINDINGS)
    assert (
        "RuntimeError: a bug" in next(c for c in report["checks"] if c["module"] == "b")["detail"]
    )
    assert env.closed
    with pytest.raises(ValueError, match="mode"):
        run_episodes(env, [], "greedy")


@pytest.mark.parametrize("problem", ["phase-ordering", "regalloc-eviction"])
def test_generated_ir_runs_through_an_environment(tmp_path, problem):
    """llvm-stress modules, one episode each, random legal actions: no
    finding (the CLI, as a user runs it)."""
    _needs("llvm-stress")
    installed_inline_plugin()
    generate_corpus("llvm-stress", tmp_path / "ir", 3, 11)
    done = subprocess.run(
        [sys.executable, "-m", "mlbridge", "validate", problem, "--episodes", "random"]
        + ["--corpus", str(tmp_path / "ir"), "--out", str(tmp_path / "out")],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, done.stderr
    report = json.loads((tmp_path / "out" / "episodes.json").read_text())
    assert report["episodes"] == 3 and not report["findings"]
    assert set(report["counts"]) <= {"done", "error", "skipped"}


def test_validate_without_a_policy_or_episodes_is_a_usage_error(tmp_path):
    done = subprocess.run(
        [sys.executable, "-m", "mlbridge", "validate", "inlining", "--corpus", str(tmp_path)],
        capture_output=True,
        text=True,
    )
    assert done.returncode == 2 and "--policy is required" in done.stderr
