"""Every optimisation problem mlbridge knows (docs/gym.md, docs/training.md,
docs/adding-a-problem.md).

A problem is one folder of this package, ``mlbridge/problems/<name>/``,
whose ``__init__`` declares it (a :class:`Problem` called ``PROBLEM``) and
whose other modules are its environment, deployment, score and trainers.
Problems of other distributions register under the entry-point group
``mlbridge.problems`` (``name = "module:attribute"``, naming a
:class:`Problem`): an installed package is code the user chose to run.

A declaration imports only this package's base and the layers below it:
the environment, deployment and evaluation are named by entry points
(``"module:attribute"``, as gymnasium names environments) and imported when
used, so that reading the registry imports neither gymnasium nor the
training stack. The gymnasium ids (:mod:`mlbridge.gym`), ``mlbridge train``
and ``mlbridge evaluate`` read this registry; nothing else names a problem.
"""

from __future__ import annotations

import importlib
import pkgutil
from importlib import metadata
from typing import Dict, Iterator

from mlbridge.problems.capabilities import Answer
from mlbridge.problems.problem import DeployInputs, EntryPoint, Problem, TensorInputs, resolve

__all__ = [
    "ENTRY_POINT_GROUP",
    "PROBLEMS",
    "Answer",
    "DeployInputs",
    "EntryPoint",
    "Problem",
    "TensorInputs",
    "environments",
    "get_problem",
    "resolve",
]

#: The entry-point group of problems declared by other distributions.
ENTRY_POINT_GROUP = "mlbridge.problems"


def _declared() -> Iterator[Problem]:
    """This package's problems (one per folder, by folder name), then the
    installed distributions' (by entry-point name)."""
    for found in sorted(pkgutil.iter_modules(__path__), key=lambda m: m.name):
        if found.ispkg:
            yield importlib.import_module(f"{__name__}.{found.name}").PROBLEM
    try:
        entries = list(metadata.entry_points(group=ENTRY_POINT_GROUP))
    except TypeError:  # Python 3.9: a dict of groups
        entries = list(metadata.entry_points().get(ENTRY_POINT_GROUP, ()))
    for entry in sorted(entries, key=lambda e: e.name):
        yield entry.load()


def _registry() -> Dict[str, Problem]:
    problems: Dict[str, Problem] = {}
    ids = set()
    for problem in _declared():
        if not isinstance(problem, Problem):
            raise TypeError(
                f"a problem is declared as a mlbridge.problems.Problem, not {problem!r}"
            )
        if problem.name in problems or problem.env_id in ids:
            raise ValueError(f"two problems are called {problem.name!r} or {problem.env_id!r}")
        problems[problem.name] = problem
        ids.add(problem.env_id)
    return problems


#: Every problem, by name.
PROBLEMS: Dict[str, Problem] = _registry()


def get_problem(name: str) -> Problem:
    """The problem called ``name``."""
    try:
        return PROBLEMS[name]
    except KeyError:
        raise ValueError(f"unknown problem {name!r} (one of {', '.join(PROBLEMS)})") from None


def environments() -> Dict[str, str]:
    """Every problem's gymnasium id -> environment entry point."""
    return {p.env_id: p.environment for p in PROBLEMS.values()}
