"""The GCC plugin on a large real program: SQLite's amalgamation (250k
lines) compiled by gcc-12 -O2 with a model answering 0 to every loop gives
plain gcc's object, byte for byte, after more than a thousand decisions.

Apart from test_gcc_plugin.py, which scripts/test runs against the sanitizer
build of the plugin (ctest gcc_plugin): this test takes minutes under the
sanitizers, so it runs against the installed plugin (or MLBRIDGE_GCC_PLUGIN's,
without preloaded runtimes)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from test_gcc_plugin import gcc
from test_gcc_plugin import plugin as _plugin

from mlbridge.gcc import read_decision_log

ROOT = Path(__file__).resolve().parents[2]
SQLITE = ROOT / ".cache" / "corpus" / "sqlite3.c"

plugin = _plugin


@pytest.mark.skipif(not SQLITE.exists(), reason="tools/fetch_corpus.py fetches sqlite3.c")
@pytest.mark.skipif(
    bool(os.environ.get("MLBRIDGE_GCC_PLUGIN_PRELOAD")), reason="minutes under the sanitizers"
)
@pytest.mark.slow(seconds=75)
def test_sqlite_with_a_model_answering_zero_is_plain_gccs_object(plugin, tmp_path):
    gcc(SQLITE, tmp_path / "plain.o")
    log = tmp_path / "log.jsonl"
    gcc(SQLITE, tmp_path / "zero.o", plugin, ["runner=constant:0", f"log={log}"])
    assert (tmp_path / "zero.o").read_bytes() == (tmp_path / "plain.o").read_bytes()
    assert len(read_decision_log(log)) > 1000
