"""``mlbridge corpus build``: a corpus built from a recipe, resumable.

The output directory holds, per project::

    OUT/downloads/<debian package>/   the .dsc and tarballs (checked)
    OUT/projects/<name>/src/          the unpacked sources
    OUT/projects/<name>/build/        the build (cmake, meson, bear's output)
    OUT/projects/<name>/build.log     every step's output
    OUT/projects/<name>/done.json     what the build gave (written last)

and ``OUT/mlbridge_corpus.json``, the manifest that :func:`load_corpus`
reads: each project's split, licence, source and the compile_commands.json of
its translation units. A project whose ``done.json`` matches its recipe
entry is not built again, so an interrupted build resumes where it stopped;
a project that fails is reported and the others go on.
"""

from __future__ import annotations

import dataclasses
import fcntl
import json
import logging
import os
import shutil
import stat
import sys
import time
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Dict, Iterable, Iterator, List, Optional, Sequence

from mlbridge.corpus.apt_sources import enable_deb_src
from mlbridge.corpus.build_systems import CC, build_project
from mlbridge.corpus.files import MAX_JSON_BYTES, read_capped
from mlbridge.corpus.recipe import ArchiveSource, DebianSource, ProjectRecipe, Recipe
from mlbridge.corpus.sandbox import BuildLimits, bubblewrap, build_user
from mlbridge.corpus.sources import fetch_debian, unpack_archive, unpack_debian
from mlbridge.corpus.steps import run_step
from mlbridge.corpus.unit_check import keep_compiling_units
from mlbridge.errors import CorpusError
from mlbridge.output_files import replace_file

_LOG = logging.getLogger("mlbridge.corpus")
MANIFEST = "mlbridge_corpus.json"
MANIFEST_FORMAT = 1
#: Longest ``apt-get build-dep`` may take.
BUILD_DEPS_TIMEOUT_S = 3600.0


@dataclass(frozen=True)
class BuiltProject:
    """A project the build finished: its translation units and cost."""

    name: str
    split: str
    translation_units: int
    seconds: float


@dataclass
class BuildReport:
    """What :func:`build_corpus` did."""

    built: List[BuiltProject] = dataclasses.field(default_factory=list)
    reused: List[BuiltProject] = dataclasses.field(default_factory=list)
    failed: Dict[str, str] = dataclasses.field(default_factory=dict)

    @property
    def projects(self) -> List[BuiltProject]:
        """Every project of the corpus now, built or reused."""
        return self.built + self.reused


def _fingerprint(project: ProjectRecipe) -> Any:
    """What a finished build must match to be reused: the recipe entry but
    its test suite (which the corpus's build does not run)."""
    entry = dataclasses.asdict(project)
    del entry["tests"]
    return json.loads(json.dumps(entry, default=str))


def _project_dir(out: Path, project: ProjectRecipe) -> Path:
    return out / "projects" / project.name


def _reusable(out: Path, project: ProjectRecipe, jobs: int) -> Optional[BuiltProject]:
    """The finished build of ``project`` if its ``done.json`` matches the
    recipe entry. One finished before builds checked their units (no
    ``excluded`` in ``done.json``) has them checked now."""
    directory = _project_dir(out, project)
    try:
        record = json.loads(read_capped(directory / "done.json", MAX_JSON_BYTES))
    except (CorpusError, ValueError):
        return None
    if not isinstance(record, dict) or record.get("recipe") != _fingerprint(project):
        return None
    compdb = directory / "compile_commands.json"
    if not compdb.is_file():
        return None
    try:
        units, seconds = int(record["translation_units"]), float(record["seconds"])
    except (KeyError, TypeError, ValueError):
        return None
    if "excluded" not in record:
        try:
            check = keep_compiling_units(compdb, compdb, CC, jobs)
            record["excluded"] = check.excluded
            units = record["translation_units"] = check.units
        except CorpusError:
            return None  # built again from scratch
        _write_json(directory / "done.json", record)
    return BuiltProject(project.name, project.split, units, seconds)


def _write_json(path: Path, value: Any) -> None:
    data = json.dumps(value, indent=1, sort_keys=True) + "\n"
    replace_file(path, data.encode("utf-8"))


def safe_directory(out: Path, *names: str, fresh: bool = False) -> Path:
    """``out/names...``, each a real directory (made when missing); a
    symbolic link or another file at any of those names is refused, so
    nothing planted in ``out`` redirects what the build writes. ``fresh``:
    the last one is emptied first."""
    path = out
    for i, name in enumerate(names):
        path = path / name
        try:
            mode: Optional[int] = os.lstat(path).st_mode
        except FileNotFoundError:
            mode = None
        if mode is not None and not stat.S_ISDIR(mode):
            raise CorpusError(f"{path}: not a directory (a symbolic link or a file is refused)")
        if mode is not None and fresh and i == len(names) - 1:
            shutil.rmtree(path)
            mode = None
        if mode is None:
            path.mkdir(mode=0o755)
    return path


def build_one(out: Path, project: ProjectRecipe, jobs: int, limits: BuildLimits) -> BuiltProject:
    """Fetches, unpacks and builds ``project`` from scratch into
    ``out/projects/<name>`` (downloads reused when they check out), its
    build steps sandboxed under ``limits``."""
    start = time.monotonic()
    directory = safe_directory(out, "projects", project.name, fresh=True)
    log = directory / "build.log"
    sources = directory / "src"
    unpack_project(out, project, sources, log)
    compdb = build_project(project.build, sources, directory / "build", jobs, log, limits)
    check = keep_compiling_units(compdb, directory / "compile_commands.json", CC, jobs)
    seconds = time.monotonic() - start
    _write_json(
        directory / "done.json",
        {
            "recipe": _fingerprint(project),
            "translation_units": check.units,
            "excluded": check.excluded,
            "seconds": seconds,
        },
    )
    return BuiltProject(project.name, project.split, check.units, seconds)


def unpack_project(out: Path, project: ProjectRecipe, sources: Path, log: Path) -> None:
    """Unpacks the sources of ``project`` into ``sources``: a Debian source
    package fetched into ``out/downloads/<package>`` (reused when its files
    check out), or the recipe's archive."""
    if isinstance(project.source, DebianSource):
        downloads = safe_directory(out, "downloads", project.source.package)
        unpack_debian(fetch_debian(project.source, downloads, log), sources, log)
    elif isinstance(project.source, ArchiveSource):
        unpack_archive(project.source, sources)


def _source_record(project: ProjectRecipe) -> Dict[str, str]:
    source = project.source
    if isinstance(source, DebianSource):
        return {
            "debian": source.package,
            "version": source.version,
            "dsc_sha256": source.dsc_sha256,
        }
    return {"archive": source.path.name, "sha256": source.sha256}


def write_manifest(out: Path, recipe: Recipe, report: BuildReport) -> None:
    """Writes ``OUT/mlbridge_corpus.json`` for the projects built so far."""
    built = {p.name: p for p in report.projects}
    projects = [
        {
            "name": p.name,
            "split": p.split,
            "licence": p.licence,
            "source": _source_record(p),
            "translation_units": built[p.name].translation_units,
            "compile_commands": f"projects/{p.name}/compile_commands.json",
        }
        for p in recipe.projects
        if p.name in built
    ]
    _write_json(
        out / MANIFEST,
        {
            "format": MANIFEST_FORMAT,
            "recipe": recipe.name,
            "projects": projects,
            "failed": dict(sorted(report.failed.items())),
        },
    )


def install_build_dependencies(recipe: Recipe, log: Path) -> None:
    """``apt-get build-dep -y`` for every Debian package of ``recipe`` (root),
    after writing the ``deb-src`` entries it needs when APT has none
    (:func:`~mlbridge.corpus.apt_sources.enable_deb_src`)."""
    packages = recipe.debian_packages()
    if packages:
        for path in enable_deb_src(log):
            _LOG.info("mlbridge.corpus: wrote %s (APT's deb entries as deb-src)", path)
        run_step(
            ["apt-get", "build-dep", "-y", *packages],
            log.parent,
            log,
            "installing build dependencies (apt-get build-dep; needs root)",
            BUILD_DEPS_TIMEOUT_S,
        )


def _progress(projects: Sequence[ProjectRecipe], show: bool) -> Iterable[ProjectRecipe]:
    """``projects`` with a progress bar on stderr when asked and available."""
    if show and sys.stderr.isatty():
        try:
            from tqdm import tqdm
        except ImportError:
            return projects
        return tqdm(projects, desc="corpus", unit="project", file=sys.stderr)
    return projects


def build_corpus(
    recipe: Recipe,
    out: Path,
    jobs: int = 2,
    only: Optional[Sequence[str]] = None,
    progress: bool = True,
    on_project: Optional[Callable[[ProjectRecipe, str], None]] = None,
    limits: BuildLimits = BuildLimits(),
) -> BuildReport:
    """Builds the projects of ``recipe`` (or those named in ``only``) into
    ``out``, reusing finished ones; the manifest is rewritten after each.
    ``on_project(project, outcome)`` hears "built", "reused" or the error.
    Each project's build steps run sandboxed under ``limits``
    (:mod:`mlbridge.corpus.sandbox`)."""
    chosen = [recipe.project(name) for name in only] if only else list(recipe.projects)
    bubblewrap()  # the sandbox and its user, checked before anything is built
    build_user(limits)
    out = out.resolve()  # steps run in other directories
    out.mkdir(parents=True, exist_ok=True)
    with _exclusive(out):
        return _build_all(recipe, out, jobs, chosen, progress, on_project, limits)


@contextmanager
def _exclusive(out: Path) -> Iterator[None]:
    """Holds ``OUT/.lock``: a second build of the same corpus fails at once.
    The lock is opened without following a symbolic link (nor waiting on a
    FIFO) and must be a regular file."""
    flags = os.O_RDWR | os.O_CREAT | os.O_CLOEXEC | os.O_NOFOLLOW | os.O_NONBLOCK
    try:
        fd = os.open(out / ".lock", flags, 0o600)
    except OSError as err:
        raise CorpusError(f"{out / '.lock'}: cannot open the lock: {err.strerror or err}") from None
    with os.fdopen(fd, "r+b") as lock:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise CorpusError(f"{out / '.lock'}: not a regular file")
        try:
            fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            raise CorpusError(f"{out}: another `mlbridge corpus build` is building it") from None
        yield


def _build_all(
    recipe: Recipe,
    out: Path,
    jobs: int,
    chosen: Sequence[ProjectRecipe],
    progress: bool,
    on_project: Optional[Callable[[ProjectRecipe, str], None]],
    limits: BuildLimits,
) -> BuildReport:
    report = BuildReport()
    for project in recipe.projects:  # keep the others of an earlier build listed
        if project not in chosen and (previous := _reusable(out, project, jobs)) is not None:
            report.reused.append(previous)
    for project in _progress(chosen, progress):
        previous = _reusable(out, project, jobs)
        if previous is not None:
            report.reused.append(previous)
            outcome = "reused"
        else:
            try:
                report.built.append(build_one(out, project, jobs, limits))
                outcome = "built"
            except CorpusError as err:
                report.failed[project.name] = str(err)
                outcome = str(err)
        _LOG.info("mlbridge.corpus: %s: %s", project.name, outcome)
        if on_project is not None:
            on_project(project, outcome)
        write_manifest(out, recipe, report)
    return report
