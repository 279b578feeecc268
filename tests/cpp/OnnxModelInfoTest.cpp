//===- OnnxModelInfoTest.cpp - An ONNX model's interface, without ORT -----===//
//
// Part of mlbridge, under the Apache License v2.0.
//
//===----------------------------------------------------------------------===//

#include "mlbridge/OnnxModelInfo.h"

#include "OnnxModelBytes.h"
#include "TestHelpers.h"

#include <fstream>
#include <sys/stat.h>
#include <unistd.h>

using namespace mlbridge;
using namespace mlbridge::test;

namespace {
constexpr int32_t OnnxFloat = 1, OnnxInt64 = 7;

/// y = Identity(x) over float [1,4], with a weight "w" that is also listed
/// as an input (a default a caller may override) and a sparse one "s".
std::string identityModel() {
  OnnxGraphParts G;
  G.Nodes = {onnxNode("Identity", {"x"}, {"y"})};
  G.Inputs = {onnxTensorValue("x", OnnxFloat, {1, 4}),
              onnxTensorValue("w", OnnxFloat, {3}),
              onnxTensorValue("s", OnnxFloat, {2})};
  G.Outputs = {onnxTensorValue("y", OnnxFloat, {1, 4})};
  G.Initializers = {onnxInitializer("w", 3)};
  G.SparseValues = {onnxInitializer("s", 2)};
  return onnxModel(G);
}
} // namespace

TEST(OnnxModelInfo, ReadsInputsOutputsTypesAndShapes) {
  ASSERT_EXPECTED(Info, readOnnxModelInfo(identityModel()));
  ASSERT_EQ(Info->Inputs.size(), 1u) << "initializers are not inputs";
  EXPECT_EQ(Info->Inputs[0].Name, "x");
  EXPECT_TRUE(Info->Inputs[0].IsTensor);
  EXPECT_EQ(Info->Inputs[0].ElementType, OnnxFloat);
  EXPECT_TRUE(Info->Inputs[0].HasShape);
  EXPECT_EQ(Info->Inputs[0].Dims, (std::vector<int64_t>{1, 4}));
  ASSERT_EQ(Info->Outputs.size(), 1u);
  EXPECT_EQ(Info->Outputs[0].Name, "y");
}

TEST(OnnxModelInfo, SymbolicUnshapedAndNonTensorValues) {
  OnnxGraphParts G;
  G.Inputs = {onnxTensorValue("batch", OnnxFloat, {-1, 8}),
              onnxTensorValue("any", OnnxInt64, {}, /*Shaped=*/false),
              onnxSequenceValue("seq")};
  G.Outputs = {onnxTensorValue("out", OnnxInt64, {1})};
  ASSERT_EXPECTED(Info, readOnnxModelInfo(onnxModel(G)));
  ASSERT_EQ(Info->Inputs.size(), 3u);
  EXPECT_EQ(Info->Inputs[0].Dims, (std::vector<int64_t>{-1, 8}));
  EXPECT_FALSE(Info->Inputs[1].HasShape);
  EXPECT_FALSE(Info->Inputs[2].IsTensor);

  std::vector<TensorSpec> Out = {TensorSpec::of<int64_t>("out")};
  // A symbolic dimension takes any multiple; no shape takes any shape.
  auto Ok = checkOnnxInterface(*Info,
                               {TensorSpec::of<float>("batch", {3, 8}),
                                TensorSpec::of<int64_t>("any", {5, 5}),
                                TensorSpec::of<float>("seq")},
                               Out, "'m'");
  ASSERT_FALSE(bool(Ok)) << "a sequence input is refused";
  EXPECT_EQ(Ok.error().code(), ErrorCode::Unsupported);
  EXPECT_NE(Ok.error().message().find("'seq' is not a tensor"),
            std::string::npos);
  Info->Inputs.pop_back();
  ASSERT_EXPECTED(Reads,
                  checkOnnxInterface(*Info,
                                     {TensorSpec::of<float>("unused"),
                                      TensorSpec::of<float>("batch", {3, 8}),
                                      TensorSpec::of<int64_t>("any", {5, 5})},
                                     Out, "'m'"));
  EXPECT_EQ(*Reads, (std::vector<bool>{false, true, true}));
  auto Odd = checkOnnxInterface(
      *Info,
      {TensorSpec::of<float>("batch", {1, 7}), TensorSpec::of<int64_t>("any")},
      Out, "'m'");
  ASSERT_FALSE(bool(Odd)) << "7 elements are no multiple of 8";
  EXPECT_NE(Odd.error().message().find("shape [-1,8]"), std::string::npos);
}

TEST(OnnxModelInfo, InterfaceErrorsNameTheTensor) {
  ASSERT_EXPECTED(Info, readOnnxModelInfo(identityModel()));
  std::vector<TensorSpec> In = {TensorSpec::of<float>("x", {1, 4})};
  std::vector<TensorSpec> Out = {TensorSpec::of<float>("y", {1, 4})};
  ASSERT_EXPECTED(Reads, checkOnnxInterface(*Info, In, Out, "'m'"));
  EXPECT_EQ(*Reads, std::vector<bool>{true});

  auto Unfed = checkOnnxInterface(*Info, {TensorSpec::of<float>("z", {1, 4})},
                                  Out, "'m'");
  ASSERT_FALSE(bool(Unfed));
  EXPECT_EQ(Unfed.error().message(),
            "model 'm' needs input 'x', which no input spec provides");
  auto Type = checkOnnxInterface(*Info, {TensorSpec::of<double>("x", {1, 4})},
                                 Out, "'m'");
  ASSERT_FALSE(bool(Type));
  EXPECT_EQ(Type.error().code(), ErrorCode::TypeMismatch);
  EXPECT_NE(Type.error().message().find("input 'x' has ONNX element type 1"),
            std::string::npos);
  auto Shape = checkOnnxInterface(*Info, In,
                                  {TensorSpec::of<float>("y", {1, 5})}, "'m'");
  ASSERT_FALSE(bool(Shape));
  EXPECT_EQ(Shape.error().code(), ErrorCode::TypeMismatch);
  auto NoOutput =
      checkOnnxInterface(*Info, In, {TensorSpec::of<int64_t>("advice")}, "'m'");
  ASSERT_FALSE(bool(NoOutput));
  EXPECT_EQ(NoOutput.error().message(), "model 'm' has no output 'advice'");
}

TEST(OnnxModelInfo, ReadsTheModelsMlbridgeMetadataOnly) {
  std::string Model = onnxMetadataEntry("producer.note", "not read") +
                      identityModel() +
                      onnxMetadataEntry("mlbridge.defers_when", "flag") +
                      onnxMetadataEntry("mlbridge.empty", "");
  ASSERT_EXPECTED(Info, readOnnxModelInfo(Model));
  EXPECT_EQ(Info->Metadata, (ModelMetadata{{"mlbridge.defers_when", "flag"},
                                           {"mlbridge.empty", ""}}));
  ASSERT_EXPECTED(None, readOnnxModelInfo(identityModel()));
  EXPECT_TRUE(None->Metadata.empty());
  std::string Bad;
  protowire::appendVarintField(Bad, 14, 3); // metadata_props as a varint
  auto Wire = readOnnxModelInfo(identityModel() + Bad);
  ASSERT_FALSE(bool(Wire));
  EXPECT_NE(Wire.error().message().find("metadata_props is not"),
            std::string::npos);
}

TEST(OnnxModelInfo, MalformedBytesAreRefusedWhereverTheyBreak) {
  std::string Model = identityModel();
  // Every truncation fails cleanly or, cut between fields, reads less.
  for (size_t N = 0; N < Model.size(); ++N) {
    auto Info = readOnnxModelInfo(std::string_view(Model).substr(0, N));
    if (!Info) {
      EXPECT_EQ(Info.error().code(), ErrorCode::InvalidArgument);
    }
  }
  auto Text = readOnnxModelInfo("not a model at all");
  ASSERT_FALSE(bool(Text));
  EXPECT_NE(Text.error().message().find("not an ONNX model"),
            std::string::npos);
  auto Empty = readOnnxModelInfo("");
  ASSERT_FALSE(bool(Empty));
  EXPECT_EQ(Empty.error().message(), "not an ONNX model (no graph)");
  std::string GraphAsVarint;
  protowire::appendVarintField(GraphAsVarint, 7, 1);
  auto Wire = readOnnxModelInfo(GraphAsVarint);
  ASSERT_FALSE(bool(Wire));
  EXPECT_NE(Wire.error().message().find("graph is not a length-delimited"),
            std::string::npos);
  std::string Huge;
  protowire::appendTag(Huge, 7, protowire::WireType::Len);
  protowire::appendVarint(Huge, uint64_t(1) << 62); // nothing allocated
  auto Long = readOnnxModelInfo(Huge);
  ASSERT_FALSE(bool(Long));
  EXPECT_NE(Long.error().message().find("exceeds"), std::string::npos);
}

TEST(OnnxModelInfo, FilesAreReadAndMissingOnesNamed) {
  std::string Path = ::testing::TempDir() + "/mlbridge-model-info.onnx";
  {
    std::ofstream F(Path, std::ios::binary);
    F << identityModel();
  }
  ASSERT_EXPECTED(Info, readOnnxModelInfoFile(Path));
  EXPECT_EQ(Info->Inputs.size(), 1u);
  auto Missing = readOnnxModelInfoFile(Path + ".nope");
  ASSERT_FALSE(bool(Missing));
  EXPECT_EQ(Missing.error().code(), ErrorCode::InvalidArgument);
  EXPECT_NE(Missing.error().message().find("cannot load ONNX model '" + Path +
                                           ".nope'"),
            std::string::npos);
  {
    std::ofstream F(Path, std::ios::binary);
    F << "\x3a\x05garbage";
  }
  std::string Fifo = Path + ".fifo";
  ::unlink(Fifo.c_str());
  ASSERT_EQ(::mkfifo(Fifo.c_str(), 0600), 0);
  auto NotAFile = readOnnxModelInfoFile(Fifo); // never waits for a writer
  ::unlink(Fifo.c_str());
  ASSERT_FALSE(bool(NotAFile));
  EXPECT_EQ(NotAFile.error().code(), ErrorCode::InvalidArgument);
  EXPECT_NE(NotAFile.error().message().find("not a regular file"),
            std::string::npos);
  auto Bad = readOnnxModelInfoFile(Path);
  ASSERT_FALSE(bool(Bad));
  EXPECT_NE(Bad.error().message().find("': not an ONNX model"),
            std::string::npos)
      << Bad.error().message();
}

TEST(OnnxModelInfo, MemoryIsBoundedByTheModelsSize) {
  // 500,000 empty graph inputs (2 bytes each on the wire) took about 60
  // bytes of memory per byte of the model; the reader now refuses them once
  // its budget (8 per byte, plus 1 MiB) is spent, before allocating more.
  OnnxGraphParts Empty;
  Empty.Inputs.assign(500000, "");
  Empty.Outputs = {onnxTensorValue("y", OnnxFloat, {1})};
  std::string Bytes = onnxModel(Empty);
  auto Info = readOnnxModelInfo(Bytes);
  ASSERT_FALSE(bool(Info));
  EXPECT_EQ(Info.error().code(), ErrorCode::TooLarge);
  EXPECT_NE(Info.error().message().find("bytes of memory"), std::string::npos)
      << Info.error().message();
  // Many initializers cost nothing: their names are never copied.
  OnnxGraphParts Weights = Empty;
  Weights.Inputs = {onnxTensorValue("x", OnnxFloat, {1}),
                    onnxTensorValue("w0", OnnxFloat, {1})};
  for (int I = 0; I < 100000; ++I)
    Weights.Initializers.push_back(onnxInitializer("w" + std::to_string(I), 1));
  auto WeightsInfo = readOnnxModelInfo(onnxModel(Weights));
  ASSERT_TRUE(bool(WeightsInfo)) << WeightsInfo.error().toString();
  ASSERT_EQ(WeightsInfo->Inputs.size(), 1u);
  EXPECT_EQ(WeightsInfo->Inputs[0].Name, "x");
}
