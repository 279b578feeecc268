"""The modules of an environment and the draw of an episode's module.

Shared by the environments of :mod:`mlbridge.gym` (docs/gym.md): the
modules come from explicit files or :class:`~mlbridge.gym.modules.Module`\\ s,
or from a corpus's split (compiled by :func:`~mlbridge.gym.modules.prepare_modules`);
each reset draws one permutation of them with the environment's seeded
generator and starts the first that gives an episode. A module that gives
none (its ``start`` raises :class:`SkipModule`) is recorded with the reason
and never tried again by the same environment.
"""

from __future__ import annotations

import logging
import os
from pathlib import Path
from typing import Callable, Dict, List, Mapping, Optional, Sequence, Tuple, TypeVar, Union

import numpy as np

from mlbridge.corpus.program import HELD_OUT, TRAIN, VALIDATION
from mlbridge.errors import MlbridgeError
from mlbridge.gym.modules import MODULE_FLAGS, Module, default_cache_dir, prepare_modules

__all__ = [
    "SPLITS",
    "EnvError",
    "SkipModule",
    "as_module",
    "corpus_modules",
    "environment_modules",
    "start_drawn",
]

_LOG = logging.getLogger("mlbridge.gym")

#: Splits of the corpus an environment can take its modules from.
SPLITS = (TRAIN, VALIDATION, HELD_OUT, "all")

#: What starting an episode returns.
T = TypeVar("T")
#: A module as environments accept it: a Module, or a bitcode / IR file.
ModuleLike = Union[Module, str, os.PathLike]


class EnvError(MlbridgeError):
    """The environment cannot run an episode (no module, unknown module,
    the compiler's features changed, the environment is closed)."""


class SkipModule(Exception):
    """A module gives no episode: the reason is the message."""


def as_module(item: ModuleLike) -> Module:
    """``item`` as a :class:`Module`: a path is named by its stem."""
    if isinstance(item, Module):
        return item
    path = Path(item)
    return Module(path.stem, path, path.stem, "train")


def corpus_modules(
    corpus: Optional[Union[str, os.PathLike]],
    split: str,
    quick: bool,
    cache_dir: Optional[Union[str, os.PathLike]],
    module_flags: Sequence[str] = MODULE_FLAGS,
    max_programs: Optional[int] = None,
    clang: Optional[str] = None,
    validation_aside: bool = False,
) -> List[Module]:
    """The modules of ``corpus`` (None: the loop's default corpus, with the
    bundled demo programs) in ``split``, compiled with ``module_flags`` into
    ``cache_dir`` (None: :func:`~mlbridge.gym.modules.default_cache_dir`) by
    ``clang`` (the major that reads them: bitcode is read by the same or a
    newer LLVM only);
    a source that does not compile is left out with a warning;
    with ``max_programs``, those of a fixed sample of the split's programs,
    its projects interleaved (:func:`~mlbridge.corpus.split.interleave_projects`);
    ``validation_aside``: see :func:`mlbridge.corpus.defaults.load_corpus`."""
    from mlbridge.corpus.defaults import default_corpus, load_corpus
    from mlbridge.corpus.split import interleave_projects

    path = Path(corpus) if corpus is not None else default_corpus()
    programs = load_corpus(path, quick, validation_aside)
    if split != "all":
        programs = [p for p in programs if p.split == split]
    if max_programs is not None:
        if max_programs < 1:
            raise ValueError(f"max_programs must be at least 1, got {max_programs!r}")
        programs = interleave_projects(programs, seed=0)[:max_programs]
    cache = Path(cache_dir) if cache_dir is not None else default_cache_dir()
    failed: Dict[str, str] = {}
    modules = prepare_modules(
        programs, cache, clang=clang, module_flags=module_flags, failed=failed
    )
    if failed:
        first = next(iter(failed.values()))
        _LOG.warning(
            "mlbridge.gym: %d of %d sources could not be compiled and are left out; the first: %s",
            len(failed),
            len(failed) + len(modules),
            first[:500],
        )
    return modules


def environment_modules(
    modules: Optional[Sequence[ModuleLike]],
    corpus: Optional[Union[str, os.PathLike]],
    split: str,
    quick: bool,
    cache_dir: Optional[Union[str, os.PathLike]],
    module_flags: Sequence[str] = MODULE_FLAGS,
    max_programs: Optional[int] = None,
    clang: Optional[str] = None,
    validation_aside: bool = False,
) -> Tuple[List[Module], Dict[str, Module]]:
    """An environment's modules (``modules``, else those of the corpus) and
    the same by name. Raises :class:`EnvError` when there is none or two
    share a name."""
    if split not in SPLITS:
        raise ValueError(f"split must be one of {', '.join(SPLITS)}, got {split!r}")
    if modules is None:
        modules = corpus_modules(
            corpus, split, quick, cache_dir, module_flags, max_programs, clang, validation_aside
        )
        if not modules:
            raise EnvError(f"the corpus has no module in the split {split!r}")
    found = [as_module(m) for m in modules]
    if not found:
        raise EnvError("no module given")
    by_name: Dict[str, Module] = {}
    for module in found:
        if module.name in by_name:
            raise EnvError(f"two modules are named {module.name!r}")
        by_name[module.name] = module
    return found, by_name


def start_drawn(
    modules: Sequence[Module],
    by_name: Mapping[str, Module],
    skipped: Dict[str, str],
    name: Optional[str],
    np_random: np.random.Generator,
    start: Callable[[Module], T],
) -> T:
    """``start(module)`` on the module named ``name``, or else on the first
    of one permutation of ``modules`` drawn from ``np_random`` that gives an
    episode.

    ``start`` raises :class:`SkipModule` for a module that gives none: it is
    recorded in ``skipped`` (name -> reason) with a warning, and never tried
    again. The permutation is drawn whatever ``skipped`` holds, so a seed
    gives the same module whatever the environment already knows. Raises
    :class:`EnvError` for an unknown or skipped ``name``, and when no module
    gives an episode.
    """
    if name is not None:
        module = by_name.get(str(name))
        if module is None:
            known = ", ".join(sorted(by_name)[:20])
            raise EnvError(f"no module named {name!r} (modules: {known}...)")
        if module.name in skipped:
            raise EnvError(f"module {module.name} gives no episode: {skipped[module.name]}")
        try:
            return start(module)
        except SkipModule as skip:
            _record_skip(skipped, module, str(skip))
            raise EnvError(f"module {module.name} gives no episode: {skip}") from None
    # One permutation per reset whatever is known about the modules: the
    # first module giving an episode, in the same order for the same seed.
    for index in np_random.permutation(len(modules)):
        module = modules[int(index)]
        if module.name in skipped:
            continue
        try:
            return start(module)
        except SkipModule as skip:
            _record_skip(skipped, module, str(skip))
    reasons = "; ".join(f"{n}: {r}" for n, r in list(skipped.items())[:5])
    raise EnvError(f"no module gives an episode ({len(skipped)} skipped: {reasons})")


def _record_skip(skipped: Dict[str, str], module: Module, reason: str) -> None:
    skipped[module.name] = reason
    _LOG.warning("mlbridge.gym: module %s skipped: %s", module.name, reason)
