//===- core/BaselineRunners.h - Runners without a model ---------*- C++ -*-===//
//
// Part of mlbridge, under the Apache License v2.0.
//
//===----------------------------------------------------------------------===//
///
/// \file
/// The runners of RunnerKind::Constant and RunnerKind::Echo: no model, an
/// answer that is a number or a copy of one input. They are the baselines
/// that measure what a compiler integration costs besides the model, and
/// "echo" of the compiler's own decision reproduces its default heuristic
/// through the whole bridge.
///
//===----------------------------------------------------------------------===//

#ifndef MLBRIDGE_SRC_CORE_BASELINERUNNERS_H
#define MLBRIDGE_SRC_CORE_BASELINERUNNERS_H

#include "mlbridge/ModelRunner.h"

#include <memory>
#include <string>
#include <vector>

namespace mlbridge {

/// A runner whose output 0 is always \p Value (converted to its element
/// type; output 0 must have one element); other outputs are zero.
Expected<std::unique_ptr<ModelRunner>>
createConstantRunner(int64_t Value, std::vector<TensorSpec> Inputs,
                     std::vector<TensorSpec> Outputs);

/// A runner whose output 0 is a copy of the input called \p InputName,
/// which must have output 0's element type and element count; other outputs
/// are zero.
Expected<std::unique_ptr<ModelRunner>>
createEchoRunner(const std::string &InputName, std::vector<TensorSpec> Inputs,
                 std::vector<TensorSpec> Outputs);

} // namespace mlbridge

#endif // MLBRIDGE_SRC_CORE_BASELINERUNNERS_H
