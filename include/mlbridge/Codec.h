//===- mlbridge/Codec.h - Message serialisations ----------------*- C++ -*-===//
//
// Part of mlbridge, under the Apache License v2.0.
//
//===----------------------------------------------------------------------===//
///
/// \file
/// The three serialisations of a message (an observation number plus an
/// ordered list of named tensors): bitstream (raw bytes in schema order),
/// JSON and protobuf (mlbridge.v1.TensorMessage). The byte format is fixed by
/// docs/protocol.md and pinned by the golden vectors in tests/golden/.
///
/// Encoders append into a caller-owned std::string that is reused across
/// calls; decoders write into TensorBuffers in place. Neither allocates in
/// steady state. Decoders are bounded and validate every tensor against the
/// declared specs.
///
//===----------------------------------------------------------------------===//

#ifndef MLBRIDGE_CODEC_H
#define MLBRIDGE_CODEC_H

#include "mlbridge/Error.h"
#include "mlbridge/TensorBuffers.h"

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

namespace mlbridge {

/// The serialisation of a message.
enum class Format { Bitstream, Json, Protobuf };

/// "bitstream", "json" or "protobuf".
const char *formatName(Format F);
/// Parses a format name.
Expected<Format> parseFormat(std::string_view Name);

/// Default bound on one encoded message.
inline constexpr size_t DefaultMaxMessageBytes = size_t(64) << 20;

/// Encodes and decodes messages in one format. Stateless and thread-safe.
class Codec {
public:
  virtual ~Codec();

  /// The format this codec speaks.
  virtual Format format() const = 0;

  /// Replaces \p Out with the encoding of \p Tensors. \p Observation is
  /// written by formats that carry it (json, protobuf) when present.
  virtual Error encode(std::optional<uint64_t> Observation,
                       const TensorBuffers &Tensors,
                       std::string &Out) const = 0;

  /// Decodes \p Payload into \p Into, which declares exactly which tensors
  /// the message must carry (names, types, element counts). Sets
  /// \p Observation when the format carries it. A model-side error carried
  /// in the message (json/protobuf "error") is returned as ModelFailure.
  virtual Error
  decode(std::string_view Payload, TensorBuffers &Into,
         std::optional<uint64_t> *Observation = nullptr) const = 0;
};

/// Returns the codec for \p F (a shared stateless instance).
const Codec &getCodec(Format F);

} // namespace mlbridge

#endif // MLBRIDGE_CODEC_H
