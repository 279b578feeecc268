"""The train/held-out split of a corpus's programs: a stable hash of each
program's name, so a program keeps its side when others are added; the
validation programs set aside from training when a corpus names none; and a
corpus's programs in an order that covers its projects evenly."""

from __future__ import annotations

import dataclasses
import hashlib
import random
from collections import defaultdict
from typing import Collection, Dict, List, Sequence, Set

from mlbridge.corpus.program import HELD_OUT, TRAIN, VALIDATION, Program

#: The share of a corpus's programs put in the held-out set.
HELD_OUT_FRACTION = 0.3
#: The share of its training programs set aside for validation, in a corpus
#: that names no validation programs (:func:`set_aside_validation`).
VALIDATION_FRACTION = 0.2


def held_out_score(name: str) -> float:
    """A stable number in [0, 1) for ``name`` (SHA-256): held-out below
    HELD_OUT_FRACTION."""
    digest = hashlib.sha256(name.encode("utf-8", "surrogateescape")).digest()
    return int.from_bytes(digest[:8], "big") / 2.0**64


def _set_aside(names: Sequence[str], fraction: float, salt: str) -> Set[str]:
    """The names whose :func:`held_out_score` (of ``salt`` + name) is below
    ``fraction``: at least one, and not all when there are two or more."""
    scores = {name: held_out_score(salt + name) for name in names}
    aside = {name for name, s in scores.items() if s < fraction}
    if names and not aside:
        aside.add(min(scores, key=scores.__getitem__))
    if len(names) >= 2 and len(aside) == len(scores):
        aside.discard(max(scores, key=scores.__getitem__))
    return aside


def hash_split(names: Sequence[str]) -> Dict[str, str]:
    """Each name's split by :func:`held_out_score`; at least one held-out, and
    at least one training name when there are two or more."""
    held_out = _set_aside(names, HELD_OUT_FRACTION, "")
    return {name: HELD_OUT if name in held_out else TRAIN for name in names}


def set_aside_validation(programs: Sequence[Program], keep: Collection[str] = ()) -> List[Program]:
    """``programs``, and when none is in the validation split (a corpus
    read from a compilation database, an MLGO corpus or a directory splits
    only train and held-out), a stable share of its training programs
    (VALIDATION_FRACTION, by the SHA-256 of ``validation:`` + name) moved to
    validation: at least one, and not all when there are two or more. The
    programs named in ``keep`` (the bundled demo programs a command adds)
    stay training programs and are not counted. A user's own corpus of one
    project is then split by file in three."""
    if any(p.split == VALIDATION for p in programs):
        return list(programs)
    names = [p.name for p in programs if p.split == TRAIN and p.name not in keep]
    aside = _set_aside(names, VALIDATION_FRACTION, "validation:") if len(names) >= 2 else set()
    return [dataclasses.replace(p, split=VALIDATION) if p.name in aside else p for p in programs]


def split(programs: Sequence[Program], which: str) -> List[Program]:
    """The programs of split ``which`` (TRAIN or HELD_OUT)."""
    return [p for p in programs if p.split == which]


def interleave_projects(programs: Sequence[Program], seed: int) -> List[Program]:
    """``programs`` with their projects interleaved (each project's programs
    shuffled by ``seed``), so that every prefix covers as many projects as
    it can: a sample of a large corpus is its first N."""
    rng = random.Random(seed)
    by_project: Dict[str, List[Program]] = defaultdict(list)
    for program in sorted(programs, key=lambda p: p.name):
        by_project[program.project].append(program)
    queues = []
    for project in sorted(by_project):
        units = by_project[project]
        rng.shuffle(units)
        queues.append(units)
    ordered: List[Program] = []
    depth = 0
    while any(depth < len(q) for q in queues):
        ordered += [q[depth] for q in queues if depth < len(q)]
        depth += 1
    return ordered
