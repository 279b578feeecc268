"""Inlining for size: inline or not at each call site of stock
``clang-19 -Oz``; reward: ``.text`` against ``-Oz``."""

from __future__ import annotations

from typing import List, Optional, Sequence, Tuple

from mlbridge.problems.problem import Problem
from mlbridge.tensor_spec import TensorSpec

#: LLVM's own decision, which LLVM sends besides the features proper (and
#: the plugin computes for a model that reads it).
DEFAULT_FEATURE = "inlining_default"
#: The deployed model's output: 1 inline, 0 not.
DECISION = "inlining_decision"
#: Inliner features a policy does not see: LLVM 19's interactive mode
#: overwrites callee_basic_block_count with its own decision (pitfall #1, so
#: it would differ in deployment), and the module-wide node/edge counts say
#: more about the module than about the call site.
HIDDEN = ("callee_basic_block_count", "node_count", "edge_count")
#: The hidden feature that mlbridge's plugin sends intact: a policy trained
#: through the plugin may read it (``mlbridge train --plugin-features``).
PLUGIN_FEATURES = ("callee_basic_block_count",)
#: Whether the callee is linkonce_odr (a C++ inline function or template
#: instance), which the plugin offers to in-process models: there the
#: deployed model keeps LLVM's decision (docs/inlining-size.md, "C++ inline
#: functions keep LLVM's decision").
ODR_CALLEE = "is_callee_linkonce_odr"


def deploy_inputs(
    names: Sequence[str], kept: List[int]
) -> Tuple[List[TensorSpec], Optional[List[int]]]:
    """The plugin feeds a model the features it declares, by LLVM's names."""
    return [TensorSpec(names[i], "int64_t", (1,)) for i in kept], None


PROBLEM = Problem(
    name="inlining",
    env_id="mlbridge/Inlining-v0",
    environment="mlbridge.gym.inlining:InliningEnv",
    hidden=HIDDEN,
    output=DECISION,
    deploy_inputs=deploy_inputs,
    description="inline or not at each call site (clang-19 -Oz), reward: .text vs -Oz",
    warm_start_feature=DEFAULT_FEATURE,
    defers_when=ODR_CALLEE,
    plugin_features=PLUGIN_FEATURES,
    evaluate="mlbridge.train.deploy_inlining:evaluate_trained",
    validate="mlbridge.train.inlining_size:validation_measure",
    methods=("ppo", "search"),
    gamma=1.0,
    gae_lambda=1.0,
    llvm_majors=(19, 16),
)
