// GGUF reader/writer: round trips, the real test files, and every malformed case the reader must reject with
// a message naming the problem (never a crash, hang or giant allocation).
#include "gguf/gguf_file.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <fstream>

#include "gguf/gguf_writer.h"
#include "testing/testdata.h"

namespace lockstep {
namespace {

std::vector<std::byte> FloatBytes(const std::vector<float>& values) {
  std::vector<std::byte> out(values.size() * sizeof(float));
  std::memcpy(out.data(), values.data(), out.size());
  return out;
}

GgufWriter SampleWriter() {
  GgufWriter writer;
  writer.Set("general.architecture", GgufValue::String("llama"));
  writer.Set("u8", GgufValue::Uint8(200));
  writer.Set("i8", GgufValue::Int8(-100));
  writer.Set("u16", GgufValue::Uint16(60000));
  writer.Set("i16", GgufValue::Int16(-30000));
  writer.Set("u32", GgufValue::Uint32(4000000000u));
  writer.Set("i32", GgufValue::Int32(-2000000000));
  writer.Set("u64", GgufValue::Uint64(1ull << 40));
  writer.Set("i64", GgufValue::Int64(-(1ll << 40)));
  writer.Set("f32", GgufValue::Float32(0.5f));
  writer.Set("f64", GgufValue::Float64(-2.25));
  writer.Set("flag", GgufValue::Bool(true));
  writer.Set("tokens", GgufValue::StringArray({"a", "", "\xe2\x96\x81hello"}));
  writer.Set("scores", GgufValue::Float32Array({0.f, -1.5f, 2.f}));
  writer.Set("types", GgufValue::Int32Array({1, 2, 3}));
  writer.Set("nested", GgufValue::MakeArray(GgufType::kArray,
                                            {GgufValue::Int32Array({7, 8}), GgufValue::Int32Array({9})}));
  std::vector<float> matrix(2 * 3);
  for (size_t i = 0; i < matrix.size(); ++i) matrix[i] = static_cast<float>(i) + 0.25f;
  EXPECT_TRUE(writer.AddTensor("matrix", TensorType::kF32, {3, 2}, FloatBytes(matrix)).ok());
  EXPECT_TRUE(writer.AddTensor("vector", TensorType::kF32, {5}, FloatBytes({1, 2, 3, 4, 5})).ok());
  return writer;
}

Result<std::unique_ptr<GgufFile>> Parse(const std::vector<std::byte>& bytes) {
  return GgufFile::FromBytes(bytes, "test.gguf");
}

template <typename T>
void Poke(std::vector<std::byte>& bytes, size_t offset, T value) {
  ASSERT_LE(offset + sizeof(T), bytes.size());
  std::memcpy(bytes.data() + offset, &value, sizeof(T));
}

// Byte offset where tensor info #index starts, found by re-parsing the header.
size_t FindBytes(const std::vector<std::byte>& bytes, const std::string& needle) {
  const auto* begin = reinterpret_cast<const char*>(bytes.data());
  const std::string_view haystack(begin, bytes.size());
  const size_t at = haystack.find(needle);
  EXPECT_NE(at, std::string_view::npos) << needle;
  return at;
}

void ExpectError(const std::vector<std::byte>& bytes, const std::string& fragment) {
  auto file = Parse(bytes);
  ASSERT_FALSE(file.ok()) << "expected an error containing: " << fragment;
  EXPECT_NE(file.status().message().find(fragment), std::string::npos) << file.status().message();
  EXPECT_NE(file.status().message().find("test.gguf"), std::string::npos) << file.status().message();
}

TEST(GgufFileTest, RoundTripsEveryValueType) {
  auto file = Parse(SampleWriter().ToBytes());
  ASSERT_TRUE(file.ok()) << file.status().ToString();
  const GgufFile& f = **file;
  EXPECT_EQ(f.version(), 3u);
  EXPECT_EQ(*f.GetString("general.architecture"), "llama");
  EXPECT_EQ(*f.GetInt("u8"), 200);
  EXPECT_EQ(*f.GetInt("i8"), -100);
  EXPECT_EQ(*f.GetInt("u16"), 60000);
  EXPECT_EQ(*f.GetInt("i16"), -30000);
  EXPECT_EQ(*f.GetInt("u32"), 4000000000ll);
  EXPECT_EQ(*f.GetInt("i32"), -2000000000);
  EXPECT_EQ(*f.GetInt("u64"), 1ll << 40);
  EXPECT_EQ(*f.GetInt("i64"), -(1ll << 40));
  EXPECT_FLOAT_EQ(static_cast<float>(*f.GetFloat("f32")), 0.5f);
  EXPECT_DOUBLE_EQ(*f.GetFloat("f64"), -2.25);
  EXPECT_TRUE(*f.GetBool("flag"));
  EXPECT_EQ(*f.GetStringArray("tokens"), (std::vector<std::string>{"a", "", "\xe2\x96\x81hello"}));
  EXPECT_EQ(*f.GetFloatArray("scores"), (std::vector<float>{0.f, -1.5f, 2.f}));
  EXPECT_EQ(*f.GetInt32Array("types"), (std::vector<int32_t>{1, 2, 3}));
  const GgufValue::Array* nested = *f.GetArray("nested");
  ASSERT_EQ(nested->elements.size(), 2u);
  EXPECT_EQ(nested->elements[0].AsArray()->elements[1].AsInt(), 8);
  EXPECT_EQ(f.metadata().front().first, "general.architecture");  // file order kept

  ASSERT_EQ(f.tensors().size(), 2u);
  const GgufTensorInfo* matrix = f.FindTensor("matrix");
  ASSERT_NE(matrix, nullptr);
  EXPECT_EQ(matrix->dims, (std::vector<int64_t>{3, 2}));
  EXPECT_EQ(matrix->rows(), 2);
  EXPECT_EQ(matrix->size_bytes, 24u);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(matrix->data) % f.alignment(),
            reinterpret_cast<uintptr_t>(f.FindTensor("vector")->data) % f.alignment());
  float values[6];
  std::memcpy(values, matrix->data, sizeof(values));
  EXPECT_EQ(values[5], 5.25f);
  EXPECT_EQ((matrix->data - f.FindTensor("vector")->data) % 32, 0);
}

TEST(GgufFileTest, TypedAccessorsNameKeyAndType) {
  auto file = Parse(SampleWriter().ToBytes());
  ASSERT_TRUE(file.ok());
  const GgufFile& f = **file;
  auto missing = f.GetInt("llama.block_count");
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.status().code(), StatusCode::kNotFound);
  EXPECT_NE(missing.status().message().find("missing required key 'llama.block_count'"), std::string::npos);
  auto wrong = f.GetInt("general.architecture");
  ASSERT_FALSE(wrong.ok());
  EXPECT_NE(wrong.status().message().find("'general.architecture' has type string"), std::string::npos);
  EXPECT_EQ(*f.GetIntOr("absent", 7), 7);
  EXPECT_FALSE(f.GetIntOr("general.architecture", 7).ok());
  EXPECT_FALSE(f.GetStringArray("scores").ok());
}

TEST(GgufFileTest, WriterRejectsBadTensors) {
  GgufWriter writer;
  EXPECT_FALSE(writer.AddTensor("x", TensorType::kF32, {3, 2}, FloatBytes({1, 2})).ok());
  EXPECT_FALSE(writer.AddTensor("q", TensorType::kQ8_0, {31}, std::vector<std::byte>(34)).ok());
  EXPECT_TRUE(writer.AddTensor("x", TensorType::kF32, {2}, FloatBytes({1, 2})).ok());
  EXPECT_FALSE(writer.AddTensor("x", TensorType::kF32, {2}, FloatBytes({1, 2})).ok());
}

TEST(GgufFileTest, OpensFromDiskWithMmap) {
  const std::string dir = testing::MakeTempDir();
  const std::string path = dir + "/sample.gguf";
  ASSERT_TRUE(SampleWriter().WriteFile(path).ok());
  auto file = GgufFile::Open(path);
  ASSERT_TRUE(file.ok()) << file.status().ToString();
  EXPECT_EQ((*file)->tensors().size(), 2u);
  auto missing = GgufFile::Open(dir + "/nope.gguf");
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.status().code(), StatusCode::kNotFound);
  EXPECT_NE(missing.status().message().find("nope.gguf"), std::string::npos);
  std::ofstream(dir + "/empty.gguf").close();
  EXPECT_FALSE(GgufFile::Open(dir + "/empty.gguf").ok());
  EXPECT_FALSE(GgufFile::Open(dir).ok());  // a directory
}

TEST(GgufFileTest, ReadsRealFiles) {
  LOCKSTEP_REQUIRE_TESTDATA();
  auto model = GgufFile::Open(testing::TestDataPath("models/stories260K.gguf"));
  ASSERT_TRUE(model.ok()) << model.status().ToString();
  EXPECT_EQ(*(*model)->GetString("general.architecture"), "llama");
  EXPECT_NE((*model)->FindTensor("token_embd.weight"), nullptr);
  auto vocab = GgufFile::Open(testing::TestDataPath("vocab/ggml-vocab-llama-spm.gguf"));
  ASSERT_TRUE(vocab.ok()) << vocab.status().ToString();
  EXPECT_EQ((*vocab)->GetStringArray("tokenizer.ggml.tokens")->size(), 32000u);
}

TEST(GgufFileTest, RejectsBadMagicAndVersions) {
  std::vector<std::byte> bytes = SampleWriter().ToBytes();
  std::vector<std::byte> bad = bytes;
  Poke<uint32_t>(bad, 0, 0x464C457F);  // "\x7f" "ELF"
  ExpectError(bad, "bad magic at byte offset 0");
  bad = bytes;
  Poke<uint32_t>(bad, 4, 1);
  ExpectError(bad, "version 1 is not supported");
  bad = bytes;
  Poke<uint32_t>(bad, 4, 0x03000000);
  ExpectError(bad, "big-endian");
  bad = bytes;
  Poke<uint32_t>(bad, 4, 99);
  ExpectError(bad, "unknown GGUF version 99");
  bad = bytes;
  Poke<uint32_t>(bad, 4, 2);  // version 2 has the same layout
  EXPECT_TRUE(Parse(bad).ok());
}

TEST(GgufFileTest, RejectsTruncationAnywhere) {
  const std::vector<std::byte> bytes = SampleWriter().ToBytes();
  // Everything up to the end of the last tensor's data is required; padding after it is not.
  auto whole = Parse(bytes);
  ASSERT_TRUE(whole.ok());
  size_t required = 0;
  for (const GgufTensorInfo& t : (*whole)->tensors()) {
    required = std::max<size_t>(required, (*whole)->data_offset() + t.offset + t.size_bytes);
  }
  ASSERT_GT(required, bytes.size() - 32);
  for (size_t length = 0; length < required; ++length) {
    std::vector<std::byte> truncated(bytes.begin(), bytes.begin() + static_cast<std::ptrdiff_t>(length));
    auto file = Parse(truncated);
    ASSERT_FALSE(file.ok()) << "truncated to " << length << " bytes was accepted";
    const std::string& message = file.status().message();
    EXPECT_TRUE(message.find("truncated at byte offset") != std::string::npos ||
                message.find("extends past the end") != std::string::npos ||
                message.find("bytes left") != std::string::npos ||
                message.find("remaining bytes") != std::string::npos)
        << length << ": " << message;
  }
}

TEST(GgufFileTest, RejectsAbsurdCountsAndLengths) {
  const std::vector<std::byte> bytes = SampleWriter().ToBytes();
  std::vector<std::byte> bad = bytes;
  Poke<uint64_t>(bad, 8, 1ull << 60);
  ExpectError(bad, "tensor count");
  bad = bytes;
  Poke<uint64_t>(bad, 16, ~0ull);
  ExpectError(bad, "metadata count");
  bad = bytes;
  Poke<uint64_t>(bad, 24, 1ull << 62);  // length of the first key
  ExpectError(bad, "exceeds the");
  bad = bytes;
  // The "tokens" array: key, type (9), element type (8), count.
  const size_t tokens_key = FindBytes(bad, "tokens");
  Poke<uint64_t>(bad, tokens_key + 6 + 4 + 4, 1ull << 61);
  ExpectError(bad, "cannot fit");
  bad = bytes;
  Poke<uint32_t>(bad, tokens_key + 6 + 4, 77);
  ExpectError(bad, "unknown array element type 77");
  bad = bytes;
  Poke<uint32_t>(bad, tokens_key + 6, 13);
  ExpectError(bad, "unknown value type 13");
  bad = bytes;
  const size_t flag_key = FindBytes(bad, "flag");
  Poke<uint8_t>(bad, flag_key + 4 + 4, 5);
  ExpectError(bad, "neither 0 nor 1");
}

TEST(GgufFileTest, RejectsBadTensorInfos) {
  const std::vector<std::byte> bytes = SampleWriter().ToBytes();
  // Tensor info "matrix": name length (8) + "matrix" (6), n_dims, dims..., type, offset.
  const size_t info = FindBytes(bytes, "matrix") + 6;
  std::vector<std::byte> bad = bytes;
  Poke<uint32_t>(bad, info, 5);
  ExpectError(bad, "has 5 dimensions");
  bad = bytes;
  Poke<uint32_t>(bad, info, 0);
  ExpectError(bad, "has 0 dimensions");
  bad = bytes;
  Poke<uint64_t>(bad, info + 4, 1ull << 40);
  Poke<uint64_t>(bad, info + 12, 1ull << 40);
  ExpectError(bad, "overflow");
  bad = bytes;
  Poke<uint64_t>(bad, info + 4, ~0ull);
  ExpectError(bad, "overflow");
  bad = bytes;
  Poke<uint64_t>(bad, info + 12, 0);  // found by fuzz/gguf_fuzzer
  ExpectError(bad, "dimension 1 is 0");
  bad = bytes;
  Poke<uint64_t>(bad, info + 4, 0);
  ExpectError(bad, "dimension 0 is 0");
  bad = bytes;
  Poke<uint32_t>(bad, info + 20, 1234);
  ExpectError(bad, "unknown tensor type 1234");
  bad = bytes;
  Poke<uint32_t>(bad, info + 20, static_cast<uint32_t>(TensorType::kQ8_0));  // 3 is not a multiple of 32
  ExpectError(bad, "not a multiple of the q8_0 block size");
  bad = bytes;
  Poke<uint64_t>(bad, info + 24, 8);
  ExpectError(bad, "not a multiple of the alignment");
  bad = bytes;
  Poke<uint64_t>(bad, info + 24, 1ull << 40);
  ExpectError(bad, "extends past the end of the file");
  bad = bytes;
  Poke<uint64_t>(bad, info + 24, ~0ull & ~31ull);
  ExpectError(bad, "extends past the end of the file");
}

TEST(GgufFileTest, RejectsBadAlignmentAndDuplicates) {
  GgufWriter writer = SampleWriter();
  writer.Set("general.alignment", GgufValue::Uint32(24));
  ExpectError(writer.ToBytes(), "general.alignment");
  writer.Set("general.alignment", GgufValue::String("32"));
  ExpectError(writer.ToBytes(), "general.alignment");
  GgufWriter aligned = SampleWriter();
  aligned.Set("general.alignment", GgufValue::Uint32(64));
  auto file = Parse(aligned.ToBytes());
  ASSERT_TRUE(file.ok()) << file.status().ToString();
  EXPECT_EQ((*file)->alignment(), 64u);
  EXPECT_EQ((*file)->data_offset() % 64, 0u);

  std::vector<std::byte> bytes = SampleWriter().ToBytes();
  const size_t u16 = FindBytes(bytes, "u16");
  std::memcpy(bytes.data() + u16, "u32", 3);  // now two keys named u32
  ExpectError(bytes, "duplicate metadata key 'u32'");
}

TEST(GgufFileTest, RandomCorruptionNeverCrashes) {
  const std::vector<std::byte> bytes = SampleWriter().ToBytes();
  uint64_t state = 12345;
  auto next = [&state] {
    state = state * 6364136223846793005ull + 1442695040888963407ull;
    return state >> 33;
  };
  for (int trial = 0; trial < 3000; ++trial) {
    std::vector<std::byte> bad = bytes;
    const int flips = 1 + static_cast<int>(next() % 4);
    for (int i = 0; i < flips; ++i) bad[next() % bad.size()] = static_cast<std::byte>(next() & 0xff);
    auto file = Parse(bad);  // must return (ok or error), never crash or hang
    if (file.ok()) {
      for (const GgufTensorInfo& t : (*file)->tensors()) {
        ASSERT_LE((*file)->data_offset() + t.offset + t.size_bytes, (*file)->file_size()) << t.name;
      }
    }
  }
}

}  // namespace
}  // namespace lockstep
