//===- AotModelTest.cpp - Models compiled by mlbridge-aot -----------------===//
//
// Every operator test model from tools/make_aot_test_models.py, compiled to
// C++ at build time (mlbridge_add_aot_model), against ONNX Runtime on 1000
// random inputs each (or, where ONNX Runtime has no kernel, against 1000
// outputs of ONNX's reference implementation); the XLA-style and EmitC-style
// interfaces; binding errors; data-dependent run-time errors; no allocation in
// evaluate().
//
//===----------------------------------------------------------------------===//

#include "AotCompare.h"
#include "TestHelpers.h"

#include "aot_test_headers.inc"

#include <cstdio>
#include <cstring>
#include <dlfcn.h>
#include <unistd.h>

using namespace mlbridge;
using namespace mlbridge::test;

namespace {
std::string modelPath(const char *File) {
  return std::string(MLBRIDGE_AOT_MODEL_DIR) + "/" + File;
}
} // namespace

#define AOT_TEST_MODEL(Class, File, FLo, FHi, ILo, IHi)                        \
  TEST(AotModelVsOnnxRuntime, Class) {                                         \
    compareWithOnnxRuntime<aot_test::Class>(modelPath(File),                   \
                                            InputRanges{FLo, FHi, ILo, IHi});  \
  }
#define AOT_REFERENCE_MODEL(Class, File)                                       \
  TEST(AotModelVsReference, Class) {                                           \
    compareWithReference<aot_test::Class>(modelPath(File));                    \
  }
#include "aot_test_models.inc"
#undef AOT_TEST_MODEL
#undef AOT_REFERENCE_MODEL

TEST(AotModel, XlaStyleInterface) {
  aot_test::AotGemmSmall M;
  EXPECT_EQ(M.LookupArgIndex("feed_x"), 0);
  EXPECT_EQ(M.LookupArgIndex("x"), 0);
  EXPECT_EQ(M.LookupArgIndex("feed_nope"), -1);
  EXPECT_EQ(M.LookupResultIndex("fetch_y"), 0);
  EXPECT_EQ(M.LookupResultIndex("y"), 0);
  EXPECT_EQ(M.LookupResultIndex("x"), -1);
  EXPECT_EQ(M.arg_data(1), nullptr);
  EXPECT_EQ(M.result_data(-1), nullptr);
  ASSERT_EQ(M.arg_data(0), M.arg_feed_x_data());
  ASSERT_EQ(M.result_data(0), M.result_fetch_y_data());
  float *X = static_cast<float *>(M.arg_data(0));
  for (int I = 0; I < 32; ++I)
    X[I] = float(I % 7) * 0.25f - 0.5f;
  ASSERT_TRUE(M.Run());
  EXPECT_EQ(M.error(), nullptr);

  // The same inputs through the runner API give the same outputs.
  auto R = AotModelRunner<aot_test::AotGemmSmall>::create();
  ASSERT_TRUE(R) << R.error().message();
  std::memcpy((*R)->input<float>(0), X, 32 * sizeof(float));
  ASSERT_FALSE((*R)->evaluate());
  auto Y = (*R)->output<float>("y");
  ASSERT_TRUE(Y);
  ASSERT_EQ(Y->Size, 48u);
  EXPECT_EQ(std::memcmp(Y->Data, M.result_data(0), 48 * sizeof(float)), 0);
  EXPECT_EQ(aot_test::AotGemmSmall::argInfo(0).Rank, 2);
  EXPECT_EQ(aot_test::AotGemmSmall::argInfo(0).Shape[1], 16);
  EXPECT_STREQ(aot_test::AotGemmSmall::resultInfo(0).DType, "float");
}

TEST(AotModel, EmitCStyleInterface) {
  aot_test::AotGemmSmall M;
  EXPECT_EQ(M.getBufferForName("x"), M.arg_data(0));
  EXPECT_EQ(M.getBufferForName("feed_x"), M.arg_data(0));
  EXPECT_EQ(M.getBufferForName("fetch_y"), M.result_data(0));
  EXPECT_EQ(M.getBufferForName("nope"), nullptr);
  float *X = reinterpret_cast<float *>(M.getBufferForName("x"));
  for (int I = 0; I < 32; ++I)
    X[I] = 0.125f * float(I);
  M();
  std::vector<float> First(static_cast<float *>(M.result_data(0)),
                           static_cast<float *>(M.result_data(0)) + 48);
  X[0] += 1.0f;
  M();
  EXPECT_NE(std::memcmp(First.data(), M.result_data(0), 48 * sizeof(float)), 0);
}

TEST(AotModel, RedirectedBuffers) {
  aot_test::AotGemmSmall M;
  alignas(64) float In[32], Out[48];
  for (int I = 0; I < 32; ++I)
    In[I] = float(I) / 32.0f;
  M.set_arg_data(0, In);
  M.set_result_data(0, Out);
  ASSERT_TRUE(M.Run());
  aot_test::AotGemmSmall Own;
  std::memcpy(Own.arg_data(0), In, sizeof(In));
  ASSERT_TRUE(Own.Run());
  EXPECT_EQ(std::memcmp(Out, Own.result_data(0), sizeof(Out)), 0);
  M.set_arg_data(0, nullptr); // back to the model's own (zeroed) buffer
  EXPECT_NE(M.arg_data(0), static_cast<void *>(In));
}

TEST(AotModel, BindingErrorsNameTheTensor) {
  using Runner = AotModelRunner<aot_test::AotGemmSmall>;
  auto Missing = Runner::create({TensorSpec::of<float>("features", {2, 16})},
                                {TensorSpec::of<float>("y", {2, 24})});
  ASSERT_FALSE(Missing);
  EXPECT_EQ(Missing.error().code(), ErrorCode::InvalidArgument);
  EXPECT_NE(Missing.error().message().find("'x'"), std::string::npos);

  auto WrongType = Runner::create({TensorSpec::of<int64_t>("x", {2, 16})},
                                  {TensorSpec::of<float>("y", {2, 24})});
  ASSERT_FALSE(WrongType);
  EXPECT_EQ(WrongType.error().code(), ErrorCode::TypeMismatch);
  EXPECT_NE(WrongType.error().message().find("is float"), std::string::npos);

  auto WrongSize = Runner::create({TensorSpec::of<float>("x", {1, 16})},
                                  {TensorSpec::of<float>("y", {2, 24})});
  ASSERT_FALSE(WrongSize);
  EXPECT_NE(WrongSize.error().message().find("32 elements"), std::string::npos);

  auto UnknownOut = Runner::create({TensorSpec::of<float>("x", {2, 16})},
                                   {TensorSpec::of<float>("advice", {1})});
  ASSERT_FALSE(UnknownOut);
  EXPECT_NE(UnknownOut.error().message().find("'advice'"), std::string::npos);

  // A feature the model does not read still gets a buffer (LLVM contract).
  auto Extra = Runner::create({TensorSpec::of<int64_t>("unused", {3}),
                               TensorSpec::of<float>("x", {2, 16})},
                              {TensorSpec::of<float>("y", {2, 24})});
  ASSERT_TRUE(Extra) << Extra.error().message();
  (*Extra)->input<int64_t>(0)[2] = 7;
  EXPECT_FALSE((*Extra)->evaluate());
  // ... and a compiler may skip computing it.
  EXPECT_FALSE((*Extra)->readsInput(0));
  EXPECT_TRUE((*Extra)->readsInput(1));
  EXPECT_FALSE((*Extra)->readsInput(2));
}

TEST(AotModel, IndexOutOfRangeFailsThatCallOnly) {
  auto R = AotModelRunner<aot_test::AotGather>::create();
  ASSERT_TRUE(R) << R.error().message();
  int64_t *Ids = *(*R)->input<int64_t>("ids");
  Ids[0] = 1, Ids[1] = 10, Ids[2] = 0; // 10 is outside [-10, 10)
  Error E = (*R)->evaluate();
  ASSERT_TRUE(E);
  EXPECT_EQ(E.code(), ErrorCode::ModelFailure);
  EXPECT_NE(E.message().find("(Gather)"), std::string::npos) << E.message();
  EXPECT_NE(E.message().find("[-10, 10)"), std::string::npos) << E.message();
  Ids[1] = -10; // the first row, counted from the end
  EXPECT_FALSE((*R)->evaluate());
}

TEST(AotModel, IntegerDivisionByZeroIsAnError) {
  auto R = AotModelRunner<aot_test::AotBinaryInt64>::create();
  ASSERT_TRUE(R) << R.error().message();
  for (size_t I = 0; I < (*R)->numInputs(); ++I)
    for (size_t E = 0; E < (*R)->inputSpec(I).elementCount(); ++E)
      (*R)->input<int64_t>(I)[E] = 3;
  EXPECT_FALSE((*R)->evaluate());
  (*R)->input<int64_t>(1)[5] = 0;
  Error E = (*R)->evaluate();
  ASSERT_TRUE(E);
  EXPECT_NE(E.message().find("division by zero"), std::string::npos);
}

TEST(AotModel, EvaluateAllocatesNothing) {
  auto R = AotModelRunner<aot_test::AotGemmFusedRelu>::create();
  ASSERT_TRUE(R) << R.error().message();
  for (int I = 0; I < 10; ++I)
    ASSERT_FALSE((*R)->evaluate());
  uint64_t Before = threadAllocations();
  for (int I = 0; I < 1000; ++I) {
    (*R)->input<float>(0)[I % 192] = float(I);
    if ((*R)->evaluate())
      FAIL();
  }
  EXPECT_EQ(threadAllocations() - Before, 0u);
}

TEST(AotModel, LoadableModuleMatchesStaticModel) {
  auto Loaded = AotInterfaceRunner::load(MLBRIDGE_AOT_MODULE);
  ASSERT_TRUE(Loaded) << Loaded.error().message();
  EXPECT_STREQ((*Loaded)->modelName(), "AotGemmSmall");
  auto Static = AotModelRunner<aot_test::AotGemmSmall>::create();
  ASSERT_TRUE(Static) << Static.error().message();
  for (int I = 0; I < 32; ++I)
    (*Loaded)->input<float>(0)[I] = (*Static)->input<float>(0)[I] =
        float(I) * 0.03f - 0.4f;
  ASSERT_FALSE((*Loaded)->evaluate());
  ASSERT_FALSE((*Static)->evaluate());
  EXPECT_EQ(std::memcmp((*Loaded)->outputData(0), (*Static)->outputData(0),
                        48 * sizeof(float)),
            0);
}

TEST(AotModel, ALoadedModuleSaysTheModelsMlbridgeMetadata) {
  auto Loaded = AotInterfaceRunner::load(MLBRIDGE_AOT_MODULE);
  ASSERT_TRUE(Loaded) << Loaded.error().message();
  EXPECT_EQ((*Loaded)->metadataEntries(),
            (ModelMetadata{{"mlbridge.note", "a \"quoted\"\nvalue"},
                           {"mlbridge.empty", ""}}));
  EXPECT_EQ((*Loaded)->metadata("mlbridge.note"), "a \"quoted\"\nvalue");
  EXPECT_FALSE((*Loaded)->metadata("producer.key"));
  // A model linked in statically says nothing (its module entry is unused).
  auto Static = AotModelRunner<aot_test::AotGemmSmall>::create();
  ASSERT_TRUE(Static) << Static.error().message();
  EXPECT_TRUE((*Static)->metadataEntries().empty());
}

TEST(AotModel, ABareModuleNameIsInTheCurrentDirectory) {
  std::string Module = MLBRIDGE_AOT_MODULE;
  size_t Slash = Module.rfind('/');
  ASSERT_NE(Slash, std::string::npos);
  char Cwd[4096];
  ASSERT_TRUE(::getcwd(Cwd, sizeof(Cwd)));
  ASSERT_EQ(::chdir(Module.substr(0, Slash).c_str()), 0);
  auto Loaded = AotInterfaceRunner::load(Module.substr(Slash + 1));
  bool LoadedHere = bool(Loaded);
  if (Loaded)
    EXPECT_STREQ((*Loaded)->modelName(), "AotGemmSmall");
  else
    ADD_FAILURE() << Loaded.error().message();
  Loaded = makeError(ErrorCode::Broken, "unloaded"); // dlclose
  // From elsewhere, the library path is not searched for it.
  ASSERT_EQ(::chdir("/"), 0);
  auto Elsewhere = AotInterfaceRunner::load(Module.substr(Slash + 1));
  ASSERT_EQ(::chdir(Cwd), 0);
  EXPECT_TRUE(LoadedHere);
  EXPECT_FALSE(Elsewhere);
}

TEST(AotModel, LoadErrorsNameTheModule) {
  auto Missing = AotInterfaceRunner::load("/nonexistent/model.so");
  ASSERT_FALSE(Missing);
  EXPECT_EQ(Missing.error().code(), ErrorCode::IO);
  EXPECT_NE(Missing.error().message().find("/nonexistent/model.so"),
            std::string::npos);
  // A shared library that is not a model (libc is always there).
  Dl_info Libc;
  ASSERT_NE(::dladdr(reinterpret_cast<void *>(&std::printf), &Libc), 0);
  auto NotAModel = AotInterfaceRunner::load(Libc.dli_fname);
  ASSERT_FALSE(NotAModel);
  EXPECT_NE(NotAModel.error().message().find("mlbridge_aot_model_v1_entry"),
            std::string::npos);
  EXPECT_FALSE(AotInterfaceRunner::create(nullptr));
}

namespace {
/// A model interface written by hand, as a hostile module may export one.
/// fakeCreate() counts the model objects made: a runner that checks the
/// interface first makes none for a model it refuses, and allocates nothing.
int FakeCreated = 0;
void *fakeCreate() {
  ++FakeCreated;
  static char Object;
  return &Object;
}
void fakeDestroy(void *) {}
void *fakeData(void *, int) { return nullptr; }
void fakeSetData(void *, int, void *) {}
const char *fakeRun(void *) { return nullptr; }

/// A model of the inputs \p Args and the outputs \p Results.
mlbridge_aot_model_v1 fakeModel(const mlbridge_aot_tensor_v1 *Args, int NumArgs,
                                const mlbridge_aot_tensor_v1 *Results,
                                int NumResults) {
  return {1,           "Fake",      NumArgs,     NumResults, Args,
          Results,     fakeCreate,  fakeDestroy, fakeData,   fakeData,
          fakeSetData, fakeSetData, fakeRun};
}

const int64_t Four[] = {4};
const int64_t One[] = {1};
const int64_t Huge[] = {int64_t(1) << 29};              // 4 GiB of int64
const int64_t JustOver[] = {2, (int64_t(1) << 22) + 1}; // 64 MiB + 16 of int64
const int64_t Half[] = {(int64_t(1) << 23) + 1};        // 32 MiB + 4 of float
} // namespace

TEST(AotModel, ModuleTensorsBeyondTheBudgetAreRefusedBeforeAnyAllocation) {
  const mlbridge_aot_tensor_v1 X{"x", "float", 1, Four};
  for (const int64_t *Shape : {Huge, JustOver}) {
    int Rank = Shape == Huge ? 1 : 2;
    const mlbridge_aot_tensor_v1 Y{"y", "int64_t", Rank, Shape};
    mlbridge_aot_model_v1 M = fakeModel(&X, 1, &Y, 1);
    FakeCreated = 0;
    auto Own = AotInterfaceRunner::create(&M);
    ASSERT_FALSE(Own);
    EXPECT_EQ(Own.error().code(), ErrorCode::TooLarge);
    EXPECT_NE(Own.error().message().find("output 'y'"), std::string::npos)
        << Own.error().message();
    EXPECT_NE(Own.error().message().find("budget of 67108864 bytes"),
              std::string::npos)
        << Own.error().message();
    EXPECT_FALSE(AotInterfaceRunner::modelSpecs(&M, true));
    // Given the same specs, the model is still checked first.
    auto YSpec = TensorSpec::create("y", DType::Int64,
                                    std::vector<int64_t>(Shape, Shape + Rank));
    ASSERT_TRUE(YSpec);
    auto Given = AotInterfaceRunner::create(
        &M, {TensorSpec::of<float>("x", {4})}, {*YSpec});
    ASSERT_FALSE(Given);
    EXPECT_EQ(Given.error().code(), ErrorCode::TooLarge);
    EXPECT_EQ(FakeCreated, 0);
  }
  // Inputs each within the budget, beyond it together.
  const mlbridge_aot_tensor_v1 Inputs[] = {{"a", "float", 1, Half},
                                           {"b", "float", 1, Half}};
  const mlbridge_aot_tensor_v1 Y{"y", "int64_t", 1, One};
  mlbridge_aot_model_v1 M = fakeModel(Inputs, 2, &Y, 1);
  FakeCreated = 0;
  auto Together = AotInterfaceRunner::create(&M);
  ASSERT_FALSE(Together);
  EXPECT_EQ(Together.error().code(), ErrorCode::TooLarge);
  EXPECT_NE(Together.error().message().find("inputs"), std::string::npos)
      << Together.error().message();
  EXPECT_EQ(FakeCreated, 0);
}

TEST(AotModel, GivenSpecsAreCheckedAgainstTheModelBeforeAnyAllocation) {
  const mlbridge_aot_tensor_v1 X{"x", "float", 1, Four};
  const mlbridge_aot_tensor_v1 Y{"y", "int64_t", 1, One};
  mlbridge_aot_model_v1 M = fakeModel(&X, 1, &Y, 1);
  // 2 GiB of input, 4 GiB of output the model does not have: refused
  // without a buffer.
  FakeCreated = 0;
  auto BigIn = AotInterfaceRunner::create(
      &M, {TensorSpec::of<float>("x", {int64_t(1) << 29})},
      {TensorSpec::of<int64_t>("y", {1})});
  ASSERT_FALSE(BigIn);
  EXPECT_EQ(BigIn.error().code(), ErrorCode::TypeMismatch);
  EXPECT_NE(BigIn.error().message().find("'x'"), std::string::npos);
  auto BigOut = AotInterfaceRunner::create(
      &M, {TensorSpec::of<float>("x", {4})},
      {TensorSpec::of<int64_t>("y", {int64_t(1) << 29})});
  ASSERT_FALSE(BigOut);
  EXPECT_EQ(BigOut.error().code(), ErrorCode::TypeMismatch);
  EXPECT_EQ(FakeCreated, 0);
  // The specs the model declares bind.
  auto Fits = AotInterfaceRunner::create(&M, {TensorSpec::of<float>("x", {4})},
                                         {TensorSpec::of<int64_t>("y", {1})});
  ASSERT_TRUE(Fits) << Fits.error().message();
  EXPECT_EQ(FakeCreated, 1);
  EXPECT_FALSE((*Fits)->evaluate());
}

TEST(AotModel, MalformedModuleInterfacesAreRefused) {
  const int64_t Negative[] = {4, -1};
  int64_t Deep[MaxTensorRank + 1];
  for (int64_t &D : Deep)
    D = 1;
  const mlbridge_aot_tensor_v1 X{"x", "float", 1, Four};
  const mlbridge_aot_tensor_v1 Bad[] = {
      {"x", "float", -1, Four},    {"x", "float", int(MaxTensorRank) + 1, Deep},
      {"x", "float", 2, Negative}, {"x", "float", 1, nullptr},
      {nullptr, "float", 1, Four}, {"x", nullptr, 1, Four},
      {"x", "bool", 1, Four},
  };
  for (const mlbridge_aot_tensor_v1 &T : Bad) {
    for (bool AsOutput : {false, true}) {
      mlbridge_aot_model_v1 M =
          AsOutput ? fakeModel(&X, 1, &T, 1) : fakeModel(&T, 1, &X, 1);
      FakeCreated = 0;
      auto R = AotInterfaceRunner::create(&M);
      ASSERT_FALSE(R);
      EXPECT_EQ(R.error().code(), ErrorCode::InvalidArgument)
          << R.error().message();
      EXPECT_EQ(FakeCreated, 0);
    }
  }
  mlbridge_aot_model_v1 Negatives = fakeModel(&X, 1, &X, -1);
  EXPECT_FALSE(AotInterfaceRunner::create(&Negatives));
  mlbridge_aot_model_v1 NoArgs = fakeModel(nullptr, 1, &X, 1);
  EXPECT_FALSE(AotInterfaceRunner::create(&NoArgs));
  mlbridge_aot_model_v1 NoRun = fakeModel(&X, 1, &X, 1);
  NoRun.run = nullptr;
  EXPECT_FALSE(AotInterfaceRunner::create(&NoRun));
  mlbridge_aot_model_v1 NoName = fakeModel(&X, 1, &X, 1);
  NoName.name = nullptr;
  EXPECT_FALSE(AotInterfaceRunner::create(&NoName));
  EXPECT_EQ(FakeCreated, 0);
}
