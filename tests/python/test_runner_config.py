"""The string form of runner configurations, against the golden vectors the C++ tests
check too (tests/golden/runner_configs.json)."""

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
def test_valid_configurations_parse_to_their_fields_and_print_canonically(case):
    config = RunnerConfig.parse(case["text"])
    assert config == _expected(case)
    assert str(config) == case["canonical"]
    assert RunnerConfig.parse(str(config)) == config


@pytest.mark.parametrize("case", GOLDEN["invalid"], ids=lambda c: c["text"] or "<empty>")
def test_invalid_configurations_are_refused_with_a_message_naming_the_problem(case):
    with pytest.raises(RunnerConfigError) as raised:
        RunnerConfig.parse(case["text"])
    assert case["error"] in str(raised.value)


def test_plugin_env_carries_the_string_form():
    config = RunnerConfig(kind="onnx", argument="/m/inline.onnx", threads=2)
    assert config.plugin_env() == {"MLBRIDGE_INLINE_RUNNER": "onnx:/m/inline.onnx,threads=2"}


def test_replace_checks_the_result():
    config = RunnerConfig.parse("pipe:/tmp/ch")
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
    from mlbridge.loop.evaluate import plugin_for

    plugin = plugin_for("baseline", tmp_path / "p.so", tmp_path / "m.onnx", tmp_path / "m.so")
    assert plugin is not None and plugin.env["MLBRIDGE_INLINE_RUNNER"] == "echo:inlining_default"
    plugin = plugin_for("onnx", tmp_path / "p.so", tmp_path / "m.onnx", tmp_path / "m.so")
    assert plugin is not None and plugin.env["MLBRIDGE_INLINE_RUNNER"] == f"onnx:{tmp_path}/m.onnx"
    assert plugin_for("oz", tmp_path / "p.so", tmp_path / "m.onnx", tmp_path / "m.so") is None
