"""What the plugin tests share: which plugin they test (the GCC and MLIR
plugins', the installed inline advisor), and the environment of the
compilers that load it.

A test module tests the plugin its environment variable names (ctest passes
the sanitizer build's, e.g. MLBRIDGE_GCC_PLUGIN, with the sanitizer runtimes
to preload in MLBRIDGE_GCC_PLUGIN_PRELOAD), or else the installed one."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Dict, Optional

import pytest

from mlbridge.native import NativeError, find_native


def plugin_under_test(variable: str, component: str, key: str, package: str) -> Path:
    """The plugin ``$variable`` names, or the installed one (manifest ``key``
    of component ``component``); skips when mlbridge was built without it
    (the Debian ``package`` it needs)."""
    named = os.environ.get(variable)
    if named:
        path = Path(named)
    else:
        try:
            native = find_native()
        except NativeError as err:
            pytest.skip(f"no installed mlbridge: {err}")
        if component not in native.components:
            pytest.skip(f"mlbridge was built without the {component} plugin ({package})")
        path = native.require(key)
    assert path.is_file(), path
    return path


def installed_pipeline_clang() -> str:
    """The installed ``mlbridge-pipeline-clang`` of the newest LLVM; skips
    when mlbridge was built without it (clang's C++ library,
    ``libclang-19-dev``)."""
    from mlbridge.native import pipeline_clang_path

    try:
        driver = pipeline_clang_path()
    except NativeError as err:
        pytest.skip(f"no installed mlbridge: {err}")
    if driver is None:
        pytest.skip("mlbridge was built without mlbridge-pipeline-clang (libclang-19-dev)")
    return str(driver)


def installed_inline_plugin() -> Path:
    """The installed inline-advisor plugin of the newest LLVM (``mlbridge
    config --plugin``); skips when there is none."""
    from mlbridge.native import plugin_path

    try:
        return plugin_path()
    except NativeError as err:
        pytest.skip(f"no installed plugin: {err}")


def compiler_env(variable: str, settings: Optional[Dict[str, str]] = None) -> Dict[str, str]:
    """This process's environment without the plugin's own settings (those
    whose names start like ``variable``, e.g. MLBRIDGE_GCC_), plus
    ``settings``; with the sanitizer runtimes ``$variable_PRELOAD`` names
    preloaded."""
    prefix = variable[: variable.index("_", len("MLBRIDGE_")) + 1]
    env = {k: v for k, v in os.environ.items() if not k.startswith(prefix)}
    preload = os.environ.get(f"{variable}_PRELOAD", "")
    if preload:
        # The compilers leak on purpose; ONNX Runtime's official binaries free
        # the status of a failed call with free() after new[] (its bug, not
        # ours).
        env["LD_PRELOAD"] = preload
        env["ASAN_OPTIONS"] = "detect_leaks=0:alloc_dealloc_mismatch=0"
    env.update(settings or {})
    return env
