"""What a plugin is told (mlbridge.session.plugin_settings and each plugin's
settings value): the same options printed as the compiler's arguments and as
the plugin's variables, MLIR pass options quoted where they must be and
refused where no quoting carries them, bounds checked before a compiler runs.
The installed plugins' own descriptions are checked against these in
test_plugin_description.py."""

from __future__ import annotations

import pytest

from mlbridge.gcc.plugin_settings import MAX_UNROLL_LIMIT, GccPluginSettings
from mlbridge.mlir.plugin_settings import TilingPassSettings
from mlbridge.session.plugin_settings import (
    GCC_PLUGIN,
    INLINE_ADVISOR,
    TILING_PASS,
    PluginInterface,
)


def test_one_interface_names_an_option_three_ways() -> None:
    assert INLINE_ADVISOR.variable("size-increase-threshold") == (
        "MLBRIDGE_INLINE_SIZE_INCREASE_THRESHOLD"
    )
    assert GCC_PLUGIN.flag("max-unroll") == "-fplugin-arg-mlbridge_gcc-max-unroll="
    assert TILING_PASS.flag("log") == "mlbridge-tile{log="
    assert [i.prefix for i in (INLINE_ADVISOR, GCC_PLUGIN, TILING_PASS)] == [
        "MLBRIDGE_INLINE_",
        "MLBRIDGE_GCC_",
        "MLBRIDGE_MLIR_",
    ]


def test_gcc_settings_print_arguments_and_variables_alike() -> None:
    settings = GccPluginSettings("pipe:/w/ch,format=json", log="/w/l", max_unroll=4)
    assert settings.values() == {
        "runner": "pipe:/w/ch,format=json",
        "log": "/w/l",
        "max-unroll": "4",
    }
    assert settings.arguments() == [
        "-fplugin-arg-mlbridge_gcc-runner=pipe:/w/ch,format=json",
        "-fplugin-arg-mlbridge_gcc-log=/w/l",
        "-fplugin-arg-mlbridge_gcc-max-unroll=4",
    ]
    assert settings.environment() == {
        "MLBRIDGE_GCC_RUNNER": "pipe:/w/ch,format=json",
        "MLBRIDGE_GCC_LOG": "/w/l",
        "MLBRIDGE_GCC_MAX_UNROLL": "4",
    }
    assert GccPluginSettings().arguments() == []


@pytest.mark.parametrize("limit", [0, MAX_UNROLL_LIMIT + 1, True, 2.0])
def test_gcc_settings_refuse_a_limit_the_plugin_would(limit: object) -> None:
    with pytest.raises(ValueError, match="max_unroll"):
        GccPluginSettings(max_unroll=limit)  # type: ignore[arg-type]


def test_mlir_settings_are_one_pass_option_list() -> None:
    settings = TilingPassSettings("onnx:/m/t.onnx", log="/w/t.jsonl")
    assert settings.arguments() == ["mlbridge-tile{runner=onnx:/m/t.onnx log=/w/t.jsonl}"]
    assert (
        settings.pipeline() == "builtin.module(mlbridge-tile{runner=onnx:/m/t.onnx log=/w/t.jsonl})"
    )
    assert settings.environment() == {
        "MLBRIDGE_MLIR_RUNNER": "onnx:/m/t.onnx",
        "MLBRIDGE_MLIR_LOG": "/w/t.jsonl",
    }
    assert TilingPassSettings().pipeline() == "builtin.module(mlbridge-tile{})"


def test_mlir_values_with_separators_are_quoted() -> None:
    settings = TilingPassSettings("pipe:/w/ch,protocol=extended", log="/a dir/t.jsonl")
    assert settings.arguments() == [
        'mlbridge-tile{runner="pipe:/w/ch,protocol=extended" log="/a dir/t.jsonl"}'
    ]


@pytest.mark.parametrize("value", ['a"b', "a}b", "a{b"])
def test_mlir_values_no_quoting_carries_are_refused(value: str) -> None:
    with pytest.raises(ValueError, match="the pass option runner cannot hold"):
        TilingPassSettings(value).arguments()


def test_an_ungrouped_interface_writes_one_argument_per_option() -> None:
    interface = PluginInterface("X", "--x-")
    assert interface.arguments({"a": "1", "b-c": "2"}) == ["--x-a=1", "--x-b-c=2"]
    assert interface.environment({"b-c": "2"}) == {"MLBRIDGE_X_B_C": "2"}
