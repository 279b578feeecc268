//===- core/OnnxModelInfo.cpp - An ONNX model's interface -----------------===//
//
// Part of mlbridge, under the Apache License v2.0.
//
//===----------------------------------------------------------------------===//

#include "mlbridge/OnnxModelInfo.h"

#include "support/ProtoWire.h"
#include "support/ReadFile.h"

#include <algorithm>
#include <cstdint>
#include <unordered_set>

namespace mlbridge {

using protowire::WireReader;
using protowire::WireType;

namespace {

// Field numbers of onnx.proto (ONNX IR version 3 and later).
constexpr uint32_t ModelGraph = 7;       // ModelProto.graph
constexpr uint32_t GraphInitializer = 5; // GraphProto.initializer
constexpr uint32_t GraphInput = 11;      // GraphProto.input
constexpr uint32_t GraphOutput = 12;     // GraphProto.output
constexpr uint32_t GraphSparseInit = 15; // GraphProto.sparse_initializer
constexpr uint32_t SparseValues = 1;     // SparseTensorProto.values
constexpr uint32_t TensorName = 8;       // TensorProto.name
constexpr uint32_t ValueName = 1;        // ValueInfoProto.name
constexpr uint32_t ValueType = 2;        // ValueInfoProto.type
constexpr uint32_t TypeTensor = 1;       // TypeProto.tensor_type
constexpr uint32_t TensorElemType = 1;   // TypeProto.Tensor.elem_type
constexpr uint32_t TensorShape = 2;      // TypeProto.Tensor.shape
constexpr uint32_t ShapeDim = 1;         // TensorShapeProto.dim
constexpr uint32_t DimValue = 1;         // Dimension.dim_value

/// Calls \p OnField(Field, Wire, Reader) for each field of the message in
/// \p Bytes; the callback reads the value or returns false to have it
/// skipped. Stops at the first malformed byte.
template <typename Fn> Error forEachField(std::string_view Bytes, Fn OnField) {
  WireReader R(Bytes);
  while (!R.atEnd()) {
    auto Tag = R.readTag();
    if (!Tag)
      return Tag.takeError();
    Expected<bool> Read = OnField(Tag->first, Tag->second, R);
    if (!Read)
      return Read.takeError();
    if (!*Read)
      if (Error E = R.skip(Tag->second))
        return E;
  }
  return Error::success();
}

/// The length-delimited value of a field of wire type \p W.
Expected<std::string_view> bytesOf(WireType W, WireReader &R,
                                   const char *Field) {
  if (W != WireType::Len)
    return makeError(ErrorCode::Protocol, Field,
                     " is not a length-delimited field");
  return R.readBytes();
}

/// The varint value of a field of wire type \p W.
Expected<uint64_t> varintOf(WireType W, WireReader &R, const char *Field) {
  if (W != WireType::Varint)
    return makeError(ErrorCode::Protocol, Field, " is not a varint field");
  return R.readVarint();
}

/// Reads TypeProto.Tensor.shape into \p V.
Error readShape(std::string_view Bytes, OnnxValueInfo &V) {
  V.HasShape = true;
  return forEachField(
      Bytes, [&](uint32_t F, WireType W, WireReader &R) -> Expected<bool> {
        if (F != ShapeDim)
          return false;
        auto Dim = bytesOf(W, R, "a dimension");
        if (!Dim)
          return Dim.takeError();
        int64_t Value = -1; // dim_param or nothing: unknown
        if (Error E = forEachField(*Dim,
                                   [&](uint32_t DF, WireType DW,
                                       WireReader &DR) -> Expected<bool> {
                                     if (DF != DimValue)
                                       return false;
                                     auto N = varintOf(DW, DR, "dim_value");
                                     if (!N)
                                       return N.takeError();
                                     Value = int64_t(*N) < 0 ? -1 : int64_t(*N);
                                     return true;
                                   }))
          return E;
        V.Dims.push_back(Value);
        return true;
      });
}

/// Reads a ValueInfoProto.
Expected<OnnxValueInfo> readValueInfo(std::string_view Bytes) {
  OnnxValueInfo V;
  auto OnTensor = [&](uint32_t F, WireType W, WireReader &R) -> Expected<bool> {
    if (F == TensorElemType) {
      auto T = varintOf(W, R, "elem_type");
      if (!T)
        return T.takeError();
      V.ElementType = int32_t(*T);
      return true;
    }
    if (F == TensorShape) {
      auto S = bytesOf(W, R, "shape");
      if (!S)
        return S.takeError();
      if (Error E = readShape(*S, V))
        return E;
      return true;
    }
    return false;
  };
  auto OnType = [&](uint32_t F, WireType W, WireReader &R) -> Expected<bool> {
    if (F != TypeTensor)
      return false; // sequence, map, optional, sparse: not a tensor
    auto T = bytesOf(W, R, "tensor_type");
    if (!T)
      return T.takeError();
    V.IsTensor = true;
    if (Error E = forEachField(*T, OnTensor))
      return E;
    return true;
  };
  Error E = forEachField(
      Bytes, [&](uint32_t F, WireType W, WireReader &R) -> Expected<bool> {
        if (F != ValueName && F != ValueType)
          return false;
        auto B = bytesOf(W, R, F == ValueName ? "name" : "type");
        if (!B)
          return B.takeError();
        if (F == ValueName) {
          V.Name.assign(B->data(), B->size());
          return true;
        }
        if (Error E = forEachField(*B, OnType))
          return E;
        return true;
      });
  if (E)
    return E;
  return V;
}

/// The name of a TensorProto.
Expected<std::string> tensorName(std::string_view Bytes) {
  std::string Name;
  if (Error E = forEachField(
          Bytes, [&](uint32_t F, WireType W, WireReader &R) -> Expected<bool> {
            if (F != TensorName)
              return false;
            auto B = bytesOf(W, R, "a tensor's name");
            if (!B)
              return B.takeError();
            Name.assign(B->data(), B->size());
            return true;
          }))
    return E;
  return Name;
}

/// Reads a GraphProto into \p Info; initializer names go to \p Weights.
Error readGraph(std::string_view Bytes, OnnxModelInfo &Info,
                std::unordered_set<std::string> &Weights) {
  return forEachField(
      Bytes, [&](uint32_t F, WireType W, WireReader &R) -> Expected<bool> {
        if (F == GraphInput || F == GraphOutput) {
          const char *Role = F == GraphInput ? "graph input" : "graph output";
          auto B = bytesOf(W, R, Role);
          if (!B)
            return B.takeError();
          auto V = readValueInfo(*B);
          if (!V)
            return makeError(ErrorCode::Protocol, "in ", Role, " #",
                             std::to_string(F == GraphInput
                                                ? Info.Inputs.size()
                                                : Info.Outputs.size()),
                             ": ", V.error().message());
          (F == GraphInput ? Info.Inputs : Info.Outputs)
              .push_back(std::move(*V));
          return true;
        }
        if (F == GraphInitializer || F == GraphSparseInit) {
          auto B = bytesOf(W, R, "an initializer");
          if (!B)
            return B.takeError();
          std::string_view Tensor = *B;
          if (F == GraphSparseInit) { // its name is that of its values
            Tensor = {};
            if (Error E = forEachField(*B,
                                       [&](uint32_t SF, WireType SW,
                                           WireReader &SR) -> Expected<bool> {
                                         if (SF != SparseValues)
                                           return false;
                                         auto Values =
                                             bytesOf(SW, SR, "sparse values");
                                         if (!Values)
                                           return Values.takeError();
                                         Tensor = *Values;
                                         return true;
                                       }))
              return E;
          }
          auto Name = tensorName(Tensor);
          if (!Name)
            return Name.takeError();
          Weights.insert(std::move(*Name));
          return true;
        }
        return false;
      });
}

/// The element count of \p Dims, and whether a dimension is symbolic.
std::pair<size_t, bool> declaredCount(const std::vector<int64_t> &Dims) {
  size_t Count = 1;
  bool Symbolic = false;
  for (int64_t D : Dims) {
    if (D < 0)
      Symbolic = true;
    else
      Count = D == 0 || Count <= SIZE_MAX / size_t(D) ? Count * size_t(D)
                                                      : SIZE_MAX;
  }
  return {Count, Symbolic};
}

/// Checks one model input or output against \p Spec.
Error checkValue(const OnnxValueInfo &V, const TensorSpec &Spec,
                 const char *Role) {
  if (!V.IsTensor)
    return makeError(ErrorCode::Unsupported, "model ", Role, " '", V.Name,
                     "' is not a tensor");
  if (V.ElementType != onnxElementType(Spec.type()))
    return makeError(ErrorCode::TypeMismatch, "model ", Role, " '", V.Name,
                     "' has ONNX element type ", std::to_string(V.ElementType),
                     ", the spec says ", dtypeName(Spec.type()));
  if (!V.HasShape)
    return Error::success();
  auto [Count, Symbolic] = declaredCount(V.Dims);
  bool Fits = Symbolic ? Spec.elementCount() % (Count ? Count : 1) == 0
                       : Count == Spec.elementCount();
  if (Fits)
    return Error::success();
  std::string Shape;
  for (int64_t D : V.Dims)
    Shape += (Shape.empty() ? "" : ",") + std::to_string(D);
  return makeError(ErrorCode::TypeMismatch, "model ", Role, " '", Spec.name(),
                   "' has shape [", Shape, "], the spec has ",
                   std::to_string(Spec.elementCount()), " elements");
}

} // namespace

int32_t onnxElementType(DType Type) {
  switch (Type) {
  case DType::Float:
    return 1;
  case DType::UInt8:
    return 2;
  case DType::Int8:
    return 3;
  case DType::UInt16:
    return 4;
  case DType::Int16:
    return 5;
  case DType::Int32:
    return 6;
  case DType::Int64:
    return 7;
  case DType::Double:
    return 11;
  case DType::UInt32:
    return 12;
  case DType::UInt64:
    return 13;
  }
  return 0;
}

Expected<OnnxModelInfo> readOnnxModelInfo(std::string_view Bytes) {
  OnnxModelInfo Info;
  std::unordered_set<std::string> Weights;
  bool HasGraph = false;
  Error E = forEachField(
      Bytes, [&](uint32_t F, WireType W, WireReader &R) -> Expected<bool> {
        if (F != ModelGraph)
          return false;
        auto B = bytesOf(W, R, "graph");
        if (!B)
          return B.takeError();
        HasGraph = true; // repeated messages merge, as protobuf parsers do
        if (Error E = readGraph(*B, Info, Weights))
          return E;
        return true;
      });
  if (E)
    return makeError(ErrorCode::InvalidArgument, "not an ONNX model (",
                     E.message(), ")");
  if (!HasGraph)
    return makeError(ErrorCode::InvalidArgument,
                     "not an ONNX model (no graph)");
  Info.Inputs.erase(std::remove_if(Info.Inputs.begin(), Info.Inputs.end(),
                                   [&](const OnnxValueInfo &V) {
                                     return Weights.count(V.Name) != 0;
                                   }),
                    Info.Inputs.end());
  return Info;
}

Expected<OnnxModelInfo> readOnnxModelInfoFile(const std::string &Path) {
  // One ModelProto is at most 2 GiB (protobuf's limit; larger weights live
  // in external data files, which the interface does not need).
  auto Bytes = readRegularFile(Path, INT32_MAX, "ONNX model");
  if (!Bytes) // ONNX Runtime reports every model it cannot load so
    return Error(ErrorCode::InvalidArgument, Bytes.error().message());
  auto Info = readOnnxModelInfo(*Bytes);
  if (!Info)
    return Info.error().withContext("cannot load ONNX model '" + Path + "'");
  return Info;
}

Expected<std::vector<bool>> checkOnnxInterface(
    const OnnxModelInfo &Model, const std::vector<TensorSpec> &Inputs,
    const std::vector<TensorSpec> &Outputs, const std::string &ModelName) {
  auto Find = [](const std::vector<TensorSpec> &Specs,
                 const std::string &Name) {
    return std::find_if(Specs.begin(), Specs.end(),
                        [&](const TensorSpec &S) { return S.name() == Name; });
  };
  std::vector<bool> Reads(Inputs.size(), false);
  for (const OnnxValueInfo &V : Model.Inputs) {
    auto It = Find(Inputs, V.Name);
    if (It == Inputs.end())
      return makeError(ErrorCode::InvalidArgument, "model ", ModelName,
                       " needs input '", V.Name,
                       "', which no input spec provides");
    if (Error E = checkValue(V, *It, "input"))
      return E;
    Reads[size_t(It - Inputs.begin())] = true;
  }
  for (const TensorSpec &S : Outputs) {
    auto It = std::find_if(
        Model.Outputs.begin(), Model.Outputs.end(),
        [&](const OnnxValueInfo &V) { return V.Name == S.name(); });
    if (It == Model.Outputs.end())
      return makeError(ErrorCode::InvalidArgument, "model ", ModelName,
                       " has no output '", S.name(), "'");
    if (Error E = checkValue(*It, S, "output"))
      return E;
  }
  return Reads;
}

} // namespace mlbridge
