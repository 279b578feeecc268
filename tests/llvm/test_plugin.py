"""The mlbridge-inline-advisor plugin in stock opt-N and clang-N (the LLVM
major it was built for, conftest.TOOLS): it
loads, a default policy served over pipes or gRPC reproduces LLVM's
inlining byte for byte on real programs, in-process models (ONNX Runtime,
AOT module) of LLVM's rule do too, runner failures fall back to LLVM's
advice, and the training log and statistics are right."""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path
from typing import Any, Dict, List, Optional, Sequence, Tuple

import numpy as np
import pytest
from conftest import TOOLS
from hostile_paths import KINDS, plant

from mlbridge.run_stats import read_run_stats
from mlbridge.training_log import read_training_log

ROOT = Path(__file__).resolve().parents[2]
DEMO = ROOT / "python" / "mlbridge" / "corpus" / "bundled"
CORPUS = ROOT / ".cache" / "corpus"


def llvm_rule_model(path: Path) -> None:
    """An ONNX model of LLVM's -Oz rule as MLGO's features show it: inline
    iff cost_estimate <= 0 (argmax of [c - 0.5, 0.5 - c])."""
    from onnx import TensorProto, helper, numpy_helper, save

    nodes = [
        helper.make_node("Cast", ["cost_estimate"], ["c"], to=TensorProto.FLOAT),
        helper.make_node("Sub", ["c", "half"], ["shifted"]),
        helper.make_node("Neg", ["shifted"], ["negated"]),
        helper.make_node("Concat", ["shifted", "negated"], ["pair"], axis=0),
        helper.make_node("Reshape", ["pair", "row"], ["logits"]),
        helper.make_node("ArgMax", ["logits"], ["inlining_decision"], axis=1, keepdims=0),
    ]
    graph = helper.make_graph(
        nodes,
        "llvm_rule",
        [helper.make_tensor_value_info("cost_estimate", TensorProto.INT64, [1])],
        [helper.make_tensor_value_info("inlining_decision", TensorProto.INT64, [1])],
        [
            numpy_helper.from_array(np.float32(0.5), "half"),
            numpy_helper.from_array(np.asarray([1, 2], np.int64), "row"),
        ],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    model.ir_version = 8
    save(model, str(path))


def run(
    command: Sequence[str],
    env: Dict[str, str],
    extra: Optional[Dict[str, str]] = None,
    check: bool = True,
) -> subprocess.CompletedProcess:
    full = dict(env)
    full.update(extra or {})
    done = subprocess.run(list(command), env=full, capture_output=True, text=True, timeout=600)
    if check and done.returncode != 0:
        pytest.fail(f"{' '.join(command)} failed ({done.returncode}): {done.stderr[-3000:]}")
    return done


def records(path: Path) -> List[Dict[str, Any]]:
    """The plugin's statistics records (checked by mlbridge.run_stats), each
    with its details beside its own keys."""
    return [{**vars(r), **r.details} for r in read_run_stats(path)]


def stats(path: Path) -> Dict[str, int]:
    rows = records(path)
    assert rows, "the plugin wrote no statistics"
    assert all(r["tool"] == "inline-advisor" for r in rows), rows
    return {
        k: sum(r[k] for r in rows)
        for k in ("decisions", "inlined", "fallbacks", "compared", "agreed", "deferred")
    }


@pytest.fixture(scope="module")
def ir(tmp_path_factory) -> Path:
    """A real C program as unoptimised IR (for opt)."""
    out = tmp_path_factory.mktemp("ir") / "hashtable.ll"
    subprocess.run(
        [
            TOOLS.clang,
            "-Oz",
            "-S",
            "-emit-llvm",
            "-Xclang",
            "-disable-llvm-optzns",
            str(DEMO / "hashtable.c"),
            "-o",
            str(out),
        ],
        check=True,
    )
    return out


def opt(
    ir: Path,
    out: Path,
    plugin: Optional[Path],
    env: Dict[str, str],
    options: Sequence[str] = (),
    extra: Optional[Dict[str, str]] = None,
) -> subprocess.CompletedProcess:
    command = [
        TOOLS.opt,
        *([f"-load-pass-plugin={plugin}"] if plugin else []),
        *options,
        "-passes=default<Oz>",
        str(ir),
        "-S",
        "-o",
        str(out),
    ]
    return run(command, env, extra)


def clang(
    source: Path,
    out: Path,
    plugin: Optional[Path],
    env: Dict[str, str],
    flags: Sequence[str] = (),
    extra: Optional[Dict[str, str]] = None,
    check: bool = True,
) -> subprocess.CompletedProcess:
    plug = [f"-fpass-plugin={plugin}", f"-fplugin={plugin}"] if plugin else []
    return run(
        [TOOLS.clang, "-Oz", "-c", "-w", *plug, *flags, str(source), "-o", str(out)],
        env,
        extra,
        check,
    )


def test_loads_in_opt_and_changes_nothing_by_default(plugin, compiler_env, ir, tmp_path):
    opt(ir, tmp_path / "plain.ll", None, compiler_env)
    opt(ir, tmp_path / "plugin.ll", plugin, compiler_env)
    assert (tmp_path / "plain.ll").read_bytes() == (tmp_path / "plugin.ll").read_bytes()


@pytest.mark.parametrize("runner", ["default", "echo:inlining_default"])
def test_opt_options_and_default_runner_reproduce_llvm(plugin, compiler_env, ir, tmp_path, runner):
    opt(ir, tmp_path / "plain.ll", None, compiler_env)
    opt(
        ir,
        tmp_path / "default.ll",
        plugin,
        compiler_env,
        [f"-mlbridge-runner={runner}", f"-mlbridge-stats={tmp_path / 's.jsonl'}"],
    )
    assert (tmp_path / "plain.ll").read_bytes() == (tmp_path / "default.ll").read_bytes()
    s = stats(tmp_path / "s.jsonl")
    assert s["decisions"] > 20 and s["fallbacks"] == 0
    # The runner reads LLVM's decision: it is computed at every call site.
    assert s["agreed"] == s["compared"] == s["decisions"]


def test_environment_names_are_mlbridge_inline_and_the_old_ones_are_not_read(
    plugin, compiler_env, ir, tmp_path
):
    """MLBRIDGE_INLINE_<OPTION>, as every plugin names its variables; the
    names without INLINE_ (aliases before 0.2.0) are no plugin's."""
    opt(ir, tmp_path / "plain.ll", None, compiler_env)
    plain = (tmp_path / "plain.ll").read_text().count("call ")
    stats = tmp_path / "s.jsonl"
    out = tmp_path / "out.ll"
    settings = {"MLBRIDGE_INLINE_RUNNER": "constant:0", "MLBRIDGE_INLINE_STATS": str(stats)}
    opt(ir, out, plugin, compiler_env, extra=settings)
    row = records(stats)[0]
    assert out.read_text().count("call ") > plain and row["runner"] == "constant:0"
    stats.unlink()
    opt(
        ir,
        out,
        plugin,
        compiler_env,
        extra={"MLBRIDGE_RUNNER": "constant:0", "MLBRIDGE_STATS": str(stats)},
    )
    assert out.read_text().count("call ") == plain and not stats.exists()


@pytest.mark.parametrize(
    "options",
    [["-mlbridge-runner=constant", "-mlbridge-constant=0"], ["-mlbridge-runner=constant:0"]],
)
def test_constant_runner_changes_inlining(plugin, compiler_env, ir, tmp_path, options):
    opt(ir, tmp_path / "plain.ll", None, compiler_env)
    opt(
        ir,
        tmp_path / "never.ll",
        plugin,
        compiler_env,
        options + [f"-mlbridge-stats={tmp_path / 's.jsonl'}"],
    )
    calls = [p.read_text().count("call ") for p in (tmp_path / "plain.ll", tmp_path / "never.ll")]
    assert calls[1] > calls[0]
    s = stats(tmp_path / "s.jsonl")
    assert s["inlined"] == 0
    # A runner that reads no input: LLVM's own decision is never computed.
    assert s["decisions"] > 0 and s["compared"] == 0


ODR_PROGRAM = """
int counter;
inline int bump(int x) { counter += x; return counter * 3 + x; }
int plain(int x) { counter ^= x; return counter - x * 7; }
int user(int a, int b) { return bump(a) + bump(b) + plain(a) + plain(b); }
"""


def test_in_process_runners_learn_which_callees_are_linkonce_odr(plugin, compiler_env, tmp_path):
    """The plugin offers in-process runners "is_callee_linkonce_odr": a
    runner answering it inlines the C++ inline function's calls (its copy
    is then dropped) and none of the external function's."""
    source = tmp_path / "odr.cpp"
    source.write_text(ODR_PROGRAM)
    out, stats_path = tmp_path / "odr.ll", tmp_path / "odr.jsonl"
    clang(
        source,
        out,
        plugin,
        compiler_env,
        ["-S", "-emit-llvm"],
        {
            "MLBRIDGE_INLINE_RUNNER": "echo:is_callee_linkonce_odr",
            "MLBRIDGE_INLINE_STATS": str(stats_path),
        },
    )
    ir = out.read_text()
    user = ir[ir.index("@_Z4userii(") :]
    user = user[: user.index("\n}")]
    assert user.count("call ") == 2 and user.count("@_Z5plaini(") == 2, user
    assert "define linkonce_odr" not in ir and "_Z4bumpi" not in ir, ir
    s = stats(stats_path)
    assert s["fallbacks"] == 0 and s["inlined"] == 2 and s["decisions"] == 4, s


#: C++ of many linkonce_odr callees (templates, inline members, a recursive
#: one), some call sites never inlined (noinline) or always (always_inline).
TEMPLATE_PROGRAM = """
#include <algorithm>
#include <vector>
template <typename T> struct Acc {
  std::vector<T> v;
  void add(T x) { v.push_back(x * 3 + 1); }
  T sum() const { T s = 0; for (T x : v) s += x; return s; }
};
template <typename T> T fib(T n) { return n < 2 ? n : fib(n - 1) + fib(n - 2); }
inline __attribute__((noinline)) int never(int x) { return x * x - 7; }
inline __attribute__((always_inline)) int always(int x) { return x ^ 0x55; }
static int helper(int x) { return x * 5 + (x >> 2); }
int plain(int x) { return helper(x) - helper(x + 1); }
int api(int n) {
  Acc<int> a; Acc<long> b;
  for (int i = 0; i < n; ++i) { a.add(i); b.add(always(i)); }
  std::sort(a.v.begin(), a.v.end());
  return a.sum() + int(b.sum()) + fib(n) + never(n) + plain(n) + helper(n);
}
"""


@pytest.mark.parametrize("kind", ["onnx", "aot"])
def test_where_the_model_says_it_answers_llvm_the_plugin_skips_it_exactly(
    plugin, compiler_env, tmp_path, kind
):
    """The shipped size model says (its metadata, carried into its AOT
    module) that at calls of linkonce_odr functions it answers LLVM's
    decision: there the plugin gives that decision without computing
    MLGO's features or running it. The objects are those of the same model
    asked everywhere, byte for byte; a training log turns it off."""
    import onnx
    from mlbridge.aot.loadable import build_aot_module
    from mlbridge.models import model_path
    from mlbridge.train.export import DEFERS_WHEN_KEY

    if TOOLS.major != 19:
        pytest.skip("the shipped model reads LLVM 19's features (LLVM 16 lacks some)")
    shipped = onnx.load(str(model_path("inlining-size")))
    assert DEFERS_WHEN_KEY in {p.key for p in shipped.metadata_props}
    silent = onnx.ModelProto()
    silent.CopyFrom(shipped)
    del silent.metadata_props[:]
    models = {}
    for name, model in (("says", shipped), ("silent", silent)):
        onnx.save(model, str(tmp_path / f"{name}.onnx"))
        models[name] = tmp_path / f"{name}.onnx"
        if kind == "aot":
            models[name] = build_aot_module(models[name], tmp_path / f"aot-{name}", "SizeModel")
    source = tmp_path / "templates.cpp"
    source.write_text(TEMPLATE_PROGRAM)
    counts = {}
    for name, model in models.items():
        for log in (False, True):
            run_name = f"{name}{'-log' if log else ''}"
            settings = {
                "MLBRIDGE_INLINE_RUNNER": kind,
                "MLBRIDGE_INLINE_MODEL": str(model),
                "MLBRIDGE_INLINE_STATS": str(tmp_path / f"{run_name}.jsonl"),
            }
            if log:
                settings["MLBRIDGE_INLINE_LOG"] = str(tmp_path / f"{run_name}.log")
            clang(source, tmp_path / f"{run_name}.o", plugin, compiler_env, [], settings)
            counts[run_name] = stats(tmp_path / f"{run_name}.jsonl")
    objects = {n: (tmp_path / f"{n}.o").read_bytes() for n in counts}
    assert len(set(objects.values())) == 1, "the same decisions, the same object"
    says, silent_counts = counts["says"], counts["silent"]
    assert says["fallbacks"] == 0 and 0 < says["deferred"] < says["decisions"], says
    assert says["inlined"] == silent_counts["inlined"]
    assert silent_counts["deferred"] == counts["says-log"]["deferred"] == 0


def serve(policy: str, transport: str, where: Path) -> Tuple[subprocess.Popen, Dict[str, str]]:
    """`mlbridge serve` of ``policy`` for every compilation until killed, over
    ``transport``: "pipe" (channel base ``where``), "shm" (the same channel,
    tensors in shared memory) or "grpc" (unix socket ``where``). Returns the
    server and the plugin settings that reach it."""
    if transport in ("pipe", "shm"):
        where_args = ["--pipe", str(where), "--create", "--sessions", "0"]
        ready = [Path(f"{where}.in"), Path(f"{where}.out")]
        settings = {"MLBRIDGE_INLINE_RUNNER": "pipe", "MLBRIDGE_INLINE_CHANNEL": str(where)}
        if transport == "shm":
            settings = {"MLBRIDGE_INLINE_RUNNER": f"pipe:{where},protocol=shm"}
    else:
        where_args = ["--grpc", f"unix:{where}"]
        ready = [where]
        settings = {
            "MLBRIDGE_INLINE_RUNNER": "grpc",
            "MLBRIDGE_INLINE_GRPC_TARGET": f"unix:{where}",
        }
    server = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "mlbridge",
            "serve",
            *where_args,
            "--policy",
            policy,
            "--problem",
            "inlining",
        ],
        stderr=subprocess.PIPE,
    )
    deadline = time.monotonic() + 30
    while not all(path.exists() for path in ready):
        assert server.poll() is None, server.stderr.read().decode()
        assert time.monotonic() < deadline, "the server is not listening"
        time.sleep(0.05)
    return server, settings


def real_programs() -> List[tuple]:
    """(source, flags) of real C programs: the corpus's zstd when fetched,
    the bundled demo programs always."""
    programs = [(DEMO / "hashtable.c", []), (DEMO / "kernels.c", [])]
    zstd = CORPUS / "zstd" / "zstd"
    if (zstd / "zstd.c").exists():
        programs.append((zstd / "zstd.c", [f"-I{zstd}"]))
    return programs


@pytest.fixture(scope="module")
def plain_objects(tmp_path_factory, compiler_env) -> Dict[Path, bytes]:
    """``clang -Oz`` of each of :func:`real_programs`, compiled once for the
    tests that compare the plugin's objects with it."""
    out = tmp_path_factory.mktemp("plain") / "plain.o"
    objects = {}
    for source, flags in real_programs():
        clang(source, out, None, compiler_env, flags)
        objects[source] = out.read_bytes()
    return objects


@pytest.mark.parametrize("transport", ["pipe", "shm", "grpc"])
def test_served_default_policy_reproduces_clang_oz(
    plugin, compiler_env, plain_objects, tmp_path, transport
):
    """LLVM's own decision served by a Python process (the training set-up):
    the objects are LLVM's, byte for byte. LLVM's size cap on the ML inliner
    is lifted, as for any policy echoing LLVM's decision (the default
    inliner has none; on LLVM 16 it strikes in zstd)."""
    server, settings = serve("default", transport, tmp_path / "inline")
    settings["MLBRIDGE_INLINE_SIZE_INCREASE_THRESHOLD"] = "none"
    try:
        for source, flags in real_programs():
            clang(
                source,
                tmp_path / "served.o",
                plugin,
                compiler_env,
                flags,
                {**settings, "MLBRIDGE_INLINE_STATS": str(tmp_path / f"{source.stem}.jsonl")},
            )
            assert plain_objects[source] == (tmp_path / "served.o").read_bytes(), source.name
            s = stats(tmp_path / f"{source.stem}.jsonl")
            assert s["decisions"] > 0 and s["fallbacks"] == 0 and s["agreed"] == s["compared"]
    finally:
        server.kill()
        server.wait()


@pytest.mark.parametrize("kind", ["onnx", "aot"])
def test_in_process_model_of_llvm_rule_reproduces_clang_oz(
    plugin, compiler_env, plain_objects, tmp_path, kind
):
    from mlbridge.aot.loadable import build_aot_module

    model = tmp_path / "rule.onnx"
    llvm_rule_model(model)
    path = model if kind == "onnx" else build_aot_module(model, tmp_path / "aot", "LlvmRule")
    for source, flags in real_programs():
        clang(
            source,
            tmp_path / "model.o",
            plugin,
            compiler_env,
            flags,
            {
                "MLBRIDGE_INLINE_RUNNER": kind,
                "MLBRIDGE_INLINE_MODEL": str(path),
                "MLBRIDGE_INLINE_COMPARE_DEFAULT": "1",
                "MLBRIDGE_INLINE_STATS": str(tmp_path / f"{source.stem}.jsonl"),
                # A model of LLVM's rule reproduces -Oz with the size cap lifted.
                "MLBRIDGE_INLINE_SIZE_INCREASE_THRESHOLD": "none",
            },
        )
        s = stats(tmp_path / f"{source.stem}.jsonl")
        assert s["fallbacks"] == 0 and s["agreed"] == s["compared"] > 0, (source.name, s)
        assert plain_objects[source] == (tmp_path / "model.o").read_bytes()


ECHO_DEFAULT_TORCHSCRIPT = """
import sys
import torch


class EchoDefault(torch.nn.Module):
    def forward(self, inlining_default):
        return inlining_default.to(torch.int64).reshape(1)


torch.jit.script(EchoDefault()).save(sys.argv[1])
"""


def test_torchscript_model_in_process_reproduces_clang_oz(
    plugin, compiler_env, plain_objects, tmp_path
):
    """A TorchScript model through the plugin's torch runner module: it takes
    only LLVM's decision and answers it, so the objects are clang -Oz's."""
    pytest.importorskip("torch")
    script = tmp_path / "make_echo.py"
    script.write_text(ECHO_DEFAULT_TORCHSCRIPT)
    model = tmp_path / "echo_default.pt"
    subprocess.run([sys.executable, str(script), str(model)], check=True)
    for source, flags in real_programs():
        done = clang(
            source,
            tmp_path / "model.o",
            plugin,
            compiler_env,
            flags,
            {
                "MLBRIDGE_INLINE_RUNNER": f"torch:{model}",
                "MLBRIDGE_INLINE_STATS": str(tmp_path / f"{source.stem}.jsonl"),
                "MLBRIDGE_INLINE_SIZE_INCREASE_THRESHOLD": "none",
            },
        )
        assert "mlbridge" not in done.stderr, done.stderr
        s = stats(tmp_path / f"{source.stem}.jsonl")
        assert s["fallbacks"] == 0 and s["decisions"] > 0, (source.name, s)
        assert plain_objects[source] == (tmp_path / "model.o").read_bytes()


@pytest.mark.parametrize("kind", KINDS)
def test_a_statistics_file_that_is_not_a_regular_file_is_refused(
    plugin, compiler_env, ir, tmp_path, kind
):
    """A planted FIFO blocked opt forever; a planted symbolic link had the
    statistics appended to its target."""
    path, unchanged = plant(tmp_path, kind)
    opt(ir, tmp_path / "plain.ll", None, compiler_env)
    command = [
        TOOLS.opt,
        f"-load-pass-plugin={plugin}",
        "-passes=default<Oz>",
        str(ir),
        "-S",
        "-o",
        str(tmp_path / "plugin.ll"),
    ]
    env = {**compiler_env, "MLBRIDGE_INLINE_RUNNER": "default", "MLBRIDGE_INLINE_STATS": str(path)}
    done = subprocess.run(command, env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert "statistics: cannot open the log" in done.stderr, done.stderr
    assert (tmp_path / "plain.ll").read_bytes() == (tmp_path / "plugin.ll").read_bytes()
    unchanged()


def test_the_plugin_links_neither_grpc_nor_onnx_runtime(plugin):
    """Those come from runner modules beside the plugin, opened only when a
    configuration asks for grpc or onnx (a compiler loading the plugin for
    another runner does not load them)."""
    done = subprocess.run(
        [TOOLS.tool("llvm-readelf"), "--needed-libs", str(plugin)],
        capture_output=True,
        text=True,
        check=True,
    )
    needed = done.stdout.lower()
    for library in ("grpc", "protobuf", "absl", "onnxruntime", "torch"):
        assert library not in needed, needed
    assert "libllvm" in needed


def test_a_missing_runner_module_falls_back_to_llvm(plugin, compiler_env, ir, tmp_path):
    """The plugin copied alone (no runner modules beside it): the onnx runner
    cannot be created, the error names the module, LLVM's advice is used."""
    alone = tmp_path / "alone" / plugin.name
    alone.parent.mkdir()
    alone.write_bytes(plugin.read_bytes())
    model = tmp_path / "rule.onnx"
    llvm_rule_model(model)
    opt(ir, tmp_path / "plain.ll", None, compiler_env)
    done = opt(
        ir,
        tmp_path / "alone.ll",
        alone,
        compiler_env,
        ["-mlbridge-runner=onnx", f"-mlbridge-model={model}"],
    )
    assert "mlbridge-runners-onnx.so" in done.stderr and "LLVM's default advice" in done.stderr
    assert (tmp_path / "plain.ll").read_bytes() == (tmp_path / "alone.ll").read_bytes()


@pytest.mark.parametrize(
    "setting",
    [
        {"MLBRIDGE_INLINE_RUNNER": "pipe", "MLBRIDGE_INLINE_CHANNEL": "/nonexistent/channel"},
        {
            "MLBRIDGE_INLINE_RUNNER": "grpc",
            "MLBRIDGE_INLINE_GRPC_TARGET": "unix:/nonexistent/socket",
        },
        {"MLBRIDGE_INLINE_RUNNER": "aot", "MLBRIDGE_INLINE_MODEL": "/nonexistent/model.so"},
        {"MLBRIDGE_INLINE_RUNNER": "onnx", "MLBRIDGE_INLINE_MODEL": "/nonexistent/model.onnx"},
        {"MLBRIDGE_INLINE_RUNNER": "bogus"},
        {"MLBRIDGE_INLINE_RUNNER": "onnx:/nonexistent/model.onnx"},
        {"MLBRIDGE_INLINE_RUNNER": "pipe:/nonexistent/channel,timeout_ms=500"},
        {"MLBRIDGE_INLINE_RUNNER": "pipe:/tmp/x,format=json"},
        # Options the one parser refuses (support/PluginSettings.h).
        {"MLBRIDGE_INLINE_RUNNER": "constant:0", "MLBRIDGE_INLINE_TIMEOUT_MS": "5s"},
        {"MLBRIDGE_INLINE_RUNNER": "constant:0", "MLBRIDGE_INLINE_COMPARE_DEFAULT": "yes"},
    ],
    ids=[
        "pipe-without-peer",
        "grpc-without-server",
        "missing-aot-module",
        "missing-onnx-model",
        "unknown-runner",
        "config-missing-onnx-model",
        "config-pipe-without-peer",
        "config-malformed",
        "bad-timeout",
        "bad-flag",
    ],
)
def test_runner_failures_fall_back_to_llvm(plugin, compiler_env, tmp_path, setting):
    source = DEMO / "hashtable.c"
    clang(source, tmp_path / "plain.o", None, compiler_env)
    done = clang(
        source,
        tmp_path / "fallback.o",
        plugin,
        compiler_env,
        extra={"MLBRIDGE_INLINE_TIMEOUT_MS": "500", **setting},
    )
    assert (tmp_path / "plain.o").read_bytes() == (tmp_path / "fallback.o").read_bytes()
    assert "using LLVM's default advice" in done.stderr
    if "MLBRIDGE_INLINE_TIMEOUT_MS" in setting:
        assert "MLBRIDGE_INLINE_TIMEOUT_MS must be an integer" in done.stderr
    if "MLBRIDGE_INLINE_COMPARE_DEFAULT" in setting:
        assert "MLBRIDGE_INLINE_COMPARE_DEFAULT must be 1 or 0" in done.stderr
    assert done.stdout == ""


@pytest.mark.parametrize("transport", ["pipe", "shm", "grpc"])
def test_peer_dying_mid_compilation_falls_back(plugin, compiler_env, tmp_path, transport):
    """A policy that crashes after a few answers: the rest of the call sites
    get LLVM's advice and the compilation succeeds."""
    policy = tmp_path / "dies.py"
    policy.write_text(
        "import os\nN = [0]\n\ndef decide(features):\n"
        "    N[0] += 1\n    if N[0] > 5:\n        os._exit(3)\n"
        "    return int(features['inlining_default'][0])\n"
    )
    server, settings = serve(f"{policy}:decide", transport, tmp_path / "inline")
    try:
        done = clang(
            DEMO / "hashtable.c",
            tmp_path / "o.o",
            plugin,
            compiler_env,
            extra={
                **settings,
                "MLBRIDGE_INLINE_TIMEOUT_MS": "2000",
                "MLBRIDGE_INLINE_STATS": str(tmp_path / "s.jsonl"),
            },
        )
    finally:
        server.kill()
        server.wait()
    s = stats(tmp_path / "s.jsonl")
    assert s["fallbacks"] > 0 and s["decisions"] > s["fallbacks"]
    assert "using LLVM's default advice" in done.stderr


def test_clang_mllvm_options_and_training_log(plugin, compiler_env, tmp_path):
    log = tmp_path / "train.log"
    clang(
        DEMO / "kernels.c",
        tmp_path / "o.o",
        plugin,
        compiler_env,
        [
            "-mllvm",
            "-mlbridge-runner=default",
            "-mllvm",
            f"-mlbridge-log={log}",
            "-mllvm",
            f"-mlbridge-stats={tmp_path / 's.jsonl'}",
        ],
    )
    s = stats(tmp_path / "s.jsonl")
    with open(log, "rb") as stream:
        records = list(read_training_log(stream))
    assert len(records) == s["decisions"] > 0
    first = records[0].tensors
    assert "cost_estimate" in first and "inlining_default" in first
    assert "callee_basic_block_count" in first  # in-process: not lost
    assert all(
        int(r.tensors["inlining_decision"][0]) == int(r.tensors["inlining_default"][0])
        for r in records
    )


def size_cap_ir(tmp_path: Path) -> Path:
    """tests/data/size_cap.c as inliner input: its inlining outgrows
    MLInlineAdvisor's 2x size cap at -O2."""
    out = tmp_path / "size_cap.ll"
    subprocess.run(
        [
            TOOLS.clang,
            "-O1",
            "-Xclang",
            "-disable-llvm-passes",
            "-S",
            "-emit-llvm",
            str(ROOT / "tests" / "data" / "size_cap.c"),
            "-o",
            str(out),
        ],
        check=True,
    )
    return out


def opt_o2(
    ir: Path,
    out: Path,
    plugin: Optional[Path],
    env: Dict[str, str],
    options: Sequence[str] = (),
    check: bool = True,
) -> subprocess.CompletedProcess:
    command = [
        TOOLS.opt,
        *([f"-load-pass-plugin={plugin}"] if plugin else []),
        *options,
        "-passes=default<O2>",
        str(ir),
        "-S",
        "-o",
        str(out),
    ]
    return run(command, env, check=check)


def test_default_runner_lifts_the_size_cap(plugin, compiler_env, tmp_path):
    """Issue 11 #6: the default runner is LLVM's default inliner even where
    MLInlineAdvisor's size cap would stop it; the cap is an option, and the
    statistics say when it stopped the advisor."""
    ir = size_cap_ir(tmp_path)
    opt_o2(ir, tmp_path / "plain.ll", None, compiler_env)
    rows = tmp_path / "s.jsonl"
    opt_o2(
        ir,
        tmp_path / "default.ll",
        plugin,
        compiler_env,
        ["-mlbridge-runner=default", f"-mlbridge-stats={rows}"],
    )
    assert (tmp_path / "plain.ll").read_text() == (tmp_path / "default.ll").read_text()
    (row,) = records(rows)
    assert row["size_increase_threshold"] is None and row["size_stopped"] is False
    rows.unlink()
    opt_o2(
        ir,
        tmp_path / "capped.ll",
        plugin,
        compiler_env,
        [
            "-mlbridge-runner=default",
            "-mlbridge-size-increase-threshold=2",
            f"-mlbridge-stats={rows}",
        ],
    )
    assert (tmp_path / "plain.ll").read_text() != (tmp_path / "capped.ll").read_text()
    (row,) = records(rows)
    assert row["size_increase_threshold"] == 2 and row["size_stopped"] is True
    assert row["after_size_stop"] > 0 and row["decisions"] > 0
    # LLVM's own option, given explicitly, wins over the plugin's choice.
    opt_o2(
        ir,
        tmp_path / "llvm.ll",
        plugin,
        compiler_env,
        ["-mlbridge-runner=default", "-ml-advisor-size-increase-threshold=2"],
    )
    assert (tmp_path / "llvm.ll").read_text() == (tmp_path / "capped.ll").read_text()


def test_bad_size_threshold_falls_back_to_llvm(plugin, compiler_env, tmp_path):
    ir = size_cap_ir(tmp_path)
    opt_o2(ir, tmp_path / "plain.ll", None, compiler_env)
    done = opt_o2(
        ir,
        tmp_path / "bad.ll",
        plugin,
        compiler_env,
        ["-mlbridge-runner=constant", "-mlbridge-size-increase-threshold=0.5"],
    )
    assert "-mlbridge-size-increase-threshold must be a factor >= 1" in done.stderr
    assert (tmp_path / "plain.ll").read_text() == (tmp_path / "bad.ll").read_text()


def test_defers_when_gives_llvms_decision_without_asking_a_served_policy(
    plugin, compiler_env, tmp_path
):
    """-mlbridge-defers-when=is_callee_linkonce_odr: at calls of linkonce_odr
    functions the plugin gives LLVM's decision without asking the runner, a
    policy served over pipes included (which cannot say it defers). The
    policy is asked only elsewhere, and the code is that of an in-process
    runner given the same answers and the same option; without the option
    the policy decides the linkonce_odr calls too."""
    from mlbridge.llvm import size_cap
    from mlbridge.llvm.driver import run_compiler

    source = tmp_path / "templates.cpp"
    source.write_text(TEMPLATE_PROGRAM)
    env = {k: v for k, v in compiler_env.items() if not k.startswith("MLBRIDGE_")}

    class Never:
        """Declines every call site it is asked about, and counts them."""

        wants_default = False

        def __init__(self) -> None:
            self.asked = 0

        def __call__(self, features: Dict[str, np.ndarray]) -> int:
            self.asked += 1
            return 0

    asked = {}
    for name, defers in (("served-deferring", "is_callee_linkonce_odr"), ("served", None)):
        policy = Never()
        result = run_compiler(
            [TOOLS.clang, "-Oz", "-c", "-w", str(source), "-o", str(tmp_path / f"{name}.o")],
            {"inlining": policy},
            timeout=300,
            channel_dir=str(tmp_path),
            env=env,
            llvm=TOOLS.major,
            plugin=plugin,
            defers_when=defers,
            size_increase_threshold=size_cap.NO_CAP,
        )
        assert result.ok, result.stderr
        asked[name] = policy.asked
    settings = {
        "MLBRIDGE_INLINE_RUNNER": "constant:0",
        "MLBRIDGE_INLINE_STATS": str(tmp_path / "c.jsonl"),
        "MLBRIDGE_INLINE_SIZE_INCREASE_THRESHOLD": "none",
    }
    clang(source, tmp_path / "constant.o", plugin, compiler_env, [], settings)
    clang(
        source,
        tmp_path / "constant-deferring.o",
        plugin,
        compiler_env,
        [],
        {**settings, "MLBRIDGE_INLINE_DEFERS_WHEN": "is_callee_linkonce_odr"},
    )
    rows = records(tmp_path / "c.jsonl")
    assert rows[0]["deferred"] == 0 and rows[1]["deferred"] > 0, rows
    # Every call site is asked about or deferred (the call sites themselves
    # differ: inlining makes new ones).
    assert asked["served"] == rows[0]["decisions"]
    assert asked["served-deferring"] == rows[1]["decisions"] - rows[1]["deferred"] > 0
    objects = {n: (tmp_path / f"{n}.o").read_bytes() for n in asked}
    constants = {n: (tmp_path / f"{n}.o").read_bytes() for n in ("constant", "constant-deferring")}
    assert objects["served"] == constants["constant"]
    assert objects["served-deferring"] == constants["constant-deferring"]
    assert constants["constant"] != constants["constant-deferring"]


def test_bad_defers_when_falls_back_to_llvm(plugin, compiler_env, tmp_path):
    from mlbridge.llvm.driver import run_compiler

    source = tmp_path / "templates.cpp"
    source.write_text(TEMPLATE_PROGRAM)
    clang(source, tmp_path / "plain.o", None, compiler_env)
    done = clang(
        source,
        tmp_path / "bad.o",
        plugin,
        compiler_env,
        [],
        {
            "MLBRIDGE_INLINE_RUNNER": "constant:0",
            "MLBRIDGE_INLINE_DEFERS_WHEN": "is_callee_internal",
        },
    )
    assert "-mlbridge-defers-when must be is_callee_linkonce_odr or none" in done.stderr
    assert (tmp_path / "plain.o").read_bytes() == (tmp_path / "bad.o").read_bytes()
    with pytest.raises(ValueError, match="defers_when must be one of"):
        run_compiler([TOOLS.clang, "-c", str(source)], {"inlining": lambda f: 0}, defers_when="x")


def test_the_plugin_describes_itself_and_leaves_llvm_every_call_site(plugin, compiler_env):
    """``-mlbridge-describe=FILE``: the plugin's options, the features a
    model may read and its answer (docs/plugin-description.md)."""
    from mlbridge.plugin_description import describe_plugin
    from mlbridge.session.plugin_settings import INLINE_ADVISOR

    described = describe_plugin("plugin", plugin, TOOLS.clang, env=compiler_env)
    assert described.tool == "inline-advisor"
    for option in described.options:
        assert option.flag == INLINE_ADVISOR.flag(option.key) == f"-mlbridge-{option.key}="
        assert option.variable == INLINE_ADVISOR.variable(option.key)
    assert described.option("timeout-ms").kind == "integer"
    assert described.option("compare-default").kind == "flag"
    names = [spec.name for spec in described.features]
    assert names[-2:] == ["inlining_default", "is_callee_linkonce_odr"]
    assert [spec.name for spec in described.answers] == ["inlining_decision"]
