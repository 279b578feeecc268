"""The demo's deployment half: the same inlining policy in-process.

The demo policy (demo_policy.py) is exported as an ONNX graph of the
same rule; the decisions recorded while clang-19 compiled over pipes are
replayed by a C++ program (examples/deploy_replay.cpp) through
OnnxModelRunner in-process and through the pipe runner to the Python policy,
checking that both agree with what the compiler got and timing both. The
program is part of the native half (CMake package), found by
:mod:`mlbridge.native` (``mlbridge config --deploy-replay``).
"""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import List, Sequence, TextIO, Tuple

import numpy as np

from mlbridge.native import NativeError, deploy_replay_path
from mlbridge.session import ToolError, run_tool

#: The features the demo policy reads, in the order of the replay file.
FEATURES = ("cost_estimate", "callee_basic_block_count", "last_call_to_static_bonus")


def export_policy_onnx(path: str) -> None:
    """The demo policy's rule as an ONNX graph: int64 [1] features in,
    ``inlining_decision`` int64 [1] out."""
    import onnx
    from onnx import TensorProto, helper, numpy_helper

    def const(name: str, value: int):
        return numpy_helper.from_array(np.array([value], np.int64), name)

    n = helper.make_node
    nodes = [
        # cost <= 0
        n("Greater", ["cost_estimate", "zero"], ["cost_pos"]),
        n("Not", ["cost_pos"], ["cheap"]),
        # last_call && blocks <= 8
        n("Equal", ["last_call_to_static_bonus", "zero"], ["no_last"]),
        n("Not", ["no_last"], ["last"]),
        n("Greater", ["callee_basic_block_count", "eight"], ["big"]),
        n("Not", ["big"], ["small"]),
        n("And", ["last", "small"], ["rule2"]),
        # blocks == 1 && cost < 20
        n("Equal", ["callee_basic_block_count", "one"], ["single"]),
        n("Less", ["cost_estimate", "twenty"], ["tiny"]),
        n("And", ["single", "tiny"], ["rule3"]),
        n("Or", ["cheap", "rule2"], ["r12"]),
        n("Or", ["r12", "rule3"], ["yes"]),
        n("Cast", ["yes"], ["inlining_decision"], to=TensorProto.INT64),
    ]
    graph = helper.make_graph(
        nodes,
        "demo_inline_policy",
        [helper.make_tensor_value_info(f, TensorProto.INT64, [1]) for f in FEATURES],
        [helper.make_tensor_value_info("inlining_decision", TensorProto.INT64, [1])],
        [const("zero", 0), const("one", 1), const("eight", 8), const("twenty", 20)],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    model.ir_version = 8
    onnx.checker.check_model(model)
    onnx.save(model, path)


def write_cases(records: Sequence[Tuple[int, int, int, int]], path: str) -> None:
    """Raw int64 quads: the three features, then the decision the compiler got."""
    Path(path).write_bytes(np.array(records, np.int64).reshape(-1, 4).tobytes())


def run_deployment(workdir: str, records: List[Tuple[int, int, int, int]], out: TextIO) -> int:
    """Replay ``records`` in-process and over pipes; 0 when both agree. Without
    the replay program (no native half found), one line says why and 0."""
    try:
        replay = deploy_replay_path()
    except NativeError as err:
        out.write(f"(deployment half skipped: no replay program: {err})\n")
        return 0
    model = os.path.join(workdir, "demo_policy.onnx")
    cases = os.path.join(workdir, "decisions.bin")
    export_policy_onnx(model)
    write_cases(records, cases)
    policy = str(Path(__file__).resolve().parent / "demo_policy.py") + ":policy"
    try:
        done = run_tool([str(replay), model, cases, sys.executable, policy], timeout=600)
    except ToolError as err:
        out.write(f"the deployment half failed: {err}\n")
        return 1 if err.returncode is None else err.returncode
    out.write(done.stdout)
    return 0
