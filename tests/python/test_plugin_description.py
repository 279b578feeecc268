"""What a plugin says of itself (mlbridge.plugin_description): the golden
lines of tests/golden/plugin_description.json (which
tests/cpp/PluginDescriptionTest.cpp checks the C++ writer produces) read back
into their values and written again byte for byte; malformed descriptions
refused; and the installed plugins' own descriptions agree with what the
Python side sends them and reads from them."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any, Dict, List

import pytest

from mlbridge.errors import CodecError
from mlbridge.plugin_description import (
    COMPILERS,
    MAX_DESCRIPTION_BYTES,
    describe_installed,
    parse_description,
)

GOLDEN = Path(__file__).resolve().parents[2] / "tests" / "golden" / "plugin_description.json"


def golden() -> List[Dict[str, Any]]:
    return json.loads(GOLDEN.read_text())


def test_the_golden_lines_read_back_and_are_written_again() -> None:
    for case in golden():
        line = case["line"].encode()
        description = parse_description(line, case["tool"])
        assert description.tool == case["tool"]
        assert [(o.key, o.kind) for o in description.options] == [
            (o[0], o[1]) for o in case["options"]
        ]
        for option, given in zip(description.options, case["options"]):
            assert option.flag == case["before"] + option.key + case["after"]
            assert option.variable.startswith(f"MLBRIDGE_{case['plugin']}_")
            if option.kind == "integer":
                assert (option.minimum, option.maximum) == (given[2], given[3])
        assert [s.to_json() for s in description.features] == case["features"]
        assert [s.to_json() for s in description.answers] == case["answers"]
        again = json.dumps(description.to_json(), separators=(",", ":")) + "\n"
        assert again.encode() == line


def _line(**changes: Any) -> bytes:
    record = json.loads(golden()[0]["line"])
    record.update(changes)
    return json.dumps(record).encode()


@pytest.mark.parametrize(
    "data, message",
    [
        (b"[]", "expected a JSON object"),
        (b"{", "invalid JSON"),
        (_line(tool=""), "tool must be"),
        (_line(extra=1), "has the keys"),
        (_line(options={}), "options must be a list"),
        (
            _line(options=[{"key": "a", "kind": "text", "flag": "-a=", "variable": "V"}] * 2),
            "twice",
        ),
        (_line(options=[{"key": "a", "kind": "float", "flag": "-a=", "variable": "V"}]), "kind"),
        (_line(options=[{"key": "a", "kind": "integer", "flag": "-a=", "variable": "V"}]), "keys"),
        (
            _line(
                options=[
                    {
                        "key": "a",
                        "kind": "integer",
                        "min": 0,
                        "max": "9",
                        "flag": "-",
                        "variable": "V",
                    }
                ]
            ),
            "min and max",
        ),
        (_line(features=[{"name": "x", "type": "int128", "port": 0, "shape": [1]}]), "features[0]"),
        (_line(answers=[{"name": "x", "type": "float", "port": 0, "shape": [-1]}]), "answers[0]"),
        (b" " * (MAX_DESCRIPTION_BYTES + 1), "larger than"),
    ],
)
def test_a_malformed_description_is_refused(data: bytes, message: str) -> None:
    with pytest.raises(CodecError, match=re.escape(message)):
        parse_description(data, "d.json")


@pytest.fixture(scope="module")
def installed() -> Dict[str, Any]:
    """The description of every installed plugin (scripts/setup installs them)."""
    return {kind: describe_installed(kind) for kind in COMPILERS}


def test_every_option_has_the_flag_and_variable_python_writes(installed: Dict[str, Any]) -> None:
    """The command-line form and the variable of every option of every
    plugin are the ones :data:`INTERFACES` writes, and the package's
    children are kept from exactly the plugins' variables."""
    from mlbridge.child_process import PLUGIN_PREFIXES
    from mlbridge.session.plugin_settings import INTERFACES

    assert set(INTERFACES) == set(COMPILERS)
    for kind, described in installed.items():
        interface = INTERFACES[kind]
        for option in described.options:
            assert option.flag == interface.flag(option.key), (kind, option)
            assert option.variable == interface.variable(option.key), (kind, option)
    assert PLUGIN_PREFIXES == tuple(i.prefix for i in INTERFACES.values())


def _assert_known(described: Any, settings: Any) -> None:
    """Every option ``settings`` sets is an option of the plugin, of its kind."""
    for key, value in settings.values().items():
        option = described.option(key)
        if option.kind == "integer":
            assert option.minimum <= int(value) <= option.maximum
        elif option.kind == "flag":
            assert value in ("0", "1")


def test_the_inline_plugin_reads_what_python_sets(installed: Dict[str, Any]) -> None:
    from mlbridge.llvm.plugin_settings import InlinePluginSettings
    from mlbridge.llvm.size_cap import NO_CAP
    from mlbridge.problems import inlining
    from mlbridge.runner_config import RunnerConfig

    described = installed["plugin"]
    assert described.tool == "inline-advisor"
    settings = InlinePluginSettings(
        RunnerConfig("onnx", "m.onnx"),
        stats="s",
        log="l",
        size_increase_threshold=NO_CAP,
        defers_when=inlining.ODR_CALLEE,
        compare_default=True,
    )
    assert len(settings.values()) == 6
    _assert_known(described, settings)
    names = [spec.name for spec in described.features]
    assert names[-2:] == [inlining.DEFAULT_FEATURE, inlining.ODR_CALLEE]
    assert set(inlining.HIDDEN) <= set(names)
    assert [spec.name for spec in described.answers] == [inlining.DECISION]


def test_the_gcc_plugin_reads_what_python_sets(installed: Dict[str, Any]) -> None:
    from mlbridge.gcc.features import FEATURE_NAMES, OUTPUT_NAME
    from mlbridge.gcc.plugin_settings import MAX_UNROLL_LIMIT, GccPluginSettings
    from mlbridge.problems.gcc_unroll.kernels import compile_command

    described = installed["gcc_plugin"]
    assert described.tool == "gcc-unroll"
    assert [spec.name for spec in described.features] == list(FEATURE_NAMES)
    assert all(spec.shape == (1,) and spec.type_name == "int64_t" for spec in described.features)
    assert [spec.name for spec in described.answers] == [OUTPUT_NAME]
    assert described.option("max-unroll").maximum == MAX_UNROLL_LIMIT
    settings = GccPluginSettings("constant:0", log="l", stats="s", max_unroll=MAX_UNROLL_LIMIT)
    assert len(settings.values()) == 4
    _assert_known(described, settings)
    command = compile_command(Path("k.c"), Path("k.o"), Path("p.so"), settings)
    assert command[-4:] == [described.option(k).flag + v for k, v in settings.values().items()]


def test_the_mlir_pass_reads_what_python_sets(installed: Dict[str, Any]) -> None:
    from mlbridge.mlir.features import FEATURES, OUTPUT_NAME
    from mlbridge.mlir.plugin_settings import TilingPassSettings

    described = installed["mlir_plugin"]
    assert described.tool == "mlir-tiling"
    assert [(s.name, s.element_count) for s in described.features] == list(FEATURES)
    assert [spec.name for spec in described.answers] == [OUTPUT_NAME]
    settings = TilingPassSettings("constant:4", log="l", stats="s")
    assert len(settings.values()) == 3
    _assert_known(described, settings)
    assert settings.pipeline().startswith("builtin.module(" + described.option("runner").flag)
