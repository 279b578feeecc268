//===- PhaseTestSupport.h - Shared by the phase-ordering tests --*- C++ -*-===//
//
// Part of mlbridge, under the Apache License v2.0.
//
//===----------------------------------------------------------------------===//
///
/// \file
/// What the phase-ordering tests share: a small but non-trivial module (in
/// clang -O0 style: allocas, a loop, a call to an internal function, an
/// internal constant table), IR text to bitcode, and a temporary directory.
///
//===----------------------------------------------------------------------===//

#ifndef MLBRIDGE_TESTS_LLVM_PHASETESTSUPPORT_H
#define MLBRIDGE_TESTS_LLVM_PHASETESTSUPPORT_H

#include "llvm/AsmParser/Parser.h"
#include "llvm/Bitcode/BitcodeWriter.h"
#include "llvm/IR/LLVMContext.h"
#include "llvm/IR/Module.h"
#include "llvm/Support/SourceMgr.h"
#include "llvm/Support/raw_ostream.h"

#include <filesystem>
#include <fstream>
#include <memory>
#include <string>

#include <unistd.h>

namespace phase_test {

/// A module every action can work on: Oz makes it much smaller.
inline constexpr const char *LoopModule = R"IR(
@table = internal global [4 x i32] [i32 1, i32 2, i32 3, i32 4]
@unused = internal global i32 7

define internal i32 @square(i32 %v) {
entry:
  %v.addr = alloca i32
  store i32 %v, ptr %v.addr
  %0 = load i32, ptr %v.addr
  %1 = load i32, ptr %v.addr
  %mul = mul nsw i32 %0, %1
  ret i32 %mul
}

define i32 @sum(ptr %a, i32 %n) {
entry:
  %a.addr = alloca ptr
  %n.addr = alloca i32
  %s = alloca i32
  %i = alloca i32
  store ptr %a, ptr %a.addr
  store i32 %n, ptr %n.addr
  store i32 0, ptr %s
  store i32 0, ptr %i
  br label %cond
cond:
  %0 = load i32, ptr %i
  %1 = load i32, ptr %n.addr
  %cmp = icmp slt i32 %0, %1
  br i1 %cmp, label %body, label %end
body:
  %2 = load ptr, ptr %a.addr
  %3 = load i32, ptr %i
  %idx = sext i32 %3 to i64
  %p = getelementptr inbounds i32, ptr %2, i64 %idx
  %4 = load i32, ptr %p
  %sq = call i32 @square(i32 %4)
  %5 = load i32, ptr %s
  %add = add nsw i32 %5, %sq
  store i32 %add, ptr %s
  %6 = load i32, ptr %i
  %inc = add nsw i32 %6, 1
  store i32 %inc, ptr %i
  br label %cond
end:
  %7 = load i32, ptr %s
  %t = load i32, ptr getelementptr inbounds ([4 x i32], ptr @table, i64 0, i64 2)
  %r = add i32 %7, %t
  %u = add i32 %r, 0
  ret i32 %u
}
)IR";

/// Parses IR text in a fresh context; null (and a gtest failure at the
/// caller's check) when it does not parse.
inline std::unique_ptr<llvm::Module> parse(llvm::LLVMContext &Ctx,
                                           const char *IR) {
  llvm::SMDiagnostic Err;
  return llvm::parseAssemblyString(IR, Err, Ctx);
}

/// The bitcode of IR text ("" when it does not parse).
inline std::string toBitcode(const char *IR) {
  llvm::LLVMContext Ctx;
  std::unique_ptr<llvm::Module> M = parse(Ctx, IR);
  std::string Bytes;
  if (!M)
    return Bytes;
  llvm::raw_string_ostream OS(Bytes);
  llvm::WriteBitcodeToFile(*M, OS);
  OS.flush();
  return Bytes;
}

/// A private temporary directory, removed with its files on destruction.
class TempDir {
public:
  TempDir() {
    char Template[] = "/tmp/mlbridge-phase-XXXXXX";
    const char *Made = ::mkdtemp(Template);
    Dir = Made ? Made : "/nonexistent";
  }
  ~TempDir() {
    std::error_code Ignored;
    std::filesystem::remove_all(Dir, Ignored);
  }
  TempDir(const TempDir &) = delete;
  TempDir &operator=(const TempDir &) = delete;
  /// The path of \p Name in the directory.
  std::string path(const std::string &Name) const { return Dir + "/" + Name; }
  /// Writes \p Bytes to \p Name; returns its path.
  std::string write(const std::string &Name, const std::string &Bytes) const {
    std::ofstream Out(path(Name), std::ios::binary);
    Out << Bytes;
    return path(Name);
  }

private:
  std::string Dir;
};

} // namespace phase_test

#endif // MLBRIDGE_TESTS_LLVM_PHASETESTSUPPORT_H
