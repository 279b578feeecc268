//===- mlbridge/PipeModelRunner.h - Runner over two FIFOs -------*- C++ -*-===//
//
// Part of mlbridge, under the Apache License v2.0.
//
//===----------------------------------------------------------------------===//
///
/// \file
/// PipeModelRunner: the compiler side of a pipe channel (see
/// docs/protocol.md). Two protocols:
///  - PipeProtocol::Mlgo speaks LLVM's InteractiveModelRunner protocol byte
///    for byte (header, context and observation lines, raw advice reply), so
///    a host written for LLVM serves it unchanged;
///  - PipeProtocol::Extended adds a version handshake, framed messages in
///    bitstream, JSON or protobuf, several typed outputs and model-side
///    error reports;
///  - PipeProtocol::SharedMemory has the extended handshake, then passes the
///    tensors through memory both sides map (a memfd the compiler side seals
///    against resizing, so no peer can make an access fault) and uses the
///    FIFOs as doorbells only: with the two processes on two CPUs, each side
///    spins briefly for the other's answer and no system call is made per call.
/// Every open, read and write has a deadline; EOF is an error; SIGPIPE never
/// kills the process (the runner holds a read end of its own on the FIFO it
/// writes, so a write never meets a FIFO without readers). Once the model
/// side has answered, reads block in read() and one thread per connection
/// (signals blocked, joined when the connection closes) keeps their
/// deadlines; a timeout breaks the runner (a child made by fork() has no
/// such thread: connect a runner after forking, not before). The connection
/// is made lazily (first evaluate/switchContext, or connect()), never in the
/// factory.
///
//===----------------------------------------------------------------------===//

#ifndef MLBRIDGE_PIPEMODELRUNNER_H
#define MLBRIDGE_PIPEMODELRUNNER_H

#include "mlbridge/Codec.h"
#include "mlbridge/FifoChannel.h"
#include "mlbridge/ModelRunner.h"

#include <chrono>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace mlbridge {

/// Which wire protocol a PipeModelRunner speaks.
enum class PipeProtocol {
  /// LLVM's InteractiveModelRunner protocol: one output, raw reply.
  Mlgo,
  /// mlbridge's framed protocol, version 1.
  Extended,
  /// The extended handshake, then tensors in shared memory (format "shm").
  SharedMemory,
};

/// Configuration of a PipeModelRunner.
struct PipeOptions {
  /// Channel base path: the runner reads BASE.in and writes BASE.out. If
  /// empty, the runner creates a private FifoChannel (see channelBase()).
  std::string ChannelBase;
  /// The wire protocol.
  PipeProtocol Protocol = PipeProtocol::Mlgo;
  /// Serialisation of messages in the extended protocol (mlgo mode is
  /// always bitstream).
  Format Serialization = Format::Bitstream;
  /// Longest wait for the model side to open the channel and to answer the
  /// handshake.
  std::chrono::milliseconds OpenTimeout{60000};
  /// Longest time one evaluate() or switchContext() may take.
  std::chrono::milliseconds IoTimeout{60000};
  /// Largest message accepted from the model side.
  size_t MaxMessageBytes = DefaultMaxMessageBytes;
  /// SharedMemory protocol: longest busy wait for a reply before sleeping
  /// until the model side rings (0: never spin). Halved after each wait the
  /// spin did not end, restored every 256 such waits; never used when the
  /// two processes can only run on one CPU between them (the model side
  /// tells, from both CPU sets).
  std::chrono::microseconds SpinMicros{50};
};

/// A ModelRunner whose model lives in another process, reached over FIFOs.
class PipeModelRunner final : public ModelRunner {
public:
  /// Makes a runner sending \p Inputs and expecting \p Outputs. In Mlgo mode
  /// there must be exactly one output (LLVM's "advice"). Does not block.
  static Expected<std::unique_ptr<PipeModelRunner>>
  create(std::vector<TensorSpec> Inputs, std::vector<TensorSpec> Outputs,
         PipeOptions Options);

  ~PipeModelRunner() override;

  /// The channel base path (BASE.in, BASE.out) the model side must use.
  const std::string &channelBase() const { return Options.ChannelBase; }

  /// Opens the FIFOs and sends the header (and, in extended mode, completes
  /// the handshake). Called implicitly by the first evaluate/switchContext.
  Error connect();

  /// Sends a context switch; observation numbers restart at 0.
  Error switchContext(std::string_view Name) override;

  /// Number of successful evaluations so far.
  uint64_t evaluations() const { return Evaluations; }

private:
  PipeModelRunner(PipeOptions Options);
  Error evaluateImpl() override;
  Error evaluateMlgo();
  Error evaluateExtended();
  Error evaluateShared();
  Error handshake();
  /// Records \p E as fatal for the channel and returns it.
  Error fail(Error E);

  struct Connection;
  PipeOptions Options;
  std::optional<FifoChannel> OwnedChannel;
  std::unique_ptr<Connection> Conn;
  std::string Message; // reused encode buffer
  uint64_t Observation = 0;
  uint64_t Evaluations = 0;
};

} // namespace mlbridge

#endif // MLBRIDGE_PIPEMODELRUNNER_H
