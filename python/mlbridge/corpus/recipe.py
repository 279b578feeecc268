"""Corpus recipes: which projects a corpus is built from, pinned.

A recipe is a JSON file (docs/corpus.md, "Building a corpus from a recipe")::

    {"format": 1, "name": "debian-c", "description": "...",
     "projects": [
       {"name": "libyaml", "split": "train", "licence": "MIT",
        "source": {"debian": "libyaml", "version": "0.2.5-1",
                   "dsc_sha256": "<64 hex digits>"},
        "build": {"system": "cmake", "args": ["-DBUILD_TESTING=OFF"]},
        "tests": {"args": ["-DBUILD_TESTING=ON"], "timeout": 600}},
       ...]}

Each project comes from a Debian source package (name, version and the
SHA-256 of its ``.dsc``, which pins every file of the package) or from an
archive file beside the recipe (its SHA-256), and is built by its own build
system (cmake, meson, autotools or make) with the arguments given; a
project whose own test suite ``mlbridge validate --recipe`` runs says how
it is built for its tests (``tests``: the build's arguments then, and
its build system and ``autoreconf`` when not the corpus build's; the
command that runs them; their deadline). Its split
(train, validation or test) is part of the recipe: a corpus is split by
project, never by file. Building a project runs its build system, so a
recipe is code (docs/security.md); this module only checks that the recipe
is well formed.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Dict, List, Mapping, Optional, Tuple

from mlbridge.corpus.files import MAX_JSON_BYTES, read_capped
from mlbridge.errors import CorpusError
from mlbridge.jsontext import load_json_value

FORMAT = 1
#: The splits of a recipe's projects.
SPLITS = ("train", "validation", "test")
#: Build systems a project may use.
SYSTEMS = ("cmake", "meson", "autotools", "make")
#: Names of recipes that ship with the package (mlbridge/corpus/recipes/).
RECIPES_DIR = Path(__file__).resolve().parent / "recipes"

_NAME = re.compile(r"[a-z0-9][a-z0-9._+-]{0,63}")
_DEBIAN_VERSION = re.compile(r"[0-9][A-Za-z0-9.+~:-]{0,63}")
_SHA256 = re.compile(r"[0-9a-f]{64}")
#: A configure/cmake/meson/make argument: one word, no control characters.
_ARGUMENT = re.compile(r"[^\x00-\x1f\x7f]{1,512}")
MAX_PROJECTS = 1000
MAX_ARGUMENTS = 100
#: Longest a project's test suite may run, by default (seconds).
DEFAULT_SUITE_TIMEOUT_S = 1800.0


@dataclass(frozen=True)
class DebianSource:
    """A Debian source package, pinned by the SHA-256 of its ``.dsc``."""

    package: str
    version: str
    dsc_sha256: str


@dataclass(frozen=True)
class ArchiveSource:
    """A tar archive (gzip, xz or bzip2) beside the recipe."""

    path: Path
    sha256: str


@dataclass(frozen=True)
class BuildSpec:
    """How a project is built: ``system`` run in ``subdir`` of its sources
    with ``args`` (configure, cmake or meson arguments; make variables for
    ``make``); ``autoreconf`` regenerates ``configure`` first."""

    system: str
    args: Tuple[str, ...] = ()
    subdir: str = ""
    autoreconf: bool = False


@dataclass(frozen=True)
class SuiteSpec:
    """How a project's own test suite is built and run: ``build`` is the
    project's build with its tests turned on (its own arguments, another
    of the project's build systems if need be), ``run`` runs the suite
    (empty: the build system's own, :mod:`mlbridge.validation.suites`), in
    at most ``timeout_s`` seconds."""

    build: BuildSpec
    run: Tuple[str, ...] = ()
    timeout_s: float = DEFAULT_SUITE_TIMEOUT_S


@dataclass(frozen=True)
class ProjectRecipe:
    """One project of a recipe."""

    name: str
    split: str
    licence: str
    source: Any  # DebianSource | ArchiveSource
    build: BuildSpec
    #: How its own test suite runs (None: the recipe does not say).
    tests: Optional[SuiteSpec] = None


@dataclass(frozen=True)
class Recipe:
    """A whole recipe, read by :func:`read_recipe`."""

    name: str
    description: str
    projects: Tuple[ProjectRecipe, ...]
    path: Path

    def project(self, name: str) -> ProjectRecipe:
        """The project called ``name``, or CorpusError."""
        for project in self.projects:
            if project.name == name:
                return project
        raise CorpusError(f"recipe {self.name}: no project '{name}'")

    def debian_packages(self) -> List[str]:
        """The Debian source packages of its projects, in recipe order."""
        return [p.source.package for p in self.projects if isinstance(p.source, DebianSource)]


def _fail(where: str, why: str) -> CorpusError:
    return CorpusError(f"{where}: {why}")


def _object(value: Any, where: str, keys: Tuple[str, ...], required: Tuple[str, ...]) -> Dict:
    if not isinstance(value, dict):
        raise _fail(where, "expected a JSON object")
    unknown = sorted(set(value) - set(keys))
    if unknown:
        raise _fail(where, f"unknown key(s) {', '.join(unknown)} (expected {', '.join(keys)})")
    missing = [k for k in required if k not in value]
    if missing:
        raise _fail(where, f"missing key(s) {', '.join(missing)}")
    return value


def _text(value: Any, where: str, pattern: Optional[re.Pattern[str]] = None) -> str:
    if not isinstance(value, str) or (pattern is not None and not pattern.fullmatch(value)):
        wanted = f"matching {pattern.pattern}" if pattern is not None else "a string"
        raise _fail(where, f"expected {wanted}, got {value!r}"[:300])
    return value


def _relative_dir(value: Any, where: str) -> str:
    text = _text(value, where)
    parts = Path(text).parts
    if text and (Path(text).is_absolute() or ".." in parts or "\0" in text):
        raise _fail(where, f"{text!r} must be a relative path inside the sources")
    return text


def _source(value: Any, where: str, base: Path) -> Any:
    if isinstance(value, dict) and "debian" in value:
        v = _object(value, where, ("debian", "version", "dsc_sha256"), ("version", "dsc_sha256"))
        return DebianSource(
            _text(v["debian"], f"{where}.debian", _NAME),
            _text(v["version"], f"{where}.version", _DEBIAN_VERSION),
            _text(v["dsc_sha256"], f"{where}.dsc_sha256", _SHA256),
        )
    v = _object(value, where, ("archive", "sha256"), ("archive", "sha256"))
    relative = _relative_dir(v["archive"], f"{where}.archive")
    if not relative:
        raise _fail(f"{where}.archive", "empty path")
    return ArchiveSource(base / relative, _text(v["sha256"], f"{where}.sha256", _SHA256))


def _arguments(value: Any, where: str) -> Tuple[str, ...]:
    if not isinstance(value, list) or len(value) > MAX_ARGUMENTS:
        raise _fail(where, f"expected a list of at most {MAX_ARGUMENTS} strings")
    return tuple(_text(a, f"{where}[{i}]", _ARGUMENT) for i, a in enumerate(value))


def _build(value: Any, where: str) -> BuildSpec:
    v = _object(value, where, ("system", "args", "subdir", "autoreconf"), ("system",))
    system = _text(v["system"], f"{where}.system")
    if system not in SYSTEMS:
        raise _fail(f"{where}.system", f"{system!r} is not one of {', '.join(SYSTEMS)}")
    autoreconf = v.get("autoreconf", False)
    if not isinstance(autoreconf, bool):
        raise _fail(f"{where}.autoreconf", "expected true or false")
    return BuildSpec(
        system,
        _arguments(v.get("args", []), f"{where}.args"),
        _relative_dir(v.get("subdir", ""), f"{where}.subdir"),
        autoreconf,
    )


def _suite(value: Any, where: str, project: BuildSpec) -> SuiteSpec:
    v = _object(value, where, ("system", "args", "autoreconf", "run", "timeout"), ("args",))
    system = v.get("system", project.system)
    same = system == project.system
    build = _build(
        {
            "system": system,
            "args": v["args"],
            "subdir": project.subdir,
            "autoreconf": v.get("autoreconf", project.autoreconf if same else False),
        },
        where,
    )
    run = _arguments(v.get("run", []), f"{where}.run")
    if build.system == "make" and not run:
        raise _fail(f"{where}.run", "a make project names the command that runs its tests")
    timeout = v.get("timeout", DEFAULT_SUITE_TIMEOUT_S)
    if isinstance(timeout, bool) or not isinstance(timeout, (int, float)) or not timeout > 0:
        raise _fail(f"{where}.timeout", f"expected a positive number of seconds, got {timeout!r}")
    return SuiteSpec(build, run, float(timeout))


def _project(value: Any, where: str, base: Path) -> ProjectRecipe:
    v = _object(
        value,
        where,
        ("name", "split", "licence", "source", "build", "tests", "notes"),
        ("name", "split", "licence", "source", "build"),
    )
    split = _text(v["split"], f"{where}.split")
    if split not in SPLITS:
        raise _fail(f"{where}.split", f"{split!r} is not one of {', '.join(SPLITS)}")
    return ProjectRecipe(
        _text(v["name"], f"{where}.name", _NAME),
        split,
        _text(v["licence"], f"{where}.licence"),
        _source(v["source"], f"{where}.source", base),
        build := _build(v["build"], f"{where}.build"),
        _suite(v["tests"], f"{where}.tests", build) if "tests" in v else None,
    )


def parse_recipe(value: Any, path: Path) -> Recipe:
    """The recipe in the JSON value ``value`` read from ``path`` (archives
    are relative to its directory); CorpusError naming the first mistake."""
    where = str(path)
    v = _object(value, where, ("format", "name", "description", "projects"), ("format", "name"))
    if v["format"] != FORMAT:
        raise _fail(f"{where}.format", f"expected {FORMAT}, got {v['format']!r}")
    projects = v.get("projects", [])
    if not isinstance(projects, list) or not 0 < len(projects) <= MAX_PROJECTS:
        raise _fail(f"{where}.projects", f"expected a list of 1 to {MAX_PROJECTS} projects")
    parsed = tuple(
        _project(p, f"{where}.projects[{i}]", path.parent) for i, p in enumerate(projects)
    )
    seen: Dict[str, int] = {}
    for i, project in enumerate(parsed):
        if project.name in seen:
            raise _fail(
                f"{where}.projects[{i}]",
                f"project '{project.name}' already at projects[{seen[project.name]}]",
            )
        seen[project.name] = i
    return Recipe(
        _text(v["name"], f"{where}.name", _NAME),
        _text(v.get("description", ""), f"{where}.description"),
        parsed,
        path,
    )


def shipped_recipes() -> Mapping[str, Path]:
    """The recipes that ship with the package, by name."""
    return {p.stem: p for p in sorted(RECIPES_DIR.glob("*.json"))}


def read_recipe(name_or_path: str) -> Recipe:
    """The shipped recipe of that name, or the recipe file at a path.

    A shipped name always means the shipped recipe, whatever lies in the
    current directory (building a recipe runs code, sometimes as root); a
    recipe of one's own is named by a path: one that holds a ``/`` or ends in
    ``.json`` (``./mine``, ``mine.json``)."""
    shipped = shipped_recipes()
    if name_or_path in shipped:
        path = shipped[name_or_path]
    elif "/" in name_or_path or name_or_path.endswith(".json"):
        path = Path(name_or_path)
    else:
        known = ", ".join(shipped) or "none"
        raise CorpusError(
            f"recipe {name_or_path!r}: not a shipped recipe (shipped: {known}); "
            f"name a recipe file by its path, e.g. ./{name_or_path}"
        )
    if not path.is_file():
        raise CorpusError(f"recipe {name_or_path!r}: no such file")
    data = read_capped(path, MAX_JSON_BYTES)
    return parse_recipe(load_json_value(data, str(path), CorpusError), path.resolve())
