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
  json::ObjectLine L;
  L.string("function", Place.Function)
      .string("file", Place.File)
      .integer("line", Place.Line)
      .integer("loop", Place.Number)
      .begin("features");
  for (unsigned I = 0; I < NumLoopFeatures; ++I)
    L.integer(LoopFeatureNames[I], F.Values[I]);
  L.end()
      .integer("factor", A.Factor)
      .string("source", Pragma ? "pragma" : sourceName(A.From));
  if (!A.Problem.empty())
    L.string("problem", A.Problem);
  return L.line();
}

bool DecisionLog::write(const LoopPlace &Place, const LoopFeatures &F,
                        const UnrollAdvice &A, bool Pragma) {
  return File.append(line(Place, F, A, Pragma));
}

} // namespace gccplugin
} // namespace mlbridge
