"""The compilers mlbridge runs, and the plugin it loads into them (issue 48).

- Finding 7: the variables of mlbridge's plugins that a user exported for
  their own builds (``MLBRIDGE_INLINE_*``, ``MLBRIDGE_GCC_*``,
  ``MLBRIDGE_MLIR_*``) reach no
  compiler mlbridge runs: every child starts without them
  (:func:`mlbridge.child_process.child_environment`) and gets only the
  settings of its call. ``mlbridge llvm`` passes the user's environment to
  the user's command, but not to a plugin it loads itself.
- Finding 6: mlbridge's plugin is never loaded into a compiler of another
  LLVM major (which crashes registering it): the compiler is asked its major
  first, and a mismatch is a clear error naming both.
"""

from __future__ import annotations

import json
import os
import re
import shutil
from pathlib import Path
from typing import Dict, List

import pytest

from mlbridge import child_process
from mlbridge.cli import main
from mlbridge.llvm import run_compiler
from mlbridge.llvm.versions import LlvmTools, LlvmVersionError, compiler_major
from mlbridge.native import NativeError, find_native
from mlbridge.policies import load_policy

SRC = Path(__file__).resolve().parents[2] / "src"

#: Three call sites, all of linkonce_odr functions (an inline function and a
#: template instance): deferring at such calls leaves the policy none.
ODR_SOURCE = """\
inline int twice(int x) { return x + x; }
template <typename T> T add_one(T x) { return twice(x) + 1; }
int use(int a) { return add_one(a) + twice(a + 2); }
"""
ODR_CALL_SITES = 3

#: What a user may have exported for the plugin in their own builds: call
#: sites left to LLVM without asking, or a training log of every compile.
DEFERS = ("MLBRIDGE_INLINE_DEFERS_WHEN",)
LOGS = ("MLBRIDGE_INLINE_LOG",)


def _clang(major: int) -> str:
    """LLVM ``major``'s clang, or skip."""
    clang = LlvmTools(major).clang
    if shutil.which(clang) is None:
        pytest.skip(f"{clang} is not installed (scripts/setup installs it)")
    return clang


def _plugin(major: int) -> Path:
    """mlbridge's plugin for LLVM ``major`` (and that major's clang), or skip."""
    _clang(major)
    try:
        return find_native(llvm=major).require("plugin")
    except NativeError as err:
        pytest.skip(f"mlbridge's plugin for LLVM {major} is not installed: {err}")


@pytest.fixture
def odr_source(tmp_path: Path) -> Path:
    source = tmp_path / "odr.cpp"
    source.write_text(ODR_SOURCE)
    return source


def _leak(monkeypatch: pytest.MonkeyPatch, name: str, tmp_path: Path) -> Path:
    """Sets the plugin variable ``name`` as a user would; the log it would
    make the plugin write (for a log variable)."""
    log = tmp_path / "leaked.log"
    monkeypatch.setenv(name, str(log) if name in LOGS else "is_callee_linkonce_odr")
    return log


# -- the environment of every child ---------------------------------------------


def test_the_dropped_names_are_those_the_plugins_read() -> None:
    """Every plugin declares its options once (support/PluginSettings.h) and
    reads them as MLBRIDGE_<PLUGIN>_<KEY>: the names the package drops."""
    tables = {
        "INLINE": SRC / "llvm" / "PluginOptions.cpp",
        "GCC": SRC / "gcc" / "PluginOptions.cpp",
        "MLIR": SRC / "mlir" / "TilingPass.cpp",
    }
    named = set()
    for plugin, path in tables.items():
        text = path.read_text()
        assert re.search(rf'PluginSettings::resolve\(\s*"{plugin}"', text), path
        keys = re.findall(r'\{"([a-z-]+)", OptionKind::', text)
        assert {"runner", "log", "stats"} <= set(keys), (path, keys)
        named |= {f"MLBRIDGE_{plugin}_{k.upper().replace('-', '_')}" for k in keys}
    assert {"MLBRIDGE_INLINE_DEFERS_WHEN", "MLBRIDGE_INLINE_COMPARE_DEFAULT"} <= named
    assert all(child_process.is_plugin_variable(name) for name in named), named
    # Only the option parser reads the environment for them.
    for path in tables.values():
        assert len(re.findall(r"getenv\(", path.read_text())) <= 1, path
    # The interactive host's variable, which a build's compiler wrapper sets.
    host = (SRC.parent / "tools" / "interactive_host" / "InteractiveHost.cpp").read_text()
    for name in child_process.TOOL_VARIABLES:
        assert f'"{name}"' in host and child_process.is_plugin_variable(name)
    # The names without INLINE_ (aliases before 0.2.0) are no plugin's.
    assert not child_process.is_plugin_variable("MLBRIDGE_RUNNER")
    # The package's own variables are not the plugins'.
    for own in ("MLBRIDGE_PREFIX", "MLBRIDGE_BUILD_DIR", "MLBRIDGE_CACHE", "MLBRIDGE_DEBUG"):
        assert not child_process.is_plugin_variable(own)


def _child_env(**kwargs: object) -> Dict[str, str]:
    done = child_process.run(["env", "-0"], capture_output=True, text=True, check=True, **kwargs)
    return dict(item.split("=", 1) for item in done.stdout.split("\0") if item)


def test_a_child_starts_without_the_plugins_variables(monkeypatch: pytest.MonkeyPatch) -> None:
    plugin = {
        "MLBRIDGE_INLINE_RUNNER": "constant:1",
        "MLBRIDGE_INLINE_LOG": "/tmp/x.log",
        "MLBRIDGE_INLINE_DEFERS_WHEN": "is_callee_linkonce_odr",
        "MLBRIDGE_GCC_RUNNER": "constant:8",
        "MLBRIDGE_MLIR_LOG": "/tmp/y.log",
    }
    for name, value in plugin.items():
        monkeypatch.setenv(name, value)
    monkeypatch.setenv("MLBRIDGE_CACHE", "/tmp/cache")
    inherited = _child_env()
    assert not set(plugin) & set(inherited)
    assert inherited["MLBRIDGE_CACHE"] == "/tmp/cache" and inherited["PATH"] == os.environ["PATH"]
    # A call's own settings, and nothing else of the plugins'.
    settings = {"MLBRIDGE_INLINE_RUNNER": "default"}
    given = _child_env(env=child_process.child_environment(settings))
    assert {k: v for k, v in given.items() if k in plugin} == settings
    # os.environ itself: unchanged (mlbridge llvm, for the user's command).
    assert plugin.items() <= _child_env(env=os.environ).items()


# -- finding 7: mlbridge's own compiles -----------------------------------------


@pytest.mark.parametrize("name", DEFERS + LOGS)
def test_an_own_compile_through_the_plugin_ignores_the_users_variables(
    name: str, odr_source: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """What the inlining environment, ``mlbridge train`` and the search run
    (LLVM 19, the plugin's pipe runner): ``never`` is asked at every call
    site, and no training log is written."""
    _plugin(19)
    log = _leak(monkeypatch, name, tmp_path)
    result = run_compiler(
        ["clang-19", "-Oz", "-c", str(odr_source), "-o", str(tmp_path / "out.o")],
        {"inlining": load_policy("never", "inlining")},
        timeout=120,
        llvm=19,
        through_plugin=True,
    )
    assert result.ok, result.error
    assert result.decisions == ODR_CALL_SITES
    assert not log.exists()


def test_a_deployed_compile_writes_no_log_the_user_asked_for(
    odr_source: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``mlbridge train``/``evaluate``/``loop`` measure a deployed model with
    :func:`mlbridge.problems.inlining.toolchain.compile_program`."""
    from mlbridge.corpus.program import Program
    from mlbridge.llvm.plugin_settings import InlinePluginSettings
    from mlbridge.problems.inlining.toolchain import Plugin, compile_program
    from mlbridge.runner_config import RunnerConfig

    plugin = _plugin(19)
    logs: List[Path] = []
    for name in LOGS:
        logs.append(tmp_path / f"{name}.log")
        monkeypatch.setenv(name, str(logs[-1]))
    program = Program("odr", (odr_source,), (), "train")
    echo = Plugin(
        plugin,
        InlinePluginSettings(RunnerConfig(kind="echo", argument="inlining_default")).environment(),
    )
    result = compile_program(program, tmp_path / "out", echo, jobs=1, llvm=LlvmTools(19))
    assert result.decisions == ODR_CALL_SITES and result.deciding == 1
    assert not any(log.exists() for log in logs)


# -- finding 7: mlbridge llvm ------------------------------------------------------


def _mlbridge_llvm(major: int, policy: str, source: Path, out: Path, stats: Path) -> int:
    options = ["--llvm", str(major), "--problem", "inlining", "--policy", policy]
    command = [LlvmTools(major).clang, "-Oz", "-c", str(source), "-o", str(out)]
    return main(["llvm", *options, "--stats-json", str(stats), "--", *command])


@pytest.mark.parametrize("name", DEFERS + LOGS)
def test_mlbridge_llvm_sets_the_plugin_it_loads_itself(
    name: str, odr_source: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """On LLVM 16 ``mlbridge llvm`` loads its plugin: the plugin's variables
    are then its own, the user's do not reach it."""
    _plugin(16)
    log = _leak(monkeypatch, name, tmp_path)
    stats = tmp_path / "stats.json"
    assert _mlbridge_llvm(16, "never", odr_source, tmp_path / "out.o", stats) == 0
    assert json.loads(stats.read_text())["decisions"] == ODR_CALL_SITES
    assert not log.exists()


# -- finding 6: a plugin of another major -------------------------------------------


def test_the_compiler_says_its_major(tmp_path: Path) -> None:
    _clang(19)
    assert compiler_major("clang-19") == 19
    if shutil.which("opt-16"):
        assert compiler_major("opt-16") == 16
    wrapper = tmp_path / "ccache"
    wrapper.write_text("#!/bin/sh\necho 'ccache version 4.8'\n")
    wrapper.chmod(0o755)
    assert compiler_major(str(wrapper)) is None  # cannot say: not checked
    assert compiler_major(str(tmp_path / "no-such-compiler")) is None


def test_mlbridge_llvm_refuses_the_llvm_16_plugin_for_clang_19(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    _plugin(16)
    _clang(19)
    source = tmp_path / "prog.c"
    source.write_text("static int sq(int x) { return x * x; }\nint f(int a) { return sq(a); }\n")
    out = tmp_path / "prog.o"
    command = ["llvm", "--llvm", "16", "--problem", "inlining", "--policy", "default"]
    assert main([*command, "--", "clang-19", "-Oz", "-c", str(source), "-o", str(out)]) == 2
    err = capsys.readouterr().err
    assert "clang-19 is LLVM 19" in err and "built for LLVM 16" in err, err
    assert "mlbridge-inline-advisor-llvm16.so" in err
    assert "Stack dump" not in err and "PLEASE submit" not in err
    assert not out.exists()


def test_run_compiler_refuses_the_llvm_19_plugin_for_clang_16(tmp_path: Path) -> None:
    _clang(16)
    _plugin(19)
    source = tmp_path / "prog.c"
    source.write_text("int f(int a) { return a; }\n")
    with pytest.raises(LlvmVersionError, match="clang-16 is LLVM 16, but the plugin .* LLVM 19"):
        run_compiler(
            ["clang-16", "-Oz", "-c", str(source), "-o", str(tmp_path / "prog.o")],
            {"inlining": load_policy("never", "inlining")},
            timeout=120,
            llvm=19,
            through_plugin=True,
        )


def test_the_inlining_environment_refuses_a_plugin_of_another_major_than_its_clang(
    tmp_path: Path,
) -> None:
    from mlbridge.problems.inlining.environment import InliningEnv

    _clang(16)
    _plugin(19)
    source = tmp_path / "prog.c"
    source.write_text("int f(int a) { return a; }\n")
    with pytest.raises(LlvmVersionError, match="clang-16 is LLVM 16, but the plugin .* LLVM 19"):
        InliningEnv(modules=[str(source)], clang="clang-16", llvm=19, through_plugin=True)
