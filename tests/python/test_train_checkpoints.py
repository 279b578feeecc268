"""``mlbridge train --resume`` trusts only what the run wrote
(mlbridge.train.checkpoints): the checkpoints its state file records, whose
bytes still have the recorded SHA-256, read as weights only.

A checkpoint is crafted the way an attacker would: SB3's zip with a pickle
payload in its ``data`` entry (cloudpickled, base64, as SB3 stores objects)
and as its ``policy.pth`` (what ``torch.load`` unpickles); unpickled, the
payload creates a marker file. The runs train on a tiny in-process
environment (no compiler) for a few hundred steps.
"""

from __future__ import annotations

import base64
import hashlib
import io
import json
import re
import shutil
import zipfile
from pathlib import Path

import pytest

pytest.importorskip("stable_baselines3")
pytest.importorskip("onnx")  # every run exports its policy
gymnasium = pytest.importorskip("gymnasium")
torch = pytest.importorskip("torch")
cloudpickle = pytest.importorskip("cloudpickle")

from counts_task import counts_task, tiny_config  # noqa: E402

from mlbridge.errors import MlbridgeError  # noqa: E402
from mlbridge.train.ppo import TrainConfig, latest_checkpoint, train  # noqa: E402

GENUINE = "ppo_128_steps.zip"


@pytest.fixture(scope="module", autouse=True)
def counts():
    """The task ``counts``: PPO on a toy environment, in-process."""
    with counts_task("counts"):
        yield


def _config(out: Path, timesteps: int, resume: bool = False) -> TrainConfig:
    return tiny_config("counts", out, timesteps, resume=resume)


@pytest.fixture(scope="module")
def trained(tmp_path_factory) -> Path:
    """A run of 128 steps: checkpoints after 64 and 128."""
    out = tmp_path_factory.mktemp("trained") / "run"
    assert train(_config(out, 128))["timesteps"] == 128
    return out


@pytest.fixture
def run(trained, tmp_path) -> Path:
    """A copy of the trained run, for one test to change."""
    return Path(shutil.copytree(trained, tmp_path / "run"))


class _Touch:
    """Unpickled, creates ``path``: the payload a planted checkpoint carries."""

    def __init__(self, path: Path) -> None:
        self.path = str(path)

    def __reduce__(self):
        return (open, (self.path, "w"))


def _rewritten(checkpoint: Path, members: dict) -> bytes:
    """The checkpoint's zip with some members replaced."""
    out = io.BytesIO()
    with zipfile.ZipFile(checkpoint) as src, zipfile.ZipFile(out, "w") as dst:
        for name in src.namelist():
            dst.writestr(name, members.get(name, src.read(name)))
    return out.getvalue()


def _malicious(checkpoint: Path, marker: Path) -> bytes:
    """``checkpoint`` carrying the payload in ``data`` and as ``policy.pth``."""
    with zipfile.ZipFile(checkpoint) as archive:
        data = json.loads(archive.read("data"))
    serialized = base64.b64encode(cloudpickle.dumps(_Touch(marker))).decode()
    data["observation_space"] = {
        ":type:": "<class 'gymnasium.spaces.box.Box'>",
        ":serialized:": serialized,
    }
    pth = io.BytesIO()
    torch.save(_Touch(marker), pth)
    return _rewritten(checkpoint, {"data": json.dumps(data), "policy.pth": pth.getvalue()})


def _state(run: Path) -> dict:
    return json.loads((run / "checkpoints" / "state.json").read_text())


def _load(path: Path):
    from stable_baselines3 import PPO

    return PPO.load(str(path), device="cpu")  # the test's own files: trusted


def test_a_run_records_its_checkpoints_with_their_hashes(trained):
    recorded = _state(trained)["checkpoints"]
    assert [c["file"] for c in recorded] == ["ppo_64_steps.zip", GENUINE]
    for c in recorded:
        data = (trained / "checkpoints" / c["file"]).read_bytes()
        assert c["sha256"] == hashlib.sha256(data).hexdigest()
    assert latest_checkpoint(trained / "checkpoints") == trained / "checkpoints" / GENUINE


def test_a_planted_checkpoint_is_never_opened(run, tmp_path, caplog):
    marker = tmp_path / "payload-ran"
    genuine = run / "checkpoints" / GENUINE
    planted = run / "checkpoints" / "ppo_999999_steps.zip"
    planted.write_bytes(_malicious(genuine, marker))
    summary = train(_config(run, 192, resume=True))
    assert not marker.exists()
    assert f"{planted}: not recorded in" in caplog.text
    assert summary["resumed_from"] == str(genuine)
    assert summary["timesteps"] == 192


def test_checkpoints_without_a_state_file_are_refused(trained, tmp_path):
    marker = tmp_path / "payload-ran"
    planted = tmp_path / "run" / "checkpoints" / "ppo_999999_steps.zip"
    planted.parent.mkdir(parents=True)
    planted.write_bytes(_malicious(trained / "checkpoints" / GENUINE, marker))
    with pytest.raises(MlbridgeError, match=re.escape(f"{planted}: no state.json records it")):
        train(_config(tmp_path / "run", 64, resume=True))
    assert not marker.exists()


def test_a_modified_checkpoint_is_refused(run):
    genuine = run / "checkpoints" / GENUINE
    with zipfile.ZipFile(genuine) as archive:
        weights = torch.load(io.BytesIO(archive.read("policy.pth")))
    tampered = io.BytesIO()
    torch.save({k: v + 1 for k, v in weights.items()}, tampered)
    genuine.write_bytes(_rewritten(genuine, {"policy.pth": tampered.getvalue()}))
    with pytest.raises(MlbridgeError, match=re.escape(f"{genuine}: its SHA-256 is not the one")):
        train(_config(run, 192, resume=True))


def test_a_recorded_checkpoint_is_read_as_weights_only(run, tmp_path):
    """Even with the state file rewritten to list it (someone who can write
    the run directory can), a payload in a checkpoint does not run."""
    marker = tmp_path / "payload-ran"
    genuine = run / "checkpoints" / GENUINE
    genuine.write_bytes(_malicious(genuine, marker))
    state = _state(run)
    state["checkpoints"][-1]["sha256"] = hashlib.sha256(genuine.read_bytes()).hexdigest()
    (run / "checkpoints" / "state.json").write_text(json.dumps(state))
    with pytest.raises(MlbridgeError, match=rf"{GENUINE}: .*io\.open is not a tensor"):
        train(_config(run, 192, resume=True))
    assert not marker.exists()


def test_a_torchscript_archive_is_refused(run):
    from mlbridge.train.checkpoints import CheckpointError, read_weights

    script = io.BytesIO()
    torch.jit.save(torch.jit.script(torch.nn.Linear(1, 1)), script)
    data = _rewritten(run / "checkpoints" / GENUINE, {"policy.pth": script.getvalue()})
    with pytest.raises(CheckpointError, match="planted: .* is not a tensor"):
        read_weights(data, "planted")


@pytest.mark.parametrize(
    "change",
    [
        {"file": "../../ppo_128_steps.zip"},
        {"steps": 64},
        {"sha256": "not a hash"},
    ],
)
def test_a_malformed_state_file_is_refused(run, change):
    state = _state(run)
    state["checkpoints"][-1].update(change)
    (run / "checkpoints" / "state.json").write_text(json.dumps(state))
    with pytest.raises(MlbridgeError, match="state.json: not a state file of mlbridge train"):
        train(_config(run, 192, resume=True))


def test_resuming_restores_the_weights_and_continues(run):
    genuine = run / "checkpoints" / GENUINE
    want = _load(genuine)
    again = train(_config(run, 128, resume=True))  # nothing left to learn
    assert again["resumed_from"] == str(genuine) and again["timesteps"] == 128
    got = _load(run / "final.zip")
    for name, tensor in want.policy.state_dict().items():
        assert torch.equal(got.policy.state_dict()[name], tensor), name
    want_adam, got_adam = (m.policy.optimizer.state_dict() for m in (want, got))
    assert got_adam["param_groups"] == want_adam["param_groups"]
    for index, moments in want_adam["state"].items():
        for key, tensor in moments.items():
            assert torch.equal(got_adam["state"][index][key], tensor), (index, key)
    assert got._n_updates == want._n_updates

    more = train(_config(run, 192, resume=True))
    assert more["timesteps"] == 192
    assert latest_checkpoint(run / "checkpoints") == run / "checkpoints" / "ppo_192_steps.zip"


def _checkpoint_of(policy: object, compress: int = zipfile.ZIP_STORED) -> bytes:
    """A checkpoint whose ``policy.pth`` is ``torch.save(policy)`` (stored
    in the zip with ``compress``), with an empty optimizer."""
    pth, optimizer, out = io.BytesIO(), io.BytesIO(), io.BytesIO()
    torch.save(policy, pth)
    torch.save({}, optimizer)
    with zipfile.ZipFile(out, "w") as archive:
        archive.writestr("policy.pth", pth.getvalue(), compress_type=compress)
        archive.writestr("policy.optimizer.pth", optimizer.getvalue())
    return out.getvalue()


_AMPLIFIED = {
    # One float seen as 2^28 (stride 0): 1.4 KB that was cloned into 1 GiB.
    "stride 0": (
        lambda: _checkpoint_of({"w": torch.zeros(1).expand(1 << 28)}),
        "more than the 4 bytes of storage the file holds",
    ),
    # 1024 views of one 256 KiB storage, each cloned: 256 MiB.
    "views of one storage": (
        lambda: _checkpoint_of(
            {f"v{i}": t[:] for t in [torch.zeros(1 << 16)] for i in range(1024)}
        ),
        "more than the 262144 bytes of storage the file holds",
    ),
    # 64 MiB of weights deflated into some 64 KiB.
    "compressed member": (
        lambda: _checkpoint_of({"w": torch.zeros(16 << 20)}, zipfile.ZIP_DEFLATED),
        "policy.pth is compressed",
    ),
}


@pytest.mark.parametrize("kind", _AMPLIFIED)
@pytest.mark.slow
def test_a_small_checkpoint_cannot_make_resuming_allocate_much(tmp_path, kind):
    """What reading a checkpoint allocates is bounded by its size: tensors
    hold at most the bytes of the storages in the file, zip members must be
    stored as they are and fit their archive."""
    from bounded import run_bounded

    make, refusal = _AMPLIFIED[kind]
    path = tmp_path / GENUINE
    path.write_bytes(make())
    assert path.stat().st_size < 1 << 20
    got = run_bounded(
        f"PATH = {str(path)!r}\nfrom mlbridge.train.checkpoints import read_weights",
        "read_weights(open(PATH, 'rb').read(), 'planted')",
        memory=1 << 30,
    )
    assert got.raised == "CheckpointError" and refusal in got.message, got
    assert got.grew < 32 << 20, got
