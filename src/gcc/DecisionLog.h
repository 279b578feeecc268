//===- gcc/DecisionLog.h - The GCC plugin's decisions as JSON ---*- C++ -*-===//
//
// Part of mlbridge, under the Apache License v2.0.
//
//===----------------------------------------------------------------------===//
///
/// \file
/// DecisionLog: one JSON object per line for every loop the plugin saw (its
/// place, features, factor and the factor's source), appended to a file
/// that several compiler processes of one build may share (AppendFile).
///
//===----------------------------------------------------------------------===//

#ifndef MLBRIDGE_SRC_GCC_DECISIONLOG_H
#define MLBRIDGE_SRC_GCC_DECISIONLOG_H

#include "LoopFeatures.h"
#include "UnrollAdvisor.h"

#include "support/AppendFile.h"

#include <string>

namespace mlbridge {
namespace gccplugin {

/// Where a loop is in the program being compiled.
struct LoopPlace {
  const char *Function = ""; ///< the function's name
  const char *File = "";     ///< the loop's source file ("" when unknown)
  int Line = 0;              ///< the loop's line (0 when unknown)
  int Number = 0;            ///< GCC's number of the loop in its function
};

/// A decision log file (closed by the destructor).
class DecisionLog {
public:
  /// Opens \p Path for appending (created with mode 0644); false and
  /// \p Problem set when it cannot be.
  bool open(const std::string &Path, std::string &Problem);
  /// Whether a file is open.
  bool isOpen() const { return File.isOpen(); }
  /// Appends one loop's line; false when the write failed (the log is then
  /// closed, so a full disk costs one failed write).
  bool write(const LoopPlace &Place, const LoopFeatures &F,
             const UnrollAdvice &A, bool Pragma);

  /// The JSON line of one loop (with its newline), as write() appends it.
  static std::string line(const LoopPlace &Place, const LoopFeatures &F,
                          const UnrollAdvice &A, bool Pragma);

private:
  AppendFile File;
};

} // namespace gccplugin
} // namespace mlbridge

#endif // MLBRIDGE_SRC_GCC_DECISIONLOG_H
