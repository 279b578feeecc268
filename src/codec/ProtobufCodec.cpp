//===- codec/ProtobufCodec.cpp - protobuf messages ------------------------===//
//
// Part of mlbridge, under the Apache License v2.0.
//
//===----------------------------------------------------------------------===//

#include "codec/ProtobufCodec.h"

#include "codec/TensorMatcher.h"
#include "support/ProtoWire.h"

#include <cstring>

namespace mlbridge {

namespace {

using namespace protowire;

// Field numbers of tensor.proto.
enum : uint32_t {
  MsgObservation = 1,
  MsgTensors = 2,
  MsgError = 3,
  TensorName = 1,
  TensorDType = 2,
  TensorShape = 3,
  TensorData = 4,
};

constexpr size_t MaxDims = 64;

size_t packedShapeSize(const TensorSpec &S) {
  size_t N = 0;
  for (int64_t D : S.shape())
    N += varintSize(uint64_t(D));
  return N;
}

size_t tensorBodySize(const TensorSpec &S) {
  size_t N = lengthDelimitedSize(TensorName, S.name().size());
  N += 1 + varintSize(uint64_t(S.type()) + 1);
  if (!S.shape().empty())
    N += lengthDelimitedSize(TensorShape, packedShapeSize(S));
  if (S.byteSize())
    N += lengthDelimitedSize(TensorData, S.byteSize());
  return N;
}

/// Decodes one Tensor submessage into the matcher's buffers.
Error readTensor(std::string_view Body, TensorMatcher &M) {
  WireReader R(Body);
  std::string_view Name, Data;
  uint64_t DTypeValue = 0;
  int64_t Dims[MaxDims];
  size_t NumDims = 0;
  bool HasData = false;
  while (!R.atEnd()) {
    auto Tag = R.readTag();
    if (!Tag)
      return Tag.takeError();
    auto [Field, Wire] = *Tag;
    if (Field == TensorName && Wire == WireType::Len) {
      auto V = R.readBytes();
      if (!V)
        return V.takeError();
      Name = *V;
    } else if (Field == TensorDType && Wire == WireType::Varint) {
      auto V = R.readVarint();
      if (!V)
        return V.takeError();
      DTypeValue = *V;
    } else if (Field == TensorShape &&
               (Wire == WireType::Len || Wire == WireType::Varint)) {
      std::string_view Packed;
      if (Wire == WireType::Len) {
        auto V = R.readBytes();
        if (!V)
          return V.takeError();
        Packed = *V;
      }
      WireReader P(Packed);
      do {
        auto D = Wire == WireType::Len ? P.readVarint() : R.readVarint();
        if (!D)
          return D.takeError();
        if (NumDims == MaxDims)
          return makeError(ErrorCode::Protocol, "tensor '",
                           std::string(Name.substr(0, 128)),
                           "': shape has too many dimensions");
        Dims[NumDims++] = int64_t(*D);
      } while (Wire == WireType::Len && !P.atEnd());
    } else if (Field == TensorData && Wire == WireType::Len) {
      auto V = R.readBytes();
      if (!V)
        return V.takeError();
      Data = *V;
      HasData = true;
    } else if (Error E = R.skip(Wire)) {
      return E;
    }
  }
  if (DTypeValue < 1 || DTypeValue > uint64_t(NumDTypes))
    return makeError(ErrorCode::Protocol, "tensor '",
                     std::string(Name.substr(0, 128)), "' has invalid dtype ",
                     std::to_string(DTypeValue));
  auto Index = M.claim(Name, DType(DTypeValue - 1));
  if (!Index)
    return Index.takeError();
  if (Error E = M.checkShape(*Index, Dims, NumDims))
    return E;
  if (Error E = M.checkByteSize(*Index, HasData ? Data.size() : 0))
    return E;
  if (!Data.empty())
    std::memcpy(M.buffers().data(*Index), Data.data(), Data.size());
  return Error::success();
}

} // namespace

Error ProtobufCodec::encode(std::optional<uint64_t> Observation,
                            const TensorBuffers &Tensors,
                            std::string &Out) const {
  Out.clear();
  if (Observation && *Observation)
    appendVarintField(Out, MsgObservation, *Observation);
  for (size_t I = 0; I < Tensors.size(); ++I) {
    const TensorSpec &S = Tensors.spec(I);
    appendTag(Out, MsgTensors, WireType::Len);
    appendVarint(Out, tensorBodySize(S));
    appendBytesField(Out, TensorName, S.name());
    appendVarintField(Out, TensorDType, uint64_t(S.type()) + 1);
    if (!S.shape().empty()) {
      appendTag(Out, TensorShape, WireType::Len);
      appendVarint(Out, packedShapeSize(S));
      for (int64_t D : S.shape())
        appendVarint(Out, uint64_t(D));
    }
    if (S.byteSize())
      appendBytesField(
          Out, TensorData,
          std::string_view(static_cast<const char *>(Tensors.data(I)),
                           S.byteSize()));
  }
  return Error::success();
}

Error ProtobufCodec::decode(std::string_view Payload, TensorBuffers &Into,
                            std::optional<uint64_t> *Observation) const {
  if (Observation)
    Observation->reset();
  WireReader R(Payload);
  TensorMatcher M(Into);
  while (!R.atEnd()) {
    auto Tag = R.readTag();
    if (!Tag)
      return Tag.takeError();
    auto [Field, Wire] = *Tag;
    if (Field == MsgObservation && Wire == WireType::Varint) {
      auto V = R.readVarint();
      if (!V)
        return V.takeError();
      if (Observation)
        *Observation = *V;
    } else if (Field == MsgTensors && Wire == WireType::Len) {
      auto Body = R.readBytes();
      if (!Body)
        return Body.takeError();
      if (Error E = readTensor(*Body, M))
        return E;
    } else if (Field == MsgError && Wire == WireType::Len) {
      auto V = R.readBytes();
      if (!V)
        return V.takeError();
      if (!V->empty())
        return makeError(ErrorCode::ModelFailure, "model side reported: ",
                         std::string(V->substr(0, 4096)));
    } else if (Error E = R.skip(Wire)) {
      return E;
    }
  }
  if (Observation && !Observation->has_value())
    *Observation = 0; // proto3 omits a zero observation
  return M.finish();
}

} // namespace mlbridge
