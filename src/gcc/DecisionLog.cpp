//===- gcc/DecisionLog.cpp - The GCC plugin's decisions as JSON -----------===//
//
// Part of mlbridge, under the Apache License v2.0.
//
//===----------------------------------------------------------------------===//

#include "DecisionLog.h"

#include "support/Json.h"

namespace mlbridge {
namespace gccplugin {

bool DecisionLog::open(const std::string &Path, std::string &Problem) {
  if (File.open(Path, Problem))
    return true;
  Problem = "the decision log: " + Problem;
  return false;
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
  return File.append(line(Place, F, A, Pragma));
}

} // namespace gccplugin
} // namespace mlbridge
