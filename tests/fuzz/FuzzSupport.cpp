//===- FuzzSupport.cpp - Shared set-up of the libFuzzer targets -----------===//
//
// Part of mlbridge, under the Apache License v2.0.
//
//===----------------------------------------------------------------------===//

#include "FuzzSupport.h"

#include "support/Json.h"

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fcntl.h>
#include <fstream>
#include <optional>
#include <sstream>
#include <string>
#include <unistd.h>

namespace mlbridge {
namespace fuzz {

namespace {

/// More than TensorMatcher::InlineBits, so that its overflow bits are used.
constexpr size_t ManyTensors = 1100;

std::string goldenDir() {
  const char *Env = std::getenv("MLBRIDGE_GOLDEN_DIR");
  return Env && *Env ? Env : MLBRIDGE_GOLDEN_DIR;
}

/// Parses the "tensors" of every case of cases.json \p Text into a schema.
Error parseCases(std::string_view Text,
                 std::vector<std::vector<TensorSpec>> &Schemas) {
  json::Reader R(Text);
  std::string Scratch;
  return R.forEachElement([&]() -> Error {
    std::vector<TensorSpec> Specs;
    Error E = R.forEachMember(Scratch, [&](std::string_view Key) -> Error {
      if (Key != "tensors")
        return R.skipValue();
      return R.forEachElement([&]() -> Error {
        // A golden tensor is a spec plus "hex", which fromJSON skips.
        size_t Start = R.offset();
        if (Error E = R.skipValue())
          return E;
        auto Spec =
            TensorSpec::fromJSON(Text.substr(Start, R.offset() - Start));
        if (!Spec)
          return Spec.takeError();
        Specs.push_back(std::move(*Spec));
        return Error::success();
      });
    });
    if (E)
      return E;
    Schemas.push_back(std::move(Specs));
    return Error::success();
  });
}

std::vector<std::vector<TensorSpec>> loadSchemas() {
  std::string Path = goldenDir() + "/cases.json";
  std::ifstream In(Path, std::ios::binary);
  if (!In)
    die("cannot read the golden cases",
        makeError(ErrorCode::IO, Path, ": ", std::strerror(errno)));
  std::stringstream Text;
  Text << In.rdbuf();
  std::vector<std::vector<TensorSpec>> Schemas;
  if (Error E = parseCases(Text.str(), Schemas))
    die("cannot parse the golden cases", E.withContext(Path));
  std::vector<TensorSpec> Many;
  for (size_t I = 0; I < ManyTensors; ++I)
    Many.push_back(TensorSpec::of<int8_t>("t" + std::to_string(I), {}));
  Schemas.push_back(std::move(Many));
  return Schemas;
}

TensorBuffers makeBuffers(const std::vector<TensorSpec> &Specs) {
  auto B = TensorBuffers::create(Specs, "fuzz schema");
  if (!B)
    die("bad fuzz schema", B.takeError());
  return std::move(*B);
}

/// Buffers of one schema: decoded into, and re-decoded into by the oracle.
struct SchemaBuffers {
  TensorBuffers Decoded, Redecoded;
};

std::vector<SchemaBuffers> &schemaBuffers() {
  static std::vector<SchemaBuffers> Buffers = [] {
    std::vector<SchemaBuffers> Out;
    for (const auto &Specs : fuzzSchemas())
      Out.push_back({makeBuffers(Specs), makeBuffers(Specs)});
    return Out;
  }();
  return Buffers;
}

void checkRoundTrip(const Codec &C, SchemaBuffers &B,
                    std::optional<uint64_t> Observation) {
  static std::string Encoded;
  if (Error E = C.encode(Observation, B.Decoded, Encoded))
    die("cannot re-encode a decoded message", E);
  std::optional<uint64_t> Again;
  if (Error E = C.decode(Encoded, B.Redecoded, &Again))
    die("cannot decode a re-encoded message", E);
  if (Again != Observation)
    die("the observation changed in a round trip",
        makeError(ErrorCode::Protocol, formatName(C.format())));
  for (size_t I = 0; I < B.Decoded.size(); ++I)
    if (std::memcmp(B.Decoded.data(I), B.Redecoded.data(I),
                    B.Decoded.spec(I).byteSize()) != 0)
      die("a tensor changed in a round trip",
          makeError(ErrorCode::Protocol, formatName(C.format()), " tensor '",
                    B.Decoded.spec(I).name(), "'"));
}

} // namespace

void die(const char *What, const Error &E) {
  std::fprintf(stderr, "mlbridge fuzz: %s: %s\n", What, E.toString().c_str());
  std::abort();
}

const std::vector<std::vector<TensorSpec>> &fuzzSchemas() {
  static const std::vector<std::vector<TensorSpec>> Schemas = loadSchemas();
  return Schemas;
}

void decodeAgainstSchemas(Format F, std::string_view Payload) {
  const Codec &C = getCodec(F);
  bool First = true;
  for (SchemaBuffers &B : schemaBuffers()) {
    // Self-describing payloads name their tensors: decoding one against a
    // schema whose first name it lacks fails at the first tensor, as it does
    // against the first schema. Skipping those keeps a run to a decode or two.
    if (!First && F != Format::Bitstream &&
        Payload.find(B.Decoded.spec(0).name()) == std::string_view::npos)
      continue;
    First = false;
    std::optional<uint64_t> Observation;
    if (!C.decode(Payload, B.Decoded, &Observation))
      checkRoundTrip(C, B, Observation);
  }
}

FilledPipe::FilledPipe(std::string_view Bytes) {
  int Ends[2];
  if (::pipe2(Ends, O_CLOEXEC | O_NONBLOCK) != 0)
    die("pipe2", makeError(ErrorCode::IO, std::strerror(errno)));
  if (Bytes.size() > 65536 &&
      ::fcntl(Ends[1], F_SETPIPE_SZ, int(Bytes.size())) < 0)
    die("F_SETPIPE_SZ", makeError(ErrorCode::IO, std::strerror(errno)));
  size_t Done = 0;
  while (Done < Bytes.size()) {
    ssize_t N = ::write(Ends[1], Bytes.data() + Done, Bytes.size() - Done);
    if (N <= 0)
      die("writing the pipe", makeError(ErrorCode::IO, std::strerror(errno)));
    Done += size_t(N);
  }
  ::close(Ends[1]);
  ReadEnd = Ends[0];
}

FilledPipe::~FilledPipe() { ::close(ReadEnd); }

} // namespace fuzz
} // namespace mlbridge
