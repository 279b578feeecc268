//===- modules/RunnerModuleEntry.cpp - A runner module's entry point ------===//
//
// Part of mlbridge, under the Apache License v2.0.
//
//===----------------------------------------------------------------------===//
//
// Built into each runner module opened on demand (RunnerModules.h):
// mlbridge-runners-grpc.so with MLBRIDGE_RUNNER_MODULE_GRPC,
// mlbridge-runners-onnx.so with MLBRIDGE_RUNNER_MODULE_ONNX, and
// mlbridge-runners-torch.so with MLBRIDGE_RUNNER_MODULE_TORCH.
//
//===----------------------------------------------------------------------===//

#include "RunnerModules.h"

#if defined(MLBRIDGE_RUNNER_MODULE_GRPC)
#include "mlbridge/GrpcModelRunner.h"
#elif defined(MLBRIDGE_RUNNER_MODULE_ONNX)
#include "mlbridge/OnnxModelRunner.h"
#elif defined(MLBRIDGE_RUNNER_MODULE_TORCH)
#include "mlbridge/TorchModelRunner.h"
#else
#error "define MLBRIDGE_RUNNER_MODULE_GRPC, _ONNX or _TORCH"
#endif

#include <cstring>

/// The module's RunnerModuleEntry (see RunnerModules.h).
extern "C" __attribute__((visibility("default"))) const char *
mlbridge_runner_module_v1(const char *Version,
                          mlbridge::RunnerFactories *Factories) {
  if (Version && Factories &&
      std::strcmp(Version, MLBRIDGE_VERSION_STRING) == 0) {
#if defined(MLBRIDGE_RUNNER_MODULE_GRPC)
    mlbridge::addGrpcRunners(*Factories);
#elif defined(MLBRIDGE_RUNNER_MODULE_ONNX)
    mlbridge::addOnnxRunners(*Factories);
#else
    mlbridge::addTorchRunners(*Factories);
#endif
  }
  return MLBRIDGE_VERSION_STRING;
}
