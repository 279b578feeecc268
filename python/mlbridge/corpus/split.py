"""The train/held-out split of a corpus's programs: a stable hash of each
program's name, so a program keeps its side when others are added; and a
corpus's programs in an order that covers its projects evenly."""

from __future__ import annotations

import hashlib
import random
from collections import defaultdict
from typing import Dict, List, Sequence

from mlbridge.corpus.program import HELD_OUT, TRAIN, Program

#: The share of a corpus's programs put in the held-out set.
HELD_OUT_FRACTION = 0.3


def held_out_score(name: str) -> float:
    """A stable number in [0, 1) for ``name`` (SHA-256): held-out below
    HELD_OUT_FRACTION."""
    digest = hashlib.sha256(name.encode("utf-8", "surrogateescape")).digest()
    return int.from_bytes(digest[:8], "big") / 2.0**64


def hash_split(names: Sequence[str]) -> Dict[str, str]:
    """Each name's split by :func:`held_out_score`; at least one held-out, and
    at least one training name when there are two or more."""
    scores = {name: held_out_score(name) for name in names}
    splits = {name: HELD_OUT if s < HELD_OUT_FRACTION else TRAIN for name, s in scores.items()}
    if names and HELD_OUT not in splits.values():
        splits[min(scores, key=scores.__getitem__)] = HELD_OUT
    if len(names) >= 2 and TRAIN not in splits.values():
        splits[max(scores, key=scores.__getitem__)] = TRAIN
    return splits


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
