"""What ``mlbridge evaluate --validate`` runs: proof that the programs a
deployed policy was measured on still work (docs/validation.md).

- A problem of a kernel suite (gcc-unroll, mlir-tiling) compares every
  kernel's checksum with its default build's while it measures: a kernel
  whose result the model changed is a finding (``mismatch``), the measured
  ones are ``same``.
- Otherwise the problem's :class:`~mlbridge.problems.capabilities.DeployedBuild`
  builds the measured programs with the policy:

  - the projects of a corpus built from a recipe (``mlbridge corpus
    build``) by their own build systems, their own test suites run plainly
    (``clang -Oz``) and with the policy
    (:func:`~mlbridge.validation.projects.validate_projects`), for each
    project whose tests the recipe describes (the others are listed as
    untested);
  - every other program (the bundled ones, a csmith corpus) by the
    differential check against ``clang -O0``
    (:func:`~mlbridge.validation.programs.check_programs`): one without a
    ``main`` is left out (``reference-build-failed``).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Dict, List, Optional, Sequence

from mlbridge.corpus.built import SPLIT_OF
from mlbridge.corpus.files import read_json
from mlbridge.corpus.load import BUILT, detect
from mlbridge.corpus.program import Program
from mlbridge.corpus.recipe import read_recipe
from mlbridge.corpus.sandbox import BuildLimits
from mlbridge.errors import CorpusError
from mlbridge.gym.timed_kernels import CHANGED_RESULT
from mlbridge.llvm.versions import tools
from mlbridge.problems import resolve
from mlbridge.problems.capabilities import DeployedBuild, KernelSuite
from mlbridge.problems.problem import Problem
from mlbridge.validation.build import reference_build
from mlbridge.validation.programs import check_programs
from mlbridge.validation.projects import validate_projects

__all__ = ["DeploymentChecks", "refusal", "validate_deployment"]


@dataclass(frozen=True)
class DeploymentChecks:
    """How the programs are checked: a program's deadline, programs (or a
    build's jobs) at once, the sandbox of project builds, the LLVM major,
    and the recipe that built the corpus (a shipped name or a file; None:
    the name its manifest records)."""

    run_timeout: float = 10.0
    jobs: int = 2
    limits: BuildLimits = field(default_factory=BuildLimits)
    llvm: Optional[int] = None
    recipe: Optional[str] = None


def refusal(problem: Problem) -> Optional[str]:
    """Why ``problem``'s deployment cannot be validated (None: it can)."""
    if problem.get(KernelSuite) is None and problem.get(DeployedBuild) is None:
        return f"the problem {problem.name} does not build programs with a policy yet"
    return None


def _kernels(evaluation: Dict[str, Any]) -> Dict[str, Any]:
    """The checksum comparisons the kernel suite's measurement made."""
    measured = [row["module"] for row in evaluation.get("kernels", [])]
    findings = [
        {"program": name, "status": "mismatch", "detail": why}
        for name, why in sorted(evaluation.get("failures", {}).items())
        if CHANGED_RESULT in why
    ]
    counts = {"same": len(measured)} if measured else {}
    if findings:
        counts["mismatch"] = len(findings)
    return {
        "method": "kernel checksums, compared with the default build's while measuring",
        "counts": counts,
        "findings": findings,
        "summary": [
            f"validation: {len(measured)} kernels gave their default build's checksum, "
            f"{len(findings)} did not"
        ],
    }


def _built_projects(corpus: Path) -> Dict[str, Any]:
    """The manifest of a corpus built from a recipe (empty: another format)."""
    kind, where = detect(corpus)
    if kind != BUILT:
        return {}
    manifest = read_json(where)
    return manifest if isinstance(manifest, dict) else {}


def validate_deployment(
    problem: Problem,
    policy: Path,
    programs: Sequence[Program],
    corpus: Optional[Path],
    split: str,
    work: Path,
    tool: Optional[Path],
    evaluation: Dict[str, Any],
    checks: DeploymentChecks = DeploymentChecks(),
) -> Dict[str, Any]:
    """Validates the deployment of ``policy`` that ``evaluation`` measured
    on ``programs`` (of ``split`` of ``corpus``; see the module's
    docstring), in ``work``: the report, with ``counts`` per status, every
    finding and ``summary`` lines. Raises ValueError when the problem
    cannot be validated (:func:`refusal`) and
    :class:`~mlbridge.errors.CorpusError` when the recipe that built the
    corpus cannot be read."""
    if problem.get(KernelSuite) is not None:
        return _kernels(evaluation)
    why = refusal(problem)
    if why is not None:
        raise ValueError(why)
    deployed = problem.get(DeployedBuild)
    assert deployed is not None
    candidate = resolve(deployed.make)(policy, tool, checks.llvm)
    manifest = _built_projects(corpus) if corpus is not None else {}
    built = {p.get("name") for p in manifest.get("projects", [])}
    runnable = [p for p in programs if p.project not in built]
    measured = sorted({p.project for p in programs if p.project in built})
    report: Dict[str, Any] = {"counts": {}, "findings": [], "summary": []}
    if runnable:
        checked = check_programs(
            runnable,
            reference_build("-O0", tools(checks.llvm)),
            candidate,
            work / "programs",
            jobs=checks.jobs,
            run_timeout=checks.run_timeout,
            findings=work / "findings",
        )
        report["programs"] = checked
        _merge(report, checked["counts"], checked["findings"])
        report["summary"].append(
            f"validation: {checked['programs']} programs against clang -O0: "
            f"{checked['compared']} compared, {len(checked['findings'])} findings"
        )
    if measured:
        recipe = read_recipe(checks.recipe or str(manifest.get("recipe")))
        if recipe.name != manifest.get("recipe"):
            raise CorpusError(
                f"the corpus was built from the recipe {manifest.get('recipe')!r}, "
                f"not {recipe.name!r}"
            )
        chosen = [
            p
            for p in recipe.projects
            if p.name in measured and SPLIT_OF.get(p.split) == split and p.tests is not None
        ]
        report["untested_projects"] = sorted(set(measured) - {p.name for p in chosen})
        if chosen:
            reference = reference_build("-Oz", tools(checks.llvm))
            suites = validate_projects(
                chosen,
                reference,
                candidate.at_level(reference),
                work / "projects",
                checks.jobs,
                checks.limits,
            )
            report["projects"] = suites
            _merge(report, suites["counts"], suites["findings"])
            report["summary"].append(
                f"validation: {len(chosen)} projects' own test suites, plainly and with the "
                f"policy: {_counted(suites['counts'])}; {len(suites['findings'])} findings"
            )
        if report["untested_projects"]:
            report["summary"].append(
                f"validation: no test suite described for {', '.join(report['untested_projects'])}"
            )
    if not report["summary"]:
        report["summary"].append("validation: no program to check")
    return report


def _merge(report: Dict[str, Any], counts: Dict[str, int], findings: List[Any]) -> None:
    for status, n in counts.items():
        report["counts"][status] = report["counts"].get(status, 0) + n
    report["findings"] += findings


def _counted(counts: Dict[str, int]) -> str:
    return ", ".join(f"{status} {n}" for status, n in sorted(counts.items())) or "no test"
