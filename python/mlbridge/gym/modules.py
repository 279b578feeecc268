"""The modules of the environments: one episode works on one LLVM module.

A corpus (:mod:`mlbridge.corpus`, any format) is made of programs, each of
one or more sources. Every source becomes one module: LLVM bitcode as clang
emits it for ``-Oz`` before any optimisation (``-Oz -Xclang
-disable-llvm-passes``: no ``optnone``, so every pass may still run), cached
by the hash of its content, flags and compiler. Bitcode sources are used as
they are; textual IR is assembled the same way as C.

Processes sharing a cache (the rollout workers of one machine) make each
module once: a module is compiled under a lock, one of 256 in the cache's
``.locks/`` chosen by its key, and whoever waited finds it made.
"""

from __future__ import annotations

import fcntl
import hashlib
import os
import time
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Dict, Iterator, List, Optional, Sequence, Tuple, Union

from mlbridge.corpus.program import Program
from mlbridge.errors import CorpusError
from mlbridge.llvm.versions import tools
from mlbridge.session import ToolError, run_tool

#: The flags that make a module ready for a size pipeline, not yet optimised.
MODULE_FLAGS = ("-Oz", "-Xclang", "-disable-llvm-passes", "-emit-llvm", "-c", "-w")
#: The flags that make a module ready for code generation: optimised by
#: clang's -O2 pipeline (for problems of the back end).
OPTIMIZED_MODULE_FLAGS = ("-O2", "-emit-llvm", "-c", "-w")


def module_flags(optimized: bool) -> Tuple[str, ...]:
    """The flags making a problem's modules (``OptimizedModules``)."""
    return OPTIMIZED_MODULE_FLAGS if optimized else MODULE_FLAGS


#: Longest a source may take to become a module.
COMPILE_TIMEOUT = 300.0
#: Longest a process waits for another that makes a module of the same lock.
LOCK_WAIT = COMPILE_TIMEOUT + 10.0


class ModuleError(CorpusError):
    """A source of the corpus could not be made into a module."""


@dataclass(frozen=True)
class Module:
    """One module of a corpus: ``name`` is ``PROGRAM`` for a one-source
    program, ``PROGRAM/SOURCE`` otherwise; ``split`` is the program's."""

    name: str
    bitcode: Path
    program: str
    split: str
    flags: Tuple[str, ...] = ()

    def codegen_flags(self) -> List[str]:
        """The program's options that still matter when compiling the
        module (``-f*``, ``-m*``): the preprocessor's and the language's
        (``-D``, ``-I``, ``-x``...) are applied in the bitcode already, and
        ``-x c`` would make clang read the bitcode as C."""
        return [f for f in self.flags if f.startswith(("-f", "-m")) and f != "-mllvm"]


def module_name(program: Program, source: Path) -> str:
    """The name of ``source``'s module: its program's name, with the
    source's for a program of several."""
    return program.name if len(program.sources) == 1 else f"{program.name}/{source.name}"


def _cache_key(source: Path, flags: Sequence[str], clang: str, module_flags: Sequence[str]) -> str:
    digest = hashlib.sha256()
    digest.update(source.read_bytes())
    digest.update("\0".join([clang, *module_flags, *flags]).encode())
    return digest.hexdigest()[:24]


@contextmanager
def _cache_lock(cache_dir: Path, key: str) -> Iterator[None]:
    """Holds the cache's lock for ``key`` (shared by 1/256 of the keys),
    waiting at most :data:`LOCK_WAIT` seconds for it; past that, goes on
    without it (the module is written by an atomic rename either way)."""
    locks = cache_dir / ".locks"
    try:
        locks.mkdir(mode=0o700, exist_ok=True)
        fd = os.open(locks / f"{key[:2]}.lock", os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW, 0o600)
    except OSError:  # not a place for a lock (read-only, a link): go on without
        yield
        return
    try:
        deadline, delay = time.monotonic() + LOCK_WAIT, 0.01
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if time.monotonic() >= deadline:
                    break
                time.sleep(delay)
                delay = min(2 * delay, 0.25)
        yield
    finally:
        os.close(fd)  # releases the lock


def _compile(
    name: str,
    source: Path,
    flags: Sequence[str],
    out: Path,
    clang: str,
    module_flags: Sequence[str],
) -> None:
    """Makes ``source`` the module ``out`` (through a temporary file renamed over it)."""
    tmp = out.with_name(f"{out.name}.{os.getpid()}.tmp")
    command = [clang, *module_flags, *flags, str(source), "-o", str(tmp)]
    try:
        run_tool(command, timeout=COMPILE_TIMEOUT, tail=1000)
    except ToolError as err:
        tmp.unlink(missing_ok=True)
        raise ModuleError(f"{name}: {err}") from None
    os.replace(tmp, out)


def _prepare_one(
    program: Program, source: Path, cache_dir: Path, clang: str, module_flags: Sequence[str]
) -> Module:
    name = module_name(program, source)
    if source.suffix == ".bc":
        return Module(name, source, program.name, program.split, program.flags)
    try:
        key = _cache_key(source, program.flags, clang, module_flags)
    except OSError as err:
        raise ModuleError(f"{name}: cannot read {source}: {err.strerror or err}") from None
    out = cache_dir / f"{key}.bc"
    if not out.is_file():
        with _cache_lock(cache_dir, key):
            if not out.is_file():  # made while this process waited
                _compile(name, source, program.flags, out, clang, module_flags)
    return Module(name, out, program.name, program.split, program.flags)


def prepare_modules(
    programs: Sequence[Program],
    cache_dir: Path,
    *,
    clang: Optional[str] = None,
    jobs: Optional[int] = None,
    module_flags: Sequence[str] = MODULE_FLAGS,
    failed: Optional[Dict[str, str]] = None,
) -> List[Module]:
    """The modules of ``programs`` in order, compiled by ``clang`` (default:
    that of :func:`mlbridge.llvm.versions.tools`) with ``module_flags`` into
    ``cache_dir`` when not already there. Raises :class:`ModuleError`
    naming the first source that fails; with ``failed``, records each
    failing source there instead (module name -> why) and leaves it out."""
    compiler = clang or tools().clang
    cache_dir.mkdir(parents=True, exist_ok=True)
    work = [(p, s) for p in programs for s in p.sources]

    def prepare(item: Tuple[Program, Path]) -> Union[Module, ModuleError]:
        try:
            return _prepare_one(item[0], item[1], cache_dir, compiler, module_flags)
        except ModuleError as err:
            if failed is None:
                raise
            return err

    with ThreadPoolExecutor(max_workers=jobs or min(4, os.cpu_count() or 1)) as pool:
        results = list(pool.map(prepare, work))
    modules = []
    for (program, source), result in zip(work, results):
        if isinstance(result, ModuleError):
            assert failed is not None
            failed[module_name(program, source)] = str(result)
        else:
            modules.append(result)
    return modules


def default_cache_dir() -> Path:
    """Where modules are cached: ``$MLBRIDGE_CACHE/modules``, else
    ``$XDG_CACHE_HOME/mlbridge/modules``, else ``~/.cache/mlbridge/modules``."""
    if os.environ.get("MLBRIDGE_CACHE"):
        return Path(os.environ["MLBRIDGE_CACHE"]) / "modules"
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "mlbridge" / "modules"
