//===- modules/RunnerModules.h - Runner kinds loaded on demand --*- C++ -*-===//
//
// Part of mlbridge, under the Apache License v2.0.
//
//===----------------------------------------------------------------------===//
///
/// \file
/// The runner kinds that need large libraries live in loadable modules:
/// mlbridge-runners-grpc.so (gRPC, protobuf, abseil), mlbridge-runners-onnx.so
/// (ONNX Runtime) and mlbridge-runners-torch.so (LibTorch). The LLVM plugin
/// opens them from its own directory, the C API (libmlbridge_c.so) from the
/// mlbridge/ directory beside it (LibTorch only: it links the others), and
/// only when a configuration asks for their kind, so that a compiler loading
/// either for another runner loads none of those libraries (loading and
/// relocating them costs every compiler process tens of milliseconds,
/// LibTorch half a second). A module stays loaded until the process ends:
/// the runners it makes run its code.
///
//===----------------------------------------------------------------------===//

#ifndef MLBRIDGE_SRC_MODULES_RUNNERMODULES_H
#define MLBRIDGE_SRC_MODULES_RUNNERMODULES_H

#include "mlbridge/Error.h"
#include "mlbridge/RunnerConfig.h"

#include <string>

namespace mlbridge {

/// What every runner module exports, with C linkage, under
/// RunnerModuleSymbol: when \p Version is the module's own mlbridge version
/// (its user and the module must come from the same build), adds the module's
/// runner kinds to \p Factories; returns the module's version either way.
using RunnerModuleEntry = const char *(*)(const char *Version,
                                          RunnerFactories *Factories);

/// The name of the entry point (version 1 of this interface).
inline constexpr const char *RunnerModuleSymbol = "mlbridge_runner_module_v1";

/// The file name of the module of \p Kind, or null when the kind needs no
/// module.
const char *runnerModuleFile(RunnerKind Kind);

/// Makes \p Kind available in \p Factories by loading its module from
/// directory \p Dir when it has one (grpc, onnx, torch) and \p Factories lacks
/// it; nothing to do for the other kinds. Errors (Unsupported) name the module:
/// missing or not loadable (with the loader's reason), without the entry
/// point, or of another mlbridge version. The onnx module (with ONNX Runtime)
/// is loaded by the factory, with the model: at the first evaluation unless
/// the configuration says load=eager (see deferOnnxLoading()).
Error addModuleRunners(RunnerKind Kind, const std::string &Dir,
                       RunnerFactories &Factories);

/// The directory of the shared object this code is linked into (the plugin,
/// libmlbridge_c.so); "" when the loader cannot tell.
std::string ownDirectory();

} // namespace mlbridge

#endif // MLBRIDGE_SRC_MODULES_RUNNERMODULES_H
