"""What the GCC unroll plugin is told, as one value.

:class:`GccPluginSettings` holds the plugin's options (src/gcc/PluginOptions.cpp
declares them; docs/gcc-plugin.md) and prints them the two ways the plugin
reads them (:class:`mlbridge.session.plugin_settings.PluginSettings`): its
``-fplugin-arg-mlbridge_gcc-<key>`` arguments and its ``MLBRIDGE_GCC_<KEY>``
variables.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Dict, Optional

from mlbridge.session.plugin_settings import GCC_PLUGIN, PluginSettings

__all__ = ["MAX_UNROLL_LIMIT", "GccPluginSettings"]

#: The largest ``max-unroll`` the plugin takes (src/gcc/PluginOptions.h).
MAX_UNROLL_LIMIT = 1024


@dataclass(frozen=True)
class GccPluginSettings(PluginSettings):
    """The plugin's options for one compilation."""

    interface = GCC_PLUGIN

    #: The runner the plugin makes (a runner configuration, docs/runners.md);
    #: None: GCC decides every loop.
    runner: Optional[str] = None
    #: Where the plugin writes its decision log (one line per loop).
    log: Optional[str] = None
    #: Where it appends its statistics records (docs/run-stats.md).
    stats: Optional[str] = None
    #: The largest factor applied (None: the plugin's own, 16).
    max_unroll: Optional[int] = None

    def __post_init__(self) -> None:
        limit = self.max_unroll
        if limit is not None and (
            isinstance(limit, bool)
            or not isinstance(limit, int)
            or not 1 <= limit <= MAX_UNROLL_LIMIT
        ):
            raise ValueError(
                f"max_unroll must be a whole number in [1, {MAX_UNROLL_LIMIT}], got {limit!r}"
            )

    def values(self) -> Dict[str, str]:
        """The options set, by key, as the plugin reads them."""
        limit = None if self.max_unroll is None else str(self.max_unroll)
        return self.given(runner=self.runner, log=self.log, stats=self.stats, max_unroll=limit)
