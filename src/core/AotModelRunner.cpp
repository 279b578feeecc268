//===- core/AotModelRunner.cpp - Runner over AOT-compiled models ----------===//
//
// Part of mlbridge, under the Apache License v2.0.
//
//===----------------------------------------------------------------------===//

#include "mlbridge/AotModelRunner.h"

#include "mlbridge/Codec.h"

#include <cstring>
#include <dlfcn.h>
#include <string_view>
#include <unordered_map>

namespace mlbridge {

/// A module loaded with dlopen, closed when the runner goes away.
struct AotInterfaceRunner::Module {
  void *Handle = nullptr;
  /// What the module says of its model (moduleMetadata()).
  ModelMetadata Metadata;
  ~Module() {
    if (Handle)
      ::dlclose(Handle);
  }
};

namespace {

/// Most tensors a model may declare as inputs, and as outputs: as many as
/// one message of the size budget carries (MAX_TENSORS of
/// python/mlbridge/limits.py, docs/security.md).
constexpr int MaxAotTensors = 1 << 16;

/// The spec of the tensor \p T a model declares as its input or output
/// (\p Role) number \p Index, checked before anything is made from it: a
/// name, a known element type, at most MaxTensorRank dimensions, a valid
/// shape (TensorSpec::create).
Expected<TensorSpec> declaredSpec(const mlbridge_aot_tensor_v1 &T,
                                  const char *Role, int Index) {
  if (!T.name)
    return makeError(ErrorCode::InvalidArgument, "model ", Role, " ",
                     std::to_string(Index), " has no name");
  if (!T.dtype)
    return makeError(ErrorCode::InvalidArgument, "model ", Role, " '", T.name,
                     "' has no element type");
  auto Type = parseDType(T.dtype);
  if (!Type)
    return Type.error().withContext(std::string("model ") + Role + " '" +
                                    T.name + "'");
  if (T.rank < 0 || size_t(T.rank) > MaxTensorRank)
    return makeError(ErrorCode::InvalidArgument, "model ", Role, " '", T.name,
                     "' has ", std::to_string(T.rank), " dimensions; at most ",
                     std::to_string(MaxTensorRank), " are supported");
  if (T.rank > 0 && !T.shape)
    return makeError(ErrorCode::InvalidArgument, "model ", Role, " '", T.name,
                     "' has no shape");
  return TensorSpec::create(T.name, *Type,
                            std::vector<int64_t>(T.shape, T.shape + T.rank));
}

/// The specs of \p Model's inputs (\p Outputs false) or outputs, checked
/// before anything is allocated for them: each, and all of them together,
/// within the size budget of one message (DefaultMaxMessageBytes,
/// docs/security.md), else TooLarge naming the tensor.
Expected<std::vector<TensorSpec>>
declaredSpecs(const mlbridge_aot_model_v1 &Model, bool Outputs) {
  const char *Role = Outputs ? "output" : "input";
  int Count = Outputs ? Model.num_results : Model.num_args;
  const mlbridge_aot_tensor_v1 *Tensors = Outputs ? Model.results : Model.args;
  if (Count < 0 || Count > MaxAotTensors)
    return makeError(ErrorCode::InvalidArgument, "AOT model '", Model.name,
                     "' declares ", std::to_string(Count), " ", Role,
                     "s; from 0 to ", std::to_string(MaxAotTensors),
                     " are supported");
  if (Count > 0 && !Tensors)
    return makeError(ErrorCode::InvalidArgument, "AOT model '", Model.name,
                     "' declares ", std::to_string(Count), " ", Role,
                     "s and no array of them");
  std::vector<TensorSpec> Specs;
  Specs.reserve(size_t(Count));
  size_t Total = 0;
  for (int I = 0; I < Count; ++I) {
    auto Spec = declaredSpec(Tensors[I], Role, I);
    if (!Spec)
      return Spec.error().withContext(std::string("AOT model '") + Model.name +
                                      "'");
    if (Spec->byteSize() > DefaultMaxMessageBytes)
      return makeError(
          ErrorCode::TooLarge, "AOT model '", Model.name, "' ", Role, " '",
          Spec->name(), "' declares ", std::to_string(Spec->byteSize()),
          " bytes, more than the budget of ",
          std::to_string(DefaultMaxMessageBytes), " bytes of one message");
    Total += Spec->byteSize();
    if (Total > DefaultMaxMessageBytes)
      return makeError(ErrorCode::TooLarge, "AOT model '", Model.name,
                       "': its ", Role, "s declare more than the budget of ",
                       std::to_string(DefaultMaxMessageBytes),
                       " bytes of one message together");
    Specs.push_back(std::move(*Spec));
  }
  return Specs;
}

/// Checks that the model's tensor \p Model matches the runner's \p Spec.
Error checkTensor(const TensorSpec &Model, const TensorSpec &Spec,
                  const char *Role) {
  if (Model.type() != Spec.type())
    return makeError(ErrorCode::TypeMismatch, "model ", Role, " '",
                     Model.name(), "' is ", dtypeName(Model.type()),
                     ", the spec says ", dtypeName(Spec.type()));
  if (Model.elementCount() != Spec.elementCount())
    return makeError(
        ErrorCode::TypeMismatch, "model ", Role, " '", Model.name(), "' has ",
        std::to_string(Model.elementCount()), " elements, the spec has ",
        std::to_string(Spec.elementCount()));
  return Error::success();
}

/// Checks \p Model's interface: its version, the functions and name the
/// runner uses.
Error checkInterface(const mlbridge_aot_model_v1 *Model) {
  if (!Model)
    return makeError(ErrorCode::InvalidArgument, "no AOT model interface");
  if (Model->abi_version != 1)
    return makeError(ErrorCode::Unsupported, "AOT model '",
                     Model->name ? Model->name : "?", "' has ABI version ",
                     std::to_string(Model->abi_version),
                     ", this build reads 1");
  if (!Model->name || !Model->create || !Model->destroy ||
      !Model->set_arg_data || !Model->set_result_data || !Model->run)
    return makeError(ErrorCode::InvalidArgument, "AOT model '",
                     Model->name ? Model->name : "?",
                     "' lacks its name or one of the functions create, "
                     "destroy, set_arg_data, set_result_data, run");
  return Error::success();
}

} // namespace

/// Where each of the model's inputs and outputs is bound: the runner's input
/// of each model input, the model output of each runner output.
struct AotInterfaceRunner::Binding {
  /// The runner's input read by each model input, in the model's order.
  std::vector<size_t> InputOfArg;
  /// The model output of each runner output, in the runner's order.
  std::vector<int> ResultOfOutput;
};

AotInterfaceRunner::AotInterfaceRunner(const mlbridge_aot_model_v1 *Model,
                                       void *Object)
    : Model(Model), Object(Object) {}

AotInterfaceRunner::~AotInterfaceRunner() {
  if (Object)
    Model->destroy(Object);
}

Expected<std::vector<TensorSpec>>
AotInterfaceRunner::modelSpecs(const mlbridge_aot_model_v1 *Model,
                               bool Outputs) {
  if (Error E = checkInterface(Model))
    return E;
  return declaredSpecs(*Model, Outputs);
}

Expected<AotInterfaceRunner::Binding>
AotInterfaceRunner::match(const std::vector<TensorSpec> &Args,
                          const std::vector<TensorSpec> &Results,
                          const std::vector<TensorSpec> &Inputs,
                          const std::vector<TensorSpec> &Outputs) {
  std::unordered_map<std::string_view, size_t> InputIndex, ResultIndex;
  for (size_t J = Inputs.size(); J-- > 0;)
    InputIndex[Inputs[J].name()] = J; // the first of a name
  for (size_t I = Results.size(); I-- > 0;)
    ResultIndex[Results[I].name()] = I;
  Binding B;
  for (const TensorSpec &Arg : Args) {
    auto J = InputIndex.find(Arg.name());
    if (J == InputIndex.end())
      return makeError(ErrorCode::InvalidArgument, "the model reads input '",
                       Arg.name(), "', which the runner's input specs lack");
    if (Error E = checkTensor(Arg, Inputs[J->second], "input"))
      return E;
    B.InputOfArg.push_back(J->second);
  }
  for (const TensorSpec &Out : Outputs) {
    auto I = ResultIndex.find(Out.name());
    if (I == ResultIndex.end())
      return makeError(ErrorCode::InvalidArgument, "the model has no output '",
                       Out.name(), "'");
    if (Error E = checkTensor(Results[I->second], Out, "output"))
      return E;
    B.ResultOfOutput.push_back(int(I->second));
  }
  return B;
}

Expected<std::unique_ptr<AotInterfaceRunner>>
AotInterfaceRunner::create(const mlbridge_aot_model_v1 *Model,
                           std::vector<TensorSpec> Inputs,
                           std::vector<TensorSpec> Outputs) {
  // The model's interface, its budget and the binding are checked before
  // the model object or any buffer is allocated.
  auto Args = modelSpecs(Model, false);
  if (!Args)
    return Args.takeError();
  auto Results = modelSpecs(Model, true);
  if (!Results)
    return Results.takeError();
  if (Error E = checkSpecs(Inputs, "inputs"))
    return E;
  if (Error E = checkSpecs(Outputs, "outputs"))
    return E;
  auto B = match(*Args, *Results, Inputs, Outputs);
  if (!B)
    return B.takeError();
  void *Object = Model->create();
  if (!Object)
    return makeError(ErrorCode::IO, "out of memory creating AOT model '",
                     Model->name, "'");
  std::unique_ptr<AotInterfaceRunner> R(new AotInterfaceRunner(Model, Object));
  if (Error E = R->initBuffers(std::move(Inputs), std::move(Outputs)))
    return E;
  R->bind(*B);
  return R;
}

Expected<std::unique_ptr<AotInterfaceRunner>>
AotInterfaceRunner::create(const mlbridge_aot_model_v1 *Model) {
  auto In = modelSpecs(Model, false);
  if (!In)
    return In.takeError();
  auto Out = modelSpecs(Model, true);
  if (!Out)
    return Out.takeError();
  return create(Model, std::move(*In), std::move(*Out));
}

/// The most metadata entries, and bytes per key or value, read from a
/// module (a model says a few short things about itself).
constexpr size_t MaxAotMetadataEntries = 64;
constexpr size_t MaxAotMetadataBytes = 4096;

/// The metadata the module \p Library exports (its optional
/// mlbridge_aot_model_v1_metadata symbol: key, value, ..., NULL), the keys
/// starting with ModelMetadataPrefix only; a module without it says nothing.
static Expected<ModelMetadata>
moduleMetadata(const AotInterfaceRunner::Module &Library,
               const std::string &Path) {
  auto Fn = reinterpret_cast<mlbridge_aot_metadata_v1_fn>(
      ::dlsym(Library.Handle, "mlbridge_aot_model_v1_metadata"));
  ModelMetadata Metadata;
  const char *const *E = Fn ? Fn() : nullptr;
  for (size_t I = 0; E && E[2 * I]; ++I) {
    if (I == MaxAotMetadataEntries || !E[2 * I + 1])
      return makeError(ErrorCode::InvalidArgument, "'", Path,
                       "' exports malformed metadata (more than ",
                       std::to_string(MaxAotMetadataEntries),
                       " entries, or a key without a value)");
    std::string_view Key(E[2 * I], ::strnlen(E[2 * I], MaxAotMetadataBytes));
    std::string_view Value(E[2 * I + 1],
                           ::strnlen(E[2 * I + 1], MaxAotMetadataBytes));
    if (Key.size() == MaxAotMetadataBytes ||
        Value.size() == MaxAotMetadataBytes)
      return makeError(ErrorCode::InvalidArgument, "'", Path,
                       "' exports a metadata key or value of ",
                       std::to_string(MaxAotMetadataBytes), " bytes or more");
    if (Key.substr(0, ModelMetadataPrefix.size()) == ModelMetadataPrefix)
      Metadata.emplace_back(std::string(Key), std::string(Value));
  }
  return Metadata;
}

/// Opens \p Path and returns its model interface; \p Library keeps it open
/// and holds what the module says of the model.
static Expected<const mlbridge_aot_model_v1 *>
openModule(const std::string &Path,
           std::unique_ptr<AotInterfaceRunner::Module> &Library) {
  Library = std::make_unique<AotInterfaceRunner::Module>();
  // A model module is a file: a bare name is in the current directory, not
  // something for dlopen to search the library path for.
  std::string File = Path.find('/') == std::string::npos ? "./" + Path : Path;
  Library->Handle = ::dlopen(File.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!Library->Handle) {
    const char *Why = ::dlerror();
    return makeError(ErrorCode::IO, "cannot load AOT model module '", Path,
                     "': ", Why ? Why : "unknown error");
  }
  using Entry = const mlbridge_aot_model_v1 *(*)();
  auto Fn = reinterpret_cast<Entry>(
      ::dlsym(Library->Handle, "mlbridge_aot_model_v1_entry"));
  if (!Fn)
    return makeError(ErrorCode::InvalidArgument, "'", Path,
                     "' exports no mlbridge_aot_model_v1_entry (build it "
                     "with mlbridge_add_aot_model(... SHARED))");
  auto Metadata = moduleMetadata(*Library, Path);
  if (!Metadata)
    return Metadata.takeError();
  Library->Metadata = std::move(*Metadata);
  return Fn();
}

Expected<std::unique_ptr<AotInterfaceRunner>>
AotInterfaceRunner::load(const std::string &Path,
                         std::vector<TensorSpec> Inputs,
                         std::vector<TensorSpec> Outputs) {
  std::unique_ptr<Module> Library;
  auto Model = openModule(Path, Library);
  if (!Model)
    return Model.takeError();
  auto R = create(*Model, std::move(Inputs), std::move(Outputs));
  if (R)
    (*R)->adopt(std::move(Library));
  return R;
}

Expected<std::unique_ptr<AotInterfaceRunner>>
AotInterfaceRunner::load(const std::string &Path) {
  std::unique_ptr<Module> Library;
  auto Model = openModule(Path, Library);
  if (!Model)
    return Model.takeError();
  auto R = create(*Model);
  if (R)
    (*R)->adopt(std::move(Library));
  return R;
}

void AotInterfaceRunner::adopt(std::unique_ptr<Module> Library) {
  setMetadata(std::move(Library->Metadata));
  this->Library = std::move(Library);
}

void AotInterfaceRunner::bind(const Binding &B) {
  for (size_t I = 0; I < B.InputOfArg.size(); ++I)
    Model->set_arg_data(Object, int(I), Inputs.data(B.InputOfArg[I]));
  for (size_t J = 0; J < B.ResultOfOutput.size(); ++J)
    Model->set_result_data(Object, B.ResultOfOutput[J], Outputs.data(J));
}

bool AotInterfaceRunner::readsInput(size_t I) const {
  if (I >= numInputs())
    return false;
  for (int A = 0; A < Model->num_args; ++A)
    if (inputSpec(I).name() == Model->args[A].name)
      return true;
  return false;
}

Error AotInterfaceRunner::evaluateImpl() {
  if (const char *Failure = Model->run(Object))
    return makeError(ErrorCode::ModelFailure, Failure);
  return Error::success();
}

} // namespace mlbridge
