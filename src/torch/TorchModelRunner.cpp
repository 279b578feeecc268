//===- torch/TorchModelRunner.cpp - In-process LibTorch -------------------===//
//
// Part of mlbridge, under the Apache License v2.0.
//
//===----------------------------------------------------------------------===//
//
// Every LibTorch call that may throw is inside a try block: no exception
// leaves the library; failures become Errors naming the model and tensor.
//
//===----------------------------------------------------------------------===//

#include "mlbridge/TorchModelRunner.h"

#include <ATen/Parallel.h>
#include <torch/script.h>

#include <cstring>
#include <optional>
#include <sys/stat.h>

namespace mlbridge {

namespace {

/// The LibTorch dtype of a DType (none for unsigned 16/32/64-bit).
std::optional<c10::ScalarType> torchType(DType T) {
  switch (T) {
  case DType::Float:
    return c10::kFloat;
  case DType::Double:
    return c10::kDouble;
  case DType::Int8:
    return c10::kChar;
  case DType::UInt8:
    return c10::kByte;
  case DType::Int16:
    return c10::kShort;
  case DType::Int32:
    return c10::kInt;
  case DType::Int64:
    return c10::kLong;
  case DType::UInt16:
  case DType::UInt32:
  case DType::UInt64:
    break;
  }
  return std::nullopt;
}

/// How forward() returns its results.
enum class Returns { Tensor, Sequence, Dict };

} // namespace

struct TorchModelRunner::Impl {
  std::string Model;                  // 'path', for messages
  torch::jit::Module Module;          // the loaded model
  torch::jit::Function *Forward;      // its forward()
  std::vector<c10::IValue> Arguments; // per forward() argument: a tensor
  std::vector<c10::IValue> Stack;     // self, arguments; then the result
  std::vector<bool> Read;             // per runner input: forward() takes it
  Returns Kind = Returns::Tensor;
  std::vector<c10::ScalarType> OutputTypes; // per output spec

  /// Runs forward() on the bound inputs; the result is Stack[0].
  void run() {
    Stack.clear();
    Stack.push_back(Module._ivalue());
    for (const c10::IValue &A : Arguments)
      Stack.push_back(A);
    Forward->run(Stack);
  }

  /// Copies the result of run() into \p Outputs, checking it.
  Error collect(TensorBuffers &Outputs) const;
};

Error TorchModelRunner::Impl::collect(TensorBuffers &Outputs) const {
  if (Stack.size() != 1)
    return makeError(ErrorCode::ModelFailure, "model ", Model,
                     ": forward() left ", std::to_string(Stack.size()),
                     " values");
  const c10::IValue &Result = Stack[0];
  // Checks \p T against output spec \p I and copies it.
  auto Copy = [&](size_t I, const at::Tensor &T) -> Error {
    const TensorSpec &Spec = Outputs.spec(I);
    if (T.scalar_type() != OutputTypes[I])
      return makeError(ErrorCode::TypeMismatch, "model ", Model, " output '",
                       Spec.name(), "' has dtype ",
                       std::string(c10::toString(T.scalar_type())),
                       ", the spec says ", dtypeName(Spec.type()));
    if (size_t(T.numel()) != Spec.elementCount())
      return makeError(ErrorCode::TypeMismatch, "model ", Model, " output '",
                       Spec.name(), "' has ", std::to_string(T.numel()),
                       " elements, the spec has ",
                       std::to_string(Spec.elementCount()));
    if (T.device().type() != c10::kCPU)
      return makeError(ErrorCode::Unsupported, "model ", Model, " output '",
                       Spec.name(), "' is not on the CPU");
    const at::Tensor Dense = T.is_contiguous() ? T : T.contiguous();
    std::memcpy(Outputs.data(I), Dense.data_ptr(), Spec.byteSize());
    return Error::success();
  };
  switch (Kind) {
  case Returns::Tensor:
    if (!Result.isTensor())
      break;
    return Copy(0, Result.toTensor());
  case Returns::Sequence: {
    if (!Result.isTuple() && !Result.isList())
      break;
    const size_t N = Result.isTuple() ? Result.toTupleRef().elements().size()
                                      : Result.toListRef().size();
    if (N != Outputs.size())
      return makeError(ErrorCode::TypeMismatch, "model ", Model, " returned ",
                       std::to_string(N), " tensors, the specs name ",
                       std::to_string(Outputs.size()));
    for (size_t I = 0; I < N; ++I) {
      const c10::IValue &V = Result.isTuple()
                                 ? Result.toTupleRef().elements()[I]
                                 : Result.toListRef()[I];
      if (!V.isTensor())
        return makeError(ErrorCode::TypeMismatch, "model ", Model,
                         " returned a non-tensor as result #",
                         std::to_string(I));
      if (Error E = Copy(I, V.toTensor()))
        return E;
    }
    return Error::success();
  }
  case Returns::Dict: {
    if (!Result.isGenericDict())
      break;
    const c10::Dict<c10::IValue, c10::IValue> D = Result.toGenericDict();
    for (size_t I = 0; I < Outputs.size(); ++I) {
      const std::string &Name = Outputs.spec(I).name();
      bool Found = false;
      for (const auto &Entry : D) {
        if (!Entry.key().isString() || Entry.key().toStringRef() != Name)
          continue;
        if (!Entry.value().isTensor())
          return makeError(ErrorCode::TypeMismatch, "model ", Model,
                           " result '", Name, "' is not a tensor");
        if (Error E = Copy(I, Entry.value().toTensor()))
          return E;
        Found = true;
        break;
      }
      if (!Found)
        return makeError(ErrorCode::InvalidArgument, "model ", Model,
                         " returned no '", Name, "'");
    }
    return Error::success();
  }
  }
  return makeError(ErrorCode::TypeMismatch, "model ", Model, " returned a ",
                   Result.tagKind(), ", not what its first run returned");
}

TorchModelRunner::TorchModelRunner() : P(std::make_unique<Impl>()) {}
TorchModelRunner::~TorchModelRunner() = default;

Expected<std::unique_ptr<TorchModelRunner>> TorchModelRunner::createFromFile(
    const std::string &Path, std::vector<TensorSpec> Inputs,
    std::vector<TensorSpec> Outputs, TorchOptions Options) {
  std::unique_ptr<TorchModelRunner> R(new TorchModelRunner());
  Impl &I = *R->P;
  I.Model = "'" + Path + "'";
  struct stat Info;
  if (::stat(Path.c_str(), &Info) != 0 || !S_ISREG(Info.st_mode))
    return makeError(ErrorCode::InvalidArgument, "TorchScript model ", I.Model,
                     " is not a file");
  if (Error E = R->initBuffers(std::move(Inputs), std::move(Outputs)))
    return E;
  for (size_t O = 0; O < R->Outputs.size(); ++O) {
    auto T = torchType(R->Outputs.spec(O).type());
    if (!T)
      return makeError(ErrorCode::Unsupported, "output '",
                       R->Outputs.spec(O).name(), "': LibTorch has no ",
                       dtypeName(R->Outputs.spec(O).type()), " dtype");
    I.OutputTypes.push_back(*T);
  }
  if (R->Outputs.size() == 0)
    return makeError(ErrorCode::InvalidArgument, "model ", I.Model,
                     ": no output specs");
  try {
    if (Options.IntraOpThreads > 0)
      at::set_num_threads(Options.IntraOpThreads);
    I.Module = torch::jit::load(Path, c10::kCPU);
    I.Module.eval();
    auto Forward = I.Module.find_method("forward");
    if (!Forward)
      return makeError(ErrorCode::InvalidArgument, "model ", I.Model,
                       " has no forward()");
    I.Forward = &Forward->function();
    const c10::FunctionSchema &Schema = I.Forward->getSchema();
    I.Read.assign(R->numInputs(), false);
    for (size_t A = 1; A < Schema.arguments().size(); ++A) {
      const c10::Argument &Arg = Schema.arguments()[A];
      auto Index = R->inputIndex(Arg.name());
      if (!Index)
        return makeError(ErrorCode::InvalidArgument, "model ", I.Model,
                         "'s forward() takes '", Arg.name(),
                         "', which no input spec provides");
      if (Arg.type()->kind() != c10::TypeKind::TensorType)
        return makeError(ErrorCode::Unsupported, "model ", I.Model,
                         "'s forward() argument '", Arg.name(), "' is a ",
                         Arg.type()->str(), ", not a Tensor");
      const TensorSpec &Spec = R->Inputs.spec(*Index);
      auto Type = torchType(Spec.type());
      if (!Type)
        return makeError(ErrorCode::Unsupported, "input '", Spec.name(),
                         "': LibTorch has no ", dtypeName(Spec.type()),
                         " dtype");
      I.Arguments.push_back(torch::from_blob(
          R->Inputs.data(*Index), Spec.shape(), torch::TensorOptions(*Type)));
      I.Read[*Index] = true;
    }
    I.Stack.reserve(I.Arguments.size() + 1);
    // The trial run, on the zeroed buffers: what forward() returns.
    c10::InferenceMode Guard;
    I.run();
    const c10::IValue &Result = I.Stack.empty() ? c10::IValue() : I.Stack[0];
    if (Result.isTensor())
      I.Kind = Returns::Tensor;
    else if (Result.isTuple() || Result.isList())
      I.Kind = Returns::Sequence;
    else if (Result.isGenericDict())
      I.Kind = Returns::Dict;
    else
      return makeError(ErrorCode::Unsupported, "model ", I.Model,
                       "'s forward() returns a ", Result.tagKind(),
                       ", not tensors");
    if (I.Kind == Returns::Tensor && R->Outputs.size() != 1)
      return makeError(ErrorCode::InvalidArgument, "model ", I.Model,
                       " returns one tensor, the specs name ",
                       std::to_string(R->Outputs.size()));
    if (Error E = I.collect(R->Outputs))
      return E;
  } catch (const c10::Error &E) {
    return makeError(ErrorCode::InvalidArgument,
                     "cannot use TorchScript model ", I.Model, ": ",
                     E.what_without_backtrace());
  } catch (const std::exception &E) {
    return makeError(ErrorCode::InvalidArgument,
                     "cannot use TorchScript model ", I.Model, ": ", E.what());
  }
  return R;
}

bool TorchModelRunner::readsInput(size_t I) const {
  return I < P->Read.size() && P->Read[I];
}

Error TorchModelRunner::evaluateImpl() {
  try {
    c10::InferenceMode Guard;
    P->run();
    return P->collect(Outputs);
  } catch (const c10::Error &E) {
    return makeError(ErrorCode::ModelFailure, "model ", P->Model,
                     " failed: ", E.what_without_backtrace());
  } catch (const std::exception &E) {
    return makeError(ErrorCode::ModelFailure, "model ", P->Model,
                     " failed: ", E.what());
  }
}

} // namespace mlbridge
