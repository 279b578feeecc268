"""The train-to-deploy loop end to end on the small programs (``--quick``):
every step runs for real (interactive-mode collection, training, ONNX,
mlbridge-aot module, deployment through the plugin over AOT, ONNX Runtime
and pipes, one ES iteration, plots)."""

from __future__ import annotations

import json
from pathlib import Path

from conftest import TOOLS

from mlbridge.problems.inlining.loop.run import run_loop

#: The corpus scripts/setup fetches (ctest runs this from the build tree).
CORPUS = Path(__file__).resolve().parents[2] / ".cache" / "corpus"


def test_quick_loop_runs_every_step(plugin, plugin_env, tmp_path):
    out = tmp_path / "loop"
    results = run_loop(
        out,
        plugin=plugin,
        corpus=CORPUS,
        quick=True,
        es_iterations=1,
        plugin_env=plugin_env,
        llvm=TOOLS.major,
    )
    for name in (
        "results.json",
        "summary.md",
        "training.png",
        "sizes.png",
        "policy.onnx",
        "es_policy.onnx",
        "aot/InlinePolicy.so",
        "dataset.npz",
    ):
        assert (out / name).exists(), name
    assert json.loads((out / "results.json").read_text()) == json.loads(json.dumps(results))
    t = results["training"]
    assert t["call_sites"] > 500 and t["validation_agreement"] > 0.95
    totals = results["totals"]
    assert set(totals) == {"oz", "baseline", "aot", "onnx", "pipe"}
    # The same policy in three runners: the same decisions and code.
    assert (
        totals["aot"]["text_bytes"] == totals["onnx"]["text_bytes"] == totals["pipe"]["text_bytes"]
    )
    assert totals["aot"]["agreement"] == totals["pipe"]["agreement"] > 0.9
    assert totals["baseline"]["text_bytes"] == totals["oz"]["text_bytes"]
    assert all(v.get("fallbacks", 0) == 0 for v in totals.values())
    assert results["search"]["evaluations"] >= 3
    assert (out / "training.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
