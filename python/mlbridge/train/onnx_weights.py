"""The weights of a policy someone hands over as ONNX, to fine-tune it.

The file is untrusted: one over the size budget, one with external data, or
a tensor whose data is not what its shape declares is refused with
:class:`~mlbridge.errors.MlbridgeError` before any weight is used; the
callers then check that the graph is the network they expect.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Callable, Dict, List, Tuple

import numpy as np

from mlbridge.errors import MlbridgeError
from mlbridge.limits import DEFAULT_MAX_BYTES


def read_weights(
    path: Path, wanted: Callable[[str], bool], max_bytes: int = DEFAULT_MAX_BYTES
) -> Tuple[List[str], Dict[str, np.ndarray], Any]:
    """(input names, the initializers whose names ``wanted`` accepts as
    arrays, the model) of the ONNX model at ``path``."""
    from mlbridge.aot.budget import DEFAULT_MAX_MEMORY, tensor_array
    from onnx import load

    try:
        size = path.stat().st_size
    except OSError as err:
        raise MlbridgeError(f"{path}: cannot read the model ({err})") from None
    if size > max_bytes:
        raise MlbridgeError(f"{path}: the model is larger than {max_bytes} bytes")
    try:
        model = load(str(path), load_external_data=False)
    except Exception as err:  # onnx raises DecodeError, OSError, ...
        raise MlbridgeError(f"{path}: not an ONNX model ({err})") from None
    graph = model.graph
    weights = {
        t.name: tensor_array(t, f"{path}: initializer '{t.name}'", DEFAULT_MAX_MEMORY)
        for t in graph.initializer
        if wanted(t.name)
    }
    return [i.name for i in graph.input], weights, model
