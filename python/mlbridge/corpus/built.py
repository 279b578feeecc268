"""Reading a corpus that ``mlbridge corpus build`` made from a recipe
(:mod:`mlbridge.corpus.builder`): the manifest ``mlbridge_corpus.json`` and
each project's compile_commands.json. Every translation unit is a program
named ``<project>/<path>``, in its project's split (the recipe's test
projects are the held-out ones): a corpus built from a recipe is split by
project, never by file."""

from __future__ import annotations

from collections import Counter
from dataclasses import replace
from pathlib import Path
from typing import Any, Dict, List

from mlbridge.corpus.compdb import CompilationDatabase, read_compdb, report_dropped
from mlbridge.corpus.files import inside, read_json
from mlbridge.corpus.program import HELD_OUT, TRAIN, VALIDATION, Program
from mlbridge.errors import CorpusError

NAME = "mlbridge_corpus.json"
#: A recipe's split names, as Program splits.
SPLIT_OF = {"train": TRAIN, "validation": VALIDATION, "test": HELD_OUT}


def _projects(manifest: Any, path: Path) -> List[Dict[str, Any]]:
    if not isinstance(manifest, dict) or manifest.get("format") != 1:
        raise CorpusError(f"{path}: not an mlbridge corpus manifest of format 1")
    projects = manifest.get("projects")
    if not isinstance(projects, list) or not projects:
        raise CorpusError(f"{path}: no projects (did `mlbridge corpus build` finish one?)")
    for i, project in enumerate(projects):
        if (
            not isinstance(project, dict)
            or not isinstance(project.get("name"), str)
            or project.get("split") not in SPLIT_OF
            or not isinstance(project.get("compile_commands"), str)
        ):
            raise CorpusError(f"{path}: projects[{i}] is malformed")
    return projects


def built_programs(path: Path) -> List[Program]:
    """The programs of the built corpus whose manifest is ``path``, the
    options dropped from their commands reported once."""
    root = path.parent
    programs: List[Program] = []
    dropped: Counter[str] = Counter()
    for project in _projects(read_json(path), path):
        compdb = inside(root, project["compile_commands"], f"{path}: {project['name']}")
        database = read_compdb(compdb)
        dropped.update(database.dropped)
        split = SPLIT_OF[project["split"]]
        programs += [
            replace(p, name=f"{project['name']}/{p.name}", split=split) for p in database.programs
        ]
    report_dropped(CompilationDatabase(path, programs, dict(dropped)))
    return programs
