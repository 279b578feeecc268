"""What the MLIR tiling pass is told, as one value.

:class:`TilingPassSettings` holds the pass's options (src/mlir/TilingPass.cpp
declares them; docs/mlir-plugin.md) and prints them the two ways the pass
reads them (:class:`mlbridge.session.plugin_settings.PluginSettings`): its
pass options (``mlbridge-tile{runner=... log=...}``, one argument, for
:meth:`pipeline`) and its ``MLBRIDGE_MLIR_<KEY>`` variables.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Dict, Optional

from mlbridge.session.plugin_settings import TILING_PASS, PluginSettings

__all__ = ["TilingPassSettings"]


@dataclass(frozen=True)
class TilingPassSettings(PluginSettings):
    """The pass's options for one run of ``mlir-opt``."""

    interface = TILING_PASS

    #: The runner the pass makes (a runner configuration, docs/runners.md);
    #: None: the pass's own tile sizes.
    runner: Optional[str] = None
    #: Where the pass writes its tiling log (one line per operation).
    log: Optional[str] = None
    #: Where it appends its statistics records (docs/run-stats.md).
    stats: Optional[str] = None

    def values(self) -> Dict[str, str]:
        """The options set, by key, as the pass reads them."""
        return self.given(runner=self.runner, log=self.log, stats=self.stats)

    def pipeline(self) -> str:
        """The pass pipeline that runs the pass with these options
        (``mlir-opt --pass-pipeline=...``); ValueError when an option's
        value cannot be written as a pass option."""
        return "builtin.module(" + self.arguments()[0] + ")"
