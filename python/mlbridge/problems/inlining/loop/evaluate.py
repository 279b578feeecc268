"""Step 5: deploy the policy inside clang through the plugin and measure
it against plain ``-Oz`` on every program: ``.text`` size, decision
agreement with LLVM, compile CPU time of each configuration:

- ``oz``: plain clang -Oz (no plugin);
- ``baseline``: the plugin with the same features and no model (the
  ``default`` runner answers LLVM's own decision): the cost of everything but
  inference;
- ``aot``: the policy compiled by mlbridge-aot, in-process;
- ``onnx``: the same policy run by ONNX Runtime, in-process;
- ``pipe``: the same policy served over pipes by ``mlbridge serve``.

Every plugin configuration computes LLVM's decision too (to count
agreement), so they all extract the same features and do the same work
besides the model."""

from __future__ import annotations

import sys
import tempfile
import time
from contextlib import contextmanager
from pathlib import Path
from typing import Callable, Dict, Iterator, List, Optional, Sequence

from mlbridge.corpus.program import Program
from mlbridge.errors import MlbridgeError
from mlbridge.llvm.plugin_settings import InlinePluginSettings
from mlbridge.llvm.versions import LlvmTools
from mlbridge.problems.inlining.toolchain import Plugin, ProgramResult, compile_all
from mlbridge.runner_config import RunnerConfig
from mlbridge.session import CompilerSession

CONFIGURATIONS = ("oz", "baseline", "aot", "onnx", "pipe")


def plugin_for(
    configuration: str,
    plugin: Path,
    onnx_model: Path,
    aot_module: Path,
    channel: Optional[str] = None,
) -> Optional[Plugin]:
    """The plugin set-up of one of CONFIGURATIONS (None: plain ``-Oz``)."""
    runners = {
        "baseline": RunnerConfig(kind="echo", argument="inlining_default"),
        "aot": RunnerConfig(kind="aot", argument=str(aot_module)),
        "onnx": RunnerConfig(kind="onnx", argument=str(onnx_model)),
        "pipe": RunnerConfig(kind="pipe", argument=str(channel)),
    }
    if configuration == "oz":
        return None
    if configuration not in runners:
        raise ValueError(f"unknown configuration {configuration}")
    settings = InlinePluginSettings(runners[configuration], compare_default=True)
    return Plugin(plugin, settings.environment())


def evaluate(
    programs: Sequence[Program],
    out_dir: Path,
    plugin: Path,
    onnx_model: Path,
    aot_module: Path,
    configurations: Sequence[str] = CONFIGURATIONS,
    jobs: int = 2,
    repeats: int = 1,
    plugin_env: Optional[Dict[str, str]] = None,
    progress: Optional[Callable[[int, int, str], None]] = None,
    llvm: Optional[LlvmTools] = None,
) -> Dict[str, List[ProgramResult]]:
    """Compiles ``programs`` under each configuration, one configuration at a
    time (the CPU times do not mix), ``repeats`` rounds through all of them;
    sizes and decisions come from the first round (they are deterministic),
    each program's compile time is its fastest round."""
    results: Dict[str, List[ProgramResult]] = {}
    total = repeats * len(configurations)
    for round_ in range(repeats):
        for k, configuration in enumerate(configurations):

            def step(done: int, count: int, name: str, at=round_ * len(configurations) + k) -> None:
                if progress:
                    progress(at, total, f"{configuration} {name}".strip())

            if configuration == "pipe":
                measured = _with_pipe_server(
                    programs,
                    out_dir / configuration,
                    plugin,
                    onnx_model,
                    aot_module,
                    plugin_env,
                    step,
                    llvm,
                )
            else:
                p = plugin_for(configuration, plugin, onnx_model, aot_module)
                if p is not None:
                    p.env.update(plugin_env or {})
                measured = compile_all(programs, out_dir / configuration, p, jobs, step, llvm=llvm)
            if configuration not in results:
                results[configuration] = measured
                continue
            for best, new in zip(results[configuration], measured):
                best.cpu_seconds = min(best.cpu_seconds, new.cpu_seconds)
                best.wall_seconds = min(best.wall_seconds, new.wall_seconds)
    if progress:
        progress(total, total, "")
    return results


def _with_pipe_server(
    programs: Sequence[Program],
    out_dir: Path,
    plugin: Path,
    onnx_model: Path,
    aot_module: Path,
    plugin_env: Optional[Dict[str, str]],
    step: Callable[[int, int, str], None],
    llvm: Optional[LlvmTools],
) -> List[ProgramResult]:
    """The pipe configuration: one `mlbridge serve` serving the ONNX policy
    to every compilation in turn (so compilations run one at a time)."""
    with tempfile.TemporaryDirectory() as tmp:
        base = str(Path(tmp) / "inline")
        command = [
            sys.executable,
            "-m",
            "mlbridge",
            "serve",
            "--pipe",
            base,
            "--create",
            "--policy",
            str(onnx_model),
            "--sessions",
            "0",
        ]
        with pipe_server(command, base):
            p = plugin_for("pipe", plugin, onnx_model, aot_module, base)
            assert p is not None
            p.env.update(plugin_env or {})
            return compile_all(programs, out_dir, p, jobs=1, progress=step, llvm=llvm)


@contextmanager
def pipe_server(
    command: Sequence[str], base: str, ready_timeout: float = 30.0
) -> Iterator[CompilerSession]:
    """Run ``command``, a server that creates the FIFOs ``base``.in and ``base``.out.

    Yields its session once both FIFOs exist; stops and reaps it on leaving,
    whatever happens. When it exits or ``ready_timeout`` seconds pass without
    the FIFOs, it is stopped *before* the end of its stderr is read (a
    thread of the session reads it all along, so neither side can block on
    it), and MlbridgeError carries that end.
    """
    with CompilerSession(list(command)) as server:  # leaving it stops the server
        _await_fifos(server, base, ready_timeout)
        yield server


def _await_fifos(server: CompilerSession, base: str, ready_timeout: float) -> None:
    """Returns once ``server`` made ``base``.in and ``base``.out; when it
    exits or ``ready_timeout`` passes, stops it and raises MlbridgeError
    with the end of its stderr."""
    deadline = time.monotonic() + ready_timeout
    while not (Path(base + ".in").exists() and Path(base + ".out").exists()):
        exited = server.poll() is not None
        if exited or time.monotonic() > deadline:
            server.stop()
            why = (
                f"exited with status {server.returncode}"
                if exited
                else f"was still running after {ready_timeout:g} s"
            )
            raise MlbridgeError(
                f"mlbridge serve did not create its FIFOs ({why}): {server.tail(1000)}"
            )
        time.sleep(0.05)
