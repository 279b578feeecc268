//===- interactive_host/InteractiveHost.cpp - mlbridge-interactive-host ---===//
//
// Part of mlbridge, under the Apache License v2.0.
//
//===----------------------------------------------------------------------===//
//
// mlbridge-interactive-host: runs a stock LLVM tool in its interactive mode
// and answers every question of one of its ML advisors with an mlbridge
// runner (AOT module, ONNX Runtime, ...), in C++ (docs/regalloc.md).
//
//   mlbridge-interactive-host --runner CONFIG
//       --problem regalloc-eviction|regalloc-priority|inlining
//       [--timeout-ms N] [--finite] [--mask FEATURE] [--stats FILE]
//       -- COMPILER ARGS...
//
// The host makes a private channel (two FIFOs in a 0700 directory), adds the
// advisor's flags to the command (behind -mllvm for clang), starts the
// compiler in its own process group, and serves: LLVM's header names the
// features and the advice, then for every question the host reads the
// features into the runner's inputs, evaluates, and writes the advice back.
// Every wait has a deadline; on any error the compiler's process group is
// killed before the FIFOs are closed (LLVM 19 spins on a closed input).
//
// Exit status: the compiler's (0 when it compiled), 1 a host error (the
// runner, the protocol, a timeout: the compiler was killed), 2 usage. With
// --stats FILE (or, without it, $MLBRIDGE_HOST_STATS), the run's statistics
// record (docs/run-stats.md): decisions, the error (or null); in details the
// problem, seconds in evaluate, wall seconds and the compiler's status.
//
//===----------------------------------------------------------------------===//

#include "mlbridge/RunnerConfig.h"
#include "pipe/Fifo.h"
#include "pipe/InteractiveProtocol.h"
#include "support/Json.h"
#include "support/RunStats.h"
#ifdef MLBRIDGE_HAVE_ONNXRUNTIME
#include "mlbridge/OnnxModelRunner.h"
#endif

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fcntl.h>
#include <limits>
#include <optional>
#include <string>
#include <string_view>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>
#include <vector>

using namespace mlbridge;
namespace chrono = std::chrono;

namespace {

constexpr const char *Tool = "mlbridge-interactive-host";
constexpr int ExitOk = 0, ExitFailure = 1, ExitUsage = 2;
/// Longest header line LLVM may send (its feature specs).
constexpr size_t MaxHeaderBytes = size_t(8) << 20;
/// Longest context or observation line.
constexpr size_t MaxLineBytes = size_t(64) << 10;
/// Seconds the compiler has to exit after SIGTERM before SIGKILL.
constexpr int KillGraceMs = 2000;
/// The variable naming the statistics file when --stats is not given.
constexpr const char *StatsVariable = "MLBRIDGE_HOST_STATS";
/// Slice of a wait in which the compiler's exit is checked.
constexpr chrono::milliseconds Slice(50);

constexpr const char *Usage =
    "usage: mlbridge-interactive-host --runner CONFIG --problem "
    "regalloc-eviction|regalloc-priority|inlining\n"
    "           [--timeout-ms N] [--finite] [--mask FEATURE] [--stats FILE]\n"
    "           -- COMPILER ARGS...\n"
    "\n"
    "  --runner CONFIG   the runner answering (docs/runner-config.md), e.g.\n"
    "                    onnx:policy.onnx or aot:policy.so\n"
    "  --problem NAME    the decision to serve, by LLVM's advisor for it:\n"
    "                    regalloc-eviction, regalloc-priority (llc) or\n"
    "                    inlining (opt, clang)\n"
    "  --timeout-ms N    longest wait for the compiler's next question or its\n"
    "                    end (default 60000)\n"
    "  --finite          feed NaN float features as 0 and infinities as the\n"
    "                    largest finite float (as mlbridge's environments)\n"
    "  --mask FEATURE    refuse an advice that is not an index of FEATURE\n"
    "                    whose element is non-zero (the eviction mask)\n"
    "  --stats FILE      append the run's statistics record (one JSON line,\n"
    "                    docs/run-stats.md); default: $MLBRIDGE_HOST_STATS\n";

int usage(const std::string &Message) {
  std::fprintf(stderr, "%s: %s\n%s", Tool, Message.c_str(), Usage);
  return ExitUsage;
}

struct Options {
  std::string Runner, Problem, Mask, Stats;
  int64_t TimeoutMs = 60000;
  bool Finite = false;
  std::vector<std::string> Command;
};

std::optional<Options> parseOptions(int Argc, char **Argv, std::string &Why) {
  Options O;
  int I = 1;
  for (; I < Argc; ++I) {
    std::string_view A = Argv[I];
    if (A == "--") {
      ++I;
      break;
    }
    auto Value = [&](std::string &Out) {
      if (I + 1 >= Argc) {
        Why = std::string(A) + " needs a value";
        return false;
      }
      Out = Argv[++I];
      return true;
    };
    if (A == "--runner") {
      if (!Value(O.Runner))
        return std::nullopt;
    } else if (A == "--problem") {
      if (!Value(O.Problem))
        return std::nullopt;
    } else if (A == "--mask") {
      if (!Value(O.Mask))
        return std::nullopt;
    } else if (A == "--stats") {
      if (!Value(O.Stats))
        return std::nullopt;
    } else if (A == "--finite") {
      O.Finite = true;
    } else if (A == "--timeout-ms") {
      std::string Text;
      if (!Value(Text))
        return std::nullopt;
      auto N = json::parseNumber<int64_t>(Text);
      if (!N || *N <= 0 || *N > int64_t(24) * 3600 * 1000) {
        Why = "--timeout-ms must be a positive number of milliseconds";
        return std::nullopt;
      }
      O.TimeoutMs = *N;
    } else {
      Why = "unknown option '" + std::string(A) + "'";
      return std::nullopt;
    }
  }
  for (; I < Argc; ++I)
    O.Command.emplace_back(Argv[I]);
  if (O.Runner.empty() || O.Problem.empty() || O.Command.empty()) {
    Why = "--runner, --problem and a command after -- are required";
    return std::nullopt;
  }
  if (O.Problem != "regalloc-eviction" && O.Problem != "regalloc-priority" &&
      O.Problem != "inlining") {
    Why = "--problem must be regalloc-eviction, regalloc-priority or inlining";
    return std::nullopt;
  }
  return O;
}

/// LLVM's options serving the advisor of \p Problem over the channel \p Base.
std::vector<std::string> advisorFlags(const std::string &Problem,
                                      const std::string &Base) {
  if (Problem == "regalloc-eviction")
    return {"-regalloc-enable-advisor=release",
            "-regalloc-evict-interactive-channel-base=" + Base};
  if (Problem == "regalloc-priority")
    return {"-regalloc-enable-priority-advisor=release",
            "-regalloc-priority-interactive-channel-base=" + Base};
  return {"-enable-ml-inliner=release",
          "-inliner-interactive-channel-base=" + Base};
}

bool isClang(const std::string &Program) {
  size_t Slash = Program.rfind('/');
  std::string_view Name = std::string_view(Program).substr(
      Slash == std::string::npos ? 0 : Slash + 1);
  return Name.substr(0, 5) == "clang";
}

/// The private channel: a 0700 directory holding BASE.in and BASE.out.
class Channel {
public:
  static Expected<Channel> create() {
    const char *Tmp = std::getenv("TMPDIR");
    std::string Template =
        std::string(Tmp && *Tmp ? Tmp : "/tmp") + "/mlbridge-host-XXXXXX";
    if (!::mkdtemp(Template.data()))
      return makeError(ErrorCode::IO, "cannot create a directory in ", Template,
                       ": ", std::strerror(errno));
    Channel C;
    C.Dir = Template;
    C.Base = C.Dir + "/channel";
    for (const char *Suffix : {".in", ".out"})
      if (::mkfifo((C.Base + Suffix).c_str(), 0600) != 0)
        return makeError(ErrorCode::IO, "cannot create the FIFO ", C.Base,
                         Suffix, ": ", std::strerror(errno));
    return C;
  }
  Channel() = default;
  Channel(Channel &&Other) noexcept
      : Dir(std::move(Other.Dir)), Base(std::move(Other.Base)) {
    Other.Dir.clear();
  }
  Channel(const Channel &) = delete;
  Channel &operator=(const Channel &) = delete;
  Channel &operator=(Channel &&) = delete;
  ~Channel() {
    if (Dir.empty())
      return;
    ::unlink((Base + ".in").c_str());
    ::unlink((Base + ".out").c_str());
    ::rmdir(Dir.c_str());
  }
  std::string Dir, Base;
};

/// The compiler: its own process group, killed with this process.
class Compiler {
public:
  static Expected<Compiler> start(const std::vector<std::string> &Command) {
    std::vector<char *> Argv;
    for (const std::string &A : Command)
      Argv.push_back(const_cast<char *>(A.c_str()));
    Argv.push_back(nullptr);
    pid_t Parent = ::getpid();
    pid_t Pid = ::fork();
    if (Pid < 0)
      return makeError(ErrorCode::IO, "fork: ", std::strerror(errno));
    if (Pid == 0) {
      ::setpgid(0, 0);
      ::prctl(PR_SET_PDEATHSIG, SIGKILL);
      if (::getppid() != Parent)
        ::_exit(127);
      int Null = ::open("/dev/null", O_RDONLY);
      if (Null >= 0)
        ::dup2(Null, 0);
      ::execvp(Argv[0], Argv.data());
      std::fprintf(stderr, "%s: cannot run %s: %s\n", Tool, Argv[0],
                   std::strerror(errno));
      ::_exit(127);
    }
    ::setpgid(Pid, Pid);
    Compiler C;
    C.Pid = Pid;
    return C;
  }
  Compiler() = default;
  Compiler(Compiler &&Other) noexcept : Pid(Other.Pid), Status(Other.Status) {
    Other.Pid = -1;
  }
  Compiler(const Compiler &) = delete;
  Compiler &operator=(const Compiler &) = delete;
  Compiler &operator=(Compiler &&) = delete;
  ~Compiler() { kill(); }

  /// Whether it has exited (reaps it).
  bool exited() {
    if (Pid < 0)
      return true;
    int S = 0;
    pid_t R = ::waitpid(Pid, &S, WNOHANG);
    if (R == Pid) {
      Status = S;
      Pid = -1;
      return true;
    }
    return false;
  }
  /// Waits for its exit at most \p Ms milliseconds; whether it exited.
  bool waitFor(int Ms) {
    auto Until = chrono::steady_clock::now() + chrono::milliseconds(Ms);
    while (!exited()) {
      if (chrono::steady_clock::now() >= Until)
        return false;
      ::usleep(2000);
    }
    return true;
  }
  /// Stops its process group: SIGTERM (LLVM removes its temporary
  /// outputs), SIGKILL after the grace period.
  void kill() {
    if (Pid < 0)
      return;
    ::killpg(Pid, SIGTERM);
    if (!waitFor(KillGraceMs)) {
      ::killpg(Pid, SIGKILL);
      int S = 0;
      ::waitpid(Pid, &S, 0);
      Status = S;
      Pid = -1;
    }
  }
  /// The exit status as a shell reports it (128+N for signal N), or -1.
  int exitCode() const {
    if (!Status)
      return -1;
    if (WIFEXITED(*Status))
      return WEXITSTATUS(*Status);
    if (WIFSIGNALED(*Status))
      return 128 + WTERMSIG(*Status);
    return -1;
  }

private:
  pid_t Pid = -1;
  std::optional<int> Status;
};

/// NaN as 0, infinities as the largest finite value, in a float tensor.
template <typename T> void makeFinite(void *Data, size_t Count) {
  T *V = static_cast<T *>(Data);
  for (size_t I = 0; I < Count; ++I) {
    if (std::isnan(V[I]))
      V[I] = 0;
    else if (std::isinf(V[I]))
      V[I] = V[I] > 0 ? std::numeric_limits<T>::max()
                      : -std::numeric_limits<T>::max();
  }
}

/// Reads the integer advice as an index; error unless it is one.
Expected<int64_t> adviceIndex(const TensorSpec &Spec, const void *Data) {
  if (Spec.elementCount() != 1)
    return makeError(ErrorCode::TypeMismatch, "the advice is not one value");
  switch (Spec.type()) {
  case DType::Int64:
    return *static_cast<const int64_t *>(Data);
  case DType::Int32:
    return int64_t(*static_cast<const int32_t *>(Data));
  default:
    return makeError(ErrorCode::TypeMismatch,
                     "--mask needs an int32 or int64 advice");
  }
}

RunnerFactories factories() {
  RunnerFactories F = RunnerFactories::core();
#ifdef MLBRIDGE_HAVE_ONNXRUNTIME
  addOnnxRunners(F);
#endif
  return F;
}

/// What a session did, for --stats.
struct Stats {
  uint64_t Decisions = 0;
  double EvaluateSeconds = 0, WallSeconds = 0;
  int CompilerStatus = -1;
  std::string Error;
};

using fifo::Deadline;

Deadline after(int64_t Ms) {
  return fifo::Clock::now() + chrono::milliseconds(Ms);
}

/// The host's ends of the channel.
struct Ends {
  fifo::FileDescriptor Read;
  std::optional<fifo::WriteEnd> Write;
};

Error session(const Options &O, const RunnerConfig &Config, Compiler &C,
              const Channel &Ch, Ends &E, Stats &S);

/// Serves the compiler until it exits: one session per process of it that
/// opens the channel (clang runs one cc1 per source, each asking in turn).
/// Returns success when every session ended well (or none was opened), else
/// the host's error, the compiler then stopped while the channel's ends are
/// still open.
Error serve(const Options &O, const RunnerConfig &Config, Compiler &C,
            const Channel &Ch, Stats &S) {
  do {
    Ends E;
    if (Error Failed = session(O, Config, C, Ch, E, S)) {
      C.kill(); // before the FIFOs close: LLVM 19 spins on a closed input
      return Failed;
    }
  } while (!C.exited());
  return Error::success();
}

Error session(const Options &O, const RunnerConfig &Config, Compiler &C,
              const Channel &Ch, Ends &E, Stats &S) {
  auto ReadEnd = fifo::openForRead(Ch.Base + ".out");
  if (!ReadEnd)
    return ReadEnd.error();
  E.Read = std::move(*ReadEnd);
  // BASE.in for writing: the compiler opens it first; give up when the
  // compiler exits without (it asked nothing) or the deadline passes.
  Deadline OpenUntil = after(O.TimeoutMs);
  std::optional<fifo::WriteEnd> &Write = E.Write;
  while (!Write) {
    Deadline SliceEnd = std::min(OpenUntil, fifo::Clock::now() + Slice);
    auto W = fifo::openForWrite(Ch.Base + ".in", E.Read.get(), SliceEnd);
    if (W) {
      Write.emplace(std::move(*W));
      break;
    }
    if (W.error().code() != ErrorCode::Timeout)
      return W.error();
    if (C.exited())
      return Error::success(); // the compiler never asked
    if (fifo::Clock::now() >= OpenUntil)
      return makeError(ErrorCode::Timeout, "the compiler did not open its "
                                           "channel within --timeout-ms");
  }
  fifo::Reader In(E.Read.get(), MaxHeaderBytes + 1);
  auto HeaderLine =
      In.readLine(MaxHeaderBytes, after(O.TimeoutMs), "reading LLVM's header");
  if (!HeaderLine) {
    if (HeaderLine.error().code() == ErrorCode::PeerClosed)
      return Error::success(); // opened, then asked nothing
    return HeaderLine.error();
  }
  auto H = interactive::parseHeader(*HeaderLine);
  if (!H)
    return H.error();
  auto Runner = createRunner(Config, H->Features, {H->Advice}, factories());
  if (!Runner)
    return Runner.error().withContext("creating the runner");
  ModelRunner &M = **Runner;
  std::optional<size_t> MaskIndex;
  if (!O.Mask.empty()) {
    for (size_t I = 0; I < H->Features.size(); ++I)
      if (H->Features[I].name() == O.Mask)
        MaskIndex = I;
    if (!MaskIndex)
      return makeError(ErrorCode::InvalidArgument, "--mask ", O.Mask,
                       ": the compiler sends no such feature");
  }
  const size_t AdviceBytes = H->Advice.byteSize();
  while (true) {
    auto Line = In.readLine(MaxLineBytes, after(O.TimeoutMs),
                            "waiting for the compiler's next question");
    if (!Line) {
      if (Line.error().code() == ErrorCode::PeerClosed && In.pending() == 0)
        return Error::success(); // the compiler is done
      return Line.error();
    }
    auto Question = interactive::parseQuestionLine(*Line);
    if (!Question)
      return Question.takeError();
    if (!Question->Observation) {
      if (Error Switch = M.switchContext(Question->Context))
        return Switch;
      continue;
    }
    for (size_t I = 0; I < H->Features.size(); ++I) {
      const TensorSpec &Spec = H->Features[I];
      auto Bytes = In.readExact(Spec.byteSize(), after(O.TimeoutMs),
                                "reading a feature");
      if (!Bytes)
        return Bytes.error();
      std::memcpy(M.inputData(I), Bytes->data(), Bytes->size());
      if (O.Finite && Spec.type() == DType::Float)
        makeFinite<float>(M.inputData(I), Spec.elementCount());
      else if (O.Finite && Spec.type() == DType::Double)
        makeFinite<double>(M.inputData(I), Spec.elementCount());
    }
    auto End = In.readExact(1, after(O.TimeoutMs), "reading a question's end");
    if (!End)
      return End.error();
    if ((*End)[0] != '\n')
      return makeError(ErrorCode::Protocol,
                       "a question does not end with a newline");
    auto Start = chrono::steady_clock::now();
    if (Error Eval = M.evaluate())
      return Eval.withContext("evaluating the model");
    S.EvaluateSeconds +=
        chrono::duration<double>(chrono::steady_clock::now() - Start).count();
    const void *Advice = M.outputData(0);
    if (MaskIndex) {
      auto Index = adviceIndex(H->Advice, Advice);
      if (!Index)
        return Index.error();
      const TensorSpec &MaskSpec = H->Features[*MaskIndex];
      if (MaskSpec.type() != DType::Int64)
        return makeError(ErrorCode::TypeMismatch, "--mask ", O.Mask,
                         " is not an int64 feature");
      const int64_t *Mask =
          static_cast<const int64_t *>(M.inputData(*MaskIndex));
      if (*Index < 0 || size_t(*Index) >= MaskSpec.elementCount() ||
          Mask[*Index] == 0)
        return makeError(ErrorCode::ModelFailure, "the model answered ",
                         std::to_string(*Index), ", not a legal index of ",
                         O.Mask);
    }
    if (Error W = fifo::writeAll(
            *Write,
            std::string_view(static_cast<const char *>(Advice), AdviceBytes),
            after(O.TimeoutMs), "writing the advice"))
      return W;
    ++S.Decisions;
  }
}

/// The run's statistics record: every question answered by the runner (an
/// error stops the compiler: nothing falls back).
void writeStats(const Options &O, const RunnerConfig &Config, const Stats &S) {
  RunStats R;
  R.Tool = "interactive-host";
  for (const std::string &A : O.Command)
    R.Unit += (R.Unit.empty() ? "" : " ") + A;
  R.Runner = Config.str();
  R.Decisions = R.Answered = S.Decisions;
  R.FirstError = S.Error;
  R.detailString("problem", O.Problem)
      .detailNumber("evaluate_seconds", S.EvaluateSeconds)
      .detailNumber("wall_seconds", S.WallSeconds)
      .detail("compiler_status", S.CompilerStatus);
  std::string Problem;
  if (!R.append(O.Stats, Problem))
    std::fprintf(stderr, "%s: --stats %s: %s\n", Tool, O.Stats.c_str(),
                 Problem.c_str());
}

} // namespace

int main(int Argc, char **Argv) {
  std::string Why;
  std::optional<Options> O = parseOptions(Argc, Argv, Why);
  if (!O)
    return usage(Why);
  auto Config = RunnerConfig::parse(O->Runner);
  if (!Config)
    return usage("--runner: " + Config.error().message());
  std::signal(SIGPIPE, SIG_IGN);
  auto Start = chrono::steady_clock::now();
  auto Ch = Channel::create();
  if (!Ch) {
    std::fprintf(stderr, "%s: %s\n", Tool, Ch.error().message().c_str());
    return ExitFailure;
  }
  std::vector<std::string> Command = O->Command;
  for (const std::string &Flag : advisorFlags(O->Problem, Ch->Base)) {
    if (isClang(Command[0]))
      Command.emplace_back("-mllvm");
    Command.push_back(Flag);
  }
  auto C = Compiler::start(Command);
  if (!C) {
    std::fprintf(stderr, "%s: %s\n", Tool, C.error().message().c_str());
    return ExitFailure;
  }
  Stats S;
  Error E = serve(*O, *Config, *C, *Ch, S);
  if (E) {
    S.Error = E.message();
    std::fprintf(stderr, "%s: %s; the compiler was stopped\n", Tool,
                 E.message().c_str());
  } else if (!C->waitFor(int(std::min<int64_t>(O->TimeoutMs, 1 << 30)))) {
    C->kill();
    S.Error = "the compiler did not exit within --timeout-ms after its "
              "session ended";
    std::fprintf(stderr, "%s: %s\n", Tool, S.Error.c_str());
  }
  S.CompilerStatus = C->exitCode();
  S.WallSeconds =
      chrono::duration<double>(chrono::steady_clock::now() - Start).count();
  if (O->Stats.empty()) // a build system passes it through the environment
    if (const char *Path = std::getenv(StatsVariable); Path && *Path)
      O->Stats = Path;
  if (!O->Stats.empty())
    writeStats(*O, *Config, S);
  if (!S.Error.empty())
    return ExitFailure;
  return S.CompilerStatus == 0
             ? ExitOk
             : (S.CompilerStatus < 0 ? ExitFailure : S.CompilerStatus);
}
