//===- core/TensorSpec.cpp - Tensor descriptions --------------------------===//
//
// Part of mlbridge, under the Apache License v2.0.
//
//===----------------------------------------------------------------------===//

#include "mlbridge/TensorSpec.h"

#include "support/Json.h"

#include <unordered_set>

namespace mlbridge {

namespace {
struct DTypeInfo {
  const char *Name;
  size_t Size;
};
constexpr DTypeInfo DTypeTable[NumDTypes] = {
    {"float", 4},   {"double", 8},   {"int8_t", 1},  {"uint8_t", 1},
    {"int16_t", 2}, {"uint16_t", 2}, {"int32_t", 4}, {"uint32_t", 4},
    {"int64_t", 8}, {"uint64_t", 8},
};

/// Element count of \p Shape, or 0 with Ok=false when invalid.
uint64_t countElements(const std::vector<int64_t> &Shape, bool &Ok) {
  uint64_t Count = 1;
  Ok = true;
  for (int64_t D : Shape) {
    if (D < 0 || (D > 0 && Count > MaxTensorElements / uint64_t(D))) {
      Ok = false;
      return 0;
    }
    Count *= uint64_t(D);
  }
  Ok = Count <= MaxTensorElements;
  return Count;
}
} // namespace

size_t dtypeSize(DType T) { return DTypeTable[static_cast<int>(T)].Size; }

const char *dtypeName(DType T) { return DTypeTable[static_cast<int>(T)].Name; }

Expected<DType> parseDType(std::string_view Name) {
  for (int I = 0; I < NumDTypes; ++I)
    if (Name == DTypeTable[I].Name)
      return static_cast<DType>(I);
  return makeError(ErrorCode::InvalidArgument, "unknown tensor type '",
                   std::string(Name.substr(0, 64)), "'");
}

TensorSpec::TensorSpec(std::string Name, DType Type, std::vector<int64_t> Shape,
                       int Port)
    : Name(std::move(Name)), Type(Type), Shape(std::move(Shape)), Port(Port) {
  bool Ok;
  ElementCount = countElements(this->Shape, Ok);
  if (!Ok) {
    this->Shape.clear();
    ElementCount = 1;
  }
}

Expected<TensorSpec> TensorSpec::create(std::string Name, DType Type,
                                        std::vector<int64_t> Shape, int Port) {
  if (Name.empty())
    return makeError(ErrorCode::InvalidArgument, "tensor name is empty");
  bool Ok;
  countElements(Shape, Ok);
  if (!Ok)
    return makeError(ErrorCode::InvalidArgument, "tensor '", Name,
                     "': shape has a negative dimension or too many elements");
  return TensorSpec(std::move(Name), Type, std::move(Shape), Port);
}

void TensorSpec::appendJSON(std::string &Out) const {
  Out.append("{\"name\":");
  json::appendString(Out, Name);
  Out.append(",\"type\":\"");
  Out.append(dtypeName(Type));
  Out.append("\",\"port\":");
  json::appendInt(Out, Port);
  Out.append(",\"shape\":[");
  for (size_t I = 0; I < Shape.size(); ++I) {
    if (I)
      Out.push_back(',');
    json::appendInt(Out, Shape[I]);
  }
  Out.append("]}");
}

std::string TensorSpec::toJSON() const {
  std::string Out;
  appendJSON(Out);
  return Out;
}

Expected<TensorSpec> TensorSpec::fromJSON(std::string_view Text) {
  constexpr size_t MaxDims = 64;
  json::Reader R(Text);
  std::string Scratch, ValueScratch, NameValue;
  bool HasName = false, HasType = false, HasShape = false;
  DType Type = DType::Float;
  int64_t Dims[MaxDims];
  size_t NumDims = 0;
  int64_t Port = 0;
  Error E = R.forEachMember(Scratch, [&](std::string_view Key) -> Error {
    if (Key == "name" || Key == "type") {
      auto S = R.readString(ValueScratch);
      if (!S)
        return S.takeError();
      if (Key == "name") {
        NameValue.assign(*S);
        HasName = true;
        return Error::success();
      }
      auto T = parseDType(*S);
      if (!T)
        return T.takeError();
      Type = *T;
      HasType = true;
      return Error::success();
    }
    if (Key == "port") {
      auto P = R.readInt();
      if (!P)
        return P.takeError();
      if (*P < 0 || *P > (1 << 30))
        return R.fail("port out of range");
      Port = *P;
      return Error::success();
    }
    if (Key == "shape") {
      HasShape = true;
      return R.readIntArray(Dims, MaxDims, NumDims);
    }
    return R.skipValue();
  });
  if (E)
    return E;
  if (Error E = R.expectEnd())
    return E;
  if (!HasName || !HasType || !HasShape)
    return makeError(ErrorCode::Protocol,
                     "tensor spec needs \"name\", \"type\" and \"shape\"");
  return create(std::move(NameValue), Type,
                std::vector<int64_t>(Dims, Dims + NumDims), int(Port));
}

bool TensorSpec::operator==(const TensorSpec &Other) const {
  return Name == Other.Name && Type == Other.Type && Shape == Other.Shape &&
         Port == Other.Port;
}

Error checkUniqueNames(const std::vector<TensorSpec> &Specs, const char *What) {
  std::unordered_set<std::string_view> Seen;
  for (const TensorSpec &S : Specs) {
    if (S.name().empty())
      return makeError(ErrorCode::InvalidArgument, What,
                       ": a tensor has an empty name");
    if (!Seen.insert(S.name()).second)
      return makeError(ErrorCode::InvalidArgument, What, ": tensor name '",
                       S.name(), "' appears twice");
  }
  return Error::success();
}

} // namespace mlbridge
