"""Phase ordering for IR size: one pass (or sub-sequence of ``-Oz``) per
step of ``mlbridge-phase-service``; reward: IR instructions against ``-Oz``.

The folder: this declaration; ``environment`` (``PhaseOrderingEnv`` on the
phase service); ``deploy`` (the exported model in the service, measured, and
in a build); ``configurations`` (units under constant size configurations:
the baselines and the per-module search); ``chooser`` (a per-module choice
of one whole pipeline); ``pipeline_wrapper`` (a build's CC and CXX that run
a pipeline)."""

from __future__ import annotations

from mlbridge.problems.capabilities import DeployedBuild
from mlbridge.problems.problem import Problem

PROBLEM = Problem(
    name="phase-ordering",
    env_id="mlbridge/PhaseOrdering-v0",
    environment="mlbridge.problems.phase_ordering.environment:PhaseOrderingEnv",
    output="action",
    description="one pass (or sub-sequence) per step of mlbridge-phase-service, "
    "reward: IR instructions vs -Oz",
    hidden=("status", "module"),
    # The service feeds a deployed model the same tensors as in training.
    deploy_inputs="mlbridge.problems.phase_ordering.environment:deploy_inputs",
    evaluate="mlbridge.problems.phase_ordering.deploy:evaluate_trained",
    llvm_majors=(19, 16),
    # mlbridge validate builds programs with a policy through the pipeline
    # wrappers (mlbridge wrap --runner onnx:POLICY).
    capabilities=(DeployedBuild("mlbridge.problems.phase_ordering.deploy:deployed_build"),),
)
