//===- support/RunStats.h - One statistics record for every tool -*- C++
//-*-===//
//
// Part of mlbridge, under the Apache License v2.0.
//
//===----------------------------------------------------------------------===//
///
/// \file
/// The statistics record every compiler-side binary of mlbridge writes, one
/// JSON line per unit it compiled (the LLVM plugin's module, the phase
/// service's module, the interactive host's compilation, the GCC plugin's
/// and the MLIR pass's translation unit), with the same keys in the same
/// order for all (docs/run-stats.md):
///
///   {"tool":..,"unit":..,"runner":..,"decisions":N,"answered":N,
///    "fallbacks":N,"first_error":null|"..","details":{..}}
///
/// decisions: the decisions the tool made in the unit; answered: those the
/// runner's answer made; fallbacks: those where the runner failed and the
/// compiler's own heuristic decided (first_error says why, the first time).
/// The other decisions were the compiler's by design (a pragma, a deferred
/// call site, a size cap). details holds what only this tool counts.
/// Golden lines (tests/data/run_stats.jsonl) pin the format for the C++
/// writer and the Python reader (mlbridge.run_stats).
///
//===----------------------------------------------------------------------===//

#ifndef MLBRIDGE_SUPPORT_RUNSTATS_H
#define MLBRIDGE_SUPPORT_RUNSTATS_H

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace mlbridge {

/// One unit's statistics (see the file comment).
struct RunStats {
  /// The binary: inline-advisor, phase-service, interactive-host,
  /// gcc-unroll or mlir-tiling.
  std::string Tool;
  /// What was compiled: a module's identifier, a source file, a command.
  std::string Unit;
  /// The runner configuration's string form (or the plugin's "default").
  std::string Runner;
  uint64_t Decisions = 0;
  uint64_t Answered = 0;
  uint64_t Fallbacks = 0;
  /// The first runner error ("" when none: written as null).
  std::string FirstError;

  /// Adds a tool-specific integer to details.
  RunStats &detail(std::string Key, int64_t V);
  /// Adds a tool-specific double to details.
  RunStats &detailNumber(std::string Key, double V);
  /// Adds a tool-specific boolean to details.
  RunStats &detailBool(std::string Key, bool V);
  /// Adds a tool-specific string to details.
  RunStats &detailString(std::string Key, const std::string &V);
  /// Adds a tool-specific value given as JSON text (e.g. null).
  RunStats &detailRaw(std::string Key, std::string Json);

  /// The record's JSON line (newline included).
  std::string line() const;
  /// Appends line() to \p Path (created with mode 0644, one write, so that
  /// parallel compilations can share the file); false and \p Problem set
  /// when it cannot.
  bool append(const std::string &Path, std::string &Problem) const;

private:
  /// details: (key, JSON text), in the order given.
  std::vector<std::pair<std::string, std::string>> Details;
};

} // namespace mlbridge

#endif // MLBRIDGE_SUPPORT_RUNSTATS_H
