"""The string form of runner configurations, built and printed by Python, against
the golden vectors the C++ parser is checked with (tests/golden/runner_configs.json)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Dict

import pytest

from mlbridge.runner_config import RunnerConfig, RunnerConfigError

GOLDEN = json.loads(
    (Path(__file__).resolve().parents[1] / "golden" / "runner_configs.json").read_text()
)


def _expected(case: Dict[str, Any]) -> RunnerConfig:
    fields = dict(GOLDEN["defaults"])
    fields.update({k: v for k, v in case.items() if k not in ("text", "canonical")})
    return RunnerConfig(**fields)


@pytest.mark.parametrize("case", GOLDEN["valid"], ids=lambda c: c["text"])
def test_the_fields_of_a_valid_configuration_print_as_its_canonical_form(case):
    """The C++ side parses ``text`` into these fields and prints them as
    ``canonical`` (tests/cpp/RunnerConfigTest.cpp); Python builds the fields
    and must print the same."""
    config = _expected(case)
    config.check()
    assert str(config) == case["canonical"]


def test_the_builder_refuses_what_the_compiler_side_refuses():
    for fields, message in [
        ({"kind": "bogus"}, "unknown runner 'bogus'"),
        ({"kind": "onnx"}, "needs a model file"),
        ({"kind": "pipe", "argument": "/tmp/c", "format": "json"}, "needs protocol=extended"),
        ({"kind": "pipe", "argument": "/tmp/c", "protocol": "tcp"}, "protocol must be"),
        ({"kind": "constant", "argument": "1x"}, "the constant must be a whole number"),
    ]:
        with pytest.raises(RunnerConfigError, match=message):
            RunnerConfig(**fields).check()  # type: ignore[arg-type]


def test_the_plugin_settings_carry_the_string_form():
    from mlbridge.llvm import size_cap
    from mlbridge.llvm.plugin_settings import InlinePluginSettings

    config = RunnerConfig(kind="onnx", argument="/m/inline.onnx", threads=2)
    assert InlinePluginSettings(config).environment() == {
        "MLBRIDGE_INLINE_RUNNER": "onnx:/m/inline.onnx,threads=2"
    }
    settings = InlinePluginSettings(
        config,
        stats="/s.jsonl",
        size_increase_threshold=size_cap.NO_CAP,
        defers_when="is_callee_linkonce_odr",
        compare_default=True,
    )
    assert settings.environment() == {
        "MLBRIDGE_INLINE_RUNNER": "onnx:/m/inline.onnx,threads=2",
        "MLBRIDGE_INLINE_STATS": "/s.jsonl",
        "MLBRIDGE_INLINE_SIZE_INCREASE_THRESHOLD": "none",
        "MLBRIDGE_INLINE_DEFERS_WHEN": "is_callee_linkonce_odr",
        "MLBRIDGE_INLINE_COMPARE_DEFAULT": "1",
    }
    assert settings.arguments()[2] == "-mlbridge-size-increase-threshold=none"
    with pytest.raises(ValueError, match="defers_when"):
        InlinePluginSettings(config, defers_when="always")


def test_replace_checks_the_result():
    config = RunnerConfig(kind="pipe", argument="/tmp/ch")
    assert (
        str(config.replace(protocol="extended", format="json"))
        == "pipe:/tmp/ch,protocol=extended,format=json"
    )
    with pytest.raises(RunnerConfigError, match="needs protocol=extended"):
        config.replace(format="json")


def test_an_argument_with_a_comma_cannot_be_printed():
    with pytest.raises(RunnerConfigError, match="contains ','"):
        str(RunnerConfig(kind="onnx", argument="/models/a,b.onnx"))


def test_loop_configurations_use_the_string_form(tmp_path):
    from mlbridge.problems.inlining.loop.evaluate import plugin_for

    plugin = plugin_for("baseline", tmp_path / "p.so", tmp_path / "m.onnx", tmp_path / "m.so")
    assert plugin is not None and plugin.env["MLBRIDGE_INLINE_RUNNER"] == "echo:inlining_default"
    plugin = plugin_for("onnx", tmp_path / "p.so", tmp_path / "m.onnx", tmp_path / "m.so")
    assert plugin is not None and plugin.env["MLBRIDGE_INLINE_RUNNER"] == f"onnx:{tmp_path}/m.onnx"
    assert plugin_for("oz", tmp_path / "p.so", tmp_path / "m.onnx", tmp_path / "m.so") is None
