"""The inliner of an LLVM without interactive pipes, served through mlbridge's plugin.

LLVM 16 has LLVM's ML inline advisor but not its interactive runner (LLVM 17).
There :func:`mlbridge.llvm.run_compiler` loads mlbridge's inline-advisor
plugin built for that major, whose pipe runner speaks LLVM's protocol on the
same kind of private channel, so the host side is the same as for LLVM's own
interactive mode. Differences a caller sees:

- the plugin computes LLVM's decision itself and sends it as
  ``inlining_default`` where it belongs (LLVM 19's pitfall #1 does not apply);
- its feature list is LLVM 16's (read from the compiler, as always);
- a runner failure in the plugin gives LLVM's default advice for the call site
  and the compilation goes on; it is counted in the plugin's statistics, and
  :func:`mlbridge.llvm.run_compiler` reports it as the run's error. The call
  sites the size cap kept from the policy are read there too.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Dict, List, Optional, Sequence

from mlbridge.llvm.command import compiler_kind
from mlbridge.llvm.plugin_settings import InlinePluginSettings
from mlbridge.llvm.plugin_stats import InlineStats, read_inline_stats
from mlbridge.runner_config import RunnerConfig

#: The plugin's statistics are at most this large (one short line per module).
MAX_STATS_BYTES = 1 << 20


@dataclass(frozen=True)
class PluginChannel:
    """How one compilation reaches the plugin's pipe runner at ``base``."""

    plugin: Path
    base: str
    #: The runner's own deadline, for reaching the channel and for each step.
    wait_ms: int

    @property
    def stats_path(self) -> str:
        return self.base + ".stats.jsonl"

    def command(self, command: Sequence[str]) -> List[str]:
        """``command`` loading the plugin (``-fpass-plugin`` for clang,
        ``-load-pass-plugin`` for opt)."""
        flag = "-fpass-plugin" if compiler_kind(command[0]) == "clang" else "-load-pass-plugin"
        return [command[0], f"{flag}={self.plugin}", *command[1:]]

    def environment(
        self, threshold: Optional[float], defers_when: Optional[str] = None
    ) -> Dict[str, str]:
        """The plugin's settings (its MLBRIDGE_INLINE_* variables): the pipe
        runner on the channel, the statistics file, the size cap
        (``threshold`` as :func:`mlbridge.llvm.size_cap.effective_threshold`
        gives it: None keeps LLVM's) and the call sites where the plugin
        gives LLVM's decision without asking (``defers_when``, one of
        :data:`mlbridge.llvm.plugin_settings.DEFERS_WHEN`; None: none)."""
        return InlinePluginSettings(
            RunnerConfig(
                kind="pipe",
                argument=self.base,
                connect_timeout_ms=self.wait_ms,
                timeout_ms=self.wait_ms,
            ),
            stats=self.stats_path,
            size_increase_threshold=threshold,
            defers_when=defers_when,
        ).environment()

    def stats(self) -> InlineStats:
        """The plugin's statistics of the compilation (none written: zeros)."""
        return read_inline_stats(Path(self.stats_path), MAX_STATS_BYTES)
