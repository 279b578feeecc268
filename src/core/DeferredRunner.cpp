//===- core/DeferredRunner.cpp - Runners created at first use -------------===//
//
// Part of mlbridge, under the Apache License v2.0.
//
//===----------------------------------------------------------------------===//

#include "core/DeferredRunner.h"

#include "mlbridge/OnnxModelInfo.h"

#include <cstring>

namespace mlbridge {
namespace {

/// See makeDeferredRunner().
class DeferredRunner final : public ModelRunner {
public:
  DeferredRunner(std::vector<bool> Reads, RunnerCreator Create,
                 ModelMetadata Metadata)
      : Reads(std::move(Reads)), Create(std::move(Create)) {
    setMetadata(std::move(Metadata));
  }

  /// Sets up the buffers the caller fills.
  Error init(std::vector<TensorSpec> InputSpecs,
             std::vector<TensorSpec> OutputSpecs) {
    if (Reads.size() != InputSpecs.size())
      return makeError(ErrorCode::InvalidArgument,
                       "deferred runner: one read flag per input needed");
    return initBuffers(std::move(InputSpecs), std::move(OutputSpecs));
  }

  bool readsInput(size_t I) const override {
    return I < Reads.size() && Reads[I];
  }

  Error switchContext(std::string_view Name) override {
    if (Error E = ModelRunner::switchContext(Name))
      return E;
    return Inner ? Inner->switchContext(Name) : Error::success();
  }

private:
  /// Creates the runner this one stands for; on failure breaks this one.
  Error createInner() {
    auto R = Create();
    Create = nullptr; // whatever it holds is no longer needed
    if (!R) {
      markBroken(R.error());
      return R.takeError();
    }
    std::unique_ptr<ModelRunner> Made = std::move(*R);
    // What the caller was told at creation must still hold: a model file
    // replaced since then may read inputs the caller no longer fills.
    bool Same = Made->numInputs() == Inputs.size() &&
                Made->numOutputs() == Outputs.size();
    for (size_t I = 0; Same && I < Inputs.size(); ++I)
      Same = Made->inputSpec(I) == Inputs.spec(I) &&
             Made->readsInput(I) == Reads[I];
    Same = Same && Made->metadataEntries() == metadataEntries();
    for (size_t I = 0; Same && I < Outputs.size(); ++I)
      Same = Made->outputSpec(I) == Outputs.spec(I);
    if (!Same) {
      Error E(ErrorCode::InvalidArgument,
              "deferred runner: the runner made has other specs, reads "
              "other inputs or says other metadata than the one created (was "
              "the model replaced?)");
      markBroken(E);
      return E;
    }
    Inner = std::move(Made);
    return Error::success();
  }

  Error evaluateImpl() override {
    if (!Inner)
      if (Error E = createInner())
        return E;
    for (size_t I = 0; I < Inputs.size(); ++I)
      if (Reads[I])
        std::memcpy(Inner->inputData(I), Inputs.data(I),
                    Inputs.spec(I).byteSize());
    if (Error E = Inner->evaluate())
      return E;
    for (size_t I = 0; I < Outputs.size(); ++I)
      std::memcpy(Outputs.data(I), Inner->outputData(I),
                  Outputs.spec(I).byteSize());
    return Error::success();
  }

  std::vector<bool> Reads;
  RunnerCreator Create;
  std::unique_ptr<ModelRunner> Inner;
};

} // namespace

Expected<std::unique_ptr<ModelRunner>>
makeDeferredRunner(std::vector<TensorSpec> Inputs,
                   std::vector<TensorSpec> Outputs, std::vector<bool> Reads,
                   RunnerCreator Create, ModelMetadata Metadata) {
  auto R = std::make_unique<DeferredRunner>(std::move(Reads), std::move(Create),
                                            std::move(Metadata));
  if (Error E = R->init(std::move(Inputs), std::move(Outputs)))
    return E;
  return std::unique_ptr<ModelRunner>(std::move(R));
}

RunnerFactory deferOnnxLoading(RunnerFactory LoadNow) {
  return [LoadNow = std::move(LoadNow)](const RunnerConfig &Config,
                                        std::vector<TensorSpec> Inputs,
                                        std::vector<TensorSpec> Outputs)
             -> Expected<std::unique_ptr<ModelRunner>> {
    if (!Config.LazyLoad)
      return LoadNow(Config, std::move(Inputs), std::move(Outputs));
    auto Info = readOnnxModelInfoFile(Config.Argument);
    if (!Info)
      return Info.takeError();
    auto Reads =
        checkOnnxInterface(*Info, Inputs, Outputs, "'" + Config.Argument + "'");
    if (!Reads)
      return Reads.takeError();
    RunnerConfig Now = Config;
    Now.LazyLoad = false;
    return makeDeferredRunner(
        Inputs, Outputs, std::move(*Reads),
        [LoadNow, Now, Inputs, Outputs]() {
          return LoadNow(Now, Inputs, Outputs);
        },
        std::move(Info->Metadata));
  };
}

} // namespace mlbridge
