//===- onnx/OnnxModelRunner.cpp - In-process ONNX Runtime -----------------===//
//
// Part of mlbridge, under the Apache License v2.0.
//
//===----------------------------------------------------------------------===//
//
// Every ONNX Runtime call that may throw is inside a try block: no exception
// leaves the library; failures become Errors naming the model and tensor.
//
//===----------------------------------------------------------------------===//

#include "mlbridge/OnnxModelRunner.h"

#include "mlbridge/OnnxModelInfo.h"

#include <onnxruntime_cxx_api.h>

#include <mutex>

namespace mlbridge {

namespace {

/// The process's one ONNX Runtime environment (created on first use).
Expected<Ort::Env *> environment() {
  static std::once_flag Once;
  static std::unique_ptr<Ort::Env> Env;
  static std::string Failure;
  std::call_once(Once, [] {
    try {
      Env = std::make_unique<Ort::Env>(ORT_LOGGING_LEVEL_ERROR, "mlbridge");
    } catch (const std::exception &E) {
      Failure = E.what();
    }
  });
  if (!Env)
    return makeError(ErrorCode::IO,
                     "cannot create the ONNX Runtime "
                     "environment: ",
                     Failure);
  return Env.get();
}

} // namespace

struct OnnxModelRunner::Impl {
  std::unique_ptr<Ort::Session> Session;
  std::unique_ptr<Ort::IoBinding> Binding;
  std::vector<Ort::Value> Values; // tensors over the runner's buffers
  std::vector<bool> Read;         // per runner input: the model has it
  Ort::RunOptions Run;
};

OnnxModelRunner::OnnxModelRunner() : P(std::make_unique<Impl>()) {}
OnnxModelRunner::~OnnxModelRunner() = default;

Expected<std::unique_ptr<OnnxModelRunner>> OnnxModelRunner::createFromFile(
    const std::string &Path, std::vector<TensorSpec> Inputs,
    std::vector<TensorSpec> Outputs, OnnxOptions Options) {
  return create(&Path, nullptr, 0, std::move(Inputs), std::move(Outputs),
                Options);
}

Expected<std::unique_ptr<OnnxModelRunner>> OnnxModelRunner::createFromBytes(
    const void *Data, size_t Size, std::vector<TensorSpec> Inputs,
    std::vector<TensorSpec> Outputs, OnnxOptions Options) {
  return create(nullptr, Data, Size, std::move(Inputs), std::move(Outputs),
                Options);
}

Expected<std::unique_ptr<OnnxModelRunner>>
OnnxModelRunner::create(const std::string *Path, const void *Data, size_t Size,
                        std::vector<TensorSpec> Inputs,
                        std::vector<TensorSpec> Outputs, OnnxOptions Options) {
  std::string Model = Path ? "'" + *Path + "'" : "(in memory)";
  // The interface is checked from the file itself, as the lazy onnx runner
  // checks it before ONNX Runtime is loaded: one check, the same errors.
  auto Info = Path ? readOnnxModelInfoFile(*Path)
                   : readOnnxModelInfo({static_cast<const char *>(Data), Size});
  if (!Info)
    return Path ? Info.takeError()
                : Info.error().withContext("cannot load ONNX model " + Model);
  auto Reads = checkOnnxInterface(*Info, Inputs, Outputs, Model);
  if (!Reads)
    return Reads.takeError();
  auto Env = environment();
  if (!Env)
    return Env.takeError();
  std::unique_ptr<OnnxModelRunner> R(new OnnxModelRunner());
  if (Error E = R->initBuffers(std::move(Inputs), std::move(Outputs)))
    return E;
  R->P->Read = std::move(*Reads);
  R->setMetadata(std::move(Info->Metadata));
  try {
    Ort::SessionOptions SO;
    SO.SetIntraOpNumThreads(
        Options.IntraOpThreads < 1 ? 1 : Options.IntraOpThreads);
    SO.SetInterOpNumThreads(1);
    SO.SetGraphOptimizationLevel(GraphOptimizationLevel::ORT_ENABLE_ALL);
    R->P->Session =
        Path ? std::make_unique<Ort::Session>(**Env, Path->c_str(), SO)
             : std::make_unique<Ort::Session>(**Env, Data, Size, SO);
    Ort::MemoryInfo Cpu =
        Ort::MemoryInfo::CreateCpu(OrtArenaAllocator, OrtMemTypeDefault);
    R->P->Binding = std::make_unique<Ort::IoBinding>(*R->P->Session);
    // Each tensor the model reads or the caller wants is a view of the
    // runner's buffer of its name; outputs nobody asked for are not bound.
    R->P->Values.reserve(Info->Inputs.size() + R->Outputs.size());
    auto View = [&](TensorBuffers &B, size_t I) -> Ort::Value & {
      const TensorSpec &Spec = B.spec(I);
      std::vector<int64_t> Shape = Spec.shape();
      R->P->Values.push_back(Ort::Value::CreateTensor(
          Cpu, B.data(I), Spec.byteSize(), Shape.data(), Shape.size(),
          // ONNX Runtime's element types are onnx.proto's.
          ONNXTensorElementDataType(onnxElementType(Spec.type()))));
      return R->P->Values.back();
    };
    for (const OnnxValueInfo &V : Info->Inputs)
      R->P->Binding->BindInput(V.Name.c_str(),
                               View(R->Inputs, *R->inputIndex(V.Name)));
    for (size_t I = 0; I < R->Outputs.size(); ++I)
      R->P->Binding->BindOutput(R->Outputs.spec(I).name().c_str(),
                                View(R->Outputs, I));
  } catch (const Ort::Exception &E) {
    return makeError(ErrorCode::InvalidArgument, "cannot load ONNX model ",
                     Model, ": ", E.what());
  } catch (const std::exception &E) {
    return makeError(ErrorCode::IO, "ONNX Runtime failed on model ", Model,
                     ": ", E.what());
  }
  return R;
}

bool OnnxModelRunner::readsInput(size_t I) const {
  return I < P->Read.size() && P->Read[I];
}

Error OnnxModelRunner::evaluateImpl() {
  try {
    P->Session->Run(P->Run, *P->Binding);
  } catch (const std::exception &E) {
    return makeError(ErrorCode::ModelFailure,
                     "ONNX Runtime Run failed: ", E.what());
  }
  return Error::success();
}

} // namespace mlbridge
