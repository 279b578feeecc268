//===- gcc/DecisionLog.cpp - The GCC plugin's decisions as JSON -----------===//
//
// Part of mlbridge, under the Apache License v2.0.
//
//===----------------------------------------------------------------------===//

#include "DecisionLog.h"

#include "support/Json.h"

#include <cerrno>
#include <cstring>
#include <fcntl.h>
#include <unistd.h>

namespace mlbridge {
namespace gccplugin {

DecisionLog::~DecisionLog() {
  if (Fd >= 0)
    ::close(Fd);
}

bool DecisionLog::open(const std::string &Path, std::string &Problem) {
  int Opened =
      ::open(Path.c_str(), O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0644);
  if (Opened < 0) {
    Problem =
        "cannot open the decision log '" + Path + "': " + std::strerror(errno);
    return false;
  }
  if (Fd >= 0)
    ::close(Fd);
  Fd = Opened;
  return true;
}

std::string DecisionLog::line(const LoopPlace &Place, const LoopFeatures &F,
                              const UnrollAdvice &A, bool Pragma) {
  std::string Out = "{\"function\":";
  json::appendString(Out, Place.Function);
  Out += ",\"file\":";
  json::appendString(Out, Place.File);
  Out += ",\"line\":";
  json::appendInt(Out, Place.Line);
  Out += ",\"loop\":";
  json::appendInt(Out, Place.Number);
  Out += ",\"features\":{";
  for (unsigned I = 0; I < NumLoopFeatures; ++I) {
    if (I)
      Out += ',';
    json::appendString(Out, LoopFeatureNames[I]);
    Out += ':';
    json::appendInt(Out, F.Values[I]);
  }
  Out += "},\"factor\":";
  json::appendInt(Out, A.Factor);
  Out += ",\"source\":";
  json::appendString(Out, Pragma ? "pragma" : sourceName(A.From));
  if (!A.Problem.empty()) {
    Out += ",\"problem\":";
    json::appendString(Out, A.Problem);
  }
  Out += "}\n";
  return Out;
}

bool DecisionLog::write(const LoopPlace &Place, const LoopFeatures &F,
                        const UnrollAdvice &A, bool Pragma) {
  if (Fd < 0)
    return false;
  const std::string Line = line(Place, F, A, Pragma);
  ssize_t Written;
  do
    Written = ::write(Fd, Line.data(), Line.size());
  while (Written < 0 && errno == EINTR);
  if (Written == static_cast<ssize_t>(Line.size()))
    return true;
  ::close(Fd);
  Fd = -1;
  return false;
}

} // namespace gccplugin
} // namespace mlbridge
