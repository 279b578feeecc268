"""Runner configurations: which runner a compiler uses, as one string.

The same grammar as the C++ ``mlbridge::RunnerConfig`` (include/mlbridge/RunnerConfig.h),
pinned for both by tests/golden/runner_configs.json::

    KIND[:ARGUMENT][,KEY=VALUE]...

    pipe:/tmp/run/inline,protocol=extended,format=json,timeout_ms=5000
    grpc:unix:/tmp/run/model.sock,mode=streaming
    onnx:/models/inline.onnx,threads=1
    aot:/models/inline_policy.so
    constant:1
    echo:inlining_default

The LLVM plugin reads it from ``-mlbridge-runner=`` or ``MLBRIDGE_INLINE_RUNNER``; the C API from
``mlbridge_runner_create()``: the compiler side parses it, once, in C++. Python tooling
only builds configurations here (checked as the C++ side checks them) and prints them
(``str``; the LLVM plugin's settings: :mod:`mlbridge.llvm.plugin_settings`).
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Tuple

from mlbridge.errors import MlbridgeError
from mlbridge.limits import DEFAULT_MAX_BYTES

#: Every kind, in the order of the C++ enum.
KINDS: Tuple[str, ...] = ("pipe", "grpc", "onnx", "aot", "constant", "echo", "torch")
#: Pipe protocols: LLVM's, mlbridge's framed one, tensors in shared memory.
PROTOCOLS = ("mlgo", "extended", "shm")
#: Serialisations of the extended pipe protocol.
FORMATS: Tuple[str, ...] = ("bitstream", "json", "protobuf")
#: When the onnx runner loads ONNX Runtime: at its first evaluation, or at creation.
LOADS: Tuple[str, ...] = ("lazy", "eager")
#: The default deadline of remote runners, in milliseconds.
DEFAULT_TIMEOUT_MS = 10000
#: Longest timeout accepted (INT32_MAX ms, about 24 days).
MAX_TIMEOUT_MS = 2**31 - 1
_INT64 = (-(2**63), 2**63 - 1)
_NEEDS = {
    "grpc": "a target (grpc:unix:PATH or grpc:HOST:PORT)",
    "onnx": "a model file (onnx:FILE)",
    "aot": "a module (aot:FILE.so)",
    "echo": "an input name (echo:NAME)",
    "torch": "a TorchScript file (torch:FILE.pt)",
}


class RunnerConfigError(MlbridgeError, ValueError):
    """A runner configuration the compiler side would refuse, or cannot print."""


@dataclass(frozen=True)
class RunnerConfig:
    """Which runner, and how it is set up (fields a kind does not use are ignored)."""

    kind: str = "pipe"
    #: Channel base (pipe), target (grpc), model file (onnx, aot), number (constant),
    #: input name (echo).
    argument: str = ""
    #: Pipe: "mlgo" (LLVM's protocol), "extended" (framed) or "shm" (shared memory).
    protocol: str = "mlgo"
    format: str = "bitstream"
    streaming: bool = False
    connect_timeout_ms: int = DEFAULT_TIMEOUT_MS
    timeout_ms: int = DEFAULT_TIMEOUT_MS
    threads: int = 1
    #: ONNX Runtime: load it at the first evaluation (lazy) or at creation (eager).
    load: str = "lazy"
    max_message_bytes: int = DEFAULT_MAX_BYTES

    def check(self) -> None:
        """Raises RunnerConfigError for a configuration the compiler side
        refuses (a missing argument, a format without the extended protocol,
        ...)."""
        if self.kind not in KINDS:
            raise RunnerConfigError(f"unknown runner '{self.kind}' ({', '.join(KINDS)})")
        _choice("protocol", self.protocol, PROTOCOLS)
        _choice("format", self.format, FORMATS)
        _choice("load", self.load, LOADS)
        if self.kind == "pipe" and self.protocol != "extended" and self.format != "bitstream":
            raise RunnerConfigError(
                f"runner configuration: format={self.format} needs "
                "protocol=extended (LLVM's protocol is bitstream only)"
            )
        if self.kind == "constant":
            self.constant()
        elif self.kind in _NEEDS and not self.argument:
            raise RunnerConfigError(
                f"runner configuration: '{self.kind}' needs {_NEEDS[self.kind]}"
            )

    def constant(self) -> int:
        """The value of a constant runner."""
        return _integer(self.argument, *_INT64, "the constant")

    def __str__(self) -> str:
        """The canonical string form, as the C++ ``RunnerConfig::str()``
        prints it (the compiler side parses it back to these fields)."""
        if "," in self.argument:
            raise RunnerConfigError(
                f"runner configuration: the argument '{self.argument}' "
                "contains ',', which the string form cannot carry"
            )
        default = RunnerConfig()
        out = self.kind + (f":{self.argument}" if self.argument else "")
        if self.kind == "pipe":
            if self.protocol != default.protocol:
                out += f",protocol={self.protocol}"
            if self.format != default.format:
                out += f",format={self.format}"
        if self.kind == "grpc" and self.streaming:
            out += ",mode=streaming"
        if self.kind in ("pipe", "grpc"):
            if self.connect_timeout_ms == self.timeout_ms:
                if self.timeout_ms != default.timeout_ms:
                    out += f",timeout_ms={self.timeout_ms}"
            else:
                if self.connect_timeout_ms != default.connect_timeout_ms:
                    out += f",connect_timeout_ms={self.connect_timeout_ms}"
                if self.timeout_ms != default.timeout_ms:
                    out += f",call_timeout_ms={self.timeout_ms}"
            if self.max_message_bytes != default.max_message_bytes:
                out += f",max_message_bytes={self.max_message_bytes}"
        if self.kind in ("onnx", "torch") and self.threads != default.threads:
            out += f",threads={self.threads}"
        if self.kind == "onnx" and self.load != default.load:
            out += f",load={self.load}"
        return out

    def replace(self, **changes: object) -> "RunnerConfig":
        """A copy with some fields changed, checked."""
        config = dataclasses.replace(self, **changes)  # type: ignore[arg-type]
        config.check()
        return config


def _integer(text: str, low: int, high: int, what: str) -> int:
    """A whole decimal number in [low, high] (the C++ side's strtoll rules)."""
    digits = text[1:] if text[:1] in "+-" else text
    if not digits.isdigit() or not digits.isascii() or not low <= int(text) <= high:
        raise RunnerConfigError(
            f"runner configuration: {what} must be a whole number from "
            f"{low} to {high}, got '{text}'"
        )
    return int(text)


def _choice(key: str, value: str, accepted: Tuple[str, ...]) -> str:
    if value not in accepted:
        words = ", ".join(accepted[:-1]) + " or " + accepted[-1]
        raise RunnerConfigError(f"runner configuration: {key} must be {words}, got '{value}'")
    return value
