"""The checkpoints of a ``mlbridge train`` run, and what ``--resume`` trusts.

A run records every checkpoint it writes, with the SHA-256 of its bytes, in
its state file ``OUT/checkpoints/state.json`` (rewritten atomically), with
the PPO hyperparameters it was built with::

    {"format": "mlbridge-train-state/1",
     "hyperparameters": {"n_steps": 256, ...},
     "checkpoints": [{"file": "ppo_5000_steps.zip", "steps": 5000,
                      "updates": 20, "sha256": "..."}]}

Resuming reads the newest checkpoint the state file lists and nothing else
(a ``ppo_N_steps.zip`` it does not list is never opened), checks the hash of
its bytes before parsing them, and builds a new PPO from the recorded
hyperparameters (JSON) into which it loads the weights only: ``policy.pth``
and ``policy.optimizer.pth`` go through an unpickler that builds tensors and
plain containers and nothing else, and SB3's ``data`` entry (cloudpickled
objects) is never read. A checkpoint is data, never code, and what reading
it allocates is budgeted by its size: only a regular file of at most
:data:`MAX_CHECKPOINT_BYTES` is read, its zip members must be stored
uncompressed (as SB3 and ``torch.save`` write them) and together fit in
their archive, and the tensors built from a ``.pth`` hold no more bytes
than the storages in it (a view of stride 0 or many views of one storage
are refused, not copied into gigabytes).

The checkpoints stay in SB3's format: ``PPO.load`` reads them (and runs
whatever they hold: use it on files you trust).
"""

from __future__ import annotations

import collections
import hashlib
import io
import json
import logging
import pickle
import re
import sys
import zipfile
from dataclasses import asdict, dataclass, field, fields
from pathlib import Path
from typing import Any, Dict, Iterable, List, Optional, Tuple, get_type_hints

from stable_baselines3.common.base_class import BaseAlgorithm
from stable_baselines3.common.callbacks import BaseCallback

from mlbridge.errors import MlbridgeError
from mlbridge.input_files import read_regular_file
from mlbridge.jsontext import load_json_value
from mlbridge.output_files import replace_file

#: The run's state file, in the checkpoint directory.
STATE_FILE = "state.json"
#: The state file's format tag.
STATE_FORMAT = "mlbridge-train-state/1"
#: Checkpoint file names: ``ppo_<steps>_steps.zip`` (those of SB3's CheckpointCallback).
CHECKPOINT = re.compile(r"^ppo_(\d+)_steps\.zip$")
#: The members of a checkpoint that resuming reads: state dicts of these attributes.
WEIGHTS = ("policy", "policy.optimizer")
#: Largest checkpoint read (weights and Adam's moments of millions of parameters fit).
MAX_CHECKPOINT_BYTES = 256 << 20
#: Largest state file read.
MAX_STATE_BYTES = 16 << 20
#: Most entries of one zip archive of a checkpoint (zipfile reads its whole directory).
MAX_ZIP_ENTRIES = 4096
#: Largest pickle of a ``.pth`` read (a state dict's is a few KiB; unpickled
#: containers take tens of bytes per byte).
MAX_PICKLE_BYTES = 1 << 20
_SHA256 = re.compile(r"^[0-9a-f]{64}$")
_LOG = logging.getLogger("mlbridge.train")


class CheckpointError(MlbridgeError):
    """A run's state file or one of its checkpoints cannot be trusted or read."""


def checkpoint_name(steps: int) -> str:
    """The file name of the checkpoint after ``steps`` steps."""
    return f"ppo_{steps}_steps.zip"


@dataclass(frozen=True)
class Hyperparameters:
    """PPO's settings of a run; a resumed run is built with the recorded ones."""

    n_steps: int
    batch_size: int
    n_epochs: int
    learning_rate: float
    ent_coef: float
    gamma: float
    gae_lambda: float
    seed: int
    net_arch: Tuple[int, ...] = (64, 64)

    def ppo_kwargs(self) -> Dict[str, Any]:
        """Keyword arguments of SB3's ``PPO``."""
        out = asdict(self)
        out["policy_kwargs"] = {"net_arch": list(out.pop("net_arch"))}
        return out

    @classmethod
    def from_json(cls, value: Any) -> "Hyperparameters":
        """Parses and type-checks the state file's ``hyperparameters``."""
        hints = get_type_hints(cls)
        names = {f.name for f in fields(cls)}
        if not isinstance(value, dict) or set(value) != names:
            raise ValueError(f"hyperparameters must have exactly the keys {sorted(names)}")
        return cls(**{name: _typed(name, value[name], hints[name]) for name in names})


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _typed(name: str, value: Any, hint: Any) -> Any:
    """``value`` as a ``hint`` (int, float or Tuple[int, ...]), else ValueError."""
    if hint is int and _is_int(value):
        return value
    if hint is float and (_is_int(value) or isinstance(value, float)):
        return float(value)
    if hint == Tuple[int, ...] and isinstance(value, list) and all(map(_is_int, value)):
        return tuple(value)
    raise ValueError(f"hyperparameter {name}: {value!r} is not a {hint}")


@dataclass(frozen=True)
class Checkpoint:
    """One checkpoint the run wrote: its file name in the checkpoint
    directory, the steps and updates done, the SHA-256 of its bytes."""

    file: str
    steps: int
    updates: int
    sha256: str

    @classmethod
    def from_json(cls, value: Any) -> "Checkpoint":
        """Parses and checks one entry of the state file's ``checkpoints``."""
        if not isinstance(value, dict) or set(value) != {f.name for f in fields(cls)}:
            raise ValueError(f"malformed checkpoint entry {value!r}")
        entry = cls(**value)
        if not (
            _is_int(entry.steps)
            and _is_int(entry.updates)
            and entry.file == checkpoint_name(entry.steps)
            and isinstance(entry.sha256, str)
            and _SHA256.match(entry.sha256)
        ):
            raise ValueError(f"malformed checkpoint entry {value!r}")
        return entry


@dataclass
class RunState:
    """A run's state file: its hyperparameters and the checkpoints it wrote."""

    directory: Path
    hyperparameters: Hyperparameters
    checkpoints: List[Checkpoint] = field(default_factory=list)

    @property
    def path(self) -> Path:
        """The state file."""
        return self.directory / STATE_FILE

    @classmethod
    def load(cls, directory: Path) -> Optional["RunState"]:
        """The state of the run in ``directory``; None when there is none
        (and no checkpoint either: checkpoints without a state file are
        refused, their origin unknown)."""
        path = directory / STATE_FILE
        if not path.exists():
            unknown = unrecorded(directory, ())
            if unknown:
                raise CheckpointError(
                    f"{directory / unknown[0]}: no {STATE_FILE} records it: resuming reads "
                    "only checkpoints the run recorded (docs/training.md); train into a new --out"
                )
            return None
        data = read_regular_file(path, MAX_STATE_BYTES, CheckpointError)
        try:
            doc = load_json_value(data, STATE_FILE)
            if doc["format"] != STATE_FORMAT:
                raise ValueError(f"format {doc['format']!r}, not {STATE_FORMAT!r}")
            hyperparameters = Hyperparameters.from_json(doc["hyperparameters"])
            checkpoints = [Checkpoint.from_json(c) for c in doc["checkpoints"]]
        except (OSError, ValueError, KeyError, TypeError) as err:
            raise CheckpointError(f"{path}: not a state file of mlbridge train ({err})") from None
        for name in unrecorded(directory, (c.file for c in checkpoints)):
            _LOG.warning("%s: not recorded in %s, ignored", directory / name, path)
        return cls(directory, hyperparameters, checkpoints)

    def save(self) -> None:
        """Writes the state file (atomically: a reader sees the old or the new one)."""
        doc = {
            "format": STATE_FORMAT,
            "hyperparameters": asdict(self.hyperparameters),
            "checkpoints": [asdict(c) for c in self.checkpoints],
        }
        write_atomic(self.path, (json.dumps(doc, indent=2) + "\n").encode())

    def latest(self) -> Optional[Checkpoint]:
        """The recorded checkpoint with the most steps, if any."""
        return max(self.checkpoints, key=lambda c: c.steps, default=None)

    def save_checkpoint(self, model: BaseAlgorithm) -> Checkpoint:
        """Writes ``model`` as the checkpoint of its step count and records it."""
        buffer = io.BytesIO()
        model.save(buffer)
        data = buffer.getvalue()
        entry = Checkpoint(
            checkpoint_name(model.num_timesteps),
            model.num_timesteps,
            model._n_updates,
            hashlib.sha256(data).hexdigest(),
        )
        write_atomic(self.directory / entry.file, data)
        self.checkpoints = [c for c in self.checkpoints if c.file != entry.file] + [entry]
        self.save()
        return entry

    def read(self, entry: Checkpoint) -> bytes:
        """The bytes of a recorded checkpoint, refused unless they are the
        ones the run wrote."""
        path = self.directory / entry.file
        data = read_regular_file(path, MAX_CHECKPOINT_BYTES, CheckpointError)
        if hashlib.sha256(data).hexdigest() != entry.sha256:
            raise CheckpointError(
                f"{path}: its SHA-256 is not the one {self.path} recorded when the run wrote it "
                "(the file was modified or replaced): refusing to load it"
            )
        return data

    def restore(self, model: BaseAlgorithm, entry: Checkpoint) -> None:
        """Loads the weights of a recorded checkpoint into ``model`` (built
        with :attr:`hyperparameters`) and its step and update counts."""
        path = self.directory / entry.file
        weights = read_weights(self.read(entry), str(path))
        try:
            model.set_parameters(weights, exact_match=True, device=model.device)
        except (ValueError, RuntimeError, KeyError, TypeError) as err:
            raise CheckpointError(f"{path}: weights do not fit the model: {err}") from None
        model.num_timesteps = entry.steps
        model._n_updates = entry.updates


class CheckpointCallback(BaseCallback):
    """Saves and records a checkpoint every ``every`` calls (one call: a
    step of every environment)."""

    def __init__(self, state: RunState, every: int) -> None:
        super().__init__()
        self.state, self.every = state, every

    def _on_step(self) -> bool:
        if self.n_calls % self.every == 0:
            self.state.save_checkpoint(self.model)
        return True


def unrecorded(directory: Path, recorded: Iterable[str]) -> List[str]:
    """The checkpoint files in ``directory`` that are not in ``recorded`` (names)."""
    if not directory.is_dir():
        return []
    names = {p.name for p in directory.iterdir() if CHECKPOINT.match(p.name)}
    return sorted(names - set(recorded))


def write_atomic(path: Path, data: bytes) -> None:
    """Writes ``data`` to ``path`` (mode 0600, its directory made) through
    :func:`mlbridge.output_files.replace_file`."""
    path.parent.mkdir(parents=True, exist_ok=True)
    replace_file(path, data, mode=0o600)


#: The storage types torch pickles a tensor's storage as, and their dtypes.
_STORAGE_DTYPES = {
    "FloatStorage": "float32",
    "DoubleStorage": "float64",
    "HalfStorage": "float16",
    "BFloat16Storage": "bfloat16",
    "LongStorage": "int64",
    "IntStorage": "int32",
    "ShortStorage": "int16",
    "CharStorage": "int8",
    "ByteStorage": "uint8",
    "BoolStorage": "bool",
}


@dataclass(frozen=True)
class _StorageType:
    dtype: Any  #: a torch.dtype


class _Archive:
    """A zip archive of a checkpoint whose members are read within its own
    size: stored (uncompressed) members only, all of those read together at
    most the archive's bytes (overlapping entries cannot multiply them)."""

    def __init__(self, data: bytes) -> None:
        # zipfile reads the whole central directory: count its entries first.
        if data.count(b"PK\x01\x02") > MAX_ZIP_ENTRIES:
            raise zipfile.BadZipFile(f"more than {MAX_ZIP_ENTRIES} entries")
        self.zip = zipfile.ZipFile(io.BytesIO(data))
        self._left = len(data)

    def read(self, name: str, limit: Optional[int] = None) -> bytes:
        """The bytes of member ``name`` (of at most ``limit`` bytes)."""
        info = self.zip.getinfo(name)
        if info.compress_type != zipfile.ZIP_STORED:
            raise zipfile.BadZipFile(f"{name} is compressed (checkpoints store their members)")
        if limit is not None and info.file_size > limit:
            raise zipfile.BadZipFile(f"{name} is larger than {limit} bytes")
        if info.file_size > self._left:
            raise zipfile.BadZipFile(
                f"{name} declares {info.file_size} bytes, more than its archive holds"
            )
        self._left -= info.file_size
        return self.zip.read(info)


class _TensorUnpickler(pickle.Unpickler):
    """Reads the ``data.pkl`` of a file ``torch.save`` wrote (its zip format)
    into tensors, dicts, lists, tuples and scalars, and nothing else: the
    only globals it knows are ``OrderedDict``, the tensor rebuild function
    (replaced by :meth:`_rebuild_tensor`) and the storage types; storages
    are the archive's raw ``data/<key>`` records. The tensors it builds hold
    at most the bytes of the storages read. ``torch.load`` is not used:
    torch 1.13's ignores a ``pickle_module`` (it unpickles with ``pickle``
    unless ``weights_only``), and its ``weights_only`` cannot read an
    optimizer's float settings."""

    def __init__(self, archive: _Archive, prefix: str) -> None:
        super().__init__(io.BytesIO(archive.read(f"{prefix}data.pkl", MAX_PICKLE_BYTES)))
        self._archive, self._prefix = archive, prefix
        self._storages: Dict[str, Any] = {}
        self._stored = 0  # bytes of the storages read
        self._built = 0  # bytes of the tensors built

    def find_class(self, module: str, name: str) -> Any:
        import torch

        if (module, name) == ("collections", "OrderedDict"):
            return collections.OrderedDict
        if (module, name) == ("torch._utils", "_rebuild_tensor_v2"):
            return self._rebuild_tensor
        if module == "torch" and name in _STORAGE_DTYPES:
            return _StorageType(getattr(torch, _STORAGE_DTYPES[name]))
        raise pickle.UnpicklingError(f"{module}.{name} is not a tensor or a plain container")

    def persistent_load(self, pid: Any) -> Any:
        import torch

        if not (
            isinstance(pid, tuple)
            and len(pid) == 5
            and pid[0] == "storage"
            and isinstance(pid[1], _StorageType)
            and isinstance(pid[2], str)
        ):
            raise pickle.UnpicklingError(f"unexpected persistent id {pid!r}")
        _, kind, key, _, numel = pid
        if key not in self._storages:
            raw = bytearray(self._archive.read(f"{self._prefix}data/{key}"))
            flat = (
                torch.frombuffer(raw, dtype=kind.dtype) if raw else torch.empty(0, dtype=kind.dtype)
            )
            if flat.numel() != numel:
                raise pickle.UnpicklingError(f"storage {key}: {flat.numel()} elements, not {numel}")
            self._storages[key] = flat
            self._stored += len(raw)
        return self._storages[key]

    def _rebuild_tensor(self, storage: Any, offset: int, size: Any, stride: Any, *_: Any) -> Any:
        """A tensor of ``size`` and ``stride`` over a storage (a flat tensor),
        copied when the tensors built so far and it fit the storages read."""
        import torch

        if not isinstance(storage, torch.Tensor):
            raise pickle.UnpicklingError("a tensor whose storage is not one")
        view = torch.as_strided(storage, size, stride, offset)  # inside the storage
        nbytes = view.numel() * view.element_size()
        if self._built + nbytes > self._stored:
            raise pickle.UnpicklingError(
                f"a tensor of shape {list(view.shape)} ({nbytes} bytes): the tensors built "
                f"would hold more than the {self._stored} bytes of storage the file holds "
                "(views repeating their storage)"
            )
        self._built += nbytes
        return view.clone()


def read_weights(data: bytes, where: str) -> Dict[str, Any]:
    """The state dicts :data:`WEIGHTS` of an SB3 checkpoint's bytes, read
    without running anything the file names (``where`` names it in errors)."""
    out = {}
    try:
        checkpoint = _Archive(data)
        for name in WEIGHTS:
            out[name] = _load_tensors(_Archive(checkpoint.read(f"{name}.pth")))
    except Exception as err:  # whatever a malformed file makes zipfile, pickle or torch raise
        raise CheckpointError(f"{where}: not a checkpoint resuming can read: {err}") from None
    return out


def _load_tensors(archive: _Archive) -> Any:
    """What ``torch.save`` wrote into ``archive``, tensors and plain containers only."""
    names = archive.zip.namelist()
    pickles = [n for n in names if n.endswith("/data.pkl") and n.count("/") == 1]
    if len(pickles) != 1:
        raise pickle.UnpicklingError("not a file of torch.save (one <name>/data.pkl)")
    prefix = pickles[0][: -len("data.pkl")]
    byteorder = f"{prefix}byteorder"
    if byteorder in names:
        order = archive.read(byteorder, 16)
        if order.decode() != sys.byteorder:
            raise pickle.UnpicklingError(f"tensors stored {order!r}-endian")
    return _TensorUnpickler(archive, prefix).load()
