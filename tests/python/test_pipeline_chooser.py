"""mlbridge.problems.phase_ordering.chooser: a per-module choice of one
whole pipeline. It learns a choice that depends on a feature; its ONNX
model chooses as numpy does; in the phase service (--runner onnx:,
--max-steps 1) the unit gets exactly the chosen pipeline; it does not read
the baseline the service then skips (--no-baseline)."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import numpy as np
import pytest

from mlbridge.problems.phase_ordering.chooser import (
    CHOICES,
    READS_KEY,
    ChooserError,
    LinearChooser,
    action_indices,
    export_chooser,
    fit_chooser,
    policy_metadata,
    reads_baseline,
    service_inputs,
)

OZ_IDENTITY_C = Path(__file__).resolve().parents[1] / "data" / "oz_identity.c"
WIDTH = 57  # autophase (56) and the instruction count


def _units(rng, n):
    """Units whose feature 3 says whether choice 2 saves 10% (else it costs
    5%); every other choice costs 1%."""
    x = rng.integers(0, 1000, size=(n, WIDTH)).astype(float)
    good = x[:, 3] > 500
    ratios = np.full((n, len(CHOICES)), 1.01)
    ratios[:, 0] = 1.0
    ratios[:, 2] = np.where(good, 0.90, 1.05)
    return x, ratios, rng.integers(100, 10_000, size=n).astype(float), good


def test_it_learns_a_choice_that_depends_on_a_feature():
    rng = np.random.default_rng(0)
    x, ratios, oz, good = _units(rng, 400)
    chooser = fit_chooser(x, ratios, oz, l2=1e-5)
    test_x, test_ratios, test_oz, test_good = _units(rng, 200)
    chosen = chooser.choose(test_x)
    assert np.mean((chosen == 2) == test_good) > 0.9
    assert np.mean(np.isin(chosen, [0, 2])) > 0.9
    total = (test_ratios[np.arange(200), chosen] * test_oz).sum() / test_oz.sum()
    assert total < 0.97
    # with nothing to gain it stays at -Oz
    flat = np.ones_like(ratios)
    assert (fit_chooser(x, flat, oz, l2=1e-3, steps=200).choose(test_x) == 0).all()
    with pytest.raises(ChooserError):
        fit_chooser(x, ratios[:, :3], oz, l2=0.0)


def _description(service):
    done = subprocess.run([service, "--list-actions"], capture_output=True, check=True)
    return json.loads(done.stdout)


def _service():
    from mlbridge.native import NativeError, phase_service_path

    try:
        return str(phase_service_path())
    except NativeError as err:
        pytest.skip(f"no mlbridge-phase-service: {err}")


def test_the_onnx_model_chooses_as_numpy_does(tmp_path):
    ort = pytest.importorskip("onnxruntime")
    description = _description(_service())
    rng = np.random.default_rng(1)
    x, ratios, oz, _ = _units(rng, 300)
    chooser = fit_chooser(x, ratios, oz, l2=1e-3, steps=500)
    # and a chooser of random weights, where every choice wins somewhere
    noisy = LinearChooser(
        chooser.mean, chooser.scale, rng.normal(size=(WIDTH, len(CHOICES))), np.zeros(len(CHOICES))
    )
    indices = action_indices(description)
    for model in (chooser, noisy):
        path = tmp_path / "chooser.onnx"
        export_chooser(model, path, service_inputs(description), indices)
        session = ort.InferenceSession(str(path))
        probe = rng.integers(0, 5000, size=(50, WIDTH))
        expected = model.choose(probe.astype(float))
        for row, choice in zip(probe, expected):
            feeds = {s.name: np.zeros(s.shape, np.int64) for s in service_inputs(description)}
            feeds["autophase"] = row[:56].astype(np.int64)
            feeds["initial_instcount"] = row[56:57].astype(np.int64)
            feeds["baseline_instcount"] = rng.integers(0, 5000, size=1)  # not read
            (action,) = session.run(None, feeds)
            assert action.tolist() == [indices[CHOICES[choice][0]]]
    assert len(set(noisy.choose(rng.integers(0, 5000, size=(500, WIDTH)).astype(float)))) > 3
    with pytest.raises(ChooserError):
        export_chooser(chooser, tmp_path / "x.onnx", service_inputs(description)[1:], indices)
    assert policy_metadata(path)[READS_KEY] == "autophase,initial_instcount"
    assert not reads_baseline(path)


def _onnx_service_and_module(tmp_path):
    """The phase service (skips without ONNX Runtime), its description and
    a module of tests/data/oz_identity.c."""
    pytest.importorskip("onnx")
    from mlbridge.corpus.program import Program
    from mlbridge.gym.modules import prepare_modules

    service = _service()
    description = _description(service)
    if "onnx" not in description.get("runners", ["onnx"]):
        pytest.skip("the service has no ONNX Runtime")
    (module,) = prepare_modules([Program("u", (OZ_IDENTITY_C,), (), "train")], tmp_path / "m")
    return service, description, module


def _baseline_model(path, description, when_computed, when_zero):
    """An ONNX model choosing action ``when_computed`` when the service's
    baseline_instcount is above 0, else ``when_zero``; it says nothing of
    what it reads."""
    import onnx
    from onnx import TensorProto, helper, numpy_helper

    inputs = service_inputs(description)
    constants = {
        "zero": np.array([0], np.int64),
        "actions": np.array([when_zero, when_computed], np.int64),
    }
    nodes = [
        helper.make_node("Greater", ["baseline_instcount", "zero"], ["computed"]),
        helper.make_node("Cast", ["computed"], ["index"], to=TensorProto.INT64),
        helper.make_node("Gather", ["actions", "index"], ["action"], axis=0),
    ]
    graph = helper.make_graph(
        nodes,
        "baseline_probe",
        [helper.make_tensor_value_info(s.name, TensorProto.INT64, list(s.shape)) for s in inputs],
        [helper.make_tensor_value_info("action", TensorProto.INT64, [1])],
        initializer=[numpy_helper.from_array(v, name=k) for k, v in constants.items()],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    model.ir_version = 8
    onnx.save(model, str(path))


def test_with_no_baseline_the_service_skips_it(tmp_path):
    """--no-baseline: the observation's baseline_instcount is 0 (the -Oz
    run that computes it is skipped); without it, the model sees it."""
    service, description, module = _onnx_service_and_module(tmp_path)
    indices = action_indices(description)
    when_computed, when_zero = indices["default<Oz>"], indices["instcombine"]
    probe = tmp_path / "probe.onnx"
    _baseline_model(probe, description, when_computed, when_zero)
    assert reads_baseline(probe)
    taken = []
    for extra in ([], ["--no-baseline"]):
        out = tmp_path / "out.bc"
        subprocess.run(
            [service, "--runner", f"onnx:{probe}", "--max-steps", "1", "--module"]
            + [str(module.bitcode), "-o", str(out), *extra],
            check=True,
        )
        direct = {}
        for action in (when_computed, when_zero):
            pipeline = description["actions"][action]["pipeline"]
            reference = tmp_path / f"{action}.bc"
            subprocess.run(
                [service, "--pipeline", pipeline, "--module", str(module.bitcode)]
                + ["-o", str(reference)],
                check=True,
            )
            direct[reference.read_bytes()] = action
        taken.append(direct.get(out.read_bytes()))
    assert taken == [when_computed, when_zero]


def test_in_the_service_the_unit_gets_the_chosen_pipeline(tmp_path):
    from mlbridge.run_stats import read_run_stats

    service, description, module = _onnx_service_and_module(tmp_path)
    indices = action_indices(description)
    for choice in (1, 4):  # pipeline-mergefunc, pipeline-inline-threshold=10
        bias = np.full(len(CHOICES), -1.0)
        bias[choice] = 1.0
        model = LinearChooser(
            np.zeros(WIDTH), np.ones(WIDTH), np.zeros((WIDTH, len(CHOICES))), bias
        )
        path = tmp_path / f"chooser{choice}.onnx"
        export_chooser(model, path, service_inputs(description), indices)
        chosen, stats = tmp_path / "chosen.bc", tmp_path / f"stats{choice}.jsonl"
        run = subprocess.run(
            [service, "--runner", f"onnx:{path}", "--max-steps", "1"]
            + ["--module", str(module.bitcode), "-o", str(chosen), "--stats", str(stats)],
            capture_output=True,
            text=True,
        )
        assert run.returncode == 0 and run.stderr == "", run.stderr
        (record,) = read_run_stats(stats, 1 << 20)
        assert record.answered == 1 and record.fallbacks == 0
        pipeline = description["actions"][indices[CHOICES[choice][0]]]["pipeline"]
        direct = tmp_path / "direct.bc"
        subprocess.run(
            [service, "--pipeline", pipeline, "--module", str(module.bitcode), "-o", str(direct)],
            check=True,
        )
        objects = []
        for bitcode in (chosen, direct):
            out = bitcode.with_suffix(".o")
            subprocess.run(
                ["clang-19", "-Oz", "-Xclang", "-disable-llvm-passes", "-c", str(bitcode)]
                + ["-o", str(out)],
                check=True,
            )
            objects.append(out.read_bytes())
        assert objects[0] == objects[1], CHOICES[choice]


def test_mlbridge_validate_builds_programs_with_a_chooser(tmp_path):
    """The problem's deployed build: the pipeline wrappers, one step per unit
    for a chooser, a statistics record per unit."""
    pytest.importorskip("onnx")
    from mlbridge.problems.phase_ordering.deploy import deployed_build, is_chooser
    from mlbridge.run_stats import read_run_stats

    service = _service()
    description = _description(service)
    bias = np.full(len(CHOICES), -1.0)
    bias[1] = 1.0  # always pipeline-mergefunc
    model = LinearChooser(np.zeros(WIDTH), np.ones(WIDTH), np.zeros((WIDTH, len(CHOICES))), bias)
    policy = tmp_path / "chooser.onnx"
    export_chooser(model, policy, service_inputs(description), action_indices(description))
    assert is_chooser(policy)
    build = deployed_build(policy, Path(service))
    config = json.loads((Path(build.command[0]).parent / "pipeline.json").read_text())
    assert config["max_steps"] == 1 and config["no_baseline"] is True
    stats = tmp_path / "stats.jsonl"
    source = tmp_path / "main.c"
    source.write_text('#include <stdio.h>\nint main(void) { printf("%d\\n", 6 * 7); return 0; }\n')
    program = tmp_path / "prog"
    env = dict(os.environ, **build.env, **{build.stats_variable: str(stats)})
    subprocess.run(build.argv([], [str(source)], str(program)), env=env, check=True)
    assert subprocess.run([program], capture_output=True, check=True).stdout == b"42\n"
    (record,) = read_run_stats(stats, 1 << 20)
    assert record.answered == 1 and record.fallbacks == 0 and record.decisions == 1


def test_a_chooser_measured_as_a_configuration(tmp_path):
    """configurations.Configuration(runner=...): the unit's object after the
    model's one step; a chooser of default<Oz> is -Oz's object."""
    pytest.importorskip("onnx")
    from mlbridge.corpus.program import Program
    from mlbridge.gym.modules import prepare_modules
    from mlbridge.problems.phase_ordering.configurations import OZ, Configuration, Unit, measure

    service = _service()
    description = _description(service)
    (module,) = prepare_modules([Program("u", (OZ_IDENTITY_C,), (), "train")], tmp_path / "m")
    unit = Unit("u", "demo", "held-out", OZ_IDENTITY_C, (), module.bitcode)
    model = LinearChooser(
        np.zeros(WIDTH), np.ones(WIDTH), np.zeros((WIDTH, len(CHOICES))), np.eye(len(CHOICES))[0]
    )
    policy = tmp_path / "oz.onnx"
    export_chooser(model, policy, service_inputs(description), action_indices(description))
    configurations = (Configuration(OZ), Configuration("chooser", runner=f"onnx:{policy}"))
    row = measure([unit], configurations, clang="clang-19", service=service)["u"]
    assert row[OZ] == row["chooser"]


def test_the_shipped_chooser_picks_a_whole_pipeline_without_the_baseline(tmp_path):
    """``pipeline-size`` (docs/models.md): its choices are CHOICES, it reads
    no baseline, and deployed as the card says (one step, --no-baseline) it
    chooses for each bundled module without falling back; its AOT module,
    when built, chooses the same."""
    from mlbridge.corpus.defaults import bundled_programs
    from mlbridge.errors import MlbridgeError
    from mlbridge.gym.modules import prepare_modules
    from mlbridge.models import model_path
    from mlbridge.native import NativeError
    from mlbridge.problems.phase_ordering.chooser import CHOICES_KEY
    from mlbridge.run_stats import read_run_stats

    service, description, _ = _onnx_service_and_module(tmp_path)
    policy = model_path("pipeline-size")
    metadata = policy_metadata(policy)
    assert metadata[CHOICES_KEY].split(",") == [name for name, _ in CHOICES]
    assert not reads_baseline(policy)
    runners = [f"onnx:{policy}"]
    try:
        runners.append(f"aot:{model_path('pipeline-size', aot=True)}")
    except (MlbridgeError, NativeError):
        pass  # the CMake package without AOT models
    modules = prepare_modules(bundled_programs(), tmp_path / "bundled")
    assert modules
    for module in modules:
        outputs = set()
        for index, runner in enumerate(runners):
            out, stats = tmp_path / f"{index}.bc", tmp_path / f"{index}.jsonl"
            stats.unlink(missing_ok=True)
            subprocess.run(
                [service, "--runner", runner, "--max-steps", "1", "--no-baseline"]
                + ["--module", str(module.bitcode), "-o", str(out), "--stats", str(stats)],
                check=True,
            )
            (record,) = read_run_stats(stats, 1 << 20)
            assert record.answered == 1 and record.fallbacks == 0, (module.name, runner)
            outputs.add(out.read_bytes())
        assert len(outputs) == 1, module.name
