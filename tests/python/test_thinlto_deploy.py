"""studies/thinlto_deploy.py builds a two-file program of a built corpus four
ways and says that the shipped model decided in clang and in lld's ThinLTO
backends, every module, without falling back."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

pytestmark = pytest.mark.skipif(
    shutil.which("clang-19") is None or shutil.which("ld.lld-19") is None,
    reason="needs clang-19 and lld-19",
)

MAIN = """\
int helper(int x);
static int twice(int x) { return helper(x) + helper(x + 1); }
int main(int argc, char **argv) { (void)argv; return twice(argc) + helper(argc * 3); }
"""
HELPER = "int helper(int x) { return x * 3 + 1; }\n"


def _corpus(root: Path) -> Path:
    project = root / "proj"
    project.mkdir(parents=True)
    (project / "main.c").write_text(MAIN)
    (project / "helper.c").write_text(HELPER)
    commands = [
        {"directory": str(project), "file": str(project / f), "arguments": ["cc", "-c", f]}
        for f in ("main.c", "helper.c")
    ]
    (project / "compile_commands.json").write_text(json.dumps(commands))
    manifest = {
        "format": 1,
        "projects": [
            {"name": "proj", "split": "train", "compile_commands": "proj/compile_commands.json"}
        ],
    }
    (root / "mlbridge_corpus.json").write_text(json.dumps(manifest))
    return root


@pytest.mark.slow
def test_the_model_decides_in_clang_and_in_lld_thinlto_backends(tmp_path):
    from mlbridge.native import NativeError, plugin_path

    try:
        plugin_path()
    except NativeError as err:
        pytest.skip(f"no plugin: {err}")
    corpus = _corpus(tmp_path / "corpus")
    command = [sys.executable, str(ROOT / "studies" / "thinlto_deploy.py"), "--corpus", str(corpus),
               "--project", "proj", "--program", "prog", "--objects", "main.o helper.o",
               "--work", str(tmp_path / "work")]  # fmt: skip
    done = subprocess.run(command, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout.splitlines()[-1])
    assert report["modules"] == 2
    assert set(report["text"]) == {"-Oz", "model", "thin", "thin-model"}
    assert all(size > 0 for size in report["text"].values())
    for where in ("model", "thin-model"):
        assert report["served"][where]["modules"] == 2
        assert report["served"][where]["fallbacks"] == 0
    # ThinLTO imports helper into main's module: a question file by file
    # never asks (helper is in another file).
    assert report["served"]["thin-model"]["decisions"] > report["served"]["model"]["decisions"]
    missing = [*command[:-4], "--objects", "main.o absent.o"]
    refused = subprocess.run(missing, capture_output=True, text=True, timeout=300)
    assert refused.returncode != 0 and "absent.o" in refused.stderr
