"""``mlbridge evaluate --validate`` (mlbridge.validation.deployment), on tiny
corpora: the measured programs are built with the policy deployed and run
against ``clang -O0``; a build that breaks them fails the command with its
findings; a corpus built from a recipe has its projects' own test suites
run; a kernel suite's checksum comparisons are its validation; a problem
that cannot build programs with a policy is refused before measuring."""

from __future__ import annotations

import json
from pathlib import Path

from compiler_plugins import installed_inline_plugin
from test_corpus_recipe import _archive, _project, _recipe, needs_tools
from test_validation_projects import MAKEFILE, NAN_TEST_C, NUM_C

from mlbridge.cli import main
from mlbridge.corpus.load import load_corpus
from mlbridge.gym.timed_kernels import CHANGED_RESULT
from mlbridge.llvm.versions import tools
from mlbridge.models import model_path
from mlbridge.problems import get_problem
from mlbridge.validation import Build
from mlbridge.validation.deployment import validate_deployment

#: Prints whether 0/0 is a NaN, which -ffast-math lets clang assume it is not.
NAN_PROGRAM = r"""
#include <math.h>
#include <stdio.h>
static double ratio(double a, double b) { return a / b; }
int main(int argc, char **argv) {
  (void)argv;
  printf("nan: %d\n", isnan(ratio(0.0, argc - 1.0)) ? 1 : 0);
  return 0;
}
"""


def _programs(tmp_path: Path) -> tuple:
    """A directory corpus of runnable programs: (its path, the split of its
    first program)."""
    corpus = tmp_path / "programs"
    corpus.mkdir()
    for name in ("a", "b", "c"):
        (corpus / f"{name}.c").write_text(NAN_PROGRAM.replace("nan:", f"{name}:"))
    return corpus, load_corpus(corpus)[0].split


def _evaluate(tmp_path: Path, corpus: Path, split: str, *extra: str) -> int:
    return main(
        [
            "evaluate",
            "inlining",
            "--policy",
            str(model_path("inlining-size")),
            "--corpus",
            str(corpus),
            "--split",
            split,
            "--out",
            str(tmp_path / "out"),
            "--validate",
            *extra,
        ]
    )


def test_the_measured_programs_are_run_against_O0(tmp_path, capsys):
    installed_inline_plugin()
    corpus, split = _programs(tmp_path)
    assert _evaluate(tmp_path, corpus, split) == 0
    report = json.loads((tmp_path / "out" / "evaluate.json").read_text())
    validation = report["validation"]
    checked = {c["program"] for c in validation["programs"]["checks"]}
    ours = {p.name for p in load_corpus(corpus) if p.split == split}
    assert ours <= checked  # the bundled programs of the split too
    assert validation["findings"] == [] and validation["counts"]["same"] >= len(ours)
    assert validation["programs"]["decisions"] > 0
    assert "validation: " in capsys.readouterr().out


def test_a_deployment_that_breaks_a_program_fails_the_command(tmp_path, capsys, monkeypatch):
    from mlbridge.problems.inlining import deploy

    installed_inline_plugin()
    broken = Build("fast-math", (tools().clang, "-O2", "-ffast-math"))
    monkeypatch.setattr(deploy, "deployed_build", lambda policy, tool, llvm: broken)
    corpus, split = _programs(tmp_path)
    assert _evaluate(tmp_path, corpus, split) == 1
    report = json.loads((tmp_path / "out" / "evaluate.json").read_text())
    assert {f["status"] for f in report["validation"]["findings"]} == {"mismatch"}
    err = capsys.readouterr().err
    assert "mismatch: " in err and "findings" in err
    assert (tmp_path / "out" / "deploy" / "validate" / "findings").is_dir()


def test_a_problem_without_a_deployed_build_is_refused_before_measuring(
    tmp_path, capsys, monkeypatch
):
    """Every registered problem builds programs with a policy now; one that
    does not (phase-ordering's declaration without the capability) is
    refused before anything is measured."""
    import dataclasses

    import mlbridge.problems

    phase = get_problem("phase-ordering")
    bare = dataclasses.replace(phase, capabilities=())
    monkeypatch.setattr(mlbridge.problems, "get_problem", lambda name: bare)
    code = main(
        ["evaluate", "phase-ordering", "--policy", str(tmp_path / "none.onnx")]
        + ["--validate", "--out", str(tmp_path / "out")]
    )
    assert code == 2
    assert "does not build programs with a policy" in capsys.readouterr().err
    assert not (tmp_path / "out").exists()


def test_a_kernel_suite_is_validated_by_its_checksums(tmp_path):
    evaluation = {
        "kernels": [{"module": "k1"}, {"module": "k2"}],
        "failures": {"k3": f"k3: {CHANGED_RESULT}: checksum 1, 2", "k4": "k4: build failed"},
    }
    problem = get_problem("gcc-unroll")
    report = validate_deployment(
        problem, Path("p"), [], None, "held-out", tmp_path, None, evaluation
    )
    assert report["counts"] == {"same": 2, "mismatch": 1}
    assert [f["program"] for f in report["findings"]] == ["k3"]


@needs_tools
def test_a_built_corpus_is_validated_by_its_projects_test_suites(tmp_path):
    installed_inline_plugin()
    files = {"Makefile": MAKEFILE, "num.c": NUM_C, "nan_test.c": NAN_TEST_C}
    project = _project("tiny", "make", _archive(tmp_path / "tiny.tar.gz", files), split="test")
    project["tests"] = {"args": [], "run": ["make", "check"], "timeout": 60}
    untested = _project("other", "make", _archive(tmp_path / "other.tar.gz", files), split="test")
    recipe = _recipe(tmp_path, [project, untested])
    built = tmp_path / "corpus"
    assert (
        main(["corpus", "build", "--recipe", str(recipe), "--out", str(built), "--no-progress"])
        == 0
    )
    assert _evaluate(tmp_path, built, "held-out", "--recipe", str(recipe)) == 0
    validation = json.loads((tmp_path / "out" / "evaluate.json").read_text())["validation"]
    (record,) = validation["projects"]["projects"]
    assert record["project"] == "tiny" and record["tests"] == {"make check": "passed"}
    assert validation["untested_projects"] == ["other"] and validation["findings"] == []
