"""Compiling the corpus with stock clang (of one LLVM major, 16 or 19), with
or without the mlbridge-inline-advisor plugin built for it, and measuring
what came out: code bytes per object (``.text``, split by COMDAT group, from the
object's section headers), compile CPU time, and the
plugin's decision statistics. Sources are C (or C++) files or LLVM
bitcode/IR (``.bc``, ``.ll``), compiled alike (``-Oz -c``): clang reads IR
by its suffix."""

from __future__ import annotations

import resource
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Dict, List, Mapping, Optional, Sequence, Tuple

from mlbridge import child_process
from mlbridge.corpus.program import Program
from mlbridge.errors import MlbridgeError
from mlbridge.llvm.outcomes import CodeBytes, allocated_bytes, code_bytes
from mlbridge.llvm.plugin_settings import InlinePluginSettings
from mlbridge.llvm.plugin_stats import read_inline_stats
from mlbridge.llvm.versions import LlvmTools, tools
from mlbridge.runner_config import RunnerConfig
from mlbridge.session import run_tool
from mlbridge.session.plugin_settings import INLINE_ADVISOR

OPT_LEVEL = "-Oz"


@dataclass
class Plugin:
    """How clang loads the plugin and what the plugin is told (its
    MLBRIDGE_* environment variables)."""

    path: Path
    env: Dict[str, str] = field(default_factory=dict)

    def flags(self) -> List[str]:
        # -fplugin too, so that clang accepts the plugin's -mllvm options.
        return [f"-fpass-plugin={self.path}", f"-fplugin={self.path}"]


def onnx_plugin(path: Path, model: Path, env: Optional[Mapping[str, str]] = None) -> Plugin:
    """The plugin running ``model`` in-process under ONNX Runtime, with the
    extra environment ``env``."""
    settings = InlinePluginSettings(RunnerConfig(kind="onnx", argument=str(model)))
    return Plugin(path, {**settings.environment(), **(env or {})})


@dataclass
class ProgramResult:
    """One program compiled under one configuration: ``text_bytes`` is the
    sum of its objects' code, ``allocated_bytes`` of the bytes their sections
    occupy in the loaded image (:func:`~mlbridge.llvm.outcomes.allocated_bytes`),
    ``code`` each object's code (in source order)."""

    program: str
    text_bytes: int
    cpu_seconds: float
    wall_seconds: float
    decisions: int = 0
    inlined: int = 0
    fallbacks: int = 0
    compared: int = 0
    agreed: int = 0
    #: Modules (one compiler process each) that asked the model at least once.
    deciding: int = 0
    code: Tuple[CodeBytes, ...] = ()
    allocated_bytes: int = 0

    def figures(self) -> Dict[str, Any]:
        """Its fields for a report, all but the objects' ``code``."""
        return {k: v for k, v in asdict(self).items() if k != "code"}

    @property
    def agreement(self) -> Optional[float]:
        return self.agreed / self.compared if self.compared else None


def _children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def object_path(out_dir: Path, source: Path) -> Path:
    """Where :func:`compile_program` puts the object of ``source`` (``x.c``
    and ``x.ll`` may both be sources of one program)."""
    return out_dir / (f"{source.stem}.o" if source.suffix == ".c" else f"{source.name}.o")


def compile_program(
    program: Program,
    out_dir: Path,
    plugin: Optional[Plugin] = None,
    jobs: int = 2,
    extra_env: Optional[Mapping[str, str]] = None,
    timeout: float = 600,
    llvm: Optional[LlvmTools] = None,
) -> ProgramResult:
    """Compiles every source of ``program`` to an object in ``out_dir`` with
    the clang of ``llvm`` (default: :func:`mlbridge.llvm.versions.tools`) and
    measures it. clang's environment is this process's without the plugins'
    variables, then ``extra_env`` and the plugin's settings. Raises
    MlbridgeError when a compilation fails."""
    llvm = llvm or tools()
    out_dir.mkdir(parents=True, exist_ok=True)
    settings = dict(extra_env or {})
    with tempfile.TemporaryDirectory() as tmp:
        stats = Path(tmp) / "stats.jsonl"
        if plugin is not None:
            settings.update(plugin.env)
            settings[INLINE_ADVISOR.variable("stats")] = str(stats)
        env = child_process.child_environment(settings)

        def one(source: Path) -> Path:
            obj = object_path(out_dir, source)
            command = [
                llvm.clang,
                OPT_LEVEL,
                "-c",
                "-w",
                *program.flags,
                *(plugin.flags() if plugin else []),
                str(source),
                "-o",
                str(obj),
            ]
            run_tool(command, timeout=timeout, env=env, what=f"{program.name}: {' '.join(command)}")
            return obj

        cpu, wall = _children_cpu(), time.monotonic()
        with ThreadPoolExecutor(max_workers=max(1, jobs)) as pool:
            objects = list(pool.map(one, program.sources))
        cpu, wall = _children_cpu() - cpu, time.monotonic() - wall
        counts = read_inline_stats(stats)
    if plugin is not None and counts.modules < len(objects):
        # Measuring LLVM's decisions as the model's would be a silent lie.
        raise MlbridgeError(
            f"{program.name}: the plugin served {counts.modules} of {len(objects)} modules: "
            "its runner could not be created (clang's stderr says why), or clang did not "
            "load it (clang-19 loads no pass plugin into a distributed ThinLTO backend, "
            "-fthinlto-index=: deploy in ThinLTO builds through lld, "
            "-Wl,--load-pass-plugin=PLUGIN; docs/llvm-plugin.md)"
        )
    code = tuple(code_bytes(str(o)) for o in objects)
    return ProgramResult(
        program.name,
        sum(c.total for c in code),
        cpu,
        wall,
        counts.decisions,
        counts.inlined,
        counts.fallbacks,
        counts.compared,
        counts.agreed,
        counts.deciding,
        code,
        sum(allocated_bytes(str(o)) for o in objects),
    )


def compile_all(
    programs: Sequence[Program],
    out_dir: Path,
    plugin: Optional[Plugin] = None,
    jobs: int = 2,
    progress=None,
    **kwargs,
) -> List[ProgramResult]:
    """compile_program() for each program (``progress(done, total, name)``)."""
    results = []
    for i, program in enumerate(programs):
        if progress:
            progress(i, len(programs), program.name)
        results.append(compile_program(program, out_dir / program.dirname, plugin, jobs, **kwargs))
    if progress:
        progress(len(programs), len(programs), "")
    return results
