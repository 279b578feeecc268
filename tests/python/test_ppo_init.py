"""PPO fine-tuning from a deployed policy (mlbridge.train.ppo_init): the
actor of an exported policy.onnx loaded back decides as the exported model
does; a model reading other inputs, of another network, or not ONNX is
refused; train() starts from it instead of the warm start."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("stable_baselines3")
onnx = pytest.importorskip("onnx")
ort = pytest.importorskip("onnxruntime")
pytest.importorskip("gymnasium")

from counts_task import Counts, counts_task, tiny_config  # noqa: E402

from mlbridge.errors import MlbridgeError  # noqa: E402
from mlbridge.models import model_path  # noqa: E402
from mlbridge.train.ppo import train  # noqa: E402
from mlbridge.train.ppo_init import load_actor  # noqa: E402

NAMES = list(Counts.feature_names)


@pytest.fixture(scope="module", autouse=True)
def task():
    with counts_task("init-counts"):
        yield


@pytest.fixture(scope="module")
def exported(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("run")
    train(tiny_config("init-counts", out, 128))
    return out / "policy.onnx"


def _fresh(seed: int):
    from stable_baselines3 import PPO

    return PPO("MlpPolicy", Counts(), n_steps=64, batch_size=64, seed=seed, device="cpu")


def _decisions(model_file: Path, raw: np.ndarray):
    session = ort.InferenceSession(str(model_file))
    return [
        int(session.run(None, {n: np.asarray([v], np.int64) for n, v in zip(NAMES, row)})[0][0])
        for row in raw
    ]


def test_the_loaded_actor_decides_as_the_exported_model(exported, tmp_path):
    from mlbridge.train.tasks import export as export_task
    from mlbridge.train.tasks import get_task

    model = _fresh(seed=5)
    record = load_actor(model.policy, exported, NAMES)
    assert record["init"] == str(exported) and len(record["sha256"]) == 64
    again = tmp_path / "again.onnx"
    export_task(get_task("init-counts"), model.policy, again, NAMES)
    raw = np.random.default_rng(0).integers(-50, 5000, (200, 4))
    assert _decisions(again, raw) == _decisions(exported, raw)


def test_a_model_of_fewer_inputs_starts_a_wider_policy_deciding_alike(tmp_path):
    """A model reading 3 of the 4 inputs (in their order) loads into a
    policy reading 4: the fourth starts with zero weights, so the policy
    decides as the model, whatever the fourth says; out of order, refused."""
    import torch
    from mlbridge.train.tasks import export as export_task
    from mlbridge.train.tasks import get_task

    task = get_task("init-counts")
    narrow = _fresh(seed=3)
    narrow_policy = narrow.policy
    # A policy of 3 inputs: the first layer of the 4-input one, one column fewer.
    first = narrow_policy.mlp_extractor.policy_net[0]
    first.weight.data = first.weight.data[:, [0, 1, 3]].clone()
    first.in_features = 3
    three = [NAMES[0], NAMES[1], NAMES[3]]
    model_file = tmp_path / "three.onnx"
    export_task(task, narrow_policy, model_file, three)
    wide = _fresh(seed=4)
    load_actor(wide.policy, model_file, NAMES)
    assert not torch.any(wide.policy.mlp_extractor.policy_net[0].weight[:, 2])
    again = tmp_path / "wide.onnx"
    export_task(task, wide.policy, again, NAMES)
    raw = np.random.default_rng(1).integers(-50, 5000, (200, 4))
    session = ort.InferenceSession(str(model_file))
    expected = [
        int(
            session.run(None, {n: np.asarray([row[NAMES.index(n)]], np.int64) for n in three})[0][0]
        )
        for row in raw
    ]
    assert _decisions(again, raw) == expected and len(set(expected)) > 1
    with pytest.raises(MlbridgeError, match="or some of them in their order"):
        load_actor(wide.policy, model_file, [NAMES[3], NAMES[0], NAMES[1], NAMES[2]])


def test_a_model_of_other_inputs_or_network_is_refused(exported, tmp_path):
    model = _fresh(seed=1)
    with pytest.raises(MlbridgeError, match="reads 4 inputs"):
        load_actor(model.policy, exported, NAMES[:3])
    with pytest.raises(MlbridgeError, match="reads 37 inputs"):
        load_actor(model.policy, model_path("inlining-size"), NAMES)
    graph = onnx.load(str(exported))
    last = [n for n in graph.graph.node if n.op_type == "Gemm"][-1]
    last.attribute.append(onnx.helper.make_attribute("alpha", 2.0))
    changed = tmp_path / "changed.onnx"
    onnx.save(graph, str(changed))
    with pytest.raises(MlbridgeError, match="not the actor of this task's network"):
        load_actor(model.policy, changed, NAMES)
    junk = tmp_path / "junk.onnx"
    junk.write_bytes(b"not a model")
    with pytest.raises(MlbridgeError, match="not an ONNX model"):
        load_actor(model.policy, junk, NAMES)


def test_training_starts_from_the_model_instead_of_the_warm_start(exported, tmp_path):
    summary = train(tiny_config("init-counts", tmp_path / "tuned", 64, init=exported))
    assert summary["warm_start"]["init"] == str(exported)
    assert summary["timesteps"] == 64 and (tmp_path / "tuned" / "policy.onnx").is_file()


def test_the_command_takes_a_shipped_name_or_a_file(tmp_path, capsys):
    from mlbridge import cli
    from mlbridge.cli_errors import USAGE

    common = ["train", "inlining", "--out", str(tmp_path / "run")]
    assert cli.main([*common, "--init", str(tmp_path / "none.onnx")]) == USAGE
    assert "no such file, nor a shipped model (inlining-size)" in capsys.readouterr().err
    assert cli.main([*common, "--init", "pipeline-size"]) == USAGE
    assert "a shipped model of phase-ordering, not of inlining" in capsys.readouterr().err
    assert cli.main([*common, "--init", "inlining-size", "--resume"]) == USAGE
    assert "--init starts a run" in capsys.readouterr().err
    assert cli.main([*common, "--learning-rate", "0"]) == USAGE
    assert "--learning-rate must be positive" in capsys.readouterr().err


def _varint(n: int) -> bytes:
    out = b""
    while n >= 0x80:
        out, n = out + bytes([n & 0x7F | 0x80]), n >> 7
    return out + bytes([n])


def _field(number: int, payload: bytes) -> bytes:
    """A length-delimited protobuf field."""
    return _varint(number << 3 | 2) + _varint(len(payload)) + payload


_SIZE = 16 << 20


def _initializer(data_field: int, count: int, data_type: int) -> bytes:
    """GraphProto's initializer (field 5) ``w`` of ``count`` elements of
    ``data_type``, its data 16 MiB of zeros in TensorProto field ``data_field``."""
    dims, kind = b"\x08" + _varint(count), b"\x10" + bytes([data_type])
    return _field(5, _field(8, b"w") + _field(data_field, bytes(_SIZE)) + dims + kind)


#: The bulk of a --init model of 16 MiB, four ways: (a maker of the graph's
#: bytes, whether the model can be read).
_BULK = {
    # Floats in raw_data (field 9): the usual encoding.
    "raw floats": (lambda: _initializer(9, _SIZE // 4, 1), True),
    # Floats in float_data (field 4): numpy_helper made a list of them.
    "typed floats": (lambda: _initializer(4, _SIZE // 4, 1), True),
    # int64_data (field 7) of one-byte varints: 8 bytes each once parsed.
    "typed int64": (lambda: _initializer(7, _SIZE, 7), False),
    # Empty nodes (GraphProto field 1): some 150 bytes each once parsed.
    "empty nodes": (lambda: _field(1, b"") * (_SIZE // 2), False),
}


@pytest.mark.parametrize("bulk", _BULK)
@pytest.mark.slow
def test_an_init_model_takes_memory_in_proportion_to_its_size(tmp_path, bulk):
    """Reading a --init model (mlbridge.train.onnx_weights) takes at most a
    few bytes of memory per byte of the file: one whose parse or conversion
    would take more is refused before (a 60 MB model once took 1.98 GB)."""
    from bounded import run_bounded

    graph, readable = _BULK[bulk]
    path = tmp_path / "init.onnx"
    path.write_bytes(b"\x08\x08" + _field(7, graph()))  # ir_version 8, the graph
    got = run_bounded(
        f"PATH = {str(path)!r}\n"
        "from pathlib import Path\nfrom mlbridge.train.onnx_weights import read_weights",
        "read_weights(Path(PATH), lambda name: True)",
        memory=1 << 30,
    )
    if readable:
        assert got.raised is None, got
    else:
        assert got.raised == "MlbridgeError" and "bytes of memory" in got.message, got
    assert got.grew <= 5 * path.stat().st_size + (32 << 20), got
