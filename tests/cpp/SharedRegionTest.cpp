//===- SharedRegionTest.cpp - A hostile model side of the shm protocol ----===//
//
// The model side of the shm protocol tries everything that used to kill the
// compiler with SIGBUS when the region was a named file: truncating it,
// growing it, sealing it against writes, and replacing the file under its
// old name. The region is a memfd sealed against resizing, so every attempt
// fails with EPERM and the runner goes on answering (ASan build).
//
//===----------------------------------------------------------------------===//

#include "mlbridge/PipeModelRunner.h"

#include "TestHelpers.h"
#include "pipe/ShmLayout.h"

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <fcntl.h>
#include <sys/mman.h>
#include <thread>
#include <unistd.h>

using namespace mlbridge;
using namespace mlbridge::test;
using namespace std::chrono_literals;

namespace {
/// The value of the integer key \p Key in the handshake line \p Line, or -1.
long long integerAfter(const std::string &Line, const std::string &Key) {
  size_t At = Line.find("\"" + Key + "\":");
  if (At == std::string::npos)
    return -1;
  return std::strtoll(Line.c_str() + At + Key.size() + 3, nullptr, 10);
}

/// The errno of every attempt to change the region's size or seals (0 when
/// one succeeded).
std::vector<int> tryToResize(int FD, size_t Size) {
  std::vector<int> Errnos;
  auto Record = [&](int Rc) { Errnos.push_back(Rc == 0 ? 0 : errno); };
  Record(::ftruncate(FD, 0));
  Record(::ftruncate(FD, off_t(Size / 2)));
  Record(::ftruncate(FD, off_t(Size * 2)));
  int Rc = ::posix_fallocate(FD, 0, off_t(Size * 2));
  Errnos.push_back(Rc);
  Record(::fcntl(FD, F_ADD_SEALS, F_SEAL_WRITE));
  Record(::fcntl(FD, F_ADD_SEALS, F_SEAL_FUTURE_WRITE));
  return Errnos;
}

/// Serves \p Calls decisions (advice = 2 * feature) on the region \p Map,
/// trying to resize it through \p FD before each.
void serveHostile(RawHost &H, uint8_t *Map, size_t Size, int FD,
                  const shm::Layout &L, int Calls,
                  std::vector<std::vector<int>> &Attempts) {
  for (int Seq = 1; Seq <= Calls; ++Seq) {
    Attempts.push_back(tryToResize(FD, Size));
    auto Until = std::chrono::steady_clock::now() + 10s;
    while (shm::load(Map, shm::RequestSeq, __ATOMIC_SEQ_CST) != uint32_t(Seq)) {
      if (std::chrono::steady_clock::now() > Until)
        return;
      std::this_thread::sleep_for(100us);
    }
    int64_t In;
    std::memcpy(&In, Map + L.InputOffsets[0], sizeof(In));
    int64_t Out = 2 * In;
    std::memcpy(Map + L.OutputOffsets[0], &Out, sizeof(Out));
    shm::store(Map, shm::ReplyStatus, shm::StatusResult, __ATOMIC_SEQ_CST);
    shm::store(Map, shm::ReplySeq, uint32_t(Seq), __ATOMIC_SEQ_CST);
    if (shm::load(Map, shm::CompilerWaiting, __ATOMIC_SEQ_CST))
      H.write(std::string(1, '\0'));
  }
}
} // namespace

TEST(SharedRegion, AModelSideCannotResizeTheRegionUnderTheCompiler) {
  PipeOptions O;
  O.Protocol = PipeProtocol::SharedMemory;
  O.OpenTimeout = 10s;
  O.IoTimeout = 10s;
  ASSERT_EXPECTED(R,
                  PipeModelRunner::create({TensorSpec::of<int64_t>("x")},
                                          {TensorSpec::of<int64_t>("y")}, O));
  std::string Base = (*R)->channelBase();
  std::vector<std::vector<int>> Attempts;
  std::string Refused;
  std::thread Host([&] {
    RawHost H;
    std::string Line;
    if (!H.open(Base) || !H.readLine(Line))
      return;
    long long Pid = integerAfter(Line, "pid"), Fd = integerAfter(Line, "fd");
    std::string Path =
        "/proc/" + std::to_string(Pid) + "/fd/" + std::to_string(Fd);
    int FD = ::open(Path.c_str(), O_RDWR | O_CLOEXEC);
    if (FD < 0) {
      Refused = "cannot open " + Path;
      return;
    }
    int Seals = ::fcntl(FD, F_GET_SEALS);
    if ((Seals & (F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL)) !=
        (F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL))
      Refused = "unsealed";
    // The name the first version of the protocol used: nothing reads it.
    int Decoy = ::open((Base + ".shm").c_str(), O_RDWR | O_CREAT, 0600);
    if (Decoy >= 0)
      ::close(Decoy);
    off_t Size = ::lseek(FD, 0, SEEK_END);
    void *Map = ::mmap(nullptr, size_t(Size), PROT_READ | PROT_WRITE,
                       MAP_SHARED, FD, 0);
    H.write("{\"mlbridge\":1}\n");
    if (Map != MAP_FAILED) {
      auto *B = static_cast<uint8_t *>(Map);
      shm::Layout L;
      L.InputOffsets = {shm::load(B, shm::RequestOffset)};
      L.OutputOffsets = {shm::load(B, shm::ReplyOffset)};
      serveHostile(H, B, size_t(Size), FD, L, 3, Attempts);
      ::munmap(Map, size_t(Size));
    }
    ::close(FD);
    ::unlink((Base + ".shm").c_str());
  });
  for (int64_t X : {5, 7, 11}) {
    *(*R)->input<int64_t>(0) = X;
    auto Y = (*R)->evaluate<int64_t>();
    ASSERT_TRUE(bool(Y)) << Y.takeError().toString();
    EXPECT_EQ(*Y, 2 * X);
  }
  R->reset();
  Host.join();
  EXPECT_EQ(Refused, "");
  ASSERT_EQ(Attempts.size(), 3u);
  for (const auto &Errnos : Attempts)
    EXPECT_EQ(Errnos, std::vector<int>(6, EPERM));
}
