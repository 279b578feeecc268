"""Fixtures of the LLVM plugin tests (run by ctest, which passes the plugin's
path, the LLVM major it was built for (MLBRIDGE_LLVM_MAJOR) and, for
sanitizer builds, the runtimes to preload into opt/clang)."""

from __future__ import annotations

import os
import shutil
import sys
from pathlib import Path
from typing import Dict

import pytest

from mlbridge.llvm.versions import LlvmTools

ROOT = Path(__file__).resolve().parents[2]
# The helpers the Python tests share (hostile_paths).
sys.path.insert(0, str(ROOT / "tests" / "python"))

#: The tools of the LLVM major the plugin under test was built for.
TOOLS = LlvmTools(int(os.environ.get("MLBRIDGE_LLVM_MAJOR", "19")))


@pytest.fixture(scope="session")
def plugin() -> Path:
    path = os.environ.get("MLBRIDGE_PLUGIN")
    if not path or not Path(path).exists():
        pytest.fail(
            "MLBRIDGE_PLUGIN must name the built mlbridge-inline-advisor-llvmN.so (ctest sets it)"
        )
    for tool in (TOOLS.opt, TOOLS.clang, TOOLS.llvm_size):
        if shutil.which(tool) is None:
            pytest.fail(f"{tool} is missing (scripts/setup installs it)")
    return Path(path)


@pytest.fixture(scope="session")
def compiler_env() -> Dict[str, str]:
    """The environment of compilers loading the plugin: a sanitizer build's
    plugin needs its runtimes preloaded (LLVM itself leaks on purpose)."""
    env = dict(os.environ)
    preload = os.environ.get("MLBRIDGE_PLUGIN_PRELOAD", "")
    if preload:
        env["LD_PRELOAD"] = preload
        env["ASAN_OPTIONS"] = "detect_leaks=0"
    for key in list(env):
        if key.startswith("MLBRIDGE_") and key not in ("MLBRIDGE_PLUGIN", "MLBRIDGE_LLVM_MAJOR"):
            del env[key]
    return env


@pytest.fixture(scope="session")
def plugin_env() -> Dict[str, str]:
    """What compilers loading the plugin need besides their MLBRIDGE_* settings."""
    preload = os.environ.get("MLBRIDGE_PLUGIN_PRELOAD", "")
    return {"LD_PRELOAD": preload, "ASAN_OPTIONS": "detect_leaks=0"} if preload else {}
