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

/// \p Shape as text, e.g. "[2,-1]".
std::string shapeText(const std::vector<int64_t> &Shape) {
  std::string Out = "[";
  for (size_t I = 0; I < Shape.size(); ++I) {
    if (I)
      Out.push_back(',');
    Out.append(std::to_string(Shape[I]));
  }
  Out.push_back(']');
  return Out;
}

/// Checks a spec's name and shape; sets \p Count to the element count of a
/// valid shape.
Error validate(const std::string &Name, const std::vector<int64_t> &Shape,
               uint64_t &Count) {
  Count = 0;
  if (Name.empty())
    return makeError(ErrorCode::InvalidArgument, "tensor name is empty");
  if (Shape.size() > MaxTensorRank)
    return makeError(ErrorCode::InvalidArgument, "tensor '", Name,
                     "': ", std::to_string(Shape.size()),
                     " dimensions, at most ", std::to_string(MaxTensorRank),
                     " are supported");
  for (int64_t D : Shape) {
    if (D < 0)
      return makeError(ErrorCode::InvalidArgument, "tensor '", Name,
                       "': negative dimension ", std::to_string(D),
                       " in shape ", shapeText(Shape));
    // Like the Python side: [0, 10^30] holds no element but is refused.
    if (uint64_t(D) > MaxTensorElements)
      return makeError(ErrorCode::InvalidArgument, "tensor '", Name,
                       "': dimension ", std::to_string(D), " in shape ",
                       shapeText(Shape), " is larger than 2^40");
  }
  uint64_t N = 1;
  for (int64_t D : Shape) {
    if (D > 0 && N > MaxTensorElements / uint64_t(D))
      return makeError(ErrorCode::InvalidArgument, "tensor '", Name,
                       "': shape ", shapeText(Shape),
                       " has more than 2^40 elements");
    N *= uint64_t(D);
  }
  Count = N;
  return Error::success();
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
  uint64_t Count;
  Invalid = validate(this->Name, this->Shape, Count);
  ElementCount = size_t(Count);
}

Expected<TensorSpec> TensorSpec::create(std::string Name, DType Type,
                                        std::vector<int64_t> Shape, int Port) {
  uint64_t Count;
  if (Error E = validate(Name, Shape, Count))
    return E;
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

void appendJSONArray(std::string &Out, const std::vector<TensorSpec> &Specs) {
  Out += '[';
  for (size_t I = 0; I < Specs.size(); ++I) {
    if (I)
      Out += ',';
    Specs[I].appendJSON(Out);
  }
  Out += ']';
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

Error checkSpecs(const std::vector<TensorSpec> &Specs, const char *What) {
  for (const TensorSpec &S : Specs)
    if (!S.isValid())
      return S.validationError().withContext(What);
  return checkUniqueNames(Specs, What);
}

} // namespace mlbridge
