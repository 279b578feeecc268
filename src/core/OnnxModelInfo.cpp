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

namespace mlbridge {

using protowire::WireReader;
using protowire::WireType;

namespace {

// Field numbers of onnx.proto (ONNX IR version 3 and later).
constexpr uint32_t ModelGraph = 7;          // ModelProto.graph
constexpr uint32_t ModelMetadataProps = 14; // ModelProto.metadata_props
constexpr uint32_t EntryKey = 1;            // StringStringEntryProto.key
constexpr uint32_t EntryValue = 2;          // StringStringEntryProto.value
constexpr uint32_t GraphInitializer = 5;    // GraphProto.initializer
constexpr uint32_t GraphInput = 11;         // GraphProto.input
constexpr uint32_t GraphOutput = 12;        // GraphProto.output
constexpr uint32_t GraphSparseInit = 15;    // GraphProto.sparse_initializer
constexpr uint32_t SparseValues = 1;        // SparseTensorProto.values
constexpr uint32_t TensorName = 8;          // TensorProto.name
constexpr uint32_t ValueName = 1;           // ValueInfoProto.name
constexpr uint32_t ValueType = 2;           // ValueInfoProto.type
constexpr uint32_t TypeTensor = 1;          // TypeProto.tensor_type
constexpr uint32_t TensorElemType = 1;      // TypeProto.Tensor.elem_type
constexpr uint32_t TensorShape = 2;         // TypeProto.Tensor.shape
constexpr uint32_t ShapeDim = 1;            // TensorShapeProto.dim
constexpr uint32_t DimValue = 1;            // Dimension.dim_value

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

/// The memory the reader may still take (OnnxModelInfoMemoryFactor bytes
/// per byte of the model, plus OnnxModelInfoMemoryBase), charged before each
/// allocation.
class MemoryBudget {
public:
  explicit MemoryBudget(size_t ModelBytes)
      : Left(ModelBytes > (SIZE_MAX - OnnxModelInfoMemoryBase) /
                              OnnxModelInfoMemoryFactor
                 ? SIZE_MAX
                 : ModelBytes * OnnxModelInfoMemoryFactor +
                       OnnxModelInfoMemoryBase),
        Total(Left) {}

  /// Takes \p Bytes from the budget; TooLarge when it is spent.
  Error charge(size_t Bytes) {
    if (Bytes > Left)
      return makeError(ErrorCode::TooLarge,
                       "the model's interface would take more than ",
                       std::to_string(Total), " bytes of memory to read (",
                       std::to_string(OnnxModelInfoMemoryFactor),
                       " per byte of the model, plus ",
                       std::to_string(OnnxModelInfoMemoryBase), ")");
    Left -= Bytes;
    return Error::success();
  }

  /// Makes room for one more element in \p V, charging what it allocates:
  /// the capacity doubles (so the vector never grows on its own).
  template <typename T> Error roomForOneMore(std::vector<T> &V) {
    if (V.size() < V.capacity())
      return Error::success();
    size_t Grown = std::max<size_t>(4, V.capacity() * 2);
    if (Error E = charge((Grown - V.capacity()) * sizeof(T)))
      return E;
    V.reserve(Grown);
    return Error::success();
  }

  /// Copies \p Bytes into \p Out, charging them.
  Error assign(std::string &Out, std::string_view Bytes) {
    if (Error E = charge(Bytes.size()))
      return E;
    Out.assign(Bytes.data(), Bytes.size());
    return Error::success();
  }

private:
  size_t Left, Total;
};

/// Reads TypeProto.Tensor.shape into \p V.
Error readShape(std::string_view Bytes, OnnxValueInfo &V,
                MemoryBudget &Budget) {
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
        if (Error E = Budget.roomForOneMore(V.Dims))
          return E;
        V.Dims.push_back(Value);
        return true;
      });
}

/// Reads a ValueInfoProto.
Expected<OnnxValueInfo> readValueInfo(std::string_view Bytes,
                                      MemoryBudget &Budget) {
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
      if (Error E = readShape(*S, V, Budget))
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
          if (Error E = Budget.assign(V.Name, *B))
            return E;
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

/// The name of a TensorProto (a view into \p Bytes).
Expected<std::string_view> tensorName(std::string_view Bytes) {
  std::string_view Name;
  if (Error E = forEachField(
          Bytes, [&](uint32_t F, WireType W, WireReader &R) -> Expected<bool> {
            if (F != TensorName)
              return false;
            auto B = bytesOf(W, R, "a tensor's name");
            if (!B)
              return B.takeError();
            Name = *B;
            return true;
          }))
    return E;
  return Name;
}

/// The name of the initializer in field \p F of a GraphProto (a view).
Expected<std::string_view> initializerName(uint32_t F, WireType W,
                                           WireReader &R) {
  auto B = bytesOf(W, R, "an initializer");
  if (!B)
    return B.takeError();
  std::string_view Tensor = *B;
  if (F == GraphSparseInit) { // its name is that of its values
    Tensor = {};
    if (Error E = forEachField(
            *B,
            [&](uint32_t SF, WireType SW, WireReader &SR) -> Expected<bool> {
              if (SF != SparseValues)
                return false;
              auto Values = bytesOf(SW, SR, "sparse values");
              if (!Values)
                return Values.takeError();
              Tensor = *Values;
              return true;
            }))
      return E;
  }
  return tensorName(Tensor);
}

/// Reads the inputs and outputs of a GraphProto into \p Info.
Error readGraphInterface(std::string_view Bytes, OnnxModelInfo &Info,
                         MemoryBudget &Budget) {
  return forEachField(
      Bytes, [&](uint32_t F, WireType W, WireReader &R) -> Expected<bool> {
        if (F == GraphInput || F == GraphOutput) {
          const char *Role = F == GraphInput ? "graph input" : "graph output";
          auto &Values = F == GraphInput ? Info.Inputs : Info.Outputs;
          auto B = bytesOf(W, R, Role);
          if (!B)
            return B.takeError();
          if (Error E = Budget.roomForOneMore(Values))
            return E;
          auto V = readValueInfo(*B, Budget);
          if (!V)
            return Error(V.error().code(), "in " + std::string(Role) + " #" +
                                               std::to_string(Values.size()) +
                                               ": " + V.error().message());
          Values.push_back(std::move(*V));
          return true;
        }
        return false; // initializers: read by markWeights()
      });
}

/// Adds the StringStringEntryProto \p Bytes to \p Metadata if its key
/// starts with ModelMetadataPrefix.
Error readMetadataEntry(std::string_view Bytes, ModelMetadata &Metadata,
                        MemoryBudget &Budget) {
  std::string_view Key, Value;
  if (Error E = forEachField(
          Bytes, [&](uint32_t F, WireType W, WireReader &R) -> Expected<bool> {
            if (F != EntryKey && F != EntryValue)
              return false;
            auto B = bytesOf(W, R, "a metadata entry's key or value");
            if (!B)
              return B.takeError();
            (F == EntryKey ? Key : Value) = *B;
            return true;
          }))
    return E;
  if (Key.substr(0, ModelMetadataPrefix.size()) != ModelMetadataPrefix)
    return Error::success();
  if (Error E = Budget.roomForOneMore(Metadata))
    return E;
  Metadata.emplace_back();
  if (Error E = Budget.assign(Metadata.back().first, Key))
    return E;
  return Budget.assign(Metadata.back().second, Value);
}

/// Marks in \p IsWeight the inputs (sorted by name in \p ByName) that an
/// initializer of the GraphProto \p Bytes names.
Error markWeights(std::string_view Bytes, const OnnxModelInfo &Info,
                  const std::vector<size_t> &ByName,
                  std::vector<bool> &IsWeight) {
  return forEachField(
      Bytes, [&](uint32_t F, WireType W, WireReader &R) -> Expected<bool> {
        if (F != GraphInitializer && F != GraphSparseInit)
          return false;
        auto Name = initializerName(F, W, R);
        if (!Name)
          return Name.takeError();
        auto It = std::lower_bound(ByName.begin(), ByName.end(), *Name,
                                   [&](size_t I, std::string_view N) {
                                     return Info.Inputs[I].Name < N;
                                   });
        for (; It != ByName.end() && Info.Inputs[*It].Name == *Name; ++It)
          IsWeight[*It] = true;
        return true;
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
  MemoryBudget Budget(Bytes.size());
  // Two passes over the graphs (repeated messages merge, as protobuf
  // parsers do): the interface, then the initializers that give some
  // inputs defaults. No initializer name is copied.
  auto ForEachGraph = [&](auto OnGraph) {
    return forEachField(
        Bytes, [&](uint32_t F, WireType W, WireReader &R) -> Expected<bool> {
          if (F != ModelGraph)
            return false;
          auto B = bytesOf(W, R, "graph");
          if (!B)
            return B.takeError();
          if (Error E = OnGraph(*B))
            return E;
          return true;
        });
  };
  bool HasGraph = false;
  if (Error E = ForEachGraph([&](std::string_view Graph) {
        HasGraph = true;
        return readGraphInterface(Graph, Info, Budget);
      }))
    return E.code() == ErrorCode::TooLarge
               ? std::move(E)
               : makeError(ErrorCode::InvalidArgument, "not an ONNX model (",
                           E.message(), ")");
  if (!HasGraph)
    return makeError(ErrorCode::InvalidArgument,
                     "not an ONNX model (no graph)");
  if (Error E = forEachField(
          Bytes, [&](uint32_t F, WireType W, WireReader &R) -> Expected<bool> {
            if (F != ModelMetadataProps)
              return false;
            auto B = bytesOf(W, R, "metadata_props");
            if (!B)
              return B.takeError();
            if (Error E = readMetadataEntry(*B, Info.Metadata, Budget))
              return E;
            return true;
          }))
    return E.code() == ErrorCode::TooLarge
               ? std::move(E)
               : makeError(ErrorCode::InvalidArgument, "not an ONNX model (",
                           E.message(), ")");
  if (Error E = Budget.charge(Info.Inputs.size() * (sizeof(size_t) + 1)))
    return E;
  std::vector<size_t> ByName(Info.Inputs.size());
  for (size_t I = 0; I < ByName.size(); ++I)
    ByName[I] = I;
  std::sort(ByName.begin(), ByName.end(), [&](size_t A, size_t B) {
    return Info.Inputs[A].Name < Info.Inputs[B].Name;
  });
  std::vector<bool> IsWeight(Info.Inputs.size(), false);
  if (Error E = ForEachGraph([&](std::string_view Graph) {
        return markWeights(Graph, Info, ByName, IsWeight);
      }))
    return makeError(ErrorCode::InvalidArgument, "not an ONNX model (",
                     E.message(), ")");
  size_t Kept = 0;
  for (size_t I = 0; I < Info.Inputs.size(); ++I)
    if (!IsWeight[I] && Kept++ != I)
      Info.Inputs[Kept - 1] = std::move(Info.Inputs[I]);
  Info.Inputs.resize(Kept);
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
