"""A project's own test suite: the command that runs it, and each test's
result read from what the build system's harness leaves behind.

| build system | command (unless the recipe names one) | results read from |
|---|---|---|
| cmake | ``ctest --output-junit`` | the JUnit file ctest writes |
| meson | ``meson test`` | ``meson-logs/testlog.json`` |
| autotools | ``make -k check`` | automake's ``.trs`` file per test |
| make | the recipe's | (the whole command is one test) |

A suite whose harness leaves no per-test results is one test, named by its
command (:func:`suite_name`), that passed when the command exited 0. The files read were
written by a project's build (code, docs/security.md): each is read up to a
size, at most :data:`MAX_TESTS` tests are taken, and an XML file with a
document type declaration (entities) is refused.
"""

from __future__ import annotations

import json
import os
import re
import xml.etree.ElementTree as ElementTree
from pathlib import Path
from typing import Dict, Iterator, List, Optional

from mlbridge.corpus.recipe import BuildSpec, SuiteSpec
from mlbridge.errors import CorpusError
from mlbridge.input_files import read_regular_file

__all__ = [
    "MAX_TESTS",
    "OUTCOMES",
    "rerun_command",
    "suite_command",
    "suite_name",
    "suite_results",
]

#: A test's outcome in one build.
OUTCOMES = ("passed", "failed", "skipped")
#: Most tests read of one suite.
MAX_TESTS = 100_000
#: Largest results file read.
MAX_RESULTS_BYTES = 64 << 20
#: Where ctest is asked to write its JUnit report (in the build directory).
JUNIT = "mlbridge-ctest.xml"

#: automake's and meson's results, as outcomes (an expected failure passes).
_RESULTS = {
    "PASS": "passed",
    "OK": "passed",
    "XFAIL": "passed",
    "EXPECTEDFAIL": "passed",
    "SKIP": "skipped",
    "FAIL": "failed",
    "XPASS": "failed",
    "UNEXPECTEDPASS": "failed",
    "ERROR": "failed",
    "TIMEOUT": "failed",
    "INTERRUPT": "failed",
}
_TRS_RESULT = re.compile(rb"^:(global-)?test-result:\s*([A-Z]+)", re.MULTILINE)


def suite_command(build: BuildSpec, suite: SuiteSpec, build_dir: Path, jobs: int) -> List[str]:
    """The command that runs the suite built by ``build`` (in the sources
    for autotools and make, anywhere for cmake and meson)."""
    if suite.run:
        return list(suite.run)
    if build.system == "cmake":
        junit = str(build_dir / JUNIT)
        return ["ctest", "--test-dir", str(build_dir), "-j", str(jobs), "--output-junit", junit]
    if build.system == "meson":
        return ["meson", "test", "-C", str(build_dir), "--num-processes", str(jobs)]
    return ["make", "-k", f"-j{jobs}", "check"]


def suite_name(build: BuildSpec, suite: SuiteSpec) -> str:
    """The name of the one test a suite is when its harness leaves no
    per-test results: its command as the recipe or the build system says
    it, without the tree's paths (the same in both builds)."""
    if suite.run:
        return " ".join(suite.run)
    return {"cmake": "ctest", "meson": "meson test"}.get(build.system, "make check")


def suite_results(build: BuildSpec, source: Path, build_dir: Path) -> Dict[str, str]:
    """Test name -> outcome (:data:`OUTCOMES`) of the suite just run; empty
    when its harness left no per-test results. CorpusError for a results
    file that cannot be read as one."""
    if build.system == "cmake":
        return _junit(build_dir / JUNIT)
    if build.system == "meson":
        return _meson(build_dir / "meson-logs" / "testlog.json")
    if build.system == "autotools":
        return _automake(source)
    return {}


def rerun_command(build: BuildSpec, source: Path, build_dir: Path, test: str) -> str:
    """How a person runs test ``test`` again in a kept tree (shown, never run)."""
    if build.system == "cmake":
        return f"ctest --test-dir {build_dir} --output-on-failure -R '^{re.escape(test)}$'"
    if build.system == "meson":
        return f"meson test -C {build_dir} --print-errorlogs '{test}'"
    if build.system == "autotools":
        where = (source / test).parent
        return f"make -C {where} check TESTS={Path(test).name}"
    return f"(cd {source} && {test})"


def _read(path: Path) -> Optional[bytes]:
    """The file at ``path`` (a regular file, not a link), None when there is
    none; CorpusError when it cannot be read or is too large."""
    if not os.path.lexists(path):
        return None
    return read_regular_file(path, MAX_RESULTS_BYTES, CorpusError, follow_symlinks=False)


def _add(results: Dict[str, str], name: str, outcome: str) -> None:
    if len(results) >= MAX_TESTS:
        raise CorpusError(f"more than {MAX_TESTS} tests")
    unique, n = name, 1
    while unique in results:
        n += 1
        unique = f"{name} #{n}"
    results[unique] = outcome


def _junit(path: Path) -> Dict[str, str]:
    data = _read(path)
    if data is None:
        return {}
    if b"<!DOCTYPE" in data or b"<!ENTITY" in data:
        raise CorpusError(f"{path}: a document type declaration is refused")
    try:
        root = ElementTree.fromstring(data)
    except ElementTree.ParseError as err:
        raise CorpusError(f"{path}: not JUnit XML: {err}") from None
    results: Dict[str, str] = {}
    for case in root.iter("testcase"):
        name = case.get("name") or "?"
        if case.find("failure") is not None or case.find("error") is not None:
            outcome = "failed"
        elif case.find("skipped") is not None or case.get("status") in ("notrun", "disabled"):
            outcome = "skipped"
        elif case.get("status") == "fail":
            outcome = "failed"
        else:
            outcome = "passed"
        _add(results, name, outcome)
    return results


def _meson(path: Path) -> Dict[str, str]:
    data = _read(path)
    if data is None:
        return {}
    results: Dict[str, str] = {}
    for number, line in enumerate(data.splitlines(), 1):
        if not line.strip():
            continue
        try:
            record = json.loads(line)
            name, result = str(record["name"]), str(record["result"])
        except (ValueError, KeyError, TypeError):
            raise CorpusError(f"{path}:{number}: not a meson test record") from None
        _add(results, name, _RESULTS.get(result, "failed"))
    return results


def _trs_files(root: Path) -> Iterator[Path]:
    for directory, dirs, files, _ in os.fwalk(root, follow_symlinks=False):
        dirs.sort()
        for name in sorted(files):
            if name.endswith(".trs"):
                yield Path(directory) / name


def _automake(source: Path) -> Dict[str, str]:
    results: Dict[str, str] = {}
    for path in _trs_files(source):
        data = _read(path) or b""
        found = _TRS_RESULT.findall(data)
        overall = [r for g, r in found if g] or [r for _, r in found]
        outcomes = {_RESULTS.get(r.decode(), "failed") for r in overall}
        if not outcomes:
            outcome = "failed"  # the harness died before writing a result
        elif "failed" in outcomes:
            outcome = "failed"
        elif outcomes == {"skipped"}:
            outcome = "skipped"
        else:
            outcome = "passed"
        _add(results, str(path.relative_to(source).with_suffix("")), outcome)
    return results
