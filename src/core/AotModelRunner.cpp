//===- core/AotModelRunner.cpp - Runner over AOT-compiled models ----------===//
//
// Part of mlbridge, under the Apache License v2.0.
//
//===----------------------------------------------------------------------===//

#include "mlbridge/AotModelRunner.h"

#include <cstring>
#include <dlfcn.h>
#include <string_view>

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

/// Checks that the model tensor \p T matches \p Spec.
Error checkTensor(const mlbridge_aot_tensor_v1 &T, const TensorSpec &Spec,
                  const char *Role) {
  auto Type = parseDType(T.dtype);
  if (!Type)
    return Type.takeError();
  if (*Type != Spec.type())
    return makeError(ErrorCode::TypeMismatch, "model ", Role, " '", T.name,
                     "' is ", T.dtype, ", the spec says ",
                     dtypeName(Spec.type()));
  size_t Count = 1;
  for (int D = 0; D < T.rank; ++D)
    Count *= size_t(T.shape[D]);
  if (Count != Spec.elementCount())
    return makeError(ErrorCode::TypeMismatch, "model ", Role, " '", T.name,
                     "' has ", std::to_string(Count),
                     " elements, the spec has ",
                     std::to_string(Spec.elementCount()));
  return Error::success();
}

Error checkInterface(const mlbridge_aot_model_v1 *Model) {
  if (!Model)
    return makeError(ErrorCode::InvalidArgument, "no AOT model interface");
  if (Model->abi_version != 1)
    return makeError(ErrorCode::Unsupported, "AOT model '",
                     Model->name ? Model->name : "?", "' has ABI version ",
                     std::to_string(Model->abi_version),
                     ", this build reads 1");
  return Error::success();
}

} // namespace

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
  std::vector<TensorSpec> Specs;
  int Count = Outputs ? Model->num_results : Model->num_args;
  const mlbridge_aot_tensor_v1 *Tensors =
      Outputs ? Model->results : Model->args;
  for (int I = 0; I < Count; ++I) {
    auto Type = parseDType(Tensors[I].dtype);
    if (!Type)
      return Type.takeError();
    auto Spec = TensorSpec::create(
        Tensors[I].name, *Type,
        std::vector<int64_t>(Tensors[I].shape,
                             Tensors[I].shape + Tensors[I].rank));
    if (!Spec)
      return Spec.takeError();
    Specs.push_back(std::move(*Spec));
  }
  return Specs;
}

Expected<std::unique_ptr<AotInterfaceRunner>>
AotInterfaceRunner::create(const mlbridge_aot_model_v1 *Model,
                           std::vector<TensorSpec> Inputs,
                           std::vector<TensorSpec> Outputs) {
  if (Error E = checkInterface(Model))
    return E;
  void *Object = Model->create();
  if (!Object)
    return makeError(ErrorCode::IO, "out of memory creating AOT model '",
                     Model->name, "'");
  std::unique_ptr<AotInterfaceRunner> R(new AotInterfaceRunner(Model, Object));
  if (Error E = R->initBuffers(std::move(Inputs), std::move(Outputs)))
    return E;
  if (Error E = R->bind())
    return E;
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

Error AotInterfaceRunner::bind() {
  for (int I = 0; I < Model->num_args; ++I) {
    const mlbridge_aot_tensor_v1 &T = Model->args[I];
    long J = Inputs.indexOf(T.name);
    if (J < 0)
      return makeError(ErrorCode::InvalidArgument, "the model reads input '",
                       T.name, "', which the runner's input specs lack");
    if (Error E = checkTensor(T, Inputs.spec(size_t(J)), "input"))
      return E;
    Model->set_arg_data(Object, I, Inputs.data(size_t(J)));
  }
  for (size_t J = 0; J < Outputs.size(); ++J) {
    const TensorSpec &S = Outputs.spec(J);
    int I = 0;
    while (I < Model->num_results && S.name() != Model->results[I].name)
      ++I;
    if (I == Model->num_results)
      return makeError(ErrorCode::InvalidArgument, "the model has no output '",
                       S.name(), "'");
    if (Error E = checkTensor(Model->results[I], S, "output"))
      return E;
    Model->set_result_data(Object, I, Outputs.data(J));
  }
  return Error::success();
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
