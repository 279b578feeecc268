"""Corpora built from recipes (mlbridge.corpus.recipe, .builder, .built):
tiny projects of each build system, packed as archives beside a recipe,
built, resumed, checked and split by project."""

from __future__ import annotations

import hashlib
import io
import json
import shutil
import tarfile
from pathlib import Path
from typing import Dict, List, Optional

import pytest

from mlbridge.cli import main
from mlbridge.corpus import HELD_OUT, TRAIN, load_corpus
from mlbridge.corpus.builder import MANIFEST, build_corpus
from mlbridge.corpus.program import VALIDATION
from mlbridge.corpus.recipe import parse_recipe, read_recipe
from mlbridge.errors import CorpusError

needs_tools = pytest.mark.skipif(
    not all(shutil.which(t) for t in ("clang-19", "bear", "cmake", "ninja", "make")),
    reason="needs clang-19, bear, cmake, ninja and make (scripts/setup installs them)",
)

LIB_C = b'#include "lib.h"\nint twice(int x) { return 2 * x; }\n'
LIB_H = b"int twice(int x);\n"
MAIN_C = b'#include "lib.h"\nint main(void) { return twice(21) - 42; }\n'

PROJECTS: Dict[str, Dict[str, bytes]] = {
    "make": {
        # A probe meant to fail, as a Makefile's feature test: not a unit.
        "Makefile": b"all: probe prog\nprobe:\n\t-$(CC) -c -o a.out probe.c\n"
        b"prog: lib.o main.o\n\t$(CC) -o $@ $^\n"
        b"%.o: %.c\n\t$(CC) -Os -c -o $@ $<\n",
        "probe.c": b"int probe[-1];\n",
        "lib.c": LIB_C,
        "lib.h": LIB_H,
        "main.c": MAIN_C,
    },
    "cmake": {
        "CMakeLists.txt": b"cmake_minimum_required(VERSION 3.16)\nproject(t C)\n"
        b"add_library(lib STATIC lib.c)\nadd_executable(prog main.c)\n"
        b"target_link_libraries(prog lib)\n",
        "lib.c": LIB_C,
        "lib.h": LIB_H,
        "main.c": MAIN_C,
    },
    "autotools": {
        # A configure script as autoconf would leave one: it writes the Makefile.
        "configure": b"#!/bin/sh\nprintf 'all: lib.o main.o extra.o\\n%%.o: %%.c\\n"
        b"\\t$(CC) -DCONFIGURED=1 -c -o $@ $<\\n' > Makefile\n",
        "lib.c": LIB_C,
        "lib.h": LIB_H,
        "main.c": MAIN_C,
        "extra.c": b"int extra(void) { return CONFIGURED; }\n",
    },
}


def _archive(path: Path, files: Dict[str, bytes], top: str = "proj-1.0") -> str:
    """Writes a .tar.gz of ``files`` under ``top``; its SHA-256."""
    with tarfile.open(path, "w:gz") as tar:
        for name, data in files.items():
            info = tarfile.TarInfo(f"{top}/{name}" if top else name)
            info.size = len(data)
            info.mode = 0o755 if name == "configure" else 0o644
            tar.addfile(info, io.BytesIO(data))
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _project(name: str, system: str, digest: str, split: str = "train", **build) -> Dict:
    return {
        "name": name,
        "split": split,
        "licence": "MIT",
        "source": {"archive": f"{name}.tar.gz", "sha256": digest},
        "build": {"system": system, **build},
    }


def _recipe(directory: Path, projects: List[Dict]) -> Path:
    path = directory / "recipe.json"
    path.write_text(json.dumps({"format": 1, "name": "tiny", "projects": projects}))
    return path


def _tiny_recipe(directory: Path, splits: Optional[Dict[str, str]] = None) -> Path:
    splits = splits or {}
    projects = []
    for system, files in PROJECTS.items():
        name = f"tiny-{system}"
        digest = _archive(directory / f"{name}.tar.gz", files)
        projects.append(_project(name, system, digest, splits.get(system, "train")))
    return _recipe(directory, projects)


@needs_tools
@pytest.mark.slow
def test_each_build_system_gives_its_translation_units_and_a_manifest(tmp_path):
    recipe = read_recipe(str(_tiny_recipe(tmp_path)))
    report = build_corpus(recipe, tmp_path / "out", jobs=2, progress=False)
    assert report.failed == {}
    units = {p.name: p.translation_units for p in report.built}
    assert units == {"tiny-make": 2, "tiny-cmake": 2, "tiny-autotools": 3}
    manifest = json.loads((tmp_path / "out" / MANIFEST).read_text())
    assert [p["name"] for p in manifest["projects"]] == list(units)
    assert manifest["projects"][0]["source"]["archive"] == "tiny-make.tar.gz"
    programs = load_corpus(tmp_path / "out")
    names = sorted(p.name for p in programs)
    assert "tiny-autotools/extra.c" in names and "tiny-cmake/lib.c" in names
    extra = next(p for p in programs if p.name == "tiny-autotools/extra.c")
    assert "-DCONFIGURED=1" in extra.flags  # the flags the build used
    done = json.loads((tmp_path / "out" / "projects" / "tiny-make" / "done.json").read_text())
    ((probe, error),) = done["excluded"].items()
    assert probe.endswith("/probe.c") and "negative size" in error
    assert "tiny-make/probe.c" not in names


@needs_tools
@pytest.mark.slow
def test_a_second_build_reuses_finished_projects_and_a_changed_entry_is_rebuilt(tmp_path):
    path = _tiny_recipe(tmp_path)
    out = tmp_path / "out"
    build_corpus(read_recipe(str(path)), out, progress=False)
    log = out / "projects" / "tiny-make" / "build.log"
    before = log.read_bytes()
    again = build_corpus(read_recipe(str(path)), out, progress=False)
    assert again.built == [] and len(again.reused) == 3
    assert log.read_bytes() == before
    value = json.loads(path.read_text())
    value["projects"][0]["build"]["args"] = ["CFLAGS=-DX"]
    path.write_text(json.dumps(value))
    third = build_corpus(read_recipe(str(path)), out, progress=False)
    assert [p.name for p in third.built] == ["tiny-make"]


@needs_tools
@pytest.mark.slow
def test_an_interrupted_project_is_built_again_from_scratch(tmp_path):
    path = _tiny_recipe(tmp_path)
    out = tmp_path / "out"
    build_corpus(read_recipe(str(path)), out, only=["tiny-cmake"], progress=False)
    done = out / "projects" / "tiny-cmake" / "done.json"
    done.unlink()  # as if killed between the build and its record
    (out / "projects" / "tiny-cmake" / "src" / "stale.c").write_text("junk")
    report = build_corpus(read_recipe(str(path)), out, progress=False)
    assert sorted(p.name for p in report.built) == ["tiny-autotools", "tiny-cmake", "tiny-make"]
    assert not (out / "projects" / "tiny-cmake" / "src" / "stale.c").exists()


@needs_tools
@pytest.mark.slow
def test_a_wrong_checksum_fails_that_project_only_and_the_command_says_so(tmp_path, capsys):
    path = _tiny_recipe(tmp_path)
    value = json.loads(path.read_text())
    value["projects"][1]["source"]["sha256"] = "0" * 64
    path.write_text(json.dumps(value))
    out = tmp_path / "out"
    code = main(["corpus", "build", "--recipe", str(path), "--out", str(out), "--no-progress"])
    assert code == 1
    err = capsys.readouterr().err
    assert "tiny-cmake" in err and "SHA-256" in err
    manifest = json.loads((out / MANIFEST).read_text())
    assert [p["name"] for p in manifest["projects"]] == ["tiny-make", "tiny-autotools"]
    assert "tiny-cmake" in manifest["failed"]
    assert not (out / "projects" / "tiny-cmake" / "build").exists()


@needs_tools
def test_a_failing_build_names_its_log(tmp_path):
    broken = dict(PROJECTS["make"], **{"lib.c": b"this is not C\n"})
    digest = _archive(tmp_path / "broken.tar.gz", broken)
    recipe = read_recipe(str(_recipe(tmp_path, [_project("broken", "make", digest)])))
    report = build_corpus(recipe, tmp_path / "out", progress=False)
    assert "broken/build.log" in report.failed["broken"]
    assert "this is not C" in (tmp_path / "out/projects/broken/build.log").read_text()


def _member(name: str, kind: bytes = tarfile.REGTYPE, link: str = "") -> tarfile.TarInfo:
    info = tarfile.TarInfo(name)
    info.type = kind
    info.linkname = link
    info.size = 1 if kind == tarfile.REGTYPE else 0
    return info


@pytest.mark.parametrize(
    "member",
    [
        _member("../escaped.c"),
        _member("/tmp/escaped.c"),
        _member("p/link", tarfile.SYMTYPE, "/etc/passwd"),
        _member("p/a/link", tarfile.SYMTYPE, "../../../escaped.c"),
        _member("p/hard", tarfile.LNKTYPE, "../escaped.c"),
        _member("p/fifo", tarfile.FIFOTYPE),
    ],
    ids=["dotdot", "absolute", "symlink-absolute", "symlink-up", "hardlink-up", "fifo"],
)
def test_an_archive_leaving_its_directory_is_refused(tmp_path, member):
    path = tmp_path / "evil.tar.gz"
    with tarfile.open(path, "w:gz") as tar:
        tar.addfile(_member("p/ok.c"), io.BytesIO(b"x"))
        tar.addfile(member, io.BytesIO(b"x") if member.isfile() else None)
    digest = hashlib.sha256(path.read_bytes()).hexdigest()
    recipe = read_recipe(str(_recipe(tmp_path, [_project("evil", "make", digest)])))
    report = build_corpus(recipe, tmp_path / "out", progress=False)
    assert "leaves its directory" in report.failed["evil"] or "not a file" in report.failed["evil"]
    assert not list((tmp_path / "out" / "projects" / "evil").glob("src*"))
    assert not Path("/tmp/escaped.c").exists()


def test_links_inside_an_archive_are_kept(tmp_path):
    path = tmp_path / "links.tar.gz"
    with tarfile.open(path, "w:gz") as tar:
        tar.addfile(_member("p/a/ok.c"), io.BytesIO(b"x"))
        tar.addfile(_member("p/b/link.c", tarfile.SYMTYPE, "../a/ok.c"))
    digest = hashlib.sha256(path.read_bytes()).hexdigest()
    from mlbridge.corpus.recipe import ArchiveSource
    from mlbridge.corpus.sources import unpack_archive

    unpack_archive(ArchiveSource(path, digest), tmp_path / "src")
    assert (tmp_path / "src" / "b" / "link.c").read_bytes() == b"x"


@needs_tools
@pytest.mark.slow
def test_splits_are_by_project(tmp_path, capsys):
    splits = {"make": "train", "cmake": "validation", "autotools": "test"}
    out = tmp_path / "out"
    build_corpus(read_recipe(str(_tiny_recipe(tmp_path, splits))), out, progress=False)
    by_project: Dict[str, set] = {}
    for program in load_corpus(out):
        by_project.setdefault(program.name.split("/")[0], set()).add(program.split)
    assert by_project == {
        "tiny-make": {TRAIN},
        "tiny-cmake": {VALIDATION},
        "tiny-autotools": {HELD_OUT},
    }
    assert main(["corpus", "info", str(out)]) == 0
    printed = capsys.readouterr().out
    assert "held-out: 3" in printed and "train: 2" in printed and "validation: 2" in printed


@pytest.mark.parametrize(
    "change, message",
    [
        ({"format": 2}, "format"),
        ({"surprise": 1}, "unknown key"),
        ({"projects": []}, "1 to"),
        ({"projects": [{"name": "../x"}]}, "name"),
    ],
)
def test_malformed_recipes_are_refused(tmp_path, change, message):
    value = {"format": 1, "name": "r", "projects": [_project("a", "make", "0" * 64)]}
    value.update(change)
    if "projects" in change and change["projects"]:
        value["projects"] = [dict(_project("a", "make", "0" * 64), **change["projects"][0])]
    with pytest.raises(CorpusError, match=message):
        parse_recipe(value, tmp_path / "r.json")


@pytest.mark.parametrize(
    "field, value, message",
    [
        ("split", "holdout", "split"),
        ("build", {"system": "scons"}, "system"),
        ("build", {"system": "make", "subdir": "../up"}, "relative path"),
        ("build", {"system": "make", "args": ["a\nb"]}, "args"),
        ("source", {"archive": "/etc/passwd", "sha256": "0" * 64}, "relative path"),
        ("source", {"debian": "zlib", "version": "1.2", "dsc_sha256": "abc"}, "dsc_sha256"),
    ],
)
def test_malformed_projects_are_refused(tmp_path, field, value, message):
    project = dict(_project("a", "make", "0" * 64), **{field: value})
    with pytest.raises(CorpusError, match=message):
        parse_recipe({"format": 1, "name": "r", "projects": [project]}, tmp_path / "r.json")


def test_duplicate_project_names_are_refused(tmp_path):
    projects = [_project("a", "make", "0" * 64), _project("a", "cmake", "1" * 64)]
    with pytest.raises(CorpusError, match="already"):
        parse_recipe({"format": 1, "name": "r", "projects": projects}, tmp_path / "r.json")


def test_an_unknown_recipe_names_the_shipped_ones():
    with pytest.raises(CorpusError, match="shipped"):
        read_recipe("no-such-recipe")


#: Projects reserved for independent evaluation: no recipe of the project
#: builds them, under any name.
RESERVED = ("zopfli", "lmdb", "expat", "lua", "tree-sitter", "treesitter", "cmark")


def test_the_shipped_recipe_is_large_split_by_project_and_avoids_reserved_projects():
    from mlbridge.corpus.recipe import DebianSource, shipped_recipes

    recipe = read_recipe("debian-c")
    assert "debian-c" in shipped_recipes()
    assert len(recipe.projects) >= 30
    splits: Dict[str, int] = {}
    for project in recipe.projects:
        splits[project.split] = splits.get(project.split, 0) + 1
        assert isinstance(project.source, DebianSource)
        for word in (project.name, project.source.package):
            assert not any(r in word.lower() for r in RESERVED), word
        assert project.licence
    assert splits["test"] >= 8 and splits["validation"] >= 3 and splits["train"] >= 15
    assert len(set(recipe.debian_packages())) == len(recipe.projects)


def test_a_second_build_of_the_same_corpus_at_once_is_refused(tmp_path):
    import fcntl

    recipe = read_recipe(str(_recipe(tmp_path, [_project("a", "make", "0" * 64)])))
    out = tmp_path / "out"
    out.mkdir()
    with open(out / ".lock", "a+b") as held:
        fcntl.flock(held, fcntl.LOCK_EX)
        with pytest.raises(CorpusError, match="another"):
            build_corpus(recipe, out, progress=False)


def test_a_damaged_record_means_build_again(tmp_path):
    path = tmp_path / "p.tar.gz"
    digest = _archive(path, {"x.c": b"int x;\n"})
    recipe = read_recipe(str(_recipe(tmp_path, [_project("p", "make", digest)])))
    from mlbridge.corpus.builder import _reusable

    project = recipe.projects[0]
    directory = tmp_path / "out" / "projects" / "p"
    directory.mkdir(parents=True)
    (directory / "compile_commands.json").write_text("[]")
    from mlbridge.corpus.builder import _fingerprint

    right = _fingerprint(project)
    for record in (
        "not json",
        "[]",
        json.dumps({"recipe": 1, "translation_units": 1, "seconds": 1}),
        json.dumps({"recipe": right, "seconds": 1}),
        json.dumps({"recipe": right, "translation_units": "many", "seconds": 1}),
    ):
        (directory / "done.json").write_text(record)
        assert _reusable(tmp_path / "out", project, 1) is None
    (directory / "done.json").write_text(
        json.dumps({"recipe": right, "translation_units": 1, "excluded": {}, "seconds": 1})
    )
    assert _reusable(tmp_path / "out", project, 1) is not None


@needs_tools
def test_a_build_whose_units_all_fail_to_compile_is_refused(tmp_path):
    from mlbridge.corpus.unit_check import keep_compiling_units

    (tmp_path / "bad.c").write_text("int bad[-1];\n")
    entries = [{"directory": str(tmp_path), "file": "bad.c", "arguments": ["cc", "-c", "bad.c"]}]
    compdb = tmp_path / "compile_commands.json"
    compdb.write_text(json.dumps(entries))
    with pytest.raises(CorpusError, match="no unit compiles .*bad.c"):
        keep_compiling_units(compdb, tmp_path / "kept.json", "clang-19", jobs=1)
    assert not (tmp_path / "kept.json").exists()


@needs_tools
def test_a_project_built_before_units_were_checked_is_checked_when_reused(tmp_path):
    recipe = read_recipe(str(_tiny_recipe(tmp_path)))
    out = tmp_path / "out"
    build_corpus(recipe, out, jobs=2, only=["tiny-make"], progress=False)
    project = out / "projects" / "tiny-make"
    done = json.loads((project / "done.json").read_text())
    del done["excluded"]  # as an older mlbridge left it, with every unit
    (project / "done.json").write_text(json.dumps(done))
    shutil.copyfile(project / "build" / "compile_commands.json", project / "compile_commands.json")
    assert "probe.c" in (project / "compile_commands.json").read_text()
    report = build_corpus(recipe, out, jobs=2, only=["tiny-make"], progress=False)
    assert report.built == [] and [p.translation_units for p in report.reused] == [2]
    assert "probe.c" not in (project / "compile_commands.json").read_text()
    assert list(json.loads((project / "done.json").read_text())["excluded"]) != []


def test_no_shipped_recipe_builds_a_reserved_project():
    from mlbridge.corpus.recipe import DebianSource, shipped_recipes

    assert {"debian-c", "debian-fresh", "box2d", "libgcrypt", "mbedtls", "curl"} <= set(
        shipped_recipes()
    )
    for name in shipped_recipes():
        for project in read_recipe(name).projects:
            words = [project.name]
            if isinstance(project.source, DebianSource):
                words.append(project.source.package)
            assert not any(r in w.lower() for w in words for r in RESERVED), (name, words)
            assert project.licence


def test_the_fresh_test_projects_are_disjoint_from_every_other_recipe():
    """debian-fresh's projects are test projects only, and no other shipped
    recipe builds one of them (by name or Debian package)."""
    from mlbridge.corpus.recipe import DebianSource, shipped_recipes

    def words(project):
        package = project.source.package if isinstance(project.source, DebianSource) else None
        return {project.name, package} - {None}

    fresh = read_recipe("debian-fresh").projects
    assert len(fresh) >= 8 and {p.split for p in fresh} == {"test"}
    theirs = set().union(*(words(p) for p in fresh))
    for name in set(shipped_recipes()) - {"debian-fresh"}:
        for project in read_recipe(name).projects:
            assert not words(project) & theirs, (name, project.name)
