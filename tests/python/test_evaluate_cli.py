"""``mlbridge evaluate PROBLEM --policy FILE`` (mlbridge.cli.evaluate_command):
a policy deployed through the problem's deployment on a corpus split."""

from __future__ import annotations

import json
import shutil

import numpy as np
import pytest

from mlbridge.cli import main
from mlbridge.cli.evaluate_command import SPLITS
from mlbridge.corpus.program import HELD_OUT, TRAIN, VALIDATION


def test_the_splits_are_the_corpus_splits():
    assert set(SPLITS) == {TRAIN, VALIDATION, HELD_OUT}


def test_a_missing_policy_or_corpus_is_an_error_with_its_exit_code(tmp_path, capsys):
    assert main(["evaluate", "inlining", "--policy", str(tmp_path / "none.onnx")]) == 4
    assert "does not exist: train first" in capsys.readouterr().err
    policy = tmp_path / "p.onnx"
    policy.write_bytes(b"x")
    code = main(
        ["evaluate", "inlining", "--policy", str(policy), "--corpus", str(tmp_path / "nope")]
    )
    assert code == 2 and "no such file" in capsys.readouterr().err


@pytest.mark.skipif(shutil.which("clang-19") is None, reason="needs clang-19")
@pytest.mark.slow
def test_a_residual_policy_that_never_flips_measures_exactly_oz(tmp_path, capsys):
    pytest.importorskip("onnx")
    from mlbridge.native import NativeError, plugin_path
    from mlbridge.problems.inlining import DEFAULT_FEATURE
    from mlbridge.problems.inlining.imitation import Policy

    try:
        plugin_path()
    except NativeError as err:
        pytest.skip(f"no plugin: {err}")
    names = ["cost_estimate", DEFAULT_FEATURE]
    layer = (np.zeros((2, 2), np.float32), np.asarray([0, -50], np.float32))
    never = Policy(names, np.zeros(2, np.float32), np.ones(2, np.float32), [layer], True)
    never.to_onnx(tmp_path / "policy.onnx")
    out = tmp_path / "out"
    code = main(
        ["evaluate", "inlining", "--policy", str(tmp_path / "policy.onnx"), "--out", str(out)]
    )
    assert code == 0, capsys.readouterr().err
    report = json.loads((out / "evaluate.json").read_text())
    assert report["text_vs_oz"] == {"-Oz": 1.0, "onnx": 1.0, "aot": 1.0}
    assert report["allocated_vs_oz"] == {"-Oz": 1.0, "onnx": 1.0, "aot": 1.0}
    oz = report["totals"]["-Oz"]
    assert oz["allocated"] > oz["text"] > 0  # data and unwind tables besides the code
    assert "1.0000x -Oz" in capsys.readouterr().out
