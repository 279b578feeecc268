"""What an mlbridge plugin says of itself (docs/plugin-description.md).

Each plugin (the LLVM inline advisor, the GCC unroll plugin, the MLIR tiling
pass) writes one JSON object when its option ``describe`` names a file
(src/support/PluginDescription.h): ``tool`` (its name in the statistics
record, :data:`mlbridge.run_stats.TOOLS`), ``options`` (each with its
``key``, ``kind`` — ``text``, ``integer`` with ``min`` and ``max``, or
``flag`` —, the ``flag`` written on the compiler's command line before the
value and the environment ``variable``), ``features`` (what a model reads,
in order, as LLVM's tensor specs) and ``answers`` (what it gives). The
plugin then decides nothing.

:func:`parse_description` checks a description (it comes from a program
the caller ran, but is checked before it is believed);
:func:`describe_plugin` runs a compiler with the plugin to get one,
:func:`describe_installed` with the plugin of the native half.
"""

from __future__ import annotations

import os
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Dict, List, Mapping, Optional, Tuple

from mlbridge.errors import CodecError
from mlbridge.input_files import read_regular_file
from mlbridge.jsontext import load_json
from mlbridge.native import NativeError, find_native
from mlbridge.session import run_tool
from mlbridge.session.plugin_settings import INTERFACES
from mlbridge.tensor_spec import SpecError, TensorSpec

__all__ = [
    "KEYS",
    "KINDS",
    "COMPILERS",
    "MAX_DESCRIPTION_BYTES",
    "PluginDescription",
    "PluginOption",
    "describe_installed",
    "describe_plugin",
    "parse_description",
]

#: The keys of a description, in the order the plugins write them.
KEYS = ("tool", "options", "features", "answers")
#: The kinds of option.
KINDS = ("text", "integer", "flag")
#: The largest description read (the inline advisor's is about 4 KiB).
MAX_DESCRIPTION_BYTES = 1 << 20
#: The most options, features or answers a description may list.
_MAX_ITEMS = 4096


@dataclass(frozen=True)
class PluginOption:
    """One option of a plugin."""

    key: str
    kind: str
    flag: str  #: written before the value on the compiler's command line
    variable: str  #: the environment variable read when the flag is not given
    minimum: Optional[int] = None  #: the bounds of an integer option
    maximum: Optional[int] = None

    def to_json(self) -> Dict[str, Any]:
        """The option as the plugins write it (key order included)."""
        out: Dict[str, Any] = {"key": self.key, "kind": self.kind}
        if self.kind == "integer":
            out.update(min=self.minimum, max=self.maximum)
        out.update(flag=self.flag, variable=self.variable)
        return out


@dataclass(frozen=True)
class PluginDescription:
    """A plugin's contract."""

    tool: str
    options: Tuple[PluginOption, ...]
    features: Tuple[TensorSpec, ...]
    answers: Tuple[TensorSpec, ...]

    def to_json(self) -> Dict[str, Any]:
        """The description as the plugins write it (key order included)."""
        return {
            "tool": self.tool,
            "options": [option.to_json() for option in self.options],
            "features": [spec.to_json() for spec in self.features],
            "answers": [spec.to_json() for spec in self.answers],
        }

    def option(self, key: str) -> PluginOption:
        """The option ``key``; KeyError when the plugin has none."""
        for option in self.options:
            if option.key == key:
                return option
        raise KeyError(f"{self.tool} has no option '{key}'")


def _text(value: Any, what: str) -> str:
    if not isinstance(value, str) or not value:
        raise CodecError(f"{what} must be a non-empty string")
    return value


def _items(value: Any, what: str) -> List[Any]:
    if not isinstance(value, list) or len(value) > _MAX_ITEMS:
        raise CodecError(f"{what} must be a list of at most {_MAX_ITEMS} items")
    return value


def _option(value: Any, where: str) -> PluginOption:
    if not isinstance(value, dict):
        raise CodecError(f"{where}: an option is a JSON object")
    kind = value.get("kind")
    keys = ("key", "kind", "min", "max", "flag", "variable")
    expected = keys if kind == "integer" else tuple(k for k in keys if k not in ("min", "max"))
    if tuple(value) != expected:
        raise CodecError(f"{where}: an option of kind {kind!r} has the keys {expected}")
    if kind not in KINDS:
        raise CodecError(f"{where}: kind must be one of {', '.join(KINDS)}")
    bounds = [value.get("min"), value.get("max")]
    if kind == "integer" and not all(
        isinstance(b, int) and not isinstance(b, bool) for b in bounds
    ):
        raise CodecError(f"{where}: min and max must be integers")
    return PluginOption(
        _text(value["key"], f"{where}: key"),
        kind,
        _text(value["flag"], f"{where}: flag"),
        _text(value["variable"], f"{where}: variable"),
        bounds[0],
        bounds[1],
    )


def _specs(value: Any, where: str) -> Tuple[TensorSpec, ...]:
    specs = []
    for index, spec in enumerate(_items(value, where)):
        try:
            specs.append(TensorSpec.from_json(spec))
        except SpecError as err:
            raise CodecError(f"{where}[{index}]: {err}") from None
    return tuple(specs)


def parse_description(data: bytes, where: str) -> PluginDescription:
    """The description ``data`` holds, checked: CodecError naming ``where``
    when it is not JSON, a key is missing, extra or of the wrong type, a
    tensor spec is not one, or it is larger than
    :data:`MAX_DESCRIPTION_BYTES`."""
    if len(data) > MAX_DESCRIPTION_BYTES:
        raise CodecError(f"{where}: larger than {MAX_DESCRIPTION_BYTES} bytes")
    record = load_json(data, where, CodecError)
    if tuple(record) != KEYS:
        raise CodecError(f"{where}: a description has the keys {KEYS}, not {tuple(record)}")
    options = tuple(
        _option(option, f"{where}: options[{i}]")
        for i, option in enumerate(_items(record["options"], f"{where}: options"))
    )
    if len({option.key for option in options}) != len(options):
        raise CodecError(f"{where}: an option is listed twice")
    return PluginDescription(
        _text(record["tool"], f"{where}: tool"),
        options,
        _specs(record["features"], f"{where}: features"),
        _specs(record["answers"], f"{where}: answers"),
    )


#: The plugins (their keys in :mod:`mlbridge.native`) and the compiler that
#: loads each (``{llvm}``: the major it was built for).
COMPILERS = {"plugin": "clang-{llvm}", "gcc_plugin": "gcc-12", "mlir_plugin": "mlir-opt-{llvm}"}
#: A C function with a call (the inline advisor is asked at call sites).
_C_SOURCE = "static int f(int x) { return x + 1; }\nint g(int y) { return f(y); }\n"
#: An MLIR module with nothing to tile.
_MLIR_SOURCE = "module {}\n"


def _compiler(kind: str) -> str:
    """The compiler of the plugin ``kind`` (:data:`COMPILERS`)."""
    try:
        return COMPILERS[kind]
    except KeyError:
        raise ValueError(f"kind must be one of {', '.join(COMPILERS)}, got {kind!r}") from None


def _command(kind: str, plugin: str, compiler: str, work: Path, out: Path) -> List[str]:
    """The command that has ``compiler`` load ``plugin`` and describe it in ``out``."""
    (describe,) = INTERFACES[kind].arguments({"describe": str(out)})
    if kind == "mlir_plugin":
        source = work / "empty.mlir"
        source.write_text(_MLIR_SOURCE)
        pipeline = f"--pass-pipeline=builtin.module({describe})"
        return [compiler, f"--load-pass-plugin={plugin}", pipeline, str(source), "-o", os.devnull]
    source = work / "f.c"
    source.write_text(_C_SOURCE)
    if kind == "gcc_plugin":
        flags = [f"-fplugin={plugin}", describe]
    else:
        flags = [f"-fpass-plugin={plugin}", f"-fplugin={plugin}", "-mllvm", describe]
    return [compiler, "-O2", "-c", *flags, str(source), "-o", os.devnull]


def describe_plugin(
    kind: str,
    plugin: "os.PathLike[str] | str",
    compiler: str,
    *,
    timeout: float = 120.0,
    env: Optional[Mapping[str, str]] = None,
) -> PluginDescription:
    """The description of ``plugin``, of the ``kind`` of :data:`COMPILERS`,
    loaded into ``compiler`` (in ``env``: default, this process's environment
    without the plugins' variables). CodecError when it wrote none or a bad
    one; :class:`mlbridge.session.ToolError` when the compiler failed."""
    _compiler(kind)
    with tempfile.TemporaryDirectory(prefix="mlbridge-describe-") as work:
        out = Path(work) / "description.json"
        command = _command(kind, str(plugin), compiler, Path(work), out)
        run_tool(command, timeout=timeout, what=f"{compiler} describing {plugin}", env=env)
        if not out.exists():
            raise CodecError(f"{plugin} wrote no description in {compiler}")
        data = read_regular_file(out, MAX_DESCRIPTION_BYTES, CodecError)
        return parse_description(data, f"the description of {plugin}")


def describe_installed(
    kind: str, llvm: Optional[int] = None, environ: Optional[Mapping[str, str]] = None
) -> PluginDescription:
    """The description of the installed plugin ``kind`` (``mlbridge config
    --describe KIND``), of LLVM ``llvm`` (default: the newest installed)."""
    template = _compiler(kind)
    native = find_native(environ, llvm)
    plugin = native.require(kind)
    major = native.llvm_major or llvm
    if major is None and "{llvm}" in template:
        raise NativeError(f"the LLVM major of {plugin} is not known (give llvm=N)")
    compiler = template.format(llvm=major)
    return describe_plugin(kind, plugin, compiler)
