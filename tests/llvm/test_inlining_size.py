"""``mlbridge train inlining --method search`` on clang with the plugin,
on a toy corpus of three projects (seconds): real searches, a residual
policy fitted and measured through the plugin on the validation project,
resuming, and fine-tuning from a policy. The round logic itself is checked
exactly in tests/python/test_inlining_size.py."""

from __future__ import annotations

import json
from pathlib import Path
from typing import List

import numpy as np
import pytest
from conftest import TOOLS

from mlbridge.corpus.program import TRAIN, VALIDATION, Program
from mlbridge.llvm.outcomes import CodeBytes
from mlbridge.problems.inlining import DEFAULT_FEATURE
from mlbridge.problems.inlining.imitation import Policy
from mlbridge.problems.inlining.size_training import (
    CURVE,
    OZ,
    SizeTraining,
    ValidationSet,
    train_size_policy,
)

UNIT = """
static int mix(int a, int b) {{
  int r = a;
  for (int i = 0; i < b; i++) r = r * {k} + (a ^ i);
  return r;
}}
static int twice(int a) {{ return mix(a, 2) + mix(a, 3); }}
int api_{name}_one(int a) {{ return twice(a) + mix(a, a); }}
int api_{name}_two(int a, int b) {{ return mix(a + b, 4) - twice(b); }}
"""


def toy_corpus(root: Path) -> List[Program]:
    programs = []
    for project, split, units in (("p", TRAIN, 2), ("q", TRAIN, 2), ("v", VALIDATION, 2)):
        for i in range(units):
            source = root / project / f"u{i}.c"
            source.parent.mkdir(parents=True, exist_ok=True)
            source.write_text(UNIT.format(k=31 + i, name=f"{project}{i}"))
            programs.append(Program(f"{project}/u{i}.c", (source,), (), split))
    return programs


def residual(flip_bias: float) -> Policy:
    """A residual policy that never (very negative bias) or always flips."""
    names = ["cost_estimate", "callee_users", DEFAULT_FEATURE]
    layer = (np.zeros((3, 2), np.float32), np.asarray([0.0, flip_bias], np.float32))
    return Policy(names, np.zeros(3, np.float32), np.ones(3, np.float32), [layer], True)


def test_a_residual_policy_that_never_flips_is_exactly_oz_and_one_that_always_flips_is_not(
    plugin, plugin_env, tmp_path
):
    programs = toy_corpus(tmp_path / "src")
    validation = ValidationSet(programs, tmp_path, 1, plugin_env, TOOLS)
    stored = json.loads((tmp_path / OZ).read_text())
    assert {k: [CodeBytes(**c) for c in v] for k, v in stored.items()} == validation.oz
    assert ValidationSet(programs, tmp_path, 2, plugin_env, TOOLS).oz == validation.oz
    never = tmp_path / "never.onnx"
    residual(-50.0).to_onnx(never)
    ratio, per_project = validation.measure(never, plugin)
    assert ratio == 1.0 and set(per_project) == {"p", "q", "v"}
    always = tmp_path / "always.onnx"
    residual(50.0).to_onnx(always)
    assert validation.measure(always, plugin)[0] != 1.0


def test_rounds_search_fit_and_validate_then_resume_and_fine_tune(plugin, plugin_env, tmp_path):
    programs = toy_corpus(tmp_path / "src")
    out = tmp_path / "run"
    config = SizeTraining(units_per_round=2, max_rounds=2, budget=6, validation_units=2, epochs=20)
    result = train_size_policy(
        programs, out, plugin, config, plugin_env=plugin_env, llvm=TOOLS.major
    )
    assert [r.round for r in result.curve] == [0, 1, 2] and result.stopped == "2 rounds"
    assert [r.units for r in result.curve] == [0, 2, 4]
    assert all(r.rows > 0 for r in result.curve[1:])
    assert all(set(r.per_project) == {"v"} for r in result.curve[1:])
    searched = (out / "search" / "results.jsonl").read_text().splitlines()
    assert len(searched) == 4 and all(json.loads(line)["error"] == "" for line in searched)
    # Resuming with a larger budget of rounds: nothing is searched again.
    again = train_size_policy(
        programs,
        out,
        plugin,
        SizeTraining(**{**config.__dict__, "max_rounds": 3}),
        plugin_env=plugin_env,
        llvm=TOOLS.major,
    )
    assert again.stopped == "every training unit searched" and len(again.curve) == 3
    assert (out / "search" / "results.jsonl").read_text().splitlines() == searched
    assert len((out / CURVE).read_text().splitlines()) == 3
    # Fine-tuning from a policy: round 0 measures it (never flipping: -Oz exactly).
    tuned = train_size_policy(
        programs,
        tmp_path / "tuned",
        plugin,
        SizeTraining(units_per_round=4, max_rounds=1, budget=6, validation_units=2, epochs=5),
        init=residual(-50.0),
        plugin_env=plugin_env,
        llvm=TOOLS.major,
    )
    assert tuned.curve[0].validation_ratio == 1.0 and tuned.curve[0].best
    assert [r.round for r in tuned.curve] == [0, 1]
    assert (tmp_path / "tuned" / "policy.onnx").is_file()


def built_corpus(root: Path) -> Path:
    """The toy corpus as ``mlbridge corpus build`` lays one out: projects
    p and q train, v validation, each with its compile_commands.json."""
    projects = []
    for project, split in (("p", "train"), ("q", "train"), ("v", "validation")):
        database = []
        for i in range(2):
            source = root / "projects" / project / f"u{i}.c"
            source.parent.mkdir(parents=True, exist_ok=True)
            source.write_text(UNIT.format(k=31 + i, name=f"{project}{i}"))
            database.append(
                {
                    "directory": str(source.parent),
                    "file": source.name,
                    "arguments": ["cc", "-c", source.name],
                }
            )
        (root / "projects" / project / "compile_commands.json").write_text(json.dumps(database))
        projects.append(
            {
                "name": project,
                "split": split,
                "compile_commands": f"projects/{project}/compile_commands.json",
            }
        )
    (root / "mlbridge_corpus.json").write_text(json.dumps({"format": 1, "projects": projects}))
    return root


def test_ppo_is_validated_through_the_plugin_at_every_checkpoint(plugin, plugin_env, tmp_path):
    pytest.importorskip("stable_baselines3")
    from mlbridge.corpus.defaults import load_corpus
    from mlbridge.problems.inlining.size_training import validation_measure
    from mlbridge.train.ppo import TrainConfig, train

    corpus = built_corpus(tmp_path / "corpus")
    out = tmp_path / "run"
    measure = validation_measure(load_corpus(corpus), out, 1, plugin, TOOLS.major, 2, 0, plugin_env)
    assert measure is not None
    assert (
        validation_measure(
            load_corpus(corpus / "projects/p/compile_commands.json"),
            out,
            1,
            plugin,
            TOOLS.major,
            2,
            0,
        )
        is None
    )
    config = TrainConfig(
        task="inlining",
        out=out,
        timesteps=128,
        workers=1,
        backend="serial",
        corpus=corpus,
        n_steps=32,
        batch_size=32,
        epochs=1,
        checkpoint_every=64,
        patience=5,
        progress=False,
        warm_start_steps=32,
        env_kwargs={"quick": False, "llvm": TOOLS.major},
    )
    summary = train(config, measure)
    curve = [json.loads(line) for line in (out / CURVE).read_text().splitlines()]
    assert [p["steps"] for p in curve] == [0, 64, 128]
    assert all(set(p["per_project"]) == {"v"} for p in curve[1:])
    assert all(p["validation_ratio"] > 0 for p in curve)
    best = [p for p in curve if p["best"]][-1]
    assert summary["validation"]["best_steps"] == best["steps"]
    # A policy file exactly when a checkpoint beat -Oz on the validation project.
    assert (out / "policy.onnx").is_file() == (best["steps"] > 0)
    assert not list(out.glob("validation-*.onnx"))
