"""The ML side of mlbridge's GCC 12 plugin (``mlbridge_gcc.so``, docs/gcc-plugin.md).

The plugin asks a model for the unroll factor of every loop GCC optimises,
from 14 int64 features per loop (:data:`FEATURE_NAMES`), and applies it as
``#pragma GCC unroll`` would. :mod:`mlbridge.gcc.policy` is a policy for
it: a linear scorer over log-scaled features, served from Python over pipes
or written as an ONNX model for ONNX Runtime or mlbridge-aot.
"""

from mlbridge.gcc.features import FEATURE_NAMES, OUTPUT_NAME, read_decision_log
from mlbridge.gcc.policy import FACTORS, UnrollPolicy

__all__ = ["FACTORS", "FEATURE_NAMES", "OUTPUT_NAME", "UnrollPolicy", "read_decision_log"]
