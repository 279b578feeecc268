//===- support/Json.h - Minimal allocation-free JSON ------------*- C++ -*-===//
//
// Part of mlbridge, under the Apache License v2.0.
//
//===----------------------------------------------------------------------===//
///
/// \file
/// Internal helpers: a JSON writer that appends to a reusable std::string and
/// a bounded pull reader over a string_view. Neither allocates in steady state
/// (strings without escapes are returned as views into the input). Numbers
/// are formatted with std::to_chars, the canonical form of docs/protocol.md.
///
//===----------------------------------------------------------------------===//

#ifndef MLBRIDGE_SUPPORT_JSON_H
#define MLBRIDGE_SUPPORT_JSON_H

#include "mlbridge/Error.h"

#include <cstdint>
#include <string>
#include <string_view>

namespace mlbridge {
namespace json {

/// Appends \p S as a JSON string literal (quotes and escapes included).
void appendString(std::string &Out, std::string_view S);
/// Appends a signed integer in decimal.
void appendInt(std::string &Out, int64_t V);
/// Appends an unsigned integer in decimal.
void appendUInt(std::string &Out, uint64_t V);
/// Appends a float in its shortest round-trip form (NaN/Infinity tokens).
void appendFloat(std::string &Out, float V);
/// Appends a double in its shortest round-trip form (NaN/Infinity tokens).
void appendDouble(std::string &Out, double V);

/// One JSON object written as one line ("{...}\n"): the line of every
/// JSON-lines log mlbridge's plugins write (the GCC plugin's decisions, the
/// MLIR pass's nests, the LLVM plugin's statistics), built member by member
/// and handed to an AppendFile whole. Members may open nested objects and
/// arrays of integers.
class ObjectLine {
public:
  ObjectLine() { Out = "{"; }

  /// A string member.
  ObjectLine &string(std::string_view Key, std::string_view V);
  /// An integer member.
  ObjectLine &integer(std::string_view Key, int64_t V);
  /// A double member (shortest round-trip form).
  ObjectLine &number(std::string_view Key, double V);
  /// A boolean member.
  ObjectLine &boolean(std::string_view Key, bool V);
  /// A member whose value is JSON text already (e.g. `null`).
  ObjectLine &raw(std::string_view Key, std::string_view Json);
  /// A member holding an array of integers.
  ObjectLine &integers(std::string_view Key, const int64_t *V, size_t N);
  /// Opens a nested object member; members then go into it until end().
  ObjectLine &begin(std::string_view Key);
  /// Closes the innermost nested object.
  ObjectLine &end();
  /// The object closed (nested ones too), without a newline: for another
  /// object's raw() member; the builder is spent.
  std::string object();
  /// The line: object() and a newline; the builder is spent.
  std::string line();

private:
  void member(std::string_view Key);
  std::string Out;
  unsigned Depth = 0;
  bool First = true;
};

/// A pull parser over one JSON text. Every method returns an Error naming
/// the byte offset on malformed input. Nesting depth is bounded.
class Reader {
public:
  /// Reads from \p Text, which must outlive the reader and any views it
  /// returns.
  explicit Reader(std::string_view Text) : Text(Text) {}

  /// Skips whitespace; true if the next character is \p C (not consumed).
  bool peekIs(char C);
  /// Consumes \p C (after whitespace) or fails.
  Error expect(char C);
  /// Consumes \p C if it is next; returns whether it did.
  bool consumeIf(char C);

  /// Reads a string. Returns a view into the input when it has no escapes,
  /// otherwise decodes into \p Scratch and returns a view of it.
  Expected<std::string_view> readString(std::string &Scratch);
  /// Reads a number token (or NaN, Infinity, -Infinity) as raw text.
  Expected<std::string_view> readNumberToken();
  /// Reads an integer that fits int64.
  Expected<int64_t> readInt();
  /// Reads a non-negative integer that fits uint64.
  Expected<uint64_t> readUInt();
  /// Skips one value of any type.
  Error skipValue();

  /// Iterates the members of an object: call first with First=true after
  /// expect('{'). Returns false at the closing brace; otherwise reads the key
  /// into \p Key and consumes the colon.
  Expected<bool> nextMember(bool &First, std::string_view &Key,
                            std::string &Scratch);
  /// Iterates the elements of an array after expect('['): false at ']'.
  Expected<bool> nextElement(bool &First);

  /// Reads an object, calling `Member(Key)` for each member; Member must
  /// consume the value and return an Error.
  template <typename Fn>
  Error forEachMember(std::string &Scratch, Fn &&Member) {
    if (Error E = expect('{'))
      return E;
    bool First = true;
    std::string_view Key;
    while (true) {
      auto More = nextMember(First, Key, Scratch);
      if (!More)
        return More.takeError();
      if (!*More)
        return Error::success();
      if (Error E = Member(Key))
        return E;
    }
  }

  /// Reads an array, calling `Element()` for each element; Element must
  /// consume it and return an Error.
  template <typename Fn> Error forEachElement(Fn &&Element) {
    if (Error E = expect('['))
      return E;
    bool First = true;
    while (true) {
      auto More = nextElement(First);
      if (!More)
        return More.takeError();
      if (!*More)
        return Error::success();
      if (Error E = Element())
        return E;
    }
  }

  /// Reads an array of at most \p MaxCount integers into \p Out.
  Error readIntArray(int64_t *Out, size_t MaxCount, size_t &Count);

  /// Fails unless only whitespace remains.
  Error expectEnd();
  /// Current byte offset.
  size_t offset() const { return Pos; }
  /// Moves to byte offset \p Offset (for re-reading a skipped value).
  void seek(size_t Offset) { Pos = Offset; }
  /// An Error of kind Protocol mentioning the current offset.
  Error fail(const std::string &What) const;

private:
  void skipSpace();
  Error skipValueAt(int Depth);

  std::string_view Text;
  size_t Pos = 0;
};

/// Parses a number token into T (integer or floating point), checking range
/// and, for integers, that the token is integral. Accepts NaN/Infinity for
/// floating point.
template <typename T> Expected<T> parseNumber(std::string_view Token);

} // namespace json
} // namespace mlbridge

#endif // MLBRIDGE_SUPPORT_JSON_H
