//===- llvm/PhaseProtocol.cpp - The phase-ordering service ----------------===//
//
// Part of mlbridge, under the Apache License v2.0.
//
//===----------------------------------------------------------------------===//

#include "mlbridge/llvm/PhaseProtocol.h"

#include "PhaseTrainer.h"
#include "PhaseWorker.h"

#include <algorithm>
#include <cstdio>
#include <utility>

namespace mlbridge::phase {

std::vector<TensorSpec> observationSpecs() {
  return {
      TensorSpec::of<int64_t>(AutophaseInput,
                              {static_cast<int64_t>(autophase::NumFeatures)}),
      TensorSpec::of<int64_t>(InstCountInput),
      TensorSpec::of<int64_t>(InitialInstCountInput),
      TensorSpec::of<int64_t>(BaselineInstCountInput),
      TensorSpec::of<int64_t>(StatusInput),
      TensorSpec::of<int64_t>(ModuleInput),
      TensorSpec::of<int64_t>(StepsInput),
  };
}

std::vector<TensorSpec> commandSpecs() {
  return {TensorSpec::of<int64_t>("command"),
          TensorSpec::of<int64_t>("argument")};
}

std::vector<TensorSpec> actionSpecs() {
  return {TensorSpec::of<int64_t>("action")};
}

namespace {

/// The int64 input \p Name of \p R with \p Count elements.
Expected<int64_t *> bindInput(ModelRunner &R, const char *Name, size_t Count) {
  Expected<size_t> I = R.inputIndex(Name);
  if (!I)
    return I.takeError();
  const TensorSpec &Spec = R.inputSpec(*I);
  if (!Spec.isElementType<int64_t>() || Spec.elementCount() != Count)
    return makeError(ErrorCode::TypeMismatch, "phase-ordering input '", Name,
                     "' must be int64 with ", std::to_string(Count),
                     " elements");
  return R.input<int64_t>(*I);
}

} // namespace

Expected<ObservationWriter> ObservationWriter::bind(ModelRunner &Runner) {
  ObservationWriter W;
  struct Slot {
    const char *Name;
    size_t Count;
    int64_t **To;
  } Slots[] = {{AutophaseInput, autophase::NumFeatures, &W.Features},
               {InstCountInput, 1, &W.Count},
               {InitialInstCountInput, 1, &W.Initial},
               {BaselineInstCountInput, 1, &W.Baseline},
               {StatusInput, 1, &W.StatusCode},
               {ModuleInput, 1, &W.ModuleIndex},
               {StepsInput, 1, &W.Steps}};
  for (const Slot &S : Slots) {
    Expected<int64_t *> P = bindInput(Runner, S.Name, S.Count);
    if (!P)
      return P.takeError();
    *S.To = *P;
  }
  return W;
}

Observation Observation::of(const Session &S, Status St, int64_t Module) {
  Observation O;
  if (S.hasModule())
    O.Features = S.features();
  O.Count = S.instructionCount();
  O.Initial = S.initialInstructionCount();
  O.Baseline = S.baselineInstructionCount();
  O.StatusCode = static_cast<int64_t>(St);
  O.Module = S.hasModule() ? Module : -1;
  O.Steps = S.steps();
  return O;
}

void ObservationWriter::write(const Session &S, Status St,
                              int64_t Module) const {
  write(Observation::of(S, St, Module));
}

void ObservationWriter::write(const Observation &O) const {
  std::copy(O.Features.begin(), O.Features.end(), Features);
  *Count = O.Count;
  *Initial = O.Initial;
  *Baseline = O.Baseline;
  *StatusCode = O.StatusCode;
  *ModuleIndex = O.Module;
  *Steps = O.Steps;
}

namespace {

/// The turn of command \p C whose worker crashed (\p Why): the command
/// failed, and no module is loaded (the next worker starts from \p S).
WorkerReply crashed(int64_t C, int64_t Arg, const Error &Why,
                    const Session &S) {
  auto Cmd = static_cast<Command>(C);
  Status St = Cmd == Command::Load    ? Status::LoadFailed
              : Cmd == Command::Apply ? Status::ActionFailed
              : Cmd == Command::Write ? Status::WriteFailed
                                      : Status::InvalidCommand;
  return WorkerReply{Observation::of(S, St, -1), false,
                     "command " + std::to_string(C) + " (argument " +
                         std::to_string(Arg) + "): " + Why.message() +
                         "; no module is loaded now"};
}

} // namespace

Error serveTraining(ModelRunner &Runner, Session &S, const TrainingOptions &O) {
  Expected<ObservationWriter> W = ObservationWriter::bind(Runner);
  if (!W)
    return W.takeError();
  Expected<size_t> CommandOut = Runner.outputIndex("command");
  if (!CommandOut)
    return CommandOut.takeError();
  Expected<size_t> ArgumentOut = Runner.outputIndex("argument");
  if (!ArgumentOut)
    return ArgumentOut.takeError();
  // The trainer and the session are copied into each worker at its fork;
  // these (the parent's) never change.
  Trainer T(S, O);
  PhaseWorker Worker(
      [&](int64_t C, int64_t Arg) {
        bool End = T.run(C, Arg);
        return WorkerReply{Observation::of(S, T.status(), T.module()), End,
                           T.context()};
      },
      O.StepTimeout);
  WorkerReply Turn{Observation::of(S, Status::Ok, -1), false, ""};
  std::string Context;
  for (;;) {
    W->write(Turn.Obs);
    if (Turn.Context != Context) {
      Context = Turn.Context;
      if (Error E = Runner.switchContext(Context))
        return E;
    }
    if (Error E = Runner.evaluate())
      return E;
    Expected<TensorView<int64_t>> C = Runner.output<int64_t>(*CommandOut);
    if (!C)
      return C.takeError();
    Expected<TensorView<int64_t>> A = Runner.output<int64_t>(*ArgumentOut);
    if (!A)
      return A.takeError();
    if (C->Size != 1 || A->Size != 1)
      return makeError(ErrorCode::TypeMismatch,
                       "'command' and 'argument' must have one element each");
    Expected<WorkerReply> Done = Worker.run((*C)[0], (*A)[0]);
    if (!Done)
      Done = crashed((*C)[0], (*A)[0], Done.takeError(), S);
    if (Done->End)
      return Error::success();
    Turn = std::move(*Done);
  }
}

DeploymentResult chooseSequence(ModelRunner *Runner, Session &S,
                                int64_t MaxSteps) {
  DeploymentResult R;
  auto FallBack = [&](Error Why) {
    R.RunnerError = std::move(Why);
    if (Error E = S.apply(static_cast<int64_t>(defaultOzAction()))) {
      ++R.FailedSteps;
      R.LastFailure = std::move(E);
    }
    return R;
  };
  if (!Runner)
    return FallBack(makeError(ErrorCode::InvalidArgument, "no runner"));
  Expected<ObservationWriter> W = ObservationWriter::bind(*Runner);
  if (!W)
    return FallBack(W.takeError());
  if (Error E = Runner->switchContext(S.moduleName()))
    return FallBack(std::move(E));
  const auto NumActions = static_cast<int64_t>(actions().size());
  Status St = Status::Ok;
  for (int64_t Step = 0; Step < MaxSteps; ++Step) {
    W->write(S, St, 0);
    Expected<int64_t> Chosen = Runner->evaluate<int64_t>();
    if (!Chosen)
      return FallBack(Chosen.takeError());
    if (*Chosen < 0 || *Chosen >= NumActions)
      break;
    ++R.Steps;
    St = Status::Ok;
    if (Error E = S.apply(*Chosen)) {
      St = Status::ActionFailed;
      ++R.FailedSteps;
      R.LastFailure = std::move(E);
    }
  }
  return R;
}

namespace {

void appendString(std::string &Out, std::string_view Text) {
  Out += '"';
  for (char C : Text) {
    auto U = static_cast<unsigned char>(C);
    if (C == '"' || C == '\\') {
      Out += '\\';
      Out += C;
    } else if (U < 0x20) {
      char Buf[8];
      std::snprintf(Buf, sizeof(Buf), "\\u%04x", U);
      Out += Buf;
    } else {
      Out += C;
    }
  }
  Out += '"';
}

template <typename Enum>
void appendCodes(std::string &Out,
                 std::initializer_list<std::pair<const char *, Enum>> Codes) {
  Out += '{';
  bool First = true;
  for (const auto &[Name, Code] : Codes) {
    if (!First)
      Out += ',';
    First = false;
    appendString(Out, Name);
    Out += ':';
    Out += std::to_string(static_cast<int64_t>(Code));
  }
  Out += '}';
}

} // namespace

std::string describeService() {
  std::string Out = "{\"protocol_version\":";
  Out += std::to_string(ProtocolVersion);
  Out += ",\n\"actions\":[";
  const std::vector<Action> &Table = actions();
  for (size_t I = 0; I < Table.size(); ++I) {
    Out += I ? ",\n" : "\n";
    Out += "{\"name\":";
    appendString(Out, Table[I].Name);
    Out += ",\"pipeline\":";
    appendString(Out, Table[I].Pipeline);
    Out += '}';
  }
  Out += "],\n\"default_action\":";
  Out += std::to_string(defaultOzAction());
  Out += ",\n\"features\":[";
  for (size_t I = 0; I < autophase::NumFeatures; ++I) {
    if (I)
      Out += ',';
    appendString(Out, autophase::FeatureNames[I]);
  }
  Out += "],\n\"commands\":";
  appendCodes<Command>(Out, {{"apply", Command::Apply},
                             {"load", Command::Load},
                             {"reset", Command::Reset},
                             {"snapshot", Command::Snapshot},
                             {"restore", Command::Restore},
                             {"end", Command::End},
                             {"write", Command::Write}});
  Out += ",\n\"statuses\":";
  appendCodes<Status>(Out, {{"ok", Status::Ok},
                            {"invalid_command", Status::InvalidCommand},
                            {"action_failed", Status::ActionFailed},
                            {"load_failed", Status::LoadFailed},
                            {"no_module", Status::NoModule},
                            {"write_failed", Status::WriteFailed}});
  Out += ",\n\"snapshot_slots\":";
  Out += std::to_string(NumSnapshotSlots);
  Out += ",\n\"inputs\":";
  appendJSONArray(Out, observationSpecs());
  Out += ",\n\"outputs\":";
  appendJSONArray(Out, commandSpecs());
  Out += ",\n\"deploy_outputs\":";
  appendJSONArray(Out, actionSpecs());
  Out += "}\n";
  return Out;
}

} // namespace mlbridge::phase
