"""atheris target: mlbridge.training_log's reader (TrainingLogReader,
read_training_log) on any bytes: every record, formatted as
`mlbridge log dump` does (dump_lines).
Seeds: tests/golden/*.log.bin.
"""

from __future__ import annotations

import io

import fuzz_support  # first: imports mlbridge instrumented

from mlbridge.errors import MlbridgeError
from mlbridge.training_log import dump_lines


def test_one_input(data: bytes) -> None:
    """Read and format every record of the log ``data``."""
    try:
        for _ in dump_lines(io.BytesIO(data)):
            pass
    except MlbridgeError:
        pass


if __name__ == "__main__":
    fuzz_support.main(test_one_input)
