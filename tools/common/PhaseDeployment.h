//===- common/PhaseDeployment.h - Deploying a pipeline ----------*- C++ -*-===//
//
// Part of mlbridge, under the Apache License v2.0.
//
//===----------------------------------------------------------------------===//
///
/// \file
/// What mlbridge-phase-service and mlbridge-pipeline-clang share: the
/// optimisation of one loaded module in deployment, by a constant pipeline
/// or by a runner's choices, with the same fallback to default<Oz> and the
/// same messages (docs/phase-ordering.md#deployment-in-a-build).
///
//===----------------------------------------------------------------------===//

#ifndef MLBRIDGE_TOOLS_COMMON_PHASEDEPLOYMENT_H
#define MLBRIDGE_TOOLS_COMMON_PHASEDEPLOYMENT_H

#include "mlbridge/Error.h"
#include "mlbridge/RunnerConfig.h"
#include "mlbridge/llvm/PhaseOrdering.h"

#include <cstdint>
#include <optional>
#include <string>

namespace mlbridge::tools {

/// Actions a runner chooses at most unless told otherwise.
constexpr int64_t DefaultMaxSteps = 32;

/// What optimises a module: a constant pipeline, or a runner's choices.
struct DeploymentPlan {
  /// A constant pipeline (opt's -passes= syntax, PhasePipelines.h); used
  /// when Runner is empty.
  std::string Pipeline;
  /// The runner choosing actions.
  std::optional<RunnerConfig> Runner;
  /// The most actions the runner chooses.
  int64_t MaxSteps = DefaultMaxSteps;
  /// A file the run's statistics record is appended to ("": none).
  std::string Stats;
};

/// The runner kinds of the core library and \p Kind: linked into this
/// program (the service), or, in a program built with
/// MLBRIDGE_RUNNER_MODULES_FROM (the path from its directory to the runner
/// modules: mlbridge-pipeline-clang, which starts once per compilation),
/// loaded from the module of its kind only when a configuration asks for it
/// (modules/RunnerModules.h). Errors: Unsupported, the module missing or
/// not loadable.
Expected<RunnerFactories> runnerFactories(RunnerKind Kind);

/// Optimises the module loaded in \p S as \p Plan says. A pipeline that
/// breaks the module, or a runner that fails, leaves the module to
/// default<Oz>, and \p Tool says so on stderr. Errors: InvalidArgument for
/// a constant pipeline that does not parse (nothing changed), otherwise the
/// session's or the statistics file's.
Error optimiseLoaded(const DeploymentPlan &Plan, phase::Session &S,
                     const char *Tool);

} // namespace mlbridge::tools

#endif // MLBRIDGE_TOOLS_COMMON_PHASEDEPLOYMENT_H
