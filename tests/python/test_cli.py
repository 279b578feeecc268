"""The mlbridge command: serve, log dump, argument errors."""

from __future__ import annotations

import json
import os
import struct
import threading
import time

from mlbridge.cli import main


def _fake_llvm(base: str, answers: list) -> None:
    deadline = time.monotonic() + 10
    while not os.path.exists(base + ".out") and time.monotonic() < deadline:
        time.sleep(0.01)
    header = {
        "features": [{"name": "x", "type": "int64_t", "port": 0, "shape": [1]}],
        "advice": {"name": "y", "type": "float", "port": 0, "shape": [1]},
    }
    with open(base + ".in", "rb", buffering=0) as inp, open(base + ".out", "wb") as out:
        out.write(json.dumps(header).encode() + b'\n{"context":"c"}\n')
        for i in range(3):
            out.write(b'{"observation":%d}\n' % i + struct.pack("<q", i) + b"\n")
            out.flush()
            answers.append(struct.unpack("<f", inp.read(4))[0])


def test_serve_creates_fifos_and_prints_nothing(tmp_path, capsys):
    base = str(tmp_path / "chan")
    answers: list = []
    fake = threading.Thread(target=_fake_llvm, args=(base, answers), daemon=True)
    fake.start()
    log, stats = tmp_path / "log", tmp_path / "stats.json"
    rc = main(
        [
            "serve",
            "--pipe",
            base,
            "--policy",
            "zeros",
            "--create",
            "--timeout",
            "10",
            "--log",
            str(log),
            "--stats-json",
            str(stats),
        ]
    )
    fake.join(10)
    assert rc == 0 and answers == [0.0, 0.0, 0.0]
    assert not os.path.exists(base + ".in")  # --create removes what it made
    assert json.loads(stats.read_text())["sessions"][0]["decisions"] == 3
    assert capsys.readouterr().out == ""
    assert main(["log", "dump", str(log)]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0] == "context=c observation=0 x=[0] y=[0]" and len(lines) == 3


def test_bad_policy_and_onnx_are_clear_errors(capsys):
    """A --policy naming no usable policy is a usage error (exit 2, docs/cli.md)."""
    assert (
        main(["llvm", "--problem", "regalloc-eviction", "--policy", "always", "--", "llc-19"]) == 2
    )
    assert "no meaning" in capsys.readouterr().err
    assert main(["llvm", "--problem", "inlining", "--policy", "model.onnx", "--", "opt-19"]) == 2
    assert "ONNX" in capsys.readouterr().err


def test_policy_from_file(tmp_path):
    from mlbridge.policies import load_policy

    path = tmp_path / "p.py"
    path.write_text("def decide(features):\n    return 1\n")
    assert load_policy(f"{path}:decide", "inlining")({}) == 1
