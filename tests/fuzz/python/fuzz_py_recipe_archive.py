"""atheris target: unpacking a recipe's archive (mlbridge.corpus.sources:
the member check and the extraction by file descriptors) on any tar bytes.

The oracle: whatever the archive holds, nothing is created outside the tree
it is unpacked into (the tree sits alone in a scratch directory, which must
hold nothing else afterwards), and the only errors are CorpusError, tarfile's
and the file system's refusals (OSError).
Seeds: tests/fuzz/corpus/fuzz_py_recipe_archive (small archives with links).
"""

from __future__ import annotations

import atexit
import io
import os
import shutil
import tarfile
import tempfile
from pathlib import Path

import atheris
import fuzz_support  # first: imports mlbridge instrumented

with atheris.instrument_imports(include=["mlbridge.corpus"]):
    from mlbridge.corpus import sources

from mlbridge.errors import MlbridgeError

_SCRATCH = Path(tempfile.mkdtemp(prefix="mlbridge-fuzz-archive-"))
_TREE = _SCRATCH / "tree"
atexit.register(shutil.rmtree, _SCRATCH, True)


def test_one_input(data: bytes) -> None:
    """Unpack ``data`` as a tar archive into a fresh tree; check the scratch."""
    _TREE.mkdir()
    try:
        with tarfile.open(fileobj=io.BytesIO(data), mode="r:") as archive:
            sources._extract(archive, sources._checked_members(archive, _TREE), _TREE)
    except (MlbridgeError, tarfile.TarError, OSError, EOFError):
        pass
    finally:
        left = sorted(os.listdir(_SCRATCH))
        for directory, _, _ in os.walk(_TREE):  # links not followed
            os.chmod(directory, 0o700)  # a member may have made one unwritable
        shutil.rmtree(_TREE)
    if left != ["tree"]:
        raise AssertionError(f"unpacking wrote outside its tree: {left}")


if __name__ == "__main__":
    fuzz_support.main(test_one_input)
