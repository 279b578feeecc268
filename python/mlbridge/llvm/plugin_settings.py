"""What the LLVM inline-advisor plugin is told, as one value.

:class:`InlinePluginSettings` holds the plugin's options (src/llvm/PluginOptions.cpp
declares them; docs/llvm-plugin.md) and prints them the two ways the plugin
reads them (:class:`mlbridge.session.plugin_settings.PluginSettings`): its
``MLBRIDGE_INLINE_<KEY>`` variables (:meth:`environment`, for clang and every
compiler mlbridge runs) and its ``-mlbridge-<key>`` options (:meth:`arguments`,
for opt, or behind ``-mllvm`` for clang). Every place of the package that
tells the plugin something builds one of these.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Dict, Optional

from mlbridge.llvm import size_cap
from mlbridge.runner_config import RunnerConfig
from mlbridge.session.plugin_settings import INLINE_ADVISOR, PluginSettings

__all__ = ["DEFERS_WHEN", "InlinePluginSettings", "check_defers_when"]

#: Call sites where the plugin can give LLVM's own decision without asking
#: its runner (``-mlbridge-defers-when``): calls of ``linkonce_odr``
#: functions (C++ inline functions and template instances).
DEFERS_WHEN = ("is_callee_linkonce_odr",)


def check_defers_when(defers_when: Optional[str]) -> None:
    """ValueError unless ``defers_when`` is None or one of :data:`DEFERS_WHEN`."""
    if defers_when is not None and defers_when not in DEFERS_WHEN:
        raise ValueError(
            f"defers_when must be one of {', '.join(DEFERS_WHEN)} or None, got {defers_when!r}"
        )


@dataclass(frozen=True)
class InlinePluginSettings(PluginSettings):
    """The plugin's options for one compilation."""

    interface = INLINE_ADVISOR

    #: The runner the plugin makes.
    runner: RunnerConfig
    #: Where the plugin appends its statistics records (docs/run-stats.md).
    stats: Optional[str] = None
    #: Where it writes a training log of its decisions.
    log: Optional[str] = None
    #: LLVM's size cap for the advisor: None keeps LLVM's own (2.0);
    #: :data:`mlbridge.llvm.size_cap.NO_CAP` or more lifts it.
    size_increase_threshold: Optional[float] = None
    #: Call sites where the plugin gives LLVM's decision without asking
    #: (one of :data:`DEFERS_WHEN`; None: none).
    defers_when: Optional[str] = None
    #: Compute LLVM's decision at every call site, to count agreement.
    compare_default: bool = False

    def __post_init__(self) -> None:
        check_defers_when(self.defers_when)

    def values(self) -> Dict[str, str]:
        """The options set, by key, as the plugin reads them."""
        out = {"runner": str(self.runner)}
        if self.stats is not None:
            out["stats"] = self.stats
        if self.log is not None:
            out["log"] = self.log
        if self.size_increase_threshold is not None:
            threshold = self.size_increase_threshold
            out["size-increase-threshold"] = (
                "none" if threshold >= size_cap.NO_CAP else f"{threshold:g}"
            )
        if self.defers_when is not None:
            out["defers-when"] = self.defers_when
        if self.compare_default:
            out["compare-default"] = "1"
        return out
