"""Serve an ONNX model as a policy (``--policy model.onnx``) with onnxruntime.

The model file is read once, as a regular file of at most
:data:`~mlbridge.limits.MAX_ONNX_MODEL_BYTES` (a FIFO or a device is refused,
never waited on), and handed to onnxruntime as bytes: external data files
are not read.

The model's inputs are fed from the features of the same names (reshaped to
the model's static shape); its outputs are the advice: the only output as is,
or a dict name -> array (restricted to the outputs the compiler declared, once
the host has told the policy through ``begin``).
"""

from __future__ import annotations

from typing import Any, Dict, List, Mapping

import numpy as np

from mlbridge.errors import MlbridgeError
from mlbridge.input_files import read_regular_file
from mlbridge.limits import MAX_ONNX_MODEL_BYTES


class OnnxPolicyError(MlbridgeError):
    """The model cannot be loaded or does not fit the features."""


class OnnxPolicy:
    """A policy evaluating ``path`` with onnxruntime (one intra-op thread)."""

    def __init__(self, path: str, intra_op_threads: int = 1) -> None:
        try:
            import onnxruntime as ort
        except ImportError:
            raise OnnxPolicyError(
                "serving .onnx policies needs the onnxruntime package "
                "(pip install 'mlbridge-compiler[onnx]')"
            ) from None
        # Read once (a regular file, within protobuf's limit), as the C++
        # runners do; from bytes, onnxruntime reads no external data file.
        try:
            model = read_regular_file(path, MAX_ONNX_MODEL_BYTES, OnnxPolicyError)
        except OnnxPolicyError as err:
            raise OnnxPolicyError(f"cannot load ONNX model: {err}") from None
        options = ort.SessionOptions()
        options.intra_op_num_threads = intra_op_threads
        options.inter_op_num_threads = 1
        try:
            self._session = ort.InferenceSession(model, options, providers=["CPUExecutionProvider"])
        except Exception as err:  # onnxruntime raises its own exception types
            raise OnnxPolicyError(f"cannot load ONNX model '{path}': {err}") from None
        self._inputs = [
            (i.name, [d if isinstance(d, int) and d >= 0 else -1 for d in i.shape])
            for i in self._session.get_inputs()
        ]
        self._outputs: List[str] = [o.name for o in self._session.get_outputs()]
        self.path = path

    def begin(self, session: Any) -> None:
        """Called by the pipe host: keep only the outputs the compiler declared."""
        wanted = [spec.name for spec in session.outputs]
        missing = [name for name in wanted if name not in self._outputs]
        if missing:
            raise OnnxPolicyError(
                f"model '{self.path}' has no output '{missing[0]}' "
                f"(it has {', '.join(self._outputs)})"
            )
        self._outputs = wanted

    def __call__(self, features: Mapping[str, np.ndarray]) -> Any:
        feed: Dict[str, np.ndarray] = {}
        for name, shape in self._inputs:
            if name not in features:
                raise OnnxPolicyError(
                    f"model '{self.path}' needs input '{name}', which the compiler does not send"
                )
            value = np.asarray(features[name])
            feed[name] = value.reshape(shape) if shape else value.reshape(())
        results = self._session.run(self._outputs, feed)
        if len(self._outputs) == 1:
            return results[0]
        return dict(zip(self._outputs, results))


def load_onnx_policy(spec: str) -> OnnxPolicy:
    """``model.onnx`` as a policy."""
    return OnnxPolicy(spec)


__all__ = ["OnnxPolicy", "OnnxPolicyError", "load_onnx_policy"]
