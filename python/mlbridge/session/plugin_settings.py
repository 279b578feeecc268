"""What a compiler plugin is told, as one value, and how its compiler hands it over.

Every mlbridge plugin reads its options one way (src/support/PluginSettings.h):
from its compiler's command line, else from the environment variable
``MLBRIDGE_<PLUGIN>_<KEY>``. Only the command-line form differs by compiler,
and each plugin's description says it (docs/plugin-description.md: an
option's ``flag``). :class:`PluginInterface` is that form, one per plugin
(:data:`INTERFACES`); :class:`PluginSettings` is the base of the settings
values (:class:`mlbridge.llvm.plugin_settings.InlinePluginSettings`,
:class:`mlbridge.gcc.plugin_settings.GccPluginSettings`,
:class:`mlbridge.mlir.plugin_settings.TilingPassSettings`): each says which
options it sets, by key, and prints them either way (:meth:`~PluginSettings.arguments`,
:meth:`~PluginSettings.environment`). A test checks every interface against
the installed plugin's own description.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar, Dict, List, Mapping, Optional

__all__ = [
    "GCC_PLUGIN",
    "INLINE_ADVISOR",
    "INTERFACES",
    "TILING_PASS",
    "PluginInterface",
    "PluginSettings",
]

#: Characters an MLIR pass option's value cannot hold at all (they end the
#: option list or a quoted value early).
_PASS_OPTION_FORBIDDEN = ('"', "{", "}")
#: Characters that make the value of an MLIR pass option quoted.
_PASS_OPTION_QUOTED = (",", " ", "'")


@dataclass(frozen=True)
class PluginInterface:
    """How one plugin's compiler hands it its options."""

    #: The plugin's name in its variables (``MLBRIDGE_<PLUGIN>_<KEY>``).
    plugin: str
    #: What a key follows on the command line (an option's ``flag`` in the
    #: description is this, the key and ``=``).
    before: str
    #: True when the options are one list (``mlbridge-tile{k=v k=v}``, MLIR
    #: pass options), False when each is an argument of its own.
    grouped: bool = False

    def variable(self, key: str) -> str:
        """The environment variable of option ``key`` (``size-increase-threshold``
        -> ``MLBRIDGE_INLINE_SIZE_INCREASE_THRESHOLD``)."""
        return self.prefix + key.upper().replace("-", "_")

    def flag(self, key: str) -> str:
        """What precedes option ``key``'s value on the command line."""
        return f"{self.before}{key}="

    @property
    def prefix(self) -> str:
        """The prefix of every variable the plugin reads."""
        return f"MLBRIDGE_{self.plugin}_"

    def environment(self, values: Mapping[str, str]) -> Dict[str, str]:
        """``values`` (by key) as the plugin's variables."""
        return {self.variable(key): value for key, value in values.items()}

    def arguments(self, values: Mapping[str, str]) -> List[str]:
        """``values`` (by key) as the compiler's arguments: one per option,
        or one option list (:attr:`grouped`; ValueError when a value cannot
        be written in one)."""
        if not self.grouped:
            return [self.flag(key) + value for key, value in values.items()]
        options = [f"{key}={_pass_option_value(key, value)}" for key, value in values.items()]
        return [self.before + " ".join(options) + "}"]


def _pass_option_value(key: str, value: str) -> str:
    """``value`` as an MLIR pass option's value: quoted when it holds a
    separator, ValueError when it holds what no quoting carries."""
    if any(c in value for c in _PASS_OPTION_FORBIDDEN):
        raise ValueError(
            f"the pass option {key} cannot hold any of {' '.join(_PASS_OPTION_FORBIDDEN)}: {value}"
        )
    if any(c in value for c in _PASS_OPTION_QUOTED):
        return f'"{value}"'
    return value


#: The LLVM inline advisor (``-mlbridge-KEY=``, behind ``-mllvm`` for clang;
#: src/llvm/PluginOptions.cpp).
INLINE_ADVISOR = PluginInterface("INLINE", "-mlbridge-")
#: The GCC unroll plugin (``-fplugin-arg-mlbridge_gcc-KEY=``; src/gcc/PluginOptions.cpp).
GCC_PLUGIN = PluginInterface("GCC", "-fplugin-arg-mlbridge_gcc-")
#: The MLIR tiling pass (``mlbridge-tile{KEY=VALUE ...}``; src/mlir/TilingPass.cpp).
TILING_PASS = PluginInterface("MLIR", "mlbridge-tile{", grouped=True)
#: Each plugin's interface, by its key in :mod:`mlbridge.native`.
INTERFACES: Dict[str, PluginInterface] = {
    "plugin": INLINE_ADVISOR,
    "gcc_plugin": GCC_PLUGIN,
    "mlir_plugin": TILING_PASS,
}


class PluginSettings:
    """The options one compilation gives a plugin (a subclass per plugin)."""

    #: The plugin the settings are for.
    interface: ClassVar[PluginInterface]

    def values(self) -> Dict[str, str]:
        """The options set, by key, as the plugin reads them."""
        raise NotImplementedError

    @staticmethod
    def given(**options: Optional[str]) -> Dict[str, str]:
        """The ``options`` that are not None (keyword ``max_unroll`` is key
        ``max-unroll``), for :meth:`values`."""
        return {k.replace("_", "-"): v for k, v in options.items() if v is not None}

    def environment(self) -> Dict[str, str]:
        """The options as the plugin's variables (for any compiler, and for
        build systems that pass no flags through)."""
        return self.interface.environment(self.values())

    def arguments(self) -> List[str]:
        """The options as the compiler's arguments (for clang, each of the
        inline advisor's goes behind ``-mllvm``)."""
        return self.interface.arguments(self.values())
