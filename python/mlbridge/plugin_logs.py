"""The JSON-lines logs of the compiler plugins (the GCC plugin's decision
log, the MLIR pass's tiling log): one object per line, each with the same
keys and a ``features`` object whose keys are the plugin's features, in
order."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Dict, List, Sequence

from mlbridge.errors import CodecError
from mlbridge.jsontext import load_json


def read_plugin_log(
    path: Path, keys: Sequence[str], features: Sequence[str], what: str
) -> List[Dict[str, Any]]:
    """The records of the log at ``path``, one dict per line. A line that is
    not a JSON object, lacks one of ``keys`` (a record is called ``what`` in
    the message) or has other features than ``features`` is a CodecError (a
    ValueError) naming the line."""
    records = []
    with open(path, "rb") as lines:
        for number, text in enumerate(lines, 1):
            where = f"{path}:{number}"
            record = load_json(text, where, CodecError)
            if any(key not in record for key in keys):
                raise CodecError(f"{where}: {what} needs the keys {tuple(keys)}")
            found = record["features"]
            if not isinstance(found, dict) or tuple(found) != tuple(features):
                raise CodecError(f"{where}: features {list(found)}")
            records.append(record)
    return records
