//===- codec/JsonCodec.cpp - JSON messages --------------------------------===//
//
// Part of mlbridge, under the Apache License v2.0.
//
//===----------------------------------------------------------------------===//

#include "codec/JsonCodec.h"

#include "codec/DTypeDispatch.h"
#include "codec/TensorMatcher.h"
#include "support/Json.h"

#include <cstring>

namespace mlbridge {

namespace {

template <typename T> void appendElement(std::string &Out, T V) {
  if constexpr (std::is_same<T, float>::value)
    json::appendFloat(Out, V);
  else if constexpr (std::is_same<T, double>::value)
    json::appendDouble(Out, V);
  else if constexpr (std::is_signed<T>::value)
    json::appendInt(Out, V);
  else
    json::appendUInt(Out, V);
}

template <typename T>
void appendData(std::string &Out, const void *Data, size_t Count) {
  const char *Bytes = static_cast<const char *>(Data);
  for (size_t I = 0; I < Count; ++I) {
    if (I)
      Out.push_back(',');
    T V;
    std::memcpy(&V, Bytes + I * sizeof(T), sizeof(T));
    appendElement(Out, V);
  }
}

/// Reads a JSON array of numbers into tensor \p Index of the matcher.
template <typename T>
Error readData(json::Reader &R, void *Data, const TensorSpec &Spec) {
  if (Error E = R.expect('['))
    return E;
  char *Bytes = static_cast<char *>(Data);
  size_t Count = 0;
  bool First = true;
  while (true) {
    auto More = R.nextElement(First);
    if (!More)
      return More.takeError();
    if (!*More)
      break;
    if (Count == Spec.elementCount())
      return makeError(ErrorCode::TypeMismatch, "tensor '", Spec.name(),
                       "' has more than ", std::to_string(Count), " elements");
    auto Tok = R.readNumberToken();
    if (!Tok)
      return Tok.takeError().withContext("tensor '" + Spec.name() + "'");
    auto V = json::parseNumber<T>(*Tok);
    if (!V)
      return V.takeError().withContext("tensor '" + Spec.name() + "'");
    std::memcpy(Bytes + Count * sizeof(T), &*V, sizeof(T));
    ++Count;
  }
  if (Count != Spec.elementCount())
    return makeError(ErrorCode::TypeMismatch, "tensor '", Spec.name(), "' has ",
                     std::to_string(Count), " elements, expected ",
                     std::to_string(Spec.elementCount()));
  return Error::success();
}

struct DataReader {
  template <typename T>
  Error operator()(json::Reader &R, void *Data, const TensorSpec &Spec) const {
    return readData<T>(R, Data, Spec);
  }
};

struct DataWriter {
  template <typename T>
  void operator()(std::string &Out, const void *Data, size_t Count) const {
    appendData<T>(Out, Data, Count);
  }
};

constexpr size_t MaxDims = 64;

/// Parses one tensor object of the "tensors" array.
Error readTensor(json::Reader &R, TensorMatcher &M, std::string &Scratch) {
  std::string NameStorage, TypeScratch;
  std::string_view Name;
  bool HasName = false, HasType = false, HasShape = false;
  DType Type = DType::Float;
  int64_t Dims[MaxDims];
  size_t NumDims = 0;
  long DataOffset = -1;
  Error E = R.forEachMember(Scratch, [&](std::string_view Key) -> Error {
    if (Key == "name") {
      auto S = R.readString(NameStorage);
      if (!S)
        return S.takeError();
      Name = *S; // a view of the input, or of NameStorage if escaped
      HasName = true;
    } else if (Key == "type") {
      auto S = R.readString(TypeScratch);
      if (!S)
        return S.takeError();
      auto T = parseDType(*S);
      if (!T)
        return T.takeError();
      Type = *T;
      HasType = true;
    } else if (Key == "shape") {
      HasShape = true;
      return R.readIntArray(Dims, MaxDims, NumDims);
    } else if (Key == "data") {
      // Parsed once the name and type are known (keys may come in any order).
      DataOffset = long(R.offset());
      return R.skipValue();
    } else {
      return R.skipValue();
    }
    return Error::success();
  });
  if (E)
    return E;
  if (!HasName || !HasType || !HasShape || DataOffset < 0)
    return R.fail("a tensor needs \"name\", \"type\", \"shape\" and \"data\"");
  auto Index = M.claim(Name, Type);
  if (!Index)
    return Index.takeError();
  if (Error E = M.checkShape(*Index, Dims, NumDims))
    return E;
  size_t End = R.offset();
  R.seek(size_t(DataOffset));
  TensorBuffers &B = M.buffers();
  if (Error E =
          dispatchDType(Type, DataReader(), R, B.data(*Index), B.spec(*Index)))
    return E;
  R.seek(End);
  return Error::success();
}

} // namespace

Error JsonCodec::encode(std::optional<uint64_t> Observation,
                        const TensorBuffers &Tensors, std::string &Out) const {
  Out.clear();
  Out.push_back('{');
  if (Observation) {
    Out.append("\"observation\":");
    json::appendUInt(Out, *Observation);
    Out.push_back(',');
  }
  Out.append("\"tensors\":[");
  for (size_t I = 0; I < Tensors.size(); ++I) {
    const TensorSpec &S = Tensors.spec(I);
    if (I)
      Out.push_back(',');
    Out.append("{\"name\":");
    json::appendString(Out, S.name());
    Out.append(",\"type\":\"");
    Out.append(dtypeName(S.type()));
    Out.append("\",\"shape\":[");
    for (size_t D = 0; D < S.shape().size(); ++D) {
      if (D)
        Out.push_back(',');
      json::appendInt(Out, S.shape()[D]);
    }
    Out.append("],\"data\":[");
    dispatchDType(S.type(), DataWriter(), Out, Tensors.data(I),
                  S.elementCount());
    Out.append("]}");
  }
  Out.append("]}");
  return Error::success();
}

Error JsonCodec::decode(std::string_view Payload, TensorBuffers &Into,
                        std::optional<uint64_t> *Observation) const {
  if (Observation)
    Observation->reset();
  json::Reader R(Payload);
  TensorMatcher M(Into);
  std::string Scratch, ElementScratch;
  bool HasTensors = false;
  Error E = R.forEachMember(Scratch, [&](std::string_view Key) -> Error {
    if (Key == "observation") {
      auto N = R.readUInt();
      if (!N)
        return N.takeError();
      if (Observation)
        *Observation = *N;
      return Error::success();
    }
    if (Key == "error") {
      auto S = R.readString(ElementScratch);
      if (!S)
        return S.takeError();
      return makeError(ErrorCode::ModelFailure, "model side reported: ",
                       std::string(S->substr(0, 4096)));
    }
    if (Key == "tensors") {
      HasTensors = true;
      return R.forEachElement([&] { return readTensor(R, M, ElementScratch); });
    }
    return R.skipValue();
  });
  if (E)
    return E;
  if (Error E = R.expectEnd())
    return E;
  if (!HasTensors)
    return makeError(ErrorCode::Protocol, "JSON message has no \"tensors\"");
  return M.finish();
}

} // namespace mlbridge
