"""Eight concurrent compiler processes (the C++ example) against one server.

Each process runs its own session with its own inputs and checks every
answer, so any cross-talk between sessions fails it. Needs the C++ example
built by scripts/setup (build/examples/mlbridge-example-grpc-advisor).
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from mlbridge.grpc_server import start_server

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "build" / "examples" / "mlbridge-example-grpc-advisor"
sys.path.insert(0, str(ROOT / "tests" / "cpp" / "policies"))
from echo import fail_on_negative  # noqa: E402

pytestmark = pytest.mark.skipif(
    not EXAMPLE.exists(), reason="build the C++ examples first (scripts/setup)"
)


@pytest.mark.parametrize("mode", ["unary", "streaming"])
@pytest.mark.slow
def test_eight_compilers_share_one_server(tmp_path, mode):
    running = start_server(fail_on_negative, f"unix:{tmp_path}/model.sock")
    try:
        decisions = 300
        procs = [
            subprocess.Popen(
                [str(EXAMPLE), running.target, str(seed), str(decisions), mode],
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                text=True,
            )
            for seed in range(1, 9)
        ]
        results = [p.communicate(timeout=120) for p in procs]
        for proc, (out, err) in zip(procs, results):
            assert proc.returncode == 0, err
            assert out.strip() == str(decisions)
    finally:
        running.stop(0)
