"""The MLIR tiling pass plugin (mlbridge-mlir-tiling.so) in stock mlir-opt-19:
the pass's own tile sizes without a model (and the same IR from a model
echoing them), a model's tile sizes applied (served from Python over pipes,
or in-process through ONNX Runtime, AOT modules and LibTorch), tiled kernels
computing what untiled ones do, and every fault path leaving the nests to
the pass's heuristic.

The plugin is the installed one (``mlbridge config --mlir-plugin``), or the
one MLBRIDGE_MLIR_PLUGIN names (ctest passes the sanitizer build's, with the
runtimes to preload in MLBRIDGE_MLIR_PLUGIN_PRELOAD)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Dict, List, Optional, Sequence

import numpy as np
import pytest
from compiler_plugins import compiler_env, plugin_under_test
from hostile_paths import KINDS, plant

from mlbridge.linear_policy import Layout, LinearChoicePolicy
from mlbridge.mlir import TILE_CHOICES, TilePolicy, read_tiling_log
from mlbridge.mlir.policy import LAYOUT
from mlbridge.problems.mlir_tiling import kernels
from mlbridge.run_stats import read_run_stats


@pytest.fixture(scope="module")
def plugin() -> Path:
    path = plugin_under_test("MLBRIDGE_MLIR_PLUGIN", "mlir", "mlir_plugin", "libmlir-19-dev")
    try:
        kernels.tools()
    except FileNotFoundError as err:
        pytest.fail(f"missing {err} (scripts/setup installs it)")
    return path


def environment(settings: Optional[Dict[str, str]] = None) -> Dict[str, str]:
    return compiler_env("MLBRIDGE_MLIR_PLUGIN", settings)


def tile(
    plugin: Path,
    source: Path,
    out: Path,
    options: Sequence[str] = (),
    settings: Optional[Dict[str, str]] = None,
) -> subprocess.CompletedProcess:
    pipeline = "builtin.module(mlbridge-tile{" + " ".join(options) + "})"
    done = subprocess.run(
        ["mlir-opt-19", f"--load-pass-plugin={plugin}", f"--pass-pipeline={pipeline}"]
        + [str(source), "-o", str(out)],
        capture_output=True,
        text=True,
        env=environment(settings),
        timeout=300,
    )
    assert done.returncode == 0, done.stderr
    return done


def kernel_ir(path: Path) -> str:
    """The @kernel function of a module (its @main has scf loops of its own)."""
    text = path.read_text()
    return text[text.index("func.func @kernel") : text.index("func.func @main")]


def write_kernel(tmp_path: Path, kernel: kernels.Kernel) -> Path:
    path = tmp_path / f"{kernel.name}.mlir"
    path.write_text(kernel.module(repeats=1))
    return path


#: Small kernels of every kind (quick to run).
SMALL = [
    kernels.matmul(64, 96, 80),
    kernels.batch_matmul(2, 32, 48, 40),
    kernels.matvec(128, 96),
    kernels.conv2d(12, 8, 8),
    kernels.row_sum(96, 80),
    kernels.column_sum(96, 80),
    kernels.elementwise_chain(96, 80),
    kernels.transpose_add(96),
]


def sizes_policy() -> TilePolicy:
    """Tiles contractions 16x16x16, convolutions 8x64x8, others untiled."""
    weights = np.zeros((LAYOUT.num_features, len(TILE_CHOICES)), np.float32)
    contraction = [name for name, _ in LAYOUT.inputs].index("is_contraction")
    convolution = [name for name, _ in LAYOUT.inputs].index("is_convolution")
    weights[contraction, 2] = 5
    weights[convolution, 5] = 5
    bias = np.zeros(len(TILE_CHOICES), np.float32)
    bias[0] = 1
    return TilePolicy(LAYOUT, weights, bias)


def expected(policy: TilePolicy, log: Path) -> List[List[int]]:
    return [policy.decide(n["features"]).tolist() for n in read_tiling_log(log)]


@pytest.mark.slow
def test_without_a_model_the_pass_uses_its_own_sizes_and_an_echo_gives_the_same_ir(
    plugin, tmp_path
):
    for kernel in kernels.suite():
        source = write_kernel(tmp_path, kernel)
        log = tmp_path / f"{kernel.name}.jsonl"
        tile(plugin, source, tmp_path / "own.mlir", [f"log={log}"])
        tile(plugin, source, tmp_path / "echo.mlir", ["runner=echo:default_tile_sizes"])
        own = (tmp_path / "own.mlir").read_text()
        assert (tmp_path / "echo.mlir").read_text() == own, kernel.name
        nests = read_tiling_log(log)
        assert [n["source"] for n in nests] == ["default"] * len(nests)
        assert [n["tile_sizes"] for n in nests] == [
            n["features"]["default_tile_sizes"] for n in nests
        ]
        tiled = "scf.for" in kernel_ir(tmp_path / "own.mlir")
        assert tiled == any(any(n["tile_sizes"]) for n in nests), kernel.name


def test_features_describe_the_nest(plugin, tmp_path):
    source = write_kernel(tmp_path, kernels.matmul(64, 96, 80))
    log = tmp_path / "log.jsonl"
    tile(plugin, source, tmp_path / "out.mlir", [f"log={log}"])
    (nest,) = read_tiling_log(log)
    f = nest["features"]
    assert nest["operation"] == "linalg.matmul" and nest["function"] == "kernel"
    assert f["loop_ranges"] == [64, 96, 80] and f["num_loops"] == 3
    assert (f["num_parallel"], f["num_reduction"], f["is_contraction"]) == (2, 1, 1)
    assert f["is_convolution"] == 0 and f["element_bits"] == 32
    assert f["footprint_bytes"] == 4 * (64 * 80 + 80 * 96 + 64 * 96)
    assert f["default_tile_sizes"] == [32, 32, 32]
    source = write_kernel(tmp_path, kernels.conv2d(12, 8, 8))
    tile(plugin, source, tmp_path / "out.mlir", [f"log={tmp_path / 'conv.jsonl'}"])
    (nest,) = read_tiling_log(tmp_path / "conv.jsonl")
    assert nest["features"]["is_convolution"] == 1 and nest["features"]["num_loops"] == 7


@pytest.mark.parametrize("choice", [1, 3, 5, 7])
@pytest.mark.slow
def test_tiled_kernels_compute_what_untiled_ones_do(plugin, tmp_path, choice):
    policy = TilePolicy.choosing(LAYOUT, choice)
    model = tmp_path / "choice.onnx"
    policy.to_onnx(model)
    for kernel in SMALL:
        source = write_kernel(tmp_path, kernel)
        tile(plugin, source, tmp_path / "none.mlir", ["runner=none"])
        tile(plugin, source, tmp_path / "tiled.mlir", [f"runner=onnx:{model}"])
        if any(TILE_CHOICES[choice][:1]):
            assert "scf.for" in (tmp_path / "tiled.mlir").read_text(), kernel.name
        _, plain = kernels.run(tmp_path / "none.mlir", tmp_path)
        _, tiled = kernels.run(tmp_path / "tiled.mlir", tmp_path)
        assert tiled == pytest.approx(plain, rel=1e-5), kernel.name


def serve(base: Path, policy: TilePolicy, tmp_path: Path, *extra: str) -> subprocess.Popen:
    policy.save(tmp_path / "policy.npz")
    module = tmp_path / "served_policy.py"
    module.write_text(
        "from pathlib import Path\n"
        "from mlbridge.mlir.policy import LAYOUT, TilePolicy\n"
        "decide = TilePolicy.load_weights(LAYOUT, Path(__file__).with_name('policy.npz')).decide\n"
    )
    command = [sys.executable, "-m", "mlbridge", "serve", "--pipe", str(base), "--create"]
    command += ["--policy", f"{module}:decide", "--timeout", "60", *extra]
    host = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    for _ in range(200):
        if Path(f"{base}.out").exists():
            break
        subprocess.run(["sleep", "0.05"])
    return host


def test_a_python_policy_served_over_pipes_decides(plugin, tmp_path):
    policy = sizes_policy()
    conv = kernels.conv2d(12, 8, 8)
    host = serve(tmp_path / "channel", policy, tmp_path)
    log = tmp_path / "log.jsonl"
    try:
        runner = f'runner="pipe:{tmp_path / "channel"},protocol=extended,format=json"'
        tile(plugin, write_kernel(tmp_path, conv), tmp_path / "out.mlir", [runner, f"log={log}"])
        _, err = host.communicate(timeout=60)
    finally:
        host.kill()
    assert host.returncode == 0, err
    nests = read_tiling_log(log)
    assert [n["tile_sizes"] for n in nests] == expected(policy, log) == [[8, 64, 8]]
    assert [n["source"] for n in nests] == ["model"]


@pytest.mark.parametrize("kind", ["onnx", "aot", "torch"])
@pytest.mark.slow
def test_in_process_models_make_the_python_policys_decisions(plugin, tmp_path, kind):
    policy = sizes_policy()
    model = tmp_path / "tile.onnx"
    policy.to_onnx(model)
    if kind == "aot":
        from mlbridge.aot.loadable import build_aot_module

        model = build_aot_module(model, tmp_path / "aot", "TilePolicy")
    if kind == "torch":
        pytest.importorskip("torch")
        model = torchscript_of(policy, tmp_path)
    for kernel in SMALL:
        log = tmp_path / f"{kernel.name}.jsonl"
        done = tile(
            plugin,
            write_kernel(tmp_path, kernel),
            tmp_path / "out.mlir",
            [f"runner={kind}:{model}", f"log={log}"],
        )
        assert "mlbridge" not in done.stderr, done.stderr
        nests = read_tiling_log(log)
        assert [n["tile_sizes"] for n in nests] == expected(policy, log), kernel.name
        assert {n["source"] for n in nests} == {"model"}


TORCHSCRIPT = """
import sys
import numpy as np
import torch

data = np.load(sys.argv[1])


class Policy(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.weights = torch.from_numpy(data["weights"])
        self.bias = torch.from_numpy(data["bias"])
        self.choices = torch.from_numpy(data["choices"])

    def forward(self, num_loops, num_parallel, num_reduction, element_bits, num_inputs,
                num_outputs, footprint_bytes, body_ops, is_contraction, is_convolution,
                is_elementwise, loop_ranges, default_tile_sizes):
        x = torch.cat([num_loops, num_parallel, num_reduction, element_bits, num_inputs,
                       num_outputs, footprint_bytes, body_ops, is_contraction, is_convolution,
                       is_elementwise, loop_ranges, default_tile_sizes]).to(torch.float32)
        x = torch.log1p(torch.relu(x))
        best = torch.argmax(x @ self.weights + self.bias)
        return self.choices[best]


torch.jit.script(Policy()).save(sys.argv[2])
"""


def torchscript_of(policy: TilePolicy, tmp_path: Path) -> Path:
    policy.save(tmp_path / "weights.npz")
    script = tmp_path / "make_torch.py"
    script.write_text(TORCHSCRIPT)
    model = tmp_path / "tile.pt"
    subprocess.run(
        [sys.executable, str(script), str(tmp_path / "weights.npz"), str(model)], check=True
    )
    return model


def assert_falls_back(plugin, tmp_path, options, note, settings=None):
    """A remark naming the problem, and the pass's own IR."""
    source = write_kernel(tmp_path, kernels.matmul(64, 96, 80))
    tile(plugin, source, tmp_path / "own.mlir")
    done = tile(plugin, source, tmp_path / "x.mlir", options, settings)
    assert note in done.stderr, done.stderr
    assert (tmp_path / "x.mlir").read_text() == (tmp_path / "own.mlir").read_text()
    return done


@pytest.mark.slow
def test_a_missing_model_leaves_the_pass_its_own_sizes(plugin, tmp_path):
    for options in (
        [f"runner=onnx:{tmp_path / 'missing.onnx'}"],
        [f"runner=aot:{tmp_path / 'missing.so'}"],
        [f"runner=torch:{tmp_path / 'missing.pt'}"],
    ):
        assert_falls_back(plugin, tmp_path, options, "the pass's own tile sizes are used")


def test_a_model_of_other_shapes_is_refused(plugin, tmp_path):
    import onnx
    from onnx import TensorProto, helper

    graph = helper.make_graph(
        [helper.make_node("Identity", ["default_tile_sizes"], ["tile_sizes"])],
        "wrong",
        [helper.make_tensor_value_info("default_tile_sizes", TensorProto.INT64, [2])],
        [helper.make_tensor_value_info("tile_sizes", TensorProto.INT64, [2])],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    model.ir_version = 8
    onnx.save(model, str(tmp_path / "wrong.onnx"))
    assert_falls_back(
        plugin, tmp_path, [f"runner=onnx:{tmp_path / 'wrong.onnx'}"], "default_tile_sizes"
    )
    assert_falls_back(plugin, tmp_path, ["runner=constant:4"], "must have one element")


def test_answers_out_of_range_fall_back(plugin, tmp_path):
    # A policy answering tile sizes -8: out of range.
    layout = Layout(LAYOUT.inputs, np.array([[-8, -8, -8], [0, 0, 0]], np.int64), LAYOUT.output)
    policy = LinearChoicePolicy.choosing(layout, 0)
    policy.to_onnx(tmp_path / "bad.onnx")
    done = assert_falls_back(
        plugin, tmp_path, [f"runner=onnx:{tmp_path / 'bad.onnx'}"], "tile size -8"
    )
    assert "1 of 1 nests fell back" in done.stderr


def test_a_peer_that_dies_leaves_the_rest_to_the_pass(plugin, tmp_path):
    source = tmp_path / "two.mlir"
    kernel = kernels.matmul(64, 96, 80)
    text = kernel.module(1)
    second = text[text.index("func.func @kernel") : text.index("func.func @main")]
    source.write_text(text + second.replace("@kernel", "@kernel2"))
    host = serve(
        tmp_path / "channel", TilePolicy.choosing(LAYOUT, 1), tmp_path, "--max-requests", "1"
    )
    log = tmp_path / "log.jsonl"
    try:
        done = tile(
            plugin,
            source,
            tmp_path / "x.mlir",
            [f"runner=pipe:{tmp_path / 'channel'}", f"log={log}"],
        )
        host.communicate(timeout=60)
    finally:
        host.kill()
    nests = read_tiling_log(log)
    assert [n["source"] for n in nests] == ["model", "fallback"]
    assert nests[0]["tile_sizes"] == [8, 8, 8] and nests[1]["tile_sizes"] == [32, 32, 32]
    assert "1 of 2 nests fell back" in done.stderr


def test_the_statistics_record_counts_what_the_log_shows(plugin, tmp_path):
    """One record per module (mlbridge.run_stats), from the pass option or
    the environment: its nests are decisions, the model's and the
    fallbacks counted as the log shows them."""
    source, stats = tmp_path / "k.mlir", tmp_path / "stats.jsonl"
    source.write_text(kernels.matmul(64, 96, 80).module(1))
    tile(plugin, source, tmp_path / "a.mlir", ["runner=constant:0", f"stats={stats}"])
    tile(plugin, source, tmp_path / "b.mlir", [], {"MLBRIDGE_MLIR_STATS": str(stats)})
    refused, plain = read_run_stats(stats)
    assert (refused.tool, refused.unit, refused.runner) == (
        "mlir-tiling",
        str(source),
        "constant:0",
    )
    assert (refused.decisions, refused.answered, refused.fallbacks) == (1, 0, 1)
    assert refused.first_error is not None
    assert (plain.runner, plain.decisions, plain.answered, plain.by_design) == ("none", 1, 0, 1)


def test_bad_configurations_and_logs_are_reported(plugin, tmp_path):
    assert_falls_back(plugin, tmp_path, ["runner=bogus:1"], "unknown runner 'bogus'")
    assert_falls_back(plugin, tmp_path, [], "unknown runner", {"MLBRIDGE_MLIR_RUNNER": "bogus"})
    done = assert_falls_back(
        plugin, tmp_path, [f"log={tmp_path / 'no' / 'log.jsonl'}"], "the tiling log: cannot open"
    )
    assert done.returncode == 0


@pytest.mark.parametrize("kind", KINDS)
def test_a_log_that_is_not_a_regular_file_is_refused(plugin, tmp_path, kind):
    log, unchanged = plant(tmp_path, kind)
    done = assert_falls_back(plugin, tmp_path, [f"log={log}"], "the tiling log: cannot open")
    assert done.returncode == 0
    unchanged()


def test_the_pass_describes_itself_and_tiles_nothing(plugin):
    """``describe=FILE``: the pass's options, features and answer
    (docs/plugin-description.md), from the table its parser reads."""
    from mlbridge.mlir.features import FEATURES, OUTPUT_NAME
    from mlbridge.plugin_description import describe_plugin

    described = describe_plugin("mlir_plugin", plugin, "mlir-opt-19", env=environment())
    assert described.tool == "mlir-tiling"
    assert [o.key for o in described.options] == ["runner", "log", "stats", "describe"]
    assert described.option("log").variable == "MLBRIDGE_MLIR_LOG"
    assert [(s.name, s.element_count) for s in described.features] == list(FEATURES)
    assert [s.name for s in described.answers] == [OUTPUT_NAME]
