"""Files a user names for mlbridge to read (models, checkpoints, a corpus's
JSON) are opened once, without blocking, and only as regular files of a
bounded size (mlbridge.input_files.read_regular_file), by every reader: a
FIFO is refused at once rather than waited on forever, ``/dev/zero`` rather
than read until memory runs out, a directory with a clear error.

Each reader is called in a child Python with a deadline and a memory limit
(tests/python/bounded.py), so that a reader that blocks or reads without end
fails its test instead of hanging it."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from bounded import run_bounded

from mlbridge.errors import CorpusError, MlbridgeError
from mlbridge.input_files import read_regular_file

KINDS = ("fifo", "dev-zero", "directory")


def _plant(directory: Path, name: str, kind: str) -> Path:
    """A FIFO, a link to /dev/zero or a directory at ``directory / name``."""
    path = directory / name
    if kind == "fifo":
        os.mkfifo(path, 0o600)
    elif kind == "dev-zero":
        path.symlink_to("/dev/zero")
    else:
        path.mkdir()
    return path


def test_a_regular_file_is_read_whole_within_its_budget(tmp_path):
    path = tmp_path / "m.onnx"
    path.write_bytes(b"x" * 100)
    assert read_regular_file(path, 100) == b"x" * 100
    with pytest.raises(MlbridgeError, match=r"m\.onnx: larger than 99 bytes \(100 bytes\)"):
        read_regular_file(path, 99)
    with pytest.raises(CorpusError, match="missing: cannot read: No such file"):
        read_regular_file(tmp_path / "missing", 100, CorpusError)
    (tmp_path / "link").symlink_to(path)  # a link to a regular file is one
    assert read_regular_file(tmp_path / "link", 100) == b"x" * 100


@pytest.mark.parametrize("kind", KINDS)
def test_anything_but_a_regular_file_is_refused_at_once(tmp_path, kind):
    path = _plant(tmp_path, "input", kind)
    with pytest.raises(CorpusError, match="input: cannot read: not a regular file"):
        read_regular_file(path, 1 << 20, CorpusError)


#: Every reader of a file a user names: (the name the file must have, the
#: imports, the call reading PATH, the error it must raise).
READERS = {
    "serve --policy model.onnx": (
        "model.onnx",
        "from mlbridge.policies import load_policy",
        "load_policy(PATH)",
        "PolicyError",
    ),
    "train --init (search)": (
        "model.onnx",
        "from pathlib import Path\nfrom mlbridge.problems.inlining.imitation import Policy",
        "Policy.from_onnx(Path(PATH))",
        "MlbridgeError",
    ),
    "train --init (PPO)": (
        "model.onnx",
        "from pathlib import Path\nfrom mlbridge.train.ppo_init import load_actor",
        "load_actor(None, Path(PATH), ['a'])",
        "MlbridgeError",
    ),
    "mlbridge-aot": (
        "model.onnx",
        "from mlbridge.aot import compile_model",
        "compile_model(PATH)",
        "AotError",
    ),
    "check_model": (
        "model.onnx",
        "from mlbridge.onnx_tools import check_model",
        "check_model(PATH, [], [])",
        "ModelCheckError",
    ),
    "train --resume (checkpoint)": (
        "ppo_64_steps.zip",
        "from pathlib import Path\nfrom mlbridge.train.checkpoints import Checkpoint, RunState",
        "RunState(Path(PATH).parent, None).read(Checkpoint(Path(PATH).name, 64, 1, '0' * 64))",
        "CheckpointError",
    ),
    "train --resume (state file)": (
        "state.json",
        "from pathlib import Path\nfrom mlbridge.train.checkpoints import RunState",
        "RunState.load(Path(PATH).parent)",
        "CheckpointError",
    ),
    "corpus JSON": (
        "compile_commands.json",
        "from pathlib import Path\nfrom mlbridge.corpus.files import read_json",
        "read_json(Path(PATH))",
        "CorpusError",
    ),
}


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("reader", READERS)
@pytest.mark.slow
def test_every_reader_refuses_what_is_not_a_regular_file_promptly(tmp_path, reader, kind):
    if reader != "mlbridge-aot" and reader != "corpus JSON":
        pytest.importorskip("onnx")
    if reader.startswith("train"):
        pytest.importorskip("stable_baselines3")
    if reader.startswith("serve"):
        pytest.importorskip("onnxruntime")
    name, setup, call, error = READERS[reader]
    path = _plant(tmp_path, name, kind)
    got = run_bounded(f"PATH = {str(path)!r}\n{setup}", call, seconds=60, memory=1 << 30)
    assert (got.raised, "not a regular file" in got.message) == (error, True), got
