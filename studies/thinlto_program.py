"""One program of a corpus project, as its build links it, built file by file
and with ThinLTO: what ``thinlto_search.py`` and ``thinlto_deploy.py`` share.

A program is named by its objects (``main.o screen.o ...``, each the stem of
one single-source unit of the project plus ``.o``) and the libraries it links.
"""

from __future__ import annotations

import shlex
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Dict, List, Mapping, Optional, Sequence

from mlbridge import child_process
from mlbridge.corpus import load_corpus
from mlbridge.corpus.program import Program
from mlbridge.llvm.versions import LlvmTools
from mlbridge.session import ToolError, run_tool


def run(command: Sequence[str], env: Optional[Mapping[str, str]] = None) -> None:
    """Runs ``command`` (with ``env`` added to this environment without the
    plugins' variables); a failure ends the study with its stderr."""
    try:
        run_tool(
            command,
            timeout=1800,
            what=" ".join(command),
            tail=3000,
            env=child_process.child_environment(env),
        )
    except ToolError as err:
        raise SystemExit(str(err)) from None


@dataclass
class LinkedProgram:
    """The program ``name`` of ``project``: its ``objects``, in link order,
    each made from one unit, and the ``libs`` it links (``-lm`` ...);
    ``shared`` links a shared library instead of an executable."""

    llvm: LlvmTools
    name: str
    units: Dict[str, Program]
    objects: List[str]
    libs: List[str] = field(default_factory=list)
    shared: bool = False

    @classmethod
    def of(
        cls,
        corpus: Path,
        project: str,
        name: str,
        objects: str,
        libs: str,
        llvm: LlvmTools,
        shared: bool = False,
        under: Sequence[str] = (),
    ) -> "LinkedProgram":
        """The program of every unit of ``project`` in ``corpus`` whose
        source is in a directory ending with one of ``under`` (``lib``,
        ``src/lib``), then of ``objects`` (space-separated names, each made
        by one unit of the project); ends the tool when an object has no
        unit or two."""
        found: Dict[str, List[Program]] = {}
        chosen: Dict[str, List[Program]] = {}
        suffixes = tuple("/" + d.strip("/") for d in under)
        for p in load_corpus(corpus):
            if p.project == project and len(p.sources) == 1:
                obj = f"{p.sources[0].stem}.o"
                found.setdefault(obj, []).append(p)
                if suffixes and p.sources[0].parent.as_posix().endswith(suffixes):
                    chosen.setdefault(obj, []).append(p)
        for obj in objects.split():
            if obj not in chosen:
                # Named alone: the project's one unit of that name.
                chosen[obj] = list(found.get(obj, []))
        missing = [o for o, units in chosen.items() if len(units) != 1]
        if missing or not chosen:
            raise SystemExit(f"not exactly one unit of {project} makes {missing or 'a program'}")
        wanted = list(chosen)
        units = {o: chosen[o][0] for o in wanted}
        return cls(llvm, name, units, wanted, shlex.split(libs), shared)

    def build(self, where: Path, *extra: str, env: Optional[Mapping[str, str]] = None) -> None:
        """Compiles every object into ``where`` with ``clang -Oz`` and
        ``extra`` flags, two at a time."""
        where.mkdir(parents=True, exist_ok=True)

        def one(obj: str) -> None:
            unit = self.units[obj]
            run([self.llvm.clang, "-Oz", *extra, "-c", "-w", *unit.flags, str(unit.sources[0]),
                 "-o", str(where / obj)], env)  # fmt: skip

        with ThreadPoolExecutor(2) as pool:
            list(pool.map(one, self.objects))

    def link(
        self,
        where: Path,
        *extra: str,
        env: Optional[Mapping[str, str]] = None,
        out: Optional[Path] = None,
    ) -> Path:
        """Links the objects in ``where`` with lld and ``extra`` flags into
        ``out`` (default: the program's name in ``where``)."""
        out = out or where / self.name
        shared = ["-shared"] if self.shared else []
        run([self.llvm.clang, "-fuse-ld=lld", *shared, *extra, "-o", str(out),
             *(str(where / o) for o in self.objects), *self.libs], env)  # fmt: skip
        return out
