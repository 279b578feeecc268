//===- core/DeferredRunner.h - Runners created at first use -----*- C++ -*-===//
//
// Part of mlbridge, under the Apache License v2.0.
//
//===----------------------------------------------------------------------===//
///
/// \file
/// A runner that stands for another one and creates it at its first
/// evaluation. A compiler process that makes no decision (a file without
/// call sites, loops, ...) then never pays for loading a heavy runtime:
/// ONNX Runtime costs a process about 20 ms before its first inference.
///
//===----------------------------------------------------------------------===//

#ifndef MLBRIDGE_SRC_CORE_DEFERREDRUNNER_H
#define MLBRIDGE_SRC_CORE_DEFERREDRUNNER_H

#include "mlbridge/RunnerConfig.h"

#include <functional>
#include <memory>
#include <vector>

namespace mlbridge {

/// Creates the runner a DeferredRunner stands for.
using RunnerCreator = std::function<Expected<std::unique_ptr<ModelRunner>>()>;

/// A runner over \p Inputs and \p Outputs whose first evaluate() calls
/// \p Create and then forwards every evaluation to the runner it made
/// (the inputs the model reads are copied in, the outputs copied back; no
/// allocation). \p Reads says, per input, whether the model reads it (the
/// deferred runner's readsInput(), known before the model is loaded), and
/// \p Metadata what its metadata() answers. If \p Create fails, or makes a
/// runner that reads other inputs or says other metadata, that evaluation
/// returns an error and the runner stays broken (later evaluations fail
/// fast with it).
Expected<std::unique_ptr<ModelRunner>>
makeDeferredRunner(std::vector<TensorSpec> Inputs,
                   std::vector<TensorSpec> Outputs, std::vector<bool> Reads,
                   RunnerCreator Create, ModelMetadata Metadata = {});

/// The factory of the onnx kind given the one that loads a model now
/// (\p LoadNow): with RunnerConfig::LazyLoad it reads the model's interface
/// from the file and checks it against the specs (a missing model or one of
/// other specs is refused at creation, as \p LoadNow would), then defers
/// \p LoadNow to the first evaluation; otherwise it calls \p LoadNow.
RunnerFactory deferOnnxLoading(RunnerFactory LoadNow);

} // namespace mlbridge

#endif // MLBRIDGE_SRC_CORE_DEFERREDRUNNER_H
