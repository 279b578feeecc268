//===- modules/RunnerModules.cpp - Runner kinds loaded on demand ----------===//
//
// Part of mlbridge, under the Apache License v2.0.
//
//===----------------------------------------------------------------------===//

#include "RunnerModules.h"

#include "core/DeferredRunner.h"

#include <dlfcn.h>
#include <unistd.h>

namespace mlbridge {
namespace {

/// The path of \p Kind's module in \p Dir.
std::string modulePath(const char *File, const std::string &Dir) {
  return (Dir.empty() ? std::string(".") : Dir) + "/" + File;
}

/// Opens \p Kind's module in \p Dir, which adds its factories.
Error loadRunnerModule(RunnerKind Kind, const std::string &Dir,
                       RunnerFactories &Factories) {
  std::string Path = modulePath(runnerModuleFile(Kind), Dir);
  auto Fail = [&](const std::string &Why) {
    return makeError(ErrorCode::Unsupported, "the ", runnerKindName(Kind),
                     " runner needs module '", Path, "': ", Why);
  };
  // Never closed: the runners made by its factories run its code. dlopen
  // counts references, so opening it again later costs a lookup.
  void *Handle = ::dlopen(Path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!Handle) {
    const char *Why = ::dlerror();
    return Fail(Why ? Why : "it cannot be loaded");
  }
  auto Entry =
      reinterpret_cast<RunnerModuleEntry>(::dlsym(Handle, RunnerModuleSymbol));
  if (!Entry)
    return Fail(std::string("it exports no ") + RunnerModuleSymbol);
  const char *Version = Entry(MLBRIDGE_VERSION_STRING, &Factories);
  if (!Factories.has(Kind))
    return Fail(std::string("it is mlbridge ") + (Version ? Version : "?") +
                ", its user " + MLBRIDGE_VERSION_STRING +
                " (install both from one build)");
  return Error::success();
}

} // namespace

const char *runnerModuleFile(RunnerKind Kind) {
  switch (Kind) {
  case RunnerKind::Grpc:
    return "mlbridge-runners-grpc.so";
  case RunnerKind::Onnx:
    return "mlbridge-runners-onnx.so";
  case RunnerKind::Torch:
    return "mlbridge-runners-torch.so";
  default:
    return nullptr;
  }
}

Error addModuleRunners(RunnerKind Kind, const std::string &Dir,
                       RunnerFactories &Factories) {
  const char *File = runnerModuleFile(Kind);
  if (!File || Factories.has(Kind))
    return Error::success();
  if (Kind != RunnerKind::Onnx)
    return loadRunnerModule(Kind, Dir, Factories);
  // ONNX Runtime is loaded with the model (at the first evaluation unless
  // load=eager); a module that is not there is refused now all the same.
  std::string Path = modulePath(File, Dir);
  if (::access(Path.c_str(), R_OK) != 0)
    return makeError(ErrorCode::Unsupported, "the onnx runner needs module '",
                     Path, "': it is not there");
  Factories.add(Kind,
                deferOnnxLoading([Kind, Dir](const RunnerConfig &C,
                                             std::vector<TensorSpec> In,
                                             std::vector<TensorSpec> Out)
                                     -> Expected<std::unique_ptr<ModelRunner>> {
                  RunnerFactories Loaded;
                  if (Error E = loadRunnerModule(Kind, Dir, Loaded))
                    return E;
                  return (*Loaded.find(Kind))(C, std::move(In), std::move(Out));
                }));
  return Error::success();
}

std::string ownDirectory() {
  Dl_info Info;
  if (!::dladdr(reinterpret_cast<void *>(&ownDirectory), &Info) ||
      !Info.dli_fname)
    return "";
  std::string Path = Info.dli_fname;
  size_t Slash = Path.rfind('/');
  return Slash == std::string::npos ? "." : Path.substr(0, Slash);
}

} // namespace mlbridge
