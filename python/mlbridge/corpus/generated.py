"""Corpora of generated programs: csmith's random C programs (runnable, each
printing a checksum of its global state) and llvm-stress's random LLVM IR
modules (compile-only robustness input), as CompilerGym's generator datasets.

:func:`generate_corpus` writes ``count`` programs of one generator into a
directory, program ``i`` made from the seed :func:`program_seed` derives
from the corpus's seed and ``i``, so that a corpus is the same for the same
seed and generator version, and any program can be made again alone. It
writes ``generated.json`` (generator, its version, seed, count, each
program's file and seed) and, for a generator whose programs include a
runtime header (csmith's), ``compile_commands.json``, so that every reader
of corpora (docs/corpus.md) compiles the programs with its directory. Running it again on the same
directory keeps the programs already written: an interrupted generation
resumes.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Dict, Iterable, List, Optional, Tuple

from mlbridge.errors import CorpusError
from mlbridge.input_files import read_regular_file
from mlbridge.jsontext import load_json
from mlbridge.session import ToolError, run_tool

__all__ = [
    "CSMITH_INCLUDE",
    "GENERATORS",
    "MANIFEST",
    "Generator",
    "generate_corpus",
    "program_seed",
    "read_manifest",
]

#: The file describing a generated corpus.
MANIFEST = "generated.json"
#: Where Debian's libcsmith-dev puts csmith's runtime header (csmith.h).
CSMITH_INCLUDE = Path("/usr/include/csmith")
#: Seconds one program's generation may take.
GENERATE_TIMEOUT = 120.0
#: The most programs one corpus holds.
MAX_COUNT = 1_000_000
#: The largest manifest read back.
_MAX_MANIFEST_BYTES = 256 << 20


@dataclass(frozen=True)
class Generator:
    """A program generator: its command and how it makes one program."""

    name: str
    #: The program run (a Debian package's).
    program: str
    #: The suffix of the files it writes.
    suffix: str
    #: Whether its programs run and print what they computed (a
    #: differential check compares it); else they are compiled only.
    runnable: bool
    #: (program, seed) -> the command that prints one program on stdout
    #: (not into a file, whose name the program would then record).
    command: Callable[[str, int], List[str]]
    #: The Debian packages that provide it.
    packages: Tuple[str, ...]
    #: The runtime header its programs include (its directory goes into
    #: the corpus's ``compile_commands.json``); None: they include none.
    header: Optional[Path] = None

    def missing(self) -> Optional[str]:
        """What is not installed for it to work (None: nothing)."""
        debian = f"(Debian: apt-get install {' '.join(self.packages)})"
        if shutil.which(self.program) is None:
            return f"{self.program} is not installed {debian}"
        if self.header is not None and not self.header.is_file():
            return f"{self.header} is missing {debian}"
        return None

    def version(self) -> str:
        """The generator's version line (``--version``), recorded in the
        manifest: the same seed makes the same program only with the same
        version."""
        done = run_tool([self.program, "--version"], timeout=GENERATE_TIMEOUT)
        lines = [line.strip() for line in (done.stdout + done.stderr).splitlines()]
        return next((line for line in lines if line), "unknown")


def _csmith(program: str, seed: int) -> List[str]:
    return [program, "--seed", str(seed)]


def _llvm_stress(program: str, seed: int) -> List[str]:
    return [program, f"--seed={seed}", "--size=200"]


#: The generators, by name.
GENERATORS: Dict[str, Generator] = {
    "csmith": Generator(
        "csmith",
        "csmith",
        ".c",
        True,
        _csmith,
        ("csmith", "libcsmith-dev"),
        CSMITH_INCLUDE / "csmith.h",
    ),
    "llvm-stress": Generator(
        "llvm-stress", "llvm-stress-19", ".ll", False, _llvm_stress, ("llvm-19",)
    ),
}


def program_seed(seed: int, index: int) -> int:
    """The generator's seed of program ``index`` of a corpus of seed
    ``seed``: 31 bits of SHA-256 of both, so that neighbouring corpora
    share no program and every program can be made again alone."""
    digest = hashlib.sha256(f"mlbridge-generated:{seed}:{index}".encode()).digest()
    return int.from_bytes(digest[:4], "big") & 0x7FFFFFFF


def _file_name(generator: Generator, index: int) -> str:
    return f"{generator.name}-{index:06d}{generator.suffix}"


def _compile_commands(directory: Path, files: Iterable[str], header: Path) -> List[Dict[str, Any]]:
    """The compilation database of programs that include ``header``: C99."""
    return [
        {
            "directory": str(directory),
            "file": name,
            "arguments": ["cc", "-std=c99", f"-I{header.parent}", "-c", name],
        }
        for name in files
    ]


def _write_json(path: Path, value: Any) -> None:
    partial = path.with_name(path.name + ".partial")
    partial.write_text(json.dumps(value, indent=1) + "\n")
    os.replace(partial, path)


def read_manifest(directory: Path) -> Dict[str, Any]:
    """The manifest of the generated corpus in ``directory`` (CorpusError
    when there is none or it is not one)."""
    path = directory / MANIFEST
    if not path.is_file():
        raise CorpusError(f"{directory} is not a generated corpus (no {MANIFEST})")
    data = read_regular_file(path, _MAX_MANIFEST_BYTES, CorpusError)
    manifest = load_json(data, str(path), CorpusError)
    programs = manifest.get("programs")
    if manifest.get("generator") not in GENERATORS or not isinstance(programs, list):
        raise CorpusError(f"{path}: not a manifest of a generated corpus")
    for entry in programs:
        if (
            not isinstance(entry, dict)
            or not isinstance(entry.get("file"), str)
            or not isinstance(entry.get("seed"), int)
            or os.sep in entry["file"]
            or entry["file"].startswith(".")
        ):
            raise CorpusError(f"{path}: a program entry is not {{file, seed}} of this directory")
    return manifest


def generate_corpus(
    generator: str,
    out: Path,
    count: int,
    seed: int,
    *,
    progress: Optional[Callable[[int, int], None]] = None,
) -> Dict[str, Any]:
    """Writes ``count`` programs of ``generator`` (one of
    :data:`GENERATORS`) into ``out`` and returns the manifest (see the
    module's docstring). Programs already there from the same generator
    and seed are kept. ``progress(done, count)`` is called after each."""
    try:
        gen = GENERATORS[generator]
    except KeyError:
        raise ValueError(
            f"generator must be one of {', '.join(GENERATORS)}, got {generator!r}"
        ) from None
    if isinstance(count, bool) or not isinstance(count, int) or not 1 <= count <= MAX_COUNT:
        raise ValueError(f"count must be a whole number in [1, {MAX_COUNT}], got {count!r}")
    if isinstance(seed, bool) or not isinstance(seed, int) or seed < 0:
        raise ValueError(f"seed must be a whole number >= 0, got {seed!r}")
    missing = gen.missing()
    if missing is not None:
        raise CorpusError(missing)
    out.mkdir(parents=True, exist_ok=True)
    if (out / MANIFEST).exists():
        before = read_manifest(out)
        if (before["generator"], before.get("seed")) != (gen.name, seed):
            raise CorpusError(
                f"{out} holds the {before['generator']} corpus of seed {before.get('seed')}, "
                f"not {gen.name} of seed {seed}: give another directory"
            )
    version = gen.version()
    entries: List[Dict[str, Any]] = []
    files: List[str] = []
    for index in range(count):
        name, program_seed_ = _file_name(gen, index), program_seed(seed, index)
        path = out / name
        if not path.is_file():
            try:
                done = run_tool(
                    gen.command(gen.program, program_seed_),
                    timeout=GENERATE_TIMEOUT,
                    what=f"{gen.program} (seed {program_seed_})",
                )
            except ToolError as err:
                raise CorpusError(str(err)) from None
            partial = out / f".{name}.partial"
            partial.write_text(done.stdout)
            os.replace(partial, path)
        entries.append({"file": name, "seed": program_seed_})
        files.append(name)
        if progress is not None:
            progress(index + 1, count)
    manifest = {
        "generator": gen.name,
        "version": version,
        "seed": seed,
        "count": count,
        "runnable": gen.runnable,
        "programs": entries,
    }
    if gen.header is not None:
        compdb = _compile_commands(out.resolve(), files, gen.header)
        _write_json(out / "compile_commands.json", compdb)
    _write_json(out / MANIFEST, manifest)
    return manifest
