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

#include <onnxruntime_cxx_api.h>

#include <algorithm>
#include <mutex>

namespace mlbridge {

namespace {

/// The ONNX element type of a DType.
ONNXTensorElementDataType onnxType(DType T) {
  switch (T) {
  case DType::Float:
    return ONNX_TENSOR_ELEMENT_DATA_TYPE_FLOAT;
  case DType::Double:
    return ONNX_TENSOR_ELEMENT_DATA_TYPE_DOUBLE;
  case DType::Int8:
    return ONNX_TENSOR_ELEMENT_DATA_TYPE_INT8;
  case DType::UInt8:
    return ONNX_TENSOR_ELEMENT_DATA_TYPE_UINT8;
  case DType::Int16:
    return ONNX_TENSOR_ELEMENT_DATA_TYPE_INT16;
  case DType::UInt16:
    return ONNX_TENSOR_ELEMENT_DATA_TYPE_UINT16;
  case DType::Int32:
    return ONNX_TENSOR_ELEMENT_DATA_TYPE_INT32;
  case DType::UInt32:
    return ONNX_TENSOR_ELEMENT_DATA_TYPE_UINT32;
  case DType::Int64:
    return ONNX_TENSOR_ELEMENT_DATA_TYPE_INT64;
  case DType::UInt64:
    return ONNX_TENSOR_ELEMENT_DATA_TYPE_UINT64;
  }
  return ONNX_TENSOR_ELEMENT_DATA_TYPE_UNDEFINED;
}

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

/// Checks the model's declared shape \p Dims against \p Spec (-1 and other
/// symbolic dimensions match anything, the element counts must agree).
Error checkShape(const std::vector<int64_t> &Dims, const TensorSpec &Spec,
                 const char *Role) {
  bool Dynamic = false;
  int64_t Count = 1;
  for (int64_t D : Dims) {
    if (D < 0)
      Dynamic = true;
    else
      Count *= D;
  }
  if (Dynamic ? Spec.elementCount() % size_t(Count ? Count : 1) != 0
              : size_t(Count) != Spec.elementCount()) {
    std::string Shape;
    for (int64_t D : Dims)
      Shape += (Shape.empty() ? "" : ",") + std::to_string(D);
    return makeError(ErrorCode::TypeMismatch, "model ", Role, " '", Spec.name(),
                     "' has shape [", Shape, "], the spec has ",
                     std::to_string(Spec.elementCount()), " elements");
  }
  return Error::success();
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
  auto Env = environment();
  if (!Env)
    return Env.takeError();
  std::unique_ptr<OnnxModelRunner> R(new OnnxModelRunner());
  if (Error E = R->initBuffers(std::move(Inputs), std::move(Outputs)))
    return E;
  try {
    Ort::SessionOptions SO;
    SO.SetIntraOpNumThreads(
        Options.IntraOpThreads < 1 ? 1 : Options.IntraOpThreads);
    SO.SetInterOpNumThreads(1);
    SO.SetGraphOptimizationLevel(GraphOptimizationLevel::ORT_ENABLE_ALL);
    R->P->Session =
        Path ? std::make_unique<Ort::Session>(**Env, Path->c_str(), SO)
             : std::make_unique<Ort::Session>(**Env, Data, Size, SO);
    Ort::Session &S = *R->P->Session;
    Ort::AllocatorWithDefaultOptions Alloc;
    Ort::MemoryInfo Cpu =
        Ort::MemoryInfo::CreateCpu(OrtArenaAllocator, OrtMemTypeDefault);
    R->P->Binding = std::make_unique<Ort::IoBinding>(S);
    // Binds the model's input or output \p Index, called \p Name, to the
    // runner buffer of the same name.
    auto Bind = [&](bool IsInput, size_t Index,
                    const std::string &Name) -> Error {
      const char *Role = IsInput ? "input" : "output";
      auto I = IsInput ? R->inputIndex(Name) : R->outputIndex(Name);
      if (!I)
        return makeError(ErrorCode::InvalidArgument, "model ", Model, " needs ",
                         Role, " '", Name, "', which no ", Role,
                         " spec provides");
      TensorBuffers &B = IsInput ? R->Inputs : R->Outputs;
      const TensorSpec &Spec = B.spec(*I);
      Ort::TypeInfo Type =
          IsInput ? S.GetInputTypeInfo(Index) : S.GetOutputTypeInfo(Index);
      if (Type.GetONNXType() != ONNX_TYPE_TENSOR)
        return makeError(ErrorCode::Unsupported, "model ", Role, " '", Name,
                         "' is not a tensor");
      auto Info = Type.GetTensorTypeAndShapeInfo();
      if (Info.GetElementType() != onnxType(Spec.type()))
        return makeError(ErrorCode::TypeMismatch, "model ", Role, " '", Name,
                         "' has ONNX element type ",
                         std::to_string(int(Info.GetElementType())),
                         ", the spec says ", dtypeName(Spec.type()));
      if (Error E = checkShape(Info.GetShape(), Spec, Role))
        return E;
      std::vector<int64_t> Shape = Spec.shape();
      R->P->Values.push_back(Ort::Value::CreateTensor(
          Cpu, B.data(*I), Spec.byteSize(), Shape.data(), Shape.size(),
          onnxType(Spec.type())));
      if (IsInput) {
        R->P->Read[*I] = true;
        R->P->Binding->BindInput(Name.c_str(), R->P->Values.back());
      } else {
        R->P->Binding->BindOutput(Name.c_str(), R->P->Values.back());
      }
      return Error::success();
    };
    R->P->Values.reserve(S.GetInputCount() + S.GetOutputCount());
    R->P->Read.assign(R->numInputs(), false);
    for (size_t I = 0; I < S.GetInputCount(); ++I)
      if (Error E = Bind(true, I, S.GetInputNameAllocated(I, Alloc).get()))
        return E;
    std::vector<std::string> ModelOutputs;
    for (size_t I = 0; I < S.GetOutputCount(); ++I)
      ModelOutputs.push_back(S.GetOutputNameAllocated(I, Alloc).get());
    for (size_t I = 0; I < R->Outputs.size(); ++I)
      if (std::find(ModelOutputs.begin(), ModelOutputs.end(),
                    R->Outputs.spec(I).name()) == ModelOutputs.end())
        return makeError(ErrorCode::InvalidArgument, "model ", Model,
                         " has no output '", R->Outputs.spec(I).name(), "'");
    // Outputs nobody asked for are simply not bound.
    for (size_t I = 0; I < ModelOutputs.size(); ++I)
      if (R->outputIndex(ModelOutputs[I]))
        if (Error E = Bind(false, I, ModelOutputs[I]))
          return E;
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
