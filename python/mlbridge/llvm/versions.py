"""Which LLVM major mlbridge drives, and that major's tools (docs/llvm-versions.md).

mlbridge's LLVM parts build against LLVM 16 or 19 (``-DMLBRIDGE_LLVM_VERSION``)
and install side by side. The Python side runs the tools of one major: those
of ``--llvm N``, else of the newest major whose parts are installed
(:func:`default_major`). What differs between majors for the Python side:

- LLVM's interactive pipes (``-inliner-interactive-channel-base`` and the
  register allocator's) exist since LLVM 17. On LLVM 16 the inliner is
  reached through mlbridge's plugin and its pipe runner instead
  (:mod:`mlbridge.llvm.advisors`); the register-allocation advisors cannot be.
- Bitcode is read by the same or a newer LLVM only: modules are prepared by
  the clang of the major that compiles them.
- The inliner's feature list differs (LLVM 19 has more): it is read from the
  compiler, never assumed.
- A plugin loads only into a compiler of the major it was built for (LLVM 19
  crashes registering LLVM 16's): before mlbridge loads its plugin, the
  compiler is asked its major (:func:`check_plugin_major`).
"""

from __future__ import annotations

import argparse
import functools
import os
import re
import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import Mapping, Optional

from mlbridge.errors import MlbridgeError
from mlbridge.session import ToolError, run_tool

#: The majors mlbridge supports (cmake/MlbridgeLlvmMajor.cmake).
SUPPORTED = (16, 19)
#: The major used when nothing says otherwise and no LLVM part is installed.
DEFAULT = 19
#: The first major with LLVM's interactive ML advisors (InteractiveModelRunner).
INTERACTIVE_SINCE = 17

#: Seconds a compiler has to print its version.
VERSION_TIMEOUT = 30.0

_MAJOR_IN_NAME = re.compile(r"-(\d{1,3})$")
_MAJOR_IN_DIR = re.compile(r"(?:^|/)llvm-(\d{1,3})/bin/[^/]+$")
#: ``clang version 19.1.7``, ``Debian LLVM version 16.0.6`` (opt, llc).
_VERSION_LINE = re.compile(r"\b(?:clang|LLVM) version (\d{1,3})\.")


class LlvmVersionError(MlbridgeError):
    """An LLVM major mlbridge does not support, or a feature it lacks."""


@dataclass(frozen=True)
class LlvmTools:
    """The command names of one LLVM major's tools (Debian's ``clang-16``...),
    and the mlbridge inline-advisor plugin built for it (None: the installed
    one, ``mlbridge config --plugin --llvm N``)."""

    major: int
    plugin: Optional[Path] = None

    def __post_init__(self) -> None:
        if self.major not in SUPPORTED:
            raise LlvmVersionError(
                f"LLVM {self.major} is not supported; mlbridge supports "
                f"{', '.join(map(str, SUPPORTED))} (docs/llvm-versions.md)"
            )

    def tool(self, name: str) -> str:
        """The command of LLVM tool ``name`` (clang, opt, llc, llvm-size...)."""
        return f"{name}-{self.major}"

    @property
    def clang(self) -> str:
        return self.tool("clang")

    @property
    def clangxx(self) -> str:
        return self.tool("clang++")

    @property
    def opt(self) -> str:
        return self.tool("opt")

    @property
    def llc(self) -> str:
        return self.tool("llc")

    @property
    def llvm_size(self) -> str:
        return self.tool("llvm-size")

    @property
    def interactive(self) -> bool:
        """Whether LLVM's own interactive ML advisors exist (17 and later)."""
        return self.major >= INTERACTIVE_SINCE

    def require_interactive(self, what: str) -> None:
        """LlvmVersionError unless LLVM's interactive advisors exist."""
        if not self.interactive:
            raise LlvmVersionError(
                f"{what} needs LLVM's interactive ML advisors, which LLVM {self.major} "
                f"lacks (they arrived in LLVM {INTERACTIVE_SINCE}); use LLVM "
                f"{DEFAULT} (--llvm {DEFAULT})"
            )


def major_of_command(argv0: str) -> Optional[int]:
    """The LLVM major a compiler's name says (``clang-16``,
    ``/usr/lib/llvm-16/bin/opt``), or None for an unversioned name."""
    for pattern, text in ((_MAJOR_IN_DIR, argv0), (_MAJOR_IN_NAME, os.path.basename(argv0))):
        match = pattern.search(text)
        if match:
            return int(match.group(1))
    resolved = shutil.which(argv0)
    if resolved is not None:
        match = _MAJOR_IN_DIR.search(os.path.realpath(resolved))
        if match:
            return int(match.group(1))
    return None


def compiler_major(argv0: str, timeout: float = VERSION_TIMEOUT) -> Optional[int]:
    """The LLVM major the compiler ``argv0`` says it is (``argv0 --version``:
    clang, opt, llc), or None when it cannot say (not found, failed, silent
    for ``timeout`` seconds, no LLVM version line: a wrapper such as ccache).
    Asked once per executable file and process."""
    resolved = shutil.which(argv0)
    if resolved is None:
        return None
    try:
        info = os.stat(resolved)
    except OSError:
        return None
    return _asked_major(os.path.realpath(resolved), info.st_mtime_ns, timeout)


@functools.lru_cache(maxsize=64)
def _asked_major(executable: str, mtime_ns: int, timeout: float) -> Optional[int]:
    try:
        done = run_tool([executable, "--version"], timeout=timeout)
    except ToolError:
        return None
    match = _VERSION_LINE.search(done.stdout)
    return int(match.group(1)) if match else None


def check_plugin_major(argv0: str, plugin: Path, plugin_major: int) -> None:
    """LlvmVersionError when the compiler ``argv0`` says it is of another LLVM
    major than ``plugin_major``, the one mlbridge's plugin ``plugin`` is built
    for: a compiler crashes registering a plugin of another major. Nothing
    when the compiler cannot say (:func:`compiler_major`)."""
    actual = compiler_major(argv0)
    if actual is not None and actual != plugin_major:
        raise LlvmVersionError(
            f"{argv0} is LLVM {actual}, but the plugin {plugin} is built for LLVM "
            f"{plugin_major}, and a plugin loads only into a compiler of its own major: "
            f"run LLVM {plugin_major}'s compiler, or ask for LLVM {actual} (--llvm {actual})"
        )


def default_major(environ: Optional[Mapping[str, str]] = None) -> int:
    """The newest major whose mlbridge parts are installed, else :data:`DEFAULT`."""
    from mlbridge.native import NativeError, find_native

    try:
        major = find_native(environ).llvm_major
    except NativeError:
        return DEFAULT
    return DEFAULT if major is None else major


def tools(llvm: Optional[int] = None, plugin: Optional[Path] = None) -> LlvmTools:
    """The tools of major ``llvm``, else of :func:`default_major`."""
    return LlvmTools(default_major() if llvm is None else llvm, plugin)


def _major(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not an LLVM major: {text!r}") from None
    if value not in SUPPORTED:
        raise argparse.ArgumentTypeError(
            f"LLVM {value} is not supported (supported: {', '.join(map(str, SUPPORTED))})"
        )
    return value


def add_llvm_argument(parser: argparse.ArgumentParser, what: str) -> None:
    """The ``--llvm N`` option of every command that runs LLVM."""
    parser.add_argument(
        "--llvm",
        type=_major,
        metavar="N",
        default=None,
        help=f"LLVM major ({', '.join(map(str, SUPPORTED))}) {what}",
    )
