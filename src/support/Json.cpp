//===- support/Json.cpp - Minimal allocation-free JSON --------------------===//
//
// Part of mlbridge, under the Apache License v2.0.
//
//===----------------------------------------------------------------------===//

#include "support/Json.h"

#include <charconv>
#include <cmath>
#include <cstring>
#include <limits>
#include <type_traits>

namespace mlbridge {
namespace json {

namespace {
constexpr int MaxDepth = 64;

template <typename F> void appendNonFinite(std::string &Out, F V) {
  if (std::isnan(V))
    Out.append("NaN");
  else if (V > 0)
    Out.append("Infinity");
  else
    Out.append("-Infinity");
}

template <typename F> void appendFloating(std::string &Out, F V) {
  if (!std::isfinite(V)) {
    appendNonFinite(Out, V);
    return;
  }
  char Buf[64];
  auto Res = std::to_chars(Buf, Buf + sizeof(Buf), V);
  Out.append(Buf, Res.ptr);
}
} // namespace

void ObjectLine::member(std::string_view Key) {
  if (!First)
    Out += ',';
  First = false;
  appendString(Out, Key);
  Out += ':';
}

ObjectLine &ObjectLine::string(std::string_view Key, std::string_view V) {
  member(Key);
  appendString(Out, V);
  return *this;
}

ObjectLine &ObjectLine::integer(std::string_view Key, int64_t V) {
  member(Key);
  appendInt(Out, V);
  return *this;
}

ObjectLine &ObjectLine::number(std::string_view Key, double V) {
  member(Key);
  appendDouble(Out, V);
  return *this;
}

ObjectLine &ObjectLine::boolean(std::string_view Key, bool V) {
  member(Key);
  Out += V ? "true" : "false";
  return *this;
}

ObjectLine &ObjectLine::raw(std::string_view Key, std::string_view Json) {
  member(Key);
  Out += Json;
  return *this;
}

ObjectLine &ObjectLine::integers(std::string_view Key, const int64_t *V,
                                 size_t N) {
  member(Key);
  Out += '[';
  for (size_t I = 0; I < N; ++I) {
    if (I)
      Out += ',';
    appendInt(Out, V[I]);
  }
  Out += ']';
  return *this;
}

ObjectLine &ObjectLine::begin(std::string_view Key) {
  member(Key);
  Out += '{';
  ++Depth;
  First = true;
  return *this;
}

ObjectLine &ObjectLine::end() {
  if (Depth) {
    Out += '}';
    --Depth;
    First = false;
  }
  return *this;
}

std::string ObjectLine::object() {
  while (Depth)
    end();
  Out += '}';
  return std::move(Out);
}

std::string ObjectLine::line() { return object() + '\n'; }

void appendString(std::string &Out, std::string_view S) {
  static const char Hex[] = "0123456789abcdef";
  Out.push_back('"');
  for (char C : S) {
    unsigned char U = static_cast<unsigned char>(C);
    switch (C) {
    case '"':
      Out.append("\\\"");
      break;
    case '\\':
      Out.append("\\\\");
      break;
    case '\n':
      Out.append("\\n");
      break;
    case '\r':
      Out.append("\\r");
      break;
    case '\t':
      Out.append("\\t");
      break;
    case '\b':
      Out.append("\\b");
      break;
    case '\f':
      Out.append("\\f");
      break;
    default:
      if (U < 0x20) {
        Out.append("\\u00");
        Out.push_back(Hex[U >> 4]);
        Out.push_back(Hex[U & 15]);
      } else {
        Out.push_back(C);
      }
    }
  }
  Out.push_back('"');
}

void appendInt(std::string &Out, int64_t V) {
  char Buf[24];
  auto Res = std::to_chars(Buf, Buf + sizeof(Buf), V);
  Out.append(Buf, Res.ptr);
}

void appendUInt(std::string &Out, uint64_t V) {
  char Buf[24];
  auto Res = std::to_chars(Buf, Buf + sizeof(Buf), V);
  Out.append(Buf, Res.ptr);
}

void appendFloat(std::string &Out, float V) { appendFloating(Out, V); }
void appendDouble(std::string &Out, double V) { appendFloating(Out, V); }

Error Reader::fail(const std::string &What) const {
  return makeError(ErrorCode::Protocol, "malformed JSON at byte ",
                   std::to_string(Pos), ": ", What);
}

void Reader::skipSpace() {
  while (Pos < Text.size() && (Text[Pos] == ' ' || Text[Pos] == '\t' ||
                               Text[Pos] == '\n' || Text[Pos] == '\r'))
    ++Pos;
}

bool Reader::peekIs(char C) {
  skipSpace();
  return Pos < Text.size() && Text[Pos] == C;
}

Error Reader::expect(char C) {
  if (!peekIs(C))
    return fail(std::string("expected '") + C + "'");
  ++Pos;
  return Error::success();
}

bool Reader::consumeIf(char C) {
  if (!peekIs(C))
    return false;
  ++Pos;
  return true;
}

static void appendUtf8(std::string &Out, uint32_t CP) {
  if (CP < 0x80) {
    Out.push_back(char(CP));
  } else if (CP < 0x800) {
    Out.push_back(char(0xC0 | (CP >> 6)));
    Out.push_back(char(0x80 | (CP & 0x3F)));
  } else if (CP < 0x10000) {
    Out.push_back(char(0xE0 | (CP >> 12)));
    Out.push_back(char(0x80 | ((CP >> 6) & 0x3F)));
    Out.push_back(char(0x80 | (CP & 0x3F)));
  } else {
    Out.push_back(char(0xF0 | (CP >> 18)));
    Out.push_back(char(0x80 | ((CP >> 12) & 0x3F)));
    Out.push_back(char(0x80 | ((CP >> 6) & 0x3F)));
    Out.push_back(char(0x80 | (CP & 0x3F)));
  }
}

Expected<std::string_view> Reader::readString(std::string &Scratch) {
  if (Error E = expect('"'))
    return E;
  size_t Start = Pos;
  // Fast path: no escapes.
  while (Pos < Text.size() && Text[Pos] != '"' && Text[Pos] != '\\') {
    if (static_cast<unsigned char>(Text[Pos]) < 0x20)
      return fail("control character in string");
    ++Pos;
  }
  if (Pos >= Text.size())
    return fail("unterminated string");
  if (Text[Pos] == '"')
    return Text.substr(Start, Pos++ - Start);
  Scratch.assign(Text.data() + Start, Pos - Start);
  while (Pos < Text.size() && Text[Pos] != '"') {
    char C = Text[Pos++];
    if (static_cast<unsigned char>(C) < 0x20)
      return fail("control character in string");
    if (C != '\\') {
      Scratch.push_back(C);
      continue;
    }
    if (Pos >= Text.size())
      break;
    char Esc = Text[Pos++];
    switch (Esc) {
    case '"':
    case '\\':
    case '/':
      Scratch.push_back(Esc);
      break;
    case 'n':
      Scratch.push_back('\n');
      break;
    case 't':
      Scratch.push_back('\t');
      break;
    case 'r':
      Scratch.push_back('\r');
      break;
    case 'b':
      Scratch.push_back('\b');
      break;
    case 'f':
      Scratch.push_back('\f');
      break;
    case 'u': {
      auto ReadHex = [&](uint32_t &CP) -> bool {
        if (Pos + 4 > Text.size())
          return false;
        auto Res =
            std::from_chars(Text.data() + Pos, Text.data() + Pos + 4, CP, 16);
        if (Res.ptr != Text.data() + Pos + 4)
          return false;
        Pos += 4;
        return true;
      };
      uint32_t CP = 0;
      if (!ReadHex(CP))
        return fail("bad \\u escape");
      if (CP >= 0xD800 && CP < 0xDC00 && Pos + 2 <= Text.size() &&
          Text[Pos] == '\\' && Text[Pos + 1] == 'u') {
        Pos += 2;
        uint32_t Low = 0;
        if (!ReadHex(Low) || Low < 0xDC00 || Low >= 0xE000)
          return fail("bad surrogate pair");
        CP = 0x10000 + ((CP - 0xD800) << 10) + (Low - 0xDC00);
      }
      appendUtf8(Scratch, CP);
      break;
    }
    default:
      return fail("bad escape in string");
    }
  }
  if (Pos >= Text.size())
    return fail("unterminated string");
  ++Pos;
  return std::string_view(Scratch);
}

Expected<std::string_view> Reader::readNumberToken() {
  skipSpace();
  size_t Start = Pos;
  for (std::string_view Tok : {"NaN", "Infinity", "-Infinity"}) {
    if (Text.substr(Pos, Tok.size()) == Tok) {
      Pos += Tok.size();
      return Tok;
    }
  }
  if (Pos < Text.size() && Text[Pos] == '-')
    ++Pos;
  size_t Digits = Pos;
  while (Pos < Text.size() &&
         ((Text[Pos] >= '0' && Text[Pos] <= '9') || Text[Pos] == '.' ||
          Text[Pos] == 'e' || Text[Pos] == 'E' || Text[Pos] == '+' ||
          Text[Pos] == '-'))
    ++Pos;
  if (Pos == Digits)
    return fail("expected a number");
  return Text.substr(Start, Pos - Start);
}

Expected<int64_t> Reader::readInt() {
  auto Tok = readNumberToken();
  if (!Tok)
    return Tok.takeError();
  return parseNumber<int64_t>(*Tok);
}

Expected<uint64_t> Reader::readUInt() {
  auto Tok = readNumberToken();
  if (!Tok)
    return Tok.takeError();
  return parseNumber<uint64_t>(*Tok);
}

Error Reader::skipValue() { return skipValueAt(0); }

Error Reader::skipValueAt(int Depth) {
  if (Depth > MaxDepth)
    return fail("nesting too deep");
  skipSpace();
  if (Pos >= Text.size())
    return fail("unexpected end of input");
  char C = Text[Pos];
  std::string Scratch;
  if (C == '"') {
    auto S = readString(Scratch);
    return S ? Error::success() : S.takeError();
  }
  if (C == '{')
    return forEachMember(
        Scratch, [&](std::string_view) { return skipValueAt(Depth + 1); });
  if (C == '[')
    return forEachElement([&] { return skipValueAt(Depth + 1); });
  for (std::string_view Lit : {"true", "false", "null"}) {
    if (Text.substr(Pos, Lit.size()) == Lit) {
      Pos += Lit.size();
      return Error::success();
    }
  }
  auto Tok = readNumberToken();
  return Tok ? Error::success() : Tok.takeError();
}

Expected<bool> Reader::nextMember(bool &First, std::string_view &Key,
                                  std::string &Scratch) {
  if (consumeIf('}'))
    return false;
  if (!First) {
    if (Error E = expect(','))
      return E;
  }
  First = false;
  auto K = readString(Scratch);
  if (!K)
    return K.takeError();
  Key = *K;
  if (Error E = expect(':'))
    return E;
  return true;
}

Expected<bool> Reader::nextElement(bool &First) {
  if (consumeIf(']'))
    return false;
  if (!First) {
    if (Error E = expect(','))
      return E;
  }
  First = false;
  return true;
}

Error Reader::readIntArray(int64_t *Out, size_t MaxCount, size_t &Count) {
  Count = 0;
  return forEachElement([&]() -> Error {
    if (Count == MaxCount)
      return fail("array has more than " + std::to_string(MaxCount) +
                  " elements");
    auto V = readInt();
    if (!V)
      return V.takeError();
    Out[Count++] = *V;
    return Error::success();
  });
}

Error Reader::expectEnd() {
  skipSpace();
  if (Pos != Text.size())
    return fail("trailing characters");
  return Error::success();
}

template <typename T> Expected<T> parseNumber(std::string_view Token) {
  auto Bad = [&](const char *Why) {
    return makeError(ErrorCode::Protocol, "bad number '",
                     std::string(Token.substr(0, 40)), "': ", Why);
  };
  const char *First = Token.data();
  const char *Last = First + Token.size();
  if constexpr (std::is_floating_point<T>::value) {
    if (Token == "NaN")
      return std::numeric_limits<T>::quiet_NaN();
    if (Token == "Infinity")
      return std::numeric_limits<T>::infinity();
    if (Token == "-Infinity")
      return -std::numeric_limits<T>::infinity();
    T V{};
    auto Res = std::from_chars(First, Last, V);
    if (Res.ec == std::errc::result_out_of_range) {
      // from_chars reports under/overflow; JSON producers may still write such
      // values. Fall back to double, then narrow (inf/0 as IEEE rounding says).
      double D = std::strtod(std::string(Token).c_str(), nullptr);
      return static_cast<T>(D);
    }
    if (Res.ec != std::errc() || Res.ptr != Last)
      return Bad("not a number");
    return V;
  } else {
    T V{};
    auto Res = std::from_chars(First, Last, V);
    if (Res.ec == std::errc::result_out_of_range)
      return Bad("out of range");
    if (Res.ec != std::errc() || Res.ptr != Last)
      return Bad("not an integer");
    return V;
  }
}

template Expected<float> parseNumber<float>(std::string_view);
template Expected<double> parseNumber<double>(std::string_view);
template Expected<int8_t> parseNumber<int8_t>(std::string_view);
template Expected<uint8_t> parseNumber<uint8_t>(std::string_view);
template Expected<int16_t> parseNumber<int16_t>(std::string_view);
template Expected<uint16_t> parseNumber<uint16_t>(std::string_view);
template Expected<int32_t> parseNumber<int32_t>(std::string_view);
template Expected<uint32_t> parseNumber<uint32_t>(std::string_view);
template Expected<int64_t> parseNumber<int64_t>(std::string_view);
template Expected<uint64_t> parseNumber<uint64_t>(std::string_view);

} // namespace json
} // namespace mlbridge
