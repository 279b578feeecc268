"""A real project built by its own build system and tested by its own test
suite, once by a reference :class:`Build` (``clang-19 -Oz``) and once with
a policy deployed, each test's results compared.

Each build of a project lives in ``OUT/projects/NAME/reference`` and
``.../candidate`` (``src``, ``build``, ``log``, ``compilers``): the sources
unpacked afresh (:func:`~mlbridge.corpus.builder.unpack_project`), built
with the recipe's test arguments (:class:`~mlbridge.corpus.recipe.SuiteSpec`)
by the project's build system with the build's compiler as ``CC`` and
``CXX`` (:mod:`.compiler_wrapper`), then the suite run
(:mod:`.suites`); every step in the sandbox of corpus builds
(:mod:`mlbridge.corpus.sandbox`: no writes outside the two directories, no
network, a deadline and a memory limit, children killed with it). Both
trees are kept, so that a finding can be run again.

A test's status (:data:`TEST_STATUSES`): ``passed`` (in both),
``failed-both`` (the project's or the machine's fault, not the policy's),
``failed-plainly`` (only the reference failed: a flaky test), ``skipped``
(in either, or missing from the candidate where the reference failed too),
``missing-plainly`` (only the candidate ran it) and the findings
(:data:`TEST_FINDINGS`) ``failed-with-policy`` and ``missing-with-policy``
(it passed plainly and the candidate's suite never ran it). A project's
own status (:data:`PROJECT_STATUSES`) says whether it was compared; a
candidate that does not build, or whose plugin fell back, is a finding;
``error`` is a project whose sources could not be had.
"""

from __future__ import annotations

import os
import time
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Callable, Dict, Iterable, List, Optional, Sequence

from mlbridge.corpus.build_systems import Sandbox, build_steps, source_dir
from mlbridge.corpus.builder import safe_directory, unpack_project
from mlbridge.corpus.recipe import ProjectRecipe
from mlbridge.corpus.sandbox import BuildLimits
from mlbridge.errors import CorpusError
from mlbridge.llvm.elf import ET_DYN, ET_EXEC, ElfError, read_elf
from mlbridge.llvm.outcomes import elf_sizes
from mlbridge.validation.build import Build, policy_decisions
from mlbridge.validation.compiler_wrapper import write_wrappers
from mlbridge.validation.suites import rerun_command, suite_command, suite_name, suite_results

__all__ = [
    "PROJECT_FINDINGS",
    "PROJECT_STATUSES",
    "LEFT_OUT",
    "TEST_FINDINGS",
    "TEST_STATUSES",
    "SuiteRun",
    "binary_sizes",
    "compare_tests",
    "run_suite",
    "validate_projects",
]

TEST_FINDINGS = ("failed-with-policy", "missing-with-policy")
TEST_STATUSES = (
    "passed",
    "failed-both",
    "failed-plainly",
    "skipped",
    "missing-plainly",
    *TEST_FINDINGS,
)
#: Project statuses that are findings against the candidate.
PROJECT_FINDINGS = ("candidate-build-failed", "fallback")
#: Project statuses that leave a project out (its own fault, or its
#: sources could not be had).
LEFT_OUT = ("reference-build-failed", "error")
PROJECT_STATUSES = ("compared", *LEFT_OUT, *PROJECT_FINDINGS)
#: The largest statistics file of a project's build read.
MAX_STATS_BYTES = 256 << 20


@dataclass
class SuiteRun:
    """One build of a project and the run of its suite."""

    which: str
    directory: Path
    #: Where the build system ran (the sources' subdirectory).
    source: Path
    #: Whether the build steps all succeeded.
    built: bool = False
    #: Why the build failed, or how the suite's command ended when not 0.
    error: str = ""
    suite_ended: str = ""
    tests: Dict[str, str] = field(default_factory=dict)
    #: Linked executables and libraries: path in the tree -> allocated
    #: bytes and ``.text`` bytes.
    binaries: Dict[str, Dict[str, int]] = field(default_factory=dict)
    #: What is wrong with the deployed policy's statistics (None: nothing,
    #: or no policy) and its decisions.
    policy_problem: Optional[str] = None
    decisions: Optional[int] = None
    seconds: float = 0.0


def binary_sizes(root: Path, trees: Iterable[str]) -> Dict[str, Dict[str, int]]:
    """Every linked ELF file (executable or shared library) under the
    ``trees`` of ``root`` (CMake's probes in ``CMakeFiles`` and configure's
    ``conftest`` left out), by path under ``root``: allocated bytes (every
    ``SHF_ALLOC`` section) and ``.text`` bytes, from the section headers."""
    sizes: Dict[str, Dict[str, int]] = {}
    for tree in trees:
        for directory, dirs, files, _ in os.fwalk(root / tree, follow_symlinks=False):
            dirs[:] = sorted(d for d in dirs if d != "CMakeFiles")
            for name in sorted(files):
                path = Path(directory) / name
                if name.startswith("conftest") or path.is_symlink():
                    continue  # a library's links name the file counted once
                try:
                    elf = read_elf(path)  # reads 16 bytes of any other file
                except ElfError:
                    continue
                if elf.type in (ET_EXEC, ET_DYN):
                    sizes[str(path.relative_to(root))] = elf_sizes(elf)
    return sizes


def run_suite(
    out: Path,
    project: ProjectRecipe,
    build: Build,
    which: str,
    jobs: int,
    limits: BuildLimits,
) -> SuiteRun:
    """Builds ``project`` afresh in ``OUT/projects/NAME/WHICH`` by ``build``
    with its test arguments and runs its suite, sandboxed under ``limits``;
    CorpusError when its sources cannot be had or it has no test suite."""
    suite = project.tests
    if suite is None:
        raise CorpusError(f"{project.name}: the recipe says nothing of its test suite")
    start = time.monotonic()
    directory = safe_directory(out, "projects", project.name, which, fresh=True)
    log = directory / "log"
    sources, build_dir = directory / "src", directory / "build"
    unpack_project(out, project, sources, log)
    spec = suite.build
    source = source_dir(spec, sources)
    run = SuiteRun(which, directory, source)
    build_dir.mkdir()
    stats = build_dir / "mlbridge-stats.jsonl"
    if build.stats_variable is not None:
        build = replace(build, env={**build.env, build.stats_variable: str(stats)})
    compilers = write_wrappers(directory / "compilers", build)
    command = suite_command(spec, suite, build_dir, jobs)
    ok = False
    readable = [directory / "compilers", *build.reads]
    with Sandbox([sources, build_dir], limits, compilers, readable) as sandbox:
        try:
            for args in build_steps(spec, source, build_dir, jobs, compilers, record=False):
                sandbox.run(args, source, log, f"{spec.system} step {args[0]}")
            run.built = True
            sandbox.run(command, source, log, "the test suite", suite.timeout_s)
            ok = True
        except CorpusError as err:
            if run.built:
                run.suite_ended = str(err)
            else:
                run.error = str(err)
    if run.built:
        run.tests = suite_results(spec, source, build_dir) or {
            suite_name(spec, suite): "passed" if ok else "failed"
        }
        run.binaries = binary_sizes(directory, ("src", "build"))
    if build.stats_variable is not None:
        run.policy_problem, run.decisions = policy_decisions(stats, MAX_STATS_BYTES)
    run.seconds = time.monotonic() - start
    return run


def compare_tests(reference: Dict[str, str], candidate: Dict[str, str]) -> Dict[str, str]:
    """Test name -> status (:data:`TEST_STATUSES`) from each build's outcomes."""
    statuses: Dict[str, str] = {}
    for name in sorted(set(reference) | set(candidate)):
        plain, policy = reference.get(name), candidate.get(name)
        if plain is None:
            statuses[name] = "missing-plainly"
        elif policy is None:
            statuses[name] = "missing-with-policy" if plain == "passed" else "skipped"
        elif "skipped" in (plain, policy):
            statuses[name] = "skipped"
        elif plain == policy:
            statuses[name] = "passed" if plain == "passed" else "failed-both"
        else:
            statuses[name] = "failed-with-policy" if plain == "passed" else "failed-plainly"
    return statuses


def _sizes(run: SuiteRun) -> Dict[str, int]:
    return {
        "allocated": sum(s["allocated"] for s in run.binaries.values()),
        "text": sum(s["text"] for s in run.binaries.values()),
        "files": len(run.binaries),
    }


def validate_project(
    out: Path,
    project: ProjectRecipe,
    reference: Build,
    candidate: Build,
    jobs: int,
    limits: BuildLimits,
) -> Dict[str, Any]:
    """One project's record: its status, each test's, the findings (with
    how to run each again), sizes of both builds' binaries."""
    plain = run_suite(out, project, reference, "reference", jobs, limits)
    record: Dict[str, Any] = {"project": project.name, "split": project.split, "findings": []}
    if not plain.built:
        return {**record, "status": "reference-build-failed", "detail": plain.error}
    policy = run_suite(out, project, candidate, "candidate", jobs, limits)
    findings: List[Dict[str, str]] = record["findings"]
    if not policy.built:
        status = "candidate-build-failed"
        findings.append({"test": project.name, "status": status, "detail": policy.error})
    elif policy.policy_problem is not None:
        status = "fallback"
        findings.append({"test": project.name, "status": status, "detail": policy.policy_problem})
    else:
        status = "compared"
    tests = compare_tests(plain.tests, policy.tests) if policy.built else {}
    spec = project.tests.build if project.tests is not None else project.build
    for name, test_status in tests.items():
        if test_status in ("failed-with-policy", "missing-with-policy"):
            findings.append(
                {
                    "test": f"{project.name}: {name}",
                    "status": test_status,
                    "detail": f"{plain.tests[name]} plainly, "
                    f"{policy.tests.get(name, 'not run')} with the policy "
                    f"(log: {policy.directory / 'log'})",
                    "reproduce": rerun_command(
                        spec, policy.source, policy.directory / "build", name
                    ),
                }
            )
    counts = {s: n for s in TEST_STATUSES if (n := list(tests.values()).count(s))}
    sizes = {"reference": _sizes(plain), "candidate": _sizes(policy)}
    allocated = sizes["reference"]["allocated"]
    return {
        **record,
        "status": status,
        "tests": tests,
        "counts": counts,
        "suite_ended": {"reference": plain.suite_ended, "candidate": policy.suite_ended},
        "decisions": policy.decisions,
        "sizes": sizes,
        "allocated_ratio": sizes["candidate"]["allocated"] / allocated if allocated else None,
        "binaries": {"reference": plain.binaries, "candidate": policy.binaries},
        "seconds": {"reference": round(plain.seconds, 1), "candidate": round(policy.seconds, 1)},
    }


def validate_projects(
    projects: Sequence[ProjectRecipe],
    reference: Build,
    candidate: Build,
    out: Path,
    jobs: int = 2,
    limits: BuildLimits = BuildLimits(),
    progress: Optional[Callable[[Dict[str, Any]], None]] = None,
) -> Dict[str, Any]:
    """Every project of ``projects`` validated in turn (:func:`validate_project`):
    the report, with the test statuses counted over all projects and every
    finding. A project whose sources cannot be had is reported and the
    others go on."""
    start = time.monotonic()
    out = out.resolve()
    out.mkdir(parents=True, exist_ok=True)
    records: List[Dict[str, Any]] = []
    for project in projects:
        try:
            record = validate_project(out, project, reference, candidate, jobs, limits)
        except CorpusError as err:
            record = {"project": project.name, "status": "error", "detail": str(err)}
            record["findings"] = []
        records.append(record)
        if progress is not None:
            progress(record)
    counts: Dict[str, int] = {}
    for record in records:
        for status, n in record.get("counts", {}).items():
            counts[status] = counts.get(status, 0) + n
    return {
        "reference": reference.name,
        "candidate": candidate.name,
        "projects": records,
        "counts": counts,
        "findings": [f for r in records for f in r["findings"]],
        "seconds": time.monotonic() - start,
    }
