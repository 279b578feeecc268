"""Inlining for size: inline or not at each call site of stock
``clang-19 -Oz``; reward: ``.text`` against ``-Oz``.

The folder: this declaration; ``environment`` (``InliningEnv``); ``deploy``
(the exported model in the plugin, measured); ``toolchain`` (compiling a
corpus with the plugin and measuring it); the search trainer
(``trainers``, ``trainer_options``, ``size_training``, ``search``,
``search_labels``, ``imitation``) and the train-to-deploy loop (``loop``)."""

from __future__ import annotations

from mlbridge.problems.capabilities import (
    CompilerDecision,
    Deferral,
    DeployedBuild,
    PluginFeatures,
    Trainer,
    Validation,
)
from mlbridge.problems.problem import Problem

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


PROBLEM = Problem(
    name="inlining",
    env_id="mlbridge/Inlining-v0",
    environment="mlbridge.problems.inlining.environment:InliningEnv",
    output=DECISION,
    description="inline or not at each call site (clang-19 -Oz), reward: .text vs -Oz",
    hidden=HIDDEN,
    # The plugin feeds a model the features it declares, by LLVM's names:
    # the default, one int64 scalar each.
    evaluate="mlbridge.problems.inlining.deploy:evaluate_trained",
    llvm_majors=(19, 16),
    gamma=1.0,
    gae_lambda=1.0,
    capabilities=(
        CompilerDecision(DEFAULT_FEATURE),
        Deferral(ODR_CALLEE),
        PluginFeatures(PLUGIN_FEATURES),
        Validation("mlbridge.problems.inlining.size_training:validation_measure"),
        DeployedBuild("mlbridge.problems.inlining.deploy:deployed_build"),
        Trainer(
            "search",
            "mlbridge.problems.inlining.trainers:train_by_search",
            "rounds of per-unit search imitated by a residual policy, with a validation "
            "curve and early stopping (docs/inlining-size.md)",
            "mlbridge.problems.inlining.trainer_options:add_search_options",
        ),
        Trainer(
            "loop",
            "mlbridge.problems.inlining.trainers:train_by_loop",
            "imitation of LLVM's decisions, compiled ahead of time, deployed through the "
            "plugin and measured, then evolution strategies on size (docs/loop.md)",
            "mlbridge.problems.inlining.trainer_options:add_loop_options",
        ),
    ),
)
