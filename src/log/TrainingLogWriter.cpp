//===- log/TrainingLogWriter.cpp - LLVM training logs ---------------------===//
//
// Part of mlbridge, under the Apache License v2.0.
//
//===----------------------------------------------------------------------===//

#include "mlbridge/TrainingLogWriter.h"

#include "support/Json.h"
#include "support/OutputFile.h"

#include <cerrno>
#include <cstring>
#include <fcntl.h>
#include <unistd.h>

namespace mlbridge {

std::string TrainingLogWriter::header(const std::vector<TensorSpec> &Features,
                                      const std::optional<TensorSpec> &Score,
                                      const std::optional<TensorSpec> &Advice) {
  std::string Out = "{\"features\":[";
  for (size_t I = 0; I < Features.size(); ++I) {
    if (I)
      Out.push_back(',');
    Features[I].appendJSON(Out);
  }
  Out.push_back(']');
  if (Score) {
    Out.append(",\"score\":");
    Score->appendJSON(Out);
  }
  if (Advice) {
    Out.append(",\"advice\":");
    Advice->appendJSON(Out);
  }
  Out.append("}\n");
  return Out;
}

Expected<TrainingLogWriter> TrainingLogWriter::create(
    const std::string &Path, std::vector<TensorSpec> Features,
    std::optional<TensorSpec> Score, std::optional<TensorSpec> Advice) {
  if (Error E = checkSpecs(Features, "training log features"))
    return E;
  if (Score && !Score->isValid())
    return Score->validationError().withContext("training log score");
  if (Advice && !Advice->isValid())
    return Advice->validationError().withContext("training log advice");
  TrainingLogWriter W;
  auto Fd = openOutputFile(Path, O_TRUNC, "training log");
  if (!Fd)
    return Fd.takeError();
  W.File.reset(::fdopen(*Fd, "wb"));
  if (!W.File) {
    ::close(*Fd);
    return makeError(ErrorCode::IO, "cannot create training log '", Path,
                     "': ", std::strerror(errno));
  }
  W.Path = Path;
  W.Buffer = header(Features, Score, Advice);
  W.Features = std::move(Features);
  W.Score = std::move(Score);
  if (Error E = W.writeBuffer())
    return E;
  return W;
}

Error TrainingLogWriter::writeBuffer() {
  if (std::fwrite(Buffer.data(), 1, Buffer.size(), File.get()) != Buffer.size())
    return makeError(ErrorCode::IO, "cannot write training log '", Path,
                     "': ", std::strerror(errno));
  return Error::success();
}

Error TrainingLogWriter::switchContext(std::string_view Name) {
  Observation = 0;
  Buffer.assign("{\"context\":");
  json::appendString(Buffer, Name);
  Buffer.append("}\n");
  return writeBuffer();
}

Error TrainingLogWriter::logObservation(const void *const *Data,
                                        const void *Reward) {
  if (bool(Reward) != Score.has_value())
    return makeError(ErrorCode::InvalidArgument,
                     Score ? "this log records a reward with every observation"
                           : "this log has no score; pass no reward");
  Buffer.assign("{\"observation\":");
  json::appendUInt(Buffer, Observation);
  Buffer.append("}\n");
  for (size_t I = 0; I < Features.size(); ++I)
    Buffer.append(static_cast<const char *>(Data[I]), Features[I].byteSize());
  Buffer.push_back('\n');
  if (Score) {
    Buffer.append("{\"outcome\":");
    json::appendUInt(Buffer, Observation);
    Buffer.append("}\n");
    Buffer.append(static_cast<const char *>(Reward), Score->byteSize());
    Buffer.push_back('\n');
  }
  ++Observation;
  return writeBuffer();
}

Error TrainingLogWriter::flush() {
  if (std::fflush(File.get()) != 0)
    return makeError(ErrorCode::IO, "cannot flush training log '", Path,
                     "': ", std::strerror(errno));
  return Error::success();
}

} // namespace mlbridge
