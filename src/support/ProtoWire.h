//===- support/ProtoWire.h - protobuf wire format ---------------*- C++ -*-===//
//
// Part of mlbridge, under the Apache License v2.0.
//
//===----------------------------------------------------------------------===//
///
/// \file
/// Internal helpers for the protobuf wire format: varints, tags and
/// length-delimited fields, written to a std::string and read from a bounded
/// view (every length is checked against what remains; nothing is allocated).
///
//===----------------------------------------------------------------------===//

#ifndef MLBRIDGE_SUPPORT_PROTOWIRE_H
#define MLBRIDGE_SUPPORT_PROTOWIRE_H

#include "mlbridge/Error.h"

#include <cstdint>
#include <string>
#include <string_view>
#include <utility>

namespace mlbridge {
namespace protowire {

/// Protobuf wire types.
enum class WireType : uint32_t {
  Varint = 0,
  Fixed64 = 1,
  Len = 2,
  StartGroup = 3,
  EndGroup = 4,
  Fixed32 = 5
};

/// Bytes needed to write \p V as a varint.
inline size_t varintSize(uint64_t V) {
  size_t N = 1;
  while (V >= 0x80) {
    V >>= 7;
    ++N;
  }
  return N;
}

/// Bytes of a length-delimited field with a one-byte tag.
inline size_t lengthDelimitedSize(uint32_t, size_t Length) {
  return 1 + varintSize(Length) + Length;
}

/// Appends \p V as a varint.
inline void appendVarint(std::string &Out, uint64_t V) {
  char Buf[10];
  size_t N = 0;
  while (V >= 0x80) {
    Buf[N++] = char((V & 0x7F) | 0x80);
    V >>= 7;
  }
  Buf[N++] = char(V);
  Out.append(Buf, N);
}

/// Appends a field tag.
inline void appendTag(std::string &Out, uint32_t Field, WireType W) {
  appendVarint(Out, (uint64_t(Field) << 3) | uint32_t(W));
}

/// Appends a varint field.
inline void appendVarintField(std::string &Out, uint32_t Field, uint64_t V) {
  appendTag(Out, Field, WireType::Varint);
  appendVarint(Out, V);
}

/// Appends a length-delimited field.
inline void appendBytesField(std::string &Out, uint32_t Field,
                             std::string_view Bytes) {
  appendTag(Out, Field, WireType::Len);
  appendVarint(Out, Bytes.size());
  Out.append(Bytes.data(), Bytes.size());
}

/// Bounded reader over one encoded message.
class WireReader {
public:
  /// Reads \p Bytes, which must outlive the reader.
  explicit WireReader(std::string_view Bytes) : Bytes(Bytes) {}

  /// True when everything was read.
  bool atEnd() const { return Pos >= Bytes.size(); }

  /// Reads a varint (at most 10 bytes).
  Expected<uint64_t> readVarint() {
    uint64_t V = 0;
    for (int Shift = 0; Shift < 70; Shift += 7) {
      if (Pos >= Bytes.size())
        return fail("truncated varint");
      uint8_t B = uint8_t(Bytes[Pos++]);
      V |= uint64_t(B & 0x7F) << Shift;
      if (!(B & 0x80))
        return V;
    }
    return fail("varint longer than 10 bytes");
  }

  /// Reads a tag: field number and wire type.
  Expected<std::pair<uint32_t, WireType>> readTag() {
    auto V = readVarint();
    if (!V)
      return V.takeError();
    uint64_t Field = *V >> 3;
    if (Field == 0 || Field > 0x1FFFFFFF)
      return fail("invalid field number");
    return std::make_pair(uint32_t(Field), WireType(*V & 7));
  }

  /// Reads a length-delimited value, bounded by the remaining bytes.
  Expected<std::string_view> readBytes() {
    auto Len = readVarint();
    if (!Len)
      return Len.takeError();
    if (*Len > Bytes.size() - Pos)
      return fail("length " + std::to_string(*Len) + " exceeds the " +
                  std::to_string(Bytes.size() - Pos) + " bytes left");
    std::string_view V = Bytes.substr(Pos, size_t(*Len));
    Pos += size_t(*Len);
    return V;
  }

  /// Skips a value of wire type \p W (groups are rejected).
  Error skip(WireType W) {
    size_t N = 0;
    switch (W) {
    case WireType::Varint: {
      auto V = readVarint();
      return V ? Error::success() : V.takeError();
    }
    case WireType::Len: {
      auto V = readBytes();
      return V ? Error::success() : V.takeError();
    }
    case WireType::Fixed64:
      N = 8;
      break;
    case WireType::Fixed32:
      N = 4;
      break;
    default:
      return fail("unsupported wire type " + std::to_string(uint32_t(W)));
    }
    if (N > Bytes.size() - Pos)
      return fail("truncated fixed-size field");
    Pos += N;
    return Error::success();
  }

private:
  Error fail(const std::string &What) const {
    return makeError(ErrorCode::Protocol, "malformed protobuf at byte ",
                     std::to_string(Pos), ": ", What);
  }

  std::string_view Bytes;
  size_t Pos = 0;
};

} // namespace protowire
} // namespace mlbridge

#endif // MLBRIDGE_SUPPORT_PROTOWIRE_H
