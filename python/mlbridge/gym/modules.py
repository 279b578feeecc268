"""The modules of the environments: one episode works on one LLVM module.

A corpus (:mod:`mlbridge.corpus`, any format) is made of programs, each of
one or more sources. Every source becomes one module: LLVM bitcode as clang
emits it for ``-Oz`` before any optimisation (``-Oz -Xclang
-disable-llvm-passes``: no ``optnone``, so every pass may still run), cached
by the hash of its content, flags and compiler. Bitcode sources are used as
they are; textual IR is assembled the same way as C.
"""

from __future__ import annotations

import hashlib
import os
import subprocess
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Dict, List, Optional, Sequence, Tuple, Union

from mlbridge import child_process
from mlbridge.corpus.program import Program
from mlbridge.errors import CorpusError
from mlbridge.llvm.versions import tools

#: The flags that make a module ready for a size pipeline, not yet optimised.
MODULE_FLAGS = ("-Oz", "-Xclang", "-disable-llvm-passes", "-emit-llvm", "-c", "-w")
#: The flags that make a module ready for code generation: optimised by
#: clang's -O2 pipeline (for problems of the back end).
OPTIMIZED_MODULE_FLAGS = ("-O2", "-emit-llvm", "-c", "-w")


def module_flags(optimized: bool) -> Tuple[str, ...]:
    """The flags making a problem's modules (``Problem.optimized_modules``)."""
    return OPTIMIZED_MODULE_FLAGS if optimized else MODULE_FLAGS


#: Longest a source may take to become a module.
COMPILE_TIMEOUT = 300.0


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


def _module_name(program: Program, source: Path) -> str:
    return program.name if len(program.sources) == 1 else f"{program.name}/{source.name}"


def _cache_key(source: Path, flags: Sequence[str], clang: str, module_flags: Sequence[str]) -> str:
    digest = hashlib.sha256()
    digest.update(source.read_bytes())
    digest.update("\0".join([clang, *module_flags, *flags]).encode())
    return digest.hexdigest()[:24]


def _prepare_one(
    program: Program, source: Path, cache_dir: Path, clang: str, module_flags: Sequence[str]
) -> Module:
    name = _module_name(program, source)
    if source.suffix == ".bc":
        return Module(name, source, program.name, program.split, program.flags)
    try:
        key = _cache_key(source, program.flags, clang, module_flags)
    except OSError as err:
        raise ModuleError(f"{name}: cannot read {source}: {err.strerror or err}") from None
    out = cache_dir / f"{key}.bc"
    if not out.is_file():
        tmp = out.with_name(f"{out.name}.{os.getpid()}.tmp")
        command = [clang, *module_flags, *program.flags, str(source), "-o", str(tmp)]
        try:
            done = child_process.run(
                command,
                stdin=subprocess.DEVNULL,
                capture_output=True,
                text=True,
                timeout=COMPILE_TIMEOUT,
            )
        except subprocess.TimeoutExpired:
            tmp.unlink(missing_ok=True)
            raise ModuleError(f"{name}: {clang} took more than {COMPILE_TIMEOUT:g} s") from None
        if done.returncode != 0:
            tmp.unlink(missing_ok=True)
            raise ModuleError(f"{name}: {clang} failed ({done.returncode}): {done.stderr[-1000:]}")
        os.replace(tmp, out)
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
            failed[_module_name(program, source)] = str(result)
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
