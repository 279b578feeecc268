//===- support/AppendFile.h - Whole lines appended to a file ----*- C++ -*-===//
//
// Part of mlbridge, under the Apache License v2.0.
//
//===----------------------------------------------------------------------===//
///
/// \file
/// AppendFile: a log file that several compiler processes of one build may
/// share. Each line is appended whole with one write(2) on an O_APPEND
/// descriptor; a failed write closes the file, so a full disk costs one
/// failed write.
///
//===----------------------------------------------------------------------===//

#ifndef MLBRIDGE_SRC_SUPPORT_APPENDFILE_H
#define MLBRIDGE_SRC_SUPPORT_APPENDFILE_H

#include <string>

namespace mlbridge {

/// A file opened for appending whole lines (closed by the destructor).
class AppendFile {
public:
  AppendFile() = default;
  AppendFile(const AppendFile &) = delete;
  AppendFile &operator=(const AppendFile &) = delete;
  ~AppendFile();

  /// Opens \p Path (created with mode 0644) through openOutputFile(); false
  /// and \p Problem set when it cannot be (not a regular file included).
  bool open(const std::string &Path, std::string &Problem);
  /// Whether a file is open.
  bool isOpen() const { return Fd >= 0; }
  /// Appends \p Line; false when the write failed (the file is then closed).
  bool append(const std::string &Line);

private:
  int Fd = -1;
};

} // namespace mlbridge

#endif // MLBRIDGE_SRC_SUPPORT_APPENDFILE_H
