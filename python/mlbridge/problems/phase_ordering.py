"""Phase ordering for IR size: one pass (or sub-sequence of ``-Oz``) per
step of ``mlbridge-phase-service``; reward: IR instructions against ``-Oz``."""

from __future__ import annotations

from mlbridge.problems.problem import Problem

PROBLEM = Problem(
    name="phase-ordering",
    env_id="mlbridge/PhaseOrdering-v0",
    environment="mlbridge.gym.phase_ordering:PhaseOrderingEnv",
    hidden=("status", "module"),
    output="action",
    # The service feeds a deployed model the same tensors as in training.
    deploy_inputs="mlbridge.gym.phase_ordering:deploy_inputs",
    description="one pass (or sub-sequence) per step of mlbridge-phase-service, "
    "reward: IR instructions vs -Oz",
    session="service",
    evaluate="mlbridge.train.deploy_phase_ordering:evaluate_trained",
    llvm_majors=(19, 16),
)
