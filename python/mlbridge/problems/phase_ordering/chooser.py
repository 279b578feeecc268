"""A per-module choice of one whole pipeline, learned from the service's
features (docs/phase-ordering.md#a-per-module-pipeline-choice).

The phase service's table ends with whole pipelines (:data:`CHOICES`:
``default<Oz>`` and the ``pipeline-*`` actions after it). A chooser reads
what the service computes when it loads a module (the 56 Autophase features
and its instruction count) and names one of them; deployed, the service runs
it as a one-step runner (``--runner onnx:chooser.onnx --max-steps 1
--no-baseline``), so the model costs one evaluation per unit, the service
skips the ``-Oz`` run that only the observation's ``baseline_instcount``
needs, and every unit still gets a whole pipeline clang-19 could build.

The model is linear over standardised ``log(1 + feature)``: a score per
choice, the highest wins (ONNX ``ArgMax``, then a ``Gather`` into the
choices' action indices). It is trained cost-sensitively, as Coreset-NVP
picks from a few pipelines: the softmax of the scores weighs every choice's
measured size for the unit (bytes of its object, as a ratio to ``-Oz``'s,
times the unit's ``-Oz`` bytes, so the loss is the expected total), and
gradient descent lowers that expectation (with an L2 penalty). Nothing but
numpy; the same arithmetic in numpy and in the ONNX graph (tested).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any, Dict, List, Mapping, Sequence, Tuple

import numpy as np

from mlbridge.errors import MlbridgeError
from mlbridge.tensor_spec import TensorSpec

#: The service's whole-pipeline actions a chooser picks from, by name, and
#: the size configuration (:mod:`.configurations`) that measures each.
CHOICES: Tuple[Tuple[str, str], ...] = (
    ("default<Oz>", "Oz"),
    ("pipeline-mergefunc", "mergefunc"),
    ("pipeline-twice", "Oz-twice"),
    ("pipeline-inline-threshold=0", "inline-threshold=0"),
    ("pipeline-inline-threshold=10", "inline-threshold=10"),
    ("pipeline-inline-threshold=25", "inline-threshold=25"),
    ("pipeline-inline-threshold=0-mergefunc", "inline-threshold=0+mergefunc"),
    ("pipeline-inline-threshold=10-mergefunc", "inline-threshold=10+mergefunc"),
    ("pipeline-inline-threshold=25-mergefunc", "inline-threshold=25+mergefunc"),
    ("pipeline-optsize", "optsize"),
    ("pipeline-optsize-mergefunc", "optsize+mergefunc"),
)
#: The ONNX metadata key naming a chooser's choices (comma-separated).
CHOICES_KEY = "mlbridge.choices"
#: The service's inputs a chooser reads, in order (the module's index, the
#: steps and the status say nothing about the module; the instruction count
#: after ``default<Oz>`` would cost the service a second pipeline per unit).
FEATURE_INPUTS = ("autophase", "initial_instcount")
#: The ONNX metadata key naming the service's inputs a model reads
#: (comma-separated); a model without it may read any.
READS_KEY = "mlbridge.reads"
#: The service's input computed only for models that read it
#: (``mlbridge-phase-service --no-baseline``).
BASELINE_INPUT = "baseline_instcount"


class ChooserError(MlbridgeError):
    """A chooser cannot be trained or exported as asked."""


@dataclass(frozen=True)
class LinearChooser:
    """Scores ``(log1p(x) - mean) / scale @ weights + bias``; the choice is
    the highest (the first on a tie). ``x`` is the features of
    :data:`FEATURE_INPUTS` concatenated."""

    mean: np.ndarray
    scale: np.ndarray
    weights: np.ndarray
    bias: np.ndarray

    def scores(self, x: np.ndarray) -> np.ndarray:
        """The choices' scores of the rows of ``x`` (N, features)."""
        z = (np.log1p(np.maximum(x, 0.0)) - self.mean) / self.scale
        scores: np.ndarray = z @ self.weights + self.bias
        return scores

    def choose(self, x: np.ndarray) -> np.ndarray:
        """The index (into :data:`CHOICES`) each row of ``x`` gets."""
        chosen: np.ndarray = np.argmax(self.scores(x), axis=1)
        return chosen


def fit_chooser(
    x: np.ndarray,
    ratios: np.ndarray,
    weights_of_units: np.ndarray,
    *,
    l2: float,
    steps: int = 3000,
    learning_rate: float = 0.05,
) -> LinearChooser:
    """Trains a chooser on units with features ``x`` (N, F), their sizes
    under each choice as ratios to ``-Oz`` (N, K; column 0 is ``-Oz``, all
    1.0) and their weights (N; their ``-Oz`` sizes make the loss the
    expected total bytes): gradient descent (Adam) on the weighted expected
    ratio under the softmax of the scores, plus ``l2`` times the squared
    weights of the model. Starts from always ``-Oz``."""
    if (
        x.ndim != 2
        or ratios.shape != (x.shape[0], len(CHOICES))
        or weights_of_units.shape != (x.shape[0],)
    ):
        raise ChooserError(f"shapes do not match: x {x.shape}, ratios {ratios.shape}")
    if x.shape[0] == 0:
        raise ChooserError("no unit to train on")
    logs = np.log1p(np.maximum(x, 0.0))
    mean = logs.mean(axis=0)
    scale = logs.std(axis=0)
    scale[scale < 1e-6] = 1.0
    z = (logs - mean) / scale
    # Each unit's bytes under each choice, in units of the mean -Oz bytes:
    # the loss is the mean over units, the total's share of each.
    costs = ratios * (weights_of_units / weights_of_units.mean())[:, None]
    n, f = z.shape
    k = ratios.shape[1]
    weights = np.zeros((f, k))
    bias = np.zeros(k)
    bias[0] = 1.0  # -Oz first, until the data says otherwise
    params = [weights, bias]
    moments = [np.zeros_like(p) for p in params]
    squares = [np.zeros_like(p) for p in params]
    for step in range(1, steps + 1):
        scores = z @ weights + bias
        scores -= scores.max(axis=1, keepdims=True)
        p = np.exp(scores)
        p /= p.sum(axis=1, keepdims=True)
        expected = (p * costs).sum(axis=1, keepdims=True)
        grad_scores = p * (costs - expected) / n  # d(mean expected cost) / d(scores)
        grads = [z.T @ grad_scores + 2 * l2 * weights, grad_scores.sum(axis=0)]
        for i, (param, grad) in enumerate(zip(params, grads)):
            moments[i] = 0.9 * moments[i] + 0.1 * grad
            squares[i] = 0.999 * squares[i] + 0.001 * grad**2
            m_hat = moments[i] / (1 - 0.9**step)
            v_hat = squares[i] / (1 - 0.999**step)
            param -= learning_rate * m_hat / (np.sqrt(v_hat) + 1e-12)
    return LinearChooser(mean, scale, weights, bias)


def export_chooser(
    chooser: LinearChooser,
    path: Path,
    inputs: Sequence[TensorSpec],
    action_index: Mapping[str, int],
) -> None:
    """Writes ``chooser`` as an ONNX model of the service's ``inputs``
    (int64 tensors, those of :data:`FEATURE_INPUTS` read) with one output,
    ``action`` (int64 [1]): the service's index of the chosen action
    (``action_index``: the service's action names to indices)."""
    import onnx
    from onnx import TensorProto, helper, numpy_helper

    by_name = {spec.name: spec for spec in inputs}
    missing = [name for name in FEATURE_INPUTS if name not in by_name]
    if missing:
        raise ChooserError(f"the service has no input {', '.join(missing)}")
    absent = [name for name, _ in CHOICES if name not in action_index]
    if absent:
        raise ChooserError(f"the service has no action {', '.join(absent)}")
    width = sum(by_name[name].element_count for name in FEATURE_INPUTS)
    if chooser.weights.shape != (width, len(CHOICES)):
        raise ChooserError(f"weights {chooser.weights.shape} for {width} features")
    actions = np.array([action_index[name] for name, _ in CHOICES], dtype=np.int64)
    constants: Dict[str, np.ndarray] = {
        "one": np.array(1.0, np.float32),
        "mean": chooser.mean.astype(np.float32),
        "inv_scale": (1.0 / chooser.scale).astype(np.float32),
        "weights": chooser.weights.astype(np.float32),
        "bias": chooser.bias.astype(np.float32),
        "row": np.array([1, width], np.int64),
        "actions": actions,
    }
    nodes = [
        helper.make_node("Concat", list(FEATURE_INPUTS), ["features"], axis=0),
        helper.make_node("Cast", ["features"], ["real"], to=TensorProto.FLOAT),
        helper.make_node("Relu", ["real"], ["nonnegative"]),
        helper.make_node("Add", ["nonnegative", "one"], ["shifted"]),
        helper.make_node("Log", ["shifted"], ["logs"]),
        helper.make_node("Sub", ["logs", "mean"], ["centred"]),
        helper.make_node("Mul", ["centred", "inv_scale"], ["standard"]),
        helper.make_node("Reshape", ["standard", "row"], ["z"]),
        helper.make_node("MatMul", ["z", "weights"], ["product"]),
        helper.make_node("Add", ["product", "bias"], ["scores"]),
        helper.make_node("ArgMax", ["scores"], ["best"], axis=1, keepdims=0),
        helper.make_node("Gather", ["actions", "best"], ["action"], axis=0),
    ]
    graph = helper.make_graph(
        nodes,
        "pipeline_chooser",
        [
            helper.make_tensor_value_info(spec.name, TensorProto.INT64, list(spec.shape))
            for spec in inputs
        ],
        [helper.make_tensor_value_info("action", TensorProto.INT64, [1])],
        initializer=[numpy_helper.from_array(np.asarray(v), name=k) for k, v in constants.items()],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    model.ir_version = 8
    helper.set_model_props(
        model,
        {
            CHOICES_KEY: ",".join(name for name, _ in CHOICES),
            READS_KEY: ",".join(FEATURE_INPUTS),
        },
    )
    onnx.checker.check_model(model)
    onnx.save(model, str(path))


def policy_metadata(policy: Path) -> Dict[str, str]:
    """The metadata of the ONNX model ``policy`` (its weights not read)."""
    import onnx

    model = onnx.load(str(policy), load_external_data=False)
    return {prop.key: prop.value for prop in model.metadata_props}


def reads_baseline(policy: Path) -> bool:
    """Whether the ONNX model ``policy`` may read the service's
    ``baseline_instcount`` (one that does not say what it reads may)."""
    reads = policy_metadata(policy).get(READS_KEY)
    return reads is None or BASELINE_INPUT in reads.split(",")


def service_inputs(description: Mapping[str, Any]) -> List[TensorSpec]:
    """The service's input tensors from its ``--list-actions`` description."""
    return [
        TensorSpec(str(s["name"]), str(s["type"]), tuple(int(d) for d in s["shape"]))
        for s in description["inputs"]
    ]


def action_indices(description: Mapping[str, Any]) -> Dict[str, int]:
    """The service's action names to their indices."""
    return {str(a["name"]): i for i, a in enumerate(description["actions"])}
