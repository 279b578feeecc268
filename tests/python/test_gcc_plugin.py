"""The GCC plugin (mlbridge_gcc.so) in stock gcc-12: GCC's own objects when no
model decides, a model's factors applied (served from Python over pipes, or
in-process through ONNX Runtime and AOT modules), and every fault path
leaving the loops to GCC while the compilation succeeds.

The plugin is the installed one (``mlbridge config --gcc-plugin``), or the one
MLBRIDGE_GCC_PLUGIN names (ctest passes the sanitizer build's, with the
runtimes to preload in MLBRIDGE_GCC_PLUGIN_PRELOAD)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Dict, List, Optional, Sequence, Tuple

import numpy as np
import pytest
from compiler_plugins import compiler_env as plugin_compiler_env
from compiler_plugins import plugin_under_test
from hostile_paths import KINDS, plant

from mlbridge.gcc import FACTORS, FEATURE_NAMES, UnrollPolicy, read_decision_log
from mlbridge.run_stats import read_run_stats

ROOT = Path(__file__).resolve().parents[2]
LOOPS = ROOT / "tests" / "data" / "gcc_loops.c"
#: Loops of gcc_loops.c the plugin asks about (all but the pragma's: dot, saxpy,
#: the outer one of sum_matrix, walk, checksum).
ASKED = 5


@pytest.fixture(scope="module")
def plugin() -> Path:
    path = plugin_under_test("MLBRIDGE_GCC_PLUGIN", "gcc", "gcc_plugin", "gcc-12-plugin-dev")
    if shutil.which("gcc-12") is None:
        pytest.fail("gcc-12 is missing (scripts/setup installs it)")
    return path


def compiler_env(settings: Optional[Dict[str, str]] = None) -> Dict[str, str]:
    return plugin_compiler_env("MLBRIDGE_GCC_PLUGIN", settings)


def gcc(
    source: Path,
    out: Path,
    plugin: Optional[Path] = None,
    args: Sequence[str] = (),
    settings: Optional[Dict[str, str]] = None,
    timeout: float = 300,
) -> subprocess.CompletedProcess:
    """gcc-12 -O2 -c SOURCE -o OUT, loading the plugin with -fplugin-arg-mlbridge_gcc-ARGS."""
    command = ["gcc-12", "-O2", "-c", str(source), "-o", str(out)]
    if plugin is not None:
        command += [f"-fplugin={plugin}"] + [f"-fplugin-arg-mlbridge_gcc-{a}" for a in args]
    done = subprocess.run(
        command, capture_output=True, text=True, env=compiler_env(settings), timeout=timeout
    )
    assert done.returncode == 0, done.stderr
    return done


def decisions(log: Path) -> List[Tuple[str, int, str]]:
    return [(d["function"], d["factor"], d["source"]) for d in read_decision_log(log)]


def policy_file(tmp_path: Path, policy: UnrollPolicy) -> Path:
    """A module whose ``decide`` is ``policy``'s, for mlbridge serve."""
    policy.save(tmp_path / "policy.npz")
    path = tmp_path / "served_policy.py"
    path.write_text(
        "from pathlib import Path\n"
        "from mlbridge.gcc import UnrollPolicy\n"
        "decide = UnrollPolicy.load(Path(__file__).with_name('policy.npz')).decide\n"
    )
    return path


def serve(base: Path, policy: Path, *extra: str) -> subprocess.Popen:
    """mlbridge serve on pipe channel ``base`` (FIFOs made first)."""
    os.mkfifo(f"{base}.in", 0o600)
    os.mkfifo(f"{base}.out", 0o600)
    command = [sys.executable, "-m", "mlbridge", "serve", "--pipe", str(base)]
    command += ["--policy", f"{policy}:decide", "--timeout", "60", *extra]
    return subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def mixed_policy() -> UnrollPolicy:
    """Answers 8 for loops with a known trip count, 1 for the others."""
    weights = np.zeros((len(FEATURE_NAMES), len(FACTORS)), np.float32)
    weights[FEATURE_NAMES.index("trip_count"), FACTORS.index(8)] = 1
    bias = np.zeros(len(FACTORS), np.float32)
    bias[FACTORS.index(1)] = 0.5
    return UnrollPolicy(weights, bias)


def expected(policy: UnrollPolicy, log: Path) -> List[int]:
    return [
        policy.decide(d["features"]) if d["source"] != "pragma" else d["factor"]
        for d in read_decision_log(log)
    ]


def test_without_a_model_the_object_is_plain_gccs(plugin, tmp_path):
    gcc(LOOPS, tmp_path / "plain.o")
    gcc(LOOPS, tmp_path / "loaded.o", plugin)
    gcc(LOOPS, tmp_path / "none.o", plugin, ["runner=none", f"log={tmp_path / 'log.jsonl'}"])
    plain = (tmp_path / "plain.o").read_bytes()
    assert (tmp_path / "loaded.o").read_bytes() == plain
    assert (tmp_path / "none.o").read_bytes() == plain
    loops = decisions(tmp_path / "log.jsonl")
    assert [s for _, _, s in loops].count("gcc") == ASKED and ("sum_matrix", 4, "pragma") in loops


def test_a_model_answering_zero_asks_about_every_loop_and_changes_nothing(plugin, tmp_path):
    gcc(LOOPS, tmp_path / "plain.o")
    log = tmp_path / "log.jsonl"
    gcc(LOOPS, tmp_path / "zero.o", plugin, ["runner=constant:0", f"log={log}"])
    assert (tmp_path / "zero.o").read_bytes() == (tmp_path / "plain.o").read_bytes()
    loops = read_decision_log(log)
    assert [d["source"] for d in loops].count("model") == ASKED
    saxpy = next(d for d in loops if d["function"] == "saxpy")["features"]
    assert saxpy["trip_count"] == 1000 and saxpy["is_innermost"] == 1
    assert saxpy["num_loads"] == 2 and saxpy["num_stores"] == 1 and saxpy["num_float_ops"] == 2
    walk = next(d for d in loops if d["function"] == "walk")["features"]
    assert walk["trip_count"] == -1 and walk["num_calls"] == 1
    nest = [d for d in loops if d["function"] == "sum_matrix"]
    assert sorted(d["features"]["loop_depth"] for d in nest) == [1, 2]


def test_a_factor_is_applied_as_the_pragma_would_be(plugin, tmp_path):
    gcc(LOOPS, tmp_path / "plain.o")
    log = tmp_path / "log.jsonl"
    gcc(LOOPS, tmp_path / "four.o", plugin, ["runner=constant:4", f"log={log}"])
    assert (tmp_path / "four.o").read_bytes() != (tmp_path / "plain.o").read_bytes()
    assert {(f, s) for _, f, s in decisions(log)} == {(4, "model"), (4, "pragma")}
    # The same factor written as pragmas in the source gives the same code.
    pragmas = tmp_path / "pragmas.c"
    text = LOOPS.read_text().replace("#pragma GCC unroll 4\n", "")
    lines = []
    for line in text.splitlines():
        if line.strip().startswith(("for (", "while (")):
            lines.append("#pragma GCC unroll 4")
        lines.append(line)
    pragmas.write_text("\n".join(lines) + "\n")
    gcc(pragmas, tmp_path / "pragmas.o")
    gcc(LOOPS, tmp_path / "four_again.o", plugin, ["runner=constant:4"])
    text_of = [
        subprocess.run(
            ["objdump", "-d", "--no-show-raw-insn", str(tmp_path / o)],
            capture_output=True,
            text=True,
            check=True,
        ).stdout.split("\n", 3)[3]
        for o in ("pragmas.o", "four_again.o")
    ]
    assert text_of[0] == text_of[1]


def test_a_python_policy_served_over_pipes_decides(plugin, tmp_path):
    policy = mixed_policy()
    base = tmp_path / "channel"
    host = serve(base, policy_file(tmp_path, policy), "--log", str(tmp_path / "train.log"))
    log = tmp_path / "log.jsonl"
    try:
        # A value holding '=' (GCC's own parsing of plugin arguments cuts it).
        runner = f"runner=pipe:{base},protocol=mlgo"
        gcc(LOOPS, tmp_path / "served.o", plugin, [runner, f"log={log}"])
        _, err = host.communicate(timeout=60)
    finally:
        host.kill()
    assert host.returncode == 0, err
    assert [f for _, f, _ in decisions(log)] == expected(policy, log)
    assert {f for _, f, s in decisions(log) if s == "model"} == {1, 8}
    assert (tmp_path / "train.log").stat().st_size > 0


@pytest.mark.parametrize("fmt", ["json", "protobuf"])
def test_the_extended_protocol_serves_too(plugin, tmp_path, fmt):
    policy = mixed_policy()
    base = tmp_path / "channel"
    host = serve(base, policy_file(tmp_path, policy))
    log = tmp_path / "log.jsonl"
    try:
        gcc(
            LOOPS,
            tmp_path / "served.o",
            plugin,
            settings={
                "MLBRIDGE_GCC_RUNNER": f"pipe:{base},protocol=extended,format={fmt}",
                "MLBRIDGE_GCC_LOG": str(log),
            },
        )
        host.communicate(timeout=60)
    finally:
        host.kill()
    assert [f for _, f, _ in decisions(log)] == expected(policy, log)


@pytest.mark.parametrize("kind", ["onnx", "aot"])
@pytest.mark.slow
def test_in_process_models_make_the_python_policys_decisions(plugin, tmp_path, kind):
    from mlbridge.aot.loadable import build_aot_module

    policy = mixed_policy()
    model = tmp_path / "unroll.onnx"
    policy.to_onnx(model)
    path = model if kind == "onnx" else build_aot_module(model, tmp_path / "aot", "UnrollPolicy")
    log = tmp_path / "log.jsonl"
    done = gcc(LOOPS, tmp_path / "model.o", plugin, [f"runner={kind}:{path}", f"log={log}"])
    assert "mlbridge" not in done.stderr
    assert [f for _, f, _ in decisions(log)] == expected(policy, log)
    gcc(LOOPS, tmp_path / "plain.o")
    assert (tmp_path / "model.o").read_bytes() != (tmp_path / "plain.o").read_bytes()


TORCHSCRIPT_POLICY = """
import sys
import torch


class CountedLoops(torch.nn.Module):
    def forward(self, trip_count):
        return torch.where(trip_count > 0, 8, 1).to(torch.int64)


torch.jit.script(CountedLoops()).save(sys.argv[1])
"""


@pytest.mark.slow
def test_a_torchscript_model_decides_through_the_c_apis_torch_module(plugin, tmp_path):
    """LibTorch in-process: the C API opens its torch runner module on
    demand; the model takes one of the 14 features, by name."""
    pytest.importorskip("torch")
    script = tmp_path / "make_policy.py"
    script.write_text(TORCHSCRIPT_POLICY)
    model = tmp_path / "policy.pt"
    subprocess.run([sys.executable, str(script), str(model)], check=True)
    log = tmp_path / "log.jsonl"
    done = gcc(LOOPS, tmp_path / "x.o", plugin, [f"runner=torch:{model}", f"log={log}"])
    assert "mlbridge" not in done.stderr, done.stderr
    loops = [d for d in read_decision_log(log) if d["source"] == "model"]
    assert len(loops) == ASKED
    for d in loops:
        assert d["factor"] == (8 if d["features"]["trip_count"] > 0 else 1), d


def assert_falls_back(plugin, tmp_path, args, note, settings=None, source="fallback"):
    """The compilation succeeds with a note matching ``note``, and every
    loop is GCC's (the object is plain GCC's)."""
    gcc(LOOPS, tmp_path / "plain.o")
    log = tmp_path / "log.jsonl"
    done = gcc(LOOPS, tmp_path / "x.o", plugin, [*args, f"log={log}"], settings)
    assert note in done.stderr, done.stderr
    assert (tmp_path / "x.o").read_bytes() == (tmp_path / "plain.o").read_bytes()
    if log.exists():
        assert {s for _, _, s in decisions(log)} <= {source, "pragma"}
    return done


def test_a_missing_model_leaves_every_loop_to_gcc(plugin, tmp_path):
    assert_falls_back(
        plugin, tmp_path, [f"runner=aot:{tmp_path / 'missing.so'}"], "GCC decides every loop"
    )
    assert_falls_back(
        plugin, tmp_path, [f"runner=onnx:{tmp_path / 'missing.onnx'}"], "missing.onnx"
    )


def test_a_model_of_other_shapes_is_refused(plugin, tmp_path):
    import onnx
    from onnx import TensorProto, helper

    # One float input instead of the plugin's 14 int64 ones.
    graph = helper.make_graph(
        [helper.make_node("Cast", ["x"], [OUTPUT], to=TensorProto.INT64)],
        "wrong",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1])],
        [helper.make_tensor_value_info(OUTPUT, TensorProto.INT64, [1])],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    model.ir_version = 8
    onnx.save(model, str(tmp_path / "wrong.onnx"))
    done = assert_falls_back(
        plugin, tmp_path, [f"runner=onnx:{tmp_path / 'wrong.onnx'}"], "GCC decides every loop"
    )
    assert "loop_depth" in done.stderr or "x" in done.stderr


OUTPUT = "unroll_factor"


def test_answers_out_of_range_fall_back(plugin, tmp_path):
    done = assert_falls_back(plugin, tmp_path, ["runner=constant:99"], "outside [0, 16]")
    assert f"{ASKED} of {ASKED} loops fell back" in done.stderr
    assert_falls_back(plugin, tmp_path, ["runner=constant:-2"], "unroll factor -2")
    # A larger cap accepts it.
    log = tmp_path / "log2.jsonl"
    gcc(LOOPS, tmp_path / "y.o", plugin, ["runner=constant:32", "max-unroll=32", f"log={log}"])
    assert {f for _, f, s in decisions(log) if s == "model"} == {32}


def test_a_peer_that_dies_mid_compilation_leaves_the_rest_to_gcc(plugin, tmp_path):
    base = tmp_path / "channel"
    policy = policy_file(tmp_path, UnrollPolicy.constant(8))
    host = serve(base, policy, "--max-requests", "2")
    log = tmp_path / "log.jsonl"
    try:
        done = gcc(LOOPS, tmp_path / "x.o", plugin, [f"runner=pipe:{base}", f"log={log}"])
        host.communicate(timeout=60)
    finally:
        host.kill()
    sources = [s for _, _, s in decisions(log) if s != "pragma"]
    assert sources[:2] == ["model", "model"] and set(sources[2:]) == {"fallback"}
    assert f"{ASKED - 2} of {ASKED} loops fell back" in done.stderr


def test_the_statistics_record_counts_what_the_log_shows(plugin, tmp_path):
    """One record per translation unit (mlbridge.run_stats): every loop is a
    decision; the model's answers, the fallbacks and the pragma agree with
    the decision log, whichever way the option is given."""
    log, stats = tmp_path / "log.jsonl", tmp_path / "stats.jsonl"
    gcc(LOOPS, tmp_path / "a.o", plugin, ["runner=constant:99", f"log={log}", f"stats={stats}"])
    gcc(
        LOOPS,
        tmp_path / "b.o",
        plugin,
        settings={"MLBRIDGE_GCC_RUNNER": "constant:4", "MLBRIDGE_GCC_STATS": str(stats)},
    )
    gcc(LOOPS, tmp_path / "c.o", plugin, [f"stats={stats}"])
    fell, model, none = read_run_stats(stats)
    sources = [s for _, _, s in decisions(log)]
    assert (fell.tool, fell.unit, fell.runner) == ("gcc-unroll", str(LOOPS), "constant:99")
    assert fell.decisions == len(sources) == ASKED + 1 and fell.details["pragmas"] == 1
    assert (fell.answered, fell.fallbacks) == (0, sources.count("fallback")) == (0, ASKED)
    assert fell.first_error is not None and "outside [0, 16]" in fell.first_error
    assert (model.answered, model.fallbacks, model.first_error) == (ASKED, 0, None)
    assert (none.runner, none.decisions, none.answered, none.by_design) == (
        "none",
        ASKED + 1,
        0,
        ASKED + 1,
    )


def test_a_peer_that_stalls_costs_one_deadline(plugin, tmp_path):
    base = tmp_path / "channel"
    os.mkfifo(f"{base}.in", 0o600)
    os.mkfifo(f"{base}.out", 0o600)
    # Opens both ends as a host would, reads, never answers.
    stall = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "import os, sys, time\n"
            "r = os.open(sys.argv[1] + '.out', os.O_RDONLY)\n"
            "w = os.open(sys.argv[1] + '.in', os.O_WRONLY)\n"
            "time.sleep(60)\n",
            str(base),
        ]
    )
    try:
        done = gcc(
            LOOPS,
            tmp_path / "x.o",
            plugin,
            [f"runner=pipe:{base},timeout_ms=300"],
            timeout=60,
        )
    finally:
        stall.kill()
        stall.wait()
    assert "fell back" in done.stderr and "loops" in done.stderr


def test_bad_options_are_reported_and_gcc_decides(plugin, tmp_path):
    assert_falls_back(plugin, tmp_path, ["unroll=3"], "unknown option 'unroll'")
    assert_falls_back(plugin, tmp_path, ["runner=constant:4", "max-unroll=0"], "max-unroll")
    assert_falls_back(plugin, tmp_path, ["runner=bogus:1"], "GCC decides every loop")
    assert_falls_back(
        plugin, tmp_path, [], "MLBRIDGE_GCC_MAX_UNROLL", {"MLBRIDGE_GCC_MAX_UNROLL": "x"}
    )


def test_an_unwritable_log_is_reported(plugin, tmp_path):
    done = gcc(LOOPS, tmp_path / "x.o", plugin, [f"log={tmp_path / 'no' / 'log.jsonl'}"])
    assert "the decision log: cannot open" in done.stderr


@pytest.mark.parametrize("kind", KINDS)
def test_a_log_that_is_not_a_regular_file_is_refused(plugin, tmp_path, kind):
    log, unchanged = plant(tmp_path, kind)
    done = gcc(LOOPS, tmp_path / "x.o", plugin, [f"log={log}"], timeout=60)
    assert "the decision log: cannot open" in done.stderr, done.stderr
    unchanged()


def test_plugin_arguments_win_over_the_environment(plugin, tmp_path):
    log = tmp_path / "log.jsonl"
    gcc(
        LOOPS,
        tmp_path / "x.o",
        plugin,
        ["runner=constant:2"],
        {"MLBRIDGE_GCC_RUNNER": "constant:8", "MLBRIDGE_GCC_LOG": str(log)},
    )
    assert {f for _, f, s in decisions(log) if s == "model"} == {2}


def test_the_decision_log_escapes_names(plugin, tmp_path):
    source = tmp_path / 'odd "name".c'
    source.write_text(LOOPS.read_text())
    log = tmp_path / "log.jsonl"
    gcc(source, tmp_path / "x.o", plugin, [f"log={log}"])
    assert {d["file"] for d in read_decision_log(log)} == {str(source)}


def test_the_plugin_describes_itself_and_decides_nothing(plugin):
    """``describe=FILE``: the plugin's options, features and answer
    (docs/plugin-description.md), from the table its parser reads."""
    from mlbridge.gcc.features import FEATURE_NAMES, OUTPUT_NAME
    from mlbridge.plugin_description import describe_plugin

    described = describe_plugin("gcc_plugin", plugin, "gcc-12", env=compiler_env())
    assert described.tool == "gcc-unroll"
    assert [o.key for o in described.options] == [
        "runner",
        "max-unroll",
        "log",
        "stats",
        "describe",
    ]
    assert described.option("max-unroll").maximum == 1024
    assert [s.name for s in described.features] == list(FEATURE_NAMES)
    assert [s.name for s in described.answers] == [OUTPUT_NAME]
